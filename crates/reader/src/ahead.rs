//! Reading ahead: a thread that reads a patch list batch after batch into a bounded
//! queue, so a training loop that asks for the next batch finds it ready whenever the
//! reader outruns the model (PyTorch's `IterableDataset` is one such loop).

use crate::error::{Error, Result};
use crate::patch::Patch;
use crate::read::Reader;
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use svar2_zarr::AnyArray;

/// One batch read: its number in the list and its bytes, laid out as
/// [`Reader::read_batch`] lays them out.
pub struct Batch {
    pub index: usize,
    pub patches: usize,
    pub bytes: Vec<u8>,
}

/// What waiting for the next batch gave.
pub enum Next {
    Batch(Batch),
    /// Every batch has been handed out.
    Done,
    /// Nothing ready yet within the wait.
    Pending,
    Failed(Error),
}

/// Batches read ahead of their use, at most `depth` waiting.
pub struct ReadAhead {
    rx: Receiver<Result<Batch>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    batches: usize,
}

/// Batches waiting at most (`depth`): each holds a whole batch in memory.
pub const MAX_DEPTH: usize = 64;

impl ReadAhead {
    /// Starts reading `patches` of `array` in batches of `batch` (the last may be
    /// shorter), their sample ranges indexing `columns` when given. Every patch is
    /// checked before anything is read, so a bad list fails here, not half-way.
    pub fn start(
        reader: Arc<Reader>,
        array: Arc<AnyArray>,
        patches: Vec<Patch>,
        columns: Option<Vec<u64>>,
        batch: usize,
        depth: usize,
    ) -> Result<ReadAhead> {
        let batch = batch.max(1);
        if depth > MAX_DEPTH {
            return Err(Error::Usage(format!(
                "depth {depth}: at most {MAX_DEPTH} batches wait read ahead"
            )));
        }
        let mut largest = 0;
        for b in patches.chunks(batch) {
            largest = largest.max(match &columns {
                Some(c) => reader.batch_bytes_columns(&array, b, c)?,
                None => reader.batch_bytes(&array, b)?,
            });
        }
        // The waiting batches, the one being read and the one in use.
        let held = (depth.max(1) as u64 + 2).saturating_mul(largest as u64);
        svar2_planner::host::check_affordable(held, || {
            format!(
                "{} batches of {} bytes read ahead",
                depth.max(1) + 2,
                largest
            )
        })
        .map_err(Error::Usage)?;
        let batches = patches.len().div_ceil(batch);
        let (tx, rx) = bounded(depth.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("svar2-read-ahead".into())
            .spawn(move || {
                for (index, b) in patches.chunks(batch).enumerate() {
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    let read = || -> Result<Vec<u8>> {
                        Ok(match &columns {
                            Some(c) => {
                                let mut out = vec![0u8; reader.batch_bytes_columns(&array, b, c)?];
                                reader.read_batch_columns(&array, b, c, &mut out, &stopped)?;
                                out
                            }
                            None => {
                                let mut out = vec![0u8; reader.batch_bytes(&array, b)?];
                                reader.read_batch_cancellable(&array, b, &mut out, &stopped)?;
                                out
                            }
                        })
                    };
                    let r = read().map(|bytes| Batch {
                        index,
                        patches: b.len(),
                        bytes,
                    });
                    let failed = r.is_err();
                    if tx.send(r).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Usage(format!("cannot start the read-ahead thread: {e}")))?;
        Ok(ReadAhead {
            rx,
            stop,
            thread: Some(thread),
            batches,
        })
    }

    /// How many batches the list makes.
    pub fn batches(&self) -> usize {
        self.batches
    }

    /// The next batch, waiting at most `wait` for it.
    pub fn next_within(&self, wait: Duration) -> Next {
        match self.rx.recv_timeout(wait) {
            Ok(Ok(b)) => Next::Batch(b),
            Ok(Err(Error::Cancelled)) => Next::Done,
            Ok(Err(e)) => Next::Failed(e),
            Err(RecvTimeoutError::Timeout) => Next::Pending,
            Err(RecvTimeoutError::Disconnected) => Next::Done,
        }
    }
}

impl Drop for ReadAhead {
    /// Stops the thread (a read in progress is cancelled) and waits for it.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        while self.rx.try_recv().is_ok() {}
        if let Some(t) = self.thread.take() {
            // The thread is blocked at most on a full queue: drain until it leaves.
            while !t.is_finished() {
                let _ = self.rx.recv_timeout(Duration::from_millis(10));
            }
            let _ = t.join();
        }
    }
}
