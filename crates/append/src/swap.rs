//! The one step that makes a new version current: the two directories exchanged by
//! `renameat2(RENAME_EXCHANGE)`, atomic on Linux's local file systems, so the store's
//! path never names a half store or nothing; the new version's files on disk before
//! it, and the exchange itself after, so a power cut cannot leave the store's path
//! naming files whose data never reached the disk (the old version is removed next).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Exchanges the directories `a` and `b` (same file system): `a` then holds what `b`
/// held, and the other way round. Where the file system cannot exchange (no
/// RENAME_EXCHANGE), it is refused with the reason: two renames would leave a moment
/// with no store at `a`.
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    sync_tree(b)?;
    let ca = CString::new(a.as_os_str().as_bytes())?;
    let cb = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated strings alive for the call; AT_FDCWD
    // resolves them as given.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        // The exchange is a change to the parent directory: on disk before the old
        // version (now at `b`) is removed.
        let parent = a.parent().filter(|p| !p.as_os_str().is_empty());
        return std::fs::File::open(parent.unwrap_or(Path::new("."))).and_then(|d| d.sync_all());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => {
            Err(std::io::Error::other(format!(
                "this file system cannot exchange two directories atomically ({e}); the new \
                 version is left in {} (move it into place yourself, or append on a local \
                 file system)",
                b.display()
            )))
        }
        _ => Err(e),
    }
}

/// Writes the files and directories under `dir` to disk (`fsync` each, on the rayon
/// pool: their journal commits overlap), links not followed. Only the new version's
/// own files (8 threads: they wait on the disk, not the cores): `syncfs` would also wait for whatever else the file system holds
/// unwritten (a shared node's other jobs).
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    use rayon::prelude::*;
    let mut paths = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < paths.len() {
        if std::fs::symlink_metadata(&paths[i])?.is_dir() {
            for e in std::fs::read_dir(&paths[i])? {
                let e = e?;
                if !e.file_type()?.is_symlink() {
                    paths.push(e.path());
                }
            }
        }
        i += 1;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(8)
        .thread_name(|i| format!("sync-{i}"))
        .build()
        .map_err(std::io::Error::other)?;
    pool.install(|| {
        paths
            .par_iter()
            .try_for_each(|p| std::fs::File::open(p).and_then(|f| f.sync_all()))
    })
}
