//! Compact in-memory forms of the two columns that dominate a batch at biobank width:
//! booleans eight to a byte ([`Bits`]: the phased flag of every call) and diploid calls
//! one to a byte ([`pack_diploid`]: two alleles of 0…13, missing or fill, a nibble
//! each, so haploid calls among diploid ones — chrX in males — pack too).
//! A chunk row of 1,000 records × 300,000 samples held as i8 alleles and byte flags
//! takes 900 MB; packed, 337 MB — the difference between two rows in flight fitting in
//! 1 GB or not. Layout unpacks one inner chunk at a time.

/// Booleans, packed least significant bit first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bits {
    bytes: Vec<u8>,
    len: usize,
}

/// Byte `b`'s eight bits as eight 0/1 bytes (little-endian `u64`).
const SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b] |= (((b >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        b += 1;
    }
    t
};

/// Eight 0/1 bytes (little-endian `u64`) as one byte: byte `k` lands in bit `k`. Each
/// byte's bit `8k` is shifted to bit `56 + k` by one term of the multiplier, and no
/// other term reaches bits 56…63 or carries into them (checked for all 256 inputs).
fn gather(x: u64) -> u8 {
    (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

impl Bits {
    /// An empty set.
    pub fn new() -> Bits {
        Bits::default()
    }

    /// Booleans from bytes (any non-zero byte is true).
    pub fn from_flags(flags: &[u8]) -> Bits {
        let mut b = Bits::new();
        b.extend_from_flags(flags);
        b
    }

    /// Booleans held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room for `n` more without reallocating.
    pub fn reserve(&mut self, n: usize) {
        self.bytes
            .reserve((self.len + n).div_ceil(8) - self.bytes.len());
    }

    /// Empties the set, keeping its allocation.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.len = 0;
    }

    /// Keeps the first `n`.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        self.len = n;
        self.bytes.truncate(n.div_ceil(8));
        if !n.is_multiple_of(8) {
            let last = self.bytes.len() - 1;
            self.bytes[last] &= (1u8 << (n % 8)) - 1;
        }
    }

    /// Boolean `i` as 0 or 1.
    pub fn get(&self, i: usize) -> u8 {
        debug_assert!(i < self.len);
        (self.bytes[i / 8] >> (i % 8)) & 1
    }

    /// The eight booleans from `i` as a byte (those past the end read as 0).
    fn byte_at(&self, i: usize) -> u8 {
        let (k, shift) = (i / 8, i % 8);
        let lo = self.bytes.get(k).copied().unwrap_or(0) >> shift;
        if shift == 0 {
            return lo;
        }
        let hi = self.bytes.get(k + 1).copied().unwrap_or(0) << (8 - shift);
        lo | hi
    }

    /// Appends the low `n` (≤ 8) bits of `b`.
    fn push_bits(&mut self, b: u8, n: usize) {
        let b = if n < 8 { b & ((1u8 << n) - 1) } else { b };
        let shift = self.len % 8;
        if shift == 0 {
            self.bytes.push(b);
        } else {
            let last = self.bytes.len() - 1;
            self.bytes[last] |= b << shift;
            if shift + n > 8 {
                self.bytes.push(b >> (8 - shift));
            }
        }
        self.len += n;
    }

    /// Appends one boolean per byte (non-zero is true).
    pub fn extend_from_flags(&mut self, flags: &[u8]) {
        self.reserve(flags.len());
        let mut flags = flags;
        #[cfg(target_arch = "x86_64")]
        if self.len.is_multiple_of(8) {
            // Whole bytes of bits: 16 flags a `movemask` (SSE2, part of x86-64), the
            // per-byte path below was ~5 % of a GT-only conversion.
            let wide = flags.len() / 16 * 16;
            let at = self.bytes.len();
            self.bytes.resize(at + wide / 8, 0);
            for (d, c) in self.bytes[at..]
                .chunks_exact_mut(2)
                .zip(flags[..wide].chunks_exact(16))
            {
                use std::arch::x86_64::*;
                // SAFETY: SSE2 is part of x86-64; a 16-byte load of a 16-byte slice.
                let set = unsafe {
                    let v = _mm_loadu_si128(c.as_ptr() as *const __m128i);
                    !_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) as u16
                };
                d.copy_from_slice(&set.to_le_bytes());
            }
            self.len += wide;
            flags = &flags[wide..];
        }
        let mut chunks = flags.chunks_exact(8);
        for c in &mut chunks {
            let x = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            let b = if x & !0x0101_0101_0101_0101 == 0 {
                gather(x)
            } else {
                c.iter()
                    .enumerate()
                    .fold(0, |b, (k, &f)| b | (u8::from(f != 0) << k))
            };
            self.push_bits(b, 8);
        }
        let rest = chunks.remainder();
        let b = rest
            .iter()
            .enumerate()
            .fold(0, |b, (k, &f)| b | (u8::from(f != 0) << k));
        if !rest.is_empty() {
            self.push_bits(b, rest.len());
        }
    }

    /// Appends booleans `from..to` of `src`.
    pub fn extend_from_range(&mut self, src: &Bits, from: usize, to: usize) {
        assert!(from <= to && to <= src.len, "range inside the source");
        self.reserve(to - from);
        let mut i = from;
        // Up to this set's next byte boundary, bit by bit …
        let head = ((8 - self.len % 8) % 8).min(to - i);
        if head > 0 {
            self.push_bits(src.byte_at(i), head);
            i += head;
        }
        // … then whole bytes at one shift: the sequencer re-cuts every record's phase
        // flags through here, and a byte at a time was most of its work.
        let whole = (to - i) / 8;
        if whole > 0 {
            let (k, shift) = (i / 8, (i % 8) as u32);
            let at = self.bytes.len();
            self.bytes.resize(at + whole, 0);
            let out = &mut self.bytes[at..];
            if shift == 0 {
                out.copy_from_slice(&src.bytes[k..k + whole]);
            } else {
                // Each byte out takes two bytes in; the source has one past the last
                // whole byte, since the range starts inside a byte.
                let body = &src.bytes[k..k + whole + 1];
                for (d, w) in out.iter_mut().zip(body.windows(2)) {
                    *d = (w[0] >> shift) | (w[1] << (8 - shift));
                }
            }
            self.len += 8 * whole;
            i += 8 * whole;
        }
        if i < to {
            self.push_bits(src.byte_at(i), to - i);
        }
    }

    /// Booleans `from..from + out.len()` as 0/1 bytes into `out`.
    pub fn unpack_into(&self, from: usize, out: &mut [u8]) {
        assert!(from + out.len() <= self.len, "range inside the set");
        let mut chunks = out.chunks_exact_mut(8);
        let mut i = from;
        if from.is_multiple_of(8) {
            // Whole bytes: no shifting between two (the common case, a record's
            // flags starting a byte).
            let bytes = &self.bytes[from / 8..];
            for (c, &b) in (&mut chunks).zip(bytes) {
                c.copy_from_slice(&SPREAD[b as usize].to_le_bytes());
                i += 8;
            }
        }
        for c in &mut chunks {
            c.copy_from_slice(&SPREAD[self.byte_at(i) as usize].to_le_bytes());
            i += 8;
        }
        for (k, d) in chunks.into_remainder().iter_mut().enumerate() {
            *d = self.get(i + k);
        }
    }

    /// Every boolean as a 0/1 byte.
    pub fn to_flags(&self) -> Vec<u8> {
        let mut out = vec![0; self.len];
        self.unpack_into(0, &mut out);
        out
    }
}

/// Whether calls whose alleles lie in `lo..=hi` pack one to a byte: alleles 0…13,
/// missing (−1) and fill (−2, past a haploid call's allele in a diploid row).
pub fn packs_diploid(lo: i64, hi: i64) -> bool {
    lo >= -2 && hi <= 13
}

/// Appends diploid calls (allele pairs, each in −2…13) one byte per call: the first
/// allele in the low nibble, the second in the high one; 15 for missing (−1), 14 for
/// fill (−2) — the values' own low four bits.
pub fn pack_diploid<T: Copy + Into<i64>>(alleles: &[T], out: &mut Vec<u8>) {
    debug_assert!(alleles.len().is_multiple_of(2));
    let nib = |x: T| {
        let x: i64 = x.into();
        debug_assert!((-2..=13).contains(&x));
        (x as u8) & 15
    };
    out.extend(
        alleles
            .chunks_exact(2)
            .map(|p| nib(p[0]) | (nib(p[1]) << 4)),
    );
}

/// A packed call's two alleles.
pub fn unpack_diploid(b: u8) -> [i8; 2] {
    // Nibbles 14 and 15 are −2 and −1: sign-extend the four bits past 13.
    let allele = |n: u8| if n >= 14 { n as i8 - 16 } else { n as i8 };
    [allele(b & 15), allele(b >> 4)]
}

/// Packed calls into `out` as allele pairs of i8 bytes (two bytes a call): the
/// layout's inner loop at biobank width, written without table or branch so the
/// compiler vectorizes it (a table lookup a call cost ~10 % of a 300,000-sample
/// conversion).
pub fn unpack_diploid_bytes(packed: &[u8], out: &mut [u8]) {
    // Nibbles 14 and 15 are −2 and −1: subtract 16 from those.
    let allele = |n: u8| n.wrapping_sub(u8::from(n >= 14) << 4);
    spread_nibbles(packed, out, allele);
}

/// Which alleles of packed calls are negative (missing or fill), one byte each, in
/// `out` (two bytes a call): the genotype mask's bytes.
pub fn negative_alleles(packed: &[u8], out: &mut [u8]) {
    spread_nibbles(packed, out, |n| u8::from(n >= 14));
}

/// `f` of each byte's low then high nibble into `out` (twice `packed`'s length),
/// in blocks of 16 bytes the compiler vectorizes.
#[inline(always)]
fn spread_nibbles(packed: &[u8], out: &mut [u8], f: impl Fn(u8) -> u8) {
    assert_eq!(out.len(), 2 * packed.len());
    let mut dst = out.chunks_exact_mut(32);
    let mut src = packed.chunks_exact(16);
    for (d, s) in dst.by_ref().zip(src.by_ref()) {
        for j in 0..16 {
            d[2 * j] = f(s[j] & 15);
            d[2 * j + 1] = f(s[j] >> 4);
        }
    }
    for (d, &b) in dst
        .into_remainder()
        .chunks_exact_mut(2)
        .zip(src.remainder())
    {
        d[0] = f(b & 15);
        d[1] = f(b >> 4);
    }
}

/// Packed calls back to allele pairs, appended to `out`.
pub fn unpack_diploid_into<T: From<i8>>(bytes: &[u8], out: &mut Vec<T>) {
    out.reserve(2 * bytes.len());
    for &b in bytes {
        let [a, c] = unpack_diploid(b);
        out.push(T::from(a));
        out.push(T::from(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_unpacking_matches_the_pairs() {
        let packed: Vec<u8> = (0..=255u8).chain(0..=40).collect();
        let mut bytes = vec![0u8; 2 * packed.len()];
        let mut negative = vec![0u8; 2 * packed.len()];
        unpack_diploid_bytes(&packed, &mut bytes);
        negative_alleles(&packed, &mut negative);
        for (i, &b) in packed.iter().enumerate() {
            let [a, c] = unpack_diploid(b);
            assert_eq!([bytes[2 * i] as i8, bytes[2 * i + 1] as i8], [a, c], "{b}");
            assert_eq!(
                negative[2 * i..2 * i + 2],
                [u8::from(a < 0), u8::from(c < 0)]
            );
        }
    }

    #[test]
    fn gather_packs_every_byte_pattern() {
        for b in 0..=255u8 {
            let x = SPREAD[b as usize];
            assert_eq!(gather(x), b, "{b:08b}");
        }
    }

    /// Bits against a plain `Vec<u8>` of flags through every operation, at every
    /// alignment.
    #[test]
    fn bits_match_a_vec_of_flags() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..300 {
            let mut bits = Bits::new();
            let mut want: Vec<u8> = Vec::new();
            for _ in 0..6 {
                let n = next(90) as usize;
                let flags: Vec<u8> = (0..n).map(|_| [0, 1, 1, 7][next(4) as usize]).collect();
                match next(3) {
                    0 => {
                        bits.extend_from_flags(&flags);
                        want.extend(flags.iter().map(|&f| u8::from(f != 0)));
                    }
                    1 if !want.is_empty() => {
                        let src = bits.clone();
                        let to = next(want.len() as u64 + 1) as usize;
                        let from = next(to as u64 + 1) as usize;
                        bits.extend_from_range(&src, from, to);
                        let part = want[from..to].to_vec();
                        want.extend(part);
                    }
                    _ => {
                        let n = next(want.len() as u64 + 1) as usize;
                        bits.truncate(n);
                        want.truncate(n);
                    }
                }
                assert_eq!(bits.len(), want.len());
                assert_eq!(bits.to_flags(), want);
                let from = next(want.len() as u64 + 1) as usize;
                let mut out = vec![9u8; want.len() - from];
                bits.unpack_into(from, &mut out);
                assert_eq!(out, want[from..]);
            }
            // Truncation clears the bits past the end: appending after it is exact.
            bits.extend_from_flags(&[1, 0, 1]);
            want.extend([1, 0, 1]);
            assert_eq!(bits.to_flags(), want);
            let again = Bits::from_flags(&want);
            assert_eq!(again.to_flags(), want);
        }
    }

    #[test]
    fn diploid_calls_pack_and_unpack() {
        let calls: Vec<i8> = (-2..=13)
            .flat_map(|a| (-2..=13).map(move |b| [a, b]))
            .flatten()
            .collect();
        let mut packed = Vec::new();
        pack_diploid(&calls, &mut packed);
        assert_eq!(packed.len(), calls.len() / 2);
        let mut back: Vec<i8> = Vec::new();
        unpack_diploid_into(&packed, &mut back);
        assert_eq!(back, calls);
        assert!(packs_diploid(-2, 13) && !packs_diploid(-3, 1) && !packs_diploid(0, 14));
    }
}
