//! A batch of patches as one [`BatchPlan`]: the chunks read by the IO threads, every
//! frame parsed and checked on the host, and the scatter as rectangles — what the GPU
//! executes (`svar2_gpu::device`) and what its CPU executor checks everywhere.

use crate::error::{Error, Result};
use crate::patch::Patch;
use crate::read::{chunk_users, for_each_use, Jobs, Reader};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use svar2_gpu::batch_plan::{BatchPlan, Rect};
use svar2_storage::stored::Stored;
use svar2_store::codec::Raw;
use svar2_zarr::AnyArray;

/// Runs (source offset, destination offset, length in bytes) merged into rectangles:
/// consecutive runs of one length at constant strides become one.
#[derive(Default)]
struct Rects(Vec<Rect>);

impl Rects {
    fn push(&mut self, src: usize, dst: usize, len: usize) {
        if let Some(r) = self.0.last_mut() {
            if r.row_bytes == len {
                let last_src = r.src + (r.rows - 1) * r.src_stride;
                let last_dst = r.dst + (r.rows - 1) * r.dst_stride;
                if r.rows == 1 && src > last_src && dst > last_dst {
                    (r.src_stride, r.dst_stride, r.rows) = (src - last_src, dst - last_dst, 2);
                    return;
                }
                if r.rows > 1 && src == last_src + r.src_stride && dst == last_dst + r.dst_stride {
                    r.rows += 1;
                    return;
                }
            }
        }
        self.0.push(Rect {
            src,
            src_stride: 0,
            dst,
            dst_stride: 0,
            rows: 1,
            row_bytes: len,
        });
    }
}

impl Reader {
    /// Reads the chunks `patches` of `a` touch (IO threads) and plans their decode and
    /// scatter as one batch: `plan.patch_bytes` = [`batch_bytes`](Self::batch_bytes),
    /// patch after patch as [`read_batch`](Self::read_batch) lays them out. Chunks
    /// that are not stored, or not blosc-zstd, are decoded here and copied as is.
    pub fn plan_batch(&self, a: &Arc<AnyArray>, patches: &[Patch]) -> Result<BatchPlan> {
        let (placements, total) = Reader::place(a, patches)?;
        let e = a.dtype.size().expect("checked by place");
        let chunk = a.chunk_shape();
        let jobs = chunk_users(&placements, &chunk, a.shape());
        let stored = self.read_all(a, &jobs)?;
        let counters = &self.counters;
        let mut plan = BatchPlan::default();
        let nbytes = a.chunk_nbytes();
        for ((idx, users), stored) in jobs.iter().zip(stored) {
            if let Some(b) = &stored {
                counters
                    .bytes_read
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            let c = match stored {
                Some(b) if a.blosc_frames() => {
                    plan.push_frame(&a.key(idx), a.checked(idx, &b)?, nbytes)?
                }
                other => match a.decode(idx, other.as_deref())? {
                    Raw::Fixed(bytes) => plan.push_decoded(&a.key(idx), &bytes),
                    Raw::Strings { .. } => {
                        return Err(Error::Usage(format!("{}: a string array", a.name)))
                    }
                },
            };
            let mut rects = Rects::default();
            for_each_use(idx, users, &chunk, &placements, |p, s, d, n| {
                rects.push(s * e, p.offset + d * e, n * e)
            });
            for r in rects.0 {
                plan.push_rect(c, r);
            }
        }
        plan.patch_bytes = total;
        counters
            .bytes_decoded
            .fetch_add((jobs.len() * nbytes) as u64, Ordering::Relaxed);
        counters
            .chunks_decoded
            .fetch_add(jobs.len() as u64, Ordering::Relaxed);
        counters
            .bytes_useful
            .fetch_add(total as u64, Ordering::Relaxed);
        Ok(plan)
    }

    /// Every chunk of `jobs` read, the IO threads each taking a run of consecutive
    /// chunks (a shard's, mostly).
    fn read_all(&self, a: &Arc<AnyArray>, jobs: &Jobs) -> Result<Vec<Option<Stored>>> {
        let per = jobs.len().div_ceil(self.io_threads()).max(1);
        let parts: Vec<svar2_store::Result<Vec<Option<Stored>>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..jobs.len())
                .step_by(per)
                .map(|p| {
                    let part = p..(p + per).min(jobs.len());
                    s.spawn(move || part.map(|j| a.read(jobs.idx(j))).collect())
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("an IO thread panicked"))
                .collect()
        });
        let mut all = Vec::with_capacity(jobs.len());
        for p in parts {
            all.extend(p?);
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_at_constant_strides_merge_into_rectangles() {
        let mut r = Rects::default();
        for row in 0..4 {
            r.push(row * 16, 100 + row * 2, 2);
        }
        r.push(1000, 0, 2); // breaks the stride
        r.push(2000, 50, 8); // another length
        assert_eq!(r.0.len(), 3);
        assert_eq!(
            r.0[0],
            Rect {
                src: 0,
                src_stride: 16,
                dst: 100,
                dst_stride: 2,
                rows: 4,
                row_bytes: 2
            }
        );
    }
}
