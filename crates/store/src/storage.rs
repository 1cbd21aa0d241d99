//! Where a store's objects are read from — a local directory or an S3 bucket, chosen
//! by the URL — behind one trait, so the layout, the chunk reads and the digest read
//! either the same way. (Writes go through `dir`'s `StoreDir`,
//! which stages a bucket store locally and uploads it.)

use crate::bucket::Bucket;
use crate::error::{Error, Result};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// `Err` naming the container when it is not there (a bucket that does not
    /// exist): asked once a store is found missing, so the message names the cause.
    fn check_container(&self) -> Result<()> {
        Ok(())
    }
}

/// Opens the storage at `root`: an `s3://` URL or a local directory (other URL
/// schemes are refused by name).
pub fn open(root: &Path) -> Result<Arc<dyn Storage>> {
    refuse_url(root)?;
    if crate::bucket::is_bucket_url(root) {
        return Ok(Arc::new(Bucket::open(root)?));
    }
    Ok(Arc::new(LocalDir {
        root: root.to_path_buf(),
    }))
}

/// Refuses a URL of a scheme svar2 does not support (`gs://`, `https://`; `s3://` is
/// read and written through [`bucket`](crate::bucket)): the operating system would
/// take it for a relative folder named `gs:`, and a user would believe the data went
/// to the bucket.
pub fn refuse_url(path: &Path) -> Result<()> {
    if crate::bucket::is_bucket_url(path) {
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
        let mut out = Vec::new();
        let mut stack = vec![self.name(under)];
        while let Some(d) = stack.pop() {
            let rd = match std::fs::read_dir(&d) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&d, e)),
            };
            for e in rd {
                let e = e.map_err(|x| Error::io(&d, x))?;
                let p = e.path();
                let t = e.file_type().map_err(|x| Error::io(&p, x))?;
                // A symlink counts as what it points to (a dangling one as nothing).
                let kind = match t.is_symlink() {
                    true => std::fs::metadata(&p).map(|m| m.file_type()).ok(),
                    false => Some(t),
                };
                if let Some(what) = kind.and_then(not_regular) {
                    return Err(Error::io(&p, not_regular_err(what)));
                }
                if t.is_dir() {
                    stack.push(p);
                } else if t.is_file() {
                    let size = e.metadata().map_err(|x| Error::io(&p, x))?.len();
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
}

/// zarrs' view of a [`Storage`], for the arrays zarrs decodes whole (strings, other
/// writers' shards): keys as zarrs spells them, reads by range.
#[derive(Debug)]
pub struct ZarrsStorage(pub Arc<dyn Storage>);

fn zarrs_err(e: Error) -> zarrs::storage::StorageError {
    zarrs::storage::StorageError::Other(e.to_string())
}

impl zarrs::storage::ReadableStorageTraits for ZarrsStorage {
    fn get_partial_many<'a>(
        &'a self,
        key: &zarrs::storage::StoreKey,
        byte_ranges: zarrs::storage::byte_range::ByteRangeIterator<'a>,
    ) -> std::result::Result<zarrs::storage::MaybeBytesIterator<'a>, zarrs::storage::StorageError>
    {
        use zarrs::storage::byte_range::ByteRange;
        let k = key.as_str().to_string();
        let ranges: Vec<ByteRange> = byte_ranges.collect();
        // A whole object is one GET; ranges of it are cut from it when zarrs asks
        // for many (a shard index and its chunks), else read one by one.
        let whole = match ranges.as_slice() {
            [ByteRange::FromStart(0, None)] => true,
            _ => ranges.len() > 1,
        };
        if whole {
            let Some(b) = self.0.get(&k).map_err(zarrs_err)? else {
                return Ok(None);
            };
            let size = b.len() as u64;
            let b = zarrs::storage::Bytes::from(b);
            let out: Vec<std::result::Result<zarrs::storage::Bytes, _>> = ranges
                .iter()
                .map(|r| {
                    let range = r.to_range_usize(size);
                    if range.end > b.len() {
                        return Err(zarrs::storage::StorageError::Other(format!(
                            "{k}: range {range:?} past the object's end ({size} bytes)"
                        )));
                    }
                    Ok(b.slice(range))
                })
                .collect();
            return Ok(Some(Box::new(out.into_iter())));
        }
        let mut out = Vec::with_capacity(ranges.len());
        for r in &ranges {
            let got = match *r {
                ByteRange::Suffix(n) => self.0.get_tail(&k, n).map_err(zarrs_err)?.map(|x| x.0),
                ByteRange::FromStart(at, Some(len)) => {
                    if self.size(&k)?.is_none() {
                        return Ok(None);
                    }
                    Some(self.0.get_range(&k, at, len).map_err(zarrs_err)?)
                }
                ByteRange::FromStart(at, None) => self
                    .0
                    .get(&k)
                    .map_err(zarrs_err)?
                    .map(|b| b[(at as usize).min(b.len())..].to_vec()),
            };
            match got {
                Some(b) => out.push(Ok(zarrs::storage::Bytes::from(b))),
                None => return Ok(None),
            }
        }
        Ok(Some(Box::new(out.into_iter())))
    }

    fn size_key(
        &self,
        key: &zarrs::storage::StoreKey,
    ) -> std::result::Result<Option<u64>, zarrs::storage::StorageError> {
        self.size(key.as_str())
    }

    fn supports_get_partial(&self) -> bool {
        true
    }
}

impl ZarrsStorage {
    fn size(&self, key: &str) -> std::result::Result<Option<u64>, zarrs::storage::StorageError> {
        self.0.size(key).map_err(zarrs_err)
    }
}
