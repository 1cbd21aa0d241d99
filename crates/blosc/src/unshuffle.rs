//! Undoing c-blosc's shuffles when a chunk is decoded: the bit-unshuffle of whole
//! blocks (SSE2, and AVX-512 + GFNI where the CPU has them), the byte-unshuffle, and
//! both over byte ranges of a block only.

use super::frame::{Frame, Shuffle};

/// Transposes an 8×8 bit matrix held as 8 bytes (byte k, bit i → byte i, bit k).
#[inline]
pub(super) fn transpose8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^= t ^ (t << 28);
    x
}

/// Transposes an 8×8 byte matrix held as 8 words (word k, byte m → word m, byte k).
#[inline]
fn transpose_bytes(w: &mut [u64; 8]) {
    for k in 0..4 {
        let (a, b) = (w[k], w[k + 4]);
        w[k] = (a & 0x0000_0000_FFFF_FFFF) | (b << 32);
        w[k + 4] = (a >> 32) | (b & 0xFFFF_FFFF_0000_0000);
    }
    for k in [0, 1, 4, 5] {
        let (a, b) = (w[k], w[k + 2]);
        w[k] = (a & 0x0000_FFFF_0000_FFFF) | ((b & 0x0000_FFFF_0000_FFFF) << 16);
        w[k + 2] = ((a >> 16) & 0x0000_FFFF_0000_FFFF) | (b & 0xFFFF_0000_FFFF_0000);
    }
    for k in [0, 2, 4, 6] {
        let (a, b) = (w[k], w[k + 1]);
        w[k] = (a & 0x00FF_00FF_00FF_00FF) | ((b & 0x00FF_00FF_00FF_00FF) << 8);
        w[k + 1] = ((a >> 8) & 0x00FF_00FF_00FF_00FF) | (b & 0xFF00_FF00_FF00_FF00);
    }
}

/// Undoes c-blosc's bitshuffle of one block (`src` and `out` of the block's size):
/// `out[i*T + j]` bit k = bit `i % 8` of `src[(8j + k) * N/8 + i/8]`, N = elements.
/// Blocks whose element count is not a multiple of 8 were not shuffled.
///
/// Eight groups of eight elements at a time: one word from each of the 8 bit planes,
/// a byte transpose, then a bit transpose per group (measured ~5× the byte-at-a-time
/// loop, which cost 82 % of a patch read on 1000 × 1000 chunks).
pub fn bitunshuffle(src: &[u8], out: &mut [u8], typesize: usize) {
    let t = typesize;
    let n = src.len() / t;
    if src.len() < t || !n.is_multiple_of(8) {
        out.copy_from_slice(src);
        return;
    }
    let plane = n / 8;
    #[cfg(target_arch = "x86_64")]
    if t == 1 && plane >= 16 {
        let mut done = 0;
        if plane >= 64 && gfni::available() {
            // SAFETY: the CPU has every feature the function enables (checked above).
            done = unsafe { gfni::bitunshuffle_bytes(src, out, plane) };
        }
        let done = done + sse2::bitunshuffle_bytes(&src[done..], &mut out[8 * done..], plane, done);
        // The groups past the last 16 (and any leftover bytes) as below.
        tail_groups(src, out, plane, done);
        return;
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    for j in 0..t {
        let planes: [&[u8]; 8] =
            std::array::from_fn(|k| &src[(8 * j + k) * plane..(8 * j + k + 1) * plane]);
        let wide = plane / 8 * 8;
        for g in (0..wide).step_by(8) {
            let mut w: [u64; 8] = std::array::from_fn(|k| word(&planes[k][g..g + 8]));
            transpose_bytes(&mut w);
            for (m, x) in w.iter().enumerate() {
                let y = transpose8(*x).to_le_bytes();
                let e0 = 8 * (g + m);
                if t == 1 {
                    out[e0..e0 + 8].copy_from_slice(&y);
                } else {
                    for (b, v) in y.iter().enumerate() {
                        out[(e0 + b) * t + j] = *v;
                    }
                }
            }
        }
        for g in wide..plane {
            let x = (0..8).fold(0u64, |x, k| x | (planes[k][g] as u64) << (8 * k));
            for (b, v) in transpose8(x).to_le_bytes().iter().enumerate() {
                out[(8 * g + b) * t + j] = *v;
            }
        }
    }
    let done = n * t;
    out[done..].copy_from_slice(&src[done..]);
}

/// Single-byte elements: groups `from..plane` one at a time, then the bytes past the
/// last whole group (copied).
#[cfg(target_arch = "x86_64")]
fn tail_groups(src: &[u8], out: &mut [u8], plane: usize, from: usize) {
    for g in from..plane {
        let x = (0..8).fold(0u64, |x, k| x | (src[k * plane + g] as u64) << (8 * k));
        out[8 * g..8 * g + 8].copy_from_slice(&transpose8(x).to_le_bytes());
    }
    let done = 8 * plane;
    out[done..].copy_from_slice(&src[done..]);
}

/// The bit-unshuffle of single-byte elements with SSE2 (every x86-64 has it): 16
/// groups at a time, a byte transpose by unpacks, then `movemask` gathers each bit
/// position of 16 bytes — two output bytes per instruction.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// Unshuffles whole runs of 16 groups from group `from` on; returns the groups
    /// done. `src` starts at group `from` of plane 0 (the planes are `plane` apart),
    /// `out` at its first element.
    pub fn bitunshuffle_bytes(src: &[u8], out: &mut [u8], plane: usize, from: usize) -> usize {
        let wide = (plane - from) / 16 * 16;
        assert!(src.len() + from >= 8 * plane && out.len() >= 8 * (plane - from));
        for g in (0..wide).step_by(16) {
            // SAFETY: SSE2 is part of x86-64; every load reads 16 bytes at
            // `k * plane + g` with `from + g + 16 <= plane`, inside `src` (asserted
            // above).
            let v: [__m128i; 8] = std::array::from_fn(|k| unsafe {
                _mm_loadu_si128(src.as_ptr().add(k * plane + g) as *const __m128i)
            });
            // SAFETY: SSE2 register operations only.
            let rows = unsafe { transpose(v) };
            for (q, r) in rows.iter().enumerate() {
                // SAFETY: SSE2 register operations only.
                let bytes = unsafe { sixteen_out(*r) };
                let e = 8 * (g + 2 * q);
                out[e..e + 16].copy_from_slice(&bytes);
            }
        }
        wide
    }

    /// The 16 output bytes of register `r` (groups 2q, 2q+1): the 8 masks as 16-bit
    /// lanes, then their low bytes (group 2q's elements) and high bytes (2q+1's)
    /// packed apart.
    #[inline(always)]
    unsafe fn sixteen_out(r: __m128i) -> [u8; 16] {
        // SAFETY: SSE2 register operations only (the caller is x86-64).
        unsafe {
            let mut m = _mm_setzero_si128();
            m = _mm_insert_epi16::<0>(m, bit_mask(r, 0) as i32);
            m = _mm_insert_epi16::<1>(m, bit_mask(r, 1) as i32);
            m = _mm_insert_epi16::<2>(m, bit_mask(r, 2) as i32);
            m = _mm_insert_epi16::<3>(m, bit_mask(r, 3) as i32);
            m = _mm_insert_epi16::<4>(m, bit_mask(r, 4) as i32);
            m = _mm_insert_epi16::<5>(m, bit_mask(r, 5) as i32);
            m = _mm_insert_epi16::<6>(m, bit_mask(r, 6) as i32);
            m = _mm_insert_epi16::<7>(m, bit_mask(r, 7) as i32);
            let lo = _mm_and_si128(m, _mm_set1_epi16(0xff));
            let hi = _mm_srli_epi16::<8>(m);
            std::mem::transmute::<__m128i, [u8; 16]>(_mm_packus_epi16(lo, hi))
        }
    }

    /// The top bit of each byte after shifting bit `b` there: bit m of the result is
    /// bit `b` of byte m.
    #[inline(always)]
    unsafe fn bit_mask(r: __m128i, b: usize) -> u32 {
        // SAFETY: SSE2 register operations only (the caller is x86-64).
        unsafe {
            let shifted = match b {
                0 => _mm_slli_epi16::<7>(r),
                1 => _mm_slli_epi16::<6>(r),
                2 => _mm_slli_epi16::<5>(r),
                3 => _mm_slli_epi16::<4>(r),
                4 => _mm_slli_epi16::<3>(r),
                5 => _mm_slli_epi16::<2>(r),
                6 => _mm_slli_epi16::<1>(r),
                _ => r,
            };
            _mm_movemask_epi8(shifted) as u32
        }
    }

    /// From 8 planes × 16 groups to 8 registers of 2 groups × 8 planes each
    /// (register q: bytes 0-7 = group 2q's byte of planes 0-7, bytes 8-15 = 2q+1's).
    #[inline(always)]
    unsafe fn transpose(v: [__m128i; 8]) -> [__m128i; 8] {
        // SAFETY: SSE2 register operations only.
        unsafe {
            let a01l = _mm_unpacklo_epi8(v[0], v[1]);
            let a01h = _mm_unpackhi_epi8(v[0], v[1]);
            let a23l = _mm_unpacklo_epi8(v[2], v[3]);
            let a23h = _mm_unpackhi_epi8(v[2], v[3]);
            let a45l = _mm_unpacklo_epi8(v[4], v[5]);
            let a45h = _mm_unpackhi_epi8(v[4], v[5]);
            let a67l = _mm_unpacklo_epi8(v[6], v[7]);
            let a67h = _mm_unpackhi_epi8(v[6], v[7]);
            let b0 = _mm_unpacklo_epi16(a01l, a23l); // groups 0-3, planes 0-3
            let b1 = _mm_unpackhi_epi16(a01l, a23l); // 4-7
            let b2 = _mm_unpacklo_epi16(a01h, a23h); // 8-11
            let b3 = _mm_unpackhi_epi16(a01h, a23h); // 12-15
            let c0 = _mm_unpacklo_epi16(a45l, a67l); // groups 0-3, planes 4-7
            let c1 = _mm_unpackhi_epi16(a45l, a67l);
            let c2 = _mm_unpacklo_epi16(a45h, a67h);
            let c3 = _mm_unpackhi_epi16(a45h, a67h);
            [
                _mm_unpacklo_epi32(b0, c0),
                _mm_unpackhi_epi32(b0, c0),
                _mm_unpacklo_epi32(b1, c1),
                _mm_unpackhi_epi32(b1, c1),
                _mm_unpacklo_epi32(b2, c2),
                _mm_unpackhi_epi32(b2, c2),
                _mm_unpacklo_epi32(b3, c3),
                _mm_unpackhi_epi32(b3, c3),
            ]
        }
    }
}

/// The bit-unshuffle of single-byte elements with AVX-512 and GFNI (Intel since Ice
/// Lake, AMD since Zen 4): 64 groups at a time — a byte transpose of 8 planes × 64
/// bytes by three rounds of two-register permutes, then one `gf2p8affineqb` per 8
/// groups transposes each group's 8×8 bits. ~15× the SSE2 path on 4 KiB chunks, where
/// the unshuffle had cost a sixth of a patch read.
#[cfg(target_arch = "x86_64")]
mod gfni {
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// Whether this CPU has what [`bitunshuffle_bytes`] needs (asked once).
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vbmi")
                && is_x86_feature_detected!("gfni")
        })
    }

    /// The index vector of a `permutex2var` over lanes of `width` bytes that
    /// interleaves `a` and `b` from lane `from` on: lane `2t` takes `a`'s lane
    /// `from + t`, lane `2t + 1` `b`'s (index `lanes + from + t`).
    fn interleave(width: usize, from: usize) -> __m512i {
        let lanes = 64 / width;
        let mut bytes = [0u8; 64];
        for t in 0..lanes / 2 {
            bytes[2 * t * width] = (from + t) as u8;
            bytes[(2 * t + 1) * width] = (lanes + from + t) as u8;
        }
        // SAFETY: an unaligned 64-byte load of a 64-byte array (AVX-512 F is enabled
        // wherever this is called from).
        unsafe { _mm512_loadu_si512(bytes.as_ptr() as *const __m512i) }
    }

    /// Unshuffles whole runs of 64 groups; returns the groups done.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, BW, VBMI and GFNI ([`available`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub unsafe fn bitunshuffle_bytes(src: &[u8], out: &mut [u8], plane: usize) -> usize {
        let wide = plane / 64 * 64;
        assert!(src.len() >= 8 * plane && out.len() >= 8 * plane);
        let bytes = [interleave(1, 0), interleave(1, 32)];
        let pairs = [interleave(2, 0), interleave(2, 16)];
        let quads = [interleave(4, 0), interleave(4, 8)];
        // gf2p8affine(x, A) sets bit i of byte j of each qword to parity(A.byte[7 - i]
        // & x.byte[j]): with x.byte[j] = 1 << j and A holding a group's 8 plane bytes
        // in reverse order, byte j's bit i is plane i's bit j — the 8×8 transpose.
        let select = _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64);
        for g in (0..wide).step_by(64) {
            // r[k] = plane 7 - k, groups g..g+64.
            // SAFETY: 64 bytes at `(7 - k) * plane + g` with `g + 64 <= plane`: inside
            // `src` (asserted above).
            let r: [__m512i; 8] = std::array::from_fn(|k| unsafe {
                _mm512_loadu_si512(src.as_ptr().add((7 - k) * plane + g) as *const __m512i)
            });
            // a[p][h]: planes of pair p byte-interleaved, groups 32h..32h+32.
            let a: [[__m512i; 2]; 4] = std::array::from_fn(|p| {
                std::array::from_fn(|h| _mm512_permutex2var_epi8(r[2 * p], bytes[h], r[2 * p + 1]))
            });
            // b[s][q]: the four planes of half s, groups 16q..16q+16.
            let b: [[__m512i; 4]; 2] = std::array::from_fn(|s| {
                std::array::from_fn(|q| {
                    _mm512_permutex2var_epi16(a[2 * s][q / 2], pairs[q % 2], a[2 * s + 1][q / 2])
                })
            });
            for (q, (low, high)) in b[0].iter().zip(&b[1]).enumerate() {
                for (h, quad) in quads.iter().enumerate() {
                    // Groups 16q + 8h ..+8, one qword (eight planes) each.
                    let groups = _mm512_permutex2var_epi32(*low, *quad, *high);
                    let bits = _mm512_gf2p8affine_epi64_epi8::<0>(select, groups);
                    let at = 8 * (g + 16 * q + 8 * h);
                    // SAFETY: 64 bytes at `8 * (g + 16q + 8h)`, groups below
                    // `g + 64 <= plane`: inside `out` (asserted above).
                    unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(at) as *mut __m512i, bits) };
                }
            }
        }
        wide
    }
}

/// Undoes c-blosc's byte shuffle of one block: `out[i*T + j] = src[j*N + i]`.
pub fn byteunshuffle(src: &[u8], out: &mut [u8], typesize: usize) {
    let t = typesize;
    let n = src.len() / t;
    for j in 0..t {
        let plane = &src[j * n..(j + 1) * n];
        for (i, &v) in plane.iter().enumerate() {
            out[i * t + j] = v;
        }
    }
    let done = n * t;
    out[done..].copy_from_slice(&src[done..]);
}

/// Whether a whole block of `frame` bit-unshuffles through the AVX-512/GFNI path.
pub(super) fn whole_unshuffle_is_fast(frame: &Frame) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        frame.typesize == 1 && gfni::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = frame; // (only x86-64 has the fast path)
        false
    }
}

/// Unshuffles bytes `[lo, hi)` of one block only (bit or byte shuffle), by the same
/// rules as [`bitunshuffle`] and [`byteunshuffle`].
pub(super) fn unshuffle_range(
    shuffle: Shuffle,
    src: &[u8],
    out: &mut [u8],
    t: usize,
    lo: usize,
    hi: usize,
) {
    let n = src.len() / t;
    let whole = n * t;
    let shuffled = match shuffle {
        Shuffle::Bit => src.len() >= t && n.is_multiple_of(8),
        Shuffle::Byte => true,
        Shuffle::None => false,
    };
    if !shuffled {
        out[lo..hi].copy_from_slice(&src[lo..hi]);
        return;
    }
    // Leftover bytes past the last whole element are stored as is.
    let top = hi.min(whole);
    if hi > whole {
        let from = lo.max(whole);
        out[from..hi].copy_from_slice(&src[from..hi]);
    }
    if lo >= top {
        return;
    }
    match shuffle {
        Shuffle::Byte => {
            for p in lo..top {
                out[p] = src[(p % t) * n + p / t];
            }
        }
        _ => {
            let plane = n / 8;
            // Element groups of 8 overlapping the range, one bit transpose each.
            let (e0, e1) = (lo / t, (top - 1) / t);
            for g in e0 / 8..=e1 / 8 {
                for j in 0..t {
                    let x = (0..8).fold(0u64, |x, k| {
                        x | (src[(8 * j + k) * plane + g] as u64) << (8 * k)
                    });
                    for (b, v) in transpose8(x).to_le_bytes().iter().enumerate() {
                        let p = (8 * g + b) * t + j;
                        if (lo..top).contains(&p) {
                            out[p] = *v;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::noise;

    /// The note's formula, bit by bit: the reference the fast path is held to.
    fn bitunshuffle_reference(src: &[u8], t: usize) -> Vec<u8> {
        let n = src.len() / t;
        if src.len() < t || !n.is_multiple_of(8) {
            return src.to_vec();
        }
        let mut out = src.to_vec();
        for i in 0..n {
            for j in 0..t {
                let mut v = 0u8;
                for k in 0..8 {
                    v |= ((src[(8 * j + k) * (n / 8) + (i >> 3)] >> (i & 7)) & 1) << k;
                }
                out[i * t + j] = v;
            }
        }
        out
    }

    /// The range walk, for every type size (on a GFNI machine the decoder skips it
    /// for single-byte elements, so it is held to the formula here directly).
    #[test]
    fn unshuffle_range_matches_the_formula() {
        for t in [1, 2, 4, 8] {
            for n in [8, 64, 1000, 4096] {
                let src = noise(n * t + 3, (n + t) as u64);
                let want = bitunshuffle_reference(&src, t);
                let len = src.len();
                for (lo, hi) in [(0, len), (1, 9), (len / 3, len / 2), (len - 5, len)] {
                    let mut out = vec![0xAAu8; len];
                    unshuffle_range(Shuffle::Bit, &src, &mut out, t, lo, hi);
                    assert_eq!(out[lo..hi], want[lo..hi], "t {t} n {n} {lo}..{hi}");
                }
            }
        }
    }

    #[test]
    fn bitunshuffle_matches_the_formula() {
        for t in [1, 2, 4, 8] {
            for n in [8, 16, 64, 72, 120, 1000, 1001, 1024, 4096] {
                let src = noise(n * t + 3, (n * t) as u64);
                let mut out = vec![0; src.len()];
                bitunshuffle(&src, &mut out, t);
                assert_eq!(out, bitunshuffle_reference(&src, t), "t {t} n {n}");
            }
        }
    }
}
