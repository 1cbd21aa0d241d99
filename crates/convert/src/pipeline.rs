//! The writer's side of a conversion: batches from the readers (re-joined by the
//! stitcher when read in pieces) are admitted to the writer in arrival order, encoded
//! on the pool several at once (a window sized by the plan: the cores and the memory
//! budget), and committed in admission order. The writer thread only admits and
//! commits — statistics, layouts, appends of encoded bytes — so the pool's threads,
//! not the arrays of one batch, bound the encoding, and readers never wait for one
//! batch's encoding to end before theirs is taken.

use crate::error::{Error, Result};
use crate::writer::{Admitted, Encoded, Writer};
use crossbeam_channel::{Receiver, Select, Sender};
use std::collections::VecDeque;
use std::sync::Arc;
use svar2_vcf::column::Batch;

/// A batch being encoded: what the writer admitted, and where its chunks arrive.
type InFlight = (Arc<Admitted>, Receiver<Encoded>);

/// Feeds the readers' batches through the stitcher (when reading in pieces) to the
/// writer, encoding up to `window` batches at once on `pool`, and hands a chunk the
/// stitcher completes only in part — one this partition shares with another — to
/// `shared`. Ends with the writer holding every record, or the first error. Runs on
/// the calling thread (the `writer`), which must not be one of `pool`'s.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drain(
    rx: Receiver<svar2_vcf::Result<Batch>>,
    mut stitcher: Option<&mut svar2_vcf::pieces::Stitcher>,
    w: &mut Writer,
    pool: &rayon::ThreadPool,
    window: usize,
    recycle: &Sender<Batch>,
    pb: &indicatif::ProgressBar,
    mut shared: impl FnMut(Batch) -> Result<()>,
) -> Result<()> {
    let (set, geometry) = w.encoding_context();
    let (set, geometry) = (&set, &geometry);
    let window = window.max(1);
    pool.in_place_scope(|scope| -> Result<()> {
        let mut fifo: VecDeque<InFlight> = VecDeque::new();
        // The oldest batch's chunks, committed (a shard row it finishes is assembled
        // in parallel on the pool) and its batch handed back for reuse.
        let commit = |w: &mut Writer,
                      admitted: Arc<Admitted>,
                      encoded: std::result::Result<Encoded, crossbeam_channel::RecvError>|
         -> Result<()> {
            let encoded = encoded.map_err(|_| Error::Usage("an encoding thread failed".into()))?;
            let admitted = Arc::into_inner(admitted).expect("the encoder let go of it");
            let batch = w.commit(admitted, encoded, Some(pool))?;
            let _ = recycle.try_send(batch);
            Ok(())
        };
        let mut reading = true;
        while reading || !fifo.is_empty() {
            if !reading || fifo.len() >= window {
                let (admitted, done) = fifo.pop_front().expect("not empty");
                commit(w, admitted, done.recv())?;
                continue;
            }
            // The next batch, or the end of the oldest one's encoding, whichever first.
            let mut sel = Select::new();
            let next = sel.recv(&rx);
            if let Some((_, done)) = fifo.front() {
                sel.recv(done);
            }
            let op = sel.select();
            if op.index() != next {
                let encoded = op.recv(&fifo.front().expect("selected").1);
                drop(sel);
                let (admitted, _) = fifo.pop_front().expect("selected");
                commit(w, admitted, encoded)?;
                continue;
            }
            let received = op.recv(&rx);
            drop(sel);
            let batch = match received {
                Ok(batch) => batch?,
                Err(_) => {
                    reading = false;
                    continue;
                }
            };
            pb.inc(batch.len() as u64);
            let batch = match stitcher.as_deref_mut() {
                None => batch,
                Some(s) => match s.push(batch) {
                    Some(whole) if s.is_shared(&whole) => {
                        shared(whole)?;
                        continue;
                    }
                    Some(whole) => whole,
                    None => continue,
                },
            };
            let admitted = Arc::new(w.admit(batch)?);
            let (tx, done) = crossbeam_channel::bounded(1);
            let mine = admitted.clone();
            scope.spawn(move |_| {
                let encoded = mine.encode(set, geometry);
                drop(mine); // before the send: the writer takes the batch back whole
                let _ = tx.send(encoded);
            });
            fifo.push_back((admitted, done));
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
