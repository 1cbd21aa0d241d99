//! The arrays of a VCF Zarr store, how their data types and trailing dimensions follow
//! from the data, and the Zarr v3 metadata each one gets.
//!
//! Some facts are known only once every record has been read: the alleles axis, the
//! ploidy, the width of `Number=A/R/G/.` fields and the smallest integer type that holds
//! a field (bio2zarr picks it from the data). svar2 streams, so each shard row is
//! written with the [`Layout`] known when it is flushed; [`Stats`] keep growing and the
//! few shard rows whose layout turned out too small are re-encoded at the end
//! (see `convert::finish`). Encoding is a pure function of content and layout, so the
//! result is byte-identical to a store written with the final layout from the start.

use svar2_store::metadata::ArrayMeta;
use svar2_store::Dtype;
use svar2_vcf::columns::{Base, ColumnStats, RecordColumns, Source};
use svar2_vcf::schema::{Category, FieldDef, Schema, VcfNumber, VcfType};

/// Where the size of an array's trailing dimension comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// No trailing dimension.
    Scalar,
    /// A size known from the header (the filters axis).
    Fixed(u32),
    /// `alleles`: REF plus the most ALTs seen, at least 2.
    Alleles,
    /// `alt_alleles`: alleles − 1.
    AltAlleles,
    /// `genotypes`: from alleles and ploidy.
    Genotypes,
    /// `ploidy`: the largest ploidy seen.
    Ploidy,
    /// The field's own dimension: the most values seen, at least the declared Number;
    /// the array has it only when that exceeds 1, or `always` (bio2zarr's rule, which
    /// always gives FORMAT/LAA one).
    Own { declared: u32, always: bool },
}

/// One variant-axis array of the store.
#[derive(Debug, Clone)]
pub struct ArraySpec {
    pub name: String,
    pub source: Source,
    pub base: Base,
    pub per_sample: bool,
    pub width: Width,
    /// Name of the trailing dimension, when there is one.
    pub trailing_dim: String,
    pub description: String,
    /// For an INFO/FORMAT field: its declared `Number=`, `Type=` and place in the
    /// header, recorded as the array's `vcf_number`, `vcf_type`, `vcf_order`.
    pub declared: Option<(String, &'static str, usize)>,
    /// The genotype column feeds several arrays; this is the column index that holds
    /// this array's values.
    pub column: usize,
    /// Bitshuffle instead of byteshuffle: genotype and boolean arrays.
    pub bitshuffle: bool,
}

impl ArraySpec {
    /// The trailing width the plan assumes before any record is read (ploidy 2, two
    /// alleles, one value for `Number=.`): wider records cost memory it did not plan.
    pub fn planned_width(&self) -> u64 {
        match self.width {
            Width::Scalar => 1,
            Width::Fixed(n) => n.max(1) as u64,
            Width::Alleles | Width::Ploidy => 2,
            Width::AltAlleles => 1,
            Width::Genotypes => 3,
            Width::Own { declared, .. } => declared.max(1) as u64,
        }
    }

    /// Whether this array's trailing size can grow after rows were written.
    pub fn growable(&self) -> bool {
        !matches!(self.width, Width::Scalar | Width::Fixed(_))
    }
}

/// The arrays (and the record columns feeding them) that a schema produces, in store
/// order.
#[derive(Debug, Clone)]
pub struct ArraySet {
    pub arrays: Vec<ArraySpec>,
    /// The columns the VCF side fills; each array reads one of them.
    pub record: RecordColumns,
}

fn field_width(f: &FieldDef) -> (Width, String) {
    let own = format!(
        "{}_{}_dim",
        if f.category == Category::Info {
            "INFO"
        } else {
            "FORMAT"
        },
        f.name
    );
    match (f.ty, f.number) {
        (VcfType::Flag, _) => (Width::Scalar, String::new()),
        (_, VcfNumber::A) => (Width::AltAlleles, "alt_alleles".into()),
        (_, VcfNumber::R) => (Width::Alleles, "alleles".into()),
        (_, VcfNumber::G) => (Width::Genotypes, "genotypes".into()),
        (_, number) => {
            let declared = match number {
                VcfNumber::Fixed(n) => n,
                _ => 0,
            };
            let always = f.category == Category::Format && f.name == "LAA";
            (Width::Own { declared, always }, own)
        }
    }
}

impl ArraySet {
    /// The arrays bio2zarr writes for this header, in a fixed order.
    pub fn new(schema: &Schema) -> ArraySet {
        let mut set = ArraySet {
            arrays: Vec::new(),
            record: RecordColumns::new(schema),
        };
        let add = |set: &mut ArraySet,
                   name: &str,
                   source: Source,
                   base: Base,
                   per_sample: bool,
                   width: Width,
                   dim: &str,
                   description: &str| {
            let column = set.record.of(source);
            let bitshuffle =
                svar2_store::chain::bitshuffle(base == Base::Bool, source == Source::Genotype);
            set.arrays.push(ArraySpec {
                name: name.into(),
                source,
                base,
                per_sample,
                width,
                trailing_dim: dim.into(),
                description: description.into(),
                declared: None,
                column,
                bitshuffle,
            });
        };
        add(&mut set, "variant_contig", Source::Contig, Base::Int, false, Width::Scalar, "",
            "An identifier from the reference genome or an angle-bracketed ID string pointing to a contig in the assembly file");
        add(
            &mut set,
            "variant_position",
            Source::Position,
            Base::Int,
            false,
            Width::Scalar,
            "",
            "The reference position",
        );
        add(
            &mut set,
            "variant_length",
            Source::Length,
            Base::Int,
            false,
            Width::Scalar,
            "",
            "The length of the variant measured in bases",
        );
        add(
            &mut set,
            "variant_id",
            Source::Id,
            Base::Str,
            false,
            Width::Scalar,
            "",
            "List of unique identifiers where applicable",
        );
        add(
            &mut set,
            "variant_id_mask",
            Source::IdMask,
            Base::Bool,
            false,
            Width::Scalar,
            "",
            "",
        );
        add(
            &mut set,
            "variant_allele",
            Source::Allele,
            Base::Str,
            false,
            Width::Alleles,
            "alleles",
            "List of the reference and alternate alleles",
        );
        add(
            &mut set,
            "variant_quality",
            Source::Quality,
            Base::Float,
            false,
            Width::Scalar,
            "",
            "Phred-scaled quality score",
        );
        add(
            &mut set,
            "variant_filter",
            Source::Filter,
            Base::Bool,
            false,
            Width::Fixed(schema.filters.len() as u32),
            "filters",
            "Filter status of the variant",
        );
        for (i, f) in schema.fields.iter().enumerate() {
            let base = match f.ty {
                VcfType::Integer => Base::Int,
                VcfType::Float => Base::Float,
                VcfType::Flag => Base::Bool,
                VcfType::String => Base::Str,
                VcfType::Character => Base::Char,
            };
            let (width, dim) = field_width(f);
            add(
                &mut set,
                &f.array_name(),
                Source::Field(i),
                base,
                f.category == Category::Format,
                width,
                &dim,
                &f.description,
            );
            let number = match (f.ty, f.number) {
                (VcfType::Flag, _) => "0".to_string(),
                (_, VcfNumber::Fixed(n)) => n.to_string(),
                (_, VcfNumber::A) => "A".into(),
                (_, VcfNumber::R) => "R".into(),
                (_, VcfNumber::G) => "G".into(),
                (_, VcfNumber::Dot) => ".".into(),
            };
            let ty = match f.ty {
                VcfType::Integer => "Integer",
                VcfType::Float => "Float",
                VcfType::Flag => "Flag",
                VcfType::String => "String",
                VcfType::Character => "Character",
            };
            set.arrays.last_mut().expect("just added").declared = Some((number, ty, i));
        }
        if schema.has_gt {
            add(
                &mut set,
                "call_genotype",
                Source::Genotype,
                Base::Int,
                true,
                Width::Ploidy,
                "ploidy",
                "",
            );
            add(
                &mut set,
                "call_genotype_mask",
                Source::GenotypeMask,
                Base::Bool,
                true,
                Width::Ploidy,
                "ploidy",
                "",
            );
            add(
                &mut set,
                "call_genotype_phased",
                Source::GenotypePhased,
                Base::Bool,
                true,
                Width::Scalar,
                "",
                "",
            );
        }
        set
    }
}

impl ArraySet {
    /// Bytes one record is expected to fill in a batch: (all of them, the part in
    /// per-sample FORMAT fields other than GT) — the `row_bytes` and
    /// `format_row_bytes` of the planner's peak-RSS law. Each column is charged its
    /// planned width (ploidy 2, two alleles, one value for `Number=.`), or the mean
    /// width of the `prefix` records that carry it if wider, at a value's size as held: as `prefix` — the input's first
    /// records — holds them (calls packed two alleles to a byte while they pack,
    /// integers in 16 bits while they fit, strings at their length), else the widest
    /// representation. A field the first records lack is still charged: later ones
    /// may carry it.
    pub fn row_bytes_estimate(
        &self,
        n_samples: u64,
        prefix: Option<&svar2_vcf::ragged::Batch>,
    ) -> (u64, u64) {
        let (mut total, mut format) = (0u64, 0u64);
        for (c, col) in self.record.specs.iter().enumerate() {
            let spec = self
                .arrays
                .iter()
                .find(|a| a.column == c)
                .expect("column used");
            let mut width = spec.planned_width() as f64;
            let per_value = match prefix.map(|b| &b.columns[c]) {
                Some(held) => {
                    // Values per cell of the records that carry the field.
                    let carrying = held.widths.iter().filter(|&&w| w > 0).count();
                    let cells = (carrying * held.per_record).max(1);
                    width = width.max(held.values.len() as f64 / cells as f64);
                    held_value_bytes(&held.values)
                }
                None => match col.base {
                    Base::Int if col.genotype => 1.0,
                    Base::Int | Base::Float => 4.0,
                    Base::Bool => 1.0,
                    // One end offset plus a few bytes of text per value.
                    Base::Str | Base::Char => 12.0,
                },
            };
            let cells = if col.per_sample { n_samples } else { 1 };
            // 16 bytes of start/width bookkeeping per record and column.
            let bytes = (cells as f64 * width * per_value).ceil() as u64 + 16;
            total += bytes;
            if self.is_format_column(c) {
                format += bytes;
            }
        }
        (total, format)
    }

    /// Whether column `c` holds a per-sample FORMAT field other than GT (the law's
    /// `in_flight_format`).
    fn is_format_column(&self, c: usize) -> bool {
        let col = &self.record.specs[c];
        col.per_sample
            && self
                .arrays
                .iter()
                .find(|a| a.column == c)
                .is_some_and(|a| matches!(a.source, Source::Field(_)))
    }

    /// In-memory bytes per sample of every per-sample array together, at the planned
    /// widths: the encoder scratch of the planner's law. Each encoding thread lays out
    /// and compresses one inner chunk at a time, but its buffers (and its malloc
    /// arena's high-water mark) follow the chunks of every array it meets in a row.
    pub fn scratch_cell_bytes(&self) -> u64 {
        self.arrays
            .iter()
            .filter(|a| a.per_sample)
            .map(|a| {
                let col = &self.record.specs[a.column];
                let value = match col.base {
                    Base::Int if col.genotype => 1,
                    Base::Int | Base::Float => 4,
                    Base::Bool => 1,
                    Base::Str | Base::Char => 16,
                };
                a.planned_width() * value
            })
            .sum::<u64>()
            .max(1)
    }

    /// In-memory bytes per sample of every per-sample array together, laid out as
    /// `layouts` (one per array) say: the encoder scratch the records at hand need
    /// (AD and PL of small counts in one byte, not four; strings an offset and a few
    /// bytes of text).
    pub fn scratch_cell_of(&self, layouts: &[Layout]) -> u64 {
        self.arrays
            .iter()
            .zip(layouts)
            .filter(|(a, _)| a.per_sample)
            .map(|(_, l)| l.cell() as u64 * l.dtype.size().unwrap_or(16) as u64)
            .sum::<u64>()
            .max(1)
    }

    /// Bytes per sample the text of per-sample string arrays takes in an encoder's
    /// chunk, as `batch`'s records hold it: laid out and encoded, twice its length
    /// (a layout cell counts only an offset and a few bytes, which a 100-character
    /// FT value overruns sevenfold).
    pub fn text_cell_of(&self, batch: &svar2_vcf::ragged::Batch) -> u64 {
        self.text_cell_between(batch, 0, batch.len())
    }

    /// [`ArraySet::text_cell_of`] records `lo..hi`.
    pub fn text_cell_between(&self, batch: &svar2_vcf::ragged::Batch, lo: usize, hi: usize) -> u64 {
        self.arrays
            .iter()
            .filter(|a| a.per_sample && matches!(a.base, Base::Str | Base::Char))
            .filter_map(|a| {
                let column = batch.columns.get(a.column)?;
                let cells = (hi.saturating_sub(lo) * column.per_record).max(1);
                let text = column.filled_bytes_from(lo) - column.filled_bytes_from(hi);
                Some(2 * text as u64 / cells as u64)
            })
            .sum()
    }

    /// Bytes per record by which the per-variant arrays laid out as `layouts` are
    /// wider than planned: each encoding thread holds a chunk of them (one record
    /// with a million INFO values makes every chunk of that array a million wide).
    pub fn variant_excess_of(&self, layouts: &[Layout]) -> u64 {
        self.arrays
            .iter()
            .zip(layouts)
            .filter(|(a, _)| !a.per_sample)
            .map(|(a, l)| {
                let extra = (l.cell() as u64).saturating_sub(a.planned_width());
                extra * l.dtype.size().unwrap_or(16) as u64
            })
            .sum()
    }

    /// The planned trailing width of each column (that of the first array reading it).
    pub fn planned_column_widths(&self) -> Vec<u64> {
        (0..self.record.specs.len())
            .map(|c| {
                self.arrays
                    .iter()
                    .find(|a| a.column == c)
                    .map_or(1, ArraySpec::planned_width)
            })
            .collect()
    }

    /// (arrays with a samples axis, arrays without), for shard counts.
    pub fn counts(&self) -> (u64, u64) {
        let call = self.arrays.iter().filter(|a| a.per_sample).count() as u64;
        (call, self.arrays.len() as u64 - call)
    }
}

/// Everything seen so far that decides layouts: per-column stats, alleles and ploidy.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub columns: Vec<ColumnStats>,
    /// Most alleles (REF + ALTs) in any record.
    pub max_alleles: u32,
    /// Largest ploidy of any call.
    pub max_ploidy: u32,
}

impl Stats {
    /// Empty stats for a set of columns.
    pub fn new(set: &ArraySet) -> Stats {
        Stats {
            columns: vec![ColumnStats::default(); set.record.specs.len()],
            max_alleles: 0,
            max_ploidy: 0,
        }
    }

    /// The stats of one batch's records (what a probe lays them out by).
    pub fn of_batch(set: &ArraySet, batch: &svar2_vcf::ragged::Batch) -> Stats {
        let mut stats = Stats::new(set);
        for (s, c) in stats.columns.iter_mut().zip(&batch.columns) {
            s.merge(&c.stats);
        }
        stats.max_alleles = batch.max_alleles;
        stats.max_ploidy = batch.max_ploidy;
        stats
    }

    /// Empty stats for a store of `schema`: `variant_contig` is typed by the contig
    /// count (bio2zarr sizes it so), whatever contigs the records name.
    pub fn for_store(set: &ArraySet, schema: &Schema) -> Stats {
        let mut stats = Stats::new(set);
        if let Some(a) = set.arrays.iter().find(|a| a.name == "variant_contig") {
            stats.columns[a.column].max = schema.contigs.len() as i64;
        }
        stats
    }

    /// Folds another reader's stats into these.
    pub fn merge(&mut self, o: &Stats) {
        for (a, b) in self.columns.iter_mut().zip(&o.columns) {
            a.merge(b);
        }
        self.max_alleles = self.max_alleles.max(o.max_alleles);
        self.max_ploidy = self.max_ploidy.max(o.max_ploidy);
    }
}

/// The part of an array's metadata that depends on the data: its type and trailing
/// size. Two shard rows with equal layouts have the same shard shape and codecs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    pub dtype: Dtype,
    /// Size of the trailing dimension; `None` for arrays without one.
    pub width: Option<u32>,
}

impl Layout {
    /// Values per (record, sample) cell.
    pub fn cell(&self) -> usize {
        self.width.unwrap_or(1) as usize
    }
}

/// n choose k for the genotypes axis.
fn choose(n: u64, k: u64) -> u64 {
    let k = k.min(n.saturating_sub(k));
    (0..k).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
}

/// Sizes of the shared dimensions implied by the stats.
#[derive(Debug, Clone, Copy)]
pub struct Dims {
    pub alleles: u32,
    pub ploidy: u32,
    pub genotypes: u32,
}

impl Dims {
    /// bio2zarr's rules: alleles ≥ 2; ploidy ≥ 1; genotypes from (alleles, ploidy) when
    /// GT exists, otherwise the widest `Number=G` field.
    pub fn from_stats(set: &ArraySet, stats: &Stats, has_gt: bool) -> Dims {
        let alleles = stats.max_alleles.max(2);
        let ploidy = stats.max_ploidy.max(1);
        let genotypes = if has_gt {
            choose((alleles + ploidy - 1) as u64, ploidy as u64) as u32
        } else {
            set.arrays
                .iter()
                .filter(|a| a.width == Width::Genotypes)
                .map(|a| stats.columns[a.column].max_width)
                .max()
                .unwrap_or(0)
        };
        Dims {
            alleles,
            ploidy,
            genotypes,
        }
    }
}

impl ArraySpec {
    /// The layout this array gets given everything seen so far.
    pub fn layout(&self, stats: &Stats, dims: &Dims) -> Layout {
        let cs = &stats.columns[self.column];
        let width = match self.width {
            Width::Scalar => None,
            Width::Fixed(n) => Some(n),
            Width::Alleles => Some(dims.alleles.max(cs.max_width)),
            Width::AltAlleles => Some((dims.alleles - 1).max(cs.max_width)),
            Width::Genotypes => {
                let w = dims.genotypes.max(cs.max_width);
                (w > 0).then_some(w)
            }
            Width::Ploidy => Some(dims.ploidy),
            Width::Own { declared, always } => {
                let w = declared.max(cs.max_width);
                (w > 1 || always).then_some(w.max(1))
            }
        };
        let dtype = match self.base {
            Base::Int => match self.source {
                Source::Contig => Dtype::smallest_int(0, cs.max.max(0)),
                _ if cs.max < cs.min => Dtype::I8,
                _ => Dtype::smallest_int(cs.min, cs.max),
            },
            Base::Float => Dtype::F32,
            Base::Bool => Dtype::Bool,
            Base::Str => Dtype::Str,
            // One character per value, as VCF declares (numpy `U1`, like bio2zarr);
            // a longer value makes the array strings rather than be cut short.
            Base::Char if cs.max > 1 => Dtype::Str,
            Base::Char => Dtype::Char,
        };
        Layout { dtype, width }
    }
}

pub use svar2_store::grid::Geometry;

impl ArraySpec {
    /// Dimension names for a layout.
    pub fn dimension_names(&self, layout: &Layout) -> Vec<String> {
        let mut d = vec!["variants".to_string()];
        if self.per_sample {
            d.push("samples".into());
        }
        if layout.width.is_some() {
            d.push(self.trailing_dim.clone());
        }
        d
    }

    /// Its attributes: the description and, for a field, how the header declared it.
    pub fn attributes(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut a = ArrayMeta::described(&self.description);
        if let Some((number, ty, order)) = &self.declared {
            a.insert("vcf_number".into(), number.clone().into());
            a.insert("vcf_type".into(), (*ty).into());
            a.insert("vcf_order".into(), (*order as u64).into());
        }
        a
    }

    /// The array's metadata for `n` records under `layout`.
    pub fn metadata(
        &self,
        layout: &Layout,
        n: u64,
        n_samples: u64,
        geometry: &Geometry,
    ) -> ArrayMeta {
        let [shape, shard, inner] = self.shapes(layout, n, n_samples, geometry);
        ArrayMeta {
            shape,
            shard,
            inner,
            dimension_names: self.dimension_names(layout),
            dtype: layout.dtype,
            bitshuffle: self.bitshuffle,
            level: geometry.zstd_level,
            attributes: self.attributes(),
        }
    }

    /// (array shape, shard shape, inner chunk shape) for `n` records.
    pub fn shapes(
        &self,
        layout: &Layout,
        n: u64,
        n_samples: u64,
        geometry: &Geometry,
    ) -> [Vec<u64>; 3] {
        let mut shape = vec![n];
        if self.per_sample {
            shape.push(n_samples);
        }
        if let Some(w) = layout.width {
            shape.push(w as u64);
        }
        let (shard, inner) = geometry.grid(&self.dimension_names(layout), &shape);
        [shape, shard, inner]
    }
}

/// Bytes one value takes as `values` holds it: a packed call's allele half a byte, a
/// flag an eighth, a string its mean length plus its end offset.
fn held_value_bytes(values: &svar2_vcf::ragged::Values) -> f64 {
    use svar2_vcf::ragged::Values;
    match values {
        Values::Int16(_) => 2.0,
        Values::Int(_) | Values::Float(_) => 4.0,
        Values::Long(_) => 8.0,
        Values::Int8(_) => 1.0,
        Values::Diploid(_) => 0.5,
        Values::Bool(_) => 0.125,
        Values::Str { bytes, ends } if !ends.is_empty() => {
            bytes.len() as f64 / ends.len() as f64 + std::mem::size_of::<usize>() as f64
        }
        Values::Str { .. } => 12.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genotypes_axis_is_multiset_count() {
        assert_eq!(choose(3, 2), 3); // 2 alleles, diploid
        assert_eq!(choose(5, 2), 10); // 4 alleles, diploid
        assert_eq!(choose(8, 4), 70); // 5 alleles, tetraploid
    }

    fn spec(width: Width, base: Base) -> ArraySpec {
        ArraySpec {
            name: "x".into(),
            source: Source::Field(0),
            base,
            per_sample: false,
            width,
            trailing_dim: "d".into(),
            description: String::new(),
            declared: None,
            column: 0,
            bitshuffle: false,
        }
    }

    #[test]
    fn own_dimension_appears_only_past_one_value() {
        let mut stats = Stats {
            columns: vec![ColumnStats::default()],
            max_alleles: 2,
            max_ploidy: 2,
        };
        let dims = Dims {
            alleles: 2,
            ploidy: 2,
            genotypes: 3,
        };
        let dot = spec(
            Width::Own {
                declared: 0,
                always: false,
            },
            Base::Int,
        );
        stats.columns[0].max_width = 1;
        assert_eq!(dot.layout(&stats, &dims).width, None);
        stats.columns[0].max_width = 3;
        assert_eq!(dot.layout(&stats, &dims).width, Some(3));
        let pair = spec(
            Width::Own {
                declared: 2,
                always: false,
            },
            Base::Int,
        );
        stats.columns[0].max_width = 0;
        assert_eq!(pair.layout(&stats, &dims).width, Some(2));
        // A never-seen integer field is int8, as bio2zarr writes it.
        assert_eq!(pair.layout(&stats, &dims).dtype, Dtype::I8);
        stats.columns[0].min = -1;
        stats.columns[0].max = 40000;
        assert_eq!(pair.layout(&stats, &dims).dtype, Dtype::I32);
    }
}
