//! Raw per-record values for one inner-chunk row of records, before they are laid out
//! as chunks. Records may carry different numbers of values; a [`Column`] keeps them
//! ragged so nothing is padded until the final width is known.

use crate::columns::{Base, ColumnSpec, ColumnStats};
use crate::packed::{pack_diploid, packs_diploid, unpack_diploid_into, Bits};

/// htslib's integer sentinels.
pub const BCF_INT32_MISSING: i32 = i32::MIN;
pub const BCF_INT32_VECTOR_END: i32 = i32::MIN + 1;
/// VCF Zarr float sentinels (also htslib's bit patterns).
pub const FLOAT32_MISSING: u32 = 0x7F80_0001;
pub const FLOAT32_FILL: u32 = 0x7F80_0002;

/// Values of one column, in record order.
#[derive(Debug, Clone)]
pub enum Values {
    /// Canonical integers (−1 missing, −2 fill) while every value fits in 16 bits: how
    /// an integer column other than genotypes starts, widened to `Int` (once) by a value
    /// that does not fit. FORMAT integers (AD, DP, GQ, PL) nearly always fit, and at
    /// thousands of samples they are most of a batch's bytes: half the memory, half the
    /// pages touched.
    Int16(Vec<i16>),
    /// Canonical integers: −1 missing, −2 fill.
    Int(Vec<i32>),
    /// Canonical integers, once a value needs more than 32 bits (POS of a chromosome
    /// past 2^31 bp, a 64-bit INFO integer).
    Long(Vec<i64>),
    /// Canonical integers that fit in i8 (genotype calls).
    Int8(Vec<i8>),
    /// Diploid genotype calls, one byte per call ([`crate::packed::pack_diploid`]):
    /// how a genotype column starts, widened to `Int8` (once) by a call that does not
    /// pack. Holds two values per byte.
    Diploid(Vec<u8>),
    /// f32 bit patterns.
    Float(Vec<u32>),
    Bool(Bits),
    /// Strings (and VCF Characters), concatenated; `ends[i]` closes string `i`.
    Str {
        bytes: Vec<u8>,
        ends: Vec<usize>,
    },
}

impl Values {
    /// Values held (strings, for `Str`).
    pub fn len(&self) -> usize {
        match self {
            Values::Int16(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Long(v) => v.len(),
            Values::Int8(v) => v.len(),
            Values::Diploid(v) => 2 * v.len(),
            Values::Float(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str { ends, .. } => ends.len(),
        }
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the values fill, in their current representation (a packed genotype
    /// column half what an unpacked one fills): what a batch of them costs in memory.
    pub fn filled_bytes(&self) -> usize {
        match self {
            Values::Int16(v) => 2 * v.len(),
            Values::Int(v) => 4 * v.len(),
            Values::Long(v) => 8 * v.len(),
            Values::Int8(v) => v.len(),
            Values::Diploid(v) => v.len(),
            Values::Float(v) => 4 * v.len(),
            Values::Bool(v) => v.len().div_ceil(8),
            Values::Str { bytes, ends } => bytes.len() + std::mem::size_of::<usize>() * ends.len(),
        }
    }

    /// Bytes the values from value `i` on fill (strings from string `i` on).
    pub fn filled_bytes_from(&self, i: usize) -> usize {
        let n = self.len().saturating_sub(i);
        match self {
            Values::Int16(_) => 2 * n,
            Values::Int(_) | Values::Float(_) => 4 * n,
            Values::Long(_) => 8 * n,
            Values::Int8(_) => n,
            Values::Diploid(v) => v.len().saturating_sub(i / 2),
            Values::Bool(_) => n.div_ceil(8),
            Values::Str { bytes, ends } => {
                let from = match i {
                    0 => 0,
                    i => ends.get(i - 1).copied().unwrap_or(bytes.len()),
                };
                bytes.len().saturating_sub(from) + std::mem::size_of::<usize>() * n
            }
        }
    }

    /// String `i` (for `Str` values).
    pub fn str_at(&self, i: usize) -> &[u8] {
        match self {
            Values::Str { bytes, ends } => {
                let start = if i == 0 { 0 } else { ends[i - 1] };
                &bytes[start..ends[i]]
            }
            _ => &[],
        }
    }
}

/// Ragged values for a run of records. Record `r` holds `widths[r]` values for each
/// of `per_record` cells (samples, or 1) starting at `starts[r]`; width 0 means the
/// field was absent from the record.
#[derive(Debug, Clone)]
pub struct Column {
    pub per_record: usize,
    pub values: Values,
    pub starts: Vec<usize>,
    pub widths: Vec<u32>,
    pub stats: ColumnStats,
    /// A −1 or −2 read from the input as a value (not a missing value or a vector
    /// end) since the extractor last looked: see [`Column::take_reserved`].
    pub reserved: Option<i32>,
    /// A string value with an empty element (`a,,b`) read since the extractor last
    /// looked (its first 40 bytes): see [`Column::push_elements`].
    pub empty_element: Option<Vec<u8>>,
}

impl Column {
    /// An empty column for `spec`; `per_record` is the sample count for FORMAT columns.
    pub fn new(spec: &ColumnSpec, n_samples: usize) -> Column {
        let values = match spec.base {
            Base::Int if spec.genotype => Values::Diploid(Vec::new()),
            Base::Int => Values::Int16(Vec::new()),
            Base::Float => Values::Float(Vec::new()),
            Base::Bool => Values::Bool(Bits::new()),
            Base::Str | Base::Char => Values::Str {
                bytes: Vec::new(),
                ends: Vec::new(),
            },
        };
        Column {
            per_record: if spec.per_sample { n_samples } else { 1 },
            values,
            starts: Vec::new(),
            widths: Vec::new(),
            stats: ColumnStats::default(),
            reserved: None,
            empty_element: None,
        }
    }

    /// A −1 or −2 the input gave as a value since the last call. VCF Zarr keeps those
    /// two integers for missing and fill, so the value cannot be stored: it would read
    /// back as missing (or absent), silently. The extractor refuses the record.
    pub fn take_reserved(&mut self) -> Option<i32> {
        self.reserved.take()
    }

    /// Notes `v`, a −1 or −2 the input gave as a value (see [`Column::take_reserved`]).
    pub fn note_reserved(&mut self, v: i32) {
        self.reserved.get_or_insert(v);
    }

    /// Reserves room for `records` records of `width` values per cell at once, so a
    /// batch's buffers are not grown by doubling (each step leaves the old block in
    /// the allocator's arena: ~1.5x the bytes, measured on FORMAT-heavy files).
    pub fn reserve(&mut self, records: usize, width: usize) {
        let n = records * self.per_record * width.max(1);
        match &mut self.values {
            Values::Int16(v) => v.reserve(n),
            Values::Int(v) => v.reserve(n),
            Values::Long(v) => v.reserve(n),
            Values::Int8(v) => v.reserve(n),
            Values::Diploid(v) => v.reserve(n.div_ceil(2)),
            Values::Float(v) => v.reserve(n),
            Values::Bool(v) => v.reserve(n),
            Values::Str { ends, .. } => ends.reserve(n),
        }
        self.starts.reserve(records);
        self.widths.reserve(records);
    }

    /// Bytes the column's records fill: values in their current representation and
    /// each record's start and width.
    pub fn filled_bytes(&self) -> usize {
        let per_record = std::mem::size_of::<usize>() + std::mem::size_of::<u32>();
        self.values.filled_bytes() + per_record * self.starts.len()
    }

    /// Bytes records `r..` fill, as [`Column::filled_bytes`] counts them.
    pub fn filled_bytes_from(&self, r: usize) -> usize {
        let Some(&start) = self.starts.get(r) else {
            return 0;
        };
        let per_record = std::mem::size_of::<usize>() + std::mem::size_of::<u32>();
        self.values.filled_bytes_from(start) + per_record * (self.starts.len() - r)
    }

    /// Number of records held.
    pub fn len(&self) -> usize {
        self.widths.len()
    }

    /// Whether no records are held.
    pub fn is_empty(&self) -> bool {
        self.widths.is_empty()
    }

    fn begin(&mut self, width: u32) {
        self.starts.push(self.values.len());
        self.widths.push(width);
        self.stats.max_width = self.stats.max_width.max(width);
    }

    /// Records that the field is absent from this record.
    pub fn push_absent(&mut self) {
        self.begin(0);
    }

    /// Appends a record of htslib integers (`per_record × width` values), mapping
    /// htslib's missing/vector-end sentinels to −1/−2.
    pub fn push_htslib_ints(&mut self, raw: &[i32], width: u32) {
        self.begin(width);
        if let Some(&v) = raw.iter().find(|&&x| x == -1 || x == -2) {
            self.note_reserved(v);
        }
        let canonical = |x: i32| match x {
            BCF_INT32_MISSING => -1,
            BCF_INT32_VECTOR_END => -2,
            x => x,
        };
        let (mut lo, mut hi) = (i32::MAX, i32::MIN);
        if let Values::Int16(v) = &mut self.values {
            // Narrowed as they go; checked once at the end (the common case fits).
            let start = v.len();
            v.extend(raw.iter().map(|&x| {
                let c = canonical(x);
                lo = lo.min(c);
                hi = hi.max(c);
                c as i16
            }));
            if lo < i16::MIN as i32 || hi > i16::MAX as i32 {
                v.truncate(start);
                self.widen_to_int();
            }
        }
        match &mut self.values {
            Values::Int16(_) => {}
            Values::Int(v) => v.extend(raw.iter().map(|&x| {
                let c = canonical(x);
                lo = lo.min(c);
                hi = hi.max(c);
                c
            })),
            // An earlier record of the batch needed 64 bits (an INFO integer past
            // 2^31): this one joins it.
            Values::Long(v) => v.extend(raw.iter().map(|&x| {
                let c = canonical(x);
                lo = lo.min(c);
                hi = hi.max(c);
                i64::from(c)
            })),
            _ => unreachable!("int column"),
        }
        if !raw.is_empty() {
            self.stats.min = self.stats.min.min(lo as i64);
            self.stats.max = self.stats.max.max(hi as i64);
        }
    }

    /// [`Column::push_htslib_ints`] of cells of `counts[i]` values each (the htslib
    /// integers of `raw`, in order), each padded to `width` with vector ends, a cell of
    /// none being one missing value: the layout htslib gives a FORMAT field, laid out
    /// once, in place, rather than padded into a buffer and copied again.
    pub fn push_htslib_int_cells(&mut self, raw: &[i32], counts: &[u32], width: u32) {
        self.begin(width);
        let (mut lo, mut hi) = (i32::MAX, i32::MIN);
        // The reserved values are looked for with the range, in one pass.
        if range_and_reserved(raw, &mut lo, &mut hi) {
            if let Some(&v) = raw.iter().find(|&&x| x == -1 || x == -2) {
                self.note_reserved(v);
            }
        }
        if let Values::Int16(v) = &mut self.values {
            // Narrowed as they go; checked once at the end (the common case fits).
            let start = v.len();
            lay_out_cells(v, raw, counts, width as usize, &mut lo, &mut hi, |c| {
                c as i16
            });
            if lo < i16::MIN as i32 || hi > i16::MAX as i32 {
                v.truncate(start);
                self.widen_to_int();
            }
        }
        match &mut self.values {
            Values::Int16(_) => {}
            Values::Int(v) => {
                lay_out_cells(v, raw, counts, width as usize, &mut lo, &mut hi, |c| c)
            }
            Values::Long(v) => {
                lay_out_cells(v, raw, counts, width as usize, &mut lo, &mut hi, i64::from)
            }
            _ => unreachable!("int column"),
        }
        if !counts.is_empty() && width > 0 {
            self.stats.min = self.stats.min.min(lo as i64);
            self.stats.max = self.stats.max.max(hi as i64);
        }
    }

    /// Appends canonical integers and updates the value range. An i8 column widens
    /// to i32 (once) when a value does not fit.
    pub fn push_ints(&mut self, vals: &[i32], width: u32) {
        self.begin(width);
        let (mut lo, mut hi) = (i32::MAX, i32::MIN);
        for &c in vals {
            lo = lo.min(c);
            hi = hi.max(c);
        }
        if !vals.is_empty() {
            self.stats.min = self.stats.min.min(lo as i64);
            self.stats.max = self.stats.max.max(hi as i64);
        }
        if let Values::Diploid(v) = &mut self.values {
            if (width == 2 || vals.is_empty()) && packs_diploid(lo as i64, hi as i64) {
                pack_diploid(vals, v);
                return;
            }
            self.widen_to_int8();
        }
        if let Values::Int8(v) = &mut self.values {
            if lo >= i8::MIN as i32 && hi <= i8::MAX as i32 {
                v.extend(vals.iter().map(|&x| x as i8));
                return;
            }
            let wide = v.iter().map(|&x| x as i32).collect();
            self.values = Values::Int(wide);
        }
        if let Values::Int16(v) = &mut self.values {
            if lo >= i16::MIN as i32 && hi <= i16::MAX as i32 {
                v.extend(vals.iter().map(|&x| x as i16));
                return;
            }
            self.widen_to_int();
        }
        match &mut self.values {
            Values::Int(v) => v.extend_from_slice(vals),
            Values::Long(v) => v.extend(vals.iter().map(|&x| x as i64)),
            _ => unreachable!("int column"),
        }
    }

    /// Appends canonical integers that may need 64 bits; the column widens to
    /// [`Values::Long`] (once) when one does.
    pub fn push_longs(&mut self, vals: &[i64], width: u32) {
        let fits = vals.iter().all(|&x| i32::try_from(x).is_ok());
        if fits && !matches!(self.values, Values::Long(_)) {
            // The hot path (one POS per record): no allocation.
            if let [x] = vals {
                return self.push_ints(&[*x as i32], width);
            }
            let small: Vec<i32> = vals.iter().map(|&x| x as i32).collect();
            return self.push_ints(&small, width);
        }
        self.begin(width);
        for &c in vals {
            self.stats.min = self.stats.min.min(c);
            self.stats.max = self.stats.max.max(c);
        }
        self.widen_to_long();
        let Values::Long(v) = &mut self.values else {
            unreachable!("widened")
        };
        v.extend_from_slice(vals);
    }

    /// Unpacks diploid calls to one i8 per allele: a call that does not pack joins
    /// the column (a haploid call, an allele past 14). The column stays unpacked
    /// through later batches too, so a file of such calls does not repack per batch.
    fn widen_to_int8(&mut self) {
        if let Values::Diploid(v) = &self.values {
            let mut wide = Vec::with_capacity(2 * v.capacity());
            unpack_diploid_into(v, &mut wide);
            self.values = Values::Int8(wide);
        }
    }

    /// Widens 16-bit integers to 32 bits (once): a value that does not fit joins the
    /// column.
    fn widen_to_int(&mut self) {
        if let Values::Int16(v) = &self.values {
            let mut wide = Vec::with_capacity(v.capacity());
            wide.extend(v.iter().map(|&x| x as i32));
            self.values = Values::Int(wide);
        }
    }

    fn widen_to_long(&mut self) {
        self.widen_to_int8();
        let wide: Vec<i64> = match &self.values {
            Values::Int16(v) => v.iter().map(|&x| x as i64).collect(),
            Values::Int8(v) => v.iter().map(|&x| x as i64).collect(),
            Values::Int(v) => v.iter().map(|&x| x as i64).collect(),
            _ => return,
        };
        self.values = Values::Long(wide);
    }

    /// Drops the last record (to replace values htslib could not hold).
    pub fn pop_record(&mut self) {
        let (Some(start), Some(_)) = (self.starts.pop(), self.widths.pop()) else {
            return;
        };
        match &mut self.values {
            Values::Int16(v) => v.truncate(start),
            Values::Int(v) => v.truncate(start),
            Values::Long(v) => v.truncate(start),
            Values::Int8(v) => v.truncate(start),
            Values::Diploid(v) => v.truncate(start / 2),
            Values::Float(v) => v.truncate(start),
            Values::Bool(v) => v.truncate(start),
            Values::Str { bytes, ends } => {
                ends.truncate(start);
                bytes.truncate(ends.last().copied().unwrap_or(0));
            }
        }
    }

    /// Notes a string value's length in characters (decides whether a VCF
    /// `Character` field still fits one character per value).
    pub fn note_chars(&mut self, n: usize) {
        self.stats.max = self.stats.max.max(n as i64);
    }

    /// Appends canonical integers already narrowed to i8, with their range.
    pub fn push_i8s(&mut self, vals: &[i8], width: u32, lo: i8, hi: i8) {
        self.begin(width);
        if !vals.is_empty() {
            self.stats.min = self.stats.min.min(lo as i64);
            self.stats.max = self.stats.max.max(hi as i64);
        }
        if let Values::Diploid(v) = &mut self.values {
            if (width == 2 || vals.is_empty()) && packs_diploid(lo as i64, hi as i64) {
                pack_diploid(vals, v);
                return;
            }
            self.widen_to_int8();
        }
        match &mut self.values {
            Values::Int8(v) => v.extend_from_slice(vals),
            Values::Int16(v) => v.extend(vals.iter().map(|&x| x as i16)),
            Values::Int(v) => v.extend(vals.iter().map(|&x| x as i32)),
            Values::Long(v) => v.extend(vals.iter().map(|&x| x as i64)),
            _ => unreachable!("int column"),
        }
    }

    /// Appends float bit patterns (htslib's sentinels are already VCF Zarr's).
    pub fn push_floats(&mut self, raw: &[u32], width: u32) {
        self.begin(width);
        let Values::Float(v) = &mut self.values else {
            unreachable!("float column")
        };
        v.extend_from_slice(raw);
    }

    /// [`Column::push_floats`] of cells of `counts[i]` values each (the floats of
    /// `raw`, in order), each padded to `width` with fill, a cell of none being one
    /// missing value (as [`Column::push_htslib_int_cells`]).
    pub fn push_float_cells(&mut self, raw: &[u32], counts: &[u32], width: u32) {
        self.begin(width);
        let Values::Float(v) = &mut self.values else {
            unreachable!("float column")
        };
        let width = width as usize;
        v.reserve(counts.len() * width);
        let mut at = 0;
        for &c in counts {
            let c = c as usize;
            if c == 0 {
                v.push(FLOAT32_MISSING);
                v.extend(std::iter::repeat_n(FLOAT32_FILL, width.saturating_sub(1)));
            } else {
                v.extend_from_slice(&raw[at..at + c]);
                v.extend(std::iter::repeat_n(FLOAT32_FILL, width - c));
                at += c;
            }
        }
    }

    /// Appends booleans (0/1).
    pub fn push_bools(&mut self, raw: &[u8], width: u32) {
        self.begin(width);
        let Values::Bool(v) = &mut self.values else {
            unreachable!("bool column")
        };
        v.extend_from_flags(raw);
    }

    /// Starts a string record of the given width; follow with `per_record × width`
    /// calls to [`Column::push_str`].
    pub fn begin_strs(&mut self, width: u32) {
        self.begin(width);
    }

    /// Appends a string value's comma-separated elements; the number appended. An
    /// empty element (`a,,b`, `a,`) is stored as `.`, missing, as an empty value is:
    /// VCF Zarr reads an empty string as the end of a list (bio2zarr stores `a,,b` so,
    /// and it reads back as `a`). The value is noted for a warning
    /// ([`Column::empty_element`]). `chars`: each element's characters count toward
    /// the column's widest (Type=Character).
    pub fn push_elements(&mut self, value: &[u8], chars: bool) -> usize {
        let mut n = 0;
        for part in value.split(|&c| c == b',') {
            let part = if part.is_empty() {
                self.empty_element
                    .get_or_insert_with(|| value[..value.len().min(40)].to_vec());
                &b"."[..]
            } else {
                part
            };
            if chars {
                self.note_chars(String::from_utf8_lossy(part).chars().count());
            }
            self.push_str(part);
            n += 1;
        }
        n
    }

    /// Appends one string value.
    pub fn push_str(&mut self, s: &[u8]) {
        let Values::Str { bytes, ends } = &mut self.values else {
            unreachable!("string column")
        };
        bytes.extend_from_slice(s);
        ends.push(bytes.len());
    }

    /// Appends records `r0..r1` of `src` (a column of the same kind).
    pub fn append_range(&mut self, src: &Column, r0: usize, r1: usize) {
        if r0 >= r1 {
            return;
        }
        let v0 = src.starts[r0];
        let v1 = if r1 < src.len() {
            src.starts[r1]
        } else {
            src.values.len()
        };
        let base = self.values.len();
        self.starts
            .extend(src.starts[r0..r1].iter().map(|&x| x - v0 + base));
        self.widths.extend_from_slice(&src.widths[r0..r1]);
        self.stats.merge(&src.stats);
        if matches!(self.values, Values::Diploid(_)) && !matches!(src.values, Values::Diploid(_)) {
            // The source holds calls that do not pack: unpack this column too.
            self.widen_to_int8();
        }
        if let (Values::Int8(_), Values::Int(_)) = (&self.values, &src.values) {
            // The source widened past i8: widen this column too.
            if let Values::Int8(v) = &self.values {
                self.values = Values::Int(v.iter().map(|&x| x as i32).collect());
            }
        }
        if matches!(src.values, Values::Int(_)) {
            // The source widened past i16: widen this column too.
            self.widen_to_int();
        }
        if matches!(src.values, Values::Long(_)) {
            self.widen_to_long();
        }
        match (&mut self.values, &src.values) {
            (Values::Int16(d), Values::Int16(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Int(d), Values::Int16(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i32)),
            (Values::Long(d), Values::Int16(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i64)),
            (Values::Int(d), Values::Int(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Int(d), Values::Int8(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i32)),
            (Values::Long(d), Values::Long(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Long(d), Values::Int(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i64)),
            (Values::Long(d), Values::Int8(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i64)),
            (Values::Int8(d), Values::Int8(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Diploid(d), Values::Diploid(s)) => d.extend_from_slice(&s[v0 / 2..v1 / 2]),
            (Values::Int8(d), Values::Diploid(s)) => unpack_diploid_into(&s[v0 / 2..v1 / 2], d),
            (Values::Int(d), Values::Diploid(s)) => unpack_diploid_into(&s[v0 / 2..v1 / 2], d),
            (Values::Long(d), Values::Diploid(s)) => unpack_diploid_into(&s[v0 / 2..v1 / 2], d),
            (Values::Float(d), Values::Float(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Bool(d), Values::Bool(s)) => d.extend_from_range(s, v0, v1),
            (
                Values::Str { bytes, ends },
                Values::Str {
                    bytes: sb,
                    ends: se,
                },
            ) => {
                let b0 = if v0 == 0 { 0 } else { se[v0 - 1] };
                let b1 = if v1 == 0 { 0 } else { se[v1 - 1] };
                let shift = bytes.len();
                bytes.extend_from_slice(&sb[b0..b1]);
                ends.extend(se[v0..v1].iter().map(|&e| e - b0 + shift));
            }
            _ => unreachable!("columns of one spec share a kind"),
        }
    }

    /// Empties the column, keeping its allocations for the next batch.
    pub fn clear(&mut self) {
        if let Values::Long(_) = self.values {
            // Back to 32 bits for the next batch (most never need 64).
            self.values = Values::Int(Vec::new());
        }
        match &mut self.values {
            Values::Int16(v) => v.clear(),
            Values::Int(v) => v.clear(),
            Values::Long(v) => v.clear(),
            Values::Int8(v) => v.clear(),
            Values::Diploid(v) => v.clear(),
            Values::Float(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Str { bytes, ends } => {
                bytes.clear();
                ends.clear();
            }
        }
        self.starts.clear();
        self.widths.clear();
        self.stats = ColumnStats::default();
    }
}

/// One inner-chunk row of records: a column per [`ColumnSpec`] plus the facts the
/// region index needs.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Global index of the first record.
    pub first: u64,
    pub columns: Vec<Column>,
    /// (contig index, position, end) of each record, for `region_index`.
    pub loci: Vec<(i32, i64, i64)>,
    pub max_alleles: u32,
    pub max_ploidy: u32,
    /// Contigs first seen in this batch, for headers that declare none: (id, name).
    pub new_contigs: Vec<(u32, String)>,
}

impl Batch {
    /// An empty batch whose first record is global record `first`.
    pub fn new(specs: &[ColumnSpec], n_samples: usize, first: u64) -> Batch {
        Batch {
            first,
            columns: specs.iter().map(|s| Column::new(s, n_samples)).collect(),
            loci: Vec::new(),
            max_alleles: 0,
            max_ploidy: 0,
            new_contigs: Vec::new(),
        }
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.loci.len()
    }

    /// Reserves room for `records` records at the planned widths (one per column).
    pub fn reserve(&mut self, records: usize, widths: &[u64]) {
        for (c, &w) in self.columns.iter_mut().zip(widths) {
            c.reserve(records, w as usize);
        }
        self.loci.reserve(records);
    }

    /// Appends records `r0..r1` of `src` (same column specs).
    pub fn append_range(&mut self, src: &Batch, r0: usize, r1: usize) {
        for (d, s) in self.columns.iter_mut().zip(&src.columns) {
            d.append_range(s, r0, r1);
        }
        self.loci.extend_from_slice(&src.loci[r0..r1]);
        self.max_alleles = self.max_alleles.max(src.max_alleles);
        self.max_ploidy = self.max_ploidy.max(src.max_ploidy);
        self.new_contigs.extend(src.new_contigs.iter().cloned());
    }

    /// Empties the batch for reuse as the row starting at record `first`; buffers keep
    /// their capacity, so steady state allocates nothing and peak memory is exactly
    /// the batches in flight.
    pub fn reset(&mut self, first: u64) {
        self.first = first;
        self.columns.iter_mut().for_each(Column::clear);
        self.loci.clear();
        self.max_alleles = 0;
        self.max_ploidy = 0;
        self.new_contigs.clear();
    }

    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.loci.is_empty()
    }

    /// Bytes the batch's records fill: values in their current representation plus
    /// each record's bookkeeping. The planner's estimate of a row is measured this
    /// way on the input's first records, and the pipeline checks batches against it.
    pub fn filled_bytes(&self) -> usize {
        let columns: usize = self.columns.iter().map(Column::filled_bytes).sum();
        columns + std::mem::size_of::<(i32, i64, i64)>() * self.loci.len()
    }

    /// Bytes records `r..` fill (as [`Batch::filled_bytes`] counts them): what the
    /// latest records cost, where a batch mixes cheap records with dear ones.
    pub fn filled_bytes_from(&self, r: usize) -> usize {
        let columns: usize = self.columns.iter().map(|c| c.filled_bytes_from(r)).sum();
        columns + std::mem::size_of::<(i32, i64, i64)>() * self.loci.len().saturating_sub(r)
    }
}

/// Widens `lo..=hi` to the canonical values of `raw` (htslib's missing and vector end
/// as −1 and −2); whether `raw` holds a −1 or −2 the input gave. One branch-free pass.
fn range_and_reserved(raw: &[i32], lo: &mut i32, hi: &mut i32) -> bool {
    let (mut l, mut h, mut reserved) = (*lo, *hi, false);
    for &x in raw {
        reserved |= (x == -1) | (x == -2);
        let y = if x == BCF_INT32_MISSING {
            -1
        } else if x == BCF_INT32_VECTOR_END {
            -2
        } else {
            x
        };
        l = l.min(y);
        h = h.max(y);
    }
    (*lo, *hi) = (l, h);
    reserved
}

/// Appends `counts.len()` cells of `width` canonical values (htslib's missing and
/// vector end mapped to −1 and −2) from `raw`, a cell of no values being one missing
/// value, and widens `lo..=hi` to the padding and missing cells appended (the values
/// of `raw` are [`range_and_reserved`]'s).
fn lay_out_cells<T: Copy>(
    v: &mut Vec<T>,
    raw: &[i32],
    counts: &[u32],
    width: usize,
    lo: &mut i32,
    hi: &mut i32,
    to: impl Fn(i32) -> T,
) {
    let canonical = |x: i32| match x {
        BCF_INT32_MISSING => -1,
        BCF_INT32_VECTOR_END => -2,
        x => x,
    };
    // Runs of full cells (most of them: a FORMAT field is short only where a sample
    // gives `.` for a vector, like `./.:.:.` in a call set) copied in one pass each;
    // a short cell padded with vector ends, an empty one a missing value first.
    v.reserve(counts.len() * width);
    let (mut empty, mut short) = (false, false);
    let (mut at, mut i) = (0, 0);
    while i < counts.len() {
        let full = counts[i..]
            .iter()
            .take_while(|&&c| c as usize == width)
            .count();
        if full > 0 {
            let n = full * width;
            v.extend(raw[at..at + n].iter().map(|&x| to(canonical(x))));
            (at, i) = (at + n, i + full);
            continue;
        }
        // A short cell (or, were `width` not the most values any cell gives, a
        // long one cut to it).
        let c = counts[i] as usize;
        let kept = c.min(width);
        if c == 0 {
            v.push(to(-1));
            empty = true;
            short |= width > 1;
        } else {
            v.extend(raw[at..at + kept].iter().map(|&x| to(canonical(x))));
            short |= c < width;
        }
        v.extend(std::iter::repeat_n(to(-2), width - kept.max(1)));
        (at, i) = (at + c, i + 1);
    }
    debug_assert_eq!(at, raw.len());
    let (mut l, mut h) = (*lo, *hi);
    if empty {
        (l, h) = (l.min(-1), h.max(-1));
    }
    if short {
        (l, h) = (l.min(-2), h.max(-2));
    }
    (*lo, *hi) = (l, h);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn genotype_column(samples: usize) -> Column {
        let spec = ColumnSpec {
            base: Base::Int,
            per_sample: true,
            genotype: true,
        };
        Column::new(&spec, samples)
    }

    #[test]
    fn the_bytes_of_the_latest_records_add_up() {
        let specs = [
            ColumnSpec {
                base: Base::Int,
                per_sample: true,
                genotype: true,
            },
            ColumnSpec {
                base: Base::Str,
                per_sample: false,
                genotype: false,
            },
            ColumnSpec {
                base: Base::Int,
                per_sample: true,
                genotype: false,
            },
        ];
        let batch = |n: usize| {
            let mut b = Batch::new(&specs, 3, 0);
            for r in 0..n {
                b.columns[0].push_ints(&[0, 1, 1, 1, 0, 0], 2);
                b.columns[1].begin_strs(1);
                b.columns[1].push_str("x".repeat(r * 10).as_bytes());
                b.columns[2].push_htslib_ints(&vec![7; 3 * (r + 1)], (r + 1) as u32);
                b.loci.push((0, r as i64, 1));
            }
            b
        };
        let all = batch(10);
        for r in 0..=10 {
            let head = batch(r).filled_bytes();
            assert_eq!(
                all.filled_bytes_from(r),
                all.filled_bytes() - head,
                "from {r}"
            );
        }
    }

    /// Every value of a genotype column, as i32, whatever its form.
    fn calls(c: &Column) -> Vec<i32> {
        match &c.values {
            Values::Diploid(b) => {
                let mut v: Vec<i32> = Vec::new();
                unpack_diploid_into(b, &mut v);
                v
            }
            Values::Int8(v) => v.iter().map(|&x| x as i32).collect(),
            Values::Int(v) => v.clone(),
            Values::Long(v) => v.iter().map(|&x| x as i32).collect(),
            other => panic!("{other:?}"),
        }
    }

    /// Calls pack while they can (missing and fill included), and a call that cannot
    /// (an allele past 13, a haploid-only record, a triploid one) unpacks the column
    /// once, keeping every earlier value; dropping a record and appending ranges keep
    /// the values whatever form each side is in.
    #[test]
    fn genotype_calls_pack_until_one_does_not() {
        let mut c = genotype_column(2);
        c.push_i8s(&[0, 1, -1, -2], 2, -2, 1);
        c.push_absent();
        c.push_ints(&[13, 0, 1, 1], 2);
        assert!(matches!(c.values, Values::Diploid(_)), "{:?}", c.values);
        let packed = c.clone();
        c.push_ints(&[1, 0], 1);
        assert!(matches!(c.values, Values::Int8(_)));
        assert_eq!(calls(&c), [0, 1, -1, -2, 13, 0, 1, 1, 1, 0]);
        c.pop_record();
        assert_eq!(calls(&c), calls(&packed));
        c.push_ints(&[300, 0, 1, 1], 2);
        assert_eq!(calls(&c), [0, 1, -1, -2, 13, 0, 1, 1, 300, 0, 1, 1]);

        let mut d = genotype_column(2);
        d.push_i8s(&[1, 1, 0, 0], 2, 0, 1);
        d.append_range(&packed, 1, 3);
        assert!(matches!(d.values, Values::Diploid(_)));
        assert_eq!(calls(&d), [1, 1, 0, 0, 13, 0, 1, 1]);
        assert_eq!(d.widths, [2, 0, 2]);
        d.append_range(&c, 3, 4);
        assert_eq!(calls(&d), [1, 1, 0, 0, 13, 0, 1, 1, 300, 0, 1, 1]);
        let mut e = genotype_column(2);
        e.push_ints(&[15, 0, 0, 0], 2);
        e.append_range(&packed, 0, 1);
        assert_eq!(calls(&e), [15, 0, 0, 0, 0, 1, -1, -2]);
        assert_eq!(e.starts, [0, 4]);

        // A cleared column keeps its form (no repacking per batch).
        c.clear();
        assert!(matches!(c.values, Values::Int(_)));
        let mut p = packed;
        p.clear();
        assert!(matches!(p.values, Values::Diploid(_)) && p.values.is_empty());
    }

    fn ints(c: &Column) -> Vec<i64> {
        match &c.values {
            Values::Int16(v) => v.iter().map(|&x| x as i64).collect(),
            Values::Int(v) => v.iter().map(|&x| x as i64).collect(),
            Values::Long(v) => v.clone(),
            other => panic!("{other:?}"),
        }
    }

    /// Cells laid out in place hold what padding them into a buffer and pushing that
    /// held: values, widths, value range and the reserved value noted, in every
    /// representation (a value past 16 bits widens, a 64-bit column stays so).
    #[test]
    fn int_cells_lay_out_as_the_padded_record() {
        let spec = ColumnSpec {
            base: Base::Int,
            per_sample: true,
            genotype: false,
        };
        let mut next = crate::rng::rng(0x9e37_79b9_7f4a_7c15u64);
        for case in 0..400 {
            let samples = 1 + next(6) as usize;
            let width = 1 + next(4) as usize;
            let mut counts = Vec::new();
            let mut raw = Vec::new();
            for _ in 0..samples {
                let c = next(width as u64 + 1) as u32;
                counts.push(c);
                for _ in 0..c {
                    raw.push(match next(8) {
                        0 => BCF_INT32_MISSING,
                        1 => -1 - next(2) as i32,
                        2 => 40_000,
                        3 => -7,
                        _ => next(300) as i32,
                    });
                }
            }
            let mut padded = Vec::new();
            let mut at = 0;
            for &c in &counts {
                let c = c as usize;
                if c == 0 {
                    padded.push(BCF_INT32_MISSING);
                    padded.extend(std::iter::repeat_n(BCF_INT32_VECTOR_END, width - 1));
                } else {
                    padded.extend_from_slice(&raw[at..at + c]);
                    padded.extend(std::iter::repeat_n(BCF_INT32_VECTOR_END, width - c));
                }
                at += c;
            }
            let mut a = Column::new(&spec, samples);
            let mut b = Column::new(&spec, samples);
            if case % 3 == 1 {
                a.push_longs(&vec![1 << 40; samples], 1);
                b.push_longs(&vec![1 << 40; samples], 1);
            }
            a.push_htslib_ints(&padded, width as u32);
            b.push_htslib_int_cells(&raw, &counts, width as u32);
            assert_eq!(ints(&a), ints(&b), "case {case}");
            assert_eq!(a.widths, b.widths);
            assert_eq!(
                (a.stats.min, a.stats.max, a.stats.max_width),
                (b.stats.min, b.stats.max, b.stats.max_width)
            );
            assert_eq!(a.take_reserved(), b.take_reserved());
            assert_eq!(
                std::mem::discriminant(&a.values),
                std::mem::discriminant(&b.values)
            );
        }
    }

    /// Float cells laid out in place hold what padding them into a buffer held.
    #[test]
    fn float_cells_lay_out_as_the_padded_record() {
        let spec = ColumnSpec {
            base: Base::Float,
            per_sample: true,
            genotype: false,
        };
        let counts = [2u32, 0, 1, 3, 0];
        let raw = [1u32, 2, 3, 4, FLOAT32_MISSING, 6];
        let mut c = Column::new(&spec, counts.len());
        c.push_float_cells(&raw, &counts, 3);
        let Values::Float(v) = &c.values else {
            panic!()
        };
        let (m, f) = (FLOAT32_MISSING, FLOAT32_FILL);
        assert_eq!(v, &[1, 2, f, m, f, f, 3, f, f, 4, m, 6, m, f, f]);
        assert_eq!(c.widths, [3]);
    }

    /// Integers other than genotypes start at 16 bits (htslib's sentinels as −1/−2),
    /// widen once to 32 and then 64 bits keeping every value, stay 32-bit after a
    /// clear, and append ranges across forms either way.
    #[test]
    fn integers_start_narrow_and_widen_once() {
        let spec = ColumnSpec {
            base: Base::Int,
            per_sample: true,
            genotype: false,
        };
        let mut c = Column::new(&spec, 2);
        c.push_htslib_ints(&[7, BCF_INT32_MISSING, -32768, BCF_INT32_VECTOR_END], 2);
        c.push_ints(&[32767, 0], 1);
        assert!(matches!(c.values, Values::Int16(_)));
        assert_eq!((c.stats.min, c.stats.max), (-32768, 32767));
        let narrow = c.clone();
        c.push_htslib_ints(&[1, 40000], 1);
        assert!(matches!(c.values, Values::Int(_)));
        assert_eq!(ints(&c), [7, -1, -32768, -2, 32767, 0, 1, 40000]);
        assert_eq!(c.stats.max, 40000);
        c.pop_record();
        assert_eq!(ints(&c), ints(&narrow));
        c.push_htslib_ints(&[-32769, 2], 1);
        assert_eq!(ints(&c)[6..], [-32769, 2]);

        let mut d = Column::new(&spec, 2);
        d.push_ints(&[5, 6], 1);
        d.append_range(&narrow, 1, 2);
        assert!(matches!(d.values, Values::Int16(_)));
        d.append_range(&c, 2, 3);
        assert!(matches!(d.values, Values::Int(_)));
        assert_eq!(ints(&d), [5, 6, 32767, 0, -32769, 2]);
        let mut e = Column::new(&spec, 2);
        e.push_longs(&[1 << 40, 3], 1);
        e.append_range(&narrow, 0, 1);
        assert_eq!(ints(&e), [1 << 40, 3, 7, -1, -32768, -2]);

        c.clear();
        assert!(matches!(c.values, Values::Int(_)) && c.values.is_empty());
    }
}
