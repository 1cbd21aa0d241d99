//! The GPU path's errors: a chunk that does not decode (named), or the GPU itself
//! failing (driver, nvCOMP, a kernel) — apart, so a user can tell damage from a device
//! problem.

/// What planning or decoding a batch can fail on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A chunk's bytes that do not decode as its frame says; `key` names the chunk.
    #[error("{key}: corrupt shard: {msg}")]
    Corrupt { key: String, msg: String },
    /// The GPU failed: the driver, nvCOMP or a kernel (`what` it was doing, and why).
    #[error("GPU: {0}")]
    Gpu(String),
    /// A codec on the CPU could not run (zstd), or a plan svar2 built is inconsistent.
    #[error("internal codec error: {0}")]
    Codec(String),
}

impl From<svar2_blosc::Error> for Error {
    fn from(e: svar2_blosc::Error) -> Error {
        match e {
            svar2_blosc::Error::Corrupt { key, msg } => Error::Corrupt { key, msg },
            svar2_blosc::Error::Codec(msg) => Error::Codec(msg),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
