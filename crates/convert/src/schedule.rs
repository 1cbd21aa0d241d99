//! Reading through the index on many threads: each contig's pieces (see
//! `svar2_vcf::pieces`) go to `reader-N` threads, so parsing runs on several cores and
//! several contigs at once; a `sequence-N` thread per contig re-joins its pieces in
//! order and cuts them on the global chunk grid from the contig's offset (the index
//! counts of the contigs before it); the chunks straddling two contigs are re-joined
//! by the [`Stitcher`]. The store is byte-identical to a single streaming reader's
//! whatever the readers, contigs at once or order.

use crate::arrays::ArraySet;
use crate::row_limit::{RowLimit, RowWatch};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use svar2_vcf::columns::RecordColumns;
use svar2_vcf::error::{Error, Result};
use svar2_vcf::pieces::{Piece, PieceReader};
use svar2_vcf::ragged::Batch;
use svar2_vcf::schema::Schema;

/// What a piece reader sends back for its piece.
enum PieceMsg {
    Rows(Batch),
    /// The piece's end, with its ticket: handed back when the sequencer takes this,
    /// or drops the piece unjoined.
    Done(Ticket),
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
    /// Where the first record of the run's input sits on the variants axis: messages
    /// number a record in its own file.
    pub file_start: u64,
}

/// One run per contig of `pieces` (in file order), each at the sum of the `counts`
/// of the contigs before it, in `order` (contig ids; `None`: file order).
pub fn contig_runs(pieces: &[Piece], counts: &[u64], order: Option<&[usize]>) -> Vec<ContigRun> {
    let mut runs: Vec<ContigRun> = Vec::new();
    let mut at = 0u64;
    let mut file_start = (None, 0u64);
    for (i, p) in pieces.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.rid == p.rid => r.pieces.push(i),
            _ => {
                let expected = counts.get(p.rid as usize).copied().unwrap_or(0);
                if file_start.0 != Some(p.file) {
                    file_start = (Some(p.file), at);
                }
                runs.push(ContigRun {
                    rid: p.rid,
                    pieces: vec![i],
                    offset: at,
                    expected,
                    skip: 0,
                    take: false,
                    file_start: file_start.1,
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
    /// Each piece's channel, handed over by the reader that takes it.
    pieces: Vec<crossbeam_channel::Receiver<crossbeam_channel::Receiver<PieceMsg>>>,
}

/// A batch the writer is done with, handed back to the readers: `None` when the
/// writer let go of its buffers (it filled more than a reused one may keep), which
/// still lets the streaming reader make a batch in its place.
pub(crate) type Spare = Option<Batch>;

/// Reads `runs` (in dispatch order) with `cc` runs at once and `w` readers each, and
/// sends each run's records as batches aligned to the global grid of `rows`-record
/// inner chunks. Runs go in any order, so the chunks that straddle two runs arrive
/// in parts, for a [`Stitcher`]. A run whose record count disagrees with what it
/// expects (the index's) is an error. Rows are refilled from the batches the writer
/// is done with (`recycled`), and pieces' batches, once joined, go back to the
/// readers: reused buffers are not faulted in again (page faults of fresh ones were
/// ~5 % of a 2,000-sample call set's conversion at `--readers 2`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_in_pieces(
    inputs: &[PathBuf],
    schema: &Schema,
    set: &ArraySet,
    pieces: &[Piece],
    runs: &[ContigRun],
    (cc, w, piece_rows): (usize, usize, u64),
    rows: usize,
    limit: &RowLimit,
    out: &crossbeam_channel::Sender<Result<Batch>>,
    recycled: &crossbeam_channel::Receiver<Spare>,
) {
    let n_samples = schema.samples.len();
    let columns = &set.record;
    let specs = &columns.specs;
    let widths = &set.planned_column_widths();
    let new_row = |first: u64| match recycled.try_recv() {
        Ok(Some(mut b)) => {
            b.reset(first);
            b
        }
        Ok(None) | Err(_) => {
            let mut b = Batch::new(specs, n_samples, first);
            b.reserve(rows, widths);
            b
        }
    };
    let new_row = &new_row;
    // Pieces are queued in dispatch order, so the readers always serve the earliest
    // unfinished contig first: a reader blocked on a later contig never starves it.
    let (job_tx, job_rx) = crossbeam_channel::unbounded::<(usize, Handover)>();
    let (contig_tx, contig_rx) = crossbeam_channel::unbounded::<ContigJob>();
    // A piece's batches: its whole rows, a part row on either side, and its end. Room
    // for a whole piece: its reader goes on to another piece while this one waits to
    // be joined (the tickets bound how many wait); a piece longer than planned stops
    // its reader until the sequencer reaches it. A channel holds its room from the
    // start, so it is made when a reader takes the piece (a ticket's worth at once),
    // not for every piece before reading starts (75,000 pieces of 3,000 contigs in
    // one-record rows took 24 GB so).
    let slack = ((piece_rows as usize).div_ceil(rows.max(1)) + 2).min(MAX_SLACK);
    for run in runs {
        let Some(&first) = run.pieces.first() else {
            continue;
        };
        let path = inputs[pieces[first].file as usize].clone();
        let mut rxs = Vec::with_capacity(run.pieces.len());
        for &i in &run.pieces {
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
    // Tickets: a reader takes one before it takes a piece and sends it with the
    // piece's end, so pieces read (or being read) and not yet joined — all that
    // readers hold — stay under two a reader, whatever the pieces' order. The
    // earliest piece not joined is always read or takes a free ticket: no wait
    // goes round in a circle.
    let readers = (cc * w).max(1);
    // Pieces' batches the sequencers joined, for the readers to refill: one a reader
    // (more would only hold memory the plan does not charge).
    let (spare_tx, spare_rx) = crossbeam_channel::bounded::<Batch>(readers);
    let (ticket_tx, ticket_rx) = crossbeam_channel::bounded::<()>(TICKETS_PER_READER * readers);
    for _ in 0..TICKETS_PER_READER * readers {
        ticket_tx.send(()).expect("room for every ticket");
    }
    // Set when the consumer hung up or a run failed: readers stop at their next send.
    let stop = &std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let spawn = |name: String| std::thread::Builder::new().name(name);
        for i in 0..readers {
            let job_rx = job_rx.clone();
            let (ticket_tx, ticket_rx) = (ticket_tx.clone(), ticket_rx.clone());
            let spare_rx = spare_rx.clone();
            let reader = spawn(format!("reader-{i}")).spawn_scoped(scope, move || {
                // One open input per thread (the plan charges one reader's memory):
                // a piece of another input closes it and opens that one.
                let mut open: Option<(usize, PieceReader)> = None;
                let mut watch = RowWatch::new(limit, readers);
                while ticket_rx.recv().is_ok() {
                    let ticket = Ticket(ticket_tx.clone());
                    let Ok((i, handover)) = job_rx.recv() else {
                        return;
                    };
                    let (tx, rx) = crossbeam_channel::bounded(slack);
                    let handed = handover.send(rx);
                    // Let go at once: a sequencer that drops the piece unjoined then
                    // drops the channel with it, and this reader's next send fails
                    // instead of waiting for room forever.
                    drop(handover);
                    if handed.is_err() {
                        // Its sequencer dropped it (a run that took what it needed,
                        // or a stopped conversion).
                        match stop.load(Ordering::Relaxed) {
                            true => return,
                            false => continue,
                        }
                    }
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
                    let path = &inputs[f];
                    let check = |b: &Batch, n: u64| {
                        let full = b.len() == rows;
                        match full || watch.due(b.len()) {
                            true => watch.look(path, schema, set, n, b, full),
                            false => Ok(()),
                        }
                    };
                    let fresh = || match spare_rx.try_recv() {
                        Ok(mut b) => {
                            b.reset(0);
                            b
                        }
                        Err(_) => Batch::new(specs, n_samples, 0),
                    };
                    let sent = reader.read(&pieces[i], rows, fresh, check, |b| {
                        tx.send(PieceMsg::Rows(b)).is_ok()
                    });
                    let msg = match sent {
                        Ok(n) => {
                            tracing::debug!(piece = i, records = n, "piece read");
                            PieceMsg::Done(ticket)
                        }
                        Err(e) => {
                            // Its stream may be left in an error state: the next piece
                            // opens the input again, and fails only for its own reasons
                            // (else the first error reported could name another contig).
                            open = None;
                            PieceMsg::Failed(e)
                        }
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
                let _ = out.send(Err(Error::Internal(format!("cannot start a thread: {e}"))));
                return;
            }
        }
        drop((job_rx, ticket_rx, spare_rx));
        for i in 0..cc.max(1) {
            let contig_rx = contig_rx.clone();
            let spare_tx = spare_tx.clone();
            let sequencer = spawn(format!("sequence-{i}")).spawn_scoped(scope, move || {
                // Stops every reader: the contigs no sequencer will take are dropped
                // with their pieces' receivers, so a reader blocked sending a piece
                // of one is let go (and finds `stop` set) instead of waiting forever.
                let stop_all = || {
                    stop.store(true, Ordering::Relaxed);
                    while let Ok(job) = contig_rx.try_recv() {
                        drop(job);
                    }
                };
                for job in contig_rx.iter() {
                    let rows: (usize, &dyn Fn(u64) -> Batch, _) = (rows, new_row, &spare_tx);
                    match sequence_contig(schema, job, rows, out) {
                        Ok(true) => {}
                        Ok(false) => return stop_all(),
                        Err(e) => {
                            let _ = out.send(Err(e));
                            return stop_all();
                        }
                    }
                }
            });
            if let Err(e) = sequencer {
                stop.store(true, Ordering::Relaxed);
                let _ = out.send(Err(Error::Internal(format!("cannot start a thread: {e}"))));
                return;
            }
        }
    });
}

/// Where a reader hands the sequencer the channel of the piece it took.
type Handover = crossbeam_channel::Sender<crossbeam_channel::Receiver<PieceMsg>>;

/// Batches a piece's channel holds at most (each slot is made with the channel).
const MAX_SLACK: usize = 256;

/// Pieces each reader may have read (or be reading) that the sequencers have not yet
/// joined: one it reads while the one before waits its turn. The plan charges each
/// reader two rows of at most a piece (`svar2_planner::plan`'s piece rows).
const TICKETS_PER_READER: usize = 2;

/// Joins one contig run's pieces in order and re-cuts them on the global grid,
/// dropping the first `skip` records and, for a `take` run, stopping after
/// `expected`. `Ok(false)` when the consumer hung up (it has an error of its own).
fn sequence_contig(
    schema: &Schema,
    job: ContigJob,
    (rows, new_row, spare): (
        usize,
        &dyn Fn(u64) -> Batch,
        &crossbeam_channel::Sender<Batch>,
    ),
    out: &crossbeam_channel::Sender<Result<Batch>>,
) -> Result<bool> {
    let rows = rows as u64;
    let input = job.path.clone();
    let ContigRun {
        rid,
        offset,
        expected,
        skip,
        take,
        file_start,
        ..
    } = job.run;
    let holds = skip + expected;
    let stale = |read: u64, at: u64| Error::Record {
        path: input.clone(),
        record: at - file_start,
        locus: schema.contigs[rid as usize].name.clone(),
        msg: format!(
            "the index lists {holds} records here but {read}{} were read: the index is \
             stale (re-index with `bcftools index -f {}`), or the file holds a `#` line \
             among its records, where a read through the index loses its place \
             (`--readers 1` names the line)",
            if read > holds { " or more" } else { "" },
            input.display()
        ),
    };
    let mut cur = new_row(offset);
    let mut read = 0u64;
    'pieces: for handover in job.pieces {
        // A piece's reader numbers its records from the piece's start; the file's
        // number of its first is that of the run's first read (`skip` before the
        // first kept) plus the records read before it.
        let piece_first = offset - skip + read - file_start;
        // (No channel: no reader is left to take it; the count says what is missing.)
        let rx = handover
            .recv()
            .unwrap_or_else(|_| crossbeam_channel::bounded(0).1);
        for msg in rx.iter() {
            let b = match msg {
                PieceMsg::Rows(b) => b,
                PieceMsg::Done(_ticket) => break,
                PieceMsg::Failed(e) => return Err(numbered_from(e, piece_first)),
            };
            let before = read;
            read += b.len() as u64;
            if read > holds && !take {
                return Err(stale(read, offset - skip + read));
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
                    let full = std::mem::replace(&mut cur, new_row(boundary));
                    if out.send(Ok(full)).is_err() {
                        return Ok(false);
                    }
                }
            }
            let _ = spare.try_send(b);
            if take && read >= holds {
                break 'pieces; // the rest is the neighbour's
            }
        }
    }
    if read.min(holds) != holds || (read != holds && !take) {
        return Err(stale(read, offset - skip + read));
    }
    if !cur.is_empty() && out.send(Ok(cur)).is_err() {
        return Ok(false);
    }
    Ok(true)
}

/// Leave to read a piece ahead of the sequencer (see `read_in_pieces`), handed back
/// when dropped.
struct Ticket(crossbeam_channel::Sender<()>);

impl Drop for Ticket {
    fn drop(&mut self) {
        let _ = self.0.try_send(());
    }
}

/// `e` with the number of the record it names counted from the file's record
/// `first` (that of the piece's first record) instead of the piece's start: "record
/// 4001", not "record 242", whichever reader read it.
fn numbered_from(e: Error, first: u64) -> Error {
    match e {
        Error::Record {
            path,
            record,
            locus,
            msg,
        } => Error::Record {
            path,
            record: first + record,
            locus,
            msg,
        },
        e => e,
    }
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
    specs: Vec<svar2_vcf::columns::ColumnSpec>,
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
