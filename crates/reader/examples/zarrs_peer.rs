//! The zarrs peer of `scripts/bench_read.sh`: reads a patch list from a store's array
//! the way a zarrs user would — `ArrayShardedReadableExtCache` (shard indexes cached),
//! rayon over the patches of each batch — and prints patches/s.
//!
//!     cargo run --release -p svar2-reader --example zarrs_peer -- STORE ARRAY PATCHES.json [BATCH]

use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;
use zarrs::array::{
    Array, ArrayBytes, ArrayShardedReadableExt, ArrayShardedReadableExtCache, ArraySubset,
};
use zarrs::filesystem::FilesystemStore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (store, array, list) = (&args[1], &args[2], &args[3]);
    let batch: usize = args.get(4).map_or(Ok(256), |b| b.parse())?;
    let patches: Vec<[u64; 4]> = serde_json::from_slice(&std::fs::read(list)?)?;
    let storage = Arc::new(FilesystemStore::new(store)?);
    let a = Array::open(storage, &format!("/{array}"))?;
    let cache = ArrayShardedReadableExtCache::new(&a);
    let rank = a.shape().len();
    let t0 = Instant::now();
    let mut bytes = 0usize;
    for b in patches.chunks(batch) {
        let got: Vec<usize> = b
            .par_iter()
            .map(|p| {
                let mut ranges = vec![p[0]..p[0] + p[1], p[2]..p[2] + p[3]];
                for d in 2..rank {
                    ranges.push(0..a.shape()[d]);
                }
                let subset = ArraySubset::new_with_ranges(&ranges);
                let v: ArrayBytes<'static> = a
                    .retrieve_array_subset_sharded_opt(&cache, &subset, &Default::default())
                    .expect("read");
                match v {
                    ArrayBytes::Fixed(b) => b.len(),
                    _ => 0,
                }
            })
            .collect();
        bytes += got.iter().sum::<usize>();
    }
    let s = t0.elapsed().as_secs_f64();
    println!(
        "{{\"patches_per_s\": {:.1}, \"seconds\": {s:.3}, \"bytes\": {bytes}}}",
        patches.len() as f64 / s
    );
    Ok(())
}
