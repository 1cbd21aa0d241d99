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

/// `n` patches of `variants` × `samples` at uniform random starts inside an array of
/// `n_variants` × `n_samples` (a patch larger than the array is clipped to it).
pub fn draw(
    n: usize,
    variants: u64,
    samples: u64,
    n_variants: u64,
    n_samples: u64,
    seed: u64,
) -> Vec<Patch> {
    let mut rng = XorShift64::new(seed);
    let (v, s) = (variants.min(n_variants), samples.min(n_samples.max(1)));
    (0..n)
        .map(|_| Patch {
            variant_start: rng.below(n_variants - v + 1),
            n_variants: v,
            sample_start: rng.below(n_samples.max(1) - s + 1),
            n_samples: s,
        })
        .collect()
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
        let a = draw(1000, 4096, 1, 198_366, 1000, 7);
        assert_eq!(a, draw(1000, 4096, 1, 198_366, 1000, 7));
        assert_ne!(a, draw(1000, 4096, 1, 198_366, 1000, 8));
        for p in &a {
            assert!(p.variant_start + p.n_variants <= 198_366);
            assert!(p.sample_start + p.n_samples <= 1000);
        }
        let json = serde_json::to_string(&a[..2]).unwrap();
        assert!(json.starts_with("[["), "{json}");
        let back: Vec<Patch> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a[..2]);
    }
}
