//! `svar2.convert`, `svar2.rechunk`, `svar2.inspect`, `svar2.digest`: the CLI's library
//! calls with the CLI's defaults and rules, keyword arguments for its flags.

use crate::errors;
use crate::json;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use svar2_planner::geometry::PatchShape;
use svar2_planner::size::{parse_max_mem, MaxMem};
use svar2_planner::{BudgetRequest, LayoutRequest, Requested};

fn patch_of(p: Option<&str>) -> PyResult<Option<PatchShape>> {
    p.map(|s| s.parse::<PatchShape>().map_err(errors::value))
        .transpose()
}

fn max_mem_of(s: &str) -> PyResult<MaxMem> {
    parse_max_mem(s).map_err(|e| errors::value(format!("max_mem: {e}")))
}

/// The layout and budget keywords as convert and rechunk take them, checked by the
/// planner's rules (the CLI's flags build the same requests).
#[allow(clippy::too_many_arguments)]
fn requests(
    patch: Option<&str>,
    max_amplification: f64,
    variants_chunk: Option<u64>,
    samples_chunk: Option<u64>,
    variants_shard: Option<u64>,
    samples_shard: Option<u64>,
    zstd_level: i32,
    max_mem: &str,
    threads: Option<usize>,
) -> PyResult<(LayoutRequest, BudgetRequest)> {
    let layout = LayoutRequest {
        patch: patch_of(patch)?,
        max_amplification,
        requested: Requested {
            variants_chunk,
            samples_chunk,
            variants_shard,
            samples_shard,
        },
        zstd_level,
    }
    .checked()
    .map_err(errors::value)?;
    let threads = threads
        .map(|n| svar2_planner::host::check_threads("threads", n, false))
        .transpose()
        .map_err(errors::value)?;
    let budget = BudgetRequest {
        max_mem: max_mem_of(max_mem)?,
        threads,
    };
    Ok((layout, budget))
}

/// Inputs: one path or a list of paths.
fn inputs_of(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = inputs.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    inputs
        .extract::<Vec<PathBuf>>()
        .map_err(|_| errors::value("inputs: a path or a list of paths"))
}

/// Converts VCF/BCF `inputs` (a path, or a list: one call set split into files) into
/// a VCF Zarr store at `output` (a directory, a `.vcz.zip` file or `s3://bucket/path`),
/// exactly as `svar2 convert` does with the same flags. Returns a dict: records, seconds, store_bytes, files, rewritten_shards.
/// `samples`, `regions`, `targets`, `include`/`exclude` subset as `bcftools view`'s
/// -s, -r, -t, -i/-e (`samples`: a list of names, or bcftools' comma string with `^`);
/// `samples_file`, `regions_file`, `targets_file`, `force_samples` and `no_update`
/// are -S, -R, -T, --force-samples and -I.
/// `merge`: the inputs are of different samples, joined as `bcftools merge` joins
/// them (`True` or "both": its default; "none": `-m none`); `force_samples` then keeps
/// a name met twice as `K:NAME`.
/// `max_mem` budgets the conversion's own memory ("auto": 0.8 x the cgroup limit);
/// the Python process's comes on top.
#[pyfunction]
#[pyo3(signature = (inputs, output, *, max_mem = "auto", threads = None, readers = None,
    patch = None, max_amplification = 1.5, variants_chunk = None, samples_chunk = None,
    variants_shard = None, samples_shard = None, zstd_level = 1, force = false,
    progress = false, allow_truncated = false, samples = None, regions = None, targets = None,
    include = None, exclude = None, samples_file = None, regions_file = None,
    targets_file = None, force_samples = false, no_update = false, merge = None))]
#[allow(clippy::too_many_arguments)]
pub fn convert<'py>(
    py: Python<'py>,
    inputs: &Bound<'py, PyAny>,
    output: PathBuf,
    max_mem: &str,
    threads: Option<usize>,
    readers: Option<u32>,
    patch: Option<&str>,
    max_amplification: f64,
    variants_chunk: Option<u64>,
    samples_chunk: Option<u64>,
    variants_shard: Option<u64>,
    samples_shard: Option<u64>,
    zstd_level: i32,
    force: bool,
    progress: bool,
    allow_truncated: bool,
    samples: Option<&Bound<'py, PyAny>>,
    regions: Option<String>,
    targets: Option<String>,
    include: Option<String>,
    exclude: Option<String>,
    samples_file: Option<PathBuf>,
    regions_file: Option<PathBuf>,
    targets_file: Option<PathBuf>,
    force_samples: bool,
    no_update: bool,
    merge: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let inputs = inputs_of(inputs)?;
    // `merge=True` or "both": bcftools merge's default; "none": its `-m none`.
    let merge = match merge {
        None => None,
        Some(m) => match m.extract::<bool>() {
            Ok(false) => None,
            Ok(true) => Some(svar2_vcf::merge::Collapse::Both),
            Err(_) => {
                let mode: String = m
                    .extract()
                    .map_err(|_| errors::value("merge: True, \"both\" or \"none\""))?;
                Some(mode.parse().map_err(|e: String| errors::value(e))?)
            }
        },
    }
    .map(|collapse| svar2_vcf::merge::MergeRequest {
        collapse,
        force_samples,
    });
    // A string is bcftools' -s list; a list holds names as they are (commas too).
    let (samples, sample_list) = match samples {
        None => (None, None),
        Some(s) => match s.extract::<String>() {
            Ok(list) => (Some(list), None),
            Err(_) => {
                let names = s
                    .extract::<Vec<String>>()
                    .map_err(|_| errors::value("samples: a list of names or a comma string"))?;
                if names.is_empty() {
                    return Err(errors::value(
                        "samples=[] keeps no sample: give names (or \"^\" + names to drop)",
                    ));
                }
                (None, Some(names))
            }
        },
    };
    if include.is_some() && exclude.is_some() {
        return Err(errors::value("give include or exclude, not both"));
    }
    if samples_file.is_some() && (samples.is_some() || sample_list.is_some()) {
        return Err(errors::value("give samples or samples_file, not both"));
    }
    let subset = svar2_vcf::subset::SubsetRequest {
        samples,
        sample_list,
        samples_file,
        regions_file,
        targets_file,
        force_samples,
        no_update,
        regions,
        targets,
        expression: include.map(|e| (e, true)).or(exclude.map(|e| (e, false))),
    };
    let (layout, budget) = requests(
        patch,
        max_amplification,
        variants_chunk,
        samples_chunk,
        variants_shard,
        samples_shard,
        zstd_level,
        max_mem,
        threads,
    )?;
    let opts = svar2_convert::Options {
        request: svar2_convert::planning::PlanRequest {
            layout,
            budget,
            readers,
            probe: true,
            allow_truncated,
            subset,
            merge,
        },
        force,
        progress,
        contig_order: Default::default(),
    };
    svar2_vcf::source::quiet_htslib();
    // A conversion cannot be cancelled half-way yet: it runs to its end (or error).
    let never = AtomicBool::new(false);
    let s = crate::wait::interruptible(py, &never, || {
        svar2_convert::convert_inputs(&inputs, &output, &opts)
    })?
    .map_err(errors::convert)?;
    let d = PyDict::new(py);
    d.set_item("records", s.records)?;
    d.set_item("seconds", s.seconds)?;
    d.set_item("store_bytes", s.store_bytes)?;
    d.set_item("files", s.files)?;
    d.set_item("rewritten_shards", s.rewritten_shards)?;
    Ok(d)
}

/// Adds the samples of `inputs` (a path or a list; VCF/BCF, each sorted, samples not
/// in the store) to the directory store `store`, as `svar2 append` does: the store's
/// records and the inputs joined as `bcftools merge` joins them (`merge`: "both", its
/// default, or "none"), written with the store's layout beside it and swapped in
/// whole. When the inputs have the store's sites, only the sample columns from the
/// store's last sample shard on are written (`first_sample_written`; the earlier
/// columns' files are the old version's). Returns a dict: records, samples_before,
/// samples_after, seconds, store_bytes, bytes_written, first_sample_written. A store
/// append cannot grow (zip, bucket, link) raises ValueError.
#[pyfunction]
#[pyo3(signature = (store, inputs, *, merge = "both", force_samples = false,
    max_mem = "auto", threads = None, progress = false))]
#[allow(clippy::too_many_arguments)]
pub fn append<'py>(
    py: Python<'py>,
    store: PathBuf,
    inputs: &Bound<'py, PyAny>,
    merge: &str,
    force_samples: bool,
    max_mem: &str,
    threads: Option<usize>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let inputs = inputs_of(inputs)?;
    let collapse = merge.parse().map_err(|e: String| errors::value(e))?;
    let (_, budget) = requests(None, 1.5, None, None, None, None, 1, max_mem, threads)?;
    let o = svar2_append::AppendOptions {
        merge: svar2_vcf::merge::MergeRequest {
            collapse,
            force_samples,
        },
        budget,
        progress,
    };
    svar2_vcf::source::quiet_htslib();
    // Like a conversion, an append runs to its end (or error); the GIL is released.
    let never = AtomicBool::new(false);
    let s = crate::wait::interruptible(py, &never, || svar2_append::append(&store, &inputs, &o))?
        .map_err(errors::append)?;
    let d = PyDict::new(py);
    d.set_item("records", s.records)?;
    d.set_item("samples_before", s.samples_before)?;
    d.set_item("samples_after", s.samples_after)?;
    d.set_item("seconds", s.seconds)?;
    d.set_item("store_bytes", s.store_bytes)?;
    d.set_item("bytes_written", s.bytes_written)?;
    d.set_item("first_sample_written", s.first_sample_written)?;
    Ok(d)
}

/// Rewrites any VCF Zarr store (v2 or v3) at `input` in svar2's layout for `patch`
/// at `output`, as `svar2 rechunk` does. With `dry_run`, returns the plan (the dict
/// `--dry-run --json` prints) and writes nothing; else a summary dict.
#[pyfunction]
#[pyo3(signature = (input, output, *, patch = None, max_amplification = 1.5,
    variants_chunk = None, samples_chunk = None, variants_shard = None, samples_shard = None,
    zstd_level = 1, max_mem = "auto", threads = None, io_threads = None, force = false,
    dry_run = false, progress = false))]
#[allow(clippy::too_many_arguments)]
pub fn rechunk<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    patch: Option<&str>,
    max_amplification: f64,
    variants_chunk: Option<u64>,
    samples_chunk: Option<u64>,
    variants_shard: Option<u64>,
    samples_shard: Option<u64>,
    zstd_level: i32,
    max_mem: &str,
    threads: Option<usize>,
    io_threads: Option<usize>,
    force: bool,
    dry_run: bool,
    progress: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (layout, budget) = requests(
        patch,
        max_amplification,
        variants_chunk,
        samples_chunk,
        variants_shard,
        samples_shard,
        zstd_level,
        max_mem,
        threads,
    )?;
    let opts = svar2_rechunk::Options {
        layout,
        budget,
        io_threads,
        force,
        progress,
    };
    if dry_run {
        let r = crate::wait::inline(py, || svar2_rechunk::dry_run(&input, &opts))?
            .map_err(errors::rechunk)?;
        return json::report(py, &r);
    }
    let never = AtomicBool::new(false);
    let s = crate::wait::interruptible(py, &never, || {
        svar2_rechunk::rechunk(&input, &output, &opts)
    })?
    .map_err(errors::rechunk)?;
    let d = PyDict::new(py);
    d.set_item("arrays", s.arrays)?;
    d.set_item("decodes", s.decodes)?;
    d.set_item("source_chunks", s.source_chunks)?;
    d.set_item("store_bytes", s.store_bytes)?;
    d.set_item("files", s.files)?;
    d.set_item("seconds", s.seconds)?;
    Ok(d.into_any())
}

/// Any Zarr v2/v3 store's layout as `svar2 inspect --json` reports it (a dict): per
/// array its shape, type, chunk, shard, codecs, bytes, files, GPU decodability, and
/// with `patch` ("4096x1") its decode amplification. Reads no array data.
#[pyfunction]
#[pyo3(signature = (store, patch = None))]
pub fn inspect<'py>(
    py: Python<'py>,
    store: PathBuf,
    patch: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let patch = patch_of(patch)?;
    let r = crate::wait::inline(py, || svar2_rechunk::inspect::inspect(&store, patch))?
        .map_err(errors::store)?;
    json::report(py, &r)
}

/// One blake3 hash over every file of a store (relative path and bytes), as
/// `svar2 digest` prints it: equal digests, identical stores.
#[pyfunction]
pub fn digest(py: Python<'_>, store: PathBuf) -> PyResult<String> {
    crate::wait::inline(py, || svar2_store::dir::digest(&store))?.map_err(errors::store)
}
