//! Shared helpers for the integration tests: running svar2 and the oracle tools
//! (bcftools, vcztools, bio2zarr, zarr-python, tensorstore), and skipping *loudly*
//! when a tool is missing. Set `SVAR2_REQUIRE_TOOLS=1` (CI does) to turn a skip into a
//! failure.

#![allow(dead_code)]

pub mod exprs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Chunking for the 3,000-record growth fixture (23 samples): several inner chunks
/// per shard on both axes, and shard rows written before the layouts grow.
pub const GROWTH_GEOMETRY: [&str; 8] = [
    "--variants-chunk",
    "100",
    "--variants-shard",
    "400",
    "--samples-chunk",
    "10",
    "--samples-shard",
    "20",
];

/// Small shards so a 9-record fixture spans several inner chunks and shards on both
/// axes.
pub const TINY_GEOMETRY: &[&str] = &[
    "--variants-chunk",
    "2",
    "--variants-shard",
    "4",
    "--samples-chunk",
    "2",
    "--samples-shard",
    "4",
];

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file under `tests/data`.
pub fn data(name: &str) -> PathBuf {
    root().join("tests/data").join(name)
}

/// A script under `tests/py`.
pub fn py(name: &str) -> String {
    root().join("tests/py").join(name).display().to_string()
}

/// A file of the shared benchmark corpus, if this checkout has it.
pub fn corpus(name: &str) -> Option<PathBuf> {
    let p = root().join("../shared/corpus").join(name);
    p.exists().then_some(p)
}

/// The svar2 binary under test.
pub fn svar2() -> Command {
    Command::new(env!("CARGO_BIN_EXE_svar2"))
}

/// Runs a bash script with `set -euo pipefail`, returning its output.
pub fn sh(script: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .output()
        .expect("bash runs")
}

/// Runs a bash script and panics with its stderr unless it succeeds; returns stdout.
pub fn sh_ok(script: &str) -> String {
    let out = sh(script);
    assert!(
        out.status.success(),
        "script failed:\n{script}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn has_command(cmd: &str) -> bool {
    sh(&format!("command -v {cmd}")).status.success()
}

fn has_python_modules(mods: &str) -> bool {
    sh(&format!("python3 -c 'import {mods}'")).status.success()
}

/// An external tool a test needs.
#[derive(Clone, Copy, Debug)]
pub enum Tool {
    Bcftools,
    Vcztools,
    Bio2zarr,
    ZarrPython,
    Tensorstore,
    Xarray,
    /// sgkit in its own virtualenv (its release pins zarr<3): [`sgkit_python`].
    Sgkit,
}

/// The Python of the virtualenv `scripts/setup.sh --test` makes for sgkit
/// (`$SVAR2_SGKIT_PYTHON`, else under `~/.cache/svar2`).
pub fn sgkit_python() -> String {
    std::env::var("SVAR2_SGKIT_PYTHON").unwrap_or_else(|_| {
        let cache = std::env::var("XDG_CACHE_HOME")
            .unwrap_or_else(|_| format!("{}/.cache", std::env::var("HOME").unwrap_or_default()));
        format!("{cache}/svar2/sgkit-venv/bin/python")
    })
}

fn available(t: Tool) -> Result<(), String> {
    let ok = match t {
        Tool::Bcftools => has_command("bcftools") && has_command("bgzip"),
        Tool::Vcztools => has_python_modules("vcztools"),
        Tool::Bio2zarr => has_command("vcf2zarr") && has_python_modules("bio2zarr, cyvcf2"),
        Tool::ZarrPython => has_python_modules("zarr, numpy"),
        Tool::Tensorstore => has_python_modules("tensorstore"),
        Tool::Xarray => has_python_modules("xarray, zarr"),
        Tool::Sgkit => sh(&format!("{} -c 'import sgkit, zarr'", sgkit_python()))
            .status
            .success(),
    };
    if ok {
        Ok(())
    } else {
        Err(match t {
            Tool::Bcftools => "bcftools/bgzip not found (apt-get install bcftools tabix)",
            Tool::Vcztools => "vcztools not importable (pip install vcztools)",
            Tool::Bio2zarr => "vcf2zarr not found (pip install 'bio2zarr[vcf]')",
            Tool::ZarrPython => "zarr-python not importable (pip install zarr)",
            Tool::Tensorstore => "tensorstore not importable (pip install tensorstore)",
            Tool::Xarray => "xarray not importable (pip install xarray zarr)",
            Tool::Sgkit => {
                return Err(format!(
                    "sgkit not importable by {} (scripts/setup.sh --test makes its virtualenv)",
                    sgkit_python()
                ))
            }
        }
        .to_string())
    }
}

/// Records that `test` (or a part of it) did not run, and why: `SKIP <test>: <why>` on
/// both outputs, and a line in `$SVAR2_SKIP_LOG` (cargo test hides a passing test's
/// output; `scripts/test.sh` prints the log at the end).
pub fn note_skip(test: &str, why: &str) {
    eprintln!("SKIP {test}: {why}");
    println!("SKIP {test}: {why}");
    if let Some(log) = std::env::var_os("SVAR2_SKIP_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "SKIP {test}: {why}");
        }
    }
}

/// Skips `test` for want of a tool or input: [`note_skip`], or a failure when
/// `SVAR2_REQUIRE_TOOLS` is set (CI installs everything, so nothing may skip there).
pub fn skip(test: &str, why: &str) {
    if std::env::var_os("SVAR2_REQUIRE_TOOLS").is_some() {
        panic!("{test}: {why}, and SVAR2_REQUIRE_TOOLS is set");
    }
    note_skip(test, why);
}

/// Whether every tool is present; when one is not, [`skip`]s `test` and returns false.
pub fn tools(test: &str, needs: &[Tool]) -> bool {
    for &t in needs {
        if let Err(why) = available(t) {
            skip(test, &why);
            return false;
        }
    }
    true
}

/// A file of the shared corpus, or [`skip`] (the part of) `test` that needs it.
pub fn need_corpus(test: &str, name: &str) -> Option<PathBuf> {
    let p = corpus(name);
    if p.is_none() {
        skip(test, &format!("../shared/corpus/{name} is absent"));
    }
    p
}

/// The growth fixture (`tests/py/make_growth_vcf.py`, 3,000 records, 23 samples:
/// layouts that grow after shard rows were written) as `dir/growth_src.vcf` (a name
/// `forms(…, "growth")` does not copy onto).
pub fn growth_vcf(dir: &Path) -> PathBuf {
    let p = dir.join("growth_src.vcf");
    sh_ok(&format!(
        "python3 {} {} 3000",
        py("make_growth_vcf.py"),
        p.display()
    ));
    p
}

/// Runs `svar2 rechunk -q ARGS IN OUT`.
pub fn run_rechunk(input: &Path, out: &Path, args: &[&str]) -> Output {
    svar2()
        .arg("rechunk")
        .arg("-q")
        .args(args)
        .arg(input)
        .arg(out)
        .output()
        .expect("svar2 runs")
}

/// `svar2 rechunk`, which must succeed.
pub fn rechunk(input: &Path, out: &Path, args: &[&str]) {
    let o = run_rechunk(input, out, args);
    assert!(
        o.status.success(),
        "rechunk {} failed: {}",
        input.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `svar2 convert -q ARGS INPUT OUT`.
pub fn run_convert(input: &Path, out: &Path, args: &[&str]) -> Output {
    svar2()
        .args(["convert", "-q"])
        .args(args)
        .arg(input)
        .arg(out)
        .output()
        .expect("svar2 runs")
}

/// Converts `input` into `out` (replacing it) with extra arguments, asserting success.
pub fn convert(input: &Path, out: &Path, args: &[&str]) {
    let mut all = vec!["--force"];
    all.extend_from_slice(args);
    let o = run_convert(input, out, &all);
    assert!(
        o.status.success(),
        "svar2 convert {} failed: {}",
        input.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `tests/py/make_unequal_vcf.py`'s fixture (contigs `NAME:COUNT`) written as `dir/name`.
pub fn unequal_vcf(dir: &Path, name: &str, spec: &[&str]) -> PathBuf {
    let vcf = dir.join(name);
    sh_ok(&format!(
        "python3 {} {} {}",
        py("make_unequal_vcf.py"),
        vcf.display(),
        spec.join(" ")
    ));
    vcf
}

/// tests/data/all_fields.vcf copied into `dir`, bgzipped and indexed there (tests
/// running at once must not write beside the repository's copy).
pub fn all_fields_indexed(dir: &Path) -> PathBuf {
    let vcf = dir.join("all_fields.vcf");
    std::fs::copy(data("all_fields.vcf"), &vcf).expect("copy the fixture");
    bgzip_indexed(&vcf)
}

/// `samples` (bcftools' -s list) of the indexed `src`, filtered by bcftools view flags
/// `filter` and piped through `edit` (an awk program, or `cat`), as an indexed
/// `dir/name` (.vcf.gz): the inputs the merge and append tests join back.
pub fn sample_part(
    src: &Path,
    dir: &Path,
    name: &str,
    samples: &str,
    filter: &str,
    edit: &str,
) -> PathBuf {
    let out = dir.join(name);
    sh_ok(&format!(
        "bcftools view --no-version -s '{samples}' {filter} {src} | {edit} | bgzip > {out} \
         && bcftools index -f {out}",
        src = src.display(),
        out = out.display()
    ));
    out
}

/// `vcf` bgzipped beside it (`.vcf.gz`) with a CSI index.
pub fn bgzip_indexed(vcf: &Path) -> PathBuf {
    let gz = vcf.with_extension("vcf.gz");
    sh_ok(&format!(
        "bcftools view -Oz -o {gz} {vcf} && bcftools index -f {gz}",
        gz = gz.display(),
        vcf = vcf.display()
    ));
    gz
}

/// An indexed VCF `dir/name.vcf.gz`: the `##` lines `meta` (each ending in a newline),
/// the header line of `samples`, and `rows` (columns separated by single spaces).
pub fn vcf_of_rows(dir: &Path, name: &str, meta: &str, samples: &[&str], rows: &[&str]) -> PathBuf {
    let mut text = format!("{meta}#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT");
    for s in samples {
        text += &format!("\t{s}");
    }
    text += "\n";
    for r in rows {
        text += &r.replace(' ', "\t");
        text += "\n";
    }
    let path = dir.join(format!("{name}.vcf"));
    std::fs::write(&path, text).expect("the VCF written");
    bgzip_indexed(&path)
}

/// A generated call set (`scripts/make_format_vcf.py`, seeded): `samples` x `records`
/// of FORMAT `fields` over `contigs` contigs, bgzipped and indexed. Made once per
/// checkout and generator version, in `target/test-fixtures` (the large ones take
/// ~35 s to make; several tests use them), and shared read-only; `name` labels it
/// in `dir` while it is made.
pub fn format_call_set(
    dir: &Path,
    name: &str,
    samples: usize,
    records: usize,
    fields: &str,
    contigs: usize,
) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let script = root().join("scripts/make_format_vcf.py");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(&script).expect("the generator").hash(&mut h);
    let cache = root().join("target/test-fixtures");
    let key = format!(
        "{samples}x{records}-{}-{contigs}-{:016x}",
        fields.replace(':', "_"),
        h.finish()
    );
    let gz = cache.join(format!("{key}.vcf.gz"));
    let csi = cache.join(format!("{key}.vcf.gz.csi"));
    // Made by one test at a time (its header names the directory it was made in, so
    // two makings differ): the others wait on the lock, then find it made.
    std::fs::create_dir_all(&cache).expect("the fixture cache");
    let lock = std::fs::File::create(cache.join(format!("{key}.lock"))).expect("its lock");
    lock.lock().expect("the fixture lock");
    if gz.is_file() && csi.is_file() {
        return gz;
    }
    let vcf = dir.join(format!("{name}.vcf"));
    sh_ok(&format!(
        "python3 {} {} {samples} {records} {fields} {contigs}",
        script.display(),
        vcf.display()
    ));
    let made = bgzip_indexed(&vcf);
    // Copied aside (data, then index: the index stays the newer file, as htslib
    // wants), then renamed index first: a test killed meanwhile leaves no data
    // without its index.
    let me = format!("{}.{:?}", std::process::id(), std::thread::current().id());
    let made_csi = PathBuf::from(format!("{}.csi", made.display()));
    let (tmp_gz, tmp_csi) = (
        cache.join(format!(".{key}.{me}.gz")),
        cache.join(format!(".{key}.{me}.csi")),
    );
    for (from, to) in [(&made, &tmp_gz), (&made_csi, &tmp_csi)] {
        std::fs::copy(from, to).expect("the call set cached");
    }
    for (from, to) in [(&tmp_csi, &csi), (&tmp_gz, &gz)] {
        std::fs::rename(from, to).expect("the call set cached");
    }
    gz
}

/// Holds a second task started on partition `k` while another converts it: it
/// refuses, naming the first.
pub fn assert_refused_as_taken(second: std::process::Child, k: usize) {
    let second = second.wait_with_output().expect("runs");
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second task must refuse");
    assert!(
        err.contains(&format!(
            "partition {k} is being converted by another task (pid"
        )),
        "{err}"
    );
}

/// Starts `convert --plan PLAN --partition K` from `svar2` (a plain [`svar2()`], or
/// one with a server's environment), its stderr piped for the caller.
pub fn spawn_partition_task(mut svar2: Command, plan: &Path, k: usize) -> std::process::Child {
    svar2
        .args(["convert", "-q", "--plan"])
        .arg(plan)
        .args(["--partition", &k.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("svar2 starts")
}

/// Waits until `ready()` (another process has reached some point), polling every
/// 2 ms; panics naming `what` after 60 s.
pub fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !ready() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "{what} never happened"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// `svar2 plan --dry-run --json EXTRA INPUT`, parsed.
pub fn plan_json(input: &Path, extra: &[&str]) -> serde_json::Value {
    let o = svar2()
        .args(["plan", "--dry-run", "--json"])
        .args(extra)
        .arg(input)
        .output()
        .expect("svar2 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("plan JSON")
}

/// `svar2 digest` of a store.
pub fn digest(store: &Path) -> String {
    let o = svar2()
        .arg("digest")
        .arg(store)
        .output()
        .expect("svar2 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

/// Writes `src` (a VCF) as `name.vcf.gz` and `name.bcf` with CSI indexes in `dir`;
/// returns (plain copy, vcf.gz, bcf).
pub fn forms(src: &Path, dir: &Path, name: &str) -> [PathBuf; 3] {
    let vcf = dir.join(format!("{name}.vcf"));
    let gz = dir.join(format!("{name}.vcf.gz"));
    let bcf = dir.join(format!("{name}.bcf"));
    std::fs::copy(src, &vcf).expect("copy fixture");
    sh_ok(&format!(
        "bcftools view -Oz -o {gz} {vcf} && bcftools index -f {gz} && bcftools view -Ob -o {bcf} {vcf} && bcftools index -f {bcf}",
        gz = gz.display(),
        vcf = vcf.display(),
        bcf = bcf.display()
    ));
    [vcf, gz, bcf]
}

/// `bcftools query` with every column and field of `input`'s header, of the input
/// as a store keeps it (`tests/py/as_stored.py`: INFO keys in header order, a GT the
/// record does not give written out as missing; `svar2 view`'s documented differences).
pub fn query_all(input: &Path, region: Option<&str>) -> String {
    let fmt = sh_ok(&format!(
        "python3 {} {}",
        py("query_format.py"),
        input.display()
    ));
    let fill = py("as_stored.py");
    match region {
        None => sh_ok(&format!(
            "python3 {fill} {} | bcftools query -f '{fmt}' -",
            input.display()
        )),
        Some(r) => sh_ok(&format!(
            "bcftools view -r {r} {} | python3 {fill} - | bcftools query -f '{fmt}' -",
            input.display()
        )),
    }
}

/// The store printed back as VCF by `svar2 view` (`-r region`), then queried like
/// [`query_all`].
pub fn query_store(input: &Path, store: &Path, region: Option<&str>) -> String {
    query_printed(input, store, region, env!("CARGO_BIN_EXE_svar2"))
}

/// The store printed back by plain vcztools (an independent reader: bio2zarr stores
/// and one inner chunk per shard), then queried like [`query_all`].
pub fn query_vcztools(input: &Path, store: &Path, region: Option<&str>) -> String {
    query_printed(input, store, region, "vcztools")
}

/// `PRINTER view [-r region] STORE | bcftools query` with every field of `input`.
fn query_printed(input: &Path, store: &Path, region: Option<&str>, printer: &str) -> String {
    let fmt = sh_ok(&format!(
        "python3 {} {}",
        py("query_format.py"),
        input.display()
    ));
    let r = region.map(|r| format!("-r {r}")).unwrap_or_default();
    sh_ok(&format!(
        "{printer} view {r} {} | bcftools query -f '{fmt}' -",
        store.display()
    ))
}

/// `svar2 view -O kind -o FILE` of the store (`v`, `z` or `b`), checked readable by
/// `bcftools view` without a word on stderr, then queried like [`query_all`].
pub fn query_view_as(input: &Path, store: &Path, kind: &str) -> String {
    let fmt = sh_ok(&format!(
        "python3 {} {}",
        py("query_format.py"),
        input.display()
    ));
    let out = store.with_extension(format!("view.{kind}"));
    sh_ok(&format!(
        "{} view -O{kind} -o {o} {s}",
        env!("CARGO_BIN_EXE_svar2"),
        o = out.display(),
        s = store.display()
    ));
    let read = sh(&format!("bcftools view {} > /dev/null", out.display()));
    let err = String::from_utf8_lossy(&read.stderr);
    assert!(
        read.status.success() && err.trim().is_empty(),
        "bcftools view -O{kind}: {err}"
    );
    let q = sh_ok(&format!("bcftools query -f '{fmt}' {}", out.display()));
    std::fs::remove_file(&out).ok();
    q
}

/// Asserts two multi-line texts are equal, showing the first differing line.
pub fn assert_same_lines(what: &str, expected: &str, got: &str) {
    if expected == got {
        return;
    }
    let (e, g): (Vec<_>, Vec<_>) = (expected.lines().collect(), got.lines().collect());
    let i = e
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(e.len().min(g.len()));
    panic!(
        "{what}: outputs differ ({} vs {} lines), first at line {}:\n  expected: {}\n  got:      {}",
        e.len(),
        g.len(),
        i + 1,
        e.get(i).map_or("<end>", |s| &s[..s.len().min(300)]),
        g.get(i).map_or("<end>", |s| &s[..s.len().min(300)]),
    );
}

/// Runs `svar2 convert -q ARGS INPUT OUT`, asserts it fails and leaves no complete
/// store, and returns its stderr.
pub fn convert_fails(input: &Path, out: &Path, args: &[&str]) -> String {
    let o = run_convert(input, out, args);
    assert!(
        !o.status.success(),
        "convert of {} should fail",
        input.display()
    );
    assert!(
        !out.join("zarr.json").exists(),
        "a failed conversion must never leave a complete-looking store"
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A test's scratch directory. When the test ends (without a panic), every VCF Zarr
/// store left in it must open with `xarray.open_zarr`: xarray refuses stores whose
/// arrays disagree on a dimension's length, which zarr-python does not notice.
pub struct TestDir(tempfile::TempDir);

/// A fresh [`TestDir`].
pub fn test_dir() -> TestDir {
    TestDir(tempfile::tempdir().expect("temp dir"))
}

impl TestDir {
    /// Where it is.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_xarray_opens("xarray oracle", self.path(), true);
        }
    }
}

/// Asserts that every VCF Zarr store under `dir` opens with `xarray.open_zarr` (one
/// Python process for all of them); unless `allow_none`, at least one must be there.
pub fn assert_xarray_opens(test: &str, dir: &Path, allow_none: bool) {
    if !tools(test, &[Tool::Xarray]) {
        return;
    }
    let o = Command::new("python3")
        .arg(py("xarray_open.py"))
        .args(allow_none.then_some("--any"))
        .arg(dir)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "{test}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Converts `input` with bio2zarr (`vcf2zarr`, Zarr v3) and with svar2 (`geometry`)
/// in a scratch directory and asserts every array is the same
/// (`tests/py/compare_stores.py`: name, dtype, shape, dimension names, fill, values).
pub fn assert_same_as_bio2zarr(input: &Path, geometry: &[&str]) {
    let dir = test_dir();
    let reference = dir.path().join("bio2zarr.zarr");
    sh_ok(&format!(
        "BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 {} {} >/dev/null 2>&1",
        input.display(),
        reference.display()
    ));
    let ours = dir.path().join("svar2.zarr");
    convert(input, &ours, geometry);
    let out = sh(&format!(
        "python3 {} {} {}",
        py("compare_stores.py"),
        reference.display(),
        ours.display()
    ));
    assert!(
        out.status.success(),
        "arrays differ from bio2zarr for {}:\n{}{}",
        input.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One inner chunk per shard (500 variants × 10 samples): the layout unpatched vcztools
/// 0.2.0 reads correctly (it sizes blocks by the inner chunk, indexes them by shard).
pub const ONE_CHUNK_PER_SHARD: [&str; 8] = [
    "--variants-chunk",
    "500",
    "--variants-shard",
    "500",
    "--samples-chunk",
    "10",
    "--samples-shard",
    "10",
];

/// Peak RSS (KiB) of a finished command run under `/usr/bin/time -v`, from its report.
pub fn max_rss_kib(report: &str) -> u64 {
    report
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.trim().parse().ok())
        .expect("/usr/bin/time -v output")
}
