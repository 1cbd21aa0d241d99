//! Encoding a chunk as the blosc 1 frame c-blosc 1.21 writes (`blosc_compress_ctx`
//! with zstd, a forced block size and one thread, as zarrs calls it), byte for byte,
//! without c-blosc: each block shuffled in one pass, then compressed through one
//! zstd context reused by the thread (c-blosc's `ZSTD_compress` builds and frees a
//! context for every block). zstd is the same library either way (`zstd-sys`), and
//! its output depends only on the level and the input, so the frames are equal; the
//! tests hold every type, shuffle and size to zarrs' own c-blosc encode.

use super::frame::{Shuffle, BIT_SHUFFLE, BYTE_SHUFFLE, DONT_SPLIT, HEADER, MEMCPYED, ZSTD};
use super::shuffle::{bitshuffle, byteshuffle};
use crate::error::{Error, Result};

/// c-blosc's format version and zstd's format version in its frames.
const VERSION: u8 = 2;
const ZSTD_FORMAT: u8 = 1;
/// Buffers shorter than this are stored as is (c-blosc's `MIN_BUFFERSIZE`).
const MIN_BUFFER: usize = 128;
/// The largest buffer c-blosc compresses (`BLOSC_MAX_BUFFERSIZE`).
const MAX_BUFFER: usize = i32::MAX as usize - HEADER;
/// c-blosc stores a type size above this as single bytes.
const MAX_TYPESIZE: usize = 255;

/// Encodes chunks on one thread, reusing its zstd context and shuffle buffers.
pub struct Encoder {
    zstd: zstd::zstd_safe::CCtx<'static>,
    shuffled: Vec<u8>,
    planes: Vec<u8>,
    packed: Vec<u8>,
}

/// c-blosc's zstd level for a blosc `clevel` (1-9; 0 stores the data as is).
fn zstd_level(clevel: u8) -> i32 {
    match clevel {
        0..=8 => 2 * clevel as i32 - 1,
        _ => zstd::zstd_safe::max_c_level(),
    }
}

/// c-blosc's block size for a forced `blocksize` (`compute_blocksize`; zstd blocks are
/// never split into per-byte streams).
fn block_size(typesize: usize, nbytes: usize, blocksize: usize) -> usize {
    if nbytes < typesize {
        return 1;
    }
    let mut b = blocksize.clamp(MIN_BUFFER, MAX_BUFFER).min(nbytes);
    if b > typesize {
        b = b / typesize * typesize;
    }
    b
}

impl Encoder {
    pub fn new() -> Result<Encoder> {
        Ok(Encoder {
            zstd: zstd::zstd_safe::CCtx::try_create()
                .ok_or_else(|| Error::Codec("zstd: cannot create a compression context".into()))?,
            shuffled: Vec::new(),
            planes: Vec::new(),
            packed: Vec::new(),
        })
    }

    /// Appends to `out` the frame of `src` (elements of `typesize` bytes), shuffled as
    /// `shuffle` says, compressed at blosc level `clevel` in blocks of `blocksize`.
    pub fn encode(
        &mut self,
        src: &[u8],
        typesize: usize,
        shuffle: Shuffle,
        clevel: u8,
        blocksize: usize,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let nbytes = src.len();
        if nbytes > MAX_BUFFER {
            return Err(Error::Codec(format!(
                "a {nbytes}-byte chunk is larger than blosc's {MAX_BUFFER}-byte limit"
            )));
        }
        if clevel > 9 {
            return Err(Error::Codec(format!("blosc clevel {clevel} (0-9)")));
        }
        let typesize = match typesize {
            0 => 1,
            t if t > MAX_TYPESIZE => 1,
            t => t,
        };
        let blocksize = block_size(typesize, nbytes, blocksize);
        let nblocks = nbytes.div_ceil(blocksize);
        let mut flags = DONT_SPLIT | (ZSTD << 5);
        flags |= match shuffle {
            Shuffle::None => 0,
            Shuffle::Byte => BYTE_SHUFFLE,
            Shuffle::Bit => BIT_SHUFFLE,
        };
        let start = out.len();
        out.reserve(HEADER + 4 * nblocks + nbytes);
        out.extend_from_slice(&[VERSION, ZSTD_FORMAT, flags, typesize as u8]);
        out.extend_from_slice(&(nbytes as i32).to_le_bytes());
        out.extend_from_slice(&(blocksize as i32).to_le_bytes());
        out.extend_from_slice(&0i32.to_le_bytes()); // the frame's size, below
        let compressed = clevel > 0
            && nbytes >= MIN_BUFFER
            && self.blocks(src, typesize, shuffle, clevel, blocksize, start, out);
        if !compressed {
            // Stored as is: the data follows the header, unshuffled whatever the flags.
            out.truncate(start + HEADER);
            out[start + 2] |= MEMCPYED;
            out.extend_from_slice(src);
        }
        let cbytes = (out.len() - start) as i32;
        out[start + 12..start + 16].copy_from_slice(&cbytes.to_le_bytes());
        Ok(())
    }

    /// The block table and blocks of a compressed frame after its header at `start`;
    /// false when they would not fit in `nbytes` + 16 bytes (c-blosc's output buffer,
    /// as zarrs sizes it), so the frame is stored as is instead.
    #[allow(clippy::too_many_arguments)]
    fn blocks(
        &mut self,
        src: &[u8],
        typesize: usize,
        shuffle: Shuffle,
        clevel: u8,
        blocksize: usize,
        start: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let nbytes = src.len();
        let max_bytes = nbytes + HEADER;
        let table = start + HEADER;
        out.resize(table + 4 * nbytes.div_ceil(blocksize), 0);
        let level = zstd_level(clevel);
        for (j, block) in src.chunks(blocksize).enumerate() {
            let bsize = block.len();
            let at = (out.len() - start) as i32;
            out[table + 4 * j..table + 4 * j + 4].copy_from_slice(&at.to_le_bytes());
            let data: &[u8] = match shuffle {
                Shuffle::Byte if typesize > 1 => {
                    self.shuffled.resize(bsize, 0);
                    byteshuffle(block, &mut self.shuffled, typesize);
                    &self.shuffled
                }
                Shuffle::Bit if bsize >= typesize => {
                    self.shuffled.resize(bsize, 0);
                    bitshuffle(block, &mut self.shuffled, typesize, &mut self.planes);
                    &self.shuffled
                }
                _ => block,
            };
            // One stream: its size, then zstd's bytes if they fit in what is left of
            // the output and are fewer than the block's, else the block as is.
            let written = out.len() - start + 4;
            let room = bsize.min(max_bytes.saturating_sub(written));
            if room == 0 {
                return false;
            }
            if self.packed.len() < bsize {
                self.packed.resize(bsize, 0);
            }
            let n = self
                .zstd
                .compress(&mut self.packed[..room], data, level)
                .unwrap_or(0);
            let stream: &[u8] = if n == 0 || n == bsize {
                if written + bsize > max_bytes {
                    return false;
                }
                data
            } else {
                &self.packed[..n]
            };
            out.extend_from_slice(&(stream.len() as i32).to_le_bytes());
            out.extend_from_slice(stream);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blosc::testing::noise;
    use crate::codec::{InnerCodec, Raw};
    use crate::Dtype;

    /// zarrs' c-blosc frame of `raw` (its crc32c removed).
    fn c_blosc(dtype: Dtype, bitshuffle: bool, clevel: i32, raw: &[u8]) -> Vec<u8> {
        let codec = InnerCodec::new(dtype, bitshuffle, clevel).unwrap();
        let n = raw.len() / dtype.size().unwrap();
        let enc = codec
            .encode_with_zarrs(&Raw::Fixed(raw.to_vec()), &[n as u64])
            .unwrap();
        enc[..enc.len() - 4].to_vec()
    }

    /// Every fixed-size type, both shuffles, sizes around every rule (under 128
    /// bytes, not a multiple of 8 elements, one block, a partial last block, many),
    /// contents from all-zero through incompressible, levels 0 to 9: c-blosc's bytes.
    #[test]
    fn frames_equal_c_bloscs() {
        let mut enc = Encoder::new().unwrap();
        let (mut checked, mut stored_as_is, mut raw_streams) = (0, 0, 0);
        for dtype in Dtype::ALL {
            let Some(size) = dtype.size() else { continue };
            for bitshuffle in [false, true] {
                let shuffle = match (bitshuffle, size) {
                    (true, _) => Shuffle::Bit,
                    (false, _) => Shuffle::Byte,
                };
                for n in [1usize, 7, 31, 32, 100, 1001, 4096, 65_537, 140_000] {
                    let len = n * size;
                    let contents: [Vec<u8>; 4] = [
                        vec![0; len],
                        noise(len, n as u64 + size as u64),
                        (0..len).map(|i| (i / 3 % 7) as u8).collect(),
                        // Incompressible: every byte from a wide generator.
                        (0..len as u64)
                            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
                            .collect(),
                    ];
                    for (c, raw) in contents.iter().enumerate() {
                        let levels: &[u8] = if c == 1 { &[0, 1, 3, 9] } else { &[1] };
                        for &clevel in levels {
                            let want = c_blosc(dtype, bitshuffle, clevel as i32, raw);
                            let mut got = vec![7u8; 3]; // appends after what is there
                            enc.encode(raw, size, shuffle, clevel, 256 * 1024, &mut got)
                                .unwrap();
                            assert!(
                                got[3..] == want[..],
                                "{dtype:?} bitshuffle {bitshuffle} n {n} contents {c} clevel {clevel}"
                            );
                            checked += 1;
                            let f = crate::blosc::Frame::parse("k", &got[3..], raw.len()).unwrap();
                            stored_as_is += usize::from(f.memcpyed);
                            raw_streams += f
                                .blocks
                                .iter()
                                .flat_map(|b| &b.streams)
                                .filter(|s| s.raw)
                                .count();
                        }
                    }
                }
            }
        }
        // Every path was taken: frames stored as is, and blocks stored raw.
        assert!(checked > 500, "{checked}");
        assert!(
            stored_as_is > 50 && raw_streams > 10,
            "{stored_as_is} {raw_streams}"
        );
    }
}
