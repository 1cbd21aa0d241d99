//! Array metadata of a sharded svar2 array, written as Zarr v3 `zarr.json` and read
//! back into the same struct (so rechunk, the reader and the GPU path see exactly what
//! convert wrote, and refuse what it would not write).

use crate::chain::inner_codecs;
use crate::dtype::Dtype;
use serde_json::{json, Map, Value};

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

    /// Attributes holding just a description, as convert writes every array's.
    pub fn described(text: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("description".into(), json!(text));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zarrs::array::ArrayMetadata;

    /// What convert writes is an array zarrs opens, sharded, with svar2's inner chain
    /// ending in crc32c.
    #[test]
    fn zarrs_opens_what_is_written_for_every_type() {
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
                let v = m.to_json();
                let meta: ArrayMetadata = serde_json::from_value(v.clone()).unwrap();
                let store = std::sync::Arc::new(zarrs::storage::store::MemoryStore::new());
                let a = zarrs::array::Array::new_with_metadata(store, "/a", meta)
                    .unwrap_or_else(|e| panic!("{dtype:?}: {e}"));
                assert_eq!(a.shape(), &[12_345, 1000, 2]);
                let inner = v.pointer("/codecs/0/configuration/codecs").unwrap();
                let last = inner.as_array().unwrap().last().unwrap();
                assert_eq!(last["name"], "crc32c", "{dtype:?}");
            }
        }
    }
}
