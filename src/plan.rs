//! `svar2 plan`: the conversion plan from headers and indexes alone, or a partition
//! plan for a cluster.

use crate::flags::{split_paths, PlanningArgs};
use crate::output::{out, out_json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// INPUT... [OUTPUT]: the inputs as for convert, then optionally the output
    /// the conversion would write (not touched; recognised as not named like an
    /// input: .vcf, .vcf.gz, .bcf, .gz, `-`).
    #[arg(required_unless_present = "inputs", num_args = 0.., value_name = "PATH")]
    #[arg(value_parser = crate::flags::store_path)]
    paths: Vec<PathBuf>,
    /// A file listing the inputs, one path per line.
    #[arg(long, value_name = "FILE")]
    #[arg(value_parser = crate::flags::local_path)]
    inputs: Option<PathBuf>,
    #[command(flatten)]
    planning: PlanningArgs,
    /// Accepted for clarity: `plan` writes nothing but an `-o PLAN` file.
    #[arg(long)]
    dry_run: bool,
    /// Print the plan as JSON, for scripts.
    #[arg(long)]
    json: bool,
    /// Also run the rate probe (parses a bounded prefix of the largest contig and
    /// encodes it on one thread; writes nothing): reading's share of the work sizes
    /// the readers, so `cc` and `w` are the ones `convert` will use. It runs only
    /// where it can change the plan — indexed input (one file or several), no --readers,
    /// no subset or --merge, and 3 or more cores (usable, or --threads) — and the plan
    /// says why when it did not.
    #[arg(long)]
    probe: bool,
    /// Plan a conversion in N partitions, each converted by its own task (a
    /// Slurm array task, `xargs -P`): `convert --plan PLAN --partition K`, then
    /// `finalize PLAN`. Needs indexed inputs and the OUTPUT store: a directory
    /// every task sees, or an s3://bucket/path (then the tasks share no file
    /// system: each stages its partition under TMPDIR and uploads it).
    #[arg(long, value_name = "N")]
    partitions: Option<usize>,
    /// With --partitions: write the plan to this file (the tasks read it).
    #[arg(short = 'o', long, value_name = "PLAN", requires = "partitions")]
    #[arg(value_parser = crate::flags::local_path)]
    output_plan: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let (inputs, output) = split_paths(a.paths, a.inputs.as_deref(), false)?;
    if let Some(n) = a.partitions {
        let Some(output) = output else {
            return Err("--partitions needs the output store: INPUT... OUTPUT".into());
        };
        let request = a.planning.request(false);
        if request.merge.is_some() {
            return Err(
                "--partitions with --merge is not supported: convert --merge in one \
                        task (its contigs are merged side by side)"
                    .into(),
            );
        }
        if !request.subset.is_empty() {
            return Err(
                "--partitions with -s/-r/-t/-i/-e is not supported: convert the subset \
                        in one task (it streams), or subset first with bcftools view"
                    .into(),
            );
        }
        let p = svar2_convert::partition::plan(&inputs, &output, n, &request)?;
        if let Some(path) = &a.output_plan {
            std::fs::write(path, p.to_json()).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        out(&if a.json { p.to_json() } else { p.render() });
        return Ok(());
    }
    let report = svar2_convert::planning::plan_inputs(&inputs, &a.planning.request(a.probe))?;
    if a.json {
        out_json(&report);
        return Ok(());
    }
    out(&report.render());
    if let Some(o) = output.filter(|o| o.exists()) {
        out(&format!(
            "warning        {} exists: convert will refuse it without --force\n",
            o.display()
        ));
    }
    Ok(())
}
