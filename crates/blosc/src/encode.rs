//! Encoding a chunk as the blosc 1 frame c-blosc 1.21 writes (`blosc_compress_ctx`
//! with zstd, a forced block size and one thread, as zarrs calls it), byte for byte,
//! without c-blosc: each block shuffled in one pass, then compressed through one
//! zstd context reused by the thread (c-blosc's `ZSTD_compress` builds and frees a
//! context for every block). zstd is the same library either way (`zstd-sys`), and
//! its output depends only on the level and the input, so the frames are equal; the
//! tests hold every type, shuffle and size to zarrs' own c-blosc encode.

use super::frame::{Shuffle, BIT_SHUFFLE, BYTE_SHUFFLE, DONT_SPLIT, HEADER, MEMCPYED, ZSTD};
use super::shuffle::{bitshuffle, byteshuffle};
use crate::{Error, Result};

/// c-blosc's format version and zstd's format version in its frames.
const VERSION: u8 = 2;
const ZSTD_FORMAT: u8 = 1;
/// Buffers shorter than this are stored as is (c-blosc's `MIN_BUFFERSIZE`).
const MIN_BUFFER: usize = 128;
/// The largest buffer c-blosc compresses (`BLOSC_MAX_BUFFERSIZE`).
const MAX_BUFFER: usize = i32::MAX as usize - HEADER;
/// c-blosc stores a type size above this as single bytes.
const MAX_TYPESIZE: usize = 255;

/// How one frame's blocks are cut, shuffled and compressed.
#[derive(Clone, Copy)]
struct Blocks {
    typesize: usize,
    shuffle: Shuffle,
    /// zstd's level (c-blosc's mapping of the blosc clevel).
    level: i32,
    blocksize: usize,
}

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
        let how = Blocks {
            typesize,
            shuffle,
            level: zstd_level(clevel),
            blocksize,
        };
        let compressed = clevel > 0 && nbytes >= MIN_BUFFER && self.blocks(src, how, start, out);
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
    fn blocks(&mut self, src: &[u8], how: Blocks, start: usize, out: &mut Vec<u8>) -> bool {
        let Blocks {
            typesize,
            shuffle,
            level,
            blocksize,
        } = how;
        let nbytes = src.len();
        let max_bytes = nbytes + HEADER;
        let table = start + HEADER;
        out.resize(table + 4 * nbytes.div_ceil(blocksize), 0);
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
