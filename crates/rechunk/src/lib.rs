//! `svar2-rechunk`: working on VCF Zarr stores that exist already — any Zarr v2 or v3
//! group, svar2's or another tool's (bio2zarr's `vcf2zarr`, sgkit): [`inspect`] shows
//! what a store's layout costs a reader that fetches patches; [`rechunk`] rewrites it
//! in svar2's layout for the patch, as `convert` would have written it.

pub mod error;
pub mod inspect;
pub mod rechunk;

pub use error::{Error, Result};
pub use rechunk::{dry_run, rechunk, Options, RechunkReport, Summary};
