//! One error type for the whole conversion, so every failure reaches the user as one
//! sentence that names the file, the place in it and what is wrong.

use std::path::PathBuf;

/// Everything that can stop a conversion. Messages name the file and, for record
/// problems, `contig:pos`, because that is what a user needs to find and fix the input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: cannot open: {msg}")]
    Open { path: PathBuf, msg: String },
    #[error("{path}: bad header: {msg}")]
    Header { path: PathBuf, msg: String },
    #[error("{path}: record {record} ({locus}): {msg}")]
    Record {
        path: PathBuf,
        record: u64,
        locus: String,
        msg: String,
    },
    /// Writing or reading the store, and any file I/O (the store crate's error, which
    /// names the path or chunk key and says what to do about a full or read-only disk).
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    #[error("{0}")]
    Usage(String),
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Store(svar2_store::Error::io(path, source))
    }
}
