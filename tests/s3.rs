//! Stores in an S3 bucket, against a real S3 server started on 127.0.0.1 for each
//! test (`moto_server`, from PyPI's `moto[server]`: an HTTP S3 endpoint, not a mock
//! of svar2's calls): conversions and rechunks into and out of a bucket give the
//! local bytes, zarr-python and xarray open the bucket store, faults are one line
//! each, and no secret reaches a log, an error, a partition plan or a store.
//! Partitioned conversions into a bucket (no shared file system): N tasks at once,
//! finalize, the local bytes; a killed task re-run alone; two tasks on one
//! partition, one refuses.

mod common;
use common::*;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "svar2testkey";
/// Grepped for in every output, plan and object.
const SECRET: &str = "svar2-SECRET-5b1f0c9e";
const BUCKET: &str = "svar2-test";

/// An S3 server on a free port of 127.0.0.1, killed on drop.
struct Server {
    child: Child,
    port: u16,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

fn wait_for_port(port: u16, what: &str) {
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Server {
    /// Starts moto_server (`auth`: with request signing checked against its IAM, so
    /// keys it never issued are refused), with the test bucket made unless `auth`.
    fn start(test: &str, auth: bool) -> Option<Server> {
        if !sh("command -v moto_server").status.success() {
            skip(test, "moto_server not found (pip install 'moto[server]')");
            return None;
        }
        let port = free_port();
        let mut cmd = Command::new("moto_server");
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if auth {
            cmd.env("INITIAL_NO_AUTH_ACTION_COUNT", "0");
        }
        let child = cmd.spawn().expect("moto_server starts");
        wait_for_port(port, "moto_server");
        let s = Server { child, port };
        if !auth {
            sh_ok(&format!(
                "{} python3 -c \"import boto3; boto3.client('s3').create_bucket(Bucket='{BUCKET}')\"",
                s.exports()
            ));
        }
        Some(s)
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a user sets (and nothing from this machine's own AWS set-up).
    fn env<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_remove("AWS_PROFILE")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", self.endpoint())
            .env("AWS_ALLOW_HTTP", "true")
    }

    /// The same, as `export` lines for a bash script.
    fn exports(&self) -> String {
        format!(
            "export AWS_ACCESS_KEY_ID={KEY} AWS_SECRET_ACCESS_KEY={SECRET} AWS_REGION=us-east-1 \
             AWS_ENDPOINT_URL={} AWS_ALLOW_HTTP=true AWS_CONFIG_FILE=/dev/null \
             AWS_SHARED_CREDENTIALS_FILE=/dev/null;",
            self.endpoint()
        )
    }

    fn svar2(&self) -> Command {
        let mut c = svar2();
        self.env(&mut c);
        c
    }

    /// The same, with staging directories under `tmp` (where a test can see them).
    fn svar2_in(&self, tmp: &Path) -> Command {
        let mut c = self.svar2();
        c.env("TMPDIR", tmp);
        c
    }

    /// Runs svar2 with `args`; panics with its stderr unless it succeeds.
    fn ok(&self, args: &[&str]) -> Output {
        let out = self.svar2().args(args).output().expect("svar2 runs");
        assert!(
            out.status.success(),
            "svar2 {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs svar2 with `args`, which must fail; returns its stderr.
    fn fails(&self, args: &[&str]) -> String {
        fails(self.svar2().args(args))
    }

    fn digest(&self, store: &str) -> String {
        String::from_utf8(self.ok(&["digest", store]).stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    }

    /// Every object under `prefix` of the test bucket, as (key, bytes).
    fn objects(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let script = format!(
            "{} python3 -c \"
import boto3, sys
s = boto3.client('s3')
for page in s.get_paginator('list_objects_v2').paginate(Bucket='{BUCKET}', Prefix='{prefix}'):
    for o in page.get('Contents', []):
        b = s.get_object(Bucket='{BUCKET}', Key=o['Key'])['Body'].read()
        sys.stdout.write(o['Key'] + ' ' + b.hex() + '\\n')
\"",
            self.exports()
        );
        sh_ok(&script)
            .lines()
            .map(|l| {
                let (k, hex) = l.split_once(' ').expect("key and bytes");
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                    .collect();
                (k.to_string(), bytes)
            })
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd`, which must fail with one error line (warnings and clap's pointer to
/// `--help` aside); returns stderr.
fn fails(cmd: &mut Command) -> String {
    let out = cmd.output().expect("svar2 runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "expected a failure, got success:\n{err}"
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| {
            !l.trim().is_empty() && !l.contains(" WARN ") && !l.starts_with("For more information")
        })
        .collect();
    assert_eq!(lines.len(), 1, "one error line expected, got:\n{err}");
    err
}

fn local_digest(store: &Path) -> String {
    sh_ok(&format!(
        "{} digest {}",
        env!("CARGO_BIN_EXE_svar2"),
        store.display()
    ))
    .trim()
    .to_string()
}

fn s3fs_missing(test: &str) -> bool {
    if sh("python3 -c 'import s3fs'").status.success() {
        return false;
    }
    skip(
        test,
        "s3fs not importable (pip install s3fs): zarr-python's S3 store",
    );
    true
}

#[test]
fn bucket_stores_have_the_local_bytes_and_open_everywhere() {
    let test = "bucket_stores_have_the_local_bytes_and_open_everywhere";
    let Some(s3) = Server::start(test, false) else {
        return;
    };
    let dir = test_dir();
    let growth = growth_vcf(dir.path());
    let all_fields = data("all_fields.vcf");
    let mut inputs = vec![
        ("all_fields", all_fields.clone(), TINY_GEOMETRY.to_vec()),
        ("growth", growth.clone(), GROWTH_GEOMETRY.to_vec()),
    ];
    if let Some(sim) = need_corpus(test, "sim.vcf.gz") {
        inputs.push(("sim", sim, vec![]));
    }
    for (name, input, geometry) in &inputs {
        let local = dir.path().join(format!("{name}.zarr"));
        let url = format!("s3://{BUCKET}/run/{name}.zarr");
        let mut args = vec!["convert", "-q"];
        args.extend(geometry.iter().copied());
        let input = input.to_str().unwrap();
        s3.ok(&[&args[..], &[input, local.to_str().unwrap()]].concat());
        s3.ok(&[&args[..], &[input, &url]].concat());
        assert_eq!(s3.digest(&url), local_digest(&local), "{name}: convert");
    }
    // Rechunk local -> bucket, bucket -> bucket, bucket -> local: the local bytes.
    let src_local = dir.path().join("growth.zarr");
    let src_url = format!("s3://{BUCKET}/run/growth.zarr");
    let patch = ["rechunk", "-q", "--patch", "100x10"];
    let want = dir.path().join("growth-ml.zarr");
    s3.ok(&[
        &patch[..],
        &[src_local.to_str().unwrap(), want.to_str().unwrap()],
    ]
    .concat());
    let want = local_digest(&want);
    let to_bucket = format!("s3://{BUCKET}/ml/a.zarr");
    let in_bucket = format!("s3://{BUCKET}/ml/b.zarr");
    let back = dir.path().join("back.zarr");
    s3.ok(&[&patch[..], &[src_local.to_str().unwrap(), &to_bucket]].concat());
    s3.ok(&[&patch[..], &[&src_url, &in_bucket]].concat());
    s3.ok(&[&patch[..], &[&in_bucket, back.to_str().unwrap()]].concat());
    assert_eq!(s3.digest(&to_bucket), want, "rechunk local -> bucket");
    assert_eq!(s3.digest(&in_bucket), want, "rechunk bucket -> bucket");
    assert_eq!(local_digest(&back), want, "rechunk bucket -> local");
    // A shard over 16 MiB goes up in multipart parts (the corpus, one 37 MB shard).
    if dir.path().join("sim.zarr").exists() {
        let one = [
            "rechunk",
            "-q",
            "--patch",
            "4096x1",
            "--variants-shard",
            "200704",
            "--samples-shard",
            "1000",
        ];
        let sim = dir.path().join("sim.zarr");
        let want = dir.path().join("sim-one.zarr");
        let url = format!("s3://{BUCKET}/ml/sim-one.zarr");
        s3.ok(&[&one[..], &[sim.to_str().unwrap(), want.to_str().unwrap()]].concat());
        s3.ok(&[&one[..], &[sim.to_str().unwrap(), &url]].concat());
        let big = std::fs::metadata(want.join("call_genotype/c/0/0/0"))
            .unwrap()
            .len();
        assert!(big > 16 << 20, "a multipart-sized shard ({big} bytes)");
        assert_eq!(s3.digest(&url), local_digest(&want), "multipart upload");
    }
    // The readers print what they print for the local store.
    let af_url = format!("s3://{BUCKET}/run/all_fields.zarr");
    let af = dir.path().join("all_fields.zarr");
    for cmd in [
        vec!["view"],
        vec!["read", "--region", "chr1"],
        vec!["query", "-f", "%CHROM\t%POS[\t%GT]\n"],
    ] {
        let here = s3.ok(&[&cmd[..], &[af.to_str().unwrap()]].concat()).stdout;
        let there = s3.ok(&[&cmd[..], &[af_url.as_str()]].concat()).stdout;
        let there = String::from_utf8_lossy(&there).replace(&af_url, &af.display().to_string());
        assert_eq!(String::from_utf8_lossy(&here), there, "svar2 {cmd:?}");
    }
    let verify = s3.ok(&["verify", &af_url]).stdout;
    assert!(String::from_utf8_lossy(&verify).contains("0 damaged"));
    let inspect = s3.ok(&["inspect", "--patch", "4x2", &af_url]).stdout;
    assert!(String::from_utf8_lossy(&inspect).contains("call_genotype"));
    let bench = s3.ok(&["bench-read", "--n", "50", "--io-threads", "8", &src_url]);
    let bench = String::from_utf8_lossy(&bench.stdout).into_owned();
    assert!(
        bench.contains("GETs"),
        "bench-read names its requests:\n{bench}"
    );
    // zarr-python (through s3fs) and xarray open the bucket's store.
    if !s3fs_missing(test) && tools(test, &[Tool::ZarrPython, Tool::Xarray]) {
        for name in ["all_fields", "growth"] {
            sh_ok(&format!(
                "{} python3 {} s3://{BUCKET}/run/{name}.zarr {}",
                s3.exports(),
                py("s3_open.py"),
                dir.path().join(format!("{name}.zarr")).display()
            ));
        }
    }
}

#[test]
fn faults_are_one_line_and_never_leave_a_complete_looking_store() {
    let test = "faults_are_one_line_and_never_leave_a_complete_looking_store";
    let Some(s3) = Server::start(test, false) else {
        return;
    };
    let dir = test_dir();
    let growth = growth_vcf(dir.path());
    let input = growth.to_str().unwrap();
    let local = dir.path().join("g.zarr");
    let mut args = vec!["convert", "-q"];
    args.extend(GROWTH_GEOMETRY);
    s3.ok(&[&args[..], &[input, local.to_str().unwrap()]].concat());
    let want = local_digest(&local);

    // The server goes away in the middle of the upload (a proxy in front of it cuts
    // every connection after 40 requests): a clear error, no root zarr.json.
    let port = free_port();
    let mut proxy = Command::new("python3")
        .args([&py("s3_proxy.py"), &port.to_string(), &s3.port.to_string()])
        .args(["--fail-after", "40"])
        .stdout(Stdio::null())
        .spawn()
        .expect("the proxy starts");
    wait_for_port(port, "the proxy");
    let url = format!("s3://{BUCKET}/cut.zarr");
    let err = fails(
        s3.svar2()
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .args(&args)
            .args([input, &url]),
    );
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert!(err.contains("s3://svar2-test/cut.zarr"), "{err}");
    let keys: Vec<String> = s3.objects("cut.zarr").into_iter().map(|o| o.0).collect();
    assert!(
        !keys.contains(&"cut.zarr/zarr.json".to_string()),
        "{keys:?}"
    );
    let err = s3.fails(&["digest", &url]);
    assert!(err.contains("not a complete store"), "{err}");
    // The same command again, the server back: the same bytes as local.
    s3.ok(&[&args[..], &[input, &url]].concat());
    assert_eq!(s3.digest(&url), want);
    // A finished store is replaced only with --force.
    let err = s3.fails(&[&args[..], &[input, &url]].concat());
    assert!(err.contains("--force"), "{err}");

    // A truncated shard: reading it fails naming the object.
    let shard = s3
        .objects("cut.zarr/call_genotype/c/")
        .into_iter()
        .next()
        .expect("a call_genotype shard");
    let cut = &shard.1[..shard.1.len() / 2];
    let truncated = dir.path().join("truncated");
    std::fs::write(&truncated, cut).unwrap();
    sh_ok(&format!(
        "{} python3 -c \"import boto3; boto3.client('s3').upload_file('{}', '{BUCKET}', '{}')\"",
        s3.exports(),
        truncated.display(),
        shard.0
    ));
    let err = s3.fails(&["view", &url]);
    assert!(err.contains(&format!("s3://{BUCKET}/{}", shard.0)), "{err}");
    let out = s3.svar2().args(["verify", &url]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && report.contains("DAMAGED call_genotype"),
        "{report}"
    );

    // A missing bucket; a plain http:// endpoint not allowed; other schemes; a bucket
    // URL where a local file belongs.
    let err = fails(
        s3.svar2()
            .args(["convert", "-q", input, "s3://no-such-bucket-svar2/x.zarr"]),
    );
    assert!(err.to_lowercase().contains("bucket"), "{err}");
    let err = fails(s3.svar2().env_remove("AWS_ALLOW_HTTP").args([
        "convert",
        "-q",
        input,
        "s3://svar2-test/h.zarr",
    ]));
    assert!(err.contains("AWS_ALLOW_HTTP"), "{err}");
    let err = s3.fails(&["convert", "-q", input, "gs://b/x.zarr"]);
    assert!(err.contains("gs:// URLs are not supported"), "{err}");
    let err = s3.fails(&["convert", "-q", "s3://svar2-test/in.vcf.gz", "out.zarr"]);
    assert!(err.contains("local files"), "{err}");
}

#[test]
fn bad_credentials_are_one_line_and_never_shown() {
    let test = "bad_credentials_are_one_line_and_never_shown";
    let Some(s3) = Server::start(test, true) else {
        return;
    };
    let input = data("all_fields.vcf");
    let err = s3.fails(&[
        "convert",
        "-q",
        input.to_str().unwrap(),
        "s3://svar2-test/x.zarr",
    ]);
    assert!(err.contains("credentials"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
}

#[test]
fn no_secret_in_logs_errors_plans_or_stores() {
    let test = "no_secret_in_logs_errors_plans_or_stores";
    let Some(s3) = Server::start(test, false) else {
        return;
    };
    let input = data("all_fields.vcf");
    let input = input.to_str().unwrap();
    let url = format!("s3://{BUCKET}/secret.zarr");
    let runs: Vec<Vec<&str>> = vec![
        vec!["-vv", "convert", input, &url],
        vec!["-vv", "inspect", &url],
        vec!["-vv", "read", "--region", "chr1", &url],
        vec!["-vv", "bench-read", "--n", "20", &url],
        vec![
            "-vv",
            "rechunk",
            "--patch",
            "4x2",
            &url,
            "s3://svar2-test/secret-ml.zarr",
        ],
        vec!["-vv", "plan", "--dry-run", input, &url],
        vec!["-vv", "convert", input, "s3://no-such-bucket-svar2/x.zarr"],
        vec!["-vv", "digest", "s3://svar2-test/nothing-here.zarr"],
    ];
    for args in &runs {
        for trace in [false, true] {
            let mut cmd = s3.svar2();
            if trace {
                cmd.env("RUST_LOG", "trace");
            }
            let out = cmd.args(args).output().expect("svar2 runs");
            for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                let text = String::from_utf8_lossy(bytes);
                assert!(
                    !text.contains(SECRET),
                    "svar2 {args:?} (RUST_LOG=trace: {trace}) printed the secret on {what}"
                );
            }
        }
    }
    // A partitioned conversion into the bucket: its plan, tasks and finalize.
    if tools(test, &[Tool::Bcftools]) {
        let dir = test_dir();
        let d = dir.path();
        let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
        let url = format!("s3://{BUCKET}/secret-parts.zarr");
        let plan = bucket_plan(&s3, d, "secret", &[&gz], 2, &[], &url);
        let plan = plan.to_str().unwrap();
        for args in [
            vec!["-vv", "convert", "--plan", plan, "--partition", "0"],
            vec!["-vv", "convert", "--plan", plan, "--partition", "1"],
            vec!["-vv", "finalize", plan],
        ] {
            let out = s3.svar2_in(d).args(&args).output().expect("svar2 runs");
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            for bytes in [&out.stdout, &out.stderr] {
                assert!(
                    !String::from_utf8_lossy(bytes).contains(SECRET),
                    "svar2 {args:?}"
                );
            }
        }
    }
    let objects = s3.objects("");
    assert!(objects.len() > 50, "the stores are there");
    for (k, bytes) in objects {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(SECRET), "{k} holds the secret");
        assert!(!text.contains(KEY), "{k} holds the access key id");
    }
}

/// `plan --partitions N` of `inputs` into `url`, with `layout`; the plan's path.
fn bucket_plan(
    s3: &Server,
    dir: &Path,
    name: &str,
    inputs: &[&Path],
    n: usize,
    layout: &[&str],
    url: &str,
) -> std::path::PathBuf {
    let plan = dir.join(format!("{name}.plan.json"));
    let mut cmd = s3.svar2_in(dir);
    cmd.args(["plan", "--partitions", &n.to_string(), "-o"])
        .arg(&plan)
        .args(layout)
        .args(inputs)
        .arg(url);
    let o = cmd.output().expect("svar2 runs");
    assert!(
        o.status.success(),
        "plan: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&plan).expect("plan written");
    assert!(text.contains(url), "the plan names the bucket store");
    assert!(!text.contains(SECRET), "the plan holds the secret");
    plan
}

fn spawn_task(s3: &Server, dir: &Path, plan: &Path, k: usize) -> Child {
    spawn_partition_task(s3.svar2_in(dir), plan, k)
}

fn task_ok(s3: &Server, dir: &Path, plan: &Path, k: usize) {
    let o = spawn_task(s3, dir, plan, k)
        .wait_with_output()
        .expect("runs");
    assert!(
        o.status.success(),
        "partition {k}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn finalize_in(s3: &Server, dir: &Path, plan: &Path) -> Output {
    s3.svar2_in(dir)
        .args(["finalize", "-q"])
        .arg(plan)
        .output()
        .expect("svar2 runs")
}

/// Finalizes `plan` and holds the bucket store at `url` to the local conversion's
/// bytes (`local`); `what` names the case in a failure.
fn finalize_to_local_bytes(
    s3: &Server,
    dir: &Path,
    plan: &Path,
    url: &str,
    local: &Path,
    what: &str,
) {
    let o = finalize_in(s3, dir, plan);
    assert!(
        o.status.success(),
        "{what}: finalize: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(s3.digest(url), local_digest(local), "{what}");
}

/// Waits until partition `k`'s task has claimed it and is converting (its own work
/// directory exists in its staging directory under `dir`).
fn wait_converting(dir: &Path, k: usize) {
    let pattern = format!("-partition-{k}");
    wait_until(&format!("partition {k} converting"), || {
        std::fs::read_dir(dir.join("svar2-staging"))
            .ok()
            .is_some_and(|rd| {
                rd.flatten().any(|e| {
                    e.file_name().to_string_lossy().ends_with(&pattern)
                        && e.path()
                            .join(".svar2-partitions")
                            .join(k.to_string())
                            .exists()
                })
            })
    });
}

/// A bucket-partition test's server and directory (`None`: skipped, said why).
fn partition_test(test: &str) -> Option<(Server, TestDir)> {
    if !tools(test, &[Tool::Bcftools]) {
        return None;
    }
    Some((Server::start(test, false)?, test_dir()))
}

#[test]
fn partitions_write_one_bucket_store() {
    let Some((s3, dir)) = partition_test("partitions_write_one_bucket_store") else {
        return;
    };
    let d = dir.path();
    // The growth fixture (rows the whole data outgrows: finalize fetches, re-lays and
    // replaces them in the bucket) and every field kind with shared inner chunks.
    let growth = bgzip_indexed(&growth_vcf(d));
    let [_, af, _] = forms(&data("all_fields.vcf"), d, "af");
    let small = ["--variants-chunk", "3", "--variants-shard", "6"];
    for (name, input, layout, n) in [
        ("growth", &growth, &GROWTH_GEOMETRY[..], 5),
        ("af", &af, &small[..], 3),
    ] {
        let local = d.join(format!("{name}.zarr"));
        convert(input, &local, layout);
        let url = format!("s3://{BUCKET}/parts/{name}.zarr");
        let plan = bucket_plan(&s3, d, name, &[input], n, layout, &url);
        let tasks: Vec<Child> = (0..n).map(|k| spawn_task(&s3, d, &plan, k)).collect();
        for (k, t) in tasks.into_iter().enumerate() {
            let o = t.wait_with_output().expect("runs");
            assert!(
                o.status.success(),
                "{name} partition {k}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert!(
            !s3.objects(&format!("parts/{name}.zarr/zarr.json"))
                .iter()
                .any(|(k, _)| k.ends_with("/zarr.json") && k.matches('/').count() == 2),
            "no root zarr.json before finalize"
        );
        let what = format!("{name}: {n} partitions into a bucket");
        finalize_to_local_bytes(&s3, d, &plan, &url, &local, &what);
        let left: Vec<String> = s3
            .objects(&format!("parts/{name}.zarr/.svar2"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(left.is_empty(), "finalize leaves no work objects: {left:?}");
        let staging = std::fs::read_dir(d.join("svar2-staging")).map_or(0, |rd| rd.count());
        assert_eq!(staging, 0, "no staging directory is left behind");
    }
}

#[test]
fn a_killed_bucket_partition_is_rerun_alone_and_a_second_task_refuses() {
    let Some((s3, dir)) =
        partition_test("a_killed_bucket_partition_is_rerun_alone_and_a_second_task_refuses")
    else {
        return;
    };
    let d = dir.path();
    // Partitions that take long enough to be caught mid-way.
    let gz = format_call_set(d, "slow", 800, 6000, "GT:AD:DP:GQ:PL", 2);
    let layout = ["--variants-chunk", "250", "--variants-shard", "500"];
    let local = d.join("single.zarr");
    convert(&gz, &local, &layout);
    let url = format!("s3://{BUCKET}/killed.zarr");
    let plan = bucket_plan(&s3, d, "killed", &[&gz], 3, &layout, &url);
    task_ok(&s3, d, &plan, 0);
    task_ok(&s3, d, &plan, 2);
    // Partition 1, killed once it is converting.
    let mut child = spawn_task(&s3, d, &plan, 1);
    wait_converting(d, 1);
    // A second task on the partition refuses, naming the first.
    assert_refused_as_taken(spawn_task(&s3, d, &plan, 1), 1);
    child.kill().expect("kill -9");
    child.wait().expect("reaped");
    let o = finalize_in(&s3, d, &plan);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("1 of 3 partitions are not done: 1 (started, did not finish)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    // Re-run alone: it takes over the dead task's claim.
    task_ok(&s3, d, &plan, 1);
    finalize_to_local_bytes(&s3, d, &plan, &url, &local, "the single conversion's bytes");
    // A second finalize has nothing to do; a task of the finished store refuses.
    assert!(finalize_in(&s3, d, &plan).status.success());
    assert_eq!(s3.digest(&url), local_digest(&local));
    let again = spawn_task(&s3, d, &plan, 0)
        .wait_with_output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&again.stderr).contains("already a complete store"));
    // Another plan's partitions into the same prefix are refused by name.
    let other = format!("s3://{BUCKET}/other.zarr");
    let p1 = bucket_plan(&s3, d, "p1", &[&gz], 2, &layout, &other);
    let p2 = bucket_plan(&s3, d, "p2", &[&gz], 3, &layout, &other);
    task_ok(&s3, d, &p1, 0);
    let o = spawn_task(&s3, d, &p2, 0).wait_with_output().expect("runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("holds another conversion in progress"),
        "{err}"
    );
}
