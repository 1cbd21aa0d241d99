//! Raw per-record values for one inner-chunk row of records, before they are laid out
//! as chunks. Records may carry different numbers of values; a [`Column`] keeps them
//! ragged so nothing is padded until the final width is known.

use crate::columns::{Base, ColumnSpec, ColumnStats};

/// htslib's integer sentinels.
pub const BCF_INT32_MISSING: i32 = i32::MIN;
pub const BCF_INT32_VECTOR_END: i32 = i32::MIN + 1;
/// VCF Zarr float sentinels (also htslib's bit patterns).
pub const FLOAT32_MISSING: u32 = 0x7F80_0001;
pub const FLOAT32_FILL: u32 = 0x7F80_0002;

/// Values of one column, in record order.
#[derive(Debug, Clone)]
pub enum Values {
    /// Canonical integers: −1 missing, −2 fill.
    Int(Vec<i32>),
    /// Canonical integers, once a value needs more than 32 bits (POS of a chromosome
    /// past 2^31 bp, a 64-bit INFO integer).
    Long(Vec<i64>),
    /// Canonical integers that fit in i8 (genotype calls).
    Int8(Vec<i8>),
    /// f32 bit patterns.
    Float(Vec<u32>),
    Bool(Vec<u8>),
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
            Values::Int(v) => v.len(),
            Values::Long(v) => v.len(),
            Values::Int8(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str { ends, .. } => ends.len(),
        }
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
}

impl Column {
    /// An empty column for `spec`; `per_record` is the sample count for FORMAT columns.
    pub fn new(spec: &ColumnSpec, n_samples: usize) -> Column {
        let values = match spec.base {
            Base::Int if spec.genotype => Values::Int8(Vec::new()),
            Base::Int => Values::Int(Vec::new()),
            Base::Float => Values::Float(Vec::new()),
            Base::Bool => Values::Bool(Vec::new()),
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
        }
    }

    /// Reserves room for `records` records of `width` values per cell at once, so a
    /// batch's buffers are not grown by doubling (each step leaves the old block in
    /// the allocator's arena: ~1.5x the bytes, measured on FORMAT-heavy files).
    pub fn reserve(&mut self, records: usize, width: usize) {
        let n = records * self.per_record * width.max(1);
        match &mut self.values {
            Values::Int(v) => v.reserve(n),
            Values::Long(v) => v.reserve(n),
            Values::Int8(v) => v.reserve(n),
            Values::Float(v) => v.reserve(n),
            Values::Bool(v) => v.reserve(n),
            Values::Str { ends, .. } => ends.reserve(n),
        }
        self.starts.reserve(records);
        self.widths.reserve(records);
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
        let (mut lo, mut hi) = (self.stats.min, self.stats.max);
        let canonical = raw.iter().map(|&x| {
            let c = match x {
                BCF_INT32_MISSING => -1,
                BCF_INT32_VECTOR_END => -2,
                x => x,
            };
            lo = lo.min(c as i64);
            hi = hi.max(c as i64);
            c
        });
        match &mut self.values {
            Values::Int(v) => v.extend(canonical),
            // An earlier record of the batch needed 64 bits (an INFO integer past
            // 2^31): this one joins it.
            Values::Long(v) => v.extend(canonical.map(i64::from)),
            _ => unreachable!("int column"),
        }
        self.stats.min = lo;
        self.stats.max = hi;
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
        if let Values::Int8(v) = &mut self.values {
            if lo >= i8::MIN as i32 && hi <= i8::MAX as i32 {
                v.extend(vals.iter().map(|&x| x as i8));
                return;
            }
            let wide = v.iter().map(|&x| x as i32).collect();
            self.values = Values::Int(wide);
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

    fn widen_to_long(&mut self) {
        let wide: Vec<i64> = match &self.values {
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
            Values::Int(v) => v.truncate(start),
            Values::Long(v) => v.truncate(start),
            Values::Int8(v) => v.truncate(start),
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
        match &mut self.values {
            Values::Int8(v) => v.extend_from_slice(vals),
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

    /// Appends booleans (0/1).
    pub fn push_bools(&mut self, raw: &[u8], width: u32) {
        self.begin(width);
        let Values::Bool(v) = &mut self.values else {
            unreachable!("bool column")
        };
        v.extend_from_slice(raw);
    }

    /// Starts a string record of the given width; follow with `per_record × width`
    /// calls to [`Column::push_str`].
    pub fn begin_strs(&mut self, width: u32) {
        self.begin(width);
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
        if let (Values::Int8(_), Values::Int(_)) = (&self.values, &src.values) {
            // The source widened past i8: widen this column too.
            if let Values::Int8(v) = &self.values {
                self.values = Values::Int(v.iter().map(|&x| x as i32).collect());
            }
        }
        if matches!(src.values, Values::Long(_)) {
            self.widen_to_long();
        }
        match (&mut self.values, &src.values) {
            (Values::Int(d), Values::Int(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Int(d), Values::Int8(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i32)),
            (Values::Long(d), Values::Long(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Long(d), Values::Int(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i64)),
            (Values::Long(d), Values::Int8(s)) => d.extend(s[v0..v1].iter().map(|&x| x as i64)),
            (Values::Int8(d), Values::Int8(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Float(d), Values::Float(s)) => d.extend_from_slice(&s[v0..v1]),
            (Values::Bool(d), Values::Bool(s)) => d.extend_from_slice(&s[v0..v1]),
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
            Values::Int(v) => v.clear(),
            Values::Long(v) => v.clear(),
            Values::Int8(v) => v.clear(),
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
}
