//! Array metadata of a sharded svar2 array, written as Zarr v3 `zarr.json` and read
//! back into the same struct (so rechunk, the reader and the GPU path see exactly what
//! convert wrote, and refuse what it would not write).

use crate::codecs::inner_codecs;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Everything an svar2 array's `zarr.json` says.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMeta {
    pub shape: Vec<u64>,
    /// Shard shape (the `regular` chunk grid).
    pub shard: Vec<u64>,
    /// Inner chunk shape (`sharding_indexed`'s `chunk_shape`).
    pub inner: Vec<u64>,
    pub dimension_names: Vec<String>,
    pub dtype: Dtype,
    pub bitshuffle: bool,
    /// blosc clevel (numbers) or zstd level (strings).
    pub level: i32,
    /// The array's attributes (`description`, and whatever a source store carried).
    pub attributes: Map<String, Value>,
}

impl ArrayMeta {
    /// The `zarr.json` of the array.
    pub fn to_json(&self) -> Value {
        json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.shape,
            "data_type": self.dtype.json(),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.shard}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": self.dtype.fill_json(),
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": self.inner,
                "codecs": inner_codecs(self.dtype, self.bitshuffle, self.level),
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                "index_location": "end"
            }}],
            "attributes": self.attributes,
            "dimension_names": self.dimension_names,
        })
    }

    /// Reads an array's `zarr.json` back; `path` names it in errors. Anything svar2
    /// does not write (another codec chain, an unsharded array) is an error saying so.
    pub fn from_json(path: &Path, v: &Value) -> Result<ArrayMeta> {
        let bad = |what: &str| Error::NotStore {
            path: path.into(),
            msg: format!("not an svar2 sharded array ({what})"),
        };
        let u64s = |v: Option<&Value>, what: &str| -> Result<Vec<u64>> {
            v.and_then(Value::as_array)
                .ok_or_else(|| bad(what))?
                .iter()
                .map(|x| x.as_u64().ok_or_else(|| bad(what)))
                .collect()
        };
        if v.get("zarr_format") != Some(&json!(3)) || v.get("node_type") != Some(&json!("array")) {
            return Err(bad("zarr_format 3 array expected"));
        }
        let dtype = v
            .get("data_type")
            .and_then(Dtype::from_json)
            .ok_or_else(|| bad("data_type"))?;
        let sharding = v
            .pointer("/codecs/0")
            .filter(|c| c.get("name") == Some(&json!("sharding_indexed")))
            .ok_or_else(|| bad("codecs: sharding_indexed expected"))?;
        let inner_chain = sharding
            .pointer("/configuration/codecs")
            .ok_or_else(|| bad("inner codecs"))?;
        let level = inner_chain
            .pointer("/1/configuration/clevel")
            .or_else(|| inner_chain.pointer("/1/configuration/level"))
            .and_then(Value::as_i64)
            .ok_or_else(|| bad("compression level"))? as i32;
        let bitshuffle =
            inner_chain.pointer("/1/configuration/shuffle") == Some(&json!("bitshuffle"));
        let meta = ArrayMeta {
            shape: u64s(v.get("shape"), "shape")?,
            shard: u64s(
                v.pointer("/chunk_grid/configuration/chunk_shape"),
                "chunk_grid",
            )?,
            inner: u64s(
                sharding.pointer("/configuration/chunk_shape"),
                "chunk_shape",
            )?,
            dimension_names: v
                .get("dimension_names")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("dimension_names"))?
                .iter()
                .map(|d| {
                    d.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad("dimension_names"))
                })
                .collect::<Result<_>>()?,
            dtype,
            bitshuffle,
            level,
            attributes: v
                .get("attributes")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        };
        // What it says must be exactly what svar2 writes for those settings.
        if meta.to_json().get("codecs") != v.get("codecs") {
            return Err(bad("codec chain differs from svar2's"));
        }
        let rank = meta.shape.len();
        if meta.shard.len() != rank || meta.inner.len() != rank {
            return Err(bad("shapes of different ranks"));
        }
        Ok(meta)
    }

    /// Attributes holding just a description, as convert writes every array's.
    pub fn described(text: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("description".into(), json!(text));
        m
    }

    /// Inner chunks per shard (the entries of a shard's index).
    pub fn chunks_per_shard(&self) -> usize {
        self.shard
            .iter()
            .zip(&self.inner)
            .map(|(&s, &i)| s.div_ceil(i.max(1)) as usize)
            .product()
    }
}

/// Reads and parses `<store>/<array>/zarr.json`.
pub fn read_array_meta(root: &Path, array: &str) -> Result<ArrayMeta> {
    let path = root.join(array).join("zarr.json");
    let text = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| Error::NotStore {
        path: path.clone(),
        msg: format!("not JSON ({e})"),
    })?;
    ArrayMeta::from_json(&path, &v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_back_every_type() {
        for dtype in Dtype::ALL {
            for bitshuffle in [false, true] {
                let m = ArrayMeta {
                    shape: vec![12_345, 1000, 2],
                    shard: vec![32_000, 1000, 2],
                    inner: vec![1000, 100, 2],
                    dimension_names: vec!["variants".into(), "samples".into(), "ploidy".into()],
                    dtype,
                    bitshuffle: bitshuffle && dtype != Dtype::Str,
                    level: 3,
                    attributes: ArrayMeta::described("x"),
                };
                let back = ArrayMeta::from_json(Path::new("a/zarr.json"), &m.to_json());
                assert_eq!(back.unwrap(), m, "{dtype:?}");
                assert_eq!(m.chunks_per_shard(), 32 * 10);
            }
        }
        let mut v = ArrayMeta {
            shape: vec![1],
            shard: vec![1],
            inner: vec![1],
            dimension_names: vec!["variants".into()],
            dtype: Dtype::I8,
            bitshuffle: false,
            level: 1,
            attributes: Map::new(),
        }
        .to_json();
        v["codecs"][0]["name"] = json!("bytes");
        assert!(ArrayMeta::from_json(Path::new("a"), &v).is_err());
    }
}
