//! The cheap append: when the new samples have the store's sites, only the sample
//! columns from the store's last sample-shard column on are written. That column's
//! old samples are printed (`svar2 view -s`) and merged with the new inputs; the
//! conversion writes the arrays on the variants axis whole (they are small) and the
//! per-sample arrays from that column on, links the earlier columns' shard files in
//! from the store, and counts AN/AC with the earlier samples' genotypes. Then it is
//! checked to be the store a conversion of every sample writes: the same sites, the
//! same per-sample layouts, the re-written old samples' values unchanged. Anything
//! else (new sites, a FORMAT field the store lacks, a wider field, a sample name the
//! store has) makes the caller write the whole store.

use crate::{io, AppendOptions, Error, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use svar2_convert::later::{AlleleCounts, LaterColumns};
use svar2_store::codec::Raw;
use svar2_store::grid::Geometry;
use svar2_zarr::AnyArray;

/// The store's last sample-shard column, as BCF.
pub(crate) const TAIL: &str = "tail.bcf";
pub(crate) const TAIL_INDEX: &str = "tail.bcf.csi";

/// What the same-sites path wrote.
pub(crate) struct Written {
    pub records: u64,
    pub samples_after: u64,
    /// Bytes of the files written (the rest are the store's, linked).
    pub bytes_written: u64,
    pub first_sample: u64,
}

/// The store appended to, checked ([`svar2_zarr::AnyGroup::check_shards_in_place`]).
pub(crate) struct Checked<'a> {
    pub path: &'a Path,
    pub opened: &'a svar2_reader::Store,
    /// What the check read of the store's shard files: the new version links those of
    /// the earlier columns, and its record takes their sums from here.
    pub chunk_sums: svar2_store::written::Known,
}

/// Writes the new version into `new` by the same-sites path; `None` when it does not
/// apply (said at `-v`), `new` then absent.
pub(crate) fn try_write(
    old: Checked,
    staging: &Path,
    new: &Path,
    inputs: &[PathBuf],
    o: &AppendOptions,
    threads: usize,
) -> Result<Option<Written>> {
    let Checked {
        path: store,
        opened,
        chunk_sums,
    } = old;
    let skip = |why: &str| {
        tracing::info!("append: {why}: the whole store is written again");
        Ok(None)
    };
    let Some(geometry) = recorded_geometry(opened) else {
        return skip("the store records no svar2 layout");
    };
    let names = opened.sample_names();
    let before = names.len() as u64;
    let ss = geometry.samples_shard.max(1);
    if before <= ss || geometry.samples_chunk == 0 || ss % geometry.samples_chunk != 0 {
        return skip("the store's samples are in one sample-shard column");
    }
    // The last column is always written again: its old samples carry, into the merge,
    // which FORMAT fields each record has (a field new to a record would change every
    // old sample's cells, and is seen there).
    let first = (before - 1) / ss * ss;
    let t0 = std::time::Instant::now();
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let (counts, unphased) = earlier_counts(opened, first, &reader)?;
    if let Some(r) = unphased {
        return skip(&format!(
            "record {r}: a sample before {first} has a phased call with a missing allele, \
             which the merge makes unphased"
        ));
    }
    tracing::info!(
        "append: alleles of samples 0..{first} counted ({:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    let kept = kept_fields(opened, first, &reader)?;
    let tail = staging.join(TAIL);
    crate::export(
        opened,
        &reader,
        &tail,
        Some((first..before).collect()),
        Some(Arc::new(kept)),
        threads,
    )?;
    tracing::info!(
        "append: samples {first}..{before} of the store printed ({:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    let later = Arc::new(LaterColumns {
        store: store.to_path_buf(),
        samples_before: names[..first as usize].to_vec(),
        geometry,
        floor: per_sample_layouts(opened),
        counts,
        chunk_sums,
    });
    let mut all = vec![tail.clone()];
    all.extend(inputs.iter().cloned());
    let options = crate::convert_options(opened, before, o, Some(geometry));
    let summary = svar2_convert::convert::convert_later_columns(&all, new, &options, later)
        .map_err(|e| crate::name_store(e, &tail, store))?;
    let _ = std::fs::remove_file(&tail);
    let _ = std::fs::remove_file(staging.join(TAIL_INDEX));
    tracing::info!(
        "append: sample columns {first}.. written ({:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    let written = svar2_reader::Store::open_with(new, svar2_reader::store::Access::Stream)?;
    if let Some(why) = differs(opened, &written, first, &reader)? {
        drop(written);
        std::fs::remove_dir_all(new).map_err(io(new))?;
        return skip(&why);
    }
    tracing::info!(
        "append: the new samples have the store's sites; checked ({:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    let after = written.sample_names().len() as u64;
    Ok(Some(Written {
        records: summary.records,
        samples_after: after,
        bytes_written: crate::tree_bytes(new, true),
        first_sample: first,
    }))
}

/// The geometry svar2 recorded when it wrote the store.
fn recorded_geometry(store: &svar2_reader::Store) -> Option<Geometry> {
    let l = store.group().attributes.get("svar2")?.get("layout")?;
    serde_json::from_value(l.clone()).ok()
}

/// Whether an array is on the (variants, samples) axes.
fn per_sample(a: &AnyArray) -> bool {
    let d = &a.layout.dimension_names;
    d.len() >= 2 && d[0] == "variants" && d[1] == "samples"
}

fn per_sample_layouts(
    store: &svar2_reader::Store,
) -> Vec<(String, svar2_store::Dtype, Option<u32>)> {
    store
        .group()
        .arrays
        .iter()
        .filter(|a| per_sample(a))
        .map(|a| (a.name.clone(), a.dtype, a.shape().get(2).map(|&w| w as u32)))
        .collect()
}

/// AN and AC of samples `[0, first)`, per record, from `call_genotype` (empty when
/// the store has none); and a record, if any, where one of them has a phased call
/// with a missing allele (`1|.`), which the merge makes unphased (htslib keeps no
/// phase on a missing allele it writes): a merge of every sample would change it.
fn earlier_counts(
    store: &svar2_reader::Store,
    first: u64,
    reader: &svar2_reader::Reader,
) -> Result<(AlleleCounts, Option<u64>)> {
    let Some(gt) = store.group().array("call_genotype").cloned() else {
        return Ok((AlleleCounts::default(), None));
    };
    let phased = store.group().array("call_genotype_phased").cloned();
    let shape = gt.shape().to_vec();
    let inner = gt.chunk_shape();
    let (n, vc, sc) = (shape[0], inner[0].max(1), inner[1].max(1));
    let ploidy = shape.get(2).copied().unwrap_or(1) as usize;
    let e = gt.dtype.size().unwrap_or(1);
    let rows: Vec<u64> = (0..n.div_ceil(vc)).collect();
    type Part = (AlleleCounts, Option<u64>);
    let parts: Vec<Result<Part>> = reader.install(|| {
        rows.par_iter()
            .map(|&vi| {
                let records = (n - vi * vc).min(vc) as usize;
                let mut an = vec![0u32; records];
                let mut ac: Vec<Vec<u32>> = vec![Vec::new(); records];
                let mut unphased = None;
                for si in 0..first / sc {
                    let mut idx = vec![vi, si];
                    if shape.len() == 3 {
                        idx.push(0);
                    }
                    let stored = gt.read(&idx)?;
                    let Raw::Fixed(bytes) = gt.decode(&idx, stored.as_deref())? else {
                        return Err(Error::Request("call_genotype is not integers".into()));
                    };
                    let flags = match &phased {
                        Some(p) => match p.decode(&idx[..2], p.read(&idx[..2])?.as_deref())? {
                            Raw::Fixed(f) => f,
                            Raw::Strings { .. } => Vec::new(),
                        },
                        None => Vec::new(),
                    };
                    let per_record = sc as usize * ploidy;
                    for (r, calls) in bytes.chunks(per_record * e).take(records).enumerate() {
                        for (s, call) in calls.chunks(ploidy * e).enumerate() {
                            let mut missing = false;
                            for g in call.chunks(e).map(int_le) {
                                missing |= g == -1;
                                if g < 0 {
                                    continue;
                                }
                                an[r] += 1;
                                if g >= 1 {
                                    let counts = &mut ac[r];
                                    if counts.len() < g as usize {
                                        counts.resize(g as usize, 0);
                                    }
                                    counts[g as usize - 1] += 1;
                                }
                            }
                            let is_phased = flags.get(r * sc as usize + s).is_some_and(|&f| f != 0);
                            if missing && is_phased && unphased.is_none() {
                                unphased = Some(vi * vc + r as u64);
                            }
                        }
                    }
                }
                let mut c = AlleleCounts::default();
                for (n, counts) in an.iter().zip(&ac) {
                    c.push_record(*n, counts);
                }
                Ok((c, unphased))
            })
            .collect()
    });
    let mut all = AlleleCounts::default();
    let mut unphased = None;
    for p in parts {
        let (c, u) = p?;
        all.extend(&c);
        unphased = unphased.or(u);
    }
    Ok((all, unphased))
}

fn int_le(b: &[u8]) -> i64 {
    match b.len() {
        1 => b[0] as i8 as i64,
        2 => i16::from_le_bytes([b[0], b[1]]) as i64,
        4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
        _ => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
    }
}

/// Why the new version is not the store a conversion of every sample writes, if it
/// is not: `None` when the sites, the per-sample arrays and the samples `[first,
/// old count)` are the store's.
fn differs(
    old: &svar2_reader::Store,
    new: &svar2_reader::Store,
    first: u64,
    reader: &svar2_reader::Reader,
) -> Result<Option<String>> {
    let before = old.sample_names().len() as u64;
    let (old_root, new_root) = (&old.group().root, &new.group().root);
    for site in [
        "variant_contig",
        "variant_position",
        "variant_allele",
        "contig_id",
    ] {
        if !same_tree(&old_root.join(site), &new_root.join(site)) {
            return Ok(Some(format!(
                "the new samples' sites are not the store's ({site})"
            )));
        }
    }
    let names = new.sample_names();
    if names[..before as usize] != *old.sample_names()
        || names[before as usize..]
            .iter()
            .any(|n| old.sample_names().contains(n))
    {
        return Ok(Some("a new sample's name is the store's".into()));
    }
    let olds: Vec<_> = old
        .group()
        .arrays
        .iter()
        .filter(|a| per_sample(a))
        .collect();
    let news: Vec<_> = new
        .group()
        .arrays
        .iter()
        .filter(|a| per_sample(a))
        .collect();
    if olds.len() != news.len() {
        return Ok(Some(
            "the new samples have FORMAT fields the store lacks".into(),
        ));
    }
    for a in olds {
        let meta = |root: &Path| -> Option<String> {
            let text = std::fs::read(root.join(&a.name).join("zarr.json")).ok()?;
            let mut v = svar2_store::json::parse(&text).ok()?;
            *v.get_mut("shape")?.get_mut(1)? = before.into();
            // (Attributes, and the empty `storage_transformers` zarr-python adds when it
            // writes them, say nothing of the shards the new version links: a user's
            // are carried over afterwards.)
            Some(svar2_store::written::structure(v.to_string().as_bytes()))
        };
        let (Some(m_old), Some(m_new)) = (meta(old_root), meta(new_root)) else {
            return Ok(Some(format!("{} is not in both versions", a.name)));
        };
        if m_old != m_new {
            return Ok(Some(format!("{} needs another type or width", a.name)));
        }
        let b = new.array(&a.name)?;
        if !same_columns(a, &b, first, before, reader)? {
            return Ok(Some(format!(
                "{}: the store's samples read otherwise once merged with the new ones",
                a.name
            )));
        }
        // (One value per call: an absent field's cells and a missing sample's are
        // the same, `.`.)
        let wide = a.shape().get(2).is_some_and(|&w| w > 1);
        if wide && !a.name.starts_with("call_genotype") && a.dtype != svar2_store::Dtype::Bool {
            if let Some(r) = lost_field(a, &b, first, reader)? {
                return Ok(Some(format!(
                    "{} at record {r}: only samples before {first} have it, so the \
                     merge of the rest left the field out",
                    a.name
                )));
            }
        }
    }
    Ok(None)
}

/// A record (if any) where some sample before `first` has the field `old` (a value,
/// or a missing one then the fill) and no sample from `first` on has it in `new`.
/// The store keeps a field absent from a record as missing values filling every
/// cell, so the last column's samples printed alone leave such a field out (unless
/// [`kept_fields`] kept it): merged without it, the new samples' cells would be the
/// absent field's, where a merge of every sample gives them the missing samples' (a
/// missing value, then the fill).
fn lost_field(
    old: &AnyArray,
    new: &AnyArray,
    first: u64,
    reader: &svar2_reader::Reader,
) -> Result<Option<u64>> {
    let (n, vc) = (new.shape()[0], new.chunk_shape()[0].max(1));
    let total = new.shape()[1];
    let rows: Vec<u64> = (0..n.div_ceil(vc)).collect();
    let found: Vec<Result<Option<u64>>> = reader.install(|| {
        rows.par_iter()
            .map(|&vi| {
                let later = rows_marked(new, vi, first, total)?;
                if later.iter().all(|&h| h) {
                    return Ok(None);
                }
                let earlier = rows_marked(old, vi, 0, first)?;
                Ok((0..later.len())
                    .find(|&r| earlier[r] && !later[r])
                    .map(|r| vi * vc + r as u64))
            })
            .collect()
    });
    for f in found {
        if let Some(r) = f? {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// The FORMAT fields to print in the last column's records although its samples have
/// no value there: where samples before `first` have the field (see
/// [`lost_field`]). Printed (missing, as stored), the merge gives the new samples a
/// missing sample's cells, as a merge of every sample does.
fn kept_fields(
    store: &svar2_reader::Store,
    first: u64,
    reader: &svar2_reader::Reader,
) -> Result<svar2_view::KeptFormat> {
    let before = store.sample_names().len() as u64;
    let mut kept = svar2_view::KeptFormat::default();
    for a in store.group().arrays.iter().filter(|a| per_sample(a)) {
        let Some(field) = a.name.strip_prefix("call_") else {
            continue;
        };
        if a.name.starts_with("call_genotype") || a.dtype == svar2_store::Dtype::Bool {
            continue;
        }
        let (n, vc) = (a.shape()[0], a.chunk_shape()[0].max(1));
        let rows: Vec<u64> = (0..n.div_ceil(vc)).collect();
        let found: Vec<Result<Vec<u64>>> = reader.install(|| {
            rows.par_iter()
                .map(|&vi| {
                    let last = rows_marked(a, vi, first, before)?;
                    if last.iter().all(|&h| h) {
                        return Ok(Vec::new());
                    }
                    let earlier = rows_marked(a, vi, 0, first)?;
                    Ok((0..last.len())
                        .filter(|&r| earlier[r] && !last[r])
                        .map(|r| vi * vc + r as u64)
                        .collect())
                })
                .collect()
        });
        for records in found {
            for r in records? {
                kept.keep(field, r, n);
            }
        }
    }
    Ok(kept)
}

/// Per record of inner-chunk row `vi`: whether some sample in `[lo, hi)` has the
/// array's field (see [`marks_field`]).
fn rows_marked(a: &AnyArray, vi: u64, lo: u64, hi: u64) -> Result<Vec<bool>> {
    let shape = a.shape();
    let inner = a.chunk_shape();
    let (n, vc, sc) = (shape[0], inner[0].max(1), inner[1].max(1));
    let cell = shape.get(2).copied().unwrap_or(1) as usize;
    let records = (n - vi * vc).min(vc) as usize;
    let mut marked = vec![false; records];
    for si in lo / sc..hi.div_ceil(sc) {
        let mut idx = vec![vi, si];
        if shape.len() == 3 {
            idx.push(0);
        }
        let raw = a.decode(&idx, a.read(&idx)?.as_deref())?;
        let from = lo.saturating_sub(si * sc) as usize;
        let to = (hi - si * sc).min(sc) as usize;
        for (r, m) in marked.iter_mut().enumerate() {
            *m = *m
                || (from..to)
                    .any(|s| marks_field(&raw, a.dtype, (r * sc as usize + s) * cell, cell));
        }
    }
    Ok(marked)
}

/// Whether cell `[at, at + cell)` is not every value missing — a value, or the fill
/// after the call's own values — which is what makes `svar2 view` print the field
/// (a field absent from a record is missing values filling every cell).
fn marks_field(raw: &Raw, dtype: svar2_store::Dtype, at: usize, cell: usize) -> bool {
    use svar2_store::Dtype as D;
    match raw {
        Raw::Strings { bytes, offsets } => (at..at + cell)
            .map(|i| &bytes[offsets[i]..offsets[i + 1]])
            .any(|s| s != b"."),
        Raw::Fixed(b) => {
            let e = dtype.size().unwrap_or(1);
            let missing = match dtype {
                D::F32 => 0x7F80_0001,
                D::Char => '.' as i64,
                _ => -1,
            };
            (at..at + cell)
                .map(|i| {
                    let x = &b[i * e..(i + 1) * e];
                    match dtype {
                        D::F32 | D::Char => u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as i64,
                        _ => int_le(x),
                    }
                })
                .any(|v| v != missing)
        }
    }
}

/// Whether samples `[first, end)` of two versions of an array hold the same values.
fn same_columns(
    a: &AnyArray,
    b: &AnyArray,
    first: u64,
    end: u64,
    reader: &svar2_reader::Reader,
) -> Result<bool> {
    let shape = a.shape().to_vec();
    let inner = a.chunk_shape();
    let (n, vc, sc) = (shape[0], inner[0].max(1), inner[1].max(1));
    let cell = shape.get(2).copied().unwrap_or(1) as usize;
    let e = a.dtype.size();
    let jobs: Vec<(u64, u64)> = (0..n.div_ceil(vc))
        .flat_map(|vi| (first / sc..end.div_ceil(sc)).map(move |si| (vi, si)))
        .collect();
    let same: Vec<Result<bool>> = reader.install(|| {
        jobs.par_iter()
            .map(|&(vi, si)| {
                let mut idx = vec![vi, si];
                if shape.len() == 3 {
                    idx.push(0);
                }
                let ra = a.decode(&idx, a.read(&idx)?.as_deref())?;
                let rb = b.decode(&idx, b.read(&idx)?.as_deref())?;
                let records = (n - vi * vc).min(vc) as usize;
                let samples = (end - si * sc).min(sc) as usize;
                for r in 0..records {
                    let i0 = r * sc as usize * cell;
                    let i1 = i0 + samples * cell;
                    let equal = match (&ra, &rb, e) {
                        (Raw::Fixed(x), Raw::Fixed(y), Some(e)) => {
                            x[i0 * e..i1 * e] == y[i0 * e..i1 * e]
                        }
                        (
                            Raw::Strings {
                                bytes: x,
                                offsets: ox,
                            },
                            Raw::Strings {
                                bytes: y,
                                offsets: oy,
                            },
                            None,
                        ) => (i0..i1).all(|i| x[ox[i]..ox[i + 1]] == y[oy[i]..oy[i + 1]]),
                        _ => false,
                    };
                    if !equal {
                        return Ok(false);
                    }
                }
                Ok(true)
            })
            .collect()
    });
    for s in same {
        if !s? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether two directories hold the same files with the same bytes (metadata: the
/// same [`structure`](svar2_store::written::structure)).
fn same_tree(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if ma.is_file() && mb.is_file() {
        // An array's metadata is the same whatever its attributes (a user's, carried
        // over after the new version is written) or key order.
        if a.file_name().is_some_and(|n| n == "zarr.json") {
            let structure = |p: &Path| {
                std::fs::read(p)
                    .ok()
                    .map(|b| svar2_store::written::structure(&b))
            };
            return structure(a) == structure(b);
        }
        return ma.len() == mb.len() && std::fs::read(a).ok() == std::fs::read(b).ok();
    }
    if !(ma.is_dir() && mb.is_dir()) {
        return false;
    }
    let list = |d: &Path| -> Option<Vec<std::ffi::OsString>> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .ok()?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<std::io::Result<_>>()
            .ok()?;
        v.sort();
        Some(v)
    };
    match (list(a), list(b)) {
        (Some(x), Some(y)) if x == y => x.iter().all(|n| same_tree(&a.join(n), &b.join(n))),
        _ => false,
    }
}
