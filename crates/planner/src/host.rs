//! What this process may use: its memory limit and cores, read the way a job
//! scheduler sets them (cgroups), not the way the host advertises them.
//!
//! Memory: resolve our own cgroup from
//! `/proc/self/cgroup`; for v2 walk every ancestor up to the root and take the smallest
//! `memory.max` ("max" = none); for v1 read the leaf's `memory.limit_in_bytes` and treat
//! the PAGE_COUNTER_MAX sentinel as none; fall back to the fixed root paths, then to
//! host memory. Reading only the root cgroup once planned 866 GB inside a 64 GiB job.
//!
//! Every path is taken relative to a root directory so tests can build fake trees.

use crate::size::{human, MaxMem, AUTO_FRACTION};
use std::fs;
use std::path::{Path, PathBuf};

/// v1's "no limit": PAGE_COUNTER_MAX pages, as bytes; anything this large is none.
const V1_UNLIMITED: u64 = 0x7FFF_FFFF_FFFF_F000;

/// Where the memory limit came from, and its value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryLimit {
    pub bytes: u64,
    /// Human-readable origin, e.g. `cgroup v2 /sys/fs/cgroup/job/memory.max`.
    pub source: String,
}

/// Cores available: the CPU affinity mask and any cgroup CPU quota.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cores {
    pub affinity: usize,
    /// Quota in cores (`cpu.max` or `cfs_quota/cfs_period`), if limited.
    pub quota: Option<f64>,
    pub quota_source: Option<String>,
    /// min(affinity, floor(quota)), at least 1.
    pub usable: usize,
}

/// A view of `/proc` and `/sys/fs/cgroup` under `root` (`/` in real use).
pub struct Host {
    root: PathBuf,
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

impl Host {
    /// The real system.
    pub fn system() -> Host {
        Host { root: "/".into() }
    }

    /// A fake tree rooted at `root` (tests).
    pub fn at(root: impl Into<PathBuf>) -> Host {
        Host { root: root.into() }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// (v2 path, v1 memory path, v1 cpu path) from `/proc/self/cgroup`.
    fn cgroup_paths(&self) -> (Option<String>, Option<String>, Option<String>) {
        let text = read_trim(&self.p("proc/self/cgroup")).unwrap_or_default();
        let (mut v2, mut mem, mut cpu) = (None, None, None);
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if id == "0" && ctrls.is_empty() {
                v2 = Some(path.to_string());
            }
            let ctrls: Vec<&str> = ctrls.split(',').collect();
            if ctrls.contains(&"memory") {
                mem = Some(path.to_string());
            }
            if ctrls.contains(&"cpu") {
                cpu = Some(path.to_string());
            }
        }
        (v2, mem, cpu)
    }

    /// Walks from a v2 cgroup up to the root, returning the smallest parsed value of
    /// `file` and where it was.
    fn walk_v2<T: PartialOrd + Copy>(
        &self,
        cg: &str,
        file: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<(T, PathBuf)> {
        let base = self.p("sys/fs/cgroup");
        let mut dir = base.join(cg.trim_start_matches('/'));
        if !dir.is_dir() {
            return None;
        }
        let mut best: Option<(T, PathBuf)> = None;
        loop {
            let f = dir.join(file);
            if let Some(v) = read_trim(&f).as_deref().and_then(&parse) {
                if best.as_ref().is_none_or(|(b, _)| v < *b) {
                    best = Some((v, f));
                }
            }
            if dir == base || !dir.pop() || !dir.starts_with(&base) {
                break;
            }
        }
        best
    }

    fn host_memory(&self) -> Option<u64> {
        let text = read_trim(&self.p("proc/meminfo"))?;
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }

    /// The memory this process may use: the tightest cgroup limit, else host memory.
    pub fn memory_limit(&self) -> Option<MemoryLimit> {
        let host = self.host_memory();
        let (v2, v1, _) = self.cgroup_paths();
        let parse_v2 = |s: &str| {
            if s == "max" {
                None
            } else {
                s.parse::<u64>().ok()
            }
        };
        let parse_v1 = |s: &str| s.parse::<u64>().ok().filter(|&v| v < V1_UNLIMITED);
        let cg = v2
            .as_deref()
            .and_then(|p| self.walk_v2(p, "memory.max", parse_v2))
            .map(|(v, f)| (v, format!("cgroup v2 {}", self.show(&f))))
            .or_else(|| {
                let f = self
                    .p("sys/fs/cgroup/memory")
                    .join(v1.as_deref()?.trim_start_matches('/'))
                    .join("memory.limit_in_bytes");
                let v = parse_v1(&read_trim(&f)?)?;
                Some((v, format!("cgroup v1 {}", self.show(&f))))
            })
            .or_else(|| {
                let f = self.p("sys/fs/cgroup/memory.max");
                let v = parse_v2(&read_trim(&f)?)?;
                Some((v, format!("cgroup v2 root {}", self.show(&f))))
            })
            .or_else(|| {
                let f = self.p("sys/fs/cgroup/memory/memory.limit_in_bytes");
                let v = parse_v1(&read_trim(&f)?)?;
                Some((v, format!("cgroup v1 root {}", self.show(&f))))
            });
        match (cg, host) {
            (Some((v, src)), Some(h)) if v < h => Some(MemoryLimit {
                bytes: v,
                source: src,
            }),
            (Some((v, src)), None) => Some(MemoryLimit {
                bytes: v,
                source: src,
            }),
            (_, Some(h)) => Some(MemoryLimit {
                bytes: h,
                source: "host memory (/proc/meminfo MemTotal; no tighter cgroup limit)".into(),
            }),
            (None, None) => None,
        }
    }

    fn show(&self, p: &Path) -> String {
        let rel = p.strip_prefix(&self.root).unwrap_or(p);
        format!("/{}", rel.display())
    }

    fn affinity(&self) -> usize {
        let status = read_trim(&self.p("proc/self/status")).unwrap_or_default();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(str::trim);
        let count = list.map(|l| {
            l.split(',')
                .filter_map(|r| match r.split_once('-') {
                    Some((a, b)) => {
                        Some(b.trim().parse::<usize>().ok()? + 1 - a.trim().parse::<usize>().ok()?)
                    }
                    None => r.trim().parse::<usize>().ok().map(|_| 1),
                })
                .sum::<usize>()
        });
        count
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Cores this process may keep busy.
    pub fn cores(&self) -> Cores {
        let affinity = self.affinity();
        let (v2, _, v1) = self.cgroup_paths();
        let parse_v2 = |s: &str| {
            let mut it = s.split_whitespace();
            let q = it.next()?;
            let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
            if q == "max" {
                None
            } else {
                Some(q.parse::<f64>().ok()? / period)
            }
        };
        let quota = v2
            .as_deref()
            .and_then(|p| self.walk_v2(p, "cpu.max", parse_v2))
            .map(|(q, f)| (q, format!("cgroup v2 {}", self.show(&f))))
            .or_else(|| {
                let base = v1.as_deref()?.trim_start_matches('/').to_string();
                ["sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpu"]
                    .iter()
                    .find_map(|d| {
                        let dir = self.p(d).join(&base);
                        let q: f64 = read_trim(&dir.join("cpu.cfs_quota_us"))?.parse().ok()?;
                        let per: f64 = read_trim(&dir.join("cpu.cfs_period_us"))?.parse().ok()?;
                        (q > 0.0 && per > 0.0).then(|| {
                            (
                                q / per,
                                format!("cgroup v1 {}", self.show(&dir.join("cpu.cfs_quota_us"))),
                            )
                        })
                    })
            });
        let usable = match &quota {
            Some((q, _)) => affinity.min((q.floor() as usize).max(1)),
            None => affinity,
        }
        .max(1);
        Cores {
            affinity,
            quota: quota.as_ref().map(|q| q.0),
            quota_source: quota.map(|q| q.1),
            usable,
        }
    }
}

/// Compute threads started per usable core at most (at least [`MIN_THREAD_CAP`]):
/// more only queue for a core, and a million of them take minutes to start.
pub const THREADS_PER_CORE: usize = 8;
/// The compute-thread cap on a small machine (a 1-core container may still ask for
/// a few dozen).
pub const MIN_THREAD_CAP: usize = 64;
/// Threads that only wait on reads at most (a bucket store wants many requests in
/// flight; thousands only exhaust sockets and stacks).
pub const MAX_IO_THREADS: usize = 1024;

/// Checks a thread count a user gave: `what` names the flag or argument, `n` the
/// count; `io`: threads that only wait on reads ([`MAX_IO_THREADS`]), else compute
/// threads ([`THREADS_PER_CORE`] × the usable cores, at least [`MIN_THREAD_CAP`]).
/// 0 and counts above the cap are refused with a message saying the cap.
pub fn check_threads(what: &str, n: usize, io: bool) -> Result<usize, String> {
    let usable = Host::system().cores().usable;
    let (max, why) = if io {
        (MAX_IO_THREADS, "threads that wait on reads".to_string())
    } else {
        (
            (THREADS_PER_CORE * usable).max(MIN_THREAD_CAP),
            format!(
                "{THREADS_PER_CORE} per usable core, {usable} usable, at least {MIN_THREAD_CAP}"
            ),
        )
    };
    if n == 0 {
        return Err(format!("{what} 0: give at least 1 thread"));
    }
    if n > max {
        return Err(format!(
            "{what} {n}: more threads than svar2 starts ({max}: {why}); give at most {max}"
        ));
    }
    Ok(n)
}

/// Refuses an allocation of `bytes` that this process could never hold (above its
/// memory limit: the cgroup's, else the host's), before it is made: a count from a
/// caller (`random_patches(2**40)`) fails with `what` named instead of aborting the
/// process on allocation failure.
pub fn check_affordable(bytes: u64, what: impl FnOnce() -> String) -> Result<(), String> {
    static LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let limit = LIMIT.get_or_init(|| Host::system().memory_limit().map(|m| m.bytes));
    // Without a known limit, the address space is the bound (isize::MAX for a Vec).
    let limit = limit.unwrap_or(isize::MAX as u64);
    if bytes > limit {
        return Err(format!(
            "{}: {} needed, more than this machine's memory ({}); ask for less at a time",
            what(),
            human(bytes),
            human(limit)
        ));
    }
    Ok(())
}

/// The memory budget `--max-mem` asks for, and where it came from. `auto` is
/// [`AUTO_FRACTION`] of the cgroup (else host) limit; a figure above that limit would
/// be a promise the kernel breaks with an OOM kill, so it is capped the same way (and
/// a warning says so). Errors when `auto` finds no limit.
pub fn resolve_budget(
    max_mem: MaxMem,
    limit: Option<&MemoryLimit>,
) -> Result<(u64, String), String> {
    let resolved = budget_of(max_mem, limit)?;
    if let (MaxMem::Bytes(b), Some(m)) = (max_mem, limit) {
        if b > m.bytes {
            tracing::warn!(
                "--max-mem {} is above the memory limit of {} ({}); planning for {}",
                human(b),
                human(m.bytes),
                m.source,
                human(resolved.0)
            );
        }
    }
    Ok(resolved)
}

/// [`resolve_budget`] without its warning: the one rule, for a caller that only bounds
/// what reading may take before the plan is made (and warns through the plan).
pub fn budget_of(max_mem: MaxMem, limit: Option<&MemoryLimit>) -> Result<(u64, String), String> {
    match (max_mem, limit) {
        (MaxMem::Bytes(b), Some(m)) if b > m.bytes => {
            let capped = (m.bytes as f64 * AUTO_FRACTION) as u64;
            Ok((
                capped,
                format!(
                    "--max-mem {} capped: {AUTO_FRACTION} x the {} limit from {}",
                    human(b),
                    human(m.bytes),
                    m.source
                ),
            ))
        }
        (MaxMem::Bytes(b), _) => Ok((b, "--max-mem".to_string())),
        (MaxMem::Auto, Some(m)) => Ok((
            (m.bytes as f64 * AUTO_FRACTION) as u64,
            format!(
                "auto: {AUTO_FRACTION} x {} from {}",
                human(m.bytes),
                m.source
            ),
        )),
        (MaxMem::Auto, None) => {
            Err("cannot determine this machine's memory; pass --max-mem (e.g. 8GiB)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let f = d.path().join(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, text).unwrap();
        }
        d
    }

    const MEMINFO: &str = "MemTotal:       263846812 kB\nMemFree: 1 kB\n";

    #[test]
    fn v2_ancestor_tighter_than_leaf_wins() {
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "0::/slurm/uid_1/job_7/step_0\n"),
            ("sys/fs/cgroup/slurm/memory.max", "max\n"),
            (
                "sys/fs/cgroup/slurm/uid_1/job_7/memory.max",
                "68719476736\n",
            ),
            ("sys/fs/cgroup/slurm/uid_1/job_7/step_0/memory.max", "max\n"),
        ]);
        let m = Host::at(d.path()).memory_limit().unwrap();
        assert_eq!(m.bytes, 64 << 30);
        assert!(m.source.contains("job_7/memory.max"), "{}", m.source);
    }

    #[test]
    fn v2_leaf_tighter_than_ancestor() {
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "0::/a/b\n"),
            ("sys/fs/cgroup/a/memory.max", "8589934592\n"),
            ("sys/fs/cgroup/a/b/memory.max", "1073741824\n"),
        ]);
        assert_eq!(Host::at(d.path()).memory_limit().unwrap().bytes, 1 << 30);
    }

    #[test]
    fn v2_max_everywhere_falls_back_to_host() {
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "0::/user.slice\n"),
            ("sys/fs/cgroup/user.slice/memory.max", "max\n"),
        ]);
        let m = Host::at(d.path()).memory_limit().unwrap();
        assert_eq!(m.bytes, 263846812 * 1024);
        assert!(m.source.contains("host memory"));
    }

    #[test]
    fn v1_sentinel_is_no_limit_and_real_value_wins() {
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "12:memory:/job\n11:cpu,cpuacct:/job\n"),
            (
                "sys/fs/cgroup/memory/job/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let m = Host::at(d.path()).memory_limit().unwrap();
        assert!(m.source.contains("host memory"), "{}", m.source);
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "12:memory:/job\n"),
            (
                "sys/fs/cgroup/memory/job/memory.limit_in_bytes",
                "4294967296\n",
            ),
        ]);
        let m = Host::at(d.path()).memory_limit().unwrap();
        assert_eq!(m.bytes, 4 << 30);
        assert!(m.source.starts_with("cgroup v1"));
    }

    #[test]
    fn no_cgroup_uses_host_and_cgroup_beats_host() {
        let d = tree(&[("proc/meminfo", MEMINFO)]);
        let m = Host::at(d.path()).memory_limit().unwrap();
        assert_eq!(m.bytes, 263846812 * 1024);
        // A container: our cgroup path is not visible, the namespace root is.
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "0::/\n"),
            ("sys/fs/cgroup/memory.max", "2147483648\n"),
        ]);
        let m = Host::at(d.path()).memory_limit().unwrap();
        assert_eq!(m.bytes, 2 << 30);
    }

    #[test]
    fn allocations_beyond_memory_are_refused() {
        assert!(check_affordable(1 << 20, || "x".into()).is_ok());
        let e = check_affordable(u64::MAX, || "2^40 patches".into()).unwrap_err();
        assert!(e.starts_with("2^40 patches: "), "{e}");
    }

    #[test]
    fn thread_counts_are_bounded() {
        assert_eq!(check_threads("--threads", 4, false), Ok(4));
        assert_eq!(check_threads("--io-threads", 1024, true), Ok(1024));
        for (n, io) in [(0, false), (1 << 20, false), (1025, true), (0, true)] {
            let e = check_threads("--threads", n, io).unwrap_err();
            assert!(e.starts_with(&format!("--threads {n}")), "{e}");
        }
    }

    #[test]
    fn cores_from_affinity_and_quota() {
        let d = tree(&[
            ("proc/self/status", "Name: x\nCpus_allowed_list:\t0-7,16\n"),
            ("proc/self/cgroup", "0::/job\n"),
            ("sys/fs/cgroup/job/cpu.max", "250000 100000\n"),
        ]);
        let c = Host::at(d.path()).cores();
        assert_eq!(c.affinity, 9);
        assert_eq!(c.quota, Some(2.5));
        assert_eq!(c.usable, 2);
        let d = tree(&[
            ("proc/self/status", "Cpus_allowed_list:\t0-3\n"),
            ("proc/self/cgroup", "0::/job\n"),
            ("sys/fs/cgroup/job/cpu.max", "max 100000\n"),
        ]);
        assert_eq!(Host::at(d.path()).cores().usable, 4);
    }
}
