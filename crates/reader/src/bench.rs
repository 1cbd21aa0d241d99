//! `svar2 bench-read`: patches/s, useful and decoded GB/s, amplification and batch
//! latency for a patch list, read batch by batch into one reused buffer.

use crate::error::Result;
use crate::patch::Patch;
use crate::read::Reader;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use svar2_store::any::AnyArray;

/// What a benchmark measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchResult {
    pub array: String,
    pub patches: usize,
    pub batch: usize,
    pub threads: usize,
    pub io_threads: usize,
    pub seconds: f64,
    pub patches_per_s: f64,
    pub useful_gbps: f64,
    pub decoded_gbps: f64,
    pub amplification: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Reads `patches` of `a` in batches of `batch`.
pub fn run(
    reader: &Reader,
    a: &Arc<AnyArray>,
    patches: &[Patch],
    batch: usize,
) -> Result<BenchResult> {
    let c = &reader.counters;
    let (d0, u0) = (
        c.bytes_decoded.load(Ordering::Relaxed),
        c.bytes_useful.load(Ordering::Relaxed),
    );
    let mut buf = Vec::new();
    let mut latencies = Vec::with_capacity(patches.len().div_ceil(batch.max(1)));
    let t0 = Instant::now();
    for b in patches.chunks(batch.max(1)) {
        let t = Instant::now();
        buf.resize(reader.batch_bytes(a, b)?, 0);
        reader.read_batch(a, b, &mut buf)?;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let seconds = t0.elapsed().as_secs_f64().max(1e-9);
    let decoded = (c.bytes_decoded.load(Ordering::Relaxed) - d0) as f64;
    let useful = (c.bytes_useful.load(Ordering::Relaxed) - u0) as f64;
    latencies.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0)
    };
    Ok(BenchResult {
        array: a.name.clone(),
        patches: patches.len(),
        batch,
        threads: reader.threads(),
        io_threads: reader.io_threads(),
        seconds,
        patches_per_s: patches.len() as f64 / seconds,
        useful_gbps: useful / seconds / 1e9,
        decoded_gbps: decoded / seconds / 1e9,
        amplification: decoded / useful.max(1.0),
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
    })
}

impl BenchResult {
    /// One line per figure, as people read it.
    pub fn render(&self) -> String {
        format!(
            "{} patches of {} in batches of {} ({} decode, {} IO threads): {:.2} s\n\
             patches/s      {:.0}\n\
             useful GB/s    {:.3}\n\
             decoded GB/s   {:.3}\n\
             amplification  {:.3}\n\
             batch latency  p50 {:.2} ms, p99 {:.2} ms\n",
            self.patches,
            self.array,
            self.batch,
            self.threads,
            self.io_threads,
            self.seconds,
            self.patches_per_s,
            self.useful_gbps,
            self.decoded_gbps,
            self.amplification,
            self.p50_ms,
            self.p99_ms
        )
    }
}
