//! `svar2`: genotype files to analysis-ready, GPU-decodable VCF Zarr stores, and back.
//!
//! This file only parses the command line, sets up logging and dispatches; each
//! subcommand is one module holding its flags and its run (`flags` holds the flag
//! groups several share, `output` how results reach standard output).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod append;
mod bench_read;
mod convert;
mod digest;
mod finalize;
mod flags;
mod inspect;
mod interrupt;
mod output;
mod plan;
mod query;
mod read;
mod rechunk;
mod verify;
mod view;

#[derive(Parser)]
#[command(
    name = "svar2",
    version,
    about = "VCF/BCF to sharded, GPU-decodable VCF Zarr (v3) stores"
)]
struct Cli {
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true, help_heading = "Global options")]
    verbose: u8,
    /// Only errors; no progress bar, no summary line.
    #[arg(short, long, global = true, help_heading = "Global options")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert VCF, bgzipped VCF or BCF files of one call set into a VCF Zarr v3 store.
    Convert(convert::Args),
    /// Print the conversion plan (budget, cores, contig order, geometry, predicted
    /// peak RSS) from the header, the index and a sample of records (how they fill
    /// memory); writes nothing, except the partition plan that `--partitions N -o
    /// PLAN` asks for.
    Plan(plan::Args),
    /// Complete the store of a partitioned conversion once every partition is done:
    /// joins the rows partitions share, writes the arrays that span partitions and
    /// the root zarr.json last. Refuses, naming them, while partitions are missing,
    /// failed or running. The store equals a single `svar2 convert`'s.
    Finalize(finalize::Args),
    /// Add samples to an existing directory store: its records and the new inputs
    /// joined as `bcftools merge` joins them, written with the store's layout beside
    /// it and swapped in whole (a reader sees the old version or the new, never a
    /// mixture; a second append at the same time is refused). When the new samples
    /// have the store's sites, only the sample columns from the store's last sample
    /// shard on are written; a store converted with `--samples-shard` well under its
    /// sample count appends cheaply (`svar2 inspect` says how cheaply). Attributes
    /// users added are carried over; arrays or groups svar2 did not write are refused
    /// by name before any work (the new version could not hold them).
    Append(append::Args),
    /// Show a Zarr v2 or v3 store's layout (any VCF Zarr store: svar2's, bio2zarr's):
    /// per array its shape, type, decoded chunk, shard, codecs, bytes, files, whether
    /// svar2's GPU path decodes it, and what a --patch costs; reads no array data.
    Inspect(inspect::Args),
    /// Rewrite any VCF Zarr store (Zarr v2 or v3: bio2zarr's, an older svar2's) in
    /// svar2's sharded, GPU-decodable layout for a --patch: the same arrays, attributes
    /// and values, chunks sized so a patch decodes at most --max-amplification, and
    /// the bytes `svar2 convert` would write with the same layout flags.
    Rechunk(rechunk::Args),
    /// Print the genotypes (or any numeric array) of a region, as `bcftools query -f
    /// '%CHROM\t%POS[\t%GT]\n'` prints them (tsv), or as a .npy array on stdout.
    Read(read::Args),
    /// Measure random patch reads: patches/s, useful and decoded GB/s, decoded bytes
    /// per useful byte, batch latency.
    BenchRead(bench_read::Args),
    /// Print VCF or BCF of a store's records (any VCF Zarr store), with bcftools
    /// view's flags: regions, targets, samples, -G/-h/-H, -O/-o, --write-index.
    View(view::Args),
    /// Print a store's records in a bcftools query format (-f), or its samples (-l).
    Query(query::Args),
    /// Print one blake3 hash over every file (relative path and bytes) of a store.
    Digest(digest::Args),
    /// Check every shard index and every chunk of a store (its crc32c, or for stores
    /// without checksums what can be checked: index checksums, frame headers, decoded
    /// sizes); name each damaged chunk with the records and samples it holds, and the
    /// shards svar2's record says were written that are gone, swapped or moved, and
    /// arrays whose chunks are not the ones it stored where they lie; exit 1 if any.
    Verify(verify::Args),
}

fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only on a terminal; without -v a warning is one plain line (no timestamp
    // or module path), as users read it.
    use std::io::IsTerminal;
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if verbose == 0 {
        b.without_time().with_target(false).init();
    } else {
        b.init();
    }
}

/// Pins glibc's mmap threshold at 4 MiB and its trim threshold at 8 MiB. By default
/// glibc raises the mmap threshold (up to 32 MiB) after each large free, so freed
/// chunk-row buffers stay in per-thread arenas and RSS drifts up over a long conversion
/// (measured 22.0 vs 16.8 MB on the shared corpus), which would make peak RSS, and so
/// `--max-mem`, unpredictable. Below 4 MiB, codec scratch (blosc blocks, chunk layouts)
/// is reused from the arenas instead of being mapped and page-faulted afresh for every
/// chunk (measured 2.96 -> 2.52 s on sim.bcf). Pinning the mmap threshold leaves the
/// trim threshold at 128 KiB, though, so each arena handed the freed top of its heap
/// back (`madvise`) after nearly every chunk and faulted it in again for the next:
/// c-blosc and zstd set up ~1 MB of context per chunk. 8 MiB (twice the mmap
/// threshold, glibc's own dynamic rule) keeps that scratch: sim.bcf 0.62 -> 0.45 s,
/// 500,000 samples 1.34 -> 1.13 s, peak RSS within 2 MB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn pin_malloc_thresholds() {
    extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
    const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
    // SAFETY: mallopt only sets an allocator parameter; called before any threads start.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 4 << 20);
        mallopt(M_TRIM_THRESHOLD, 8 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn pin_malloc_thresholds() {}

fn main() -> ExitCode {
    pin_malloc_thresholds();
    let cli: Cli = output::parse_or_exit();
    init_logging(cli.verbose, cli.quiet);
    if cli.verbose == 0 {
        svar2_vcf::source::quiet_htslib();
    }
    let quiet = cli.quiet;
    let r = match cli.command {
        Command::Convert(a) => convert::run(a, quiet),
        Command::Plan(a) => plan::run(a),
        Command::Finalize(a) => finalize::run(a, quiet),
        Command::Append(a) => append::run(a, quiet),
        Command::Inspect(a) => inspect::run(a),
        Command::Rechunk(a) => rechunk::run(a, quiet),
        Command::Read(a) => read::run(a),
        Command::BenchRead(a) => bench_read::run(a),
        Command::View(a) => view::run(a),
        Command::Query(a) => query::run(a),
        Command::Digest(a) => digest::run(a),
        Command::Verify(a) => verify::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("svar2: error: {e}");
            ExitCode::FAILURE
        }
    }
}
