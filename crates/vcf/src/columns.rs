//! The raw columns a record fills — one per value source (contig, position, …, each
//! INFO/FORMAT field, genotypes), in the order a VCF Zarr store lists the arrays they
//! feed — and what is seen of each column while reading (widths, value ranges), which
//! later decides the arrays' types and shapes.

use crate::schema::{Schema, VcfType};

/// What kind of values a column holds, before a store narrows it to a data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// Canonical i32 with −1 missing and −2 fill.
    Int,
    /// f32 bit patterns with the VCF Zarr NaN payloads for missing/fill.
    Float,
    Bool,
    Str,
    Char,
}

/// Where a value comes from in a record. Masks name the column of what they mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Contig,
    Position,
    Length,
    Id,
    IdMask,
    Allele,
    Quality,
    Filter,
    /// The schema's field of this index.
    Field(usize),
    Genotype,
    GenotypeMask,
    GenotypePhased,
}

/// One raw column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSpec {
    pub base: Base,
    pub per_sample: bool,
    /// Genotype calls: held as i8 (three times less memory than i32 for the
    /// biggest column) unless an allele index exceeds 127.
    pub genotype: bool,
}

/// What has been seen of one column so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ColumnStats {
    /// Most values any record (or sample) carried.
    pub max_width: u32,
    /// Range of canonical integer values seen (−1/−2 included, as bio2zarr counts them).
    pub min: i64,
    pub max: i64,
}

impl Default for ColumnStats {
    fn default() -> Self {
        ColumnStats {
            max_width: 0,
            min: i64::MAX,
            max: i64::MIN,
        }
    }
}

impl ColumnStats {
    /// Folds another column's stats into these.
    pub fn merge(&mut self, o: &ColumnStats) {
        self.max_width = self.max_width.max(o.max_width);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

/// The columns a schema's records fill, and the column of each source.
#[derive(Debug, Clone)]
pub struct RecordColumns {
    pub specs: Vec<ColumnSpec>,
    sources: Vec<(Source, usize)>,
}

impl RecordColumns {
    /// The columns of `schema`'s records, in store order: the fixed fields, each
    /// INFO/FORMAT field in header order, then the genotypes (masks share a column).
    pub fn new(schema: &Schema) -> RecordColumns {
        let mut c = RecordColumns {
            specs: Vec::new(),
            sources: Vec::new(),
        };
        let mut add = |source: Source, base: Base, per_sample: bool| {
            c.specs.push(ColumnSpec {
                base,
                per_sample,
                genotype: source == Source::Genotype,
            });
            c.sources.push((source, c.specs.len() - 1));
        };
        add(Source::Contig, Base::Int, false);
        add(Source::Position, Base::Int, false);
        add(Source::Length, Base::Int, false);
        add(Source::Id, Base::Str, false);
        add(Source::Allele, Base::Str, false);
        add(Source::Quality, Base::Float, false);
        add(Source::Filter, Base::Bool, false);
        for (i, f) in schema.fields.iter().enumerate() {
            let base = match f.ty {
                VcfType::Integer => Base::Int,
                VcfType::Float => Base::Float,
                VcfType::Flag => Base::Bool,
                VcfType::String => Base::Str,
                VcfType::Character => Base::Char,
            };
            add(
                Source::Field(i),
                base,
                f.category == crate::schema::Category::Format,
            );
        }
        if schema.has_gt {
            add(Source::Genotype, Base::Int, true);
            add(Source::GenotypePhased, Base::Bool, true);
        }
        c
    }

    /// The column `source`'s values are in (a mask's: the column it masks).
    ///
    /// # Panics
    /// For a source the schema has no column for (a field index past its fields, or
    /// genotypes in a schema without GT): a caller's bug, not an input's.
    pub fn of(&self, source: Source) -> usize {
        let source = match source {
            Source::IdMask => Source::Id,
            Source::GenotypeMask => Source::Genotype,
            s => s,
        };
        self.sources
            .iter()
            .find(|(s, _)| *s == source)
            .map(|(_, c)| *c)
            .unwrap_or_else(|| panic!("no column for {source:?}"))
    }

    /// The source column `c` holds (for messages).
    pub fn source_of(&self, c: usize) -> Option<Source> {
        self.sources.iter().find(|(_, k)| *k == c).map(|(s, _)| *s)
    }

    /// Whether the records have a column for `source`.
    pub fn has(&self, source: Source) -> bool {
        self.sources.iter().any(|(s, _)| *s == source)
    }
}
