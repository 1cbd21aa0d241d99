//! Any VCF Zarr store — a Zarr v2 or v3 group, whoever wrote it — opened through
//! zarrs and read chunk by chunk, in two steps kept apart so callers can run them on
//! different threads: [`AnyArray::read`] (IO only: a chunk's stored bytes; for a
//! sharded array one inner chunk, located through its shard's index read once from
//! the tail) and [`AnyArray::decode`] (CPU only). Rechunk and the reader both read
//! through it.
//!
//! Its own crate (`svar2-zarr`): the store contract (`svar2-store`) says what svar2
//! writes; this reads what anyone wrote, through zarrs where svar2's fast paths do not
//! apply, and the storage (`svar2-storage`) says where the objects are.

pub mod zarrs_storage;

use crate::zarrs_storage::ZarrsStorage;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use svar2_storage::stored::Stored;
use svar2_storage::Storage;
use svar2_store::codec::Raw;
use svar2_store::error::{Error, Result};
use svar2_store::layout::{read_group_in, ArrayLayout};
use svar2_store::shard;
use svar2_store::written::Match;
use svar2_store::Dtype;
use zarrs::array::{Array, ArrayBytes, ArrayToBytesCodecTraits, CodecChain, CodecOptions};
use zarrs::metadata::v3::MetadataV3;
use zarrs::storage::ReadableStorageTraits;

/// The arrays every VCF Zarr store has (rechunk rebuilds the region index from the
/// three `variant_` ones; the reader locates regions with them).
pub const REQUIRED: [&str; 5] = [
    "sample_id",
    "contig_id",
    "variant_contig",
    "variant_position",
    "variant_length",
];

/// One array of a store.
pub struct AnyArray {
    pub name: String,
    pub layout: ArrayLayout,
    pub dtype: Dtype,
    /// Attributes, less Zarr v2's `_ARRAY_DIMENSIONS` (they become dimension names).
    pub attributes: Map<String, Value>,
    array: Array<dyn ReadableStorageTraits>,
    /// Set for a sharded array whose inner chunks can be read one by one.
    inner: Option<InnerReads>,
    /// The chunks (inner chunks) are blosc-zstd frames of little-endian elements:
    /// [`blosc::Decoder`](svar2_blosc::Decoder) decodes them without c-blosc.
    blosc_frames: bool,
    /// Each stored chunk ends with its crc32c (the chain's last codec), checked before
    /// anything decodes it.
    checksum: bool,
    /// The chunks are vlen-utf8 + zstd strings (svar2's string chain):
    /// [`vlen`](svar2_store::vlen) decodes them, checked and bounded, not zarrs.
    vlen_zstd: bool,
    /// Where the store's objects are (a directory or a bucket).
    storage: Arc<dyn Storage>,
    /// The key of the array's metadata: a chunk that is missing while this one is
    /// there is a chunk never stored (all fill); with this one gone too, the store was
    /// deleted or moved while open, and a read must fail rather than return fill.
    meta_key: String,
    /// The shards svar2 wrote (from the root's record): a missing one of these is
    /// damage; `None` (another writer, an older svar2) reads a missing one as fill.
    written: Option<svar2_store::written::Written>,
    /// The local metadata file as opened (device, inode): a chunk opened later while
    /// another file is there belongs to another version (`convert --force` or an
    /// append replaced the store), which the metadata read at open does not describe.
    meta_identity: Option<(u64, u64)>,
    /// The store's root metadata key and its file as opened: an array's metadata
    /// rewritten while the root is not (zarr-python's `attrs[...]`, which replaces the
    /// file) is an edit of the same version, not another version.
    root: Option<(&'static str, (u64, u64))>,
}

/// A local file's (device, inode), `None` where it is not there.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether a codec chain (v3 JSON, inner chunks) is vlen-utf8 then zstd (then
/// perhaps crc32c): svar2's string chain, which [`svar2_store::vlen`] decodes.
fn is_vlen_zstd(chain: &[Value]) -> bool {
    let names: Vec<&str> = chain
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or("?"))
        .collect();
    matches!(
        names.as_slice(),
        ["vlen-utf8", "zstd"] | ["vlen-utf8", "zstd", "crc32c"]
    )
}

/// Whether a codec chain (v3 JSON, inner chunks) ends with `crc32c` (svar2's do).
fn ends_with_crc32c(chain: &[Value]) -> bool {
    chain
        .last()
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        == Some("crc32c")
}

/// Whether a codec chain (v3 JSON, inner chunks) is `bytes` (little endian) then blosc
/// with zstd, then optionally `crc32c`: what svar2 writes for numbers (with the
/// checksum), and bio2zarr's v3 stores too (without).
fn is_blosc_chain(chain: &[Value]) -> bool {
    let name = |c: &Value| c.get("name").and_then(Value::as_str).map(str::to_string);
    let chain = if ends_with_crc32c(chain) {
        &chain[..chain.len() - 1]
    } else {
        chain
    };
    chain.len() == 2
        && name(&chain[0]).as_deref() == Some("bytes")
        && chain[0]
            .pointer("/configuration/endian")
            .and_then(Value::as_str)
            .is_none_or(|e| e == "little")
        && name(&chain[1]).as_deref() == Some("blosc")
        && chain[1]
            .pointer("/configuration/cname")
            .and_then(Value::as_str)
            == Some("zstd")
}

/// The same for an array's metadata, v3 (`zarr.json`, sharded or not) or v2
/// (`.zarray`: blosc-zstd compressor, no filters, little-endian or byte-sized type).
fn blosc_frames(meta: &Value, zarr_format: u8, sharded: bool) -> bool {
    inner_chain(meta, zarr_format, sharded).is_some_and(is_blosc_chain)
        || (zarr_format == 2 && v2_blosc(meta))
}

/// The codec chain of a v3 array's (inner) chunks.
fn inner_chain(meta: &Value, zarr_format: u8, sharded: bool) -> Option<&[Value]> {
    if zarr_format == 2 {
        return None;
    }
    let chain = if sharded {
        meta.pointer("/codecs/0/configuration/codecs")
    } else {
        meta.get("codecs")
    };
    chain.and_then(Value::as_array).map(Vec::as_slice)
}

/// A v2 array whose chunks are blosc-zstd frames (no filters, little-endian or
/// byte-sized type).
fn v2_blosc(meta: &Value) -> bool {
    let dtype = meta.get("dtype").and_then(Value::as_str).unwrap_or("");
    meta.get("filters").is_none_or(Value::is_null)
        && meta.pointer("/compressor/id").and_then(Value::as_str) == Some("blosc")
        && meta.pointer("/compressor/cname").and_then(Value::as_str) == Some("zstd")
        && (dtype.starts_with('<') || dtype.starts_with('|'))
        && !dtype.contains('O')
        && meta.get("order").and_then(Value::as_str).unwrap_or("C") == "C"
}

/// Reading a `sharding_indexed` array inner chunk by inner chunk, as svar2's reader
/// does: each shard's index read once from its tail (and checked), then only the
/// bytes of the inner chunks wanted — so a tile holds inner chunks, never whole
/// decoded shards.
struct InnerReads {
    storage: Arc<dyn Storage>,
    inner: Vec<u64>,
    per_shard: Vec<u64>,
    chain: CodecChain,
    /// Map shard files into memory ([`Access::Random`], a local store) rather than
    /// `pread` them.
    map: bool,
    /// Shards opened so far, with their indexes (`None`: the shard is not stored),
    /// bounded; keyed by shard grid position.
    shards: Mutex<HashMap<Vec<u64>, Arc<Option<OpenShard>>>>,
    /// Shards being opened, one gate each: threads wanting a shard another is opening
    /// wait for it rather than fetch its index again (a bucket's index is a request
    /// and up to 16 bytes per inner chunk).
    opening: Mutex<HashMap<Vec<u64>, Arc<Mutex<()>>>>,
}

/// An open shard file, its index checked.
enum OpenShard {
    /// The file mapped into memory (no system call, copy or buffer per chunk): the
    /// shard is bytes `base..end` of the map (a whole shard file, or an entry of a
    /// zip), its index `index_at..end`.
    Mapped {
        map: Arc<memmap2::Mmap>,
        base: usize,
        index_at: usize,
        end: usize,
    },
    /// Read with `pread` (not mapped, or it cannot be); the index read from the tail.
    File { file: std::fs::File, index: Vec<u8> },
    /// An object in a bucket: the index from one suffix GET, each chunk one ranged
    /// GET of `key`.
    Ranged { key: String, index: Vec<u8> },
}

// A mapped file that another program truncates while it is mapped faults the reading
// process (SIGBUS) where `pread` would fail: svar2 never rewrites a finished store's
// shards in place (`--force` removes files; an unlinked file stays mapped, whole).

impl OpenShard {
    /// The checked index bytes [`shard::entry`] reads.
    fn index(&self) -> &[u8] {
        match self {
            OpenShard::Mapped {
                map, index_at, end, ..
            } => &map[*index_at..*end],
            OpenShard::File { index, .. } | OpenShard::Ranged { index, .. } => index,
        }
    }
}

/// `file` (of `len` bytes) mapped, when it can be.
fn map_file(file: &std::fs::File, len: u64) -> Option<memmap2::Mmap> {
    if len == 0 || usize::try_from(len).is_err() {
        return None;
    }
    // SAFETY: the map is only read, through ranges checked against the file's size
    // when the index was checked; a shard is written whole before its store is
    // complete and never modified in place afterwards (see above for a file another
    // program truncates).
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    (map.len() as u64 == len).then_some(map)
}

/// A shard's grid position: the shard holding inner chunk `idx` (on the stack for
/// the usual ranks: one per 4 KiB chunk on the reader's hot path).
fn shard_position(r: &InnerReads, idx: &[u64]) -> ShardPosition {
    let mut at = ShardPosition::Stack([0; 8], idx.len());
    match &mut at {
        ShardPosition::Stack(s, _) if idx.len() <= 8 => {
            for (d, (i, p)) in idx.iter().zip(&r.per_shard).enumerate() {
                s[d] = i / p;
            }
        }
        _ => at = ShardPosition::Heap(idx.iter().zip(&r.per_shard).map(|(i, p)| i / p).collect()),
    }
    at
}

/// A shard grid position, on the stack up to 8 axes.
enum ShardPosition {
    Stack([u64; 8], usize),
    Heap(Vec<u64>),
}

impl PartialEq for ShardPosition {
    fn eq(&self, other: &ShardPosition) -> bool {
        **self == **other
    }
}

impl std::ops::Deref for ShardPosition {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            ShardPosition::Stack(s, n) => &s[..*n],
            ShardPosition::Heap(v) => v,
        }
    }
}

/// Where inner chunk `idx` lies in its open shard: `(shard, offset, length)`, `None`
/// when the shard or the chunk is not stored. (`check_index` bounded every span by
/// the file's size.)
fn located<'s>(
    shard: &'s Option<OpenShard>,
    r: &InnerReads,
    idx: &[u64],
) -> Option<(&'s OpenShard, usize, usize)> {
    let shard = shard.as_ref()?;
    let pos = idx
        .iter()
        .zip(&r.per_shard)
        .fold(0u64, |pos, (i, p)| pos * p + i % p);
    let (off, len) = shard::entry(shard.index(), pos as usize)?;
    Some((shard, off as usize, len as usize))
}

/// One thread's reads of an array's chunks ([`AnyArray::chunk_reader`]).
pub struct ChunkReader<'a> {
    array: &'a AnyArray,
    /// The shard last read from, and its position.
    shard: Option<(ShardPosition, Arc<Option<OpenShard>>)>,
    buf: Vec<u8>,
}

impl ChunkReader<'_> {
    /// Chunk `idx`'s stored bytes, as [`AnyArray::read`] gives them (`None`: not
    /// stored), borrowed until the next read.
    pub fn read(&mut self, idx: &[u64]) -> Result<Option<&[u8]>> {
        let a = self.array;
        let Some(r) = &a.inner else {
            return Ok(match a.read(idx)? {
                Some(b) => {
                    self.buf = b.into_vec();
                    Some(&self.buf)
                }
                None => None,
            });
        };
        let sidx = shard_position(r, idx);
        if self.shard.as_ref().is_none_or(|(at, _)| *at != sidx) {
            self.shard = Some((sidx, a.shard_of(r, idx)?));
        }
        let (_, shard) = self.shard.as_ref().expect("set above");
        let Some((shard, off, len)) = located(shard, r, idx) else {
            return Ok(None);
        };
        match shard {
            OpenShard::Mapped { map, base, .. } => Ok(Some(&map[base + off..base + off + len])),
            OpenShard::File { file, .. } => {
                self.buf.resize(len, 0);
                a.pread(file, idx, off, &mut self.buf)?;
                Ok(Some(&self.buf))
            }
            OpenShard::Ranged { key, .. } => {
                self.buf = a.ranged(r, key, off, len)?;
                Ok(Some(&self.buf))
            }
        }
    }
}

/// Shards kept open at once (each holds a file handle and 16 bytes per inner chunk).
const MAX_OPEN_SHARDS: usize = 512;

/// The inner-chunk reader of a sharded array, when its shards are the common kind:
/// index at the end, coded `[bytes, crc32c]` (svar2's, zarr-python's and
/// tensorstore's default). Other shards are decoded whole through zarrs.
fn inner_reads(
    storage: &Arc<dyn Storage>,
    layout: &ArrayLayout,
    meta: &Value,
    access: Access,
) -> Option<InnerReads> {
    let shard = layout.shard.as_ref()?;
    let codecs = meta.get("codecs")?.as_array()?;
    if codecs.len() != 1 {
        return None;
    }
    let conf = codecs[0].get("configuration")?;
    let location = conf
        .get("index_location")
        .and_then(Value::as_str)
        .unwrap_or("end");
    let index_names: Vec<&str> = conf
        .get("index_codecs")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let little = conf
        .pointer("/index_codecs/0/configuration/endian")
        .and_then(Value::as_str)
        .is_none_or(|e| e == "little");
    if location != "end" || index_names != ["bytes", "crc32c"] || !little {
        return None;
    }
    let inner = layout.chunk.clone();
    if inner.len() != shard.len() || inner.iter().zip(shard).any(|(i, s)| *i == 0 || s % i != 0) {
        return None;
    }
    let metas: Vec<MetadataV3> = serde_json::from_value(conf.get("codecs")?.clone()).ok()?;
    let chain = CodecChain::from_metadata(&metas).ok()?;
    Some(InnerReads {
        storage: storage.clone(),
        per_shard: shard.iter().zip(&inner).map(|(s, i)| s / i).collect(),
        inner,
        chain,
        map: access == Access::Random && storage.is_local(),
        shards: Mutex::new(HashMap::new()),
        opening: Mutex::new(HashMap::new()),
    })
}

/// How a store's chunks will be read, which decides how shard files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every chunk about once, in order (rechunk, verify, view): `pread` into owned
    /// buffers, so the process's resident memory is only its own buffers.
    Stream,
    /// Random patches, again and again (the patch reader, Python, training): shard
    /// files mapped into memory, each chunk a slice of the page cache. The pages it
    /// touches count in the process's resident set as file-backed (shared) memory,
    /// which the kernel reclaims like any page cache.
    Random,
}

/// A VCF Zarr store.
pub struct AnyGroup {
    pub root: PathBuf,
    pub zarr_format: u8,
    /// The root group's attributes (`vcf_zarr_version`, `vcf_meta_information`, …).
    pub attributes: Map<String, Value>,
    pub arrays: Vec<Arc<AnyArray>>,
}

/// The JSON object at `key` (`None`: there is none). A read that fails (a bucket
/// that stops answering) or bytes that are not JSON are errors, never "no attributes".
fn read_json(storage: &dyn Storage, key: &str) -> Result<Option<Value>> {
    let Some(bytes) = storage.get(key)? else {
        return Ok(None);
    };
    svar2_store::json::parse(&bytes)
        .map(Some)
        .map_err(|e| Error::NotStore {
            path: storage.name(key),
            msg: format!("not JSON ({e})"),
        })
}

fn object(v: Option<Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// svar2's name for a data type as the metadata spells it (v3 names, numpy strings).
fn dtype_of(l: &ArrayLayout) -> Option<Dtype> {
    Some(match l.dtype.as_str() {
        "bool" | "|b1" => Dtype::Bool,
        "int8" | "|i1" => Dtype::I8,
        "int16" | "<i2" => Dtype::I16,
        "int32" | "<i4" => Dtype::I32,
        "int64" | "<i8" => Dtype::I64,
        "float32" | "<f4" => Dtype::F32,
        "string" | "|O" => Dtype::Str,
        "fixed_length_utf32" | "<U1" if l.itemsize == Some(4) => Dtype::Char,
        _ => return None,
    })
}

/// Opens one array through zarrs. A Zarr v2 `fill_value: null` (numpy's "none") on a
/// character array (`<U1`, as bio2zarr writes VCF `Character` fields) is read as the
/// empty string, which zarrs does not assume for that type; a v3 array whose
/// attributes hold Python's bare `NaN` is read as [`svar2_store::json`] reads it.
fn open_array(
    storage: &Arc<dyn ReadableStorageTraits>,
    objects: &dyn Storage,
    name: &str,
    zarr_format: u8,
) -> std::result::Result<Array<dyn ReadableStorageTraits>, String> {
    let path = format!("/{name}");
    let meta = match Array::open(storage.clone(), &path) {
        Ok(a) => return Ok(a),
        Err(e) if zarr_format == 2 => {
            let mut meta = read_json(objects, &format!("{name}/.zarray"))
                .map_err(|e| e.to_string())?
                .ok_or_else(|| e.to_string())?;
            // Fixed-width strings with a null fill (zarr-python's), and chunks of no
            // extent along an axis of none (bio2zarr's `"chunks": [0, 6]`).
            let is_chars = meta
                .get("dtype")
                .and_then(Value::as_str)
                .is_some_and(|d| d.starts_with("<U") || d.starts_with(">U"));
            let null_chars = is_chars && meta.get("fill_value").is_some_and(Value::is_null);
            if null_chars {
                meta["fill_value"] = Value::String(String::new());
            }
            if !empty_axes_chunked_by_one(&mut meta, "/chunks") && !null_chars {
                return Err(e.to_string());
            }
            zarrs::metadata::ArrayMetadata::V2(
                serde_json::from_value(meta).map_err(|_| e.to_string())?,
            )
        }
        Err(e) => {
            // zarr-python's bare NaN/Infinity attributes (read as null), and chunks
            // of no extent along an axis of none (bio2zarr's `[0, 6]` for an input
            // without records): zarrs' parser refuses both.
            let bytes = objects
                .get(&format!("{name}/zarr.json"))
                .map_err(|e| e.to_string())?
                .ok_or_else(|| e.to_string())?;
            let standard = serde_json::from_slice::<Value>(&bytes).is_ok();
            let mut meta = svar2_store::json::parse(&bytes).map_err(|_| e.to_string())?;
            if !empty_axes_chunked_by_one(&mut meta, "/chunk_grid/configuration/chunk_shape")
                && standard
            {
                return Err(e.to_string());
            }
            zarrs::metadata::ArrayMetadata::V3(
                serde_json::from_value(meta).map_err(|_| e.to_string())?,
            )
        }
    };
    Array::new_with_metadata(storage.clone(), &path, meta).map_err(|e| e.to_string())
}

/// Sets to 1 each chunk extent (at `chunks`, a JSON pointer into the metadata, and of
/// a sharding codec's inner chunks) that is 0 along an axis the array's shape is 0
/// in: no chunk exists there either way. Whether any was.
fn empty_axes_chunked_by_one(meta: &mut Value, chunks: &str) -> bool {
    let empty: Vec<bool> = match meta.get("shape").and_then(Value::as_array) {
        Some(shape) => shape.iter().map(|n| n.as_u64() == Some(0)).collect(),
        None => return false,
    };
    let mut changed = false;
    let mut fix = |v: Option<&mut Value>| {
        if let Some(Value::Array(extents)) = v {
            for (x, &e) in extents.iter_mut().zip(&empty) {
                if e && x.as_u64() == Some(0) {
                    *x = Value::from(1u64);
                    changed = true;
                }
            }
        }
    };
    fix(meta.pointer_mut(chunks));
    if let Some(Value::Array(codecs)) = meta.get_mut("codecs") {
        for c in codecs {
            if c.get("name").and_then(Value::as_str) == Some("sharding_indexed") {
                fix(c.pointer_mut("/configuration/chunk_shape"));
            }
        }
    }
    changed
}

/// Every array that names a dimension gives it one length (a reader indexes all of
/// them by the same rows and columns), and the VCF arrays lead with theirs: `call_*`
/// with `variants, samples`, `variant_*` with `variants`. An edited or mixed-up store
/// is refused here, with the two arrays named, before anything reads past an end.
fn check_dimensions(arrays: &[Arc<AnyArray>]) -> std::result::Result<(), String> {
    let mut seen: HashMap<&str, (u64, &str)> = HashMap::new();
    for a in arrays {
        let dims = &a.layout.dimension_names;
        let lead: &[&str] = if a.name.starts_with("call_") {
            &["variants", "samples"]
        } else if a.name.starts_with("variant_") {
            &["variants"]
        } else {
            &[]
        };
        if dims.len() < lead.len() || dims.iter().zip(lead).any(|(d, l)| d != l) {
            return Err(format!(
                "{} has dimensions [{}]; in a VCF Zarr store it starts with [{}] (the store \
                 was edited or written wrongly: convert again)",
                a.name,
                dims.join(", "),
                lead.join(", ")
            ));
        }
        for (d, &n) in dims.iter().zip(a.shape()) {
            let (len, first) = *seen.entry(d).or_insert((n, &a.name));
            if len != n {
                return Err(format!(
                    "{} gives dimension `{d}` length {n} where {first} gives it {len}: the \
                     arrays disagree, so the store is damaged or was edited; convert again",
                    a.name
                ));
            }
        }
    }
    Ok(())
}

/// How many entries the stored files of a list (a 1-dimensional array) can hold at
/// most: each file holds a chunk, or a shard of inner chunks, each of which needs a
/// 16-byte entry in its shard's index. A list says more only when its metadata lies,
/// and a length read from metadata sizes allocations.
fn list_capacity(l: &ArrayLayout) -> u64 {
    let chunk = l.chunk.first().copied().unwrap_or(0);
    match &l.shard {
        None => l.files.saturating_mul(chunk),
        Some(shard) => {
            let by_files = l.files.saturating_mul(shard.first().copied().unwrap_or(0));
            let by_index = (l.stored_bytes / 16).saturating_mul(chunk);
            by_files.min(by_index)
        }
    }
}

/// The lengths every reader sizes by — samples, contigs, variants — checked against
/// the data that exists: each list no longer than its stored files can hold (every
/// other array's axes must then agree with the lists: [`check_dimensions`]) and the
/// shards of svar2's record that are not there (gone, the damage its reads report by
/// name, or left out as all fill), a bounded number of them.
fn check_lengths(arrays: &[Arc<AnyArray>]) -> std::result::Result<(), String> {
    for (list, dim) in [
        ("sample_id", "samples"),
        ("contig_id", "contigs"),
        ("variant_position", "variants"),
    ] {
        let Some(a) = arrays.iter().find(|a| a.name == list) else {
            continue;
        };
        let n = a.layout.shape.first().copied().unwrap_or(0);
        let mut can = list_capacity(&a.layout);
        // Shards of the record's grid that are not there could hold the rest: written
        // and gone (their reads name them: missing shard) or left out as all fill (a
        // shard of POS=0 records). As many as there are files, or 1,024: a record
        // rewritten for an axis of 10^15 claims billions.
        if let Some(w) = &a.written {
            let files = a.layout.files;
            let other = w.grid_count().saturating_sub(files).min(files.max(1024));
            let rows = a.layout.shard.as_ref().unwrap_or(&a.layout.chunk);
            can = can.saturating_add(other.saturating_mul(rows.first().copied().unwrap_or(0)));
        }
        if n > can {
            return Err(format!(
                "{list} says {n} {dim}, but its {} stored file(s) ({} bytes) hold at most \
                 {can}: its zarr.json is damaged (restore it or convert again)",
                a.layout.files, a.layout.stored_bytes
            ));
        }
    }
    Ok(())
}

/// The shard grid the root's svar2 record gives array `name` (for messages).
fn written_grid_of(attributes: &Map<String, Value>, name: &str) -> Option<Vec<u64>> {
    attributes
        .get("svar2")?
        .get("shards")?
        .get(name)?
        .get("grid")?
        .as_array()?
        .iter()
        .map(Value::as_u64)
        .collect()
}

impl AnyGroup {
    /// Opens the group at `root`: every array must be one zarrs reads, with a data
    /// type and dimension names VCF Zarr uses, and the standard arrays must be there.
    pub fn open(root: &Path) -> Result<AnyGroup> {
        Self::open_with(root, Access::Stream)
    }

    /// [`open`](Self::open), for reads of the given kind.
    pub fn open_with(root: &Path, access: Access) -> Result<AnyGroup> {
        let storage = svar2_storage::open(root)?;
        let root = &storage.name("");
        let not_vcf = |msg: String| Error::NotStore {
            path: root.clone(),
            msg,
        };
        let layouts = read_group_in(&*storage)?;
        if layouts.is_empty() {
            return Err(not_vcf(
                "a Zarr group with no arrays: not a VCF Zarr store".into(),
            ));
        }
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            .filter(|r| !layouts.iter().any(|l| l.name == *r))
            .collect();
        if !missing.is_empty() {
            return Err(not_vcf(format!(
                "not a VCF Zarr store: array{} {} missing (write it with `svar2 convert` or \
                 `vcf2zarr convert`)",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", ")
            )));
        }
        let zarr_format = layouts[0].zarr_format;
        let root_key = if zarr_format == 2 {
            ".zgroup"
        } else {
            "zarr.json"
        };
        let root_identity = storage
            .local_root()
            .and_then(|root| file_identity(&root.join(root_key)));
        // zarrs reads through the same storage (never its own file opens): a FIFO in
        // place of a chunk file is an error naming it, not a reader blocked forever.
        let zarrs_storage: Arc<dyn ReadableStorageTraits> = Arc::new(ZarrsStorage(storage.clone()));
        let json = |key: &str| read_json(&*storage, key);
        let attributes = if zarr_format == 2 {
            object(json(".zattrs")?)
        } else {
            let root_meta = json("zarr.json")?;
            // A root that is not a group's metadata (`"hello"`, `{}`) would drop the
            // shard record and every attribute without a word.
            if let Some(m) = &root_meta {
                if m.get("node_type").and_then(Value::as_str) != Some("group") {
                    return Err(Error::NotStore {
                        path: storage.name("zarr.json"),
                        msg: "not a Zarr group's metadata (no \"node_type\": \"group\"): the \
                              store's root metadata is damaged; restore it from a copy or \
                              convert again"
                            .into(),
                    });
                }
            }
            object(root_meta.and_then(|v| v.get("attributes").cloned()))
        };
        let mut written = svar2_store::written::Written::of_store(root, &attributes)?;
        // Arrays the record names whose metadata is no longer what svar2 wrote.
        let mut rewritten = 0;
        let mut arrays = Vec::with_capacity(layouts.len());
        for layout in layouts {
            let at = storage.name(&layout.name);
            let bad = |msg: String| Error::NotStore {
                path: at.clone(),
                msg,
            };
            let dtype = dtype_of(&layout).ok_or_else(|| {
                bad(format!(
                    "data type {} is not one VCF Zarr uses (bool, int8-64, float32, string, \
                     one UTF-32 character)",
                    layout.dtype
                ))
            })?;
            if layout.dimension_names.len() != layout.shape.len()
                || layout.dimension_names.iter().any(String::is_empty)
            {
                return Err(bad(
                    "no dimension names (`dimension_names`, or `_ARRAY_DIMENSIONS` in Zarr v2): \
                     svar2 finds the variants and samples axes by them"
                        .into(),
                ));
            }
            let array = open_array(&zarrs_storage, &*storage, &layout.name, zarr_format)
                .map_err(|e| bad(format!("zarrs cannot read this array: {e}")))?;
            let name = &layout.name;
            let meta_key = format!(
                "{name}/{}",
                if zarr_format == 2 {
                    ".zarray"
                } else {
                    "zarr.json"
                }
            );
            let meta_bytes = storage.get(&meta_key)?;
            let meta: Option<Value> = match &meta_bytes {
                Some(b) => Some(svar2_store::json::parse(b).map_err(|e| Error::NotStore {
                    path: storage.name(&meta_key),
                    msg: format!("not JSON ({e})"),
                })?),
                None => None,
            };
            let recorded = written.as_mut().and_then(|w| w.remove(name));
            let grid_now = svar2_store::written::grid(&layout);
            if recorded
                .as_ref()
                .is_some_and(|w| w.grid().len() != grid_now.len())
            {
                return Err(Error::NotStore {
                    path: storage.name("zarr.json"),
                    msg: format!(
                        "the svar2 shard record of {name} has {} axes, the array {}: the \
                         root metadata was damaged or edited; restore it from a copy or \
                         convert again",
                        recorded.as_ref().map_or(0, |w| w.grid().len()),
                        grid_now.len()
                    ),
                });
            }
            let regridded = recorded
                .as_ref()
                .is_some_and(|w| w.grid() != grid_now.as_slice());
            // Only the variants axis other than recorded: records appended (xarray's
            // `append_dim`) or cut. The variants length is held to variant_position's
            // files and every array's length ([`check_lengths`], [`check_dimensions`]).
            let variants_only = recorded.as_ref().is_some_and(|w| {
                let v = layout.dimension_names.iter().position(|d| d == "variants");
                regridded
                    && w.grid()
                        .iter()
                        .zip(&grid_now)
                        .enumerate()
                        .all(|(d, (a, b))| a == b || Some(d) == v)
            });
            let matched = recorded
                .as_ref()
                .map(|w| w.describes(meta_bytes.as_deref().unwrap_or_default(), &layout));
            rewritten += usize::from(matched.is_some_and(|m| m != Match::Same));
            // Metadata that is not what svar2 wrote: were the shards left as svar2 wrote
            // them (an edit of the metadata alone: damage), or rewritten (another
            // writer's array, xarray's subset copy: Zarr's fill)? The record's sizes of
            // the shards tell; a record without them, the chunk format (below).
            // An array svar2 wrote no shard of (all fill) has nothing to protect, and one
            // whose variants axis alone changed is checked by the lists.
            let shards_kept = match (&recorded, matched) {
                (Some(w), Some(Match::Structure)) if w.has_sizes() => {
                    // (Shards it wrote that are gone: another writer's rewrite, which
                    // leaves all-fill shards out, as zarr-python does.)
                    let kept = !variants_only
                        && w.written_count() > 0
                        && w.sizes_match(name, &storage.list(name)?) == Some(true);
                    Some(kept)
                }
                _ => None,
            };
            let written = recorded.filter(|_| matched == Some(Match::Same));
            // A record of far more shards than there are files: most of the array gone,
            // or a record edited to make readers walk an axis of 10^15 as missing shards.
            if let Some(w) = &written {
                let (said, there) = (w.written_count(), layout.files);
                if said > there.saturating_add(there.max(1024)) {
                    return Err(Error::NotStore {
                        path: storage.name(name),
                        msg: format!(
                            "the store's shard record says {said} shard(s) of it were \
                             written, and {there} are there: most of the array is gone, or \
                             the record was edited; restore the store from a copy or \
                             convert again"
                        ),
                    });
                }
            }
            let mut attrs = if zarr_format == 2 {
                object(json(&format!("{name}/.zattrs"))?)
            } else {
                object(meta.as_ref().and_then(|v| v.get("attributes").cloned()))
            };
            attrs.remove("_ARRAY_DIMENSIONS");
            let inner = match (zarr_format, &meta) {
                (3, Some(m)) => inner_reads(&storage, &layout, m, access),
                _ => None,
            };
            // Shards of another kind are decoded whole (through zarrs): a whole shard
            // is then the chunk, bounded as one.
            if let (None, Some(shard)) = (&inner, &layout.shard) {
                let whole = svar2_store::layout::ArrayLayout {
                    chunk: shard.clone(),
                    shard: None,
                    ..layout.clone()
                };
                if let Err(msg) = svar2_store::layout::check_geometry(&whole) {
                    return Err(Error::NotStore {
                        path: storage.name(&meta_key),
                        msg: format!(
                            "{msg}: its shards are decoded whole, and are too large (the \
                             array's metadata is damaged, or another writer's layout svar2 \
                             cannot read: rechunk it with zarr-python)"
                        ),
                    });
                }
            }
            let blosc_frames = meta
                .as_ref()
                .is_some_and(|m| blosc_frames(m, zarr_format, inner.is_some()))
                && dtype.size().is_some()
                && (inner.is_some() || layout.shard.is_none());
            let checksum = meta.as_ref().is_some_and(|m| {
                (inner.is_some() || layout.shard.is_none())
                    && inner_chain(m, zarr_format, inner.is_some()).is_some_and(ends_with_crc32c)
            });
            // An array svar2 recorded whose shard grid is no longer the one it wrote,
            // still in svar2's chunk format: its shape or chunks were edited (another
            // writer's array, in its own format, keeps Zarr's fill semantics). Read as
            // it is, missing shards would be fill and an axis of 10^10 would be walked.
            let edited = shards_kept.unwrap_or(checksum);
            if regridded && edited {
                return Err(bad(format!(
                    "its shape or chunks are not the ones svar2 wrote (shards along each \
                     axis {:?}, now {:?}): its zarr.json is damaged; restore it from a copy \
                     or convert again",
                    written_grid_of(&attributes, name).unwrap_or_default(),
                    svar2_store::written::grid(&layout)
                )));
            }
            // The same, for an edit that keeps the grid (a samples axis grown within
            // its last chunk, a ploidy shrunk, another data type or key separator, the
            // crc32c taken off): the record's fingerprint of the structure no longer
            // matches, and the shards are svar2's still.
            if matched == Some(Match::Structure) && edited {
                return Err(bad(
                    "its shape, data type, chunks or codecs are not the ones svar2 wrote \
                     over its shards (the store's shard record fingerprints them): its \
                     zarr.json is damaged or was edited; restore it from a copy or convert \
                     again"
                        .into(),
                ));
            }
            let vlen_zstd = dtype == Dtype::Str
                && meta.as_ref().is_some_and(|m| {
                    (inner.is_some() || layout.shard.is_none())
                        && inner_chain(m, zarr_format, inner.is_some()).is_some_and(is_vlen_zstd)
                });
            let meta_identity = storage
                .local_root()
                .and_then(|root| file_identity(&root.join(&meta_key)));
            arrays.push(Arc::new(AnyArray {
                storage: storage.clone(),
                meta_identity,
                root: root_identity.map(|id| (root_key, id)),
                meta_key,
                name: layout.name.clone(),
                dtype,
                attributes: attrs,
                layout,
                array,
                inner,
                blosc_frames,
                checksum,
                written,
                vlen_zstd,
            }));
        }
        // The arrays every reader indexes by row must be lists, whatever a foreign
        // writer put there.
        for a in arrays
            .iter()
            .filter(|a| REQUIRED.contains(&a.name.as_str()))
        {
            if a.shape().len() != 1 {
                return Err(not_vcf(format!(
                    "{} has {} dimensions; in a VCF Zarr store it is one list (dimension {})",
                    a.name,
                    a.shape().len(),
                    if a.name.starts_with("variant_") {
                        "variants"
                    } else if a.name == "sample_id" {
                        "samples"
                    } else {
                        "contigs"
                    }
                )));
            }
        }
        // Every array still svar2's and one it recorded gone: a lost array, not a
        // store another writer made from part of an svar2 store's arrays.
        if let (Some(gone), 0) = (written.as_ref().and_then(|w| w.keys().next()), rewritten) {
            return Err(not_vcf(format!(
                "array {gone} is missing (svar2 wrote it when it finished the store): the \
                 store is damaged; copy it back or convert again (a store written on purpose \
                 from some of an svar2 store's arrays, as xarray's `ds[names].to_zarr` \
                 writes one, carries the record of them all: remove \
                 `attributes.svar2.shards` from its root zarr.json)"
            )));
        }
        check_lengths(&arrays).map_err(not_vcf)?;
        check_dimensions(&arrays).map_err(not_vcf)?;
        Ok(AnyGroup {
            root: root.clone(),
            zarr_format,
            attributes,
            arrays,
        })
    }

    /// Refuses a store whose shards are not where svar2 wrote them
    /// ([`AnyArray::shards_moved`]): a command that writes a store from this one (rechunk,
    /// append) would carry the wrong values on under a fresh record, and verify would
    /// call the result clean. Returns what it read of each shard file
    /// ([`Known`](svar2_store::written::Known), by key from the store's root), so a
    /// store that links these files does not read them again for its record.
    pub fn check_shards_in_place(&self) -> Result<svar2_store::written::Known> {
        let mut read = svar2_store::written::Known::new();
        for a in &self.arrays {
            if a.shards_moved()? || a.chunks_moved(&mut read)? {
                return Err(Error::NotStore {
                    path: a.storage.name(&a.name),
                    msg: "its shard files are not the ones svar2 wrote there (they differ \
                          from the store's shard record: shards swapped or moved, copied \
                          over, or a shard index edited; `svar2 verify` says more): restore \
                          the array from a copy or convert again (values another writer \
                          rewrote in place on purpose: remove the array's entry from \
                          attributes.svar2.shards in the root zarr.json)"
                        .into(),
                });
            }
        }
        Ok(read)
    }

    /// The array called `name`.
    pub fn array(&self, name: &str) -> Option<&Arc<AnyArray>> {
        self.arrays.iter().find(|a| a.name == name)
    }
}

impl AnyArray {
    pub fn shape(&self) -> &[u64] {
        self.array.shape()
    }

    /// The shape of the chunk a read decodes: the inner chunk of a sharded source read
    /// chunk by chunk, else the chunk (a whole shard for other sharded sources).
    pub fn chunk_shape(&self) -> Vec<u64> {
        if let Some(r) = &self.inner {
            return r.inner.clone();
        }
        let zeros = vec![0; self.shape().len()];
        self.array
            .chunk_shape(&zeros)
            .map(|s| s.iter().map(|x| x.get()).collect())
            .unwrap_or_else(|_| self.shape().to_vec())
    }

    /// The key of a source chunk, as errors name it (`call_genotype/0.1.0`; for an
    /// inner chunk, its shard's key and the inner chunk's place in the array).
    pub fn key(&self, idx: &[u64]) -> String {
        match &self.inner {
            Some(r) => {
                let sidx: Vec<u64> = idx.iter().zip(&r.per_shard).map(|(i, p)| i / p).collect();
                format!("{} (inner chunk {idx:?})", self.array.chunk_key(&sidx))
            }
            None => self.array.chunk_key(idx).to_string(),
        }
    }

    /// Reads a chunk's stored bytes (`None`: not stored, so all fill). IO only.
    pub fn read(&self, idx: &[u64]) -> Result<Option<Stored>> {
        if let Some(r) = &self.inner {
            return self.read_inner(r, idx);
        }
        self.check_same_version(idx)?;
        let got = self
            .array
            .retrieve_encoded_chunk(idx)
            .map_err(|e| Error::Chunk {
                key: self.key(idx),
                msg: format!("cannot read ({e})"),
            })?;
        if got.is_none() {
            self.check_not_lost(idx, idx)?;
        }
        Ok(got.map(Stored::owned))
    }

    /// A shard (an unsharded array's chunk) at grid position `at`, holding chunk
    /// `idx`, is not stored: all fill — unless svar2 recorded writing it, or the
    /// store itself is gone.
    fn check_not_lost(&self, idx: &[u64], at: &[u64]) -> Result<()> {
        self.check_still_there(idx)?;
        if self.written.as_ref().is_some_and(|w| w.wrote(at)) {
            return Err(Error::Chunk {
                key: self.key(idx),
                msg: format!(
                    "missing shard: the store is damaged ({} was written when svar2 \
                     finished the store and is gone; copy it back or convert again; \
                     zarr-python deletes a shard it writes all fill unless its config \
                     sets write_empty_chunks)",
                    self.chunk_file(idx).display()
                ),
            });
        }
        Ok(())
    }

    /// A chunk opened now is of the version opened only while the array's metadata
    /// is still the file read at open, or the store's root is (an edit of this array's
    /// attributes alone): after `convert --force` or an append replaced the store, its
    /// shards would be read under the old version's metadata (other samples under the
    /// old names, or "corrupt shard" where the grid changed). One `stat` per shard
    /// opened (local stores only).
    fn check_same_version(&self, idx: &[u64]) -> Result<()> {
        let Some(was) = self.meta_identity else {
            return Ok(());
        };
        let Some(root) = self.storage.local_root() else {
            return Ok(());
        };
        let path = root.join(&self.meta_key);
        let root_kept = || {
            self.root
                .is_some_and(|(key, id)| file_identity(&root.join(key)) == Some(id))
        };
        match file_identity(&path) {
            None => self.check_still_there(idx),
            Some(now) if now == was => Ok(()),
            Some(_) if root_kept() => Ok(()),
            // (Not damage: `svar2.Error`, not `CorruptStoreError`, in Python.)
            Some(_) => Err(Error::NotStore {
                path,
                msg: "the store was replaced while it was open (another file is there now: \
                      another conversion with --force, or an append, wrote it): open the \
                      store again"
                    .into(),
            }),
        }
    }

    /// A missing chunk is all fill only while the array itself is still there.
    fn check_still_there(&self, idx: &[u64]) -> Result<()> {
        if self.storage.size(&self.meta_key)?.is_some() {
            return Ok(());
        }
        Err(Error::Chunk {
            key: self.key(idx),
            msg: format!(
                "the store was deleted or moved while it was open ({} is gone)",
                self.storage.name(&self.meta_key).display()
            ),
        })
    }

    fn read_inner(&self, r: &InnerReads, idx: &[u64]) -> Result<Option<Stored>> {
        let shard = self.shard_of(r, idx)?;
        let Some((shard, off, len)) = located(&shard, r, idx) else {
            return Ok(None);
        };
        match shard {
            OpenShard::Mapped { map, base, .. } => {
                Ok(Some(Stored::mapped(map.clone(), base + off, len)))
            }
            OpenShard::File { file, .. } => {
                let mut bytes = vec![0u8; len];
                self.pread(file, idx, off, &mut bytes)?;
                Ok(Some(Stored::owned(bytes)))
            }
            OpenShard::Ranged { key, .. } => {
                Ok(Some(Stored::owned(self.ranged(r, key, off, len)?)))
            }
        }
    }

    /// `len` bytes at `off` of the bucket object `key` (one ranged GET).
    fn ranged(&self, r: &InnerReads, key: &str, off: usize, len: usize) -> Result<Vec<u8>> {
        Ok(r.storage.get_range(key, off as u64, len as u64)?)
    }

    /// `out.len()` bytes at `off` of the shard file holding inner chunk `idx`.
    fn pread(&self, file: &std::fs::File, idx: &[u64], off: usize, out: &mut [u8]) -> Result<()> {
        file.read_exact_at(out, off as u64)
            .map_err(|e| Error::Chunk {
                key: self.key(idx),
                msg: format!("cannot read ({e})"),
            })
    }

    /// The open shard holding inner chunk `idx` (opened and cached on first use).
    fn shard_of(&self, r: &InnerReads, idx: &[u64]) -> Result<Arc<Option<OpenShard>>> {
        let sidx = shard_position(r, idx);
        let cached = |r: &InnerReads| r.shards.lock().expect("shard cache").get(&*sidx).cloned();
        if let Some(s) = cached(r) {
            return Ok(s);
        }
        let gate = r
            .opening
            .lock()
            .expect("shard gates")
            .entry(sidx.to_vec())
            .or_default()
            .clone();
        let _opening = gate.lock().expect("shard gate");
        // (Opened by the thread this one waited for?)
        let open = match cached(r) {
            Some(s) => Ok(s),
            None => self.open_shard(r, idx, &sidx),
        };
        r.opening.lock().expect("shard gates").remove(&*sidx);
        open
    }

    /// A reader of this array's chunks for one thread's run of reads: it keeps the
    /// shard it last read from (no lock, no reference count per chunk: two decode
    /// threads touching one counter per 4 KiB chunk cost 5 % of a patch read) and one
    /// buffer for bytes that are not mapped.
    pub fn chunk_reader(&self) -> ChunkReader<'_> {
        ChunkReader {
            array: self,
            shard: None,
            buf: Vec::new(),
        }
    }

    /// Opens shard `sidx` (holding inner chunk `idx`) and reads its index from the
    /// tail, into the cache (`None`: not stored).
    fn open_shard(
        &self,
        r: &InnerReads,
        idx: &[u64],
        sidx: &[u64],
    ) -> Result<Arc<Option<OpenShard>>> {
        let key = self.array.chunk_key(sidx).to_string();
        let key = key.trim_start_matches('/').to_string();
        // (Saturating: crafted metadata's count is refused by the index check.)
        let n = r
            .per_shard
            .iter()
            .try_fold(1u64, |a, &b| a.checked_mul(b))
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX);
        let want = shard::index_len(n) as u64;
        let mapped = match (r.storage.local_root(), r.map) {
            (None, true) => r.storage.mapped(&key)?,
            _ => None,
        };
        let open = match (r.storage.local_root(), mapped) {
            (Some(root), _) => self.open_shard_file(r, idx, sidx, &key, &root.join(&key), n)?,
            (None, Some(m)) => {
                // A stored entry of a zip, mapped: its index is the entry's tail.
                let end = m.at + m.len;
                let index_at = end - (want as usize).min(m.len);
                let name = r.storage.name(&key).display().to_string();
                shard::check_index(&name, &m.map[index_at..end], n, m.len as u64)?;
                Some(OpenShard::Mapped {
                    map: m.map,
                    base: m.at,
                    index_at,
                    end,
                })
            }
            (None, None) => match r.storage.get_tail(&key, want)? {
                None => {
                    self.check_not_lost(idx, sidx)?;
                    None
                }
                Some((index, len)) => {
                    let name = r.storage.name(&key).display().to_string();
                    shard::check_index(&name, &index, n, len)?;
                    Some(OpenShard::Ranged { key, index })
                }
            },
        };
        let open = Arc::new(open);
        let mut cache = r.shards.lock().expect("shard cache");
        if cache.len() >= MAX_OPEN_SHARDS {
            cache.clear();
        }
        cache.insert(sidx.to_vec(), open.clone());
        Ok(open)
    }

    /// Opens the local shard file `path` (key `key`, grid position `sidx`, `n` inner
    /// chunks) and reads its index from the tail (`None`: not stored).
    fn open_shard_file(
        &self,
        r: &InnerReads,
        idx: &[u64],
        sidx: &[u64],
        key: &str,
        path: &Path,
        n: usize,
    ) -> Result<Option<OpenShard>> {
        let io = |e: std::io::Error| Error::Chunk {
            key: key.to_string(),
            msg: format!("cannot read ({e})"),
        };
        self.check_same_version(idx)?;
        Ok(match svar2_storage::open_regular(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.check_not_lost(idx, sidx)?;
                None
            }
            Err(e) => return Err(io(e)),
            Ok(file) => {
                let len = file.metadata().map_err(io)?.len();
                let want = shard::index_len(n) as u64;
                let tail_at = len.saturating_sub(want);
                let map = if r.map { map_file(&file, len) } else { None };
                let shard = match map {
                    Some(map) => OpenShard::Mapped {
                        map: Arc::new(map),
                        base: 0,
                        index_at: tail_at as usize,
                        end: len as usize,
                    },
                    None => {
                        let mut index = vec![0u8; want.min(len) as usize];
                        file.read_exact_at(&mut index, tail_at).map_err(io)?;
                        OpenShard::File { file, index }
                    }
                };
                shard::check_index(key, shard.index(), n, len)?;
                Some(shard)
            }
        })
    }

    /// Whether chunks are read from shard files mapped into memory (opened for
    /// [`Access::Random`], the shards sharded the common way): a read is a slice of
    /// the page cache, cheap enough to make on a decode thread.
    pub fn reads_from_memory(&self) -> bool {
        self.inner.as_ref().is_some_and(|r| r.map)
    }

    /// Where the store's objects are read from.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Whether the store is in a bucket: every read is a request, so readers keep
    /// many in flight rather than grouping chunks per thread.
    pub fn reads_remote(&self) -> bool {
        !self.storage.is_local()
    }

    /// Whether the chunks are blosc-zstd frames of little-endian elements (what
    /// [`blosc`](svar2_blosc) and the GPU batch plan decode).
    pub fn blosc_frames(&self) -> bool {
        self.blosc_frames
    }

    /// Whether this array's shard files are not the ones svar2 wrote where they lie
    /// (two swapped, one moved, or copied over from another shard or conversion: each
    /// still passes its checksums) while its metadata is still the bytes svar2 wrote:
    /// the store's record of the shards' sizes says so. False when the record does not
    /// say, or another writer (xarray, zarr-python) has rewritten the metadata, and
    /// with it, likely, the shards.
    pub fn shards_moved(&self) -> Result<bool> {
        let Some(w) = &self.written else {
            return Ok(false);
        };
        let meta = self.storage.get(&self.meta_key)?.unwrap_or_default();
        if !w.bytes_unchanged(&meta) {
            return Ok(false);
        }
        Ok(w.sizes_match(&self.name, &self.storage.list(&self.name)?) == Some(false))
    }

    /// Whether this array's stored chunks, read from its shard files' indices, are not
    /// the ones svar2 stored where they lie ([`AnyArray::chunks_match`]) — for a
    /// command about to write a store from this one, before it reads a value. Local
    /// stores only (a bucket's would take a request per chunk): false elsewhere, and
    /// where the record does not say. What it reads of each shard file goes into
    /// `read`.
    pub fn chunks_moved(&self, read: &mut svar2_store::written::Known) -> Result<bool> {
        let Some(root) = self.storage.local_root() else {
            return Ok(false);
        };
        let prefix = format!("{}/", self.name);
        let listing = self.storage.list(&self.name)?;
        // (A record without the chunks' sum: nothing to compare, so no shard is read.
        // A shard it wrote that is gone: damage readers name as such.)
        if !self
            .written
            .as_ref()
            .is_some_and(|w| w.has_chunks() && w.all_written_there(&self.name, &listing))
        {
            return Ok(false);
        }
        let shards: Vec<(&str, u64)> = listing
            .iter()
            .filter_map(|(k, size)| Some((k.strip_prefix(&prefix)?, *size)))
            .collect();
        let none = svar2_store::written::Known::new();
        let Some(found) = svar2_store::written::chunk_sum(
            root,
            &self.name,
            &self.layout,
            &shards,
            &none,
            Some(read),
        ) else {
            return Ok(false);
        };
        Ok(self.chunks_match(found)? == Some(false))
    }

    /// Whether `found` (the [`ChunkSum`](svar2_store::written::ChunkSum) of every chunk
    /// a reader found stored) is what the store's record says svar2 stored, each chunk
    /// where it lies. It applies while the shards are svar2's: the array's metadata
    /// still the bytes svar2 wrote (as [`AnyArray::shards_moved`]), or, its attributes
    /// edited (zarr-python's `attrs[...]`), every shard still of the size svar2 wrote
    /// (another writer that rewrote the shards changes their sizes). `None`: the record
    /// does not say.
    pub fn chunks_match(&self, found: svar2_store::written::ChunkSum) -> Result<Option<bool>> {
        let Some(w) = &self.written else {
            return Ok(None);
        };
        let meta = self.storage.get(&self.meta_key)?.unwrap_or_default();
        let ours = w.bytes_unchanged(&meta)
            || w.sizes_match(&self.name, &self.storage.list(&self.name)?) == Some(true);
        Ok(if ours { w.chunks_match(found) } else { None })
    }

    /// Whether every stored chunk carries a crc32c (svar2's stores; older ones and
    /// bio2zarr's do not, and read without a check).
    pub fn has_checksums(&self) -> bool {
        self.checksum
    }

    /// Where chunk `idx` lies: its shard's key under the array (`c/3/0/0`; an
    /// unsharded array's chunk key) and its position in the shard's index (C order;
    /// 0 unsharded), as the store's record of the chunks counts them
    /// ([`ChunkSum`](svar2_store::written::ChunkSum)).
    pub fn chunk_place(&self, idx: &[u64]) -> (String, u64) {
        let (sidx, inner) = match &self.inner {
            Some(r) => (
                idx.iter().zip(&r.per_shard).map(|(i, p)| i / p).collect(),
                idx.iter()
                    .zip(&r.per_shard)
                    .fold(0u64, |pos, (i, p)| pos.wrapping_mul(*p).wrapping_add(i % p)),
            ),
            None => (idx.to_vec(), 0),
        };
        let key = self.array.chunk_key(&sidx).to_string();
        let prefix = format!("{}/", self.name);
        let rest = key.strip_prefix(&prefix).unwrap_or(&key).to_string();
        (rest, inner)
    }

    /// The file (or object URL) a chunk's bytes live in (its shard's, for a sharded
    /// array).
    pub fn chunk_file(&self, idx: &[u64]) -> PathBuf {
        let key = match &self.inner {
            Some(r) => {
                let sidx: Vec<u64> = idx.iter().zip(&r.per_shard).map(|(i, p)| i / p).collect();
                self.array.chunk_key(&sidx).to_string()
            }
            None => self.array.chunk_key(idx).to_string(),
        };
        self.storage.name(key.trim_start_matches('/'))
    }

    /// A chunk's stored bytes to decode: with its crc32c checked and removed when the
    /// chain ends with one (a mismatch is [`Error::Corrupt`] naming the array, the
    /// chunk key and the shard file); unchanged otherwise.
    pub fn checked<'b>(&self, idx: &[u64], stored: &'b [u8]) -> Result<&'b [u8]> {
        if !self.checksum {
            return Ok(stored);
        }
        svar2_store::chain::verified_or(stored, || {
            (self.key(idx), self.chunk_file(idx).display().to_string())
        })
    }

    /// Decoded bytes of one chunk (fixed-size types).
    pub fn chunk_nbytes(&self) -> usize {
        self.chunk_shape().iter().product::<u64>() as usize * self.dtype.size().unwrap_or(0)
    }

    /// Decodes a fixed-size chunk into `out` (resized to
    /// [`chunk_nbytes`](Self::chunk_nbytes)): blosc-zstd frames through `dec` (a reused context, no
    /// c-blosc), anything else through zarrs.
    /// With `wanted` (byte ranges), a blosc frame may be unshuffled only there (the
    /// other bytes of `out` are then undefined); other codecs decode everything.
    pub fn decode_into(
        &self,
        idx: &[u64],
        stored: Option<&[u8]>,
        dec: &mut svar2_blosc::Decoder,
        out: &mut Vec<u8>,
        wanted: Option<&[(usize, usize)]>,
    ) -> Result<()> {
        let n = self.chunk_nbytes();
        if let (true, Some(bytes)) = (self.blosc_frames, stored) {
            let bytes = self.checked(idx, bytes)?;
            // The chunk key is formatted only for an error (this is the reader's hot
            // path: one call per 4 KiB chunk). The frame is checked before `out` is
            // sized: its header must agree with the chunk shape.
            return svar2_blosc::Frame::parse("", bytes, n)
                .and_then(|f| {
                    out.resize(n, 0);
                    dec.decode_ranges("", bytes, &f, out, wanted)
                })
                .map_err(|e| match e {
                    svar2_blosc::Error::Corrupt { msg, .. } => Error::Corrupt {
                        key: self.key(idx),
                        msg,
                    },
                    e => e.into(),
                });
        }
        match self.decode(idx, stored)? {
            Raw::Fixed(b) => {
                *out = b;
                Ok(())
            }
            Raw::Strings { .. } => Err(Error::Chunk {
                key: self.key(idx),
                msg: "a string array: read it with zarr-python (patches are numbers)".into(),
            }),
        }
    }

    /// Decodes a chunk read by [`read`](Self::read) into its full chunk shape
    /// (C order); a chunk that is not stored is the fill value. CPU only.
    pub fn decode(&self, idx: &[u64], stored: Option<&[u8]>) -> Result<Raw> {
        let err = |msg: String| Error::Chunk {
            key: self.key(idx),
            msg,
        };
        let shape: Vec<NonZeroU64> = match &self.inner {
            Some(r) => r
                .inner
                .iter()
                .map(|&x| NonZeroU64::new(x).ok_or_else(|| err("empty inner chunk".into())))
                .collect::<Result<_>>()?,
            None => self
                .array
                .chunk_shape(idx)
                .map_err(|e| err(format!("{e}")))?,
        };
        let options = CodecOptions::default().with_concurrent_target(1);
        let chain = match &self.inner {
            Some(r) => &r.chain,
            None => &*self.array.codecs(),
        };
        if let Some(b) = stored {
            // The same one-line message as the blosc path's for a bad checksum (the
            // chain's own crc32c codec checks it again).
            let data = self.checked(idx, b)?;
            if self.vlen_zstd {
                let dims: Vec<u64> = shape.iter().map(|x| x.get()).collect();
                let n = svar2_store::boxes::elements(&dims)
                    .ok_or_else(|| err(format!("chunk shape {dims:?} overflows")))?;
                let (bytes, offsets) = svar2_store::vlen::decode_zstd(&self.key(idx), data, n)?;
                return Ok(Raw::Strings { bytes, offsets });
            }
        }
        let bytes = match stored {
            // zarrs panics on some damaged chunks (a vlen length past the chunk's end
            // in another writer's chain): a panic there is this chunk's error.
            Some(b) => caught_quietly(|| {
                chain.decode(
                    std::borrow::Cow::Borrowed(b),
                    &shape,
                    self.array.data_type(),
                    self.array.fill_value(),
                    &options,
                )
            })
            .map_err(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                err(format!("corrupt chunk: zarrs failed decoding it ({why})"))
            })?
            .map_err(|e| err(format!("corrupt chunk: does not decode ({e})")))?
            .into_owned(),
            None => ArrayBytes::new_fill_value(
                self.array.data_type(),
                shape.iter().map(|x| x.get()).product(),
                self.array.fill_value(),
            )
            .map_err(|e| err(format!("{e}")))?,
        };
        let raw = Raw::from_array_bytes(bytes).map_err(|e| err(e.to_string()))?;
        let n: u64 = shape.iter().map(|x| x.get()).product();
        let ok = match &raw {
            Raw::Fixed(b) => b.len() as u64 == n * self.dtype.size().unwrap_or(1) as u64,
            Raw::Strings { offsets, .. } => offsets.len() as u64 == n + 1,
        };
        if !ok {
            return Err(err("decoded to the wrong number of elements".into()));
        }
        Ok(raw)
    }

    /// Rows `[r0, r1)` (every value of the other axes, C order) of a fixed-size array,
    /// read chunk by chunk through [`read`](Self::read) and [`decode`](Self::decode) —
    /// every checksum checked, a damaged chunk named — on the calling thread.
    pub fn read_rows(&self, r0: u64, r1: u64) -> Result<Vec<u8>> {
        let e = self.dtype.size().ok_or_else(|| Error::NotStore {
            path: self.name.clone().into(),
            msg: "a string array, read as rows of numbers".into(),
        })?;
        let rows = self.rows_box(r0, r1)?;
        let mut out = vec![0u8; self.rows_len(&rows, e)? * e];
        self.each_chunk_of_rows(&rows, |idx, raw, s, d, n| {
            let Raw::Fixed(bytes) = raw else {
                return Err(Error::Chunk {
                    key: self.key(idx),
                    msg: "not fixed-size values".into(),
                });
            };
            out[d * e..(d + n) * e].copy_from_slice(&bytes[s * e..(s + n) * e]);
            Ok(())
        })?;
        Ok(out)
    }

    /// Rows `[r0, r1)` of a string array (every value of the other axes, C order),
    /// chunk by chunk, checksums checked.
    pub fn read_rows_strings(&self, r0: u64, r1: u64) -> Result<Vec<Vec<u8>>> {
        let rows = self.rows_box(r0, r1)?;
        let mut out = vec![Vec::new(); self.rows_len(&rows, 24)?];
        self.each_chunk_of_rows(&rows, |idx, raw, s, d, n| {
            let Raw::Strings { bytes, offsets } = raw else {
                return Err(Error::Chunk {
                    key: self.key(idx),
                    msg: "not strings".into(),
                });
            };
            for k in 0..n {
                let (a, b) = (offsets[s + k], offsets[s + k + 1]);
                out[d + k] = bytes[a..b].to_vec();
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Values in `rows`, checked: at `each` bytes a value they fit [`MAX_ROWS_BYTES`]
    /// (a shape from metadata never sizes an allocation unchecked).
    fn rows_len(&self, rows: &RowsBox, each: usize) -> Result<usize> {
        let n = svar2_store::boxes::elements(&rows.shape());
        match n.and_then(|n| n.checked_mul(each)) {
            Some(b) if b as u64 <= MAX_ROWS_BYTES => Ok(n.unwrap_or(0)),
            _ => Err(Error::NotStore {
                path: self.name.clone().into(),
                msg: format!(
                    "rows {:?}..{:?} hold more than {} GiB: read fewer rows",
                    rows.lo,
                    rows.hi,
                    MAX_ROWS_BYTES >> 30
                ),
            }),
        }
    }

    /// Rows `[r0, r1)` clamped to the array, as a box over all its axes.
    fn rows_box(&self, r0: u64, r1: u64) -> Result<RowsBox> {
        let shape = self.shape().to_vec();
        if shape.is_empty() {
            return Err(Error::NotStore {
                path: self.name.clone().into(),
                msg: "a 0-dimensional array where rows were expected".into(),
            });
        }
        let (r0, r1) = (r0.min(shape[0]), r1.min(shape[0]));
        let mut lo = vec![0u64; shape.len()];
        let mut hi = shape.clone();
        (lo[0], hi[0]) = (r0, r1);
        Ok(RowsBox { lo, hi })
    }

    /// The row readers' walk: each chunk over `rows` read, decoded and handed to
    /// `copy` once per run of values, as (chunk, its values, source offset,
    /// destination offset, count).
    fn each_chunk_of_rows(
        &self,
        rows: &RowsBox,
        mut copy: impl FnMut(&[u64], &Raw, usize, usize, usize) -> Result<()>,
    ) -> Result<()> {
        let (lo, hi) = (&rows.lo, &rows.hi);
        let box_shape = rows.shape();
        if rows.values() == 0 {
            return Ok(());
        }
        let chunk = self.chunk_shape();
        for idx in svar2_store::boxes::blocks(lo, hi, &chunk) {
            let raw = self.decode(&idx, self.read(&idx)?.as_deref())?;
            let origin: Vec<u64> = idx.iter().zip(&chunk).map(|(i, c)| i * c).collect();
            let clo: Vec<u64> = lo.iter().zip(&origin).map(|(a, b)| *a.max(b)).collect();
            let chi: Vec<u64> = (0..lo.len())
                .map(|d| hi[d].min(origin[d] + chunk[d]))
                .collect();
            let mut failed = None;
            svar2_store::boxes::for_each_run(
                &clo,
                &chi,
                &origin,
                &chunk,
                lo,
                &box_shape,
                |s, d, n| {
                    if failed.is_none() {
                        failed = copy(&idx, &raw, s, d, n).err();
                    }
                },
            );
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Rows `[r0, r1)` of an integer array, widened to i64 (the region index is read
    /// and rebuilt from these).
    pub fn read_rows_i64(&self, r0: u64, r1: u64) -> Result<Vec<i64>> {
        let b = self.read_rows(r0, r1)?;
        Ok(match self.dtype {
            Dtype::I8 => b.iter().map(|&x| x as i8 as i64).collect(),
            Dtype::I16 => b
                .chunks_exact(2)
                .map(|x| i16::from_le_bytes([x[0], x[1]]) as i64)
                .collect(),
            Dtype::I32 => b
                .chunks_exact(4)
                .map(|x| i32::from_le_bytes(x.try_into().expect("4")) as i64)
                .collect(),
            Dtype::I64 => b
                .chunks_exact(8)
                .map(|x| i64::from_le_bytes(x.try_into().expect("8")))
                .collect(),
            d => {
                return Err(Error::NotStore {
                    path: self.name.clone().into(),
                    msg: format!("{d:?} is not an integer type"),
                })
            }
        })
    }

    /// Every value of a one-dimensional string array (sample and contig names), read
    /// chunk by chunk (checksums checked).
    pub fn read_strings(&self) -> Result<Vec<String>> {
        let shape = self.shape();
        if shape.len() != 1 {
            return Err(Error::NotStore {
                path: self.name.clone().into(),
                msg: format!(
                    "{} dimensions where a list of names was expected",
                    shape.len()
                ),
            });
        }
        let n = shape[0];
        let c = self.chunk_shape()[0].max(1);
        let mut names = Vec::with_capacity(n.min(1 << 20) as usize);
        for k in 0..n.div_ceil(c) {
            match self.decode(&[k], self.read(&[k])?.as_deref())? {
                Raw::Strings { bytes, offsets } => {
                    let take = (n - k * c).min(c) as usize;
                    names.extend(
                        offsets
                            .windows(2)
                            .take(take)
                            .map(|w| String::from_utf8_lossy(&bytes[w[0]..w[1]]).into_owned()),
                    );
                }
                Raw::Fixed(_) => {
                    return Err(Error::NotStore {
                        path: self.name.clone().into(),
                        msg: "not a string array".into(),
                    })
                }
            }
        }
        Ok(names)
    }
}

/// The most bytes one row read ([`AnyArray::read_rows`]) allocates.
pub const MAX_ROWS_BYTES: u64 = 1 << 33;

/// A box of whole rows of an array: `[lo, hi)` on every axis.
struct RowsBox {
    lo: Vec<u64>,
    hi: Vec<u64>,
}

impl RowsBox {
    fn shape(&self) -> Vec<u64> {
        self.lo.iter().zip(&self.hi).map(|(l, h)| h - l).collect()
    }

    /// Values it holds.
    fn values(&self) -> usize {
        self.shape().iter().product::<u64>() as usize
    }
}

thread_local! {
    /// Whether a panic on this thread is one [`caught_quietly`] turns into an error.
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a panic in it returned as `Err` without the panic message and backtrace
/// note on standard error (a damaged chunk is one error line, not a zarrs panic
/// report above it; the caller puts the panic's message in that line). Panics
/// elsewhere print as before: the hook this installs once defers to the one it
/// replaced.
fn caught_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| match CATCHING.with(|c| c.get()) {
            true => {}
            false => previous(info),
        }));
    });
    CATCHING.with(|c| c.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    result
}
