//! The output directory: where files go, the completion marker (root `zarr.json`,
//! written last) and the digest that proves two stores are the same.

use crate::error::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};

/// A store being written.
pub struct StoreDir {
    pub root: PathBuf,
}

impl StoreDir {
    /// Creates the output directory; refuses an existing path unless `force`.
    pub fn create(root: &Path, force: bool) -> Result<StoreDir> {
        if root.exists() {
            if !force {
                return Err(Error::OutputExists { path: root.into() });
            }
            let r = if root.is_dir() {
                fs::remove_dir_all(root)
            } else {
                fs::remove_file(root)
            };
            r.map_err(|e| Error::io(root, e))?;
        }
        fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        Ok(StoreDir { root: root.into() })
    }

    /// Path of a shard: `<array>/c/<i>/<j>...`.
    pub fn shard_path(&self, array: &str, indices: &[u64]) -> PathBuf {
        let mut p = self.root.join(array).join("c");
        for i in indices {
            p.push(i.to_string());
        }
        p
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
        let mut text = serde_json::to_string_pretty(value).expect("json");
        text.push('\n');
        self.write(&path, text.as_bytes())
    }
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
            if p.is_dir() {
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
    if !root.join("zarr.json").is_file() {
        return Err(Error::Store {
            path: root.into(),
            msg: "not a complete store (no root zarr.json): the conversion did not finish".into(),
        });
    }
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).map_err(|e| Error::io(&d, e))? {
            let e = e.map_err(|e| Error::io(&d, e))?;
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
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
