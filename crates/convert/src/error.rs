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
    #[error("{path}: {source}{hint}", hint = io_hint(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} already exists; pass --force to replace it")]
    OutputExists { path: PathBuf },
    #[error(
        "{path}: another svar2 conversion is writing this store; wait for it to finish \
         or choose another output"
    )]
    Locked { path: PathBuf },
    #[error("{path}: {msg}")]
    Store { path: PathBuf, msg: String },
    #[error("{0}")]
    Usage(String),
    #[error("internal codec error: {0}")]
    Codec(String),
}

/// What to do about the I/O failures users meet on clusters.
fn io_hint(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind::*;
    match e.kind() {
        StorageFull | QuotaExceeded => {
            " (free some space or write elsewhere; the partial store was removed)"
        }
        ReadOnlyFilesystem => " (choose an output on a writable file system)",
        PermissionDenied => " (choose an output you may write to)",
        _ => "",
    }
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
