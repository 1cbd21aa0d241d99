//! The blosc 1 frame of a numeric inner chunk: its header and block table, parsed
//! and checked against the chunk's known size before anything is allocated.

use crate::{Error, Result};

pub(super) const HEADER: usize = 16;
pub(super) const MEMCPYED: u8 = 0x02;
pub(super) const BYTE_SHUFFLE: u8 = 0x01;
pub(super) const BIT_SHUFFLE: u8 = 0x04;
pub(super) const DONT_SPLIT: u8 = 0x10;
/// Compressor code of zstd (flags bits 5-7).
pub(super) const ZSTD: u8 = 4;
/// c-blosc splits a block into `typesize` streams only when it holds this many
/// elements or more.
const MIN_SPLIT_ELEMENTS: usize = 128;
const MAX_SPLITS: usize = 16;
/// c-blosc's `BLOSC_MAX_BLOCKSIZE`: `(INT_MAX - 255 * 4) / 3`.
const MAX_BLOCKSIZE: usize = (i32::MAX as usize - 255 * 4) / 3;

/// How a frame's blocks were shuffled before compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shuffle {
    None,
    Byte,
    Bit,
}

/// One compressed stream of a block: `len` bytes at `offset` of the frame, decoding to
/// `out_len` bytes; `raw` streams are stored as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub offset: usize,
    pub len: usize,
    pub out_len: usize,
    pub raw: bool,
}

/// One block: where it decodes to and its streams, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub out_offset: usize,
    pub out_len: usize,
    pub streams: Vec<Stream>,
}

/// A parsed, checked frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub typesize: usize,
    pub nbytes: usize,
    /// The data is stored as is at offset 16 (and is not shuffled, whatever the flags).
    pub memcpyed: bool,
    pub shuffle: Shuffle,
    pub blocks: Vec<Block>,
}

fn i32_at(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

impl Frame {
    /// Parses `bytes`, the frame of a chunk that must decode to exactly `nbytes` bytes
    /// (the reader knows it from the chunk shape; a header saying otherwise is
    /// corrupt, so no size read from the file is ever trusted). `key` names the chunk.
    pub fn parse(key: &str, bytes: &[u8], nbytes: usize) -> Result<Frame> {
        let bad = |msg: String| Error::Corrupt {
            key: key.to_string(),
            msg: format!("blosc frame: {msg}"),
        };
        if bytes.len() < HEADER {
            return Err(bad(format!(
                "{} bytes, shorter than the header",
                bytes.len()
            )));
        }
        let (version, flags, typesize) = (bytes[0], bytes[2], bytes[3] as usize);
        let header_nbytes = i32_at(bytes, 4).unwrap_or(-1);
        let blocksize = i32_at(bytes, 8).unwrap_or(-1);
        let cbytes = i32_at(bytes, 12).unwrap_or(-1);
        if version != 2 {
            return Err(bad(format!("version {version}, not 2")));
        }
        if flags & 0x08 != 0 {
            return Err(bad(format!("flags {flags:#04x} set a reserved bit")));
        }
        if header_nbytes < 0 || header_nbytes as usize != nbytes {
            return Err(bad(format!(
                "says {header_nbytes} decoded bytes where the chunk holds {nbytes}"
            )));
        }
        if cbytes < 0 || cbytes as usize != bytes.len() {
            return Err(bad(format!(
                "says {cbytes} bytes where {} are stored",
                bytes.len()
            )));
        }
        if typesize == 0 {
            return Err(bad("typesize 0".into()));
        }
        // c-blosc's rule (blosc_run_decompression_with_context), checked before it
        // looks at the memcpyed flag: a non-empty frame's block size is 1 to the
        // decoded size (and at most BLOSC_MAX_BLOCKSIZE). The reader, the GPU plan and
        // c-blosc (zarrs) must accept exactly the same frames.
        if nbytes != 0 && (blocksize <= 0 || blocksize as usize > nbytes.min(MAX_BLOCKSIZE)) {
            return Err(bad(format!(
                "block size {blocksize} (c-blosc takes 1 to {})",
                nbytes.min(MAX_BLOCKSIZE)
            )));
        }
        let memcpyed = flags & MEMCPYED != 0;
        if memcpyed {
            if bytes.len() != HEADER + nbytes {
                return Err(bad(format!(
                    "memcpyed frame of {} bytes for {nbytes} decoded",
                    bytes.len()
                )));
            }
            return Ok(Frame {
                typesize,
                nbytes,
                memcpyed,
                shuffle: Shuffle::None,
                blocks: Vec::new(),
            });
        }
        if flags >> 5 != ZSTD {
            return Err(bad(format!(
                "compressor {} (svar2 decodes zstd, code 4)",
                flags >> 5
            )));
        }
        let shuffle = if flags & BIT_SHUFFLE != 0 {
            Shuffle::Bit
        } else if flags & BYTE_SHUFFLE != 0 && typesize > 1 {
            Shuffle::Byte
        } else {
            Shuffle::None
        };
        if nbytes == 0 {
            return Ok(Frame {
                typesize,
                nbytes,
                memcpyed,
                shuffle,
                blocks: Vec::new(),
            });
        }
        let blocksize = blocksize as usize;
        let nblocks = nbytes.div_ceil(blocksize);
        let table_end = HEADER + 4 * nblocks;
        if table_end > bytes.len() {
            return Err(bad(format!(
                "{nblocks} blocks do not fit a {}-byte frame",
                bytes.len()
            )));
        }
        let mut blocks = Vec::with_capacity(nblocks);
        for j in 0..nblocks {
            let start = i32_at(bytes, HEADER + 4 * j).unwrap_or(-1);
            if start < table_end as i32 || start as usize >= bytes.len() {
                return Err(bad(format!(
                    "block {j} starts at {start}, outside the frame"
                )));
            }
            let out_offset = j * blocksize;
            let out_len = blocksize.min(nbytes - out_offset);
            let leftover = out_len < blocksize;
            let nsplits = if flags & DONT_SPLIT == 0
                && typesize <= MAX_SPLITS
                && out_len / typesize >= MIN_SPLIT_ELEMENTS
                && !leftover
            {
                typesize
            } else {
                1
            };
            let mut at = start as usize;
            let mut streams = Vec::with_capacity(nsplits);
            for s in 0..nsplits {
                let stream_out = out_len / nsplits;
                let len = i32_at(bytes, at).unwrap_or(-1);
                if len <= 0 || at + 4 + len as usize > bytes.len() {
                    return Err(bad(format!(
                        "block {j} stream {s}: {len} bytes at {} run past the frame",
                        at + 4
                    )));
                }
                let len = len as usize;
                if len > stream_out {
                    // A compressed stream is never larger than what it decodes to
                    // (c-blosc stores it raw then).
                    return Err(bad(format!(
                        "block {j} stream {s}: {len} compressed bytes for {stream_out}"
                    )));
                }
                streams.push(Stream {
                    offset: at + 4,
                    len,
                    out_len: stream_out,
                    raw: len == stream_out,
                });
                at += 4 + len;
            }
            blocks.push(Block {
                out_offset,
                out_len,
                streams,
            });
        }
        Ok(Frame {
            typesize,
            nbytes,
            memcpyed,
            shuffle,
            blocks,
        })
    }
}
