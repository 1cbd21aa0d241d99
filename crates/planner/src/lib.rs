//! `svar2-planner`: how a conversion should run, decided from plain numbers.
//!
//! Everything here is a pure function of its inputs (cores, a memory budget, per-contig
//! costs, sample count, bytes per record, probe rates): no files, no clocks. The I/O
//! that gathers those numbers (cgroups, indexes, headers) lives in `svar2-convert`.
//! That keeps every rule here unit-testable with literal values.

pub mod geometry;
pub mod memory;
pub mod order;
pub mod size;

mod plan;
pub use plan::{plan, Plan, PlanError, PlanInput, ReaderSource, Requested, PIECES_PER_READER};
