//! The inner-chunk codec chain of every array: the one place that decides bitshuffle
//! vs byte shuffle vs vlen-utf8 + zstd, as the store contract fixes it (and the GPU
//! decoder relies on), and the crc32c every chain ends with — a flipped bit in chunk
//! data must never become a wrong genotype — with its check.

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use serde_json::{json, Value};

/// Blosc block size, fixed so the bytes never depend on the machine (GPU decode batches
/// one zstd stream per block).
pub const BLOSC_BLOCKSIZE: u64 = 256 * 1024;

/// Bit-level shuffle for booleans and genotype calls (a few distinct small values per
/// byte), byte shuffle for every other number.
pub fn bitshuffle(boolean: bool, genotype: bool) -> bool {
    boolean || genotype
}

/// Bytes the `crc32c` codec appends to a chunk (its little-endian CRC-32C).
pub const CHECKSUM_BYTES: usize = 4;

/// The codec chain applied to every inner chunk, as zarr v3 metadata: the
/// compression, then `crc32c` (stores svar2 wrote before it had one omit it: `checksum`
/// false, read back for them only).
pub fn inner_codecs_of(dtype: Dtype, bitshuffle: bool, level: i32, checksum: bool) -> Value {
    let mut chain = compression_codecs(dtype, bitshuffle, level);
    if checksum {
        chain
            .as_array_mut()
            .expect("a chain is a list")
            .push(json!({"name": "crc32c"}));
    }
    chain
}

/// The chain svar2 writes now: compression, then crc32c.
pub fn inner_codecs(dtype: Dtype, bitshuffle: bool, level: i32) -> Value {
    inner_codecs_of(dtype, bitshuffle, level, true)
}

/// A chunk's stored bytes without their trailing crc32c, once it matches; `key` and
/// `file` name the chunk and its shard file in the error.
pub fn verified<'b>(key: &str, file: &str, stored: &'b [u8]) -> Result<&'b [u8]> {
    verified_or(stored, || (key.to_string(), file.to_string()))
}

/// [`verified`] naming the chunk only when it is damaged (`names` gives its key and
/// file): the reader checks every 4 KiB chunk, and formatting names costs more than
/// the check.
pub fn verified_or(stored: &[u8], names: impl FnOnce() -> (String, String)) -> Result<&[u8]> {
    let corrupt = |msg: String| {
        let (key, file) = names();
        Error::Corrupt {
            key,
            msg: format!("{msg} (shard file {file})"),
        }
    };
    let Some(split) = stored.len().checked_sub(CHECKSUM_BYTES) else {
        return Err(corrupt(format!(
            "{} bytes, too short to hold its crc32c",
            stored.len()
        )));
    };
    let (data, tail) = stored.split_at(split);
    let want = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    let got = crc32c::crc32c(data);
    if got != want {
        return Err(corrupt(format!(
            "checksum mismatch: crc32c {got:08x} where {want:08x} was written, so the chunk's \
             bytes changed after it was written (a bad disk, a torn copy); restore the file \
             from a good copy or convert again"
        )));
    }
    Ok(data)
}

/// The compression part of the chain.
fn compression_codecs(dtype: Dtype, bitshuffle: bool, level: i32) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checksum_catches_every_single_bit_flip() {
        let mut stored: Vec<u8> = (0..300u32).map(|i| (i * 31 % 251) as u8).collect();
        let crc = crc32c::crc32c(&stored);
        stored.extend(crc.to_le_bytes());
        assert_eq!(verified("k", "f", &stored).unwrap().len(), 300);
        for bit in 0..stored.len() * 8 {
            let mut b = stored.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let e = verified("a/c/0", "/s/a/c/0", &b).unwrap_err().to_string();
            assert!(
                e.starts_with("a/c/0: corrupt shard: checksum mismatch"),
                "{e}"
            );
            assert!(e.contains("/s/a/c/0"), "{e}");
        }
        assert!(verified("k", "f", &[1, 2]).is_err());
    }
}
