//! `svar2-storage`: where a store's objects live — a local directory, an S3 bucket
//! or a `.zip` file — behind one trait that reads, writes, lists, deletes and puts
//! conditionally (as zarrs' storage traits do), so the layout, the chunk reads, the
//! digest and every writer (a conversion's finish, the partitions' meeting place)
//! reach any of them the same way. One concept per module:
//!
//! - [`local`]: a directory, keys as relative paths;
//! - [`bucket`]: an S3 bucket (object_store behind a blocking facade);
//! - [`zip`]: a `.zip` file (`.vcz.zip`, as bio2zarr and vcztools read and write):
//!   read in place, written once, whole;
//! - [`stored`]: a chunk's stored bytes, owned or in a mapped file.

pub mod bucket;
pub mod error;
pub mod local;
pub mod stored;
pub mod zip;

pub use bucket::Bucket;
pub use error::{Error, Result};
pub use local::{open_regular, LocalDir};
pub use stored::Stored;
pub use zip::ZipStore;

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An object as bytes `at..at + len` of a mapped file ([`Storage::mapped`]).
#[derive(Clone, Debug)]
pub struct Mapped {
    pub map: Arc<memmap2::Mmap>,
    pub at: usize,
    pub len: usize,
}

/// A store's objects by key (`call_genotype/zarr.json`, `call_genotype/c/0/0/0`).
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// The whole object at `key` (`None`: there is none).
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// `len` bytes at `at` of the object at `key`.
    fn get_range(&self, key: &str, at: u64, len: u64) -> Result<Vec<u8>>;
    /// The last `n` bytes (fewer if the object is shorter) and the object's size, in
    /// one request; `None`: there is no such object.
    fn get_tail(&self, key: &str, n: u64) -> Result<Option<(Vec<u8>, u64)>>;
    /// The size of the object at `key` (`None`: there is none).
    fn size(&self, key: &str) -> Result<Option<u64>>;
    /// Every object under `under` (`""`: the whole store) with its size, keys
    /// relative to the store, sorted.
    fn list(&self, under: &str) -> Result<Vec<(String, u64)>>;
    /// The path or URL of `key`, as messages name it.
    fn name(&self, key: &str) -> PathBuf;
    /// The local directory, when the objects are files (the reader maps them).
    fn local_root(&self) -> Option<&Path> {
        None
    }
    /// Whether reads are local (a directory, a zip file): cheap enough to make on a
    /// decode thread, unlike a bucket's requests.
    fn is_local(&self) -> bool {
        self.local_root().is_some()
    }
    /// The object at `key` as a range of a file mapped into memory, when the storage
    /// can give one (a stored entry of a zip); `None`: read it otherwise.
    fn mapped(&self, _key: &str) -> Result<Option<Mapped>> {
        Ok(None)
    }
    /// The objects whose own check fails (a zip entry's CRC-32), each with why: for
    /// `verify`, which must find damage a store's chunks carry no checksum for. Where
    /// objects carry no check of their own, none.
    fn damaged_objects(&self) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    /// `Err` naming the container when it is not there (a bucket that does not
    /// exist): asked once a store is found missing, so the message names the cause.
    fn check_container(&self) -> Result<()> {
        Ok(())
    }

    /// Writes `bytes` to `key`, whole: a reader sees the old object or the new one,
    /// never part of either.
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()>;
    /// Writes `bytes` to `key` only if no object is there (S3's `If-None-Match: *`):
    /// `false` when one already was. Two writers racing agree on one winner.
    fn put_if_absent(&self, key: &str, bytes: Vec<u8>) -> Result<bool>;
    /// Writes the local file `file` to `key` (a large one to a bucket in parts,
    /// never whole in memory).
    fn put_file(&self, key: &str, file: &Path) -> Result<()> {
        let bytes = std::fs::read(file).map_err(|e| Error::io(file, e))?;
        self.put(key, bytes)
    }
    /// Writes the files `root/<key>` to their keys, in order where order matters (a
    /// zip's entries), many at a time where it does not (a bucket).
    fn put_files(&self, root: &Path, keys: &[String]) -> Result<()> {
        keys.iter()
            .try_for_each(|k| self.put_file(k, &root.join(k)))
    }
    /// Copies the objects `keys` into the files `root/<key>` (directories made), many
    /// at a time where that helps (a bucket), each streamed, not whole in memory.
    fn get_files(&self, keys: &[String], root: &Path) -> Result<()> {
        for k in keys {
            let path = root.join(k);
            let bytes = self.get(k)?.ok_or_else(|| {
                Error::io(
                    self.name(k),
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                )
            })?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
        }
        Ok(())
    }
    /// Deletes the object at `key` (absent is not an error).
    fn delete(&self, key: &str) -> Result<()>;
    /// Deletes every object under `under` (`""`: the whole store).
    fn delete_under(&self, under: &str) -> Result<()>;
    /// Completes the writes: a zip store's directory written and the file moved into
    /// place; nothing to do where every put already landed.
    fn commit(&self) -> Result<()> {
        Ok(())
    }
}

/// Opens the storage at `root` for reading: an `s3://` URL, a `.zip` file, or a
/// local directory (other URL schemes are refused by name).
pub fn open(root: &Path) -> Result<Arc<dyn Storage>> {
    refuse_url(root)?;
    if bucket::is_bucket_url(root) {
        return Ok(Arc::new(Bucket::open(root)?));
    }
    // (`x.vcz.zip/` names the zip file a conversion to it wrote.)
    let file = Path::new(root.to_str().map_or(root.as_os_str(), |s| {
        std::ffi::OsStr::new(s.trim_end_matches('/'))
    }));
    if zip::is_zip_file(file) {
        return Ok(Arc::new(ZipStore::open(file)?));
    }
    Ok(Arc::new(LocalDir {
        root: root.to_path_buf(),
    }))
}

/// Whether `path` names a zip store to write (`….zip`; read ones are recognised by
/// their bytes as well).
pub fn is_zip_path(path: &Path) -> bool {
    !bucket::is_bucket_url(path)
        && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

/// Refuses a URL of a scheme svar2 does not support (`gs://`, `https://`; `s3://` is
/// read and written through [`bucket`]): the operating system would
/// take it for a relative folder named `gs:`, and a user would believe the data went
/// to the bucket.
pub fn refuse_url(path: &Path) -> Result<()> {
    if bucket::is_bucket_url(path) {
        return Ok(());
    }
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

impl Storage for Bucket {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Bucket::get(self, key)
    }
    fn get_range(&self, key: &str, at: u64, len: u64) -> Result<Vec<u8>> {
        Bucket::get_range(self, key, at, len)
    }
    fn get_tail(&self, key: &str, n: u64) -> Result<Option<(Vec<u8>, u64)>> {
        Bucket::get_tail(self, key, n)
    }
    fn size(&self, key: &str) -> Result<Option<u64>> {
        Bucket::size(self, key)
    }
    fn list(&self, under: &str) -> Result<Vec<(String, u64)>> {
        Bucket::list(self, under)
    }
    fn name(&self, key: &str) -> PathBuf {
        PathBuf::from(self.url(key))
    }
    fn check_container(&self) -> Result<()> {
        self.check_bucket()
    }
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        Bucket::put(self, key, bytes)
    }
    fn put_if_absent(&self, key: &str, bytes: Vec<u8>) -> Result<bool> {
        Bucket::put_if_absent(self, key, bytes)
    }
    fn put_file(&self, key: &str, file: &Path) -> Result<()> {
        Bucket::put_file(self, key, file)
    }
    fn put_files(&self, root: &Path, keys: &[String]) -> Result<()> {
        Bucket::put_files(self, root, keys)
    }
    fn get_files(&self, keys: &[String], root: &Path) -> Result<()> {
        Bucket::get_files(self, keys, root)
    }
    fn delete(&self, key: &str) -> Result<()> {
        Bucket::delete(self, key)
    }
    fn delete_under(&self, under: &str) -> Result<()> {
        Bucket::delete_under(self, under)
    }
}
