//! The rate probe: what share of the work reading is on *this* machine, for this
//! input. One reader parses a bounded prefix of the largest contig; one encoding
//! thread lays out and compresses those records as the real run will; the read share
//! `t_read / (t_read + t_exec)` tells the planner how many of the cores readers
//! should take (the encoder pool takes the rest). Nothing is written.

use crate::arrays::{ArraySet, Dims, Geometry, Stats};
use crate::chunk::{chunk_tasks, encode_chunk};
use crate::error::Result;
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;
use svar2_store::codec::InnerCodec;
use svar2_vcf::pieces::{Piece, PieceReader};
use svar2_vcf::schema::Schema;

/// What the probe measured.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Probe {
    pub records: u64,
    /// Seconds one reader took to parse them.
    pub t_read: f64,
    /// Seconds one encoding thread took to lay out and compress them.
    pub t_exec: f64,
    /// `t_read / (t_read + t_exec)`.
    pub read_share: f64,
}

/// Bytes of records the probe reads at most (at least [`PROBE_LEAST_RECORDS`]): the
/// probe runs alone, before any reader starts, so what it reads is serial time. A
/// chunk row of a 2,000-sample call set (1,000 records, 34 MB) took 0.1 s, a quarter of
/// a 4,000-record file's conversion at 16 threads; the shares it measures come out the
/// same from 4 MB.
pub const PROBE_BYTES: u64 = 4 << 20;

/// Records the probe reads at least, however wide: enough to time.
pub const PROBE_LEAST_RECORDS: u64 = 32;

/// Runs the probe on `piece` (the start of the largest contig), whose records fill
/// `row_bytes` each in a batch (as the plan measured them).
pub fn run(
    input: &Path,
    schema: &Schema,
    set: &ArraySet,
    piece: &Piece,
    geometry: &Geometry,
    row_bytes: u64,
) -> Result<Probe> {
    let n_samples = schema.samples.len();
    let rows = geometry
        .variants_chunk
        .clamp(1, 2048)
        .min((PROBE_BYTES / row_bytes.max(1)).max(PROBE_LEAST_RECORDS)) as usize;
    let mut reader = PieceReader::open(input, schema, &set.record)?;
    let t0 = Instant::now();
    let got = reader.first_rows(piece, rows, &set.record.specs, n_samples)?;
    let t_read = t0.elapsed().as_secs_f64();
    let Some(batch) = got else {
        return Ok(Probe {
            records: 0,
            t_read,
            t_exec: 0.0,
            read_share: svar2_planner::DEFAULT_READ_SHARE,
        });
    };
    let stats = Stats::of_batch(set, &batch);
    let dims = Dims::from_stats(set, &stats, schema.has_gt);
    let samples_chunk = geometry.samples_chunk.max(1) as usize;
    let tasks = chunk_tasks(set, n_samples, samples_chunk);
    let layouts: Vec<_> = set.arrays.iter().map(|a| a.layout(&stats, &dims)).collect();
    // One thread: the probe measures work, and the plan divides it among the cores.
    let pool = crate::chunk::encoder_pool(1)?;
    // Made on the pool: a codec asks rayon for its thread count, which outside any
    // pool starts rayon's global one (unnamed threads that never work).
    let codecs: Vec<InnerCodec> = pool.install(|| {
        set.arrays
            .iter()
            .zip(&layouts)
            .map(|(a, l)| InnerCodec::new(l.dtype, a.bitshuffle, geometry.zstd_level))
            .collect::<std::result::Result<_, _>>()
    })?;
    // The probe's rows are the first `rows` records: lay them out on that grid.
    let geometry = Geometry {
        variants_chunk: rows as u64,
        ..*geometry
    };
    let t1 = Instant::now();
    pool.install(|| {
        tasks.par_iter().try_for_each(|&(a, k)| {
            encode_chunk(
                set,
                &batch,
                &layouts[a],
                &codecs[a],
                &geometry,
                n_samples,
                a,
                k,
            )
            .map(|_| ())
        })
    })?;
    let t_exec = t1.elapsed().as_secs_f64().max(1e-9);
    Ok(Probe {
        records: batch.len() as u64,
        t_read,
        t_exec,
        read_share: t_read / (t_read + t_exec),
    })
}
