//! A conversion that writes only the later sample columns of a store whose earlier
//! columns exist already: `svar2 append`'s path when the new samples have the
//! store's sites. The input is the merge of the store's last sample-shard column with
//! the new samples; everything on the variants axis is written whole (it is small),
//! the per-sample arrays only from that column on, and the earlier columns' shard
//! files are linked in from the store before the store is finished. The result is
//! meant to be the bytes a conversion of every sample writes; the caller checks that
//! it is (the sites and per-sample layouts equal, the re-written old samples equal)
//! and writes the whole store otherwise.

use crate::arrays::{ArraySet, Geometry, Stats, Width};
use std::path::PathBuf;
use svar2_store::Dtype;
use svar2_vcf::columns::{Base, Source};
use svar2_vcf::ragged::{Batch, Column, Values};

/// What a conversion of the later columns needs to know of the store it extends.
#[derive(Debug, Clone)]
pub struct LaterColumns {
    /// The store whose earlier columns are kept (their shard files are linked).
    pub store: PathBuf,
    /// Names of the samples before the first column written: a whole number of
    /// sample shards.
    pub samples_before: Vec<String>,
    /// The store's geometry, kept exactly (not re-planned for the samples read).
    pub geometry: Geometry,
    /// The store's per-sample arrays' layouts (name, dtype, trailing width): the new
    /// columns are encoded under at least these, so the old ones stay valid.
    pub floor: Vec<(String, Dtype, Option<u32>)>,
    /// Allele counts of the samples before, per record, added to the AN and AC the
    /// merge counted from the samples it saw.
    pub counts: AlleleCounts,
    /// What checking the store read of its shard files (by key from its root), so
    /// the new version's record takes the linked files' chunk sums from here, not
    /// from a second read of every shard index.
    pub chunk_sums: svar2_store::written::Known,
}

impl LaterColumns {
    /// The first sample shard column written.
    pub(crate) fn first_shard(&self) -> u64 {
        self.samples_before.len() as u64 / self.geometry.samples_shard.max(1)
    }

    /// Widens `stats` so every per-sample array gets at least the store's layout.
    pub(crate) fn seed(&self, set: &ArraySet, stats: &mut Stats) {
        for spec in set.arrays.iter().filter(|a| a.per_sample) {
            let Some((_, dtype, width)) = self.floor.iter().find(|(n, ..)| *n == spec.name) else {
                continue;
            };
            let cs = &mut stats.columns[spec.column];
            if let Some(w) = width {
                match spec.width {
                    Width::Ploidy => stats.max_ploidy = stats.max_ploidy.max(*w),
                    Width::Scalar | Width::Fixed(_) => {}
                    _ => cs.max_width = cs.max_width.max(*w),
                }
            }
            let at_least = match (spec.base, dtype) {
                (Base::Int, Dtype::I16) => Some(i8::MAX as i64 + 1),
                (Base::Int, Dtype::I32) => Some(i16::MAX as i64 + 1),
                (Base::Int, Dtype::I64) => Some(i32::MAX as i64 + 1),
                (Base::Char, Dtype::Str) => Some(2),
                _ => None,
            };
            if let Some(v) = at_least.filter(|_| spec.source != Source::Contig) {
                cs.min = cs.min.min(v);
                cs.max = cs.max.max(v);
            }
        }
    }

    /// Adds the earlier samples' counts to the batch's INFO AN and AC (records the
    /// merge gave them: those with genotypes).
    pub(crate) fn add_counts(&self, set: &ArraySet, batch: &mut Batch) {
        for (name, an) in [("variant_AN", true), ("variant_AC", false)] {
            let Some(spec) = set.arrays.iter().find(|a| a.name == name && !a.per_sample) else {
                continue;
            };
            let col = &batch.columns[spec.column];
            let mut out = Column::new(&set.record.specs[spec.column], 1);
            for r in 0..col.len() {
                let w = col.widths[r] as usize;
                if w == 0 {
                    out.push_absent();
                    continue;
                }
                let start = col.starts[r];
                let mut vals: Vec<i64> =
                    (start..start + w).map(|i| int_at(&col.values, i)).collect();
                // (A record past the store's: the sites differ, and the caller
                // finds that and writes the whole store.)
                let record = batch.first as usize + r;
                let add = match self.counts.an.get(record) {
                    Some(n) if an => std::slice::from_ref(n),
                    Some(_) => self.counts.ac(record),
                    None => &[],
                };
                for (v, a) in vals.iter_mut().zip(add) {
                    // (−1/−2: missing or fill, left as they are.)
                    if *v >= 0 {
                        *v += *a as i64;
                    }
                }
                out.push_longs(&vals, w as u32);
            }
            batch.columns[spec.column] = out;
        }
    }
}

fn int_at(v: &Values, i: usize) -> i64 {
    match v {
        Values::Int16(v) => v[i] as i64,
        Values::Int(v) => v[i] as i64,
        Values::Long(v) => v[i],
        Values::Int8(v) => v[i] as i64,
        _ => unreachable!("an integer column"),
    }
}

/// Allele counts per record, as htslib's `bcf_calc_ac` counts genotypes: AN the
/// called alleles, AC each ALT allele's calls.
#[derive(Debug, Clone, Default)]
pub struct AlleleCounts {
    /// Per record: alleles called.
    pub an: Vec<u32>,
    /// Per record, `ac[ac_starts[r]..ac_starts[r + 1]]`: calls of ALT 1, 2, ….
    pub ac: Vec<u32>,
    pub ac_starts: Vec<usize>,
}

impl AlleleCounts {
    /// Record `r`'s ALT counts.
    pub fn ac(&self, r: usize) -> &[u32] {
        &self.ac[self.ac_starts[r]..self.ac_starts[r + 1]]
    }

    /// Appends a record's counts: `an` alleles called, `ac` calls of ALT 1, 2, ….
    pub fn push_record(&mut self, an: u32, ac: &[u32]) {
        if self.ac_starts.is_empty() {
            self.ac_starts.push(0);
        }
        self.an.push(an);
        self.ac.extend_from_slice(ac);
        self.ac_starts.push(self.ac.len());
    }

    /// Appends another run of records' counts.
    pub fn extend(&mut self, o: &AlleleCounts) {
        if self.ac_starts.is_empty() {
            self.ac_starts.push(0);
        }
        let base = self.ac.len();
        self.an.extend_from_slice(&o.an);
        self.ac.extend_from_slice(&o.ac);
        self.ac_starts
            .extend(o.ac_starts.iter().skip(1).map(|s| s + base));
    }

    pub fn records(&self) -> usize {
        self.an.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_records_join() {
        let mut c = AlleleCounts::default();
        c.push_record(3, &[1, 1]);
        c.push_record(3, &[2]);
        let mut d = AlleleCounts::default();
        d.extend(&c);
        d.extend(&c);
        assert_eq!(d.records(), 4);
        assert_eq!(d.ac(0), &[1, 1]);
        assert_eq!(d.ac(3), &[2]);
        assert_eq!(d.an, vec![3, 3, 3, 3]);
    }
}
