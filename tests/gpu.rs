//! The GPU batch plan, run by its CPU executor, decodes every chunk of every numeric
//! array of stores from convert and rechunk exactly as zarrs (c-blosc) does; and
//! `bench-read --gpu` on a machine without a GPU says what is missing and exits 2.

mod common;
use common::*;
use std::path::Path;
use svar2_gpu::batch_plan::{BatchPlan, ChunkInput};
use svar2_store::boxes::blocks;
use svar2_store::codec::Raw;
use svar2_zarr::AnyGroup;

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
        // The frames the host packs: each chunk's crc32c checked and removed.
        let frames: Vec<Vec<u8>> = stored
            .iter()
            .map(|(idx, b)| a.checked(idx, b).unwrap().to_vec())
            .collect();
        if a.has_checksums() {
            assert!(frames
                .iter()
                .zip(&stored)
                .all(|(f, (_, b))| f.len() + 4 == b.len()));
        }
        let n = a.chunk_nbytes();
        let inputs: Vec<ChunkInput> = frames
            .iter()
            .zip(&keys)
            .map(|(b, k)| ChunkInput {
                key: k,
                bytes: b,
                nbytes: n,
            })
            .collect();
        let plan = BatchPlan::build(&inputs).unwrap();
        let out = svar2_gpu::cpu::execute(&plan).unwrap();
        for ((idx, bytes), range) in stored.iter().zip(&plan.chunks) {
            let Raw::Fixed(want) = a.decode(idx, Some(&bytes[..])).unwrap() else {
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

/// For the convert stores of `all_fields.vcf` and the growth fixture, every numeric
/// array with a variants axis (every dtype svar2 writes): `n` random patches of four
/// shapes (one cell, a few, a column, the whole array), the reader's bytes for them,
/// and its batch plan, handed to `check(store, array, patches, plan, want)`.
fn for_each_planned_batch(
    n: usize,
    mut check: impl FnMut(&str, &str, &svar2_gpu::batch_plan::BatchPlan, &[u8]),
) {
    let dir = test_dir();
    let d = dir.path();
    let growth = growth_vcf(d);
    for (name, input, args) in [
        ("af.zarr", data("all_fields.vcf"), vec!["--patch", "4x1"]),
        ("growth.zarr", growth, GROWTH_GEOMETRY.to_vec()),
    ] {
        let store = d.join(name);
        convert(&input, &store, &args);
        let st = svar2_reader::Store::open(&store).unwrap();
        let g = AnyGroup::open(&store).unwrap();
        let reader = svar2_reader::Reader::new(2, 3).unwrap();
        let mut arrays = 0;
        for a in &g.arrays {
            let dims = &a.layout.dimension_names;
            if a.dtype.size().is_none() || !dims.iter().any(|x| x == "variants") {
                continue;
            }
            let a = st.array(&a.name).unwrap();
            let nv = a.shape()[0];
            let ns = match dims.iter().any(|x| x == "samples") {
                true => a.shape()[1],
                false => 1,
            };
            for (k, (v, s)) in [(1u64, 1u64), (7, 2), (64, 1), (nv, ns)].iter().enumerate() {
                // (Shapes past a small array are cut to it here: `draw` refuses them.)
                let (v, s) = ((*v).min(nv), (*s).min(ns));
                let patches = svar2_reader::patch::draw(n, v, s, nv, ns, k as u64).unwrap();
                let mut want = vec![0u8; reader.batch_bytes(&a, &patches).unwrap()];
                reader.read_batch(&a, &patches, &mut want).unwrap();
                let plan = reader.plan_batch(&a, &patches).unwrap();
                assert_eq!(plan.patch_bytes, want.len());
                check(name, &a.name, &plan, &want);
            }
            arrays += 1;
        }
        assert!(arrays >= 8, "{name}: only {arrays} arrays");
    }
}

/// Random patches of every numeric array, read through the batch plan (CPU
/// executor), equal the reader's bytes.
#[test]
fn planned_patches_equal_the_readers_for_every_array() {
    for_each_planned_batch(40, |store, array, plan, want| {
        let mut got = vec![0u8; plan.patch_bytes];
        svar2_gpu::cpu::scatter(plan, &svar2_gpu::cpu::execute(plan).unwrap(), &mut got);
        assert!(got == want, "{store}: {array}");
    });
}

/// The GPU, or why there is none: SKIP with the reason, a failure under
/// `SVAR2_REQUIRE_GPU=1` (the GPU check sets it).
fn device(test: &str) -> Option<svar2_gpu::device::Device> {
    match svar2_gpu::device::Device::open() {
        Ok(d) => Some(d),
        Err(why) if std::env::var_os("SVAR2_REQUIRE_GPU").is_some() => {
            panic!("{test}: SVAR2_REQUIRE_GPU is set but: {why}")
        }
        Err(why) => {
            // No GPU is no tool CI can install: noted, never a failure.
            note_skip(test, &why.to_string());
            None
        }
    }
}

/// On a GPU: random patches of every numeric array, decoded on the device, equal the
/// CPU reader's bytes; a stream that decodes to other than its planned size is an
/// error naming its chunk (nvCOMP's per-stream size and status).
#[test]
fn device_patches_equal_the_cpu_readers() {
    let Some(mut dev) = device("device_patches_equal_the_cpu_readers") else {
        return;
    };
    for_each_planned_batch(200, |store, array, plan, want| {
        dev.decode(plan).unwrap();
        assert!(dev.patches_to_host().unwrap() == want, "{store}: {array}");
    });
    let (enc, _) = two_chunks();
    let mut plan = BatchPlan::build(&[ChunkInput {
        key: "x/c/0",
        bytes: &enc,
        nbytes: 40_000,
    }])
    .unwrap();
    // The task asks for 8 bytes more than the stream holds (room made for them).
    plan.zstd[0].len += 8;
    plan.stage_bytes += 8;
    plan.out_bytes += 8;
    let e = dev.decode(&plan).unwrap_err().to_string();
    assert!(e.starts_with("x/c/0"), "{e}");
}

/// An int32 chunk of 10,000 values that compresses (its frame, crc32c removed), and
/// the same frame with its zstd stream's magic number broken.
fn two_chunks() -> (Vec<u8>, Vec<u8>) {
    let codec = svar2_store::codec::InnerCodec::new(svar2_store::Dtype::I32, false, 1).unwrap();
    let values: Vec<u8> = (0..40_000u32).map(|i| (i % 7) as u8).collect();
    let stored = codec.encode(&Raw::Fixed(values), &[10_000]).unwrap();
    let enc = svar2_store::chain::verified("x", "x", &stored)
        .unwrap()
        .to_vec();
    let frame = svar2_blosc::Frame::parse("x", &enc, 40_000).unwrap();
    let stream = frame.blocks[0].streams[0];
    assert!(!stream.raw, "the values compress");
    let mut bad = enc.clone();
    bad[stream.offset] ^= 0x55;
    (enc, bad)
}

/// A stream that is no zstd frame is refused when the batch is planned, naming its
/// chunk, so neither executor sees it (nvCOMP does not check frames: it decoded this
/// one as if the magic number were right); a stream cut short or whose header gives
/// another size is refused likewise.
#[test]
fn a_malformed_stream_is_refused_naming_its_chunk() {
    let (enc, bad) = two_chunks();
    let plan = |second: &[u8]| {
        BatchPlan::build(&[
            ChunkInput {
                key: "x/c/0",
                bytes: &enc,
                nbytes: 40_000,
            },
            ChunkInput {
                key: "x/c/1",
                bytes: second,
                nbytes: 40_000,
            },
        ])
    };
    assert!(plan(&enc).is_ok());
    let e = plan(&bad).unwrap_err().to_string();
    assert!(
        e.starts_with("x/c/1") && e.contains("not a zstd frame"),
        "{e}"
    );
    // The stream's frame header: the content size (after the 4-byte magic, a
    // descriptor byte and, for a single-segment frame, the size) changed.
    let frame = svar2_blosc::Frame::parse("x", &enc, 40_000).unwrap();
    let s = frame.blocks[0].streams[0];
    let mut other = enc.clone();
    other[s.offset + 5] ^= 0x01;
    let e = plan(&other).unwrap_err().to_string();
    assert!(e.starts_with("x/c/1") && e.contains("decoded bytes"), "{e}");
    // The CPU executor names a chunk whose stream fails there too.
    let mut ok = plan(&enc).unwrap();
    ok.zstd[1].len += 8;
    ok.stage_bytes += 8;
    ok.out_bytes += 8;
    let e = svar2_gpu::cpu::execute(&ok).unwrap_err().to_string();
    assert!(e.starts_with("x/c/1"), "{e}");
}

#[test]
fn gpu_without_a_gpu_says_what_is_missing() {
    let dir = test_dir();
    let store = dir.path().join("s.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let o = svar2()
        .args([
            "bench-read",
            "--gpu",
            "--verify",
            "--n",
            "10",
            "--patch",
            "2x1",
        ])
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    if svar2_gpu::device::Device::open().is_ok() {
        assert!(o.status.success(), "{err}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("verified       10 patches"), "{out}");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no CUDA driver found (libcuda.so.1)")
            || err.contains("nvCOMP not found: pip install nvidia-libnvcomp-cu12")
            || err.contains("NVRTC not found"),
        "{err}"
    );
}
