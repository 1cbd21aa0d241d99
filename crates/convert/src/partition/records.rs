//! The partition plan file and what partitions leave for `finalize`: the plan's
//! inputs, contigs, spans and partitions, a partition's completion record, and the
//! small file helpers every step shares.

use crate::arrays::{Geometry, Stats};
use crate::error::{Error, Result};
use crate::writer::PartitionOutput;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
    /// Each file's chunks ([`ChunkSum`](svar2_store::written::ChunkSum)), in `files`'
    /// order (empty: a build before it), for the store's record of the chunks.
    #[serde(default)]
    pub chunk_sums: Vec<u64>,
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

pub(super) fn plan_error(plan: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{}: {msg}", plan.display()))
}

pub(super) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown host".into())
}

pub(super) fn remove_if_present(path: &Path) -> Result<()> {
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
