//! How a rechunk runs in a memory budget: per array, the *tile* — the block of the
//! output decoded source chunks are held for — and so how often each source chunk is
//! decoded and the peak RSS.
//!
//! Tiles go column group by column group (a group is whole target shards along
//! `samples`), and down the variants axis inside a group; a source chunk that
//! straddles two tiles of a group stays decoded for the next one, so within a group
//! every source chunk is decoded once. A source chunk that straddles two column groups
//! is decoded once per group: the plan picks the widest group (fewest decodes), then
//! the tallest tile (fewest, larger steps) that fits, and says how many decodes that
//! costs. Pure numbers in, numbers out.

use crate::size::human;

/// Memory the process holds besides the tiles the plan counts: code, zarrs, thread
/// stacks and pools, codec contexts, allocator slack. Measured (2 cores, glibc): a
/// 9-record store peaks at 10 MB; the shared corpus's bio2zarr store to `--patch
/// 4096x1` peaks at 20-30 MB above its largest tile, whatever the tile.
pub const BASE_BYTES: u64 = 22 << 20;
/// The margin between what the plan counts and RSS (allocator slack, buffers in the
/// codecs): the plan keeps its count under `budget / HEADROOM`.
pub const HEADROOM: f64 = 1.3;

/// One array's part in a rechunk, as plain numbers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ArrayInput {
    pub name: String,
    pub shape: Vec<u64>,
    /// The chunk a source read decodes (a whole shard for a sharded source).
    pub source_chunk: Vec<u64>,
    pub target_shard: Vec<u64>,
    pub target_inner: Vec<u64>,
    /// Decoded bytes per element (an estimate for strings).
    pub element_bytes: u64,
    /// Stored ÷ decoded bytes of the source (≤ 1; the output compresses alike).
    pub compression: f64,
    /// The axis tiles advance along (`variants`), if the array has one.
    pub rows_axis: Option<usize>,
    /// The axis tiles are grouped along (`samples`), if the array has one.
    pub columns_axis: Option<usize>,
}

/// How one array is processed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Tiling {
    pub name: String,
    /// Tile height along variants (a whole number of target shards or inner chunks).
    pub rows: u64,
    /// Tile width along samples (whole target shards), or the whole axis.
    pub columns: u64,
    /// Source chunks the array has, and decodes the tiling costs (≥ chunks touched).
    pub source_chunks: u64,
    pub decodes: u64,
    /// Decoded source bytes held for the largest tile.
    pub tile_bytes: u64,
    /// Peak bytes the plan counts for this array (without [`BASE_BYTES`]).
    pub counted_bytes: u64,
}

/// The rechunk plan.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RechunkPlan {
    pub budget: u64,
    pub threads: usize,
    pub arrays: Vec<Tiling>,
    pub predicted_peak_rss: u64,
    pub source_chunks: u64,
    pub decodes: u64,
}

/// A budget no tiling fits.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetTooSmall {
    pub array: String,
    pub budget: u64,
    pub minimum: u64,
}

impl std::fmt::Display for BudgetTooSmall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--max-mem {} is too small: {} needs at least {} (one source chunk row of one \
             target shard column, decoded, plus the threads' working sets); pass --max-mem {} \
             or more, or fewer --threads",
            human(self.budget),
            self.array,
            human(self.minimum),
            human(self.minimum.div_ceil(1 << 20) << 20)
        )
    }
}

/// Source chunks of size `chunk` that `[start, end)` touches.
fn touched(start: u64, end: u64, chunk: u64) -> u64 {
    if end <= start {
        return 0;
    }
    (end - 1) / chunk - start / chunk + 1
}

/// (most, total) source chunks touched by tiles of `step` over `len`, laid out shard
/// by shard (`shard` long; a tile never crosses a shard boundary), as the executor
/// walks them.
fn spans(len: u64, shard: u64, step: u64, chunk: u64) -> (u64, u64) {
    let (mut most, mut total) = (0, 0);
    let (shard, step) = (shard.max(1), step.max(1));
    let mut s0 = 0;
    while s0 < len {
        let s1 = (s0 + shard).min(len);
        let mut s = s0;
        while s < s1 {
            let t = touched(s, (s + step).min(s1), chunk);
            most = most.max(t);
            total += t;
            s += step;
        }
        s0 = s1;
    }
    (most.max(1), total.max(1))
}

fn elements(v: &[u64]) -> u64 {
    v.iter().map(|&x| x.max(1)).product()
}

/// What the plan counts for `a` tiled `rows` × `columns`: (tile bytes, counted bytes,
/// decodes, source chunks of the largest tile).
fn cost(a: &ArrayInput, rows: u64, columns: u64, threads: u64) -> (u64, u64, u64, u64) {
    let chunk_bytes = elements(&a.source_chunk) * a.element_bytes;
    let encoded = (chunk_bytes as f64 * a.compression).ceil() as u64;
    let mut most = 1u64;
    let mut per_group_chunks = 1u64; // source chunks a column group decodes, summed over groups
    let mut open_elements = 1u64; // output elements whose encoded chunks wait in open shards
    for (i, (&n, &c)) in a.shape.iter().zip(&a.source_chunk).enumerate() {
        let c = c.max(1);
        let all = n.div_ceil(c).max(1);
        if Some(i) == a.rows_axis {
            most *= spans(n, a.target_shard[i], rows, c).0;
            per_group_chunks *= all;
            open_elements *= a.target_shard[i].min(n.max(1));
        } else if Some(i) == a.columns_axis {
            let (m, total) = spans(n, columns, columns, c);
            most *= m;
            per_group_chunks *= total;
            open_elements *= columns.min(n.max(1));
        } else {
            most *= all;
            per_group_chunks *= all;
            open_elements *= n.max(1);
        }
    }
    let tile = most * chunk_bytes;
    // Each thread decoding holds the encoded chunk and the decoded one being built;
    // the IO stage queues two encoded chunks per thread.
    let transient = threads * (chunk_bytes + encoded) + 2 * threads * encoded;
    let open = ((open_elements * a.element_bytes) as f64 * (2.0 * a.compression).min(1.0)) as u64;
    (tile, tile + transient + open, per_group_chunks, most)
}

/// Target inner chunks in a tile of `rows` × `columns`.
fn tile_chunks(a: &ArrayInput, rows: u64, columns: u64) -> u64 {
    (0..a.shape.len())
        .map(|i| {
            let span = if Some(i) == a.rows_axis {
                rows.min(a.shape[i])
            } else if Some(i) == a.columns_axis {
                columns.min(a.shape[i])
            } else {
                a.shape[i]
            };
            span.max(1).div_ceil(a.target_inner[i].max(1))
        })
        .product()
}

/// Target inner chunks per thread a tile must hold, and source chunks per thread it
/// must read, to keep the pool busy through a tile's encode and decode phases.
const BUSY_CHUNKS_PER_THREAD: u64 = 16;
const BUSY_SOURCES_PER_THREAD: u64 = 2;

/// Plans every array's tiling under `budget` with `threads` decoding and encoding.
/// `target_inner_rows` is the output's variants inner chunk: the smallest tile height.
pub fn plan_rechunk(
    arrays: &[ArrayInput],
    target_inner_rows: u64,
    threads: usize,
    budget: u64,
) -> Result<RechunkPlan, BudgetTooSmall> {
    let t = threads.max(1) as u64;
    let allowed = ((budget as f64 / HEADROOM) as u64).saturating_sub(BASE_BYTES);
    let mut out = Vec::with_capacity(arrays.len());
    let mut peak = 0u64;
    for a in arrays {
        let len = |axis: Option<usize>| axis.map_or(1, |i| a.shape[i].max(1));
        let (rows_len, cols_len) = (len(a.rows_axis), len(a.columns_axis));
        let shard_rows = a.rows_axis.map_or(1, |i| a.target_shard[i]);
        let shard_cols = a.columns_axis.map_or(1, |i| a.target_shard[i]);
        // Candidate heights: the target shard, halved down to one inner chunk.
        let mut heights = vec![shard_rows.min(rows_len).max(1)];
        let inner = target_inner_rows.max(1);
        while a.rows_axis.is_some() && *heights.last().unwrap() > inner {
            let h = (heights.last().unwrap() / 2).div_ceil(inner) * inner;
            heights.push(h.max(inner));
        }
        heights.dedup();
        // Candidate widths: every column, then fewer whole target shards.
        let groups = cols_len.div_ceil(shard_cols.max(1));
        let widths: Vec<u64> = (1..=groups)
            .map(|g| groups.div_ceil(g) * shard_cols)
            .map(|w| w.min(cols_len))
            .collect::<Vec<_>>();
        let mut widths = widths;
        widths.dedup();
        // The widest columns that fit (fewest decodes); then the shortest tile that
        // still keeps every thread busy — shorter tiles hold less and measured as
        // fast (a shard-high tile: 1.78 s, 159 MB; 4096 rows: 1.46 s, 39 MB) — else
        // the tallest that fits.
        let mut chosen = None;
        for &w in &widths {
            let fits: Vec<(u64, (u64, u64, u64, u64))> = heights
                .iter()
                .map(|&h| (h, cost(a, h, w, t)))
                .filter(|(_, c)| c.1 <= allowed)
                .collect();
            let busy = fits.iter().rev().find(|(h, c)| {
                tile_chunks(a, *h, w) >= BUSY_CHUNKS_PER_THREAD * t
                    && c.3 >= BUSY_SOURCES_PER_THREAD * t
            });
            if let Some(&(h, (tile, counted, decodes, _))) = busy.or(fits.first()) {
                chosen = Some((h, w, tile, counted, decodes));
                break;
            }
        }
        let Some((rows, columns, tile_bytes, counted, decodes)) = chosen else {
            let (_, counted, _, _) = cost(a, *heights.last().unwrap(), *widths.last().unwrap(), t);
            return Err(BudgetTooSmall {
                array: a.name.clone(),
                budget,
                minimum: ((counted + BASE_BYTES) as f64 * HEADROOM).ceil() as u64,
            });
        };
        let source_chunks = a
            .shape
            .iter()
            .zip(&a.source_chunk)
            .map(|(&n, &c)| n.div_ceil(c.max(1)).max(1))
            .product();
        peak = peak.max(counted);
        out.push(Tiling {
            name: a.name.clone(),
            rows,
            columns,
            source_chunks,
            decodes,
            tile_bytes,
            counted_bytes: counted,
        });
    }
    Ok(RechunkPlan {
        budget,
        threads: threads.max(1),
        source_chunks: out.iter().map(|x| x.source_chunks).sum(),
        decodes: out.iter().map(|x| x.decodes).sum(),
        arrays: out,
        predicted_peak_rss: peak + BASE_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// bio2zarr's call_genotype of the shared corpus: 10,000 × 1,000 × 2 source
    /// chunks to 32,768 × 1,000 shards of 2,048 × 1 inner chunks.
    fn genotypes() -> ArrayInput {
        ArrayInput {
            name: "call_genotype".into(),
            shape: vec![198_366, 1000, 2],
            source_chunk: vec![10_000, 1000, 2],
            target_shard: vec![32_768, 1000, 2],
            target_inner: vec![2048, 1, 2],
            element_bytes: 1,
            compression: 0.03,
            rows_axis: Some(0),
            columns_axis: Some(1),
        }
    }

    #[test]
    fn touched_counts_chunks() {
        assert_eq!(touched(0, 10, 10), 1);
        assert_eq!(touched(5, 15, 10), 2);
        assert_eq!(touched(9, 10, 10), 1);
        assert_eq!(spans(25, 10, 10, 10), (1, 3));
        assert_eq!(spans(30, 30, 15, 10), (2, 4));
        // Tiles restart at each shard: 0-15, 15-20 | 20-30.
        assert_eq!(spans(30, 20, 15, 10), (2, 4));
    }

    #[test]
    fn a_roomy_budget_decodes_each_chunk_once_with_whole_shard_tiles() {
        let p = plan_rechunk(&[genotypes()], 2048, 2, 1 << 30).unwrap();
        let a = &p.arrays[0];
        assert_eq!((a.rows, a.columns), (32_768, 1000));
        assert_eq!(a.decodes, a.source_chunks);
        assert_eq!(a.source_chunks, 20);
        // A tile of 32,768 rows touches at most 5 source rows of 20 MB.
        assert_eq!(a.tile_bytes, 5 * 20_000_000);
        assert!(p.predicted_peak_rss < 1 << 30);
    }

    #[test]
    fn tighter_budgets_shorten_tiles_then_split_columns_decoding_more() {
        let roomy = plan_rechunk(&[genotypes()], 2048, 2, 1 << 30).unwrap();
        let mid = plan_rechunk(&[genotypes()], 2048, 2, 160 << 20).unwrap();
        assert!(mid.arrays[0].rows < roomy.arrays[0].rows);
        assert_eq!(mid.arrays[0].decodes, mid.arrays[0].source_chunks);
        // Source chunks of 100 samples, shards of 256: a tight budget takes one shard
        // column at a time, and the source chunks straddling two columns (200-300,
        // 500-600, 700-800) are decoded twice: 13 decodes per source chunk row of 10.
        let mut g = genotypes();
        g.source_chunk = vec![10_000, 100, 2];
        g.target_shard = vec![32_768, 256, 2];
        let tight = plan_rechunk(&[g.clone()], 2048, 2, 56 << 20).unwrap();
        let t = &tight.arrays[0];
        assert_eq!(t.columns, 256);
        assert_eq!((t.source_chunks, t.decodes), (200, 260));
        for p in [&roomy, &mid, &tight] {
            assert!(p.predicted_peak_rss <= (p.budget as f64 / HEADROOM) as u64);
        }
        let e = plan_rechunk(&[g], 2048, 2, 24 << 20).unwrap_err();
        assert!(e.minimum > 24 << 20);
        assert!(e.to_string().contains("call_genotype needs at least"));
    }
}
