//! c-blosc's shuffles, done when a chunk is encoded: the byte shuffle
//! (`out[j*N + i] = src[i*T + j]`, N elements of T bytes) and the bitshuffle (the byte
//! shuffle, then each byte plane's bits transposed: bit b of `out[(8j + k) * N/8 + g]`
//! is bit k of byte j of element `8g + b`). Both are fixed formulas, so any
//! implementation writes c-blosc's bytes; these are one pass over a block, where
//! c-blosc's bitshuffle (SSE2 only, as the `blosc-src` crate builds it) takes three.

use super::unshuffle::transpose8;

/// c-blosc's byte shuffle of one block; bytes past the last whole element are copied.
pub fn byteshuffle(src: &[u8], out: &mut [u8], typesize: usize) {
    assert_eq!(src.len(), out.len());
    let t = typesize.max(1);
    let n = src.len() / t;
    match t {
        _ if n == 0 => {}
        1 => out[..n].copy_from_slice(&src[..n]),
        2 => planes::<2>(src, out, n),
        4 => planes::<4>(src, out, n),
        8 => planes::<8>(src, out, n),
        _ => {
            for (i, e) in src[..n * t].chunks_exact(t).enumerate() {
                for (j, &b) in e.iter().enumerate() {
                    out[j * n + i] = b;
                }
            }
        }
    }
    out[n * t..].copy_from_slice(&src[n * t..]);
}

/// The byte planes of `n` elements of `T` bytes (a constant, so the loop unrolls):
/// AVX2 for 2- and 4-byte elements where the CPU has it, then element by element.
fn planes<const T: usize>(src: &[u8], out: &mut [u8], n: usize) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if (T == 2 || T == 4) && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked above).
        done = unsafe { simd::byte_planes_avx2::<T>(src, out, n) };
    }
    let (head, _) = out.split_at_mut(n * T);
    let mut planes: Vec<&mut [u8]> = head.chunks_exact_mut(n).collect();
    let planes: &mut [&mut [u8]; T] = (&mut planes[..]).try_into().expect("T planes");
    for (i, e) in src[..n * T].chunks_exact(T).enumerate().skip(done) {
        for j in 0..T {
            planes[j][i] = e[j];
        }
    }
}

/// c-blosc's bitshuffle of one block (`scratch` holds the byte planes when
/// `typesize > 1`). A block whose element count is not a multiple of 8 is copied as
/// is, as c-blosc does.
pub fn bitshuffle(src: &[u8], out: &mut [u8], typesize: usize, scratch: &mut Vec<u8>) {
    assert_eq!(src.len(), out.len());
    let t = typesize.max(1);
    let n = src.len() / t;
    if n == 0 || !n.is_multiple_of(8) {
        out.copy_from_slice(src);
        return;
    }
    if t == 1 {
        bit_planes(src, out);
    } else {
        scratch.resize(n * t, 0);
        byteshuffle(&src[..n * t], scratch, t);
        for (plane, dst) in scratch.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
            bit_planes(plane, dst);
        }
    }
    out[n * t..].copy_from_slice(&src[n * t..]);
}

/// The 8 bit planes of `src` (a multiple of 8 bytes): bit b of `out[k * len/8 + g]` is
/// bit k of `src[8g + b]`.
fn bit_planes(src: &[u8], out: &mut [u8]) {
    let plane = src.len() / 8;
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked above).
            done = unsafe { simd::bit_planes_avx2(src, out, plane) };
        }
        done += simd::bit_planes_sse2(src, out, plane, done);
    }
    for g in done..plane {
        let x = u64::from_le_bytes(src[8 * g..8 * g + 8].try_into().expect("8 bytes"));
        for (k, b) in transpose8(x).to_le_bytes().into_iter().enumerate() {
            out[k * plane + g] = b;
        }
    }
}

/// `movemask` gathers the top bit of every byte of a register: after `7 - k`
/// doublings of each byte, that is bit k of 16 (SSE2) or 32 (AVX2) elements — their
/// bytes of bit plane k.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// Groups (of 8 bytes) `0..` in runs of 8, one 8-byte store per plane; returns
    /// the groups done.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn bit_planes_avx2(src: &[u8], out: &mut [u8], plane: usize) -> usize {
        let wide = plane / 8 * 8;
        assert!(src.len() >= 8 * plane && out.len() >= 8 * plane);
        let (s, o) = (src.as_ptr(), out.as_mut_ptr());
        for g in (0..wide).step_by(8) {
            // SAFETY: 64 bytes at `8g` with `g + 8 <= plane`: inside `src` (asserted).
            let (mut a, mut b) = unsafe {
                (
                    _mm256_loadu_si256(s.add(8 * g) as *const __m256i),
                    _mm256_loadu_si256(s.add(8 * g + 32) as *const __m256i),
                )
            };
            for k in (0..8).rev() {
                let lo = _mm256_movemask_epi8(a) as u32 as u64;
                let hi = _mm256_movemask_epi8(b) as u32 as u64;
                // SAFETY: 8 bytes at `k * plane + g` with `g + 8 <= plane`: inside
                // `out` (asserted).
                unsafe {
                    (o.add(k * plane + g) as *mut u64).write_unaligned((lo | hi << 32).to_le())
                };
                a = _mm256_add_epi8(a, a);
                b = _mm256_add_epi8(b, b);
            }
        }
        wide
    }

    /// The byte planes of elements `0..` of `T` = 2 or 4 bytes in runs of 32 bytes:
    /// `pshufb` gathers each lane's bytes plane by plane, a cross-lane permute joins
    /// the two lanes' pieces, then one store per plane. Returns the elements done.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn byte_planes_avx2<const T: usize>(src: &[u8], out: &mut [u8], n: usize) -> usize {
        assert!((T == 2 || T == 4) && src.len() >= n * T && out.len() >= n * T);
        let per = 32 / T; // elements per register
        let wide = n / per * per;
        let (s, o) = (src.as_ptr(), out.as_mut_ptr());
        let lane: [i8; 16] = if T == 2 {
            [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
        } else {
            [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]
        };
        // SAFETY: a 16-byte load of a 16-byte array.
        let lane = unsafe { _mm_loadu_si128(lane.as_ptr() as *const __m128i) };
        let mask = _mm256_broadcastsi128_si256(lane);
        for i in (0..wide).step_by(per) {
            // SAFETY: 32 bytes at `i * T` with `i + per <= n`: inside `src` (asserted).
            let v = unsafe { _mm256_loadu_si256(s.add(i * T) as *const __m256i) };
            let v = _mm256_shuffle_epi8(v, mask);
            if T == 2 {
                // Lanes hold [lo 8 | hi 8]: gather the two lo halves, then the hi.
                let v = _mm256_permute4x64_epi64::<0b11_01_10_00>(v);
                // SAFETY: 16 bytes at `j * n + i` with `i + 16 <= n`: inside `out`.
                unsafe {
                    _mm_storeu_si128(o.add(i) as *mut __m128i, _mm256_castsi256_si128(v));
                    _mm_storeu_si128(
                        o.add(n + i) as *mut __m128i,
                        _mm256_extracti128_si256::<1>(v),
                    );
                }
            } else {
                // Lanes hold 4 bytes of each plane: pair the lanes' pieces per plane.
                let v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                let mut q = [0u64; 4];
                // SAFETY: a 32-byte store into a 32-byte array.
                unsafe { _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, v) };
                for (j, x) in q.iter().enumerate() {
                    // SAFETY: 8 bytes at `j * n + i` with `i + 8 <= n`: inside `out`.
                    unsafe { (o.add(j * n + i) as *mut u64).write_unaligned(*x) };
                }
            }
        }
        wide
    }

    /// Groups `from..` in runs of 2 (SSE2 is part of x86-64); returns the groups done.
    pub fn bit_planes_sse2(src: &[u8], out: &mut [u8], plane: usize, from: usize) -> usize {
        let wide = (plane - from) / 2 * 2;
        assert!(src.len() >= 8 * plane && out.len() >= 8 * plane);
        for g in (from..from + wide).step_by(2) {
            // SAFETY: SSE2 is part of x86-64; 16 bytes at `8g` with `g + 2 <= plane`:
            // inside `src`.
            let mut v = unsafe { _mm_loadu_si128(src.as_ptr().add(8 * g) as *const __m128i) };
            for k in (0..8).rev() {
                // SAFETY: SSE2 register operations only.
                let m = unsafe { _mm_movemask_epi8(v) } as u16;
                out[k * plane + g..k * plane + g + 2].copy_from_slice(&m.to_le_bytes());
                // SAFETY: as above.
                v = unsafe { _mm_add_epi8(v, v) };
            }
        }
        wide
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::noise;

    /// The module note's formulas, bit by bit.
    fn bitshuffle_reference(src: &[u8], t: usize) -> Vec<u8> {
        let n = src.len() / t;
        let mut out = src.to_vec();
        if !n.is_multiple_of(8) {
            return out;
        }
        out[..n * t].fill(0);
        for i in 0..n {
            for j in 0..t {
                for k in 0..8 {
                    let bit = (src[i * t + j] >> k) & 1;
                    out[(8 * j + k) * (n / 8) + i / 8] |= bit << (i % 8);
                }
            }
        }
        out
    }

    #[test]
    fn shuffles_match_the_formulas_and_undo() {
        let mut scratch = Vec::new();
        for t in [1, 2, 3, 4, 8] {
            for n in [
                0, 1, 8, 16, 24, 40, 64, 72, 120, 1000, 1001, 1024, 4096, 32_768,
            ] {
                let src = noise(n * t + t / 2, (n * t) as u64 + 1);
                let mut out = vec![0xAA; src.len()];
                bitshuffle(&src, &mut out, t, &mut scratch);
                assert_eq!(out, bitshuffle_reference(&src, t), "bit t {t} n {n}");
                let mut back = vec![0; src.len()];
                super::super::unshuffle::bitunshuffle(&out, &mut back, t);
                assert_eq!(back, src, "bit round trip t {t} n {n}");

                byteshuffle(&src, &mut out, t);
                for i in 0..n {
                    for j in 0..t {
                        assert_eq!(out[j * n + i], src[i * t + j], "byte t {t} n {n}");
                    }
                }
                assert_eq!(out[n * t..], src[n * t..]);
                super::super::unshuffle::byteunshuffle(&out[..n * t], &mut back[..n * t], t);
                assert_eq!(back[..n * t], src[..n * t], "byte round trip t {t} n {n}");
            }
        }
    }
}
