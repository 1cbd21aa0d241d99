//! One error type for the whole conversion, so every failure reaches the user as one
//! sentence that names the file, the place in it and what is wrong.

/// Everything that can stop a conversion: reading the input (the VCF crate's errors
/// name the file and, for records, `contig:pos`), writing the store (the store
/// crate's name the path or chunk key and say what to do about a full or read-only
/// disk), or a request that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Vcf(#[from] svar2_vcf::Error),
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    #[error("{0}")]
    Usage(String),
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<std::path::PathBuf>, source: std::io::Error) -> Self {
        Error::Store(svar2_store::Error::io(path, source))
    }
}

/// A storage failure is the store's, with the same message.
impl From<svar2_storage::Error> for Error {
    fn from(e: svar2_storage::Error) -> Error {
        Error::Store(e.into())
    }
}
