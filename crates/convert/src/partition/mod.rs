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
//!
//! Modules in dependency order: `records` (the plan file, completion records, file
//! helpers), `call_set`, `plan`, `task`, `finalize`.

mod call_set;
mod finalize;
mod plan;
mod records;
mod space;
mod task;

pub use crate::writer::{Fragment, LayoutRecord, PartitionOutput, RowRecord, SlotRecord};
pub use finalize::finalize;
pub use plan::plan;
pub use records::{
    FinalizeSummary, PartitionPlan, PartitionRecord, PartitionSummary, PlannedContig, PlannedInput,
    PlannedOn, PlannedPartition, PlannedSpan, Spill, WORK_DIR,
};
pub use task::run;
