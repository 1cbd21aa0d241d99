//! Decoding a parsed frame on one thread: each zstd stream through one reused
//! decompression context, then the unshuffle.

use super::frame::{Block, Frame, Shuffle, HEADER};
use super::unshuffle::{bitunshuffle, byteunshuffle, unshuffle_range, whole_unshuffle_is_fast};
use crate::{Error, Result};

/// Decodes frames on one thread, reusing its zstd context and scratch.
pub struct Decoder {
    zstd: zstd::bulk::Decompressor<'static>,
    scratch: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Result<Decoder> {
        Ok(Decoder {
            zstd: zstd::bulk::Decompressor::new()
                .map_err(|e| Error::Codec(format!("zstd context: {e}")))?,
            scratch: Vec::new(),
        })
    }

    /// Decodes `bytes` (the frame `frame` was parsed from) into `out`, which has the
    /// frame's `nbytes`.
    pub fn decode(&mut self, key: &str, bytes: &[u8], frame: &Frame, out: &mut [u8]) -> Result<()> {
        self.decode_ranges(key, bytes, frame, out, None)
    }

    /// As [`decode`](Self::decode), but when `wanted` is given (byte ranges of the
    /// decoded chunk, in any order) only those bytes of `out` are sure to be written:
    /// every zstd stream is still decompressed, but only the wanted bytes are
    /// unshuffled — a patch that needs 2 KB of a 2 MB chunk does not pay for the other
    /// 1.998 MB — unless unshuffling the whole block is as cheap (GFNI).
    pub fn decode_ranges(
        &mut self,
        key: &str,
        bytes: &[u8],
        frame: &Frame,
        out: &mut [u8],
        wanted: Option<&[(usize, usize)]>,
    ) -> Result<()> {
        debug_assert_eq!(out.len(), frame.nbytes);
        if frame.memcpyed {
            out.copy_from_slice(&bytes[HEADER..HEADER + frame.nbytes]);
            return Ok(());
        }
        for (j, block) in frame.blocks.iter().enumerate() {
            let dst = &mut out[block.out_offset..block.out_offset + block.out_len];
            let target: &mut [u8] = if frame.shuffle == Shuffle::None {
                dst
            } else {
                self.scratch.resize(block.out_len, 0);
                &mut self.scratch[..]
            };
            let mut at = 0;
            for s in &block.streams {
                let src = &bytes[s.offset..s.offset + s.len];
                let piece = &mut target[at..at + s.out_len];
                if s.raw {
                    piece.copy_from_slice(src);
                } else {
                    let n =
                        self.zstd
                            .decompress_to_buffer(src, piece)
                            .map_err(|e| Error::Corrupt {
                                key: key.to_string(),
                                msg: format!("blosc frame: block {j}: zstd: {e}"),
                            })?;
                    if n != s.out_len {
                        return Err(Error::Corrupt {
                            key: key.to_string(),
                            msg: format!(
                                "blosc frame: block {j}: zstd gave {n} bytes of {}",
                                s.out_len
                            ),
                        });
                    }
                }
                at += s.out_len;
            }
            // (A block whose splits do not cover it: bytes past the last split.)
            if at != block.out_len {
                return Err(Error::Corrupt {
                    key: key.to_string(),
                    msg: format!(
                        "blosc frame: block {j}: streams cover {at} of {} bytes",
                        block.out_len
                    ),
                });
            }
            let (b0, b1) = (block.out_offset, block.out_offset + block.out_len);
            // With GFNI a whole single-byte block unshuffles faster than the
            // group-at-a-time walk over a quarter of it: the ranges are not worth it.
            let wanted = match wanted {
                Some(_) if frame.shuffle == Shuffle::Bit && whole_unshuffle_is_fast(frame) => None,
                w => w,
            };
            match (frame.shuffle, wanted) {
                (Shuffle::None, _) => {}
                (Shuffle::Bit, None) => {
                    bitunshuffle(&self.scratch, dst_of(out, block), frame.typesize)
                }
                (Shuffle::Byte, None) => {
                    byteunshuffle(&self.scratch, dst_of(out, block), frame.typesize)
                }
                (shuffle, Some(ranges)) => {
                    let dst = dst_of(out, block);
                    for &(lo, hi) in ranges {
                        let (lo, hi) = (lo.max(b0), hi.min(b1));
                        if lo < hi {
                            unshuffle_range(
                                shuffle,
                                &self.scratch,
                                dst,
                                frame.typesize,
                                lo - b0,
                                hi - b0,
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn dst_of<'a>(out: &'a mut [u8], block: &Block) -> &'a mut [u8] {
    &mut out[block.out_offset..block.out_offset + block.out_len]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::noise;
    use crate::Encoder;

    /// Element sizes of every fixed-size type svar2 stores, and how their bytes look:
    /// 0 any, 1 a bool (0/1), 2 a UTF-32 letter.
    const TYPES: [(&str, usize, u8); 7] = [
        ("i8", 1, 0),
        ("bool", 1, 1),
        ("i16", 2, 0),
        ("i32", 4, 0),
        ("f32", 4, 0),
        ("char", 4, 2),
        ("i64", 8, 0),
    ];

    /// The frame svar2 writes for `raw` (elements of `size` bytes), clevel 1.
    fn frame_of(raw: &[u8], size: usize, bitshuffle: bool) -> Vec<u8> {
        let shuffle = if bitshuffle {
            Shuffle::Bit
        } else {
            Shuffle::Byte
        };
        let mut out = Vec::new();
        Encoder::new()
            .unwrap()
            .encode(raw, size, shuffle, 1, 256 * 1024, &mut out)
            .unwrap();
        out
    }

    /// Every chain svar2 writes, decoded by this module, gives the values back: each
    /// fixed-size type, bit and byte shuffle, sizes under 128 bytes (memcpyed), not a
    /// multiple of 8 elements, and over one 256 KiB block (a partial last block).
    /// (That these frames are c-blosc's and decode in zarrs is `codec`'s test.)
    #[test]
    fn decodes_every_frame_svar2_writes() {
        let mut dec = Decoder::new().unwrap();
        for (dtype, size, kind) in TYPES {
            for bitshuffle in [false, true] {
                for n in [1usize, 7, 100, 1001, 4096, 70_001] {
                    let mut raw = noise(n * size, n as u64 + size as u64);
                    if kind == 1 {
                        raw.iter_mut().for_each(|b| *b &= 1);
                    }
                    if kind == 2 {
                        raw = (0..n as u32)
                            .flat_map(|i| (65 + i % 26).to_le_bytes())
                            .collect();
                    }
                    let enc = frame_of(&raw, size, bitshuffle);
                    let frame = Frame::parse("k", &enc, raw.len()).unwrap();
                    let mut out = vec![0u8; raw.len()];
                    dec.decode("k", &enc, &frame, &mut out).unwrap();
                    assert_eq!(out, raw, "{dtype:?} bitshuffle {bitshuffle} n {n}");
                }
            }
        }
    }

    /// Decoding only some byte ranges writes exactly those bytes as a full decode does.
    #[test]
    fn wanted_ranges_decode_as_the_whole_chunk_does() {
        let mut dec = Decoder::new().unwrap();
        for (dtype, size, kind) in TYPES.into_iter().filter(|t| t.2 != 2) {
            for bitshuffle in [false, true] {
                for n in [100usize, 1001, 4096, 70_001] {
                    let mut raw = noise(n * size, n as u64 * 3 + size as u64);
                    if kind == 1 {
                        raw.iter_mut().for_each(|b| *b &= 1);
                    }
                    let enc = frame_of(&raw, size, bitshuffle);
                    let frame = Frame::parse("k", &enc, raw.len()).unwrap();
                    let len = raw.len();
                    let ranges: Vec<(usize, usize)> = (0..len)
                        .step_by((len / 7).max(3))
                        .map(|a| (a, (a + 1 + a % 13).min(len)))
                        .collect();
                    let mut out = vec![0xAAu8; len];
                    dec.decode_ranges("k", &enc, &frame, &mut out, Some(&ranges))
                        .unwrap();
                    for &(a, b) in &ranges {
                        assert_eq!(
                            out[a..b],
                            raw[a..b],
                            "{dtype:?} {bitshuffle} n {n} {a}..{b}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn damaged_frames_are_errors_naming_the_chunk() {
        let raw = noise(4000, 3);
        let enc = frame_of(&raw, 4, false);
        let mut dec = Decoder::new().unwrap();
        let mut out = vec![0; 4000];
        let try_it = |b: &[u8], n: usize, dec: &mut Decoder, out: &mut Vec<u8>| {
            out.resize(n, 0);
            Frame::parse("call_DP/c/0/0", b, n)
                .and_then(|f| dec.decode("call_DP/c/0/0", b, &f, out))
        };
        // Wrong decoded size, truncated, header lies about sizes, corrupt stream.
        assert!(try_it(&enc, 4001, &mut dec, &mut out).is_err());
        assert!(try_it(&enc[..enc.len() - 1], 4000, &mut dec, &mut out).is_err());
        assert!(try_it(&enc[..10], 4000, &mut dec, &mut out).is_err());
        let mut huge = enc.clone();
        huge[4..8].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(try_it(&huge, 4000, &mut dec, &mut out).is_err());
        let mut table = enc.clone();
        table[16..20].copy_from_slice(&(1i32 << 30).to_le_bytes());
        assert!(try_it(&table, 4000, &mut dec, &mut out).is_err());
        // (A flipped bit in a zstd stream may well decode, to wrong values: the frame
        // cannot tell; the chunk's crc32c does — the store's `codecs` tests that.)
        // Arbitrary bytes never panic.
        for seed in 0..2000u64 {
            let mut b = enc.clone();
            let n = noise(8, seed);
            let at = (seed as usize * 7) % b.len();
            b[at] ^= n[0] | 1;
            let _ = try_it(&b, 4000, &mut dec, &mut out);
        }
    }
}
