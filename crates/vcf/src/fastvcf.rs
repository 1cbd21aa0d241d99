//! VCF text read line by line: each line goes first to the direct parse (text
//! straight to columns, `direct`); a line it does not take (anything
//! unusual in it) is checked here ([`Lookups::check_line`]: what htslib would drop or
//! turn into missing values quietly) and handed to htslib's `vcf_parse` unchanged, so
//! the values stored are exactly those of the htslib path; the tests hold both.

use crate::error::{printable, Error, Result};
use crate::hts::{HtsFile, KString};
use crate::inflate::InflatedLines;
use crate::schema::{Category, Schema, VcfType};
use rust_htslib::bcf::{self, header::HeaderView};
use rust_htslib::htslib;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the line checks found that htslib's parse alone would lose.
#[derive(Debug, Default)]
pub struct LineFix {
    /// Some value is empty (`0/1::3`, `DP=`): it is rewritten as `.` (missing) first,
    /// since htslib reads an empty Float as 0.
    pub empty_values: bool,
    /// INFO integers past 32 bits (htslib keeps 32 and turns these into missing):
    /// (key, values, `.` as −1).
    pub long_info: Vec<(Vec<u8>, Vec<i64>)>,
}

/// Name lookups the direct parse and the line checks need.
#[derive(Default, Clone)]
pub struct Lookups {
    contigs: HashMap<Vec<u8>, u32>,
    /// FILTER name → htslib id.
    filters: HashMap<Vec<u8>, u32>,
    /// Declared INFO and FORMAT fields (GT included) and their types.
    info: HashMap<Vec<u8>, VcfType>,
    format: HashMap<Vec<u8>, VcfType>,
    samples: std::sync::Arc<[String]>,
}

/// A text VCF (plain or bgzipped) opened with htslib, read a line at a time.
pub struct TextReader {
    fp: HtsFile,
    header: Arc<HeaderView>,
    ks: KString,
    /// `hts_getline`'s result for the line read ahead at open (held in `ks`).
    pending: Option<i32>,
    rec: bcf::Record,
    lookups: Lookups,
    /// Lines inflated ahead on a thread of their own ([`TextReader::inflate_ahead`]),
    /// from the file at `inflate_from` once the first line is asked for.
    ahead: Option<InflatedLines>,
    inflate_from: Option<PathBuf>,
    /// The file is cut short and converted as far as it goes (see `inflate_ahead_cut`).
    cut: bool,
    /// Whether the current line is in `ks` (else it is `ahead`'s).
    line_in_ks: bool,
    /// For bgzipped standard input: `Some(ends with \n)` when the line in `ks` is
    /// the stream's last (see [`HtsFile::ended_with_newline`]).
    ks_end: Option<bool>,
    /// Bgzipped standard input ended inside a BGZF block (found when a read failed):
    /// cut short, as a stream without its end-of-file block is.
    ended_inside_block: bool,
    /// The line in `ks` was given ([`TextReader::set_line`]): read earlier, and how it
    /// ended.
    given: Option<LineEnd>,
    /// Threads that inflate ahead ([`TextReader::inflate_ahead`]).
    inflaters: usize,
}

impl TextReader {
    /// Opens `path` if it is VCF text; `Ok(None)` for BCF or anything else.
    pub fn open(path: &Path) -> Result<Option<TextReader>> {
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::Open {
                path: path.into(),
                msg: "path contains a NUL byte".into(),
            });
        }
        let Some(mut fp) = HtsFile::open(path) else {
            return Ok(None);
        };
        if !fp.is_vcf_text() {
            return Ok(None);
        }
        if crate::limits::budget_set() && !crate::inputs::is_stdin(path) {
            check_header_samples(path)?;
        }
        // SAFETY: the file is open; the header is checked for null and owned by the
        // HeaderView made from it.
        unsafe {
            let hdr = htslib::bcf_hdr_read(fp.as_ptr());
            if hdr.is_null() {
                return Err(Error::Header {
                    path: path.into(),
                    msg: match diagnose_header(path) {
                        Some(why) => why,
                        None => format!(
                            "no valid VCF header (## meta lines, then the #CHROM line){}",
                            crate::truncation::truncation_hint(path)
                        ),
                    },
                });
            }
            // The first record, read now: a FORMAT/GT it uses but the header does not
            // declare is declared before the schema is read (GT's meaning is fixed by
            // the VCF spec, and htslib would read it as a string otherwise).
            let mut ks = KString::new();
            let mut pending = fp.getline(&mut ks);
            while pending >= 0 && ks.bytes().is_empty() {
                pending = fp.getline(&mut ks);
            }
            let uses_gt = pending >= 0
                && ks
                    .bytes()
                    .split(|&b| b == b'\t')
                    .nth(8)
                    .is_some_and(|f| f.split(|&b| b == b':').any(|k| k == b"GT"));
            if uses_gt
                && (*hdr).n[htslib::BCF_DT_SAMPLE as usize] > 0
                && crate::schema::declare_gt(hdr)
            {
                tracing::warn!(
                    "{}: FORMAT/GT is not declared in the header; it is read as the genotype \
                     (the VCF spec fixes its meaning)",
                    path.display()
                );
            }
            let header = Arc::new(HeaderView::from_ptr(hdr));
            let rec = header.empty_record();
            let mut contigs = HashMap::new();
            for rid in 0..header.contig_count() {
                if let Some(name) = crate::schema::contig_name(&header, rid) {
                    contigs.insert(name.to_vec(), rid);
                }
            }
            Ok(Some(TextReader {
                fp,
                header,
                ks,
                pending: Some(pending),
                rec,
                lookups: Lookups {
                    contigs,
                    ..Lookups::default()
                },
                ahead: None,
                inflate_from: None,
                cut: false,
                line_in_ks: true,
                ks_end: None,
                given: None,
                inflaters: 1,
                ended_inside_block: false,
            }))
        }
    }

    /// Learns the FILTER ids and field types once the schema is known.
    pub fn set_schema(&mut self, schema: &Schema) {
        let lk = &mut self.lookups;
        for f in &schema.filters {
            if let Ok(id) = self.header.name_to_id(f.id.as_bytes()) {
                lk.filters.insert(f.id.as_bytes().to_vec(), id.0);
            }
        }
        for f in &schema.fields {
            let map = match f.category {
                Category::Info => &mut lk.info,
                Category::Format => &mut lk.format,
            };
            map.insert(f.name.as_bytes().to_vec(), f.ty);
        }
        if schema.has_gt {
            lk.format.insert(b"GT".to_vec(), VcfType::String);
        }
        lk.samples = schema.samples.clone();
    }

    /// Inflates the rest of a bgzipped `path` on a thread of its own, ahead of the
    /// parse (see `inflate`), from the first line read after this call: a stream of
    /// many inputs, each opened up front, runs one such thread at a time. Plain text,
    /// plain gzip and standard input stay with htslib, as does a file that cannot be
    /// opened again (said in the log).
    /// `workers` threads inflate (see `inflate`).
    pub fn inflate_ahead(&mut self, path: &Path, workers: usize) {
        self.inflaters = workers;
        self.start_inflate_ahead(path, false)
    }

    /// [`TextReader::inflate_ahead`] for a file known cut short whose records are
    /// converted as far as they go (`--allow-truncated`): a last, partial BGZF block
    /// ends the stream instead of failing it.
    pub fn inflate_ahead_cut(&mut self, path: &Path) {
        self.start_inflate_ahead(path, true)
    }

    fn start_inflate_ahead(&mut self, path: &Path, cut: bool) {
        self.cut |= cut;
        if self.fp.is_bgzf() && !crate::inputs::is_stdin(path) {
            self.inflate_from = Some(path.to_path_buf());
        }
    }

    /// Starts the inflating thread [`TextReader::inflate_ahead`] asked for, where the
    /// reading stopped.
    fn start_inflating(&mut self) {
        let Some(path) = self.inflate_from.take() else {
            return;
        };
        let Some(voffset) = self.fp.tell() else {
            return;
        };
        match InflatedLines::start(&path, voffset, self.cut, self.inflaters) {
            Ok(lines) => self.ahead = Some(lines),
            Err(e) => tracing::debug!("{}: inflating on the reading thread ({e})", path.display()),
        }
    }

    /// CHROM of the line read ahead at open, if any.
    pub fn pending_contig(&self) -> Option<String> {
        self.pending.filter(|&r| r >= 0)?;
        let line = self.ks.bytes();
        let chrom = line.split(|&b| b == b'\t').next()?;
        (!chrom.is_empty()).then(|| String::from_utf8_lossy(chrom).into_owned())
    }

    /// The file's header.
    pub fn header(&self) -> &HeaderView {
        &self.header
    }

    /// Lookups for the direct parse.
    pub fn lookups(&self) -> &Lookups {
        &self.lookups
    }

    /// The open file, its header and the lookups, for a reader that seeks by index
    /// (`pieces`), so the header is not read twice (0.1 s at 500,000 samples). The
    /// header comes back as the only handle to it.
    pub(crate) fn into_parts(self) -> (HtsFile, HeaderView, Lookups) {
        let TextReader {
            fp,
            header,
            lookups,
            rec,
            ..
        } = self;
        drop(rec); // the record holds a handle to the header
        let header = Arc::try_unwrap(header).unwrap_or_else(|shared| (*shared).clone());
        (fp, header, lookups)
    }

    /// The current line.
    pub fn line(&self) -> &[u8] {
        match &self.ahead {
            Some(ahead) if !self.line_in_ks => ahead.line(),
            _ => self.ks.bytes(),
        }
    }

    /// Reads the next non-empty line; `Ok(false)` at end of file.
    pub fn next_line(&mut self, path: &Path, record_no: u64) -> Result<bool> {
        self.given = None;
        loop {
            let r = match (self.pending.take(), &mut self.ahead) {
                (Some(r), _) => r,
                (None, Some(ahead)) => {
                    self.line_in_ks = false;
                    match ahead.advance() {
                        Ok(true) if ahead.line().is_empty() => continue,
                        Ok(true) => {
                            crate::limits::check_line(path, record_no + 1, ahead.line())?;
                            return Ok(true);
                        }
                        Ok(false) => return Ok(false),
                        Err(msg) => {
                            return Err(Error::Record {
                                path: path.into(),
                                record: record_no + 1,
                                locus: "reading".into(),
                                msg,
                            })
                        }
                    }
                }
                (None, None) if self.inflate_from.is_some() => {
                    self.start_inflating();
                    continue;
                }
                (None, None) => self.fp.getline(&mut self.ks),
            };
            self.line_in_ks = true;
            if r == -1 {
                return Ok(false);
            }
            if r < -1 {
                // A file cut short was found before reading (`truncation`); standard
                // input only shows it here.
                if crate::inputs::is_stdin(path) && self.fp.ended_inside_block() {
                    self.ended_inside_block = true;
                    return Ok(false);
                }
                return Err(Error::Record {
                    path: path.into(),
                    record: record_no + 1,
                    locus: "reading".into(),
                    msg: "the compressed data is truncated or corrupt".into(),
                });
            }
            if !self.ks.bytes().is_empty() {
                // Standard input is read once: whether its last line was cut is seen
                // now (a file cut short was found before reading, see `truncation`).
                if crate::inputs::is_stdin(path) {
                    self.ks_end = self.fp.ended_with_newline();
                }
                crate::limits::check_line(path, record_no + 1, self.ks.bytes())?;
                return Ok(true);
            }
        }
    }

    /// Makes `line`, read earlier (ended by `\n`, or the input's last line without it:
    /// `unterminated`), the current line: one read ahead of the parse (`lines`) that
    /// goes through the general path here.
    pub fn set_line(&mut self, line: &[u8], unterminated: bool) {
        self.ks.set(line);
        self.line_in_ks = true;
        self.given = Some(match unterminated {
            true => LineEnd::Unterminated,
            false => LineEnd::Terminated,
        });
    }

    /// Whether lines come from svar2's own inflating thread (a bgzipped file), which
    /// knows where each one ends: only such lines are parsed ahead.
    pub fn reads_ahead(&self) -> bool {
        self.ahead.is_some() || self.inflate_from.is_some()
    }

    /// Whether the input was read to its end and lacks the BGZF end-of-file block:
    /// standard input cut short (a file is checked before it is read, see
    /// `truncation`).
    pub fn stream_cut_short(&self, path: &Path) -> bool {
        crate::inputs::is_stdin(path) && (self.fp.lacks_eof_block() || self.ended_inside_block)
    }

    /// Whether the current line is the input's last and known to end without `\n`
    /// (read ahead: the file was cut in the middle of it).
    pub fn unterminated(&self) -> bool {
        if let Some(end) = self.given {
            return end == LineEnd::Unterminated;
        }
        match &self.ahead {
            Some(a) if !self.line_in_ks => a.unterminated(),
            _ => self.ks_end == Some(false),
        }
    }

    /// How the current line, which failed to parse, ends: reads on to find out
    /// (the reading stops at this error anyway).
    pub fn line_end(&mut self, path: &Path) -> LineEnd {
        if let Some(end) = self.given {
            return end;
        }
        if self.unterminated() {
            return LineEnd::Unterminated;
        }
        if (self.ahead.is_some() && !self.line_in_ks) || self.ks_end == Some(true) {
            return LineEnd::Terminated; // it had its `\n`
        }
        let mut scratch = KString::new();
        loop {
            match self.fp.getline(&mut scratch) {
                -1 => break,
                r if r < -1 => return LineEnd::Terminated,
                _ if scratch.bytes().is_empty() => continue,
                _ => return LineEnd::Terminated,
            }
        }
        // The last line: a bgzipped stream's last block or a plain file's last byte
        // shows whether it ends with `\n`.
        if let Some(newline) = self.fp.ended_with_newline() {
            return match newline {
                true => LineEnd::Terminated,
                false => LineEnd::Unterminated,
            };
        }
        if crate::inputs::is_stdin(path) || self.fp.is_compressed() {
            return LineEnd::Last;
        }
        match last_byte(path) {
            Some(b'\n') => LineEnd::Terminated,
            Some(_) => LineEnd::Unterminated,
            None => LineEnd::Last,
        }
    }

    /// Parses the current line with htslib (the general path); the [`LineFix`] carries
    /// what htslib could not hold, for the extractor.
    pub fn parse_line(&mut self, path: &Path, record_no: u64) -> Result<(&bcf::Record, LineFix)> {
        if let (Some(ahead), false) = (&self.ahead, self.line_in_ks) {
            // Moved into `ks` with how it ends, which the inflating reader knows.
            self.given = Some(match ahead.unterminated() {
                true => LineEnd::Unterminated,
                false => LineEnd::Terminated,
            });
            self.ks.set(ahead.line());
            self.line_in_ks = true;
        }
        let fix = parse_general(&self.lookups, &mut self.ks, &self.header, &mut self.rec).map_err(
            |msg| {
                // htslib's parse has written NULs over the tabs it read past.
                let line = self.ks.bytes();
                let mut cols = line.split(|&b| b == b'\t' || b == 0);
                let chrom = printable(cols.next().unwrap_or(b"?"));
                let pos = printable(cols.next().unwrap_or(b"?"));
                Error::Record {
                    path: path.into(),
                    record: record_no + 1,
                    locus: format!("{chrom}:{pos}"),
                    msg,
                }
            },
        )?;
        Ok((&self.rec, fix))
    }
}

/// How a line that failed to parse ends (see [`TextReader::line_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnd {
    /// With `\n`, or more lines follow: the failure is the line's own.
    Terminated,
    /// The input's last line, whose end is not known (standard input, compressed).
    Last,
    /// The input's last line, without `\n`: the input was cut in the middle of it.
    Unterminated,
}

impl LineEnd {
    /// What to add to the line's own failure: that the input was cut short there.
    pub fn note(self) -> Option<&'static str> {
        match self {
            LineEnd::Terminated => None,
            LineEnd::Last => Some(
                "this is the input's last line: the input most likely ends in the middle of \
                 a record, i.e. it was cut short (re-download or re-create it)",
            ),
            LineEnd::Unterminated => Some(
                "this is the input's last line and it has no newline: if the input ends in \
                 the middle of this record, it was cut short (re-download or re-create it)",
            ),
        }
    }
}

/// The last byte of a file, if it can be read.
fn last_byte(path: &Path) -> Option<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    f.seek(SeekFrom::End(-1)).ok()?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b).ok()?;
    Some(b[0])
}

/// The `#CHROM` line checked against the memory budget before htslib parses the
/// header ([`crate::limits::check_header_samples`]); read through a handle of its
/// own (standard input cannot be read twice, and is not checked).
fn check_header_samples(path: &Path) -> Result<()> {
    let Some(mut fp) = HtsFile::open(path) else {
        return Ok(());
    };
    let mut ks = KString::new();
    while fp.getline(&mut ks) >= 0 {
        let line = ks.bytes();
        if line.starts_with(b"#CHROM") {
            return crate::limits::check_header_samples(path, line);
        }
        if !line.starts_with(b"#") {
            break;
        }
    }
    Ok(())
}

/// Why htslib refused a text header, found by reading it again: the line and what
/// is wrong with it, for the cases users meet. `None` when nothing is recognised.
fn diagnose_header(path: &Path) -> Option<String> {
    let mut fp = HtsFile::open(path)?;
    let mut ks = KString::new();
    let mut lines: Vec<Vec<u8>> = Vec::new();
    // The header only, and at most 1 MB of it.
    let mut total = 0;
    while fp.getline(&mut ks) >= 0 && total < 1 << 20 {
        let line = ks.bytes().to_vec();
        total += line.len();
        let last = !line.starts_with(b"#") || line.starts_with(b"#CHROM");
        lines.push(line);
        if last {
            break;
        }
    }
    let text = printable;
    let Some(at) = lines.iter().position(|l| l.starts_with(b"#CHROM")) else {
        let n = lines.iter().take_while(|l| l.starts_with(b"##")).count();
        return Some(match lines.get(n) {
            Some(l) => format!(
                "line {}: `{}` comes where the #CHROM line should (after the ## lines); \
                 add the #CHROM header line",
                n + 1,
                text(&l[..l.len().min(60)])
            ),
            None => "no #CHROM line after the ## lines: the header is incomplete".into(),
        });
    };
    let line = &lines[at];
    let cols: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    let fixed = [
        "#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO",
    ];
    if cols.len() < 8 {
        return Some(format!(
            "line {} (#CHROM): {} tab-separated column(s) where VCF has at least 8 ({}): \
             are the columns separated by spaces?",
            at + 1,
            cols.len(),
            fixed.join(" ")
        ));
    }
    if let Some(k) = (9..cols.len()).find(|&k| cols[k].is_empty()) {
        return Some(format!(
            "line {} (#CHROM): sample column {} has an empty name{}: remove it (e.g. \
             `bcftools reheader`, or `sed '{}s/\\t*$//'`)",
            at + 1,
            k - 8,
            if k + 1 == cols.len() {
                " (a trailing tab)"
            } else {
                ""
            },
            at + 1
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = cols.iter().skip(9).find(|s| !seen.insert(**s)) {
        return Some(format!(
            "line {} (#CHROM): sample `{}` appears twice; sample names must be unique \
             (rename one with `bcftools reheader -s`)",
            at + 1,
            text(dup)
        ));
    }
    None
}

/// The general path for one text line (in `ks`): the line checks, empty values made
/// `.`, then htslib's parser into `rec`, unpacked. An `Err` is the message for the
/// record.
pub(crate) fn parse_general(
    lk: &Lookups,
    ks: &mut KString,
    header: &HeaderView,
    rec: &mut bcf::Record,
) -> std::result::Result<LineFix, String> {
    let fix = lk.check_line(ks.bytes())?;
    if fix.empty_values {
        let filled = fill_empty_values(ks.bytes());
        ks.set(&filled);
    }
    // SAFETY: ks holds the line; rec was made for this header.
    let r = unsafe {
        let r = htslib::vcf_parse(ks.raw(), header.as_ptr(), rec.inner);
        if r == 0 {
            htslib::bcf_unpack(rec.inner, htslib::BCF_UN_ALL as i32);
        }
        r
    };
    if r != 0 {
        return Err("htslib could not parse the record".into());
    }
    Ok(fix)
}

/// The line with every empty INFO value (`DP=`) and every empty FORMAT value
/// (`0/1::3`, a trailing `:`, an empty sample column) written as `.`.
fn fill_empty_values(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len() + 16);
    for (c, col) in line.split(|&b| b == b'\t').enumerate() {
        if c > 0 {
            out.push(b'\t');
        }
        match c {
            7 => {
                for (k, item) in col.split(|&b| b == b';').enumerate() {
                    if k > 0 {
                        out.push(b';');
                    }
                    out.extend_from_slice(item);
                    if item.last() == Some(&b'=') {
                        out.push(b'.');
                    }
                }
            }
            c if c >= 9 => {
                for (k, v) in col.split(|&b| b == b':').enumerate() {
                    if k > 0 {
                        out.push(b':');
                    }
                    if v.is_empty() {
                        out.push(b'.');
                    } else {
                        out.extend_from_slice(v);
                    }
                }
            }
            _ => out.extend_from_slice(col),
        }
    }
    out
}

/// Comma-separated integers of any 64-bit size (`.` as −1); `None` if one is not.
fn parse_longs(v: &[u8]) -> Option<Vec<i64>> {
    v.split(|&b| b == b',')
        .map(|x| match x {
            b"." => Some(-1),
            x => std::str::from_utf8(x).ok()?.parse::<i64>().ok(),
        })
        .collect()
}

impl Lookups {
    /// A contig's htslib id.
    pub(crate) fn contig_id(&self, name: &[u8]) -> Option<u32> {
        self.contigs.get(name).copied()
    }

    /// A FILTER's htslib id.
    pub(crate) fn filter_id(&self, name: &[u8]) -> Option<u32> {
        self.filters.get(name).copied()
    }

    /// What htslib would silently drop or turn into missing values: the wrong number
    /// of sample columns, fields the header does not declare, values that are not of
    /// their declared type, calls that are not genotypes. Checked on lines that take
    /// htslib's general path (the direct parse refuses anything unusual itself).
    pub fn check_line(&self, line: &[u8]) -> std::result::Result<LineFix, String> {
        let mut fix = LineFix::default();
        let text = printable;
        // The fixed columns and FORMAT; the calls stay one slice, scanned once below.
        let cols: Vec<&[u8]> = line.splitn(10, |&b| b == b'\t').collect();
        let n = self.samples.len();
        let calls = cols.get(9).copied();
        let sample_columns = |calls: Option<&[u8]>| {
            calls.map_or(0, |c| 1 + c.iter().filter(|&&b| b == b'\t').count())
        };
        if line.starts_with(b"#") {
            return Err(
                "a `#` line among the records (a comment, or the header of a second \
                        file joined with `cat`): VCF allows them only in the header; join \
                        files with `bcftools concat`, or drop the line"
                    .into(),
            );
        }
        if cols.len() < 8 {
            return Err(format!(
                "{} tab-separated columns; a VCF record has at least 8 (is the file \
                 space-separated or cut short?)",
                cols.len()
            ));
        }
        if cols[1].is_empty() || !cols[1].iter().all(u8::is_ascii_digit) {
            return Err(format!(
                "POS `{}` is not a position (a whole number, 1-based)",
                text(cols[1])
            ));
        }
        if n == 0 && calls.is_some() {
            return Err(format!(
                "{} sample column(s), but the header names no samples",
                sample_columns(calls)
            ));
        }
        if n > 0 && calls.is_none() {
            return Err(format!(
                "0 sample column(s), but the header names {n} sample(s)"
            ));
        }
        if cols[6] != b"." {
            for name in cols[6].split(|&b| b == b';') {
                if !self.filters.contains_key(name) {
                    return Err(format!(
                        "FILTER {0} is not declared in the header: declare it (a ##FILTER \
                         line, `bcftools annotate -h`) or drop it (`bcftools annotate -x \
                         FILTER/{0}`)",
                        text(name)
                    ));
                }
            }
        }
        let info = cols[7];
        if info != b"." {
            for item in info.split(|&b| b == b';').filter(|i| !i.is_empty()) {
                let (key, value) = match item.iter().position(|&b| b == b'=') {
                    Some(e) => (&item[..e], Some(&item[e + 1..])),
                    None => (item, None),
                };
                let Some(&ty) = self.info.get(key) else {
                    return Err(format!(
                        "INFO/{0} is not declared in the header: declare it (a ##INFO line, \
                         `bcftools annotate -h`) or drop it (`bcftools annotate -x INFO/{0}`)",
                        text(key)
                    ));
                };
                match value {
                    Some(b"") if ty != VcfType::Flag => fix.empty_values = true,
                    Some(v) if ty == VcfType::Integer && scan_ints(v, 0) != Some(v.len()) => {
                        // htslib holds 32 bits; a wider INFO integer is kept as i64.
                        match parse_longs(v) {
                            Some(vals) => fix.long_info.push((key.to_vec(), vals)),
                            None => {
                                check_values(ty, v)
                                    .map_err(|m| format!("INFO/{}: {m}", text(key)))?;
                            }
                        }
                    }
                    Some(v) => {
                        check_values(ty, v).map_err(|m| format!("INFO/{}: {m}", text(key)))?
                    }
                    None => {}
                }
            }
        }
        if n == 0 || cols[8] == b"." {
            return Ok(fix);
        }
        let keys: Vec<&[u8]> = cols[8].split(|&b| b == b':').collect();
        let mut checks = Vec::with_capacity(keys.len());
        for key in &keys {
            let Some(&ty) = self.format.get(*key) else {
                return Err(format!(
                    "FORMAT/{0} is not declared in the header: declare it (a ##FORMAT line, \
                     `bcftools annotate -h`) or drop it (`bcftools annotate -x FORMAT/{0}`)",
                    text(key)
                ));
            };
            checks.push(if *key == b"GT" { None } else { Some(ty) });
        }
        // Every value of every sample, in one pass over the calls: this runs for each
        // value of a busy file, so messages are built only on failure.
        let calls = calls.expect("checked above");
        let wrong_count = || {
            format!(
                "{} sample column(s), but the header names {n} sample(s)",
                sample_columns(Some(calls))
            )
        };
        // The widest value of each key over the samples: htslib lays every sample out
        // that wide (`limits::check_format_widths`).
        let mut widest = vec![0usize; keys.len()];
        let (mut k, mut i, mut p) = (0, 0, 0);
        loop {
            if k >= n {
                return Err(wrong_count());
            }
            // Integers and genotypes are scanned up to the delimiter in one go.
            let end = match checks.get(i) {
                Some(None) => scan_gt(calls, p),
                Some(Some(VcfType::Integer)) => scan_ints(calls, p),
                _ => Some(value_end(calls, p)),
            };
            let end = end.filter(|&e| matches!(calls.get(e), None | Some(b':' | b'\t')));
            let v = &calls[p..end.unwrap_or_else(|| value_end(calls, p))];
            let checked = match (checks.get(i), end) {
                (None, _) => Err(format!("more values than FORMAT keys ({})", text(cols[8]))),
                // An empty value (`0/1::3`) is missing, as htslib reads it.
                (Some(_), _) if v.is_empty() => {
                    fix.empty_values = true;
                    Ok(())
                }
                // Scanned whole above.
                (Some(None | Some(VcfType::Integer)), Some(_)) => Ok(()),
                (Some(None), None) => check_gt(v),
                (Some(Some(ty)), _) => check_values(*ty, v),
            };
            checked.map_err(|m| match checks.get(i) {
                Some(_) => format!("sample {}, FORMAT/{}: {m}", self.samples[k], text(keys[i])),
                None => format!("sample {}: {m}", self.samples[k]),
            })?;
            let width = match checks[i] {
                None => 1 + v.iter().filter(|&&b| b == b'/' || b == b'|').count(),
                Some(VcfType::String | VcfType::Character) => v.len(),
                Some(_) => 1 + memchr::memchr_iter(b',', v).count(),
            };
            widest[i] = widest[i].max(width);
            let e = p + v.len();
            match calls.get(e) {
                None => {
                    k += 1;
                    break;
                }
                Some(b'\t') => (k, i) = (k + 1, 0),
                _ => i += 1,
            }
            p = e + 1;
        }
        if k != n {
            return Err(wrong_count());
        }
        let widths = keys
            .iter()
            .zip(&checks)
            .zip(widest)
            .map(|((key, check), width)| {
                let bytes = match check {
                    Some(VcfType::String | VcfType::Character) => 1,
                    _ => 4,
                };
                (*key, width, bytes)
            });
        crate::limits::check_format_widths(widths, n)?;
        Ok(fix)
    }
}

/// Each comma-separated value of `v` is `.` or of type `ty`.
fn check_values(ty: VcfType, v: &[u8]) -> std::result::Result<(), String> {
    let ok = match ty {
        VcfType::Integer => scan_ints(v, 0) == Some(v.len()),
        VcfType::Float => v.split(|&b| b == b',').all(|x| x == b"." || is_f32(x)),
        VcfType::Flag | VcfType::String | VcfType::Character => true,
    };
    if ok {
        return Ok(());
    }
    // Slow path, for the message: find the offending item. Spaces around a number
    // are read past by htslib, as by any number parser.
    for item in v.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
        let good = match ty {
            VcfType::Integer => is_i32(item),
            _ => is_f32(item),
        };
        if item != b"." && !good {
            return Err(format!(
                "`{}` is not {} (declared Type={ty:?}; `.` marks a missing value)",
                printable(item),
                match ty {
                    VcfType::Integer => "a 32-bit integer",
                    _ => "a number",
                }
            ));
        }
    }
    Ok(())
}

/// Where a comma-separated list of `.` or i32 values starting at `i` ends (the first
/// byte after it), or `None` if an item is malformed. One pass over the bytes: this
/// runs for every FORMAT integer of a busy file.
#[inline]
fn scan_ints(v: &[u8], mut i: usize) -> Option<usize> {
    let n = v.len();
    loop {
        let s = i;
        if i < n && (v[i] == b'-' || v[i] == b'+') {
            i += 1;
        }
        let d = i;
        while i < n && v[i].is_ascii_digit() {
            i += 1;
        }
        let ok = match i - d {
            0 => {
                i == s && i < n && v[i] == b'.' && {
                    i += 1;
                    true
                }
            }
            1..=9 => true,
            10 => is_i32(&v[s..i]),
            _ => false,
        };
        if !ok {
            return None;
        }
        if i == n || v[i] != b',' {
            return Some(i);
        }
        i += 1;
    }
}

/// The end of the FORMAT value starting at `i`: the next `:` or tab, or the end.
#[inline]
pub(crate) fn value_end(v: &[u8], i: usize) -> usize {
    v[i..]
        .iter()
        .position(|&b| b == b':' || b == b'\t')
        .map_or(v.len(), |e| i + e)
}

/// Where a genotype starting at `i` ends, or `None` if it is malformed: alleles (`.`
/// or up to 9 digits) joined by single `/` or `|`.
#[inline]
fn scan_gt(v: &[u8], mut i: usize) -> Option<usize> {
    let (mut run, mut dot) = (0usize, false);
    while let Some(&c) = v.get(i) {
        match c {
            b'0'..=b'9' if !dot && run < 9 => run += 1,
            b'.' if run == 0 && !dot => dot = true,
            b'/' | b'|' if run > 0 || dot => (run, dot) = (0, false),
            _ => break,
        }
        i += 1;
    }
    (run > 0 || dot).then_some(i)
}

/// `[+-]digits` within i32 (the parse runs only for ten-digit values).
fn is_i32(x: &[u8]) -> bool {
    let d = match x.first() {
        Some(b'-' | b'+') => &x[1..],
        _ => x,
    };
    !d.is_empty()
        && d.len() <= 10
        && d.iter().all(u8::is_ascii_digit)
        && (d.len() < 10 || std::str::from_utf8(x).is_ok_and(|s| s.parse::<i32>().is_ok()))
}

/// A plain decimal (`-0.25`, `3.`) by byte scan; anything else (exponents, `nan`,
/// `inf`) by the full parse.
fn is_f32(x: &[u8]) -> bool {
    let d = match x.first() {
        Some(b'-' | b'+') => &x[1..],
        _ => x,
    };
    let mut dots = 0;
    let plain = d.iter().all(|&c| {
        dots += usize::from(c == b'.');
        c.is_ascii_digit() || c == b'.'
    }) && dots <= 1
        && d.iter().any(u8::is_ascii_digit);
    plain || std::str::from_utf8(x).is_ok_and(|s| s.parse::<f32>().is_ok())
}

/// A genotype: allele indexes or `.`, separated by `/` or `|`.
fn check_gt(v: &[u8]) -> std::result::Result<(), String> {
    if scan_gt(v, 0) == Some(v.len()) {
        Ok(())
    } else if matches!(v.first(), Some(b'/' | b'|')) && scan_gt(v, 1) == Some(v.len()) {
        Err(format!(
            "`{}` starts with a phasing mark (VCF 4.4's explicit phasing of the first \
             allele), which htslib (and so bcftools) cannot read yet: drop the leading `{}`",
            printable(v),
            v[0] as char
        ))
    } else {
        Err(format!(
            "`{}` is not a genotype (allele indexes or `.`, separated by `/` or `|`)",
            printable(v)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genotype_and_integer_scans_stop_at_the_delimiter() {
        let whole =
            |f: fn(&[u8], usize) -> Option<usize>, v: &str| f(v.as_bytes(), 0) == Some(v.len());
        for ok in ["0", "0/1", "1|0", "./.", ".|1", "0/1/2", "123456789/0"] {
            assert!(whole(scan_gt, ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "0/",
            "0//1",
            "0/x",
            "x",
            "..",
            "1.",
            "1234567890/0",
            "0 /1",
            "|0|1",
        ] {
            assert!(!whole(scan_gt, bad), "{bad}");
        }
        assert_eq!(scan_gt(b"0/1:5", 0), Some(3));
        for ok in ["0", "-3", "+7", ".", "1,.,-3", "2147483647", "-2147483648"] {
            assert!(whole(scan_ints, ok), "{ok}");
        }
        for bad in [
            "",
            "-",
            "1,,2",
            "1,",
            "2147483648",
            "99999999999",
            "1.5",
            "zz",
            "1x",
        ] {
            assert!(!whole(scan_ints, bad), "{bad}");
        }
        assert_eq!(scan_ints(b"1,2:0/1", 0), Some(3));
    }
}
