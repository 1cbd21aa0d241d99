//! The writer's side of a conversion: batches from the readers (re-joined by the
//! stitcher when read in pieces) are admitted to the writer in arrival order, encoded
//! on the pool several at once (a window sized by the plan: the cores and the memory
//! budget), and committed in admission order. The writer thread only admits and
//! commits — statistics, layouts, appends of encoded bytes — so the pool's threads,
//! not the arrays of one batch, bound the encoding, and readers never wait for one
//! batch's encoding to end before theirs is taken.

use crate::arrays::ArraySet;
use crate::error::{Error, Result};
use crate::row_limit::{RowLimit, RowWatch};
use crate::schedule::{ContigRun, Spare, Stitcher};
use crate::writer::{Admitted, Encoded, Placed, Writer};
use crossbeam_channel::{Receiver, Select, Sender};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use svar2_vcf::pieces::Piece;
use svar2_vcf::ragged::Batch;
use svar2_vcf::schema::Schema;
use svar2_vcf::source::{Stream, VcfReader};

/// Where a conversion's records come from.
pub(crate) enum Source<'a> {
    /// Through the index: `runs` of `pieces` of the files `paths`, `cc` contigs at once
    /// and `w` readers each (see `schedule`).
    Pieces {
        paths: &'a [PathBuf],
        pieces: &'a [Piece],
        runs: Vec<ContigRun>,
        cc: usize,
        w: usize,
        /// Records a piece holds (the plan's `piece_rows`).
        piece_rows: u64,
    },
    /// One streaming reader: one file with its own schema, else files one after
    /// another (or standard input) read into the merged schema.
    Stream(Box<StreamInputs>),
}

/// What a streaming reader reads.
pub(crate) enum StreamInputs {
    /// One file, with its own schema.
    Single(VcfReader),
    /// The first input, opened; the later ones, opened in turn by the opener.
    Many(VcfReader, Vec<PathBuf>, svar2_vcf::source::Opener),
}

/// What every stage shares: the records' shape, the encoding threads, the batches
/// encoded at once and the progress bar.
pub(crate) struct Stages<'a> {
    pub schema: &'a Schema,
    pub set: &'a ArraySet,
    pub threads: usize,
    pub window: Window,
    pub progress: indicatif::ProgressBar,
}

/// How many batches encode at once: the plan's count, while they fill no more than
/// the plan charged them. The plan measured a row on the input's first records (calls
/// packed, FORMAT integers in 16 bits); batches that fill more — later records that do
/// not pack — are encoded fewer at once, so the memory the budget bought holds them.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub batches: usize,
    /// Bytes the batches encoding at once may fill together (one is always admitted).
    pub bytes: u64,
    /// Bytes one batch may fill and still be handed back to the reader for reuse: a
    /// reused batch keeps its buffers, so one that later records filled past the
    /// plan would hold that memory for good, however few batches encode at once.
    pub reusable: u64,
    /// What one batch may fill while it is read.
    pub limit: RowLimit,
}

/// Batches may fill this much more than the plan's measured rows before the window
/// narrows: records vary (alleles per site, missing calls) and the budget's headroom
/// holds that much.
const WINDOW_SLACK: f64 = 1.25;

impl Window {
    /// Batches one streaming reader has at once, the one it fills included: the
    /// window's, two at least (one encoding while the next is read). The plan charges
    /// these rows (`svar2_planner::Plan::window`), and the reader waits for one back
    /// before it fills more, so however far reading runs ahead of encoding — a loaded
    /// machine, a BCF — no more are alive than charged.
    pub fn alive(&self) -> usize {
        self.batches.max(2)
    }

    /// The plan's window, its byte allowance from the bytes a row was planned to fill.
    pub fn of(report: &crate::planning::PlanReport) -> Window {
        let batches = report.plan.window.max(1) as usize;
        let batch = report.row_bytes.saturating_mul(report.plan.chunks.variants);
        Window {
            batches,
            bytes: (batch as f64 * batches as f64 * WINDOW_SLACK) as u64,
            reusable: (batch as f64 * WINDOW_SLACK) as u64,
            limit: RowLimit::of(report),
        }
    }
}

/// Runs a conversion's pipeline — the source's threads (`reader`, or `pieces` with its
/// `reader-N` and `sequence-N`), the `writer` and the `encode-N` pool — until every
/// record is in `writer`, then `finish` on the pool. A chunk the stitcher completes
/// only in part (one a partition shares with another) goes to `shared`. The single
/// machine's conversion and a partition's run both come through here.
pub(crate) fn run<T: Send>(
    stages: Stages,
    source: Source,
    writer: &mut Writer,
    mut stitcher: Option<Stitcher>,
    shared: impl FnMut(Batch) -> Result<()> + Send,
    finish: impl FnOnce(&mut Writer) -> Result<T> + Send,
) -> Result<T> {
    let Stages {
        schema,
        set,
        threads,
        window,
        progress,
    } = stages;
    let variants_chunk = writer.geometry().variants_chunk as usize;
    let limit = window.limit.clone();
    let pool = crate::chunk::encoder_pool(threads)?;
    let (tx, rx) = crossbeam_channel::bounded::<svar2_vcf::Result<Batch>>(0);
    // Batches the writer is done with (`None`: one it let go of), for the readers to
    // refill. The streaming reader fills only these once it has made `alive` (see
    // `read_stream`), so the channel has room for every one.
    let alive = window.alive();
    let spares = match source {
        Source::Pieces { .. } => 2,
        Source::Stream(_) => alive,
    };
    let (recycle_tx, recycle_rx) = crossbeam_channel::bounded::<Spare>(spares);
    let result = std::thread::scope(|scope| {
        let spawn = |name: &str| std::thread::Builder::new().name(name.into());
        let failed = |e: std::io::Error| Error::Usage(format!("cannot start a thread: {e}"));
        match source {
            Source::Pieces {
                paths,
                pieces,
                runs,
                cc,
                w,
                piece_rows,
            } => {
                let died = tx.clone();
                let read = move || {
                    guarded(&died, || {
                        crate::schedule::read_in_pieces(
                            paths,
                            schema,
                            set,
                            pieces,
                            &runs,
                            (cc, w, piece_rows),
                            variants_chunk,
                            &limit,
                            &tx,
                            &recycle_rx,
                        )
                    })
                };
                spawn("pieces").spawn_scoped(scope, read).map_err(failed)?;
            }
            Source::Stream(inputs) => {
                let died = tx.clone();
                let pool = &pool;
                let read = move || {
                    guarded(&died, || {
                        let rows = (variants_chunk, &limit);
                        let batches = (alive, &recycle_rx);
                        read_stream(*inputs, schema, set, rows, pool, &tx, batches)
                    })
                };
                spawn("reader").spawn_scoped(scope, read).map_err(failed)?;
            }
        }
        let (pool, progress) = (&pool, &progress);
        // Owned by the writer, so an error there hangs up on the readers instead of
        // leaving them blocked on a send (or waiting for a batch back) while the scope
        // waits for them.
        let write = move || -> Result<T> {
            let stitcher = stitcher.as_mut();
            let recycle = &recycle_tx;
            drain(
                rx, stitcher, writer, pool, window, recycle, progress, shared,
            )?;
            drop(recycle_tx);
            pool.install(|| finish(writer))
        };
        let writer = spawn("writer").spawn_scoped(scope, write).map_err(failed)?;
        writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    progress.finish_and_clear();
    result
}

/// Runs a reader thread's work, turning a panic into an error the writer receives: a
/// reader that died must never look like the end of the input (the store would be
/// finished with the records read so far, complete-looking and short).
fn guarded<R>(
    died: &crossbeam_channel::Sender<svar2_vcf::Result<Batch>>,
    read: impl FnOnce() -> R,
) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)) {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let _ = died.send(Err(svar2_vcf::Error::Internal(format!(
            "internal error: the reader stopped ({why}); nothing was kept — please report it"
        ))));
    }
}

/// One streaming reader: fills inner-chunk rows of records and sends them until the
/// inputs end. It makes `alive` batches at most; past those it refills the ones the
/// writer hands back (`recycled`), waiting for one when none is back. A bgzipped
/// VCF's lines are parsed ahead on `pool` when it has the threads (see `ahead`).
#[allow(clippy::too_many_arguments)]
fn read_stream(
    inputs: StreamInputs,
    schema: &Schema,
    set: &ArraySet,
    (variants_chunk, limit): (usize, &RowLimit),
    pool: &rayon::ThreadPool,
    tx: &Sender<svar2_vcf::Result<Batch>>,
    (alive, recycled): (usize, &Receiver<Spare>),
) {
    let widths = set.planned_column_widths();
    let n_samples = schema.samples.len();
    let mut watch = RowWatch::new(limit, 1);
    // Built here: extractors hold htslib buffers and stay on this thread.
    let mut stream = match inputs {
        StreamInputs::Single(reader) => Stream::single(reader, &set.record),
        StreamInputs::Many(first, later, open) => {
            Stream::many(first, later, open, schema, &set.record)
        }
    };
    let supply = std::cell::RefCell::new(Supply::new(alive, recycled));
    let next_batch = |n: u64| -> Option<Batch> {
        supply.borrow_mut().next(n, || {
            let mut b = Batch::new(&set.record.specs, n_samples, n);
            b.reserve(variants_chunk, &widths);
            b
        })
    };
    let Some(mut batch) = next_batch(0) else {
        return;
    };
    // The first record is read here whatever the input (htslib read its line at open,
    // and where that line ends is not known), then the rest ahead where they can be.
    let mut n: u64 = match stream.read_into(&mut batch, 0) {
        Ok(true) => 1,
        Ok(false) => return,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let ahead = pool.current_num_threads() >= crate::ahead::PARSE_AHEAD_THREADS;
    if let Some((reader, ex)) = stream.parses_ahead().filter(|_| ahead) {
        let rows = crate::ahead::Rows {
            variants_chunk,
            watch,
            set,
            next: &next_batch,
            tx,
        };
        return crate::ahead::read(reader, ex, &set.record, pool, rows, batch, n);
    }
    loop {
        while batch.len() < variants_chunk {
            let read = stream.read_into(&mut batch, n).and_then(|more| {
                let full = batch.len() == variants_chunk;
                if more && (full || watch.due(batch.len())) {
                    watch.look(stream.path(), schema, set, n + 1, &batch, full)?;
                }
                Ok(more)
            });
            match read {
                Ok(true) => n += 1,
                Ok(false) => break,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        let done = batch.len() < variants_chunk;
        if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
            return;
        }
        if done {
            return;
        }
        let Some(next) = next_batch(n) else {
            return;
        };
        batch = next;
    }
}

/// The streaming reader's empty batches: `alive` made at most, then only those the
/// writer hands back, reset for refilling.
struct Supply<'a> {
    alive: usize,
    made: usize,
    recycled: &'a Receiver<Spare>,
}

impl<'a> Supply<'a> {
    fn new(alive: usize, recycled: &'a Receiver<Spare>) -> Supply<'a> {
        Supply {
            alive,
            made: 0,
            recycled,
        }
    }

    /// An empty batch for the row from record `first`: one handed back, else a new one (`make`) while fewer than
    /// `alive` were made or in place of one the writer let go of, else one handed
    /// back once it is. `None` once the writer hung up (it has an error of its own).
    fn next(&mut self, first: u64, make: impl FnOnce() -> Batch) -> Option<Batch> {
        let spare = match self.recycled.try_recv() {
            Ok(spare) => spare,
            Err(_) if self.made < self.alive => {
                self.made += 1;
                None
            }
            Err(_) => self.recycled.recv().ok()?,
        };
        Some(match spare {
            Some(mut b) => {
                b.reset(first);
                b
            }
            None => make(),
        })
    }
}

/// A batch being encoded: what the writer admitted, where its chunks arrive, and the
/// bytes its records fill.
type InFlight = (Arc<Admitted>, Receiver<Encoded>, u64);

/// Feeds the readers' batches through the stitcher (when reading in pieces) to the
/// writer, encoding up to `window`'s batches at once on `pool`, and hands a chunk the
/// stitcher completes only in part — one this partition shares with another — to
/// `shared`. Ends with the writer holding every record, or the first error. Runs on
/// the calling thread (the `writer`), which must not be one of `pool`'s.
#[allow(clippy::too_many_arguments)]
fn drain(
    rx: Receiver<svar2_vcf::Result<Batch>>,
    mut stitcher: Option<&mut Stitcher>,
    w: &mut Writer,
    pool: &rayon::ThreadPool,
    window: Window,
    recycle: &Sender<Spare>,
    pb: &indicatif::ProgressBar,
    mut shared: impl FnMut(Batch) -> Result<()>,
) -> Result<()> {
    let (set, geometry) = w.encoding_context();
    let (set, geometry) = (&set, &geometry);
    pool.in_place_scope(|scope| -> Result<()> {
        let mut fifo: VecDeque<InFlight> = VecDeque::new();
        // Bytes the batches in `fifo` fill, and whether the window narrowed yet.
        let mut filled: u64 = 0;
        let mut narrowed = false;
        // The oldest batch once encoded: its records handed back for reuse (before
        // the readers are let go on: a reader that found none would fill a fresh
        // batch beside it, one more than the plan charges) and what committing its
        // chunks needs.
        let release = |admitted: Arc<Admitted>,
                       encoded: std::result::Result<Encoded, crossbeam_channel::RecvError>|
         -> Result<(Placed, Encoded)> {
            let encoded = encoded.map_err(|_| Error::Usage("an encoding thread failed".into()))?;
            let admitted = Arc::into_inner(admitted).expect("the encoder let go of it");
            let (placed, batch) = admitted.release(set);
            let spare = (batch.filled_bytes() as u64 <= window.reusable).then_some(batch);
            let _ = recycle.try_send(spare);
            Ok((placed, encoded))
        };
        // Its chunks committed (a shard row it finishes is assembled in parallel on
        // the pool).
        let commit = |w: &mut Writer, (placed, encoded): (Placed, Encoded)| -> Result<()> {
            w.commit(placed, encoded, Some(pool))
        };
        // A batch from the readers: re-joined by the stitcher, admitted (after the
        // oldest are committed while it would overfill the window's bytes) and
        // encoded on the pool.
        let mut take = |w: &mut Writer,
                        fifo: &mut VecDeque<InFlight>,
                        filled: &mut u64,
                        batch: Batch|
         -> Result<()> {
            pb.inc(batch.len() as u64);
            let batch = match stitcher.as_deref_mut() {
                None => batch,
                Some(s) => match s.push(batch) {
                    Some(whole) if s.is_shared(&whole) => return shared(whole),
                    Some(whole) => whole,
                    None => return Ok(()),
                },
            };
            let bytes = batch.filled_bytes() as u64;
            while *filled + bytes > window.bytes {
                let Some((admitted, done, held)) = fifo.pop_front() else {
                    break;
                };
                if !narrowed {
                    narrowed = true;
                    tracing::info!(
                        "later records fill more than the plan measured on the input's \
                         first ones ({:.1} MB for {} batches against {:.1} MB: more \
                         alleles, ploidy or values, calls that do not pack, longer \
                         strings); encoding fewer batches at once",
                        (*filled + bytes) as f64 / 1e6,
                        fifo.len() + 2,
                        window.bytes as f64 / 1e6,
                    );
                }
                *filled -= held;
                commit(w, release(admitted, done.recv())?)?;
            }
            *filled += bytes;
            let admitted = Arc::new(w.admit(batch)?);
            let (tx, done) = crossbeam_channel::bounded(1);
            let mine = admitted.clone();
            scope.spawn(move |_| {
                let encoded = mine.encode(set, geometry);
                drop(mine); // before the send: the writer takes the batch back whole
                let _ = tx.send(encoded);
            });
            fifo.push_back((admitted, done, bytes));
            Ok(())
        };
        let mut reading = true;
        while reading || !fifo.is_empty() {
            // The oldest batch once encoded: taken out of the window, and a batch the
            // readers have ready admitted in its place before its chunks are written,
            // so the pool encodes while the writer writes (writing a batch's chunks
            // held both encoders idle for 15-40 ms a batch of a 2,000-sample call set).
            let oldest = if !reading || fifo.len() >= window.batches.max(1) {
                let (admitted, done, bytes) = fifo.pop_front().expect("not empty");
                Some((admitted, done.recv(), bytes))
            } else {
                // The next batch, or the end of the oldest one's encoding, whichever first.
                let mut sel = Select::new();
                let next = sel.recv(&rx);
                if let Some((_, done, _)) = fifo.front() {
                    sel.recv(done);
                }
                let op = sel.select();
                if op.index() != next {
                    let encoded = op.recv(&fifo.front().expect("selected").1);
                    drop(sel);
                    let (admitted, _, bytes) = fifo.pop_front().expect("selected");
                    Some((admitted, encoded, bytes))
                } else {
                    let received = op.recv(&rx);
                    drop(sel);
                    match received {
                        Ok(batch) => take(w, &mut fifo, &mut filled, batch?)?,
                        Err(_) => reading = false,
                    }
                    None
                }
            };
            let Some((admitted, encoded, bytes)) = oldest else {
                continue;
            };
            filled -= bytes;
            let released = release(admitted, encoded)?;
            if reading {
                match rx.try_recv() {
                    Ok(batch) => take(w, &mut fifo, &mut filled, batch?)?,
                    Err(crossbeam_channel::TryRecvError::Empty) => {}
                    Err(crossbeam_channel::TryRecvError::Disconnected) => reading = false,
                }
            }
            commit(w, released)?;
        }
        Ok(())
    })?;
    match stitcher {
        Some(s) if s.pending() > 0 => Err(Error::Usage(format!(
            "{} inner chunks were left incomplete; the input changed while it was read",
            s.pending()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Batch {
        Batch::new(&[], 0, 0)
    }

    #[test]
    fn a_streaming_reader_makes_alive_batches_then_waits_for_one_back() {
        let (back, recycled) = crossbeam_channel::bounded::<Spare>(2);
        let mut supply = Supply::new(2, &recycled);
        let made = std::cell::Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            batch()
        };
        let first = supply.next(0, make).unwrap();
        let _second = supply.next(1, make).unwrap();
        assert_eq!(made.get(), 2);
        // The third waits until the writer hands the first back, and refills it.
        let hand_back = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            back.send(Some(first)).unwrap();
            back.send(None).unwrap(); // the second, let go of
            back
        });
        let third = supply.next(2, make).unwrap();
        assert_eq!((made.get(), third.first), (2, 2));
        let back = hand_back.join().unwrap();
        // One let go of is made again: still two alive.
        assert!(supply.next(3, make).is_some());
        assert_eq!(made.get(), 3);
        // A writer that hung up ends the reader instead of leaving it waiting.
        drop(back);
        assert!(supply.next(4, make).is_none());
    }
}
