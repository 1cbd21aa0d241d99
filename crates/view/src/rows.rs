//! Reading records out of a store: a run of rows of every array a VCF line needs —
//! the fixed columns, INFO fields, and for the chosen samples the FORMAT fields and
//! genotypes — into one [`Block`]. Numeric call arrays are read through the patch
//! reader (IO threads, decode pool, only the chosen samples' chunks).

use crate::error::{Error, Result};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use svar2_reader::{Reader, Store};
use svar2_store::Dtype;
use svar2_vcf::block::{Block, Dense, FieldValues, Genotypes, Strs};
use svar2_vcf::schema::{Category, Schema, VcfType};
use svar2_zarr::AnyArray;

/// The arrays a block is read from, resolved once.
pub struct Sources {
    contig: Arc<AnyArray>,
    /// Contigs the store lists (`contig_id`): a `variant_contig` value past them is
    /// damage, not a record on contig `?`.
    contigs: usize,
    position: Arc<AnyArray>,
    length: Arc<AnyArray>,
    id: Option<Arc<AnyArray>>,
    alleles: Arc<AnyArray>,
    quality: Option<Arc<AnyArray>>,
    filter: Option<Arc<AnyArray>>,
    info: Vec<(usize, Arc<AnyArray>)>,
    format: Vec<(usize, Arc<AnyArray>)>,
    genotype: Option<(Arc<AnyArray>, Option<Arc<AnyArray>>)>,
    /// Store sample columns to read (empty: no samples).
    pub columns: Vec<u64>,
}

impl Sources {
    /// The arrays of `schema`'s fields in `store`; FORMAT and genotypes only when
    /// `samples` are read.
    pub fn new(
        store: &Store,
        schema: &Schema,
        columns: Vec<u64>,
        samples: bool,
    ) -> Result<Sources> {
        let g = store.group();
        let need = |n: &str| store.array(n).map_err(Error::from);
        let opt = |n: &str| g.array(n).cloned();
        let mut info = Vec::new();
        let mut format = Vec::new();
        for (k, f) in schema.fields.iter().enumerate() {
            match f.category {
                // A field the store lacks is one the caller computes (AC/AN for -s).
                Category::Info => info.extend(opt(&f.array_name()).map(|a| (k, a))),
                Category::Format if samples => format.push((k, need(&f.array_name())?)),
                Category::Format => {}
            }
        }
        let genotype = match (samples, opt("call_genotype")) {
            (true, Some(gt)) => Some((gt, opt("call_genotype_phased"))),
            _ => None,
        };
        // Each array at a data type its VCF column can be printed from: one rewritten
        // at another (zarr-python, another tool) is refused by name, never printed as
        // missing values or unphased calls.
        for (k, a) in info.iter().chain(&format) {
            let f = &schema.fields[*k];
            let allowed: &[Dtype] = match f.ty {
                VcfType::Integer => INTS,
                VcfType::Float => &[Dtype::F32],
                VcfType::Flag => &[Dtype::Bool],
                VcfType::String => &[Dtype::Str],
                VcfType::Character => &[Dtype::Str, Dtype::Char],
            };
            expect_dtype(a, allowed, &format!("Type={:?} values", f.ty))?;
        }
        if let Some((gt, phased)) = &genotype {
            expect_dtype(gt, INTS, "allele indices")?;
            if let Some(p) = phased {
                expect_dtype(p, &[Dtype::Bool], "phase flags")?;
            }
        }
        let quality = opt("variant_quality");
        if let Some(q) = &quality {
            expect_dtype(q, &[Dtype::F32], "QUAL values")?;
        }
        let filter = opt("variant_filter");
        if let Some(f) = &filter {
            expect_dtype(f, &[Dtype::Bool], "FILTER flags")?;
            let width = Sources::width(f, 1);
            if width != schema.filters.len() {
                return Err(Error::Usage(format!(
                    "{}: {width} filter flags a record, but filter_id lists {} filters: \
                     the store is damaged (restore it from a copy or convert again)",
                    f.name,
                    schema.filters.len()
                )));
            }
        }
        let (contig, position, length) = (
            need("variant_contig")?,
            need("variant_position")?,
            need("variant_length")?,
        );
        for a in [&contig, &position, &length] {
            expect_dtype(a, INTS, "whole numbers")?;
        }
        Ok(Sources {
            contig,
            contigs: store.contig_names().len(),
            position,
            length,
            id: opt("variant_id"),
            alleles: need("variant_allele")?,
            quality,
            filter,
            info,
            format,
            genotype,
            columns: if samples { columns } else { Vec::new() },
        })
    }

    /// Only the fields `keep` names (schema indexes), and the genotypes only when
    /// `genotypes`: a `query` format reads and decodes only the arrays it prints.
    pub fn only(mut self, keep: impl Fn(usize) -> bool, genotypes: bool) -> Sources {
        self.info.retain(|(k, _)| keep(*k));
        self.format.retain(|(k, _)| keep(*k));
        if !genotypes {
            self.genotype = None;
        }
        self
    }

    /// Rows `[r0, r1)` of the whole array's axes beyond the first: their product.
    fn width(a: &AnyArray, skip: usize) -> usize {
        a.shape().iter().skip(skip).product::<u64>() as usize
    }
}

/// The integer data types.
const INTS: &[Dtype] = &[Dtype::I8, Dtype::I16, Dtype::I32, Dtype::I64];

/// `Err` naming `a` unless its data type is one of `allowed` (what it holds: `what`).
fn expect_dtype(a: &AnyArray, allowed: &[Dtype], what: &str) -> Result<()> {
    if allowed.contains(&a.dtype) {
        return Ok(());
    }
    let name = |d: Dtype| match d {
        Dtype::Char => "fixed_length_utf32".to_string(),
        d => d.json().as_str().unwrap_or("?").to_string(),
    };
    Err(Error::Usage(format!(
        "{}: data type {}, where {what} are stored as {}: the array was rewritten (by \
         another tool?); convert the VCF again, or write the array back at its type",
        a.name,
        name(a.dtype),
        allowed
            .iter()
            .map(|&d| name(d))
            .collect::<Vec<_>>()
            .join(" or ")
    )))
}

/// Fixed-size bytes of `dtype` as a dense field.
fn dense(dtype: Dtype, b: Vec<u8>) -> Dense {
    match dtype {
        Dtype::Bool => Dense::Bool(b),
        Dtype::I8 => Dense::I8(b.into_iter().map(|x| x as i8).collect()),
        Dtype::I16 => Dense::I16(
            b.chunks_exact(2)
                .map(|x| i16::from_le_bytes([x[0], x[1]]))
                .collect(),
        ),
        Dtype::I32 => Dense::I32(
            b.chunks_exact(4)
                .map(|x| i32::from_le_bytes(x.try_into().expect("4")))
                .collect(),
        ),
        Dtype::I64 => Dense::I64(
            b.chunks_exact(8)
                .map(|x| i64::from_le_bytes(x.try_into().expect("8")))
                .collect(),
        ),
        Dtype::F32 => Dense::F32(
            b.chunks_exact(4)
                .map(|x| u32::from_le_bytes(x.try_into().expect("4")))
                .collect(),
        ),
        Dtype::Char => Dense::Char(
            b.chunks_exact(4)
                .map(|x| u32::from_le_bytes(x.try_into().expect("4")))
                .collect(),
        ),
        Dtype::Str => unreachable!("strings are read as strings"),
    }
}

fn strs(v: Vec<Vec<u8>>) -> Strs {
    let mut s = Strs::default();
    for x in v {
        s.push(&x);
    }
    s
}

fn ints(a: &AnyArray, r0: u64, r1: u64) -> Result<Vec<i64>> {
    Ok(a.read_rows_i64(r0, r1)?)
}

/// `strings` of `a`, refused where one holds a tab or a line break, or `column`'s own
/// separator (`,` between alleles, `;` between INFO fields, `:` between FORMAT
/// fields): printed, it would cut its record's columns, begin a record the store never
/// held, or add an allele or a field (VCF text cannot carry them; another tool wrote
/// or edited the array).
fn one_line(a: &AnyArray, strings: Strs, column: Option<u8>) -> Result<Strs> {
    let breaks = memchr::memchr3(b'\t', b'\n', b'\r', &strings.bytes);
    let own = column.and_then(|c| memchr::memchr(c, &strings.bytes));
    let Some(at) = breaks.into_iter().chain(own).min() else {
        return Ok(strings);
    };
    let i = strings.ends.partition_point(|&end| end <= at);
    Err(Error::Usage(format!(
        "{}: a value holds {} ({:?}), which VCF text cannot carry there: printed, it would \
         break its record's line; the array was written or edited by another tool (mend \
         the value, or convert the VCF again)",
        a.name,
        match strings.bytes[at] {
            b'\t' => "a tab".to_string(),
            b'\n' | b'\r' => "a line break".to_string(),
            c => format!("`{}`", c as char),
        },
        String::from_utf8_lossy(strings.get(i))
            .chars()
            .take(60)
            .collect::<String>()
    )))
}

/// A variants-axis array's rows (strings or numbers) as a dense field.
fn site_values(a: &AnyArray, r0: u64, r1: u64) -> Result<Dense> {
    Ok(match a.dtype {
        Dtype::Str => Dense::Str(one_line(a, strs(a.read_rows_strings(r0, r1)?), Some(b';'))?),
        d => dense(d, a.read_rows(r0, r1)?),
    })
}

/// A call array's rows for the chosen sample columns (rows, columns, trailing).
fn call_values(reader: &Reader, a: &Arc<AnyArray>, rows: &[u64], columns: &[u64]) -> Result<Dense> {
    let (r0, r1) = (rows[0], rows[rows.len() - 1] + 1);
    if a.dtype == Dtype::Str {
        // Strings: whole rows, then the columns picked (strings never reach the reader).
        let all = a.read_rows_strings(r0, r1)?;
        let n_samples = a.shape().get(1).copied().unwrap_or(0) as usize;
        let per = Sources::width(a, 2);
        let mut out = Strs::default();
        for &r in rows {
            let i = (r - r0) as usize;
            for &c in columns {
                for k in 0..per {
                    out.push(&all[(i * n_samples + c as usize) * per + k]);
                }
            }
        }
        return Ok(Dense::Str(one_line(a, out, Some(b':'))?));
    }
    let never = AtomicBool::new(false);
    let bytes = svar2_reader::region::read_rows(reader, a, rows, columns, &never)?;
    Ok(dense(a.dtype, bytes))
}

impl Sources {
    /// Records `rows` (ascending, consecutive) as a block.
    pub fn read(&self, reader: &Reader, rows: &[u64]) -> Result<Block> {
        let n = rows.len();
        let mut b = Block {
            n,
            n_samples: self.columns.len(),
            ..Block::default()
        };
        if n == 0 {
            return Ok(b);
        }
        let (r0, r1) = (rows[0], rows[n - 1] + 1);
        debug_assert_eq!((r1 - r0) as usize, n, "a run of consecutive rows");
        let contigs = ints(&self.contig, r0, r1)?;
        if let Some(i) = contigs
            .iter()
            .position(|&c| c < 0 || c as usize >= self.contigs)
        {
            return Err(svar2_store::Error::Corrupt {
                key: self.contig.name.clone(),
                msg: format!(
                    "row {} names contig {} but contig_id lists {}: the store is damaged \
                     (restore it from a copy or convert again)",
                    r0 + i as u64,
                    contigs[i],
                    self.contigs
                ),
            }
            .into());
        }
        b.contig = contigs.into_iter().map(|x| x as u32).collect();
        b.pos = ints(&self.position, r0, r1)?;
        // Records are sorted within a contig (convert refuses them otherwise): rows
        // out of order are a damaged variant_position, printed as such they would be
        // a VCF no tool reads by region.
        if let Some(i) = (1..n).find(|&i| b.contig[i] == b.contig[i - 1] && b.pos[i] < b.pos[i - 1])
        {
            return Err(svar2_store::Error::Corrupt {
                key: self.position.name.clone(),
                msg: format!(
                    "row {} is at position {} after row {} at {} on the same contig: the \
                     store is damaged (restore it from a copy or convert again)",
                    r0 + i as u64,
                    b.pos[i],
                    r0 + i as u64 - 1,
                    b.pos[i - 1]
                ),
            }
            .into());
        }
        b.rlen = ints(&self.length, r0, r1)?;
        b.id = match &self.id {
            Some(a) => one_line(
                a,
                strs(
                    a.read_rows_strings(r0, r1)?
                        .into_iter()
                        .map(|s| if s.is_empty() { b".".to_vec() } else { s })
                        .collect(),
                ),
                None,
            )?,
            None => strs(vec![b".".to_vec(); n]),
        };
        b.allele_width = Sources::width(&self.alleles, 1).max(1);
        b.alleles = one_line(
            &self.alleles,
            strs(self.alleles.read_rows_strings(r0, r1)?),
            Some(b','),
        )?;
        b.qual = match &self.quality {
            Some(a) => match dense(a.dtype, a.read_rows(r0, r1)?) {
                Dense::F32(v) => v,
                _ => vec![0x7F80_0001; n],
            },
            None => vec![0x7F80_0001; n],
        };
        if let Some(f) = &self.filter {
            b.n_filters = Sources::width(f, 1);
            b.filters = f.read_rows(r0, r1)?;
        }
        for (k, a) in &self.info {
            b.info.push(FieldValues {
                field: *k,
                width: Sources::width(a, 1).max(1),
                values: site_values(a, r0, r1)?,
            });
        }
        if !self.columns.is_empty() {
            for (k, a) in &self.format {
                b.format.push(FieldValues {
                    field: *k,
                    width: Sources::width(a, 2).max(1),
                    values: call_values(reader, a, rows, &self.columns)?,
                });
            }
            if let Some((gt, phased)) = &self.genotype {
                let ploidy = Sources::width(gt, 2).max(1);
                let alleles = call_values(reader, gt, rows, &self.columns)?;
                let phased = match phased {
                    Some(p) => match call_values(reader, p, rows, &self.columns)? {
                        Dense::Bool(v) => v,
                        _ => vec![0; n * self.columns.len()],
                    },
                    None => vec![0; n * self.columns.len()],
                };
                b.gt = Some(Genotypes {
                    ploidy,
                    alleles,
                    phased,
                });
            }
        }
        Ok(b)
    }
}
