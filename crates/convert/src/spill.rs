//! A [`Batch`] written to a file and read back exactly: how a partition hands the
//! records of an inner chunk it shares with its neighbour to `finalize`, which joins
//! the parts and encodes the chunk once (an encoded chunk cannot be split).
//!
//! Little-endian, in field order; every length read back is checked against the
//! bytes left, so a damaged file is an error, never an allocation it asks for.

use crate::error::{Error, Result};
use std::path::Path;
use svar2_vcf::columns::{ColumnSpec, ColumnStats};
use svar2_vcf::packed::Bits;
use svar2_vcf::ragged::{Batch, Column, Values};

const MAGIC: &[u8; 8] = b"svar2bt3";

/// The most reserved up front for a spilled batch before its bytes decode.
const RESERVE_AT_MOST: u64 = 256 << 20;

fn put(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A count, then each value in its own little-endian width.
fn put_slice<T: Copy, const N: usize>(out: &mut Vec<u8>, v: &[T], each: impl Fn(T) -> [u8; N]) {
    put(out, v.len() as u64);
    out.reserve(v.len() * N);
    for &x in v {
        out.extend_from_slice(&each(x));
    }
}

/// The batch's bytes.
pub fn encode(b: &Batch) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    put(&mut out, b.first);
    put(&mut out, b.max_alleles as u64);
    put(&mut out, b.max_ploidy as u64);
    put(&mut out, b.loci.len() as u64);
    for &(c, p, e) in &b.loci {
        put(&mut out, c as i64 as u64);
        put(&mut out, p as u64);
        put(&mut out, e as u64);
    }
    put(&mut out, b.columns.len() as u64);
    for c in &b.columns {
        put(&mut out, c.per_record as u64);
        put(&mut out, c.stats.max_width as u64);
        put(&mut out, c.stats.min as u64);
        put(&mut out, c.stats.max as u64);
        put_slice(&mut out, &c.starts, |x| (x as u64).to_le_bytes());
        put_slice(&mut out, &c.widths, u32::to_le_bytes);
        match &c.values {
            Values::Int16(v) => {
                put(&mut out, 7);
                put_slice(&mut out, v, i16::to_le_bytes);
            }
            Values::Int(v) => {
                put(&mut out, 0);
                put_slice(&mut out, v, i32::to_le_bytes);
            }
            Values::Long(v) => {
                put(&mut out, 1);
                put_slice(&mut out, v, i64::to_le_bytes);
            }
            Values::Int8(v) => {
                put(&mut out, 2);
                put_slice(&mut out, v, i8::to_le_bytes);
            }
            Values::Diploid(v) => {
                put(&mut out, 6);
                put_slice(&mut out, v, u8::to_le_bytes);
            }
            Values::Float(v) => {
                put(&mut out, 3);
                put_slice(&mut out, v, u32::to_le_bytes);
            }
            Values::Bool(v) => {
                put(&mut out, 4);
                put_slice(&mut out, &v.to_flags(), u8::to_le_bytes);
            }
            Values::Str { bytes, ends } => {
                put(&mut out, 5);
                put_slice(&mut out, ends, |x| (x as u64).to_le_bytes());
                put_slice(&mut out, bytes, u8::to_le_bytes);
            }
        }
    }
    out
}

/// Reads back what [`encode`] wrote, for columns `specs`.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn u64(&mut self) -> Option<u64> {
        let b = self.bytes.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// A count of `each`-byte items that must fit in what is left.
    fn count(&mut self, each: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(each)? <= self.bytes.len() - self.at).then_some(n)
    }

    /// A count, then that many `N`-byte values.
    fn vec<T, const N: usize>(&mut self, f: impl Fn([u8; N]) -> T) -> Option<Vec<T>> {
        let n = self.count(N)?;
        let bytes = &self.bytes[self.at..self.at + n * N];
        self.at += n * N;
        Some(
            bytes
                .chunks_exact(N)
                .map(|b| f(b.try_into().expect("N bytes")))
                .collect(),
        )
    }

    /// Offsets (`u64` on disk), which must fit this machine's `usize`.
    fn offsets(&mut self) -> Option<Vec<usize>> {
        let v = self.vec(u64::from_le_bytes)?;
        v.into_iter().map(|x| usize::try_from(x).ok()).collect()
    }
}

fn decode_inner(bytes: &[u8], specs: &[ColumnSpec]) -> Option<Batch> {
    if bytes.get(..8)? != MAGIC {
        return None;
    }
    let mut c = Cursor { bytes, at: 8 };
    let first = c.u64()?;
    let max_alleles = u32::try_from(c.u64()?).ok()?;
    let max_ploidy = u32::try_from(c.u64()?).ok()?;
    let n = c.count(24)?;
    let mut loci = Vec::with_capacity(n);
    for _ in 0..n {
        let contig = i32::try_from(c.u64()? as i64).ok()?;
        loci.push((contig, c.u64()? as i64, c.u64()? as i64));
    }
    if c.count(8)? != specs.len() {
        return None;
    }
    let mut columns = Vec::with_capacity(specs.len());
    for _ in specs {
        let per_record = usize::try_from(c.u64()?).ok()?;
        let stats = ColumnStats {
            max_width: u32::try_from(c.u64()?).ok()?,
            min: c.u64()? as i64,
            max: c.u64()? as i64,
        };
        let starts = c.offsets()?;
        let widths = c.vec(u32::from_le_bytes)?;
        let values = match c.u64()? {
            0 => Values::Int(c.vec(i32::from_le_bytes)?),
            1 => Values::Long(c.vec(i64::from_le_bytes)?),
            2 => Values::Int8(c.vec(i8::from_le_bytes)?),
            3 => Values::Float(c.vec(u32::from_le_bytes)?),
            4 => Values::Bool(Bits::from_flags(&c.vec(u8::from_le_bytes)?)),
            5 => {
                let ends = c.offsets()?;
                let bytes = c.vec(u8::from_le_bytes)?;
                if ends.windows(2).any(|w| w[0] > w[1])
                    || ends.last().is_some_and(|&e| e > bytes.len())
                {
                    return None;
                }
                Values::Str { bytes, ends }
            }
            6 => Values::Diploid(c.vec(u8::from_le_bytes)?),
            7 => Values::Int16(c.vec(i16::from_le_bytes)?),
            _ => return None,
        };
        if starts.len() != loci.len() || widths.len() != loci.len() {
            return None;
        }
        // Every record's values lie inside the column (what the layout code indexes).
        let n_values = values.len();
        let inside = starts.iter().zip(&widths).all(|(&s, &w)| {
            (w as usize)
                .checked_mul(per_record)
                .and_then(|n| n.checked_add(s))
                .is_some_and(|e| e <= n_values)
        });
        if !inside || starts.windows(2).any(|w| w[0] > w[1]) {
            return None;
        }
        columns.push(Column {
            per_record,
            values,
            starts,
            widths,
            stats,
            reserved: None,
            empty_element: None,
        });
    }
    (c.at == bytes.len()).then_some(Batch {
        first,
        columns,
        loci,
        max_alleles,
        max_ploidy,
        new_contigs: Vec::new(),
    })
}

/// Writes `b` to `path` whole (aside, then renamed), zstd-compressed: genotype
/// batches shrink ~10x, which is what `finalize` reads and then deletes.
pub fn write(path: &Path, b: &Batch) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let bytes = zstd::bulk::compress(&encode(b), 1)
        .map_err(|e| Error::Usage(format!("{}: cannot compress: {e}", path.display())))?;
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Reads a batch [`write`] wrote.
pub fn read(path: &Path, specs: &[ColumnSpec]) -> Result<Batch> {
    let packed = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    // Room for the size the frame states, up to a bound; past it the buffer grows
    // only as bytes really decode (nothing is allocated on a file's word alone).
    let stated = zstd::zstd_safe::get_frame_content_size(&packed)
        .ok()
        .flatten()
        .unwrap_or(0);
    let bytes = if stated <= RESERVE_AT_MOST {
        // In one call, straight into the buffer.
        zstd::bulk::decompress(&packed, stated as usize).unwrap_or_default()
    } else {
        let mut bytes = Vec::with_capacity(RESERVE_AT_MOST as usize);
        let decoded = zstd::stream::read::Decoder::new(packed.as_slice())
            .and_then(|mut d| std::io::Read::read_to_end(&mut d, &mut bytes));
        if decoded.is_err() {
            bytes.clear();
        }
        bytes
    };
    decode_inner(&bytes, specs).ok_or_else(|| {
        Error::Usage(format!(
            "{}: not a batch this svar2 wrote, or damaged: run its partition again",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svar2_vcf::columns::Base;

    #[test]
    fn a_batch_round_trips_and_damage_is_refused() {
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
                per_sample: false,
                genotype: false,
            },
        ];
        let mut b = Batch::new(&specs, 2, 1500);
        b.columns[0].push_i8s(&[0, 1, 1, -1], 2, -1, 1);
        b.columns[1].begin_strs(1);
        b.columns[1].push_str(b"AC");
        b.columns[2].push_longs(&[1 << 40], 1);
        b.loci.push((3, 99, 100));
        b.max_alleles = 2;
        b.max_ploidy = 2;
        let bytes = encode(&b);
        let back = decode_inner(&bytes, &specs).expect("round trip");
        assert_eq!(format!("{b:?}"), format!("{back:?}"));
        for cut in [0, 9, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                decode_inner(&bytes[..cut], &specs).is_none(),
                "cut at {cut}"
            );
        }
        let mut huge = bytes.clone();
        huge[32..40].copy_from_slice(&u64::MAX.to_le_bytes()); // the loci count
        assert!(decode_inner(&huge, &specs).is_none());
    }
}
