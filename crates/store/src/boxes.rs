//! Blocks of an array — chunks, tiles, patches: C-order boxes at an origin — and
//! copying the overlap of one into another as runs contiguous in both. Rechunk copies
//! source chunks into target chunks with it, the reader chunks into patches.

/// The block indices (per axis `lo/step ..= (hi-1)/step`) a box `[lo, hi)` touches on
/// a grid of `step`, in C order. The box must not be empty.
pub fn blocks(lo: &[u64], hi: &[u64], step: &[u64]) -> Vec<Vec<u64>> {
    let ranges: Vec<(u64, u64)> = (0..lo.len())
        .map(|d| (lo[d] / step[d], (hi[d] - 1) / step[d]))
        .collect();
    let mut out = vec![Vec::with_capacity(lo.len())];
    for &(a, b) in &ranges {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (a..=b).map(move |i| {
                    let mut v = prefix.clone();
                    v.push(i);
                    v
                })
            })
            .collect();
    }
    out
}

/// The number of elements of a box of `shape`, or `None` when it overflows (a shape
/// read from a file is never multiplied unchecked).
pub fn elements(shape: &[u64]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1u64, |a, &x| a.checked_mul(x))
        .and_then(|n| usize::try_from(n).ok())
}

/// Copies one run. Patch-sized chunks make runs short (8 samples' diploid calls are
/// 16 bytes), where a `memmove` call per run cost a fifth of a rechunk: sizes that are
/// small powers of two are copied inline.
#[inline]
pub fn copy_run(dst: &mut [u8], src: &[u8]) {
    fn fixed<const N: usize>(dst: &mut [u8], src: &[u8]) {
        let s: &[u8; N] = src.try_into().expect("same length");
        let d: &mut [u8; N] = dst.try_into().expect("same length");
        *d = *s;
    }
    match dst.len() {
        1 => dst[0] = src[0],
        2 => fixed::<2>(dst, src),
        4 => fixed::<4>(dst, src),
        8 => fixed::<8>(dst, src),
        16 => fixed::<16>(dst, src),
        32 => fixed::<32>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}

/// Ranks whose scratch lives on the stack in [`for_each_run`].
const STACK_RANK: usize = 8;

/// Calls `f(source offset, target offset, length)`, in elements, for every run of the
/// box `[lo, hi)` (array coordinates), where the source block starts at `src_origin`
/// with shape `src_shape` and the target block at `dst_origin` with shape `dst_shape`.
pub fn for_each_run(
    lo: &[u64],
    hi: &[u64],
    src_origin: &[u64],
    src_shape: &[u64],
    dst_origin: &[u64],
    dst_shape: &[u64],
    mut f: impl FnMut(usize, usize, usize),
) {
    let rank = lo.len();
    if rank == 0 {
        f(0, 0, 1);
        return;
    }
    if (0..rank).any(|d| hi[d] <= lo[d]) {
        return;
    }
    // Strides and the odometer on the stack for the ranks arrays have (one call per
    // chunk a patch touches: the reader's hot path), on the heap past that.
    let mut on_stack = [0u64; 3 * STACK_RANK];
    let mut spilled = Vec::new();
    let scratch: &mut [u64] = if rank <= STACK_RANK {
        &mut on_stack[..3 * rank]
    } else {
        spilled.resize(3 * rank, 0);
        &mut spilled
    };
    let (ss, rest) = scratch.split_at_mut(rank);
    let (ds, at) = rest.split_at_mut(rank);
    for (strides, shape) in [(&mut *ss, src_shape), (&mut *ds, dst_shape)] {
        strides[rank - 1] = 1;
        for d in (0..rank - 1).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
    }
    // Trailing axes the box spans whole in both blocks are contiguous in both: one
    // run covers them (a genotype chunk's ploidy axis: runs of a row of calls, not of
    // one call's two alleles).
    let mut k = rank - 1;
    while k > 0
        && lo[k] == src_origin[k]
        && lo[k] == dst_origin[k]
        && hi[k] - lo[k] == src_shape[k]
        && hi[k] - lo[k] == dst_shape[k]
    {
        k -= 1;
    }
    let run = ((hi[k] - lo[k]) * ss[k]) as usize;
    debug_assert_eq!(ss[k], ds[k]);
    let offsets = |at: &[u64]| {
        (0..rank).fold((0u64, 0u64), |(so, dof), d| {
            (
                so + (at[d] - src_origin[d]) * ss[d],
                dof + (at[d] - dst_origin[d]) * ds[d],
            )
        })
    };
    if k == 0 {
        let (so, dof) = offsets(lo);
        f(so as usize, dof as usize, run);
        return;
    }
    // Axes before k are walked: the last of them in a tight loop (a patch-sized
    // chunk's rows, each a short run), the others by an odometer.
    let step = k - 1;
    let count = hi[step] - lo[step];
    let (s_step, d_step) = (ss[step] as usize, ds[step] as usize);
    at.copy_from_slice(lo);
    loop {
        let (so, dof) = offsets(at);
        let (mut so, mut dof) = (so as usize, dof as usize);
        for _ in 0..count {
            f(so, dof, run);
            so += s_step;
            dof += d_step;
        }
        let mut d = step;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            at[d] += 1;
            if at[d] < hi[d] {
                break;
            }
            at[d] = lo[d];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_overlap_once() {
        // A 4×6 source block at (2, 0) into a 3×4 target block at (4, 2): overlap rows
        // 4-5 (the source ends at 6), columns 2-5.
        let mut runs = Vec::new();
        for_each_run(
            &[4, 2],
            &[6, 6],
            &[2, 0],
            &[4, 6],
            &[4, 2],
            &[3, 4],
            |s, d, n| runs.push((s, d, n)),
        );
        assert_eq!(runs, vec![(2 * 6 + 2, 0, 4), (3 * 6 + 2, 4, 4)]);
        // 3-D, the trailing axis whole: runs of two samples' calls, one per row.
        let mut runs = Vec::new();
        let mut push = |s, d, n| runs.push((s, d, n));
        for_each_run(
            &[0, 1, 0],
            &[2, 3, 2],
            &[0, 0, 0],
            &[2, 4, 2],
            &[0, 1, 0],
            &[2, 2, 2],
            &mut push,
        );
        assert_eq!(runs, vec![(2, 0, 4), (10, 4, 4)]);
        // Whole blocks on every axis but the first: the whole overlap is one run.
        let mut runs = Vec::new();
        let mut push = |s, d, n| runs.push((s, d, n));
        for_each_run(
            &[3, 0, 0],
            &[5, 4, 2],
            &[0, 0, 0],
            &[8, 4, 2],
            &[2, 0, 0],
            &[4, 4, 2],
            &mut push,
        );
        assert_eq!(runs, vec![(24, 8, 16)]);
        // An empty box visits nothing.
        for_each_run(&[3], &[3], &[0], &[4], &[0], &[4], |_, _, _| panic!());
    }
}
