//! What a new version keeps of the store it replaces besides its records. Attributes
//! users added (zarr-python's `attrs`, xarray's) are carried over. Arrays and groups
//! svar2 did not write are refused: a new version is written whole from the records,
//! so it would drop them, and an array on the samples or variants axis could not
//! follow the new samples or sites anyway.

use crate::{Error, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Root attributes that are the store's description of its records (VCF Zarr's
/// `vcf_*`, `source`, svar2's own): the new version writes its own, never the old
/// ones.
fn describes_the_records(key: &str) -> bool {
    key.starts_with("vcf_") || key == "source" || key == "svar2"
}

/// An array attribute svar2 writes (`description`, and a field's `vcf_number`,
/// `vcf_type`, `vcf_order`): the new version's is the one kept.
fn written_by_svar2(key: &str) -> bool {
    key == "description" || key.starts_with("vcf_")
}

/// What a store's tree holds besides chunk keys and its root `zarr.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Array,
    Group,
    /// Anything else Zarr-like, said in words: Zarr v2 metadata (`.zarray`,
    /// `.zgroup`, `.zattrs`, `.zmetadata`), or a `zarr.json` that is neither.
    Other(&'static str),
}

/// Every node below `root` by path, found by walking every directory (arrays too:
/// zarr-python can put an array inside one), links not followed, in sorted order.
fn nodes(root: &Path, under: &str, out: &mut Vec<(String, Node)>) -> Result<()> {
    let dir = root.join(under);
    let mut entries: Vec<(String, bool)> = std::fs::read_dir(&dir)
        .map_err(crate::io(&dir))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let is_dir = e.file_type().ok()?.is_dir();
            Some((e.file_name().to_str()?.to_string(), is_dir))
        })
        .collect();
    entries.sort();
    for (name, is_dir) in entries {
        let path = match under {
            "" => name.clone(),
            _ => format!("{under}/{name}"),
        };
        if !is_dir {
            if [".zarray", ".zgroup", ".zattrs", ".zmetadata"].contains(&name.as_str()) {
                out.push((path, Node::Other("Zarr v2 metadata")));
            }
            continue;
        }
        if let Some(meta) = metadata(&root.join(&path))? {
            out.push((
                path.clone(),
                match meta
                    .as_ref()
                    .and_then(|m| m.get("node_type"))
                    .and_then(Value::as_str)
                {
                    Some("array") => Node::Array,
                    Some("group") => Node::Group,
                    _ => Node::Other("a zarr.json of neither an array nor a group"),
                },
            ));
        }
        nodes(root, &path, out)?;
    }
    Ok(())
}

/// The `zarr.json` of the node at `dir`, if it has one (`Some(None)`: not JSON).
fn metadata(dir: &Path) -> Result<Option<Option<Value>>> {
    let path = dir.join("zarr.json");
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(svar2_store::json::parse(&bytes).ok())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::io(&path)(e)),
    }
}

/// The attributes of the node at `dir` (none where it has no readable `zarr.json`).
fn attributes(dir: &Path) -> Result<Map<String, Value>> {
    Ok(metadata(dir)?
        .flatten()
        .and_then(|m| m.get("attributes").and_then(Value::as_object).cloned())
        .unwrap_or_default())
}

/// The arrays of the fixed VCF columns, genotypes, samples, contigs and filters, and
/// the region index: what every VCF Zarr writer (svar2, bio2zarr) puts there.
fn fixed_array(name: &str) -> bool {
    svar2_store::fields::NOT_FIELDS.contains(&name)
        || [
            "sample_id",
            "contig_id",
            "contig_length",
            "filter_id",
            "filter_description",
            "region_index",
        ]
        .contains(&name)
}

/// Whether the field array `name` (its metadata `meta`) is a VCF field's: svar2
/// declares each on the array (`vcf_type`); older bio2zarr stores keep the header
/// (`vcf_header`) at the root; bio2zarr 0.2 writes neither, only a `description`,
/// at a data type a VCF field has. An array added by zarr-python or xarray has no
/// description (or an int64, float64 data type no field has): it would be printed
/// as a field and read back narrowed. In a store whose fields svar2 declared
/// (`svar2_declares`: some array carries `vcf_type`), only `vcf_type` counts.
fn declared(name: &str, meta: &Value, header: Option<&str>, svar2_declares: bool) -> bool {
    let attrs = meta.get("attributes").and_then(Value::as_object);
    let has = |k: &str| attrs.is_some_and(|a| a.contains_key(k));
    if has("vcf_type") {
        return true;
    }
    if svar2_declares {
        // Every field svar2 wrote carries `vcf_type`: an array with a description
        // alone is another writer's (xarray variables often have one).
        return false;
    }
    let (kind, id) = match (name.strip_prefix("variant_"), name.strip_prefix("call_")) {
        (Some(id), _) => ("##INFO=<", id),
        (_, Some(id)) => ("##FORMAT=<", id),
        _ => return false,
    };
    let in_header = header.is_some_and(|h| {
        h.lines()
            .filter_map(|l| l.strip_prefix(kind))
            .any(|l| l.split(',').any(|kv| kv == format!("ID={id}")))
    });
    let vcf_dtype = meta
        .get("data_type")
        .and_then(svar2_store::Dtype::from_json)
        .is_some_and(|d| d != svar2_store::Dtype::I64);
    in_header || (has("description") && vcf_dtype)
}

/// Refuses a store holding arrays or groups svar2 did not write, before any work: a
/// new version is written from the store's records, so it holds the fixed columns'
/// arrays and one per declared INFO/FORMAT field, nothing else. Groups, Zarr v2
/// metadata, arrays inside arrays, and arrays that are neither (zarr-python's
/// `create_array`, xarray's new variable: a `variant_foo` no header declares would be
/// printed as an INFO field and read back narrowed) are refused by name.
pub(crate) fn refuse_foreign_nodes(store: &Path) -> Result<()> {
    let root = attributes(store)?;
    let header = root.get("vcf_header").and_then(Value::as_str);
    let mut all = Vec::new();
    nodes(store, "", &mut all)?;
    let mut svar2_declares = false;
    for (name, node) in &all {
        if *node == Node::Array && !name.contains('/') {
            svar2_declares |= attributes(&store.join(name))?.contains_key("vcf_type");
        }
    }
    let mut foreign = Vec::new();
    for (name, node) in all {
        let ours = match node {
            Node::Array if !name.contains('/') => {
                let meta = metadata(&store.join(&name))?.flatten().unwrap_or_default();
                fixed_array(&name) || declared(&name, &meta, header, svar2_declares)
            }
            _ => false,
        };
        if !ours {
            foreign.push(match node {
                Node::Other(what) => format!("{name}: {what}"),
                _ => name,
            });
        }
    }
    match foreign.is_empty() {
        true => Ok(()),
        false => Err(dropped(store, &foreign)),
    }
}

fn dropped(store: &Path, names: &[String]) -> Error {
    Error::Request(format!(
        "{}: holds what svar2 did not write ({}); an append writes a new version from \
         the store's records, which would not hold it: move it out of the store, \
         append, then add it back",
        store.display(),
        names.join(", ")
    ))
}

/// Refuses a new version that lacks an array or group of the store it replaces (the
/// rule above, checked on what was written: nothing the old version held is lost).
pub(crate) fn refuse_dropped_nodes(store: &Path, new: &Path) -> Result<()> {
    let (mut old_nodes, mut new_nodes) = (Vec::new(), Vec::new());
    nodes(store, "", &mut old_nodes)?;
    nodes(new, "", &mut new_nodes)?;
    let lost: Vec<String> = old_nodes
        .into_iter()
        .filter(|n| !new_nodes.contains(n))
        .map(|(name, _)| name)
        .collect();
    match lost.is_empty() {
        true => Ok(()),
        false => Err(dropped(store, &lost)),
    }
}

/// Carries the attributes users added to the store's root and arrays onto the new
/// version at `new` (each where the new version has no key of that name); says at
/// `-v` how many, and warns of each the new version drops (a root key named as
/// VCF Zarr's `vcf_*` or svar2's, an array's `vcf_*` it does not write) or replaces
/// (an array's edited `description`).
pub(crate) fn carry_attributes(store: &Path, new: &Path) -> Result<usize> {
    let mut root = attributes(store)?;
    let new_root = attributes(new)?;
    root.retain(|k, _| {
        let ours = describes_the_records(k);
        if ours && !new_root.contains_key(k) {
            tracing::warn!(
                "append: the root attribute {k} is not carried over (VCF Zarr's and \
                 svar2's names are the new version's to write)"
            );
        }
        !ours
    });
    let mut old_nodes = Vec::new();
    nodes(store, "", &mut old_nodes)?;
    let mut arrays = BTreeMap::new();
    for (name, _) in old_nodes.into_iter().filter(|(_, n)| *n == Node::Array) {
        let mut a = attributes(&store.join(&name))?;
        let theirs = attributes(&new.join(&name))?;
        a.retain(|k, v| {
            let ours = written_by_svar2(k);
            let replaced = k == "description" && theirs.get(k).is_some_and(|t| t != v);
            if ours && (replaced || !theirs.contains_key(k)) {
                tracing::warn!(
                    "append: {name}'s attribute {k} is the new version's (svar2 writes it \
                     from the records), not the one the store held"
                );
            }
            !ours
        });
        if !a.is_empty() {
            arrays.insert(name, a);
        }
    }
    if root.is_empty() && arrays.is_empty() {
        return Ok(0);
    }
    let python_floats = |dir: &Path| {
        std::fs::read(dir.join("zarr.json")).is_ok_and(|b| svar2_store::json::has_python_floats(&b))
    };
    for name in std::iter::once("").chain(arrays.keys().map(String::as_str)) {
        if python_floats(&store.join(name)) {
            tracing::warn!(
                "append: {}'s attributes hold NaN or Infinity, which JSON cannot: they \
                 are carried over as null",
                if name.is_empty() { "the root" } else { name }
            );
        }
    }
    let n = svar2_store::dir::add_attributes(new, &root, &arrays)?;
    tracing::info!("append: {n} attributes users added carried onto the new version");
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(root: &Path, path: &str, kind: &str) {
        let dir = root.join(path);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("zarr.json"),
            format!(r#"{{"zarr_format": 3, "node_type": "{kind}"}}"#),
        )
        .unwrap();
    }

    /// A new version without one of the old version's arrays, or without an array
    /// inside a group, is refused naming it; one that holds them all passes.
    #[test]
    fn a_new_version_that_drops_a_node_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let (old, new) = (d.path().join("old"), d.path().join("new"));
        for root in [&old, &new] {
            node(root, "", "group");
            node(root, "call_genotype", "array");
            std::fs::create_dir_all(root.join("call_genotype/c/0")).unwrap();
        }
        assert!(refuse_dropped_nodes(&old, &new).is_ok());
        node(&old, "extra", "group");
        node(&old, "extra/pca", "array");
        let e = refuse_dropped_nodes(&old, &new).unwrap_err().to_string();
        assert!(e.contains("(extra, extra/pca)"), "{e}");
        node(&new, "extra", "group");
        let e = refuse_dropped_nodes(&old, &new).unwrap_err().to_string();
        assert!(e.contains("(extra/pca)"), "{e}");
        node(&new, "extra/pca", "array");
        assert!(refuse_dropped_nodes(&old, &new).is_ok());
        // A group is svar2's never; an array only where its record names it.
        let e = refuse_foreign_nodes(&old).unwrap_err().to_string();
        assert!(e.contains("(extra, extra/pca)"), "{e}");
    }

    /// A field array is svar2's to write again where svar2 declared it on the array,
    /// the store's header (older bio2zarr's `vcf_header`) declares it, or it has a
    /// description at a field's data type (bio2zarr 0.2); not where only its name
    /// looks like a field's.
    #[test]
    fn field_arrays_are_ours_only_where_declared() {
        let header =
            "##fileformat=VCFv4.2\n##INFO=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n\
                      ##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">\n#CHROM\tPOS\n";
        let bare = serde_json::json!({"data_type": "int32", "attributes": {}});
        let svar2s =
            serde_json::json!({"data_type": "int64", "attributes": {"vcf_type": "Integer"}});
        let bio2zarrs =
            serde_json::json!({"data_type": "int16", "attributes": {"description": ""}});
        let wide = serde_json::json!({"data_type": "int64", "attributes": {"description": "x"}});
        let doubles =
            serde_json::json!({"data_type": "float64", "attributes": {"description": "x"}});
        assert!(declared("variant_DP", &bare, Some(header), false));
        assert!(declared("call_AD", &bare, Some(header), false));
        assert!(!declared("variant_AD", &bare, Some(header), false));
        assert!(!declared("call_DP", &bare, Some(header), false));
        assert!(!declared("variant_D", &bare, Some(header), false));
        assert!(!declared("variant_foo", &bare, None, false));
        assert!(declared("variant_foo", &svar2s, None, false));
        assert!(declared("variant_foo", &bio2zarrs, None, false));
        assert!(!declared("variant_foo", &wide, None, false));
        assert!(!declared("variant_foo", &doubles, None, false));
        // Where svar2 declared the store's fields, a description is not a declaration.
        assert!(declared("variant_foo", &svar2s, None, true));
        assert!(!declared("variant_foo", &bio2zarrs, None, true));
        assert!(fixed_array("call_genotype") && fixed_array("region_index"));
        assert!(!fixed_array("variant_foo"));
    }
}
