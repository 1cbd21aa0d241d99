//! `svar2-convert`: VCF/BCF to VCF Zarr (v3, sharded, GPU-decodable inner chunks) —
//! planning, the rate probe, the pipeline, chunk layout and encoding, the shard
//! writer and partitions, on top of `svar2-vcf` (records into column batches),
//! `svar2-store` (the store contract) and `svar2-planner` (pure planning).

mod ahead;
pub mod arrays;
pub mod chunk;
pub mod convert;
pub mod error;
pub mod later;
pub mod partition;
mod pipeline;
pub mod planning;
pub mod prefix;
pub mod probe;
mod row_limit;
pub mod schedule;
pub mod spill;
mod writer;

pub use convert::{convert, convert_inputs, ContigOrder, Options, Summary};
pub use error::{Error, Result};
pub use svar2_store::dir::digest;
