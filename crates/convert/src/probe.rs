//! The rate probe: how many readers keep the
//! encoder busy on *this* machine. One reader parses a bounded prefix of the largest
//! contig; the encoder lays out and compresses those records as it will in the real
//! run; `w = ⌈t_read / t_exec⌉`, clamped to [1, 16]. Nothing is written.

use crate::arrays::{ArraySet, Dims, Geometry, Stats};
use crate::chunk::{chunk_tasks, encode_chunk};
use crate::error::Result;
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;
use svar2_store::codec::InnerCodec;
use svar2_vcf::column::Batch;
use svar2_vcf::pieces::{Piece, PieceReader};
use svar2_vcf::schema::Schema;

/// What the probe measured.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Probe {
    pub records: u64,
    /// Seconds one reader took to parse them.
    pub t_read: f64,
    /// Seconds the encoder took to lay out and compress them.
    pub t_exec: f64,
    /// ⌈t_read / t_exec⌉ before clamping.
    pub raw_w: u32,
}

/// Runs the probe on `piece` (the start of the largest contig).
pub fn run(
    input: &Path,
    schema: &Schema,
    set: &ArraySet,
    piece: &Piece,
    geometry: &Geometry,
    threads: usize,
) -> Result<Probe> {
    let n_samples = schema.samples.len();
    let rows = geometry.variants_chunk.clamp(1, 2048) as usize;
    let mut reader = PieceReader::open(input, schema, &set.record)?;
    let mut got: Option<Batch> = None;
    let t0 = Instant::now();
    reader.read(piece, rows, &set.record.specs, n_samples, |b| {
        got = Some(b);
        false
    })?;
    let t_read = t0.elapsed().as_secs_f64();
    let Some(batch) = got else {
        return Ok(Probe {
            records: 0,
            t_read,
            t_exec: 0.0,
            raw_w: 1,
        });
    };
    let mut stats = Stats::new(set);
    for (s, c) in stats.columns.iter_mut().zip(&batch.columns) {
        s.merge(&c.stats);
    }
    stats.max_alleles = batch.max_alleles;
    stats.max_ploidy = batch.max_ploidy;
    let dims = Dims::from_stats(set, &stats, schema.has_gt);
    let samples_chunk = geometry.samples_chunk.max(1) as usize;
    let tasks = chunk_tasks(set, n_samples, samples_chunk);
    let layouts: Vec<_> = set.arrays.iter().map(|a| a.layout(&stats, &dims)).collect();
    let codecs: Vec<InnerCodec> = set
        .arrays
        .iter()
        .zip(&layouts)
        .map(|(a, l)| InnerCodec::new(l.dtype, a.bitshuffle, geometry.zstd_level))
        .collect::<std::result::Result<_, _>>()?;
    let pool = crate::chunk::encoder_pool(threads)?;
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
        raw_w: (t_read / t_exec).ceil().clamp(1.0, 1e6) as u32,
    })
}
