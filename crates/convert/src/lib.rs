//! `svar2-convert`: VCF/BCF to VCF Zarr (v3, sharded, GPU-decodable inner chunks).

pub mod arrays;
pub mod column;
mod direct;
/// Test data for this crate's tests and the workspace's (not part of the API).
#[doc(hidden)]
pub mod testing {
    pub use crate::direct::{both_paths, mixed_vcf};
}
pub mod error;
pub mod extract;
pub mod fastvcf;
mod genotype;
mod hts;
pub mod index;
pub mod inputs;
pub mod partition;
pub mod pieces;
pub mod planning;
pub mod probe;
pub mod schema;
pub mod spill;
pub mod truncation;
mod writer;

pub use error::{Error, Result};
pub mod chunk;
pub mod convert;
pub mod source;

pub use convert::{convert, convert_inputs, ContigOrder, Options, Summary};
pub use svar2_store::dir::digest;
