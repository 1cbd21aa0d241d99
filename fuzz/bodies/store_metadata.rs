//! Fuzz body (shared by `fuzz_targets/store_metadata.rs` and the store crate's
//! deterministic `tests/fuzz_bodies.rs` loop): a small valid store with one array's
//! `zarr.json` replaced by the input. Opening it and reading its chunks and names
//! is Ok or a clear Err — never a panic, an abort, a hang or an allocation sized by
//! a number the metadata made up.

use serde_json::{json, Value};
use std::path::Path;
use svar2_store::codec::{InnerCodec, Raw};
use svar2_store::metadata::ArrayMeta;
use svar2_store::{key, shard, Dtype};
use svar2_zarr::AnyGroup;

/// The seed store's arrays: name, dimension names, shape, shard, inner chunk, type.
type Spec = (
    &'static str,
    &'static [&'static str],
    &'static [u64],
    &'static [u64],
    &'static [u64],
    Dtype,
);

/// The arrays of the seed store: the five every VCF Zarr store has, a string array
/// on the variants axis and the genotypes.
pub const ARRAYS: [Spec; 7] = [
    ("sample_id", &["samples"], &[3], &[4], &[2], Dtype::Str),
    ("contig_id", &["contigs"], &[2], &[2], &[1], Dtype::Str),
    ("variant_contig", &["variants"], &[5], &[4], &[2], Dtype::I8),
    (
        "variant_position",
        &["variants"],
        &[5],
        &[4],
        &[2],
        Dtype::I32,
    ),
    (
        "variant_length",
        &["variants"],
        &[5],
        &[4],
        &[2],
        Dtype::I32,
    ),
    ("variant_id", &["variants"], &[5], &[4], &[2], Dtype::Str),
    (
        "call_genotype",
        &["variants", "samples", "ploidy"],
        &[5, 3, 2],
        &[4, 4, 2],
        &[2, 2, 2],
        Dtype::I8,
    ),
];

/// The metadata of seed array `i`.
pub fn meta(i: usize) -> Value {
    let (_, dims, shape, shard, inner, dtype) = ARRAYS[i];
    ArrayMeta {
        shape: shape.to_vec(),
        shard: shard.to_vec(),
        inner: inner.to_vec(),
        dimension_names: dims.iter().map(|d| d.to_string()).collect(),
        dtype,
        bitshuffle: dtype == Dtype::I8,
        level: 1,
        attributes: Default::default(),
    }
    .to_json()
}

/// Writes the seed store at `root` (a valid VCF Zarr store svar2 reads).
pub fn write_seed(root: &Path) {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    for (i, &(name, _, shape, shard_shape, inner, dtype)) in ARRAYS.iter().enumerate() {
        std::fs::create_dir_all(root.join(name)).unwrap();
        let m = serde_json::to_vec_pretty(&meta(i)).unwrap();
        std::fs::write(root.join(name).join("zarr.json"), m).unwrap();
        let codec = InnerCodec::new(dtype, dtype == Dtype::I8, 1).unwrap();
        let per: Vec<u64> = shard_shape.iter().zip(inner).map(|(s, c)| s / c).collect();
        let shards: Vec<u64> = shape
            .iter()
            .zip(shard_shape)
            .map(|(n, s)| n.div_ceil(*s))
            .collect();
        for s in grid(&shards) {
            let chunks: Vec<Option<Vec<u8>>> = grid(&per)
                .into_iter()
                .map(|c| {
                    let n = inner.iter().product::<u64>() as usize;
                    let seed = s.iter().chain(&c).sum::<u64>() as usize;
                    let raw = match dtype.size() {
                        Some(z) => Raw::Fixed((0..n * z).map(|k| ((k + seed) % 3) as u8).collect()),
                        None => {
                            let words: Vec<String> =
                                (0..n).map(|k| format!("s{}", k + seed)).collect();
                            let mut offsets = vec![0];
                            for w in &words {
                                offsets.push(offsets.last().unwrap() + w.len());
                            }
                            Raw::Strings {
                                bytes: words.concat().into_bytes(),
                                offsets,
                            }
                        }
                    };
                    Some(codec.encode(&raw, inner).unwrap())
                })
                .collect();
            let path = key::chunk_path(root, name, &s);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, shard::assemble(&chunks).unwrap()).unwrap();
        }
    }
    let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
    std::fs::write(root.join("zarr.json"), group.to_string()).unwrap();
}

/// Every index of a grid of `n` (C order).
fn grid(n: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &k in n {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..k).map(move |i| {
                    let mut v = p.clone();
                    v.push(i);
                    v
                })
            })
            .collect();
    }
    out
}

/// The most chunks of one array a run reads (a grid the metadata stretches may be
/// long; what matters is that each read is Ok or Err).
const MAX_READS: usize = 64;

/// One run: `data[0]` picks the array, the rest is its `zarr.json`; the seed store at
/// `root` is opened and read, then its metadata restored.
pub fn run(root: &Path, data: &[u8]) {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let i = pick as usize % ARRAYS.len();
    let path = root.join(ARRAYS[i].0).join("zarr.json");
    std::fs::write(&path, json).unwrap();
    read_all(root);
    std::fs::write(&path, serde_json::to_vec_pretty(&meta(i)).unwrap()).unwrap();
}

/// Opens the store and reads what a reader reads: names, and chunks of every array.
fn read_all(root: &Path) {
    let _ = svar2_store::layout::read_group(root);
    let Ok(g) = AnyGroup::open(root) else {
        return;
    };
    for name in ["sample_id", "contig_id"] {
        if let Some(a) = g.array(name) {
            let _ = a.read_strings();
        }
    }
    let mut dec = svar2_blosc::Decoder::new().unwrap();
    for a in &g.arrays {
        let chunk = a.chunk_shape();
        let counts: Vec<u64> = a
            .shape()
            .iter()
            .zip(&chunk)
            .map(|(n, c)| n.div_ceil((*c).max(1)))
            .collect();
        let total = counts
            .iter()
            .try_fold(1u64, |t, &c| t.checked_mul(c))
            .unwrap_or(u64::MAX);
        for k in 0..total.min(MAX_READS as u64) {
            // Chunk k of the grid, C order.
            let mut rest = k;
            let mut idx = vec![0u64; counts.len()];
            for d in (0..counts.len()).rev() {
                idx[d] = rest % counts[d];
                rest /= counts[d];
            }
            let Ok(stored) = a.read(&idx) else { continue };
            let stored = stored.as_deref();
            if a.dtype.size().is_some() {
                let mut out = Vec::new();
                let _ = a.decode_into(&idx, stored, &mut dec, &mut out, None);
            } else {
                let _ = a.decode(&idx, stored);
            }
        }
        let _ = a.read_rows(0, 3);
    }
}
