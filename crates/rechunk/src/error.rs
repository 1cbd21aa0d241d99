//! Rechunk's errors: each names the store, array or chunk key it is about.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    /// The source lacks what rechunk needs.
    #[error("{path}: {msg}")]
    Input { path: PathBuf, msg: String },
    /// Options that cannot work (a budget too small, output inside the input).
    #[error("{0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// A storage failure is the store's, with the same message.
impl From<svar2_storage::Error> for Error {
    fn from(e: svar2_storage::Error) -> Error {
        Error::Store(e.into())
    }
}
