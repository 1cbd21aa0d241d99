//! Zarr v3 `sharding_indexed` shard bytes: inner chunks back to back, then the index
//! (offset, nbytes as little-endian u64 per inner chunk, C order) and its crc32c.
//! Empty inner chunks get the 2^64−1 sentinel; a shard with none stored is not written.
//!
//! A reader that fetches byte ranges reads the index from the shard's tail alone
//! ([`index_len`], [`check_index`], [`entry`]), then only the chunks it needs; every offset and
//! length is checked against the shard's size before anything is allocated from it.

use crate::error::{Error, Result};

const EMPTY: u64 = u64::MAX;

/// Builds a shard from its inner chunks (in C order); `None` when all are empty.
pub fn assemble(chunks: &[Option<Vec<u8>>]) -> Option<Vec<u8>> {
    if chunks.iter().all(Option::is_none) {
        return None;
    }
    let data: usize = chunks.iter().flatten().map(Vec::len).sum();
    let mut out = Vec::with_capacity(data + chunks.len() * 16 + 4);
    let mut spans = Vec::with_capacity(chunks.len());
    for c in chunks {
        spans.push(c.as_ref().map(|b| {
            let span = (out.len() as u64, b.len() as u64);
            out.extend_from_slice(b);
            span
        }));
    }
    out.extend_from_slice(&index(&spans));
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

/// Bytes of the index (with its checksum) closing a shard of `n` inner chunks: the
/// tail a range reader fetches first. (Saturating: a count from crafted metadata asks
/// for more bytes than any shard has, and [`check_index`] refuses it.)
pub fn index_len(n: usize) -> usize {
    n.saturating_mul(16).saturating_add(4)
}

/// Parses a shard's index from its tail bytes alone (`tail` = the last
/// [`index_len`]`(n)` bytes of a `shard_len`-byte shard), checked as [`check_index`].
/// `key` names the shard in errors.
pub fn parse_index(
    key: &str,
    tail: &[u8],
    n: usize,
    shard_len: u64,
) -> Result<Vec<Option<(u64, u64)>>> {
    check_index(key, tail, n, shard_len)?;
    Ok((0..n).map(|i| entry(tail, i)).collect())
}

/// Inner chunk `i`'s (offset, length) in an index [`check_index`] accepted; `None`
/// when not stored. (Readers keep the checked index bytes — the tail of a mapped
/// shard, or the bytes read — and look entries up here: no table built per shard.)
#[inline]
pub fn entry(tail: &[u8], i: usize) -> Option<(u64, u64)> {
    let e = &tail[i * 16..i * 16 + 16];
    let off = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(e[8..].try_into().expect("8 bytes"));
    (off != EMPTY || len != EMPTY).then_some((off, len))
}

/// Checks a shard's index, its tail bytes alone: the checksum, every chunk within the
/// data before the index (so an entry can never ask for more bytes than the file
/// has), and no two chunks sharing bytes.
pub fn check_index(key: &str, tail: &[u8], n: usize, shard_len: u64) -> Result<()> {
    let bad = |msg: String| Error::Corrupt {
        key: key.to_string(),
        msg,
    };
    let want = index_len(n);
    if tail.len() != want || shard_len < want as u64 {
        return Err(bad(format!(
            "{shard_len} bytes, shorter than the index of {n} inner chunks ({want} bytes)"
        )));
    }
    let data_len = shard_len - want as u64;
    let (entries, crc) = tail.split_at(n * 16);
    if crc32c::crc32c(entries).to_le_bytes() != crc {
        return Err(bad("index checksum mismatch".into()));
    }
    // Writers lay chunks out in index order, so one pass checks them for shared
    // bytes; any other order is sorted first.
    let (mut last_end, mut in_order) = (0u64, true);
    for i in 0..n {
        let Some((off, len)) = entry(tail, i) else {
            continue;
        };
        match off.checked_add(len) {
            Some(end) if end <= data_len => {
                in_order &= off >= last_end;
                last_end = end;
            }
            _ => {
                return Err(bad(format!(
                    "inner chunk {i} at offset {off}, {len} bytes, lies outside the \
                     {data_len} bytes of chunk data"
                )))
            }
        }
    }
    if in_order {
        return Ok(());
    }
    // Two entries sharing bytes: a forged or damaged index (no writer shares them).
    let mut stored: Vec<(u64, u64, usize)> = (0..n)
        .filter_map(|i| entry(tail, i).map(|(o, l)| (o, l, i)))
        .collect();
    stored.sort_unstable();
    for w in stored.windows(2) {
        let ((o1, l1, i1), (o2, _, i2)) = (w[0], w[1]);
        if o1 + l1 > o2 {
            return Err(bad(format!(
                "inner chunks {i1} and {i2} overlap (bytes {o2}..{})",
                o1 + l1
            )));
        }
    }
    Ok(())
}

/// Splits a whole shard into its inner chunks, checking the index as [`parse_index`].
pub fn parse<'a>(key: &str, bytes: &'a [u8], n: usize) -> Result<Vec<Option<&'a [u8]>>> {
    let want = index_len(n);
    let tail = &bytes[bytes.len().saturating_sub(want)..];
    let spans = parse_index(key, tail, n, bytes.len() as u64)?;
    Ok(spans
        .into_iter()
        .map(|s| s.map(|(o, l)| &bytes[o as usize..(o + l) as usize]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(s: &[u8], n: usize) -> &[u8] {
        &s[s.len() - index_len(n)..]
    }

    #[test]
    fn assemble_then_tail_only_index_round_trip() {
        assert!(
            assemble(&[None, None]).is_none(),
            "an all-empty shard is not written"
        );
        let chunks = [Some(vec![1, 2, 3]), None, Some(vec![9]), None];
        let s = assemble(&chunks).unwrap();
        let spans = parse_index("a/c/0", tail(&s, 4), 4, s.len() as u64).unwrap();
        assert_eq!(spans, vec![Some((0, 3)), None, Some((3, 1)), None]);
        let parts = parse("a/c/0", &s, 4).unwrap();
        assert_eq!(
            parts,
            vec![Some(&[1u8, 2, 3][..]), None, Some(&[9u8][..]), None]
        );
        // The index alone equals what `index` writes for appended chunks.
        assert_eq!(tail(&s, 4), index(&spans).as_slice());
    }

    #[test]
    fn hostile_indexes_are_errors_naming_the_key() {
        let s = assemble(&[Some(vec![7; 10]), Some(vec![8; 5])]).unwrap();
        let n = 2;
        // Rewrites entry `i` and fixes the checksum, as a forger would.
        let forge = |i: usize, off: u64, len: u64| {
            let mut t = tail(&s, n).to_vec();
            t[i * 16..i * 16 + 8].copy_from_slice(&off.to_le_bytes());
            t[i * 16 + 8..i * 16 + 16].copy_from_slice(&len.to_le_bytes());
            let crc = crc32c::crc32c(&t[..n * 16]);
            t[n * 16..].copy_from_slice(&crc.to_le_bytes());
            t
        };
        // Past the end, huge, wrapping, and overlapping chunk 0's bytes.
        for (off, len) in [
            (10, 6),
            (0, u64::MAX - 1),
            (u64::MAX - 3, 8),
            (16, 0),
            (5, 5),
        ] {
            let e = parse_index(
                "call_genotype/c/3/0",
                &forge(1, off, len),
                n,
                s.len() as u64,
            )
            .unwrap_err()
            .to_string();
            assert!(e.starts_with("call_genotype/c/3/0: corrupt shard"), "{e}");
        }
        // A flipped bit in the index fails the checksum.
        let mut t = tail(&s, n).to_vec();
        t[3] ^= 1;
        assert!(parse_index("k", &t, n, s.len() as u64).is_err());
        // A shard shorter than its index, and a whole-shard parse of it.
        assert!(parse_index("k", tail(&s, n), n, 10).is_err());
        assert!(parse("k", &s[..20], n).is_err());
    }
}
