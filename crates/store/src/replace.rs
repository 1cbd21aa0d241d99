//! What an output path holds, and whether svar2 may replace it. svar2 deletes only
//! what it recognises, entry by entry, as a Zarr store (valid root metadata, nothing
//! but metadata and chunk keys below it) or as its own interrupted conversion; one
//! file of anyone else's anywhere in the tree — a `thesis.txt`, a symbolic link, a
//! FIFO — makes the whole path foreign, refused even with `--force`.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Marks a directory as an svar2 store being written; removed once the root
/// `zarr.json` is in place. An output holding it is an interrupted conversion.
pub const IN_PROGRESS: &str = ".svar2-in-progress";

/// What an output path holds before a conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Existing {
    Empty,
    /// A finished Zarr store (root `zarr.json`, or `.zgroup`/`.zarray` of Zarr v2,
    /// valid JSON, and only store entries): replaced only with `--force`.
    Store,
    /// An svar2 conversion that was killed or failed: started again.
    Interrupted,
    /// Anything else — a user's own files, a file, a symbolic link, metadata that is
    /// not Zarr's: never removed, not even with `--force`. Says what is in the way.
    Foreign(String),
}

/// The largest metadata document read to recognise a store (a root `zarr.json` of a
/// VCF Zarr store with a long header is a few hundred KiB).
const MAX_METADATA: u64 = 64 << 20;

/// A directory of the output as listed: files by name, folders by name.
#[derive(Default)]
struct Tree {
    files: Vec<String>,
    dirs: BTreeMap<String, Tree>,
}

impl Tree {
    fn insert(&mut self, key: &str) {
        let mut node = self;
        let mut parts = key.split('/').filter(|p| !p.is_empty()).peekable();
        while let Some(p) = parts.next() {
            if parts.peek().is_none() {
                node.files.push(p.to_string());
            } else {
                node = node.dirs.entry(p.to_string()).or_default();
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.files.is_empty() && self.dirs.is_empty()
    }

    fn has_file(&self, name: &str) -> bool {
        self.files.iter().any(|f| f == name)
    }

    /// Names at this level, files and folders, sorted (for messages).
    fn names(&self) -> Vec<String> {
        let mut n: Vec<String> = self.files.iter().chain(self.dirs.keys()).cloned().collect();
        n.sort();
        n
    }
}

/// Metadata documents of a Zarr node (v3, and v2's).
const METADATA: [&str; 5] = ["zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"];

/// Whether a file of this name is svar2's own while it writes (a metadata document
/// written aside, a shard being re-laid out or assembled from parts, the in-progress
/// marker, partitions' work).
fn is_svar2_temporary(name: &str) -> bool {
    name.starts_with(".relay.")
        || name.ends_with(".json.tmp")
        || name
            .strip_suffix(".part")
            .or_else(|| name.strip_suffix(".tmp"))
            .is_some_and(is_chunk_file)
}

/// A chunk key's file name in an array's folder: Zarr v3's `c` (0-d) or `c.0.1`
/// (`.` separator), Zarr v2's `0.1.2` (or `0` of a nested `0/1/2`).
fn is_chunk_file(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name == "c"
        || name
            .strip_prefix("c.")
            .is_some_and(|rest| rest.split('.').all(digits))
        || name.split('.').all(digits)
}

/// A folder of chunk keys (`c/0/1/…` or v2's nested `0/1/…`): digits all the way down.
fn is_chunk_tree(t: &Tree) -> bool {
    let digits = |s: &String| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    t.files.iter().all(|f| digits(f) || is_svar2_temporary(f))
        && t.dirs.iter().all(|(n, d)| digits(n) && is_chunk_tree(d))
}

/// The first entry under the node `t` (at `at`, `""` for the root) that is not a store
/// entry, if any. `interrupted`: a conversion cut short, whose arrays may not have
/// their metadata yet.
fn first_foreign(
    t: &Tree,
    at: &str,
    interrupted: bool,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Option<String> {
    let path = |n: &str| {
        if at.is_empty() {
            n.to_string()
        } else {
            format!("{at}/{n}")
        }
    };
    // Every metadata document is JSON (a finished store's; an interrupted one may
    // hold one cut short), and says whether this node is an array.
    let mut is_array = false;
    let mut is_node = false;
    for m in METADATA.iter().filter(|m| t.has_file(m)) {
        let doc: Option<serde_json::Value> = read(&path(m))
            .as_deref()
            .and_then(|b| crate::json::parse(b).ok());
        match doc {
            Some(v) if v.is_object() => {
                is_node |= matches!(*m, "zarr.json" | ".zgroup" | ".zarray");
                is_array |= *m == ".zarray"
                    || (*m == "zarr.json"
                        && v.get("node_type").and_then(serde_json::Value::as_str) == Some("array"));
            }
            _ if interrupted => {}
            _ => return Some(path(m)),
        }
    }
    if !at.is_empty() && !is_node && !interrupted {
        // A folder below a finished store is an array or group, with its metadata.
        return Some(t.names().first().map_or(at.to_string(), |n| path(n)));
    }
    let is_array = is_array || interrupted;
    for f in &t.files {
        let ok = METADATA.contains(&f.as_str())
            || is_svar2_temporary(f)
            || (at.is_empty() && f.starts_with(".svar2-"))
            || (is_array && is_chunk_file(f));
        if !ok {
            return Some(path(f));
        }
    }
    for (name, d) in &t.dirs {
        if at.is_empty() && name.starts_with(".svar2-") && interrupted {
            continue; // partitions' work, removed with the conversion it belongs to
        }
        let chunks = is_array && (name == "c" || name.bytes().all(|b| b.is_ascii_digit()));
        if chunks && is_chunk_tree(d) {
            continue;
        }
        if let Some(bad) = first_foreign(d, &path(name), interrupted, read) {
            return Some(bad);
        }
    }
    None
}

/// Why the root metadata document is not Zarr's, if it is not (`bytes` of
/// `zarr.json`, `.zgroup` or `.zarray`).
fn bad_root_metadata(name: &str, bytes: &[u8]) -> Option<String> {
    let v: serde_json::Value = match crate::json::parse(bytes) {
        Ok(v) => v,
        Err(e) => return Some(format!("its `{name}` is not JSON ({e})")),
    };
    let format = v.get("zarr_format").and_then(serde_json::Value::as_u64);
    let want = if name == "zarr.json" { 3 } else { 2 };
    let node_ok = name != "zarr.json"
        || matches!(
            v.get("node_type").and_then(serde_json::Value::as_str),
            Some("group" | "array")
        );
    if format != Some(want) || !node_ok {
        return Some(format!(
            "its `{name}` is not Zarr v{want} metadata (no `zarr_format: {want}`{})",
            if name == "zarr.json" {
                " and `node_type`"
            } else {
                ""
            }
        ));
    }
    None
}

/// What the listed tree holds. `read` fetches a root-level file's bytes (at most
/// [`MAX_METADATA`]; `None`: unreadable or larger).
fn classify_tree(t: &Tree, read: &dyn Fn(&str) -> Option<Vec<u8>>) -> Existing {
    if t.is_empty() {
        return Existing::Empty;
    }
    let names = t.names();
    let shown = || {
        let s: Vec<String> = names.iter().take(3).map(|n| format!("`{n}`")).collect();
        format!(
            "{}{} ({} entries)",
            s.join(", "),
            if names.len() > 3 { ", …" } else { "" },
            names.len()
        )
    };
    let interrupted = t.has_file(IN_PROGRESS);
    if interrupted {
        // svar2 writes its marker into an emptied directory; killed between creating
        // it and writing its first bytes, it leaves the marker empty and alone.
        let ours = read(IN_PROGRESS)
            .is_some_and(|b| b.starts_with(b"svar2 ") || (b.is_empty() && names.len() == 1));
        if !ours {
            return Existing::Foreign(format!("holds a `{IN_PROGRESS}` that svar2 did not write"));
        }
    } else {
        let Some(meta) = ["zarr.json", ".zgroup", ".zarray"]
            .into_iter()
            .find(|m| t.has_file(m))
        else {
            return Existing::Foreign(format!("is not a Zarr store: it holds {}", shown()));
        };
        let bytes = read(meta).unwrap_or_default();
        if let Some(why) = bad_root_metadata(meta, &bytes) {
            return Existing::Foreign(format!("is not a Zarr store: {why}"));
        }
    }
    if let Some(bad) = first_foreign(t, "", interrupted, read) {
        return Existing::Foreign(format!(
            "holds `{bad}`, which is not part of a Zarr store{}",
            if interrupted {
                " (beside an interrupted svar2 conversion)"
            } else {
                ""
            }
        ));
    }
    if interrupted {
        Existing::Interrupted
    } else {
        Existing::Store
    }
}

/// Reads at most [`MAX_METADATA`] bytes of a regular file.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_METADATA {
        return None;
    }
    let mut bytes = Vec::new();
    fs::File::open(path)
        .ok()?
        .take(MAX_METADATA)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Lists a local directory into a [`Tree`], never following a link; an entry that is
/// neither a regular file nor a folder is returned as the foreign one.
fn list_local(root: &Path, rel: &str, t: &mut Tree) -> Result<Option<String>> {
    let dir = root.join(rel);
    for e in fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
        let e = e.map_err(|e| Error::io(&dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let key = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let ty = e.file_type().map_err(|x| Error::io(e.path(), x))?;
        if ty.is_dir() {
            let sub = t.dirs.entry(name).or_default();
            if let Some(bad) = list_local(root, &key, sub)? {
                return Ok(Some(bad));
            }
        } else if ty.is_file() {
            t.files.push(name);
        } else {
            let what = if ty.is_symlink() {
                "a symbolic link"
            } else {
                "a special file (FIFO, socket or device)"
            };
            return Ok(Some(format!(
                "holds `{key}`, {what}, not part of a Zarr store"
            )));
        }
    }
    Ok(None)
}

/// An output that is a symbolic link: never written through, whatever it points to
/// (`what`: what to give instead).
fn a_symbolic_link(what: &str) -> Existing {
    Existing::Foreign(format!(
        "is a symbolic link (svar2 does not write through one: give the {what} it points to)"
    ))
}

/// What the local path `root` holds.
pub(crate) fn classify(root: &Path) -> Result<Existing> {
    let meta = fs::symlink_metadata(root).map_err(|e| Error::io(root, e))?;
    if meta.file_type().is_symlink() {
        return Ok(a_symbolic_link("directory"));
    }
    if !meta.is_dir() {
        return Ok(Existing::Foreign("is a file, not a directory".into()));
    }
    let mut tree = Tree::default();
    if let Some(bad) = list_local(root, "", &mut tree)? {
        return Ok(Existing::Foreign(bad));
    }
    Ok(classify_tree(&tree, &|name| read_small(&root.join(name))))
}

/// What the local path `root`, a `.zip` output, holds: nothing, a zip store (replaced
/// only with `--force`), or anything else (never replaced).
pub(crate) fn classify_zip(root: &Path) -> Result<Existing> {
    let meta = match fs::symlink_metadata(root) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Empty),
        Err(e) => return Err(Error::io(root, e)),
    };
    if meta.file_type().is_symlink() {
        return Ok(a_symbolic_link("file"));
    }
    if !meta.is_file() {
        return Ok(Existing::Foreign(
            "is a directory or special file; a .zip output is written as one file".into(),
        ));
    }
    let zip = match svar2_storage::ZipStore::open(root) {
        Ok(z) => z,
        Err(e) => return Ok(Existing::Foreign(format!("is not a zip store ({e})"))),
    };
    use svar2_storage::Storage;
    let listed = zip.list("")?;
    let read = |k: &str| {
        listed
            .iter()
            .any(|(key, n)| key == k && *n <= MAX_METADATA)
            .then(|| zip.get(k).ok().flatten())
            .flatten()
    };
    Ok(
        match classify_keys(listed.iter().map(|(k, _)| k.as_str()), &read) {
            Existing::Empty => Existing::Store,
            other => other,
        },
    )
}

/// What a bucket prefix holds, from its objects' keys (relative to the prefix) and a
/// way to fetch a root-level object.
pub(crate) fn classify_keys<'k>(
    keys: impl IntoIterator<Item = &'k str>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Existing {
    let mut tree = Tree::default();
    for k in keys {
        tree.insert(k);
    }
    classify_tree(&tree, read)
}

/// Refuses what `existing` forbids: a finished store without `force`, anything that is
/// not a store (or an interrupted one, or empty) always.
pub(crate) fn refuse(root: &Path, existing: &Existing, force: bool) -> Result<()> {
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

/// `path` with trailing slashes dropped, so `link/` names the link itself (the
/// kernel resolves a trailing slash through a symbolic link) and is refused as one.
pub fn without_trailing_slash(path: &Path) -> std::path::PathBuf {
    let s = path.as_os_str().as_encoded_bytes();
    let mut end = s.len();
    while end > 1 && s[end - 1] == b'/' {
        end -= 1;
    }
    // SAFETY: cutting ASCII '/' bytes off the end leaves a valid encoded OsStr.
    let os = unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(&s[..end]) };
    std::path::PathBuf::from(os)
}

/// A local output path as svar2 takes it: trailing slashes dropped (see
/// [`without_trailing_slash`]), and one through `..` refused — `out.zarr/array/..`
/// names the store only while `array` exists, which replacing the store removes.
pub fn output_path(path: &Path) -> Result<std::path::PathBuf> {
    if path
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(Error::NotStore {
            path: path.into(),
            msg: "an output path through `..`: give it without `..` (e.g. its absolute path)"
                .into(),
        });
    }
    Ok(without_trailing_slash(path))
}

/// Whether the existing file `written` is a hard link to a file under `read` (a
/// write to it would change that file whatever its name).
fn hard_link_into(read: &Path, written: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(w) = fs::metadata(written) else {
        return false;
    };
    if !w.is_file() || w.nlink() < 2 {
        return false;
    }
    let same = |m: &fs::Metadata| m.dev() == w.dev() && m.ino() == w.ino();
    if fs::metadata(read).is_ok_and(|m| m.is_file()) {
        return fs::metadata(read).is_ok_and(|m| same(&m));
    }
    let mut stack = vec![read.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else if same(&m) {
                return true;
            }
        }
    }
    false
}

/// Refuses writing `written` where it would overwrite or delete what `read` names (a
/// store or an input file): one inside the other, the same path, or a hard link to a
/// file of it.
pub fn refuse_overlap(read: &Path, written: &Path, what_read: &str) -> Result<()> {
    let (r, w) = (canonical(read), canonical(written));
    if w.starts_with(&r) || r.starts_with(&w) || hard_link_into(&r, &w) {
        return Err(Error::NotStore {
            path: written.into(),
            msg: format!(
                "overlaps the {what_read} {} (writing here would overwrite or delete it): \
                 write elsewhere",
                read.display()
            ),
        });
    }
    Ok(())
}

/// A path made absolute with its links resolved, as far as it exists: a path not yet
/// created is its parent's canonical path joined with its name.
fn canonical(p: &Path) -> std::path::PathBuf {
    let p = without_trailing_slash(p);
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    match (p.parent(), p.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            canonical(dir).join(name)
        }
        _ => p.to_path_buf(),
    }
}

/// The Zarr store `path` would write into or over, if any: a zip store at `path`, or a
/// directory above it holding root metadata (`zarr.json`, `.zgroup`). Outputs that
/// are not stores (`view -o`) are refused there: a VCF written over a store's files
/// destroys it.
pub fn store_at_or_above(path: &Path) -> Option<std::path::PathBuf> {
    use svar2_storage::Storage;
    if svar2_storage::zip::is_zip_file(path) {
        let is_store = svar2_storage::ZipStore::open(path).is_ok_and(|z| {
            ["zarr.json", ".zgroup"]
                .iter()
                .any(|k| z.size(k).ok().flatten().is_some())
        });
        if is_store {
            return Some(path.to_path_buf());
        }
    }
    let abs = std::path::absolute(path).ok()?;
    abs.ancestors()
        .skip(1)
        .find(|d| d.join("zarr.json").is_file() || d.join(".zgroup").is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ks: &[&str], files: &[(&str, &str)]) -> Existing {
        let files: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        classify_keys(ks.iter().copied(), &|n| {
            files.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone())
        })
    }

    const ROOT: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;
    const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array"}"#;

    #[test]
    fn only_stores_are_stores() {
        let store = [
            "zarr.json",
            "call_genotype/zarr.json",
            "call_genotype/c/0/0/0",
            "call_genotype/c/1/0/0",
            "sample_id/zarr.json",
            "sample_id/c/0",
        ];
        let docs = [
            ("zarr.json", ROOT),
            ("call_genotype/zarr.json", ARRAY),
            ("sample_id/zarr.json", ARRAY),
        ];
        assert_eq!(keys(&store, &docs), Existing::Store);
        // A user's file anywhere, metadata that is not Zarr's, chunks of no array.
        let mut with_thesis = store.to_vec();
        with_thesis.push("call_genotype/thesis.txt");
        assert!(
            matches!(keys(&with_thesis, &docs), Existing::Foreign(m) if m.contains("call_genotype/thesis.txt"))
        );
        // Names that only look like a store's: a chunk key at a group's root, a folder
        // without metadata or with a zarr.json that is not JSON, svar2's marker in an
        // array's folder.
        for extra in [
            "0",
            "c/0",
            "mine/0",
            "mine/zarr.json",
            "sample_id/.svar2-in-progress",
        ] {
            let mut ks = store.to_vec();
            ks.push(extra);
            assert!(
                matches!(keys(&ks, &docs), Existing::Foreign(_)),
                "{extra} is a store entry"
            );
        }
        assert!(matches!(
            keys(&["zarr.json", "thesis.txt"], &[("zarr.json", "not json")]),
            Existing::Foreign(m) if m.contains("not JSON")
        ));
        assert!(matches!(
            keys(&["zarr.json"], &[("zarr.json", r#"{"a": 1}"#)]),
            Existing::Foreign(_)
        ));
        assert!(matches!(
            keys(&["zarr.json", "notes/c/0"], &[("zarr.json", ROOT)]),
            Existing::Foreign(_)
        ));
        assert!(matches!(
            keys(
                &["zarr.json", "x/zarr.json", "x/c/0/a"],
                &[("zarr.json", ROOT), ("x/zarr.json", ARRAY)]
            ),
            Existing::Foreign(_)
        ));
        // Zarr v2 (bio2zarr's layout).
        let v2 = [
            ".zgroup",
            ".zattrs",
            ".zmetadata",
            "call_genotype/.zarray",
            "call_genotype/0.0.0",
        ];
        let v2_docs = [
            (".zgroup", r#"{"zarr_format": 2}"#),
            (".zattrs", "{}"),
            (".zmetadata", "{}"),
            ("call_genotype/.zarray", r#"{"zarr_format": 2}"#),
        ];
        assert_eq!(keys(&v2, &v2_docs), Existing::Store);
        assert!(matches!(
            keys(
                &v2,
                &[(".zgroup", r#"{"zarr_format": 2}"#), (".zattrs", "garbage")]
            ),
            Existing::Foreign(_)
        ));
        // An interrupted svar2 conversion: only with svar2's own marker.
        let partial = [
            IN_PROGRESS,
            "call_genotype/c/0/0/0",
            "call_genotype/c/31.0.part",
            ".svar2-partitions/3/spill.0.bin",
        ];
        assert_eq!(
            keys(&partial, &[(IN_PROGRESS, "svar2 0.1.0 pid 7\n")]),
            Existing::Interrupted
        );
        assert!(matches!(
            keys(&partial, &[(IN_PROGRESS, "mine")]),
            Existing::Foreign(_)
        ));
        // Killed as it created the marker: empty and alone, it is svar2's; beside
        // anything else, an empty marker proves nothing.
        assert_eq!(
            keys(&[IN_PROGRESS], &[(IN_PROGRESS, "")]),
            Existing::Interrupted
        );
        assert!(matches!(
            keys(&partial, &[(IN_PROGRESS, "")]),
            Existing::Foreign(_)
        ));
        assert!(matches!(
            keys(&[IN_PROGRESS, "thesis.txt"], &[(IN_PROGRESS, "svar2 0.1.0 pid 7\n")]),
            Existing::Foreign(m) if m.contains("thesis.txt")
        ));
        assert_eq!(keys(&[], &[]), Existing::Empty);
    }

    #[test]
    fn trailing_slashes_are_dropped() {
        assert_eq!(without_trailing_slash(Path::new("a/b//")), Path::new("a/b"));
        assert_eq!(without_trailing_slash(Path::new("/")), Path::new("/"));
        assert_eq!(without_trailing_slash(Path::new("x")), Path::new("x"));
    }
}
