//! Copying the overlap of a decoded source chunk into a target inner chunk: both are
//! C-order blocks of the same array at different origins; the overlap is visited as
//! runs contiguous in both (the last axis).

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
    let strides = |shape: &[u64]| {
        let mut s = vec![1u64; rank];
        for d in (0..rank - 1).rev() {
            s[d] = s[d + 1] * shape[d + 1];
        }
        s
    };
    let (ss, ds) = (strides(src_shape), strides(dst_shape));
    let run = (hi[rank - 1] - lo[rank - 1]) as usize;
    let mut at = lo.to_vec();
    loop {
        let (mut so, mut dof) = (0u64, 0u64);
        for d in 0..rank {
            so += (at[d] - src_origin[d]) * ss[d];
            dof += (at[d] - dst_origin[d]) * ds[d];
        }
        f(so as usize, dof as usize, run);
        // Next index over the outer axes (odometer).
        let mut d = rank - 1;
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
        // 3-D, whole trailing axis.
        let mut n = 0;
        for_each_run(
            &[0, 1, 0],
            &[2, 3, 2],
            &[0, 0, 0],
            &[2, 4, 2],
            &[0, 1, 0],
            &[2, 2, 2],
            |s, d, len| {
                assert_eq!(len, 2);
                assert!(s < 16 && d < 8);
                n += 1;
            },
        );
        assert_eq!(n, 4);
        // An empty box visits nothing.
        for_each_run(&[3], &[3], &[0], &[4], &[0], &[4], |_, _, _| panic!());
    }
}
