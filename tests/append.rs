//! `svar2 append` against `bcftools merge`: a store of some samples, grown by one
//! batch and then another, equals converting the inputs `bcftools merge` joined in
//! the same steps, with the same layout. An append killed at any moment leaves the
//! old store (digest, `verify` clean) or the new one, and the next append finishes
//! the job; two at once: one is refused. What cannot be appended to is refused by
//! name. And the ground it stands on: a store printed as BCF converts back to the
//! same bytes.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Explicit layout: the appended store keeps its own, so the oracle gets the same.
const LAYOUT: &[&str] = &[
    "--variants-chunk",
    "3",
    "--variants-shard",
    "6",
    "--samples-chunk",
    "1",
    "--samples-shard",
    "1",
];

fn bcftools_merge(inputs: &[&Path], out: &Path) {
    let list: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    sh_ok(&format!(
        "bcftools merge --no-version -Oz -o {0} {1} && bcftools index -f {0}",
        out.display(),
        list.join(" ")
    ));
}

fn append(store: &Path, inputs: &[&Path]) -> std::process::Output {
    svar2()
        .args(["append", "-q"])
        .arg(store)
        .args(inputs)
        .output()
        .expect("svar2 runs")
}

/// `s{i}` for `i` in `r`, comma-separated: samples of a generated call set.
fn sample_names(r: std::ops::Range<usize>) -> String {
    r.map(|i| format!("s{i}")).collect::<Vec<_>>().join(",")
}

fn append_ok(store: &Path, inputs: &[&Path]) {
    let out = append(store, inputs);
    assert!(
        out.status.success(),
        "append {inputs:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn appending_batches_equals_converting_bcftools_merge() {
    if !tools(
        "appending_batches_equals_converting_bcftools_merge",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let all = all_fields_indexed(d);
    let a = sample_part(&all, d, "a.vcf.gz", "NA00001,Zoë", "", "cat");
    // Sites the store lacks and ALTs it does not have: through the merge's rules.
    let b = sample_part(
        &all,
        d,
        "b.vcf.gz",
        "样本3",
        "-e 'POS==200'",
        r#"awk 'BEGIN{OFS="\t"} /^#/{print;next} $2==100{$5="C"} {print}'"#,
    );
    let c = sample_part(&all, d, "c.vcf.gz", "s-4 x", "-e 'POS==2000'", "cat");
    let store = d.join("grown.zarr");
    convert(&a, &store, LAYOUT);
    // The store printed as BCF converts back to the very same bytes.
    let printed = d.join("printed.bcf");
    sh_ok(&format!(
        "{} view -Ob -o {} {}",
        env!("CARGO_BIN_EXE_svar2"),
        printed.display(),
        store.display()
    ));
    let again = d.join("again.zarr");
    convert(&printed, &again, LAYOUT);
    assert_eq!(digest(&again), digest(&store), "view -Ob then convert");

    append_ok(&store, &[&b]);
    let ab = d.join("ab.vcf.gz");
    bcftools_merge(&[&a, &b], &ab);
    let oracle = d.join("ab.zarr");
    convert(&ab, &oracle, LAYOUT);
    assert_eq!(digest(&store), digest(&oracle), "one batch appended");
    assert!(
        !d.join("grown.zarr.svar2-append").exists(),
        "staging left behind"
    );

    append_ok(&store, &[&c]);
    let abc = d.join("abc.vcf.gz");
    bcftools_merge(&[&ab, &c], &abc);
    let oracle = d.join("abc.zarr");
    convert(&abc, &oracle, LAYOUT);
    assert_eq!(digest(&store), digest(&oracle), "a second batch appended");
    let v = svar2().arg("verify").arg(&store).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    // The grown store (and every oracle beside it) opens in xarray, as users will.
    assert_xarray_opens(
        "appending_batches_equals_converting_bcftools_merge",
        d,
        false,
    );

    // A sample already in the store: refused by name, the store untouched.
    let before = digest(&store);
    let out = append(&store, &[&b]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("样本3") && msg.contains("--force-samples"),
        "{msg}"
    );
    assert_eq!(digest(&store), before);
    assert!(!d.join("grown.zarr.svar2-append").exists());
}

#[test]
fn append_refuses_what_it_cannot_grow() {
    if !tools("append_refuses_what_it_cannot_grow", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let all = all_fields_indexed(d);
    let a = sample_part(&all, d, "a.vcf.gz", "NA00001,Zoë", "", "cat");
    let b = sample_part(&all, d, "b.vcf.gz", "样本3", "", "cat");
    let zip = d.join("a.vcz.zip");
    convert(&a, &zip, &[]);
    let store = d.join("a.zarr");
    convert(&a, &store, &[]);
    let link = d.join("link.zarr");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    // A Zarr v2 group (bio2zarr's default): main said it had no root zarr.json.
    let v2 = d.join("v2.zarr");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(v2.join(".zgroup"), "{\"zarr_format\": 2}").unwrap();
    for (target, needle) in [
        (v2.clone(), "a Zarr v2 store"),
        (zip.clone(), "written once"),
        (PathBuf::from("s3://bucket/store"), "directory store"),
        (link.clone(), "symbolic link"),
        (d.join("missing.zarr"), "existing store"),
        (d.to_path_buf(), "not a complete Zarr store"),
    ] {
        let out = append(&target, &[&b]);
        assert!(
            !out.status.success(),
            "{} was appended to",
            target.display()
        );
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(msg.contains(needle), "{}: {msg}", target.display());
    }
    // Standard input: read once, so refused by what it is (main said it was "read
    // alone, not with other inputs" when it was alone).
    let out = append(&store, &[Path::new("-")]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("standard input") && msg.contains("to a file first"),
        "{msg}"
    );
    // inspect says what an append costs each kind of store.
    for (target, needle) in [
        (&store, "writes a new version of the whole store"),
        (&zip, "written once"),
    ] {
        let out = svar2().arg("inspect").arg(target).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(needle), "{}: {text}", target.display());
    }
    // A file of the user's inside the store: the old version would go with it.
    std::fs::write(store.join("NOTES.txt"), "mine").unwrap();
    let out = append(&store, &[&b]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOTES.txt"));
    assert_eq!(std::fs::read(store.join("NOTES.txt")).unwrap(), b"mine");
    std::fs::remove_file(store.join("NOTES.txt")).unwrap();
    // A staging folder holding something svar2 did not put there is left alone.
    let staging = d.join("a.zarr.svar2-append");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("notes.txt"), "mine").unwrap();
    let out = append(&store, &[&b]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes.txt"));
    assert!(staging.join("notes.txt").exists());
    // ... even under the name of svar2's own export, or as an input there.
    std::fs::remove_file(staging.join("notes.txt")).unwrap();
    std::fs::copy(&b, staging.join("old.bcf")).unwrap();
    for inputs in [vec![b.as_path()], vec![staging.join("old.bcf").as_path()]] {
        let out = append(&store, &inputs);
        assert!(!out.status.success(), "{inputs:?}");
        assert_eq!(
            std::fs::read(staging.join("old.bcf")).unwrap(),
            std::fs::read(&b).unwrap()
        );
    }
    // A symbolic link at the staging folder's name is not followed, nor removed.
    std::fs::remove_dir_all(&staging).unwrap();
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &staging).unwrap();
    let out = append(&store, &[&b]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
    assert!(std::fs::symlink_metadata(&staging)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// The corpus split: a store of its first 500 samples (converted with `layout`) and a
/// batch of the next 100 at three quarters of its sites (about a second to append;
/// the store's sites, so a layout of several sample shards appends by the same-sites
/// path).
fn corpus_store(
    test: &str,
    d: &Path,
    layout: &[&str],
) -> Option<(PathBuf, PathBuf, String, String)> {
    let sim = need_corpus(test, "sim.bcf")?;
    if !tools(test, &[Tool::Bcftools]) {
        return None;
    }
    let names = sh_ok(&format!("bcftools query -l {}", sim.display()));
    let names: Vec<&str> = names.lines().collect();
    let subset = |name: &str, samples: &[&str], filter: &str| {
        let list = d.join(format!("{name}.samples"));
        std::fs::write(&list, samples.join("\n")).unwrap();
        let out = d.join(name);
        sh_ok(&format!(
            "bcftools view --no-version -S {0} {filter} -Ob -o {1} {2} && bcftools index -f {1}",
            list.display(),
            out.display(),
            sim.display()
        ));
        out
    };
    let old = subset("old.bcf", &names[..500], "");
    let batch = subset("batch.bcf", &names[500..600], "-i 'POS%4!=0'");
    let pristine = d.join("pristine.zarr");
    convert(&old, &pristine, layout);
    let grown = d.join("grown.zarr");
    sh_ok(&format!("cp -a {} {}", pristine.display(), grown.display()));
    append_ok(&grown, &[&batch]);
    let (old_digest, new_digest) = (digest(&pristine), digest(&grown));
    Some((pristine, batch, old_digest, new_digest))
}

#[test]
fn an_append_killed_at_any_point_leaves_one_whole_version() {
    let test = "an_append_killed_at_any_point_leaves_one_whole_version";
    let dir = test_dir();
    let d = dir.path();
    // Both paths: the whole store written again (one sample shard), and only the
    // last sample shard's columns (the earlier ones linked from the old version).
    for layout in [
        &[][..],
        &["--samples-chunk", "100", "--samples-shard", "100"][..],
    ] {
        let d = &d.join(layout.len().to_string());
        std::fs::create_dir_all(d).unwrap();
        let Some((pristine, batch, old, new)) = corpus_store(test, d, layout) else {
            return;
        };
        kill_at_points(&pristine, &batch, &old, &new, d);
    }
}

fn kill_at_points(pristine: &Path, batch: &Path, old: &str, new: &str, d: &Path) {
    let store = d.join("store.zarr");
    for delay_ms in [50, 300, 700, 1200] {
        let _ = std::fs::remove_dir_all(&store);
        sh_ok(&format!("cp -a {} {}", pristine.display(), store.display()));
        let mut child = svar2()
            .args(["append", "-q"])
            .arg(&store)
            .arg(batch)
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let now = digest(&store);
        assert!(
            now == old || now == new,
            "killed after {delay_ms} ms: a third store"
        );
        let v = svar2().arg("verify").arg(&store).output().unwrap();
        assert!(
            v.status.success(),
            "killed after {delay_ms} ms: verify failed"
        );
        if now == old {
            // The next append clears what the killed one left, and finishes.
            append_ok(&store, &[batch]);
            assert_eq!(digest(&store), new, "append after a kill at {delay_ms} ms");
        }
    }
}

#[test]
fn two_appends_at_once_one_is_refused() {
    let test = "two_appends_at_once_one_is_refused";
    let dir = test_dir();
    let d = dir.path();
    let Some((pristine, batch, _, new)) = corpus_store(test, d, &[]) else {
        return;
    };
    let store = d.join("store.zarr");
    sh_ok(&format!("cp -a {} {}", pristine.display(), store.display()));
    let run = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_svar2"));
        c.args(["append", "-q"]).arg(&store).arg(&batch);
        c.stderr(std::process::Stdio::piped()).spawn().unwrap()
    };
    let (first, second) = (run(), run());
    let (a, b) = (
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    );
    let oks = [a.status.success(), b.status.success()];
    assert_eq!(
        oks.iter().filter(|&&x| x).count(),
        1,
        "exactly one append runs"
    );
    let refused = if oks[0] { &b } else { &a };
    let msg = String::from_utf8_lossy(&refused.stderr);
    // Refused while the first runs (its lock), or after it (the samples are in).
    assert!(
        msg.contains("another svar2 process") || msg.contains("also in an earlier input"),
        "{msg}"
    );
    assert_eq!(digest(&store), new);
}

/// New samples with the store's sites (a joint-called batch): only the sample columns
/// from the store's last sample shard on are written, the earlier columns' files are
/// the old version's (same inode), and the store equals converting `bcftools merge`
/// of the inputs, a sparse field only earlier samples have at some records included.
#[test]
fn same_sites_append_writes_only_the_last_sample_shard() {
    let test = "same_sites_append_writes_only_the_last_sample_shard";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let src = format_call_set(d, "fmt", 30, 1500, "GT:AD:DP:GQ:PL:VAF:PS:FT", 3);
    let layout = [
        "--variants-chunk",
        "128",
        "--variants-shard",
        "256",
        "--samples-chunk",
        "2",
        "--samples-shard",
        "6",
    ];
    let a = sample_part(&src, d, "a.vcf.gz", &sample_names(0..20), "", "cat");
    let b = sample_part(&src, d, "b.vcf.gz", &sample_names(20..30), "", "cat");
    let store = d.join("store.zarr");
    convert(&a, &store, &layout);
    let inode = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).unwrap().ino()
    };
    let kept = store.join("call_AD/c/0/0/0");
    let rewritten = store.join("call_AD/c/0/3/0");
    let (kept_ino, rewritten_ino) = (inode(&kept), inode(&rewritten));
    let out = svar2().arg("append").arg(&store).arg(&b).output().unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{msg}");
    assert!(
        msg.contains("the store's sites: sample columns 18.."),
        "{msg}"
    );
    assert_eq!(
        inode(&kept),
        kept_ino,
        "an earlier column's shard was written"
    );
    assert_ne!(
        inode(&rewritten),
        rewritten_ino,
        "the last column not written"
    );
    let ab = d.join("ab.vcf.gz");
    bcftools_merge(&[&a, &b], &ab);
    let oracle = d.join("ab.zarr");
    convert(&ab, &oracle, &layout);
    assert_eq!(digest(&store), digest(&oracle), "same-sites append");
    let v = svar2().arg("verify").arg(&store).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));

    // PS (a phase set) is sparse: at some records only samples before the last
    // column have one. The last column is printed with the field kept there (missing,
    // as stored), so the new samples' cells are a missing sample's, as in a merge of
    // every sample.
    let layout = ["--samples-chunk", "5", "--samples-shard", "10"];
    let a = sample_part(&src, d, "a2.vcf.gz", &sample_names(0..25), "", "cat");
    let b = sample_part(&src, d, "b2.vcf.gz", &sample_names(25..30), "", "cat");
    let store = d.join("store2.zarr");
    convert(&a, &store, &layout);
    let out = svar2().arg("append").arg(&store).arg(&b).output().unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{msg}");
    assert!(
        msg.contains("the store's sites: sample columns 20.."),
        "{msg}"
    );
    let ab = d.join("ab2.vcf.gz");
    bcftools_merge(&[&a, &b], &ab);
    let oracle = d.join("ab2.zarr");
    convert(&ab, &oracle, &layout);
    assert_eq!(digest(&store), digest(&oracle), "append through the merge");
}

/// What a hostile pass found appends getting wrong, each against `bcftools merge`
/// of the original files converted with the same flags:
/// - a Number=2 field that is `.` (a missing value, then the fill) in one sample and
///   `.,.` in another, with values only in the new samples (the store printed the
///   record without the field, and the merge turned `.,.` into `.`);
/// - a phased call with a missing allele (`1|.`) among the samples the same-sites
///   path would keep (the merge makes it `1/.`);
/// - a samples shard asked wider than the samples (recorded clamped, it was chosen
///   again for the new count).
#[test]
fn appends_of_calls_a_merge_rewrites_equal_bcftools_merge() {
    let test = "appends_of_calls_a_merge_rewrites_equal_bcftools_merge";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
                ##INFO=<ID=AC,Number=A,Type=Integer,Description=\"c\">\n\
                ##INFO=<ID=AN,Number=1,Type=Integer,Description=\"n\">\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
                ##FORMAT=<ID=HQ,Number=2,Type=Integer,Description=\"q\">\n";
    let vcf =
        |name: &str, samples: &[&str], rows: &[&str]| vcf_of_rows(d, name, meta, samples, rows);
    // (name, the store's samples, its records, the new samples' records, layout)
    type Case<'a> = (
        &'a str,
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: [Case; 3] = [
        (
            "hq",
            &["a0", "a1"],
            &[
                "1 10 . A G 50 PASS . GT:HQ 0/1:. 0/0:.,.",
                "1 20 . C T 50 PASS . GT 0/1 1/1",
            ],
            &[
                "1 10 . A G 50 PASS . GT:HQ 0/1:3,4 0/0:1,2",
                "1 20 . C T 50 PASS . GT 0/0 0/1",
            ],
            &["--samples-chunk", "1", "--samples-shard", "1"],
        ),
        (
            "phase",
            &["a0", "a1", "a2"],
            &[
                "1 10 . A G 50 PASS . GT 1|. 0|1 1|1",
                "1 20 . C T 50 PASS . GT .|. 0|0 0|1",
            ],
            &[
                "1 10 . A G 50 PASS . GT 0|1 1|0",
                "1 20 . C T 50 PASS . GT 0|0 1|1",
            ],
            &["--samples-chunk", "1", "--samples-shard", "2"],
        ),
        (
            "wide",
            &["a0", "a1"],
            &["1 10 . A G 50 PASS . GT 0/1 1/1"],
            &["1 10 . A G 50 PASS . GT 0/0 0/1"],
            &["--samples-chunk", "1", "--samples-shard", "3"],
        ),
    ];
    // Headers without INFO/AC and AN: the store's last column printed alone must not
    // add them (bcftools merge writes AC/AN only where the header has them).
    let bare = "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n";
    let rows = [
        "1 10 . A C 50 PASS . GT 0|1 0|0 1|1",
        "1 20 . A G 50 PASS . GT 0|0 0|1 1|1",
    ];
    let a = vcf_of_rows(d, "bare-a", bare, &["a0", "a1", "a2"], &rows);
    let b = vcf_of_rows(
        d,
        "bare-b",
        bare,
        &["b0"],
        &["1 10 . A C 50 PASS . GT 0|1", "1 20 . A G 50 PASS . GT 1|1"],
    );
    let layout = ["--samples-chunk", "1", "--samples-shard", "1"];
    let store = d.join("bare.zarr");
    convert(&a, &store, &layout);
    let out = svar2().arg("append").arg(&store).arg(&b).output().unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("the store's sites: sample columns 2.."),
        "{msg}"
    );
    let ab = d.join("bare-ab.vcf.gz");
    bcftools_merge(&[&a, &b], &ab);
    let oracle = d.join("bare-oracle.zarr");
    convert(&ab, &oracle, &layout);
    assert_eq!(digest(&store), digest(&oracle), "no AC/AN declared");

    for (name, old_samples, old_rows, new_rows, layout) in cases {
        let a = vcf(&format!("{name}-a"), old_samples, old_rows);
        let b = vcf(&format!("{name}-b"), &["b0", "b1"], new_rows);
        let store = d.join(format!("{name}.zarr"));
        convert(&a, &store, layout);
        append_ok(&store, &[&b]);
        let ab = d.join(format!("{name}-ab.vcf.gz"));
        bcftools_merge(&[&a, &b], &ab);
        let oracle = d.join(format!("{name}-oracle.zarr"));
        convert(&ab, &oracle, layout);
        assert_eq!(digest(&store), digest(&oracle), "{name}");
    }
}

/// What users add to a store survives an append or stops it, by both paths (the
/// same-sites one, and the whole store written again):
/// - attributes added to the root and to arrays are carried onto the new version,
///   whose record of shards still applies (a shard lost afterwards is damage); on the
///   sites' arrays or beside zarr-python's `storage_transformers`, they keep the
///   same-sites path, append after append;
/// - what svar2 did not write is refused by name before any work, the store left as
///   it was: an array (zarr-python's, xarray's), one named like an INFO field that no
///   header declares (it was printed as one and read back narrowed), an array inside
///   an array, Zarr v2 metadata. Before, all were dropped without a word.
#[test]
fn appends_keep_what_users_added_or_refuse_to_drop_it() {
    let test = "appends_keep_what_users_added_or_refuse_to_drop_it";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let src = format_call_set(d, "fmt", 16, 300, "GT:AD:DP", 5);
    let a = sample_part(&src, d, "a.vcf.gz", &sample_names(0..8), "", "cat");
    let b = sample_part(&src, d, "b.vcf.gz", &sample_names(8..12), "", "cat");
    let c = sample_part(&src, d, "c.vcf.gz", &sample_names(12..16), "", "cat");
    let edit = |path: &Path, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    };
    let attrs = |path: &Path| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        v["attributes"].clone()
    };
    for (how, layout) in [
        (
            "same sites",
            &["--samples-chunk", "2", "--samples-shard", "4"][..],
        ),
        ("whole store", &[][..]),
    ] {
        let store = d.join(format!("{}.zarr", how.replace(' ', "_")));
        convert(&a, &store, layout);
        edit(&store.join("zarr.json"), &|v| {
            v["attributes"]["provenance"] = serde_json::json!({"run": 3, "by": "qc"});
        });
        edit(&store.join("call_AD/zarr.json"), &|v| {
            v["attributes"]["note"] = serde_json::json!("checked");
            v["storage_transformers"] = serde_json::json!([]);
        });
        edit(&store.join("variant_position/zarr.json"), &|v| {
            v["attributes"]["units"] = serde_json::json!("bp");
        });
        for input in [&b, &c] {
            let out = svar2()
                .args(["append", "-v"])
                .arg(&store)
                .arg(input)
                .output()
                .unwrap();
            let msg = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{how}: {msg}");
            assert_eq!(
                msg.contains("the store's sites: sample columns"),
                how == "same sites",
                "{how}: {msg}"
            );
            let root = attrs(&store.join("zarr.json"));
            assert_eq!(root["provenance"]["run"], 3, "{how}: {root}");
            assert_eq!(
                attrs(&store.join("call_AD/zarr.json"))["note"],
                "checked",
                "{how}"
            );
            assert_eq!(
                attrs(&store.join("variant_position/zarr.json"))["units"],
                "bp",
                "{how}"
            );
            assert!(
                attrs(&store.join("call_AD/zarr.json"))["description"].is_string(),
                "{how}"
            );
            let v = svar2().arg("verify").arg(&store).output().unwrap();
            assert!(
                v.status.success(),
                "{how}: {}",
                String::from_utf8_lossy(&v.stdout)
            );
        }
        let shard = store.join("call_DP/c/0/0");
        assert!(shard.is_file(), "{how}");
        let kept = std::fs::read(&shard).unwrap();
        std::fs::remove_file(&shard).unwrap();
        let v = svar2().arg("verify").arg(&store).output().unwrap();
        assert!(!v.status.success(), "{how}: a lost shard passed verify");
        std::fs::write(&shard, kept).unwrap();

        // Another writer's nodes (svar2's metadata copied, without its attributes). (The input's samples are the store's now: the refusal comes first.)
        let position = store.join("variant_position/zarr.json");
        // (An xarray variable often has a description: in a store whose fields svar2
        // declared, it is no declaration.)
        for (node, file, attributes) in [
            ("my_weights", "zarr.json", serde_json::json!({})),
            ("variant_foo", "zarr.json", serde_json::json!({})),
            (
                "variant_cluster",
                "zarr.json",
                serde_json::json!({"description": "c"}),
            ),
            ("call_genotype/pca", "zarr.json", serde_json::json!({})),
            ("pcs", ".zarray", serde_json::json!({})),
        ] {
            let at = store.join(node);
            std::fs::create_dir(&at).unwrap();
            std::fs::copy(&position, at.join(file)).unwrap();
            edit(&at.join(file), &|v| v["attributes"] = attributes.clone());
            let before = digest(&store);
            let out = svar2().arg("append").arg(&store).arg(&b).output().unwrap();
            let msg = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{how} {node}: {msg}");
            assert!(
                msg.contains(&format!("did not write ({node}")),
                "{how} {node}: {msg}"
            );
            assert_eq!(digest(&store), before, "{how} {node}");
            std::fs::remove_dir_all(&at).unwrap();
        }
    }
}

/// Floats keep every digit through the BCF a store is printed as (`view -Ob`, which
/// append re-reads the store's records from): QUAL, an INFO and a FORMAT Float of
/// nine significant digits, tiny, huge and negative values. Before, they were
/// printed with six digits as VCF text is, so an append rounded half of a call set's
/// VAF values and pushed the store off the same-sites path. The oracle is `bcftools
/// merge -Ob` (binary floats) of the inputs, converted.
#[test]
fn floats_keep_every_digit_through_bcf_and_append() {
    let test = "floats_keep_every_digit_through_bcf_and_append";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=1000000>\n\
                ##INFO=<ID=SCORE,Number=1,Type=Float,Description=\"s\">\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
                ##FORMAT=<ID=VAF,Number=.,Type=Float,Description=\"v\">\n";
    // Besides those, 2,000 floats of random bits (finite, every magnitude from
    // 1e-30 to 1e30, both signs): the shortest digits printed must parse back to
    // each through htslib's own parser.
    let mut bits = 0x9E37_79B9_7F4A_7C15_u64;
    let mut random = move || loop {
        bits ^= bits << 13;
        bits ^= bits >> 7;
        bits ^= bits << 17;
        let x = f32::from_bits((bits >> 32) as u32);
        if x.is_finite() && (1e-30..1e30).contains(&x.abs()) {
            return x;
        }
    };
    let mut rows = |k: usize| -> Vec<String> {
        (0..1000)
            .map(|i| {
                let x = 0.123_456_789_f64 * (i + 1 + k) as f64;
                format!(
                    "chr1 {} . A C {:.7} . SCORE={:.9} GT:VAF 0/1:{:.9},{:e} 1/1:{:e},{:e}",
                    100 + i,
                    12.345_678_9 * (i + 1) as f64,
                    -x,
                    x / 7.0,
                    random(),
                    [1.5e-38, 3.0e38, 1.234_567_8e-7, 9.876_543_21e5][i % 4],
                    random()
                )
            })
            .collect()
    };
    // The new samples: the same sites, their own values.
    let b_rows: Vec<String> = rows(3);
    let a_rows: Vec<String> = rows(0);
    let a_refs: Vec<&str> = a_rows.iter().map(String::as_str).collect();
    let b_refs: Vec<&str> = b_rows.iter().map(String::as_str).collect();
    let a = vcf_of_rows(d, "a", meta, &["s1", "s2"], &a_refs);
    let b = vcf_of_rows(d, "b", meta, &["t1", "t2"], &b_refs);
    let store = d.join("s.zarr");
    convert(&a, &store, &[]);
    let printed = d.join("printed.bcf");
    sh_ok(&format!(
        "{} view -Ob -o {} {}",
        env!("CARGO_BIN_EXE_svar2"),
        printed.display(),
        store.display()
    ));
    let again = d.join("again.zarr");
    convert(&printed, &again, &[]);
    assert_eq!(digest(&again), digest(&store), "view -Ob then convert");
    append_ok(&store, &[&b]);
    let (ab, a_bcf, b_bcf) = (d.join("ab.bcf"), d.join("a.bcf"), d.join("b.bcf"));
    sh_ok(&format!(
        "bcftools view --no-version -Ob -o {a_bcf} {a} && bcftools index -f {a_bcf} && \
         bcftools view --no-version -Ob -o {b_bcf} {b} && bcftools index -f {b_bcf} && \
         bcftools merge --no-version -Ob -o {ab} {a_bcf} {b_bcf} && bcftools index -f {ab}",
        a = a.display(),
        b = b.display(),
        a_bcf = a_bcf.display(),
        b_bcf = b_bcf.display(),
        ab = ab.display()
    ));
    let oracle = d.join("ab.zarr");
    convert(&ab, &oracle, &[]);
    assert_eq!(digest(&store), digest(&oracle), "appended");
}

/// bio2zarr 0.2 records no Number, so a store of its with a fixed `Number=2` field
/// (INFO CIPOS, FORMAT HQ) reads back as `Number=.`, and new samples declaring
/// `Number=2` were refused as "declared with another Type or Number". A fixed Number
/// joins a `Number=.` of the same Type (its values are one of the counts `.` holds);
/// the records then equal `bcftools merge`'s of the inputs.
#[test]
fn a_bio2zarr_store_with_fixed_number_fields_takes_new_samples() {
    let test = "a_bio2zarr_store_with_fixed_number_fields_takes_new_samples";
    if !tools(test, &[Tool::Bcftools, Tool::Bio2zarr]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
                ##INFO=<ID=CIPOS,Number=2,Type=Integer,Description=\"c\">\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
                ##FORMAT=<ID=HQ,Number=2,Type=Integer,Description=\"q\">\n";
    let a = vcf_of_rows(
        d,
        "a",
        meta,
        &["a0", "a1"],
        &[
            "1 10 . A G 50 PASS CIPOS=-5,7 GT:HQ 0/1:3,4 0/0:1,2",
            // (Not -1: the VCF Zarr spec's missing integer, which bio2zarr's store
            // and vcztools print as `.`.)
            "1 20 . C T 50 PASS CIPOS=-4,2 GT:HQ 0/1:5,6 1/1:7,8",
        ],
    );
    let b = vcf_of_rows(
        d,
        "b",
        meta,
        &["b0"],
        &[
            "1 10 . A G 50 PASS CIPOS=-5,7 GT:HQ 1/1:9,9",
            "1 30 . G C 50 PASS CIPOS=-3,3 GT:HQ 0/1:2,2",
        ],
    );
    let store = d.join("a.zarr");
    sh_ok(&format!(
        "BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 {} {} >/dev/null 2>&1",
        a.display(),
        store.display()
    ));
    append_ok(&store, &[&b]);
    let ab = d.join("ab.vcf.gz");
    bcftools_merge(&[&a, &b], &ab);
    // The other way round (a fixed Number first, then Number=.) stays refused, naming
    // both declarations.
    let dot = vcf_of_rows(
        d,
        "dot",
        &meta.replace("ID=CIPOS,Number=2", "ID=CIPOS,Number=."),
        &["c0"],
        &["1 10 . A G 50 PASS CIPOS=1,2,3 GT:HQ 0/1:1,1"],
    );
    let out = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&a, &dot])
        .arg(d.join("dot.zarr"))
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && msg.contains(
                "INFO/CIPOS is declared Number=.,Type=Integer here and Number=2,Type=Integer"
            ),
        "{msg}"
    );
    let ours = svar2().args(["view", "-H"]).arg(&store).output().unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let theirs = sh(&format!("bcftools view -H {}", ab.display()));
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
}
