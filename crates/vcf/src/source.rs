//! Reading a VCF/BCF file record by record, in order, into a [`Batch`] (the streaming
//! reader): BCF through htslib's record reader, VCF text line by line (`fastvcf`),
//! with the checks only a sequential reader can make (sortedness, truncation).

use crate::bcf_stream::{BcfStream, OpenError, ReadError};
use crate::columns::RecordColumns;
use crate::direct::Direct;
use crate::error::{Error, Result};
use crate::extract::Extractor;
use crate::fastvcf::{LineEnd, TextReader};
use crate::ragged::Batch;
use crate::schema::{contig_name, Schema};
use crate::subset::Subset;
use crate::truncation::truncation_hint;
use rust_htslib::bcf;
use rust_htslib::htslib;
use std::path::{Path, PathBuf};

/// Silences htslib's own stderr messages: svar2 reports every failure itself, with
/// the file and record. `-v` leaves them on for debugging.
pub fn quiet_htslib() {
    // SAFETY: sets a global log level; no pointers involved.
    unsafe { htslib::hts_set_log_level(htslib::htsLogLevel_HTS_LOG_OFF) };
}

/// Encoding threads from which bgzipped VCF text is inflated on a thread of its own,
/// in batches of blocks (`inflate`): the parse, which every chunk row waits on, then
/// does not inflate. At `--threads 2` on two cores: fmt2000.vcf.gz 0.74 -> 0.65 s,
/// fmt500 0.31 -> 0.28 s, w500k 0.96 -> 0.89 s (medians), sim.vcf.gz unchanged.
const INFLATE_AHEAD_THREADS: usize = 2;

/// Encoding threads from which a bgzipped BCF read as one stream is inflated on
/// threads of its own (`bcf_stream`), as htslib's helper thread did before (unnamed,
/// and one for all the blocks). At `--threads 2` on two cores the reading thread's
/// work is no longer the bound, and the hand-off and the extra copy cost what it
/// saves: fmt2000.bcf 0.95x wall, sim.bcf (GT only, inflating 16x) 1.07x. At 16
/// threads, an unindexed fmt2000.bcf's bound (total CPU / busiest thread) goes from
/// 4.3 to 6.6.
const BCF_INFLATE_THREADS: usize = 4;

/// Threads that inflate bgzipped text ahead for `threads` encoding threads: one up to
/// three, then one per three. Inflate is a fifth to a third of the work of reading
/// VCF text and encoding it, and the parse runs on the encoding threads (`lines`).
fn inflaters(threads: usize) -> usize {
    threads.div_ceil(3).max(1)
}

/// An open VCF/BCF file and its parsed header.
pub struct VcfReader {
    pub path: PathBuf,
    inner: Inner,
    pub schema: Schema,
    /// The last record's (contig, POS) and the contigs already left behind: region
    /// queries on the store assume the records are sorted.
    last: Option<(i32, i64)>,
    left: Vec<bool>,
    /// Contigs met in the records that the header does not declare (the extractor adds
    /// them to the store's list), by store index: named in messages.
    learned: Vec<(u32, String)>,
    /// The user opted in to converting inputs cut short (`--allow-truncated`).
    allow_truncated: bool,
    /// This file lacks the BGZF end-of-file block (found before reading).
    cut: bool,
    /// `bcftools view`'s subsetting, when the conversion asks for it: records are
    /// then read through htslib, and `schema` is the output's.
    subset: Option<Box<Subset>>,
}

/// What one step of reading did.
enum Step {
    Record,
    /// A record the subset leaves out.
    Skipped,
    End,
}

/// Where [`VcfReader::next_text_line`] left the text reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextLine {
    /// A line ended by `\n`.
    Line,
    /// The input's last line, without its `\n` (cut short?): read it here.
    Last,
    /// The end of the input.
    End,
}

/// BCF goes through htslib's record reader; VCF text is read line by line so simple
/// records can skip htslib's full parse (see `fastvcf`).
enum Inner {
    Hts(BcfStream, bcf::Record),
    /// The text, and the direct parse's lookups for the reader's schema.
    Text(Box<TextReader>, Box<Direct>),
    /// Inputs of different samples joined as `bcftools merge` joins them.
    Merge(Box<crate::merge::MergedStream>),
}

impl VcfReader {
    /// Opens a VCF, bgzipped VCF or BCF and reads its header.
    pub fn open(path: &Path, threads: usize) -> Result<VcfReader> {
        if crate::inputs::is_stdin(path) {
            // Standard input is read once: VCF text (plain or bgzipped) only, since
            // telling BCF apart would consume what its reader needs.
            return match TextReader::open(path)? {
                Some(t) => Self::finish_open(path, Self::text(t, path, threads)),
                None => Err(Error::Open {
                    path: path.into(),
                    msg: "standard input is not VCF text: pipe VCF (`bcftools view -Ov`, \
                          plain or bgzipped), or give the BCF file's path"
                        .into(),
                }),
            };
        }
        if !path.exists() {
            return Err(Error::Open {
                path: path.into(),
                msg: "no such file".into(),
            });
        }
        let inner = match TextReader::open(path)? {
            Some(t) => Self::text(t, path, threads),
            None => Self::bcf(Self::open_bcf(path, threads)?),
        };
        Self::finish_open(path, inner)
    }

    /// A BCF reader at its first record.
    fn bcf(reader: BcfStream) -> Inner {
        let rec = reader.empty_record();
        Inner::Hts(reader, rec)
    }

    /// `path` opened by htslib as a BCF, its blocks inflated on threads of their own
    /// from [`BCF_INFLATE_THREADS`] encoding threads on (`bcf_stream`).
    fn open_bcf(path: &Path, threads: usize) -> Result<BcfStream> {
        let workers = match threads >= BCF_INFLATE_THREADS {
            true => inflaters(threads),
            false => 0,
        };
        BcfStream::open(path, workers, false).map_err(|e| Error::Open {
            path: path.into(),
            msg: match e {
                OpenError::Damaged(msg) => msg,
                OpenError::NotBcf(e) => format!(
                    "not a VCF (plain or bgzipped) or BCF file: it does not start with a \
                     VCF header ({e}){}",
                    truncation_hint(path)
                ),
            },
        })
    }

    /// VCF text, bgzipped text inflated ahead on a thread of its own from
    /// [`INFLATE_AHEAD_THREADS`] on.
    fn text(mut t: TextReader, path: &Path, threads: usize) -> Inner {
        if threads >= INFLATE_AHEAD_THREADS {
            t.inflate_ahead(path, inflaters(threads));
        }
        Inner::Text(Box::new(t), Box::default())
    }

    /// Reads the schema from the opened file's header.
    fn finish_open(path: &Path, inner: Inner) -> Result<VcfReader> {
        let header = match &inner {
            Inner::Hts(r, _) => r.header(),
            Inner::Text(t, _) => t.header(),
            Inner::Merge(m) => m.header(),
        };
        let raw = crate::schema::meta_lines(header);
        let schema = Schema::from_header(path, header, &raw)?;
        let mut inner = inner;
        if let Inner::Text(t, direct) = &mut inner {
            t.set_schema(&schema);
            **direct = Direct::for_schema(&schema);
        }
        Ok(Self::reading(path.into(), inner, schema))
    }

    /// A reader of `inner` at its first record.
    fn reading(path: PathBuf, inner: Inner, schema: Schema) -> VcfReader {
        VcfReader {
            path,
            inner,
            schema,
            last: None,
            left: Vec::new(),
            learned: Vec::new(),
            allow_truncated: false,
            cut: false,
            subset: None,
        }
    }

    /// Inputs of different samples read side by side and joined as `bcftools merge`
    /// joins them (`convert --merge`): one stream of records in the merged header.
    /// `workers`: threads merging contigs side by side (indexed inputs), their queued
    /// records holding at most `queue_bytes`.
    pub fn merge(
        paths: &[PathBuf],
        req: crate::merge::MergeRequest,
        workers: usize,
        queue_bytes: u64,
    ) -> Result<VcfReader> {
        let m = crate::merge::MergedStream::open(paths, req, workers, queue_bytes)?;
        let schema = m.schema().clone();
        Ok(Self::reading(
            paths[0].clone(),
            Inner::Merge(Box::new(m)),
            schema,
        ))
    }

    /// Whether this reader joins inputs as `bcftools merge` (see [`VcfReader::merge`]).
    pub fn is_merge(&self) -> bool {
        matches!(self.inner, Inner::Merge(_))
    }

    /// Subsets the records as `bcftools view` would (see [`Subset`]): from here on
    /// the reader's schema is the output's (samples chosen, INFO/AC and AN declared
    /// where they are recounted).
    pub fn set_subset(&mut self, subset: Subset) {
        self.schema = subset.schema.clone();
        self.subset = Some(Box::new(subset));
    }

    /// Whether records are subset.
    pub fn is_subset(&self) -> bool {
        self.subset.is_some()
    }

    /// Converts what this input holds even if it was cut short (`--allow-truncated`):
    /// `cut` says the file was found so before reading (see `truncation`); its last
    /// record is dropped when the cut falls inside it. Standard input is checked at
    /// its end; without this call, a cut there is an error.
    pub fn allow_truncated(&mut self, cut: bool) {
        self.allow_truncated = true;
        self.cut = cut;
        match (&mut self.inner, cut) {
            // Read ahead by svar2's own inflate, which knows where the last line ends
            // (and ends the stream at a last block the cut fell inside).
            (Inner::Text(t, _), true) => t.inflate_ahead_cut(&self.path),
            // A BCF is read again from its start, its blocks inflated by svar2, which
            // tells a damaged block from the cut (htslib's reader where that fails).
            (Inner::Hts(reader, _), true) => match reader.reopen_cut() {
                Ok(Some(reader)) => self.inner = Self::bcf(reader),
                Ok(None) => {}
                // (Said at the first read: a damaged file is not converted as cut.)
                Err(e) => reader.fail(e),
            },
            _ => {}
        }
    }

    /// This reader set up for a conversion on `threads` threads, without reading the
    /// header again (0.1 s at 500,000 samples): VCF text starts inflating ahead where
    /// that count calls for it; a BCF is opened afresh only where it is then piped.
    pub fn for_threads(mut self, threads: usize) -> Result<VcfReader> {
        match &mut self.inner {
            Inner::Text(t, _) => {
                if threads >= INFLATE_AHEAD_THREADS {
                    t.inflate_ahead(&self.path, inflaters(threads));
                }
                Ok(self)
            }
            Inner::Hts(reader, _)
                if threads >= BCF_INFLATE_THREADS
                    && !reader.is_inflated()
                    && !crate::inputs::is_stdin(&self.path) =>
            {
                let mut r = VcfReader::open(&self.path, threads)?;
                if self.allow_truncated {
                    r.allow_truncated(self.cut); // (read again in cut mode where cut)
                }
                if let Some(s) = self.subset.take() {
                    r.schema = self.schema.clone();
                    r.subset = Some(s);
                }
                Ok(r)
            }
            Inner::Hts(..) | Inner::Merge(_) => Ok(self),
        }
    }

    /// The contig of the first record of VCF text (read ahead at open); `None` for
    /// BCF or an empty file.
    pub fn first_text_contig(&self) -> Option<String> {
        match &self.inner {
            Inner::Text(t, _) => t.pending_contig(),
            Inner::Hts(..) | Inner::Merge(_) => None,
        }
    }

    /// An extractor for this file's records into `columns`, by the reader's schema.
    pub fn extractor(&self, columns: &RecordColumns) -> Extractor {
        let header = match &self.subset {
            Some(s) => s.header(),
            None => self.header(),
        };
        Extractor::for_header(header, &self.schema, columns)
    }

    /// Reads records into another schema's columns (the merged schema of a call set
    /// split into files): messages then name its contigs, and the direct parse fills
    /// its fields' slots. The line checks keep this file's own header's keys.
    pub fn use_schema(&mut self, schema: &Schema) {
        self.schema = schema.clone();
        if let Inner::Text(_, direct) = &mut self.inner {
            **direct = Direct::for_schema(schema);
        }
    }

    /// The file's header.
    pub fn header(&self) -> &bcf::header::HeaderView {
        match &self.inner {
            Inner::Hts(r, _) => r.header(),
            Inner::Text(t, _) => t.header(),
            Inner::Merge(m) => m.header(),
        }
    }

    /// Reads the next record into `batch`; `Ok(false)` at end of file. Records must
    /// be sorted (contigs contiguous, positions non-decreasing within each).
    pub fn read_into(
        &mut self,
        ex: &mut Extractor,
        batch: &mut Batch,
        record_no: u64,
    ) -> Result<bool> {
        let read = self
            .read_kept(ex, batch, record_no)
            .map_err(|e| self.reading_error(e))?;
        if !read {
            return Ok(false);
        }
        // (A subset has tested the record kept: it is the last one counted.)
        let kept_no = self.number_in_file(record_no + 1) - 1;
        self.note_order(batch, batch.len() - 1, kept_no)?;
        Ok(true)
    }

    /// The 0-based number in the file of the record read next, for messages, given
    /// the caller's count of the records this reader has handed out: with a subset,
    /// the records it has tested, kept or not (the kept ones are fewer).
    fn number_in_file(&self, record_no: u64) -> u64 {
        self.subset.as_ref().map_or(record_no, |s| s.tested())
    }

    /// A failure between records, said where it happened (after which record) and
    /// whether the file was cut short: an error of [`VcfReader::next_text_line`]'s, once
    /// the records before it are read.
    pub fn reading_error(&self, e: Error) -> Error {
        match e {
            Error::Record {
                path,
                record,
                locus,
                msg,
            } if locus == "reading" => Error::Record {
                locus: match self.last {
                    Some((rid, pos)) => format!("after {}:{pos}", self.contig_label(rid)),
                    None => "first record".into(),
                },
                msg: format!("{msg}{}", truncation_hint(&path)),
                path,
                record,
            },
            e => e,
        }
    }

    /// A store contig's name for messages: the header's, or one the records added.
    fn contig_label(&self, rid: i32) -> String {
        match self.schema.contig_label(rid as i64) {
            "?" => self
                .learned
                .iter()
                .find(|(c, _)| *c as i64 == rid as i64)
                .map_or("?".into(), |(_, name)| name.clone()),
            name => name.to_string(),
        }
    }

    /// Checks that record `i` of `batch`, record `record_no` of the input, follows the
    /// last one in order.
    fn note_order(&mut self, batch: &Batch, i: usize, record_no: u64) -> Result<()> {
        for (c, name) in &batch.new_contigs {
            if !self.learned.iter().any(|(d, _)| d == c) {
                self.learned.push((*c, name.clone()));
            }
        }
        let (rid, pos, _) = batch.loci[i];
        if let Some((last_rid, last_pos)) = self.last {
            let name = |r: i32| self.contig_label(r);
            let unsorted = |msg: String| Error::Record {
                path: self.path.clone(),
                record: record_no + 1,
                locus: format!("{}:{pos}", name(rid)),
                msg: format!(
                    "{msg}: the file is not sorted (sort it with `bcftools sort -Oz -o \
                     sorted.vcf.gz {}`)",
                    self.path.display()
                ),
            };
            if rid == last_rid && pos < last_pos {
                return Err(unsorted(format!("comes after {}:{last_pos}", name(rid))));
            }
            if rid != last_rid {
                let r = rid.max(0) as usize;
                if self.left.get(r).copied().unwrap_or(false) {
                    return Err(unsorted(format!(
                        "{} resumes after {} began",
                        name(rid),
                        name(last_rid)
                    )));
                }
                let l = last_rid.max(0) as usize;
                if self.left.len() <= l.max(r) {
                    self.left.resize(l.max(r) + 1, false);
                }
                self.left[l] = true;
            }
        }
        self.last = Some((rid, pos));
        Ok(())
    }

    /// Whether this reader's lines can be parsed ahead on other threads
    /// ([`crate::lines`]): bgzipped VCF text inflated by svar2, every record kept
    /// (no subset), not converted past a cut.
    pub fn parses_ahead(&self) -> bool {
        match &self.inner {
            Inner::Text(t, _) => t.reads_ahead() && self.subset.is_none() && !self.allow_truncated,
            Inner::Hts(..) | Inner::Merge(_) => false,
        }
    }

    /// A parser of this reader's lines for another thread, leaving its warnings to
    /// `ex` (this reader's extractor).
    pub fn line_parser(&self, ex: &Extractor, columns: &RecordColumns) -> crate::lines::LineParser {
        let Inner::Text(t, _) = &self.inner else {
            unreachable!("lines are parsed ahead only for VCF text (see parses_ahead)")
        };
        crate::lines::LineParser::new(
            self.path.clone(),
            ex.for_lines(t.header(), &self.schema, columns),
            Direct::for_schema(&self.schema),
            t.lookups().clone(),
        )
    }

    /// The current line ([`VcfReader::next_text_line`]).
    pub fn text_line(&self) -> &[u8] {
        match &self.inner {
            Inner::Text(t, _) => t.line(),
            Inner::Hts(..) | Inner::Merge(_) => &[],
        }
    }

    /// Reads the text reader's current line into `batch` as [`VcfReader::read_into`]
    /// would have; `Ok(false)` when it is the input's cut last line, dropped.
    fn read_current(
        &mut self,
        ex: &mut Extractor,
        batch: &mut Batch,
        record_no: u64,
    ) -> Result<bool> {
        match self.parse_current(ex, batch, record_no)? {
            Step::Record => {
                self.note_order(batch, batch.len() - 1, record_no)?;
                Ok(true)
            }
            Step::Skipped | Step::End => Ok(false),
        }
    }

    /// Reads `line`, read earlier and not taken by a parser ahead, into `batch` as
    /// [`VcfReader::read_into`] would have: a line ended by `\n`, or the input's last
    /// line without it (`last`, the one [`TextLine::Last`] left current, copied before
    /// other lines were read here); `Ok(false)` when that one is dropped.
    pub fn read_line(
        &mut self,
        ex: &mut Extractor,
        line: &[u8],
        last: bool,
        batch: &mut Batch,
        record_no: u64,
    ) -> Result<bool> {
        if let Inner::Text(t, _) = &mut self.inner {
            t.set_line(line, last);
        }
        self.read_current(ex, batch, record_no)
    }

    /// Checks the order of the records `from..` of `batch`, the first being record
    /// `record_no`: records parsed ahead, checked as [`VcfReader::read_into`] checks
    /// each.
    pub fn note_order_of(&mut self, batch: &Batch, from: usize, record_no: u64) -> Result<()> {
        for i in from..batch.len() {
            self.note_order(batch, i, record_no + (i - from) as u64)?;
        }
        Ok(())
    }

    /// Reads records until one is kept (every record, without a subset).
    fn read_kept(&mut self, ex: &mut Extractor, batch: &mut Batch, record_no: u64) -> Result<bool> {
        loop {
            match self.read_record(ex, batch, record_no)? {
                Step::Record => return Ok(true),
                Step::Skipped => continue,
                Step::End => return Ok(false),
            }
        }
    }

    fn read_record(
        &mut self,
        ex: &mut Extractor,
        batch: &mut Batch,
        record_no: u64,
    ) -> Result<Step> {
        let record_no = self.number_in_file(record_no);
        let subset = self.subset.as_deref_mut();
        match &mut self.inner {
            Inner::Merge(m) => match m.next_record()? {
                None => Ok(Step::End),
                Some((n, rec)) => ex.extract(&self.path, n, rec, batch).map(|_| Step::Record),
            },
            Inner::Hts(reader, rec) => {
                let last = (record_no > 0).then(|| (rec.rid().unwrap_or(0), rec.pos() + 1));
                let locus = |reader: &BcfStream| match last {
                    Some((rid, pos)) => format!(
                        "after {}:{pos}",
                        String::from_utf8_lossy(contig_name(reader.header(), rid).unwrap_or(b"?"))
                    ),
                    None => "first record".into(),
                };
                match reader.read(rec) {
                    None => Ok(Step::End),
                    Some(Ok(())) => match subset {
                        None => ex
                            .extract(&self.path, record_no, rec, batch)
                            .map(|_| Step::Record),
                        Some(s) => match s.apply(rec)? {
                            None => Ok(Step::Skipped),
                            Some((n, out)) => {
                                ex.extract(&self.path, n, out, batch).map(|_| Step::Record)
                            }
                        },
                    },
                    // The cut fell inside the last record: dropped, as the user asked
                    // (the warning was given when the file was checked).
                    Some(Err(ReadError::Invalid)) if self.cut && self.allow_truncated => {
                        Ok(Step::End)
                    }
                    Some(Err(e)) => Err(Error::Record {
                        path: self.path.clone(),
                        record: record_no + 1,
                        locus: locus(reader),
                        msg: match e {
                            ReadError::Damaged(msg) => msg,
                            ReadError::Invalid => format!(
                                "htslib could not read the record (an invalid BCF record){}",
                                truncation_hint(&self.path)
                            ),
                        },
                    }),
                }
            }
            Inner::Text(..) => match self.next_text_line(record_no)? {
                TextLine::End => Ok(Step::End),
                TextLine::Line | TextLine::Last => self.parse_current(ex, batch, record_no),
            },
        }
    }

    /// Moves to the next line of VCF text, to be parsed ahead ([`VcfReader::text_line`])
    /// or here ([`VcfReader::read_line`]); at the end, checks whether the input was cut
    /// short, as [`VcfReader::read_into`] does. An error says where through
    /// [`VcfReader::reading_error`].
    pub fn next_text_line(&mut self, record_no: u64) -> Result<TextLine> {
        let record_no = self.number_in_file(record_no);
        let Inner::Text(t, _) = &mut self.inner else {
            unreachable!("VCF text")
        };
        let path = &self.path;
        if !t.next_line(path, record_no)? {
            if t.stream_cut_short(path) {
                if !self.allow_truncated {
                    return Err(Error::Truncated {
                        path: path.clone(),
                        records: Some(record_no),
                    });
                }
                crate::truncation::warn_allowed(path, Some(record_no));
            }
            return Ok(TextLine::End);
        }
        Ok(match t.unterminated() {
            true => TextLine::Last,
            false => TextLine::Line,
        })
    }

    /// Parses the text reader's current line into `batch`: the direct parse, else
    /// htslib's; a failure says whether the input was cut inside the line.
    fn parse_current(
        &mut self,
        ex: &mut Extractor,
        batch: &mut Batch,
        record_no: u64,
    ) -> Result<Step> {
        let record_no = self.number_in_file(record_no);
        let subset = self.subset.as_deref_mut();
        let Inner::Text(t, direct) = &mut self.inner else {
            unreachable!("VCF text")
        };
        let path = &self.path;
        if t.unterminated() {
            // The input's last line, without its `\n`: cut inside this record?
            let stdin_cut = t.stream_cut_short(path);
            if stdin_cut && !self.allow_truncated {
                return Err(Error::Truncated {
                    path: path.clone(),
                    records: Some(record_no),
                });
            }
            if self.allow_truncated && (self.cut || stdin_cut) {
                if stdin_cut {
                    crate::truncation::warn_allowed(path, Some(record_no));
                }
                return Ok(Step::End); // dropped (a file's warning came at the check)
            }
        }
        // `untouched`: the failure came before the batch was written to.
        // A subset reads every line through htslib (what bcftools view sees).
        let direct_parse = match subset.is_some() {
            true => Ok(false),
            false => ex.extract_direct_line(direct, path, record_no, t.line(), t.lookups(), batch),
        };
        let (failed, untouched) = match direct_parse {
            Ok(true) => return Ok(Step::Record),
            Err(e) => (e, false),
            Ok(false) => match t.parse_line(path, record_no) {
                Err(e) => (e, true),
                Ok((rec, fix)) => {
                    let kept = match subset {
                        None => Some((record_no, rec)),
                        Some(s) => s.apply(rec)?,
                    };
                    let Some((n, rec)) = kept else {
                        return Ok(Step::Skipped);
                    };
                    ex.extract(path, n, rec, batch)?;
                    ex.apply_line_fix(&fix, batch);
                    return Ok(Step::Record);
                }
            },
        };
        let Error::Record {
            path,
            record,
            locus,
            msg,
        } = failed
        else {
            return Err(failed);
        };
        // A line that fails to parse at the very end: the input was cut there (not a
        // `#` line: no cut leaves one).
        let end = match t.line().starts_with(b"#") {
            true => LineEnd::Terminated,
            false => t.line_end(&path),
        };
        let cut = end != LineEnd::Terminated && t.stream_cut_short(&path);
        if cut {
            if !self.allow_truncated {
                return Err(Error::Truncated {
                    path,
                    records: Some(record_no),
                });
            }
            if untouched {
                crate::truncation::warn_allowed(&path, Some(record_no));
                return Ok(Step::End);
            }
        }
        // A file's last line whose end is not known failed on its own: the file
        // passed the truncation check (its BGZF end-of-file block is there), so
        // no "cut short" note; standard input's gets it.
        let note = end
            .note()
            .filter(|_| cut || end != LineEnd::Last || crate::inputs::is_stdin(&path));
        let msg = match note {
            Some(note) => format!("{msg}; {note}"),
            None => msg,
        };
        Err(Error::Record {
            path,
            record,
            locus,
            msg,
        })
    }
}

/// Opens a later input of a [`Stream`] when its turn comes, as the first was opened.
pub type Opener = Box<dyn FnMut(&Path) -> Result<VcfReader> + Send>;

/// Inputs of one call set read one after another as one stream of records, each
/// with its own header (an extractor per file into the merged schema's columns).
/// Only the input being read is open: each holds its header, schema and buffers
/// (~450 bytes a sample), so 24 per-chromosome files of a 300,000-sample cohort held
/// open at once took ~3 GB.
pub struct Stream {
    /// The input being read, and its extractor.
    current: Option<(VcfReader, Extractor)>,
    /// Every input's path, in reading order; `at` is the current one's place.
    paths: Vec<PathBuf>,
    at: usize,
    /// Opens the inputs after the first, with the merged schema and the columns
    /// they read into.
    later: Option<(Opener, Schema, RecordColumns)>,
    /// Which file each store contig's records came from.
    contig_file: Vec<Option<usize>>,
    /// The stream's records before the current input's first: messages number a
    /// record in its own file.
    before_current: u64,
}

impl Stream {
    /// One input, read with its own schema.
    pub fn single(reader: VcfReader, columns: &RecordColumns) -> Stream {
        let ex = reader.extractor(columns);
        Stream {
            paths: vec![reader.path.clone()],
            current: Some((reader, ex)),
            at: 0,
            later: None,
            contig_file: Vec::new(),
            before_current: 0,
        }
    }

    /// The inputs, in reading order — the first opened, the rest (`later`) opened by
    /// `open` when the one before ends — and the merged schema they convert into.
    pub fn many(
        first: VcfReader,
        later: Vec<PathBuf>,
        open: Opener,
        schema: &Schema,
        columns: &RecordColumns,
    ) -> Stream {
        let mut paths = vec![first.path.clone()];
        paths.extend(later);
        let mut stream = Stream {
            current: None,
            paths,
            at: 0,
            later: Some((open, schema.clone(), columns.clone())),
            contig_file: Vec::new(),
            before_current: 0,
        };
        stream.current = Some(stream.reading(first));
        stream
    }

    /// A reader of this stream's, reading into the merged schema.
    fn reading(&self, mut r: VcfReader) -> (VcfReader, Extractor) {
        let (_, schema, columns) = self.later.as_ref().expect("a stream of many");
        r.use_schema(schema);
        let ex = r.extractor(columns);
        (r, ex)
    }

    /// The one input and its extractor, when its lines can be parsed ahead on other
    /// threads ([`VcfReader::parses_ahead`]).
    pub fn parses_ahead(&mut self) -> Option<(&mut VcfReader, &mut Extractor)> {
        match &mut self.current {
            Some((r, ex)) if self.paths.len() == 1 && r.parses_ahead() => Some((r, ex)),
            _ => None,
        }
    }

    /// The input being read (the last one, once all are read).
    pub fn path(&self) -> &Path {
        &self.paths[self.at.min(self.paths.len() - 1)]
    }

    /// Reads the next record into `batch`, the stream's record `record_no` (0-based,
    /// over all its inputs); `Ok(false)` after the last file. A contig met in a second
    /// file is an error (its records would not be in order).
    pub fn read_into(&mut self, batch: &mut Batch, record_no: u64) -> Result<bool> {
        while let Some((r, ex)) = self.current.as_mut() {
            if !r.read_into(ex, batch, record_no - self.before_current)? {
                // This input is done: closed before the next opens.
                self.current = None;
                self.at += 1;
                self.before_current = record_no;
                if let Some(path) = self.paths.get(self.at).cloned() {
                    let (open, schema, _) = self.later.as_mut().expect("a stream of many");
                    let next = open(&path)?;
                    // Checked when the conversion started; a file replaced since
                    // must not put its calls under other samples' names.
                    if next.schema.samples != schema.samples {
                        return Err(Error::Inputs(format!(
                            "{}: its samples are not the ones it had when the conversion started (the \
                             file changed while it was converted); convert again",
                            path.display()
                        )));
                    }
                    self.current = Some(self.reading(next));
                }
                continue;
            }
            let contig = batch.loci.last().map_or(0, |l| l.0.max(0) as usize);
            if self.contig_file.len() <= contig {
                self.contig_file.resize(contig + 1, None);
            }
            let name = r.schema.contig_label(contig as i64).to_string();
            match self.contig_file[contig] {
                None => self.contig_file[contig] = Some(self.at),
                Some(f) if f == self.at => {}
                Some(f) => {
                    return Err(Error::Inputs(format!(
                        "contig {name} has records in {} and in {}: give each contig's \
                         records in one file (`bcftools concat -a` joins them)",
                        self.paths[f].display(),
                        self.paths[self.at].display()
                    )))
                }
            }
            return Ok(true);
        }
        Ok(false)
    }
}
