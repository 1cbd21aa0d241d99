//! `svar2 bench-read`: random patch reads measured (CPU, or into GPU memory).

use crate::output::{out, out_json};
use std::path::PathBuf;
use svar2_planner::geometry::PatchShape;
use svar2_reader::{bench, patch as patches, Reader, Store};

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path (any VCF Zarr store).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// Patch shape VARIANTSxSAMPLES (all ploidy values are read); one larger than
    /// the array is cut to it, with a warning naming the shape read.
    #[arg(long, default_value = "4096x1")]
    patch: PatchShape,
    /// The array to read.
    #[arg(long, default_value = "call_genotype")]
    array: String,
    /// Patches to draw.
    #[arg(long, default_value_t = 20000)]
    n: usize,
    /// Seed of the xorshift64 draw (same seed, same patches, any machine).
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Patches per batch (a batch decodes each chunk once).
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    batch: usize,
    /// Threads that only read, for stores whose chunks are not in mapped shard files:
    /// a bucket store (one request each in flight: give it many, e.g. 64) or unsharded
    /// arrays (e.g. bio2zarr's); local shards are mapped and read by the decode threads
    #[arg(long, default_value_t = 4, value_parser = crate::flags::io_threads_arg)]
    io_threads: usize,
    /// Decode threads (default: every usable core).
    #[arg(long, value_parser = crate::flags::threads_arg)]
    threads: Option<usize>,
    /// Write the drawn patch list (JSON rows [variant_start, n_variants,
    /// sample_start, n_samples]) here, for peer tools.
    #[arg(long)]
    #[arg(value_parser = crate::flags::local_path)]
    emit_patches: Option<PathBuf>,
    /// Read this patch list instead of drawing one.
    #[arg(long)]
    #[arg(value_parser = crate::flags::local_path)]
    patches: Option<PathBuf>,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
    /// Decode on the GPU into device memory (needs the CUDA driver, NVRTC and
    /// nvCOMP; says which is missing and exits 2 when one is). --threads host
    /// threads read and plan batches ahead of the device.
    #[arg(long)]
    gpu: bool,
    /// With --gpu: copy every batch back and compare it with the CPU reader's
    /// bytes (a check, not a timing).
    #[arg(long, requires = "gpu")]
    verify: bool,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let device = if a.gpu {
        match svar2_gpu::device::Device::open() {
            Ok(d) => Some(d),
            Err(why) => {
                eprintln!("svar2: error: --gpu: {why}");
                std::process::exit(2);
            }
        }
    } else {
        None
    };
    let st = Store::open(&a.store)?;
    let arr = st.array(&a.array)?;
    let dims = &arr.layout.dimension_names;
    let len = |d: &str| {
        dims.iter()
            .position(|x| x == d)
            .map_or(1, |i| arr.shape()[i])
    };
    let list = match &a.patches {
        Some(p) => patches::parse_list(p)?,
        None => {
            // A patch larger than the array is cut to it (the default 4096x1 over a
            // small store, 64x8 over a per-variant array), and the run says so: the
            // figures are for the shape read.
            let (nv, ns) = (len("variants"), len("samples"));
            let per_sample = dims.iter().any(|d| d == "samples");
            let v = a.patch.variants.min(nv);
            let s = if per_sample {
                a.patch.samples.min(ns)
            } else {
                1
            };
            if v < a.patch.variants || (per_sample && s < a.patch.samples) {
                tracing::warn!(
                    "--patch {}x{} is larger than {} ({nv} variants x {ns} samples): \
                     patches of {v}x{s} are read",
                    a.patch.variants,
                    a.patch.samples,
                    a.array
                );
            }
            patches::draw(a.n, v, s, nv, ns, a.seed)?
        }
    };
    if let Some(path) = &a.emit_patches {
        std::fs::write(path, serde_json::to_vec(&list)?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let threads = a
        .threads
        .unwrap_or_else(|| svar2_planner::host::Host::system().cores().usable);
    let reader = Reader::new(threads, a.io_threads)?;
    let r = match device {
        Some(mut d) => bench::run_gpu(&reader, &mut d, &arr, &list, a.batch, threads, a.verify)?,
        None => bench::run(&reader, &arr, &list, a.batch)?,
    };
    if a.json {
        out_json(&r);
    } else {
        out(&r.render());
    }
    Ok(())
}
