//! Reading a batch of patches: the chunks the batch touches, each read once by an IO
//! thread and decoded once on the pool, then copied into every patch it overlaps.

use crate::error::{Error, Result};
use crate::patch::Patch;
use crossbeam_channel::{bounded, unbounded};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use svar2_blosc::Decoder;
use svar2_storage::stored::Stored;
use svar2_store::boxes::{copy_run, for_each_run};
use svar2_zarr::AnyArray;

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

/// Axes a patch reader's array may have (VCF Zarr arrays have one to three).
pub(crate) const MAX_RANK: usize = 8;

/// A decode thread's zstd context, chunk buffer and wanted ranges.
type DecodeScratch = (Decoder, Vec<u8>, Vec<(usize, usize)>);

thread_local! {
    /// Each decode thread's scratch, reused across chunks and batches.
    static DECODER: RefCell<Option<DecodeScratch>> = const { RefCell::new(None) };
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
        use svar2_planner::host::check_threads;
        let threads = check_threads("threads", threads, false).map_err(Error::Usage)?;
        let io_threads = check_threads("io_threads", io_threads, true).map_err(Error::Usage)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("svar2-decode-{i}"))
            .build()
            .map_err(|e| Error::Usage(format!("cannot start threads: {e}")))?;
        Ok(Reader {
            pool,
            io_threads,
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

    /// Runs `op` on the calling thread with a scope whose spawned work runs on the
    /// decode pool: a pipeline keeps several blocks decoding at once this way while
    /// the calling thread hands them out.
    pub fn in_place_scope<'scope, R>(&self, op: impl FnOnce(&rayon::Scope<'scope>) -> R) -> R {
        self.pool.in_place_scope(op)
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
        if shape.len() > MAX_RANK {
            return Err(Error::Usage(format!(
                "{}: {} axes; patches are read from arrays of up to {MAX_RANK}",
                a.name,
                shape.len()
            )));
        }
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
            offset = offset.saturating_add(bytes);
        }
        svar2_planner::host::check_affordable(offset as u64, || {
            format!("{}: a batch of {} patches", a.name, patches.len())
        })
        .map_err(Error::Usage)?;
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
        let jobs = chunk_users(&placements, &chunk, a.shape());
        let counters = &self.counters;
        counters
            .bytes_useful
            .fetch_add(total as u64, Ordering::Relaxed);
        let batch = Batch {
            a,
            jobs: &jobs,
            placements: &placements,
            chunk: &chunk,
            e,
            out: Out(out.as_mut_ptr(), out.len()),
            counters,
            failed: AtomicBool::new(false),
            first_err: Mutex::new(None),
            cancel,
        };
        let threads = self.pool.current_num_threads().max(1);
        // Work goes in units of consecutive chunks (a shard's, mostly): one task per
        // unit, not per 4 KiB chunk, while leaving ~32 units per thread so the last
        // ones even out the threads' finish.
        let unit = if a.reads_remote() {
            // (One request each: the IO threads keep as many in flight as they are.)
            1
        } else {
            (jobs.len() / (32 * threads)).clamp(1, 64)
        };
        let units = (0..jobs.len())
            .step_by(unit)
            .map(|u| u..(u + unit).min(jobs.len()));
        if a.reads_from_memory() {
            // A chunk's bytes are a slice of a mapped shard: each decode task reads its
            // own, with no IO thread, channel or buffer between.
            let batch = &batch;
            self.pool.install(|| {
                rayon::scope(|s| {
                    for u in units {
                        s.spawn(move |_| {
                            if !batch.stopped() {
                                let mut reads = Inline(a.chunk_reader(), batch.jobs);
                                batch.decode_unit(u, &mut reads);
                            }
                        });
                    }
                })
            });
        } else {
            self.read_through_io_threads(&batch, units);
        }
        match batch.first_err.into_inner().expect("error slot") {
            Some(e) => Err(e),
            None if cancel.load(Ordering::Relaxed) => Err(Error::Cancelled),
            None => Ok(()),
        }
    }

    /// The IO threads read units of chunks and hand them to the pool, which decodes
    /// (files read with `pread`, zarrs' stores: reads that may block).
    fn read_through_io_threads(
        &self,
        batch: &Batch<'_>,
        units: impl Iterator<Item = std::ops::Range<usize>>,
    ) {
        let threads = self.pool.current_num_threads().max(1);
        let (job_tx, job_rx) = unbounded::<std::ops::Range<usize>>();
        let mut n_units = 0;
        for u in units {
            let _ = job_tx.send(u);
            n_units += 1;
        }
        drop(job_tx);
        type Read = Vec<svar2_store::Result<Option<Stored>>>;
        let (read_tx, read_rx) = bounded::<(std::ops::Range<usize>, Read)>(4 * threads);
        let (a, jobs, counters) = (batch.a, batch.jobs, batch.counters);
        std::thread::scope(|ts| {
            for _ in 0..self.io_threads.min(n_units) {
                let (job_rx, read_tx) = (job_rx.clone(), read_tx.clone());
                ts.spawn(move || {
                    for u in job_rx {
                        if batch.stopped() {
                            break;
                        }
                        counters
                            .reads_in_flight
                            .fetch_add(u.len() as i64, Ordering::Relaxed);
                        let r = u.clone().map(|j| a.read(jobs.idx(j))).collect();
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
                for (u, reads) in read_rx.iter() {
                    if batch.stopped() {
                        continue;
                    }
                    s.spawn(move |_| batch.decode_unit(u, &mut Handed(reads.into_iter(), None)));
                }
            });
        });
    }
}

/// One batch being read: what every decode task shares.
struct Batch<'b> {
    a: &'b AnyArray,
    jobs: &'b Jobs,
    placements: &'b [Placement],
    chunk: &'b [u64],
    /// Bytes per element.
    e: usize,
    out: Out,
    counters: &'b Counters,
    failed: AtomicBool,
    first_err: Mutex<Option<Error>>,
    cancel: &'b AtomicBool,
}

impl Batch<'_> {
    /// Whether a task failed or the caller cancelled: the rest is skipped.
    fn stopped(&self) -> bool {
        self.failed.load(Ordering::Relaxed) || self.cancel.load(Ordering::Relaxed)
    }

    fn fail(&self, e: Error) {
        self.failed.store(true, Ordering::Relaxed);
        self.first_err.lock().expect("error slot").get_or_insert(e);
    }

    /// Decodes jobs `u` (job `j`'s stored bytes from `read(j)`, called in order) on
    /// this decode thread and copies each into the patches it serves.
    fn decode_unit(&self, u: std::ops::Range<usize>, reads: &mut impl UnitReads) {
        let (a, counters, e) = (self.a, self.counters, self.e);
        let decoded = with_decoder(|dec, buf, wanted| {
            for j in u {
                let stored = match reads.read(j) {
                    Ok(s) => s,
                    Err(err) => return self.fail(err.into()),
                };
                let (idx, users) = (self.jobs.idx(j), self.jobs.users(j));
                if let Some(b) = &stored {
                    counters
                        .bytes_read
                        .fetch_add(b.len() as u64, Ordering::Relaxed);
                }
                // The bytes the patches use: unshuffle only those when they are a
                // small part of the chunk.
                let partial =
                    used_bytes(idx, users, self.chunk, self.placements, e) * 4 <= a.chunk_nbytes();
                wanted.clear();
                if partial {
                    for_each_use(idx, users, self.chunk, self.placements, |_, s, _, n| {
                        wanted.push((s * e, (s + n) * e))
                    });
                }
                let w = partial.then_some(wanted.as_slice());
                if let Err(err) = a.decode_into(idx, stored, dec, buf, w) {
                    return self.fail(err.into());
                }
                counters
                    .bytes_decoded
                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                counters.chunks_decoded.fetch_add(1, Ordering::Relaxed);
                scatter(idx, users, self.chunk, self.placements, buf, e, self.out);
            }
        });
        if let Err(err) = decoded {
            self.fail(err.into());
        }
    }
}

/// Where a decode task gets each job's stored bytes, in job order.
trait UnitReads {
    fn read(&mut self, j: usize) -> svar2_store::Result<Option<&[u8]>>;
}

/// Read on the decode thread itself (chunks in mapped shards).
struct Inline<'a>(svar2_zarr::ChunkReader<'a>, &'a Jobs);

impl UnitReads for Inline<'_> {
    fn read(&mut self, j: usize) -> svar2_store::Result<Option<&[u8]>> {
        self.0.read(self.1.idx(j))
    }
}

/// Read by an IO thread and handed over, one per job; the current one kept.
struct Handed(
    std::vec::IntoIter<svar2_store::Result<Option<Stored>>>,
    Option<Stored>,
);

impl UnitReads for Handed {
    fn read(&mut self, _: usize) -> svar2_store::Result<Option<&[u8]>> {
        self.1 = self.0.next().expect("one read per job")?;
        Ok(self.1.as_deref())
    }
}

impl Reader {
    /// Every chunk of `chunks` read by the IO threads and handed, with the decode
    /// thread's decoder and buffer, to `visit` on the decode pool — each one, whatever
    /// another's read or decode gave (for `verify`). At most a few units of chunks are
    /// held between the two stages, so memory does not grow with the store.
    pub fn visit_chunks<F>(&self, a: &Arc<AnyArray>, chunks: &[Vec<u64>], visit: &F) -> Result<()>
    where
        F: Fn(&[u64], svar2_store::Result<Option<Stored>>, &mut Decoder, &mut Vec<u8>) + Sync,
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
        type Read = Vec<svar2_store::Result<Option<Stored>>>;
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
                        let visited = with_decoder(|dec, buf, _| {
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

/// Runs `f` with this decode thread's decoder, chunk buffer and list of wanted byte
/// ranges, made on first use and kept (no zstd context or buffer per chunk).
fn with_decoder<R>(
    f: impl FnOnce(&mut Decoder, &mut Vec<u8>, &mut Vec<(usize, usize)>) -> R,
) -> svar2_store::Result<R> {
    DECODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some((Decoder::new()?, Vec::new(), Vec::new()));
        }
        let (dec, buf, wanted) = slot.as_mut().expect("set above");
        Ok(f(dec, buf, wanted))
    })
}

/// The chunks a batch touches, each once, with the patches it serves; in key order (a
/// shard's chunks together). Flat: three vectors a batch, not two per chunk.
pub(crate) struct Jobs {
    rank: usize,
    /// Chunk `j`'s index is `idx[j * rank..(j + 1) * rank]`.
    idx: Vec<u64>,
    /// Chunk `j` serves patches `users[starts[j]..starts[j + 1]]`.
    starts: Vec<u32>,
    users: Vec<u32>,
}

impl Jobs {
    pub(crate) fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub(crate) fn idx(&self, j: usize) -> &[u64] {
        &self.idx[j * self.rank..(j + 1) * self.rank]
    }

    pub(crate) fn users(&self, j: usize) -> &[u32] {
        &self.users[self.starts[j] as usize..self.starts[j + 1] as usize]
    }

    /// Every chunk with its patches, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u64], &[u32])> {
        (0..self.len()).map(|j| (self.idx(j), self.users(j)))
    }
}

/// Each chunk a batch touches once, with the patches it serves (see [`Jobs`]).
pub(crate) fn chunk_users(placements: &[Placement], chunk: &[u64], shape: &[u64]) -> Jobs {
    let rank = chunk.len();
    // Every (chunk, patch) pair, the chunk indices flat.
    let mut keys: Vec<u64> = Vec::new();
    let mut owner: Vec<u32> = Vec::new();
    let mut at = vec![0u64; rank];
    for (i, p) in placements.iter().enumerate() {
        let first = |d: usize| p.lo[d] / chunk[d];
        let last = |d: usize| (p.hi[d] - 1) / chunk[d];
        for (d, x) in at.iter_mut().enumerate() {
            *x = first(d);
        }
        'odometer: loop {
            keys.extend_from_slice(&at);
            owner.push(i as u32);
            for d in (0..rank).rev() {
                if at[d] < last(d) {
                    at[d] += 1;
                    continue 'odometer;
                }
                at[d] = first(d);
            }
            break;
        }
    }
    let key = |k: u32| &keys[k as usize * rank..(k as usize + 1) * rank];
    let mut order: Vec<u32> = (0..owner.len() as u32).collect();
    // Chunk positions as numbers in C order (their order is the keys' order) when the
    // grid's size fits in 64 bits — every real array's — so the sort compares words.
    let grid: Option<Vec<u64>> = (0..rank)
        .rev()
        .try_fold(
            (Vec::with_capacity(rank), 1u64),
            |(mut strides, size), d| {
                strides.push(size);
                Some((
                    strides,
                    size.checked_mul(shape[d].div_ceil(chunk[d].max(1)))?,
                ))
            },
        )
        .map(|(mut strides, _)| {
            strides.reverse();
            strides
        });
    match grid {
        Some(strides) => {
            let mut packed: Vec<u128> = (0..owner.len())
                .map(|k| {
                    let at = key(k as u32)
                        .iter()
                        .zip(&strides)
                        .map(|(i, s)| i * s)
                        .sum::<u64>();
                    (at as u128) << 64 | (owner[k] as u128) << 32 | k as u128
                })
                .collect();
            packed.sort_unstable();
            for (o, p) in order.iter_mut().zip(&packed) {
                *o = *p as u32;
            }
        }
        None => order.sort_unstable_by(|&x, &y| {
            key(x)
                .cmp(key(y))
                .then(owner[x as usize].cmp(&owner[y as usize]))
        }),
    }
    let mut jobs = Jobs {
        rank,
        idx: Vec::new(),
        starts: Vec::new(),
        users: Vec::with_capacity(order.len()),
    };
    for (n, &k) in order.iter().enumerate() {
        if n == 0 || key(order[n - 1]) != key(k) {
            jobs.idx.extend_from_slice(key(k));
            jobs.starts.push(jobs.users.len() as u32);
        }
        jobs.users.push(owner[k as usize]);
    }
    jobs.starts.push(jobs.users.len() as u32);
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
    let rank = idx.len();
    // (`place` allows at most MAX_RANK axes: the boxes live on the stack.)
    let mut origin = [0u64; MAX_RANK];
    let (mut lo, mut hi) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
    for d in 0..rank {
        origin[d] = idx[d] * chunk[d];
    }
    for &u in users {
        let p = &placements[u as usize];
        for d in 0..rank {
            lo[d] = p.lo[d].max(origin[d]);
            hi[d] = p.hi[d].min(origin[d] + chunk[d]);
        }
        for_each_run(
            &lo[..rank],
            &hi[..rank],
            &origin[..rank],
            chunk,
            &p.lo,
            &p.shape,
            |s, d, n| f(p, s, d, n),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn placement(lo: [u64; 3], hi: [u64; 3]) -> Placement {
        Placement {
            lo: lo.to_vec(),
            hi: hi.to_vec(),
            shape: lo.iter().zip(&hi).map(|(l, h)| h - l).collect(),
            offset: 0,
        }
    }

    /// The jobs, as (chunk, patches) pairs.
    fn pairs(j: &Jobs) -> Vec<(Vec<u64>, Vec<u32>)> {
        j.iter().map(|(i, u)| (i.to_vec(), u.to_vec())).collect()
    }

    #[test]
    fn chunk_users_lists_each_chunk_once_in_key_order_with_its_patches() {
        let chunk = [2048, 1, 2];
        let mut x = 7u64;
        let mut ps = Vec::new();
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (v, s) = (x % 70_000, (x >> 20) % 1000);
            ps.push(placement([v, s, 0], [v + 4096, s + 1 + (x >> 40) % 3, 2]));
        }
        // Every chunk each patch touches, the slow way.
        let mut want: BTreeMap<Vec<u64>, Vec<u32>> = BTreeMap::new();
        for (i, p) in ps.iter().enumerate() {
            for v in p.lo[0] / chunk[0]..=(p.hi[0] - 1) / chunk[0] {
                for s in p.lo[1]..p.hi[1] {
                    want.entry(vec![v, s, 0]).or_default().push(i as u32);
                }
            }
        }
        let want: Vec<_> = want.into_iter().collect();
        assert_eq!(pairs(&chunk_users(&ps, &chunk, &[81_920, 1003, 2])), want);
        // A grid too large for 64-bit positions sorts the indices themselves.
        let huge = [u64::MAX, u64::MAX, 2];
        assert_eq!(pairs(&chunk_users(&ps, &chunk, &huge)), want);
    }
}
