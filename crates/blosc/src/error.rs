//! A frame that does not decode, or a codec that cannot run: each names the chunk.

/// What encoding or decoding a blosc frame can fail on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes that do not decode as the frame their chunk must hold; `key` names it.
    #[error("{key}: corrupt shard: {msg}")]
    Corrupt { key: String, msg: String },
    /// zstd could not run, or a parameter is out of range (svar2's own bug).
    #[error("internal codec error: {0}")]
    Codec(String),
}

pub type Result<T> = std::result::Result<T, Error>;
