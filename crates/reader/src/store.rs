//! A VCF Zarr store opened for reading: typed array handles, sample names → columns,
//! and genomic regions → variant rows (through `region_index`, reading only the
//! chunks of positions it points at).

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
pub use svar2_zarr::Access;
use svar2_zarr::{AnyArray, AnyGroup};

/// An open store.
pub struct Store {
    group: AnyGroup,
    samples: Vec<String>,
    contigs: Vec<String>,
    /// Each name's first column.
    sample_column: HashMap<String, u64>,
    /// Names listed more than once: their first two columns.
    repeated: HashMap<String, (u64, u64)>,
}

impl Store {
    /// Opens any VCF Zarr store (svar2's sharded v3, any other Zarr v2 or v3) for
    /// random patch reads (shard files mapped: see [`Access::Random`]).
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with(path, Access::Random)
    }

    /// [`open`](Self::open) for reads of the given kind: [`Access::Stream`] for a
    /// pass over the whole store (`svar2 view`, `query`).
    pub fn open_with(path: &Path, access: Access) -> Result<Store> {
        let group = AnyGroup::open_with(path, access)?;
        let names = |a: &str| -> Result<Vec<String>> {
            Ok(group
                .array(a)
                .map(|x| x.read_strings())
                .transpose()?
                .unwrap_or_default())
        };
        let samples = names("sample_id")?;
        let contigs = names("contig_id")?;
        // The first column of each name: a name listed twice is refused when asked
        // for (`sample_columns`), never resolved to whichever came last.
        let mut sample_column = HashMap::new();
        let mut repeated = HashMap::new();
        for (i, s) in samples.iter().enumerate() {
            if let Some(&first) = sample_column.get(s) {
                repeated.entry(s.clone()).or_insert((first, i as u64));
            } else {
                sample_column.insert(s.clone(), i as u64);
            }
        }
        Ok(Store {
            group,
            samples,
            contigs,
            sample_column,
            repeated,
        })
    }

    /// The array called `name`.
    pub fn array(&self, name: &str) -> Result<Arc<AnyArray>> {
        self.group.array(name).cloned().ok_or_else(|| {
            Error::Usage(format!(
                "{}: no array {name} (arrays: {})",
                self.group.root.display(),
                self.group
                    .arrays
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    /// The group underneath: every array's layout and the root attributes.
    pub fn group(&self) -> &AnyGroup {
        &self.group
    }

    pub fn sample_names(&self) -> &[String] {
        &self.samples
    }

    pub fn contig_names(&self) -> &[String] {
        &self.contigs
    }

    /// Sample columns of `names`, in the order given. A name `sample_id` lists more
    /// than once is refused: which column it means cannot be told (a VCF names each
    /// sample once; the store's `sample_id` was edited or made by another tool).
    pub fn sample_columns(&self, names: &[&str]) -> Result<Vec<u64>> {
        names
            .iter()
            .map(|n| {
                let Some(&c) = self.sample_column.get(*n) else {
                    return Err(Error::Usage(format!(
                        "{}: no sample {n}",
                        self.group.root.display()
                    )));
                };
                if let Some(&(first, again)) = self.repeated.get(*n) {
                    return Err(Error::Usage(format!(
                        "{}: sample {n} is listed twice in sample_id (columns {first} and \
                         {again}): which one is meant cannot be told; ask for it by column, \
                         or give the store's samples distinct names",
                        self.group.root.display(),
                    )));
                }
                Ok(c)
            })
            .collect()
    }

    /// Variant rows on `contig` overlapping positions `[start, end]` (1-based,
    /// inclusive; a record overlaps from its position to position + length − 1, as
    /// `bcftools view -r` selects), in store order.
    pub fn locate(&self, contig: &str, start: i64, end: i64) -> Result<Vec<u64>> {
        let c = self
            .contigs
            .iter()
            .position(|x| x == contig)
            .ok_or_else(|| {
                Error::Usage(format!("{}: no contig {contig}", self.group.root.display()))
            })? as i64;
        if self.contigs[c as usize + 1..].iter().any(|x| x == contig) {
            return Err(Error::Usage(format!(
                "{}: contig {contig} is listed twice in contig_id: which records are on it \
                 cannot be told; the store's metadata is damaged (restore it from a copy or \
                 convert again)",
                self.group.root.display()
            )));
        }
        let get = |n: &str| self.array(n);
        let (vcontig, vpos, vlen) = (
            get("variant_contig")?,
            get("variant_position")?,
            get("variant_length")?,
        );
        let n = vpos.shape()[0];
        let vc = vpos.chunk_shape()[0].max(1);
        // Candidate chunks from the region index, else every chunk.
        let chunks: Vec<u64> = match self.group.array("region_index") {
            Some(ri) if ri.shape().len() == 2 && ri.shape()[1] == 6 => {
                let rows = ri.read_rows_i64(0, ri.shape()[0])?;
                let chunks = n.div_ceil(vc);
                let mut ks = Vec::new();
                for r in rows
                    .chunks_exact(6)
                    .filter(|r| r[1] == c && r[2] <= end && r[4] >= start)
                {
                    match u64::try_from(r[0]).ok().filter(|&k| k < chunks) {
                        Some(k) => ks.push(k),
                        None => {
                            return Err(Error::Usage(format!(
                                "{}: region_index names variants chunk {}, but \
                                 variant_position has {chunks}: the index is damaged \
                                 (`svar2 verify` checks it; `svar2 rechunk` writes a copy \
                                 with it rebuilt)",
                                self.group.root.display(),
                                r[0]
                            )))
                        }
                    }
                }
                // Rows in any order find the records in store order.
                ks.sort_unstable();
                ks.dedup();
                ks
            }
            _ => (0..n.div_ceil(vc)).collect(),
        };
        let mut out = Vec::new();
        for k in chunks {
            let (r0, r1) = (k * vc, ((k + 1) * vc).min(n));
            if r0 >= r1 {
                continue;
            }
            let (cs, ps, ls) = (
                vcontig.read_rows_i64(r0, r1)?,
                vpos.read_rows_i64(r0, r1)?,
                vlen.read_rows_i64(r0, r1)?,
            );
            for i in 0..cs.len() {
                if cs[i] == c && ps[i] <= end && ps[i] + ls[i] > start {
                    out.push(r0 + i as u64);
                }
            }
        }
        Ok(out)
    }
}
