//! `svar2 verify`: every shard index and chunk checksum of a store checked; damaged
//! chunks named with the records and samples they hold; exit 1 if any.

use crate::output::{out, out_json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory or s3://bucket/path (any VCF Zarr store; svar2's carry a
    /// crc32c per chunk).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// Print the report as JSON, for scripts.
    #[arg(long)]
    json: bool,
    /// Threads that only read.
    #[arg(long, default_value_t = 4, value_parser = crate::flags::io_threads_arg)]
    io_threads: usize,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let store = svar2_zarr::AnyGroup::open(&a.store)?;
    let threads = svar2_planner::host::Host::system().cores().usable;
    let reader = svar2_reader::Reader::new(threads, a.io_threads)?;
    let report = svar2_reader::verify::verify(&store, &reader)?;
    if a.json {
        out_json(&report);
    } else {
        out(&report.render());
    }
    if !report.damaged.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
