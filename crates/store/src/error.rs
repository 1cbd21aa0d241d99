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
    /// Where the objects live failed: a URL of a scheme svar2 does not support, a
    /// bucket that refused a request, a zip that cannot be read (the storage crate's
    /// message, as it is).
    #[error(transparent)]
    Storage(svar2_storage::Error),
    #[error("internal codec error: {0}")]
    Codec(String),
}

/// Storage errors keep their messages; an I/O error or a damaged object is the
/// store's own kind (callers tell a missing path or a corrupt shard by it).
impl From<svar2_storage::Error> for Error {
    fn from(e: svar2_storage::Error) -> Error {
        match e {
            svar2_storage::Error::Io { path, source } => Error::Io { path, source },
            svar2_storage::Error::Corrupt { key, msg } => Error::Corrupt { key, msg },
            e => Error::Storage(e),
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
