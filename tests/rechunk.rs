//! `svar2 rechunk`: every value kept from stores nobody here wrote (bio2zarr's Zarr v2
//! and v3) and from svar2's own, checked by zarr-python and by an `svar2 view` + bcftools
//! round trip; the same bytes as a direct conversion; the same bytes whatever the
//! threads or the memory budget; bad inputs refused with one line naming the problem.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// The error line of a rechunk that must fail (exit 1, nothing that looks complete).
fn rechunk_fails(input: &Path, out: &Path, args: &[&str]) -> String {
    let had_root = out.join("zarr.json").exists();
    let o = run_rechunk(input, out, args);
    assert_eq!(o.status.code(), Some(1), "exit status of a refused rechunk");
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!e.contains("panicked"), "{e}");
    assert!(
        had_root || !out.join("zarr.json").exists(),
        "a failed rechunk left a root zarr.json"
    );
    e.lines()
        .find(|l| l.starts_with("svar2: error:"))
        .unwrap_or_else(|| panic!("one error line, got: {e}"))
        .to_string()
}

/// bio2zarr stores of `vcf_gz`: Zarr v2 (its default) and v3.
fn bio2zarr_stores(vcf_gz: &Path, dir: &Path, extra: &str) -> [PathBuf; 2] {
    let v2 = dir.join("b2.zarr");
    let v3 = dir.join("b3.zarr");
    sh_ok(&format!(
        "vcf2zarr convert -p 1 {extra} {gz} {v2} >/dev/null 2>&1 && \
         BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 {extra} {gz} {v3} >/dev/null 2>&1",
        gz = vcf_gz.display(),
        v2 = v2.display(),
        v3 = v3.display()
    ));
    [v2, v3]
}

fn assert_same_arrays(src: &Path, out: &Path) {
    let o = sh(&format!(
        "python3 {} {} {}",
        py("same_arrays.py"),
        src.display(),
        out.display()
    ));
    assert!(
        o.status.success(),
        "{} -> {} lost something:\n{}{}",
        src.display(),
        out.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every file of two stores, less the root `zarr.json`, byte for byte.
fn assert_same_files_but_root(a: &Path, b: &Path) {
    let list = |p: &Path| {
        sh_ok(&format!(
            "cd {} && find . -type f ! -path ./zarr.json | sort",
            p.display()
        ))
    };
    let (la, lb) = (list(a), list(b));
    assert_same_lines("file lists", &la, &lb);
    for f in la.lines() {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn values_kept_from_bio2zarr_v2_v3_and_svar2_stores() {
    if !tools(
        "values_kept_from_bio2zarr_v2_v3_and_svar2_stores",
        &[
            Tool::Bcftools,
            Tool::Bio2zarr,
            Tool::ZarrPython,
            Tool::Vcztools,
        ],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let [v2, v3] = bio2zarr_stores(&gz, d, "");
    let ours = d.join("ours.zarr");
    convert(&gz, &ours, &[]);
    let regions = ["chr1:150-450", "chrX:1500-3000,chr3:1-5"];
    for (src, patch) in [(&v2, "2x1"), (&v3, "4x2"), (&ours, "3x1")] {
        let out = d.join(format!(
            "{}-rechunked.zarr",
            src.file_stem().unwrap().to_string_lossy()
        ));
        rechunk(src, &out, &["--max-mem", "1GiB", "--patch", patch]);
        assert_same_arrays(src, &out);
        // Through `svar2 view` and bcftools: the rechunked store prints what its source
        // prints (svar2's also what the VCF holds), whole and by region.
        let expected = query_store(&gz, src, None);
        assert_same_lines("round trip", &expected, &query_store(&gz, &out, None));
        for r in regions {
            assert_same_lines(
                &format!("region {r}"),
                &query_store(&gz, src, Some(r)),
                &query_store(&gz, &out, Some(r)),
            );
        }
        if src == &ours {
            assert_same_lines("VCF", &query_all(&gz, None), &expected);
        } else {
            // Plain vcztools, an independent reader, prints bio2zarr's stores alike.
            assert_same_lines("vcztools", &query_vcztools(&gz, src, None), &expected);
        }
    }
    // A real-sized store: the corpus's small file (20,039 records), from bio2zarr's v2
    // and v3 stores, to the patch layout.
    let Some(small) = need_corpus(
        "values_kept_from_bio2zarr_v2_v3_and_svar2_stores (corpus part)",
        "sim_small.vcf.gz",
    ) else {
        return;
    };
    let sd = d.join("small");
    std::fs::create_dir(&sd).unwrap();
    for src in bio2zarr_stores(&small, &sd, "") {
        let out = sd.join(format!(
            "{}-rechunked.zarr",
            src.file_stem().unwrap().to_string_lossy()
        ));
        rechunk(&src, &out, &["--max-mem", "1GiB", "--patch", "4096x1"]);
        assert_same_arrays(&src, &out);
    }
}

#[test]
fn rechunking_a_conversion_gives_the_direct_conversions_bytes() {
    if !tools(
        "rechunking_a_conversion_gives_the_direct_conversions_bytes",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let growth = growth_vcf(d);
    let mut inputs = vec![
        (data("all_fields.vcf"), vec!["--patch", "4x1"]),
        (growth.clone(), vec!["--patch", "64x2"]),
        (growth, GROWTH_GEOMETRY.to_vec()),
    ];
    if let Some(small) = need_corpus(
        "rechunking_a_conversion_gives_the_direct_conversions_bytes (corpus part)",
        "sim_small.vcf.gz",
    ) {
        inputs.push((small, vec!["--patch", "4096x1"]));
    }
    for (i, (input, layout)) in inputs.iter().enumerate() {
        let plain = d.join(format!("plain{i}.zarr"));
        let direct = d.join(format!("direct{i}.zarr"));
        let rechunked = d.join(format!("rechunked{i}.zarr"));
        convert(input, &plain, &[]);
        convert(input, &direct, layout);
        let mut args = vec!["--max-mem", "1GiB"];
        args.extend(layout);
        rechunk(&plain, &rechunked, &args);
        assert_same_files_but_root(&direct, &rechunked);
        // And back: the default layout from the patched store.
        let back = d.join(format!("back{i}.zarr"));
        rechunk(&rechunked, &back, &["--max-mem", "1GiB"]);
        assert_same_files_but_root(&plain, &back);
    }
}

#[test]
fn same_bytes_whatever_threads_readers_or_budget() {
    if !tools(
        "same_bytes_whatever_threads_readers_or_budget",
        &[Tool::Bcftools, Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let growth = growth_vcf(d);
    let gz = bgzip_indexed(&growth);
    // Small source chunks (100 x 5) so tiles, column groups and straddling chunks all
    // happen at these sizes.
    let [_, v3] = bio2zarr_stores(&gz, d, "-l 100 -w 5");
    let layout = [
        "--variants-chunk",
        "64",
        "--variants-shard",
        "256",
        "--samples-chunk",
        "3",
        "--samples-shard",
        "9",
    ];
    let mut digests = Vec::new();
    for (i, extra) in [
        vec!["--threads", "1", "--io-threads", "1", "--max-mem", "1GiB"],
        vec!["--threads", "2", "--io-threads", "8", "--max-mem", "1GiB"],
        vec!["--threads", "3", "--max-mem", "2GiB"],
    ]
    .into_iter()
    .enumerate()
    {
        let out = d.join(format!("r{i}.zarr"));
        let mut args = layout.to_vec();
        args.extend(extra);
        rechunk(&v3, &out, &args);
        digests.push(digest(&out));
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
}

/// `--dry-run` prints the plan (text and JSON) and writes nothing.
#[test]
fn dry_run_plans_and_reports_decodes() {
    if !tools(
        "dry_run_plans_and_reports_decodes",
        &[Tool::Bcftools, Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let [v2, _] = bio2zarr_stores(&gz, d, "");
    let out = d.join("never.zarr");
    let o = svar2()
        .args([
            "rechunk",
            "--dry-run",
            "--json",
            "--max-mem",
            "1GiB",
            "--patch",
            "4096x1",
        ])
        .arg(&v2)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!out.exists(), "a dry run writes nothing");
    assert_eq!(j["samples"], 4);
    assert_eq!(j["variants"], 9);
    assert!(j["plan"]["predicted_peak_rss"].as_u64().unwrap() < 1 << 30);
    let arrays = j["plan"]["arrays"].as_array().unwrap();
    assert!(arrays.iter().any(|a| a["name"] == "call_genotype"));
    assert!(arrays.iter().all(|a| a["decodes"] == a["source_chunks"]));
    let text = svar2()
        .args(["rechunk", "--dry-run", "--max-mem", "1GiB"])
        .arg(&v2)
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("predicted peak"), "{text}");
    assert!(text.contains("each decoded once"), "{text}");
}

#[test]
fn bad_inputs_are_refused_with_one_line() {
    if !tools("bad_inputs_are_refused_with_one_line", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let good = d.join("good.zarr");
    convert(&data("all_fields.vcf"), &good, &[]);
    let out = d.join("out.zarr");
    let copy = |name: &str| {
        let p = d.join(name);
        sh_ok(&format!("cp -r {} {}", good.display(), p.display()));
        p
    };

    // Not a Zarr store at all.
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("notes.txt"), "x").unwrap();
    let e = rechunk_fails(&plain, &out, &[]);
    assert!(e.contains("plain"), "{e}");
    let e = rechunk_fails(&data("all_fields.vcf"), &out, &[]);
    assert!(e.contains("all_fields.vcf"), "{e}");

    // A Zarr store that is not VCF Zarr.
    let partial = copy("partial.zarr");
    std::fs::remove_dir_all(partial.join("variant_position")).unwrap();
    let e = rechunk_fails(&partial, &out, &[]);
    assert!(
        e.contains("not a VCF Zarr store") && e.contains("variant_position"),
        "{e}"
    );
    // (Damaged stores are removed once refused: the test directory's xarray check
    // opens every store left in it.)
    std::fs::remove_dir_all(&partial).unwrap();

    // A codec zarrs cannot read: named.
    let odd = copy("odd.zarr");
    let meta = odd.join("variant_quality/zarr.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("\"blosc\"", "\"lz4-frame-x\"")).unwrap();
    let e = rechunk_fails(&odd, &out, &[]);
    assert!(
        e.contains("variant_quality") && e.contains("lz4-frame-x"),
        "{e}"
    );
    std::fs::remove_dir_all(&odd).unwrap();

    // A corrupt chunk: named by its key.
    let bad = copy("bad.zarr");
    let shard = bad.join("call_DP/c/0/0");
    let bytes = std::fs::read(&shard).unwrap();
    let mut damaged = bytes.clone();
    for b in damaged.iter_mut().take(bytes.len() / 2) {
        *b ^= 0x5a;
    }
    std::fs::write(&shard, &damaged).unwrap();
    let e = rechunk_fails(&bad, &out, &[]);
    assert!(e.contains("call_DP/c/0/0"), "{e}");
    assert!(!out.exists(), "the partial output is removed");
    std::fs::remove_dir_all(&bad).unwrap();

    // Output exists; output is the input.
    rechunk(&good, &out, &[]);
    let e = rechunk_fails(&good, &out, &[]);
    assert!(e.contains("already exists") && e.contains("--force"), "{e}");
    rechunk(&good, &out, &["--force"]);
    let e = rechunk_fails(&good, &good, &["--force"]);
    assert!(e.contains("overlaps the input"), "{e}");
    assert!(good.join("zarr.json").exists(), "the input is untouched");
    let e = rechunk_fails(&good, &good.join("inner.zarr"), &[]);
    assert!(e.contains("overlaps the input"), "{e}");

    // A budget too small says what would fit.
    let e = rechunk_fails(&good, &d.join("tiny.zarr"), &["--max-mem", "1MiB"]);
    assert!(
        e.contains("--max-mem") && e.contains("needs at least"),
        "{e}"
    );
}

#[test]
fn a_killed_rechunk_leaves_no_complete_looking_store() {
    let Some(sim) = need_corpus(
        "a_killed_rechunk_leaves_no_complete_looking_store",
        "sim_small.vcf.gz",
    ) else {
        return;
    };
    let dir = test_dir();
    let d = dir.path();
    let src = d.join("src.zarr");
    convert(&sim, &src, &[]);
    let out = d.join("out.zarr");
    // Tiny chunks make the run long enough to kill mid-way.
    let mut child = svar2()
        .args([
            "rechunk",
            "-q",
            "--threads",
            "1",
            "--variants-chunk",
            "16",
            "--samples-chunk",
            "1",
        ])
        .arg(&src)
        .arg(&out)
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !out.join("call_genotype").exists() && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !out.join("zarr.json").exists(),
        "no root zarr.json after a kill"
    );
    assert!(
        out.join(".svar2-in-progress").exists(),
        "marked as interrupted"
    );
    // Run again: started from scratch, finishes, the same bytes as an uninterrupted run.
    rechunk(
        &src,
        &out,
        &["--variants-chunk", "16", "--samples-chunk", "1"],
    );
    let clean = d.join("clean.zarr");
    rechunk(
        &src,
        &clean,
        &["--variants-chunk", "16", "--samples-chunk", "1"],
    );
    assert_eq!(digest(&out), digest(&clean));
}
