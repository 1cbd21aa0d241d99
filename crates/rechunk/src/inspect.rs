//! What a store's layout costs a reader of patches (`svar2 inspect`): per array its
//! shape, type, the chunk a reader decodes, shard, codecs, stored bytes, compression
//! ratio, file count, whether svar2's GPU path decodes it, and the decode amplification
//! of a `--patch` (decoded bytes ÷ needed bytes, the planner's law); then the store's
//! totals and the arrays that cost a patch reader the most.

use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use svar2_planner::geometry::{amplification, PatchShape};
use svar2_store::layout::{read_group, ArrayLayout};

/// One array and what a patch costs in it.
#[derive(Debug, Clone, Serialize)]
pub struct ArrayReport {
    #[serde(flatten)]
    pub layout: ArrayLayout,
    /// Decoded ÷ stored bytes (fixed-size types).
    pub compression_ratio: Option<f64>,
    /// Decoded ÷ needed bytes for the patch, on arrays with a `variants` axis.
    pub amplification: Option<f64>,
}

/// The whole store.
#[derive(Debug, Clone, Serialize)]
pub struct StoreReport {
    pub store: String,
    pub zarr_format: u8,
    pub patch: Option<String>,
    pub arrays: Vec<ArrayReport>,
    pub files: u64,
    pub stored_bytes: u64,
    /// What `svar2 append` would cost this store (one sentence).
    pub append: String,
}

/// The decode amplification of `patch` on an array: along `variants` and, when it has
/// one, `samples`; other axes are read whole, as a patch reads every ploidy.
pub fn array_amplification(a: &ArrayLayout, patch: PatchShape) -> Option<f64> {
    let vc = a.chunk_along("variants")?;
    match (a.chunk_along("samples"), a.len_along("samples")) {
        (Some(sc), Some(n)) => Some(amplification(patch, vc, sc, n)),
        _ => Some(amplification(
            PatchShape {
                variants: patch.variants,
                samples: 1,
            },
            vc,
            1,
            1,
        )),
    }
}

/// Reads the layout of the store at `root` and what `patch` costs in it.
pub fn inspect(root: &Path, patch: Option<PatchShape>) -> svar2_store::Result<StoreReport> {
    let arrays = read_group(root)?;
    let zarr_format = arrays.first().map_or(3, |a| a.zarr_format);
    let files = arrays.iter().map(|a| a.files).sum();
    let stored_bytes = arrays.iter().map(|a| a.stored_bytes).sum();
    let append = append_cost(root, &arrays);
    let arrays = arrays
        .into_iter()
        .map(|layout| ArrayReport {
            compression_ratio: layout
                .decoded_bytes()
                .filter(|_| layout.stored_bytes > 0)
                .map(|d| d as f64 / layout.stored_bytes as f64),
            amplification: patch.and_then(|p| array_amplification(&layout, p)),
            layout,
        })
        .collect();
    Ok(StoreReport {
        store: root.display().to_string(),
        zarr_format,
        patch: patch.map(|p| format!("{}x{}", p.variants, p.samples)),
        arrays,
        files,
        stored_bytes,
        append,
    })
}

/// What adding samples to the store at `root` costs (`svar2 append`): with the
/// store's sites, the sample columns from its last sample shard on; otherwise a new
/// version of the whole store (its records merged with the new samples); or why it
/// cannot be grown in place.
fn append_cost(root: &Path, arrays: &[ArrayLayout]) -> String {
    if svar2_storage::bucket::is_bucket_url(root) {
        return "append: not in place for a bucket store (its keys would change under its \
                readers): `svar2 convert --merge` the inputs into a new prefix"
            .into();
    }
    if svar2_storage::zip::is_zip_file(root) {
        return "append: a zip store is written once: rechunk it into a directory store, or \
                `svar2 convert --merge` into a new .zip"
            .into();
    }
    if arrays.first().is_some_and(|a| a.zarr_format == 2) {
        return "append: a Zarr v2 store is not grown in place: `svar2 rechunk` it into a v3 \
                store first"
            .into();
    }
    let stored: u64 = arrays.iter().map(|a| a.stored_bytes).sum();
    let layout = std::fs::read(root.join("zarr.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["attributes"]["svar2"]["layout"].as_object().cloned());
    let whole = format!(
        "other sites write a new version of the whole store ({} of chunks, every record \
         merged with the new samples) beside it and swap it in",
        bytes(stored)
    );
    let Some(layout) = layout else {
        return format!("append: {whole}; written by another tool, it gets svar2's default layout");
    };
    let samples = arrays
        .iter()
        .find(|a| a.name == "sample_id")
        .and_then(|a| a.shape.first().copied())
        .unwrap_or(0);
    let ss = layout
        .get("samples_shard")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(samples)
        .max(1);
    if samples <= ss {
        return format!(
            "append: its {samples} samples are one sample shard, so every append writes a \
             new version of the whole store ({} of chunks) beside it and swaps it in; \
             convert with --samples-shard well under the sample count and new samples \
             with the store's sites write only the last sample shard's columns",
            bytes(stored)
        );
    }
    let first = (samples - 1) / ss * ss;
    let per_sample =
        |a: &&ArrayLayout| a.dimension_names.len() >= 2 && a.dimension_names[1] == "samples";
    let kept: u64 = arrays
        .iter()
        .filter(per_sample)
        .map(|a| (a.stored_bytes as u128 * first as u128 / samples as u128) as u64)
        .sum();
    format!(
        "append: new samples with the store's sites write sample columns {first}.. and \
         the variant arrays (about {} of its {} of chunks, plus the new samples' own; \
         the rest is linked); {whole}, keeping this layout",
        bytes(stored - kept),
        bytes(stored)
    )
}

fn dims(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join("x")
}

fn bytes(n: u64) -> String {
    svar2_planner::size::human(n)
}

impl StoreReport {
    /// The report as people read it.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} (Zarr v{}), {} arrays, {} of chunks in {} chunk files (metadata not counted){}",
            self.store,
            self.zarr_format,
            self.arrays.len(),
            bytes(self.stored_bytes),
            self.files,
            self.patch.as_ref().map_or(String::new(), |p| format!(
                "; amp = bytes one {p} patch decodes / bytes it needs (per patch, alone; \
                 `bench-read` reports decoded/useful per batch, where patches share chunks)"
            ))
        );
        let _ = writeln!(
            s,
            "{:<24} {:>8} {:<18} {:<14} {:<14} {:>10} {:>6} {:>6} {:>6}  codecs / GPU",
            "array", "dtype", "shape", "chunk", "shard", "stored", "ratio", "files", "amp"
        );
        for a in &self.arrays {
            let l = &a.layout;
            let _ = writeln!(
                s,
                "{:<24} {:>8} {:<18} {:<14} {:<14} {:>10} {:>6} {:>6} {:>6}  {}; {}",
                l.name,
                if l.dtype == "fixed_length_utf32" {
                    "utf32"
                } else {
                    &l.dtype
                },
                dims(&l.shape),
                dims(&l.chunk),
                l.shard.as_deref().map_or("-".into(), dims),
                bytes(l.stored_bytes),
                a.compression_ratio
                    .map_or("-".into(), |r| format!("{r:.1}")),
                l.files,
                a.amplification.map_or("-".into(), |x| format!("{x:.1}")),
                l.codecs,
                match &l.gpu_unsupported {
                    None => "GPU: yes".to_string(),
                    Some(why) => format!("GPU: no, {why}"),
                }
            );
        }
        if let Some(p) = &self.patch {
            let mut worst: Vec<&ArrayReport> = self
                .arrays
                .iter()
                .filter(|a| a.amplification.is_some_and(|x| x > 1.5))
                .collect();
            worst.sort_by(|a, b| {
                b.amplification
                    .partial_cmp(&a.amplification)
                    .expect("finite")
            });
            if worst.is_empty() {
                let _ = writeln!(s, "every array decodes a {p} patch at 1.5x or less");
            } else {
                let _ = writeln!(
                    s,
                    "worst for a {p} patch: {}",
                    worst
                        .iter()
                        .take(5)
                        .map(|a| format!(
                            "{} {:.1}x",
                            a.layout.name,
                            a.amplification.unwrap_or(0.0)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let _ = writeln!(
                    s,
                    "fix: `svar2 rechunk --patch {p} {} OUT.zarr` (inner chunks sized so a \
                     patch decodes at most --max-amplification, 1.5; no need to go back to \
                     the VCF)",
                    self.store
                );
            }
        }
        let _ = writeln!(s, "{}", self.append);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification_is_the_planners_law() {
        let layout = ArrayLayout {
            name: "call_genotype".into(),
            zarr_format: 2,
            shape: vec![198_366, 1000, 2],
            dtype: "|i1".into(),
            itemsize: Some(1),
            chunk: vec![10_000, 1000, 2],
            shard: None,
            codecs: String::new(),
            dimension_names: vec!["variants".into(), "samples".into(), "ploidy".into()],
            stored_bytes: 1,
            files: 1,
            gpu_unsupported: None,
        };
        let p = PatchShape {
            variants: 4096,
            samples: 1,
        };
        // (v − 1 + Vc)/v × (s − 1 + Sc)/s, as the planner sizes chunks by.
        let want = (4095.0 + 10_000.0) / 4096.0 * 1000.0;
        let got = array_amplification(&layout, p).unwrap();
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        assert_eq!(got, amplification(p, 10_000, 1000, 1000));
        // A variants-only array pays along variants alone.
        let mut pos = layout.clone();
        pos.dimension_names = vec!["variants".into()];
        pos.chunk = vec![10_000];
        let got = array_amplification(&pos, p).unwrap();
        assert!((got - 14095.0 / 4096.0).abs() < 1e-9);
        pos.dimension_names = vec!["samples".into()];
        assert_eq!(array_amplification(&pos, p), None);
    }
}
