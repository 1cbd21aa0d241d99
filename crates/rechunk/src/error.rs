//! Rechunk's errors: each names the store, array or chunk key it is about.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    /// The source is not a store rechunk can read (not Zarr, not VCF Zarr, a codec or
    /// data type zarrs or VCF Zarr do not have).
    #[error("{path}: {msg}")]
    Input { path: PathBuf, msg: String },
    /// A source chunk that cannot be read or decoded; `key` is its chunk key.
    #[error("{key}: {msg}")]
    Chunk { key: String, msg: String },
    /// Options that cannot work (a budget too small, output inside the input).
    #[error("{0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, Error>;
