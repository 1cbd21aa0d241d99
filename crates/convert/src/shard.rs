//! Zarr v3 `sharding_indexed` shard bytes: inner chunks back to back, then the index
//! (offset, nbytes as little-endian u64 per inner chunk, C order) and its crc32c.
//! Empty inner chunks get the 2^64−1 sentinel; a shard with none stored is not written.

use crate::error::{Error, Result};
use std::path::Path;

const EMPTY: u64 = u64::MAX;

/// Builds a shard from its inner chunks (in C order); `None` when all are empty.
pub fn assemble(chunks: &[Option<Vec<u8>>]) -> Option<Vec<u8>> {
    if chunks.iter().all(Option::is_none) {
        return None;
    }
    let data: usize = chunks.iter().flatten().map(Vec::len).sum();
    let mut out = Vec::with_capacity(data + chunks.len() * 16 + 4);
    let mut index = Vec::with_capacity(chunks.len() * 16);
    for c in chunks {
        match c {
            Some(b) => {
                index.extend_from_slice(&(out.len() as u64).to_le_bytes());
                index.extend_from_slice(&(b.len() as u64).to_le_bytes());
                out.extend_from_slice(b);
            }
            None => {
                index.extend_from_slice(&EMPTY.to_le_bytes());
                index.extend_from_slice(&EMPTY.to_le_bytes());
            }
        }
    }
    let crc = crc32c::crc32c(&index);
    out.extend_from_slice(&index);
    out.extend_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// The index (and its crc32c) closing a shard whose chunks were appended already;
/// `spans[i]` is chunk i's (offset, length) or `None` when not stored.
pub fn index(spans: &[Option<(u64, u64)>]) -> Vec<u8> {
    let mut index = Vec::with_capacity(spans.len() * 16 + 4);
    for s in spans {
        let (o, n) = s.unwrap_or((EMPTY, EMPTY));
        index.extend_from_slice(&o.to_le_bytes());
        index.extend_from_slice(&n.to_le_bytes());
    }
    let crc = crc32c::crc32c(&index);
    index.extend_from_slice(&crc.to_le_bytes());
    index
}

/// Splits a shard back into its inner chunks, checking the index checksum and bounds.
pub fn parse<'a>(path: &Path, bytes: &'a [u8], n: usize) -> Result<Vec<Option<&'a [u8]>>> {
    let bad = |msg: &str| Error::Store {
        path: path.into(),
        msg: format!("corrupt shard: {msg}"),
    };
    let index_len = n * 16;
    if bytes.len() < index_len + 4 {
        return Err(bad("shorter than its index"));
    }
    let (data, tail) = bytes.split_at(bytes.len() - index_len - 4);
    let (index, crc) = tail.split_at(index_len);
    if crc32c::crc32c(index).to_le_bytes() != crc {
        return Err(bad("index checksum mismatch"));
    }
    index
        .chunks_exact(16)
        .map(|e| {
            let off = u64::from_le_bytes(e[..8].try_into().expect("8"));
            let len = u64::from_le_bytes(e[8..].try_into().expect("8"));
            if off == EMPTY && len == EMPTY {
                return Ok(None);
            }
            let end = off.checked_add(len).filter(|&e| e <= data.len() as u64);
            match end {
                Some(end) => Ok(Some(&data[off as usize..end as usize])),
                None => Err(bad("chunk outside the shard")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_empty() {
        assert!(assemble(&[None, None]).is_none());
        let s = assemble(&[Some(vec![1, 2, 3]), None, Some(vec![9])]).unwrap();
        let parts = parse(Path::new("x"), &s, 3).unwrap();
        assert_eq!(parts, vec![Some(&[1u8, 2, 3][..]), None, Some(&[9u8][..])]);
        let mut bad = s.clone();
        let k = bad.len() - 10;
        bad[k] ^= 1;
        assert!(parse(Path::new("x"), &bad, 3).is_err());
    }
}
