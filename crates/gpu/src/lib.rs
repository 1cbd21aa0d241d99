//! `svar2-gpu`: decoding a batch of blosc-zstd chunks the way a GPU does it — every
//! zstd stream of every chunk in one batched call, raw streams as copies, then one
//! unshuffle pass with one worker per output byte — planned once on the host.
//!
//! - [`batch_plan`]: the batch plan, built from frames parsed and checked by
//!   [`svar2_blosc`] (nothing on the device ever trusts a size from a file), the one
//!   svar2 crate this one depends on;
//! - [`error`]: a chunk that does not decode, apart from the GPU failing;
//! - [`cpu`]: the plan executed on the CPU with the kernels' own index arithmetic —
//!   what the tests run everywhere, and what proves the plan bit-identical to c-blosc;
//! - [`probe`]: whether this machine can decode on a GPU, and if not exactly what is
//!   missing (the CUDA driver, nvCOMP), without loading anything that could crash.
//!
//! - [`device`]: the plan on a GPU — nvCOMP ([`nvcomp`], our own binding, loaded with
//!   dlopen) for the zstd streams, then the [`kernels`] (compiled by NVRTC at run
//!   time) through cudarc; nothing is needed at build time.

pub mod batch_plan;
pub mod cpu;
pub mod device;
pub mod error;
pub mod kernels;
pub mod nvcomp;
pub mod probe;
