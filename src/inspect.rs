//! `svar2 inspect`: any Zarr v2/v3 store's layout and what a patch costs.

use crate::output::{out, out_json};
use std::path::PathBuf;
use svar2_planner::geometry::PatchShape;

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path.
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// The patch a reader fetches, VARIANTSxSAMPLES (e.g. 4096x1): prints each
    /// array's decode amplification (decoded bytes / needed bytes).
    #[arg(long)]
    patch: Option<PatchShape>,
    /// Print the report as JSON, for scripts.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let report = svar2_rechunk::inspect::inspect(&a.store, a.patch)?;
    if a.json {
        out_json(&report);
    } else {
        out(&report.render());
    }
    Ok(())
}
