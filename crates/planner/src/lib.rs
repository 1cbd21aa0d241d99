//! `svar2-planner`: how a conversion should run, decided from plain numbers.
//!
//! Every planning rule here is a pure function of its inputs (cores, a memory budget,
//! per-contig costs, sample count, bytes per record, probe rates): no files, no
//! clocks, which keeps each unit-testable with literal values. The one module that
//! reads the machine is [`host`] (cgroup memory limit and usable cores), kept apart so
//! every command that plans — convert, and rechunk without htslib — reads them the
//! same way; headers and indexes are read by `svar2-convert`.

pub mod geometry;
pub mod host;
pub mod memory;
pub mod order;
pub mod partition;
pub mod rechunk;
pub mod request;
pub mod size;

mod plan;
pub use geometry::Requested;
pub use plan::{
    pieces_for, plan, readers_that_fit, Plan, PlanError, PlanInput, ReaderSource,
    DEFAULT_READ_SHARE, MAX_AUTO_READERS, MAX_READERS, PARSE_AHEAD_THREADS, PIECES_PER_READER,
};
pub use request::{BudgetRequest, LayoutRequest};
