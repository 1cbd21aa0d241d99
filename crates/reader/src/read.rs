//! Reading a batch of patches: the chunks the batch touches, each read once by an IO
//! thread and decoded once on the pool, then copied into every patch it overlaps.

use crate::error::{Error, Result};
use crate::patch::Patch;
use crossbeam_channel::{bounded, unbounded};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use svar2_store::any::AnyArray;
use svar2_store::block::{blocks, copy_run, for_each_run};
use svar2_store::blosc::Decoder;

/// What the reader has done so far (all batches): bytes read from storage, bytes
/// decoded, bytes the patches needed (decoded ÷ useful: below 1 when a batch's
/// patches share chunks, unlike `inspect`'s per-patch amplification), and
/// reads in flight now.
#[derive(Debug, Default)]
pub struct Counters {
    pub bytes_read: AtomicU64,
    pub bytes_decoded: AtomicU64,
    pub bytes_useful: AtomicU64,
    pub chunks_decoded: AtomicU64,
    pub reads_in_flight: AtomicI64,
}

impl Counters {
    /// Decoded ÷ useful bytes so far.
    pub fn decoded_per_useful(&self) -> f64 {
        self.bytes_decoded.load(Ordering::Relaxed) as f64
            / self.bytes_useful.load(Ordering::Relaxed).max(1) as f64
    }
}

/// The patch reader: an IO pool and a decode pool.
pub struct Reader {
    pool: rayon::ThreadPool,
    io_threads: usize,
    pub counters: Arc<Counters>,
}

thread_local! {
    /// Each decode thread's zstd context and chunk buffer, reused across chunks.
    static DECODER: RefCell<Option<(Decoder, Vec<u8>)>> = const { RefCell::new(None) };
}

/// Where each patch goes in the output and what it covers.
pub(crate) struct Placement {
    pub(crate) lo: Vec<u64>,
    pub(crate) hi: Vec<u64>,
    /// The patch's block shape (C order in the output).
    pub(crate) shape: Vec<u64>,
    pub(crate) offset: usize,
}

/// The output buffer, written by decode tasks at disjoint places.
#[derive(Clone, Copy)]
struct Out(*mut u8, usize);
// SAFETY: the pointer is only written through while `read_batch` holds the `&mut`
// buffer and waits for every task; each (patch, chunk) overlap is a distinct region of
// the output (patches own disjoint ranges, a patch's chunks disjoint boxes of it).
unsafe impl Send for Out {}
// SAFETY: as above; tasks never write the same bytes.
unsafe impl Sync for Out {}

impl Out {
    /// `len` bytes at `at`.
    ///
    /// # Safety
    /// `at + len` lies within the buffer, the buffer outlives the use, and no other
    /// thread touches these bytes meanwhile.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, at: usize, len: usize) -> &mut [u8] {
        assert!(at + len <= self.1, "a patch run outside the output buffer");
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(at), len) }
    }
}

impl Reader {
    /// A reader with `threads` decode threads and `io_threads` readers.
    pub fn new(threads: usize, io_threads: usize) -> Result<Reader> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("svar2-decode-{i}"))
            .build()
            .map_err(|e| Error::Usage(format!("cannot start threads: {e}")))?;
        Ok(Reader {
            pool,
            io_threads: io_threads.max(1),
            counters: Arc::new(Counters::default()),
        })
    }

    /// Runs `op` on the decode pool, so that any rayon work inside it (zarrs' parallel
    /// subset reads: sample names, positions) runs on this reader's threads, never on
    /// rayon's global pool — which a forked child (a DataLoader worker) holds only as a
    /// copy whose threads do not exist.
    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        self.pool.install(op)
    }

    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    pub fn io_threads(&self) -> usize {
        self.io_threads
    }

    /// Where each patch of a batch lies in the array and in the output.
    pub(crate) fn place(a: &AnyArray, patches: &[Patch]) -> Result<(Vec<Placement>, usize)> {
        let e = a.dtype.size().ok_or_else(|| {
            Error::Usage(format!(
                "{}: a string array; patches are read from numeric arrays",
                a.name
            ))
        })?;
        let dims = &a.layout.dimension_names;
        let shape = a.shape();
        let v = dims
            .iter()
            .position(|d| d == "variants")
            .ok_or_else(|| Error::Usage(format!("{}: no variants axis", a.name)))?;
        let s = dims.iter().position(|d| d == "samples");
        let mut out = Vec::with_capacity(patches.len());
        let mut offset = 0usize;
        for p in patches {
            let mut lo = vec![0u64; shape.len()];
            let mut hi = shape.to_vec();
            (lo[v], hi[v]) = (
                p.variant_start,
                p.variant_start.saturating_add(p.n_variants),
            );
            if let Some(s) = s {
                (lo[s], hi[s]) = (p.sample_start, p.sample_start.saturating_add(p.n_samples));
            }
            if (0..shape.len()).any(|d| hi[d] > shape[d] || hi[d] <= lo[d]) {
                return Err(Error::OutOfRange(format!(
                    "{}: patch {:?} is empty or outside the array ({:?})",
                    a.name,
                    <[u64; 4]>::from(*p),
                    shape
                )));
            }
            let pshape: Vec<u64> = lo.iter().zip(&hi).map(|(l, h)| h - l).collect();
            let bytes = pshape.iter().product::<u64>() as usize * e;
            out.push(Placement {
                lo,
                hi,
                shape: pshape,
                offset,
            });
            offset += bytes;
        }
        Ok((out, offset))
    }

    /// Bytes a batch of patches fills (patch after patch, each C order: variants,
    /// samples, then the trailing axes whole).
    pub fn batch_bytes(&self, a: &AnyArray, patches: &[Patch]) -> Result<usize> {
        Ok(Self::place(a, patches)?.1)
    }

    /// Reads `patches` of array `a` into `out` (exactly [`batch_bytes`]
    /// (Self::batch_bytes) long). Chunks that are not stored read as the fill value.
    pub fn read_batch(&self, a: &Arc<AnyArray>, patches: &[Patch], out: &mut [u8]) -> Result<()> {
        self.read_batch_cancellable(a, patches, out, &AtomicBool::new(false))
    }

    /// [`read_batch`](Self::read_batch) that stops early, with [`Error::Cancelled`],
    /// once `cancel` is set (another thread sets it: Ctrl-C in Python). `out` is then
    /// partly written.
    pub fn read_batch_cancellable(
        &self,
        a: &Arc<AnyArray>,
        patches: &[Patch],
        out: &mut [u8],
        cancel: &AtomicBool,
    ) -> Result<()> {
        let (placements, total) = Self::place(a, patches)?;
        if out.len() != total {
            return Err(Error::Usage(format!(
                "output buffer of {} bytes for a batch of {total}",
                out.len()
            )));
        }
        let e = a.dtype.size().expect("checked by place");
        let chunk = a.chunk_shape();
        let jobs = Arc::new(chunk_users(&placements, &chunk));
        let placements = Arc::new(placements);
        let counters = &self.counters;
        counters
            .bytes_useful
            .fetch_add(total as u64, Ordering::Relaxed);
        let outp = Out(out.as_mut_ptr(), out.len());
        let threads = self.pool.current_num_threads().max(1);
        // Work goes in units of consecutive chunks (a shard's, mostly): one message and
        // one task per unit, not per 4 KiB chunk, while leaving ~8 units per thread.
        let unit = (jobs.len() / (8 * threads)).clamp(1, 64);
        let units: Vec<std::ops::Range<usize>> = (0..jobs.len())
            .step_by(unit)
            .map(|u| u..(u + unit).min(jobs.len()))
            .collect();
        let (job_tx, job_rx) = unbounded::<std::ops::Range<usize>>();
        for u in units {
            let _ = job_tx.send(u);
        }
        drop(job_tx);
        type Stored = Vec<Option<Vec<u8>>>;
        let (read_tx, read_rx) =
            bounded::<(std::ops::Range<usize>, svar2_store::Result<Stored>)>(4 * threads);
        let failed = AtomicBool::new(false);
        let first_err: Mutex<Option<Error>> = Mutex::new(None);
        let fail = |e: Error| {
            failed.store(true, Ordering::Relaxed);
            first_err.lock().expect("error slot").get_or_insert(e);
        };
        std::thread::scope(|ts| {
            for _ in 0..self.io_threads.min(jobs.len()) {
                let (job_rx, read_tx, jobs, a, failed) = (
                    job_rx.clone(),
                    read_tx.clone(),
                    jobs.clone(),
                    a.clone(),
                    &failed,
                );
                ts.spawn(move || {
                    for u in job_rx {
                        if failed.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        counters
                            .reads_in_flight
                            .fetch_add(u.len() as i64, Ordering::Relaxed);
                        let r = jobs[u.clone()].iter().map(|(idx, _)| a.read(idx)).collect();
                        counters
                            .reads_in_flight
                            .fetch_sub(u.len() as i64, Ordering::Relaxed);
                        if read_tx.send((u, r)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(read_tx);
            // This thread hands reads to the pool; the pool only decodes and copies.
            self.pool.in_place_scope(|s| {
                for (u, r) in read_rx.iter() {
                    let stored = match r {
                        Ok(b) => b,
                        Err(e) => {
                            fail(e.into());
                            continue;
                        }
                    };
                    if failed.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
                        continue;
                    }
                    let (jobs, placements, a, fail) = (&jobs, &placements, a, &fail);
                    let chunk = &chunk;
                    s.spawn(move |_| {
                        let decoded = with_decoder(|dec, buf| {
                            for ((idx, users), stored) in jobs[u].iter().zip(stored) {
                                if let Some(b) = &stored {
                                    counters
                                        .bytes_read
                                        .fetch_add(b.len() as u64, Ordering::Relaxed);
                                }
                                // The bytes the patches use: unshuffle only those when
                                // they are a small part of the chunk.
                                let partial = used_bytes(idx, users, chunk, placements, e) * 4
                                    <= a.chunk_nbytes();
                                let wanted = if partial {
                                    wanted_ranges(idx, users, chunk, placements, e)
                                } else {
                                    Vec::new()
                                };
                                let w = partial.then_some(wanted.as_slice());
                                if let Err(e) = a.decode_into(idx, stored, dec, buf, w) {
                                    return fail(e.into());
                                }
                                counters
                                    .bytes_decoded
                                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                                counters.chunks_decoded.fetch_add(1, Ordering::Relaxed);
                                scatter(idx, users, chunk, placements, buf, e, outp);
                            }
                        });
                        if let Err(e) = decoded {
                            fail(e.into());
                        }
                    });
                }
            });
        });
        match first_err.into_inner().expect("error slot") {
            Some(e) => Err(e),
            None if cancel.load(Ordering::Relaxed) => Err(Error::Cancelled),
            None => Ok(()),
        }
    }
}

impl Reader {
    /// Every chunk of `chunks` read by the IO threads and handed, with the decode
    /// thread's decoder and buffer, to `visit` on the decode pool — each one, whatever
    /// another's read or decode gave (for `verify`). At most a few units of chunks are
    /// held between the two stages, so memory does not grow with the store.
    pub fn visit_chunks<F>(&self, a: &Arc<AnyArray>, chunks: &[Vec<u64>], visit: &F) -> Result<()>
    where
        F: Fn(&[u64], svar2_store::Result<Option<Vec<u8>>>, &mut Decoder, &mut Vec<u8>) + Sync,
    {
        let error_slot: Mutex<Option<svar2_store::Error>> = Mutex::new(None);
        let first_err = &error_slot;
        let threads = self.pool.current_num_threads().max(1);
        let unit = 32;
        let (job_tx, job_rx) = unbounded::<std::ops::Range<usize>>();
        for u in (0..chunks.len()).step_by(unit) {
            let _ = job_tx.send(u..(u + unit).min(chunks.len()));
        }
        drop(job_tx);
        type Read = Vec<svar2_store::Result<Option<Vec<u8>>>>;
        let (read_tx, read_rx) = bounded::<(std::ops::Range<usize>, Read)>(2 * threads);
        let counters = &self.counters;
        std::thread::scope(|ts| {
            for _ in 0..self.io_threads.min(chunks.len().div_ceil(unit)).max(1) {
                let (job_rx, read_tx) = (job_rx.clone(), read_tx.clone());
                ts.spawn(move || {
                    for u in job_rx {
                        let r: Read = chunks[u.clone()].iter().map(|idx| a.read(idx)).collect();
                        if read_tx.send((u, r)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(read_tx);
            self.pool.in_place_scope(|s| {
                for (u, reads) in read_rx.iter() {
                    s.spawn(move |_| {
                        let visited = with_decoder(|dec, buf| {
                            for (idx, r) in chunks[u.clone()].iter().zip(reads) {
                                if let Ok(Some(b)) = &r {
                                    counters
                                        .bytes_read
                                        .fetch_add(b.len() as u64, Ordering::Relaxed);
                                }
                                visit(idx, r, dec, buf);
                            }
                        });
                        if let Err(e) = visited {
                            first_err.lock().expect("error slot").get_or_insert(e);
                        }
                    });
                }
            });
        });
        // A decode thread that could not make its decoder visited nothing: an error,
        // never chunks passed over quietly.
        match error_slot.into_inner().expect("error slot") {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

/// Runs `f` with this decode thread's decoder and scratch buffer, made on first use
/// (each thread keeps its zstd context).
fn with_decoder<R>(f: impl FnOnce(&mut Decoder, &mut Vec<u8>) -> R) -> svar2_store::Result<R> {
    DECODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some((Decoder::new()?, Vec::new()));
        }
        let (dec, buf) = slot.as_mut().expect("set above");
        Ok(f(dec, buf))
    })
}

/// Each chunk a batch touches once, with the patches it serves; in key order (a
/// shard's chunks together).
pub(crate) fn chunk_users(placements: &[Placement], chunk: &[u64]) -> Vec<(Vec<u64>, Vec<u32>)> {
    let mut serves: HashMap<Vec<u64>, Vec<u32>> = HashMap::new();
    for (i, p) in placements.iter().enumerate() {
        for c in blocks(&p.lo, &p.hi, chunk) {
            serves.entry(c).or_default().push(i as u32);
        }
    }
    let mut jobs: Vec<(Vec<u64>, Vec<u32>)> = serves.into_iter().collect();
    jobs.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    jobs
}

/// Calls `f(patch, source offset, patch offset, length)` (in elements) for every run
/// of chunk `idx` that a patch of `users` covers.
pub(crate) fn for_each_use(
    idx: &[u64],
    users: &[u32],
    chunk: &[u64],
    placements: &[Placement],
    mut f: impl FnMut(&Placement, usize, usize, usize),
) {
    let origin: Vec<u64> = idx.iter().zip(chunk).map(|(i, c)| i * c).collect();
    for &u in users {
        let p = &placements[u as usize];
        let lo: Vec<u64> = p.lo.iter().zip(&origin).map(|(a, b)| *a.max(b)).collect();
        let hi: Vec<u64> = (0..lo.len())
            .map(|d| p.hi[d].min(origin[d] + chunk[d]))
            .collect();
        for_each_run(&lo, &hi, &origin, chunk, &p.lo, &p.shape, |s, d, n| {
            f(p, s, d, n)
        });
    }
}

/// Copies a decoded chunk into every patch of the batch that overlaps it.
fn scatter(
    idx: &[u64],
    users: &[u32],
    chunk: &[u64],
    placements: &[Placement],
    buf: &[u8],
    e: usize,
    outp: Out,
) {
    for_each_use(idx, users, chunk, placements, |p, s, d, n| {
        let (at, len) = (p.offset + d * e, n * e);
        // SAFETY: `at + len` lies within this patch's part of the buffer (for_each_run
        // stays inside the patch's box), which no other task writes (see `Out`), and
        // read_batch waits for every task.
        let dst = unsafe { outp.slice(at, len) };
        copy_run(dst, &buf[s * e..(s + n) * e]);
    });
}

/// The byte ranges of a chunk that the patches using it copy out (two patches may
/// want the same bytes: unshuffling them twice is harmless and cheaper than sorting).
fn wanted_ranges(
    idx: &[u64],
    users: &[u32],
    chunk: &[u64],
    placements: &[Placement],
    e: usize,
) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    for_each_use(idx, users, chunk, placements, |_, s, _, n| {
        ranges.push((s * e, (s + n) * e))
    });
    ranges
}

/// Bytes of a chunk its patches use (overlapping patches counted twice).
fn used_bytes(
    idx: &[u64],
    users: &[u32],
    chunk: &[u64],
    placements: &[Placement],
    e: usize,
) -> usize {
    users
        .iter()
        .map(|&u| {
            let p = &placements[u as usize];
            (0..chunk.len())
                .map(|d| {
                    let o = idx[d] * chunk[d];
                    p.hi[d].min(o + chunk[d]).saturating_sub(p.lo[d].max(o)) as usize
                })
                .product::<usize>()
                * e
        })
        .sum()
}
