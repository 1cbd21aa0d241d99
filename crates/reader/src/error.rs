//! The reader's errors: each names the store, array or chunk key it is about.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    /// A request that cannot be served (an unknown sample, a string array).
    #[error("{0}")]
    Usage(String),
    /// A patch (or region) outside the array, or empty: refused before any read.
    #[error("{0}")]
    OutOfRange(String),
    /// The caller asked the read to stop (Ctrl-C in Python) before it finished.
    #[error("the read was cancelled")]
    Cancelled,
    /// The GPU failed (driver, nvCOMP, a kernel), or its plan was inconsistent.
    #[error(transparent)]
    Gpu(svar2_gpu::error::Error),
    /// Writing the output failed (`what`: where to).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// A chunk the GPU path finds damaged is the store's damage (named, as on the CPU);
/// anything else is the GPU's.
impl From<svar2_gpu::error::Error> for Error {
    fn from(e: svar2_gpu::error::Error) -> Error {
        match e {
            svar2_gpu::error::Error::Corrupt { key, msg } => {
                Error::Store(svar2_store::Error::Corrupt { key, msg })
            }
            e => Error::Gpu(e),
        }
    }
}

impl Error {
    /// A write to a reader that went away (`| head`): the caller ends quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A storage failure is the store's, with the same message.
impl From<svar2_storage::Error> for Error {
    fn from(e: svar2_storage::Error) -> Error {
        Error::Store(e.into())
    }
}
