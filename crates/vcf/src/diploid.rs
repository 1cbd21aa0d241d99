//! A record's calls when FORMAT is `GT` alone and every call is diploid with one-digit
//! or missing alleles (`0|1\t1/0\t./.\t…`: simulations, imputed and phased panels,
//! pVCFs with missing calls — the common case at biobank width), read without a branch
//! per sample: each call is exactly four bytes (digit or `.`, `|` or `/`, digit or `.`,
//! tab), so 16 bytes hold four calls and one SSE2 compare checks them all. Anything
//! else (haploid, two-digit alleles, more fields) fails the check and the caller's
//! general parse reads the line.

/// The allele range of a row read by [`read_row`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Alleles {
    pub lo: i8,
    pub hi: i8,
}

/// Reads `calls` (the text after FORMAT, no newline) as `samples` diploid one-digit
/// calls: alleles into `gt` (two per sample, `.` as −1), one phased flag per sample
/// into `phased` (`|` → 1, as htslib's text parse: `.|.` is phased), both replaced.
/// `None` (and `gt`/`phased` unspecified) when any call is not of that form. The
/// range's `hi` is −1 when every allele is missing.
pub(crate) fn read_row(
    calls: &[u8],
    samples: usize,
    gt: &mut Vec<i8>,
    phased: &mut Vec<u8>,
) -> Option<Alleles> {
    if samples == 0 || calls.len() != samples.checked_mul(4)? - 1 {
        return None;
    }
    gt.clear();
    gt.resize(2 * samples, 0);
    phased.clear();
    phased.resize(samples, 0);
    // Calls with a tab after them, then the last one.
    let tabbed = samples - 1;
    let (mut lo, mut hi, done) = read_blocks(calls, tabbed / 4, gt, phased)?;
    // A digit, or `.` (missing: −1).
    let allele = |c: u8| match c {
        b'.' => Some(-1i8),
        b'0'..=b'9' => Some((c - b'0') as i8),
        _ => None,
    };
    for k in done..samples {
        let c = &calls[4 * k..];
        let (a, sep, b) = (allele(c[0])?, c[1], allele(c[2])?);
        let ends_right = if k < tabbed { c[3] == b'\t' } else { true };
        if !(sep == b'|' || sep == b'/') || !ends_right {
            return None;
        }
        gt[2 * k] = a;
        gt[2 * k + 1] = b;
        phased[k] = u8::from(sep == b'|');
        lo = lo.min(a).min(b);
        hi = hi.max(a).max(b);
    }
    Some(Alleles { lo, hi })
}

/// The first `blocks` blocks of four tabbed calls, vectorised where the target allows:
/// (lowest, highest allele — −1 for missing —, calls read).
#[cfg(target_arch = "x86_64")]
fn read_blocks(
    calls: &[u8],
    blocks: usize,
    gt: &mut [i8],
    phased: &mut [u8],
) -> Option<(i8, i8, usize)> {
    // SAFETY: SSE2 is part of x86-64, so the function's target feature is present.
    let (lo, hi) = unsafe {
        sse2::read_blocks(
            &calls[..16 * blocks],
            &mut gt[..8 * blocks],
            &mut phased[..4 * blocks],
        )?
    };
    Some((lo, hi, 4 * blocks))
}

#[cfg(not(target_arch = "x86_64"))]
fn read_blocks(_: &[u8], _: usize, _: &mut [i8], _: &mut [u8]) -> Option<(i8, i8, usize)> {
    Some((9, -1, 0))
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// Four calls per 16 input bytes; (lowest, highest) allele (−1: missing), or `None`
    /// when a call is not `allele [|/] allele tab` (an allele: a digit or `.`).
    #[target_feature(enable = "sse2")]
    pub(super) fn read_blocks(calls: &[u8], gt: &mut [i8], phased: &mut [u8]) -> Option<(i8, i8)> {
        assert!(
            calls.len().is_multiple_of(16)
                && gt.len() * 2 == calls.len()
                && phased.len() * 4 == calls.len()
        );
        // Byte roles within a block: allele, separator, allele, tab (×4).
        let allele_at = _mm_set1_epi32(0x00ff_00ff);
        let sep_at = _mm_set1_epi32(0x0000_ff00);
        let tab_at = _mm_set1_epi32(0xff00_0000_u32 as i32);
        let zero = _mm_set1_epi8(b'0' as i8);
        let nine = _mm_set1_epi8(9);
        let one = _mm_set1_epi8(1);
        let ten = _mm_set1_epi8(10);
        let dot = _mm_set1_epi8(b'.' as i8);
        let bar = _mm_set1_epi8(b'|' as i8);
        let slash = _mm_set1_epi8(b'/' as i8);
        let tab = _mm_set1_epi8(b'\t' as i8);
        let low_bytes = _mm_set1_epi16(0x00ff);
        // Alleles plus one (missing: 0, digits: 1..=10), so unsigned min and max order
        // them; positions that hold no allele count as 10 for the minimum.
        let (mut lo, mut hi) = (ten, _mm_setzero_si128());
        let mut bad = _mm_setzero_si128();
        for ((inp, g), p) in calls
            .chunks_exact(16)
            .zip(gt.chunks_exact_mut(8))
            .zip(phased.chunks_exact_mut(4))
        {
            // SAFETY: `inp` is 16 bytes; unaligned loads are allowed.
            let v = unsafe { _mm_loadu_si128(inp.as_ptr().cast()) };
            let d = _mm_sub_epi8(v, zero);
            let is_digit = _mm_cmpeq_epi8(_mm_min_epu8(d, nine), d);
            let is_allele = _mm_or_si128(is_digit, _mm_cmpeq_epi8(v, dot));
            let is_bar = _mm_cmpeq_epi8(v, bar);
            let is_sep = _mm_or_si128(is_bar, _mm_cmpeq_epi8(v, slash));
            let is_tab = _mm_cmpeq_epi8(v, tab);
            let ok = _mm_or_si128(
                _mm_and_si128(is_allele, allele_at),
                _mm_or_si128(_mm_and_si128(is_sep, sep_at), _mm_and_si128(is_tab, tab_at)),
            );
            // Any byte not in its role: all ones in `bad` there (checked once, at the end).
            bad = _mm_or_si128(bad, _mm_xor_si128(ok, _mm_set1_epi8(-1)));
            let plus1 = _mm_and_si128(_mm_and_si128(_mm_add_epi8(d, one), is_digit), allele_at);
            hi = _mm_max_epu8(hi, plus1);
            lo = _mm_min_epu8(lo, _mm_or_si128(plus1, _mm_andnot_si128(allele_at, ten)));
            // Alleles at the even bytes: digits as themselves, `.` as 0xff (−1).
            let alleles = _mm_and_si128(_mm_sub_epi8(plus1, one), low_bytes);
            let packed = _mm_packus_epi16(alleles, _mm_setzero_si128());
            // SAFETY: `g` is 8 bytes; the low 8 bytes of `packed` are the alleles.
            unsafe { _mm_storel_epi64(g.as_mut_ptr().cast(), packed) };
            // Separator bits 1, 5, 9, 13 → one flag byte each.
            let m = (_mm_movemask_epi8(is_bar) as u32 >> 1) & 0x1111;
            let flags = (m & 1) | ((m & 0x10) << 4) | ((m & 0x100) << 8) | ((m & 0x1000) << 12);
            p.copy_from_slice(&flags.to_le_bytes());
        }
        if _mm_movemask_epi8(bad) != 0 {
            return None;
        }
        let (mut l, mut h) = ([0u8; 16], [0u8; 16]);
        // SAFETY: 16-byte arrays; unaligned stores are allowed.
        unsafe {
            _mm_storeu_si128(l.as_mut_ptr().cast(), lo);
            _mm_storeu_si128(h.as_mut_ptr().cast(), hi);
        }
        let least = l.into_iter().min().unwrap_or(10);
        let most = h.into_iter().max().unwrap_or(0);
        Some((least as i8 - 1, most as i8 - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan against the general parse (`genotype::parse_text_call`, htslib's
    /// rules) call by call, on rows of every length around the 4-call block
    /// (remainders 0..3), every allele, missing ones (`.`) and both separators, and
    /// rows with one byte wrong at each position (a colon, a tab, a two-digit allele).
    #[test]
    fn matches_the_general_parse() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for samples in 1..40 {
            let mut row = Vec::new();
            let (mut want_gt, mut want_ph) = (Vec::new(), Vec::new());
            // Some rows all missing, some without any missing allele.
            let missing_per_11 = [0, 1, 11][samples % 3];
            for k in 0..samples {
                let allele = |next: &mut dyn FnMut(u64) -> u64| match next(11) < missing_per_11 {
                    true => b'.',
                    false => b'0' + next(10) as u8,
                };
                let first = allele(&mut next);
                let sep = [b'|', b'/'][next(2) as usize];
                let call = [first, sep, allele(&mut next)];
                let mut vals = Vec::new();
                let (n, ph) = crate::genotype::parse_text_call(&call, &mut vals).unwrap();
                assert_eq!(n, 2);
                want_gt.extend(vals.iter().map(|&a| a as i8));
                want_ph.push(u8::from(ph));
                row.extend_from_slice(&call);
                if k + 1 < samples {
                    row.push(b'\t');
                }
            }
            let (mut gt, mut ph) = (Vec::new(), Vec::new());
            let got = read_row(&row, samples, &mut gt, &mut ph).expect("a diploid row");
            assert_eq!((gt.as_slice(), ph.as_slice()), (&want_gt[..], &want_ph[..]));
            let lo = *want_gt.iter().min().unwrap();
            let hi = *want_gt.iter().max().unwrap();
            assert_eq!(got, Alleles { lo, hi }, "samples {samples}");
            for at in 0..row.len() {
                for wrong in [b'.', b':', b'\t', b'1', b'|'] {
                    let mut bent = row.clone();
                    if bent[at] == wrong {
                        continue;
                    }
                    let role_ok = match at % 4 {
                        0 | 2 => wrong.is_ascii_digit() || wrong == b'.',
                        1 => wrong == b'|' || wrong == b'/',
                        _ => wrong == b'\t',
                    };
                    bent[at] = wrong;
                    let r = read_row(&bent, samples, &mut gt, &mut ph);
                    assert_eq!(
                        r.is_some(),
                        role_ok,
                        "samples {samples}, byte {at} = {wrong}"
                    );
                }
            }
            assert_eq!(read_row(&row, samples + 1, &mut gt, &mut ph), None);
            assert_eq!(read_row(&row[1..], samples, &mut gt, &mut ph), None);
        }
        assert_eq!(read_row(b"10|1", 1, &mut Vec::new(), &mut Vec::new()), None);
        assert_eq!(read_row(b"", 0, &mut Vec::new(), &mut Vec::new()), None);
    }
}
