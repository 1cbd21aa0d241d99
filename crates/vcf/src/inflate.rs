//! The bytes of a bgzipped file (`Inflated`: a BCF's, see `bcf_stream`) and the lines
//! of a bgzipped VCF (`InflatedLines`), their BGZF blocks inflated on threads of their own,
//! a few blocks at a time, ahead of the parse: on a FORMAT-heavy file inflate is ~40 %
//! of the reading thread's time, and the reading thread is what every chunk row waits
//! on. The `inflate` thread reads the compressed blocks; with more than one worker it
//! hands groups of them to `inflate-N` threads and passes their text on in order, so
//! that with the parse itself off the reading thread (`lines`) one stream's reading
//! keeps many cores busy. htslib's own thread pool does the same block by block, and its per-block
//! hand-offs cost more than they save on two cores (sim.vcf.gz 0.41 -> 0.67 s); here a
//! hand-off carries ~256 KiB of text. Each block is a gzip member, so libdeflate checks
//! its CRC-32 and length as htslib does.

use crossbeam_channel::{bounded, Receiver, Sender};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// Inflated bytes per hand-off: a few blocks, so the hand-offs cost nothing beside the
/// inflate, and the buffers in flight (workers + 3, see [`InflatedLines::start`]) stay
/// ~1.3 MiB on two cores.
const BATCH_BYTES: usize = 256 * 1024;
/// Compressed bytes read at a time (a few blocks).
const READ_BYTES: usize = 128 * 1024;
/// Spent buffers kept for reuse beside one per worker.
const BUFFERS: usize = 4;
/// The most a BGZF block inflates to (the spec's limit; ISIZE is checked against it
/// before anything is reserved).
const MAX_BLOCK: usize = 64 * 1024;

/// Inflated text in order: each group of blocks' text (and an error after it, if the
/// data was damaged there) arrives on a channel of its own, those channels in order.
type Texts = Receiver<Receiver<Result<Vec<u8>, String>>>;

/// A bgzipped file's inflated bytes from a virtual offset on, in order, a buffer at a
/// time, inflated ahead on threads.
pub struct Inflated {
    groups: Texts,
    /// The group being read.
    group: Option<Receiver<Result<Vec<u8>, String>>>,
    spent: Sender<Vec<u8>>,
}

/// A bgzipped file's lines from a virtual offset on, inflated ahead on threads.
pub struct InflatedLines {
    inflated: Inflated,
    buf: Vec<u8>,
    pos: usize,
    /// A line that began in an earlier buffer.
    carry: Vec<u8>,
    /// The current line: in `carry` (`None`) or at `buf[start..end]`.
    line: Option<(usize, usize)>,
    done: bool,
    /// The current line is the file's last and ends without `\n`: where a file
    /// cut short ends in the middle of a record.
    unterminated: bool,
    /// The longest line taken ([`crate::limits`]): a longer one is an error before
    /// `carry` grows past it.
    max_line: usize,
}

impl Inflated {
    /// Starts inflating `path` from the BGZF virtual offset `voffset` (as `bgzf_tell`
    /// gives it: block address << 16 | offset in the inflated block) on `workers`
    /// threads (the `inflate` thread itself when one).
    /// With `cut` (the file lacks its end-of-file block and the user asked to convert
    /// what it holds), a file ending inside a block ends the stream there: the block's
    /// records are dropped, as htslib (and so bcftools) cannot inflate them either.
    pub fn start(
        path: &Path,
        voffset: u64,
        cut: bool,
        workers: usize,
    ) -> std::io::Result<Inflated> {
        let mut file = File::open(path)?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(voffset >> 16))?;
        let skip = (voffset & 0xffff) as usize;
        let cut = cut.then(|| path.to_path_buf());
        let workers = workers.max(1);
        // Groups in flight: one being read here, one queued, one per worker.
        let (send, groups) = bounded(workers + 1);
        let (spent, recycled) = bounded(BUFFERS + workers);
        let mut blocks = Blocks::new(
            BufReader::with_capacity(READ_BYTES, file),
            voffset >> 16,
            skip,
        );
        blocks.cut = cut;
        let (jobs, take) = bounded::<Job>(1);
        // Groups' buffers back from the workers, for the next groups.
        let (spare, reuse) = bounded::<Group>(workers + 2);
        for i in (0..workers).filter(|_| workers > 1) {
            let (take, recycled, spare) = (take.clone(), recycled.clone(), spare.clone());
            std::thread::Builder::new()
                .name(format!("inflate-{i}"))
                .spawn(move || {
                    let inflater = Decompressor::new();
                    for job in take {
                        let _ = spare.try_send(job.run(&inflater, &recycled));
                    }
                })?;
        }
        drop(take);
        std::thread::Builder::new()
            .name("inflate".into())
            .spawn(move || {
                let inflater = Decompressor::new();
                loop {
                    let mut group = reuse.try_recv().unwrap_or_default();
                    group.raw.clear();
                    group.blocks.clear();
                    let r = blocks.read_group(&mut group);
                    let end = matches!(r, Ok(false) | Err(_));
                    group.error = r.err();
                    let (texts, text) = bounded(2);
                    if send.send(text).is_err() {
                        return;
                    }
                    let job = Job { group, texts };
                    // One worker: the blocks are inflated here, as they are read.
                    let job = match workers {
                        1 => Err(job),
                        _ => jobs.send(job).map_err(|e| e.0),
                    };
                    if let Err(job) = job {
                        let _ = spare.try_send(job.run(&inflater, &recycled));
                    }
                    if end {
                        return;
                    }
                }
            })?;
        Ok(Inflated {
            groups,
            group: None,
            spent,
        })
    }

    /// The next inflated bytes in order; `None` after the last, an `Err` where the
    /// data is damaged (after the bytes before it).
    pub fn next_text(&mut self) -> Option<Result<Vec<u8>, String>> {
        loop {
            if let Some(group) = &self.group {
                match group.recv() {
                    Ok(text) => return Some(text),
                    Err(_) => self.group = None,
                }
            }
            self.group = Some(self.groups.recv().ok()?);
        }
    }

    /// Hands a buffer [`Inflated::next_text`] gave back for reuse.
    pub fn give_back(&self, buf: Vec<u8>) {
        let _ = self.spent.try_send(buf);
    }
}

impl InflatedLines {
    /// Lines of `path` from `voffset` on, inflated as [`Inflated::start`] says.
    pub fn start(
        path: &Path,
        voffset: u64,
        cut: bool,
        workers: usize,
    ) -> std::io::Result<InflatedLines> {
        Ok(InflatedLines {
            inflated: Inflated::start(path, voffset, cut, workers)?,
            buf: Vec::new(),
            pos: 0,
            carry: Vec::new(),
            line: None,
            done: false,
            unterminated: false,
            max_line: crate::limits::max_line(),
        })
    }

    /// Moves to the next line (without its `\n` or `\r\n`); `Ok(false)` at end of
    /// file, `Err` when the compressed data is damaged or the file cannot be read.
    pub fn advance(&mut self) -> Result<bool, String> {
        if let Some(at) = memchr::memchr(b'\n', &self.buf[self.pos..]) {
            let start = self.pos;
            self.pos += at + 1;
            self.line = Some((start, trim_cr(&self.buf[start..start + at]) + start));
            return Ok(true);
        }
        self.carry.clear();
        self.carry.extend_from_slice(&self.buf[self.pos..]);
        loop {
            if self.done {
                self.pos = self.buf.len();
                self.line = None;
                let n = trim_cr(&self.carry);
                self.carry.truncate(n);
                self.unterminated = !self.carry.is_empty();
                return Ok(self.unterminated);
            }
            match self.inflated.next_text() {
                Some(Ok(next)) => {
                    let old = std::mem::replace(&mut self.buf, next);
                    self.inflated.give_back(old);
                    self.pos = 0;
                }
                Some(Err(e)) => return Err(e),
                None => {
                    self.done = true;
                    continue;
                }
            }
            if let Some(at) = memchr::memchr(b'\n', &self.buf) {
                self.carry.extend_from_slice(&self.buf[..at]);
                self.pos = at + 1;
                self.line = None;
                let n = trim_cr(&self.carry);
                self.carry.truncate(n);
                return Ok(true);
            }
            if self.carry.len() + self.buf.len() > self.max_line {
                return Err(crate::limits::too_long(self.carry.len() + self.buf.len()));
            }
            self.carry.extend_from_slice(&self.buf);
            self.pos = self.buf.len();
        }
    }

    /// Whether the current line is the file's last and has no `\n` (cut short?).
    pub fn unterminated(&self) -> bool {
        self.unterminated
    }

    /// The current line.
    pub fn line(&self) -> &[u8] {
        match self.line {
            Some((start, end)) => &self.buf[start..end],
            None => &self.carry,
        }
    }
}

/// Length of `line` without a trailing `\r` (as htslib's line reader drops it).
fn trim_cr(line: &[u8]) -> usize {
    line.len() - usize::from(line.last() == Some(&b'\r'))
}

/// A reused libdeflate decompressor, freed on drop.
struct Decompressor(*mut libdeflate_sys::libdeflate_decompressor);

impl Decompressor {
    fn new() -> Decompressor {
        // SAFETY: a plain allocation; null (out of memory) is checked where it is used.
        Decompressor(unsafe { libdeflate_sys::libdeflate_alloc_decompressor() })
    }
}

impl Drop for Decompressor {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: allocated by libdeflate_alloc_decompressor, freed only here.
            unsafe { libdeflate_sys::libdeflate_free_decompressor(self.0) }
        }
    }
}

/// Compressed BGZF blocks read in order, for one hand-off of text.
#[derive(Default)]
struct Group {
    /// The blocks, back to back.
    raw: Vec<u8>,
    /// Each block's end in `raw`, inflated size, and file offset (for messages).
    blocks: Vec<(usize, usize, u64)>,
    /// Inflated bytes of the first block that come before the start.
    skip: usize,
    /// What ended the reading after these blocks: a damaged or cut block.
    error: Option<String>,
}

/// A group to inflate, and where its text goes (then the group's error, if any).
struct Job {
    group: Group,
    texts: Sender<Result<Vec<u8>, String>>,
}

impl Job {
    /// Inflates the group's blocks into one buffer (from `recycled` when one is
    /// there) and sends it, then the first error: a block that does not inflate ends
    /// the text before it, so the error names the record it cuts.
    /// The group comes back for its buffers' reuse.
    fn run(self, inflater: &Decompressor, recycled: &Receiver<Vec<u8>>) -> Group {
        let Job { mut group, texts } = self;
        let mut out = recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH_BYTES + MAX_BLOCK));
        out.clear();
        let mut error = group.error.take();
        let mut start = 0;
        for &(end, isize, at) in &group.blocks {
            if let Err(e) = inflate_block(inflater, &group.raw[start..end], isize, at, &mut out) {
                error = Some(e);
                break;
            }
            start = end;
        }
        if group.skip > 0 {
            out.drain(..group.skip.min(out.len()));
        }
        if !out.is_empty() {
            let _ = texts.send(Ok(out));
        }
        if let Some(e) = error {
            let _ = texts.send(Err(e));
        }
        group
    }
}

/// The BGZF blocks of a file, read in order.
struct Blocks<R> {
    input: R,
    /// Inflated bytes of the first block that come before the start.
    skip: usize,
    /// The file offset of the next block (for messages).
    at: u64,
    /// The file, when it is known cut short and its records are converted as far as
    /// they go: a last, partial block then ends it (with a warning naming it).
    cut: Option<std::path::PathBuf>,
}

impl<R: Read> Blocks<R> {
    fn new(input: R, at: u64, skip: usize) -> Blocks<R> {
        Blocks {
            input,
            skip,
            at,
            cut: None,
        }
    }

    /// The file ends inside the block at `at`: the end of a file cut short (and
    /// `Ok(false)`), else an error.
    fn ends_inside(&self, what: &str, at: u64) -> Result<bool, String> {
        if let Some(path) = &self.cut {
            tracing::warn!(
                "{}: cut inside the BGZF block {what}at byte {at}: the records in that \
                 block are dropped (it cannot be inflated)",
                path.display()
            );
            return Ok(false);
        }
        Err(format!(
            "the compressed data is truncated or corrupt: the file ends inside the BGZF \
             block {what}at byte {at}"
        ))
    }

    /// Reads whole blocks into `group` until they inflate to [`BATCH_BYTES`];
    /// `Ok(false)` once the file has ended.
    fn read_group(&mut self, group: &mut Group) -> Result<bool, String> {
        group.skip = std::mem::take(&mut self.skip);
        let mut inflated = 0;
        while inflated < BATCH_BYTES {
            match self.read_block(group)? {
                Some(isize) => inflated += isize,
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Reads one block into `group`; its inflated size, `None` at end of file.
    fn read_block(&mut self, group: &mut Group) -> Result<Option<usize>, String> {
        let damaged = |what: String| format!("the compressed data is truncated or corrupt: {what}");
        let mut head = [0u8; 18];
        let got = read_full(&mut self.input, &mut head).map_err(|e| e.to_string())?;
        if got == 0 {
            return Ok(None);
        }
        let at = self.at;
        if got < head.len() {
            return self.ends_inside("header ", at).map(|_| None);
        }
        // gzip magic, deflate, FEXTRA, XLEN 6 with the `BC` subfield: the header htslib
        // checks for (libdeflate reads the rest of the gzip header).
        let bgzf = head[..3] == [31, 139, 8]
            && head[3] & 4 != 0
            && head[10..12] == [6, 0]
            && head[12..16] == [b'B', b'C', 2, 0];
        if !bgzf {
            return Err(damaged(format!("no BGZF block header at byte {at}")));
        }
        let size = u16::from_le_bytes([head[16], head[17]]) as usize + 1;
        if size < head.len() + 8 {
            return Err(damaged(format!(
                "the BGZF block at byte {at} states a size too small to hold it"
            )));
        }
        let start = group.raw.len();
        group.raw.extend_from_slice(&head);
        group.raw.resize(start + size, 0);
        let got = read_full(&mut self.input, &mut group.raw[start + head.len()..])
            .map_err(|e| e.to_string())?;
        if got < size - head.len() {
            group.raw.truncate(start);
            return self.ends_inside("", at).map(|_| None);
        }
        self.at += size as u64;
        // The inflated size the block states (its ISIZE), as a hint for the group's
        // size only: htslib inflates into 64 KiB and checks the CRC, not ISIZE, and
        // so does `inflate_block`, so that a file reads the same whoever inflates it.
        let tail = &group.raw[start + size - 4..start + size];
        let isize = (u32::from_le_bytes(tail.try_into().expect("4 bytes")) as usize).min(MAX_BLOCK);
        group.blocks.push((start + size, isize, at));
        Ok(Some(isize))
    }
}

/// Inflates one whole BGZF block onto `out`, as htslib does: its deflate data into at
/// most 64 KiB, checked by the CRC-32 in its trailer (`_isize`, the size it states, is
/// not checked: htslib reads a block whose data and CRC are whole whatever it says).
fn inflate_block(
    inflater: &Decompressor,
    block: &[u8],
    _isize: usize,
    at: u64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if inflater.0.is_null() {
        return Err("out of memory for a deflate decompressor".into());
    }
    let damaged = || {
        format!(
            "the compressed data is truncated or corrupt: the BGZF block at byte {at} does \
             not inflate or fails its CRC check (a damaged copy: re-download or re-create it)"
        )
    };
    // The 18-byte header (checked by `read_block`), the deflate data, CRC-32 and ISIZE.
    if block.len() < 18 + 8 {
        return Err(damaged());
    }
    let data = &block[18..block.len() - 8];
    let crc = u32::from_le_bytes(
        block[block.len() - 8..block.len() - 4]
            .try_into()
            .expect("4"),
    );
    let start = out.len();
    out.reserve(MAX_BLOCK);
    let mut written = 0usize;
    // SAFETY: the decompressor is live and used by this thread alone; the input is the
    // block's whole deflate data; the output has MAX_BLOCK bytes reserved past `start`
    // and libdeflate writes at most that.
    let r = unsafe {
        libdeflate_sys::libdeflate_deflate_decompress(
            inflater.0,
            data.as_ptr().cast(),
            data.len(),
            out.as_mut_ptr().add(start).cast(),
            MAX_BLOCK,
            &mut written,
        )
    };
    if r != libdeflate_sys::libdeflate_result_LIBDEFLATE_SUCCESS {
        return Err(damaged());
    }
    // SAFETY: libdeflate initialised `written` bytes after `start`.
    unsafe { out.set_len(start + written) };
    // SAFETY: a plain checksum over initialised bytes.
    let got = unsafe { libdeflate_sys::libdeflate_crc32(0, out[start..].as_ptr().cast(), written) };
    if got != crc {
        out.truncate(start);
        return Err(damaged());
    }
    Ok(())
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A bgzipped file written by htslib, read back from its start and from a line in
    /// a later block: the same lines as the plain text, `\r\n` ends dropped, a last
    /// line without `\n` kept.
    #[test]
    fn lines_match_the_text_from_any_virtual_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.txt.gz");
        let mut text = Vec::new();
        for i in 0..40_000u32 {
            let width = (i * 7919 % 300) as usize;
            write!(text, "line {i} {}", "x".repeat(width)).unwrap();
            text.extend_from_slice(if i % 5 == 0 { b"\r\n" } else { b"\n" });
        }
        text.extend_from_slice(b"last without newline");
        bgzip(&path, &text);
        let want: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .collect();
        for workers in [1, 3] {
            lines_from_offsets(&path, &want, workers);
        }
    }

    /// [`lines_match_the_text_from_any_virtual_offset`] with `workers` threads.
    fn lines_from_offsets(path: &Path, want: &[&[u8]], workers: usize) {
        let mut lines = InflatedLines::start(path, 0, false, workers).unwrap();
        let mut got = Vec::new();
        while lines.advance().unwrap() {
            got.push(lines.line().to_vec());
            assert_eq!(
                lines.unterminated(),
                got.len() == want.len(),
                "{}",
                got.len()
            );
        }
        assert_eq!(got.len(), want.len());
        assert!(got.iter().zip(want).all(|(g, w)| g == w));

        // From the start of line 30,000, found with htslib's own reader.
        let (voffset, skipped) = htslib_offset_after(path, 30_000);
        let mut lines = InflatedLines::start(path, voffset, false, workers).unwrap();
        let mut n = skipped;
        while lines.advance().unwrap() {
            assert_eq!(lines.line(), want[n]);
            n += 1;
        }
        assert_eq!(n, want.len());
    }

    /// A flipped byte in a block and a cut-short file are errors, never fewer lines.
    #[test]
    fn damage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.txt.gz");
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("{i}\t{}\n", i * 31).into_bytes())
            .collect();
        bgzip(&path, &text);
        let good = std::fs::read(&path).unwrap();
        let read_all = |bytes: &[u8], workers| {
            std::fs::write(&path, bytes).unwrap();
            let mut lines = InflatedLines::start(&path, 0, false, workers).unwrap();
            loop {
                match lines.advance() {
                    Ok(true) => {}
                    Ok(false) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
        };
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x40;
        for workers in [1, 3] {
            assert!(read_all(&good, workers).is_ok());
            let e = read_all(&flipped, workers).unwrap_err();
            assert!(e.contains("truncated or corrupt"), "{e}");
            let e = read_all(&good[..good.len() - 100], workers).unwrap_err();
            assert!(e.contains("truncated or corrupt"), "{e}");
        }
    }

    fn bgzip(path: &Path, text: &[u8]) {
        use rust_htslib::bgzf::{CompressionLevel, Writer};
        let mut w = Writer::from_path_with_level(path, CompressionLevel::Default).unwrap();
        w.write_all(text).unwrap();
    }

    /// The virtual offset after `n` lines, read with htslib.
    fn htslib_offset_after(path: &Path, n: usize) -> (u64, usize) {
        let fp = crate::hts::HtsFile::open(path).unwrap();
        let mut fp = fp;
        let mut ks = crate::hts::KString::new();
        for _ in 0..n {
            assert!(fp.getline(&mut ks) >= 0);
        }
        (fp.tell().unwrap(), n)
    }
}
