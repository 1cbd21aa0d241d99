//! The store directory: the lock held while writing (what may be replaced is
//! [`replace`](crate::replace)'s rule), the in-progress marker, the completion marker
//! (root `zarr.json`, written last), the copy to a bucket or zip destination, and the
//! digest that proves two stores are the same.

use crate::error::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};
use svar2_storage::bucket::Bucket;
use svar2_storage::{Storage, ZipStore};

pub use crate::replace::IN_PROGRESS;
use crate::replace::{classify, classify_zip, output_path, refuse, Existing};

/// Where a finished store goes when it is not the directory written.
enum Destination {
    /// An S3 bucket's prefix.
    Bucket(Bucket),
    /// A `.zip` file, written whole beside its path and moved into place.
    Zip(PathBuf),
}

/// A store being written.
pub struct StoreDir {
    /// The directory written: the store itself, or for a bucket or zip store its
    /// local staging copy (see [`StoreDir::create`]).
    pub root: PathBuf,
    /// Where a bucket or zip store goes: written under `root`, copied there by
    /// `finish`.
    dest: Option<Destination>,
    /// An exclusive lock on the directory itself, held while writing: a second
    /// conversion into the same output refuses instead of interleaving files. (The
    /// directory is emptied, never replaced, so the lock stays on the one inode.)
    _lock: Option<fs::File>,
    /// Set once the root `zarr.json` is in place; until then dropping the store (an
    /// error or a panic) removes the partial output. A killed process leaves it, marked
    /// by [`IN_PROGRESS`], for the next run to start again.
    finished: std::sync::atomic::AtomicBool,
    /// Shard keys already in the output but not under `root` (a bucket's partitions
    /// uploaded them): counted as written by [`finish`](Self::finish)'s record.
    elsewhere: std::sync::Mutex<Vec<crate::written::Elsewhere>>,
    /// What the writer found in the shards it wrote ([`note_chunks`](Self::note_chunks)).
    known: std::sync::Mutex<crate::written::Known>,
}

impl Drop for StoreDir {
    fn drop(&mut self) {
        // (A bucket or zip store's staging copy goes either way: finished, it was
        // copied to its destination.)
        if !self.finished.load(std::sync::atomic::Ordering::Relaxed) || self.dest.is_some() {
            remove_marked_last(&self.root);
        }
    }
}

/// Removes a store directory svar2 is writing, its in-progress marker last (see
/// [`empty_dir`]), then the directory.
fn remove_marked_last(root: &Path) {
    let _ = empty_dir(root);
    let _ = fs::remove_dir(root);
}

/// What a bucket store's prefix holds (its objects' keys, the root documents fetched
/// to recognise a store).
fn classify_bucket(bucket: &Bucket) -> Result<Existing> {
    let listed = bucket.list("")?;
    let small = |k: &str| {
        listed
            .iter()
            .any(|(key, n)| key == k && *n <= 64 << 20)
            .then(|| bucket.get(k).ok().flatten())
            .flatten()
    };
    Ok(crate::replace::classify_keys(
        listed.iter().map(|(k, _)| k.as_str()),
        &small,
    ))
}

/// The directory a `.zip` store is written to before it is packed: beside it, on the
/// same file system (a store's size free where the user chose to write it, not in
/// `TMPDIR`), named after it so a re-run after a kill replaces its own leftovers.
pub fn zip_staging_dir(zip: &Path) -> PathBuf {
    let mut name = zip.file_name().unwrap_or_default().to_os_string();
    name.push(".svar2-staging");
    zip.with_file_name(name)
}

/// The local copy a bucket store is written to before it is uploaded: under the
/// system's temporary directory (`TMPDIR`), one per URL, so a re-run after a kill
/// finds and replaces its own leftovers.
pub fn staging_dir(url: &Path) -> PathBuf {
    let h = blake3::hash(url.as_os_str().as_encoded_bytes()).to_hex();
    std::env::temp_dir()
        .join("svar2-staging")
        .join(&h.as_str()[..16])
}

fn lock(root: &Path) -> Result<fs::File> {
    let f = fs::File::open(root).map_err(|e| Error::io(root, e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(fs::TryLockError::WouldBlock) => Err(Error::Locked { path: root.into() }),
        Err(fs::TryLockError::Error(e)) => Err(Error::io(root, e)),
    }
}

/// The in-progress marker of a partitioned conversion: the job (its plan) named, so
/// a task knows its own job's files from another's.
fn job_marker(job: &str) -> String {
    format!("svar2 {} job {job}\n", env!("CARGO_PKG_VERSION"))
}

/// Joins a partitioned conversion into the bucket store at `url` (`job` names its
/// plan): the first task puts the in-progress marker naming the job (a conditional
/// PUT, so tasks starting together agree); later ones find their job's marker. A
/// prefix holding a finished store, anything else, or another job's conversion is
/// refused: unlike a shared directory, a bucket has no lock under which another
/// job's objects could be removed while its tasks may still be running.
pub fn join_bucket(url: &Path, job: &str) -> Result<Bucket> {
    let bucket = Bucket::open(url)?;
    let marker = job_marker(job);
    match classify_bucket(&bucket)? {
        Existing::Empty => {
            if bucket.put_if_absent(IN_PROGRESS, marker.clone().into_bytes())? {
                return Ok(bucket);
            }
        }
        Existing::Interrupted => {}
        other => refuse(url, &other, false)?,
    }
    let theirs = bucket.get(IN_PROGRESS)?.unwrap_or_default();
    if theirs == marker.as_bytes() {
        return Ok(bucket);
    }
    Err(svar2_storage::Error::Bucket {
        url: url.display().to_string(),
        msg: format!(
            "holds another conversion in progress ({}); partitions start only in an empty \
             prefix or their own job's: remove its objects (`aws s3 rm --recursive {}`) or \
             choose another output",
            String::from_utf8_lossy(&theirs).trim(),
            url.display()
        ),
    }
    .into())
}

/// Checks, changing nothing, that a conversion may write `root` (so a conversion
/// that cannot start fails before its plan's probe runs).
pub fn check_output(root: &Path, force: bool) -> Result<()> {
    svar2_storage::refuse_url(root)?;
    if svar2_storage::bucket::is_bucket_url(root) {
        let bucket = Bucket::open(root)?;
        return refuse(root, &classify_bucket(&bucket)?, force);
    }
    let root = &output_path(root)?;
    if svar2_storage::is_zip_path(root) {
        return refuse(root, &classify_zip(root)?, force);
    }
    if fs::symlink_metadata(root).is_err() {
        return Ok(());
    }
    // Under the lock, as `StoreDir::create` looks: a conversion writing here holds it
    // (refused as such), and its marker may be half-written, which unlocked read as a
    // file svar2 did not write (tests/interrupt.rs caught it).
    let held = lock(root);
    if let Err(e @ Error::Locked { .. }) = held {
        return Err(e);
    }
    refuse(root, &classify(root)?, force)?;
    held.map(drop)
}

/// Refuses a directory store that holds anything but Zarr metadata and chunk keys:
/// what a new version replaces whole (`svar2 append`) must not take a user's files
/// with it. The entry in the way is named.
pub fn check_only_store(root: &Path) -> Result<()> {
    let why = match classify(root)? {
        Existing::Store => return Ok(()),
        Existing::Foreign(what) => what,
        Existing::Interrupted => "is an interrupted conversion".into(),
        Existing::Empty => "is empty".into(),
    };
    Err(Error::NotStore {
        path: root.into(),
        msg: format!(
            "{why}; append replaces the store's directory with a new version, so it must \
             hold only the store (Zarr metadata and chunk keys): move other files out first"
        ),
    })
}

/// Removes a directory's entries, never following a symbolic link (a link is
/// unlinked, never entered), keeping the directory (its lock is on that inode), and
/// the in-progress marker last: killed half-way, what is left is still marked as
/// svar2's interrupted output, which the next run replaces — not a folder of shards
/// it must refuse as someone else's.
fn empty_dir(root: &Path) -> Result<()> {
    for e in fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let e = e.map_err(|e| Error::io(root, e))?;
        if e.file_name() == IN_PROGRESS {
            continue;
        }
        let p = e.path();
        let is_dir = e.file_type().map_err(|x| Error::io(&p, x))?.is_dir();
        let r = match is_dir {
            true => fs::remove_dir_all(&p),
            false => fs::remove_file(&p),
        };
        r.map_err(|x| Error::io(&p, x))?;
    }
    let marker = root.join(IN_PROGRESS);
    match fs::remove_file(&marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&marker, e)),
        _ => Ok(()),
    }
}

impl StoreDir {
    /// Takes the output directory for writing: created if missing, locked, emptied.
    /// A finished store or a foreign directory is replaced only with `force`; an
    /// interrupted svar2 conversion is started again from scratch (said in the log).
    ///
    /// An `s3://` output is written to a local staging directory (under `TMPDIR`)
    /// and uploaded by [`finish`](Self::finish), root `zarr.json` last; meanwhile the
    /// bucket holds the in-progress marker, so a killed run leaves nothing
    /// complete-looking and the next run starts it again.
    ///
    /// A `.zip` output is written to a staging directory beside it
    /// (`<out>.svar2-staging`) and packed by `finish` into a file that replaces the
    /// output only when whole: a killed run leaves any earlier store at that path
    /// as it was.
    pub fn create(root: &Path, force: bool) -> Result<StoreDir> {
        svar2_storage::refuse_url(root)?;
        if svar2_storage::bucket::is_bucket_url(root) {
            return Self::create_in_bucket(root, force);
        }
        let root = &output_path(root)?;
        if svar2_storage::is_zip_path(root) {
            refuse(root, &classify_zip(root)?, force)?;
            let mut store = Self::create(&zip_staging_dir(root), force)?;
            store.dest = Some(Destination::Zip(root.clone()));
            return Ok(store);
        }
        if fs::symlink_metadata(root).is_ok() {
            // Under the lock: a conversion writing here holds it (it is refused as
            // such), and its marker may be half-written, which unlocked would read as
            // a file svar2 did not write.
            let held = lock(root)?;
            refuse(root, &classify(root)?, force)?;
            drop(held);
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
            dest: None,
            _lock: Some(lock),
            finished: std::sync::atomic::AtomicBool::new(false),
            elsewhere: Default::default(),
            known: Default::default(),
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
    ///
    /// A bucket output is joined with [`join_bucket`] instead: each process writes a
    /// local directory joined here and uploads what it made.
    pub fn join(root: &Path, job: &str) -> Result<StoreDir> {
        svar2_storage::refuse_url(root)?;
        if svar2_storage::bucket::is_bucket_url(root) {
            return Err(svar2_storage::Error::Bucket {
                url: root.display().to_string(),
                msg: "internal: a bucket output is joined with join_bucket".into(),
            }
            .into());
        }
        let root = &output_path(root)?;
        let marker_text = job_marker(job);
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
            dest: None,
            _lock: None,
            // Never removed on drop: the other partitions' work is in it.
            finished: std::sync::atomic::AtomicBool::new(true),
            elsewhere: Default::default(),
            known: Default::default(),
        })
    }

    /// Notes shard keys (with their sizes) the finished store holds that are not under
    /// `root` (a partitioned conversion into a bucket: the partitions uploaded them).
    pub fn stored_elsewhere(&self, keys: Vec<crate::written::Elsewhere>) {
        self.elsewhere.lock().expect("elsewhere").extend(keys);
    }

    /// Notes what the writer found in shard file `key` (from the store's root) as it
    /// wrote it: `size` bytes, chunks summing to `sum`. [`finish`](Self::finish)'s
    /// record takes it for the file while the file has that size, and reads the file
    /// otherwise.
    pub fn note_chunks(&self, key: String, size: u64, sum: crate::written::ChunkSum) {
        self.known.lock().expect("known").insert(key, (size, sum));
    }

    /// What [`note_chunks`](Self::note_chunks) noted of shard file `key`, if it still
    /// has the size noted.
    pub fn noted_chunks(&self, key: &str, size: u64) -> Option<crate::written::ChunkSum> {
        let known = self.known.lock().expect("known");
        known
            .get(key)
            .filter(|(at, _)| *at == size)
            .map(|(_, s)| *s)
    }

    /// Marks the store complete: the root `zarr.json` appears whole (written aside,
    /// then renamed) or not at all, and only after everything else. It carries the
    /// record of the shards written ([`written`](crate::written), as
    /// `attributes.svar2.shards`), so a shard lost later reads as damage.
    pub fn finish(&self, root_meta: &serde_json::Value) -> Result<()> {
        let local = svar2_storage::LocalDir {
            root: self.root.clone(),
        };
        let elsewhere = self.elsewhere.lock().expect("elsewhere");
        let known = self.known.lock().expect("known");
        let root_meta = &with_record(&local, &elsewhere, &known, root_meta)?;
        match &self.dest {
            Some(Destination::Bucket(bucket)) => {
                self.publish(bucket, root_meta)?;
                return Ok(bucket.delete(IN_PROGRESS)?);
            }
            Some(Destination::Zip(path)) => {
                return self.publish(&ZipStore::create(path)?, root_meta);
            }
            None => {}
        }
        let tmp = self.root.join(".zarr.json.tmp");
        self.write(&tmp, &json_bytes(root_meta))?;
        self.rename(&tmp, &self.root.join("zarr.json"))?;
        self.finished
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let marker = self.root.join(IN_PROGRESS);
        fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))
    }

    /// A bucket store's `create`: the bucket's prefix checked and emptied as a local
    /// output would be, its in-progress marker put, the staging directory taken.
    fn create_in_bucket(url: &Path, force: bool) -> Result<StoreDir> {
        let bucket = Bucket::open(url)?;
        // The staging directory first: its lock refuses a second conversion of this
        // URL on this machine before either touches the bucket (leftovers of a killed
        // run are an interrupted store there, replaced).
        let staging = staging_dir(url);
        let mut store = Self::create(&staging, false)?;
        let existing = classify_bucket(&bucket)?;
        refuse(url, &existing, force)?;
        if existing == Existing::Interrupted {
            tracing::warn!(
                "{}: an interrupted svar2 conversion (no root zarr.json); starting it again \
                 from scratch",
                url.display()
            );
        }
        if existing != Existing::Empty {
            bucket.delete_all()?;
        }
        bucket.put(
            IN_PROGRESS,
            format!("svar2 {} in progress\n", env!("CARGO_PKG_VERSION")).into_bytes(),
        )?;
        tracing::info!(
            "{}: written to {} and uploaded when complete",
            url.display(),
            staging.display()
        );
        store.dest = Some(Destination::Bucket(bucket));
        Ok(store)
    }

    /// Copies the staged store to `dest`, root `zarr.json` last (after every other
    /// object is there), and commits it.
    fn publish(&self, dest: &dyn Storage, root_meta: &serde_json::Value) -> Result<()> {
        let local = svar2_storage::LocalDir {
            root: self.root.clone(),
        };
        let objects: Vec<(String, u64)> = local
            .list("")?
            .into_iter()
            .filter(|(k, _)| k != IN_PROGRESS)
            .collect();
        let bytes: u64 = objects.iter().map(|(_, n)| n).sum();
        tracing::info!(
            objects = objects.len(),
            bytes,
            "copying to {}",
            dest.name("").display()
        );
        let keys: Vec<String> = objects.into_iter().map(|(k, _)| k).collect();
        dest.put_files(&self.root, &keys)?;
        dest.put("zarr.json", json_bytes(root_meta))?;
        dest.commit()?;
        self.finished
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Path of a shard: `<array>/c/<i>/<j>...`.
    pub fn shard_path(&self, array: &str, indices: &[u64]) -> PathBuf {
        crate::key::chunk_path(&self.root, array, indices)
    }

    /// Writes shard `indices` of `array` from its inner chunks (C order; `None`: not
    /// stored), noting what the store's record of the chunks needs
    /// ([`note_chunks`](Self::note_chunks)); nothing is written when none is stored.
    pub fn write_shard(
        &self,
        array: &str,
        indices: &[u64],
        chunks: &[Option<Vec<u8>>],
    ) -> Result<()> {
        let Some(bytes) = crate::shard::assemble(chunks) else {
            return Ok(());
        };
        self.write(&self.shard_path(array, indices), &bytes)?;
        let rest = crate::key::chunk_key(array, indices);
        let rest = rest.strip_prefix(&format!("{array}/")).unwrap_or(&rest);
        let mut sum = crate::written::ChunkSum::default();
        for (i, c) in chunks.iter().enumerate() {
            if let Some(c) = c {
                sum.add(rest, i as u64, c);
            }
        }
        self.note_chunks(format!("{array}/{rest}"), bytes.len() as u64, sum);
        Ok(())
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

/// `root_meta` with the record of the shards `local` (and `elsewhere`) hold put in
/// its attributes (`svar2.shards`).
fn with_record(
    local: &svar2_storage::LocalDir,
    elsewhere: &[crate::written::Elsewhere],
    known: &crate::written::Known,
    root_meta: &serde_json::Value,
) -> Result<serde_json::Value> {
    let record = crate::written::record(local, elsewhere, known)?;
    let mut root_meta = root_meta.clone();
    if let Some(attrs) = root_meta
        .get_mut("attributes")
        .and_then(serde_json::Value::as_object_mut)
    {
        let svar2 = attrs
            .entry("svar2")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(s) = svar2.as_object_mut() {
            s.insert("shards".into(), record);
        }
    }
    Ok(root_meta)
}

/// Adds attributes to a finished directory store: to the root's those of `root`
/// and to each array's those `arrays` name, each key only where the store has none
/// of that name (what svar2 wrote stays). The record of the shards is brought up to
/// date (it fingerprints each array's metadata), and the root `zarr.json` replaced
/// whole. Returns how many keys were added.
pub fn add_attributes(
    store: &Path,
    root: &serde_json::Map<String, serde_json::Value>,
    arrays: &std::collections::BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
) -> Result<usize> {
    let read = |path: &Path| -> Result<serde_json::Value> {
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        crate::json::parse(&bytes).map_err(|e| Error::NotStore {
            path: path.into(),
            msg: format!("unreadable metadata: {e}"),
        })
    };
    let add = |meta: &mut serde_json::Value, from: &serde_json::Map<String, serde_json::Value>| {
        let mut added = 0;
        if let Some(attrs) = meta.as_object_mut().map(|m| {
            m.entry("attributes")
                .or_insert_with(|| serde_json::json!({}))
        }) {
            if let Some(attrs) = attrs.as_object_mut() {
                for (k, v) in from {
                    if !attrs.contains_key(k) {
                        attrs.insert(k.clone(), v.clone());
                        added += 1;
                    }
                }
            }
        }
        added
    };
    let mut added = 0;
    let mut edited = std::collections::BTreeMap::new();
    for (name, from) in arrays {
        let path = store.join(name).join("zarr.json");
        if !path.is_file() {
            continue;
        }
        let mut meta = read(&path)?;
        let n = add(&mut meta, from);
        if n > 0 {
            let bytes = json_bytes(&meta);
            fs::write(&path, &bytes).map_err(|e| Error::io(&path, e))?;
            edited.insert(name.as_str(), bytes);
            added += n;
        }
    }
    let path = store.join("zarr.json");
    let mut meta = read(&path)?;
    added += add(&mut meta, root);
    if added > 0 {
        let local = svar2_storage::LocalDir {
            root: store.to_path_buf(),
        };
        let meta = match with_metadata_refreshed(&meta, &edited) {
            Some(meta) => meta,
            None => with_record(&local, &[], &Default::default(), &meta)?,
        };
        let tmp = store.join(".zarr.json.tmp");
        fs::write(&tmp, json_bytes(&meta)).map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    }
    Ok(added)
}

/// `root_meta` with its record's metadata fingerprints of the arrays `edited` (new
/// metadata bytes, by name) made again. Only metadata changed, so the rest of the
/// record (shards present, their sizes and chunk sums) holds as the writer made it,
/// and is not read back from every shard's index (at biobank scale, millions of
/// reads). `None` where the root carries no record or the record lacks an edited
/// array: the caller makes it whole.
fn with_metadata_refreshed(
    root_meta: &serde_json::Value,
    edited: &std::collections::BTreeMap<&str, Vec<u8>>,
) -> Option<serde_json::Value> {
    let mut root_meta = root_meta.clone();
    let record = root_meta
        .get_mut("attributes")?
        .get_mut("svar2")?
        .get_mut("shards")?
        .as_object_mut()?;
    for (name, bytes) in edited {
        let entry = record.get_mut(*name)?.as_object_mut()?;
        entry.insert("structure".into(), crate::written::structure(bytes).into());
        entry.insert("meta".into(), crate::written::fingerprint(bytes).into());
    }
    Some(root_meta)
}

fn json_bytes(value: &serde_json::Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(value).expect("json");
    text.push('\n');
    text.into_bytes()
}

/// Total bytes and file count under a directory.
pub fn disk_usage(root: &Path) -> (u64, u64) {
    if svar2_storage::bucket::is_bucket_url(root) {
        let listed = Bucket::open(root).and_then(|b| b.list(""));
        let objects = listed.unwrap_or_default();
        return (objects.iter().map(|(_, n)| n).sum(), objects.len() as u64);
    }
    if svar2_storage::zip::is_zip_file(root) {
        let listed = ZipStore::open(root).and_then(|z| z.list(""));
        let entries = listed.map(|l| l.len() as u64).unwrap_or_default();
        return (fs::metadata(root).map(|m| m.len()).unwrap_or(0), entries);
    }
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
    if svar2_storage::bucket::is_bucket_url(root) {
        return digest_bucket(root);
    }
    let root = &crate::replace::without_trailing_slash(root);
    if !root.exists() {
        return Err(Error::NotStore {
            path: root.into(),
            msg: "no such file or directory".into(),
        });
    }
    if svar2_storage::zip::is_zip_file(root) {
        let zip = ZipStore::open(root)?;
        if zip.size("zarr.json")?.is_none() {
            return Err(Error::NotStore {
                path: root.into(),
                msg: "not a Zarr v3 store (no root zarr.json in the zip)".into(),
            });
        }
        return digest_objects(&zip);
    }
    if !root.is_dir() {
        return Err(Error::NotStore {
            path: root.into(),
            msg: "a file, not a store directory or .zip".into(),
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
    digest_objects(&svar2_storage::LocalDir {
        root: root.to_path_buf(),
    })
}

/// blake3 over every object's key and bytes (each length-prefixed), in sorted key
/// order, the in-progress marker left out (it outlives the root `zarr.json` only if
/// killed between the two): one hash for a store wherever it lives.
fn digest_objects(storage: &dyn Storage) -> Result<String> {
    let mut h = blake3::Hasher::new();
    for (k, _) in storage.list("")?.iter().filter(|(k, _)| k != IN_PROGRESS) {
        let bytes = storage.get(k)?.ok_or_else(|| Error::NotStore {
            path: storage.name(k),
            msg: "listed but gone when read (the store changed during the digest)".into(),
        })?;
        digest_update(&mut h, k, &bytes);
    }
    Ok(h.finalize().to_hex().to_string())
}

/// One object into a digest: its key and bytes, each length-prefixed.
fn digest_update(h: &mut blake3::Hasher, key: &str, bytes: &[u8]) {
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key.as_bytes());
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// [`digest`] of a bucket store: its own checks, then the same hash over its objects,
/// so a store in a bucket and its local twin have one digest.
fn digest_bucket(url: &Path) -> Result<String> {
    let bucket = Bucket::open(url)?;
    let objects = bucket.list("")?;
    if !objects.iter().any(|(k, _)| k == "zarr.json") {
        let msg = if objects.is_empty() {
            "no such store (no objects under this prefix)"
        } else {
            "not a complete store (no root zarr.json): the conversion did not finish"
        };
        return Err(Error::NotStore {
            path: url.into(),
            msg: msg.into(),
        });
    }
    digest_objects(&bucket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Attributes added to a finished store leave the record as making it whole
    /// from the files would: the fingerprints of the edited array's metadata change,
    /// and nothing else.
    #[test]
    fn added_attributes_keep_the_record_a_function_of_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path();
        for (name, chunks) in [("a", ["c/0/0", "c/1/0"]), ("b", ["c/0/0", "c/0/1"])] {
            let meta = json!({"zarr_format": 3, "node_type": "array", "shape": [4, 4],
                "data_type": "int8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
                "codecs": [{"name": "bytes"}], "dimension_names": ["variants", "samples"],
                "attributes": {"description": name}});
            for c in chunks {
                let path = store.join(name).join(c);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, format!("{name}{c}")).unwrap();
            }
            fs::write(store.join(name).join("zarr.json"), json_bytes(&meta)).unwrap();
        }
        let local = svar2_storage::LocalDir {
            root: store.to_path_buf(),
        };
        let whole =
            |root: &serde_json::Value| with_record(&local, &[], &Default::default(), root).unwrap();
        let root = json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
        let before = whole(&root);
        fs::write(store.join("zarr.json"), json_bytes(&before)).unwrap();

        let theirs = serde_json::Map::from_iter([("units".to_string(), json!("bp"))]);
        let arrays = std::collections::BTreeMap::from([("b".to_string(), theirs.clone())]);
        assert_eq!(add_attributes(store, &theirs, &arrays).unwrap(), 2);
        let after: serde_json::Value =
            serde_json::from_slice(&fs::read(store.join("zarr.json")).unwrap()).unwrap();
        assert_eq!(after, whole(&after));
        let meta = |a: &str| after["attributes"]["svar2"]["shards"][a]["meta"].clone();
        let was = |a: &str| before["attributes"]["svar2"]["shards"][a]["meta"].clone();
        assert_eq!(meta("a"), was("a"));
        assert_ne!(meta("b"), was("b"));
    }
}
