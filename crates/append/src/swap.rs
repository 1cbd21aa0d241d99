//! The one step that makes a new version current: the two directories exchanged by
//! `renameat2(RENAME_EXCHANGE)`, atomic on Linux's local file systems, so the store's
//! path never names a half store or nothing.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Exchanges the directories `a` and `b` (same file system): `a` then holds what `b`
/// held, and the other way round. Where the file system cannot exchange (no
/// RENAME_EXCHANGE), it is refused with the reason: two renames would leave a moment
/// with no store at `a`.
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
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
        return Ok(());
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
