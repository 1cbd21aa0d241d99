//! A store in a local directory: keys are relative paths, every object a file.

use crate::error::{Error, Result};
use crate::Storage;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Whether `kind` is something a store may hold but never reads as an object (a
/// directory) or must refuse (a FIFO, socket or device: opening a FIFO blocks until
/// a writer comes, so one in place of a shard would hang every reader).
fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_file() || kind.is_dir() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// The error for a store path that is not a regular file.
fn not_regular_err(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file: a store holds only files and directories; remove it"),
    )
}

/// Opens the store file `path` for reading, only if it is a regular file (checked
/// before the open, which would block on a FIFO, and again on the open file): the
/// one way every local store read opens a file.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let kind = std::fs::metadata(path)?.file_type();
    if let Some(what) = not_regular(kind) {
        return Err(not_regular_err(what));
    }
    let f = std::fs::File::open(path)?;
    let kind = f.metadata()?.file_type();
    if let Some(what) = not_regular(kind) {
        return Err(not_regular_err(what));
    }
    Ok(f)
}

/// A store in a local directory: keys are relative paths.
#[derive(Debug)]
pub struct LocalDir {
    pub root: PathBuf,
}

impl Storage for LocalDir {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let p = self.name(key);
        let read = open_regular(&p).and_then(|mut f| {
            let len = f.metadata()?.len();
            let mut b = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            std::io::Read::read_to_end(&mut f, &mut b).map(|_| b)
        });
        match read {
            Ok(b) => Ok(Some(b)),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) || p.is_dir() =>
            {
                Ok(None)
            }
            Err(e) => Err(Error::io(p, e)),
        }
    }

    fn get_range(&self, key: &str, at: u64, len: u64) -> Result<Vec<u8>> {
        let p = self.name(key);
        let f = open_regular(&p).map_err(|e| Error::io(&p, e))?;
        let mut out = vec![0u8; len as usize];
        f.read_exact_at(&mut out, at)
            .map_err(|e| Error::io(&p, e))?;
        Ok(out)
    }

    fn get_tail(&self, key: &str, n: u64) -> Result<Option<(Vec<u8>, u64)>> {
        let p = self.name(key);
        let f = match open_regular(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&p, e)),
        };
        let size = f.metadata().map_err(|e| Error::io(&p, e))?.len();
        let mut out = vec![0u8; n.min(size) as usize];
        let at = size - out.len() as u64;
        f.read_exact_at(&mut out, at)
            .map_err(|e| Error::io(&p, e))?;
        Ok(Some((out, size)))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        let p = self.name(key);
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(m) => match not_regular(m.file_type()) {
                Some(what) => Err(Error::io(p, not_regular_err(what))),
                None => Ok(None),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(p, e)),
        }
    }

    fn list(&self, under: &str) -> Result<Vec<(String, u64)>> {
        use std::os::unix::fs::MetadataExt;
        let mut out = Vec::new();
        let mut stack = vec![self.name(under)];
        // Folders by device and inode: one reached again through a link is a cycle.
        let mut seen = std::collections::HashSet::new();
        while let Some(d) = stack.pop() {
            if let Ok(m) = std::fs::metadata(&d) {
                if !seen.insert((m.dev(), m.ino())) {
                    continue;
                }
            }
            let rd = match std::fs::read_dir(&d) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&d, e)),
            };
            for e in rd {
                let e = e.map_err(|x| Error::io(&d, x))?;
                let p = e.path();
                let t = e.file_type().map_err(|x| Error::io(&p, x))?;
                // A symlink counts as what it points to (a dangling one as nothing):
                // git-annex, DataLad and `cp -rs` keep a store's files as links.
                let kind = match t.is_symlink() {
                    true => std::fs::metadata(&p).map(|m| m.file_type()).ok(),
                    false => Some(t),
                };
                if let Some(what) = kind.and_then(not_regular) {
                    return Err(Error::io(&p, not_regular_err(what)));
                }
                let Some(kind) = kind else { continue };
                if kind.is_dir() {
                    stack.push(p);
                } else if kind.is_file() {
                    let size = std::fs::metadata(&p).map_err(|x| Error::io(&p, x))?.len();
                    let rel = p
                        .strip_prefix(&self.root)
                        .expect("under root")
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    out.push((rel, size));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn name(&self, key: &str) -> PathBuf {
        if key.is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        }
    }

    fn local_root(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let p = self.name(key);
        let tmp = self.aside(&p, &bytes)?;
        fs::rename(&tmp, &p).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io(&p, e)
        })
    }

    fn put_if_absent(&self, key: &str, bytes: Vec<u8>) -> Result<bool> {
        let p = self.name(key);
        let tmp = self.aside(&p, &bytes)?;
        // A hard link fails where a file already is: the file system picks one winner,
        // and the object appears whole.
        let linked = fs::hard_link(&tmp, &p);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(&p, e)),
        }
    }

    fn put_file(&self, key: &str, file: &Path) -> Result<()> {
        let p = self.name(key);
        if p == file {
            return Ok(());
        }
        make_parent(&p)?;
        fs::copy(file, &p).map(|_| ()).map_err(|e| Error::io(&p, e))
    }

    fn delete(&self, key: &str) -> Result<()> {
        let p = self.name(key);
        match fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&p, e)),
            _ => Ok(()),
        }
    }

    fn delete_under(&self, under: &str) -> Result<()> {
        // Entries only, never the root itself (a lock may be held on its inode); a
        // symbolic link is unlinked, never followed.
        let d = self.name(under);
        let entries = match fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(&d, e)),
        };
        for e in entries {
            let e = e.map_err(|x| Error::io(&d, x))?;
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
}

/// Creates the directory `path` goes in.
fn make_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent).map_err(|e| Error::io(parent, e)),
        None => Ok(()),
    }
}

impl LocalDir {
    /// Writes `bytes` beside `path` under a name no reader asks for (this process's
    /// and this write's, so two writers never share one), to be moved or linked into place.
    fn aside(&self, path: &Path, bytes: &[u8]) -> Result<PathBuf> {
        make_parent(path)?;
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        name.push(format!(".svar2-tmp-{}-{n}", std::process::id()));
        let tmp = path.with_file_name(name);
        fs::write(&tmp, bytes).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io(&tmp, e)
        })?;
        Ok(tmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files kept as links (git-annex, `cp -rs`) are listed with the size of what they
    /// point to; a folder linked back into itself is listed once.
    #[test]
    fn links_count_as_what_they_point_to_and_a_cycle_ends() {
        let dir = std::env::temp_dir().join(format!("svar2-local-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (store, annex) = (dir.join("s"), dir.join("annex"));
        std::fs::create_dir_all(store.join("a/c")).unwrap();
        std::fs::create_dir_all(&annex).unwrap();
        std::fs::write(annex.join("blob"), b"12345").unwrap();
        std::os::unix::fs::symlink(annex.join("blob"), store.join("a/c/0")).unwrap();
        std::fs::write(store.join("a/zarr.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(&store, store.join("a/loop")).unwrap();
        std::os::unix::fs::symlink(dir.join("gone"), store.join("a/dangling")).unwrap();
        let listed = LocalDir {
            root: store.clone(),
        }
        .list("")
        .unwrap();
        assert_eq!(
            listed,
            vec![("a/c/0".to_string(), 5), ("a/zarr.json".to_string(), 2)]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
