//! Store metadata: one array's `zarr.json` of a small valid store replaced by the
//! input, then the store opened and read — Ok or a clear Err, never a panic, an abort
//! or a hang; see `../bodies/store_metadata.rs` (also run as a bounded deterministic
//! loop by `cargo test -p svar2-zarr --test fuzz_bodies`). Seeds:
//! `cargo test -p svar2-zarr --test fuzz_bodies -- --ignored write_seed_corpus`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

#[path = "../bodies/store_metadata.rs"]
mod body;

static ROOT: OnceLock<PathBuf> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let root = ROOT.get_or_init(|| {
        let r = std::env::temp_dir().join(format!("svar2-fuzz-meta-{}", std::process::id()));
        body::write_seed(&r);
        r
    });
    body::run(root, data);
});
