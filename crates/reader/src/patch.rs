//! Patches — a window of variants × a run of samples, every ploidy/trailing value —
//! and the patch lists `bench-read` draws, writes and reads back (a JSON array of
//! `[variant_start, n_variants, sample_start, n_samples]` rows), so peer tools read
//! exactly the same selections.

use crate::error::{Error, Result};

/// One patch: variants `[variant_start, +n_variants)` × samples `[sample_start,
/// +n_samples)`. Arrays without a samples axis ignore the sample range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "[u64; 4]", into = "[u64; 4]")]
pub struct Patch {
    pub variant_start: u64,
    pub n_variants: u64,
    pub sample_start: u64,
    pub n_samples: u64,
}

impl From<[u64; 4]> for Patch {
    fn from(a: [u64; 4]) -> Patch {
        Patch {
            variant_start: a[0],
            n_variants: a[1],
            sample_start: a[2],
            n_samples: a[3],
        }
    }
}

impl From<Patch> for [u64; 4] {
    fn from(p: Patch) -> [u64; 4] {
        [p.variant_start, p.n_variants, p.sample_start, p.n_samples]
    }
}

/// The deterministic generator patch lists are drawn with (xorshift64), so a seed
/// names a list on every machine.
#[derive(Debug, Clone)]
pub struct XorShift64(u64);

impl XorShift64 {
    pub fn new(seed: u64) -> XorShift64 {
        XorShift64(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `[0, n)` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Refuses a list of `n` patches this process could not hold (`n` from a caller:
/// `--n`, `random_patches(n)`), before it is allocated.
fn check_count(n: usize) -> Result<()> {
    let bytes = (n as u64).saturating_mul(std::mem::size_of::<Patch>() as u64);
    svar2_planner::host::check_affordable(bytes, || format!("a list of {n} patches"))
        .map_err(Error::Usage)
}

/// `n` patches of `variants` × `samples` at uniform random starts inside an array of
/// `n_variants` × `n_samples` (1 for an array without a samples axis). A patch larger
/// than the array is refused, as Python's `random_patches` refuses it (a patch cut to
/// fit would measure a shape nobody asked for), and so is a list larger than this
/// machine's memory.
pub fn draw(
    n: usize,
    variants: u64,
    samples: u64,
    n_variants: u64,
    n_samples: u64,
    seed: u64,
) -> Result<Vec<Patch>> {
    let whole = std::iter::once(0..n_variants).collect::<Vec<_>>();
    draw_in(n, variants, samples, &whole, n_samples.max(1), seed)
}

/// `n` patches of `variants` × `samples` whose variants lie inside one of `windows`
/// (row ranges: the regions a training set draws from), uniform over every start that
/// fits, and whose samples start uniformly in `[0, n_samples − samples]` (indexes into
/// a sample list when the caller chose one). With the one window `0..n_variants` it
/// draws exactly what [`draw`] draws for the same seed, so Python's datasets and
/// `bench-read` name the same patches.
pub fn draw_in(
    n: usize,
    variants: u64,
    samples: u64,
    windows: &[std::ops::Range<u64>],
    n_samples: u64,
    seed: u64,
) -> Result<Vec<Patch>> {
    let fits =
        |w: &std::ops::Range<u64>| (w.end.saturating_sub(w.start) + 1).saturating_sub(variants);
    let starts: u64 = windows.iter().map(fits).sum();
    if variants == 0 || samples == 0 {
        return Err(Error::OutOfRange(format!(
            "a patch of {variants}x{samples}: a patch holds at least 1 variant and 1 sample"
        )));
    }
    if starts == 0 {
        return Err(Error::OutOfRange(format!(
            "no patch of {variants} variants fits in the array or the regions given (the \
             longest holds {})",
            windows
                .iter()
                .map(|w| w.end.saturating_sub(w.start))
                .max()
                .unwrap_or(0)
        )));
    }
    if samples > n_samples {
        return Err(Error::OutOfRange(format!(
            "a patch of {samples} samples does not fit in {n_samples} samples"
        )));
    }
    check_count(n)?;
    let mut rng = XorShift64::new(seed);
    Ok((0..n)
        .map(|_| {
            let mut r = rng.below(starts);
            let mut variant_start = 0;
            for w in windows {
                let k = fits(w);
                if r < k {
                    variant_start = w.start + r;
                    break;
                }
                r -= k;
            }
            Patch {
                variant_start,
                n_variants: variants,
                sample_start: rng.below(n_samples - samples + 1),
                n_samples: samples,
            }
        })
        .collect())
}

/// The seed of `epoch` of a training run seeded `seed`: epoch 0 is the seed itself
/// (so it names `bench-read --seed`'s list), later epochs are decorrelated by a
/// splitmix64 step of the epoch number.
pub fn epoch_seed(seed: u64, epoch: u64) -> u64 {
    if epoch == 0 {
        return seed;
    }
    let mut z = epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    seed ^ z ^ (z >> 31)
}

/// Parses a patch list.
pub fn parse_list(path: &std::path::Path) -> Result<Vec<Patch>> {
    let text = std::fs::read(path).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| {
        Error::Usage(format!(
            "{}: not a patch list (a JSON array of [variant_start, n_variants, sample_start, \
             n_samples] rows): {e}",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_deterministic_and_inside() {
        let a = draw(1000, 4096, 1, 198_366, 1000, 7).unwrap();
        assert_eq!(a, draw(1000, 4096, 1, 198_366, 1000, 7).unwrap());
        assert_ne!(a, draw(1000, 4096, 1, 198_366, 1000, 8).unwrap());
        for p in &a {
            assert!(p.variant_start + p.n_variants <= 198_366);
            assert!(p.sample_start + p.n_samples <= 1000);
        }
        // Refused, not cut to fit: too many variants or samples, or none.
        assert!(draw(5, 999_999, 1, 198_366, 1000, 7).is_err());
        assert!(draw(5, 4096, 1001, 198_366, 1000, 7).is_err());
        let e = draw(5, 4096, 0, 198_366, 1000, 7).unwrap_err().to_string();
        assert!(e.contains("at least 1 variant and 1 sample"), "{e}");
        assert_eq!(draw(5, 4096, 1, 198_366, 0, 7).unwrap()[0].n_samples, 1);
        let json = serde_json::to_string(&a[..2]).unwrap();
        assert!(json.starts_with("[["), "{json}");
        let back: Vec<Patch> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a[..2]);
    }

    #[test]
    fn lists_beyond_memory_are_refused() {
        let e = draw(1 << 60, 4096, 1, 10_000, 50, 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a list of 1152921504606846976 patches"), "{e}");
        let w = std::iter::once(0..10_000).collect::<Vec<_>>();
        assert!(draw_in(usize::MAX, 100, 1, &w, 50, 3).is_err());
    }

    #[test]
    fn windows_hold_every_patch_and_one_window_is_the_plain_draw() {
        let plain = draw(500, 100, 2, 10_000, 50, 3).unwrap();
        let whole: Vec<std::ops::Range<u64>> = std::iter::once(0..10_000).collect();
        assert_eq!(plain, draw_in(500, 100, 2, &whole, 50, 3).unwrap());
        let windows = [10..150, 2_000..2_100, 5_000..5_099, 9_000..10_000];
        let got = draw_in(2000, 100, 1, &windows, 50, 3).unwrap();
        let mut used = [0usize; 4];
        for p in &got {
            let w = windows
                .iter()
                .position(|w| p.variant_start >= w.start && p.variant_start + 100 <= w.end)
                .expect("inside a window");
            used[w] += 1;
        }
        // 41, 1, 0 and 901 starts fit: the 99-row window never, the others in proportion.
        assert_eq!(used[2], 0);
        assert!(used[0] > 40 && used[3] > 1700, "{used:?}");
        assert!(draw_in(1, 1001, 1, &windows, 50, 3).is_err());
        assert!(draw_in(1, 1000, 1, &windows, 50, 3).is_ok());
        assert_ne!(epoch_seed(3, 1), epoch_seed(3, 2));
        assert_eq!(epoch_seed(3, 0), 3);
    }
}
