//! `svar2-vcf`: everything svar2 knows about the VCF and BCF formats — the owned
//! htslib handles, the header read once into plain facts, the direct text parse, BCF
//! bulk decode, genotype decoding, index counts, sub-contig pieces, many-input checks
//! and truncation diagnosis — turning records into the column batches a store writer
//! consumes. It knows nothing of Zarr (no zarrs, no store crate).
//!
//! Modules in dependency order (each uses only those before it):
//! `error`, `limits` (the longest line a conversion reads), `hts` (owned htslib handles), `truncation`, `schema` (the header as
//! facts), `columns` (the raw columns a record fills), `packed` (flags eight to a
//! byte, diploid calls one to a byte), `ragged` (ragged values and record batches), `genotype`, `diploid` (a row of one-digit diploid calls, 16 bytes at a time), `index` (per-contig counts), `inputs` (many inputs as
//! one call set), `fastvcf` (text lines, line checks, htslib's text path), `extract`
//! (records into batches; BCF FORMAT numbers in bulk), `direct` (text lines straight
//! into batches, by htslib's rules), `block` (records as a store holds them: dense,
//! padded), `region` (bcftools' regions and targets), `subset` (`bcftools view`'s
//! subsetting, record by record, at conversion), `merge` (`bcftools merge` at
//! conversion: inputs of different samples joined record by record), `source` (the streaming reader;
//! inputs one after another), `pieces` (index-driven readers over pieces of contigs,
//! in order), `write` (VCF text, VCF.gz and BCF from blocks, the header rebuilt),
//! `query` (`bcftools query -f` formats);
//! `testing` (test data and the two-path check; tests and the `testing` feature only).

mod bcf_stream;
pub mod block;
pub mod columns;
mod diploid;
pub mod direct;
pub mod error;
pub mod extract;
pub mod fastvcf;
mod genotype;
mod hts;
pub mod index;
mod inflate;
pub mod inputs;
pub mod limits;
pub mod lines;
pub mod merge;
pub mod packed;
pub mod pieces;
pub mod query;
pub mod ragged;
pub mod region;
pub mod schema;
pub mod source;
pub mod subset;
pub mod truncation;
pub mod variant_type;
pub mod write;

pub use error::{Error, Result};
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod rng;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;
