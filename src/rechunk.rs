//! `svar2 rechunk`: any VCF Zarr store into svar2's layout for a patch.

use crate::flags::{BudgetArgs, LayoutArgs};
use crate::output::{out, out_json};
use std::path::PathBuf;
use svar2_planner::size::human;

#[derive(clap::Args)]
pub struct Args {
    /// The store to read (not changed): a directory, a .zip file or s3://bucket/path.
    #[arg(value_parser = crate::flags::store_path)]
    input: PathBuf,
    /// The output store: a directory, a .zip file (written whole, moved into place)
    /// or s3://bucket/path (the same rules as convert's).
    #[arg(value_parser = crate::flags::store_path)]
    output: PathBuf,
    #[command(flatten)]
    layout: LayoutArgs,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Threads that only wait on reads (default 4; a network file system wants
    /// dozens).
    #[arg(long, value_parser = crate::flags::io_threads_arg)]
    io_threads: Option<usize>,
    /// Replace an existing Zarr store (never the input, nor anything that holds a file
    /// that is not part of a Zarr store: the rule is convert's --force).
    #[arg(long)]
    force: bool,
    /// Print the plan (geometry, tiles, predicted peak RSS, source decodes) and
    /// write nothing.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: print the plan as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args, quiet: bool) -> Result<(), Box<dyn std::error::Error>> {
    let opts = svar2_rechunk::Options {
        layout: a.layout.request(),
        budget: a.budget.request(),
        io_threads: a.io_threads,
        force: a.force,
        progress: !quiet,
    };
    if a.dry_run {
        let report = svar2_rechunk::dry_run(&a.input, &opts)?;
        if a.json {
            out_json(&report);
        } else {
            out(&report.render());
        }
        return Ok(());
    }
    crate::interrupt::say_on_interrupt(crate::interrupt::store_left(&a.output, a.force));
    let s = svar2_rechunk::rechunk(&a.input, &a.output, &opts)?;
    if !quiet {
        eprintln!(
            "svar2: {} arrays rechunked in {:.2} s ({} source chunks, {} decodes) -> {} ({} in \
             {} files, metadata included)",
            s.arrays,
            s.seconds,
            s.source_chunks,
            s.decodes,
            a.output.display(),
            human(s.store_bytes),
            s.files
        );
    }
    Ok(())
}
