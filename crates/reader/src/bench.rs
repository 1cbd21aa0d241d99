//! `svar2 bench-read`: patches/s, useful and decoded GB/s, decoded bytes per useful
//! byte (per batch: below 1 when patches share chunks; `inspect`'s amplification is per
//! patch) and batch
//! latency for a patch list, read batch by batch into one reused buffer.

use crate::error::Result;
use crate::patch::Patch;
use crate::read::Reader;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use svar2_zarr::AnyArray;

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
    /// Decoded ÷ useful bytes over the run (a batch decodes each chunk once).
    pub decoded_per_useful: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// GPU runs: the device, decoded bytes per second of device time (upload, nvCOMP,
    /// kernels), and the patches checked against the CPU reader (`--verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<usize>,
    /// A store in a bucket: the GET requests the run made and the bytes they
    /// fetched (shard index tails included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_bytes: Option<u64>,
}

/// The batch latencies' q-quantile (nearest rank), for any q.
fn percentiles(mut latencies: Vec<f64>) -> impl Fn(f64) -> f64 {
    latencies.sort_by(f64::total_cmp);
    move |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0)
    }
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
    // One buffer, made and touched before the clock starts, as a training loop holds
    // its batch buffer (Python's `out=`): the timing is the reader's, not the first
    // batch's page faults.
    let first = patches.chunks(batch.max(1)).next().unwrap_or_default();
    let mut buf = vec![0u8; reader.batch_bytes(a, first)?];
    buf.fill(1); // (written, so its pages are there: a fresh `vec!` is not)
    let mut latencies = Vec::with_capacity(patches.len().div_ceil(batch.max(1)));
    let fetched0 = svar2_storage::bucket::fetch_stats();
    let t0 = Instant::now();
    for b in patches.chunks(batch.max(1)) {
        let t = Instant::now();
        buf.resize(reader.batch_bytes(a, b)?, 0);
        reader.read_batch(a, b, &mut buf)?;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let fetched1 = svar2_storage::bucket::fetch_stats();
    let seconds = t0.elapsed().as_secs_f64().max(1e-9);
    let decoded = (c.bytes_decoded.load(Ordering::Relaxed) - d0) as f64;
    let useful = (c.bytes_useful.load(Ordering::Relaxed) - u0) as f64;
    let m = Measured {
        patches: patches.len(),
        seconds,
        decoded,
        useful,
        latencies,
    };
    // Local shards mapped into memory are read by the decode threads themselves: no
    // IO thread takes part (reported as 0).
    let io = if a.reads_from_memory() {
        0
    } else {
        reader.io_threads()
    };
    let mut r = m.result(&a.name, batch, reader.threads(), io);
    if a.reads_remote() {
        r.gets = Some(fetched1.0 - fetched0.0);
        r.fetched_bytes = Some(fetched1.1 - fetched0.1);
    }
    Ok(r)
}

/// `x` to `digits` significant figures: what a timing on a shared machine can tell
/// (runs vary by ±10 %), so `--json` prints 73600, not 73596.04324120801.
fn significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// `x` rounded to `decimals` places.
fn decimals(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

/// What one run measured, before it is turned into figures.
struct Measured {
    patches: usize,
    seconds: f64,
    decoded: f64,
    useful: f64,
    latencies: Vec<f64>,
}

impl Measured {
    /// The figures (no device fields).
    fn result(self, array: &str, batch: usize, threads: usize, io_threads: usize) -> BenchResult {
        let (s, pct) = (self.seconds, percentiles(self.latencies));
        BenchResult {
            array: array.to_string(),
            patches: self.patches,
            batch,
            threads,
            io_threads,
            seconds: decimals(s, 3),
            patches_per_s: significant(self.patches as f64 / s, 3),
            useful_gbps: significant(self.useful / s / 1e9, 3),
            decoded_gbps: significant(self.decoded / s / 1e9, 3),
            decoded_per_useful: decimals(self.decoded / self.useful.max(1.0), 3),
            p50_ms: significant(pct(0.5), 3),
            p99_ms: significant(pct(0.99), 3),
            device: None,
            device_gbps: None,
            verified: None,
            gets: None,
            fetched_bytes: None,
        }
    }
}

/// Reads `patches` of `a` into GPU memory in batches of `batch`: `planners` host
/// threads read and plan batches ahead (bounded) while the device decodes the
/// current one. With `verify`, every batch is copied back and compared with the CPU
/// reader's bytes (slow: for checks, not timing).
pub fn run_gpu(
    reader: &Reader,
    device: &mut svar2_gpu::device::Device,
    a: &Arc<AnyArray>,
    patches: &[Patch],
    batch: usize,
    planners: usize,
    verify: bool,
) -> Result<BenchResult> {
    use std::collections::BTreeMap;
    let batches: Vec<&[Patch]> = patches.chunks(batch.max(1)).collect();
    let planners = planners.clamp(1, batches.len().max(1));
    let (tx, rx) = crossbeam_channel::bounded(2 * planners);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut latencies = Vec::with_capacity(batches.len());
    let (mut decoded, mut useful, mut device_s, mut verified) = (0f64, 0f64, 0f64, 0usize);
    let t0 = Instant::now();
    let result: Result<()> = std::thread::scope(|s| {
        for _ in 0..planners {
            let (tx, next, batches) = (tx.clone(), &next, &batches);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(b) = batches.get(i) else { break };
                let plan = reader.plan_batch(a, b);
                let failed = plan.is_err();
                if tx.send((i, plan)).is_err() || failed {
                    break;
                }
            });
        }
        drop(tx);
        let mut ready = BTreeMap::new();
        let mut want = 0;
        let mut t = Instant::now();
        for (i, plan) in rx.iter() {
            ready.insert(i, plan?);
            while let Some(plan) = ready.remove(&want) {
                let td = Instant::now();
                device.decode(&plan)?;
                device_s += td.elapsed().as_secs_f64();
                decoded += plan.out_bytes as f64;
                useful += plan.patch_bytes as f64;
                if verify {
                    let mut cpu = vec![0u8; plan.patch_bytes];
                    reader.read_batch(a, batches[want], &mut cpu)?;
                    if device.patches_to_host()? != cpu {
                        return Err(crate::Error::Usage(format!(
                            "{}: batch {want}: the GPU's patches differ from the CPU reader's",
                            a.name
                        )));
                    }
                    verified += batches[want].len();
                }
                latencies.push(t.elapsed().as_secs_f64() * 1e3);
                t = Instant::now();
                want += 1;
            }
        }
        Ok(())
    });
    result?;
    let seconds = t0.elapsed().as_secs_f64().max(1e-9);
    let m = Measured {
        patches: patches.len(),
        seconds,
        decoded,
        useful,
        latencies,
    };
    Ok(BenchResult {
        device: Some(device.name.clone()),
        device_gbps: Some(significant(decoded / device_s.max(1e-9) / 1e9, 3)),
        verified: verify.then_some(verified),
        ..m.result(&a.name, batch, planners, reader.io_threads())
    })
}

impl BenchResult {
    /// One line per figure, as people read it.
    pub fn render(&self) -> String {
        let threads = match self.io_threads {
            0 => format!(
                "{} decode threads, which also read the mapped shards",
                self.threads
            ),
            io => format!("{} decode, {io} IO threads", self.threads),
        };
        let mut s = format!(
            "{} patches of {} in batches of {} ({threads}): {:.2} s\n\
             patches/s      {:.0}\n\
             useful GB/s    {:.3}\n\
             decoded GB/s   {:.3}\n\
             decoded/useful {:.3} per batch (a chunk that patches of one batch share \
             decodes once{})\n\
             batch latency  p50 {:.2} ms, p99 {:.2} ms\n",
            self.patches,
            self.array,
            self.batch,
            self.seconds,
            self.patches_per_s,
            self.useful_gbps,
            self.decoded_gbps,
            self.decoded_per_useful,
            if self.decoded_per_useful < 1.0 {
                ": below 1, the batch's patches overlap; `inspect`'s amp is per patch"
            } else {
                ""
            },
            self.p50_ms,
            self.p99_ms
        );
        if let (Some(d), Some(g)) = (&self.device, self.device_gbps) {
            s += &format!("device         {d}: {g:.1} GB/s decoded in device time\n");
        }
        if let Some(v) = self.verified {
            s += &format!("verified       {v} patches equal the CPU reader's\n");
        }
        if let (Some(g), Some(b)) = (self.gets, self.fetched_bytes) {
            let useful = self.useful_gbps * 1e9 * self.seconds;
            s += &format!(
                "fetched        {g} GETs, {:.1} MB ({:.3} bytes fetched per useful byte)\n",
                b as f64 / 1e6,
                b as f64 / useful.max(1.0)
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_what_a_timing_can_tell() {
        assert_eq!(significant(73596.04324120801, 3), 73600.0);
        assert_eq!(significant(0.0123456, 3), 0.0123);
        assert_eq!(decimals(1.49512, 3), 1.495);
        assert_eq!(significant(0.0, 3), 0.0);
    }
}
