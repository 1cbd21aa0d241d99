//! The direct parse of a VCF text line into columns, without htslib building a BCF
//! record first: the fixed columns, INFO (Flag, Integer, Float, String) and FORMAT —
//! GT plus Integer, Float and String fields of any Number, missing values (`.`),
//! short vectors and samples that omit trailing fields — exactly as htslib's
//! `vcf_parse` and [`Extractor::extract`] would store them.
//!
//! Anything unusual (an undeclared key, an empty value, `END`, a 10-digit integer, an
//! exponent, too many values for Number=A/R, a duplicated key, the wrong number of
//! samples …) makes the line go to htslib unchanged (`Ok(false)`), where the line
//! checks give their error or htslib decides; so both paths store the same bytes
//! (`testing.rs` and `tests/determinism.rs` hold them to it).
//!
//! htslib's rules reproduced here (vcf.c, `vcf_parse_format_*`, `vcf_parse_info`):
//! a FORMAT field's width is the most values any sample gives; a shorter vector is
//! padded with the vector end; a sample that stops before a field has it missing
//! (then vector ends); a float is the decimal rounded to double, then to float.

use crate::error::{Error, Result};
use crate::extract::{Extractor, Site};
use crate::fastvcf::{value_end, Lookups};
use crate::ragged::{Batch, BCF_INT32_MISSING, FLOAT32_MISSING};
use crate::schema::{Category, Schema, VcfNumber, VcfType};
use std::collections::HashMap;
use std::path::Path;

/// Where a field's values come from in the current line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueAt {
    Absent,
    /// Index into [`Direct::info`].
    Info(u32),
    /// Index of the FORMAT key.
    Format(u32),
}

/// An INFO value parsed, waiting for the line to be accepted: values in `ints` or
/// `floats` at `start..start + len`, or the string at `start..start + len` of the
/// INFO column.
#[derive(Clone, Copy)]
struct InfoValue {
    start: u32,
    len: u32,
}

/// One FORMAT key's values for every sample of the line.
#[derive(Default)]
struct FormatValues {
    /// Integers (htslib's sentinels) or float bit patterns, sample after sample.
    vals: Vec<u32>,
    /// Values per sample (0: the sample stopped before this field).
    counts: Vec<u32>,
    /// String values: byte range in the line's calls.
    spans: Vec<(u32, u32)>,
}

/// The direct parse's lookups and reused buffers (one per [`Extractor`]).
#[derive(Default)]
pub struct Direct {
    info_slots: HashMap<Vec<u8>, usize>,
    format_slots: HashMap<Vec<u8>, usize>,
    /// The last FORMAT column seen and its keys' slots (`usize::MAX` for GT).
    format_key: Vec<u8>,
    format_fields: Vec<usize>,
    /// How each key's values are read.
    format_kinds: Vec<Kind>,
    from: Vec<ValueAt>,
    info: Vec<InfoValue>,
    info_ints: Vec<u32>,
    format: Vec<FormatValues>,
}

const GT: usize = usize::MAX;

/// How a FORMAT key's values are read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gt,
    Int,
    Float,
    Str,
}

impl Direct {
    /// Lookups for the schema's fields (slot order: the schema's).
    pub fn for_schema(schema: &Schema) -> Direct {
        let mut d = Direct::default();
        for (i, (name, cat)) in schema
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.category))
            .enumerate()
        {
            let map = match cat {
                Category::Info => &mut d.info_slots,
                Category::Format => &mut d.format_slots,
            };
            map.insert(name.as_bytes().to_vec(), i);
        }
        d
    }
}

/// Comma-separated integers from `v[i..]` into htslib's form (`.` as missing),
/// appended to `out`, up to the value's end (`:`, a tab or the end of `v`); the count
/// and that end, or `None` if an item is not `.` or at most nine digits (longer ones
/// and `+` go to htslib, whose checks decide).
#[inline(always)]
fn ints_at(v: &[u8], mut i: usize, out: &mut Vec<u32>) -> Option<(u32, usize)> {
    let (n, mut count) = (v.len(), 0);
    loop {
        let mut c = *v.get(i)?;
        if c == b'.' {
            out.push(BCF_INT32_MISSING as u32);
            i += 1;
        } else {
            let neg = c == b'-';
            if neg {
                i += 1;
                c = *v.get(i)?;
            }
            let mut x = c.wrapping_sub(b'0') as u32;
            if x > 9 {
                return None;
            }
            let d = i;
            i += 1;
            while i < n {
                let y = v[i].wrapping_sub(b'0') as u32;
                if y > 9 {
                    break;
                }
                x = x.wrapping_mul(10).wrapping_add(y);
                i += 1;
            }
            if i - d > 9 {
                return None;
            }
            out.push(if neg {
                (x as i32).wrapping_neg() as u32
            } else {
                x
            });
        }
        count += 1;
        match v.get(i) {
            Some(b',') => i += 1,
            None | Some(b':' | b'\t') => return Some((count, i)),
            Some(_) => return None,
        }
    }
}

/// A whole value of integers (INFO), as [`ints_at`].
fn parse_ints(v: &[u8], out: &mut Vec<u32>) -> Option<u32> {
    ints_at(v, 0, out).and_then(|(n, e)| (e == v.len()).then_some(n))
}

/// Powers of ten exact in f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// One plain decimal (`-?digits[.digits]`) as htslib stores it: rounded to the
/// nearest double (as `hts_str2dbl`/`strtod` do), then to float. `None` for anything
/// else (exponents, `nan`, `.5`, `+1`), which goes to htslib.
#[inline]
fn parse_float(x: &[u8]) -> Option<u32> {
    let (neg, d) = match x.first() {
        Some(b'-') => (true, &x[1..]),
        _ => (false, x),
    };
    if !d.first()?.is_ascii_digit() {
        return None;
    }
    let (mut n, mut digits, mut frac, mut point) = (0u64, 0usize, 0usize, false);
    for &c in d {
        match c {
            b'0'..=b'9' => {
                if n != 0 || c != b'0' {
                    digits += 1;
                }
                n = n.wrapping_mul(10).wrapping_add((c - b'0') as u64);
                frac += usize::from(point);
            }
            b'.' if !point => point = true,
            _ => return None,
        }
    }
    let v = if digits <= 15 && frac < POW10.len() {
        // Exact integer over an exact power of ten: one correctly rounded division.
        n as f64 / POW10[frac]
    } else {
        std::str::from_utf8(d).ok()?.parse::<f64>().ok()?
    };
    Some((if neg { -v } else { v } as f32).to_bits())
}

/// Comma-separated floats from `v[i..]` (`.` as missing) appended to `out`, up to
/// the value's end; the count and that end, or `None`.
#[inline(always)]
fn floats_at(v: &[u8], mut i: usize, out: &mut Vec<u32>) -> Option<(u32, usize)> {
    let mut count = 0;
    loop {
        let e = v[i..]
            .iter()
            .position(|&c| matches!(c, b',' | b':' | b'\t'))
            .map_or(v.len(), |e| i + e);
        let x = &v[i..e];
        out.push(if x == b"." {
            FLOAT32_MISSING
        } else {
            parse_float(x)?
        });
        count += 1;
        match v.get(e) {
            Some(b',') => i = e + 1,
            _ => return Some((count, e)),
        }
    }
}

/// A whole value of floats (INFO), as [`floats_at`].
fn parse_floats(v: &[u8], out: &mut Vec<u32>) -> Option<u32> {
    floats_at(v, 0, out).and_then(|(n, e)| (e == v.len()).then_some(n))
}

/// One GT value at `b[p..]` into the line's calls; the position after it, or `None`
/// for anything unusual (htslib's path decides).
#[inline(always)]
fn gt_at(b: &[u8], p: usize, c: &mut CallsOut) -> Option<usize> {
    // The common call: one digit, a separator, one digit.
    if p + 3 <= b.len()
        && b[p].is_ascii_digit()
        && (b[p + 1] == b'|' || b[p + 1] == b'/')
        && b[p + 2].is_ascii_digit()
        && matches!(b.get(p + 3), None | Some(b'\t' | b':'))
    {
        let (a0, a1) = ((b[p] - b'0') as i32, (b[p + 2] - b'0') as i32);
        c.vals.push(a0);
        c.vals.push(a1);
        c.max_allele = c.max_allele.max(a0).max(a1);
        c.max_ploidy = c.max_ploidy.max(2);
        c.ploidies.push(2);
        c.phased.push(u8::from(b[p + 1] == b'|'));
        return Some(p + 3);
    }
    let end = value_end(b, p);
    let start = c.vals.len();
    let (n, ph) = crate::genotype::parse_text_call(&b[p..end], c.vals)?;
    for &a in &c.vals[start..] {
        c.max_allele = c.max_allele.max(a);
    }
    c.max_ploidy = c.max_ploidy.max(n);
    c.ploidies.push(n as u8);
    c.phased.push(u8::from(ph));
    Some(end)
}

/// Where a line's genotype calls go.
struct CallsOut<'a> {
    vals: &'a mut Vec<i32>,
    ploidies: &'a mut Vec<u8>,
    phased: &'a mut Vec<u8>,
    max_ploidy: usize,
    max_allele: i32,
}

/// Every sample's FORMAT values of a line (`b`, the calls), key by key as `kinds`
/// says, into `format` (one per key; GT into `c`). A sample that stops before a key
/// has it missing. The end (one past the last call's end), or `None` for anything
/// the direct parse leaves to htslib: fewer calls than samples, an empty value, more
/// values than keys. Its own function, so the loop keeps its state in registers.
#[inline(never)]
fn read_samples(
    b: &[u8],
    s: usize,
    kinds: &[Kind],
    format: &mut [FormatValues],
    c: &mut CallsOut,
) -> Option<usize> {
    let format = &mut format[..kinds.len()];
    if let ([Kind::Gt, rest @ ..], [_, ints @ ..]) = (kinds, &mut *format) {
        if rest.iter().all(|&k| k == Kind::Int) {
            return read_gt_and_ints(b, s, ints, c);
        }
    }
    read_each_key(b, s, kinds, format, c)
}

/// [`read_samples`] of any FORMAT: each key read by the parser of its kind.
fn read_each_key(
    b: &[u8],
    s: usize,
    kinds: &[Kind],
    format: &mut [FormatValues],
    c: &mut CallsOut,
) -> Option<usize> {
    let nk = kinds.len();
    let mut p = 0;
    for _ in 0..s {
        if p > b.len() {
            return None; // fewer calls than samples
        }
        let mut j = 0;
        loop {
            let f = &mut format[j];
            let end = match kinds[j] {
                Kind::Gt => gt_at(b, p, c),
                Kind::Int => ints_at(b, p, &mut f.vals).map(|(n, end)| {
                    f.counts.push(n);
                    end
                }),
                Kind::Float => floats_at(b, p, &mut f.vals).map(|(n, end)| {
                    f.counts.push(n);
                    end
                }),
                Kind::Str => {
                    let end = value_end(b, p);
                    f.spans.push((p as u32, end as u32));
                    let n = b[p..end].iter().filter(|&&x| x == b',').count();
                    f.counts.push(1 + n as u32);
                    (end > p).then_some(end)
                }
            };
            // An empty value is refused too: htslib reads an empty Float as 0.
            p = end.filter(|&e| e > p)?;
            j += 1;
            match b.get(p) {
                Some(b':') if j < nk => p += 1,
                Some(b':') => return None, // more values than keys
                _ => break,
            }
        }
        // Fields the sample stops before: missing.
        for f in &mut format[j..] {
            f.counts.push(0);
            f.spans.push((0, 0));
        }
        p += 1; // the tab (or one past the end)
    }
    Some(p)
}

/// [`read_samples`] of a FORMAT of GT then integers only (`GT:AD:DP:GQ:PL`, most call
/// sets): no choice of parser per key. A jump on each key's kind, whose target the
/// values' varying lengths keep the branch predictor from learning, was a fifth of
/// that function's time.
#[inline(never)]
fn read_gt_and_ints(
    b: &[u8],
    s: usize,
    ints: &mut [FormatValues],
    c: &mut CallsOut,
) -> Option<usize> {
    let mut p = 0;
    for _ in 0..s {
        if p > b.len() {
            return None; // fewer calls than samples
        }
        p = gt_at(b, p, c).filter(|&e| e > p)?;
        let mut j = 0;
        while b.get(p) == Some(&b':') {
            let f = ints.get_mut(j)?; // more values than keys
            let (n, end) = ints_at(b, p + 1, &mut f.vals)?;
            f.counts.push(n);
            p = end;
            j += 1;
        }
        // Fields the sample stops before: missing.
        for f in &mut ints[j..] {
            f.counts.push(0);
            f.spans.push((0, 0));
        }
        p += 1; // the tab (or one past the end)
    }
    Some(p)
}

/// The most values Number=A/R allows with `n_alleles` alleles (REF included).
fn most_values(number: VcfNumber, n_alleles: usize) -> Option<usize> {
    match number {
        VcfNumber::A => Some(n_alleles.saturating_sub(1).max(1)),
        VcfNumber::R => Some(n_alleles),
        _ => None,
    }
}

impl Extractor {
    /// Appends the current line through the direct parse (`direct`: its lookups and
    /// buffers, one per extractor); `Ok(false)` leaves the batch untouched and the
    /// line to htslib.
    pub fn extract_direct_line(
        &mut self,
        direct: &mut Direct,
        path: &Path,
        record_no: u64,
        line: &[u8],
        lk: &Lookups,
        batch: &mut Batch,
    ) -> Result<bool> {
        let s = self.n_samples;
        if line.len() > u32::MAX as usize {
            return Ok(false); // offsets below are u32
        }
        // The eight fixed columns, then `rest` (FORMAT and the calls).
        let mut fixed: [&[u8]; 8] = [&[]; 8];
        let mut rest: &[u8] = &[];
        let mut cursor = line;
        for (k, slot) in fixed.iter_mut().enumerate() {
            match cursor.iter().position(|&c| c == b'\t') {
                Some(t) => {
                    *slot = &cursor[..t];
                    cursor = &cursor[t + 1..];
                    if k == 7 {
                        rest = cursor;
                    }
                }
                None if k == 7 => *slot = cursor,
                None => return Ok(false),
            }
        }
        let [chrom, pos_b, id, r, alt, qual_b, filter, info] = fixed;
        if r.is_empty() || id.is_empty() || alt.is_empty() || info.is_empty() {
            return Ok(false);
        }
        let Some(rid) = lk.contig_id(chrom) else {
            return Ok(false);
        };
        let Some(pos) = crate::genotype::parse_u64(pos_b) else {
            return Ok(false);
        };
        let qual = if qual_b == b"." {
            FLOAT32_MISSING
        } else {
            match std::str::from_utf8(qual_b)
                .ok()
                .and_then(|q| q.parse::<f64>().ok())
            {
                Some(q) if q.is_finite() => (q as f32).to_bits(),
                _ => return Ok(false),
            }
        };
        self.flags.clear();
        self.flags.resize(self.n_filters, 0);
        if filter != b"." {
            for name in filter.split(|&b| b == b';') {
                let Some(hid) = lk.filter_id(name) else {
                    return Ok(false);
                };
                let Some(i) = self.filter_index.get(hid as usize).copied().flatten() else {
                    return Ok(false);
                };
                self.flags[i] = 1;
            }
        }
        let mut alleles: Vec<&[u8]> = Vec::with_capacity(4);
        alleles.push(r);
        if alt != b"." {
            for a in alt.split(|&b| b == b',') {
                if a.is_empty() {
                    return Ok(false);
                }
                alleles.push(a);
            }
        }
        let d = &mut *direct;
        d.from.clear();
        d.from.resize(self.fields.len(), ValueAt::Absent);
        if !parse_info(d, &self.fields, info, alleles.len()) {
            return Ok(false);
        }

        // FORMAT and the calls.
        self.gt_vals.clear();
        self.phased.clear();
        self.ploidies.clear();
        let (mut max_ploidy, mut max_allele) = (0usize, -1i32);
        let mut has_gt = false;
        // Every call one-digit diploid, FORMAT `GT` alone: read in bulk into `gt8`.
        let mut diploid = None;
        let mut calls: &[u8] = &[];
        if s == 0 {
            if !rest.is_empty() {
                return Ok(false);
            }
        } else {
            let Some(t) = rest.iter().position(|&c| c == b'\t') else {
                return Ok(false);
            };
            let keys = &rest[..t];
            calls = &rest[t + 1..];
            if !resolve_format(d, &self.fields, keys, self.gt.is_some()) {
                return Ok(false);
            }
            has_gt = d.format_fields.first() == Some(&GT);
            let nk = d.format_fields.len();
            for (j, f) in d.format.iter_mut().take(nk).enumerate() {
                f.vals.clear();
                f.counts.clear();
                f.spans.clear();
                if d.format_fields[j] != GT {
                    d.from[d.format_fields[j]] = ValueAt::Format(j as u32);
                }
            }
            let b = calls;
            let mut p = 0;
            if nk == 1 && has_gt {
                diploid = crate::diploid::read_row(b, s, &mut self.gt8, &mut self.phased);
                match diploid {
                    Some(_) => p = b.len() + 1,
                    None => self.phased.clear(),
                }
            }
            let mut c = CallsOut {
                vals: &mut self.gt_vals,
                ploidies: &mut self.ploidies,
                phased: &mut self.phased,
                max_ploidy: 0,
                max_allele: -1,
            };
            if let Some(a) = diploid {
                (c.max_ploidy, c.max_allele) = (2, a.hi as i32);
            } else {
                // Every other line, FORMAT `GT` alone with calls of other forms included.
                let Some(end) = read_samples(b, s, &d.format_kinds, &mut d.format, &mut c) else {
                    return Ok(false);
                };
                p = end;
            }
            (max_ploidy, max_allele) = (c.max_ploidy, c.max_allele);
            // Exactly one column per sample: the last one must end the line.
            if p != b.len() + 1 || max_ploidy > 255 {
                return Ok(false);
            }
            // Number=A/R past the alleles: htslib's path gives the error. Every sample
            // is laid out as wide as the widest (padded as it is laid out in the batch):
            // refused before that when it is more than one record may take.
            let mut laid_out = 0u64;
            for (j, &field) in d.format_fields.iter().enumerate() {
                let (width, bytes) = match field {
                    GT => (max_ploidy, 4),
                    _ => {
                        let width = d.format[j].counts.iter().copied().max().unwrap_or(0);
                        if most_values(self.fields[field].number, alleles.len())
                            .is_some_and(|m| width as usize > m)
                        {
                            return Ok(false);
                        }
                        // (A string's offsets, beside its text.)
                        (
                            width as usize,
                            if d.format_kinds[j] == Kind::Str { 8 } else { 4 },
                        )
                    }
                };
                laid_out = laid_out.saturating_add(
                    (width as u64)
                        .saturating_mul(bytes)
                        .saturating_mul(s as u64),
                );
            }
            if laid_out > crate::limits::values_limit() {
                // Over: each field named and measured again, for the message.
                let widths = d
                    .format_fields
                    .iter()
                    .enumerate()
                    .map(|(j, &field)| match field {
                        GT => (&b"GT"[..], max_ploidy, 4),
                        _ => {
                            let width = d.format[j].counts.iter().copied().max().unwrap_or(0);
                            let bytes = if d.format_kinds[j] == Kind::Str { 8 } else { 4 };
                            (self.fields[field].name.as_bytes(), width as usize, bytes)
                        }
                    });
                if let Err(msg) = crate::limits::check_format_widths(widths, s) {
                    return Err(Error::Record {
                        path: path.into(),
                        record: record_no + 1,
                        locus: format!("{}:{pos}", String::from_utf8_lossy(chrom)),
                        msg,
                    });
                }
            }
        }
        let locus = || format!("{}:{pos}", String::from_utf8_lossy(chrom));
        if max_allele >= alleles.len() as i32 {
            let warned = self
                .warned_allele
                .load(std::sync::atomic::Ordering::Relaxed);
            if self.defers_warnings && !warned {
                return Ok(false); // the reading thread warns, in record order
            }
            self.allele_beyond_alt(record_no, &locus(), max_allele, alleles.len());
        }

        // Everything checked: append.
        let site = Site {
            rid,
            contig_name: chrom,
            pos: pos as i64,
            rlen: r.len() as i64,
            id,
            alleles: &alleles,
            qual,
        };
        self.push_site(batch, &site).map_err(|msg| Error::Record {
            path: path.into(),
            record: record_no + 1,
            locus: locus(),
            msg,
        })?;
        let d = &mut *direct;
        for (slot, from) in self.fields.iter().zip(&d.from) {
            let col = &mut batch.columns[slot.column];
            match *from {
                ValueAt::Absent if slot.ty == VcfType::Flag => col.push_bools(&[0], 1),
                ValueAt::Absent => col.push_absent(),
                ValueAt::Info(k) => {
                    let v = d.info[k as usize];
                    let (a, n) = (v.start as usize, v.len as usize);
                    match slot.ty {
                        VcfType::Flag => col.push_bools(&[1], 1),
                        VcfType::Integer => {
                            col.push_htslib_ints(as_i32(&d.info_ints[a..a + n]), n as u32)
                        }
                        VcfType::Float => col.push_floats(&d.info_ints[a..a + n], n as u32),
                        VcfType::String | VcfType::Character => {
                            let value = &info[a..a + n];
                            let width = 1 + value.iter().filter(|&&c| c == b',').count();
                            col.begin_strs(width as u32);
                            col.push_elements(value, slot.ty == VcfType::Character);
                        }
                    }
                }
                ValueAt::Format(j) => {
                    let f = &d.format[j as usize];
                    let width = f.counts.iter().copied().max().unwrap_or(0).max(1) as usize;
                    match slot.ty {
                        // Every cell `width` values: htslib's layout as it is.
                        VcfType::Integer if f.vals.len() == width * s => {
                            col.push_htslib_ints(as_i32(&f.vals), width as u32)
                        }
                        VcfType::Float if f.vals.len() == width * s => {
                            col.push_floats(&f.vals, width as u32)
                        }
                        VcfType::Integer => {
                            col.push_htslib_int_cells(as_i32(&f.vals), &f.counts, width as u32)
                        }
                        VcfType::Float => col.push_float_cells(&f.vals, &f.counts, width as u32),
                        _ => {
                            col.begin_strs(width as u32);
                            for &(a, e) in &f.spans {
                                let v = if e > a {
                                    &calls[a as usize..e as usize]
                                } else {
                                    &b"."[..]
                                };
                                let k = col.push_elements(v, slot.ty == VcfType::Character);
                                for _ in k..width {
                                    col.push_str(b"");
                                }
                            }
                        }
                    }
                }
            }
        }
        if let Some((_, col_gt, col_phased)) = &self.gt {
            if let Some(a) = diploid {
                batch.max_ploidy = batch.max_ploidy.max(2);
                batch.columns[*col_gt].push_i8s(&self.gt8, 2, a.lo, a.hi);
                batch.columns[*col_phased].push_bools(&self.phased, 1);
            } else if s > 0 && has_gt {
                if max_ploidy > 0 && self.ploidies.iter().any(|&p| p as usize != max_ploidy) {
                    // Pad shorter calls with the fill value, as htslib's vector end.
                    let mut padded = Vec::with_capacity(s * max_ploidy);
                    let mut k = 0;
                    for &p in &self.ploidies {
                        padded.extend_from_slice(&self.gt_vals[k..k + p as usize]);
                        padded.extend(std::iter::repeat_n(-2, max_ploidy - p as usize));
                        k += p as usize;
                    }
                    self.gt_vals = padded;
                }
                batch.max_ploidy = batch.max_ploidy.max(max_ploidy as u32);
                batch.columns[*col_gt].push_ints(&self.gt_vals, max_ploidy as u32);
                batch.columns[*col_phased].push_bools(&self.phased, 1);
            } else {
                batch.columns[*col_gt].push_absent();
                self.phased.clear();
                self.phased.resize(s, 0);
                batch.columns[*col_phased].push_bools(&self.phased, 1);
            }
        }
        self.check_appended(batch, path, record_no, &locus)?;
        Ok(true)
    }
}

/// `u32`s viewed as `i32`s (the same bits: htslib's integer sentinels).
fn as_i32(v: &[u32]) -> &[i32] {
    // SAFETY: u32 and i32 have the same size, alignment and validity (every bit
    // pattern is valid for both); the slice's lifetime is kept.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const i32, v.len()) }
}

/// Parses the INFO column into `d.info` (marking `d.from`); `false` hands the line
/// to htslib.
fn parse_info(
    d: &mut Direct,
    fields: &[crate::extract::FieldSlot],
    info: &[u8],
    n_alleles: usize,
) -> bool {
    d.info.clear();
    d.info_ints.clear();
    if info == b"." {
        return true;
    }
    let mut at = 0usize;
    for item in info.split(|&b| b == b';') {
        let start = at;
        at += item.len() + 1;
        if item.is_empty() {
            return false;
        }
        let (key, value) = match item.iter().position(|&b| b == b'=') {
            Some(e) => (&item[..e], Some((start + e + 1, &item[e + 1..]))),
            None => (item, None),
        };
        let Some(&slot) = d.info_slots.get(key) else {
            return false;
        };
        if d.from[slot] != ValueAt::Absent || key == b"END" {
            return false; // a key twice; END sets the variant's length (htslib's path)
        }
        let f = &fields[slot];
        let v = match (f.ty, value) {
            (VcfType::Flag, None) => InfoValue { start: 0, len: 0 },
            (VcfType::Flag, Some(_)) | (_, None) => return false,
            (_, Some((_, b""))) => return false,
            (VcfType::Integer | VcfType::Float, Some((_, v))) => {
                let a = d.info_ints.len();
                let n = if f.ty == VcfType::Integer {
                    parse_ints(v, &mut d.info_ints)
                } else {
                    parse_floats(v, &mut d.info_ints)
                };
                let Some(n) = n else { return false };
                if most_values(f.number, n_alleles).is_some_and(|m| n as usize > m) {
                    return false;
                }
                InfoValue {
                    start: a as u32,
                    len: n,
                }
            }
            (_, Some((p, v))) => {
                let parts = 1 + v.iter().filter(|&&c| c == b',').count();
                if most_values(f.number, n_alleles).is_some_and(|m| parts > m) {
                    return false;
                }
                InfoValue {
                    start: p as u32,
                    len: v.len() as u32,
                }
            }
        };
        d.from[slot] = ValueAt::Info(d.info.len() as u32);
        d.info.push(v);
    }
    true
}

/// Resolves the FORMAT column's keys to field slots (cached while it repeats);
/// `false` for an undeclared, duplicated or Flag key, or GT anywhere but first.
fn resolve_format(
    d: &mut Direct,
    fields: &[crate::extract::FieldSlot],
    keys: &[u8],
    schema_has_gt: bool,
) -> bool {
    if keys == d.format_key.as_slice() && !d.format_fields.is_empty() {
        return true;
    }
    d.format_key.clear();
    d.format_fields.clear();
    d.format_kinds.clear();
    if !resolve_keys(d, fields, keys, schema_has_gt) {
        // Nothing half-resolved may be taken for a cached FORMAT later.
        d.format_fields.clear();
        d.format_kinds.clear();
        return false;
    }
    if d.format.len() < d.format_fields.len() {
        d.format
            .resize_with(d.format_fields.len(), FormatValues::default);
    }
    d.format_key.extend_from_slice(keys);
    true
}

/// [`resolve_format`]'s lookups, key by key; `false` at the first key refused.
fn resolve_keys(
    d: &mut Direct,
    fields: &[crate::extract::FieldSlot],
    keys: &[u8],
    schema_has_gt: bool,
) -> bool {
    for (i, key) in keys.split(|&b| b == b':').enumerate() {
        let slot = if key == b"GT" {
            if i != 0 || !schema_has_gt {
                return false;
            }
            GT
        } else {
            match d.format_slots.get(key) {
                Some(&slot) if fields[slot].ty != VcfType::Flag => slot,
                _ => return false,
            }
        };
        if d.format_fields.contains(&slot) {
            return false;
        }
        d.format_fields.push(slot);
        d.format_kinds.push(match slot {
            GT => Kind::Gt,
            _ => match fields[slot].ty {
                VcfType::Integer => Kind::Int,
                VcfType::Float => Kind::Float,
                _ => Kind::Str,
            },
        });
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random lines of GT and integer calls, stray bytes among them: the parse for that
    /// FORMAT reads them as the parse of any FORMAT does, or refuses them alike.
    #[test]
    fn gt_and_integers_read_as_any_format_reads_them() {
        let mut next = crate::rng::rng(0x2545_f491_4f6c_dd1du64);
        let items: [&[u8]; 14] = [
            b"0/1",
            b"1|1",
            b"./.",
            b".",
            b"0",
            b"12",
            b"-3",
            b"1234567890",
            b"",
            b"x",
            b"0/1/2",
            b"10|2",
            b"7",
            b"345",
        ];
        let (mut read, mut lines) = (0, 0);
        for case in 0..40_000 {
            let ints = 1 + next(4) as usize;
            let kinds: Vec<Kind> = std::iter::once(Kind::Gt)
                .chain(std::iter::repeat_n(Kind::Int, ints))
                .collect();
            let s = 1 + next(4) as usize;
            let mut line = Vec::new();
            for k in 0..s {
                let keys = match next(6) {
                    0 => next(kinds.len() as u64 + 2) as usize, // fewer, or too many
                    _ => kinds.len(),
                };
                for j in 0..keys.max(1) {
                    let odd = next(10) == 0;
                    let values = if j == 0 { 1 } else { 1 + next(3) as usize };
                    for v in 0..values {
                        line.extend_from_slice(match (j, odd) {
                            (_, true) => items[next(items.len() as u64) as usize],
                            (0, false) => items[next(3) as usize],
                            _ => items[[3, 4, 5, 6, 12, 13][next(6) as usize]],
                        });
                        if v + 1 < values {
                            line.push(b',');
                        }
                    }
                    if j + 1 < keys.max(1) {
                        line.push(b':');
                    }
                }
                if k + 1 < s {
                    line.push(if next(30) == 0 { b':' } else { b'\t' });
                }
            }
            let run = |general: bool| {
                let mut format: Vec<FormatValues> =
                    (0..kinds.len()).map(|_| FormatValues::default()).collect();
                let (mut vals, mut ploidies, mut phased) = (Vec::new(), Vec::new(), Vec::new());
                let mut c = CallsOut {
                    vals: &mut vals,
                    ploidies: &mut ploidies,
                    phased: &mut phased,
                    max_ploidy: 0,
                    max_allele: -1,
                };
                let end = match general {
                    true => read_each_key(&line, s, &kinds, &mut format, &mut c),
                    false => read_samples(&line, s, &kinds, &mut format, &mut c),
                };
                let (mp, ma) = (c.max_ploidy, c.max_allele);
                let fields: Vec<_> = format
                    .into_iter()
                    .map(|f| (f.vals, f.counts, f.spans))
                    .collect();
                (end, end.map(|_| (fields, vals, ploidies, phased, mp, ma)))
            };
            let (special, general) = (run(false), run(true));
            assert_eq!(
                special,
                general,
                "case {case}: {:?}",
                String::from_utf8_lossy(&line)
            );
            lines += 1;
            read += usize::from(special.0.is_some());
        }
        // Both read lines and refused ones were tried.
        assert!(
            read > lines / 10 && read < lines * 9 / 10,
            "{read} of {lines}"
        );
    }

    #[test]
    fn integers_and_floats_as_htslib_reads_them() {
        let mut out = Vec::new();
        assert_eq!(parse_ints(b"1,.,-3,999999999", &mut out), Some(4));
        assert_eq!(
            out,
            vec![1, BCF_INT32_MISSING as u32, (-3i32) as u32, 999_999_999]
        );
        for bad in [
            "",
            "1,",
            ",1",
            "+1",
            "1234567890",
            "1.5",
            "-",
            "1x",
            "1,,2",
            "1:2",
        ] {
            assert_eq!(parse_ints(bad.as_bytes(), &mut out), None, "{bad}");
        }
        assert_eq!(ints_at(b"0/1:3,4:5", 4, &mut out), Some((2, 7)));
        assert_eq!(floats_at(b"x:0.5,.\t", 2, &mut out), Some((2, 7)));
        let f = |s: &str| parse_float(s.as_bytes());
        for (s, want) in [
            ("0.1", 0.1f64),
            ("-2.5", -2.5),
            ("3.", 3.0),
            ("0", 0.0),
            ("123456.789", 123456.789),
            ("0.000001", 0.000001),
            ("1.00000000000000000001", 1.0),
            ("33333333333333333.3", 33333333333333333.3),
        ] {
            assert_eq!(f(s), Some((want as f32).to_bits()), "{s}");
        }
        assert_eq!(f("-0"), Some((-0.0f32).to_bits()));
        for bad in [".5", "1e5", "nan", "inf", "+1", "1.2.3", "", "-", "1,2"] {
            assert_eq!(f(bad), None, "{bad}");
        }
    }
}
