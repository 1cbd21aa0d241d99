//! The chunk grid of a store: one variants inner chunk and shard for every array on the
//! `variants` axis, one samples inner chunk and shard for every array on `samples`, and
//! every other axis whole. Convert and rechunk place arrays with this one rule, which is
//! what lets a rechunked store equal a direct conversion byte for byte.

/// Chunk and shard sizes shared by every array (recorded in the root group's `svar2`
/// attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Geometry {
    pub variants_chunk: u64,
    pub samples_chunk: u64,
    pub variants_shard: u64,
    pub samples_shard: u64,
    pub zstd_level: i32,
}

/// As logs show it: `chunks 1000 x 1000, shards 10000 x 1000 (variants x samples), zstd 1`.
impl std::fmt::Display for Geometry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "chunks {} x {}, shards {} x {} (variants x samples), zstd level {}",
            self.variants_chunk,
            self.samples_chunk,
            self.variants_shard,
            self.samples_shard,
            self.zstd_level
        )
    }
}

impl Geometry {
    /// (shard shape, inner chunk shape) of an array with these dimension names and
    /// shape: `variants` and `samples` on the store's grid, any other axis whole (at
    /// least 1, as Zarr requires).
    pub fn grid(&self, dimension_names: &[String], shape: &[u64]) -> (Vec<u64>, Vec<u64>) {
        dimension_names
            .iter()
            .zip(shape)
            .map(|(d, &n)| match d.as_str() {
                "variants" => (self.variants_shard, self.variants_chunk),
                "samples" => (self.samples_shard, self.samples_chunk),
                _ => (n.max(1), n.max(1)),
            })
            .unzip()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_samples_on_the_grid_other_axes_whole() {
        let g = Geometry {
            variants_chunk: 2048,
            samples_chunk: 1,
            variants_shard: 32768,
            samples_shard: 1000,
            zstd_level: 1,
        };
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            g.grid(&names(&["variants", "samples", "ploidy"]), &[10, 7, 2]),
            (vec![32768, 1000, 2], vec![2048, 1, 2])
        );
        assert_eq!(
            g.grid(
                &names(&["region_index_values", "region_index_fields"]),
                &[0, 6]
            ),
            (vec![1, 6], vec![1, 6])
        );
    }
}
