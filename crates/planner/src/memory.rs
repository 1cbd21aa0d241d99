//! The peak-RSS law of a conversion:
//!
//! `peak = base + per_sample × S + κ × in_flight + τ × scratch`
//!
//! where `in_flight` is the raw bytes of one inner-chunk row of records
//! (`min(variants_chunk, records) × row_bytes`) times the contigs converted at once:
//! untouched allocation costs address space, not RSS, so a chunk row longer than the
//! data costs only what the data fills. κ covers the second row being filled while one
//! is encoded, and allocator slack. `scratch` is encoder threads × one inner chunk's
//! genotype bytes: each thread lays out and compresses one chunk at a time (and its
//! malloc arena keeps that high-water mark). The design note's law has the first three
//! terms; the fourth is needed once S ≫ the samples chunk, where the chunk row and
//! the inner chunk stop being proportional (measured: without it, 1,000-sample runs
//! were under-predicted by 29 %).
//!
//! The coefficients are fitted jointly by `scripts/calibrate_rss.sh`, which sweeps
//! sample count and chunk rows independently and prints them; re-run it after changing
//! the pipeline's buffers and paste its output here.

/// Coefficients of the law.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RssModel {
    /// Bytes used whatever the input: code, htslib, thread stacks, codecs.
    pub base: f64,
    /// Bytes per sample: names, header dictionaries, per-sample codec state.
    pub per_sample: f64,
    /// Multiplier on in-flight raw bytes.
    pub kappa: f64,
    /// Multiplier on encoder scratch (threads × inner-chunk genotype bytes).
    pub tau: f64,
}

/// Measured on 2026-11-30 (2 cores, glibc malloc) by `scripts/calibrate_rss.sh`:
/// 20 runs, S ∈ {100, 1000, 5000, 20000} × variants chunk ∈ {100, 500, 1000, 2000} at
/// 2 threads plus four 1-thread runs, fitted for relative error; every run landed
/// within −12 %…+10 % of its prediction.
pub const MEASURED: RssModel = RssModel {
    base: 1.0850e7,
    per_sample: 1027.8,
    kappa: 1.942,
    tau: 2.461,
};

/// Plans keep `predicted × HEADROOM ≤ budget`, because `--max-mem` is a promise, not
/// a target: the law's worst under-prediction in calibration was 12 %, and long files
/// cut into small chunk rows drift up to ~20 % further (allocator fragmentation:
/// sim.vcf.gz at 305-record rows peaks at 19.9 MB over 198 k records, 15.9 MB over
/// its first 20 k).
pub const HEADROOM: f64 = 1.35;

impl RssModel {
    /// Predicted peak RSS in bytes.
    pub fn peak(&self, samples: u64, in_flight: u64, scratch: u64) -> u64 {
        (self.base
            + self.per_sample * samples as f64
            + self.kappa * in_flight as f64
            + self.tau * scratch as f64) as u64
    }

    /// The most chunk rows that keep the predicted peak within `budget`, when each
    /// row adds `in_flight_per_row` and `scratch_per_row` bytes.
    pub fn max_rows(
        &self,
        samples: u64,
        budget: u64,
        in_flight_per_row: u64,
        scratch_per_row: u64,
    ) -> u64 {
        let room = budget as f64 - self.base - self.per_sample * samples as f64;
        let per_row = self.kappa * in_flight_per_row as f64 + self.tau * scratch_per_row as f64;
        if room <= 0.0 || per_row <= 0.0 {
            return 0;
        }
        (room / per_row) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_and_inverse_agree() {
        let m = MEASURED;
        let budget = 256 << 20;
        let rows = m.max_rows(1000, budget, 3000, 4000);
        let p = m.peak(1000, rows * 3000, rows * 4000);
        assert!(p <= budget && m.peak(1000, (rows + 1) * 3000, (rows + 1) * 4000) > budget);
        assert_eq!(m.max_rows(1000, 1 << 20, 3000, 4000), 0);
    }
}
