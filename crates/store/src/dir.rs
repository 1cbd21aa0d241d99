//! The store directory: what may be replaced (and what never), the lock held while
//! writing, the in-progress marker, the completion marker (root `zarr.json`, written
//! last), and the digest that proves two stores are the same.

use crate::error::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};

/// Marks a directory as an svar2 store being written; removed once the root
/// `zarr.json` is in place. An output holding it is an interrupted conversion.
pub const IN_PROGRESS: &str = ".svar2-in-progress";

/// A store being written.
pub struct StoreDir {
    pub root: PathBuf,
    /// An exclusive lock on the directory itself, held while writing: a second
    /// conversion into the same output refuses instead of interleaving files. (The
    /// directory is emptied, never replaced, so the lock stays on the one inode.)
    _lock: Option<fs::File>,
    /// Set once the root `zarr.json` is in place; until then dropping the store (an
    /// error or a panic) removes the partial output. A killed process leaves it, marked
    /// by [`IN_PROGRESS`], for the next run to start again.
    finished: std::sync::atomic::AtomicBool,
}

impl Drop for StoreDir {
    fn drop(&mut self) {
        if !self.finished.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// What an output path holds before a conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Existing {
    Empty,
    /// A finished Zarr store (root `zarr.json`, or `.zgroup`/`.zarray` of Zarr v2):
    /// replaced only with `--force`.
    Store,
    /// An svar2 conversion that was killed or failed: started again.
    Interrupted,
    /// Anything else — a user's own files, a file, a symbolic link: never removed,
    /// not even with `--force`. Says what is in the way.
    Foreign(String),
}

fn classify(root: &Path) -> Result<Existing> {
    let meta = fs::symlink_metadata(root).map_err(|e| Error::io(root, e))?;
    if meta.file_type().is_symlink() {
        return Ok(Existing::Foreign(
            "is a symbolic link (svar2 does not write through one: give the directory it \
             points to)"
                .into(),
        ));
    }
    if !meta.is_dir() {
        return Ok(Existing::Foreign("is a file, not a directory".into()));
    }
    let mut names: Vec<String> = fs::read_dir(root)
        .map_err(|e| Error::io(root, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    Ok(if names.is_empty() {
        Existing::Empty
    } else if has(IN_PROGRESS) {
        Existing::Interrupted
    } else if has("zarr.json") || has(".zgroup") || has(".zarray") {
        Existing::Store
    } else {
        names.sort();
        let shown: Vec<String> = names.iter().take(3).map(|n| format!("`{n}`")).collect();
        Existing::Foreign(format!(
            "is not a Zarr store: it holds {}{} ({} entries)",
            shown.join(", "),
            if names.len() > 3 { ", …" } else { "" },
            names.len()
        ))
    })
}

fn lock(root: &Path) -> Result<fs::File> {
    let f = fs::File::open(root).map_err(|e| Error::io(root, e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(fs::TryLockError::WouldBlock) => Err(Error::Locked { path: root.into() }),
        Err(fs::TryLockError::Error(e)) => Err(Error::io(root, e)),
    }
}

/// Refuses what `existing` forbids: a finished store without `force`, anything that is
/// not a store (or an interrupted one, or empty) always.
fn refuse(root: &Path, existing: &Existing, force: bool) -> Result<()> {
    match existing {
        Existing::Store if !force => Err(Error::OutputExists { path: root.into() }),
        Existing::Foreign(what) => Err(Error::NotStore {
            path: root.into(),
            msg: format!(
                "{what}; svar2 replaces only a Zarr store (with --force), an interrupted \
                 svar2 store or an empty directory: choose another output"
            ),
        }),
        _ => Ok(()),
    }
}

/// Refuses a URL (`s3://bucket/x.zarr`, `gs://`, `https://`) given as a path: the
/// operating system would take it for a relative folder named `s3:`, and a user
/// would believe the data went to the bucket.
pub fn refuse_url(path: &Path) -> Result<()> {
    let s = path.to_string_lossy();
    if let Some((scheme, _)) = s.split_once("://") {
        let is_scheme = scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
        if is_scheme {
            return Err(Error::Url {
                url: s.to_string(),
                scheme: scheme.to_string(),
            });
        }
    }
    Ok(())
}

/// Checks, changing nothing, that a conversion may write `root` (so a conversion
/// that cannot start fails before its plan's probe runs).
pub fn check_output(root: &Path, force: bool) -> Result<()> {
    refuse_url(root)?;
    if fs::symlink_metadata(root).is_err() {
        return Ok(());
    }
    let existing = classify(root)?;
    refuse(root, &existing, force)?;
    drop(lock(root)?);
    Ok(())
}

/// Removes a directory's entries without following symbolic links: a link is
/// unlinked, never entered.
fn empty_dir(root: &Path) -> Result<()> {
    for e in fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let e = e.map_err(|e| Error::io(root, e))?;
        let p = e.path();
        let is_dir = e.file_type().map_err(|x| Error::io(&p, x))?.is_dir();
        let r = if is_dir {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
        r.map_err(|x| Error::io(&p, x))?;
    }
    Ok(())
}

impl StoreDir {
    /// Takes the output directory for writing: created if missing, locked, emptied.
    /// A finished store or a foreign directory is replaced only with `force`; an
    /// interrupted svar2 conversion is started again from scratch (said in the log).
    pub fn create(root: &Path, force: bool) -> Result<StoreDir> {
        refuse_url(root)?;
        if fs::symlink_metadata(root).is_ok() {
            refuse(root, &classify(root)?, force)?;
        }
        fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        let lock = lock(root)?;
        // Again under the lock: another process may have written it meanwhile.
        let existing = classify(root)?;
        refuse(root, &existing, force)?;
        if existing == Existing::Interrupted {
            tracing::warn!(
                "{}: an interrupted svar2 conversion (no root zarr.json); starting it again \
                 from scratch",
                root.display()
            );
        }
        empty_dir(root)?;
        let store = StoreDir {
            root: root.into(),
            _lock: Some(lock),
            finished: std::sync::atomic::AtomicBool::new(false),
        };
        store.write(
            &root.join(IN_PROGRESS),
            format!(
                "svar2 {} pid {}\n",
                env!("CARGO_PKG_VERSION"),
                std::process::id()
            )
            .as_bytes(),
        )?;
        Ok(store)
    }

    /// Opens the output of a partitioned conversion, shared by its partitions (each
    /// a process, maybe on another machine) and `finalize`. `job` names the plan: an
    /// output that holds another job's files (an interrupted conversion, another
    /// plan's partitions) is emptied first, under the directory's lock so tasks
    /// starting together agree; a finished store or a foreign directory is refused.
    /// Other partitions' files are kept, and nothing is removed on error: a partition
    /// that fails is run again.
    pub fn join(root: &Path, job: &str) -> Result<StoreDir> {
        refuse_url(root)?;
        let marker_text = format!("svar2 {} job {job}\n", env!("CARGO_PKG_VERSION"));
        if fs::symlink_metadata(root).is_err() {
            fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        }
        // Another task may hold the lock for a moment (its own set-up); a whole
        // conversion into this output holds it throughout and is refused.
        let mut tries = 0;
        let lock = loop {
            match lock(root) {
                Err(Error::Locked { .. }) if tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                other => break other?,
            }
        };
        let existing = classify(root)?;
        refuse(root, &existing, false)?;
        let marker = root.join(IN_PROGRESS);
        let ours = fs::read_to_string(&marker).is_ok_and(|t| t == marker_text);
        if !ours {
            if existing == Existing::Interrupted {
                tracing::warn!(
                    "{}: holds an interrupted conversion of another job; starting afresh",
                    root.display()
                );
            }
            empty_dir(root)?;
            // (Written under the lock: no task reads it half-written; one cut short
            // by a crash names no job, and the next task starts afresh.)
            fs::write(&marker, &marker_text).map_err(|e| Error::io(&marker, e))?;
        }
        drop(lock);
        Ok(StoreDir {
            root: root.into(),
            _lock: None,
            // Never removed on drop: the other partitions' work is in it.
            finished: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Marks the store complete: the root `zarr.json` appears whole (written aside,
    /// then renamed) or not at all, and only after everything else.
    pub fn finish(&self, root_meta: &serde_json::Value) -> Result<()> {
        let tmp = self.root.join(".zarr.json.tmp");
        self.write(&tmp, &json_bytes(root_meta))?;
        self.rename(&tmp, &self.root.join("zarr.json"))?;
        self.finished
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let marker = self.root.join(IN_PROGRESS);
        fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))
    }

    /// Path of a shard: `<array>/c/<i>/<j>...`.
    pub fn shard_path(&self, array: &str, indices: &[u64]) -> PathBuf {
        crate::key::chunk_path(&self.root, array, indices)
    }

    /// Writes a file, creating parent directories.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        fs::write(path, bytes).map_err(|e| Error::io(path, e))
    }

    /// Moves a finished file into place, creating its directory.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        fs::rename(from, to).map_err(|e| Error::io(to, e))
    }

    /// Writes `<node>/zarr.json` (pretty, key-sorted JSON: deterministic bytes).
    pub fn write_json(&self, node: &str, value: &serde_json::Value) -> Result<()> {
        let path = if node.is_empty() {
            self.root.join("zarr.json")
        } else {
            self.root.join(node).join("zarr.json")
        };
        self.write(&path, &json_bytes(value))
    }
}

fn json_bytes(value: &serde_json::Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(value).expect("json");
    text.push('\n');
    text.into_bytes()
}

/// Total bytes and file count under a directory.
pub fn disk_usage(root: &Path) -> (u64, u64) {
    let mut bytes = 0;
    let mut files = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if let Ok(m) = e.metadata() {
                bytes += m.len();
                files += 1;
            }
        }
    }
    (bytes, files)
}

/// blake3 over every file's relative path and bytes, in sorted path order. Equal
/// digests mean byte-identical stores.
pub fn digest(root: &Path) -> Result<String> {
    if !root.exists() {
        return Err(Error::NotStore {
            path: root.into(),
            msg: "no such file or directory".into(),
        });
    }
    if !root.is_dir() {
        return Err(Error::NotStore {
            path: root.into(),
            msg: "a file, not a store directory".into(),
        });
    }
    if !root.join("zarr.json").is_file() {
        let has_arrays = fs::read_dir(root)
            .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.path().join("zarr.json").is_file())));
        let msg = if root.join(IN_PROGRESS).exists() || has_arrays {
            "not a complete store (no root zarr.json): the conversion did not finish"
        } else {
            "not a Zarr v3 store (no root zarr.json)"
        };
        return Err(Error::NotStore {
            path: root.into(),
            msg: msg.into(),
        });
    }
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).map_err(|e| Error::io(&d, e))? {
            let e = e.map_err(|e| Error::io(&d, e))?;
            let p = e.path();
            if e.file_type().map_err(|x| Error::io(&p, x))?.is_dir() {
                stack.push(p);
            } else if e.file_name() != IN_PROGRESS {
                // (The marker outlives zarr.json only if killed between the two.)
                files.push(p);
            }
        }
    }
    let mut rel: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| {
            let r = p
                .strip_prefix(root)
                .expect("under root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            (r, p)
        })
        .collect();
    rel.sort();
    let mut h = blake3::Hasher::new();
    for (r, p) in rel {
        let bytes = fs::read(&p).map_err(|e| Error::io(&p, e))?;
        h.update(&(r.len() as u64).to_le_bytes());
        h.update(r.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().to_hex().to_string())
}
