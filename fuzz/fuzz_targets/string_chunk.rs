//! String chunks: vlen-utf8 checked and decoded (raw, zstd, the whole chain) — Ok or a
//! clear Err, never a panic; see `../bodies/string_chunk.rs` (also run as a bounded
//! deterministic loop by `cargo test -p svar2-zarr --test fuzz_bodies`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

#[path = "../bodies/string_chunk.rs"]
mod body;

static CODEC: OnceLock<svar2_store::codec::InnerCodec> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    body::run(CODEC.get_or_init(body::codec), data);
});
