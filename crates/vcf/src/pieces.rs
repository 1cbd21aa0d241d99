//! Reading through the index: contigs split into pieces by position, each read by its
//! own reader, so parsing runs on several cores, and several contigs at once. A record
//! belongs to the piece that holds its POS (a record overlapping a boundary is read
//! once). Each contig's pieces are re-joined in order and cut on the global chunk grid
//! from the contig's offset (the index counts of the contigs before it); the chunks
//! straddling two contigs are re-joined by the [`Stitcher`]. The store is byte-identical
//! to a single streaming reader's whatever the readers, contigs at once or order.

use crate::column::Batch;
use crate::columns::RecordColumns;
use crate::direct::Direct;
use crate::error::{Error, Result};
use crate::extract::Extractor;
use crate::fastvcf::{Lookups, TextReader};
use crate::hts::{HtsFile, KString};
use crate::index::Index;
use crate::schema::Schema;
use rust_htslib::bcf::{self, header::HeaderView};
use rust_htslib::htslib;
use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One position range of one contig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Store contig index (what `variant_contig` stores).
    pub rid: u32,
    /// The index's id for the contig.
    pub tid: i32,
    /// 0-based, half-open.
    pub beg: i64,
    pub end: i64,
    /// True for the contig's last piece (where its record count is checked).
    pub last_of_contig: bool,
    /// Which input holds it (an index into the inputs in reading order).
    pub file: u32,
}

pub use crate::index::is_text;

/// Splits every contig with records into about `per_contig` pieces by position
/// (the header length; one piece when unknown) and orders contigs as the file does.
/// `None` when the input has no usable index.
pub fn plan_pieces(
    input: &Path,
    schema: &Schema,
    counts: &[u64],
    per_contig: usize,
) -> Option<Vec<Piece>> {
    let index = Index::load(input, is_text(input))?;
    let mut contigs = Vec::new();
    for (rid, c) in schema.contigs.iter().enumerate() {
        if counts.get(rid).copied().unwrap_or(0) == 0 {
            continue;
        }
        let tid = index.tid(&c.name, c.hts_rid)?;
        contigs.push((
            index.first_offset(tid)?,
            rid as u32,
            tid,
            c.length.unwrap_or(0),
        ));
    }
    contigs.sort();
    let mut pieces = Vec::new();
    for (_, rid, tid, length) in contigs {
        let k = if length > 0 {
            per_contig.max(1) as i64
        } else {
            1
        };
        let step = if length > 0 { (length + k - 1) / k } else { 0 };
        for i in 0..k {
            let beg = i * step;
            let end = if i + 1 == k {
                i64::MAX >> 2
            } else {
                (i + 1) * step
            };
            pieces.push(Piece {
                rid,
                tid,
                beg,
                end,
                last_of_contig: i + 1 == k,
                file: 0,
            });
        }
    }
    Some(pieces)
}

/// Pieces over several inputs of one call set (each with its own header's schema, in
/// reading order): each input's contigs planned from its own index as [`plan_pieces`]
/// does, numbered as `merged`'s contigs. `None` if an input has no usable index.
pub fn plan_pieces_inputs(
    inputs: &[(&Path, &Schema)],
    merged: &Schema,
    per_contig: usize,
) -> Option<Vec<Piece>> {
    let mut all = Vec::new();
    for (f, (path, own)) in inputs.iter().enumerate() {
        // This input's own counts (its header may declare every contig of the set).
        let own_counts = crate::index::contig_counts(path, &own.contigs).ok()?.counts;
        for mut p in plan_pieces(path, own, &own_counts, per_contig)? {
            let name = &own.contigs[p.rid as usize].name;
            p.rid = merged.contigs.iter().position(|c| &c.name == name)? as u32;
            p.file = f as u32;
            all.push(p);
        }
    }
    Some(all)
}

/// A reader of pieces: its own file handle, index, header and extractor.
pub struct PieceReader {
    path: PathBuf,
    fp: HtsFile,
    index: Index,
    header: Arc<HeaderView>,
    rec: bcf::Record,
    ks: KString,
    text: bool,
    /// Name lookups for the direct text parse; `None` for BCF.
    lookups: Option<Lookups>,
    ex: Extractor,
    /// The direct text parse's lookups and buffers.
    direct: Direct,
    /// The schema (contig names for messages).
    schema: Schema,
}

// SAFETY: the index's raw handles (and the record's) are owned by this reader and
// used by one thread at a time.
unsafe impl Send for PieceReader {}

impl PieceReader {
    /// Opens `input` for piece reading.
    pub fn open(input: &Path, schema: &Schema, columns: &RecordColumns) -> Result<PieceReader> {
        let open_err = |msg: &str| Error::Open {
            path: input.into(),
            msg: msg.into(),
        };
        // One open tells text from BCF and, for text, yields the header and the parse
        // lookups: a header of 500,000 samples takes htslib 0.1 s to read.
        let (fp, header, lookups) = match TextReader::open(input)? {
            Some(mut t) => {
                t.set_schema(schema);
                let (fp, header, lookups) = t.into_parts();
                (fp, header, Some(lookups))
            }
            None => {
                let fp = HtsFile::open(input).ok_or_else(|| open_err("cannot reopen"))?;
                // SAFETY: the file is open; the header is checked for null and owned
                // by the HeaderView made from it.
                let header = unsafe {
                    let hdr = htslib::bcf_hdr_read(fp.as_ptr());
                    if hdr.is_null() {
                        return Err(open_err("cannot reread the header"));
                    }
                    HeaderView::from_ptr(hdr)
                };
                (fp, header, None)
            }
        };
        let text = lookups.is_some();
        let index = Index::load(input, text).ok_or_else(|| open_err("index disappeared"))?;
        if schema.has_gt {
            // As the first reader did for a GT the header does not declare.
            // SAFETY: the header is this reader's alone and valid; nothing holds a
            // record or view of it yet.
            unsafe { crate::schema::declare_gt(header.as_ptr()) };
        }
        let header = Arc::new(header);
        let rec = header.empty_record();
        let ex = Extractor::for_header(&header, schema, columns).no_new_contigs();
        Ok(PieceReader {
            path: input.into(),
            fp,
            index,
            header,
            rec,
            ks: KString::new(),
            text,
            lookups,
            ex,
            direct: Direct::for_schema(schema),
            schema: schema.clone(),
        })
    }

    fn contig(&self, piece: &Piece) -> &str {
        self.schema.contig_label(piece.rid as i64)
    }

    /// Moves to the piece's next record: text in `ks`, BCF in `rec` (not unpacked).
    /// `Ok(None)` past the piece; `located` is false before the first call.
    fn next_record(
        &mut self,
        piece: &Piece,
        itr: *mut htslib::hts_itr_t,
        located: &mut bool,
        n: u64,
    ) -> Result<Option<i64>> {
        loop {
            // Text: the index places the stream at the piece's first record; the lines
            // after it are read as they come (the iterator would re-scan every line
            // with tabix's parser) until one leaves the contig or passes the end.
            // SAFETY: fp/itr live; ks/rec are owned buffers htslib fills.
            let bgzf = self.fp.bgzf();
            let r = unsafe {
                if self.text && *located {
                    htslib::bgzf_getline(bgzf, b'\n' as i32, self.ks.raw())
                } else if self.text {
                    *located = true;
                    htslib::hts_itr_next(
                        bgzf,
                        itr,
                        self.ks.raw() as *mut _ as *mut c_void,
                        self.index.tabix_ptr() as *mut c_void,
                    )
                } else {
                    htslib::hts_itr_next(
                        bgzf,
                        itr,
                        self.rec.inner as *mut c_void,
                        std::ptr::null_mut(),
                    )
                }
            };
            if r == -1 {
                return Ok(None);
            }
            if r < -1 {
                let name = self.contig(piece);
                return Err(Error::Record {
                    path: self.path.clone(),
                    record: n + 1,
                    locus: format!("{name}:{}-{}", piece.beg + 1, piece.end.min(i64::MAX >> 3)),
                    msg: format!(
                        "cannot read the records the index points to: the index is stale or the \
                         file is corrupt (re-index with `bcftools index -f {}`)",
                        self.path.display()
                    ),
                });
            }
            // POS decides which piece owns the record.
            let pos = if self.text {
                let line = self.ks.bytes();
                crate::limits::check_line(&self.path, n + 1, line)?;
                let mut cols = line.split(|&b| b == b'\t');
                let chrom = cols.next().unwrap_or(b"");
                let pos = cols
                    .next()
                    .and_then(|p| std::str::from_utf8(p).ok()?.parse::<i64>().ok())
                    .unwrap_or(0)
                    - 1;
                if chrom != self.contig(piece).as_bytes() || pos >= piece.end {
                    return Ok(None); // past the piece (sorted input)
                }
                pos
            } else {
                let pos = self.rec.pos();
                if pos >= piece.end {
                    return Ok(None);
                }
                pos
            };
            if pos >= piece.beg {
                return Ok(Some(pos));
            }
        }
    }

    /// Counts the records of one piece without parsing them (the bytes are still
    /// read): where a partition starts when a contig is cut between partitions.
    pub fn count(&mut self, piece: &Piece) -> Result<u64> {
        let itr = self.index.query(piece.tid, piece.beg, piece.end);
        if itr.is_null() {
            return Ok(0);
        }
        let mut located = false;
        let mut n = 0u64;
        let result = (|| -> Result<()> {
            while self.next_record(piece, itr, &mut located, n)?.is_some() {
                n += 1;
            }
            Ok(())
        })();
        // SAFETY: itr from hts_itr_query.
        unsafe { htslib::hts_itr_destroy(itr) };
        result.map(|_| n)
    }

    /// Reads one piece, handing out batches of at most `rows` records. Returns the
    /// number of records read.
    pub fn read(
        &mut self,
        piece: &Piece,
        rows: usize,
        specs: &[crate::columns::ColumnSpec],
        n_samples: usize,
        mut emit: impl FnMut(Batch) -> bool,
    ) -> Result<u64> {
        let itr = self.index.query(piece.tid, piece.beg, piece.end);
        if itr.is_null() {
            return Ok(0);
        }
        let mut batch = Batch::new(specs, n_samples, 0);
        let mut n = 0u64;
        let mut located = false;
        let result = (|| -> Result<()> {
            while let Some(pos) = self.next_record(piece, itr, &mut located, n)? {
                if self.text {
                    let line = self.ks.bytes();
                    let lookups = self.lookups.as_ref().expect("text input");
                    let done = self.ex.extract_direct_line(
                        &mut self.direct,
                        &self.path,
                        n,
                        line,
                        lookups,
                        &mut batch,
                    )?;
                    if !done {
                        let fix = crate::fastvcf::parse_general(
                            lookups,
                            &mut self.ks,
                            &self.header,
                            &mut self.rec,
                        )
                        .map_err(|msg| Error::Record {
                            path: self.path.clone(),
                            record: n + 1,
                            locus: format!(
                                "{}:{}",
                                self.schema.contig_label(piece.rid as i64),
                                pos + 1
                            ),
                            msg,
                        })?;
                        self.ex.extract(&self.path, n, &self.rec, &mut batch)?;
                        self.ex.apply_line_fix(&fix, &mut batch);
                    }
                } else {
                    // SAFETY: rec holds the record just read.
                    unsafe { htslib::bcf_unpack(self.rec.inner, htslib::BCF_UN_ALL as c_int) };
                    self.ex.extract(&self.path, n, &self.rec, &mut batch)?;
                }
                n += 1;
                if batch.len() == rows {
                    let full = std::mem::replace(&mut batch, Batch::new(specs, n_samples, 0));
                    if !emit(full) {
                        return Ok(());
                    }
                }
            }
            if !batch.is_empty() {
                emit(batch);
            }
            Ok(())
        })();
        // SAFETY: itr from hts_itr_query.
        unsafe { htslib::hts_itr_destroy(itr) };
        result.map(|_| n)
    }
}

/// What a piece reader sends back for its piece.
enum PieceMsg {
    Rows(Batch),
    Done,
    Failed(Error),
}

/// A run of pieces of one contig, read in order and placed on the variants axis: a
/// whole contig (at the sum of the index counts before it), or the part of one that
/// a partition converts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContigRun {
    pub rid: u32,
    /// Indexes into the pieces, in position order.
    pub pieces: Vec<usize>,
    /// Where the run's first kept record sits on the global variants axis.
    pub offset: u64,
    /// Records it delivers (the index's count for a whole contig).
    pub expected: u64,
    /// Records read and dropped first (a neighbouring partition converts them).
    pub skip: u64,
    /// Stop after `expected` records: the run borrows the start of a neighbour's
    /// range (which may hold more).
    pub take: bool,
}

/// One run per contig of `pieces` (in file order), each at the sum of the `counts`
/// of the contigs before it, in `order` (contig ids; `None`: file order).
pub fn contig_runs(pieces: &[Piece], counts: &[u64], order: Option<&[usize]>) -> Vec<ContigRun> {
    let mut runs: Vec<ContigRun> = Vec::new();
    let mut at = 0u64;
    for (i, p) in pieces.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.rid == p.rid => r.pieces.push(i),
            _ => {
                let expected = counts.get(p.rid as usize).copied().unwrap_or(0);
                runs.push(ContigRun {
                    rid: p.rid,
                    pieces: vec![i],
                    offset: at,
                    expected,
                    skip: 0,
                    take: false,
                });
                at += expected;
            }
        }
    }
    match order {
        None => runs,
        Some(order) => order
            .iter()
            .filter_map(|&rid| runs.iter().find(|r| r.rid as usize == rid).cloned())
            .collect(),
    }
}

/// A contig run handed to a sequencer, with its pieces' record streams.
struct ContigJob {
    run: ContigRun,
    /// The input holding it (for messages).
    path: PathBuf,
    pieces: Vec<crossbeam_channel::Receiver<PieceMsg>>,
}

/// Reads `runs` (in dispatch order) with `cc` runs at once and `w` readers each, and
/// sends each run's records as batches aligned to the global grid of `rows`-record
/// inner chunks. Runs go in any order, so the chunks that straddle two runs arrive
/// in parts, for a [`Stitcher`]. A run whose record count disagrees with what it
/// expects (the index's) is an error.
#[allow(clippy::too_many_arguments)]
pub fn read_in_pieces(
    inputs: &[PathBuf],
    schema: &Schema,
    columns: &RecordColumns,
    pieces: &[Piece],
    runs: &[ContigRun],
    (cc, w): (usize, usize),
    rows: usize,
    out: &crossbeam_channel::Sender<Result<Batch>>,
) {
    let n_samples = schema.samples.len();
    let specs = &columns.specs;
    // Pieces are queued in dispatch order, so the readers always serve the earliest
    // unfinished contig first: a reader blocked on a later contig never starves it.
    let (job_tx, job_rx) =
        crossbeam_channel::unbounded::<(usize, crossbeam_channel::Sender<PieceMsg>)>();
    let (contig_tx, contig_rx) = crossbeam_channel::unbounded::<ContigJob>();
    for run in runs {
        let Some(&first) = run.pieces.first() else {
            continue;
        };
        let path = inputs[pieces[first].file as usize].clone();
        let mut rxs = Vec::with_capacity(run.pieces.len());
        for &i in &run.pieces {
            // One batch of slack per piece: a reader ahead of its sequencer blocks,
            // which bounds the reorder buffer to about two batches per reader.
            let (tx, rx) = crossbeam_channel::bounded(1);
            job_tx.send((i, tx)).expect("receiver alive");
            rxs.push(rx);
        }
        contig_tx
            .send(ContigJob {
                run: run.clone(),
                path,
                pieces: rxs,
            })
            .expect("receiver alive");
    }
    drop((job_tx, contig_tx));
    // Set when the consumer hung up or a run failed: readers stop at their next send.
    let stop = &std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let spawn = |name: String| std::thread::Builder::new().name(name);
        for i in 0..(cc * w).max(1) {
            let job_rx = job_rx.clone();
            let reader = spawn(format!("reader-{i}")).spawn_scoped(scope, move || {
                // One open input per thread (the plan charges one reader's memory):
                // a piece of another input closes it and opens that one.
                let mut open: Option<(usize, PieceReader)> = None;
                for (i, tx) in job_rx.iter() {
                    let f = pieces[i].file as usize;
                    if open.as_ref().is_none_or(|(g, _)| *g != f) {
                        drop(open.take()); // closed before the next opens
                        match PieceReader::open(&inputs[f], schema, columns) {
                            Ok(r) => open = Some((f, r)),
                            Err(e) => {
                                let _ = tx.send(PieceMsg::Failed(e));
                                return;
                            }
                        }
                    }
                    let (_, reader) = open.as_mut().expect("opened above");
                    let sent = reader.read(&pieces[i], rows, specs, n_samples, |b| {
                        tx.send(PieceMsg::Rows(b)).is_ok()
                    });
                    let msg = match sent {
                        Ok(_) => PieceMsg::Done,
                        Err(e) => PieceMsg::Failed(e),
                    };
                    // A run that took what it needed hangs up on purpose; only a
                    // stopped conversion ends the reader.
                    if tx.send(msg).is_err() && stop.load(Ordering::Relaxed) {
                        return;
                    }
                }
            });
            if let Err(e) = reader {
                stop.store(true, Ordering::Relaxed);
                let _ = out.send(Err(Error::Usage(format!("cannot start a thread: {e}"))));
                return;
            }
        }
        drop(job_rx);
        for i in 0..cc.max(1) {
            let contig_rx = contig_rx.clone();
            let sequencer = spawn(format!("sequence-{i}")).spawn_scoped(scope, move || {
                for job in contig_rx.iter() {
                    match sequence_contig(schema, specs, job, rows, out) {
                        Ok(true) => {}
                        Ok(false) => {
                            stop.store(true, Ordering::Relaxed);
                            return;
                        }
                        Err(e) => {
                            stop.store(true, Ordering::Relaxed);
                            let _ = out.send(Err(e));
                            return;
                        }
                    }
                }
            });
            if let Err(e) = sequencer {
                stop.store(true, Ordering::Relaxed);
                let _ = out.send(Err(Error::Usage(format!("cannot start a thread: {e}"))));
                return;
            }
        }
    });
}

/// Joins one contig run's pieces in order and re-cuts them on the global grid,
/// dropping the first `skip` records and, for a `take` run, stopping after
/// `expected`. `Ok(false)` when the consumer hung up (it has an error of its own).
fn sequence_contig(
    schema: &Schema,
    specs: &[crate::columns::ColumnSpec],
    job: ContigJob,
    rows: usize,
    out: &crossbeam_channel::Sender<Result<Batch>>,
) -> Result<bool> {
    let n_samples = schema.samples.len();
    let rows = rows as u64;
    let input = job.path.clone();
    let ContigRun {
        rid,
        offset,
        expected,
        skip,
        take,
        ..
    } = job.run;
    let holds = skip + expected;
    let stale = |read: u64, at: u64| Error::Record {
        path: input.clone(),
        record: at,
        locus: schema.contigs[rid as usize].name.clone(),
        msg: format!(
            "the index lists {holds} records here but {read}{} were read: the index is \
             stale, re-index with `bcftools index -f {}`",
            if read > holds { " or more" } else { "" },
            input.display()
        ),
    };
    let mut cur = Batch::new(specs, n_samples, offset);
    let mut read = 0u64;
    'pieces: for rx in job.pieces {
        for msg in rx.iter() {
            let b = match msg {
                PieceMsg::Rows(b) => b,
                PieceMsg::Done => break,
                PieceMsg::Failed(e) => return Err(e),
            };
            let before = read;
            read += b.len() as u64;
            if read > holds && !take {
                return Err(stale(read, offset + read - 1));
            }
            // This batch's records to keep: past the skipped ones, up to `holds`.
            let mut r = skip.saturating_sub(before).min(b.len() as u64) as usize;
            let stop = (holds - before.min(holds)).min(b.len() as u64) as usize;
            while r < stop {
                let end = cur.first + cur.len() as u64;
                let boundary = (cur.first / rows + 1) * rows;
                let n = ((boundary - end) as usize).min(stop - r);
                cur.append_range(&b, r, r + n);
                r += n;
                if cur.first + cur.len() as u64 == boundary {
                    let full = std::mem::replace(&mut cur, Batch::new(specs, n_samples, boundary));
                    if out.send(Ok(full)).is_err() {
                        return Ok(false);
                    }
                }
            }
            if take && read >= holds {
                break 'pieces; // the rest is the neighbour's
            }
        }
    }
    if read.min(holds) != holds || (read != holds && !take) {
        return Err(stale(read, offset + read.saturating_sub(skip)));
    }
    if !cur.is_empty() && out.send(Ok(cur)).is_err() {
        return Ok(false);
    }
    Ok(true)
}

/// Re-joins the parts of inner chunks that straddle contigs converted separately.
/// Whole chunks pass straight through; a part waits (under one chunk per contig
/// boundary) until the rest of its chunk arrives. A chunk is whole within the
/// records `range` converted here: a partition's first and last chunks may be
/// parts of chunks another partition shares.
pub struct Stitcher {
    rows: u64,
    range: std::ops::Range<u64>,
    total: u64,
    n_samples: usize,
    specs: Vec<crate::columns::ColumnSpec>,
    waiting: std::collections::BTreeMap<u64, (u64, Vec<Batch>)>,
}

impl Stitcher {
    /// For the records `range` of `total` on a grid of `rows`-record chunks.
    pub fn new(
        columns: &RecordColumns,
        n_samples: usize,
        rows: usize,
        range: std::ops::Range<u64>,
        total: u64,
    ) -> Stitcher {
        Stitcher {
            rows: rows as u64,
            range,
            total,
            n_samples,
            specs: columns.specs.clone(),
            waiting: Default::default(),
        }
    }

    /// Takes a batch; returns a whole chunk when this batch completes one.
    pub fn push(&mut self, b: Batch) -> Option<Batch> {
        let chunk = b.first / self.rows;
        let start = (chunk * self.rows).max(self.range.start);
        let want = ((chunk + 1) * self.rows)
            .min(self.range.end)
            .saturating_sub(start);
        if b.first == start && b.len() as u64 == want {
            return Some(b);
        }
        let entry = self.waiting.entry(chunk).or_default();
        entry.0 += b.len() as u64;
        entry.1.push(b);
        if entry.0 < want {
            return None;
        }
        let (_, mut parts) = self.waiting.remove(&chunk).expect("present");
        parts.sort_by_key(|p| p.first);
        let mut whole = Batch::new(&self.specs, self.n_samples, start);
        for p in &parts {
            whole.append_range(p, 0, p.len());
        }
        Some(whole)
    }

    /// Whether a batch [`Stitcher::push`] returned is only part of its chunk: the
    /// rest is another partition's.
    pub fn is_shared(&self, b: &Batch) -> bool {
        let start = b.first / self.rows * self.rows;
        let end = (start + self.rows).min(self.total);
        b.first != start || b.first + b.len() as u64 != end
    }

    /// Chunks still incomplete (none after a successful read).
    pub fn pending(&self) -> usize {
        self.waiting.len()
    }
}
