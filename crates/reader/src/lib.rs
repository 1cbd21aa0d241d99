//! `svar2-reader`: random **patches** — a window of variants × a few samples, every
//! ploidy value — from any VCF Zarr store, as fast as the layout allows.
//!
//! Two stages, each sized for what it waits on: IO threads that only read (a sharded
//! array's inner chunks located through each shard's index, read once from its tail
//! and cached with the open file), feeding a rayon pool that only decodes (blosc-zstd
//! frames without c-blosc, one zstd context per thread) and copies each chunk into
//! every patch that overlaps it — once per batch, however many patches share it.
//!
//! ```no_run
//! use svar2_reader::{Patch, Reader, Store};
//! let store = Store::open("sim.zarr".as_ref())?;
//! let gt = store.array("call_genotype")?;
//! let reader = Reader::new(2, 4)?;
//! let patches = [Patch { variant_start: 1000, n_variants: 4096, sample_start: 7, n_samples: 1 }];
//! let mut out = vec![0u8; reader.batch_bytes(&gt, &patches)?];
//! reader.read_batch(&gt, &patches, &mut out)?; // 4096 x 1 x 2 int8, patch after patch
//! let rows = store.locate("chr1", 10_000, 20_000)?; // variant rows overlapping a region
//! # Ok::<(), svar2_reader::Error>(())
//! ```

pub mod ahead;
pub mod bench;
pub mod columns;
pub mod error;
pub mod patch;
pub mod planned;
pub mod read;
pub mod region;
pub mod store;

pub use error::{Error, Result};
pub use patch::Patch;
pub use read::{Counters, Reader};
pub use store::Store;
