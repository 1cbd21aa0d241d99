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
    /// A bgzipped input without the BGZF end-of-file block (see `truncation`);
    /// `records`: how many were read before its end (`None`: found up front).
    #[error("{}", crate::truncation::message(.path, *.records))]
    Truncated { path: PathBuf, records: Option<u64> },
    /// Inputs that cannot be read together, or a request the reader cannot serve.
    #[error("{0}")]
    Usage(String),
}

/// Bytes from a file shown in a message: invalid UTF-8 replaced, control bytes
/// (a NUL, a tab, an escape) written as escapes, so one error stays one clean line.
pub fn printable(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for c in String::from_utf8_lossy(bytes).chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;
