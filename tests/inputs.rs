//! Many inputs into one store (per-chromosome files) and input from a pipe: the same
//! bytes as the single file, the same arrays as vcf2zarr given the same files, and the
//! one-line errors before any output exists.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// `src` split by contig, the header kept byte for byte (as per-chromosome releases
/// are): for each contig a bgzipped, indexed VCF and a BCF (`--no-version`: bcftools
/// adds no header lines).
fn split_by_contig(src: &Path, dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let text = std::fs::read_to_string(src).unwrap();
    let header: String = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut contigs: Vec<String> = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let c = l.split('\t').next().unwrap().to_string();
        if contigs.last() != Some(&c) {
            contigs.push(c);
        }
    }
    contigs
        .iter()
        .map(|c| {
            let body: String = text
                .lines()
                .filter(|l| l.split('\t').next() == Some(c))
                .map(|l| format!("{l}\n"))
                .collect();
            let vcf = dir.join(format!("part_{c}.vcf"));
            std::fs::write(&vcf, format!("{header}{body}")).unwrap();
            let gz = dir.join(format!("part_{c}.vcf.gz"));
            let bcf = dir.join(format!("part_{c}.bcf"));
            sh_ok(&format!(
                "bcftools view --no-version -Oz -o {gz} {vcf} && bcftools index -f {gz} && \
                 bcftools view --no-version -Ob -o {bcf} {vcf} && bcftools index -f {bcf}",
                gz = gz.display(),
                vcf = vcf.display(),
                bcf = bcf.display()
            ));
            (gz, bcf)
        })
        .collect()
}

fn convert_many(inputs: &[&Path], out: &Path, args: &[&str]) {
    let o = svar2()
        .args(["convert", "-q"])
        .args(args)
        .args(inputs)
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn split_files_in_any_order_give_the_single_files_bytes() {
    if !tools(
        "split_files_in_any_order_give_the_single_files_bytes",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let growth = growth_vcf(d);
    for (name, src) in [("all_fields", data("all_fields.vcf")), ("growth", growth)] {
        let sub = d.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let whole = sub.join("whole.zarr");
        convert(&src, &whole, &[]);
        let want = digest(&whole);
        let parts = split_by_contig(&src, &sub);
        assert!(parts.len() >= 2, "{name}: {} contigs", parts.len());
        // VCF.gz in reverse order, BCF rotated, and a mix of both.
        let gz: Vec<&Path> = parts.iter().rev().map(|p| p.0.as_path()).collect();
        let mut bcf: Vec<&Path> = parts.iter().map(|p| p.1.as_path()).collect();
        bcf.rotate_left(1);
        let mixed: Vec<&Path> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i % 2 == 0 {
                    p.1.as_path()
                } else {
                    p.0.as_path()
                }
            })
            .rev()
            .collect();
        for (k, list) in [gz, bcf, mixed.clone()].iter().enumerate() {
            let out = sub.join(format!("many{k}.zarr"));
            convert_many(list, &out, &[]);
            assert_eq!(digest(&out), want, "{name}: inputs {list:?}");
        }
        // Through the indexes: sub-contig readers, and files converted concurrently
        // (in reverse dispatch order, the worst case for stitching).
        for args in [
            &["--readers", "2"][..],
            &["--threads", "4", "--debug-contig-order", "reverse"],
        ] {
            let out = sub.join("indexed.zarr");
            convert_many(&mixed, &out, args);
            assert_eq!(digest(&out), want, "{name}: {args:?}");
            std::fs::remove_dir_all(&out).unwrap();
        }
        // --inputs FILE, and plan over the same list.
        let listing = sub.join("inputs.txt");
        let lines: Vec<String> = parts.iter().map(|p| p.0.display().to_string()).collect();
        std::fs::write(&listing, lines.join("\n") + "\n").unwrap();
        let out = sub.join("listed.zarr");
        let o = svar2()
            .args(["convert", "-q", "--inputs"])
            .arg(&listing)
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(digest(&out), want, "{name}: --inputs");
        let plan = svar2()
            .args(["plan", "--json", "--inputs"])
            .arg(&listing)
            .output()
            .unwrap();
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        assert_eq!(plan["streams"], parts.len());
        let records: u64 = plan["contigs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cost"].as_u64().unwrap())
            .sum();
        let want_records = std::fs::read_to_string(&src)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count() as u64;
        assert_eq!(
            records, want_records,
            "{name}: index counts over the inputs"
        );
    }
}

#[test]
fn split_files_give_the_same_arrays_as_vcf2zarr() {
    if !tools(
        "split_files_give_the_same_arrays_as_vcf2zarr",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let parts = split_by_contig(&data("all_fields.vcf"), d);
    let gz: Vec<&Path> = parts.iter().rev().map(|p| p.0.as_path()).collect();
    let reference = d.join("bio2zarr.zarr");
    let list: Vec<String> = gz.iter().map(|p| p.display().to_string()).collect();
    sh_ok(&format!(
        "BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 {} {} >/dev/null 2>&1",
        list.join(" "),
        reference.display()
    ));
    let ours = d.join("svar2.zarr");
    convert_many(&gz, &ours, &[]);
    sh_ok(&format!(
        "python3 {} {} {}",
        py("compare_stores.py"),
        reference.display(),
        ours.display()
    ));
}

#[test]
fn the_rate_probe_reads_the_largest_contig_of_many_inputs() {
    if !tools(
        "the_rate_probe_reads_the_largest_contig_of_many_inputs",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let parts = split_by_contig(&data("all_fields.vcf"), dir.path());
    // The largest contig (chr1, 4 records) in the last file, so the probe must find it.
    let gz: Vec<&Path> = parts.iter().rev().map(|p| p.0.as_path()).collect();
    let o = svar2()
        .args(["plan", "--dry-run", "--json", "--probe", "--threads", "8"])
        .args(&gz)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["plan"]["readers_from"], "probe", "{j}");
    assert!(j["probe_skipped"].is_null(), "{j}");
    assert_eq!(j["probe"]["records"].as_u64(), Some(4), "{j}");
}

/// `--max-mem` holds with many per-chromosome files: only the input being read is
/// open (each open one held its header and buffers: 8 files of 20,000 samples peaked
/// at twice the smallest budget the plan accepted).
#[test]
fn many_input_files_stay_under_max_mem() {
    if !tools("many_input_files_stay_under_max_mem", &[Tool::Bcftools])
        || !Path::new("/usr/bin/time").exists()
    {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let whole = d.join("whole.vcf");
    sh_ok(&format!(
        "python3 {}/scripts/make_wide_vcf.py {w} 20000 400 8 && bgzip -f {w} && \
         bcftools index -f {w}.gz && for k in 1 2 3 4 5 6 7 8; do \
         bcftools view --no-version -r c$k -Oz -o {d}/c$k.vcf.gz {w}.gz && \
         bcftools index -f {d}/c$k.vcf.gz; done",
        root().display(),
        w = whole.display(),
        d = d.display()
    ));
    let parts: Vec<PathBuf> = (1..=8).map(|k| d.join(format!("c{k}.vcf.gz"))).collect();
    // The smallest budget the plan accepts, from its refusal of a smaller one.
    let o = svar2()
        .args(["plan", "--dry-run", "--max-mem", "20MiB"])
        .args(&parts)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let mib: f64 = err
        .split("pass --max-mem ")
        .nth(1)
        .and_then(|t| t.split(" MiB").next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no smallest budget in: {err}"));
    let budget = format!("{mib}MiB");
    let out = d.join("out.zarr");
    let list: Vec<String> = parts.iter().map(|p| p.display().to_string()).collect();
    let report = sh_ok(&format!(
        "/usr/bin/time -v {} convert -q --max-mem {budget} {} {} 2>&1 >/dev/null",
        env!("CARGO_BIN_EXE_svar2"),
        list.join(" "),
        out.display()
    ));
    let kb = max_rss_kib(&report) as f64;
    assert!(
        kb / 1024.0 <= mib,
        "8 inputs: peak {:.1} MiB over --max-mem {budget}",
        kb / 1024.0
    );
    // The same records as one file give the same store.
    let one = d.join("one.zarr");
    convert(&whole.with_extension("vcf.gz"), &one, &[]);
    let again = d.join("again.zarr");
    convert_many(
        &parts.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &again,
        &[],
    );
    assert_eq!(digest(&one), digest(&again));
}

/// One line on stderr, exit 1, and no output directory.
fn refused(inputs: &[&Path], out: &Path) -> String {
    let o = svar2()
        .arg("convert")
        .args(inputs)
        .arg(out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!out.exists(), "{}: output written: {err}", out.display());
    err
}

#[test]
fn mismatched_inputs_are_refused_before_any_output() {
    if !tools(
        "mismatched_inputs_are_refused_before_any_output",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let parts = split_by_contig(&data("all_fields.vcf"), d);
    let (a, b) = (parts[0].0.as_path(), parts[1].0.as_path());
    let out = d.join("out.zarr");
    // Samples in another order.
    let reordered = d.join("reordered.vcf.gz");
    sh_ok(&format!(
        "bcftools query -l {b} | tac > {l} && bcftools view --no-version -S {l} -Oz -o {r} {b}",
        b = b.display(),
        l = d.join("reversed.txt").display(),
        r = reordered.display()
    ));
    let e = refused(&[a, &reordered], &out);
    assert!(
        e.contains("different samples") && e.contains("sample 1 is"),
        "{e}"
    );
    // A field declared twice, differently.
    let conflicting = d.join("conflicting.vcf");
    let text = std::fs::read_to_string(parts[1].0.with_extension("")).unwrap();
    std::fs::write(
        &conflicting,
        text.replacen(
            "##INFO=<ID=NS,Number=1,Type=Integer",
            "##INFO=<ID=NS,Number=2,Type=Integer",
            1,
        ),
    )
    .unwrap();
    let e = refused(&[a, &conflicting], &out);
    assert!(
        e.contains("INFO/NS is declared") && e.contains("conflicting.vcf"),
        "{e}"
    );
    // A file that is not there, and one that is not VCF.
    let e = refused(&[a, &d.join("missing.vcf.gz")], &out);
    assert!(e.contains("missing.vcf.gz"), "{e}");
    let junk = d.join("junk.vcf");
    std::fs::write(&junk, "this is not a VCF\n").unwrap();
    let e = refused(&[a, &junk], &out);
    assert!(e.contains("junk.vcf"), "{e}");
    // The same contig in two files.
    let e = refused(&[a, &parts[0].1], &out);
    assert!(e.contains("has records in"), "{e}");
}

#[test]
fn standard_input_equals_the_file_and_a_cut_pipe_fails() {
    let dir = test_dir();
    let d = dir.path();
    let src = data("all_fields.vcf");
    let whole = d.join("whole.zarr");
    convert(&src, &whole, &[]);
    let piped_with = |flags: &[&str], bytes: &[u8], out: &Path| {
        let mut child = svar2()
            .args(["convert", "-q"])
            .args(flags)
            .arg("-")
            .arg(out)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(bytes);
        child.wait_with_output().unwrap()
    };
    let piped = |bytes: &[u8], out: &Path| piped_with(&[], bytes, out);
    let text = std::fs::read(&src).unwrap();
    let out = d.join("stdin.zarr");
    let o = piped(&text, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(digest(&out), digest(&whole));
    // Cut in the middle of a record: an error, and no store that looks complete.
    let cut = d.join("cut.zarr");
    let o = piped(&text[..text.len() - 40], &cut);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("svar2: error: -: record"), "{err}");
    assert!(!cut.join("zarr.json").exists());
    // Readers through an index: the count asked for, and what a pipe can do instead.
    let o = piped_with(&["--readers", "2"], &text, &d.join("readers.zarr"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--readers 2") && err.contains("standard input"),
        "{err}"
    );
    assert!(!err.contains("bcftools index"), "{err}");
}
