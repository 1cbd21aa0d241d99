//! `svar2 convert`: VCF/BCF inputs into a VCF Zarr store, or one partition of a
//! partition plan.

use crate::flags::{split_paths, PlanningArgs};
use crate::output::regrown;
use std::path::PathBuf;
use svar2_planner::size::human;

#[derive(clap::Args)]
pub struct Args {
    /// INPUT... OUTPUT: the inputs (.vcf, .vcf.gz, .bcf; several files of one
    /// call set, e.g. one per chromosome: same samples, each contig in one file, or
    /// with --merge files of different samples;
    /// `-` reads VCF text from standard input), then the output store: a
    /// directory, a .zip file (`out.vcz.zip`: staged beside it, moved into place
    /// whole) or an s3://bucket/path URL; new, empty, or an interrupted svar2 store
    /// (an existing Zarr store only with --force; anything else is refused).
    #[arg(required_unless_present = "plan_file", num_args = 1.., value_name = "PATH")]
    #[arg(value_parser = crate::flags::store_path)]
    paths: Vec<PathBuf>,
    /// Convert one partition of a plan `svar2 plan --partitions N -o PLAN` wrote
    /// (inputs, output and layout come from the plan; give --partition).
    #[arg(long = "plan", value_name = "PLAN", requires = "partition", conflicts_with_all = ["paths", "inputs", "force"])]
    #[arg(value_parser = crate::flags::local_path)]
    plan_file: Option<PathBuf>,
    /// With --plan: the partition this task converts (0 to N-1; a Slurm array
    /// task passes $SLURM_ARRAY_TASK_ID). Memory and cores are this machine's.
    #[arg(long, requires = "plan_file")]
    partition: Option<usize>,
    /// A file listing the inputs, one path per line (then give only OUTPUT).
    #[arg(long, value_name = "FILE")]
    #[arg(value_parser = crate::flags::local_path)]
    inputs: Option<PathBuf>,
    #[command(flatten)]
    planning: PlanningArgs,
    /// Replace an existing Zarr store: valid root metadata and nothing but Zarr
    /// metadata and chunk keys below it. Never removes anything else: a folder with
    /// any other file in it (at any depth), a plain file, a symbolic link or an input
    /// inside the output is refused even with it.
    #[arg(long)]
    force: bool,
    /// Debugging aid: the contig order readers follow (`planned`, `file`,
    /// `reverse`). The store's bytes never depend on it.
    #[arg(long, hide = true, default_value = "planned", value_parser = parse_order)]
    debug_contig_order: svar2_convert::ContigOrder,
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

pub fn run(a: Args, quiet: bool) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(plan_file) = a.plan_file {
        let k = a.partition.expect("clap requires --partition with --plan");
        if !a.planning.subset.request().is_empty() {
            return Err(
                "with --plan, the plan's partition is converted whole: drop -s/-r/-t/-i/-e".into(),
            );
        }
        if a.planning.layout.given() {
            return Err("with --plan, the layout is the plan's: drop the layout flags".into());
        }
        crate::interrupt::say_on_interrupt(format!(
            "partition {k} did not finish; run the same command again (finalize refuses until it has)"
        ));
        let s = svar2_convert::partition::run(&plan_file, k, &a.planning.request(true), !quiet)?;
        if !quiet {
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
        return Ok(());
    }
    let opts = svar2_convert::Options {
        request: a.planning.request(true),
        force: a.force,
        progress: !quiet,
        contig_order: a.debug_contig_order,
    };
    let (inputs, output) = split_paths(a.paths, a.inputs.as_deref(), true)?;
    let output = output.expect("convert names its output");
    if let Some(list) = &a.inputs {
        svar2_store::replace::refuse_overlap(list, &output, "inputs list")?;
    }
    crate::interrupt::say_on_interrupt(crate::interrupt::store_left(&output, a.force));
    let s = svar2_convert::convert_inputs(&inputs, &output, &opts)?;
    if !quiet {
        eprintln!(
            "svar2: {} records in {:.2} s -> {} ({} in {} files, metadata included{})",
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
