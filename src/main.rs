//! `svar2`: genotype files to analysis-ready, GPU-decodable VCF Zarr stores.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod read;
use svar2_convert::planning::PlanRequest;
use svar2_planner::geometry::Patch;
use svar2_planner::size::{human, parse_max_mem, MaxMem};
use svar2_planner::Requested;

#[derive(Parser)]
#[command(
    name = "svar2",
    version,
    about = "VCF/BCF to sharded, GPU-decodable VCF Zarr (v3) stores"
)]
struct Cli {
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors; no progress bar, no summary line.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert VCF, bgzipped VCF or BCF files of one call set into a VCF Zarr v3 store.
    Convert {
        /// INPUT... OUTPUT: the inputs (.vcf, .vcf.gz, .bcf; several files of one
        /// call set, e.g. one per chromosome: same samples, each contig in one file;
        /// `-` reads VCF text from standard input), then the output store directory:
        /// new, empty, or an interrupted svar2 store (an existing Zarr store only
        /// with --force; anything else is refused).
        #[arg(required_unless_present = "plan_file", num_args = 1.., value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Convert one partition of a plan `svar2 plan --partitions N -o PLAN` wrote
        /// (inputs, output and layout come from the plan; give --partition).
        #[arg(long = "plan", value_name = "PLAN", requires = "partition", conflicts_with_all = ["paths", "inputs", "force"])]
        plan_file: Option<PathBuf>,
        /// With --plan: the partition this task converts (0 to N-1; a Slurm array
        /// task passes $SLURM_ARRAY_TASK_ID). Memory and cores are this machine's.
        #[arg(long, requires = "plan_file")]
        partition: Option<usize>,
        /// A file listing the inputs, one path per line (then give only OUTPUT).
        #[arg(long, value_name = "FILE")]
        inputs: Option<PathBuf>,
        #[command(flatten)]
        plan: PlanArgs,
        /// Replace an existing Zarr store. Never removes anything else: a folder of
        /// other files, a plain file or a symbolic link is refused even with it.
        #[arg(long)]
        force: bool,
        /// Debugging aid: the contig order readers follow (`planned`, `file`,
        /// `reverse`). The store's bytes never depend on it.
        #[arg(long, hide = true, default_value = "planned", value_parser = parse_order)]
        debug_contig_order: svar2_convert::ContigOrder,
    },
    /// Print the conversion plan (budget, cores, contig order, geometry, predicted
    /// peak RSS) from the header and index alone; writes nothing, except the
    /// partition plan that `--partitions N -o PLAN` asks for.
    Plan {
        /// INPUT... [OUTPUT]: the inputs as for convert, then optionally the output
        /// the conversion would write (not touched; recognised as not named like an
        /// input: .vcf, .vcf.gz, .bcf, .gz, `-`).
        #[arg(required_unless_present = "inputs", num_args = 0.., value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// A file listing the inputs, one path per line.
        #[arg(long, value_name = "FILE")]
        inputs: Option<PathBuf>,
        #[command(flatten)]
        plan: PlanArgs,
        /// Accepted for clarity: `plan` writes nothing but an `-o PLAN` file.
        #[arg(long)]
        dry_run: bool,
        /// Print the plan as JSON, for scripts.
        #[arg(long)]
        json: bool,
        /// Also run the rate probe (parses a bounded prefix of the largest contig,
        /// writes nothing) so `w` is the one `convert` will use.
        #[arg(long)]
        probe: bool,
        /// Plan a conversion in N partitions, each converted by its own task (a
        /// Slurm array task, `xargs -P`): `convert --plan PLAN --partition K`, then
        /// `finalize PLAN`. Needs indexed inputs and the OUTPUT store path.
        #[arg(long, value_name = "N")]
        partitions: Option<usize>,
        /// With --partitions: write the plan to this file (the tasks read it).
        #[arg(short = 'o', long, value_name = "PLAN", requires = "partitions")]
        output_plan: Option<PathBuf>,
    },
    /// Complete the store of a partitioned conversion once every partition is done:
    /// joins the rows partitions share, writes the arrays that span partitions and
    /// the root zarr.json last. Refuses, naming them, while partitions are missing,
    /// failed or running. The store equals a single `svar2 convert`'s.
    Finalize {
        /// The plan `svar2 plan --partitions N -o PLAN` wrote.
        plan: PathBuf,
        #[command(flatten)]
        budget: BudgetArgs,
    },
    /// Show a Zarr v2 or v3 store's layout (any VCF Zarr store: svar2's, bio2zarr's):
    /// per array its shape, type, decoded chunk, shard, codecs, bytes, files, whether
    /// svar2's GPU path decodes it, and what a --patch costs; reads no array data.
    Inspect {
        /// The store directory.
        store: PathBuf,
        /// The patch a reader fetches, VARIANTSxSAMPLES (e.g. 4096x1): prints each
        /// array's decode amplification (decoded bytes / needed bytes).
        #[arg(long)]
        patch: Option<Patch>,
        /// Print the report as JSON, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite any VCF Zarr store (Zarr v2 or v3: bio2zarr's, an older svar2's) in
    /// svar2's sharded, GPU-decodable layout for a --patch: the same arrays, attributes
    /// and values, chunks sized so a patch decodes at most --max-amplification, and
    /// the bytes `svar2 convert` would write with the same layout flags.
    Rechunk {
        /// The store to read (not changed).
        input: PathBuf,
        /// Output store directory (the same rules as convert's).
        output: PathBuf,
        #[command(flatten)]
        layout: LayoutArgs,
        #[command(flatten)]
        budget: BudgetArgs,
        /// Threads that only wait on reads (default 4; a network file system wants
        /// dozens).
        #[arg(long)]
        io_threads: Option<usize>,
        /// Replace an existing Zarr store (never the input, nor anything that is not a
        /// Zarr store).
        #[arg(long)]
        force: bool,
        /// Print the plan (geometry, tiles, predicted peak RSS, source decodes) and
        /// write nothing.
        #[arg(long)]
        dry_run: bool,
        /// With --dry-run: print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the genotypes (or any numeric array) of a region, as `bcftools query -f
    /// '%CHROM\t%POS[\t%GT]\n'` prints them (tsv), or as a .npy array on stdout.
    Read {
        /// The store directory (any VCF Zarr store).
        store: PathBuf,
        /// CONTIG, CONTIG:POS or CONTIG:START-END (1-based, inclusive; records
        /// overlapping it, as `bcftools view -r`).
        #[arg(long)]
        region: String,
        /// Samples to print, comma-separated (default: all, in store order).
        #[arg(long)]
        samples: Option<String>,
        /// The array to read.
        #[arg(long, default_value = "call_genotype")]
        array: String,
        /// tsv: CHROM, POS, then one column per sample (GT rebuilt from
        /// call_genotype and call_genotype_phased; other arrays' values comma-joined).
        /// npy: the selected rows x samples x trailing values as one .npy array.
        #[arg(long, default_value = "tsv", value_parser = ["tsv", "npy"])]
        format: String,
    },
    /// Measure random patch reads: patches/s, useful and decoded GB/s, amplification,
    /// batch latency.
    BenchRead {
        /// The store directory (any VCF Zarr store).
        store: PathBuf,
        /// Patch shape VARIANTSxSAMPLES (all ploidy values are read).
        #[arg(long, default_value = "4096x1")]
        patch: Patch,
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
        #[arg(long, default_value_t = 256)]
        batch: usize,
        /// Threads that only read (default 4).
        #[arg(long, default_value_t = 4)]
        io_threads: usize,
        /// Decode threads (default: every usable core).
        #[arg(long)]
        threads: Option<usize>,
        /// Write the drawn patch list (JSON rows [variant_start, n_variants,
        /// sample_start, n_samples]) here, for peer tools.
        #[arg(long)]
        emit_patches: Option<PathBuf>,
        /// Read this patch list instead of drawing one.
        #[arg(long)]
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
    },
    /// Print one blake3 hash over every file (relative path and bytes) of a store.
    Digest {
        /// The store directory.
        store: PathBuf,
    },
}

/// The store layout: the same flags for `convert`, `plan` and `rechunk`.
#[derive(Args)]
struct LayoutArgs {
    /// The patch a reader fetches, VARIANTSxSAMPLES (e.g. 4096x1): inner chunks are
    /// sized so decoding a random patch costs at most --max-amplification.
    #[arg(long)]
    patch: Option<Patch>,
    /// Bytes decoded / bytes needed allowed for a --patch.
    #[arg(long, default_value_t = 1.5)]
    max_amplification: f64,
    /// Variants per inner chunk (overrides --patch; default 1000, bio2zarr's).
    #[arg(long)]
    variants_chunk: Option<u64>,
    /// Samples per inner chunk (overrides --patch; default 1000).
    #[arg(long)]
    samples_chunk: Option<u64>,
    /// Variants per shard file, a multiple of the inner chunk (default: ~64 MiB of
    /// genotypes per shard).
    #[arg(long)]
    variants_shard: Option<u64>,
    /// Samples per shard file (default: all samples, up to ~64 MiB per shard).
    #[arg(long)]
    samples_shard: Option<u64>,
    /// Compression level of every inner chunk: the blosc clevel (1-9) of numeric
    /// chunks and the zstd level of string chunks. 1 writes ~1.45x faster than 3 for a
    /// store ~4% larger (still ~16% smaller than bio2zarr's at its level 7); decoding
    /// speed does not depend on the level.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..=9))]
    zstd_level: i32,
}

impl LayoutArgs {
    /// Whether any layout flag was given (a partition takes its plan's layout).
    fn given(&self) -> bool {
        self.patch.is_some() || self.zstd_level != 1 || self.requested() != Requested::default()
    }

    fn requested(&self) -> Requested {
        Requested {
            variants_chunk: self.variants_chunk,
            samples_chunk: self.samples_chunk,
            variants_shard: self.variants_shard,
            samples_shard: self.samples_shard,
        }
    }
}

/// Memory and threads.
#[derive(Args)]
struct BudgetArgs {
    /// Memory budget: `auto` (0.8 x the cgroup limit, else host memory), or a size
    /// such as 8GiB, 512M, 1000000. Peak RSS is planned to stay under it.
    #[arg(long, default_value = "auto", value_parser = parse_max_mem)]
    max_mem: MaxMem,
    /// Encoding threads (default: every usable core, cgroup quota and affinity applied).
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Args)]
struct PlanArgs {
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    layout: LayoutArgs,
    /// Readers per contig (sub-contig pieces read through the index in parallel).
    /// Default: one streaming reader.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    readers: Option<u32>,
}

impl PlanArgs {
    fn request(&self, probe: bool) -> PlanRequest {
        PlanRequest {
            max_mem: self.budget.max_mem,
            threads: self.budget.threads,
            patch: self.layout.patch,
            max_amplification: self.layout.max_amplification,
            requested: self.layout.requested(),
            readers: self.readers,
            zstd_level: self.layout.zstd_level,
            probe,
        }
    }
}

/// Whether a path is named like an input (`-`, .vcf, .vcf.gz, .bcf, .gz, .bgz).
fn input_like(p: &std::path::Path) -> bool {
    let n = p.to_string_lossy();
    n == "-"
        || [".vcf", ".gz", ".bcf", ".bgz"]
            .iter()
            .any(|e| n.ends_with(e))
}

/// The inputs and the output from the positional paths (and `--inputs FILE`, one
/// path per line). `needs_output`: the last path is the output (convert); otherwise
/// it is one only when not named like an input (plan).
fn split_paths(
    mut paths: Vec<PathBuf>,
    list: Option<&std::path::Path>,
    needs_output: bool,
) -> Result<(Vec<PathBuf>, Option<PathBuf>), String> {
    let output = match (needs_output, paths.last()) {
        (true, _) if paths.len() < 2 && list.is_none() => {
            return Err("give the inputs, then the output store (INPUT... OUTPUT)".into())
        }
        (true, _) => paths.pop(),
        (false, Some(last)) if list.is_some() || (paths.len() > 1 && !input_like(last)) => {
            paths.pop()
        }
        _ => None,
    };
    if let Some(list) = list {
        if !paths.is_empty() {
            return Err("with --inputs FILE, give only the output store".into());
        }
        let text = std::fs::read_to_string(list)
            .map_err(|e| format!("--inputs {}: {e}", list.display()))?;
        paths = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(PathBuf::from)
            .collect();
        if paths.is_empty() {
            return Err(format!("--inputs {}: lists no files", list.display()));
        }
    }
    Ok((paths, output))
}

fn parse_order(s: &str) -> Result<svar2_convert::ContigOrder, String> {
    use svar2_convert::ContigOrder::*;
    match s {
        "planned" => Ok(Planned),
        "file" => Ok(File),
        "reverse" => Ok(Reverse),
        _ => Err(format!("`{s}`: expected planned, file or reverse")),
    }
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

/// Writes to standard output; a reader that went away (`| head`) ends the output
/// quietly instead of a panic.
fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("svar2: error: standard output: {e}");
        }
        std::process::exit(if e.kind() == std::io::ErrorKind::BrokenPipe {
            0
        } else {
            1
        });
    }
}

/// The summary line's note on shards re-encoded after later records widened them.
fn regrown(shards: u64) -> String {
    if shards > 0 {
        format!(", {shards} shards re-encoded after layouts grew")
    } else {
        String::new()
    }
}

/// A report as pretty JSON on standard output, for scripts.
fn out_json(report: &impl serde::Serialize) {
    out(&format!(
        "{}\n",
        serde_json::to_string_pretty(report).expect("reports serialise")
    ));
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command {
        Command::Convert {
            plan_file: Some(plan_file),
            partition,
            plan,
            ..
        } => {
            let k = partition.expect("clap requires --partition with --plan");
            if plan.layout.given() {
                return Err("with --plan, the layout is the plan's: drop the layout flags".into());
            }
            let s = svar2_convert::partition::run(&plan_file, k, &plan.request(true), !cli.quiet)?;
            if !cli.quiet {
                eprintln!(
                    "svar2: partition {k}: {} records in {:.2} s, {} shard files (cc {}, w {}, \
                     predicted peak {})",
                    s.records,
                    s.seconds,
                    s.files,
                    s.cc,
                    s.w,
                    human(s.predicted_peak_rss)
                );
            }
            Ok(())
        }
        Command::Convert {
            paths,
            inputs,
            plan,
            force,
            debug_contig_order,
            ..
        } => {
            let opts = svar2_convert::Options {
                request: plan.request(true),
                force,
                progress: !cli.quiet,
                contig_order: debug_contig_order,
            };
            let (inputs, output) = split_paths(paths, inputs.as_deref(), true)?;
            let output = output.expect("convert names its output");
            let s = svar2_convert::convert_inputs(&inputs, &output, &opts)?;
            if !cli.quiet {
                eprintln!(
                    "svar2: {} records in {:.2} s -> {} ({} in {} files{})",
                    s.records,
                    s.seconds,
                    output.display(),
                    human(s.store_bytes),
                    s.files,
                    regrown(s.rewritten_shards)
                );
            }
            Ok(())
        }
        Command::Plan {
            paths,
            inputs,
            plan,
            dry_run: _,
            json,
            probe,
            partitions,
            output_plan,
        } => {
            let (inputs, output) = split_paths(paths, inputs.as_deref(), false)?;
            if let Some(n) = partitions {
                let Some(output) = output else {
                    return Err("--partitions needs the output store: INPUT... OUTPUT".into());
                };
                let p = svar2_convert::partition::plan(&inputs, &output, n, &plan.request(false))?;
                if let Some(path) = &output_plan {
                    std::fs::write(path, p.to_json())
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                if json {
                    out(&p.to_json());
                } else {
                    out(&p.render());
                }
                return Ok(());
            }
            let report = svar2_convert::planning::plan_inputs(&inputs, &plan.request(probe))?;
            if json {
                out_json(&report);
            } else {
                out(&report.render());
                if let Some(o) = output {
                    if o.exists() {
                        out(&format!(
                            "warning        {} exists: convert will refuse it without --force\n",
                            o.display()
                        ));
                    }
                }
            }
            Ok(())
        }
        Command::Inspect { store, patch, json } => {
            let report = svar2_rechunk::inspect::inspect(&store, patch)?;
            if json {
                out_json(&report);
            } else {
                out(&report.render());
            }
            Ok(())
        }
        Command::Rechunk {
            input,
            output,
            layout,
            budget,
            io_threads,
            force,
            dry_run,
            json,
        } => {
            let opts = svar2_rechunk::Options {
                patch: layout.patch,
                max_amplification: layout.max_amplification,
                requested: layout.requested(),
                zstd_level: layout.zstd_level,
                max_mem: budget.max_mem,
                threads: budget.threads,
                io_threads,
                force,
                progress: !cli.quiet,
            };
            if dry_run {
                let report = svar2_rechunk::dry_run(&input, &opts)?;
                if json {
                    out_json(&report);
                } else {
                    out(&report.render());
                }
                return Ok(());
            }
            let s = svar2_rechunk::rechunk(&input, &output, &opts)?;
            if !cli.quiet {
                eprintln!(
                    "svar2: {} arrays rechunked in {:.2} s ({} source chunks, {} decodes) -> {} \
                     ({} in {} files)",
                    s.arrays,
                    s.seconds,
                    s.source_chunks,
                    s.decodes,
                    output.display(),
                    human(s.store_bytes),
                    s.files
                );
            }
            Ok(())
        }
        Command::Read {
            store,
            region,
            samples,
            array,
            format,
        } => read::run(&store, &region, samples.as_deref(), &array, &format),
        Command::BenchRead {
            store,
            patch,
            array,
            n,
            seed,
            batch,
            io_threads,
            threads,
            emit_patches,
            patches,
            json,
            gpu,
            verify,
        } => {
            use svar2_reader::{bench, patch as patches_mod, Reader, Store};
            let device = if gpu {
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
            let st = Store::open(&store)?;
            let a = st.array(&array)?;
            let dims = &a.layout.dimension_names;
            let len = |d: &str| dims.iter().position(|x| x == d).map_or(1, |i| a.shape()[i]);
            let list = match &patches {
                Some(p) => patches_mod::parse_list(p)?,
                None => patches_mod::draw(
                    n,
                    patch.variants,
                    patch.samples,
                    len("variants"),
                    len("samples"),
                    seed,
                ),
            };
            if let Some(path) = &emit_patches {
                std::fs::write(path, serde_json::to_vec(&list)?)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            let threads =
                threads.unwrap_or_else(|| svar2_planner::host::Host::system().cores().usable);
            let reader = Reader::new(threads, io_threads)?;
            let r = match device {
                Some(mut d) => bench::run_gpu(&reader, &mut d, &a, &list, batch, threads, verify)?,
                None => bench::run(&reader, &a, &list, batch)?,
            };
            if json {
                out_json(&r);
            } else {
                out(&r.render());
            }
            Ok(())
        }
        Command::Finalize { plan, budget } => {
            let req = PlanRequest {
                max_mem: budget.max_mem,
                threads: budget.threads,
                patch: None,
                max_amplification: 1.5,
                requested: Requested::default(),
                readers: None,
                zstd_level: 1,
                probe: false,
            };
            let s = svar2_convert::partition::finalize(&plan, &req)?;
            if !cli.quiet {
                if s.already_done {
                    eprintln!("svar2: the store is already complete; nothing to do");
                } else {
                    eprintln!(
                        "svar2: finalized {} records in {:.2} s ({} shared shard rows{}) -> {} in \
                         {} files",
                        s.records,
                        s.seconds,
                        s.shared_rows,
                        regrown(s.rewritten_shards),
                        human(s.store_bytes),
                        s.files
                    );
                }
            }
            Ok(())
        }
        Command::Digest { store } => {
            out(&format!("{}\n", svar2_convert::digest(&store)?));
            Ok(())
        }
    }
}

/// Pins glibc's mmap threshold at 4 MiB. By default glibc raises it (up to 32 MiB)
/// after each large free, so freed chunk-row buffers stay in per-thread arenas and RSS
/// drifts up over a long conversion (measured 22.0 vs 16.8 MB on the shared corpus),
/// which would make peak RSS, and so `--max-mem`, unpredictable. Below 4 MiB, codec
/// scratch (blosc blocks, chunk layouts) is reused from the arenas instead of being
/// mapped and page-faulted afresh for every chunk (measured 2.96 -> 2.52 s on sim.bcf).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn pin_malloc_mmap_threshold() {
    extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
    // SAFETY: mallopt only sets an allocator parameter; called before any threads start.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 4 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn pin_malloc_mmap_threshold() {}

fn main() -> ExitCode {
    pin_malloc_mmap_threshold();
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.quiet);
    if cli.verbose == 0 {
        svar2_vcf::source::quiet_htslib();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("svar2: error: {e}");
            ExitCode::FAILURE
        }
    }
}
