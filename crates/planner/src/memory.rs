//! The peak-RSS law of a conversion:
//!
//! `peak = base + per_sample × S + κ × in_flight + κ_f × in_flight_format + τ × scratch`
//!
//! where `in_flight` is the raw bytes of one inner-chunk row of records
//! (`min(variants_chunk, records) × row_bytes`) times the rows alive at once (one
//! filling, one encoding; more with piece readers and concurrent contigs): untouched
//! allocation costs address space, not RSS, so a chunk row longer than the data costs
//! only what the data fills. κ covers those rows and allocator slack.
//! `in_flight_format` is the part of them that per-sample FORMAT fields other than GT
//! take (AD, DP, GQ, PL…): held as i32/f32, then laid out, encoded and buffered field
//! by field, they cost more per raw byte than GT's i8 calls (κ_f > κ); a law fitted on
//! GT-only files under-predicted call sets by 22–30 %. `scratch` is encoder threads ×
//! one inner chunk of every per-sample array (a thread's buffers and malloc arena keep
//! the high-water mark of the chunks it lays out and compresses); it matters once
//! S ≫ the samples chunk, where the chunk row and the inner chunk stop being
//! proportional.
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
    /// Multiplier on in-flight raw bytes (genotypes and per-variant columns).
    pub kappa: f64,
    /// Multiplier on the in-flight raw bytes of per-sample FORMAT fields (not GT).
    pub kappa_format: f64,
    /// Multiplier on encoder scratch (threads × one inner chunk of every per-sample
    /// array).
    pub tau: f64,
}

/// Measured on 2026-11-30 (2 cores, glibc malloc) by `scripts/calibrate_rss.sh`:
/// 29 runs — GT-only files of S ∈ {100, 1000, 5000, 20000} × variants chunk ∈ {100,
/// 500, 1000, 2000}, and call sets with FORMAT fields (2,000 samples of
/// GT:AD:DP:GQ:PL, 500 of GT:GQ:DP:AD:VAF:PL, 1,000 of GT:DP:GQ) — at 1 and 2 threads,
/// fitted for relative error. GT-only runs land within −20 %…+13 % of the prediction,
/// call sets within −30 %…+38 % (small runs, where RSS moves by a few MB between
/// identical runs, are the extremes); see [`HEADROOM`].
pub const MEASURED: RssModel = RssModel {
    base: 1.1698e7,
    per_sample: 1162.9,
    kappa: 2.006,
    kappa_format: 2.847,
    tau: 0.413,
};

/// Raw bytes in flight, split as the law weighs them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InFlight {
    /// Genotypes and per-variant columns.
    pub other: u64,
    /// Per-sample FORMAT fields other than GT.
    pub format: u64,
}

impl InFlight {
    /// `rows` records of `per_row` bytes each.
    pub fn rows(rows: u64, per_row: InFlight) -> InFlight {
        InFlight {
            other: rows * per_row.other,
            format: rows * per_row.format,
        }
    }

    /// Both parts together.
    pub fn total(&self) -> u64 {
        self.other + self.format
    }
}

/// Plans keep `predicted × HEADROOM ≤ budget`, because `--max-mem` is a promise, not
/// a target: the law's worst under-prediction was 30 % in calibration and 31 % on the
/// runs of `scripts/bench_memory.sh` (held-out call sets included), where the same
/// configuration's peak also moved by 5–10 % between runs (thread timing decides how
/// many chunk rows are alive at once); long files cut into small chunk rows drift
/// further (allocator fragmentation: sim.vcf.gz at 305-record rows peaks at 19.9 MB
/// over 198 k records, 15.9 MB over its first 20 k).
pub const HEADROOM: f64 = 1.6;

impl RssModel {
    /// Predicted peak RSS in bytes.
    pub fn peak(&self, samples: u64, in_flight: InFlight, scratch: u64) -> u64 {
        (self.base
            + self.per_sample * samples as f64
            + self.kappa * in_flight.other as f64
            + self.kappa_format * in_flight.format as f64
            + self.tau * scratch as f64) as u64
    }

    /// The most chunk rows that keep the predicted peak within `budget`, when each
    /// row adds `in_flight_per_row` and `scratch_per_row` bytes.
    pub fn max_rows(
        &self,
        samples: u64,
        budget: u64,
        in_flight_per_row: InFlight,
        scratch_per_row: u64,
    ) -> u64 {
        let room = budget as f64 - self.base - self.per_sample * samples as f64;
        let per_row = self.kappa * in_flight_per_row.other as f64
            + self.kappa_format * in_flight_per_row.format as f64
            + self.tau * scratch_per_row as f64;
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
        let row = InFlight {
            other: 3000,
            format: 5000,
        };
        let rows = m.max_rows(1000, budget, row, 4000);
        let p = m.peak(1000, InFlight::rows(rows, row), rows * 4000);
        let over = m.peak(1000, InFlight::rows(rows + 1, row), (rows + 1) * 4000);
        assert!(p <= budget && over > budget);
        assert_eq!(m.max_rows(1000, 1 << 20, row, 4000), 0);
    }
}
