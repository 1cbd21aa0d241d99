//! Nothing lost, nothing silently wrong: counts a user gives (threads, patches) are
//! bounded with one clear line instead of minutes of thread spawning or an abort;
//! `query` decodes only the arrays its format prints; a record larger than the memory
//! budget allows stops the conversion naming the file and the record; bucket URLs
//! never print a password, never write `..` keys, read `%` keys back, and a missing
//! bucket is named as such.

mod common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small VCF: 40 records, 3 samples, GT and a `Number=G` PL field.
fn small_vcf(dir: &Path) -> PathBuf {
    let p = dir.join("small.vcf");
    let mut f = std::fs::File::create(&p).unwrap();
    writeln!(f, "##fileformat=VCFv4.3").unwrap();
    writeln!(f, "##contig=<ID=chr1,length=100000>").unwrap();
    writeln!(
        f,
        "##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=PL,Number=G,Type=Integer,Description=\"Likelihoods\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC"
    )
    .unwrap();
    for i in 0..40 {
        writeln!(
            f,
            "chr1\t{}\t.\tA\tC\t30\tPASS\tDP={i}\tGT:PL\t0/1:0,{i},9\t1/1:3,4,5\t0|0:.",
            100 + i * 10
        )
        .unwrap();
    }
    p
}

/// svar2 with `args`, which must fail within `secs` seconds with one error line;
/// returns that line.
fn fails_fast(args: &[&str], secs: u64) -> String {
    let t0 = Instant::now();
    let out = svar2().args(args).output().expect("svar2 runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "svar2 {args:?} succeeded");
    assert!(
        t0.elapsed() < Duration::from_secs(secs),
        "svar2 {args:?} took {:?}",
        t0.elapsed()
    );
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "svar2 {args:?} crashed:\n{err}"
    );
    err
}

#[test]
fn thread_counts_beyond_the_cores_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.zarr");
    convert(&small_vcf(dir.path()), &store, TINY_GEOMETRY);
    let s = store.to_str().unwrap();
    for (args, flag) in [
        (
            vec![
                "bench-read",
                s,
                "--patch",
                "2x1",
                "--n",
                "5",
                "--threads",
                "1000000",
            ],
            "--threads 1000000",
        ),
        (
            vec![
                "bench-read",
                s,
                "--patch",
                "2x1",
                "--n",
                "5",
                "--io-threads",
                "100000",
            ],
            "--io-threads 100000",
        ),
        (
            vec!["verify", s, "--io-threads", "100000"],
            "--io-threads 100000",
        ),
        (
            vec!["rechunk", s, "/nonexistent/o.zarr", "--threads", "1000000"],
            "--threads 1000000",
        ),
        (
            vec![
                "convert",
                "x.vcf",
                "/nonexistent/o.zarr",
                "--threads",
                "1000000",
            ],
            "--threads 1000000",
        ),
        (vec!["bench-read", s, "--threads", "0"], "--threads 0"),
    ] {
        let err = fails_fast(&args, 20);
        assert!(
            err.contains(flag) && err.contains("give at"),
            "{args:?}: {err}"
        );
    }
    // Within the cap, a count still works.
    let ok = svar2()
        .args([
            "bench-read",
            s,
            "--patch",
            "2x1",
            "--n",
            "5",
            "--threads",
            "3",
        ])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn patch_counts_beyond_memory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.zarr");
    convert(&small_vcf(dir.path()), &store, TINY_GEOMETRY);
    let s = store.to_str().unwrap();
    let n = (1u64 << 60).to_string();
    let err = fails_fast(&["bench-read", s, "--patch", "2x1", "--n", &n], 20);
    assert!(
        err.contains("patches") && err.contains("more than this machine's memory"),
        "{err}"
    );
}

/// Overwrites every chunk file of `array` in `store` with zeros (its metadata kept).
fn ruin_array(store: &Path, array: &str) {
    let mut n = 0;
    let mut stack = vec![store.join(array)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != "zarr.json" {
                let len = std::fs::metadata(&p).unwrap().len();
                std::fs::write(&p, vec![0u8; len as usize]).unwrap();
                n += 1;
            }
        }
    }
    assert!(n > 0, "{array}: no chunk files");
}

#[test]
fn query_decodes_only_the_arrays_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.zarr");
    convert(&small_vcf(dir.path()), &store, TINY_GEOMETRY);
    let s = store.to_str().unwrap();
    let query = |f: &str| svar2().args(["query", "-f", f, s]).output().unwrap();
    let before = query("%POS[\t%GT]\n");
    assert!(before.status.success());
    // A damaged PL (a field the format does not name) no longer matters to it.
    ruin_array(&store, "call_PL");
    let after = query("%POS[\t%GT]\n");
    assert!(
        after.status.success(),
        "query [%GT] read call_PL: {}",
        String::from_utf8_lossy(&after.stderr)
    );
    assert_eq!(before.stdout, after.stdout);
    let info = query("%POS\t%INFO/DP[\t%SAMPLE]\n");
    assert!(
        info.status.success(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    // A format that prints it still reads it, and says it is damaged.
    for f in ["%POS[\t%PL]\n", "%LINE\n"] {
        let out = query(f);
        assert!(!out.status.success(), "{f}: the damaged PL went unnoticed");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("call_PL"), "{f}: {err}");
    }
    // A damaged GT matters to [%GT] but not to a sites-only format.
    ruin_array(&store, "call_genotype");
    assert!(query("%CHROM\t%POS\t%INFO/DP\n").status.success());
    assert!(!query("%POS[\t%GT]\n").status.success());
}

/// `svar2 ARGS INPUT OUT` under `/usr/bin/time -v`: whether it succeeded, its stderr
/// (time's report included) and its peak RSS in bytes.
fn run_timed(args: &[&str], input: &Path, out: &Path) -> (bool, String, u64) {
    let o = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_svar2"))
        .args(args)
        .arg(input)
        .arg(out)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let rss = max_rss_kib(&err) << 10;
    (o.status.success(), err, rss)
}

#[test]
fn a_record_larger_than_the_budget_allows_is_refused() {
    let test = "a_record_larger_than_the_budget_allows_is_refused";
    if !Path::new("/usr/bin/time").exists() || !sh("command -v bgzip").status.success() {
        skip(test, "/usr/bin/time or bgzip not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let vcf = dir.path().join("long.vcf");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&vcf).unwrap());
        writeln!(
            f,
            "##fileformat=VCFv4.3\n##contig=<ID=chr1>\n\
             ##INFO=<ID=XS,Number=1,Type=String,Description=\"Long\">\n\
             #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"
        )
        .unwrap();
        writeln!(f, "chr1\t1\t.\tA\tC\t.\t.\tXS=short").unwrap();
        // Record 2: a 100 MB INFO string.
        write!(f, "chr1\t2\t.\tA\tC\t.\t.\tXS=").unwrap();
        let piece = vec![b'x'; 1 << 20];
        for _ in 0..100 {
            f.write_all(&piece).unwrap();
        }
        writeln!(f).unwrap();
        writeln!(f, "chr1\t3\t.\tA\tC\t.\t.\tXS=short").unwrap();
    }
    sh_ok(&format!("bgzip -f {}", vcf.display()));
    let gz = dir.path().join("long.vcf.gz");
    for input in [&gz, &vcf] {
        if input == &vcf {
            // The same record as plain text (read by htslib's line reader).
            sh_ok(&format!("bgzip -dc {} > {}", gz.display(), vcf.display()));
        }
        let (ok, err, rss) = run_timed(
            &["convert", "-q", "--max-mem", "64MiB", "--threads", "2"],
            input,
            &dir.path().join("o.zarr"),
        );
        assert!(!ok, "{}: converted:\n{err}", input.display());
        assert!(
            err.contains(&format!("{}: record 2 (", input.display()))
                && err.contains("raise --max-mem"),
            "{}: {err}",
            input.display()
        );
        eprintln!("{}: peak RSS {} MiB", input.display(), rss >> 20);
        if input == &gz {
            // Inflated by svar2's own reader: refused before the line is held whole.
            assert!(
                rss < 64 << 20,
                "peak RSS {} MiB over --max-mem 64MiB",
                rss >> 20
            );
        } else {
            // htslib's line reader holds the line once (not the 2.6x of its parse).
            assert!(rss < 150 << 20, "peak RSS {} MiB", rss >> 20);
        }
    }
}

// ---- buckets ----------------------------------------------------------------------

/// A password in `AWS_ENDPOINT_URL` never reaches a message (nothing listens on the
/// endpoint: every request fails, and the error names the URL).
#[test]
fn endpoint_passwords_are_never_printed() {
    const PASSWORD: &str = "hunter2-8c1f";
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again: connections are refused
    for args in [
        vec!["inspect", "s3://b/x.zarr"],
        vec!["digest", "s3://b/x.zarr"],
        vec!["view", "s3://b/x.zarr"],
    ] {
        let out = svar2()
            .args(&args)
            .env_remove("AWS_PROFILE")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("AWS_ACCESS_KEY_ID", "k")
            .env("AWS_SECRET_ACCESS_KEY", "s")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ALLOW_HTTP", "true")
            .env(
                "AWS_ENDPOINT_URL",
                format!("http://admin:{PASSWORD}@127.0.0.1:{port}"),
            )
            .current_dir(dir.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{args:?}");
        assert!(
            !text.contains(PASSWORD),
            "{args:?} printed the password:\n{text}"
        );
        assert!(text.contains("127.0.0.1"), "{args:?}: {text}");
    }
}

/// `.`, `..` and empty segments in a bucket URL are refused before any request (no
/// server needed: nothing is sent).
#[test]
fn dot_segments_in_bucket_urls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let vcf = small_vcf(dir.path());
    for url in [
        "s3://b/base.zarr/..",
        "s3://b/a/./x.zarr",
        "s3://b/a//x.zarr",
    ] {
        let out = svar2()
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "k")
            .env("AWS_SECRET_ACCESS_KEY", "s")
            .env("AWS_REGION", "us-east-1")
            .args(["convert", "-q"])
            .arg(&vcf)
            .arg(url)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url}: converted");
        assert!(
            err.contains("path segment") && err.trim().lines().count() == 1,
            "{url}: {err}"
        );
    }
}

/// moto_server on a free port with the bucket `svar2-bounds` made (as tests/s3.rs
/// starts it); `None` (skipped) without moto.
struct Moto {
    child: std::process::Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    fn start(test: &str) -> Option<Moto> {
        if !sh("command -v moto_server").status.success() {
            skip(test, "moto_server not found (pip install 'moto[server]')");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "moto_server did not listen"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let m = Moto { child, port };
        m.python("s.create_bucket(Bucket='svar2-bounds')");
        Some(m)
    }

    fn env<'c>(&self, c: &'c mut Command) -> &'c mut Command {
        c.env_remove("AWS_PROFILE")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("AWS_ACCESS_KEY_ID", "k")
            .env("AWS_SECRET_ACCESS_KEY", "s")
            .env("AWS_REGION", "us-east-1")
            .env(
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            )
            .env("AWS_ALLOW_HTTP", "true")
    }

    /// Runs `code` with a boto3 client `s`.
    fn python(&self, code: &str) -> String {
        let mut c = Command::new("python3");
        self.env(&mut c)
            .arg("-c")
            .arg(format!("import boto3\ns = boto3.client('s3')\n{code}"));
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{code}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn svar2(&self, args: &[&str]) -> std::process::Output {
        let mut c = svar2();
        self.env(&mut c).args(args).output().unwrap()
    }
}

#[test]
fn bucket_keys_round_trip_and_missing_buckets_are_named() {
    let Some(m) = Moto::start("bucket_keys_round_trip_and_missing_buckets_are_named") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let vcf = small_vcf(dir.path());
    let local = dir.path().join("l.zarr");
    convert(&vcf, &local, TINY_GEOMETRY);
    let url = "s3://svar2-bounds/base.zarr";
    let mut args = vec!["convert", "-q"];
    args.extend_from_slice(TINY_GEOMETRY);
    args.extend([vcf.to_str().unwrap(), url]);
    let out = m.svar2(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Keys are written byte for byte: no `%2E` or `%25` escapes in the bucket.
    let keys =
        m.python("for o in s.list_objects_v2(Bucket='svar2-bounds')['Contents']: print(o['Key'])");
    assert!(keys.lines().any(|k| k == "base.zarr/zarr.json"), "{keys}");
    assert!(!keys.contains('%'), "{keys}");
    // A key with `%` (another writer's) is listed and read back by digest, as the
    // same file gives locally.
    m.python("s.put_object(Bucket='svar2-bounds', Key='base.zarr/notes/a%41b.txt', Body=b'x')");
    std::fs::create_dir_all(local.join("notes")).unwrap();
    std::fs::write(local.join("notes/a%41b.txt"), b"x").unwrap();
    let digest = |store: &str| {
        let o = m.svar2(&["digest", store]);
        assert!(
            o.status.success(),
            "digest {store}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(digest(url), digest(local.to_str().unwrap()));
    // A bucket that does not exist is named as such, not as a missing store.
    for cmd in ["inspect", "view", "digest"] {
        let o = m.svar2(&[cmd, "s3://no-such-bucket-b1/x.zarr"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(
            err.contains("no-such-bucket-b1")
                && (err.contains("does not exist") || err.contains("no such bucket"))
                && !err.contains("not a Zarr group"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_header_of_more_samples_than_the_budget_holds_is_refused_before_it_is_parsed() {
    let test = "a_header_of_more_samples_than_the_budget_holds_is_refused_before_it_is_parsed";
    if !Path::new("/usr/bin/time").exists() {
        skip(test, "/usr/bin/time not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let vcf = dir.path().join("wide.vcf");
    {
        let n = 1_000_000;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&vcf).unwrap());
        write!(
            f,
            "##fileformat=VCFv4.3\n##contig=<ID=chr1>\n\
             ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
             #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT"
        )
        .unwrap();
        for i in 0..n {
            write!(f, "\ts{i:07}").unwrap();
        }
        write!(f, "\nchr1\t1\t.\tA\tC\t.\t.\t.\tGT").unwrap();
        for _ in 0..n {
            f.write_all(b"\t0/1").unwrap();
        }
        writeln!(f).unwrap();
    }
    for cmd in ["convert", "plan"] {
        let (ok, err, rss) = run_timed(
            &[cmd, "-q", "--max-mem", "64MiB"],
            &vcf,
            &dir.path().join("o.zarr"),
        );
        assert!(!ok, "{cmd}: {err}");
        assert!(
            err.contains("1000000 samples") && err.contains("raise --max-mem"),
            "{cmd}: {err}"
        );
        eprintln!("{cmd}: peak RSS {} MiB", rss >> 20);
        assert!(
            rss < 64 << 20,
            "{cmd}: peak RSS {} MiB over --max-mem 64MiB",
            rss >> 20
        );
    }
}

#[test]
fn a_record_of_more_alleles_than_the_budget_holds_is_refused() {
    let test = "a_record_of_more_alleles_than_the_budget_holds_is_refused";
    if !Path::new("/usr/bin/time").exists() {
        skip(test, "/usr/bin/time not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let vcf = dir.path().join("alts.vcf");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&vcf).unwrap());
        writeln!(
            f,
            "##fileformat=VCFv4.3\n##contig=<ID=chr1>\n\
             #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nchr1\t1\t.\tA\tC\t.\t.\t."
        )
        .unwrap();
        // Record 2: ten million ALT alleles in a 20 MB line (under 1/4 of 128 MiB).
        write!(f, "chr1\t2\t.\tA\tC").unwrap();
        for _ in 1..10_000_000 {
            f.write_all(b",C").unwrap();
        }
        writeln!(f, "\t.\t.\t.").unwrap();
    }
    let (ok, err, rss) = run_timed(
        &["convert", "-q", "--max-mem", "128MiB"],
        &vcf,
        &dir.path().join("o.zarr"),
    );
    assert!(!ok, "{err}");
    assert!(
        err.contains("record 2 (chr1:2)") && err.contains("10000000 ALT alleles"),
        "{err}"
    );
    eprintln!("peak RSS {} MiB", rss >> 20);
    assert!(
        rss < 128 << 20,
        "peak RSS {} MiB over --max-mem 128MiB",
        rss >> 20
    );
}

/// Whether `/usr/bin/time` and bgzip are here (the test is skipped, saying so, if not).
fn time_and_bgzip(test: &str) -> bool {
    let here = Path::new("/usr/bin/time").exists() && sh("command -v bgzip").status.success();
    if !here {
        skip(test, "/usr/bin/time or bgzip not found");
    }
    here
}

/// `dir/name.vcf.gz`, bgzipped and indexed: contigs chr1 and chr2 of 100 Mb, FORMAT
/// GT, AD, PL and FT, `samples` samples, and `lines` (tab-separated, calls included).
fn calls_vcf(
    dir: &Path,
    name: &str,
    samples: usize,
    lines: impl Iterator<Item = String>,
) -> PathBuf {
    let vcf = dir.join(format!("{name}.vcf"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&vcf).unwrap());
    writeln!(
        f,
        "##fileformat=VCFv4.3\n##contig=<ID=chr1,length=100000000>\n\
         ##contig=<ID=chr2,length=100000000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"Depths\">\n\
         ##FORMAT=<ID=PL,Number=G,Type=Integer,Description=\"Likelihoods\">\n\
         ##FORMAT=<ID=FT,Number=1,Type=String,Description=\"Filter\">"
    )
    .unwrap();
    write!(f, "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT").unwrap();
    for s in 0..samples {
        write!(f, "\tS{s}").unwrap();
    }
    writeln!(f).unwrap();
    for line in lines {
        writeln!(f, "{line}").unwrap();
    }
    drop(f);
    sh_ok(&format!(
        "bgzip -f {0} && bcftools index -f {0}.gz",
        vcf.display()
    ));
    dir.join(format!("{name}.vcf.gz"))
}

/// Record `i` (1-based POS `i + 1`) of `contig` for `samples` samples, GT:AD:PL:
/// biallelic, or with 7 ALT alleles (8 AD and 36 PL values a sample).
fn call_line(contig: &str, i: usize, samples: usize, seven_alts: bool) -> String {
    let (alt, call) = match seven_alts {
        false => ("C", "0/1:10,5:30,0,40".to_string()),
        true => {
            let pl: Vec<String> = (100..136).map(|v| v.to_string()).collect();
            (
                "C,G,T,CA,CG,CT,CC",
                format!("0/1:0,1,2,3,4,5,6,7:{}", pl.join(",")),
            )
        }
    };
    let calls = vec![call; samples].join("\t");
    format!(
        "{contig}\t{}\t.\tA\t{alt}\t.\tPASS\t.\tGT:AD:PL\t{calls}",
        i + 1
    )
}

/// Records that fill more than the ones the plan measured (here 7 ALT alleles, with
/// their AD and PL, after a stretch of biallelic sites, all in the first 2 kb of a
/// contig the header says is 100 Mb: closer than the index's 16 kb bins tell apart,
/// so no spot the plan samples lands on them) are refused while their chunk row is
/// read, under `--max-mem`, with a `--variants-chunk` that then converts them under it.
#[test]
fn records_that_fill_more_later_are_refused_within_the_budget() {
    if !time_and_bgzip("records_that_fill_more_later_are_refused_within_the_budget") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lines = (0..2000).map(|i| call_line("chr1", i, 400, i >= 1000));
    let gz = calls_vcf(dir.path(), "late", 400, lines);
    refused_within_then_converted(&gz, 56, &[]);
}

/// As [`records_that_fill_more_later_are_refused_within_the_budget`], for text:
/// FORMAT strings of 1,000 characters after a stretch of `PASS` (the build before
/// this check converted this file under `--max-mem 100MiB` at 317 MiB).
#[test]
fn long_text_later_is_refused_within_the_budget() {
    if !time_and_bgzip("long_text_later_is_refused_within_the_budget") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let short = vec!["0/1:PASS".to_string(); 250].join("\t");
    let long = vec![format!("0/1:{}", "x".repeat(1000)); 250].join("\t");
    let lines = (0..900).map(|i| {
        let calls = if i < 500 { &short } else { &long };
        format!("chr1\t{}\t.\tA\tC\t.\tPASS\t.\tGT:FT\t{calls}", i + 1)
    });
    let gz = calls_vcf(dir.path(), "text", 250, lines);
    let advised = refused_within_then_converted(&gz, 100, &[]);
    assert!(advised.starts_with("--variants-chunk "), "{advised}");
    // Two readers through the index: their pieces are cut by the rows the plan
    // expects, so no shorter chunk row fits them; one reader's does, and is named.
    let advised = refused_within_then_converted(&gz, 100, &["--readers", "2"]);
    assert!(
        advised.starts_with("--readers 1 --variants-chunk "),
        "{advised}"
    );
}

/// `gz` under `--max-mem {mib}MiB` (and `flags`): refused, naming a record, under the
/// budget; then converted under it with the options the refusal names instead of
/// `flags`, which are returned.
fn refused_within_then_converted(gz: &Path, mib: u64, flags: &[&str]) -> String {
    let dir = gz.parent().unwrap();
    let budget = format!("{mib}MiB");
    let mut args = vec!["convert", "-q", "--force", "--max-mem", &budget];
    args.extend(flags);
    let (ok, err, rss) = run_timed(&args, gz, &dir.join("o.zarr"));
    eprintln!("refused at peak RSS {} MiB", rss >> 20);
    assert!(!ok, "converted:\n{err}");
    assert!(
        err.contains(&format!("{}: record ", gz.display()))
            && err.contains(&format!("does not fit --max-mem {mib}.0 MiB"))
            && err.contains("(it fits this budget)"),
        "{err}"
    );
    assert!(
        rss < mib << 20,
        "peak RSS {} MiB over --max-mem {budget}",
        rss >> 20
    );
    // The options it names convert under the same budget.
    let advised = err
        .split(" (it fits this budget)")
        .next()
        .and_then(|t| t.rsplit("pass ").next())
        .filter(|a| a.starts_with("--"))
        .unwrap_or_else(|| panic!("{err}"))
        .to_string();
    let mut args = vec!["convert", "-q", "--force", "--max-mem", &budget];
    args.extend(advised.split(' '));
    let (ok, err, rss) = run_timed(&args, gz, &dir.join("ok.zarr"));
    eprintln!("{advised}: peak RSS {} MiB", rss >> 20);
    assert!(ok, "{err}");
    assert!(
        rss < mib << 20,
        "peak RSS {} MiB over --max-mem {budget}",
        rss >> 20
    );
    advised
}

/// One call with 50 ALT alleles among 5,000 samples whose other calls are `.` (as
/// `bcftools merge` fills samples that lack a site): a line of 5 KB whose PL, laid out
/// for every sample as wide as that one, takes 26 MB. Past the records the plan reads,
/// it is refused before it is laid out, under `--max-mem`, whether the direct parse,
/// htslib's or a BCF reads it; among them, the plan names the budget that converts it.
/// (At 48 MiB: the least plan of 5,000 samples with FORMAT fields needs 43 MiB.)
#[test]
fn a_short_record_whose_values_expand_past_the_budget_is_refused() {
    if !time_and_bgzip("a_short_record_whose_values_expand_past_the_budget_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let samples = 5000;
    let wide = |pos: usize, sample_two: &str| {
        let alts: Vec<String> = (1..=50).map(|i| format!("A{}", "C".repeat(i))).collect();
        let pl: Vec<String> = (0..51 * 52 / 2).map(|v| (v % 100).to_string()).collect();
        let mut calls = vec![format!(
            "0/50:{}:{}:PASS",
            vec!["1"; 51].join(","),
            pl.join(",")
        )];
        calls.push(sample_two.to_string());
        calls.extend(std::iter::repeat_n("./.:.:.:.".to_string(), samples - 2));
        format!(
            "chr1\t{pos}\t.\tA\t{}\t.\tPASS\t.\tGT:AD:PL:FT\t{}",
            alts.join(","),
            calls.join("\t")
        )
    };
    // Record `at` (1-based) is the wide one, among 200.
    let lines = |at: usize, sample_two: &str| {
        let lines: Vec<String> = (0..200)
            .map(|i| match i + 1 == at {
                true => wide(i + 1, sample_two),
                false => call_line("chr1", i, samples, false),
            })
            .collect();
        lines.into_iter()
    };
    let bcf_of = |vcf: &Path| {
        let bcf = vcf.with_extension("").with_extension("bcf");
        sh_ok(&format!(
            "bcftools view --no-version -Ob -o {0} {1} && bcftools index -f {0}",
            bcf.display(),
            vcf.display()
        ));
        bcf
    };
    // Record 150: past the 64 records the plan reads at the start (the others, all
    // in the contig's first 16 kb, give its index no spots).
    // `+1` is left to htslib's parser, which would lay the record out itself.
    let direct = calls_vcf(dir.path(), "direct", samples, lines(150, "./.:.:.:."));
    let general = calls_vcf(dir.path(), "general", samples, lines(150, "./.:+1:.:."));
    let bcf = bcf_of(&direct);
    for input in [&direct, &general, &bcf] {
        let (ok, err, rss) = run_timed(
            &["convert", "-q", "--max-mem", "48MiB"],
            input,
            &dir.path().join("o.zarr"),
        );
        eprintln!("{}: refused at peak RSS {} MiB", input.display(), rss >> 20);
        assert!(!ok, "converted:\n{err}");
        assert!(
            err.contains(&format!(
                "{}: record 150 (chr1:150): FORMAT/PL has 1326 values",
                input.display()
            )) && err.contains("bcftools annotate -x FORMAT/PL"),
            "{err}"
        );
        assert!(
            rss < 48 << 20,
            "peak RSS {} MiB over --max-mem 48MiB",
            rss >> 20
        );
    }
    // Record 10, which the plan reads: it names the budget, which converts it.
    let early = calls_vcf(dir.path(), "early", samples, lines(10, "./.:.:.:."));
    for input in [&early, &bcf_of(&early)] {
        let plan = svar2()
            .args(["plan", "--dry-run", "--max-mem", "48MiB"])
            .arg(input)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&plan.stderr).into_owned();
        assert!(!plan.status.success(), "{err}");
        let budget = err
            .split("pass --max-mem ")
            .nth(1)
            .and_then(|t| t.split(" or more").next())
            .unwrap_or_else(|| panic!("{err}"))
            .replace(' ', "");
        let (ok, err, rss) = run_timed(
            &["convert", "-q", "--force", "--max-mem", &budget],
            input,
            &dir.path().join("ok.zarr"),
        );
        eprintln!(
            "{}: --max-mem {budget}: peak RSS {} MiB",
            input.display(),
            rss >> 20
        );
        assert!(ok, "--max-mem {budget}: {err}");
        let mib: f64 = budget.trim_end_matches("MiB").parse().unwrap();
        assert!(
            (rss as f64) < mib * (1 << 20) as f64,
            "peak RSS {rss} over {budget}"
        );
    }
}

/// Records of 231 PL values for each of 5,000 samples (a 20-allele site in every
/// record; 3.3 MB of text and 2.3 MB in a batch each): every run stays under its
/// `--max-mem` while the advice of the one before is followed, from the plan's first
/// refusal to the conversion. The plan charges the record each reader parses (its
/// text and its values at 32 bits), which it did not (the advised 46 MiB peaked at
/// 47 MiB), and planning samples at most an eighth of the budget of records (it
/// peaked at 48 MiB refusing 40 MiB). It starts at 40 MiB: the process itself
/// (binary, htslib, the sampled records parsed) takes 30–35 MiB before the plan can
/// refuse, so a refusal at 32 MiB measured the allocator's luck (it peaked at 33).
#[test]
fn dense_wide_records_convert_under_the_budget_the_plan_names() {
    if !time_and_bgzip("dense_wide_records_convert_under_the_budget_the_plan_names") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let samples = 5000;
    let alts: Vec<String> = (1..=20).map(|i| format!("A{}", "C".repeat(i))).collect();
    let pl: Vec<String> = (0..231).map(|v| (v % 100).to_string()).collect();
    let calls = vec![format!("0/1:{}", pl.join(",")); samples].join("\t");
    let lines = (0..20).map(|i| {
        format!(
            "chr1\t{}\t.\tA\t{}\t.\tPASS\t.\tGT:PL\t{calls}",
            1000 + 10 * i,
            alts.join(",")
        )
    });
    let gz = calls_vcf(dir.path(), "dense", samples, lines);
    let mut budget = "40MiB".to_string();
    for _ in 0..4 {
        let (ok, err, rss) = run_timed(
            &["convert", "-q", "--force", "--max-mem", &budget],
            &gz,
            &dir.path().join("o.zarr"),
        );
        eprintln!("--max-mem {budget}: ok {ok}, peak RSS {} MiB", rss >> 20);
        let mib: f64 = budget.trim_end_matches("MiB").parse().unwrap();
        assert!(
            (rss as f64) < mib * (1 << 20) as f64,
            "peak RSS {} MiB over --max-mem {budget}:\n{err}",
            rss >> 20
        );
        if ok {
            return;
        }
        budget = err
            .split("pass --max-mem ")
            .nth(1)
            .and_then(|t| t.split(" or more").next())
            .unwrap_or_else(|| panic!("{err}"))
            .replace(' ', "");
    }
    panic!("the advice did not converge: last --max-mem {budget}");
}

/// With several inputs (one contig each), a refusal names the file the record came
/// from: here the second, whose last 300 records carry 7 ALT alleles.
#[test]
fn a_refusal_names_the_input_holding_the_record() {
    if !time_and_bgzip("a_refusal_names_the_input_holding_the_record") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let inputs = [("one", "chr1", 1500), ("two", "chr2", 1200)].map(|(name, contig, from)| {
        let lines = (0..1500).map(|i| call_line(contig, i, 400, i >= from));
        calls_vcf(dir.path(), name, 400, lines)
    });
    for budget in ["64MiB", "100MiB"] {
        let out = svar2()
            .args(["convert", "-q", "--max-mem", budget])
            .args(&inputs)
            .arg(dir.path().join("o.zarr"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{budget}: converted");
        assert!(
            err.contains(&format!("{}: record ", inputs[1].display())) && err.contains("(chr2:"),
            "{budget}: {err}"
        );
    }
}

#[test]
fn partition_counts_beyond_any_cluster_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let vcf = small_vcf(dir.path());
    let err = fails_fast(
        &[
            "plan",
            "--partitions",
            "1000000000000",
            "-o",
            dir.path().join("plan.json").to_str().unwrap(),
            vcf.to_str().unwrap(),
            dir.path().join("o.zarr").to_str().unwrap(),
        ],
        20,
    );
    assert!(
        err.contains("--partitions 1000000000000") && err.contains("give at most 65536"),
        "{err}"
    );
}
