//! The batch plan: for a batch of chunks, every piece of work as plain offsets into
//! three buffers — the concatenated frames (`input`), a staging buffer for streams
//! that still need unshuffling (`stage`), and the decoded chunks back to back (`out`).

use std::ops::Range;
use svar2_store::blosc::{Frame, Shuffle};
use svar2_store::Result;

/// One chunk of a batch: its key (for errors), stored bytes and decoded size.
pub struct ChunkInput<'a> {
    pub key: &'a str,
    pub bytes: &'a [u8],
    pub nbytes: usize,
}

/// Decompress `input[src]` (one zstd frame) into `stage` or `out` at `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZstdTask {
    pub chunk: u32,
    pub src: Range<usize>,
    pub dst: Range<usize>,
    pub to_stage: bool,
}

/// Copy `input[src]` (a raw stream, or a memcpyed chunk) to `stage` or `out` at `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyTask {
    pub src: Range<usize>,
    pub dst: usize,
    pub to_stage: bool,
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

/// Everything a batch needs, as offsets.
#[derive(Debug, Default)]
pub struct BatchPlan {
    pub input: Vec<u8>,
    pub stage_bytes: usize,
    pub out_bytes: usize,
    /// Where each chunk's decoded bytes are in `out`.
    pub chunks: Vec<Range<usize>>,
    pub zstd: Vec<ZstdTask>,
    pub copies: Vec<CopyTask>,
    pub unshuffle: Vec<UnshuffleTask>,
}

impl BatchPlan {
    /// Plans a batch; a frame that does not parse is an error naming its chunk key.
    pub fn build(chunks: &[ChunkInput]) -> Result<BatchPlan> {
        let mut p = BatchPlan::default();
        for (c, ch) in chunks.iter().enumerate() {
            let frame = Frame::parse(ch.key, ch.bytes, ch.nbytes)?;
            let base_in = p.input.len();
            p.input.extend_from_slice(ch.bytes);
            let out0 = p.out_bytes;
            p.out_bytes += ch.nbytes;
            p.chunks.push(out0..out0 + ch.nbytes);
            if frame.memcpyed {
                p.copies.push(CopyTask {
                    src: base_in + 16..base_in + 16 + ch.nbytes,
                    dst: out0,
                    to_stage: false,
                });
                continue;
            }
            let shuffled = frame.shuffle != Shuffle::None;
            for block in &frame.blocks {
                // Shuffled blocks decompress to the stage, then unshuffle into `out`.
                let (to_stage, mut at) = if shuffled {
                    (true, p.stage_bytes)
                } else {
                    (false, out0 + block.out_offset)
                };
                let block_start = at;
                for s in &block.streams {
                    let src = base_in + s.offset..base_in + s.offset + s.len;
                    if s.raw {
                        p.copies.push(CopyTask {
                            src,
                            dst: at,
                            to_stage,
                        });
                    } else {
                        p.zstd.push(ZstdTask {
                            chunk: c as u32,
                            src,
                            dst: at..at + s.out_len,
                            to_stage,
                        });
                    }
                    at += s.out_len;
                }
                if shuffled {
                    p.stage_bytes += block.out_len;
                    p.unshuffle.push(UnshuffleTask {
                        src: block_start,
                        dst: out0 + block.out_offset,
                        len: block.out_len,
                        typesize: frame.typesize,
                        bit: frame.shuffle == Shuffle::Bit,
                    });
                }
            }
        }
        Ok(p)
    }
}
