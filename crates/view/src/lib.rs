//! `svar2-view`: VCF and BCF back out of any VCF Zarr store (svar2's sharded stores,
//! bio2zarr's v2 and v3, rechunked ones), with bcftools' `view` and `query` flags.
//! The store side of the round trip: the header facts from the arrays and attributes,
//! records read block by block through the patch reader; the VCF side (printing,
//! BGZF/BCF output, query formats) is `svar2-vcf`'s.
//!
//! Modules in dependency order: `error`, `header` (the store's header facts),
//! `select` (regions, targets, samples), `rows` (a run of rows into a block), `filter`
//! (`-i`/`-e`: each block's verdicts), `fill` (`--fill-tags`), `run`
//! (`view` and `query`: blocks read ahead, formatted in parallel, written in order).

pub mod error;
pub mod fill;
pub mod filter;
pub mod header;
pub mod rows;
pub mod run;
pub mod select;

pub use error::{Error, Result};
pub use run::{query, view, KeptFormat, Printed, QueryOptions, ViewOptions};
