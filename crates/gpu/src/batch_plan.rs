//! The batch plan: for a batch of chunks, every piece of work as plain offsets into
//! four buffers — the packed compressed streams (`input`), a staging buffer for
//! streams that still need unshuffling or moving (`stage`), the decoded chunks
//! (`out`), and the caller's patches (`patches`).
//!
//! The order of work is fixed: every zstd stream (one batched call), then every copy,
//! then every unshuffle, then every scatter rectangle. nvCOMP requires 8-byte aligned
//! input and output pointers ([`ALIGN`]), so every zstd stream is packed at an
//! aligned offset of `input` and decompresses to an aligned place: its final place
//! when that is aligned, otherwise a slot of `stage` followed by a copy.

use crate::error::{Error, Result};
use std::ops::Range;
use svar2_blosc::{Frame, Shuffle};

/// nvCOMP zstd's alignment for input, output and temp buffers.
pub const ALIGN: usize = 8;

fn align(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// One chunk of a batch: its key (for errors), stored bytes and decoded size.
pub struct ChunkInput<'a> {
    pub key: &'a str,
    pub bytes: &'a [u8],
    pub nbytes: usize,
}

/// Checks on the host that `stream` is one whole zstd frame whose header says it
/// decodes to `len` bytes: nvCOMP's behaviour on a malformed frame is undefined (it
/// does not even check the magic number), so none reaches it. Reads only the frame
/// and block headers.
fn check_zstd(key: &str, stream: &[u8], len: usize) -> Result<()> {
    use zstd::zstd_safe::{find_frame_compressed_size, get_frame_content_size};
    let bad = |msg: String| Error::Corrupt {
        key: key.to_string(),
        msg: format!("blosc frame: zstd stream: {msg}"),
    };
    match get_frame_content_size(stream) {
        Ok(Some(n)) if n == len as u64 => {}
        Ok(Some(n)) => {
            return Err(bad(format!(
                "says {n} decoded bytes where the block holds {len}"
            )))
        }
        Ok(None) => return Err(bad("its header does not give its decoded size".into())),
        Err(_) => return Err(bad("not a zstd frame".into())),
    }
    match find_frame_compressed_size(stream) {
        Ok(n) if n == stream.len() => Ok(()),
        Ok(n) => Err(bad(format!("a {n}-byte frame in {} bytes", stream.len()))),
        Err(e) => Err(bad(format!(
            "cut short or damaged ({})",
            zstd::zstd_safe::get_error_name(e)
        ))),
    }
}

/// A buffer of the plan (the discriminants are the kernels' buffer numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    Input = 0,
    Stage = 1,
    Out = 2,
}

/// Decompress `input[src]` (one zstd frame, aligned) to `dst` (aligned) of `to`,
/// exactly `len` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZstdTask {
    pub chunk: u32,
    pub src: Range<usize>,
    pub to: Buf,
    pub dst: usize,
    pub len: usize,
}

/// Copy `len` bytes from `from[src..]` to `to[dst..]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyTask {
    pub from: Buf,
    pub src: usize,
    pub to: Buf,
    pub dst: usize,
    pub len: usize,
}

/// Unshuffle one block: `len` bytes from `stage[src..]` to `out[dst..]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnshuffleTask {
    pub src: usize,
    pub dst: usize,
    pub len: usize,
    pub typesize: usize,
    pub bit: bool,
}

/// Copy `rows` rows of `row_bytes` from `out` (rows `src_stride` apart from `src`)
/// to `patches` (rows `dst_stride` apart from `dst`): one chunk's part of one patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rect {
    pub src: usize,
    pub src_stride: usize,
    pub dst: usize,
    pub dst_stride: usize,
    pub rows: usize,
    pub row_bytes: usize,
}

/// Everything a batch needs, as offsets.
#[derive(Debug, Default)]
pub struct BatchPlan {
    pub input: Vec<u8>,
    pub stage_bytes: usize,
    pub out_bytes: usize,
    pub patch_bytes: usize,
    /// Each chunk's key (errors name it) and where its decoded bytes are in `out`.
    pub keys: Vec<String>,
    pub chunks: Vec<Range<usize>>,
    pub zstd: Vec<ZstdTask>,
    pub copies: Vec<CopyTask>,
    pub unshuffle: Vec<UnshuffleTask>,
    pub rects: Vec<Rect>,
}

impl BatchPlan {
    /// Plans a batch of chunks (no scatter); a frame that does not parse is an error
    /// naming its chunk key.
    pub fn build(chunks: &[ChunkInput]) -> Result<BatchPlan> {
        let mut p = BatchPlan::default();
        for ch in chunks {
            p.push_frame(ch.key, ch.bytes, ch.nbytes)?;
        }
        Ok(p)
    }

    /// The largest decoded size of one zstd stream (nvCOMP sizes its temp memory by it).
    pub fn max_stream_bytes(&self) -> usize {
        self.zstd.iter().map(|t| t.len).max().unwrap_or(0)
    }

    /// A new chunk of `nbytes` in `out` (aligned); returns its index and offset.
    fn new_chunk(&mut self, key: &str, nbytes: usize) -> (usize, usize) {
        let at = align(self.out_bytes);
        self.out_bytes = at + nbytes;
        self.keys.push(key.to_string());
        self.chunks.push(at..at + nbytes);
        (self.chunks.len() - 1, at)
    }

    /// `bytes` appended to `input` (aligned when `aligned`); returns where.
    fn pack(&mut self, bytes: &[u8], aligned: bool) -> usize {
        if aligned {
            self.input.resize(align(self.input.len()), 0);
        }
        let at = self.input.len();
        self.input.extend_from_slice(bytes);
        at
    }

    /// `len` bytes of `stage`, aligned; returns where.
    fn stage(&mut self, len: usize) -> usize {
        let at = align(self.stage_bytes);
        self.stage_bytes = at + len;
        at
    }

    /// A chunk decoded elsewhere (a fill value, another codec): copied as is.
    pub fn push_decoded(&mut self, key: &str, bytes: &[u8]) -> usize {
        let (c, at) = self.new_chunk(key, bytes.len());
        let src = self.pack(bytes, false);
        self.copies.push(CopyTask {
            from: Buf::Input,
            src,
            to: Buf::Out,
            dst: at,
            len: bytes.len(),
        });
        c
    }

    /// A zstd stream decompressing to `to[dst..dst + len]`.
    fn push_zstd(&mut self, chunk: usize, stream: &[u8], to: Buf, dst: usize, len: usize) {
        let s = self.pack(stream, true);
        let src = s..s + stream.len();
        let chunk = chunk as u32;
        if dst.is_multiple_of(ALIGN) {
            self.zstd.push(ZstdTask {
                chunk,
                src,
                to,
                dst,
                len,
            });
        } else {
            let slot = self.stage(len);
            self.zstd.push(ZstdTask {
                chunk,
                src,
                to: Buf::Stage,
                dst: slot,
                len,
            });
            self.copies.push(CopyTask {
                from: Buf::Stage,
                src: slot,
                to,
                dst,
                len,
            });
        }
    }

    /// A blosc frame that must decode to `nbytes`; returns the chunk's index.
    pub fn push_frame(&mut self, key: &str, bytes: &[u8], nbytes: usize) -> Result<usize> {
        let frame = Frame::parse(key, bytes, nbytes)?;
        let (c, out0) = self.new_chunk(key, nbytes);
        if frame.memcpyed {
            let src = self.pack(&bytes[16..16 + nbytes], false);
            self.copies.push(CopyTask {
                from: Buf::Input,
                src,
                to: Buf::Out,
                dst: out0,
                len: nbytes,
            });
            return Ok(c);
        }
        let shuffled = frame.shuffle != Shuffle::None;
        for block in &frame.blocks {
            // Shuffled blocks decompress to the stage, then unshuffle into `out`.
            let (to, block_start) = if shuffled {
                (Buf::Stage, self.stage(block.out_len))
            } else {
                (Buf::Out, out0 + block.out_offset)
            };
            let mut at = block_start;
            for s in &block.streams {
                let stream = &bytes[s.offset..s.offset + s.len];
                if s.raw {
                    let src = self.pack(stream, false);
                    self.copies.push(CopyTask {
                        from: Buf::Input,
                        src,
                        to,
                        dst: at,
                        len: s.len,
                    });
                } else {
                    check_zstd(key, stream, s.out_len)?;
                    self.push_zstd(c, stream, to, at, s.out_len);
                }
                at += s.out_len;
            }
            if shuffled {
                self.unshuffle.push(UnshuffleTask {
                    src: block_start,
                    dst: out0 + block.out_offset,
                    len: block.out_len,
                    typesize: frame.typesize,
                    bit: frame.shuffle == Shuffle::Bit,
                });
            }
        }
        Ok(c)
    }

    /// A rectangle of chunk `chunk`'s decoded bytes copied into the patches buffer
    /// (which grows to hold it); offsets relative to the chunk's start.
    pub fn push_rect(&mut self, chunk: usize, mut r: Rect) {
        r.src += self.chunks[chunk].start;
        if r.rows > 0 {
            let end = r.dst + (r.rows - 1) * r.dst_stride + r.row_bytes;
            self.patch_bytes = self.patch_bytes.max(end);
        }
        self.rects.push(r);
    }
}
