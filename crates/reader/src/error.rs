//! The reader's errors: each names the store, array or chunk key it is about.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    /// A request that cannot be served (a patch outside the array, an unknown sample).
    #[error("{0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, Error>;
