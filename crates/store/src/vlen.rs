//! A string chunk (`vlen-utf8`, numcodecs' `VLenUTF8`): a u32 element count, then
//! per element a u32 length and its bytes. Checked and decoded here, before zarrs
//! ever sees one: zarrs panics on a length that runs past the chunk, and its zstd
//! step decodes a whole stream (a few KB of concatenated frames can say 4 GB of
//! zeros) before anything is checked. This decoder streams: it reads only as far as
//! the layout stays valid, allocates only for bytes that were actually decoded, and
//! stops at [`MAX_DECODED`].

use crate::error::{Error, Result};
use std::io::{BufRead, Read};

/// The most one string chunk may decode to (svar2's largest are a few MB: 1,000
/// variants x 1,000 samples of short FORMAT strings).
pub const MAX_DECODED: usize = 1 << 30;

/// Elements whose length is at most this are read with one copy (no growth).
const SMALL: usize = 1 << 16;

fn corrupt(key: &str, msg: String) -> Error {
    Error::Corrupt {
        key: key.to_string(),
        msg: format!("string chunk: {msg}"),
    }
}

/// Decodes a vlen-utf8 chunk of `n` elements from `src` (decoded bytes, or a
/// decompressing reader): the concatenated strings and `n + 1` offsets. `key` names
/// the chunk in errors.
fn read_vlen(key: &str, src: &mut impl BufRead, n: usize) -> Result<(Vec<u8>, Vec<usize>)> {
    let io = |e: std::io::Error| corrupt(key, format!("does not decode ({e})"));
    let mut word = [0u8; 4];
    let mut u32_at = |src: &mut dyn BufRead, what: &str| -> Result<u32> {
        src.read_exact(&mut word).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                corrupt(key, format!("ends before the {what} (cut short?)"))
            }
            _ => io(e),
        })?;
        Ok(u32::from_le_bytes(word))
    };
    let count = u32_at(src, "element count")?;
    if count as u64 != n as u64 {
        return Err(corrupt(
            key,
            format!("says {count} elements where the chunk holds {n}"),
        ));
    }
    // Capacity from what the metadata says only up to a bound; beyond, it grows with
    // what is decoded.
    let mut offsets = Vec::with_capacity(n.min(SMALL) + 1);
    let mut bytes: Vec<u8> = Vec::new();
    let mut total = 4usize;
    offsets.push(0);
    for i in 0..n {
        let len = u32_at(src, &format!("length of element {i}"))? as usize;
        total += 4 + len;
        if total > MAX_DECODED {
            return Err(corrupt(
                key,
                format!(
                    "element {i} says {len} bytes: over {} MiB decoded, more than a string \
                     chunk holds",
                    MAX_DECODED >> 20
                ),
            ));
        }
        let at = bytes.len();
        let got = if len <= SMALL {
            bytes.resize(at + len, 0);
            match src.read_exact(&mut bytes[at..]) {
                Ok(()) => len,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
                Err(e) => return Err(io(e)),
            }
        } else {
            // Grows with the bytes that are there, never with the length prefix.
            src.take(len as u64).read_to_end(&mut bytes).map_err(io)?
        };
        if got != len {
            return Err(corrupt(
                key,
                format!("element {i} says {len} bytes, more than the chunk holds"),
            ));
        }
        offsets.push(bytes.len());
    }
    if !src.fill_buf().map_err(io)?.is_empty() {
        return Err(corrupt(key, format!("bytes after its last element ({n})")));
    }
    Ok((bytes, offsets))
}

/// Checks and splits decoded vlen-utf8 bytes of `n` elements.
pub fn decode(key: &str, decoded: &[u8], n: usize) -> Result<(Vec<u8>, Vec<usize>)> {
    read_vlen(key, &mut &decoded[..], n)
}

/// Decodes a zstd-compressed vlen-utf8 chunk of `n` elements (svar2's string chain,
/// after its crc32c), streaming: a corrupt length, count or size is an error after
/// decoding no more than the elements before it.
pub fn decode_zstd(key: &str, compressed: &[u8], n: usize) -> Result<(Vec<u8>, Vec<usize>)> {
    let dec = zstd::stream::read::Decoder::with_buffer(compressed)
        .map_err(|e| corrupt(key, format!("zstd: {e}")))?;
    read_vlen(key, &mut std::io::BufReader::with_capacity(SMALL, dec), n)
}

/// The vlen-utf8 bytes of `strings` (what the codec writes before compression).
pub fn encode<S: AsRef<[u8]>>(strings: &[S]) -> Vec<u8> {
    let mut out = (strings.len() as u32).to_le_bytes().to_vec();
    for s in strings {
        out.extend_from_slice(&(s.as_ref().len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zstd(b: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(b, 1).unwrap()
    }

    #[test]
    fn decodes_what_the_codec_writes() {
        let words = ["", "a", "NA12878", "", &"x".repeat(70_000)];
        let raw = encode(&words);
        for got in [
            decode("k", &raw, 5).unwrap(),
            decode_zstd("k", &zstd(&raw), 5).unwrap(),
        ] {
            let (bytes, offsets) = got;
            assert_eq!(offsets.len(), 6);
            for (i, w) in words.iter().enumerate() {
                assert_eq!(&bytes[offsets[i]..offsets[i + 1]], w.as_bytes());
            }
        }
    }

    /// A length prefix of 4 GB (zarrs panics), a wrong count, a cut-short chunk and
    /// trailing bytes are errors naming the chunk.
    #[test]
    fn damaged_chunks_are_errors() {
        let raw = encode(&["ab", "cd"]);
        let mut huge = raw.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut big = raw.clone();
        big[4..8].copy_from_slice(&(1u32 << 20).to_le_bytes());
        let mut trailing = raw.clone();
        trailing.push(0);
        for (what, b, n) in [
            ("huge", &huge, 2),
            ("big", &big, 2),
            ("count", &raw, 3),
            ("short", &raw[..raw.len() - 1].to_vec(), 2),
            ("trailing", &trailing, 2),
            ("empty", &Vec::new(), 2),
        ] {
            for e in [decode("s/c/0", b, n), decode_zstd("s/c/0", &zstd(b), n)] {
                let e = e.unwrap_err().to_string();
                assert!(
                    e.starts_with("s/c/0: ") && e.contains("string chunk"),
                    "{what}: {e}"
                );
            }
        }
        assert!(decode_zstd("k", b"not zstd at all", 2).is_err());
    }

    /// Concatenated zstd frames of zeros (4 GB said in a few KB) stop at the first
    /// wrong word: the count, here.
    #[test]
    fn a_bomb_stops_early() {
        let frame = zstd(&vec![0u8; 64 << 20]);
        let mut bomb = Vec::new();
        for _ in 0..64 {
            bomb.extend_from_slice(&frame);
        }
        let t = std::time::Instant::now();
        let e = decode_zstd("k", &bomb, 3).unwrap_err().to_string();
        assert!(e.contains("says 0 elements"), "{e}");
        // Zero-length elements then a bomb of trailing zeros: refused after 64 KiB.
        let mut b = zstd(&[2, 0, 0, 0]);
        b.extend_from_slice(&bomb);
        let e = decode_zstd("k", &b, 2).unwrap_err().to_string();
        assert!(e.contains("after its last element"), "{e}");
        assert!(t.elapsed().as_secs() < 5);
    }
}
