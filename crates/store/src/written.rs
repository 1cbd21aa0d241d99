//! Which shards a writer wrote: recorded in the root `zarr.json` when an svar2 store
//! is finished (`attributes.svar2.shards`), so a shard file that goes missing later
//! (a deleted file, a torn copy, an object lost from a bucket) is damage every reader
//! reports, not the fill values Zarr reads for a chunk never stored.
//!
//! Per array: `{"grid": [shards along each axis], "absent": [[first, count], …],
//! "structure": …, "meta": …, "sizes": …}`:
//! - `absent`: runs of the shards (numbered in C order over the grid) svar2 left out
//!   because every value in them is fill;
//! - `structure` ([`structure`]): the metadata less its attributes. An attribute edit
//!   (zarr-python's `attrs[...] = ...`, which rewrites the file in its own key order)
//!   keeps the record; an edit of the shape, data type, chunks or codecs does not;
//! - `meta` ([`fingerprint`]): the metadata's bytes, which records written before
//!   `structure` carry alone (and apply while the bytes are unchanged), and which tell
//!   whether another writer rewrote the array;
//! - `sizes` ([`sizes`]): every shard written, by number and byte size. A chunk's
//!   crc32c does not depend on where the chunk lies, so a shard swapped with another,
//!   or copied over from another conversion, passes its checksums; its size, in its
//!   place, mostly does not. It also tells an edit of the metadata alone (the shards
//!   svar2's still) from another writer's rewrite of the array.
//! - `chunks` ([`ChunkSum`]): every stored inner chunk, by its place (shard key and
//!   index position) and the crc32c it ends with. Two shards of one size swapped
//!   (`variant_contig`'s all-0 and all-1 chunks compress alike), two chunks of one
//!   size swapped in their shard, or an index entry rewritten to "not stored" with its
//!   checksum made again (the chunk then reads as fill) keep `sizes` and every
//!   checksum; they change this. Summed from what the writer noted as it wrote each
//!   shard ([`Known`]), from what partitions found in the shards they uploaded
//!   ([`Elsewhere`]), and otherwise read from the files; left out where neither says
//!   (a partition of a build before it).
//!
//! Another writer that copies the root attributes (zarr-python, xarray) but writes
//! arrays of its own keeps Zarr's fill semantics for them, as stores without the record
//! (bio2zarr's, svar2's before it) do.

use crate::error::{Error, Result};
use crate::layout::ArrayLayout;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use svar2_storage::Storage;

/// The shard grid of an array: shards (chunks, unsharded) along each axis.
pub fn grid(layout: &ArrayLayout) -> Vec<u64> {
    let outer = layout.shard.as_ref().unwrap_or(&layout.chunk);
    layout
        .shape
        .iter()
        .zip(outer)
        .map(|(n, c)| if *c == 0 { 0 } else { n.div_ceil(*c) })
        .collect()
}

/// The fingerprint of an array's metadata bytes that records written before
/// [`structure`] carry (as `meta`).
pub fn fingerprint(meta: &[u8]) -> String {
    blake3::hash(meta).to_hex()[..16].to_string()
}

/// The fingerprint of what an array's metadata says of its chunks and values: the
/// metadata less `attributes` (and an empty `storage_transformers`, which zarr-python
/// adds), keys sorted at every level, so a rewrite that only edits attributes or
/// reorders keys has the same fingerprint. Bytes that are not a JSON object are
/// fingerprinted as bytes.
pub fn structure(meta: &[u8]) -> String {
    let Ok(Value::Object(mut m)) = crate::json::parse(meta) else {
        return fingerprint(meta);
    };
    m.remove("attributes");
    if m.get("storage_transformers")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        m.remove("storage_transformers");
    }
    fingerprint(canonical(&Value::Object(m)).to_string().as_bytes())
}

/// `v` with every object's keys in sorted order (serde_json keeps insertion order here)
/// and every whole number written as an integer (jq and JavaScript write a
/// `fill_value` of `0.0` as `0`).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Value::from(x as i64),
            _ => v.clone(),
        },
        other => other.clone(),
    }
}

/// The fingerprint of an array's shard files: each one's number (C order over the
/// grid) and byte size, in number order.
pub fn sizes(shards: &BTreeMap<u64, u64>) -> String {
    let mut h = blake3::Hasher::new();
    for (n, size) in shards {
        h.update(&n.to_le_bytes());
        h.update(&size.to_le_bytes());
    }
    h.finalize().to_hex()[..16].to_string()
}

/// The fingerprint of an array's stored inner chunks: each chunk's place (its shard's
/// key under the array, `c/3/0/0`, and its position in the shard's index) and its
/// last four bytes (its crc32c, in svar2's chains), mixed and summed, so chunks may
/// be met in any order (`verify` reads them on many threads) and shards counted
/// where they were written (a partition sums its own). A chunk's checksum does not
/// say where the chunk lies; this binds each to its place.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSum(pub u64);

impl ChunkSum {
    /// Adds the chunk at position `inner` of shard `shard` (an unsharded array's
    /// chunk: its key, position 0), stored as `bytes` (fewer than four bytes are taken
    /// as they are, zero-padded).
    pub fn add(&mut self, shard: &str, inner: u64, bytes: &[u8]) {
        let tail = last4(bytes);
        let place = mix(fnv1a(shard.as_bytes()) ^ mix(inner));
        self.0 = self
            .0
            .wrapping_add(mix(place ^ u64::from(u32::from_le_bytes(tail))));
    }

    /// Adds another sum (chunks counted apart, as a partition counts its shards).
    pub fn merge(&mut self, other: ChunkSum) {
        self.0 = self.0.wrapping_add(other.0);
    }

    /// As the record writes it.
    pub fn text(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// The last four bytes of a stored chunk (its crc32c in svar2's chains; fewer
/// bytes zero-padded), which [`ChunkSum::add`] takes.
pub fn last4(bytes: &[u8]) -> [u8; 4] {
    let mut tail = [0u8; 4];
    let last = &bytes[bytes.len().saturating_sub(4)..];
    tail[..last.len()].copy_from_slice(last);
    tail
}

/// FNV-1a over bytes: a shard key to 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64's finaliser: every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Inner chunks per shard of an array (`None`: unsharded, a file is one chunk).
pub fn inner_per_shard(layout: &ArrayLayout) -> Option<u64> {
    let shard = layout.shard.as_ref()?;
    Some(
        shard
            .iter()
            .zip(&layout.chunk)
            .map(|(s, c)| if *c == 0 { 0 } else { s / c })
            .product(),
    )
}

/// The [`ChunkSum`] of one shard file `path` of `size` bytes, `rest` its key under
/// its array (`c/3/0/0`), holding `inner` chunks (`None`: an unsharded array's chunk):
/// its index read from the tail, then each stored chunk's last four bytes. `None`
/// where the file cannot say (gone, shorter than its index, an entry outside it).
pub fn shard_sum(
    path: &std::path::Path,
    size: u64,
    rest: &str,
    inner: Option<u64>,
) -> Option<ChunkSum> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).ok()?;
    let mut sum = ChunkSum::default();
    let mut four = [0u8; 4];
    let Some(n) = inner else {
        let take = size.min(4);
        file.read_exact_at(&mut four[..take as usize], size - take)
            .ok()?;
        sum.add(rest, 0, &four[..take as usize]);
        return Some(sum);
    };
    let n = usize::try_from(n).ok()?;
    let want = crate::shard::index_len(n) as u64;
    if size < want {
        return None;
    }
    let mut tail = vec![0u8; want as usize];
    file.read_exact_at(&mut tail, size - want).ok()?;
    for i in 0..n {
        let Some((off, len)) = crate::shard::entry(&tail, i) else {
            continue;
        };
        let end = off.checked_add(len).filter(|&e| e <= size - want)?;
        let take = len.min(4);
        file.read_exact_at(&mut four[..take as usize], end - take)
            .ok()?;
        sum.add(rest, i as u64, &four[..take as usize]);
    }
    Some(sum)
}

/// What the writer of a store found in the shards it wrote, by key from the store's
/// root: each file's size and [`ChunkSum`], made from the chunks' bytes as they were
/// written, so finishing a store does not read every chunk's tail back (at biobank
/// scale, millions of reads of a store larger than memory).
pub type Known = std::collections::HashMap<String, (u64, ChunkSum)>;

/// The [`ChunkSum`] of array `name`'s shard files `shards` (keys under the array,
/// `c/0/1`, with their sizes; other keys are passed over) in the local directory
/// `root`: from `known` where it holds the file at its size, else read from the file.
/// Each file read is noted in `read` (when given) by its key from the root, so a store
/// written from this one (append's linked shards) is not read twice. `None` where a
/// file cannot say ([`shard_sum`]).
pub fn chunk_sum(
    root: &std::path::Path,
    name: &str,
    layout: &ArrayLayout,
    shards: &[(&str, u64)],
    known: &Known,
    mut read: Option<&mut Known>,
) -> Option<ChunkSum> {
    let inner = inner_per_shard(layout);
    let mut sum = ChunkSum::default();
    for &(rest, size) in shards {
        if rest.strip_prefix('c').and_then(position).is_none() {
            continue;
        }
        let key = format!("{name}/{rest}");
        match known.get(&key) {
            Some(&(at, found)) if at == size => sum.merge(found),
            _ => {
                let found = shard_sum(&root.join(name).join(rest), size, rest, inner)?;
                if let Some(read) = read.as_deref_mut() {
                    read.insert(key, (size, found));
                }
                sum.merge(found);
            }
        }
    }
    Some(sum)
}

/// The shards among `keys` (relative to the array, with their sizes) on `grid`, by
/// number; keys that are no shard of it are passed over.
fn shards_on<'a>(grid: &[u64], keys: impl Iterator<Item = (&'a str, u64)>) -> BTreeMap<u64, u64> {
    keys.filter_map(|(rest, size)| {
        let at = position(rest.strip_prefix('c')?)?;
        Some((number(grid, &at)?, size))
    })
    .collect()
}

/// The shard number (C order) of grid position `at`, `None` outside the grid or when
/// the grid holds more shards than a `u64` counts.
fn number(grid: &[u64], at: &[u64]) -> Option<u64> {
    if at.len() != grid.len() {
        return None;
    }
    let mut n = 0u64;
    for (i, g) in at.iter().zip(grid) {
        if i >= g {
            return None;
        }
        n = n.checked_mul(*g)?.checked_add(*i)?;
    }
    Some(n)
}

/// The grid position of a shard key under `array/c` (`None`: not a chunk key).
fn position(rest: &str) -> Option<Vec<u64>> {
    if rest.is_empty() {
        return Some(Vec::new());
    }
    rest.strip_prefix('/')?
        .split('/')
        .map(|p| p.parse().ok())
        .collect()
}

/// A shard file the finished store holds that is not under the local root (a
/// partitioned conversion into a bucket: a partition uploaded it), with what the
/// partition found in it while it was local.
#[derive(Debug, Clone)]
pub struct Elsewhere {
    pub key: String,
    pub size: u64,
    /// Its [`ChunkSum`] (`None`: a partition of a build before it did not say).
    pub chunks: Option<ChunkSum>,
}

/// The record of a store being finished: every array whose `zarr.json` is among
/// `local`'s objects, its shard files those under `local` plus `elsewhere` (keys
/// already in the bucket a partitioned conversion finishes). A pure function of the
/// files present: the same store gives the same bytes whatever wrote it how.
pub fn record(local: &dyn Storage, elsewhere: &[Elsewhere], known: &Known) -> Result<Value> {
    // (A key both here and elsewhere: the local file is the one the store keeps.)
    let mut keys: BTreeMap<String, u64> =
        elsewhere.iter().map(|e| (e.key.clone(), e.size)).collect();
    let sums: std::collections::HashMap<&str, Option<ChunkSum>> = elsewhere
        .iter()
        .map(|e| (e.key.as_str(), e.chunks))
        .collect();
    let local_listing = local.list("")?;
    let local_keys: std::collections::HashSet<String> =
        local_listing.iter().map(|(k, _)| k.clone()).collect();
    keys.extend(local_listing);
    let mut by_array: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for (k, size) in &keys {
        if let Some((name, rest)) = k.split_once('/') {
            by_array.entry(name).or_default().push((rest, *size));
        }
    }
    let mut out = Map::new();
    for (name, rest) in by_array {
        if !rest.iter().any(|(r, _)| *r == "zarr.json") {
            continue;
        }
        let meta_key = format!("{name}/zarr.json");
        let bytes = local.get(&meta_key)?.unwrap_or_default();
        let meta: Value = crate::json::parse(&bytes).map_err(|_| Error::NotStore {
            path: local.name(&meta_key),
            msg: "unreadable array metadata while finishing the store".into(),
        })?;
        if meta.get("node_type").and_then(Value::as_str) != Some("array") {
            continue;
        }
        let layout = crate::layout::array_v3(name, &[], &meta);
        let g = grid(&layout);
        let shards = shards_on(&g, rest.iter().copied());
        // Chunks are fingerprinted from the local files, and from what the partitions
        // found in theirs.
        let on_grid: Vec<(&str, u64)> = rest
            .iter()
            .copied()
            .filter(|(r, _)| {
                r.strip_prefix('c')
                    .and_then(position)
                    .and_then(|at| number(&g, &at))
                    .is_some()
            })
            .collect();
        let (here, there): (Vec<_>, Vec<_>) = on_grid
            .iter()
            .copied()
            .partition(|(r, _)| local_keys.contains(&format!("{name}/{r}")));
        let chunks = local.local_root().and_then(|root| {
            let mut sum = chunk_sum(root, name, &layout, &here, known, None)?;
            for (r, _) in there {
                sum.merge((*sums.get(format!("{name}/{r}").as_str())?)?);
            }
            Some(sum)
        });
        let present = shards.keys().copied();
        let total = g.iter().try_fold(1u64, |n, x| n.checked_mul(*x));
        let Some(total) = total else { continue };
        let mut absent = Vec::new();
        let mut next = 0u64;
        for p in present.chain([total]) {
            if p > next {
                absent.push(json!([next, p - next]));
            }
            next = p + 1;
        }
        let mut entry = json!({"grid": g, "absent": absent, "structure": structure(&bytes),
            "meta": fingerprint(&bytes), "sizes": sizes(&shards)});
        if let Some(c) = chunks {
            entry["chunks"] = json!(c.text());
        }
        out.insert(name.to_string(), entry);
    }
    Ok(Value::Object(out))
}

/// Whether a record describes the array whose metadata it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The array svar2 wrote, its attributes perhaps edited: the record applies.
    Same,
    /// The shape, data type, chunks or codecs are not the ones svar2 wrote: another
    /// writer's array put in its place, or an edit (which one only the chunk format
    /// tells).
    Structure,
    /// An older record whose metadata bytes changed: which part, it cannot tell.
    Bytes,
}

/// One array's record, read back: which of its shards must be there.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    grid: Vec<u64>,
    /// [`structure`] of the metadata the record describes (`None`: a record written
    /// before it, judged by the bytes alone).
    structure: Option<String>,
    /// [`fingerprint`] of its bytes.
    bytes: Option<String>,
    /// Runs `[first, first + count)` of shards never written, ascending, disjoint.
    absent: Vec<(u64, u64)>,
    /// [`sizes`] of the shards written (`None`: a record written before it).
    sizes: Option<String>,
    /// [`ChunkSum::text`] of the chunks stored (`None`: a record written before it,
    /// or of shards not local when the store was finished).
    chunks: Option<String>,
}

impl Written {
    /// The record of every array of a store from its root attributes (`None`: the
    /// store carries none, so a missing shard reads as fill). A record that is not
    /// the shape svar2 writes is an error naming `root`.
    pub fn of_store(
        root: &std::path::Path,
        attributes: &Map<String, Value>,
    ) -> Result<Option<BTreeMap<String, Written>>> {
        let Some(rec) = attributes.get("svar2").and_then(|s| s.get("shards")) else {
            return Ok(None);
        };
        let bad = |what: &str| Error::NotStore {
            path: root.join("zarr.json"),
            msg: format!(
                "the svar2 shard record ({what}) is malformed: the root metadata was \
                 damaged or edited; restore it from a copy or convert again"
            ),
        };
        let rec = rec.as_object().ok_or_else(|| bad("not an object"))?;
        let mut out = BTreeMap::new();
        for (name, r) in rec {
            let u64s = |v: Option<&Value>| -> Option<Vec<u64>> {
                v?.as_array()?.iter().map(Value::as_u64).collect()
            };
            let grid = u64s(r.get("grid")).ok_or_else(|| bad(name))?;
            let text = |key: &str| r.get(key).and_then(Value::as_str).map(str::to_string);
            let (structure, bytes) = (text("structure"), text("meta"));
            if structure.is_none() && bytes.is_none() {
                return Err(bad(name));
            }
            let total = grid.iter().try_fold(1u64, |n, g| n.checked_mul(*g));
            let mut absent = Vec::new();
            let mut end = 0u64;
            for run in r
                .get("absent")
                .and_then(Value::as_array)
                .ok_or_else(|| bad(name))?
            {
                let v = u64s(Some(run))
                    .filter(|v| v.len() == 2)
                    .ok_or_else(|| bad(name))?;
                let stop = v[0].checked_add(v[1]).ok_or_else(|| bad(name))?;
                // Ascending, disjoint, non-empty, and within the grid.
                if v[0] < end || v[1] == 0 || total.is_some_and(|t| stop > t) {
                    return Err(bad(name));
                }
                absent.push((v[0], stop));
                end = stop;
            }
            let optional = |key: &str| -> Result<Option<String>> {
                match r.get(key) {
                    None => Ok(None),
                    Some(v) => Ok(Some(v.as_str().ok_or_else(|| bad(name))?.to_string())),
                }
            };
            let (sizes, chunks) = (optional("sizes")?, optional("chunks")?);
            out.insert(
                name.clone(),
                Written {
                    grid,
                    structure,
                    bytes,
                    absent,
                    sizes,
                    chunks,
                },
            );
        }
        Ok(Some(out))
    }

    /// The shard grid the writer wrote.
    pub fn grid(&self) -> &[u64] {
        &self.grid
    }

    /// Whether the record describes the array whose metadata bytes are `meta` (not
    /// one another writer put in its place, or an edit).
    pub fn describes(&self, meta: &[u8], layout: &ArrayLayout) -> Match {
        let same_grid = self.grid == grid(layout);
        match (&self.structure, &self.bytes) {
            (Some(s), _) if same_grid && *s == structure(meta) => Match::Same,
            (Some(_), _) => Match::Structure,
            (None, Some(b)) if same_grid && *b == fingerprint(meta) => Match::Same,
            (None, _) => Match::Bytes,
        }
    }

    /// Whether the array's metadata is still the very bytes svar2 wrote: no other
    /// writer (xarray, zarr-python) has rewritten it, and so, likely, not its shards.
    pub fn bytes_unchanged(&self, meta: &[u8]) -> bool {
        self.bytes.as_ref().is_some_and(|b| *b == fingerprint(meta))
    }

    /// Whether the shard files of array `name` that `listing` gives (keys from the
    /// store's root, with their sizes) are the ones the writer wrote, by number and
    /// size (`None`: the record does not say).
    ///
    /// `None` too while a shard it says was written is missing: that is damage of its
    /// own, which readers name (missing shard), and it changes the sizes anyway.
    pub fn sizes_match(&self, name: &str, listing: &[(String, u64)]) -> Option<bool> {
        let want = self.sizes.as_ref()?;
        let shards = self.shards_listed(name, listing);
        self.all_there(&shards).then(|| sizes(&shards) == *want)
    }

    /// The shards of array `name` among `listing` (keys from the store's root, with
    /// their sizes), by number.
    fn shards_listed(&self, name: &str, listing: &[(String, u64)]) -> BTreeMap<u64, u64> {
        let prefix = format!("{name}/");
        let keys = listing
            .iter()
            .filter_map(|(k, size)| Some((k.strip_prefix(&prefix)?, *size)));
        shards_on(&self.grid, keys)
    }

    /// Whether every shard the writer wrote is among `shards`.
    fn all_there(&self, shards: &BTreeMap<u64, u64>) -> bool {
        let written_there = shards.keys().filter(|&&n| self.wrote_number(n)).count();
        written_there as u64 >= self.written_count()
    }

    /// Whether every shard the writer wrote of array `name` is in `listing` (a
    /// missing one is damage of its own, which readers name).
    pub fn all_written_there(&self, name: &str, listing: &[(String, u64)]) -> bool {
        self.all_there(&self.shards_listed(name, listing))
    }

    /// Whether the chunks a reader found stored (their [`ChunkSum`]) are the ones the
    /// writer stored, each where it lies (`None`: the record does not say).
    pub fn chunks_match(&self, found: ChunkSum) -> Option<bool> {
        Some(*self.chunks.as_ref()? == found.text())
    }

    /// Whether the record carries the chunks' [`ChunkSum`] (records before it do not).
    pub fn has_chunks(&self) -> bool {
        self.chunks.is_some()
    }

    /// Whether the record carries the shards' [`sizes`] (records before it do not).
    pub fn has_sizes(&self) -> bool {
        self.sizes.is_some()
    }

    /// How many shards the grid holds (`u64::MAX` past what a `u64` counts).
    pub fn grid_count(&self) -> u64 {
        self.grid
            .iter()
            .try_fold(1u64, |n, g| n.checked_mul(*g))
            .unwrap_or(u64::MAX)
    }

    /// How many shards the writer wrote (the grid less the runs it left out);
    /// `u64::MAX` for a grid of more than a `u64` counts.
    pub fn written_count(&self) -> u64 {
        let total = self.grid_count();
        let left_out = self
            .absent
            .iter()
            .fold(0u64, |n, (first, stop)| n.saturating_add(stop - first));
        total.saturating_sub(left_out)
    }

    /// Whether the writer wrote the shard at grid position `at` (so its absence is
    /// damage).
    pub fn wrote(&self, at: &[u64]) -> bool {
        number(&self.grid, at).is_some_and(|n| self.wrote_number(n))
    }

    /// [`Written::wrote`] of shard number `n` (C order over the grid, inside it).
    fn wrote_number(&self, n: u64) -> bool {
        let i = self.absent.partition_point(|&(_, stop)| stop <= n);
        self.absent.get(i).is_none_or(|&(first, _)| n < first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svar2_storage::LocalDir;

    #[test]
    fn absent_runs_are_recorded_and_read_back() {
        let dir = std::env::temp_dir().join(format!("svar2-written-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let meta = json!({"zarr_format": 3, "node_type": "array", "shape": [10, 4],
            "data_type": "int8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
            "codecs": [{"name": "bytes"}], "dimension_names": ["variants", "samples"]});
        std::fs::create_dir_all(dir.join("a/c/0")).unwrap();
        let meta = meta.to_string();
        std::fs::write(dir.join("a/zarr.json"), &meta).unwrap();
        // Grid 5x2: shards 0, 1 (row 0) and 8 (row 4, column 0) written.
        for k in ["a/c/0/0", "a/c/0/1"] {
            std::fs::write(dir.join(k), b"x").unwrap();
        }
        let local = LocalDir { root: dir.clone() };
        let elsewhere = |chunks| Elsewhere {
            key: "a/c/4/0".into(),
            size: 7,
            chunks,
        };
        // A shard elsewhere whose chunks no partition summed: the record leaves the
        // chunks out; one summed: its sum joins the local files'.
        let none = Known::new();
        let rec = record(&local, &[elsewhere(None)], &none).unwrap();
        let summed = record(&local, &[elsewhere(Some(ChunkSum(5)))], &none).unwrap();
        let mut want = ChunkSum(5);
        want.add("c/0/0", 0, b"x");
        want.add("c/0/1", 0, b"x");
        assert_eq!(summed["a"]["chunks"], json!(want.text()));
        let fp = structure(meta.as_bytes());
        let sized = sizes(&[(0, 1), (1, 1), (8, 7)].into_iter().collect());
        assert_eq!(
            rec,
            json!({"a": {"grid": [5, 2], "absent": [[2, 6], [9, 1]], "structure": fp,
                "meta": fingerprint(meta.as_bytes()), "sizes": sized}})
        );
        let attrs = json!({"svar2": {"shards": rec}});
        let w = Written::of_store(&dir, attrs.as_object().unwrap())
            .unwrap()
            .unwrap();
        let a = &w["a"];
        assert!(a.wrote(&[0, 0]) && a.wrote(&[0, 1]) && a.wrote(&[4, 0]));
        assert!(!a.wrote(&[1, 0]) && !a.wrote(&[3, 1]) && !a.wrote(&[4, 1]));
        assert!(!a.wrote(&[5, 0]));
        // The shards' sizes, as a listing gives them: in place, or two swapped.
        let listing = |a: u64, b: u64| -> Vec<(String, u64)> {
            vec![
                ("a/zarr.json".into(), 300),
                ("a/c/0/0".into(), a),
                ("a/c/0/1".into(), b),
                ("a/c/4/0".into(), 7),
                ("b/c/0/0".into(), 5),
            ]
        };
        assert_eq!(a.sizes_match("a", &listing(1, 1)), Some(true));
        // A written shard missing: the readers' damage (missing shard), not a move.
        let mut short = listing(1, 1);
        short.retain(|(k, _)| k != "a/c/4/0");
        assert_eq!(a.sizes_match("a", &short), None);
        assert_eq!(a.sizes_match("a", &listing(1, 2)), Some(false));
        let mut extra = listing(1, 1);
        extra.push(("a/c/1/1".into(), 1));
        assert_eq!(a.sizes_match("a", &extra), Some(false));
        let parsed: Value = serde_json::from_str(&meta).unwrap();
        let layout = crate::layout::array_v3("a", &[], &parsed);
        assert_eq!(a.describes(meta.as_bytes(), &layout), Match::Same);
        assert_eq!(a.describes(b"{}", &layout), Match::Structure);
        // zarr-python's attribute edit: new attributes, its own key order, an empty
        // `storage_transformers`.
        let mut edited = Map::new();
        for (k, v) in parsed.as_object().unwrap().iter().rev() {
            edited.insert(k.clone(), v.clone());
        }
        edited.insert("attributes".into(), json!({"note": "edited"}));
        edited.insert("storage_transformers".into(), json!([]));
        let edited = Value::Object(edited).to_string();
        assert_eq!(a.describes(edited.as_bytes(), &layout), Match::Same);
        // ... but not the bytes svar2 wrote: another writer's rewrite.
        assert!(a.bytes_unchanged(meta.as_bytes()));
        assert!(!a.bytes_unchanged(edited.as_bytes()));
        // Whole numbers as another writer formats them: the same structure.
        let reformatted = meta.replace("[10,4]", "[10.0,4e0]");
        assert_ne!(reformatted, meta);
        assert_eq!(a.describes(reformatted.as_bytes(), &layout), Match::Same);
        let retyped = meta.replace("int8", "int16");
        assert_eq!(a.describes(retyped.as_bytes(), &layout), Match::Structure);
        // A record written before `structure`: the bytes, unchanged or not.
        let old = json!({"svar2": {"shards": {"a": {"grid": [5, 2], "absent": [],
            "meta": fingerprint(meta.as_bytes())}}}});
        let w = Written::of_store(&dir, old.as_object().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(w["a"].describes(meta.as_bytes(), &layout), Match::Same);
        assert_eq!(w["a"].describes(edited.as_bytes(), &layout), Match::Bytes);
        assert_eq!(w["a"].sizes_match("a", &listing(1, 2)), None);
        for bad in [
            json!({"grid": [5, 2], "structure": fp, "absent": [[3, 1], [2, 1]]}),
            json!({"grid": [5, 2], "absent": []}),
            json!({"grid": [5, 2], "structure": 7, "absent": []}),
            json!({"grid": [5, 2], "structure": fp, "absent": [[9, 2]]}),
        ] {
            let bad = json!({"svar2": {"shards": {"a": bad}}});
            assert!(Written::of_store(&dir, bad.as_object().unwrap()).is_err());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
