//! Where a partitioned conversion's processes meet. A local output is the meeting
//! place itself: every node sees the directory, a partition's claim is a file lock,
//! its work and completion record are files under [`WORK_DIR`].
//!
//! An `s3://` output has no shared file system and no locks, so each process
//! converts into a local staging directory of its own and the bucket carries the
//! rest: the job's in-progress marker (put once, conditionally), each partition's
//! claim (a conditional PUT kept alive by a heartbeat: a lease), the cut counts, and
//! what a partition made — its shards and its work, uploaded when it is done, its
//! completion record last. `finalize` downloads the work and the shards it re-lays,
//! finishes the store locally and uploads it, root `zarr.json` last.

use super::records::{host_name, remove_if_present, WORK_DIR};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use svar2_storage::Storage;
use svar2_store::dir::StoreDir;

/// A claim not heard from for this long is taken over: its task died on another
/// node (on the same node, a claim whose process is gone is taken over at once).
pub const LEASE: Duration = Duration::from_secs(60);
/// How often a running task renews its claim.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// The output of a partitioned conversion, as its processes share it.
pub(super) enum Space {
    /// A directory every node sees.
    Dir(PathBuf),
    /// A bucket store; each process stages locally.
    Bucket {
        url: PathBuf,
        bucket: Arc<dyn Storage>,
    },
}

/// Who holds a partition, for `finalize`.
pub(super) enum Holder {
    /// A task is converting it (who, in words).
    Running(String),
    /// A task started it and did not end (killed, or its node died).
    Left,
    /// No task started it, or the last one ended.
    Nobody,
}

/// A partition's claim, held while its task runs.
pub(super) enum Claim {
    /// The lock of `<WORK_DIR>/<K>.lock` in a shared directory.
    Lock(#[allow(dead_code)] std::fs::File),
    Lease(Lease),
}

/// What a bucket claim object holds.
#[derive(Debug, Serialize, Deserialize)]
struct ClaimRecord {
    pid: u32,
    host: String,
    /// Seconds since the epoch of the last heartbeat.
    beat: u64,
    /// The task ended (done or failed): anyone may claim the partition again.
    released: bool,
}

impl ClaimRecord {
    fn mine() -> ClaimRecord {
        ClaimRecord {
            pid: std::process::id(),
            host: host_name(),
            beat: now(),
            released: false,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("claims serialise")
    }

    /// Its task is gone: it released the claim, its process is not running on this
    /// node, or it has not renewed the claim for a [`LEASE`].
    fn stale(&self) -> bool {
        if self.released {
            return true;
        }
        if self.host == host_name() {
            return !Path::new(&format!("/proc/{}", self.pid)).exists();
        }
        now().saturating_sub(self.beat) > LEASE.as_secs()
    }

    fn who(&self) -> String {
        format!(
            "pid {} on {}, heard from {} s ago",
            self.pid,
            self.host,
            now().saturating_sub(self.beat)
        )
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A bucket claim: `<WORK_DIR>/claims/<K>.<N>`, the N-th attempt at partition K, put
/// only if absent (so of two tasks racing for one attempt one wins), renewed by a
/// heartbeat thread and released on drop. Taking over a stale claim puts attempt
/// N + 1, never overwrites N: a task that was only slow finds it lost its claim
/// before it publishes.
pub(super) struct Lease {
    bucket: Arc<dyn Storage>,
    key: String,
    stop: Arc<AtomicBool>,
    beat: Option<std::thread::JoinHandle<()>>,
}

impl Lease {
    /// Whether this is still the partition's latest claim (checked before the task
    /// publishes its completion record).
    fn check(&self, k: usize) -> Result<()> {
        match latest_claim(&*self.bucket, k)? {
            Some((key, _, _)) if key == self.key => Ok(()),
            other => Err(Error::Usage(format!(
                "partition {k}: another task took it over while this one ran ({}): this \
                 one stops without publishing",
                other.map_or("its claim is gone".into(), |(_, _, c)| c.who())
            ))),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.beat.take() {
            let _ = t.join();
        }
        let mut done = ClaimRecord::mine();
        done.released = true;
        if let Err(e) = self.bucket.put(&self.key, done.bytes()) {
            tracing::warn!("could not release the claim: {e}");
        }
    }
}

fn claim_prefix() -> String {
    format!("{WORK_DIR}/claims")
}

/// Partition `k`'s latest claim: (key, attempt, record); a claim that is not JSON
/// reads as stale.
fn latest_claim(bucket: &dyn Storage, k: usize) -> Result<Option<(String, u64, ClaimRecord)>> {
    let mine = format!("{}/{k}.", claim_prefix());
    let latest = bucket
        .list(&claim_prefix())?
        .into_iter()
        .filter_map(|(key, _)| {
            let n = key.strip_prefix(&mine)?.parse::<u64>().ok()?;
            Some((key, n))
        })
        .max_by_key(|&(_, n)| n);
    let Some((key, n)) = latest else {
        return Ok(None);
    };
    let record = bucket
        .get(&key)?
        .and_then(|b| serde_json::from_slice::<ClaimRecord>(&b).ok())
        .unwrap_or(ClaimRecord {
            pid: 0,
            host: String::new(),
            beat: 0,
            released: true,
        });
    Ok(Some((key, n, record)))
}

impl Space {
    pub(super) fn of(output: &Path) -> Result<Space> {
        if svar2_storage::bucket::is_bucket_url(output) {
            return Ok(Space::Bucket {
                url: output.to_path_buf(),
                bucket: svar2_storage::open(output)?,
            });
        }
        Ok(Space::Dir(output.to_path_buf()))
    }

    /// Whether the output is a complete store: its root `zarr.json` is written last.
    pub(super) fn is_complete(&self) -> Result<bool> {
        Ok(match self {
            Space::Dir(out) => out.join("zarr.json").is_file(),
            Space::Bucket { bucket, .. } => bucket.size("zarr.json")?.is_some(),
        })
    }

    /// A bucket process's staging directory (`who`: the partition or finalize),
    /// emptied.
    fn staging(url: &Path, job: &str, who: &str) -> Result<PathBuf> {
        let staging = svar2_store::dir::staging_dir(url);
        let root = PathBuf::from(format!(
            "{}-partitions-{}-{who}",
            staging.display(),
            &job[..16.min(job.len())]
        ));
        remove_if_present(&root)?;
        Ok(root)
    }

    /// Joins the job (`job` names the plan) as partition `k`'s task and claims the
    /// partition; returns the store it writes (the output itself, or its own staging
    /// directory for a bucket — taken only once the claim is, so a second task on
    /// this node never empties the first's).
    pub(super) fn open_partition(&self, job: &str, k: usize) -> Result<(StoreDir, Claim)> {
        match self {
            Space::Dir(out) => {
                let store = StoreDir::join(out, job)?;
                Ok((store, self.claim(k)?))
            }
            Space::Bucket { url, .. } => {
                svar2_store::dir::join_bucket(url, job)?;
                let claim = self.claim(k)?;
                let root = Self::staging(url, job, &format!("partition-{k}"))?;
                Ok((StoreDir::join(&root, job)?, claim))
            }
        }
    }

    /// Joins the job as its `finalize`; returns the store it writes (the output, or
    /// a staging directory for a bucket).
    pub(super) fn open_finalize(&self, job: &str) -> Result<StoreDir> {
        match self {
            Space::Dir(out) => Ok(StoreDir::join(out, job)?),
            Space::Bucket { url, .. } => {
                svar2_store::dir::join_bucket(url, job)?;
                let root = Self::staging(url, job, "finalize")?;
                Ok(StoreDir::join(&root, job)?)
            }
        }
    }

    /// Removes a bucket process's staging directory once its work is uploaded.
    pub(super) fn drop_staging(&self, root: &Path) {
        if let Space::Bucket { .. } = self {
            let _ = remove_if_present(root);
        }
    }

    fn work_file(out: &Path, key: &str) -> PathBuf {
        out.join(WORK_DIR).join(key)
    }

    /// A small work object (`counts/…`, `<K>.json`, `<K>.failed`).
    pub(super) fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match self {
            Space::Dir(out) => {
                let p = Self::work_file(out, key);
                match std::fs::read(&p) {
                    Ok(b) => Ok(Some(b)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(Error::io(&p, e)),
                }
            }
            Space::Bucket { bucket, .. } => Ok(bucket.get(&format!("{WORK_DIR}/{key}"))?),
        }
    }

    /// Writes a small work object whole (aside, then renamed, in a directory).
    pub(super) fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        match self {
            Space::Dir(out) => {
                let p = Self::work_file(out, key);
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                let tmp = p.with_file_name(format!(
                    ".{}.{}",
                    p.file_name().unwrap_or_default().to_string_lossy(),
                    std::process::id()
                ));
                std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
                std::fs::rename(&tmp, &p).map_err(|e| Error::io(&p, e))
            }
            Space::Bucket { bucket, .. } => {
                Ok(bucket.put(&format!("{WORK_DIR}/{key}"), bytes.to_vec())?)
            }
        }
    }

    /// Removes a work object or a partition's work directory (`<K>`).
    pub(super) fn remove(&self, key: &str) -> Result<()> {
        match self {
            Space::Dir(out) => remove_if_present(&Self::work_file(out, key)),
            Space::Bucket { bucket, .. } => {
                let key = format!("{WORK_DIR}/{key}");
                bucket.delete(&key)?;
                Ok(bucket.delete_under(&key)?)
            }
        }
    }

    /// Claims partition `k` for this task, or refuses naming the task that holds it.
    fn claim(&self, k: usize) -> Result<Claim> {
        let busy = |who: String| {
            Error::Usage(format!(
                "partition {k} is being converted by another task ({}): one task per \
                 partition",
                who.trim()
            ))
        };
        let bucket = match self {
            Space::Dir(out) => {
                let work = out.join(WORK_DIR);
                std::fs::create_dir_all(&work).map_err(|e| Error::io(&work, e))?;
                return lock_partition(&work, k)
                    .map(Claim::Lock)
                    .map_err(|e| match e {
                        LockError::Held(who) => busy(who),
                        LockError::Other(e) => e,
                    });
            }
            Space::Bucket { bucket, .. } => bucket,
        };
        let attempt = match latest_claim(&**bucket, k)? {
            None => 0,
            Some((_, n, c)) if c.stale() => {
                if !c.released {
                    tracing::warn!("partition {k}: taking over from a task gone ({})", c.who());
                }
                n + 1
            }
            Some((_, _, c)) => {
                return Err(busy(format!(
                    "{}; a task that died is taken over once not heard from for {} s",
                    c.who(),
                    LEASE.as_secs()
                )))
            }
        };
        let key = format!("{}/{k}.{attempt}", claim_prefix());
        if !bucket.put_if_absent(&key, ClaimRecord::mine().bytes())? {
            let who = latest_claim(&**bucket, k)?.map_or(String::new(), |(_, _, c)| c.who());
            return Err(busy(who));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let beat = {
            let (bucket, key, stop) = (bucket.clone(), key.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("claim-{k}"))
                .spawn(move || {
                    let step = Duration::from_millis(200);
                    let mut waited = Duration::ZERO;
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(step);
                        waited += step;
                        if waited >= HEARTBEAT {
                            waited = Duration::ZERO;
                            if let Err(e) = bucket.put(&key, ClaimRecord::mine().bytes()) {
                                tracing::warn!("could not renew the claim: {e}");
                            }
                        }
                    }
                })
                .map_err(|e| {
                    Error::Usage(format!("cannot start the claim's heartbeat thread: {e}"))
                })?
        };
        Ok(Claim::Lease(Lease {
            bucket: bucket.clone(),
            key,
            stop,
            beat: Some(beat),
        }))
    }

    /// Who holds partition `k` now.
    pub(super) fn holder(&self, k: usize) -> Result<Holder> {
        match self {
            Space::Dir(out) => {
                let lock = out.join(WORK_DIR).join(format!("{k}.lock"));
                if let Ok(f) = std::fs::File::open(&lock) {
                    if let Err(std::fs::TryLockError::WouldBlock) = f.try_lock_shared() {
                        return Ok(Holder::Running(
                            std::fs::read_to_string(&lock).unwrap_or_default(),
                        ));
                    }
                    return Ok(Holder::Left);
                }
                Ok(Holder::Nobody)
            }
            Space::Bucket { bucket, .. } => Ok(match latest_claim(&**bucket, k)? {
                Some((_, _, c)) if !c.stale() => Holder::Running(c.who()),
                Some((_, _, c)) if !c.released => Holder::Left,
                _ => Holder::Nobody,
            }),
        }
    }

    /// Publishes a partition's work (bucket): the shard `files` it wrote under
    /// `root` and its work directory, then — if its claim still holds — its
    /// completion record, last. In a shared directory they are in place already and
    /// only the record is written.
    pub(super) fn publish(
        &self,
        root: &Path,
        files: &[(String, u64)],
        k: usize,
        claim: &Claim,
        record: &[u8],
    ) -> Result<()> {
        if let Space::Bucket { bucket, .. } = self {
            let own = root.join(WORK_DIR).join(k.to_string());
            let local = svar2_storage::LocalDir { root: own };
            let mut keys: Vec<String> = files.iter().map(|(f, _)| f.clone()).collect();
            keys.extend(
                svar2_storage::Storage::list(&local, "")?
                    .into_iter()
                    .map(|(key, _)| format!("{WORK_DIR}/{k}/{key}")),
            );
            tracing::info!(objects = keys.len(), "uploading partition {k}");
            bucket.put_files(root, &keys)?;
            if let Claim::Lease(lease) = claim {
                lease.check(k)?;
            }
        }
        self.put(&format!("{k}.json"), record)
    }

    /// The sizes of the store's objects named by `keys` (`None`: missing).
    pub(super) fn sizes(&self, keys: &[&str]) -> Result<Vec<Option<u64>>> {
        match self {
            Space::Dir(out) => Ok(keys
                .iter()
                .map(|k| std::fs::metadata(out.join(k)).map(|m| m.len()).ok())
                .collect()),
            Space::Bucket { bucket, .. } => {
                let all: std::collections::HashMap<String, u64> =
                    bucket.list("")?.into_iter().collect();
                Ok(keys.iter().map(|k| all.get(*k).copied()).collect())
            }
        }
    }

    /// Brings the store objects `keys` (those that exist) into `root`; nothing to do
    /// in a shared directory. Returns the keys brought.
    pub(super) fn fetch(&self, root: &Path, keys: &[String]) -> Result<Vec<String>> {
        let Space::Bucket { bucket, .. } = self else {
            return Ok(Vec::new());
        };
        let present: Vec<String> = self
            .sizes(&keys.iter().map(String::as_str).collect::<Vec<_>>())?
            .into_iter()
            .zip(keys)
            .filter_map(|(size, key)| size.map(|_| key.clone()))
            .collect();
        bucket.get_files(&present, root)?;
        Ok(present)
    }

    /// Brings partitions' work directories (`<WORK_DIR>/<K>/…`) into `root`.
    pub(super) fn fetch_work(&self, root: &Path, partitions: &[usize]) -> Result<()> {
        let Space::Bucket { bucket, .. } = self else {
            return Ok(());
        };
        let mut keys = Vec::new();
        for k in partitions {
            let under = format!("{WORK_DIR}/{k}");
            keys.extend(bucket.list(&under)?.into_iter().map(|(key, _)| key));
        }
        Ok(bucket.get_files(&keys, root)?)
    }

    /// Uploads the store `finalize` finished in `root` (bucket): every file but the
    /// work and the root `zarr.json`; then removes the objects in `gone` (shards
    /// re-laid under another key); then the root `zarr.json`, last; then the work
    /// and the in-progress marker.
    pub(super) fn upload_finished(&self, root: &Path, gone: &[String]) -> Result<()> {
        let Space::Bucket { bucket, .. } = self else {
            return Ok(());
        };
        let local = svar2_storage::LocalDir {
            root: root.to_path_buf(),
        };
        let keys: Vec<String> = svar2_storage::Storage::list(&local, "")?
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| {
                k != "zarr.json"
                    && k != svar2_store::dir::IN_PROGRESS
                    && !k.starts_with(&format!("{WORK_DIR}/"))
            })
            .collect();
        tracing::info!(objects = keys.len(), "uploading the finished store");
        bucket.put_files(root, &keys)?;
        for key in gone {
            bucket.delete(key)?;
        }
        bucket.put_files(root, &["zarr.json".to_string()])?;
        self.clean_up()
    }

    /// Removes the work and the in-progress marker of a complete store (what a
    /// finalize stopped after its root was written left).
    pub(super) fn clean_up(&self) -> Result<()> {
        match self {
            Space::Dir(out) => {
                remove_if_present(&out.join(WORK_DIR))?;
                remove_if_present(&out.join(svar2_store::dir::IN_PROGRESS))
            }
            Space::Bucket { bucket, .. } => {
                bucket.delete_under(WORK_DIR)?;
                Ok(bucket.delete(svar2_store::dir::IN_PROGRESS)?)
            }
        }
    }

    /// Bytes and objects of the store.
    pub(super) fn usage(&self) -> (u64, u64) {
        match self {
            Space::Dir(out) => svar2_store::dir::disk_usage(out),
            Space::Bucket { url, .. } => svar2_store::dir::disk_usage(url),
        }
    }
}

enum LockError {
    Held(String),
    Other(Error),
}

/// Takes partition `k`'s lock file in a shared work directory (held while the task
/// runs), writing who holds it into it.
fn lock_partition(work: &Path, k: usize) -> std::result::Result<std::fs::File, LockError> {
    use std::io::{Seek, Write};
    let path = work.join(format!("{k}.lock"));
    let other = |e| LockError::Other(Error::io(&path, e));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(other)?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(LockError::Held(
                std::fs::read_to_string(&path).unwrap_or_default(),
            ))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(other(e)),
    }
    let me = format!("pid {} on {}", std::process::id(), host_name());
    f.set_len(0)
        .and_then(|()| f.rewind())
        .and_then(|()| f.write_all(me.as_bytes()))
        .map_err(other)?;
    Ok(f)
}
