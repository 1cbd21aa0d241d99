//! VCF text lines parsed ahead of the reading thread: the reading thread reads lines
//! (inflated on their own thread, see `inflate`) into [`LineBlock`]s and hands them to
//! [`LineParser`]s on other threads, which parse them straight into a batch of their
//! own through the direct parse. A parser stops at the first line the direct parse
//! does not take (htslib's general path, an error, a warning to give); the reading
//! thread reads that line and the rest of its block itself, in order
//! (`VcfReader::read_line`), and checks the order of every record.
//! So every message, warning and stored byte is what reading line by line gives, and
//! the parse — most of a FORMAT-heavy file's reading — runs on as many cores as there
//! are parsers.

use crate::direct::Direct;
use crate::extract::Extractor;
use crate::fastvcf::Lookups;
use crate::ragged::Batch;
use std::path::PathBuf;

/// Consecutive lines of one input, each ended by `\n` (not kept), starting at record
/// `first`.
#[derive(Default)]
pub struct LineBlock {
    text: Vec<u8>,
    ends: Vec<usize>,
    /// The record number of the first line (lines and records are one to one: every
    /// record is kept).
    pub first: u64,
}

impl LineBlock {
    /// Empties the block for the lines from record `first` on, keeping its buffers.
    pub fn reset(&mut self, first: u64) {
        self.text.clear();
        self.ends.clear();
        self.first = first;
    }

    /// Appends a line.
    pub fn push(&mut self, line: &[u8]) {
        self.text.extend_from_slice(line);
        self.ends.push(self.text.len());
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no line is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of text held.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// Line `i`.
    pub fn line(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

/// The direct parse of one input's lines, for a thread other than the reading one
/// (`VcfReader::line_parser`).
pub struct LineParser {
    path: PathBuf,
    ex: Extractor,
    direct: Direct,
    lookups: Lookups,
}

// SAFETY: the extractor's htslib buffers are owned by this parser and used by one
// thread at a time (the parser moves between threads whole).
unsafe impl Send for LineParser {}

impl LineParser {
    pub(crate) fn new(
        path: PathBuf,
        ex: Extractor,
        direct: Direct,
        lookups: Lookups,
    ) -> LineParser {
        LineParser {
            path,
            ex,
            direct,
            lookups,
        }
    }

    /// Parses the block's lines into `batch` (records appended in order) up to the
    /// first the direct parse does not take; how many it took. Records past those
    /// may have left parts in `batch` (a failed line): only the first `taken` count.
    pub fn parse(&mut self, block: &LineBlock, batch: &mut Batch) -> usize {
        for i in 0..block.len() {
            let taken = self.ex.extract_direct_line(
                &mut self.direct,
                &self.path,
                block.first + i as u64,
                block.line(i),
                &self.lookups,
                batch,
            );
            if !matches!(taken, Ok(true)) {
                return i;
            }
        }
        block.len()
    }
}
