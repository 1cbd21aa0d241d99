//! Genotype calls into canonical VCF Zarr values — allele indexes, −1 for a missing
//! allele, −2 for fill past a call's ploidy — and one phased flag per call, from each
//! form a reader meets: htslib's BCF encoding (int8 in BCF files, int32 from
//! `bcf_get_format_values`) and VCF text. One rule for phase everywhere, cyvcf2's (and
//! so bio2zarr's): a call is phased when its second allele is (a `|` after the first
//! allele: `0|1/1` is phased, `0/1|1` is not), and a haploid call counts as phased.

use crate::ragged::{BCF_INT32_MISSING, BCF_INT32_VECTOR_END};

/// BCF int8 GT byte → canonical allele: −2 for vector end (0x81), −1 for missing
/// (0x80, or an allele of 0 meaning "."), else (v >> 1) − 1.
pub(crate) static BCF8_ALLELE: [i8; 256] = {
    let mut t = [0i8; 256];
    let mut b = 0;
    while b < 256 {
        let v = b as u8 as i8;
        t[b] = match v {
            -127 => -2,
            -128 => -1,
            v if v < 0 => -1,
            v => (v >> 1) - 1,
        };
        b += 1;
    }
    t
};

/// BCF int32 GT value → canonical allele (the int32 sentinels, else (v >> 1) − 1).
pub(crate) fn bcf32_allele(v: i32) -> i32 {
    match v {
        BCF_INT32_VECTOR_END => -2,
        BCF_INT32_MISSING => -1,
        v => (v >> 1) - 1,
    }
}

/// Decodes BCF-encoded calls, `ploidy` values per sample (allele index + 1 shifted
/// left one bit; the low bit says the allele is phased with the one before it), into
/// canonical alleles appended to `out` and one flag per call appended to `phased`.
/// `allele` maps one value to its canonical allele, whose type is the output's.
pub(crate) fn decode_bcf_calls<T, O>(
    raw: &[T],
    ploidy: usize,
    allele: impl Fn(T) -> O,
    phase_bit: impl Fn(T) -> bool,
    out: &mut Vec<O>,
    phased: &mut Vec<u8>,
) where
    T: Copy,
    O: Copy + PartialEq + From<i8>,
{
    let end = O::from(-2);
    for call in raw.chunks_exact(ploidy.max(1)) {
        let mut p = false;
        for (j, &v) in call.iter().enumerate() {
            let a = allele(v);
            p |= j == 1 && a != end && phase_bit(v);
            out.push(a);
        }
        p |= call.len() == 1 || allele(call[1]) == end;
        phased.push(u8::from(p));
    }
}

/// [`decode_bcf_calls`] for the common BCF case, diploid int8 calls, replacing `out`
/// and `phased`: no table, closure or per-value push, so the compiler vectorises the
/// loops (the general decode was 40 % of a GT-only BCF conversion's profile).
pub(crate) fn decode_bcf_diploid8(raw: &[i8], out: &mut Vec<i8>, phased: &mut Vec<u8>) {
    out.clear();
    out.extend(raw.iter().map(|&v| bcf8_allele(v)));
    phased.clear();
    // A second allele that is the vector end makes the call haploid (phased); else
    // its phase bit says.
    phased.extend(
        raw.chunks_exact(2)
            .map(|c| u8::from(c[1] == -127 || c[1] & 1 == 1)),
    );
}

/// [`BCF8_ALLELE`] without the table lookup: −2 for vector end, −1 for missing or
/// an allele of 0, else (v >> 1) − 1.
#[inline(always)]
fn bcf8_allele(v: i8) -> i8 {
    if v >= 2 {
        (v >> 1) - 1
    } else if v == -127 {
        -2
    } else {
        -1
    }
}

/// Decimal digits as a number (at most 18 of them); `None` for anything else.
pub(crate) fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 18 {
        return None;
    }
    b.iter().try_fold(0u64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + (c - b'0') as u64)
    })
}

/// One VCF text GT (`0/1`, `1|0|2`, `.`) into canonical alleles appended to `out`,
/// returning (ploidy, phased); `None` for anything unusual (left to htslib, whose
/// reading then decides).
pub(crate) fn parse_text_call(s: &[u8], out: &mut Vec<i32>) -> Option<(usize, bool)> {
    let mut n = 0;
    let mut phased = false;
    let mut i = 0;
    loop {
        let a = match s.get(i)? {
            b'.' => {
                i += 1;
                -1
            }
            c if c.is_ascii_digit() => {
                let start = i;
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
                if i - start > 6 {
                    return None;
                }
                parse_u64(&s[start..i])? as i32
            }
            _ => return None,
        };
        out.push(a);
        n += 1;
        match s.get(i) {
            None => break,
            Some(b'|') => phased |= n == 1,
            Some(b'/') => {}
            Some(_) => return None,
        }
        i += 1;
    }
    Some((n, phased || n == 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three forms of the same calls decode alike: `0|1`, `./.`, haploid `1`
    /// (padded with the vector end), `.|0`.
    #[test]
    fn bcf8_bcf32_and_text_agree() {
        let enc = |a: i32, ph: bool| ((a + 1) << 1) | i32::from(ph);
        let calls32 = [
            enc(0, false),
            enc(1, true),
            BCF_INT32_MISSING,
            BCF_INT32_MISSING,
            enc(1, false),
            BCF_INT32_VECTOR_END,
            enc(-1, false),
            enc(0, true),
        ];
        let calls8: Vec<i8> = calls32
            .iter()
            .map(|&v| match v {
                BCF_INT32_MISSING => -128,
                BCF_INT32_VECTOR_END => -127,
                v => v as i8,
            })
            .collect();
        let (mut a32, mut p32) = (Vec::new(), Vec::new());
        decode_bcf_calls(
            &calls32,
            2,
            bcf32_allele,
            |v| v & 1 == 1,
            &mut a32,
            &mut p32,
        );
        let (mut a8, mut p8) = (Vec::<i8>::new(), Vec::new());
        let allele8 = |v: i8| BCF8_ALLELE[v as u8 as usize];
        decode_bcf_calls(&calls8, 2, allele8, |v| v & 1 == 1, &mut a8, &mut p8);
        assert_eq!(a32, vec![0, 1, -1, -1, 1, -2, -1, 0]);
        assert_eq!(a8.iter().map(|&x| x as i32).collect::<Vec<_>>(), a32);
        assert_eq!(p32, vec![1, 0, 1, 1]);
        assert_eq!(p8, p32);
        // The diploid int8 decode agrees with the general one on every byte pair.
        let every: Vec<i8> = (0..=255u8)
            .flat_map(|a| (0..=255u8).flat_map(move |b| [a as i8, b as i8]))
            .collect();
        let (mut ga, mut pa) = (Vec::<i8>::new(), Vec::new());
        decode_bcf_calls(&every, 2, allele8, |v| v & 1 == 1, &mut ga, &mut pa);
        let (mut gb, mut pb) = (vec![5i8], vec![7u8]);
        decode_bcf_diploid8(&every, &mut gb, &mut pb);
        assert_eq!((ga, pa), (gb, pb));
        let mut text = Vec::new();
        let parsed: Vec<_> = ["0|1", "./.", "1", ".|0"]
            .iter()
            .map(|c| parse_text_call(c.as_bytes(), &mut text).unwrap())
            .collect();
        assert_eq!(text, vec![0, 1, -1, -1, 1, -1, 0]);
        assert_eq!(parsed, vec![(2, true), (2, false), (1, true), (2, true)]);
        assert_eq!(parse_text_call(b"0/x", &mut text), None);
    }

    /// A polyploid call is phased as its second allele is, in every form.
    #[test]
    fn mixed_separators_follow_the_second_allele() {
        let enc = |a: i32, ph: bool| ((a + 1) << 1) | i32::from(ph);
        for (call, alleles, phased) in [
            ("0/1|1", [0, 1, 1], false),
            ("0|1/1", [0, 1, 1], true),
            (".|./1", [-1, -1, 1], true),
            ("1/0|.", [1, 0, -1], false),
        ] {
            let mut text = Vec::new();
            assert_eq!(
                parse_text_call(call.as_bytes(), &mut text),
                Some((3, phased)),
                "{call}"
            );
            assert_eq!(text, alleles);
            let seps: Vec<bool> = call
                .bytes()
                .filter(|b| !b.is_ascii_digit() && *b != b'.')
                .map(|b| b == b'|')
                .collect();
            let raw: Vec<i32> = alleles
                .iter()
                .enumerate()
                .map(|(j, &a)| enc(a, j > 0 && seps[j - 1]))
                .collect();
            let (mut out, mut p) = (Vec::new(), Vec::new());
            decode_bcf_calls(&raw, 3, bcf32_allele, |v| v & 1 == 1, &mut out, &mut p);
            assert_eq!(
                (out, p),
                (alleles.to_vec(), vec![u8::from(phased)]),
                "{call}"
            );
        }
    }
}
