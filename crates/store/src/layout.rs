//! The layout of any Zarr v2 or v3 group's arrays, read from their metadata and files
//! alone: shape, type, the chunk a reader decodes (the inner chunk of a shard), the
//! shard, the codecs, the bytes stored and files used, and whether svar2's GPU path can
//! decode the chunks. `svar2 inspect` prints it; no array data is read.

use crate::error::{Error, Result};
use serde_json::Value;
use std::path::Path;
use svar2_storage::Storage;

/// One array's layout.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ArrayLayout {
    pub name: String,
    /// 2 or 3.
    pub zarr_format: u8,
    pub shape: Vec<u64>,
    /// The data type as the metadata spells it (`int8`, `<i4`, `string`, `|O`…).
    pub dtype: String,
    /// Bytes per element for fixed-size types.
    pub itemsize: Option<u64>,
    /// What a reader decodes at once: the inner chunk (sharded) or the chunk.
    pub chunk: Vec<u64>,
    /// The shard (one file), when the array is sharded.
    pub shard: Option<Vec<u64>>,
    /// The codec chain, outermost first, e.g. `sharding_indexed > bytes, blosc(zstd,
    /// bitshuffle, clevel 1)`.
    pub codecs: String,
    pub dimension_names: Vec<String>,
    /// Bytes of the chunk files (metadata excluded) and how many there are.
    pub stored_bytes: u64,
    pub files: u64,
    /// `None` when svar2's GPU path decodes the chunks; otherwise why not.
    pub gpu_unsupported: Option<String>,
}

impl ArrayLayout {
    /// Decoded bytes of all elements (fixed-size types only).
    pub fn decoded_bytes(&self) -> Option<u64> {
        Some(self.shape.iter().product::<u64>() * self.itemsize?)
    }

    /// The length of the dimension called `name` in the chunk a reader decodes.
    pub fn chunk_along(&self, name: &str) -> Option<u64> {
        let i = self.dimension_names.iter().position(|d| d == name)?;
        self.chunk.get(i).copied()
    }

    /// The array's length along the dimension called `name`.
    pub fn len_along(&self, name: &str) -> Option<u64> {
        let i = self.dimension_names.iter().position(|d| d == name)?;
        self.shape.get(i).copied()
    }
}

fn read_json(storage: &dyn Storage, key: &str) -> Result<Value> {
    let name = storage.name(key);
    let bytes = storage.get(key)?.ok_or_else(|| Error::NotStore {
        path: name.clone(),
        msg: "no such object".into(),
    })?;
    crate::json::parse(&bytes).map_err(|e| Error::NotStore {
        path: name,
        msg: format!("not JSON ({e})"),
    })
}

fn u64s(v: Option<&Value>) -> Vec<u64> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// A JSON array of strings (dimension names: v3's `dimension_names`, v2's
/// `_ARRAY_DIMENSIONS` attribute); empty when absent.
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| d.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Bytes and count of the objects of `listing` (keys under one array) other than
/// Zarr metadata.
fn chunk_files(listing: &[(String, u64)]) -> (u64, u64) {
    let (mut bytes, mut files) = (0, 0);
    for (k, size) in listing {
        let name = k.rsplit('/').next().unwrap_or(k);
        if !matches!(name, "zarr.json" | ".zarray" | ".zattrs" | ".zgroup") {
            bytes += size;
            files += 1;
        }
    }
    (bytes, files)
}

/// A v3 codec as text, and whether it is the blosc-zstd the GPU path decodes.
fn codec_v3(c: &Value) -> String {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
    let conf = c.get("configuration");
    let get = |k: &str| {
        conf.and_then(|x| x.get(k))
            .map(|v| v.to_string().replace('"', ""))
    };
    match name {
        "blosc" => format!(
            "blosc({}, {}, clevel {})",
            get("cname").unwrap_or_default(),
            get("shuffle").unwrap_or_default(),
            get("clevel").unwrap_or_default()
        ),
        "zstd" => format!("zstd(level {})", get("level").unwrap_or_default()),
        n => n.to_string(),
    }
}

/// Why svar2's GPU path cannot decode chunks with this inner chain (v3 codecs, after
/// any sharding), or `None` when it can: fixed-size little-endian elements through
/// blosc with zstd, any shuffle.
fn gpu_v3(chain: &[Value], itemsize: Option<u64>) -> Option<String> {
    if itemsize.is_none() {
        return Some("variable-length strings (decoded on the CPU)".into());
    }
    let names: Vec<&str> = chain
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or("?"))
        .collect();
    match names.as_slice() {
        // (A trailing crc32c is checked on the host while the batch is packed.)
        ["bytes", "blosc"] | ["bytes", "blosc", "crc32c"] => {
            let cname = chain[1]
                .pointer("/configuration/cname")
                .and_then(Value::as_str);
            (cname != Some("zstd")).then(|| {
                format!(
                    "blosc with {} (the GPU path decodes blosc-zstd)",
                    cname.unwrap_or("?")
                )
            })
        }
        _ => Some(format!(
            "codecs {} (the GPU path decodes bytes + blosc-zstd [+ crc32c])",
            names.join(", ")
        )),
    }
}

fn itemsize_v3(dtype: &Value) -> Option<u64> {
    match dtype.as_str() {
        Some("bool" | "int8" | "uint8") => Some(1),
        Some("int16" | "uint16" | "float16") => Some(2),
        Some("int32" | "uint32" | "float32") => Some(4),
        Some("int64" | "uint64" | "float64") => Some(8),
        Some(_) => None,
        None => dtype
            .pointer("/configuration/length_bytes")
            .and_then(Value::as_u64),
    }
}

pub(crate) fn array_v3(name: &str, listing: &[(String, u64)], meta: &Value) -> ArrayLayout {
    let dtype = meta.get("data_type").cloned().unwrap_or(Value::Null);
    let itemsize = itemsize_v3(&dtype);
    let grid = u64s(meta.pointer("/chunk_grid/configuration/chunk_shape"));
    let codecs: Vec<Value> = meta
        .get("codecs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let sharding = codecs
        .first()
        .filter(|c| c.get("name").and_then(Value::as_str) == Some("sharding_indexed"));
    let (chunk, shard, chain, codec_text) = match sharding {
        Some(s) => {
            let inner = u64s(s.pointer("/configuration/chunk_shape"));
            let chain: Vec<Value> = s
                .pointer("/configuration/codecs")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let text = format!(
                "sharding_indexed > {}",
                chain.iter().map(codec_v3).collect::<Vec<_>>().join(", ")
            );
            (inner, Some(grid), chain, text)
        }
        None => {
            let text = codecs.iter().map(codec_v3).collect::<Vec<_>>().join(", ");
            (grid, None, codecs.clone(), text)
        }
    };
    let (stored_bytes, files) = chunk_files(listing);
    ArrayLayout {
        name: name.into(),
        zarr_format: 3,
        shape: u64s(meta.get("shape")),
        dtype: match &dtype {
            Value::String(s) => s.clone(),
            v => v.get("name").and_then(Value::as_str).unwrap_or("?").into(),
        },
        itemsize,
        chunk,
        shard,
        codecs: codec_text,
        dimension_names: strings(meta.get("dimension_names")),
        stored_bytes,
        files,
        gpu_unsupported: gpu_v3(&chain, itemsize),
    }
}

fn array_v2(
    name: &str,
    listing: &[(String, u64)],
    meta: &Value,
    attrs: Option<Value>,
) -> ArrayLayout {
    let dtype = meta
        .get("dtype")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    // numpy type strings: `<i4`, `|b1`, `<U1` (4 bytes per character), `|O` (objects).
    let itemsize = {
        let (kind, n) = (
            dtype.chars().nth(1),
            dtype.get(2..).and_then(|n| n.parse::<u64>().ok()),
        );
        match (kind, n) {
            (Some('U'), Some(n)) => Some(4 * n),
            (Some('O'), _) | (_, None) => None,
            (_, Some(n)) => Some(n),
        }
    };
    let compressor = meta.get("compressor").filter(|c| !c.is_null());
    let filters = meta
        .get("filters")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty());
    let id = |c: &Value| {
        c.get("id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let codec_text = {
        let mut parts: Vec<String> = filters.into_iter().flatten().map(id).collect();
        match compressor {
            Some(c) if id(c) == "blosc" => parts.push(format!(
                "blosc({}, {}, clevel {})",
                c.get("cname").and_then(Value::as_str).unwrap_or("?"),
                // numcodecs' shuffle ids.
                match c.get("shuffle").and_then(Value::as_i64) {
                    Some(0) => "noshuffle",
                    Some(1) => "shuffle",
                    Some(2) => "bitshuffle",
                    Some(-1) => "autoshuffle",
                    _ => "?",
                },
                c.get("clevel").map_or(String::new(), Value::to_string)
            )),
            Some(c) => parts.push(id(c)),
            None => parts.push("uncompressed".into()),
        }
        parts.join(", ")
    };
    let gpu_unsupported = if itemsize.is_none() {
        Some("variable-length strings (decoded on the CPU)".into())
    } else if filters.is_some() {
        Some(format!(
            "filters {codec_text} (the GPU path decodes blosc-zstd alone)"
        ))
    } else if dtype.starts_with('>') {
        Some("big-endian elements".into())
    } else {
        match compressor {
            Some(c)
                if id(c) == "blosc" && c.get("cname").and_then(Value::as_str) == Some("zstd") =>
            {
                None
            }
            _ => Some(format!(
                "compressor {codec_text} (the GPU path decodes blosc-zstd)"
            )),
        }
    };
    let (stored_bytes, files) = chunk_files(listing);
    ArrayLayout {
        name: name.into(),
        zarr_format: 2,
        shape: u64s(meta.get("shape")),
        dtype,
        itemsize,
        chunk: u64s(meta.get("chunks")),
        shard: None,
        codecs: codec_text,
        dimension_names: strings(attrs.as_ref().and_then(|a| a.get("_ARRAY_DIMENSIONS"))),
        stored_bytes,
        files,
        gpu_unsupported,
    }
}

/// Checks that each of `fields` (JSON pointers into an array's metadata `meta`, read
/// from `path`) that is there is a list of whole numbers (`shape` must be there): a
/// `shape` of `[1.5]` is reported as such, not as whatever a shorter shape breaks
/// later.
fn check_dims(path: &Path, meta: &Value, fields: &[&str]) -> Result<()> {
    for &f in fields {
        let v = meta.pointer(f);
        let ok = match v {
            None => f != "/shape",
            Some(Value::Array(a)) => a.iter().all(|x| x.as_u64().is_some()),
            Some(_) => false,
        };
        if !ok {
            let what = v.map_or("missing".to_string(), |v| format!("{v}"));
            return Err(Error::NotStore {
                path: path.to_path_buf(),
                msg: format!(
                    "`{}` is {what}: not a list of whole numbers (the array's metadata is \
                     damaged; restore it or convert again)",
                    f.trim_start_matches('/')
                ),
            });
        }
    }
    Ok(())
}

/// The most bytes one chunk a reader decodes may hold (c-blosc's own limit is 2 GiB).
pub const MAX_CHUNK_BYTES: u64 = 1 << 31;

/// Checks an array's geometry before anything is sized from it: shape, chunk and
/// shard of one rank, chunks not empty, the element count, the chunk grid and a
/// chunk's decoded bytes within what can exist (numbers read from a file size
/// allocations and loops).
pub fn check_geometry(l: &ArrayLayout) -> std::result::Result<(), String> {
    let rank = l.shape.len();
    let dims = |v: &[u64]| {
        let each: Vec<String> = v.iter().map(u64::to_string).collect();
        format!("[{}]", each.join(", "))
    };
    if l.chunk.len() != rank || l.shard.as_ref().is_some_and(|s| s.len() != rank) {
        return Err(format!(
            "shape {}, chunk {} and shard {} differ in rank",
            dims(&l.shape),
            dims(&l.chunk),
            l.shard.as_deref().map_or("none".into(), dims)
        ));
    }
    // A 0 extent holds no chunk only along an axis of none (see `checked`).
    for (what, extents) in [("chunk", Some(&l.chunk)), ("shard", l.shard.as_ref())] {
        let Some(extents) = extents else { continue };
        if let Some(d) = (0..rank).find(|&d| extents[d] == 0 && l.shape[d] != 0) {
            return Err(format!(
                "{what} shape {} is 0 along axis {d}, where the array's shape {} is not",
                dims(extents),
                dims(&l.shape)
            ));
        }
    }
    let item = l.itemsize.unwrap_or(4).max(1);
    let product = |v: &[u64]| v.iter().try_fold(item, |a, &x| a.checked_mul(x));
    if product(&l.shape).is_none() {
        return Err(format!(
            "shape {:?}: more bytes than any store holds",
            l.shape
        ));
    }
    let max = match l.itemsize {
        Some(_) => MAX_CHUNK_BYTES,
        None => crate::vlen::MAX_DECODED as u64,
    };
    match product(&l.chunk) {
        Some(b) if b <= max => Ok(()),
        _ => Err(format!(
            "chunk {:?}: over {} MiB decoded, more than a chunk may hold",
            l.chunk,
            max >> 20
        )),
    }
}

/// `l`, once [`check_geometry`] passes; else the error naming its metadata `key`.
/// A chunk or shard extent of 0 along a dimension the array has no extent in holds
/// no chunk (bio2zarr writes `[0, 6]` chunks for an input without records); it is
/// then read as 1, so no grid arithmetic divides by it.
fn checked(storage: &dyn Storage, key: &str, mut l: ArrayLayout) -> Result<ArrayLayout> {
    check_geometry(&l).map_err(|msg| Error::NotStore {
        path: storage.name(key),
        msg: format!("{msg} (the array's metadata is damaged; restore it or convert again)"),
    })?;
    let empty: Vec<bool> = l.shape.iter().map(|&n| n == 0).collect();
    let fix = |v: &mut Vec<u64>| {
        for (x, &e) in v.iter_mut().zip(&empty) {
            if *x == 0 && e {
                *x = 1;
            }
        }
    };
    fix(&mut l.chunk);
    if let Some(s) = l.shard.as_mut() {
        fix(s);
    }
    Ok(l)
}

/// The arrays of the Zarr group at `root` (v3 `zarr.json` or v2 `.zgroup`; a local
/// directory or an `s3://` URL), sorted by name. Anything else is an error saying
/// what the path is.
pub fn read_group(root: &Path) -> Result<Vec<ArrayLayout>> {
    read_group_in(&*svar2_storage::open(root)?)
}

/// Whether `listing` (the objects under `name/`) holds a chunk key of an array at
/// `name`: `c/0/1` (Zarr v3's default keys), or whole numbers joined by `.` or `/`
/// (`0.1`, `0/1`: v2's, and v3's `v2` encoding).
fn holds_chunk_keys(name: &str, listing: &[(String, u64)]) -> bool {
    let numbers = |s: &str, sep: char| {
        !s.is_empty()
            && s.split(sep)
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    listing.iter().any(|(k, _)| {
        let Some(rest) = k.strip_prefix(name).and_then(|r| r.strip_prefix('/')) else {
            return false;
        };
        match rest.strip_prefix("c/") {
            Some(idx) => numbers(idx, '/'),
            None => rest == "c" || numbers(rest, '.') || numbers(rest, '/'),
        }
    })
}

/// [`read_group`] of an open storage: one listing of the store, then each array's
/// metadata.
pub fn read_group_in(storage: &dyn Storage) -> Result<Vec<ArrayLayout>> {
    let has = |k: &str| -> Result<bool> { Ok(storage.size(k)?.is_some()) };
    if !has("zarr.json")? && !has(".zgroup")? {
        storage.check_container()?;
        let root = storage.name("");
        let msg = match storage.local_root() {
            Some(p) if !p.exists() => "no such file or directory",
            Some(p) if !p.is_dir() => "a file, not a Zarr group",
            _ if has(crate::replace::IN_PROGRESS)? => {
                "not a complete store (no root zarr.json): the conversion did not finish; \
                 run it again"
            }
            _ => "not a Zarr group (no zarr.json or .zgroup)",
        };
        return Err(Error::NotStore {
            path: root,
            msg: msg.into(),
        });
    }
    let all = storage.list("")?;
    // Objects by their first key component: the group's children.
    let mut children: std::collections::BTreeMap<&str, Vec<(String, u64)>> = Default::default();
    for (k, size) in &all {
        if let Some((child, _)) = k.split_once('/') {
            children.entry(child).or_default().push((k.clone(), *size));
        }
    }
    let mut out = Vec::new();
    for (name, listing) in children {
        let holds = |f: &str| listing.iter().any(|(k, _)| k == &format!("{name}/{f}"));
        // A child named as VCF Zarr names its arrays, holding files but no array's
        // metadata: an array whose metadata was lost (deleted, truncated, overwritten).
        // Left out, its values would read as absent (every genotype `.`).
        let lost = || Error::NotStore {
            path: storage.name(name),
            msg: "named as a VCF Zarr array and holding its files, but without an array's \
                  metadata (zarr.json or .zarray missing, or not an array's): the array's \
                  metadata is damaged; restore it from a copy or convert again"
                .into(),
        };
        let vcf_name = [
            "variant_",
            "call_",
            "sample_",
            "contig_",
            "filter_",
            "region_index",
        ]
        .iter()
        .any(|p| name.starts_with(p));
        if holds("zarr.json") {
            let key = format!("{name}/zarr.json");
            let meta = read_json(storage, &key)?;
            // (A group of that name is a node of its own, someone's subgroup, unless
            // chunk keys lie in it: an array's metadata replaced by a group's.)
            let node = meta.get("node_type").and_then(Value::as_str);
            let group = node == Some("group") && !holds_chunk_keys(name, &listing);
            if vcf_name && node != Some("array") && !group {
                return Err(lost());
            }
            if meta.get("node_type").and_then(Value::as_str) == Some("array") {
                check_dims(
                    &storage.name(&key),
                    &meta,
                    &[
                        "/shape",
                        "/chunk_grid/configuration/chunk_shape",
                        "/codecs/0/configuration/chunk_shape",
                    ],
                )?;
                out.push(checked(storage, &key, array_v3(name, &listing, &meta))?);
            }
        } else if holds(".zarray") {
            let key = format!("{name}/.zarray");
            let meta = read_json(storage, &key)?;
            check_dims(&storage.name(&key), &meta, &["/shape", "/chunks"])?;
            let attrs = holds(".zattrs")
                .then(|| read_json(storage, &format!("{name}/.zattrs")))
                .transpose()?;
            out.push(checked(
                storage,
                &key,
                array_v2(name, &listing, &meta, attrs),
            )?);
        } else if vcf_name && (!holds(".zgroup") || holds_chunk_keys(name, &listing)) {
            return Err(lost());
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v3_sharded_and_v2_layouts_and_gpu_rules() {
        let meta = json!({
            "zarr_format": 3, "node_type": "array", "shape": [10, 4, 2], "data_type": "int8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 4, 2]}},
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [4, 2, 2],
                "codecs": [{"name": "bytes"}, {"name": "blosc", "configuration":
                    {"cname": "zstd", "clevel": 1, "shuffle": "bitshuffle"}}]}}],
            "dimension_names": ["variants", "samples", "ploidy"]
        });
        let a = array_v3("call_genotype", &[], &meta);
        assert_eq!(
            (a.chunk.clone(), a.shard.clone()),
            (vec![4, 2, 2], Some(vec![8, 4, 2]))
        );
        assert_eq!(a.gpu_unsupported, None);
        assert_eq!(a.chunk_along("samples"), Some(2));
        assert_eq!(a.decoded_bytes(), Some(80));
        let v2 = json!({"shape": [10, 4], "chunks": [5, 4], "dtype": "<i4",
            "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
            "filters": null});
        let b = array_v2("call_DP", &[], &v2, None);
        assert_eq!(b.itemsize, Some(4));
        assert!(b.gpu_unsupported.unwrap().contains("blosc-zstd"));
        let s = json!({"shape": [10], "chunks": [5], "dtype": "|O",
            "compressor": {"id": "blosc", "cname": "zstd"}, "filters": [{"id": "vlen-utf8"}]});
        assert!(array_v2("variant_id", &[], &s, None)
            .gpu_unsupported
            .unwrap()
            .contains("strings"));
    }

    /// A `shape` that is not whole numbers is named as such; shapes, chunks and
    /// grids beyond what can exist are refused before anything is sized from them.
    #[test]
    fn damaged_shapes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("zarr.json"),
            r#"{"zarr_format":3,"node_type":"group"}"#,
        )
        .unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        let write = |shape: &str, chunk: &str| {
            let m = format!(
                r#"{{"zarr_format":3,"node_type":"array","shape":{shape},"data_type":"int8",
                "chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":{chunk}}}}},
                "codecs":[{{"name":"bytes"}}],"dimension_names":["variants"]}}"#
            );
            std::fs::write(root.join("a/zarr.json"), m).unwrap();
            read_group(root).map(|_| ()).map_err(|e| e.to_string())
        };
        assert_eq!(write("[10]", "[5]"), Ok(()));
        let e = write("[1.5]", "[5]").unwrap_err();
        assert!(
            e.contains("`shape` is [1.5]: not a list of whole numbers"),
            "{e}"
        );
        let e = write(r#"["10"]"#, "[5]").unwrap_err();
        assert!(e.contains("`shape`"), "{e}");
        let e = write("[10]", "[-5]").unwrap_err();
        assert!(e.contains("chunk_shape"), "{e}");
        let e = write("[4, 8]", "[1]").unwrap_err();
        assert!(e.contains("rank"), "{e}");
        let e = write("[4611686018427387904, 8]", "[1, 1]").unwrap_err();
        assert!(e.contains("more bytes than any store holds"), "{e}");
        let e = write("[18446744073709551615]", "[0]").unwrap_err();
        assert!(e.contains("chunk shape [0] is 0 along axis 0"), "{e}");
        // Along an axis of none, a 0 extent holds no chunk either way (bio2zarr's).
        assert_eq!(write("[0]", "[0]"), Ok(()));
        let e = write("[18446744073709551615]", "[4294967296]").unwrap_err();
        assert!(e.contains("more than a chunk may hold"), "{e}");
    }
}
