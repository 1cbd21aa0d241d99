//! `svar2-store`: the svar2 store contract, shared by everything that writes or reads
//! it — convert, rechunk, the reader and the GPU path — without htslib or the VCF
//! pipeline.
//!
//! A store is VCF Zarr on Zarr v3: every variant-axis array sharded
//! (`sharding_indexed`, index at the end with a crc32c), every inner chunk blosc-zstd
//! with bit or byte shuffle (strings: vlen-utf8 + zstd), the root `zarr.json` written
//! last. One concept per module:
//!
//! - [`dtype`]: data types and their JSON;
//! - [`chain`]: the inner codec chain per array (the one bitshuffle/shuffle rule);
//! - [`codec`]: encoding and decoding inner chunks through zarrs;
//! - [`shard`]: shard bytes, and the index parsed from a shard's tail alone;
//! - [`grid`]: the chunk grid every array is placed on;
//! - [`key`]: chunk keys and their paths;
//! - [`region`]: the region index readers use to find a genomic range;
//! - [`metadata`]: array metadata, written and read back;
//! - [`fields`]: which arrays are VCF fields and how they were declared;
//! - [`layout`]: the layout of any Zarr v2 or v3 group's arrays, from metadata and files;
//! - [`replace`]: what an output path holds and whether svar2 may replace it;
//! - [`dir`]: the store directory (lock, in-progress marker, completion, digest);
//! - [`json`]: metadata JSON as Python writes it (bare `NaN` attributes);
//! - [`vlen`]: string chunks checked and decoded, bounded, before zarrs sees them;
//! - [`boxes`]: boxes of an array (chunks, tiles, patches) and copies between them;
//! - [`written`]: which shards a writer wrote (a missing one is damage, not fill).
//!
//! Blosc frames (encoded here, decoded by the reader and the GPU path) are the
//! `svar2-blosc` crate's; reading any Zarr store is `svar2-zarr`'s; where a store's
//! objects live (a directory, a bucket, a zip file), read and written through one
//! trait, is `svar2-storage`'s.

pub mod boxes;
pub mod chain;
pub mod codec;
pub mod dir;
pub mod dtype;
pub mod error;
pub mod fields;
pub mod grid;
pub mod json;
pub mod key;
pub mod layout;
pub mod metadata;
pub mod region;
pub mod replace;
pub mod shard;
pub mod vlen;
pub mod written;

pub use dtype::Dtype;
pub use error::{Error, Result};
