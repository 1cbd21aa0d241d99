//! Interruptions and concurrent writers: `kill -9` at random moments never leaves a
//! store that passes as complete, re-running the same command gives the same bytes as
//! an uninterrupted run, and a second conversion into a store being written refuses.

mod common;
use common::*;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const GEOMETRY: [&str; 4] = ["--variants-chunk", "256", "--variants-shard", "1024"];

fn spawn(input: &Path, out: &Path, extra: &[&str]) -> Child {
    svar2()
        .args(["convert", "-q"])
        .args(GEOMETRY)
        .args(extra)
        .arg(input)
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("svar2 starts")
}

/// An indexed fixture of unequal contigs (so concurrent contigs stitch).
fn fixture(dir: &Path) -> std::path::PathBuf {
    let spec = ["c1:24000", "c2:6000", "c3:15000", "c4:900", "c5:9000"];
    bgzip_indexed(&unequal_vcf(dir, "k.vcf", &spec))
}

/// A small deterministic generator (the test is reproducible; the moments are not
/// meant to be clever, only spread over the whole run).
struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn kill_at_random_moments_never_leaves_a_complete_looking_store() {
    if !tools(
        "kill_at_random_moments_never_leaves_a_complete_looking_store",
        &[Tool::Bcftools, Tool::ZarrPython, Tool::Vcztools],
    ) {
        return;
    }
    let dir = test_dir();
    let gz = fixture(dir.path());
    // Reference stores, and how long an uninterrupted run takes in each setting.
    let settings: [&[&str]; 2] = [&["--threads", "1"], &["--threads", "4", "--readers", "1"]];
    let mut reference = Vec::new();
    for extra in settings {
        let out = dir.path().join("ref.zarr");
        let t0 = Instant::now();
        let o = spawn(&gz, &out, extra).wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        reference.push((digest(&out), t0.elapsed()));
        std::fs::remove_dir_all(&out).unwrap();
    }
    assert_eq!(reference[0].0, reference[1].0, "settings agree");

    let mut rng = Lcg(20261130);
    let mut interrupted = 0;
    let mut python_checked = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut attempt = 0;
    // How the kill times follow the machine's pace: a run that finished first says
    // the machine is faster now than at the reference run (kill sooner), one killed
    // before it wrote anything that it is slower (kill later). A shared machine's
    // load otherwise decides whether enough runs are cut mid-way.
    let mut pace = [1.0f64; 2];
    while interrupted < 24 && Instant::now() < deadline {
        let k = attempt % 2;
        let (extra, (want, full)) = (settings[k], &reference[k]);
        attempt += 1;
        let out = dir.path().join(format!("k{attempt}.zarr"));
        let at = full.mul_f64(pace[k] * (0.02 + 0.93 * rng.unit()));
        let mut child = spawn(&gz, &out, extra);
        std::thread::sleep(at);
        let killed = child.try_wait().unwrap().is_none();
        if killed {
            child.kill().unwrap(); // SIGKILL
        }
        let status = child.wait().unwrap();
        if !killed || status.success() {
            // It finished first: then it must be whole.
            assert_eq!(&digest(&out), want, "finished run at {at:?}");
            pace[k] = (pace[k] * 0.8).max(0.05);
            continue;
        }
        // Killed before it created anything, or between making the directory and
        // putting its in-progress marker in (an empty directory: digest calls it no
        // store, as it is).
        let empty = std::fs::read_dir(&out).map_or(true, |mut d| d.next().is_none());
        if empty {
            pace[k] = (pace[k] * 1.25).min(20.0);
            continue;
        }
        if out.join("zarr.json").exists() {
            // Killed after the root zarr.json went in: the store is whole.
            assert_eq!(&digest(&out), want, "killed after completing, at {at:?}");
            pace[k] = (pace[k] * 0.8).max(0.05);
            continue;
        }
        interrupted += 1;
        let o = svar2().arg("digest").arg(&out).output().unwrap();
        assert!(!o.status.success(), "digest accepted an interrupted store");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("not a complete store"),
            "killed at {at:?}: {err}"
        );
        if python_checked < 3 {
            python_checked += 1;
            let zp = sh(&format!(
                "python3 -c \"import zarr; zarr.open_group('{}', mode='r')\"",
                out.display()
            ));
            assert!(
                !zp.status.success(),
                "zarr-python opened an interrupted store"
            );
            let vz = sh(&format!("vcztools view {} > /dev/null", out.display()));
            assert!(!vz.status.success(), "vcztools read an interrupted store");
            let o = svar2().arg("view").arg(&out).output().unwrap();
            assert!(!o.status.success(), "svar2 view read an interrupted store");
            assert!(
                o.stdout.is_empty(),
                "svar2 view printed from an interrupted store"
            );
        }
        // The same command again: starts over and gives the uninterrupted bytes.
        let o = spawn(&gz, &out, extra).wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "re-run after a kill at {at:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(&digest(&out), want, "re-run after a kill at {at:?}");
        std::fs::remove_dir_all(&out).unwrap();
    }
    assert!(
        interrupted >= 20,
        "only {interrupted} of {attempt} runs were interrupted mid-way"
    );
    eprintln!("{interrupted} interrupted conversions of {attempt}, all recognised and redone");
}

#[test]
fn a_second_conversion_into_the_same_store_refuses() {
    if !tools(
        "a_second_conversion_into_the_same_store_refuses",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let gz = fixture(dir.path());
    let want = dir.path().join("want.zarr");
    convert(&gz, &want, &GEOMETRY);
    let out = dir.path().join("o.zarr");
    // Several tries: the first must be caught while still writing.
    for _ in 0..20 {
        let _ = std::fs::remove_dir_all(&out);
        let mut first = spawn(&gz, &out, &["--threads", "1"]);
        while !out.join(".svar2-in-progress").exists() && first.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let second = spawn(&gz, &out, &["--force"]).wait_with_output().unwrap();
        let first_done = first.wait().unwrap();
        assert!(first_done.success());
        if second.status.success() {
            continue; // the first had already finished; try again
        }
        let err = String::from_utf8_lossy(&second.stderr);
        assert!(err.contains("another svar2 conversion is writing"), "{err}");
        assert_eq!(
            digest(&out),
            digest(&want),
            "the first run's store is intact"
        );
        return;
    }
    panic!("never caught the first conversion while it was writing");
}

/// `svar2 convert - OUT` fed the first half of `vcf` through a pipe left open, so the
/// run is caught mid-way for certain: the store is being written, the rest of the
/// records not yet read. `prelude` runs in the shell before svar2 (e.g. a `trap`).
fn convert_waiting_on_stdin(vcf: &Path, out: &Path, prelude: &str) -> (Child, Vec<u8>) {
    let text = std::fs::read(vcf).unwrap();
    let half = text.len() / 2;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{prelude} exec \"$0\" convert - \"$1\""))
        .arg(env!("CARGO_BIN_EXE_svar2"))
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("svar2 starts");
    use std::io::Write;
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(&text[..half])
        .unwrap();
    wait_until("the store's in-progress marker", || {
        out.join(".svar2-in-progress").exists()
    });
    (child, text[half..].to_vec())
}

fn signal(child: &Child, sig: &str) {
    let sent = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn ctrl_c_says_what_the_run_left_then_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let dir = test_dir();
    let vcf = unequal_vcf(dir.path(), "k.vcf", &["c1:6000", "c2:3000"]);
    for (sig, number) in [("-INT", 2), ("-TERM", 15)] {
        let out = dir.path().join("o.zarr");
        let (child, _) = convert_waiting_on_stdin(&vcf, &out, "");
        signal(&child, sig);
        let done = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.signal(), Some(number), "{sig}: {err}");
        assert!(
            err.contains(&format!(
                "svar2: interrupted: {} is not finished (no root zarr.json",
                out.display()
            )),
            "{sig}: {err}"
        );
        assert!(!out.join("zarr.json").exists(), "{sig}");
        let verify = svar2().arg("verify").arg(&out).output().unwrap();
        let said = String::from_utf8_lossy(&verify.stderr);
        assert!(!verify.status.success(), "{sig}: verify passed it");
        assert!(
            said.contains("the conversion did not finish"),
            "{sig}: {said}"
        );
        // What the line says to do works: the same command again, no --force.
        convert(&vcf, &out, &[]);
        assert!(out.join("zarr.json").exists());
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// Waits until process `pid` catches SIGINT (its handler is installed).
fn wait_for_handler(pid: u32) {
    wait_until("svar2's SIGINT handler", || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
    });
}

#[test]
fn ctrl_c_before_force_cleared_the_old_store_says_it_is_as_it_was() {
    use std::os::unix::process::ExitStatusExt;
    let dir = test_dir();
    let vcf = unequal_vcf(dir.path(), "k.vcf", &["c1:3000"]);
    let out = dir.path().join("o.zarr");
    convert(&vcf, &out, &[]);
    let before = digest(&out);
    // Waiting for standard input's header: the old store is not cleared yet.
    let child = svar2()
        .args(["convert", "--force", "-"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handler(child.id());
    signal(&child, "-INT");
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.signal(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "svar2: interrupted: {} is the old store as it was, or",
            out.display()
        )),
        "{err}"
    );
    assert_eq!(digest(&out), before, "the old store is as it was");
}

#[test]
fn an_ignored_ctrl_c_stays_ignored() {
    // `nohup`, or a background job of a script: the run goes on to the end.
    let dir = test_dir();
    let vcf = unequal_vcf(dir.path(), "k.vcf", &["c1:6000", "c2:3000"]);
    let out = dir.path().join("o.zarr");
    let (mut child, rest) = convert_waiting_on_stdin(&vcf, &out, "trap '' INT;");
    signal(&child, "-INT");
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&rest).unwrap();
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(!err.contains("interrupted"), "{err}");
    let whole = dir.path().join("whole.zarr");
    convert(&vcf, &whole, &[]);
    assert_eq!(digest(&out), digest(&whole));
}
