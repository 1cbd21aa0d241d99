//! `svar2 digest`: one blake3 hash over every file of a store.

use crate::output::out;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path.
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    out(&format!("{}\n", svar2_store::dir::digest(&a.store)?));
    Ok(())
}
