//! `svar2 read`: the records of a region, printed as `bcftools query -f
//! '%CHROM\t%POS[\t%GT]\n'` prints them (genotypes rebuilt from `call_genotype`,
//! `call_genotype_phased` and the missing/fill values), or as one `.npy` array.

use crate::error::{Error, Result};
use crate::patch::Patch;
use crate::read::Reader;
use crate::store::Store;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use svar2_store::Dtype;
use svar2_zarr::AnyArray;

/// Rows read at once (the region streams through in blocks of this many records).
const BLOCK_ROWS: u64 = 65_536;

/// `CONTIG`, `CONTIG:POS`, `CONTIG:START-END` or `CONTIG:START-` (commas in numbers
/// allowed).
pub fn parse_region(text: &str) -> Result<(String, i64, i64)> {
    let bad = || {
        Error::Usage(format!(
            "--region {text:?}: expected CONTIG, CONTIG:POS, CONTIG:START-END or CONTIG:START-"
        ))
    };
    let num = |t: &str| t.replace(',', "").parse::<i64>().map_err(|_| bad());
    match text.rsplit_once(':') {
        None => Ok((text.to_string(), 1, i64::MAX)),
        Some((c, r)) => match r.split_once('-') {
            Some((a, "")) => Ok((c.to_string(), num(a)?, i64::MAX)),
            Some((a, b)) => Ok((c.to_string(), num(a)?, num(b)?)),
            None => {
                let p = num(r)?;
                Ok((c.to_string(), p, p))
            }
        },
    }
}

/// Little-endian values as i64 (bool as 0/1).
fn ints(dtype: Dtype, b: &[u8]) -> Vec<i64> {
    match dtype {
        Dtype::Bool | Dtype::I8 => b.iter().map(|&x| x as i8 as i64).collect(),
        Dtype::I16 => b
            .chunks_exact(2)
            .map(|x| i16::from_le_bytes([x[0], x[1]]) as i64)
            .collect(),
        Dtype::I32 | Dtype::Char => b
            .chunks_exact(4)
            .map(|x| i32::from_le_bytes(x.try_into().expect("4")) as i64)
            .collect(),
        _ => b
            .chunks_exact(8)
            .map(|x| i64::from_le_bytes(x.try_into().expect("8")))
            .collect(),
    }
}

/// One value as VCF text: integers with `.` for missing (−1) and nothing for fill
/// (−2); floats with `.` for the missing NaN.
fn value_text(dtype: Dtype, b: &[u8]) -> Option<String> {
    match dtype {
        Dtype::F32 => {
            let bits = u32::from_le_bytes(b.try_into().ok()?);
            match bits {
                0x7F80_0001 => Some(".".into()),
                0x7F80_0002 => None,
                _ => Some(format!("{}", f32::from_bits(bits))),
            }
        }
        _ => match ints(dtype, b)[0] {
            -1 => Some(".".into()),
            -2 => None,
            v => Some(v.to_string()),
        },
    }
}

/// Values of `a` at store `rows` (ascending) × sample `columns`, as one buffer of
/// (rows, columns, trailing axes) in C order — (rows, trailing) for an array
/// without a samples axis. Each run of consecutive rows is one patch over the columns.
pub fn read_rows(
    reader: &Reader,
    a: &Arc<AnyArray>,
    rows: &[u64],
    columns: &[u64],
    cancel: &AtomicBool,
) -> Result<Vec<u8>> {
    let Some(patches) = row_runs(a, rows, columns) else {
        return Ok(Vec::new());
    };
    let mut out = vec![0u8; reader.batch_bytes_columns(a, &patches, columns)?];
    reader.read_batch_columns(a, &patches, columns, &mut out, cancel)?;
    Ok(out)
}

/// [`read_rows`] into `out` (a caller's buffer of exactly the bytes it fills, as
/// Python's numpy array is: no second copy of a region the size of memory).
pub fn read_rows_into(
    reader: &Reader,
    a: &Arc<AnyArray>,
    rows: &[u64],
    columns: &[u64],
    out: &mut [u8],
    cancel: &AtomicBool,
) -> Result<()> {
    match row_runs(a, rows, columns) {
        Some(patches) => reader.read_batch_columns(a, &patches, columns, out, cancel),
        None => Ok(()),
    }
}

/// One patch per run of consecutive `rows` over `columns`; `None` where nothing is
/// read (no rows, or no columns of an array with a samples axis).
fn row_runs(a: &AnyArray, rows: &[u64], columns: &[u64]) -> Option<Vec<Patch>> {
    let patches: Vec<Patch> = rows
        .chunk_by(|x, y| *y == x + 1)
        .map(|run| Patch {
            variant_start: run[0],
            n_variants: run.len() as u64,
            sample_start: 0,
            n_samples: columns.len() as u64,
        })
        .collect();
    let empty = crate::columns::samples_axis(a).is_some() && columns.is_empty();
    (!patches.is_empty() && !empty).then_some(patches)
}

/// Prints the region.
pub fn write(
    store: &Store,
    reader: &Reader,
    region: &str,
    samples: Option<&str>,
    array: &str,
    format: &str,
    w: &mut impl Write,
) -> Result<()> {
    let (contig, start, end) = parse_region(region)?;
    let rows = store.locate(&contig, start, end)?;
    let a = store.array(array)?;
    let e = a.dtype.size().ok_or_else(|| {
        Error::Usage(format!("{array}: a string array; read it with zarr-python"))
    })?;
    let dims = &a.layout.dimension_names;
    let has_samples = dims.iter().any(|d| d == "samples");
    let columns: Vec<u64> = match (samples, has_samples) {
        (_, false) => vec![0],
        (Some(list), true) => store.sample_columns(&list.split(',').collect::<Vec<_>>())?,
        (None, true) => (0..store.sample_names().len() as u64).collect(),
    };
    // Values per (row, sample) cell: the trailing axes.
    let cell: u64 = a
        .shape()
        .iter()
        .zip(dims)
        .filter(|(_, d)| *d != "variants" && *d != "samples")
        .map(|(n, _)| *n)
        .product();
    let genotypes = array == "call_genotype";
    let phased = if genotypes && format == "tsv" {
        store.array("call_genotype_phased").ok()
    } else {
        None
    };
    let pos = store.array("variant_position")?;
    let io = |source: std::io::Error| Error::Io {
        what: "standard output".into(),
        source,
    };
    if format == "npy" {
        let descr = match a.dtype {
            Dtype::Bool => "|b1",
            Dtype::I8 => "|i1",
            Dtype::I16 => "<i2",
            Dtype::I32 => "<i4",
            Dtype::I64 => "<i8",
            Dtype::F32 => "<f4",
            Dtype::Char => "<U1",
            Dtype::Str => unreachable!("strings refused above"),
        };
        let mut shape = vec![rows.len().to_string()];
        if has_samples {
            shape.push(columns.len().to_string());
        }
        for (n, d) in a.shape().iter().zip(dims) {
            if d != "variants" && d != "samples" {
                shape.push(n.to_string());
            }
        }
        let shape = match shape.len() {
            1 => format!("({},)", shape[0]),
            _ => format!("({})", shape.join(", ")),
        };
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        w.write_all(b"\x93NUMPY\x01\x00").map_err(io)?;
        w.write_all(&(header.len() as u16).to_le_bytes())
            .map_err(io)?;
        w.write_all(header.as_bytes()).map_err(io)?;
    }
    let never = AtomicBool::new(false);
    let ncols = columns.len();
    let cell_bytes = cell as usize * e;
    for block in rows.chunk_by(|a, b| b / BLOCK_ROWS == a / BLOCK_ROWS) {
        let buf = read_rows(reader, &a, block, &columns, &never)?;
        let pbuf = match &phased {
            Some(ph) => read_rows(reader, ph, block, &columns, &never)?,
            None => Vec::new(),
        };
        let positions = if format == "tsv" {
            let (r0, r1) = (block[0], block[block.len() - 1] + 1);
            let all = pos.read_rows_i64(r0, r1)?;
            block.iter().map(|r| all[(r - r0) as usize]).collect()
        } else {
            Vec::new()
        };
        for i in 0..block.len() {
            let at = |k: usize| (i * ncols + k) * cell_bytes;
            if format == "npy" {
                w.write_all(&buf[at(0)..at(ncols)]).map_err(io)?;
                continue;
            }
            let mut line = format!("{contig}\t{}", positions[i]);
            for k in 0..ncols {
                let vals = &buf[at(k)..at(k) + cell_bytes];
                line.push('\t');
                if genotypes {
                    let sep = if phased.is_some() && pbuf[i * ncols + k] != 0 {
                        '|'
                    } else {
                        '/'
                    };
                    let alleles: Vec<String> = ints(a.dtype, vals)
                        .into_iter()
                        .filter(|&g| g != -2)
                        .map(|g| if g < 0 { ".".into() } else { g.to_string() })
                        .collect();
                    line.push_str(&alleles.join(&sep.to_string()));
                } else {
                    let texts: Vec<String> = vals
                        .chunks_exact(e)
                        .filter_map(|v| value_text(a.dtype, v))
                        .collect();
                    line.push_str(&if texts.is_empty() {
                        ".".into()
                    } else {
                        texts.join(",")
                    });
                }
            }
            line.push('\n');
            w.write_all(line.as_bytes()).map_err(io)?;
        }
    }
    w.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_like_bcftools() {
        assert_eq!(parse_region("chr1").unwrap(), ("chr1".into(), 1, i64::MAX));
        assert_eq!(
            parse_region("chr1:1,000-2,000").unwrap(),
            ("chr1".into(), 1000, 2000)
        );
        assert_eq!(parse_region("HLA-A:5").unwrap(), ("HLA-A".into(), 5, 5));
        assert!(parse_region("chr1:x-2").is_err());
        assert_eq!(
            parse_region("chr1:5,000-").unwrap(),
            ("chr1".into(), 5000, i64::MAX)
        );
    }
}
