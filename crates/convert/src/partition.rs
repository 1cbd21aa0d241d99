//! Conversion on a cluster. `svar2 plan --partitions N -o plan.json` cuts the
//! variants axis into N contiguous partitions of about equal records (a contig
//! longer than a partition cut by position); each partition is then converted by
//! its own process — a Slurm array task, `xargs -P`, any machine that sees the files
//! and the output — into the one output store; `svar2 finalize plan.json` completes
//! it. The store is byte-identical to a single `svar2 convert` with the same layout.
//!
//! A partition writes the shard rows that hold only its records, straight into the
//! store, and leaves the rest in its own directory under [`WORK_DIR`]: the encoded
//! chunks of rows it shares with a neighbour (fragments), the records of an inner
//! chunk it shares (spilled whole: an encoded chunk cannot be split), and a
//! completion record (what it wrote and its sizes, record counts, stats, a digest),
//! written last. `finalize` refuses until every partition's record is in; then it
//! joins the shared rows and chunks, re-lays rows a partition wrote under a layout
//! that the whole data outgrew, and writes the arrays that span partitions and the
//! root `zarr.json` last.
//!
//! Where a contig is cut, a partition's place on the axis is the contig's offset plus
//! the records of the cuts before it, which no index counts: each partition counts
//! its own cut first and publishes the number (so neighbours started at the same
//! time need not wait), then counts any earlier cut nobody published yet. Counting
//! reads the bytes without parsing records.

use crate::arrays::{ArraySet, Geometry, Stats};
use crate::convert::{drain, normalise, open_call_set};
use crate::error::{Error, Result};
use crate::planning::{plan_partition, PlanRequest};
pub use crate::writer::{Fragment, LayoutRecord, PartitionOutput, RowRecord, SlotRecord};
use crate::writer::{Limits, Writer};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use svar2_planner::partition::Unit;
use svar2_planner::size::human;
use svar2_planner::PIECES_PER_READER;
use svar2_store::dir::StoreDir;
use svar2_vcf::column::Batch;
use svar2_vcf::index::{Index, IndexKind};
use svar2_vcf::pieces::{ContigRun, Piece, PieceReader, Stitcher};
use svar2_vcf::schema::Schema;

/// The directory in the output where partitions leave their work for `finalize`
/// (removed once the store is complete).
pub const WORK_DIR: &str = ".svar2-partitions";

/// An input as planned: its path (absolute) and size, checked by every task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedInput {
    pub path: PathBuf,
    pub bytes: u64,
}

/// A contig with records, in variants-axis order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedContig {
    pub name: String,
    /// Store contig index (what `variant_contig` holds).
    pub rid: u32,
    /// Which input holds it.
    pub file: u32,
    /// Records, from the index.
    pub records: u64,
    /// Where its first record sits on the variants axis.
    pub offset: u64,
    /// Position ranges (0-based, half-open; `None`: to the end) of the partitions it
    /// is cut into, in order; one when it is not cut.
    pub cuts: Vec<(u64, Option<u64>)>,
}

/// One contig's part in a partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedSpan {
    /// Index into the plan's contigs.
    pub contig: usize,
    /// Which of the contig's cuts.
    pub cut: usize,
    /// Records: the index's count when `exact` (a whole contig), else estimated from
    /// the share of the contig's length.
    pub records: u64,
    pub exact: bool,
}

/// One partition: one task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedPartition {
    /// What `--partition` takes: partitions are numbered longest first.
    pub index: usize,
    /// Its place along the variants axis.
    pub axis: usize,
    pub spans: Vec<PlannedSpan>,
    /// The spans as regions (`chr1`, `chr2:1-4980736`, `chr2:4980737-`; 1-based,
    /// inclusive, as bcftools takes them).
    pub regions: Vec<String>,
    pub records: u64,
    pub exact: bool,
    /// Shard rows it touches, first and last (estimated where a contig is cut).
    /// The first and last may be shared with a neighbour: `finalize` finishes those.
    pub shard_rows: Option<(u64, u64)>,
    /// On the planning machine, with its budget; each task plans for its own.
    pub predicted_peak_rss: u64,
}

/// The budget and cores the plan was made with (tasks plan for their own machine).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedOn {
    pub budget: u64,
    pub budget_from: String,
    pub cores: usize,
}

/// A partitioned conversion: written by `svar2 plan --partitions N -o plan.json`,
/// read by every task and by `finalize`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartitionPlan {
    /// The svar2 version that made it: a task of another version would write other
    /// bytes, so it refuses.
    pub svar2: String,
    /// blake3 of the plan's content (what the output's in-progress marker names).
    pub id: String,
    pub output: PathBuf,
    /// In reading order.
    pub inputs: Vec<PlannedInput>,
    pub samples: u64,
    pub records: u64,
    pub geometry: Geometry,
    pub contigs: Vec<PlannedContig>,
    pub partitions: Vec<PlannedPartition>,
    pub planned_on: PlannedOn,
    /// What the user should know (partitions smaller than a shard row, empty ones).
    pub notes: Vec<String>,
}

/// What a partition leaves for `finalize` when it is done (`<WORK_DIR>/<K>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartitionRecord {
    pub plan: String,
    pub partition: usize,
    /// Its records on the variants axis, `[first, end)`.
    pub first: u64,
    pub end: u64,
    pub output: PartitionOutput,
    /// Inner chunks it shares with a neighbour, spilled whole.
    pub spills: Vec<Spill>,
    /// Shard files it wrote into the store (relative path, bytes) and a blake3 over
    /// them (paths and bytes, in this order).
    pub files: Vec<(String, u64)>,
    pub digest: String,
    pub seconds: f64,
    pub host: String,
}

/// The records of an inner chunk a partition shares, spilled to a file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spill {
    pub file: String,
    pub first: u64,
    pub records: u64,
    /// What they add to the layouts (finalize needs it before it lays out any row).
    pub stats: Stats,
}

/// What `convert --plan --partition` did.
#[derive(Debug, Clone)]
pub struct PartitionSummary {
    pub records: u64,
    pub seconds: f64,
    pub files: usize,
    pub cc: usize,
    pub w: u32,
    pub predicted_peak_rss: u64,
}

/// What `finalize` did.
#[derive(Debug, Clone)]
pub struct FinalizeSummary {
    pub records: u64,
    pub seconds: f64,
    /// Shard rows shared by partitions, finished here.
    pub shared_rows: usize,
    /// Shard rows re-encoded because the whole data outgrew their layout.
    pub rewritten_shards: u64,
    pub store_bytes: u64,
    pub files: u64,
    /// The store was already complete: nothing was done.
    pub already_done: bool,
}

/// The position where `share` of contig `tid`'s bytes (by the index's file
/// offsets) lies behind: the first position whose records start past that share.
/// 0 when the index cannot tell (the contig is then not cut there).
fn locate(index: &Index, tid: i32, length: Option<i64>, share: f64) -> u64 {
    let Some((lo, hi)) = index.data_from(tid, 0) else {
        return 0;
    };
    let target = lo + ((hi - lo) as f64 * share.clamp(0.0, 1.0)) as u64;
    let starts_past = |pos: u64| {
        index
            .data_from(tid, pos as i64)
            .is_none_or(|(first, _)| first >= target)
    };
    // The smallest position whose records start at or past the target.
    let (mut a, mut b) = (1u64, length.map_or(1 << 31, |l| l as u64).max(2));
    if !starts_past(b) {
        return 0;
    }
    while a < b {
        let mid = a + (b - a) / 2;
        if starts_past(mid) {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    a
}

fn plan_error(plan: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{}: {msg}", plan.display()))
}

/// The whole contigs of a call set with records, in variants-axis order (the
/// pieces a one-reader conversion reads).
fn whole_contigs(
    files: &[svar2_vcf::source::VcfReader],
    schema: &Schema,
    counts: &[u64],
) -> Option<Vec<Piece>> {
    if files.len() == 1 {
        svar2_vcf::pieces::plan_pieces(&files[0].path, schema, counts, 1)
    } else {
        let own: Vec<(&Path, &Schema)> = files
            .iter()
            .map(|r| (r.path.as_path(), &r.schema))
            .collect();
        svar2_vcf::pieces::plan_pieces_inputs(&own, schema, 1)
    }
}

/// A call set opened for a partitioned conversion: its readers in reading order,
/// its schema (undeclared contigs added), the index kind, and the whole contigs.
struct CallSet {
    files: Vec<svar2_vcf::source::VcfReader>,
    schema: Schema,
    kind: IndexKind,
    counts: Vec<u64>,
    contigs: Vec<Piece>,
    report: crate::planning::PlanReport,
}

fn open_indexed(inputs: &[PathBuf], req: &PlanRequest) -> Result<CallSet> {
    if inputs.iter().any(|p| svar2_vcf::inputs::is_stdin(p)) {
        return Err(Error::Usage(
            "partitions read their inputs through the index; standard input cannot be \
             partitioned"
                .into(),
        ));
    }
    let mut req = req.clone();
    req.probe = false;
    let (report, files, mut schema) = open_call_set(inputs, &req)?;
    schema.add_undeclared_contigs(&report.undeclared_contigs);
    let no_counts = || {
        Error::Usage(format!(
            "{}: partitions need record counts from an index beside every input (CSI or \
             TBI with counts: `bcftools index`); {}",
            report.input.display(),
            report.counts_from
        ))
    };
    let kind = report.index.ok_or_else(no_counts)?;
    report.plan.records.ok_or_else(no_counts)?;
    let counts: Vec<u64> = report.contigs.iter().map(|c| c.cost).collect();
    let contigs = whole_contigs(&files, &schema, &counts).ok_or_else(no_counts)?;
    Ok(CallSet {
        files,
        schema,
        kind,
        counts,
        contigs,
        report,
    })
}

/// Plans a conversion of `inputs` into `output` as `n` partitions.
pub fn plan(
    inputs: &[PathBuf],
    output: &Path,
    n: usize,
    req: &PlanRequest,
) -> Result<PartitionPlan> {
    if n == 0 {
        return Err(Error::Usage("--partitions must be 1 or more".into()));
    }
    let absolute = |p: &Path| std::path::absolute(p).map_err(|e| Error::io(p, e));
    let inputs = inputs
        .iter()
        .map(|p| absolute(p))
        .collect::<Result<Vec<_>>>()?;
    let cs = open_indexed(&inputs, req)?;
    let samples = cs.schema.samples.len() as u64;
    let g = normalise(cs.report.geometry(), samples);
    let mut contigs = Vec::new();
    let mut at = 0u64;
    for p in &cs.contigs {
        let records = cs.counts[p.rid as usize];
        contigs.push(PlannedContig {
            name: cs.schema.contigs[p.rid as usize].name.clone(),
            rid: p.rid,
            file: p.file,
            records,
            offset: at,
            cuts: Vec::new(),
        });
        at += records;
    }
    let indexes: Vec<Option<Index>> = cs
        .files
        .iter()
        .map(|f| Index::load(&f.path, svar2_vcf::pieces::is_text(&f.path)))
        .collect();
    let units: Vec<Unit> = contigs
        .iter()
        .map(|c| Unit {
            records: c.records,
            cuttable: indexes[c.file as usize].is_some(),
        })
        .collect();
    let tids: Vec<i32> = contigs
        .iter()
        .map(|c| {
            cs.contigs
                .iter()
                .find(|p| p.rid == c.rid)
                .expect("planned")
                .tid
        })
        .collect();
    let cuts = svar2_planner::partition::partition(&units, n, |u, share| {
        let c = &contigs[u];
        let length = cs.schema.contigs[c.rid as usize].length.filter(|&l| l > 0);
        indexes[c.file as usize]
            .as_ref()
            .map_or(0, |idx| locate(idx, tids[u], length, share))
    });
    let mut by_axis: Vec<&svar2_planner::partition::Cut> = cuts.iter().collect();
    by_axis.sort_by_key(|c| c.axis);
    for cut in &by_axis {
        for s in &cut.spans {
            contigs[s.unit].cuts.push((s.beg, s.end));
        }
    }
    // Where each partition starts on the axis (estimated where a contig is cut).
    let mut starts = vec![0u64; cuts.len()];
    let mut at_axis = 0;
    for cut in &by_axis {
        starts[cut.axis] = at_axis;
        at_axis += cut.records();
    }
    let label = cs.report.input.clone();
    let mut partitions = Vec::with_capacity(cuts.len());
    for (index, cut) in cuts.iter().enumerate() {
        let spans: Vec<PlannedSpan> = cut
            .spans
            .iter()
            .map(|s| PlannedSpan {
                contig: s.unit,
                cut: contigs[s.unit]
                    .cuts
                    .iter()
                    .position(|&c| c == (s.beg, s.end))
                    .expect("recorded above"),
                records: s.records,
                exact: s.exact,
            })
            .collect();
        let records = cut.records();
        let first = starts[cut.axis];
        let shard_rows = (records > 0).then(|| {
            let last = first + records - 1;
            (first / g.variants_shard, last / g.variants_shard)
        });
        let mut counts = vec![0u64; cs.schema.contigs.len()];
        for s in &cut.spans {
            counts[contigs[s.unit].rid as usize] += s.records;
        }
        let predicted = plan_partition(
            &label,
            cs.schema.clone(),
            cs.kind,
            counts,
            cs.files.len(),
            g,
            req,
        )?;
        let regions = spans
            .iter()
            .map(|sp| {
                let c = &contigs[sp.contig];
                match c.cuts[sp.cut] {
                    (0, None) => c.name.clone(),
                    (beg, None) => format!("{}:{}-", c.name, beg + 1),
                    (beg, Some(end)) => format!("{}:{}-{end}", c.name, beg + 1),
                }
            })
            .collect();
        partitions.push(PlannedPartition {
            index,
            axis: cut.axis,
            spans,
            regions,
            records,
            exact: cut.spans.iter().all(|s| s.exact),
            shard_rows,
            predicted_peak_rss: predicted.plan.predicted_peak_rss,
        });
    }
    let mut notes = Vec::new();
    let sizes: Vec<u64> = partitions
        .iter()
        .map(|p| p.records)
        .filter(|&r| r > 0)
        .collect();
    let empty = partitions.len() - sizes.len();
    if empty > 0 {
        notes.push(format!(
            "{empty} partition(s) are empty (fewer records, or places to cut, than \
             partitions): their tasks finish at once"
        ));
    }
    if let Some(&smallest) = sizes.iter().min() {
        if smallest < 2 * g.variants_shard && sizes.len() > 1 {
            notes.push(format!(
                "partitions of ~{smallest} records are under two shard rows ({} records \
                 each): rows shared by partitions are finished by finalize, so it does much \
                 of the writing; fewer partitions or a smaller --variants-shard keep it short",
                g.variants_shard
            ));
        }
    }
    let mut plan = PartitionPlan {
        svar2: env!("CARGO_PKG_VERSION").into(),
        id: String::new(),
        output: absolute(output)?,
        inputs: cs
            .files
            .iter()
            .map(|f| {
                let bytes = std::fs::metadata(&f.path)
                    .map_err(|e| Error::io(&f.path, e))?
                    .len();
                Ok(PlannedInput {
                    path: f.path.clone(),
                    bytes,
                })
            })
            .collect::<Result<Vec<_>>>()?,
        samples,
        records: at,
        geometry: g,
        contigs,
        partitions,
        planned_on: PlannedOn {
            budget: cs.report.budget,
            budget_from: cs.report.budget_from.clone(),
            cores: cs.report.cores.usable,
        },
        notes,
    };
    plan.id = blake3::hash(&serde_json::to_vec(&plan).expect("plans serialise"))
        .to_hex()
        .to_string();
    Ok(plan)
}

impl PartitionPlan {
    /// Reads a plan `svar2 plan --partitions` wrote, refusing one of another
    /// version or one whose content no longer matches its id.
    pub fn load(path: &Path) -> Result<PartitionPlan> {
        let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let plan: PartitionPlan = serde_json::from_slice(&text)
            .map_err(|e| plan_error(path, format!("not a partition plan ({e})")))?;
        if plan.svar2 != env!("CARGO_PKG_VERSION") {
            return Err(plan_error(
                path,
                format!(
                    "made by svar2 {}, and this is {}: every task must run the version that \
                     planned (plan again with this one)",
                    plan.svar2,
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
        let mut check = plan.clone();
        check.id = String::new();
        let id = blake3::hash(&serde_json::to_vec(&check).expect("plans serialise")).to_hex();
        if id.as_str() != plan.id {
            return Err(plan_error(path, "was edited after planning: plan again"));
        }
        Ok(plan)
    }

    /// The plan as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plans serialise") + "\n"
    }

    /// The plan as people read it.
    pub fn render(&self) -> String {
        let g = &self.geometry;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "partition plan {} -> {} ({} records, {} samples, {} input(s))",
            &self.id[..12],
            self.output.display(),
            self.records,
            self.samples,
            self.inputs.len()
        );
        let _ = writeln!(
            s,
            "chunks         inner {} variants x {} samples; shards {} x {}; level {}",
            g.variants_chunk, g.samples_chunk, g.variants_shard, g.samples_shard, g.zstd_level
        );
        let _ = writeln!(
            s,
            "planned with   {} ({}), {} cores; each task plans its own machine",
            human(self.planned_on.budget),
            self.planned_on.budget_from,
            self.planned_on.cores
        );
        let _ = writeln!(
            s,
            "{:>5} {:>12} {:>13} {:>9}  regions",
            "part", "records", "shard rows", "peak RSS"
        );
        for p in &self.partitions {
            let rows = p.shard_rows.map_or("-".into(), |(a, b)| format!("{a}-{b}"));
            let regions = &p.regions;
            let _ = writeln!(
                s,
                "{:>5} {:>11}{} {:>13} {:>9}  {}",
                p.index,
                p.records,
                if p.exact { " " } else { "~" },
                rows,
                human(p.predicted_peak_rss),
                if regions.is_empty() {
                    "(empty)".into()
                } else {
                    regions.join(" ")
                }
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "note           {n}");
        }
        let _ = writeln!(
            s,
            "run            svar2 convert --plan PLAN --partition K   (K = 0..{}), then \
             svar2 finalize PLAN",
            self.partitions.len().saturating_sub(1)
        );
        s
    }

    /// Opens the inputs and checks they are the ones planned: same files, sizes,
    /// samples and index counts (a changed input would put records elsewhere).
    fn open_checked(&self, plan_path: &Path, req: &PlanRequest) -> Result<CallSet> {
        for i in &self.inputs {
            let now = std::fs::metadata(&i.path)
                .map_err(|e| Error::io(&i.path, e))?
                .len();
            if now != i.bytes {
                return Err(plan_error(
                    plan_path,
                    format!(
                        "{} has {now} bytes, and {} when planned: the input changed; plan again",
                        i.path.display(),
                        i.bytes
                    ),
                ));
            }
        }
        let paths: Vec<PathBuf> = self.inputs.iter().map(|i| i.path.clone()).collect();
        let cs = open_indexed(&paths, req)?;
        let same_order = cs.files.iter().map(|f| &f.path).eq(paths.iter());
        let same_counts = self
            .contigs
            .iter()
            .all(|c| cs.counts.get(c.rid as usize) == Some(&c.records));
        if !same_order
            || !same_counts
            || cs.schema.samples.len() as u64 != self.samples
            || cs.counts.iter().sum::<u64>() != self.records
        {
            return Err(plan_error(
                plan_path,
                "the inputs' headers or indexes no longer match the plan: plan again",
            ));
        }
        Ok(cs)
    }

    fn work_dir(&self) -> PathBuf {
        self.output.join(WORK_DIR)
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown host".into())
}

/// Takes partition `k`'s lock (held while the task runs): a second task given the
/// same partition refuses, naming the first.
fn lock_partition(work: &Path, k: usize) -> Result<std::fs::File> {
    use std::io::{Seek, Write};
    let path = work.join(format!("{k}.lock"));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(Error::Usage(format!(
                "partition {k} is being converted by another task ({}): one task per \
                 partition",
                holder.trim()
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
    }
    let me = format!("pid {} on {}", std::process::id(), host_name());
    f.set_len(0)
        .and_then(|()| f.rewind())
        .and_then(|()| f.write_all(me.as_bytes()))
        .map_err(|e| Error::io(&path, e))?;
    Ok(f)
}

/// Writes `bytes` whole (aside, then renamed).
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

fn remove_if_present(path: &Path) -> Result<()> {
    let r = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}

/// Whether the output is a complete store: its root `zarr.json` is written last.
fn is_complete(output: &Path) -> bool {
    output.join("zarr.json").is_file()
}

/// Where each contig cut starts, counted on demand and shared between tasks through
/// `<WORK_DIR>/counts/`.
struct CutCounts<'a> {
    plan: &'a PartitionPlan,
    cs: &'a CallSet,
    set: &'a ArraySet,
    dir: PathBuf,
    reader: Option<(usize, PieceReader)>,
}

impl CutCounts<'_> {
    fn piece(&self, contig: usize, cut: usize) -> Piece {
        let c = &self.plan.contigs[contig];
        let whole = self
            .cs
            .contigs
            .iter()
            .find(|p| p.rid == c.rid)
            .expect("checked against the plan");
        let (beg, end) = c.cuts[cut];
        Piece {
            rid: c.rid,
            tid: whole.tid,
            beg: beg as i64,
            end: end.map_or(i64::MAX >> 2, |e| e as i64),
            last_of_contig: end.is_none(),
            file: c.file,
        }
    }

    /// Records in the cuts of `contig` before `cut`.
    fn before(&mut self, contig: usize, cut: usize) -> Result<u64> {
        let mut n = 0;
        for j in 0..cut {
            n += self.get(contig, j)?;
        }
        Ok(n)
    }

    /// Records in cut `cut` of `contig`: the last cut holds what the others leave of
    /// the index's count (never read for it).
    fn records(&mut self, contig: usize, cut: usize) -> Result<u64> {
        let c = &self.plan.contigs[contig];
        if cut + 1 < c.cuts.len() {
            return self.get(contig, cut);
        }
        let (records, name, file) = (c.records, c.name.clone(), c.file as usize);
        let before = self.before(contig, cut)?;
        records.checked_sub(before).ok_or_else(|| {
            Error::Usage(format!(
                "{}: contig {name} has {records} records by its index but its cuts count \
                 {before}: the index is stale (re-index with `bcftools index -f`) and plan again",
                self.cs.files[file].path.display(),
            ))
        })
    }

    /// Records in cut `cut` of contig `contig`.
    fn get(&mut self, contig: usize, cut: usize) -> Result<u64> {
        let c = &self.plan.contigs[contig];
        if c.cuts.len() == 1 {
            return Ok(c.records);
        }
        let path = self.dir.join(format!("{contig}.{cut}"));
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(n) = text.trim().parse::<u64>() {
                return Ok(n);
            }
        }
        let piece = self.piece(contig, cut);
        let f = c.file as usize;
        if self.reader.as_ref().is_none_or(|(g, _)| *g != f) {
            self.reader = None;
            let r = PieceReader::open(&self.cs.files[f].path, &self.cs.schema, &self.set.record)?;
            self.reader = Some((f, r));
        }
        let t = Instant::now();
        let n = self
            .reader
            .as_mut()
            .expect("opened above")
            .1
            .count(&piece)?;
        tracing::info!(
            contig = c.name,
            cut,
            records = n,
            seconds = t.elapsed().as_secs_f64(),
            "counted a cut"
        );
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let tmp = self
            .dir
            .join(format!(".{contig}.{cut}.{}", std::process::id()));
        std::fs::write(&tmp, format!("{n}\n")).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        Ok(n)
    }
}

/// Converts partition `k` of the plan at `plan_path` on this machine (budget, cores
/// and readers from `req`; the layout is the plan's).
pub fn run(
    plan_path: &Path,
    k: usize,
    req: &PlanRequest,
    progress: bool,
) -> Result<PartitionSummary> {
    let t0 = Instant::now();
    let plan = PartitionPlan::load(plan_path)?;
    let n = plan.partitions.len();
    if k >= n {
        return Err(plan_error(
            plan_path,
            format!("has {n} partitions: --partition takes 0 to {}", n - 1),
        ));
    }
    let cs = plan.open_checked(plan_path, req)?;
    if is_complete(&plan.output) {
        return Err(Error::Usage(format!(
            "{}: already a complete store (finalize ran); remove it to convert again",
            plan.output.display()
        )));
    }
    let store = StoreDir::join(&plan.output, &plan.id)?;
    let work = plan.work_dir();
    std::fs::create_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    let _lock = lock_partition(&work, k)?;
    // A previous attempt's leftovers: its record, its failure, its own files.
    for stale in [format!("{k}.json"), format!("{k}.failed"), k.to_string()] {
        remove_if_present(&work.join(stale))?;
    }
    let result = run_locked(&plan, &cs, k, store, req, progress, t0);
    if let Err(e) = &result {
        let _ = std::fs::write(work.join(format!("{k}.failed")), format!("{e}\n"));
    }
    result
}

#[allow(clippy::too_many_arguments)]
fn run_locked(
    plan: &PartitionPlan,
    cs: &CallSet,
    k: usize,
    store: StoreDir,
    req: &PlanRequest,
    progress: bool,
    t0: Instant,
) -> Result<PartitionSummary> {
    let part = &plan.partitions[k];
    let work = plan.work_dir();
    let own = work.join(k.to_string());
    let schema = &cs.schema;
    let set = ArraySet::new(schema);
    let g = plan.geometry;
    let n_samples = schema.samples.len();
    let mut counts = CutCounts {
        plan,
        cs,
        set: &set,
        dir: work.join("counts"),
        reader: None,
    };
    // Own cuts first (a neighbour started at the same time needs them), then the
    // cuts before them.
    for s in &part.spans {
        if s.cut + 1 < plan.contigs[s.contig].cuts.len() {
            counts.get(s.contig, s.cut)?;
        }
    }
    let mut runs_at: Vec<(usize, u64, u64)> = Vec::new(); // (span, offset, records)
    for (i, s) in part.spans.iter().enumerate() {
        let offset = plan.contigs[s.contig].offset + counts.before(s.contig, s.cut)?;
        runs_at.push((i, offset, counts.records(s.contig, s.cut)?));
    }
    let first = runs_at.first().map_or(0, |r| r.1);
    let end = runs_at.last().map_or(0, |r| r.1 + r.2);
    let records: u64 = runs_at.iter().map(|r| r.2).sum();
    if first + records != end {
        return Err(Error::Usage(format!(
            "partition {k}: its cuts do not meet on the variants axis (records {first}..{end} \
             hold {records}): the index is stale; re-index and plan again"
        )));
    }
    // Boundaries moved onto the inner-chunk grid, so no chunk is shared: the records
    // up to the next chunk boundary go to the partition before it, when they lie in
    // the first span of the partition after it (both sides decide alike; otherwise
    // the chunk is shared and spilled).
    let vc = g.variants_chunk;
    let to_grid = |b: u64| (b.div_ceil(vc) * vc).min(plan.records);
    let lead = to_grid(first) - first;
    let skip = match runs_at.first() {
        Some(&(_, _, n)) if lead > 0 && lead <= n => lead,
        _ => 0,
    };
    // The partition after this one on the axis that holds records (some hold none).
    let mut after: Vec<&PlannedPartition> = plan
        .partitions
        .iter()
        .filter(|p| p.axis > part.axis)
        .collect();
    after.sort_by_key(|p| p.axis);
    let mut next = None;
    'after: for p in after {
        for s in &p.spans {
            if counts.records(s.contig, s.cut)? > 0 {
                next = Some(p.spans[0].clone());
                break 'after;
            }
        }
    }
    let tail = to_grid(end) - end;
    let borrow = match (&next, records) {
        (Some(s), 1..) if tail > 0 && tail <= counts.records(s.contig, s.cut)? => {
            Some((s.clone(), tail))
        }
        _ => None,
    };
    drop(counts);
    let lo = first + skip;
    let hi = end + borrow.as_ref().map_or(0, |b| b.1);
    // This machine's plan for this partition's records, on the plan's grid.
    let mut per_contig = vec![0u64; schema.contigs.len()];
    for &(i, _, n) in &runs_at {
        per_contig[plan.contigs[part.spans[i].contig].rid as usize] += n;
    }
    if let Some((s, n)) = &borrow {
        per_contig[plan.contigs[s.contig].rid as usize] += n;
    }
    let label = cs.files[0].path.clone();
    let report = plan_partition(
        &label,
        schema.clone(),
        cs.kind,
        per_contig,
        cs.files.len(),
        g,
        req,
    )
    .map_err(|e| {
        Error::Usage(format!(
            "partition {k}: {e} (the plan fixes the chunks: give this task a larger \
             --max-mem, or plan again with a smaller --variants-chunk)"
        ))
    })?;
    if normalise(report.geometry(), n_samples as u64) != g {
        return Err(Error::Usage(format!(
            "partition {k}: this machine's plan would change the plan's chunking ({:?}): give \
             it more --max-mem",
            report.geometry()
        )));
    }
    let (cc, w) = (report.plan.cc, report.plan.w as usize);
    tracing::info!(
        partition = k,
        first,
        end,
        cc,
        w,
        predicted_peak_rss = report.plan.predicted_peak_rss,
        budget = report.budget,
        "converting a partition"
    );
    // Each span cut into pieces for its readers.
    let mut pieces = Vec::new();
    let mut runs = Vec::new();
    let whole = |rid: u32| cs.contigs.iter().find(|p| p.rid == rid).expect("planned");
    // (span, offset of its first kept record, records kept, skipped, borrowed)
    let mut todo: Vec<(&PlannedSpan, u64, u64, u64, bool)> = runs_at
        .iter()
        .enumerate()
        .map(|(j, &(i, offset, n))| {
            let skip = if j == 0 { skip } else { 0 };
            (&part.spans[i], offset + skip, n - skip, skip, false)
        })
        .filter(|t| t.2 > 0)
        .collect();
    if let Some((s, n)) = &borrow {
        todo.push((s, end, *n, 0, true));
    }
    for &(s, offset, expected, skip, take) in &todo {
        let c = &plan.contigs[s.contig];
        let (beg, end) = c.cuts[s.cut];
        let length = schema.contigs[c.rid as usize].length.unwrap_or(0).max(0) as u64;
        let stop = end.unwrap_or(length.max(beg + 1));
        let k_pieces = if length > 0 && !take {
            (PIECES_PER_READER as usize * w).max(1) as u64
        } else {
            1
        };
        let step = (stop - beg).div_ceil(k_pieces).max(1);
        let mut idx = Vec::new();
        let mut at = beg;
        while at < stop || idx.is_empty() {
            let next = (at + step).min(stop);
            let last = next >= stop;
            idx.push(pieces.len());
            pieces.push(Piece {
                rid: c.rid,
                tid: whole(c.rid).tid,
                beg: at as i64,
                end: if last {
                    end.map_or(i64::MAX >> 2, |e| e as i64)
                } else {
                    next as i64
                },
                last_of_contig: last && end.is_none(),
                file: c.file,
            });
            at = next;
            if last {
                break;
            }
        }
        runs.push(ContigRun {
            rid: c.rid,
            pieces: idx,
            offset,
            expected,
            skip,
            take,
        });
    }
    // Longest first when several run at once.
    if cc > 1 {
        runs.sort_by(|a, b| b.expected.cmp(&a.expected).then(a.offset.cmp(&b.offset)));
    }
    let threads = report.threads;
    let mut writer = Writer::new(
        &label,
        Limits::of(&report),
        schema.clone(),
        set.clone(),
        g,
        store,
    );
    writer.set_parts_dir(own.join("parts"));
    std::fs::create_dir_all(&own).map_err(|e| Error::io(&own, e))?;
    let pool = crate::convert::encoder_pool(threads)?;
    let pb = crate::convert::progress_bar(progress, Some(hi - lo));
    let vc = g.variants_chunk as usize;
    let mut stitcher = Stitcher::new(&set.record, n_samples, vc, lo..hi, plan.records);
    let (tx, rx) = crossbeam_channel::bounded::<svar2_vcf::Result<Batch>>(0);
    let (recycle_tx, _) = crossbeam_channel::bounded::<Batch>(1);
    let paths: Vec<PathBuf> = cs.files.iter().map(|f| f.path.clone()).collect();
    let mut spills = Vec::new();
    let vs = g.variants_shard;
    let total = plan.records;
    let output = std::thread::scope(|scope| {
        let (set_ref, pieces_ref, runs_ref, paths_ref) = (&set, &pieces, &runs, &paths);
        scope.spawn(move || {
            svar2_vcf::pieces::read_in_pieces(
                paths_ref,
                schema,
                &set_ref.record,
                pieces_ref,
                runs_ref,
                (cc, w),
                vc,
                &tx,
            );
        });
        pool.install(|| -> Result<PartitionOutput> {
            drain(
                rx,
                Some(&mut stitcher),
                &mut writer,
                &recycle_tx,
                &pb,
                |b| {
                    let file = format!("spill.{}.bin", b.first);
                    crate::spill::write(&own.join(&file), &b)?;
                    let mut stats = Stats::new(&set);
                    for (s, c) in stats.columns.iter_mut().zip(&b.columns) {
                        s.merge(&c.stats);
                    }
                    stats.max_alleles = b.max_alleles;
                    stats.max_ploidy = b.max_ploidy;
                    spills.push(Spill {
                        file,
                        first: b.first,
                        records: b.len() as u64,
                        stats,
                    });
                    Ok(())
                },
            )?;
            writer.finish_partition(|row| row * vs >= lo && ((row + 1) * vs).min(total) <= hi)
        })
    });
    pb.finish_and_clear();
    let output = output?;
    let files = writer.written_files(&output)?;
    let digest = digest_files(&plan.output, &files)?;
    let record = PartitionRecord {
        plan: plan.id.clone(),
        partition: k,
        first: lo,
        end: hi,
        output,
        spills,
        files,
        digest,
        seconds: t0.elapsed().as_secs_f64(),
        host: host_name(),
    };
    let n_files = record.files.len();
    write_whole(
        &work.join(format!("{k}.json")),
        &serde_json::to_vec(&record).expect("records serialise"),
    )?;
    Ok(PartitionSummary {
        records: hi - lo,
        seconds: t0.elapsed().as_secs_f64(),
        files: n_files,
        cc,
        w: w as u32,
        predicted_peak_rss: report.plan.predicted_peak_rss,
    })
}

/// blake3 over files (relative path and bytes, in order), as `svar2 digest` hashes.
fn digest_files(root: &Path, files: &[(String, u64)]) -> Result<String> {
    let mut h = blake3::Hasher::new();
    for (rel, _) in files {
        let p = root.join(rel);
        let bytes = std::fs::read(&p).map_err(|e| Error::io(&p, e))?;
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().to_hex().to_string())
}

/// Where a partition stands, for `finalize`.
enum State {
    Done(Box<PartitionRecord>),
    Running(String),
    Failed(String),
    Interrupted,
    NotRun,
}

fn state(plan: &PartitionPlan, k: usize) -> State {
    let work = plan.work_dir();
    let lock = work.join(format!("{k}.lock"));
    if let Ok(f) = std::fs::File::open(&lock) {
        if let Err(std::fs::TryLockError::WouldBlock) = f.try_lock_shared() {
            return State::Running(std::fs::read_to_string(&lock).unwrap_or_default());
        }
    }
    if let Ok(bytes) = std::fs::read(work.join(format!("{k}.json"))) {
        return match serde_json::from_slice::<PartitionRecord>(&bytes) {
            Ok(r) if r.plan == plan.id && r.partition == k => State::Done(Box::new(r)),
            _ => State::Failed("its completion record is not this plan's".into()),
        };
    }
    if let Ok(msg) = std::fs::read_to_string(work.join(format!("{k}.failed"))) {
        return State::Failed(msg.trim().to_string());
    }
    if lock.exists() {
        State::Interrupted
    } else {
        State::NotRun
    }
}

/// Marks a finalize that began re-encoding shards the partitions wrote: if it is
/// interrupted, those shards can no longer be told apart, so the partitions must run
/// again.
const RELAYING: &str = "finalize.relaying";

/// Completes the store of the plan at `plan_path` once every partition is done.
pub fn finalize(plan_path: &Path, req: &PlanRequest) -> Result<FinalizeSummary> {
    let t0 = Instant::now();
    let plan = PartitionPlan::load(plan_path)?;
    if is_complete(&plan.output) {
        // A finalize stopped after the root was written left only its clean-up.
        remove_if_present(&plan.work_dir())?;
        remove_if_present(&plan.output.join(svar2_store::dir::IN_PROGRESS))?;
        let (store_bytes, files) = svar2_store::dir::disk_usage(&plan.output);
        return Ok(FinalizeSummary {
            records: plan.records,
            seconds: t0.elapsed().as_secs_f64(),
            shared_rows: 0,
            rewritten_shards: 0,
            store_bytes,
            files,
            already_done: true,
        });
    }
    let cs = plan.open_checked(plan_path, req)?;
    let work = plan.work_dir();
    if work.join(RELAYING).exists() {
        return Err(plan_error(
            plan_path,
            format!(
                "a previous finalize was interrupted while re-encoding shards the partitions \
                 wrote, which can no longer be told from new ones: remove {} and run every \
                 partition again, then finalize",
                plan.output.display()
            ),
        ));
    }
    let mut records = Vec::new();
    let mut not_done = Vec::new();
    for k in 0..plan.partitions.len() {
        match state(&plan, k) {
            State::Done(r) => records.push(*r),
            State::Running(who) => not_done.push(format!("{k} (still running: {})", who.trim())),
            State::Failed(why) => not_done.push(format!("{k} (failed: {why})")),
            State::Interrupted => not_done.push(format!("{k} (started, did not finish)")),
            State::NotRun => not_done.push(format!("{k} (not run)")),
        }
    }
    if !not_done.is_empty() {
        return Err(plan_error(
            plan_path,
            format!(
                "{} of {} partitions are not done: {}; run each with `svar2 convert --plan {} \
                 --partition K`, then finalize again",
                not_done.len(),
                plan.partitions.len(),
                not_done.join(", "),
                plan_path.display()
            ),
        ));
    }
    // Every file a partition wrote is still whole.
    for r in &records {
        for (rel, bytes) in &r.files {
            let p = plan.output.join(rel);
            let now = std::fs::metadata(&p).map(|m| m.len()).ok();
            if now != Some(*bytes) {
                return Err(plan_error(
                    plan_path,
                    format!(
                        "partition {}: {} is {} (it wrote {bytes} bytes); run partition {} \
                         again",
                        r.partition,
                        p.display(),
                        now.map_or("missing".into(), |n| format!("{n} bytes")),
                        r.partition
                    ),
                ));
            }
        }
    }
    records.sort_by_key(|r| r.first);
    let store = StoreDir::join(&plan.output, &plan.id)?;
    let schema = cs.schema.clone();
    let set = ArraySet::new(&schema);
    let g = plan.geometry;
    let host = svar2_planner::host::Host::system();
    let (budget, _) =
        svar2_planner::host::resolve_budget(req.max_mem, host.memory_limit().as_ref())
            .map_err(Error::Usage)?;
    let threads = req.threads.unwrap_or(host.cores().usable).max(1);
    let limits = Limits {
        budget,
        planned_peak: 0,
        threads,
    };
    let mut w = Writer::new(plan_path, limits, schema, set.clone(), g, store);
    let own = work.join("finalize");
    remove_if_present(&own)?;
    w.set_parts_dir(own);
    for r in &records {
        w.absorb(&r.output)?;
        for s in &r.spills {
            w.note_stats(&s.stats);
        }
    }
    let pool = crate::convert::encoder_pool(threads)?;
    let vc = g.variants_chunk;
    // Shared rows are completed in record order — fragments and the chunks the
    // partitions shared (their parts joined, then encoded once) — so each row's
    // chunks land in slot order and most shards need only their index appended.
    enum Shared<'a> {
        Fragment(&'a Fragment, PathBuf),
        Chunk(u64),
    }
    let mut todo: Vec<(u64, Shared)> = Vec::new();
    let mut chunk_parts: std::collections::BTreeMap<u64, Vec<PathBuf>> = Default::default();
    for r in &records {
        let dir = work.join(r.partition.to_string());
        for f in &r.output.fragments {
            let at = (f.row * g.variants_shard).max(r.first);
            todo.push((at, Shared::Fragment(f, dir.join("parts"))));
        }
        for s in &r.spills {
            let chunk = s.first / vc;
            let parts = chunk_parts.entry(chunk).or_default();
            if parts.is_empty() {
                todo.push((chunk * vc, Shared::Chunk(chunk)));
            }
            parts.push(dir.join(&s.file));
        }
    }
    todo.sort_by_key(|(at, _)| *at);
    let shared_rows = pool.install(|| -> Result<usize> {
        let mut rows = std::collections::BTreeSet::new();
        let n_samples = cs.schema.samples.len();
        for (at, piece) in &todo {
            rows.insert(at / g.variants_shard);
            match piece {
                Shared::Fragment(f, dir) => w.add_fragment(f, dir)?,
                Shared::Chunk(chunk) => {
                    let mut stitcher = Stitcher::new(
                        &set.record,
                        n_samples,
                        vc as usize,
                        0..plan.records,
                        plan.records,
                    );
                    let mut whole = None;
                    for path in &chunk_parts[chunk] {
                        whole = stitcher.push(crate::spill::read(path, &set.record.specs)?);
                    }
                    match whole {
                        Some(b) => {
                            w.add_batch(b)?;
                        }
                        None => {
                            return Err(plan_error(
                                plan_path,
                                format!(
                                    "the parts of inner chunk {chunk} the partitions shared do \
                                     not join up: run the partitions again"
                                ),
                            ))
                        }
                    }
                }
            }
        }
        Ok(rows.len())
    })?;
    if w.records() != plan.records {
        return Err(plan_error(
            plan_path,
            format!(
                "the partitions hold {} records, and the plan {}: run the partitions again",
                w.records(),
                plan.records
            ),
        ));
    }
    let relaying = w.outgrown_rows() > 0;
    if relaying {
        std::fs::write(work.join(RELAYING), b"").map_err(|e| Error::io(&work, e))?;
    }
    pool.install(|| w.finish())?;
    remove_if_present(&work)?;
    let (store_bytes, files) = svar2_store::dir::disk_usage(&plan.output);
    Ok(FinalizeSummary {
        records: plan.records,
        seconds: t0.elapsed().as_secs_f64(),
        shared_rows,
        rewritten_shards: w.rewritten(),
        store_bytes,
        files,
        already_done: false,
    })
}
