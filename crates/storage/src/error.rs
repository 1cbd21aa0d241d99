//! Storage errors: each names the path or URL it is about. The store crate maps them
//! to its own variants of the same names, so a user sees one message either way.

use std::path::PathBuf;

/// What can go wrong reaching a store's objects.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}{hint}", hint = io_hint(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A URL of a scheme svar2 does not read or write (only `s3://` is supported):
    /// refused by name, never written as a local folder called `gs:`.
    #[error(
        "{url}: {scheme}:// URLs are not supported; svar2 reads and writes local paths, \
         .zip files and s3:// buckets (AWS or S3-compatible: set AWS_ENDPOINT_URL) — or \
         mount the storage and give that path"
    )]
    Url { url: String, scheme: String },
    /// Object storage that refused or failed a request: `url` names the object, `msg`
    /// the server's answer or the connection failure (never a credential).
    #[error("{url}: {msg}")]
    Bucket { url: String, msg: String },
    /// An object shorter than its index says, or whose bytes fail their check: `key`
    /// names it (the store maps this to its corrupt-shard error).
    #[error("{key}: corrupt shard: {msg}")]
    Corrupt { key: String, msg: String },
    /// A store file that is damaged as a whole (a zip cut short, its directory
    /// pointing past its end, two entries for one key): download or copy it again.
    #[error("{path}: {msg}")]
    Damaged { path: PathBuf, msg: String },
    /// A zip file that is not one svar2 can read as a store (not a zip, encrypted,
    /// compressed by a method other than deflate, damaged), or a write a zip store
    /// cannot take.
    #[error("{path}: {msg}")]
    Zip { path: PathBuf, msg: String },
}

/// What to do about the I/O failures users meet on clusters.
pub fn io_hint(e: &std::io::Error) -> &'static str {
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

    /// A zip error about `path`.
    pub fn zip(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Zip {
            path: path.into(),
            msg: msg.into(),
        }
    }
}
