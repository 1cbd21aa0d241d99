//! `svar2 plan`: the budget, the dispatch order and the failure modes, checked against
//! bcftools' own index statistics.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn order_names(plan: &serde_json::Value) -> Vec<(String, u64)> {
    let contigs = plan["contigs"].as_array().unwrap();
    plan["plan"]["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let c = &contigs[i.as_u64().unwrap() as usize];
            (
                c["name"].as_str().unwrap().to_string(),
                c["cost"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// bcftools' per-contig counts, longest first, ties by name; contigs it does not list
/// (no records) last with 0.
fn bcftools_order(input: &Path, header_contigs: &[&str]) -> Vec<(String, u64)> {
    let out = sh_ok(&format!("bcftools index -s {}", input.display()));
    let mut v: Vec<(String, u64)> = out
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[2].parse().unwrap())
        })
        .collect();
    for c in header_contigs {
        if !v.iter().any(|(n, _)| n == c) {
            v.push((c.to_string(), 0));
        }
    }
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

#[test]
fn dispatch_order_matches_bcftools_index_stats_for_csi_and_tbi() {
    if !tools(
        "dispatch_order_matches_bcftools_index_stats_for_csi_and_tbi",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let vcf = dir.path().join("u.vcf");
    let spec = [
        "chrA:40", "chrB:310", "chrC:0", "chrD:125", "chrE:125", "chrF:7",
    ];
    sh_ok(&format!(
        "python3 {} {} {}",
        py("make_unequal_vcf.py"),
        vcf.display(),
        spec.join(" ")
    ));
    let names: Vec<&str> = spec.iter().map(|s| s.split(':').next().unwrap()).collect();
    let gz = dir.path().join("u.vcf.gz");
    let bcf = dir.path().join("u.bcf");
    sh_ok(&format!(
        "bcftools view -Oz -o {gz} {vcf} && bcftools view -Ob -o {bcf} {vcf} && bcftools index {bcf}",
        gz = gz.display(),
        vcf = vcf.display(),
        bcf = bcf.display()
    ));
    // The fixture is really unequal (else longest-first proves nothing).
    let expected = bcftools_order(&bcf, &names);
    assert_eq!(expected[0], ("chrB".to_string(), 310));
    assert!(expected.windows(2).filter(|w| w[0].1 != w[1].1).count() >= 4);

    for (kind, cmd) in [
        ("csi", "bcftools index -f"),
        ("tbi", "bcftools index -t -f"),
    ] {
        sh_ok(&format!("rm -f {0}.csi {0}.tbi && {cmd} {0}", gz.display()));
        // Enough cores for several contigs at once: the longest go first.
        let plan = plan_json(&gz, &["--threads", "16", "--readers", "1"]);
        assert!(plan["plan"]["cc"].as_u64().unwrap() > 1);
        assert_eq!(plan["index"], kind);
        assert_eq!(order_names(&plan), bcftools_order(&gz, &names), "{kind}");
        assert_eq!(plan["plan"]["records"], 607);
    }
    let plan = plan_json(&bcf, &["--threads", "16", "--readers", "1"]);
    assert_eq!(plan["index"], "csi");
    assert_eq!(order_names(&plan), expected, "bcf");
    // One contig at a time gains nothing from reordering: file order.
    let plan = plan_json(&bcf, &["--threads", "1"]);
    assert_eq!(plan["plan"]["cc"], 1);
    let file: Vec<String> = order_names(&plan).into_iter().map(|(n, _)| n).collect();
    assert_eq!(file, names);
}

#[test]
fn without_an_index_the_plan_falls_back_and_says_so() {
    let plan = plan_json(&data("all_fields.vcf"), &["--threads", "16"]);
    assert!(plan["index"].is_null());
    // No record counts, no place on the variants axis: one contig at a time.
    assert_eq!(plan["plan"]["cc"], 1);
    let notes = plan["plan"]["notes"].to_string();
    assert!(notes.contains("one contig at a time"), "{notes}");
    let from = plan["counts_from"].as_str().unwrap();
    assert!(
        from.contains("fallback") && from.contains("bcftools index"),
        "{from}"
    );
    assert_eq!(plan["contigs"][0]["tier"], "contig_length");
    let unestimated = plan["contigs"].as_array().unwrap().iter();
    assert!(unestimated
        .filter(|c| c["tier"] == "unestimated")
        .any(|c| c["name"] == "chrUn"));
    let text = sh_ok(&format!(
        "{} plan --dry-run {}",
        env!("CARGO_BIN_EXE_svar2"),
        data("all_fields.vcf").display()
    ));
    assert!(
        text.contains("fallback") && text.contains("unestimated"),
        "{text}"
    );
}

#[test]
fn budget_below_the_minimum_fails_fast_and_writes_nothing() {
    let dir = test_dir();
    let out = dir.path().join("never.zarr");
    for cmd in ["convert", "plan"] {
        let o = svar2()
            .args([cmd, "--max-mem", "1MiB"])
            .arg(data("all_fields.vcf"))
            .arg(&out)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("all_fields.vcf")
                && err.contains("smallest plan")
                && err.contains("pass --max-mem"),
            "{err}"
        );
        assert!(!out.exists(), "{cmd} wrote something");
    }
    // The budget the message names really works.
    let o = svar2()
        .args(["convert", "-q", "--max-mem", "1MiB"])
        .arg(data("all_fields.vcf"))
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let minimum = err
        .split("pass --max-mem ")
        .nth(1)
        .unwrap()
        .split(" or more")
        .next()
        .unwrap();
    let minimum = minimum.replace(' ', "");
    convert(&data("all_fields.vcf"), &out, &["--max-mem", &minimum]);
}

#[test]
fn plan_writes_nothing_and_reports_geometry() {
    let dir = test_dir();
    let out = dir.path().join("p.zarr");
    let text = sh_ok(&format!(
        "{} plan --dry-run --patch 4096x1 {} {}",
        env!("CARGO_BIN_EXE_svar2"),
        data("all_fields.vcf").display(),
        out.display()
    ));
    assert!(!out.exists());
    for want in [
        "memory budget",
        "cores",
        "dispatch order",
        "cc = 1",
        "w = 1",
        "amplification",
        "peak RSS",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // The geometry it prints is the JSON's, and the store convert then writes has it.
    let j = plan_json(&data("all_fields.vcf"), &["--patch", "4096x1"]);
    let p = &j["plan"];
    let (v, s) = (
        p["chunks"]["variants"].as_u64().unwrap(),
        p["chunks"]["samples"].as_u64().unwrap(),
    );
    let (vs, ss) = (
        p["variants_shard"].as_u64().unwrap(),
        p["samples_shard"].as_u64().unwrap(),
    );
    let line = format!("inner {v} variants x {s} samples; shards {vs} x {ss}");
    assert!(text.contains(&line), "{line} not in\n{text}");
    let amp = p["amplification"].as_f64().unwrap();
    assert!(
        text.contains(&format!("amplification  {amp:.3}")),
        "{amp} not in\n{text}"
    );
    convert(&data("all_fields.vcf"), &out, &["--patch", "4096x1"]);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("call_genotype/zarr.json")).unwrap())
            .unwrap();
    let inner = &meta["codecs"][0]["configuration"]["chunk_shape"];
    assert_eq!(inner[0].as_u64(), Some(v), "{meta}");
    assert_eq!(inner[1].as_u64(), Some(s.min(4)), "{meta}");
    assert_eq!(
        meta["chunk_grid"]["configuration"]["chunk_shape"][0].as_u64(),
        Some(vs)
    );
}

/// `--max-mem` is a promise: the measured peak RSS of a conversion whose budget forces
/// smaller chunk rows stays under it.
#[test]
fn measured_peak_rss_stays_under_max_mem() {
    if !Path::new("/usr/bin/time").exists() {
        skip(
            "measured_peak_rss_stays_under_max_mem",
            "/usr/bin/time missing (apt-get install time)",
        );
        return;
    }
    let dir = test_dir();
    // GT-only, wide; and a call set with FORMAT fields (AD, DP, GQ, PL), whose rows
    // cost more per raw byte (the law weighs them apart).
    let wide = dir.path().join("wide.vcf");
    sh_ok(&format!(
        "python3 {}/scripts/make_wide_vcf.py {} 4000 1500",
        root().display(),
        wide.display()
    ));
    let calls = dir.path().join("calls.vcf");
    sh_ok(&format!(
        "python3 {}/scripts/make_format_vcf.py {} 600 1500 GT:AD:DP:GQ:PL",
        root().display(),
        calls.display()
    ));
    let out = dir.path().join("w.zarr");
    for (vcf, budgets) in [(&wide, [40u64, 64]), (&calls, [40, 64])] {
        for budget_mib in budgets {
            let plan = plan_json(vcf, &["--max-mem", &format!("{budget_mib}MiB")]);
            let report = sh_ok(&format!(
                "/usr/bin/time -v {} convert -q --force --max-mem {budget_mib}MiB {} {} 2>&1 >/dev/null",
                env!("CARGO_BIN_EXE_svar2"),
                vcf.display(),
                out.display()
            ));
            let kb = max_rss_kib(&report);
            let predicted = plan["plan"]["predicted_peak_rss"].as_u64().unwrap();
            assert!(
                kb * 1024 <= budget_mib << 20,
                "{}: peak {kb} KiB over --max-mem {budget_mib}MiB (predicted {predicted})",
                vcf.display()
            );
            assert!(
                predicted <= budget_mib << 20,
                "the plan itself fits its budget"
            );
            // The budget changed how much was held at once, never a value: the same
            // layout written without it gives the same bytes.
            let p = &plan["plan"];
            let same = dir.path().join("same.zarr");
            let geometry = [
                ("--variants-chunk", &p["chunks"]["variants"]),
                ("--samples-chunk", &p["chunks"]["samples"]),
                ("--variants-shard", &p["variants_shard"]),
                ("--samples-shard", &p["samples_shard"]),
            ];
            let flags: Vec<String> = geometry
                .iter()
                .flat_map(|(f, v)| [f.to_string(), v.to_string()])
                .collect();
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            convert(vcf, &same, &flags);
            assert_eq!(
                digest(&same),
                digest(&out),
                "{} at {budget_mib}MiB",
                vcf.display()
            );
            std::fs::remove_dir_all(&same).unwrap();
        }
    }
}

/// A good BCF index prints no htslib error under `-v`: the index is opened as the
/// plain CSI a BCF has, never tried as tabix first (which htslib reports as an
/// "Invalid index header").
#[test]
fn a_good_bcf_index_prints_no_htslib_error() {
    if !tools("a_good_bcf_index_prints_no_htslib_error", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let bcf = dir.path().join("in.bcf");
    sh_ok(&format!(
        "bcftools view --no-version -Ob -o {0} {1} && bcftools index -f {0}",
        bcf.display(),
        data("all_fields.vcf").display()
    ));
    let out = svar2().args(["plan", "-v"]).arg(&bcf).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("[E::"),
        "an htslib error for a good index:\n{err}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("CSI index"),
        "the index counted the records"
    );
}

/// An indexed VCF of `n_samples` samples (`s0`, `s1`, …) and `rows` (columns
/// separated by single spaces), as [`vcf_of_rows`] writes it.
fn gt_rows_vcf(dir: &Path, name: &str, meta: &str, n_samples: usize, rows: &[String]) -> PathBuf {
    let samples: Vec<String> = (0..n_samples).map(|i| format!("s{i}")).collect();
    let names: Vec<&str> = samples.iter().map(String::as_str).collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    vcf_of_rows(dir, name, meta, &names, &rows)
}

/// The plan charges a row as the input's first records fill a batch (diploid calls
/// two alleles to a byte, phase flags a bit each), not the header's worst case of a
/// byte per allele and per flag; records further on that do not pack (alleles past
/// 13) are encoded fewer at once, and the store's bytes do not change.
#[test]
fn rows_are_planned_as_the_first_records_fill_them() {
    if !tools(
        "rows_are_planned_as_the_first_records_fill_them",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let n_samples = 2000;
    let sixteen: Vec<String> = (1..16).map(|i| "C".repeat(i)).collect();
    let mut rows = Vec::new();
    // One contig without a length: spots only where each quarter of its bytes
    // starts, and the records that do not pack lie between the first 64 and the
    // second quarter.
    for r in 0..6000usize {
        let mut calls: Vec<&str> = (0..2000)
            .map(|s| ["0|0", "0|1", "1|0", "1|1"][(r * 7 + s * 13) % 4])
            .collect();
        let alt = match !(100..1300).contains(&r) {
            true => "G".to_string(),
            false => {
                calls[r % 2000] = "15|14";
                sixteen.join(",")
            }
        };
        rows.push(format!(
            "1 {} . A {alt} . PASS . GT {}",
            r * 10 + 1,
            calls.join(" ")
        ));
    }
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=1>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n";
    let vcf = gt_rows_vcf(dir.path(), "unpacking", meta, n_samples, &rows);
    let plan = plan_json(&vcf, &[]);
    assert_eq!(plan["prefix"]["packed"], true, "{plan}");
    let row = plan["row_bytes"].as_u64().unwrap();
    // A byte a call, a bit a phase flag, and the record's own columns: not the
    // header's worst case of three bytes a call.
    assert!((2000..3000).contains(&row), "{row} bytes a row");
    let one = dir.path().join("one.zarr");
    convert(&vcf, &one, &["--threads", "1", "--zstd-level", "9"]);
    let mut narrowed = false;
    // The window narrows only when a batch arrives while another still encodes.
    for _ in 0..3 {
        let two = dir.path().join("two.zarr");
        let out = svar2()
            .args([
                "convert",
                "-v",
                "--force",
                "--threads",
                "2",
                "--zstd-level",
                "9",
            ])
            .arg(&vcf)
            .arg(&two)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(digest(&two), digest(&one));
        narrowed |= err.contains("encoding fewer batches at once");
        if narrowed {
            break;
        }
    }
    assert!(narrowed, "batches of unpacked calls were never held back");
}

/// A FORMAT field the first records lack is still charged at its planned width (the
/// prefix decides how values are held, not which fields later records carry).
#[test]
fn a_field_the_first_records_lack_is_still_planned() {
    if !tools(
        "a_field_the_first_records_lack_is_still_planned",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let n_samples = 500;
    let rows: Vec<String> = (0..200usize)
        .map(|r| {
            let (format, call) = if r < 100 {
                ("GT", "0/1")
            } else {
                ("GT:PL", "0/1:30,0,40")
            };
            format!(
                "1 {} . A G . PASS . {format} {}",
                r + 1,
                vec![call; 500].join(" ")
            )
        })
        .collect();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=1>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
                ##FORMAT=<ID=PL,Number=G,Type=Integer,Description=\"Likelihoods\">\n";
    let vcf = gt_rows_vcf(dir.path(), "late_pl", meta, n_samples, &rows);
    let plan = plan_json(&vcf, &[]);
    assert!(plan["prefix"]["records"].as_u64().unwrap() >= 64, "{plan}");
    // PL: three 16-bit values a sample; GT: a byte.
    let row = plan["row_bytes"].as_u64().unwrap();
    assert!(row >= 500 * 7, "{row} bytes a row");
    assert!(plan["plan"]["in_flight_format_bytes"].as_u64().unwrap() > 0);
    // Several inputs: each one's first records are read, and the most any fills is
    // planned, whatever the inputs' order (a cheap first file must not plan for an
    // expensive second one, nor the order decide the chunking).
    let cheap: Vec<String> = (0..100usize)
        .map(|r| {
            format!(
                "1 {} . A G . PASS . GT {}",
                r + 1,
                vec!["0/1"; 500].join(" ")
            )
        })
        .collect();
    let dear: Vec<String> = (0..100usize)
        .map(|r| {
            let calls = vec!["0/1:30,0,40,1,2,3"; 500].join(" ");
            format!("2 {} . A G,T . PASS . GT:PL {calls}", r + 1)
        })
        .collect();
    let meta = meta.replace("##contig=<ID=1>\n", "##contig=<ID=1>\n##contig=<ID=2>\n");
    let a = gt_rows_vcf(dir.path(), "cheap", &meta, n_samples, &cheap);
    let b = gt_rows_vcf(dir.path(), "dear", &meta, n_samples, &dear);
    let rows = |first: &Path, second: &Path| {
        let o = svar2()
            .args(["plan", "--json"])
            .args([first, second])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            p["row_bytes"].as_u64().unwrap(),
            p["plan"]["chunks"].clone(),
        )
    };
    let (ab, ab_chunks) = rows(&a, &b);
    assert_eq!((ab, ab_chunks), rows(&b, &a));
    // PL of three alleles: six 16-bit values a sample.
    assert!(ab >= 500 * 13, "{ab} bytes a row");
}

/// One indexed file is also sampled at spots spread over its contigs: a stretch of
/// dearer records past its first ones (here PL of three alleles from the contig's
/// second half on) is planned for.
#[test]
fn an_indexed_file_is_sampled_past_its_first_records() {
    if !tools(
        "an_indexed_file_is_sampled_past_its_first_records",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let n_samples = 500;
    let rows: Vec<String> = (0..400usize)
        .map(|r| match r < 200 {
            true => format!(
                "1 {} . A G . PASS . GT {}",
                r + 1,
                vec!["0/1"; 500].join(" ")
            ),
            false => format!(
                "1 {} . A G,T . PASS . GT:PL {}",
                600_000 + r,
                vec!["0/1:30,0,40,1,2,3"; 500].join(" ")
            ),
        })
        .collect();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000000>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
                ##FORMAT=<ID=PL,Number=G,Type=Integer,Description=\"Likelihoods\">\n";
    let vcf = gt_rows_vcf(dir.path(), "dear_later", meta, n_samples, &rows);
    let plan = plan_json(&vcf, &[]);
    // Past the 64 records at the start, spots were read.
    assert!(plan["prefix"]["records"].as_u64().unwrap() > 64, "{plan}");
    // PL of three alleles: six 16-bit values a sample.
    let row = plan["row_bytes"].as_u64().unwrap();
    assert!(row >= 500 * 13, "{row} bytes a row");
    // The spots are read by several threads; what they measure does not depend on
    // how many.
    for threads in ["1", "3", "16"] {
        let other = plan_json(&vcf, &["--threads", threads]);
        assert_eq!(other["prefix"], plan["prefix"], "--threads {threads}");
        assert_eq!(other["row_bytes"], plan["row_bytes"], "--threads {threads}");
    }
}
