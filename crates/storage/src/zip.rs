//! A store in a `.zip` file (`.vcz.zip`), the one-file form bio2zarr (`vcf2zarr
//! zipzarr`), vcztools and zarr-python's `ZipStore` read and write: each object an
//! entry named by its key, stored uncompressed, so a chunk is a byte range of the
//! file read in place.
//!
//! Reading takes what those tools and `zip -r` make: entries stored or deflated
//! (deflated ones are inflated whole per read: slow, said once in the log), Zip64
//! archives (over 4 GiB or 65,535 entries), and a store in one folder of the archive
//! (`zip -r out.zip store.vcz/`). Every size and offset read from the file is checked
//! against the file's length before anything is allocated from it.
//!
//! Writing is once, whole ([`ZipStore::create`], a `put` per object, then
//! [`commit`](crate::Storage::commit)): a zip's directory is at its end, so it is
//! written to a file beside the output and moved into place only when complete — a
//! killed conversion leaves no half archive under the output's name. The bytes are
//! deterministic: entries in the order put, stored, dated 1980-01-01, Zip64 fields
//! only where a size or offset needs them.

use crate::error::{Error, Result};
use crate::Storage;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, RwLock};

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const END_SIG: u32 = 0x0605_4b50;
const END64_SIG: u32 = 0x0606_4b50;
const LOCATOR64_SIG: u32 = 0x0706_4b50;
/// The end-of-central-directory record without its comment.
const END_LEN: u64 = 22;
/// The longest comment a zip may end with.
const MAX_COMMENT: u64 = 0xFFFF;
/// A deflated entry may inflate to this many bytes whatever its stored size …
const MAX_INFLATED: u64 = 256 << 20;
/// … and past it, to at most this many times its stored bytes.
const MAX_INFLATE_RATIO: u64 = 50;
/// A field that says "see the Zip64 extra field".
const FULL32: u64 = 0xFFFF_FFFF;
/// MS-DOS date 1980-01-01, time 00:00: every entry's, so the bytes do not depend on
/// when a store was written.
const DOS_DATE: u16 = (1 << 5) | 1;
/// Version needed to extract: 2.0 (stored, deflated) or 4.5 (Zip64).
const V20: u16 = 20;
const V45: u16 = 45;
const STORED: u16 = 0;
const DEFLATED: u16 = 8;

/// Whether `path` is a zip file to read as a store: a regular file named `….zip` or
/// starting with a zip signature.
pub fn is_zip_file(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    if crate::is_zip_path(path) {
        return true;
    }
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && (u32::from_le_bytes(magic) == LOCAL_SIG || u32::from_le_bytes(magic) == END_SIG)
}

/// One object of the archive.
#[derive(Debug)]
struct Entry {
    /// Its name as the central directory gives it (its local header must agree).
    name: Vec<u8>,
    /// Where its local header starts.
    header_at: u64,
    /// Where its bytes start (after the local header, read on first use).
    data_at: OnceLock<u64>,
    /// Its bytes as stored, and as the object (equal when stored).
    stored_len: u64,
    len: u64,
    method: u16,
    crc: u32,
}

/// The archive being written: its file beside the output, the write position.
#[derive(Debug)]
struct Writing {
    /// Where the archive goes once committed.
    dest: PathBuf,
    at: u64,
    /// Keys in the order put (the central directory's order).
    order: Vec<String>,
    committed: bool,
}

/// A store in a zip file, read in place or being written.
#[derive(Debug)]
pub struct ZipStore {
    /// The archive (for a store being written, the file beside the output).
    path: PathBuf,
    file: File,
    /// The archive folder holding the store (`""`: its top).
    folder: String,
    entries: RwLock<BTreeMap<String, Entry>>,
    writing: Option<Mutex<Writing>>,
    /// Deflated entries were read (said once).
    warned: std::sync::atomic::AtomicBool,
    /// The archive mapped into memory, once, for readers that map (`None`: it could
    /// not be, or is being written).
    map: OnceLock<Option<std::sync::Arc<memmap2::Mmap>>>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl ZipStore {
    /// Opens the zip store at `path` for reading: its central directory read and
    /// checked, the store's folder found.
    pub fn open(path: &Path) -> Result<ZipStore> {
        let file = crate::open_regular(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let bad = |msg: String| Error::zip(path, msg);
        let damaged = |msg: String| Error::Damaged {
            path: path.to_path_buf(),
            msg,
        };
        let read = |at: u64, n: u64| -> Result<Vec<u8>> {
            if at.checked_add(n).is_none_or(|end| end > len) {
                return Err(damaged(format!(
                    "the zip's directory points past the file's end (byte {at} + {n} of \
                     {len}): the file is cut short or damaged; download or copy it again"
                )));
            }
            let mut b = vec![0u8; n as usize];
            file.read_exact_at(&mut b, at)
                .map_err(|e| Error::io(path, e))?;
            Ok(b)
        };
        let tail_len = len.min(END_LEN + MAX_COMMENT);
        let tail = read(len - tail_len, tail_len)?;
        let end = (0..tail.len().saturating_sub(END_LEN as usize - 1))
            .rev()
            .find(|&i| u32_at(&tail, i) == END_SIG)
            .ok_or_else(|| {
                let mut magic = [0u8; 4];
                let zip_like = file.read_exact_at(&mut magic, 0).is_ok()
                    && u32::from_le_bytes(magic) == LOCAL_SIG;
                match zip_like {
                    true => damaged(
                        "a zip cut short (it has entries but no end-of-central-directory \
                         record: an interrupted download or copy); download or copy it again"
                            .into(),
                    ),
                    false => bad(
                        "not a zip file (no end-of-central-directory record): give a .zip \
                         made by svar2, bio2zarr's zipzarr, zarr-python or `zip -r`, or a \
                         store directory"
                            .into(),
                    ),
                }
            })?;
        let end_at = len - tail_len + end as u64;
        let e = &tail[end..];
        let (mut disk, mut count, mut cd_len, mut cd_at) = (
            u16_at(e, 4) as u64,
            u16_at(e, 10) as u64,
            u32_at(e, 12) as u64,
            u32_at(e, 16) as u64,
        );
        // Zip64: the locator sits just before the record.
        if end_at >= 20 {
            let loc = read(end_at - 20, 20)?;
            if u32_at(&loc, 0) == LOCATOR64_SIG {
                let rec = read(u64_at(&loc, 8), 56)?;
                if u32_at(&rec, 0) != END64_SIG {
                    return Err(damaged(
                        "damaged Zip64 end record: download or copy it again".into(),
                    ));
                }
                disk = u32_at(&rec, 16) as u64;
                count = u64_at(&rec, 32);
                cd_len = u64_at(&rec, 40);
                cd_at = u64_at(&rec, 48);
            }
        }
        if disk != 0 {
            return Err(bad(
                "a multi-part (spanned) zip: join it into one file first".into(),
            ));
        }
        // 46 bytes at least per entry: a count beyond that is a lie, not an allocation.
        if count > cd_len / 46 + 1 {
            return Err(damaged(format!(
                "the zip says it holds {count} entries in a {cd_len}-byte directory: damaged"
            )));
        }
        let cd = read(cd_at, cd_len)?;
        let mut entries = BTreeMap::new();
        let mut at = 0usize;
        for _ in 0..count {
            if at + 46 > cd.len() || u32_at(&cd, at) != CENTRAL_SIG {
                return Err(damaged(
                    "damaged central directory: download or copy it again".into(),
                ));
            }
            let flags = u16_at(&cd, at + 8);
            let method = u16_at(&cd, at + 10);
            let crc = u32_at(&cd, at + 16);
            let mut stored_len = u32_at(&cd, at + 20) as u64;
            let mut obj_len = u32_at(&cd, at + 24) as u64;
            let name_len = u16_at(&cd, at + 28) as usize;
            let extra_len = u16_at(&cd, at + 30) as usize;
            let comment_len = u16_at(&cd, at + 32) as usize;
            let mut header_at = u32_at(&cd, at + 42) as u64;
            let name_at = at + 46;
            let next = name_at + name_len + extra_len + comment_len;
            if next > cd.len() {
                return Err(damaged(
                    "damaged central directory: download or copy it again".into(),
                ));
            }
            let raw = cd[name_at..name_at + name_len].to_vec();
            let name = String::from_utf8_lossy(&raw).into_owned();
            let extra = &cd[name_at + name_len..name_at + name_len + extra_len];
            zip64_fields(extra, &mut obj_len, &mut stored_len, &mut header_at);
            at = next;
            // Folders, and macOS Finder's resource forks beside what was zipped.
            if name.ends_with('/') || name.starts_with("__MACOSX/") {
                continue;
            }
            if flags & 1 != 0 {
                return Err(bad(format!(
                    "{name}: an encrypted entry; svar2 reads unencrypted zips only"
                )));
            }
            if method != STORED && method != DEFLATED {
                return Err(bad(format!(
                    "{name}: compressed by zip method {method}; svar2 reads stored or \
                     deflated entries: re-zip with `zip -0 -r` or `python -m bio2zarr zipzarr`"
                )));
            }
            if header_at.checked_add(stored_len).is_none_or(|e| e > len) {
                return Err(damaged(format!(
                    "{name}: its bytes lie past the file's end: the file is cut short; \
                     download or copy it again"
                )));
            }
            let key = name.trim_start_matches("./").to_string();
            // Two entries for one key (the same name twice, or `x` and `./x`) would be
            // read one way here and maybe another elsewhere: refused.
            if entries.contains_key(&key) {
                return Err(damaged(format!(
                    "two entries name {key} ({name:?} and another): the zip is damaged or \
                     crafted, or was appended to; re-create it"
                )));
            }
            entries.insert(
                key,
                Entry {
                    name: raw,
                    header_at,
                    data_at: OnceLock::new(),
                    stored_len,
                    len: obj_len,
                    method,
                    crc,
                },
            );
        }
        let folder = store_folder(&entries);
        if !folder.is_empty() {
            entries = entries
                .into_iter()
                .filter_map(|(k, e)| Some((k.strip_prefix(&folder)?.to_string(), e)))
                .collect();
        }
        Ok(ZipStore {
            path: path.to_path_buf(),
            file,
            folder,
            entries: RwLock::new(entries),
            writing: None,
            warned: Default::default(),
            map: OnceLock::new(),
        })
    }

    /// Starts writing a zip store to `dest`: into a file beside it
    /// (`<dest>.svar2-partial`, this process's: a leftover of a killed run is
    /// replaced), moved to `dest` by [`commit`](Storage::commit). Dropped before
    /// then, the partial file is removed.
    pub fn create(dest: &Path) -> Result<ZipStore> {
        let path = partial_path(dest);
        // Made afresh, never opened through what is there: a leftover of a killed run
        // is unlinked (a link placed at this name loses only the name, never its
        // target's bytes), and a new file is created exclusively.
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path, e));
            }
            _ => {}
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        Ok(ZipStore {
            path,
            file,
            folder: String::new(),
            entries: RwLock::new(BTreeMap::new()),
            writing: Some(Mutex::new(Writing {
                dest: dest.to_path_buf(),
                at: 0,
                order: Vec::new(),
                committed: false,
            })),
            warned: Default::default(),
            map: OnceLock::new(),
        })
    }

    fn refuse_write(&self, what: &str) -> Error {
        Error::zip(
            &self.path,
            format!(
                "cannot {what} in a zip store: svar2 writes a zip once, whole (convert or \
                 rechunk to a .zip output); to change one, unzip it (`python -m bio2zarr zipzarr -u`)"
            ),
        )
    }

    /// Where entry `e`'s bytes start (its local header read once).
    fn data_at(&self, key: &str, e: &Entry) -> Result<u64> {
        if let Some(at) = e.data_at.get() {
            return Ok(*at);
        }
        let corrupt = |msg: &str| Error::Corrupt {
            key: self.name(key).display().to_string(),
            msg: format!("{msg}: the zip is damaged; download or copy it again"),
        };
        let mut h = [0u8; 30];
        self.file
            .read_exact_at(&mut h, e.header_at)
            .map_err(|x| Error::io(self.name(key), x))?;
        if u32_at(&h, 0) != LOCAL_SIG {
            return Err(corrupt("damaged entry header"));
        }
        // The local header names the entry as the directory does (zipfile and
        // zarr-python check this too): a directory entry pointing at another
        // entry's bytes is refused, not read as that entry.
        let name_len = u16_at(&h, 26) as usize;
        let mut name = vec![0u8; name_len];
        self.file
            .read_exact_at(&mut name, e.header_at + 30)
            .map_err(|x| Error::io(self.name(key), x))?;
        if name != e.name {
            return Err(corrupt("its local header names another entry"));
        }
        let at = e.header_at + 30 + name_len as u64 + u16_at(&h, 28) as u64;
        let len = self
            .file
            .metadata()
            .map_err(|x| Error::io(&self.path, x))?
            .len();
        if at.checked_add(e.stored_len).is_none_or(|end| end > len) {
            return Err(corrupt("its bytes lie past the file's end"));
        }
        Ok(*e.data_at.get_or_init(|| at))
    }

    /// The object `key`, whole and checked against its CRC-32.
    fn read_entry(&self, key: &str, e: &Entry) -> Result<Vec<u8>> {
        let at = self.data_at(key, e)?;
        let mut raw = vec![0u8; e.stored_len as usize];
        self.file
            .read_exact_at(&mut raw, at)
            .map_err(|x| Error::io(self.name(key), x))?;
        let bytes = match e.method {
            STORED => raw,
            _ => {
                if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(
                        "{}: entries are deflated, so each read inflates a whole shard; \
                         re-zip uncompressed (`zip -0 -r`, `python -m bio2zarr zipzarr`) for speed",
                        self.path.display()
                    );
                }
                // What deflate gives real objects is a few times their stored bytes
                // (shards are zstd already); a small entry the directory says inflates
                // to gigabytes is a zip bomb (6 GiB of spaces in a zarr.json took 6 GB).
                if e.len > MAX_INFLATED.max(e.stored_len.saturating_mul(MAX_INFLATE_RATIO)) {
                    return Err(Error::Corrupt {
                        key: self.name(key).display().to_string(),
                        msg: format!(
                            "a deflated entry of {} bytes said to inflate to {}: not read (a \
                             zip bomb, or a damaged zip); re-zip the store uncompressed \
                             (`zip -0 -r`)",
                            e.stored_len, e.len
                        ),
                    });
                }
                // Bounded by the size the directory gives (plus one byte, to see a lie).
                let mut out = Vec::new();
                flate2::read::DeflateDecoder::new(&raw[..])
                    .take(e.len.saturating_add(1))
                    .read_to_end(&mut out)
                    .map_err(|x| Error::Corrupt {
                        key: self.name(key).display().to_string(),
                        msg: format!("does not inflate ({x}): the zip is damaged"),
                    })?;
                out
            }
        };
        if bytes.len() as u64 != e.len || crc32fast::hash(&bytes) != e.crc {
            return Err(Error::Corrupt {
                key: self.name(key).display().to_string(),
                msg: "CRC-32 or size mismatch: the zip is damaged; download or copy it again"
                    .into(),
            });
        }
        Ok(bytes)
    }

    /// Appends one entry of `len` bytes, written by `write` at the position it is
    /// given, which returns the bytes' CRC-32.
    fn append(
        &self,
        key: &str,
        len: u64,
        write: impl FnOnce(&File, u64) -> Result<u32>,
    ) -> Result<()> {
        let writing = self
            .writing
            .as_ref()
            .ok_or_else(|| self.refuse_write("write"))?;
        let mut w = writing.lock().expect("zip writer");
        if w.committed {
            return Err(self.refuse_write("write after the archive is complete"));
        }
        if self.entries.read().expect("zip entries").contains_key(key) {
            return Err(self.refuse_write(&format!("write {key} twice")));
        }
        let header_at = w.at;
        let big = len >= FULL32;
        let mut h = Vec::with_capacity(30 + key.len() + 20);
        h.extend(LOCAL_SIG.to_le_bytes());
        h.extend((if big { V45 } else { V20 }).to_le_bytes());
        h.extend(name_flags(key).to_le_bytes());
        h.extend(STORED.to_le_bytes());
        h.extend(0u16.to_le_bytes());
        h.extend(DOS_DATE.to_le_bytes());
        h.extend(0u32.to_le_bytes()); // CRC-32, patched once the bytes are written
        let short = if big { FULL32 as u32 } else { len as u32 };
        h.extend(short.to_le_bytes());
        h.extend(short.to_le_bytes());
        h.extend((key.len() as u16).to_le_bytes());
        h.extend((if big { 20u16 } else { 0 }).to_le_bytes());
        h.extend(key.as_bytes());
        if big {
            h.extend(1u16.to_le_bytes());
            h.extend(16u16.to_le_bytes());
            h.extend(len.to_le_bytes());
            h.extend(len.to_le_bytes());
        }
        let io = |e| Error::io(&self.path, e);
        self.file.write_all_at(&h, header_at).map_err(io)?;
        let data_at = header_at + h.len() as u64;
        let crc = write(&self.file, data_at)?;
        self.file
            .write_all_at(&crc.to_le_bytes(), header_at + 14)
            .map_err(io)?;
        w.at = data_at + len;
        w.order.push(key.to_string());
        self.entries.write().expect("zip entries").insert(
            key.to_string(),
            Entry {
                name: key.as_bytes().to_vec(),
                header_at,
                data_at: OnceLock::from(data_at),
                stored_len: len,
                len,
                method: STORED,
                crc,
            },
        );
        Ok(())
    }
}

/// The general-purpose flags of an entry named `key`: bit 11 (names in UTF-8) when it
/// is not plain ASCII.
fn name_flags(key: &str) -> u16 {
    if key.is_ascii() {
        0
    } else {
        1 << 11
    }
}

/// The file a zip store is written to before it is moved to `dest`.
pub fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".svar2-partial");
    dest.with_file_name(name)
}

/// Reads the Zip64 extra field (id 1) of a central directory entry: each value the
/// fixed fields mark as `0xFFFFFFFF` follows in order.
fn zip64_fields(mut extra: &[u8], len: &mut u64, stored: &mut u64, header_at: &mut u64) {
    while extra.len() >= 4 {
        let id = u16_at(extra, 0);
        let n = (u16_at(extra, 2) as usize).min(extra.len() - 4);
        let mut field = &extra[4..4 + n];
        if id == 1 {
            for v in [&mut *len, &mut *stored, &mut *header_at] {
                if *v == FULL32 && field.len() >= 8 {
                    *v = u64_at(field, 0);
                    field = &field[8..];
                }
            }
            return;
        }
        extra = &extra[4 + n..];
    }
}

/// The archive folder that holds the store: `""` when its root metadata is at the
/// top, else the one folder everything is in when that folder holds it (`zip -r
/// out.zip store.vcz/` writes `store.vcz/zarr.json`).
fn store_folder(entries: &BTreeMap<String, Entry>) -> String {
    const ROOTS: [&str; 3] = ["zarr.json", ".zgroup", ".zattrs"];
    if ROOTS.iter().any(|r| entries.contains_key(*r)) {
        return String::new();
    }
    let Some(first) = entries.keys().next() else {
        return String::new();
    };
    let Some((top, _)) = first.split_once('/') else {
        return String::new();
    };
    let folder = format!("{top}/");
    let all_in = entries.keys().all(|k| k.starts_with(&folder));
    let holds_root = ROOTS
        .iter()
        .any(|r| entries.contains_key(&format!("{folder}{r}")));
    if all_in && holds_root {
        folder
    } else {
        String::new()
    }
}

impl Drop for ZipStore {
    fn drop(&mut self) {
        if let Some(w) = &self.writing {
            if !w.lock().map(|w| w.committed).unwrap_or(false) {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

impl Storage for ZipStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let entries = self.entries.read().expect("zip entries");
        match entries.get(key) {
            Some(e) => self.read_entry(key, e).map(Some),
            None => Ok(None),
        }
    }

    fn get_range(&self, key: &str, at: u64, len: u64) -> Result<Vec<u8>> {
        let entries = self.entries.read().expect("zip entries");
        let e = entries.get(key).ok_or_else(|| {
            Error::io(
                self.name(key),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        if at.checked_add(len).is_none_or(|end| end > e.len) {
            return Err(Error::io(
                self.name(key),
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            ));
        }
        if e.method != STORED {
            let whole = self.read_entry(key, e)?;
            return Ok(whole[at as usize..(at + len) as usize].to_vec());
        }
        let start = self.data_at(key, e)?;
        let mut out = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut out, start + at)
            .map_err(|x| Error::io(self.name(key), x))?;
        Ok(out)
    }

    fn get_tail(&self, key: &str, n: u64) -> Result<Option<(Vec<u8>, u64)>> {
        let size = match self.size(key)? {
            Some(s) => s,
            None => return Ok(None),
        };
        let n = n.min(size);
        Ok(Some((self.get_range(key, size - n, n)?, size)))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        Ok(self
            .entries
            .read()
            .expect("zip entries")
            .get(key)
            .map(|e| e.len))
    }

    fn is_local(&self) -> bool {
        true
    }

    fn mapped(&self, key: &str) -> Result<Option<crate::Mapped>> {
        if self.writing.is_some() {
            return Ok(None);
        }
        let entries = self.entries.read().expect("zip entries");
        let Some(e) = entries.get(key).filter(|e| e.method == STORED) else {
            return Ok(None);
        };
        let at = self.data_at(key, e)?;
        let map = self.map.get_or_init(|| {
            // SAFETY: the map is only read, through ranges checked against the file's
            // length when the directory and the entry's header were read; a zip store
            // is written beside its name and renamed, never changed in place (a file
            // another program truncates while mapped would fault, as a shard would).
            let map = unsafe { memmap2::Mmap::map(&self.file) }.ok()?;
            Some(std::sync::Arc::new(map))
        });
        let Some(map) = map else {
            return Ok(None);
        };
        let end = at.checked_add(e.len).filter(|&end| end <= map.len() as u64);
        Ok(end.map(|_| crate::Mapped {
            map: map.clone(),
            at: at as usize,
            len: e.len as usize,
        }))
    }

    fn damaged_objects(&self) -> Result<Vec<(String, String)>> {
        let entries = self.entries.read().expect("zip entries");
        let mut out = Vec::new();
        for (key, e) in entries.iter() {
            match self.read_entry(key, e) {
                Ok(_) => {}
                Err(Error::Io { path, source }) => {
                    return Err(Error::Io { path, source });
                }
                Err(err) => out.push((key.clone(), err.to_string())),
            }
        }
        Ok(out)
    }

    fn list(&self, under: &str) -> Result<Vec<(String, u64)>> {
        let under = under.trim_end_matches('/');
        let prefix = format!("{under}/");
        Ok(self
            .entries
            .read()
            .expect("zip entries")
            .iter()
            .filter(|(k, _)| under.is_empty() || k.starts_with(&prefix))
            .map(|(k, e)| (k.clone(), e.len))
            .collect())
    }

    fn name(&self, key: &str) -> PathBuf {
        let shown = match &self.writing {
            Some(w) => w.lock().map(|w| w.dest.clone()).unwrap_or_default(),
            None => self.path.clone(),
        };
        if key.is_empty() {
            shown
        } else {
            PathBuf::from(format!("{}/{}{key}", shown.display(), self.folder))
        }
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.append(key, bytes.len() as u64, |file, at| {
            file.write_all_at(&bytes, at)
                .map_err(|e| Error::io(&self.path, e))?;
            Ok(crc32fast::hash(&bytes))
        })
    }

    fn put_file(&self, key: &str, path: &Path) -> Result<()> {
        let mut src = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = src.metadata().map_err(|e| Error::io(path, e))?.len();
        self.append(key, len, |file, mut at| {
            let mut crc = crc32fast::Hasher::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut left = len;
            while left > 0 {
                let n = src.read(&mut buf).map_err(|e| Error::io(path, e))?;
                if n == 0 {
                    return Err(Error::io(
                        path,
                        std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                    ));
                }
                let n = n.min(left as usize);
                crc.update(&buf[..n]);
                file.write_all_at(&buf[..n], at)
                    .map_err(|e| Error::io(&self.path, e))?;
                at += n as u64;
                left -= n as u64;
            }
            Ok(crc.finalize())
        })
    }

    fn put_if_absent(&self, _key: &str, _bytes: Vec<u8>) -> Result<bool> {
        Err(self.refuse_write("put conditionally"))
    }

    fn delete(&self, _key: &str) -> Result<()> {
        Err(self.refuse_write("delete"))
    }

    fn delete_under(&self, _under: &str) -> Result<()> {
        Err(self.refuse_write("delete"))
    }

    /// Writes the central directory and moves the archive into place.
    fn commit(&self) -> Result<()> {
        let Some(writing) = &self.writing else {
            return Ok(());
        };
        let mut w = writing.lock().expect("zip writer");
        if w.committed {
            return Ok(());
        }
        let entries = self.entries.read().expect("zip entries");
        let cd_at = w.at;
        let mut cd = Vec::new();
        for key in &w.order {
            let e = &entries[key];
            let mut zip64 = Vec::new();
            for v in [e.len, e.stored_len] {
                if e.len >= FULL32 {
                    zip64.extend(v.to_le_bytes());
                }
            }
            if e.header_at >= FULL32 {
                zip64.extend(e.header_at.to_le_bytes());
            }
            let version = if zip64.is_empty() { V20 } else { V45 };
            let clip = |v: u64| v.min(FULL32) as u32;
            cd.extend(CENTRAL_SIG.to_le_bytes());
            cd.extend(((3u16 << 8) | version).to_le_bytes()); // made by: Unix
            cd.extend(version.to_le_bytes());
            cd.extend(name_flags(key).to_le_bytes());
            cd.extend(STORED.to_le_bytes());
            cd.extend(0u16.to_le_bytes());
            cd.extend(DOS_DATE.to_le_bytes());
            cd.extend(e.crc.to_le_bytes());
            cd.extend(clip(e.stored_len).to_le_bytes());
            cd.extend(clip(e.len).to_le_bytes());
            cd.extend((key.len() as u16).to_le_bytes());
            let extra_len = if zip64.is_empty() { 0 } else { 4 + zip64.len() };
            cd.extend((extra_len as u16).to_le_bytes());
            cd.extend(0u16.to_le_bytes()); // comment
            cd.extend(0u16.to_le_bytes()); // disk
            cd.extend(0u16.to_le_bytes()); // internal attributes
            cd.extend((0o100644u32 << 16).to_le_bytes()); // a regular file, rw-r--r--
            cd.extend(clip(e.header_at).to_le_bytes());
            cd.extend(key.as_bytes());
            if !zip64.is_empty() {
                cd.extend(1u16.to_le_bytes());
                cd.extend((zip64.len() as u16).to_le_bytes());
                cd.extend(zip64);
            }
        }
        let count = w.order.len() as u64;
        let cd_len = cd.len() as u64;
        let mut end = Vec::new();
        if count >= 0xFFFF || cd_at >= FULL32 || cd_len >= FULL32 {
            let end64_at = cd_at + cd_len;
            end.extend(END64_SIG.to_le_bytes());
            end.extend(44u64.to_le_bytes());
            end.extend(((3u16 << 8) | V45).to_le_bytes());
            end.extend(V45.to_le_bytes());
            end.extend(0u32.to_le_bytes());
            end.extend(0u32.to_le_bytes());
            end.extend(count.to_le_bytes());
            end.extend(count.to_le_bytes());
            end.extend(cd_len.to_le_bytes());
            end.extend(cd_at.to_le_bytes());
            end.extend(LOCATOR64_SIG.to_le_bytes());
            end.extend(0u32.to_le_bytes());
            end.extend(end64_at.to_le_bytes());
            end.extend(1u32.to_le_bytes());
        }
        end.extend(END_SIG.to_le_bytes());
        end.extend(0u16.to_le_bytes());
        end.extend(0u16.to_le_bytes());
        end.extend((count.min(0xFFFF) as u16).to_le_bytes());
        end.extend((count.min(0xFFFF) as u16).to_le_bytes());
        end.extend((cd_len.min(FULL32) as u32).to_le_bytes());
        end.extend((cd_at.min(FULL32) as u32).to_le_bytes());
        end.extend(0u16.to_le_bytes());
        cd.extend(end);
        let io = |e| Error::io(&self.path, e);
        self.file.write_all_at(&cd, cd_at).map_err(io)?;
        self.file.set_len(cd_at + cd.len() as u64).map_err(io)?;
        self.file.sync_all().map_err(io)?;
        std::fs::rename(&self.path, &w.dest).map_err(|e| Error::io(&w.dest, e))?;
        w.committed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, objects: &[(&str, &[u8])]) -> PathBuf {
        let dest = dir.join("s.vcz.zip");
        let z = ZipStore::create(&dest).unwrap();
        for (k, v) in objects {
            z.put(k, v.to_vec()).unwrap();
        }
        z.commit().unwrap();
        dest
    }

    #[test]
    fn written_objects_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let dest = write(
            dir.path(),
            &[
                ("a/zarr.json", b"{}"),
                ("a/c/0", b"0123456789"),
                ("zarr.json", b"{\"x\":1}"),
            ],
        );
        assert!(!partial_path(&dest).exists());
        let z = ZipStore::open(&dest).unwrap();
        assert_eq!(z.get("a/c/0").unwrap().unwrap(), b"0123456789");
        assert_eq!(z.get_range("a/c/0", 3, 4).unwrap(), b"3456");
        assert_eq!(
            z.get_tail("a/c/0", 2).unwrap().unwrap(),
            (b"89".to_vec(), 10)
        );
        assert_eq!(z.get("nope").unwrap(), None);
        assert_eq!(
            z.list("a").unwrap(),
            vec![("a/c/0".to_string(), 10), ("a/zarr.json".to_string(), 2)]
        );
        assert_eq!(z.list("").unwrap().len(), 3);
        assert!(z.get_range("a/c/0", 8, 4).is_err());
        assert!(z.delete("a/c/0").is_err());
    }

    #[test]
    fn bytes_are_deterministic() {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let objects: &[(&str, &[u8])] = &[("zarr.json", b"{}"), ("é/c/0", b"x")];
        let a = std::fs::read(write(d1.path(), objects)).unwrap();
        let b = std::fs::read(write(d2.path(), objects)).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn an_uncommitted_archive_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("s.zip");
        {
            let z = ZipStore::create(&dest).unwrap();
            z.put("zarr.json", b"{}".to_vec()).unwrap();
        }
        assert!(!dest.exists());
        assert!(!partial_path(&dest).exists());
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let dest = write(dir.path(), &[("zarr.json", b"{}"), ("a/c/0", &[7u8; 100])]);
        let good = std::fs::read(&dest).unwrap();
        // Every truncation and every single-byte change either opens and reads or
        // errs; none panics or allocates from a lie.
        for cut in 0..good.len() {
            std::fs::write(&dest, &good[..cut]).unwrap();
            if let Ok(z) = ZipStore::open(&dest) {
                let _ = z.get("a/c/0");
            }
        }
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0xFF;
            std::fs::write(&dest, &b).unwrap();
            if let Ok(z) = ZipStore::open(&dest) {
                for k in ["zarr.json", "a/c/0"] {
                    let _ = z.get(k);
                    let _ = z.get_tail(k, 16);
                }
            }
        }
    }

    #[test]
    fn a_store_in_one_folder_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let dest = write(
            dir.path(),
            &[("s.vcz/zarr.json", b"{}"), ("s.vcz/a/c/0", b"z")],
        );
        let z = ZipStore::open(&dest).unwrap();
        assert_eq!(z.get("a/c/0").unwrap().unwrap(), b"z");
        assert_eq!(z.name("a/c/0"), dir.path().join("s.vcz.zip/s.vcz/a/c/0"));
    }
}
