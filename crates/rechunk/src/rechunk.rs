//! `svar2 rechunk`: any VCF Zarr store to svar2's layout — the same arrays, attributes
//! and values; inner chunks from the planner's geometry for the `--patch`; shards,
//! codecs, completion marker and lock exactly as `convert` writes them; `region_index`
//! rebuilt for the new variant chunks.
//!
//! Arrays go one at a time, tile by tile as [`svar2_planner::rechunk`] plans them to
//! fit `--max-mem`: IO threads only read source chunks, the rayon pool only decodes
//! and encodes, and a shard is written the moment its last inner chunk is encoded.

use crate::error::{Error, Result};
use crossbeam_channel::{bounded, unbounded};
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use svar2_planner::geometry::{amplification, requested_chunks, requested_shards};
use svar2_planner::host::{check_threads, resolve_budget, Host};
use svar2_planner::rechunk::{plan_rechunk, ArrayInput, RechunkPlan, Tiling};
use svar2_planner::{BudgetRequest, LayoutRequest};
use svar2_store::boxes::{blocks, copy_run, for_each_run};
use svar2_store::chain::{bitshuffle, BLOSC_BLOCKSIZE};
use svar2_store::codec::{InnerCodec, Raw};
use svar2_store::dir::StoreDir;
use svar2_store::grid::Geometry;
use svar2_store::metadata::ArrayMeta;
use svar2_store::{region, Dtype};
use svar2_zarr::{AnyArray, AnyGroup};

/// Genotype bytes per call the geometry rules size chunks by (diploid int8), as
/// `convert` passes them.
const CELL_BYTES: u64 = 2;

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The store layout asked for (the same request convert takes).
    pub layout: LayoutRequest,
    /// Memory and decode/encode threads (default: every usable core).
    pub budget: BudgetRequest,
    /// Threads that only read (default: 4; a network file system wants dozens).
    pub io_threads: Option<usize>,
    pub force: bool,
    /// A progress bar on a terminal.
    pub progress: bool,
}

/// The plan of a rechunk, as `--dry-run` prints it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RechunkReport {
    pub input: PathBuf,
    pub zarr_format: u8,
    pub samples: u64,
    pub variants: u64,
    pub geometry: Geometry,
    pub patch: Option<String>,
    /// Decode amplification of the `--patch` on the new layout.
    pub amplification: Option<f64>,
    pub budget_from: String,
    pub io_threads: usize,
    pub plan: RechunkPlan,
}

/// What a finished rechunk did.
#[derive(Debug, Clone)]
pub struct Summary {
    pub arrays: usize,
    pub decodes: u64,
    pub source_chunks: u64,
    pub store_bytes: u64,
    pub files: u64,
    pub seconds: f64,
}

/// One array to write: where it comes from and the metadata it gets.
struct Target {
    src: Arc<AnyArray>,
    meta: ArrayMeta,
    rows_axis: Option<usize>,
    columns_axis: Option<usize>,
}

/// A planned rechunk: the source opened, every array's target metadata and tiling.
struct Planned {
    source: AnyGroup,
    geometry: Geometry,
    targets: Vec<Target>,
    report: RechunkReport,
}

fn axis(dims: &[String], name: &str) -> Option<usize> {
    dims.iter().position(|d| d == name)
}

/// Decoded bytes per element the plan counts: exact for numbers; for strings an
/// offset plus the text, guessed from the stored bytes (text compresses ~4×).
fn element_bytes(a: &AnyArray) -> u64 {
    match a.dtype.size() {
        Some(n) => n as u64,
        None => {
            let n = a.shape().iter().product::<u64>().max(1);
            (8 + 4 * a.layout.stored_bytes / n).max(32)
        }
    }
}

/// Warns of each node of `source` whose attributes hold Python's NaN or Infinity:
/// JSON cannot, so the copy holds null there (as `append` warns).
fn warn_python_floats(source: &AnyGroup) {
    let Some(storage) = source.arrays.first().map(|a| a.storage()) else {
        return;
    };
    let nodes = std::iter::once(String::new()).chain(source.arrays.iter().map(|a| a.name.clone()));
    for node in nodes {
        let key = if node.is_empty() {
            "zarr.json".to_string()
        } else {
            format!("{node}/zarr.json")
        };
        if let Ok(Some(bytes)) = storage.get(&key) {
            if svar2_store::json::has_python_floats(&bytes) {
                tracing::warn!(
                    "rechunk: {}'s attributes hold NaN or Infinity, which JSON cannot: \
                     the copy holds null there",
                    if node.is_empty() { "the root" } else { &node }
                );
            }
        }
    }
}

fn plan(input: &Path, opts: &Options) -> Result<Planned> {
    let source = AnyGroup::open(input)?;
    source.check_shards_in_place()?;
    let samples = source
        .array("sample_id")
        .map_or(0, |a| a.shape().first().copied().unwrap_or(0));
    let variants = source
        .array("variant_position")
        .map_or(0, |a| a.shape().first().copied().unwrap_or(0));
    let chunks = requested_chunks(
        opts.layout.patch,
        opts.layout.max_amplification,
        samples,
        CELL_BYTES,
        &opts.layout.requested,
    );
    let (vs, ss) = requested_shards(chunks, samples, CELL_BYTES, &opts.layout.requested);
    let geometry = Geometry {
        variants_chunk: chunks.variants,
        samples_chunk: chunks.samples,
        variants_shard: vs,
        samples_shard: ss,
        zstd_level: opts.layout.zstd_level,
    };
    let mut targets = Vec::new();
    for a in &source.arrays {
        if a.name == "region_index" {
            continue; // rebuilt for the new variant chunks
        }
        let dims = a.layout.dimension_names.clone();
        let shape = a.shape().to_vec();
        let (shard, inner) = geometry.grid(&dims, &shape);
        let rows_axis = axis(&dims, "variants");
        let meta = ArrayMeta {
            shape,
            shard,
            inner,
            dimension_names: dims.clone(),
            dtype: a.dtype,
            bitshuffle: rows_axis.is_some()
                && bitshuffle(a.dtype == Dtype::Bool, a.name == "call_genotype"),
            level: opts.layout.zstd_level,
            attributes: a.attributes.clone(),
        };
        targets.push(Target {
            src: a.clone(),
            meta,
            rows_axis,
            columns_axis: axis(&dims, "samples"),
        });
    }
    let inputs: Vec<ArrayInput> = targets
        .iter()
        .map(|t| {
            let decoded = t.src.layout.decoded_bytes();
            ArrayInput {
                name: t.src.name.clone(),
                shape: t.meta.shape.clone(),
                source_chunk: t.src.chunk_shape(),
                target_shard: t.meta.shard.clone(),
                target_inner: t.meta.inner.clone(),
                element_bytes: element_bytes(&t.src),
                compression: match decoded {
                    Some(d) if d > 0 => {
                        (t.src.layout.stored_bytes as f64 / d as f64).clamp(0.01, 1.0)
                    }
                    _ => 0.5,
                },
                rows_axis: t.rows_axis,
                columns_axis: t.columns_axis,
            }
        })
        .collect();
    let host = Host::system();
    let (budget, budget_from) =
        resolve_budget(opts.budget.max_mem, host.memory_limit().as_ref()).map_err(Error::Usage)?;
    let threads = match opts.budget.threads {
        Some(n) => check_threads("threads", n, false).map_err(Error::Usage)?,
        None => host.cores().usable.max(1),
    };
    let io_threads = match opts.io_threads {
        Some(n) => check_threads("io_threads", n, true).map_err(Error::Usage)?,
        None => 4,
    };
    let rplan = plan_rechunk(&inputs, geometry.variants_chunk, threads, budget)
        .map_err(|e| Error::Usage(format!("{}: {e}", input.display())))?;
    let report = RechunkReport {
        input: input.into(),
        zarr_format: source.zarr_format,
        samples,
        variants,
        geometry,
        patch: opts
            .layout
            .patch
            .map(|p| format!("{}x{}", p.variants, p.samples)),
        amplification: opts
            .layout
            .patch
            .map(|p| amplification(p, geometry.variants_chunk, geometry.samples_chunk, samples)),
        budget_from,
        io_threads,
        plan: rplan,
    };
    Ok(Planned {
        source,
        geometry,
        targets,
        report,
    })
}

/// The plan alone (`svar2 rechunk --dry-run`): reads metadata, never a chunk.
pub fn dry_run(input: &Path, opts: &Options) -> Result<RechunkReport> {
    Ok(plan(input, opts)?.report)
}

/// Rechunks the store at `input` into a new store at `output`.
pub fn rechunk(input: &Path, output: &Path, opts: &Options) -> Result<Summary> {
    let t0 = Instant::now();
    svar2_store::replace::refuse_overlap(input, output, "input store")?;
    svar2_store::dir::check_output(output, opts.force)?;
    let planned = plan(input, opts)?;
    let r = &planned.report;
    tracing::info!(
        "rechunk plan: {}; predicted peak RSS {} of a {} budget; {} source chunks, {} \
         decodes",
        r.geometry,
        svar2_planner::size::human(r.plan.predicted_peak_rss),
        svar2_planner::size::human(r.plan.budget),
        r.plan.source_chunks,
        r.plan.decodes,
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(r.plan.threads)
        .thread_name(|i| format!("svar2-rechunk-{i}"))
        .build()
        .map_err(|e| Error::Usage(format!("cannot start threads: {e}")))?;
    let store = StoreDir::create(output, opts.force)?;
    let pb = progress_bar(opts.progress, r.plan.decodes);
    let mut codecs: HashMap<(Dtype, bool), Arc<InnerCodec>> = HashMap::new();
    for (t, tiling) in planned.targets.iter().zip(&r.plan.arrays) {
        let key = (t.meta.dtype, t.meta.bitshuffle);
        let codec = match codecs.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.get().clone(),
            std::collections::hash_map::Entry::Vacant(e) => e
                .insert(Arc::new(InnerCodec::new(
                    key.0,
                    key.1,
                    opts.layout.zstd_level,
                )?))
                .clone(),
        };
        let started = Instant::now();
        pb.set_message(t.src.name.clone());
        write_array(&store, t, tiling, &codec, &pool, r.io_threads, &pb)?;
        tracing::info!(
            array = %t.src.name,
            seconds = started.elapsed().as_secs_f64(),
            "rechunked"
        );
    }
    pb.finish_and_clear();
    write_region_index(&store, &planned, opts.layout.zstd_level)?;
    warn_python_floats(&planned.source);
    let mut attributes: Map<String, Value> = planned.source.attributes.clone();
    attributes.insert(
        "svar2".into(),
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "layout": planned.geometry,
            "blosc_blocksize": BLOSC_BLOCKSIZE,
            "rechunked_from": planned.source.attributes.get("source").cloned().unwrap_or(Value::Null),
        }),
    );
    // Written last: its presence is what marks the store complete.
    store.finish(&json!({"zarr_format": 3, "node_type": "group", "attributes": attributes}))?;
    // (A bucket's or zip's staging copy is removed with it: timed too.)
    drop(store);
    let (store_bytes, files) = svar2_store::dir::disk_usage(output);
    Ok(Summary {
        arrays: planned.targets.len() + 1,
        decodes: r.plan.decodes,
        source_chunks: r.plan.source_chunks,
        store_bytes,
        files,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// A bar over the source chunks to decode, hidden unless stderr is a terminal.
fn progress_bar(enabled: bool, decodes: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !enabled || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(decodes);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed} [{bar:40}] {human_pos}/{human_len} source chunks ({per_sec}, ETA {eta}) {msg}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb
}

/// Reads (IO threads) and decodes (the pool) the source chunks `wanted`.
fn fetch(
    a: &Arc<AnyArray>,
    wanted: Vec<Vec<u64>>,
    pool: &rayon::ThreadPool,
    io_threads: usize,
    pb: &indicatif::ProgressBar,
) -> Result<Vec<(Vec<u64>, Arc<Raw>)>> {
    let n = wanted.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let (job_tx, job_rx) = unbounded::<Vec<u64>>();
    for w in wanted {
        let _ = job_tx.send(w);
    }
    drop(job_tx);
    let threads = pool.current_num_threads().max(1);
    // Read-ahead is bounded: at most two encoded chunks per decoder wait.
    let (read_tx, read_rx) =
        bounded::<(Vec<u64>, Result<Option<svar2_storage::stored::Stored>>)>(2 * threads);
    let (permit_tx, permit_rx) = bounded::<()>(2 * threads);
    for _ in 0..2 * threads {
        let _ = permit_tx.send(());
    }
    let (done_tx, done_rx) = unbounded::<(Vec<u64>, Result<Raw>)>();
    let stop = AtomicBool::new(false);
    let mut first_err = None;
    std::thread::scope(|s| {
        for i in 0..io_threads.min(n) {
            let (job_rx, read_tx, stop) = (job_rx.clone(), read_tx.clone(), &stop);
            let io = std::thread::Builder::new().name(format!("rechunk-io-{i}"));
            let started = io.spawn_scoped(s, move || {
                for idx in job_rx {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = a.read(&idx).map_err(Error::from);
                    if read_tx.send((idx, r)).is_err() {
                        break;
                    }
                }
            });
            if let Err(e) = started {
                // The threads started so far read every source chunk.
                if i == 0 {
                    first_err.get_or_insert(Error::Usage(format!("cannot start a thread: {e}")));
                }
                break;
            }
        }
        drop(read_tx);
        for (idx, r) in read_rx.iter() {
            match r {
                Ok(stored) => {
                    let _ = permit_rx.recv();
                    let (a, done_tx, permit_tx) = (a.clone(), done_tx.clone(), permit_tx.clone());
                    pool.spawn(move || {
                        let d = a.decode(&idx, stored.as_deref()).map_err(Error::from);
                        let _ = done_tx.send((idx, d));
                        let _ = permit_tx.send(());
                    });
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_err.get_or_insert(e);
                }
            }
        }
    });
    drop(done_tx);
    let mut out = Vec::with_capacity(n);
    for (idx, d) in done_rx.iter() {
        pb.inc(1);
        match d {
            Ok(raw) => out.push((idx, Arc::new(raw))),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Builds the target inner chunk at `origin` (full inner shape, C order; positions
/// past the array's end hold the fill value, as convert writes them) from decoded
/// source chunks.
fn build_chunk(
    t: &Target,
    cache: &HashMap<Vec<u64>, Arc<Raw>>,
    src_chunk: &[u64],
    origin: &[u64],
) -> Raw {
    let shape = &t.meta.shape;
    let inner = &t.meta.inner;
    let hi: Vec<u64> = (0..shape.len())
        .map(|d| (origin[d] + inner[d]).min(shape[d]))
        .collect();
    let n: usize = inner.iter().product::<u64>() as usize;
    let sources = blocks(origin, &hi, src_chunk);
    match t.meta.dtype.size() {
        Some(e) => {
            let mut out = vec![0u8; n * e];
            for idx in &sources {
                let Some(src) = cache.get(idx) else { continue };
                let Raw::Fixed(sb) = src.as_ref() else {
                    continue;
                };
                let so: Vec<u64> = idx.iter().zip(src_chunk).map(|(i, c)| i * c).collect();
                let lo: Vec<u64> = origin.iter().zip(&so).map(|(a, b)| *a.max(b)).collect();
                let top: Vec<u64> = (0..shape.len())
                    .map(|d| hi[d].min(so[d] + src_chunk[d]))
                    .collect();
                for_each_run(&lo, &top, &so, src_chunk, origin, inner, |s, d, len| {
                    copy_run(&mut out[d * e..(d + len) * e], &sb[s * e..(s + len) * e]);
                });
            }
            Raw::Fixed(out)
        }
        None => {
            let mut parts: Vec<&[u8]> = vec![&[]; n];
            for idx in &sources {
                let Some(src) = cache.get(idx) else { continue };
                let Raw::Strings { bytes, offsets } = src.as_ref() else {
                    continue;
                };
                let so: Vec<u64> = idx.iter().zip(src_chunk).map(|(i, c)| i * c).collect();
                let lo: Vec<u64> = origin.iter().zip(&so).map(|(a, b)| *a.max(b)).collect();
                let top: Vec<u64> = (0..shape.len())
                    .map(|d| hi[d].min(so[d] + src_chunk[d]))
                    .collect();
                for_each_run(&lo, &top, &so, src_chunk, origin, inner, |s, d, len| {
                    for k in 0..len {
                        parts[d + k] = &bytes[offsets[s + k]..offsets[s + k + 1]];
                    }
                });
            }
            let mut bytes = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
            let mut offsets = Vec::with_capacity(n + 1);
            offsets.push(0);
            for p in parts {
                bytes.extend_from_slice(p);
                offsets.push(bytes.len());
            }
            Raw::Strings { bytes, offsets }
        }
    }
}

/// An inner chunk's index and its bytes (`None`: all fill, not stored).
type EncodedChunk = (Vec<u64>, Option<Vec<u8>>);

/// A shard whose inner chunks are being encoded.
struct OpenShard {
    chunks: Vec<Option<Vec<u8>>>,
    remaining: usize,
}

/// Inner chunks of the shard at `sidx` that lie inside the array.
fn chunks_inside(meta: &ArrayMeta, sidx: &[u64]) -> usize {
    (0..meta.shape.len())
        .map(|d| {
            let start = sidx[d] * meta.shard[d];
            let end = (start + meta.shard[d]).min(meta.shape[d]);
            end.saturating_sub(start).div_ceil(meta.inner[d]) as usize
        })
        .product()
}

fn write_array(
    store: &StoreDir,
    t: &Target,
    tiling: &Tiling,
    codec: &InnerCodec,
    pool: &rayon::ThreadPool,
    io_threads: usize,
    pb: &indicatif::ProgressBar,
) -> Result<()> {
    let name = &t.src.name;
    store.write_json(name, &t.meta.to_json())?;
    let shape = &t.meta.shape;
    let rank = shape.len();
    if shape.contains(&0) {
        return Ok(());
    }
    let src_chunk = t.src.chunk_shape();
    let (inner, shard) = (&t.meta.inner, &t.meta.shard);
    let per_shard: Vec<u64> = shard.iter().zip(inner).map(|(s, i)| s / i).collect();
    let mut open: HashMap<Vec<u64>, OpenShard> = HashMap::new();
    // Column groups (whole target shards along samples), then tiles down the rows.
    let groups: Vec<(u64, u64)> = match t.columns_axis {
        Some(c) => (0..shape[c])
            .step_by(tiling.columns.max(1) as usize)
            .map(|g0| (g0, (g0 + tiling.columns).min(shape[c])))
            .collect(),
        None => vec![(0, 1)],
    };
    let tiles: Vec<(u64, u64)> = match t.rows_axis {
        Some(r) => {
            let (n, vs, h) = (shape[r], shard[r], tiling.rows.max(1));
            let mut v = Vec::new();
            let mut s0 = 0;
            while s0 < n {
                let s1 = (s0 + vs).min(n);
                let mut s = s0;
                while s < s1 {
                    v.push((s, (s + h).min(s1)));
                    s += h;
                }
                s0 = s1;
            }
            v
        }
        None => vec![(0, 1)],
    };
    for &(g0, g1) in &groups {
        let mut cache: HashMap<Vec<u64>, Arc<Raw>> = HashMap::new();
        for &(r0, r1) in &tiles {
            let mut lo = vec![0u64; rank];
            let mut hi = shape.clone();
            if let Some(r) = t.rows_axis {
                (lo[r], hi[r]) = (r0, r1);
            }
            if let Some(c) = t.columns_axis {
                (lo[c], hi[c]) = (g0, g1);
            }
            // Source chunks this tile needs: keep those decoded already, fetch the rest.
            let needed = blocks(&lo, &hi, &src_chunk);
            cache.retain(|k, _| needed.contains(k));
            let missing: Vec<Vec<u64>> = needed
                .into_iter()
                .filter(|k| !cache.contains_key(k))
                .collect();
            for (k, raw) in fetch(&t.src, missing, pool, io_threads, pb)? {
                cache.insert(k, raw);
            }
            // Encode the tile's inner chunks on the pool.
            let targets = blocks(&lo, &hi, inner);
            let encoded: Vec<Result<EncodedChunk>> = pool.install(|| {
                targets
                    .par_iter()
                    .map(|ci| {
                        let origin: Vec<u64> = ci.iter().zip(inner).map(|(i, n)| i * n).collect();
                        let raw = build_chunk(t, &cache, &src_chunk, &origin);
                        let enc = if raw.is_fill() {
                            None
                        } else {
                            Some(codec.encode(&raw, inner)?)
                        };
                        Ok((ci.clone(), enc))
                    })
                    .collect()
            });
            let mut complete = Vec::new();
            for e in encoded {
                let (ci, enc) = e?;
                let sidx: Vec<u64> = ci.iter().zip(&per_shard).map(|(c, p)| c / p).collect();
                let entry = open.entry(sidx.clone()).or_insert_with(|| OpenShard {
                    chunks: vec![None; per_shard.iter().product::<u64>() as usize],
                    remaining: chunks_inside(&t.meta, &sidx),
                });
                let mut pos = 0u64;
                for d in 0..rank {
                    pos = pos * per_shard[d] + ci[d] % per_shard[d];
                }
                entry.chunks[pos as usize] = enc;
                entry.remaining -= 1;
                if entry.remaining == 0 {
                    complete.push(sidx);
                }
            }
            let done: Vec<(Vec<u64>, OpenShard)> = complete
                .into_iter()
                .filter_map(|s| open.remove_entry(&s))
                .collect();
            pool.install(|| {
                done.into_par_iter()
                    .try_for_each(|(sidx, s)| store.write_shard(name, &sidx, &s.chunks))
            })?;
        }
    }
    debug_assert!(open.is_empty(), "every shard completed");
    Ok(())
}

/// Rebuilds `region_index` for the new variants inner chunks from `variant_contig`,
/// `variant_position` and `variant_length`, read band by band.
fn write_region_index(store: &StoreDir, p: &Planned, level: i32) -> Result<()> {
    let src = &p.source;
    let get = |n: &str| {
        src.array(n).ok_or_else(|| Error::Input {
            path: src.root.clone(),
            msg: format!("{n} missing"),
        })
    };
    let (contig, pos, len) = (
        get("variant_contig")?,
        get("variant_position")?,
        get("variant_length")?,
    );
    let n = pos.shape()[0];
    let vc = p.geometry.variants_chunk.max(1);
    let band = (vc * ((1 << 20) / vc).max(1)).max(vc);
    let mut rows = Vec::new();
    let mut r0 = 0;
    while r0 < n {
        let r1 = (r0 + band).min(n);
        let (c, s, l) = (
            contig.read_rows_i64(r0, r1)?,
            pos.read_rows_i64(r0, r1)?,
            len.read_rows_i64(r0, r1)?,
        );
        let loci: Vec<region::Locus> = (0..c.len())
            .map(|i| (c[i] as i32, s[i], s[i] + l[i] - 1))
            .collect();
        for (k, part) in loci.chunks(vc as usize).enumerate() {
            region::push_rows(r0 / vc + k as u64, part, &mut rows);
        }
        r0 = r1;
    }
    let (dtype, raw) = region::encode(&rows, pos.dtype);
    let shape = vec![rows.len() as u64, 6];
    let dims = vec![
        "region_index_values".to_string(),
        "region_index_fields".to_string(),
    ];
    let (shard_shape, inner) = p.geometry.grid(&dims, &shape);
    let meta = ArrayMeta {
        shape: shape.clone(),
        shard: shard_shape,
        inner: inner.clone(),
        dimension_names: dims,
        dtype,
        bitshuffle: false,
        level,
        attributes: src
            .array("region_index")
            .map_or_else(|| ArrayMeta::described(""), |a| a.attributes.clone()),
    };
    store.write_json("region_index", &meta.to_json())?;
    if rows.is_empty() || raw.is_fill() {
        return Ok(());
    }
    let enc = InnerCodec::new(dtype, false, level)?.encode(&raw, &inner)?;
    Ok(store.write_shard("region_index", &[0, 0], &[Some(enc)])?)
}

impl RechunkReport {
    /// The plan as people read it.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        use svar2_planner::size::human;
        let g = &self.geometry;
        let p = &self.plan;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "input          {} (Zarr v{}; {} variants x {} samples)",
            self.input.display(),
            self.zarr_format,
            self.variants,
            self.samples
        );
        let _ = writeln!(
            s,
            "layout         inner {} x {}, shards {} x {}, zstd level {}",
            g.variants_chunk, g.samples_chunk, g.variants_shard, g.samples_shard, g.zstd_level
        );
        if let (Some(patch), Some(a)) = (&self.patch, self.amplification) {
            let _ = writeln!(s, "amplification  {a:.3} expected for a {patch} patch");
        }
        let _ = writeln!(
            s,
            "budget         {} ({})",
            human(p.budget),
            self.budget_from
        );
        let _ = writeln!(
            s,
            "threads        {} decode/encode, {} IO",
            p.threads, self.io_threads
        );
        let _ = writeln!(s, "predicted peak {} RSS", human(p.predicted_peak_rss));
        let _ = writeln!(
            s,
            "source decodes {} of {} source chunks{}",
            p.decodes,
            p.source_chunks,
            if p.decodes > p.source_chunks {
                " (the budget cannot hold a whole row of source chunks: those straddling \
                 two tile columns are decoded once per column)"
            } else {
                " (each decoded once)"
            }
        );
        let _ = writeln!(
            s,
            "tiles (per array: rows x samples, decodes/chunks, held):"
        );
        for a in &p.arrays {
            let _ = writeln!(
                s,
                "  {:<28} {:>8} x {:<8} {:>7}/{:<7} {}",
                a.name,
                a.rows,
                a.columns,
                a.decodes,
                a.source_chunks,
                human(a.tile_bytes)
            );
        }
        s
    }
}
