//! Patches over a chosen list of samples: a patch's sample range indexes the list,
//! not the array, so a training set or a region query can take any subset in any
//! order. Each patch is cut into runs of store-adjacent columns (one run, and no copy,
//! when the subset is contiguous there), read as one batch, then interleaved into
//! place.

use crate::error::{Error, Result};
use crate::patch::Patch;
use crate::read::Reader;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use svar2_zarr::AnyArray;

/// The axis named `samples`, if the array has one.
pub fn samples_axis(a: &AnyArray) -> Option<usize> {
    a.layout.dimension_names.iter().position(|d| d == "samples")
}

/// One run of adjacent store columns inside a patch of the caller's list.
struct Run {
    patch: usize,
    /// Offset of the run inside the patch's samples.
    at: u64,
    read: Patch,
}

/// The runs of each patch (sample ranges checked against the list).
fn runs(a: &AnyArray, patches: &[Patch], columns: &[u64]) -> Result<Vec<Run>> {
    let mut out = Vec::with_capacity(patches.len());
    for (i, p) in patches.iter().enumerate() {
        let end = p.sample_start.checked_add(p.n_samples);
        if p.n_samples == 0 || end.is_none_or(|e| e > columns.len() as u64) {
            return Err(Error::OutOfRange(format!(
                "{}: patch {:?}: samples {}..+{} are outside the {} chosen samples",
                a.name,
                <[u64; 4]>::from(*p),
                p.sample_start,
                p.n_samples,
                columns.len()
            )));
        }
        let cols = &columns[p.sample_start as usize..][..p.n_samples as usize];
        let mut k = 0;
        while k < cols.len() {
            let mut l = 1;
            while k + l < cols.len() && cols[k + l] == cols[k + l - 1].wrapping_add(1) {
                l += 1;
            }
            out.push(Run {
                patch: i,
                at: k as u64,
                read: Patch {
                    variant_start: p.variant_start,
                    n_variants: p.n_variants,
                    sample_start: cols[k],
                    n_samples: l as u64,
                },
            });
            k += l;
        }
    }
    Ok(out)
}

impl Reader {
    /// Bytes a batch over `columns` fills (as [`batch_bytes`](Self::batch_bytes) with
    /// each patch's samples taken from the list).
    pub fn batch_bytes_columns(
        &self,
        a: &AnyArray,
        patches: &[Patch],
        columns: &[u64],
    ) -> Result<usize> {
        if samples_axis(a).is_none() {
            return self.batch_bytes(a, patches);
        }
        let reads: Vec<Patch> = runs(a, patches, columns)?.iter().map(|r| r.read).collect();
        self.batch_bytes(a, &reads)
    }

    /// Reads `patches` whose sample ranges index `columns` (store sample columns, any
    /// order, repeats allowed) into `out`, laid out as [`read_batch`](Self::read_batch)
    /// lays out patches of the same shapes. Arrays without a samples axis ignore
    /// `columns`.
    pub fn read_batch_columns(
        &self,
        a: &Arc<AnyArray>,
        patches: &[Patch],
        columns: &[u64],
        out: &mut [u8],
        cancel: &AtomicBool,
    ) -> Result<()> {
        let Some(s_axis) = samples_axis(a) else {
            return self.read_batch_cancellable(a, patches, out, cancel);
        };
        let runs = runs(a, patches, columns)?;
        let reads: Vec<Patch> = runs.iter().map(|r| r.read).collect();
        if runs.len() == patches.len() {
            // Every patch is one run: the layout is already the caller's.
            return self.read_batch_cancellable(a, &reads, out, cancel);
        }
        let total = self.batch_bytes(a, &reads)?;
        if out.len() != total {
            return Err(Error::Usage(format!(
                "output buffer of {} bytes for a batch of {total}",
                out.len()
            )));
        }
        let mut tmp = vec![0u8; total];
        self.read_batch_cancellable(a, &reads, &mut tmp, cancel)?;
        // A patch block is (outer, samples, inner) in C order: `outer` the axes before
        // samples (the variants among them), `inner` the bytes of the axes after.
        let e = a.dtype.size().expect("batch_bytes refused strings");
        let v_axis = a
            .layout
            .dimension_names
            .iter()
            .position(|d| d == "variants");
        let shape = a.shape();
        let outer_of = |nv: u64| -> usize {
            (0..s_axis)
                .map(|d| if Some(d) == v_axis { nv } else { shape[d] } as usize)
                .product()
        };
        let inner: usize = (s_axis + 1..shape.len())
            .map(|d| if Some(d) == v_axis { 0 } else { shape[d] } as usize)
            .product::<usize>()
            * e;
        let mut patch_at = Vec::with_capacity(patches.len());
        let mut at = 0usize;
        for p in patches {
            patch_at.push(at);
            at += outer_of(p.n_variants) * p.n_samples as usize * inner;
        }
        let mut src = 0usize;
        for r in &runs {
            let p = &patches[r.patch];
            let outer = outer_of(p.n_variants);
            let (ns, l) = (p.n_samples as usize, r.read.n_samples as usize);
            let dst0 = patch_at[r.patch] + r.at as usize * inner;
            for o in 0..outer {
                let d = dst0 + o * ns * inner;
                let s = src + o * l * inner;
                out[d..d + l * inner].copy_from_slice(&tmp[s..s + l * inner]);
            }
            src += outer * l * inner;
        }
        Ok(())
    }
}
