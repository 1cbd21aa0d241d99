//! `svar2 verify`: every shard index and chunk checksum of a store checked; damaged
//! chunks named with the records and samples they hold; exit 1 if any.

use crate::output::{out, out_json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path (any VCF Zarr store; svar2's carry a
    /// crc32c per chunk).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// Print the report as JSON, for scripts.
    #[arg(long)]
    json: bool,
    /// Threads that only read.
    #[arg(long, default_value_t = 4, value_parser = crate::flags::io_threads_arg)]
    io_threads: usize,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let store = svar2_zarr::AnyGroup::open(&a.store)?;
    let threads = svar2_planner::host::Host::system().cores().usable;
    let reader = svar2_reader::Reader::new(threads, a.io_threads)?;
    let report = verify(&store, &reader)?;
    if a.json {
        out_json(&report);
    } else {
        out(&report.render());
    }
    if !report.damaged.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

// The check itself: every chunk read and decoded on the reader's pool, damage named
// with the records and samples it holds.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use svar2_reader::Reader;
use svar2_storage::stored::Stored;
use svar2_store::written::ChunkSum;
use svar2_zarr::{AnyArray, AnyGroup};

/// One damaged chunk (or shard index) and what it holds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Damage {
    pub array: String,
    /// The chunk key (a sharded array's: its shard's key and the inner chunk).
    pub key: String,
    /// The file its bytes are in.
    pub file: String,
    /// The records (variant rows, 0-based, end exclusive) the chunk covers, for
    /// arrays with a variants axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variants: Option<[u64; 2]>,
    /// The samples (columns, 0-based, end exclusive), for arrays with a samples axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<[u64; 2]>,
    pub error: String,
}

/// What was checked of one array.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArrayCheck {
    pub name: String,
    /// Chunks of the array's grid (stored or not).
    pub chunks: u64,
    /// Chunks stored (read, checked, decoded).
    pub stored: u64,
    /// Whether its chunks carry a crc32c.
    pub checksums: bool,
    pub damaged: u64,
}

/// The whole check.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub store: String,
    pub arrays: Vec<ArrayCheck>,
    pub chunks_checked: u64,
    pub bytes_read: u64,
    pub seconds: f64,
    pub damaged: Vec<Damage>,
}

/// Checks every array of `store` (opened without reading a value, so a damaged
/// sample list is reported like any other chunk).
pub fn verify(store: &AnyGroup, reader: &Reader) -> svar2_reader::Result<Report> {
    let t0 = Instant::now();
    let read0 = reader.counters.bytes_read.load(Ordering::Relaxed);
    let mut arrays = Vec::new();
    let mut damaged = Vec::new();
    for a in &store.arrays {
        let (check, mut found) = verify_array(reader, a)?;
        arrays.push(check);
        damaged.append(&mut found);
    }
    // Chunks that read are checked; whether the region index still finds every record
    // is a check of its own (it is only read whole, by `-r`).
    damaged.extend(check_region_index(store));
    // Values every reader relies on: records in order on their contigs, on contigs
    // the store lists, and samples named once.
    damaged.extend(check_records(store));
    damaged.extend(check_names(store));
    // Objects with a check of their own (a zip's entries: CRC-32), for chunks that
    // carry none.
    if let Some(first) = store.arrays.first() {
        let storage = first.storage();
        for (key, error) in storage.damaged_objects()? {
            damaged.push(Damage {
                array: key.split('/').next().unwrap_or_default().to_string(),
                file: storage.name(&key).display().to_string(),
                key,
                variants: None,
                samples: None,
                error,
            });
        }
    }
    Ok(Report {
        store: store.root.display().to_string(),
        chunks_checked: arrays.iter().map(|a| a.stored).sum(),
        arrays,
        bytes_read: reader.counters.bytes_read.load(Ordering::Relaxed) - read0,
        seconds: t0.elapsed().as_secs_f64(),
        damaged,
    })
}

/// The records and samples chunk `idx` of `a` covers.
fn coverage(a: &AnyArray, idx: &[u64]) -> (Option<[u64; 2]>, Option<[u64; 2]>) {
    if idx.is_empty() {
        return (None, None);
    }
    let chunk = a.chunk_shape();
    let shape = a.shape();
    let span = |d: usize| {
        let lo = idx[d] * chunk[d];
        [lo, (lo + chunk[d]).min(shape[d])]
    };
    let dims = &a.layout.dimension_names;
    let v = dims.iter().position(|d| d == "variants");
    let s = dims.iter().position(|d| d == "samples");
    (v.map(span), s.map(span))
}

/// Why `a`'s chunk grid is past walking, if it is: more than 2^32 chunks, over a
/// thousand times what its stored files can hold (an axis edited to 2^32 made verify
/// walk 10^11 indices of chunks that are fill). A real store's grid is filled.
fn beyond_the_files(a: &AnyArray, chunk: &[u64]) -> Option<String> {
    let shape = a.shape();
    let total = shape.iter().zip(chunk).try_fold(1u128, |n, (s, c)| {
        Some(n.saturating_mul(u128::from(s.div_ceil(*c.max(&1)))))
    })?;
    let per_file: u128 = match &a.layout.shard {
        Some(shard) => shard
            .iter()
            .zip(chunk)
            .map(|(s, c)| u128::from(s.div_ceil(*c.max(&1))))
            .product(),
        None => 1,
    };
    let can = u128::from(a.layout.files.max(1)).saturating_mul(per_file);
    (total > 1 << 32 && total > can.saturating_mul(1024)).then(|| {
        format!(
            "its shape {shape:?} makes {total} chunks, and its {} stored file(s) hold at \
             most {can}: its zarr.json is damaged (an axis edited past the data); restore \
             it from a copy or convert again",
            a.layout.files
        )
    })
}

fn verify_array(
    reader: &Reader,
    a: &Arc<AnyArray>,
) -> svar2_reader::Result<(ArrayCheck, Vec<Damage>)> {
    let chunk = a.chunk_shape();
    let shape = a.shape().to_vec();
    let stored = AtomicU64::new(0);
    // The stored chunks' fingerprint, summed as they are met (in any order).
    let sum = AtomicU64::new(0);
    let found = Mutex::new(Vec::new());
    let damage = |idx: &[u64], e: String| {
        let (variants, samples) = coverage(a, idx);
        let key = a.key(idx);
        // The message leads with the key already: keep what follows.
        let error = e
            .strip_prefix(&format!("{key}: "))
            .map_or(e.clone(), str::to_string);
        found.lock().expect("damage list").push(Damage {
            array: a.name.clone(),
            key,
            file: a.chunk_file(idx).display().to_string(),
            variants,
            samples,
            error,
        });
    };
    let visit = |idx: &[u64], r: svar2_store::Result<Option<Stored>>, dec: &mut _, buf: &mut _| {
        let bytes = match r {
            Ok(Some(b)) => b,
            Ok(None) => return,
            Err(e) => return damage(idx, e.to_string()),
        };
        stored.fetch_add(1, Ordering::Relaxed);
        let mut term = ChunkSum::default();
        let (shard, inner) = a.chunk_place(idx);
        term.add(&shard, inner, &bytes);
        sum.fetch_add(term.0, Ordering::Relaxed);
        let checked = if a.dtype.size().is_some() {
            a.decode_into(idx, Some(&bytes), dec, buf, None)
        } else {
            a.decode(idx, Some(&bytes)).map(|_| ())
        };
        if let Err(e) = checked {
            damage(idx, e.to_string());
        }
    };
    // Slabs of whole chunk rows along the first axis, so the list of chunk indices in
    // memory stays small whatever the store's size.
    let mut total = 0u64;
    if shape.is_empty() {
        // A 0-dimensional array: one chunk.
        total = 1;
        reader.visit_chunks(a, &[Vec::new()], &visit)?;
    } else if let Some(msg) = beyond_the_files(a, &chunk) {
        // A grid no walk ends: one line for the array, not 10^12 chunk indices.
        found.lock().expect("damage list").push(Damage {
            array: a.name.clone(),
            key: format!("{}/c", a.name),
            file: a.storage().name(&a.name).display().to_string(),
            variants: None,
            samples: None,
            error: msg,
        });
    } else if !shape.contains(&0) && !chunk.contains(&0) {
        // Chunk indices in C order, at most SLAB at a time: a row of chunks can be
        // more than memory holds when metadata is damaged (an axis of 10^10).
        const SLAB: usize = 65_536;
        let grid: Vec<u64> = shape
            .iter()
            .zip(&chunk)
            .map(|(n, c)| n.div_ceil(*c))
            .collect();
        let mut at = vec![0u64; grid.len()];
        let mut slab = Vec::with_capacity(SLAB);
        'all: loop {
            slab.push(at.clone());
            // The next index (the last axis fastest).
            let mut d = grid.len();
            loop {
                if d == 0 {
                    break 'all;
                }
                d -= 1;
                at[d] += 1;
                if at[d] < grid[d] {
                    break;
                }
                at[d] = 0;
            }
            if slab.len() == SLAB {
                total += slab.len() as u64;
                reader.visit_chunks(a, &slab, &visit)?;
                slab.clear();
            }
        }
        total += slab.len() as u64;
        reader.visit_chunks(a, &slab, &visit)?;
    }
    let mut found = found.into_inner().expect("damage list");
    // Shards that each pass their checksums but are not the ones written where they lie
    // (swapped, or copied in from another conversion): the record's sizes say so. (A
    // missing shard changes them too, and is named already.)
    let missing = found.iter().any(|d| d.error.contains("missing shard"));
    if !missing && a.shards_moved()? {
        found.push(whole_array(
            a,
            "its shard files are not the ones svar2 wrote there (their sizes differ from \
             the store's shard record: shards swapped or moved, or copied over from another \
             shard or conversion)",
        ));
    }
    // Every chunk passed its checksum and every shard is there, yet the chunks are not
    // the ones svar2 stored where they lie: shards of one size swapped or copied over,
    // or an index entry made "not stored" (its chunk read as fill) with its checksum
    // made again. The record's fingerprint of the chunks says so.
    let mismatch = found.is_empty() && a.chunks_match(ChunkSum(sum.into_inner()))? == Some(false);
    if mismatch {
        found.push(whole_array(
            a,
            "its chunks are not the ones svar2 stored there (each passes its checksum, but \
             the store's record of the chunks differs: shards swapped or copied over, or a \
             shard index edited)",
        ));
    }
    // A damaged shard index fails every chunk of its shard alike: one line for it.
    found.sort_by(|x, y| (&x.file, x.variants, x.samples).cmp(&(&y.file, y.variants, y.samples)));
    let mut merged: Vec<Damage> = Vec::new();
    for d in found {
        match merged.last_mut() {
            Some(m)
                if m.file == d.file
                    && m.error == d.error
                    && (d.error.contains("shard index") || d.error.contains("missing shard")) =>
            {
                if let (Some(mv), Some(dv)) = (&mut m.variants, d.variants) {
                    mv[1] = mv[1].max(dv[1]);
                }
                if let (Some(ms), Some(ds)) = (&mut m.samples, d.samples) {
                    ms[1] = ms[1].max(ds[1]);
                }
                m.key = m.key.split(" (inner").next().unwrap_or(&m.key).to_string();
            }
            _ => merged.push(d),
        }
    }
    let check = ArrayCheck {
        name: a.name.clone(),
        chunks: total,
        stored: stored.into_inner(),
        checksums: a.has_checksums(),
        damaged: merged.len() as u64,
    };
    Ok((check, merged))
}

/// Damage of array `a` as a whole (which of its shards, the record cannot say): `why`,
/// then how to restore it, or to keep values another writer rewrote on purpose.
fn whole_array(a: &AnyArray, why: &str) -> Damage {
    let shape = a.shape();
    Damage {
        array: a.name.clone(),
        key: format!("{}/c", a.name),
        file: a.storage().name(&a.name).display().to_string(),
        variants: a
            .layout
            .dimension_names
            .iter()
            .position(|d| d == "variants")
            .map(|v| [0, shape[v]]),
        samples: None,
        error: format!(
            "{why}: restore the array from a copy or convert again (values another writer \
             rewrote in place on purpose: remove the array's entry from \
             attributes.svar2.shards in the root zarr.json)"
        ),
    }
}

/// Whether `region_index` still finds every record: each record of variants chunk `k`
/// (`variant_position`'s chunks, as the reader locates them) must lie inside a row of
/// chunk `k` and its contig — first position at or before it, largest end at or after
/// its end — or `-r` misses it; every row must name a chunk there is. One damage per
/// chunk at most; nothing when the index or the arrays it is checked against do not
/// read (those chunks are reported already) or the store has no index.
fn check_region_index(store: &AnyGroup) -> Vec<Damage> {
    let arrays = (
        store.array("region_index"),
        store.array("variant_contig"),
        store.array("variant_position"),
        store.array("variant_length"),
    );
    let (Some(ri), Some(vc), Some(vp), Some(vl)) = arrays else {
        return Vec::new();
    };
    if ri.shape().len() != 2 || ri.shape()[1] != 6 {
        return Vec::new();
    }
    let Ok(rows) = ri.read_rows_i64(0, ri.shape()[0]) else {
        return Vec::new();
    };
    let n = vp.shape()[0];
    let per = vp.chunk_shape()[0].max(1);
    let chunks = n.div_ceil(per);
    let file = ri.chunk_file(&[0, 0]).display().to_string();
    let damage = |variants: [u64; 2], error: String| Damage {
        array: "region_index".into(),
        key: "region_index".into(),
        file: file.clone(),
        variants: Some(variants),
        samples: None,
        error,
    };
    let mut out = Vec::new();
    // (chunk, contig) -> (smallest first position, largest end) over its rows.
    let mut spans: std::collections::HashMap<(u64, i64), (i64, i64)> = Default::default();
    for (i, r) in rows.chunks_exact(6).enumerate() {
        match u64::try_from(r[0]).ok().filter(|&k| k < chunks) {
            Some(k) => {
                let s = spans.entry((k, r[1])).or_insert((r[2], r[4]));
                *s = (s.0.min(r[2]), s.1.max(r[4]));
            }
            None if out.is_empty() => out.push(damage(
                [0, 0],
                format!(
                    "row {i} names variants chunk {}, but variant_position has {chunks}; \
                     `svar2 rechunk` writes a copy with the index rebuilt",
                    r[0]
                ),
            )),
            None => {}
        }
    }
    const SLAB: u64 = 64;
    for k0 in (0..chunks).step_by(SLAB as usize) {
        let (r0, r1) = (k0 * per, ((k0 + SLAB) * per).min(n));
        let read = (
            vc.read_rows_i64(r0, r1),
            vp.read_rows_i64(r0, r1),
            vl.read_rows_i64(r0, r1),
        );
        let (Ok(cs), Ok(ps), Ok(ls)) = read else {
            return out;
        };
        let mut flagged = None;
        for i in 0..cs.len().min(ps.len()).min(ls.len()) {
            let row = r0 + i as u64;
            let k = row / per;
            if flagged == Some(k) {
                continue;
            }
            let end = ps[i].saturating_add(ls[i]).saturating_sub(1);
            let found = spans
                .get(&(k, cs[i]))
                .is_some_and(|&(first, last)| first <= ps[i] && last >= end);
            if !found {
                flagged = Some(k);
                out.push(damage(
                    [k * per, ((k + 1) * per).min(n)],
                    format!(
                        "no row of variants chunk {k} covers record {row} (contig {}, position \
                         {}): `-r` would miss it; `svar2 rechunk` writes a copy with the \
                         index rebuilt",
                        cs[i], ps[i]
                    ),
                ));
            }
        }
    }
    out
}

/// Records on contigs `contig_id` lists, in position order within each contig (a
/// record out of place is one `-r`/`region` reads never find, or print out of order).
/// Read a slab of chunks at a time; the first fault of each kind is reported.
fn check_records(store: &AnyGroup) -> Vec<Damage> {
    let (Some(vc), Some(vp)) = (
        store.array("variant_contig"),
        store.array("variant_position"),
    ) else {
        return Vec::new();
    };
    let contigs = store
        .array("contig_id")
        .map_or(0, |a| a.shape().first().copied().unwrap_or(0));
    let n = vp.shape()[0].min(vc.shape()[0]);
    let per = vp.chunk_shape()[0].max(1);
    let damage = |a: &AnyArray, row: u64, error: String| {
        let k = row / per;
        Damage {
            array: a.name.clone(),
            key: a.name.clone(),
            file: a.chunk_file(&[k]).display().to_string(),
            variants: Some([k * per, ((k + 1) * per).min(n)]),
            samples: None,
            error,
        }
    };
    let mut out = Vec::new();
    let (mut out_of_range, mut out_of_order) = (false, false);
    let mut last: Option<(i64, i64)> = None;
    const SLAB: u64 = 64;
    let mut r0 = 0;
    while r0 < n && !(out_of_range && out_of_order) {
        let r1 = (r0 + SLAB * per).min(n);
        // (A chunk that does not read is reported with its array.)
        let (Ok(cs), Ok(ps)) = (vc.read_rows_i64(r0, r1), vp.read_rows_i64(r0, r1)) else {
            return out;
        };
        for (i, (&c, &p)) in cs.iter().zip(&ps).enumerate() {
            let row = r0 + i as u64;
            if !out_of_range && (c < 0 || c as u64 >= contigs) {
                out_of_range = true;
                out.push(damage(
                    vc,
                    row,
                    format!(
                        "record {row} names contig {c}, but contig_id lists {contigs}: \
                         readers print it as damage or leave it out"
                    ),
                ));
            }
            if let Some((lc, lp)) = last.filter(|&(lc, lp)| lc == c && p < lp) {
                if !out_of_order {
                    out_of_order = true;
                    out.push(damage(
                        vp,
                        row,
                        format!(
                            "record {row} is at position {p} after record {} at {lp} on \
                             contig {lc}: records out of order are missed by region reads",
                            row - 1
                        ),
                    ));
                }
            }
            last = Some((c, p));
        }
        r0 = r1;
    }
    out
}

/// A name `sample_id`, `contig_id` or `filter_id` lists twice (which column, records or
/// flags it names cannot be told; no VCF prints both), or one holding a tab or line
/// break (a header line no VCF reader takes).
fn check_names(store: &AnyGroup) -> Vec<Damage> {
    let mut out = Vec::new();
    for (list, what) in [
        ("sample_id", "sample"),
        ("contig_id", "contig"),
        ("filter_id", "filter"),
    ] {
        let Some(ids) = store.array(list) else {
            continue;
        };
        let Ok(names) = ids.read_strings() else {
            continue;
        };
        let per = ids.chunk_shape().first().copied().unwrap_or(1).max(1) as usize;
        let damage = |i: usize, error: String| Damage {
            array: ids.name.clone(),
            key: ids.name.clone(),
            file: ids.chunk_file(&[(i / per) as u64]).display().to_string(),
            variants: None,
            samples: (list == "sample_id").then_some([i as u64, i as u64 + 1]),
            error,
        };
        let mut seen = std::collections::HashMap::new();
        for (i, name) in names.iter().enumerate() {
            if name.contains(['\t', '\n', '\r']) {
                out.push(damage(
                    i,
                    format!(
                        "{what} {name:?} holds a tab or a line break: no VCF header can name it"
                    ),
                ));
                break;
            }
            if let Some(first) = seen.insert(name.as_str(), i) {
                out.push(damage(
                    i,
                    format!(
                        "{what} {name} is listed twice (entries {first} and {i}): asked for by \
                         name it cannot be told which is meant"
                    ),
                ));
                break;
            }
        }
    }
    out
}

impl Report {
    /// The report as people read it: one line per damaged chunk, then a summary.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for d in &self.damaged {
            // What the chunk holds, where the array has those axes.
            let records = d.variants.map(|[a, b]| format!("records {a}..{b}"));
            let samples = d.samples.map(|[a, b]| format!("samples {a}..{b}"));
            let holds: Vec<String> = [records, samples].into_iter().flatten().collect();
            let holds = match holds.is_empty() {
                true => String::new(),
                false => format!(": {}", holds.join(", ")),
            };
            let _ = writeln!(s, "DAMAGED {}{holds}: {}", d.key, d.error);
        }
        let with: Vec<&ArrayCheck> = self.arrays.iter().filter(|a| a.checksums).collect();
        let without: Vec<&str> = self
            .arrays
            .iter()
            .filter(|a| !a.checksums && a.stored > 0)
            .map(|a| a.name.as_str())
            .collect();
        let _ = writeln!(
            s,
            "{}: {} arrays, {} chunks checked ({:.1} MB read in {:.2} s); {} damaged",
            self.store,
            self.arrays.len(),
            self.chunks_checked,
            self.bytes_read as f64 / 1e6,
            self.seconds,
            self.damaged.len()
        );
        if !without.is_empty() {
            let _ = writeln!(
                s,
                "note: {} of {} arrays have no chunk checksums ({}{}): their index checksums, \
                 frame headers and decoded sizes were checked, but a flipped bit inside a \
                 compressed stream can go unseen; `svar2 rechunk` writes a copy with checksums",
                without.len(),
                self.arrays.len(),
                without
                    .iter()
                    .take(4)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                if without.len() > 4 { ", …" } else { "" }
            );
        } else if !with.is_empty() {
            let _ = writeln!(s, "every chunk carries a crc32c: each was checked");
        }
        s
    }
}
