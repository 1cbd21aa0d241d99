//! The inner-chunk codec chain of every array: the one place that decides bitshuffle
//! vs byte shuffle vs vlen-utf8 + zstd, as the store contract fixes it (and the GPU
//! decoder relies on).

use crate::dtype::Dtype;
use serde_json::{json, Value};

/// Blosc block size, fixed so the bytes never depend on the machine (GPU decode batches
/// one zstd stream per block).
pub const BLOSC_BLOCKSIZE: u64 = 256 * 1024;

/// Bit-level shuffle for booleans and genotype calls (a few distinct small values per
/// byte), byte shuffle for every other number.
pub fn bitshuffle(boolean: bool, genotype: bool) -> bool {
    boolean || genotype
}

/// The codec chain applied to every inner chunk, as zarr v3 metadata.
pub fn inner_codecs(dtype: Dtype, bitshuffle: bool, level: i32) -> Value {
    let bytes = match dtype.size() {
        Some(1) => json!({"name": "bytes"}),
        _ => json!({"name": "bytes", "configuration": {"endian": "little"}}),
    };
    match dtype {
        Dtype::Str => json!([
            {"name": "vlen-utf8", "configuration": {}},
            {"name": "zstd", "configuration": {"level": level, "checksum": false}}
        ]),
        _ => {
            let size = dtype.size().unwrap_or(1);
            json!([bytes, {"name": "blosc", "configuration": {
                "cname": "zstd", "clevel": level,
                "shuffle": if bitshuffle { "bitshuffle" } else { "shuffle" },
                "typesize": size, "blocksize": BLOSC_BLOCKSIZE
            }}])
        }
    }
}
