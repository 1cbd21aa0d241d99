//! Gathers the numbers the planner needs — header, index counts, cgroup memory and
//! cores — and renders the resulting plan for `svar2 plan` and `convert -v`.
//! Reads the header and the index only; never a record.

use crate::arrays::{ArraySet, Geometry};
use crate::error::{Error, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use svar2_planner::host::{Cores, Host, MemoryLimit};
use svar2_planner::memory::MEASURED;
use svar2_planner::order::{ContigCost, CostTier};
use svar2_planner::size::human;
use svar2_planner::{plan, BudgetRequest, LayoutRequest, Plan, PlanInput};
use svar2_vcf::index::{contig_counts, IndexKind};
use svar2_vcf::schema::Schema;
use svar2_vcf::source::VcfReader;

/// What the user asked the planner for.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// The store layout asked for (the same request rechunk takes).
    pub layout: LayoutRequest,
    /// Memory and encoding threads.
    pub budget: BudgetRequest,
    pub readers: Option<u32>,
    /// Run the rate probe (reads a bounded prefix of records) to choose readers.
    pub probe: bool,
    /// Convert inputs cut short (no BGZF end-of-file block) as far as they go, with
    /// a warning, instead of refusing them (`--allow-truncated`).
    pub allow_truncated: bool,
    /// `bcftools view`'s subsetting applied while reading (`-s/-r/-t/-i`…): the plan
    /// is made for the samples kept.
    pub subset: svar2_vcf::subset::SubsetRequest,
    /// `--merge`: the inputs are of different samples, joined as `bcftools merge`
    /// joins them (one streaming reader over all of them).
    pub merge: Option<svar2_vcf::merge::MergeRequest>,
}

/// The expression of `-i`/`-e` as a conversion tests it on each record.
struct ExpressionTest(svar2_expr::Filter);

impl svar2_vcf::subset::SiteTest for ExpressionTest {
    fn keep(
        &mut self,
        schema: &Schema,
        b: &svar2_vcf::block::Block,
    ) -> std::result::Result<bool, String> {
        self.0.test(schema, b, 0, false, None).map(|v| v.keep)
    }

    fn reads(&self) -> (Vec<usize>, bool) {
        let n = self.0.needs();
        (n.fields.clone(), n.genotypes)
    }
}

/// Opens an input for a conversion (or its plan), subset as `request` asks: the
/// reader's schema is then the output's.
pub fn open_input(path: &Path, threads: usize, request: &PlanRequest) -> Result<VcfReader> {
    let mut reader = VcfReader::open(path, threads)?;
    let subset = &request.subset;
    if subset.is_empty() {
        return Ok(reader);
    }
    let compile = |schema: &Schema| -> svar2_vcf::Result<Box<dyn svar2_vcf::subset::SiteTest>> {
        let (text, include) = subset
            .expression
            .as_ref()
            .expect("asked only with an expression");
        let logic = match include {
            true => svar2_expr::Logic::Include,
            false => svar2_expr::Logic::Exclude,
        };
        let f = svar2_expr::Filter::new(text, schema, logic)
            .map_err(|e| svar2_vcf::Error::Request(e.to_string()))?;
        Ok(Box::new(ExpressionTest(f)))
    };
    let s = svar2_vcf::subset::Subset::new(
        &reader.path,
        reader.header(),
        &reader.schema,
        subset,
        Some(&compile),
    )?;
    reader.set_subset(s);
    Ok(reader)
}

/// The plan and everything it was made from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlanReport {
    pub input: PathBuf,
    pub samples: u64,
    pub contig_names: Vec<String>,
    /// Contigs the index lists that the header does not declare (appended to the
    /// store's contig list).
    pub undeclared_contigs: Vec<String>,
    pub contigs: Vec<ContigCost>,
    /// Where the contig costs came from.
    pub counts_from: String,
    pub index: Option<IndexKind>,
    pub memory_limit: Option<MemoryLimit>,
    pub budget: u64,
    pub budget_from: String,
    pub cores: Cores,
    pub threads: usize,
    pub row_bytes: u64,
    /// What records read from the input measured — its first ones, and for one
    /// indexed file some at spots spread over it (`row_bytes` is theirs) — or `None`
    /// when `row_bytes` is the header's worst case (standard input, a subset that
    /// tests records one by one, no records).
    pub prefix: Option<crate::prefix::RowBytes>,
    pub plan: Plan,
    pub zstd_level: i32,
    /// What the rate probe measured, when it ran.
    pub probe: Option<crate::probe::Probe>,
    /// Why the rate probe did not run, when it did not.
    pub probe_skipped: Option<String>,
    /// Inputs read one after another (0: standard input), or 1 for one file.
    pub streams: usize,
    /// The records are subset (`-s/-r/-t/-i/-e`): one streaming reader tests them.
    pub subset: bool,
    /// `--merge`: how the inputs are joined (counted in the predicted peak).
    pub merge: Option<MergePlan>,
    /// What `plan` was made from (the rate probe's read share included), to plan
    /// again for other chunk rows or budgets.
    #[serde(skip)]
    pub plan_input: PlanInput,
    /// Of several inputs, the one holding each contig's records (by their indexes),
    /// for messages about a record; empty for one input, or inputs without indexes.
    #[serde(skip)]
    pub contig_inputs: Vec<Option<PathBuf>>,
}

/// How a `--merge` conversion reads its inputs, and what that adds to the peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct MergePlan {
    pub inputs: usize,
    /// Threads merging contigs side by side (1: the reader merges alone).
    pub workers: usize,
    /// The most bytes of merged records the workers' queues hold.
    pub queue_bytes: u64,
    /// What the plan adds to the peak for them (in `predicted_peak_rss`).
    pub extra_bytes: u64,
}

/// Threads from which `--merge` merges contigs on worker threads: on 2 cores they
/// cost more than they give (3-way corpus merge 2.90 s on the reader alone, 3.66 s
/// with two workers: cross-thread records, 1.5x the CPU).
pub const MERGE_WORKERS_FROM: usize = 4;

/// RSS per open input of a merge worker (its own handle, BGZF buffers, index and
/// header; measured: see [`merge_plan`]).
const PER_WORKER_INPUT_BYTES: u64 = 400 << 10;

/// RSS per byte the merge queues count (records' packed bytes are counted twice
/// already; allocator slack on top).
const QUEUE_RSS_FACTOR: f64 = 1.5;

/// The least queue worth starting workers for.
const MIN_QUEUE_BYTES: u64 = 4 << 20;

/// Merge workers and their queues from what `--max-mem` leaves after the serial
/// merge's plan (`report`): workers only from [`MERGE_WORKERS_FROM`] threads, and
/// only when their inputs and a useful queue fit the budget.
pub fn merge_plan(report: &PlanReport, inputs: usize, threads: usize) -> MergePlan {
    let serial = MergePlan {
        inputs,
        workers: 1,
        queue_bytes: 0,
        extra_bytes: 0,
    };
    if threads < MERGE_WORKERS_FROM {
        return serial;
    }
    let allowed = (report.budget as f64 / svar2_planner::memory::HEADROOM) as u64;
    let left = allowed.saturating_sub(report.plan.predicted_peak_rss);
    let mut workers = threads - 1;
    while workers > 1 {
        let fixed = (workers * inputs) as u64 * PER_WORKER_INPUT_BYTES;
        let queue = (left.saturating_sub(fixed) as f64 / QUEUE_RSS_FACTOR) as u64;
        let queue = queue.min(svar2_vcf::merge::DEFAULT_QUEUE_BYTES);
        if queue >= MIN_QUEUE_BYTES {
            return MergePlan {
                inputs,
                workers,
                queue_bytes: queue,
                extra_bytes: fixed + (queue as f64 * QUEUE_RSS_FACTOR) as u64,
            };
        }
        workers -= 1;
    }
    serial
}

/// Plans a `--merge` conversion and opens its reader (with its workers when
/// `start_workers`): the serial merge is planned first (what the batches and
/// encoders need), then [`merge_plan`] spends what is left on workers.
pub fn plan_merge(
    inputs: &[PathBuf],
    m: svar2_vcf::merge::MergeRequest,
    request: &PlanRequest,
    start_workers: bool,
) -> Result<(PlanReport, VcfReader)> {
    let serial = VcfReader::merge(inputs, m, 1, 0)?;
    // An ID the merged header cannot take is blamed on the input that declares it:
    // each header is read again only then.
    if check_field_ids(&serial.path, &serial.schema).is_err() {
        for p in inputs {
            check_field_ids(p, &VcfReader::open(p, 1)?.schema)?;
        }
    }
    // The merged store holds the union of the inputs' sites: per contig at least the
    // most any input has (what the plan counts), at most their sum.
    let schema = serial.schema.clone();
    let each: Vec<_> = inputs
        .iter()
        .map(|p| contig_counts(p, &schema.contigs))
        .collect();
    let (counted, bounds) = match each.iter().all(|c| c.is_ok()) {
        true => {
            let each: Vec<_> = each.into_iter().flatten().collect();
            let mut most = each[0].clone();
            for c in &each[1..] {
                for (m, n) in most.counts.iter_mut().zip(&c.counts) {
                    *m = (*m).max(*n);
                }
            }
            let sum: u64 = each.iter().flat_map(|c| c.counts.iter()).sum();
            let least: u64 = most.counts.iter().sum();
            (Ok(most), Some((least, sum)))
        }
        false => (contig_counts(&serial.path, &schema.contigs), None),
    };
    let mut report = plan_schema(
        &serial.path,
        schema,
        counted,
        1,
        Prefix::None,
        ProbeOn::Nothing("--merge reads its inputs side by side, by contig"),
        request,
    )?;
    if let Some((least, sum)) = bounds {
        report.plan.notes.push(format!(
            "a merge writes the union of the inputs' sites: {least} to {sum} records (the \
             record count and contig costs above are the most any input has per contig)"
        ));
    }
    let mp = merge_plan(&report, inputs.len(), report.threads);
    report.plan.predicted_peak_rss += mp.extra_bytes;
    report.merge = Some(mp);
    if mp.workers < 2 || !start_workers {
        return Ok((report, serial));
    }
    drop(serial);
    let reader = VcfReader::merge(inputs, m, mp.workers, mp.queue_bytes)?;
    Ok((report, reader))
}

/// The most contigs this build's executor converts at once.
pub const EXECUTOR_MAX_CC: usize = 64;

/// Bounds what reading the inputs may take before the plan is made
/// ([`svar2_vcf::limits`]): the budget `--max-mem` names (capped at the machine's
/// limit, `auto` its share), so a header of more samples than the budget holds is
/// refused before htslib parses it. The plan's own budget replaces it once made.
pub fn set_read_limits(request: &PlanRequest) {
    let limit = Host::system().memory_limit();
    // `auto` without a known limit leaves reading unbounded here; the plan refuses it.
    if let Ok((budget, _)) = svar2_planner::host::budget_of(request.budget.max_mem, limit.as_ref())
    {
        svar2_vcf::limits::set_budget(budget);
    }
}

/// Plans a conversion of `input` from its header and index.
pub fn make_plan(input: &Path, request: &PlanRequest) -> Result<PlanReport> {
    plan_reader(open_input(input, 1, request)?, request)
}

/// Plans a conversion of one file from its opened reader, which the sample probe
/// then reads (its header parsed once: 0.1-0.2 s a parse at 300,000 samples) and
/// closes before the spots open the file again (two headers of 300,000 samples held
/// at once took ~110 MB, the run's peak at small chunk rows).
pub fn plan_reader(reader: VcfReader, request: &PlanRequest) -> Result<PlanReport> {
    let (path, schema) = (reader.path.clone(), reader.schema.clone());
    let counted = contig_counts(&path, &schema.contigs);
    plan_schema(
        &path,
        schema,
        counted,
        1,
        Prefix::Read(std::slice::from_ref(&path), Some(Box::new(reader))),
        ProbeOn::Input(&path),
        request,
    )
}

/// `--merge` reads its inputs side by side to their ends, so an input cut short
/// (`--allow-truncated`) is refused before any work, naming it: the merge would stop
/// at its cut with htslib's error, which offers `--allow-truncated` again.
pub fn refuse_cut_merge(cut: &[PathBuf], request: &PlanRequest) -> Result<()> {
    match (cut.first(), request.merge) {
        (Some(path), Some(_)) => Err(Error::Usage(format!(
            "{}: cut short (no BGZF end-of-file block), and --merge does not convert an \
             input cut short (--allow-truncated) yet: re-download or re-create it, or \
             convert what it holds alone with --allow-truncated",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Plans a conversion of `inputs` (one file, several of one call set, or `-`) as
/// `convert_inputs` will run it.
pub fn plan_inputs(inputs: &[PathBuf], request: &PlanRequest) -> Result<PlanReport> {
    check_inputs(inputs)?;
    let cut = svar2_vcf::truncation::check_complete(inputs, request.allow_truncated)?;
    refuse_cut_merge(&cut, request)?;
    set_read_limits(request);
    if let Some(m) = request.merge {
        return plan_merge(inputs, m, request, false).map(|(report, _)| report);
    }
    match inputs {
        [] => Err(Error::Usage("no input files".into())),
        [one] if !svar2_vcf::inputs::is_stdin(one) => make_plan(one, request),
        _ => {
            let ins = inputs
                .iter()
                .map(|p| {
                    open_input(p, 1, request).map(|r| svar2_vcf::inputs::Input {
                        path: r.path.clone(),
                        schema: r.schema,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let merged = match ins.len() {
                1 => ins[0].schema.clone(),
                _ => svar2_vcf::inputs::merge(&ins)?,
            };
            make_plan_inputs(&ins, &merged, request)
        }
    }
}

/// Plans a conversion of several inputs of one call set (or of standard input), read
/// one after another by one streaming reader, into `merged`'s arrays. Contig counts
/// come from every input's index when each has one; a contig with records in two
/// inputs is refused here, before anything is written.
pub fn make_plan_inputs(
    inputs: &[svar2_vcf::inputs::Input],
    merged: &svar2_vcf::schema::Schema,
    request: &PlanRequest,
) -> Result<PlanReport> {
    let mut counts = vec![0u64; merged.contigs.len()];
    let mut owner: Vec<Option<&Path>> = vec![None; merged.contigs.len()];
    let mut kind = None;
    let mut missing = None;
    for inp in inputs {
        match contig_counts(&inp.path, &inp.schema.contigs) {
            Ok(ic) => {
                kind = Some(ic.kind);
                let named = inp
                    .schema
                    .contigs
                    .iter()
                    .map(|c| c.name.as_str())
                    .zip(ic.counts.iter().copied())
                    .chain(ic.undeclared.iter().map(|(n, c)| (n.as_str(), *c)));
                for (name, c) in named.filter(|&(_, c)| c > 0) {
                    let Some(i) = merged.contigs.iter().position(|m| m.name == name) else {
                        missing = Some(format!(
                            "{}: contig {name} is not declared",
                            inp.path.display()
                        ));
                        continue;
                    };
                    if let Some(other) = owner[i] {
                        return Err(Error::Usage(format!(
                            "contig {name} has records in {} and in {}: give each contig's \
                             records in one file (`bcftools concat -a` joins them)",
                            other.display(),
                            inp.path.display()
                        )));
                    }
                    owner[i] = Some(&inp.path);
                    counts[i] += c;
                }
            }
            Err(no) => missing = Some(format!("{}: {}", inp.path.display(), no.reason)),
        }
    }
    let counted = match (missing, kind) {
        (None, Some(kind)) => Ok(svar2_vcf::index::IndexCounts {
            kind,
            path: PathBuf::from(format!("beside each of the {} inputs", inputs.len())),
            counts,
            undeclared: Vec::new(),
        }),
        (why, _) => Err(svar2_vcf::index::NoCounts {
            reason: why.unwrap_or_else(|| "no index".into()),
        }),
    };
    let label = if inputs.len() == 1 {
        inputs[0].path.clone()
    } else {
        PathBuf::from(format!("{} inputs", inputs.len()))
    };
    let paths: Vec<PathBuf> = inputs.iter().map(|i| i.path.clone()).collect();
    let own: Vec<(&Path, &Schema)> = inputs
        .iter()
        .map(|i| (i.path.as_path(), &i.schema))
        .collect();
    let probe_on = match own.len() {
        1 => ProbeOn::Input(&inputs[0].path),
        _ => ProbeOn::Inputs(&own),
    };
    let contig_inputs = owner.iter().map(|o| o.map(Path::to_path_buf)).collect();
    let mut report = plan_schema(
        &label,
        merged.clone(),
        counted,
        inputs.len(),
        Prefix::Read(&paths, None),
        probe_on,
        request,
    )?;
    report.contig_inputs = contig_inputs;
    Ok(report)
}

/// Plans one partition of a partitioned conversion for this machine (its budget and
/// cores): `counts` holds the partition's records per contig (0 elsewhere), and the
/// store geometry is the partition plan's, never re-derived, so every partition
/// writes the same grid. A geometry this machine's budget cannot hold is an error.
/// `prefix` is what the call set's plan measured on its first records.
#[allow(clippy::too_many_arguments)]
pub fn plan_partition(
    label: &Path,
    schema: svar2_vcf::schema::Schema,
    kind: IndexKind,
    counts: Vec<u64>,
    streams: usize,
    geometry: Geometry,
    prefix: Option<crate::prefix::RowBytes>,
    request: &PlanRequest,
) -> Result<PlanReport> {
    let mut request = request.clone();
    request.layout.patch = None;
    request.layout.zstd_level = geometry.zstd_level;
    request.layout.requested = svar2_planner::Requested {
        variants_chunk: Some(geometry.variants_chunk),
        samples_chunk: Some(geometry.samples_chunk),
        variants_shard: Some(geometry.variants_shard),
        samples_shard: Some(geometry.samples_shard),
    };
    let counted = Ok(svar2_vcf::index::IndexCounts {
        kind,
        path: label.into(),
        counts,
        undeclared: Vec::new(),
    });
    let probe_on = match streams {
        1 => ProbeOn::Input(label),
        _ => ProbeOn::Nothing("a partition of several inputs is planned without one"),
    };
    plan_schema(
        label,
        schema,
        counted,
        streams,
        Prefix::Known(prefix),
        probe_on,
        &request,
    )
}

type Counted = std::result::Result<svar2_vcf::index::IndexCounts, svar2_vcf::index::NoCounts>;

/// Each contig's cost (index record counts, else header lengths as a sort key), where
/// the costs came from, and the index kind.
fn contig_costs(schema: &Schema, counted: Counted) -> (Vec<ContigCost>, String, Option<IndexKind>) {
    match counted {
        Ok(ic) => (
            schema
                .contigs
                .iter()
                .zip(ic.counts.iter().chain(ic.undeclared.iter().map(|(_, c)| c)))
                .map(|(contig, &c)| ContigCost {
                    name: contig.name.clone(),
                    tier: CostTier::IndexCount,
                    cost: c,
                })
                .collect(),
            format!(
                "{} index {}",
                format!("{:?}", ic.kind).to_uppercase(),
                ic.path.display()
            ),
            Some(ic.kind),
        ),
        Err(no) => (
            schema
                .contigs
                .iter()
                .map(|c| ContigCost {
                    name: c.name.clone(),
                    tier: if c.length.unwrap_or(0) > 0 {
                        CostTier::ContigLength
                    } else {
                        CostTier::Unestimated
                    },
                    cost: c.length.unwrap_or(0).max(0) as u64,
                })
                .collect(),
            format!("header contig lengths (fallback: {})", no.reason),
            None,
        ),
    }
}

/// Every INFO and FORMAT field's array is `variant_<ID>` or `call_<ID>`: an ID with
/// `/` would name a path outside its array (htslib only warns of such an ID; a header
/// line `##INFO=<ID=x/../../d,…>` wrote `d/` beside the store), and an ID whose array
/// is one of the fixed columns' (INFO/contig is `variant_contig`) would overwrite it
/// or be lost. Both are refused, naming the field and the rename that converts it.
fn check_field_ids(input: &Path, schema: &Schema) -> Result<()> {
    for f in &schema.fields {
        let kind = match f.category {
            svar2_vcf::schema::Category::Info => "INFO",
            svar2_vcf::schema::Category::Format => "FORMAT",
        };
        let array = f.array_name();
        // (Case apart too: macOS and Windows file systems fold `variant_Length` into
        // `variant_length`.)
        let fixed = svar2_store::fields::NOT_FIELDS
            .iter()
            .find(|n| n.eq_ignore_ascii_case(&array));
        let why = if f.name.contains(['/', '\\']) {
            "holds a path separator, which would name a path outside its array (VCF allows \
             letters, digits, `_` and `.` in an ID)"
                .to_string()
        } else if let Some(fixed) = fixed {
            let which = match *fixed == array {
                true => String::new(),
                false => format!(", which is {fixed} where file names fold case"),
            };
            format!(
                "would be stored as {array}{which}, the array VCF Zarr keeps for a fixed column"
            )
        } else {
            continue;
        };
        return Err(svar2_vcf::Error::Header {
            path: input.into(),
            msg: format!(
                "{kind}/{} {why}: rename the field (`bcftools annotate --rename-annots FILE`, \
                 FILE holding the line `{kind}/{} {kind}/NEW`) and convert again",
                f.name, f.name
            ),
        }
        .into());
    }
    Ok(())
}

/// A header Number so large that one record cannot fit is the header's fault, not the
/// budget's: says so before the planner says the budget is too small.
fn check_declared_numbers(input: &Path, schema: &Schema, samples: u64, budget: u64) -> Result<()> {
    for f in &schema.fields {
        let svar2_vcf::schema::VcfNumber::Fixed(n) = f.number else {
            continue;
        };
        let cells = if f.category == svar2_vcf::schema::Category::Format {
            samples.max(1)
        } else {
            1
        };
        let bytes = cells.saturating_mul(n as u64).saturating_mul(4);
        if bytes > budget / 4 {
            return Err(svar2_vcf::Error::Header {
                path: input.into(),
                msg: format!(
                    "{:?}/{} declares Number={n}: one record of it takes {}, over a quarter of \
                     --max-mem {}; fix the header line (Number=. if the count varies) or drop \
                     the field (`bcftools annotate -x`)",
                    f.category,
                    f.name,
                    human(bytes),
                    human(budget)
                )
                .replacen("Info/", "INFO/", 1)
                .replacen("Format/", "FORMAT/", 1),
            }
            .into());
        }
    }
    Ok(())
}

/// What the rate probe may read: it times one reader on the start of the largest
/// contig, wherever that contig is.
enum ProbeOn<'a> {
    /// One input.
    Input(&'a Path),
    /// Several inputs of one call set, each with its own header's schema.
    Inputs(&'a [(&'a Path, &'a Schema)]),
    /// Nothing, for this reason.
    Nothing(&'static str),
}

/// Why the rate probe does not run for this plan, or `None` when it should.
fn probe_skipped(
    request: &PlanRequest,
    index: Option<IndexKind>,
    cores: usize,
    probe_on: &ProbeOn,
) -> Option<String> {
    if !request.probe {
        return Some("plan runs it only with --probe".into());
    }
    if request.readers.is_some() {
        return Some("--readers given".into());
    }
    if !request.subset.is_empty() {
        return Some("a subset is read by one streaming reader".into());
    }
    if request.merge.is_some() {
        return Some("--merge reads its inputs side by side, by contig".into());
    }
    if index.is_none() {
        return Some("it reads through an index, and there is none".into());
    }
    if let ProbeOn::Nothing(why) = probe_on {
        return Some((*why).into());
    }
    if svar2_planner::readers_that_fit(cores) <= 1 {
        return Some(format!(
            "{cores} core(s) leave room for one reader beside the encoder"
        ));
    }
    None
}

/// Runs the rate probe on the start of the largest contig with the geometry just
/// planned, and plans again with what it measured.
fn replan_with_probe(
    probe_on: &ProbeOn,
    schema: &Schema,
    set: &ArraySet,
    plan_input: PlanInput,
    plan: Plan,
    zstd_level: i32,
    plan_err: impl Fn(svar2_planner::PlanError) -> Error,
) -> Result<(Plan, Option<crate::probe::Probe>, PlanInput)> {
    let counts: Vec<u64> = plan_input.contigs.iter().map(|c| c.cost).collect();
    let largest = plan.order.first().copied();
    let pieces = match probe_on {
        ProbeOn::Input(input) => {
            svar2_vcf::pieces::plan_pieces(input, schema, &counts, (1, u64::MAX))
        }
        ProbeOn::Inputs(own) => svar2_vcf::pieces::plan_pieces_inputs(own, schema, (1, u64::MAX)),
        ProbeOn::Nothing(_) => None,
    };
    let piece = largest.and_then(|rid| pieces?.into_iter().find(|p| p.rid as usize == rid));
    let Some(piece) = piece else {
        return Ok((plan, None, plan_input));
    };
    let input = match probe_on {
        ProbeOn::Input(input) => input,
        ProbeOn::Inputs(own) => own[piece.file as usize].0,
        ProbeOn::Nothing(_) => return Ok((plan, None, plan_input)),
    };
    let geometry = Geometry {
        variants_chunk: plan.chunks.variants,
        samples_chunk: plan.chunks.samples,
        variants_shard: plan.variants_shard,
        samples_shard: plan.samples_shard,
        zstd_level,
    };
    let p = crate::probe::run(input, schema, set, &piece, &geometry, plan_input.row_bytes)?;
    tracing::info!(
        "rate probe: {} records read in {:.1} ms, encoded in {:.1} ms by one thread: \
         reading is {:.0} % of the work",
        p.records,
        p.t_read * 1e3,
        p.t_exec * 1e3,
        p.read_share * 100.0
    );
    let mut with_probe = plan_input;
    with_probe.read_share = Some(p.read_share);
    let plan = svar2_planner::plan(&with_probe).map_err(plan_err)?;
    Ok((plan, Some(p), with_probe))
}

/// Where a plan's row bytes come from.
enum Prefix<'a> {
    /// The first records of each of these files, read now; the first may be open
    /// already (for its header, not read yet).
    Read(&'a [PathBuf], Option<Box<VcfReader>>),
    /// What an earlier plan of the same call set measured (a partition's).
    Known(Option<crate::prefix::RowBytes>),
    /// The header's worst case (`--merge`).
    None,
}

/// What records sampled from `paths` fill a batch with: each input's first records,
/// and for one indexed file (its records per contig in `counts`) spots spread over it;
/// the most any fills, so one input's cheap records do not plan for another's dear
/// ones, nor the inputs' order decide the chunking. Read quietly: what the records
/// say (an undeclared contig, a bad record) the conversion says once, when it reads
/// them. Read as it reads them: BGZF text by svar2's own inflate, which refuses a
/// line over the budget's limit before holding it whole.
/// A record read that needs more of the budget than one record may take (its FORMAT
/// values laid out, its alleles) is the plan's error: its message names the record
/// and the `--max-mem` that holds it, where the conversion would refuse it later.
/// The spots are read by up to `threads` threads (the figure does not depend on it).
fn sample_rows(
    on: Sampled,
    schema: &Schema,
    set: &ArraySet,
    request: &PlanRequest,
    threads: usize,
) -> svar2_vcf::Result<Option<crate::prefix::RowBytes>> {
    let Sampled {
        paths,
        mut opened,
        counts,
    } = on;
    let quiet = tracing::subscriber::NoSubscriber::default();
    tracing::subscriber::with_default(quiet, || {
        let mut heads: Option<crate::prefix::RowBytes> = None;
        for p in paths {
            let reader = match opened.take() {
                Some(r) => Ok(r),
                None => open_input(p, 1, request),
            };
            let Some(reader) = reader
                .ok()
                .and_then(|r| r.for_threads(crate::prefix::READ_THREADS).ok())
            else {
                continue;
            };
            if let Some(m) = crate::prefix::measure(reader, schema, set)? {
                heads = Some(heads.map_or(m, |h| h.most(m)));
            }
        }
        let Some(heads) = heads else {
            return Ok(None);
        };
        Ok(match (paths, counts) {
            ([one], Some(counts)) => {
                crate::prefix::measure_spots(one, schema, set, counts, heads, threads)?
                    .or(Some(heads))
            }
            _ => Some(heads),
        })
    })
}

/// The files [`sample_rows`] reads the first records of: the first may be open
/// already (its header parsed); `counts`, records per contig, where one file is
/// indexed.
struct Sampled<'a> {
    paths: &'a [PathBuf],
    opened: Option<VcfReader>,
    counts: Option<&'a [u64]>,
}

/// The plan from a schema and its contig counts; `streams` > 1 (or standard input)
/// means one streaming reader over inputs read one after another.
fn plan_schema(
    input: &Path,
    mut schema: Schema,
    counted: Counted,
    streams: usize,
    prefix: Prefix,
    probe_on: ProbeOn,
    request: &PlanRequest,
) -> Result<PlanReport> {
    let stdin = svar2_vcf::inputs::is_stdin(input);
    // One streaming reader for standard input, or inputs without index counts.
    // A subset is read by one streaming reader (records are tested one by one).
    let one_stream = stdin || (streams > 1 && counted.is_err()) || !request.subset.is_empty();
    // Contigs the index lists that the header does not declare join the store's list
    // (in the index's order, which is the file's), as a streaming read would add them.
    let undeclared: Vec<String> = counted
        .as_ref()
        .map(|ic| ic.undeclared.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
    for n in &undeclared {
        tracing::warn!(
            "{}: contig {n} is not declared in the header: it is added to the store's \
             contig list (without a length)",
            input.display()
        );
    }
    schema.add_undeclared_contigs(&undeclared);
    check_field_ids(input, &schema)?;
    let set = ArraySet::new(&schema);
    let names: Vec<String> = schema.contigs.iter().map(|c| c.name.clone()).collect();
    let (contigs, counts_from, index) = contig_costs(&schema, counted);
    let host = Host::system();
    let memory_limit = host.memory_limit();
    let (budget, budget_from) =
        svar2_planner::host::resolve_budget(request.budget.max_mem, memory_limit.as_ref())
            .map_err(Error::Usage)?;
    let cores = host.cores();
    if let Some(r) = request.readers {
        if r == 0 || r > svar2_planner::MAX_READERS {
            return Err(Error::Usage(format!(
                "readers {r}: give 1 to {} readers per contig",
                svar2_planner::MAX_READERS
            )));
        }
    }
    let threads = match request.budget.threads {
        Some(n) => svar2_planner::host::check_threads("threads", n, false).map_err(Error::Usage)?,
        None => cores.usable.max(1),
    };
    let (call_arrays, variant_arrays) = set.counts();
    let samples = schema.samples.len() as u64;
    // A partition's plan (its prefix known from its call set's) reads pieces.
    let serial_stream = !matches!(prefix, Prefix::Known(_));
    let prefix = match prefix {
        Prefix::Known(known) => known,
        Prefix::Read(paths, opened) => {
            let readable = !stdin
                && !paths.iter().any(|p| svar2_vcf::inputs::is_stdin(p))
                && request.subset.targets.is_none()
                && request.subset.targets_file.is_none()
                && request.subset.expression.is_none();
            let counts: Vec<u64> = contigs.iter().map(|c| c.cost).collect();
            let indexed_counts = index.is_some().then_some(counts.as_slice());
            match readable {
                true => {
                    let spot_threads = threads.min(cores.usable.max(1));
                    let on = Sampled {
                        paths,
                        opened: opened.map(|r| *r),
                        counts: indexed_counts,
                    };
                    sample_rows(on, &schema, &set, request, spot_threads)?
                }
                false => None,
            }
        }
        Prefix::None => None,
    };
    let (row_bytes, format_row_bytes, scratch_cell_bytes) = match prefix {
        Some(m) => (m.row, m.format, m.scratch_cell),
        None => {
            let (row, format) = set.row_bytes_estimate(samples, None);
            (row, format, set.scratch_cell_bytes())
        }
    };
    let plan_input = PlanInput {
        cores: cores.usable.max(threads),
        threads,
        budget,
        contigs: contigs.clone(),
        samples,
        row_bytes,
        format_row_bytes,
        cell_bytes: 2,
        scratch_cell_bytes,
        call_arrays,
        variant_arrays,
        patch: request.layout.patch,
        max_amplification: request.layout.max_amplification,
        requested: request.layout.requested,
        readers: if one_stream { Some(1) } else { request.readers },
        read_share: None,
        max_concurrent_contigs: if one_stream { 1 } else { EXECUTOR_MAX_CC },
        inputs: streams.max(1),
        serial_stream,
        model: MEASURED,
    };
    check_declared_numbers(input, &schema, samples, budget)?;
    let plan_err = |e: svar2_planner::PlanError| Error::Usage(format!("{}: {e}", input.display()));
    let plan = plan(&plan_input).map_err(plan_err)?;
    let skipped = probe_skipped(request, index, plan_input.cores, &probe_on);
    let (plan, probe, plan_input) = match skipped {
        Some(_) => (plan, None, plan_input),
        None => replan_with_probe(
            &probe_on,
            &schema,
            &set,
            plan_input,
            plan,
            request.layout.zstd_level,
            plan_err,
        )?,
    };
    Ok(PlanReport {
        input: input.into(),
        samples,
        contig_names: names,
        undeclared_contigs: undeclared,
        contigs,
        counts_from,
        index,
        memory_limit,
        budget,
        budget_from,
        cores,
        // What the budget affords (the plan gives up threads before chunk rows).
        threads: plan.threads,
        row_bytes,
        prefix,
        plan,
        zstd_level: request.layout.zstd_level,
        probe,
        probe_skipped: skipped,
        streams: if stdin { 0 } else { streams },
        merge: None,
        subset: !request.subset.is_empty(),
        plan_input,
        contig_inputs: Vec::new(),
    })
}

impl PlanReport {
    /// The store geometry the plan chose.
    pub fn geometry(&self) -> Geometry {
        Geometry {
            variants_chunk: self.plan.chunks.variants,
            samples_chunk: self.plan.chunks.samples,
            variants_shard: self.plan.variants_shard,
            samples_shard: self.plan.samples_shard,
            zstd_level: self.zstd_level,
        }
    }

    /// The plan as people read it.
    pub fn render(&self) -> String {
        let p = &self.plan;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "plan for {} ({} samples)",
            self.input.display(),
            self.samples
        );
        let _ = writeln!(
            s,
            "memory budget  {} ({})",
            human(self.budget),
            self.budget_from
        );
        if let Some(m) = &self.memory_limit {
            let _ = writeln!(s, "memory limit   {} from {}", human(m.bytes), m.source);
        }
        let quota = match (&self.cores.quota, &self.cores.quota_source) {
            (Some(q), Some(src)) => format!("cgroup quota {q:.2} cores ({src})"),
            _ => "no cgroup CPU quota".into(),
        };
        let _ = writeln!(
            s,
            "cores          {} usable (affinity {}, {}); {} encoding thread(s)",
            self.cores.usable, self.cores.affinity, quota, self.threads
        );
        let _ = writeln!(s, "contig costs   {}", self.counts_from);
        let how = if p.cc > 1 {
            "longest first"
        } else {
            "file order: one contig at a time"
        };
        let _ = writeln!(s, "dispatch order ({how}):");
        for (rank, &i) in p.order.iter().enumerate() {
            let c = &self.contigs[i];
            let what = match c.tier {
                CostTier::IndexCount => format!("{} records", c.cost),
                CostTier::ContigLength => format!("{} bp (length; no record count)", c.cost),
                CostTier::Unestimated => "unestimated (no index, no length)".into(),
            };
            let _ = writeln!(s, "  {:>3}. {:<20} {what}", rank + 1, c.name);
        }
        let readers = match (p.readers_from, &self.probe) {
            _ if self.streams == 0 => "standard input: one streaming reader".to_string(),
            _ if self.subset => {
                "a subset (-s/-r/-t/-i/-e): one streaming reader tests each record".to_string()
            }
            _ if self.streams > 1 && self.index.is_none() => format!(
                "{} inputs without index counts: read one after another by one \
                 streaming reader",
                self.streams
            ),
            (svar2_planner::ReaderSource::User, _) => "from --readers".to_string(),
            (svar2_planner::ReaderSource::Probe, Some(pr)) => format!(
                "from the rate probe: {} records read in {:.1} ms, encoded in {:.1} ms by one \
                 thread: reading is {:.0} % of the work",
                pr.records,
                pr.t_read * 1e3,
                pr.t_exec * 1e3,
                pr.read_share * 100.0
            ),
            _ => format!(
                "reading taken as {:.0} % of the work: no rate probe ran ({})",
                p.read_share * 100.0,
                self.probe_skipped
                    .as_deref()
                    .unwrap_or("it found no piece to read")
            ),
        };
        let pieces = match p.cc > 1 || p.w > 1 {
            true => format!(
                ", pieces of ~{} records read through the index",
                p.piece_rows
            ),
            false => String::new(),
        };
        let _ = writeln!(
            s,
            "concurrency    cc = {} contig(s) at once, w = {} reader(s) per contig ({readers}); \
             {} batches encoded at once by {} thread(s){pieces}",
            p.cc, p.w, p.window, self.threads
        );
        if let Some(m) = &self.merge {
            let how = match m.workers {
                1 => "one reader joins them".to_string(),
                w => format!(
                    "{w} workers join them contig by contig, their queues holding at most {}",
                    human(m.queue_bytes)
                ),
            };
            let _ = writeln!(
                s,
                "merge          {} inputs joined as bcftools merge joins them: {how} \
                 ({} counted in the peak)",
                m.inputs,
                human(m.extra_bytes)
            );
        }
        let _ = writeln!(
            s,
            "chunks         inner {} variants x {} samples; shards {} x {}",
            p.chunks.variants, p.chunks.samples, p.variants_shard, p.samples_shard
        );
        if let Some(a) = p.amplification {
            let _ = writeln!(s, "amplification  {a:.3} expected for the --patch");
        }
        let measured = match &self.prefix {
            Some(m) => format!(
                "as {} records read from the input fill a batch{}",
                m.records,
                if m.packed { ", calls packed" } else { "" }
            ),
            None => "the header's worst case: no records were sampled".into(),
        };
        let _ = writeln!(
            s,
            "peak RSS       {} predicted ({} per record in flight, {measured}, x {} records; \
             budget {})",
            human(p.predicted_peak_rss),
            human(self.row_bytes),
            p.in_flight_bytes / self.row_bytes.max(1),
            human(self.budget)
        );
        match (p.records, p.shards, p.files) {
            (Some(r), Some(sh), Some(f)) => {
                let _ = writeln!(
                    s,
                    "output         {r} records; at most {sh} shard files, {f} files in all"
                );
            }
            _ => {
                let _ = writeln!(s, "output         record count unknown without an index");
            }
        }
        for n in &p.notes {
            let _ = writeln!(s, "note           {n}");
        }
        s
    }
}

/// Refuses input lists convert cannot read: none, an empty path, or standard input
/// among others.
pub(crate) fn check_inputs(inputs: &[std::path::PathBuf]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::Usage("no input files".into()));
    }
    if inputs.iter().any(|p| p.as_os_str().is_empty()) {
        return Err(Error::Usage(
            "an input path is empty (''): name a VCF or BCF file, or `-` for standard input".into(),
        ));
    }
    // `--merge none` (bcftools' `-m none` habit): clap takes `none` as an input.
    if let Some(mode) = inputs
        .iter()
        .find(|p| matches!(p.to_str(), Some("none" | "both")) && !p.exists())
    {
        return Err(Error::Usage(format!(
            "{}: no such input file; for the merge mode write --merge={0}",
            mode.display()
        )));
    }
    if inputs.len() > 1 && inputs.iter().any(|p| svar2_vcf::inputs::is_stdin(p)) {
        return Err(Error::Usage(
            "`-` (standard input) is read alone, not with other inputs".into(),
        ));
    }
    // A pipe by name (a FIFO, `<(…)`, /dev/stdin on a pipe) can be read once, and a
    // conversion opens its inputs more than once (the header and a sample of records
    // for the plan, then the records): the second open found the data gone, or waited
    // for a writer forever.
    for p in inputs.iter().filter(|p| !svar2_vcf::inputs::is_stdin(p)) {
        use std::os::unix::fs::FileTypeExt;
        let Ok(kind) = std::fs::metadata(p).map(|m| m.file_type()) else {
            continue; // (a missing file is named when it is opened)
        };
        if kind.is_fifo() || kind.is_socket() || kind.is_char_device() {
            return Err(Error::Usage(format!(
                "{}: a pipe or device, which can be read only once: pipe the records to \
                 standard input instead (`… | svar2 convert - out.zarr`), or write them \
                 to a file",
                p.display()
            )));
        }
    }
    Ok(())
}
