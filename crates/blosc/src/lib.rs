//! `svar2-blosc`: the blosc 1 frame of a numeric inner chunk, written, parsed and decoded without
//! c-blosc, by the rules c-blosc 1.21 writes (`../shared/design/gpu.md`):
//! [`Encoder`] writes c-blosc's exact bytes (convert), [`Frame`] checks a stored frame
//! against the chunk's known size before anything is allocated, [`Decoder`] decodes it
//! (the reader), and the GPU path batches a frame's zstd streams into one nvCOMP call.
//!
//! Its own crate, depending on zstd alone, so the GPU crate links nothing else of the
//! store's.
//!
//! Modules, in dependency order: `error`, `frame` (the format), `unshuffle` and `shuffle` (the
//! (bit)shuffles each way), `decode`, `encode`.

mod decode;
mod encode;
mod error;
mod frame;
mod shuffle;
mod unshuffle;

pub use decode::Decoder;
pub use encode::Encoder;
pub use error::{Error, Result};
pub use frame::{Block, Frame, Shuffle, Stream};
pub use unshuffle::{bitunshuffle, byteunshuffle};

/// Test data for this crate's tests and the store's.
#[doc(hidden)]
pub mod testing {
    /// Deterministic bytes, mostly small values (as genotypes and counts are).
    pub fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x.is_multiple_of(5) {
                    (x >> 8) as u8
                } else {
                    (x % 3) as u8
                }
            })
            .collect()
    }
}
