//! What a user sees from the command line: refusals, errors and the summary.

mod common;
use common::*;
use std::path::{Path, PathBuf};

#[test]
fn force_replaces_only_what_a_store_holds() {
    let dir = test_dir();
    let d = dir.path();
    let input = data("all_fields.vcf");
    // A folder of the user's own files: refused, with or without --force, untouched.
    let mine = d.join("mine");
    std::fs::create_dir_all(mine.join("sub")).unwrap();
    std::fs::write(mine.join("keep.txt"), "user data").unwrap();
    std::fs::write(mine.join("sub/more.txt"), "more").unwrap();
    for args in [&[][..], &["--force"][..]] {
        let err = convert_fails(&input, &mine, args);
        assert!(
            err.contains("is not a Zarr store") && err.contains("keep.txt"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert!(mine.join("keep.txt").exists() && mine.join("sub/more.txt").exists());
    // A symbolic link to it, and a plain file: refused even with --force.
    let link = d.join("link.zarr");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    let err = convert_fails(&input, &link, &["--force"]);
    assert!(err.contains("symbolic link"), "{err}");
    let file = d.join("file.zarr");
    std::fs::write(&file, "x").unwrap();
    let err = convert_fails(&input, &file, &["--force"]);
    assert!(err.contains("is a file"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    assert!(mine.join("keep.txt").exists() && mine.join("sub/more.txt").exists());
    // The working directory itself (`.`) holds the user's files too.
    let o = svar2()
        .current_dir(&mine)
        .args(["convert", "-q", "--force"])
        .arg(&input)
        .arg(".")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(mine.join("keep.txt").exists());
    // An empty directory is written; a finished store is replaced with --force; a
    // link inside it is not a store entry, so the store is refused, the link kept.
    let out = d.join("out.zarr");
    std::fs::create_dir(&out).unwrap();
    convert(&input, &out, &[]);
    convert(&input, &out, &[]);
    std::os::unix::fs::symlink(&mine, out.join("inner-link")).unwrap();
    let r = run_convert(&input, &out, &["--force"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success(), "{err}");
    assert!(
        err.contains("inner-link") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(std::fs::symlink_metadata(out.join("inner-link")).is_ok());
    assert!(mine.join("keep.txt").exists() && mine.join("sub/more.txt").exists());
    // A Zarr v2 store (another tool's) is a store: replaced with --force.
    let v2 = d.join("v2.zarr");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(v2.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    convert_fails(&input, &v2, &[]);
    convert(&input, &v2, &[]);
    assert!(!v2.join(".zgroup").exists() && v2.join("zarr.json").exists());
}

/// A folder that merely looks like a store — a `zarr.json` that is not Zarr metadata,
/// a stray `.svar2-in-progress`, a user's file inside a real store — is never emptied,
/// by `convert` or `rechunk`, with or without `--force`.
#[test]
fn force_deletes_only_a_recognised_store() {
    let dir = test_dir();
    let d = dir.path();
    let input = data("all_fields.vcf");
    let good = d.join("good.zarr");
    convert(&input, &good, &[]);
    let cases: [(&str, &[(&str, &str)]); 4] = [
        ("notjson", &[("zarr.json", "not json")]),
        ("notzarr", &[("zarr.json", r#"{"hello": 1}"#)]),
        ("marker", &[(".svar2-in-progress", "svar2 0.1.0 pid 1\n")]),
        ("v2", &[(".zarray", "{}")]),
    ];
    for (name, files) in cases {
        let o = d.join(name);
        std::fs::create_dir(&o).unwrap();
        std::fs::write(o.join("thesis.txt"), "precious").unwrap();
        for (f, text) in files {
            std::fs::write(o.join(f), text).unwrap();
        }
        for args in [&[][..], &["--force"][..]] {
            let r = run_convert(&input, &o, args);
            assert!(!r.status.success(), "{name} {args:?}");
            let err = String::from_utf8_lossy(&r.stderr);
            assert!(err.contains("choose another output"), "{name}: {err}");
            let r = run_rechunk(&good, &o, args);
            assert!(!r.status.success(), "rechunk into {name} {args:?}");
        }
        assert_eq!(
            std::fs::read_to_string(o.join("thesis.txt")).unwrap(),
            "precious"
        );
    }
    // A user's file deep inside a finished store: refused, named, kept.
    std::fs::write(good.join("call_genotype/notes.txt"), "mine").unwrap();
    let r = run_convert(&input, &good, &["--force"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success() && err.contains("call_genotype/notes.txt"),
        "{err}"
    );
    assert!(good.join("call_genotype/notes.txt").exists());
    assert!(good.join("zarr.json").exists());
}

/// An output that holds an input, or an input store that holds the output file:
/// refused before anything is written or deleted.
#[test]
fn outputs_never_overwrite_inputs() {
    let dir = test_dir();
    let d = dir.path();
    let outer = d.join("outer.zarr");
    convert(&data("all_fields.vcf"), &outer, &[]);
    let inside = outer.join("in.vcf");
    std::fs::copy(data("all_fields.vcf"), &inside).unwrap();
    for args in [&[][..], &["--force"][..]] {
        let r = run_convert(&inside, &outer, args);
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        // (A store holding a stray VCF is not a store either way; with the VCF being
        // the input, the overlap is what is named.)
        assert!(err.contains("overlaps the input file"), "{err}");
    }
    assert!(inside.exists() && outer.join("zarr.json").exists());
    std::fs::remove_file(&inside).unwrap();
    let before = digest(&outer);
    // `view -o` inside the store it reads, whatever the name.
    for target in ["zarr.json", "call_genotype/c/0/0/0", "new.vcf"] {
        let o = svar2()
            .args(["view", "-o"])
            .arg(outer.join(target))
            .arg(&outer)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{target}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("overlaps the store being read"), "{err}");
    }
    assert_eq!(digest(&outer), before);
    assert!(!outer.join("new.vcf").exists());
    // `--write-index` has no place beside standard output or a device.
    for args in [
        &["-Oz", "--write-index"][..],
        &["-Oz", "--write-index", "-o", "/dev/stdout"][..],
    ] {
        let o = svar2().arg("view").args(args).arg(&outer).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--write-index needs -o"), "{err}");
    }
    assert!(!Path::new("/dev/stdout.csi").exists());
}

/// What a hostile pass found after the first rule: paths through `..`, names that
/// only look like a store's, an inputs list inside the output, a hard link into the
/// store being read. Each refused, nothing deleted or overwritten.
#[test]
fn look_alikes_and_aliases_are_refused() {
    let dir = test_dir();
    let d = dir.path();
    let input = data("all_fields.vcf");
    let store = d.join("s.zarr");
    convert(&input, &store, &[]);
    let before = digest(&store);
    // `s.zarr/variant_id/..` names the store only while variant_id exists.
    let dotdot = store.join("variant_id/..");
    let r = run_convert(&input, &dotdot, &["--force"]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("`..`"));
    assert_eq!(digest(&store), before);
    // A file named like a chunk key at a group's root; a folder without metadata.
    for extra in ["0", "mine/zarr.json"] {
        let p = store.join(extra);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "my notes").unwrap();
        let r = run_convert(&input, &store, &["--force"]);
        assert!(!r.status.success(), "{extra} deleted");
        assert!(p.exists());
        std::fs::remove_file(&p).unwrap();
    }
    std::fs::remove_dir(store.join("mine")).unwrap();
    // An inputs list inside the output.
    let list = store.join("sample_id/c/3");
    std::fs::write(&list, format!("{}\n", input.display())).unwrap();
    let r = svar2()
        .args(["convert", "-q", "--force", "--inputs"])
        .arg(&list)
        .arg(&store)
        .output()
        .unwrap();
    assert!(!r.status.success());
    assert!(list.exists());
    std::fs::remove_file(&list).unwrap();
    assert_eq!(digest(&store), before);
    // `view -o` to a hard link of one of the store's files.
    let hl = d.join("hl");
    std::fs::hard_link(store.join("sample_id/c/0"), &hl).unwrap();
    let o = svar2()
        .args(["view", "-o"])
        .arg(&hl)
        .arg(&store)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("overlaps the store being read"));
    assert_eq!(digest(&store), before);
}

/// `link/` names the link, not the folder it points to: refused even with --force.
#[test]
fn a_link_with_a_trailing_slash_is_still_a_link() {
    let dir = test_dir();
    let d = dir.path();
    let real = d.join("real.zarr");
    convert(&data("all_fields.vcf"), &real, &[]);
    let before = digest(&real);
    let link = d.join("lnk");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let slashed = PathBuf::from(format!("{}/", link.display()));
    let r = run_convert(&data("all_fields.vcf"), &slashed, &["--force"]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("symbolic link"));
    assert_eq!(digest(&real), before);
}

#[test]
fn summary_line_reports_records_and_bytes() {
    let dir = test_dir();
    let out = dir.path().join("s.zarr");
    let o = svar2()
        .arg("convert")
        .arg(data("all_fields.vcf"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    // The bytes and files it reports are the store's, metadata included.
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut stack = vec![out.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                bytes += e.metadata().unwrap().len();
                files += 1;
            }
        }
    }
    let tail = format!(
        " s -> {} ({} in {files} files, metadata included)",
        out.display(),
        svar2_planner::size::human(bytes)
    );
    let line = err.trim().lines().last().unwrap();
    assert!(
        line.starts_with("svar2: 9 records in ") && line.ends_with(&tail),
        "{line}\nwanted it to end with {tail}"
    );
}

#[test]
fn missing_and_non_vcf_inputs_fail_clearly() {
    let dir = test_dir();
    let out = dir.path().join("o.zarr");
    let err = convert_fails(Path::new("/nonexistent/in.vcf.gz"), &out, &[]);
    assert!(
        err.contains("/nonexistent/in.vcf.gz") && err.contains("no such file"),
        "{err}"
    );
    assert!(!out.exists(), "no store for a missing input");

    let junk = dir.path().join("junk.vcf");
    std::fs::write(&junk, "this is not a VCF\n").unwrap();
    let err = convert_fails(&junk, &out, &[]);
    assert!(err.contains("junk.vcf"), "{err}");

    // An empty path is named as such (it resolved to the working folder, which then
    // "held" the output).
    let err = convert_fails(Path::new(""), &out, &[]);
    assert!(err.contains("an input path is empty"), "{err}");
    assert!(!out.exists(), "no store for an empty input path");

    // A named pipe is read once, and a conversion opens its inputs twice (the plan
    // samples records first): it is refused, pointing at `-`, before anything is
    // read (it hung, waiting for a second writer, or read as "not a VCF").
    let fifo = dir.path().join("pipe.vcf");
    sh_ok(&format!("mkfifo {}", fifo.display()));
    for cmd in ["convert", "plan"] {
        let mut c = svar2();
        c.arg(cmd).arg(&fifo);
        if cmd == "convert" {
            c.arg(&out);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{cmd}: {err}");
        assert!(
            err.contains("pipe.vcf: a pipe or device") && err.contains("svar2 convert -"),
            "{cmd}: {err}"
        );
    }
    assert!(!out.exists(), "no store for a pipe");
}

#[test]
fn record_errors_name_the_locus() {
    let dir = test_dir();
    let bad = dir.path().join("bad.vcf");
    let text = std::fs::read_to_string(data("all_fields.vcf")).unwrap();
    // chr1:100's first call is not a genotype.
    let text = text.replacen("1/1:43:5", "1/z:43:5", 1);
    std::fs::write(&bad, text).unwrap();
    let err = convert_fails(&bad, &dir.path().join("o.zarr"), &[]);
    assert!(
        err.contains("bad.vcf") && err.contains("chr1:100") && err.contains("`1/z`"),
        "{err}"
    );
}

#[test]
fn a_genotype_beyond_the_alt_alleles_is_kept_with_a_warning() {
    let dir = test_dir();
    let odd = dir.path().join("odd.vcf");
    let text = std::fs::read_to_string(data("all_fields.vcf")).unwrap();
    // chr1:100 is biallelic: allele 3 is beyond its ALT count. htslib, bcftools and
    // bio2zarr read it; it is stored as given, and said once.
    let text = text.replacen("1/1:43:5", "3/1:43:5", 1);
    std::fs::write(&odd, text).unwrap();
    let out = dir.path().join("o.zarr");
    let o = svar2().arg("convert").arg(&odd).arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("chr1:100")
            && err.contains("GT allele index 3")
            && err.contains("stored as given"),
        "{err}"
    );
}

#[test]
fn digest_refuses_an_incomplete_store() {
    let dir = test_dir();
    let out = dir.path().join("d.zarr");
    convert(&data("all_fields.vcf"), &out, &[]);
    std::fs::remove_file(out.join("zarr.json")).unwrap();
    let o = svar2().arg("digest").arg(&out).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a complete store"));
}

#[test]
fn urls_are_refused_by_name_never_written_as_a_local_folder() {
    let dir = test_dir();
    let d = dir.path();
    let input = data("all_fields.vcf");
    let store = d.join("local.zarr");
    convert(&input, &store, &[]);
    let url = "s3://bucket/cohort.zarr";
    let (inp, st) = (input.to_str().unwrap(), store.to_str().unwrap());
    // What it says for each: schemes svar2 does not read are refused by name, s3://
    // where a local file belongs too; s3:// stores reach for the bucket (here a port
    // nothing listens on, tests/s3.rs has a real server) and fail saying so.
    let unsupported = "URLs are not supported";
    let not_input = "are local files";
    let unreachable = "cannot reach the server";
    for (args, says) in [
        (vec!["convert", inp, url], unreachable),
        (vec!["convert", url, st], not_input),
        (vec!["convert", inp, "gs://b/x.zarr"], unsupported),
        (vec!["plan", "--dry-run", inp, "gs://b/x.zarr"], unsupported),
        (vec!["rechunk", st, url], unreachable),
        (vec!["rechunk", "gs://b/x.vcz", st], unsupported),
        (vec!["inspect", url], unreachable),
        (vec!["inspect", "az://c/x.zarr"], unsupported),
        (vec!["read", "--region", "20", url], unreachable),
        (vec!["bench-read", url], unreachable),
        (vec!["view", "https://host/x.zarr"], unsupported),
        (vec!["query", "-f", "%POS\n", url], unreachable),
        (vec!["digest", url], unreachable),
        (vec!["verify", url], unreachable),
    ] {
        let out = svar2()
            .current_dir(d)
            .env("AWS_ACCESS_KEY_ID", "k")
            .env("AWS_SECRET_ACCESS_KEY", "s")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .env("AWS_ALLOW_HTTP", "true")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        for folder in ["s3:", "gs:", "https:", "az:"] {
            assert!(
                !d.join(folder).exists(),
                "{args:?} wrote a local {folder} folder"
            );
        }
    }
    // The plan names a bucket output without touching it.
    let out = svar2()
        .current_dir(d)
        .args(["plan", "--dry-run", inp, url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!d.join("s3:").exists());
}

/// Help that cannot be written is an error, as any other output is (clap's own exit
/// ignored it); `-o` naming a directory is refused by name.
#[test]
fn help_to_a_full_device_fails_and_o_needs_a_file() {
    if std::path::Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = svar2().arg("--help").stdout(full).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = svar2().arg("--help").output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: svar2"));
    let dir = test_dir();
    let store = dir.path().join("s.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let o = svar2()
        .args(["view", "-o"])
        .arg(dir.path().join("s.zarr/.."))
        .arg(&store)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("a directory; give a file name"));
}
