//! Chunk keys: where a shard of an array lives, `<array>/c/<i>/<j>…` (Zarr v3's
//! default chunk key encoding with `/`). The one place that spells them.

use std::path::{Path, PathBuf};

/// The key of the shard at grid `indices` of `array`, e.g. `call_genotype/c/3/0/0`.
pub fn chunk_key(array: &str, indices: &[u64]) -> String {
    let mut k = format!("{array}/c");
    for i in indices {
        k.push('/');
        k.push_str(&i.to_string());
    }
    k
}

/// The file of that shard under a store's root.
pub fn chunk_path(root: &Path, array: &str, indices: &[u64]) -> PathBuf {
    let mut p = root.join(array).join("c");
    for i in indices {
        p.push(i.to_string());
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_paths_agree() {
        assert_eq!(
            chunk_key("call_genotype", &[3, 0, 0]),
            "call_genotype/c/3/0/0"
        );
        assert_eq!(chunk_key("sample_id", &[0]), "sample_id/c/0");
        assert_eq!(
            chunk_path(Path::new("/s.zarr"), "variant_position", &[12]),
            PathBuf::from("/s.zarr/variant_position/c/12")
        );
    }
}
