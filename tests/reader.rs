//! The companion reader: random patches and edge cases equal zarr-python's read of the
//! same selections, on stores from convert, rechunk, bio2zarr and zarr-python itself;
//! `svar2 read --format tsv` equals `bcftools query`; damaged or missing shards are
//! errors naming the chunk.

mod common;
use common::*;
use std::path::Path;
use svar2_reader::{Patch, Reader, Store};

/// svar2's bytes for `patches` of `array`.
fn ours(store: &Path, array: &str, patches: &[Patch]) -> Vec<u8> {
    let st = Store::open(store).unwrap();
    let a = st.array(array).unwrap();
    let reader = Reader::new(2, 3).unwrap();
    let mut ours = vec![0u8; reader.batch_bytes(&a, patches).unwrap()];
    // In batches of 50, as a loader would.
    let mut at = 0;
    for b in patches.chunks(50) {
        let n = reader.batch_bytes(&a, b).unwrap();
        reader.read_batch(&a, b, &mut ours[at..at + n]).unwrap();
        // The GPU's batch plan, run by its CPU executor, gives the same bytes.
        let plan = reader.plan_batch(&a, b).unwrap();
        let mut planned = vec![0u8; plan.patch_bytes];
        svar2_gpu::cpu::scatter(
            &plan,
            &svar2_gpu::cpu::execute(&plan).unwrap(),
            &mut planned,
        );
        assert!(
            planned == ours[at..at + n],
            "{array}: the batch plan differs"
        );
        at += n;
    }
    ours
}

/// zarr-python's bytes for `patches` of each of `arrays` (one process for all).
fn zarr_pythons(store: &Path, arrays: &[&str], patches: &[Patch], dir: &Path) -> Vec<Vec<u8>> {
    let list = dir.join("patches.json");
    std::fs::write(&list, serde_json::to_vec(patches).unwrap()).unwrap();
    let out = dir.join("zarr-python");
    sh_ok(&format!(
        "python3 {} {} {} {} {}",
        py("read_patches.py"),
        store.display(),
        list.display(),
        out.display(),
        arrays.join(" ")
    ));
    arrays
        .iter()
        .map(|a| std::fs::read(format!("{}.{a}", out.display())).unwrap())
        .collect()
}

/// Random patches of a few shapes, and the edges: the last (partial) chunk, the last
/// sample, patches across shard boundaries, one variant.
fn patch_list(n_variants: u64, n_samples: u64, shard_rows: u64) -> Vec<Patch> {
    let mut list = Vec::new();
    for (k, (v, s)) in [(64u64, 1u64), (300, 3), (1, 1), (1000, 5)]
        .iter()
        .enumerate()
    {
        list.extend(
            svar2_reader::patch::draw(60, *v, *s, n_variants, n_samples, k as u64 + 11).unwrap(),
        );
    }
    let p = |v0: u64, nv: u64, s0: u64, ns: u64| Patch {
        variant_start: v0,
        n_variants: nv.min(n_variants - v0),
        sample_start: s0,
        n_samples: ns.min(n_samples - s0),
    };
    list.push(p(n_variants - 7, 7, n_samples - 1, 1));
    list.push(p(0, n_variants, 0, n_samples));
    let b = shard_rows.min(n_variants - 1);
    list.push(p(b - 5, 10, 0, n_samples));
    list
}

#[test]
fn patches_equal_zarr_python_on_every_kind_of_store() {
    if !tools(
        "patches_equal_zarr_python_on_every_kind_of_store",
        &[Tool::Bcftools, Tool::ZarrPython, Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let growth = growth_vcf(d);
    let gz = bgzip_indexed(&growth);
    // convert (small grid: many shards, partial chunks on both axes), rechunk of
    // bio2zarr's store, bio2zarr's own (unsharded v3), and one zarr-python wrote.
    let conv = d.join("conv.zarr");
    convert(&gz, &conv, &GROWTH_GEOMETRY);
    let b3 = d.join("b3.zarr");
    sh_ok(&format!(
        "BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 -l 170 -w 6 {} {} >/dev/null 2>&1",
        gz.display(),
        b3.display()
    ));
    let rech = d.join("rech.zarr");
    rechunk(&b3, &rech, &["--patch", "64x1", "--max-mem", "1GiB"]);
    let zp = d.join("zp.zarr");
    sh_ok(&format!(
        "python3 {} {} {}",
        py("zarr_python_store.py"),
        conv.display(),
        zp.display()
    ));
    let st = Store::open(&conv).unwrap();
    let gt = st.array("call_genotype").unwrap();
    let (nv, ns) = (gt.shape()[0], gt.shape()[1]);
    let patches = patch_list(nv, ns, 400);
    let arrays = [
        "call_genotype",
        "call_genotype_phased",
        "call_genotype_mask",
        "call_DP",
        "call_AD",
        "variant_position",
    ];
    for store in [&conv, &rech, &b3, &zp] {
        let st = Store::open(store).unwrap();
        // zarr-python's copy holds the genotypes only.
        let here: Vec<&str> = arrays.into_iter().filter(|a| st.array(a).is_ok()).collect();
        let theirs = zarr_pythons(store, &here, &patches, d);
        for (array, theirs) in here.iter().zip(theirs) {
            assert!(
                ours(store, array, &patches) == theirs,
                "{}: {array}: svar2's patches differ from zarr-python's",
                store.display()
            );
        }
    }
}

#[test]
fn read_tsv_equals_bcftools_query() {
    if !tools("read_tsv_equals_bcftools_query", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let mut inputs = vec![(
        data("all_fields.vcf"),
        vec!["chr1:150-450", "chrX", "chr3:5", "chr1"],
    )];
    if let Some(small) = need_corpus(
        "read_tsv_equals_bcftools_query (corpus part)",
        "sim_small.vcf.gz",
    ) {
        inputs.push((small, vec!["chr1:100000-400000", "chr2", "chr3:1-1000000"]));
    }
    for (i, (input, regions)) in inputs.iter().enumerate() {
        let gz = if input.extension().is_some_and(|e| e == "gz") {
            input.clone()
        } else {
            forms(input, d, &format!("in{i}"))[1].clone()
        };
        let store = d.join(format!("s{i}.zarr"));
        convert(&gz, &store, &["--patch", "100x1"]);
        let samples = sh_ok(&format!("bcftools query -l {}", gz.display()));
        // Every other sample; bcftools cannot select one whose name has a space (it
        // reads `s-4 x` as "s-4, renamed x"), so those stay out of the subset.
        let some: Vec<&str> = samples
            .lines()
            .filter(|s| !s.contains(' '))
            .step_by(2)
            .collect();
        for r in regions {
            for subset in [None, Some(some.join(","))] {
                let s_arg = subset
                    .as_ref()
                    .map(|s| format!("-s '{s}'"))
                    .unwrap_or_default();
                let expected = sh_ok(&format!(
                    "bcftools query -r {r} {s_arg} -f '%CHROM\\t%POS[\\t%GT]\\n' {}",
                    gz.display()
                ));
                let mut cmd = svar2();
                cmd.args(["read", "--region", r]).arg(&store);
                if let Some(s) = &subset {
                    cmd.args(["--samples", s]);
                }
                let o = cmd.output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                assert_same_lines(
                    &format!("{} {r} {s_arg}", gz.display()),
                    &expected,
                    &String::from_utf8(o.stdout).unwrap(),
                );
            }
        }
    }
    // npy: the same genotypes as zarr-python reads for those rows.
    let store = d.join("s0.zarr");
    let npy = d.join("r.npy");
    let o = svar2()
        .args(["read", "--region", "chr1:150-450", "--format", "npy"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::write(&npy, o.stdout).unwrap();
    if tools("read_tsv_equals_bcftools_query (npy)", &[Tool::ZarrPython]) {
        sh_ok(&format!(
            "python3 -c \"import numpy as np, zarr; a = np.load('{}'); \
             g = zarr.open_group('{}', mode='r')['call_genotype'][1:4]; \
             assert a.shape == g.shape and (a == g).all(), (a.shape, g.shape)\"",
            npy.display(),
            store.display()
        ));
    }
}

#[test]
fn damaged_and_missing_shards_are_errors_naming_the_chunk() {
    let dir = test_dir();
    let d = dir.path();
    let store = d.join("s.zarr");
    convert(
        &data("all_fields.vcf"),
        &store,
        &[
            "--variants-chunk",
            "2",
            "--variants-shard",
            "4",
            "--samples-chunk",
            "2",
        ],
    );
    let patches = [Patch {
        variant_start: 0,
        n_variants: 9,
        sample_start: 0,
        n_samples: 4,
    }];
    let read = |store: &Path| -> Result<Vec<u8>, String> {
        let st = Store::open(store).map_err(|e| e.to_string())?;
        let a = st.array("call_DP").map_err(|e| e.to_string())?;
        let r = Reader::new(2, 2).unwrap();
        let mut out = vec![0u8; r.batch_bytes(&a, &patches).unwrap()];
        r.read_batch(&a, &patches, &mut out)
            .map(|_| out)
            .map_err(|e| e.to_string())
    };
    let good = read(&store).unwrap();
    let shard = store.join("call_DP/c/0/0");
    let bytes = std::fs::read(&shard).unwrap();
    let n = 2 * 2; // inner chunks per shard: 2 variant rows x 2 sample columns
    let tail = bytes.len() - (n * 16 + 4);
    // Rewrites index entry `i` (fixing the checksum, as a forger would).
    let forge = |i: usize, off: u64, len: u64| {
        let mut b = bytes.clone();
        b[tail + i * 16..tail + i * 16 + 8].copy_from_slice(&off.to_le_bytes());
        b[tail + i * 16 + 8..tail + i * 16 + 16].copy_from_slice(&len.to_le_bytes());
        let crc = crc32c_of(&b[tail..tail + n * 16]);
        b[tail + n * 16..].copy_from_slice(&crc.to_le_bytes());
        b
    };
    let entry0 = u64::from_le_bytes(bytes[tail + 8..tail + 16].try_into().unwrap());
    for (what, damaged) in [
        ("offset past the end", forge(0, bytes.len() as u64 * 10, 4)),
        ("huge length", forge(0, 0, u64::MAX / 2)),
        ("overlapping entries", forge(1, entry0 / 2, entry0)),
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
    ] {
        std::fs::write(&shard, &damaged).unwrap();
        let e = read(&store).expect_err(what);
        assert!(e.contains("call_DP/c/0/0"), "{what}: {e}");
    }
    // A truncated inner chunk (index intact, chunk bytes cut): the chunk's key.
    let mut cut = bytes.clone();
    cut[..entry0 as usize].iter_mut().for_each(|b| *b = 0);
    std::fs::write(&shard, &cut).unwrap();
    let e = read(&store).expect_err("zeroed chunk");
    assert!(e.contains("call_DP/c/0/0"), "{e}");
    // A shard svar2 wrote that is gone is damage (the root records the shards
    // written); Zarr's fill is for shards never written (tests/store_integrity.rs).
    std::fs::remove_file(&shard).unwrap();
    let e = read(&store).expect_err("missing shard");
    assert!(
        e.contains("call_DP/c/0/0") && e.contains("missing shard"),
        "{e}"
    );
    std::fs::write(&shard, &bytes).unwrap();
    assert_eq!(read(&store).unwrap(), good);
    // (The damaged store is removed: the test directory's xarray check opens the rest.)
    std::fs::remove_dir_all(&store).unwrap();
}

/// crc32c (Castagnoli), bit by bit: what shard indexes carry.
fn crc32c_of(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
