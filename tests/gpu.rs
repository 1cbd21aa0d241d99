//! The GPU batch plan, run by its CPU executor, decodes every chunk of every numeric
//! array of stores from convert and rechunk exactly as zarrs (c-blosc) does; and
//! `bench-read --gpu` on a machine without a GPU says what is missing and exits 2.

mod common;
use common::*;
use std::path::Path;
use svar2_gpu::plan::{BatchPlan, ChunkInput};
use svar2_store::any::AnyGroup;
use svar2_store::block::blocks;
use svar2_store::codec::Raw;

/// Every stored chunk of every blosc array of `store`, planned as one batch per array.
fn plan_equals_zarrs(store: &Path) -> usize {
    let g = AnyGroup::open(store).unwrap();
    let mut checked = 0;
    for a in &g.arrays {
        if !a.blosc_frames() || a.shape().contains(&0) {
            continue;
        }
        let chunk = a.chunk_shape();
        let zeros = vec![0u64; chunk.len()];
        let mut keys = Vec::new();
        let mut stored = Vec::new();
        for idx in blocks(&zeros, a.shape(), &chunk) {
            if let Some(bytes) = a.read(&idx).unwrap() {
                keys.push(a.key(&idx));
                stored.push((idx, bytes));
            }
        }
        let n = a.chunk_nbytes();
        let inputs: Vec<ChunkInput> = stored
            .iter()
            .zip(&keys)
            .map(|((_, b), k)| ChunkInput {
                key: k,
                bytes: b,
                nbytes: n,
            })
            .collect();
        let plan = BatchPlan::build(&inputs).unwrap();
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let out = svar2_gpu::cpu::execute(&plan, &key_refs).unwrap();
        for ((idx, bytes), range) in stored.iter().zip(&plan.chunks) {
            let Raw::Fixed(want) = a.decode(idx, Some(bytes.clone())).unwrap() else {
                panic!("{}: not fixed-size", a.name)
            };
            assert!(out[range.clone()] == want[..], "{}", a.key(idx));
            checked += 1;
        }
    }
    checked
}

#[test]
fn the_batch_plan_decodes_convert_and_rechunk_stores_as_zarrs_does() {
    let dir = test_dir();
    let d = dir.path();
    let growth = growth_vcf(d);
    let mut stores = Vec::new();
    for (name, input, args) in [
        ("af.zarr", data("all_fields.vcf"), vec!["--patch", "4x1"]),
        ("growth.zarr", growth.clone(), GROWTH_GEOMETRY.to_vec()),
    ] {
        let s = d.join(name);
        convert(&input, &s, &args);
        stores.push(s);
    }
    let rechunked = d.join("rechunked.zarr");
    rechunk(
        &stores[1],
        &rechunked,
        &["--max-mem", "1GiB", "--patch", "64x1"],
    );
    stores.push(rechunked);
    for s in &stores {
        let n = plan_equals_zarrs(s);
        assert!(n > 10, "{}: only {n} chunks checked", s.display());
    }
}

#[test]
fn gpu_without_a_gpu_says_what_is_missing() {
    let dir = test_dir();
    let store = dir.path().join("s.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let o = svar2()
        .args(["bench-read", "--gpu", "--n", "10", "--patch", "2x1"])
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let gpu_here = std::env::var_os("SVAR2_REQUIRE_GPU").is_some();
    assert!(
        err.contains("no CUDA driver found (libcuda.so.1)")
            || err.contains("nvCOMP not found: pip install nvidia-libnvcomp-cu12")
            || (gpu_here && err.contains("found the CUDA driver")),
        "{err}"
    );
}
