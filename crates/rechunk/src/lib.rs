//! `svar2-rechunk`: working on VCF Zarr stores that exist already — any Zarr v2 or v3
//! group, svar2's or another tool's (bio2zarr's `vcf2zarr`, sgkit). Today: [`inspect`],
//! what a store's layout costs a reader that fetches patches.

pub mod inspect;
