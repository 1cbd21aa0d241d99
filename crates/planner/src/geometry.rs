//! Chunk and shard sizes. Inner chunks are what a reader decodes, so they follow the
//! reader's patch shape (`--patch VxS`) and the decode amplification it may afford;
//! shards are what the file system sees, so they follow file counts and IO size.

/// The region × samples a reader fetches at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PatchShape {
    pub variants: u64,
    pub samples: u64,
}

impl std::str::FromStr for PatchShape {
    type Err = String;
    /// `4096x1`: 4096 variants × 1 sample.
    fn from_str(s: &str) -> Result<PatchShape, String> {
        let (v, x) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("--patch {s:?}: expected VARIANTSxSAMPLES, e.g. 4096x1"))?;
        let parse = |t: &str| {
            t.trim()
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("--patch {s:?}: {t:?} is not a positive integer"))
        };
        Ok(PatchShape {
            variants: parse(v)?,
            samples: parse(x)?,
        })
    }
}

/// Inner chunks smaller than this (genotype bytes) spend more on per-chunk work
/// (index entries, codec headers, GPU batch slots) than on data.
pub const MIN_CHUNK_BYTES: u64 = 4 << 10;
/// Inner chunks larger than this buy nothing for random patches and cost memory.
pub const MAX_CHUNK_BYTES: u64 = 8 << 20;
/// Genotype bytes aimed at per shard file: few files, yet many shards to read in
/// parallel.
pub const SHARD_TARGET_BYTES: u64 = 64 << 20;
/// Inner chunks per shard along variants, at most (keeps the shard index small and
/// the partial shard rows few).
pub const MAX_CHUNKS_PER_SHARD: u64 = 64;

/// Expected bytes decoded ÷ bytes needed for a patch at a random offset: a patch of
/// `v` rows touches on average `v − 1 + Vc` chunk rows (and likewise for samples).
pub fn amplification(p: PatchShape, vc: u64, sc: u64, n_samples: u64) -> f64 {
    let axis = |want: u64, chunk: u64, size: u64| {
        let chunk = chunk.min(size.max(1)).max(1);
        let want = want.min(size.max(1)).max(1);
        (want - 1 + chunk) as f64 / want as f64
    };
    axis(p.variants, vc, u64::MAX) * axis(p.samples, sc, n_samples)
}

/// Inner chunk rows and columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Chunks {
    pub variants: u64,
    pub samples: u64,
}

fn round_down_nice(n: u64) -> u64 {
    match n {
        0..=63 => n,
        64..=1023 => n / 8 * 8,
        _ => n / 64 * 64,
    }
}

/// The largest inner chunk whose amplification for `p` stays within `max_amp`, no
/// smaller than [`MIN_CHUNK_BYTES`] (when no chunk satisfies both, the one with the
/// least amplification at that size wins). `cell` is genotype bytes per call.
pub fn chunks_for_patch(p: PatchShape, max_amp: f64, n_samples: u64, cell: u64) -> (Chunks, f64) {
    let n = n_samples.max(1);
    let mut sample_sizes: Vec<u64> =
        std::iter::successors(Some(1u64), |&x| (x < n).then_some(x * 2))
            .map(|x| x.min(n))
            .collect();
    sample_sizes.dedup();
    let mut best: Option<(Chunks, f64, u64)> = None; // within budget: largest bytes
    let mut fallback: Option<(Chunks, f64)> = None; // least amplification at min size
    for &sc in &sample_sizes {
        let amp_s = amplification(
            PatchShape {
                variants: 1,
                samples: p.samples,
            },
            1,
            sc,
            n,
        );
        // Largest Vc with amp_s × (v − 1 + Vc)/v ≤ max_amp.
        let vmax = ((max_amp / amp_s) * p.variants as f64 - p.variants as f64 + 1.0).floor();
        let row = sc * cell;
        let vc_min_bytes = MIN_CHUNK_BYTES.div_ceil(row.max(1)).max(1);
        if vmax >= 1.0 {
            let mut vc = round_down_nice(vmax as u64).max(1);
            vc = vc.min((MAX_CHUNK_BYTES / row.max(1)).max(1));
            let bytes = vc * row;
            if bytes >= MIN_CHUNK_BYTES && best.is_none_or(|(_, _, b)| bytes > b) {
                let c = Chunks {
                    variants: vc,
                    samples: sc,
                };
                best = Some((c, amplification(p, vc, sc, n), bytes));
            }
        }
        let c = Chunks {
            variants: vc_min_bytes,
            samples: sc,
        };
        let a = amplification(p, c.variants, sc, n);
        if fallback.is_none_or(|(_, fa)| a < fa) {
            fallback = Some((c, a));
        }
    }
    match (best, fallback) {
        (Some((c, a, _)), _) => (c, a),
        (None, Some(f)) => f,
        (None, None) => unreachable!("at least one sample size"),
    }
}

/// Shard sizes (in records and samples) for inner chunks `c`: all samples in one
/// shard column when that stays under [`SHARD_TARGET_BYTES`], then as many inner rows
/// as fit the target.
pub fn shards_for(c: Chunks, n_samples: u64, cell: u64) -> (u64, u64) {
    let n = n_samples.max(1);
    let chunk_bytes = (c.variants * c.samples * cell).max(1);
    let sample_chunks = n.div_ceil(c.samples);
    let ks = sample_chunks.min((SHARD_TARGET_BYTES / chunk_bytes).max(1));
    let fit = (SHARD_TARGET_BYTES / (chunk_bytes * ks)).clamp(1, MAX_CHUNKS_PER_SHARD);
    let kv = 1 << fit.ilog2(); // a power of two keeps shard boundaries round

    (c.variants * kv, c.samples * ks)
}

/// Default inner chunk when no `--patch` is given: bio2zarr's 1000 × 1000.
pub const DEFAULT_CHUNKS: Chunks = Chunks {
    variants: 1000,
    samples: 1000,
};

/// Chunk and shard sizes the user fixed on the command line (they override the patch
/// rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    pub variants_chunk: Option<u64>,
    pub samples_chunk: Option<u64>,
    pub variants_shard: Option<u64>,
    pub samples_shard: Option<u64>,
}

/// The inner chunk a store gets: from the patch (or [`DEFAULT_CHUNKS`]), then the
/// user's explicit sizes. `convert` may shrink the variants side further to fit its
/// memory budget; `rechunk` (whose memory does not grow with it) takes it as is, so
/// both write the same grid for the same options.
pub fn requested_chunks(
    patch: Option<PatchShape>,
    max_amp: f64,
    n_samples: u64,
    cell: u64,
    requested: &Requested,
) -> Chunks {
    let mut chunks = match patch {
        Some(p) => chunks_for_patch(p, max_amp, n_samples, cell).0,
        None => DEFAULT_CHUNKS,
    };
    if let Some(v) = requested.variants_chunk {
        chunks.variants = v.max(1);
    }
    if let Some(s) = requested.samples_chunk {
        chunks.samples = s.max(1);
    }
    chunks.samples = chunks.samples.min(n_samples.max(1));
    chunks
}

/// The shard (variants, samples) for inner chunks `c`: [`shards_for`], then the
/// user's explicit sizes rounded to whole chunks; never wider than the samples.
pub fn requested_shards(c: Chunks, n_samples: u64, cell: u64, requested: &Requested) -> (u64, u64) {
    let (mut vs, mut ss) = shards_for(c, n_samples, cell);
    if let Some(v) = requested.variants_shard {
        vs = whole_chunks(v, c.variants);
    }
    if let Some(s) = requested.samples_shard {
        ss = whole_chunks(s, c.samples);
    }
    (vs, ss.min(whole_chunks(n_samples, c.samples)))
}

/// `len` rounded up to whole `chunk`s, at least one: a shard holds whole inner chunks
/// (convert and the planner round the user's shard sizes with this one rule).
pub fn whole_chunks(len: u64, chunk: u64) -> u64 {
    let chunk = chunk.max(1);
    len.max(chunk).div_ceil(chunk) * chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification_formula() {
        let p = PatchShape {
            variants: 1000,
            samples: 1,
        };
        assert!((amplification(p, 1000, 1, 10) - 1.999).abs() < 1e-9);
        // Chunks wider than the data cannot cost more than the data.
        assert_eq!(
            amplification(
                PatchShape {
                    variants: 1,
                    samples: 1
                },
                1,
                64,
                1
            ),
            1.0
        );
    }

    #[test]
    fn patch_parsing() {
        assert_eq!(
            "4096x1".parse::<PatchShape>(),
            Ok(PatchShape {
                variants: 4096,
                samples: 1
            })
        );
        assert!("4096".parse::<PatchShape>().is_err());
        assert!("0x3".parse::<PatchShape>().is_err());
    }

    #[test]
    fn chunks_respect_amplification_and_minimum_size() {
        let p = PatchShape {
            variants: 4096,
            samples: 1,
        };
        let (c, a) = chunks_for_patch(p, 1.5, 1000, 2);
        assert!(a <= 1.5, "{c:?} {a}");
        assert!(c.variants * c.samples * 2 >= MIN_CHUNK_BYTES);
        // A wide patch lets chunks widen along samples.
        let (c2, a2) = chunks_for_patch(
            PatchShape {
                variants: 256,
                samples: 256,
            },
            1.5,
            1000,
            2,
        );
        assert!(a2 <= 1.5 && c2.samples > 1, "{c2:?} {a2}");
        // A tiny patch cannot reach the minimum size within budget: least-amplifying
        // minimum-size chunk instead, and the caller reports the overshoot.
        let (c3, a3) = chunks_for_patch(
            PatchShape {
                variants: 1,
                samples: 1,
            },
            1.5,
            1000,
            2,
        );
        assert!(c3.variants * c3.samples * 2 >= MIN_CHUNK_BYTES && a3 > 1.5);
    }

    #[test]
    fn shards_group_chunks_toward_the_target() {
        let (vs, ss) = shards_for(
            Chunks {
                variants: 1000,
                samples: 1000,
            },
            1000,
            2,
        );
        assert_eq!(ss, 1000);
        assert_eq!(vs, 32 * 1000);
        let (vs, ss) = shards_for(
            Chunks {
                variants: 2048,
                samples: 1,
            },
            500_000,
            2,
        );
        assert_eq!(vs % 2048, 0);
        assert!(vs * ss * 2 <= SHARD_TARGET_BYTES);
    }
}
