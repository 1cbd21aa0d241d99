//! The view's errors: the store's (a damaged chunk names its key), the VCF side's, or a
//! request that cannot be served (an unknown contig or sample, named).

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Reader(#[from] svar2_reader::Error),
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    #[error(transparent)]
    Vcf(#[from] svar2_vcf::Error),
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed (`what`: where to).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A write to a reader that went away (`| head`): the caller ends quietly.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            Error::Vcf(e) => e.is_broken_pipe(),
            Error::Reader(e) => e.is_broken_pipe(),
            Error::Io { source, .. } => source.kind() == std::io::ErrorKind::BrokenPipe,
            _ => false,
        }
    }
}

/// A storage failure is the store's, with the same message.
impl From<svar2_storage::Error> for Error {
    fn from(e: svar2_storage::Error) -> Error {
        Error::Store(e.into())
    }
}
