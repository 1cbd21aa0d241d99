//! `svar2-convert`: VCF/BCF to VCF Zarr (v3, sharded, GPU-decodable inner chunks).

pub mod arrays;
pub mod codec;
pub mod column;
pub mod error;
pub mod fastvcf;
pub mod host;
pub mod index;
pub mod pieces;
pub mod planning;
pub mod probe;
pub mod schema;

pub use error::{Error, Result};
pub mod chunk;
pub mod convert;
pub mod shard;
pub mod source;
pub mod store;

pub use convert::{convert, ContigOrder, Options, Summary};
pub use store::digest;
