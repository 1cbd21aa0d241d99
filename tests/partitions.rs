//! Conversion on a cluster: `plan --partitions N`, one `convert --plan --partition K`
//! process per partition (started at once, as `xargs -P` or a Slurm array does),
//! then `finalize` — the store is byte-identical to one `svar2 convert`, whatever N.
//! Also: a killed partition is named by finalize and re-run alone; two tasks on one
//! partition, one refuses; the shipped Slurm script runs under a stand-in `sbatch`.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// `svar2 plan --partitions N -o PLAN ARGS INPUTS OUT`; returns the plan's JSON.
fn plan(inputs: &[&Path], out: &Path, n: usize, args: &[&str], plan: &Path) -> serde_json::Value {
    let o = svar2()
        .args(["plan", "--json", "--partitions", &n.to_string(), "-o"])
        .arg(plan)
        .args(args)
        .args(inputs)
        .arg(out)
        .output()
        .expect("svar2 runs");
    assert!(
        o.status.success(),
        "plan: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan JSON");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(plan).expect("plan written")).expect("JSON");
    assert_eq!(printed, written, "--json prints the plan it writes");
    written
}

/// Every partition as its own process, `parallel` at once (`xargs -P`).
fn run_all(plan: &Path, n: usize, parallel: usize, extra: &str) {
    sh_ok(&format!(
        "seq 0 {last} | xargs -P {parallel} -I{{}} {bin} convert -q --plan {plan} --partition {{}} {extra}",
        last = n - 1,
        bin = env!("CARGO_BIN_EXE_svar2"),
        plan = plan.display()
    ));
}

fn finalize(plan: &Path) -> Output {
    svar2()
        .args(["finalize", "-q"])
        .arg(plan)
        .output()
        .expect("svar2 runs")
}

fn finalize_ok(plan: &Path) {
    let o = finalize(plan);
    assert!(
        o.status.success(),
        "finalize: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Inner chunks partitions shared (spilled for finalize), counted before finalize.
fn spills(out: &Path) -> usize {
    sh_ok(&format!(
        "find {} -name 'spill.*' | wc -l",
        out.join(".svar2-partitions").display()
    ))
    .trim()
    .parse()
    .expect("a count")
}

/// Converts `inputs` in 1, 2, 5 and 13 partitions and requires the single
/// conversion's digest each time; returns how many partitions cut a contig and how
/// many inner chunks partitions shared.
fn assert_partitions_match(
    dir: &Path,
    name: &str,
    inputs: &[&Path],
    layout: &[&str],
) -> (usize, usize) {
    let single = dir.join(format!("{name}.single.zarr"));
    let o = svar2()
        .args(["convert", "-q"])
        .args(layout)
        .args(inputs)
        .arg(&single)
        .output()
        .expect("svar2 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = digest(&single);
    let (mut cut, mut shared) = (0, 0);
    for n in [1, 2, 5, 13] {
        let out = dir.join(format!("{name}.{n}.zarr"));
        let plan_path = dir.join(format!("{name}.{n}.json"));
        let p = plan(inputs, &out, n, layout, &plan_path);
        let parts = p["partitions"].as_array().expect("partitions");
        assert_eq!(parts.len(), n);
        for q in parts {
            for key in ["regions", "records", "shard_rows", "predicted_peak_rss"] {
                assert!(q.get(key).is_some(), "plan --json lists {key}: {q}");
            }
        }
        cut += parts
            .iter()
            .filter(|q| q["exact"] == serde_json::Value::Bool(false))
            .count();
        // Odd N also reads each partition with two sub-contig readers.
        let extra = if n % 2 == 1 { "--readers 2" } else { "" };
        run_all(&plan_path, n, 4, extra);
        shared += spills(&out);
        finalize_ok(&plan_path);
        assert_eq!(
            digest(&out),
            expected,
            "{name}: {n} partitions vs one convert"
        );
        assert!(
            !out.join(".svar2-partitions").exists(),
            "finalize leaves no work files"
        );
    }
    (cut, shared)
}

#[test]
fn partitions_give_the_single_conversions_bytes() {
    if !tools(
        "partitions_give_the_single_conversions_bytes",
        &[Tool::Bcftools, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    // The growth fixture: layouts that grow late, so partitions write rows under
    // layouts the whole data outgrows and finalize re-lays them.
    let growth = bgzip_indexed(&growth_vcf(d));
    assert!(assert_partitions_match(d, "growth", &[&growth], &GROWTH_GEOMETRY).0 > 0);
    // Every field kind, as VCF.gz and BCF.
    let [_, gz, bcf] = forms(&data("all_fields.vcf"), d, "af");
    let small = ["--variants-chunk", "3", "--variants-shard", "6"];
    assert_partitions_match(d, "af_gz", &[&gz], &small);
    // With 1000-record chunks its few records share one inner chunk between
    // partitions, which finalize joins and encodes.
    assert!(assert_partitions_match(d, "af_bcf", &[&bcf], &[]).1 > 0);
    // FORMAT-heavy, multiallelic sites growing AD/PL, three contigs in two files.
    let fmt = d.join("fmt_src.vcf");
    sh_ok(&format!(
        "python3 {} {} 60 3000 GT:AD:DP:GQ:PL:VAF 3",
        root().join("scripts/make_format_vcf.py").display(),
        fmt.display()
    ));
    let [_, fgz, _] = forms(&fmt, d, "fmt");
    let layout = [
        "--variants-chunk",
        "100",
        "--variants-shard",
        "300",
        "--samples-chunk",
        "16",
    ];
    assert!(assert_partitions_match(d, "fmt", &[&fgz], &layout).0 > 0);
    let halves: Vec<PathBuf> = ["c1", "c2,c3"]
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let p = d.join(format!("fmt_part{i}.bcf"));
            sh_ok(&format!(
                "bcftools view -r {r} -Ob -o {p} {fgz} && bcftools index -f {p}",
                p = p.display(),
                fgz = fgz.display()
            ));
            p
        })
        .collect();
    let refs: Vec<&Path> = halves.iter().map(PathBuf::as_path).collect();
    assert_partitions_match(d, "fmt_files", &refs, &layout);
    // The shared corpus, VCF and BCF, when this checkout has it.
    for name in ["sim_small.vcf.gz", "sim_small.bcf"] {
        let part = "partitions_give_the_single_conversions_bytes (corpus part)";
        if let Some(p) = need_corpus(part, name) {
            let layout = ["--variants-chunk", "500", "--variants-shard", "2000"];
            // Partitions of ~1,500 records: every boundary moves onto the chunk
            // grid, so no chunk is shared.
            let (cut, shared) = assert_partitions_match(d, name, &[&p], &layout);
            assert!(cut > 0 && shared == 0, "{name}: {cut} cut, {shared} shared");
        }
    }
}

/// A fixture whose partitions take long enough to be caught mid-way.
fn slow_fixture(dir: &Path) -> PathBuf {
    format_call_set(dir, "slow", 800, 6000, "GT:AD:DP:GQ:PL", 2)
}

fn spawn_partition(plan: &Path, k: usize) -> std::process::Child {
    spawn_partition_task(svar2(), plan, k)
}

/// Waits until `path` exists (a partition has reached that point).
fn wait_for(path: &Path, what: &str) {
    wait_until(what, || path.exists());
}

#[test]
fn a_killed_partition_is_named_and_rerun_alone() {
    if !tools(
        "a_killed_partition_is_named_and_rerun_alone",
        &[Tool::Bcftools, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = slow_fixture(d);
    let layout = ["--variants-chunk", "250", "--variants-shard", "500"];
    let single = d.join("single.zarr");
    convert(&gz, &single, &layout);
    let out = d.join("out.zarr");
    let plan_path = d.join("plan.json");
    plan(&[&gz], &out, 3, &layout, &plan_path);
    let work = out.join(".svar2-partitions");

    // Nothing run yet: finalize names every partition.
    let o = finalize(&plan_path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("3 of 3 partitions are not done"), "{err}");
    assert!(
        err.contains("0 (not run)") && err.contains("2 (not run)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    run_all_one(&plan_path, 0);
    run_all_one(&plan_path, 2);
    // Partition 1, killed once it is converting (its own directory exists).
    let mut child = spawn_partition(&plan_path, 1);
    wait_for(&work.join("1"), "partition 1's directory");
    child.kill().expect("kill -9");
    child.wait().expect("reaped");
    assert!(
        !work.join("1.json").exists(),
        "the kill landed before partition 1 finished"
    );
    let o = finalize(&plan_path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("1 of 3 partitions are not done: 1 (started, did not finish)"),
        "{err}"
    );
    assert!(
        !out.join("zarr.json").exists(),
        "no root until finalize succeeds"
    );
    // Re-run it alone.
    run_all_one(&plan_path, 1);
    // A shard a partition wrote, cut short afterwards: finalize names the partition.
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("0.json")).unwrap()).unwrap();
    let shard = out.join(
        record["files"][0][0]
            .as_str()
            .expect("partition 0 wrote a shard"),
    );
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() / 2]).unwrap();
    let err = String::from_utf8_lossy(&finalize(&plan_path).stderr).into_owned();
    assert!(
        err.contains("partition 0:") && err.contains("run partition 0 again"),
        "{err}"
    );
    run_all_one(&plan_path, 0);
    // A finalize that was interrupted re-encoding the partitions' shards says what
    // to do instead of guessing.
    std::fs::write(work.join("finalize.relaying"), b"").unwrap();
    let err = String::from_utf8_lossy(&finalize(&plan_path).stderr).into_owned();
    assert!(
        err.contains("remove") && err.contains("run every partition again"),
        "{err}"
    );
    std::fs::remove_file(work.join("finalize.relaying")).unwrap();
    // The store is the single conversion's.
    finalize_ok(&plan_path);
    assert_eq!(digest(&out), digest(&single));
    // A second finalize has nothing to do.
    finalize_ok(&plan_path);
    assert_eq!(digest(&out), digest(&single));
}

fn run_all_one(plan: &Path, k: usize) {
    let o = spawn_partition(plan, k).wait_with_output().expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn two_tasks_on_one_partition_one_refuses() {
    if !tools(
        "two_tasks_on_one_partition_one_refuses",
        &[Tool::Bcftools, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = slow_fixture(d);
    let out = d.join("out.zarr");
    let plan_path = d.join("plan.json");
    plan(&[&gz], &out, 1, &[], &plan_path);
    let first = spawn_partition(&plan_path, 0);
    // The first holds the lock once it has its own directory.
    wait_for(&out.join(".svar2-partitions/0"), "partition 0's directory");
    assert_refused_as_taken(spawn_partition(&plan_path, 0), 0);
    let o = first.wait_with_output().expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    finalize_ok(&plan_path);
    let single = d.join("single.zarr");
    convert(&gz, &single, &[]);
    assert_eq!(digest(&out), digest(&single));
}

#[test]
fn slurm_script_runs_under_a_stand_in_sbatch() {
    if !tools(
        "slurm_script_runs_under_a_stand_in_sbatch",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = bgzip_indexed(&growth_vcf(d));
    let out = d.join("out.zarr");
    let plan_path = d.join("plan.json");
    plan(&[&gz], &out, 4, &GROWTH_GEOMETRY, &plan_path);
    let state = d.join("sbatch");
    let o = sh_ok(&format!(
        "PATH={stand_in}:$PATH SBATCH_STATE={state} SVAR2={bin} {script} {plan} --account=test",
        stand_in = root().join("tests/slurm").display(),
        state = state.display(),
        bin = env!("CARGO_BIN_EXE_svar2"),
        script = root().join("scripts/slurm/convert.sbatch").display(),
        plan = plan_path.display()
    ));
    assert!(o.contains("partitions as array job"), "{o}");
    // Four array tasks and the finalize job ran, every one succeeded.
    let jobs: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains('.'))
        .collect();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    for j in &jobs {
        assert_eq!(std::fs::read_to_string(state.join(j)).unwrap().trim(), "ok");
    }
    let single = d.join("single.zarr");
    convert(&gz, &single, &GROWTH_GEOMETRY);
    assert_eq!(digest(&out), digest(&single));
}

#[test]
fn partition_misuse_is_one_clear_line() {
    if !tools("partition_misuse_is_one_clear_line", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let plain = data("all_fields.vcf");
    // No index, no partitions.
    let o = svar2()
        .args(["plan", "--partitions", "2", "-o"])
        .arg(d.join("p.json"))
        .arg(&plain)
        .arg(d.join("o.zarr"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("partitions need record counts from an index"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let gz = bgzip_indexed(&growth_vcf(d));
    let plan_path = d.join("plan.json");
    let out = d.join("out.zarr");
    plan(&[&gz], &out, 2, &[], &plan_path);
    let cases: [(&[&str], &str); 3] = [
        (
            &["--partition", "2"],
            "has 2 partitions: --partition takes 0 to 1",
        ),
        (
            &["--partition", "0", "--variants-chunk", "10"],
            "the layout is the plan's",
        ),
        (&["--partition", "0", "--force"], "cannot be used with"),
    ];
    for (args, want) in cases {
        let o = svar2()
            .args(["convert", "-q", "--plan"])
            .arg(&plan_path)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A plan edited by hand, or an input changed since planning, is refused.
    let text = std::fs::read_to_string(&plan_path).unwrap();
    let edited = d.join("edited.json");
    std::fs::write(&edited, text.replacen("\"records\": ", "\"records\": 1", 1)).unwrap();
    let o = svar2()
        .args(["convert", "-q", "--plan"])
        .arg(&edited)
        .args(["--partition", "0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("was edited after planning"));
    sh_ok(&format!("printf x >> {}", gz.display()));
    let o = svar2()
        .args(["convert", "-q", "--plan"])
        .arg(&plan_path)
        .args(["--partition", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the input changed; plan again"), "{err}");
    assert!(!out.exists(), "nothing written for a refused task");
}

/// A plan edited with its id recomputed (so the edit check passes): every number a
/// task or finalize indexes by is checked first, and each bad one is refused in one
/// line — never a panic, never a write.
#[test]
fn edited_plans_with_their_id_recomputed_are_refused() {
    use svar2_convert::partition::PartitionPlan;
    if !tools(
        "edited_plans_with_their_id_recomputed_are_refused",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = bgzip_indexed(&growth_vcf(d));
    let plan_path = d.join("plan.json");
    let out = d.join("out.zarr");
    plan(&[&gz], &out, 3, &[], &plan_path);
    let good: PartitionPlan = serde_json::from_slice(&std::fs::read(&plan_path).unwrap()).unwrap();
    type Edit = fn(&mut PartitionPlan);
    let edits: [(&str, Edit); 10] = [
        ("no partitions", |p| p.partitions.clear()),
        ("span contig", |p| p.partitions[0].spans[0].contig = 99),
        ("span cut", |p| p.partitions[0].spans[0].cut = 99),
        ("contig file", |p| p.contigs[0].file = 7),
        ("partition number", |p| {
            p.partitions[1].index = p.partitions[0].index
        }),
        ("axis place", |p| {
            p.partitions[1].axis = p.partitions[0].axis
        }),
        ("chunk size", |p| p.geometry.variants_chunk = 0),
        ("contig id", |p| p.contigs[0].rid = 999),
        ("contig offset", |p| p.contigs[0].offset += 5),
        ("no cuts", |p| p.contigs[0].cuts.clear()),
    ];
    for (what, edit) in edits {
        let mut p = good.clone();
        edit(&mut p);
        p.id = String::new();
        p.id = blake3::hash(&serde_json::to_vec(&p).unwrap())
            .to_hex()
            .to_string();
        let edited = d.join("edited.json");
        std::fs::write(&edited, serde_json::to_vec_pretty(&p).unwrap()).unwrap();
        for args in [
            vec![
                "convert",
                "-q",
                "--plan",
                edited.to_str().unwrap(),
                "--partition",
                "0",
            ],
            vec!["finalize", "-q", edited.to_str().unwrap()],
        ] {
            let o = svar2().args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{what}: {args:?} succeeded");
            assert!(!err.contains("panicked"), "{what}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
            assert!(err.contains("plan again"), "{what}: {err}");
        }
        assert!(!out.exists(), "{what}: something was written");
    }
}

/// A one-node Slurm started for a test (`tests/slurm/start.sh`), stopped on drop.
struct Slurm {
    dir: PathBuf,
    conf: String,
}

impl Slurm {
    fn start(test: &str, dir: &Path) -> Option<Slurm> {
        let state = dir.join("slurm");
        let o = std::process::Command::new(root().join("tests/slurm/start.sh"))
            .arg(&state)
            .output()
            .expect("start.sh runs");
        let err = String::from_utf8_lossy(&o.stderr);
        match o.status.code() {
            Some(0) => Some(Slurm {
                dir: state,
                conf: String::from_utf8_lossy(&o.stdout).trim().to_string(),
            }),
            Some(3) => {
                skip(test, err.trim());
                None
            }
            _ => panic!("Slurm did not start: {err}"),
        }
    }

    /// Runs a bash script with this Slurm's configuration.
    fn sh(&self, script: &str) -> String {
        sh_ok(&format!("export SLURM_CONF={}\n{script}", self.conf))
    }

    /// The job's state (`COMPLETED`, `CANCELLED`, `PENDING`, …) and reason.
    fn state(&self, job: &str) -> (String, String) {
        let info = self.sh(&format!("scontrol show job {job} | tr ' ' '\\n'"));
        let get = |k: &str| {
            info.lines()
                .find_map(|l| l.trim().strip_prefix(k))
                .unwrap_or("")
                .to_string()
        };
        (get("JobState="), get("Reason="))
    }

    /// Waits until no job is queued or running (or `job` is in `state`).
    fn wait_idle(&self, what: &str) {
        let t0 = Instant::now();
        while !self.sh("squeue -h -o %i").trim().is_empty() {
            assert!(
                t0.elapsed() < Duration::from_secs(300),
                "{what}: jobs still queued:\n{}",
                self.sh("squeue")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = std::process::Command::new(root().join("tests/slurm/stop.sh"))
            .arg(&self.dir)
            .status();
    }
}

#[test]
fn the_slurm_recipe_runs_on_a_real_slurm() {
    let test = "the_slurm_recipe_runs_on_a_real_slurm";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let Some(slurm) = Slurm::start(test, d) else {
        return;
    };
    let gz = slow_fixture(d);
    let layout = ["--variants-chunk", "250", "--variants-shard", "500"];
    let single = d.join("single.zarr");
    convert(&gz, &single, &layout);
    let out = d.join("out.zarr");
    let plan_path = d.join("plan.json");
    plan(&[&gz], &out, 3, &layout, &plan_path);
    let script = root().join("scripts/slurm/convert.sbatch");
    let bin = env!("CARGO_BIN_EXE_svar2");
    // The node has this machine's cores and memory: each task asks for one core.
    let opts = format!(
        "--cpus-per-task=1 --mem=2G --output={}/%x-%A_%a.log",
        d.display()
    );

    // Submit, wait, digest.
    let o = slurm.sh(&format!(
        "cd {d} && SVAR2={bin} {script} {plan} {opts}",
        d = d.display(),
        script = script.display(),
        plan = plan_path.display()
    ));
    assert!(o.contains("partitions as array job"), "{o}");
    slurm.wait_idle("the array and finalize");
    let final_job = o.trim().rsplit(' ').next().unwrap().to_string();
    assert_eq!(slurm.state(&final_job).0, "COMPLETED", "finalize: {o}");
    assert_eq!(digest(&out), digest(&single));

    // Again into a fresh output; partition 1 cancelled with scancel while it converts.
    let out2 = d.join("out2.zarr");
    let plan2 = d.join("plan2.json");
    plan(&[&gz], &out2, 3, &layout, &plan2);
    let work = out2.join(".svar2-partitions");
    let o = slurm.sh(&format!(
        "cd {d} && SVAR2={bin} {script} {plan} {opts}",
        d = d.display(),
        script = script.display(),
        plan = plan2.display()
    ));
    let array = o
        .split("array job ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .expect("the array job id")
        .to_string();
    let final_job = o.trim().rsplit(' ').next().unwrap().to_string();
    wait_for(&work.join("1"), "partition 1's directory");
    slurm.sh(&format!("scancel {array}_1"));
    let t0 = Instant::now();
    while slurm.state(&format!("{array}_1")).0 != "CANCELLED" {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "scancel took no effect"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !work.join("1.json").exists(),
        "the cancel landed before partition 1 finished"
    );
    // Finalize waits on every task: it never runs (its dependency cannot be met).
    let t0 = Instant::now();
    loop {
        let (state, reason) = slurm.state(&final_job);
        assert_ne!(state, "COMPLETED", "finalize ran with a task cancelled");
        if reason.contains("DependencyNeverSatisfied") || state == "CANCELLED" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "{state} {reason}");
        std::thread::sleep(Duration::from_millis(200));
    }
    slurm.sh(&format!("scancel {final_job}"));
    slurm.wait_idle("the other tasks");
    assert!(!out2.join("zarr.json").exists());
    // Partition 1 alone, then finalize after it: the single conversion's bytes.
    let o = slurm.sh(&format!(
        "cd {d} && export SVAR2={bin}; j=$(sbatch --parsable --array=1 {opts} {script} {plan}); \
         sbatch --parsable --dependency=afterok:${{j%%;*}} {opts} {script} --finalize {plan}",
        d = d.display(),
        script = script.display(),
        plan = plan2.display()
    ));
    slurm.wait_idle("partition 1 again and finalize");
    let again = o
        .trim()
        .lines()
        .last()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(slurm.state(&again).0, "COMPLETED");
    assert_eq!(digest(&out2), digest(&single));
}
