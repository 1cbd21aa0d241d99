//! The VCF side's errors: each names the file and, for a record, its number and
//! `contig:pos`, because that is what a user needs to find and fix the input.

use std::path::PathBuf;

/// Everything reading VCF/BCF can fail on.
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
    /// Inputs that cannot be read together, or a request the reader cannot serve.
    #[error("{0}")]
    Usage(String),
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;
