//! A block of records as a VCF Zarr store holds them — dense, every field padded to
//! its width with the fill values (−2, the fill NaN, `""`), missing as −1, the missing
//! NaN or `.` — the form `write` prints VCF and BCF from and `query` formats. The
//! store side fills it (`svar2-view`); nothing here knows Zarr.

/// Strings back to back: `ends[i]` closes string `i`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strs {
    pub bytes: Vec<u8>,
    pub ends: Vec<usize>,
}

impl Strs {
    /// String `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn push(&mut self, s: &[u8]) {
        self.bytes.extend_from_slice(s);
        self.ends.push(self.bytes.len());
    }
}

/// One field's values for a block, `width` per cell (a record, or a record and sample,
/// C order), in the store's own integer width.
#[derive(Debug, Clone, PartialEq)]
pub enum Dense {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// f32 bit patterns (missing 0x7F800001, fill 0x7F800002).
    F32(Vec<u32>),
    Bool(Vec<u8>),
    Str(Strs),
    /// One UTF-32 code point per value (VCF `Character`; 0 pads).
    Char(Vec<u32>),
}

impl Dense {
    /// Values held.
    pub fn len(&self) -> usize {
        match self {
            Dense::I8(v) => v.len(),
            Dense::I16(v) => v.len(),
            Dense::I32(v) => v.len(),
            Dense::I64(v) => v.len(),
            Dense::F32(v) => v.len(),
            Dense::Bool(v) => v.len(),
            Dense::Str(s) => s.len(),
            Dense::Char(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Integer value `i` (−1 missing, −2 fill), for integer kinds.
    pub fn int(&self, i: usize) -> Option<i64> {
        Some(match self {
            Dense::I8(v) => v[i] as i64,
            Dense::I16(v) => v[i] as i64,
            Dense::I32(v) => v[i] as i64,
            Dense::I64(v) => v[i],
            _ => return None,
        })
    }
}

/// An INFO or FORMAT field's values, `field` indexing the header's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldValues {
    pub field: usize,
    pub width: usize,
    pub values: Dense,
}

/// Genotype calls: `ploidy` alleles per (record, sample), −1 missing, −2 fill (a call
/// of lower ploidy), and one phased flag per (record, sample).
#[derive(Debug, Clone, PartialEq)]
pub struct Genotypes {
    pub ploidy: usize,
    pub alleles: Dense,
    pub phased: Vec<u8>,
}

/// A block of records, `n_samples` samples each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    pub n: usize,
    pub n_samples: usize,
    /// Index into the header's contigs.
    pub contig: Vec<u32>,
    /// 1-based POS.
    pub pos: Vec<i64>,
    /// The record's length on the reference (END − POS + 1).
    pub rlen: Vec<i64>,
    /// `.` where the record has none.
    pub id: Strs,
    /// REF then ALTs, `allele_width` per record, `""` pads.
    pub alleles: Strs,
    pub allele_width: usize,
    /// f32 bits.
    pub qual: Vec<u32>,
    /// `n_filters` flags per record, in the header's FILTER order.
    pub filters: Vec<u8>,
    pub n_filters: usize,
    /// INFO fields in header order (only those the block carries).
    pub info: Vec<FieldValues>,
    /// FORMAT fields other than GT, in header order.
    pub format: Vec<FieldValues>,
    pub gt: Option<Genotypes>,
}

impl Default for Dense {
    fn default() -> Self {
        Dense::I32(Vec::new())
    }
}
