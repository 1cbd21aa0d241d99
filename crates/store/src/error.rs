//! The store crate's errors: each names the path or chunk key it is about, because
//! that is what a user needs to find a damaged file.

use std::path::PathBuf;

/// Everything that can go wrong reading or writing a store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}{hint}", hint = io_hint(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bytes that do not decode: a shard index out of bounds, a bad checksum, a chunk
    /// its codec refuses. `key` is the chunk key (`call_genotype/c/0/1`).
    #[error("{key}: corrupt shard: {msg}")]
    Corrupt { key: String, msg: String },
    /// A chunk that cannot be read or decoded, for a reason other than a damaged
    /// shard index; `key` names it.
    #[error("{key}: {msg}")]
    Chunk { key: String, msg: String },
    #[error("{path} already exists; pass --force to replace it")]
    OutputExists { path: PathBuf },
    #[error(
        "{path}: another svar2 conversion is writing this store; wait for it to finish \
         or choose another output"
    )]
    Locked { path: PathBuf },
    /// A path that is not (or not yet) a store, or metadata that is not svar2's.
    #[error("{path}: {msg}")]
    NotStore { path: PathBuf, msg: String },
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
    /// A zip store that cannot be read (damaged, encrypted, another compression) or
    /// written that way.
    #[error("{path}: {msg}")]
    Zip { path: PathBuf, msg: String },
    #[error("internal codec error: {0}")]
    Codec(String),
}

/// Storage errors keep their messages: the same variant here.
impl From<svar2_storage::Error> for Error {
    fn from(e: svar2_storage::Error) -> Error {
        match e {
            svar2_storage::Error::Io { path, source } => Error::Io { path, source },
            svar2_storage::Error::Url { url, scheme } => Error::Url { url, scheme },
            svar2_storage::Error::Bucket { url, msg } => Error::Bucket { url, msg },
            svar2_storage::Error::Zip { path, msg } => Error::Zip { path, msg },
            svar2_storage::Error::Corrupt { key, msg } => Error::Corrupt { key, msg },
        }
    }
}

/// A frame that does not decode keeps its message: `key: corrupt shard: …`.
impl From<svar2_blosc::Error> for Error {
    fn from(e: svar2_blosc::Error) -> Error {
        match e {
            svar2_blosc::Error::Corrupt { key, msg } => Error::Corrupt { key, msg },
            svar2_blosc::Error::Codec(msg) => Error::Codec(msg),
        }
    }
}

pub use svar2_storage::error::io_hint;

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
