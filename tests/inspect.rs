//! `svar2 inspect` on stores nobody here wrote (bio2zarr's, Zarr v2 and v3) and on
//! svar2's own: the layout it reports matches the files and zarr-python, and its
//! amplification is the planner's law.

mod common;
use common::*;
use std::path::Path;

fn inspect_json(store: &Path, patch: &str) -> serde_json::Value {
    let o = svar2()
        .args(["inspect", "--json", "--patch", patch])
        .arg(store)
        .output()
        .expect("svar2 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("inspect JSON")
}

fn array<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("{name} in the report"))
}

/// Bytes and count of the chunk files (metadata excluded) under one array's directory.
fn chunk_files(dir: &Path) -> (u64, u64) {
    let out = sh_ok(&format!(
        "find {} -type f ! -name zarr.json ! -name .zarray ! -name .zattrs -printf '%s\\n'",
        dir.display()
    ));
    let sizes: Vec<u64> = out.lines().map(|l| l.parse().unwrap()).collect();
    (sizes.iter().sum(), sizes.len() as u64)
}

#[test]
fn layouts_of_bio2zarr_v2_v3_and_svar2_stores() {
    if !tools(
        "layouts_of_bio2zarr_v2_v3_and_svar2_stores",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = bgzip_indexed(&{
        let p = d.join("af.vcf");
        std::fs::copy(data("all_fields.vcf"), &p).unwrap();
        p
    });
    let v2 = d.join("b2.zarr");
    let v3 = d.join("b3.zarr");
    sh_ok(&format!(
        "vcf2zarr convert -p 1 {gz} {v2} >/dev/null 2>&1 && \
         BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 {gz} {v3} >/dev/null 2>&1",
        gz = gz.display(),
        v2 = v2.display(),
        v3 = v3.display()
    ));
    let ours = d.join("s.zarr");
    let patched = d.join("p.zarr");
    convert(&gz, &ours, &[]);
    convert(&gz, &patched, &["--patch", "4096x1"]);
    for (store, format) in [(&v2, 2), (&v3, 3), (&ours, 3)] {
        let r = inspect_json(store, "4096x1");
        assert_eq!(r["zarr_format"], format, "{}", store.display());
        // Every array zarr-python sees, and nothing else.
        let names = sh_ok(&format!(
            "python3 -c \"import zarr,sys; print(len(list(zarr.open_group(sys.argv[1], mode='r').array_keys())))\" {}",
            store.display()
        ));
        assert_eq!(
            r["arrays"].as_array().unwrap().len().to_string(),
            names.trim()
        );
        // Bytes and files as on disk.
        let gt = array(&r, "call_genotype");
        let (bytes, files) = chunk_files(&store.join("call_genotype"));
        assert_eq!(
            (gt["stored_bytes"].as_u64(), gt["files"].as_u64()),
            (Some(bytes), Some(files))
        );
        // bio2zarr's and svar2's genotypes are blosc-zstd: the GPU path decodes them;
        // strings it does not.
        assert!(gt["gpu_unsupported"].is_null(), "{gt}");
        assert!(array(&r, "variant_id")["gpu_unsupported"]
            .as_str()
            .unwrap()
            .contains("strings"));
        assert!(gt["amplification"].as_f64().is_some(), "{gt}");
    }
    // Sharded where svar2 wrote it, and within --max-amplification when planned for it.
    let r = inspect_json(&ours, "4096x1");
    assert!(array(&r, "call_genotype")["shard"].is_array());
    assert!(inspect_json(&v2, "4096x1")["arrays"][0]["shard"].is_null());
    let p = inspect_json(&patched, "4096x1");
    let amp = array(&p, "call_genotype")["amplification"]
        .as_f64()
        .unwrap();
    assert!(amp <= 1.5, "{amp}");
    // The text report names the worst arrays and the fix.
    let text = sh_ok(&format!(
        "{} inspect --patch 4096x1 {}",
        env!("CARGO_BIN_EXE_svar2"),
        v2.display()
    ));
    assert!(
        text.contains("worst for a 4096x1 patch") && text.contains("svar2 rechunk --patch 4096x1")
    );
    // The fix it prints does fix it.
    let fixed = d.join("fixed.zarr");
    rechunk(&v2, &fixed, &["--max-mem", "1GiB", "--patch", "4096x1"]);
    let f = inspect_json(&fixed, "4096x1");
    for a in f["arrays"].as_array().unwrap() {
        if let Some(amp) = a["amplification"].as_f64() {
            assert!(amp <= 1.5, "{}: {amp}", a["name"]);
        }
    }
    // What inspect says a patch costs is what reading patches costs: bytes decoded
    // per byte needed, measured by bench-read one patch per batch (so no chunk serves
    // two patches), on a file long enough for 4096-variant patches.
    let long = d.join("long.vcf");
    std::fs::write(&long, svar2_vcf::testing::mixed_vcf(20, 9000, 5, false)).unwrap();
    for (name, flags) in [("default", vec![]), ("patched", vec!["--patch", "4096x1"])] {
        let store = d.join(format!("long-{name}.zarr"));
        convert(&long, &store, &flags);
        let said = array(&inspect_json(&store, "4096x1"), "call_genotype")["amplification"]
            .as_f64()
            .unwrap();
        let o = svar2()
            .args([
                "bench-read",
                "--patch",
                "4096x1",
                "--n",
                "400",
                "--batch",
                "1",
                "--json",
            ])
            .arg(&store)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let measured = r["decoded_per_useful"].as_f64().unwrap();
        assert!(
            (measured - said).abs() / said < 0.1,
            "{name}: inspect says {said}, reading decodes {measured}"
        );
    }
    // Not a store: one line, exit 1.
    let o = svar2().arg("inspect").arg(d).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a Zarr group") && err.trim().lines().count() == 1,
        "{err}"
    );
}
