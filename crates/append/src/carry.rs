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

/// An array attribute svar2 writes (the new version's is the one kept).
fn written_by_svar2(key: &str) -> bool {
    key == "description"
}

/// The nodes below `root`: (path, is an array), groups entered, arrays not.
fn nodes(root: &Path, under: &str, out: &mut Vec<(String, bool)>) -> Result<()> {
    let dir = root.join(under);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    names.sort();
    for name in names {
        let path = if under.is_empty() {
            name
        } else {
            format!("{under}/{name}")
        };
        let Some(meta) = metadata(&root.join(&path))? else {
            continue;
        };
        match meta.get("node_type").and_then(Value::as_str) {
            Some("array") => out.push((path, true)),
            Some("group") => {
                out.push((path.clone(), false));
                nodes(root, &path, out)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The `zarr.json` of the node at `dir`, if it has one.
fn metadata(dir: &Path) -> Result<Option<Value>> {
    let path = dir.join("zarr.json");
    match std::fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::io(&path)(e)),
    }
}

/// Refuses a store holding arrays or groups svar2 did not write, before any work:
/// groups (svar2 writes none below the root), and arrays its record of shards
/// (`attributes.svar2.shards`, every array it wrote) does not name, or for a store
/// without one (another tool's), arrays no VCF Zarr writer names so.
pub(crate) fn refuse_foreign_nodes(store: &Path) -> Result<()> {
    let root = metadata(store)?.unwrap_or_default();
    let record = root
        .get("attributes")
        .and_then(|a| a.get("svar2"))
        .and_then(|s| s.get("shards"))
        .and_then(Value::as_object);
    let vcf_zarr = |name: &str| {
        [
            "variant_",
            "call_",
            "sample_",
            "contig_",
            "filter_",
            "region_index",
        ]
        .iter()
        .any(|p| name.starts_with(p))
    };
    let mut all = Vec::new();
    nodes(store, "", &mut all)?;
    let foreign: Vec<String> = all
        .into_iter()
        .filter(|(name, array)| {
            !array
                || match record {
                    Some(r) => !r.contains_key(name),
                    None => !vcf_zarr(name),
                }
        })
        .map(|(name, _)| name)
        .collect();
    match foreign.is_empty() {
        true => Ok(()),
        false => Err(dropped(store, &foreign)),
    }
}

fn dropped(store: &Path, names: &[String]) -> Error {
    Error::Request(format!(
        "{}: holds {} svar2 did not write ({}); append writes a new version of the \
         store from its records and the new inputs, which would not hold them (and an \
         array on the samples or variants axis would no longer fit): move them out of \
         the store, append, then add them back",
        store.display(),
        if names.len() == 1 { "a node" } else { "nodes" },
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
/// version at `new` (each where the new version has no key of that name); returns
/// how many.
pub(crate) fn carry_attributes(store: &Path, new: &Path) -> Result<usize> {
    let attrs = |meta: Option<Value>| -> Map<String, Value> {
        meta.and_then(|m| m.get("attributes").and_then(Value::as_object).cloned())
            .unwrap_or_default()
    };
    let mut root = attrs(metadata(store)?);
    root.retain(|k, _| !describes_the_records(k));
    let mut old_nodes = Vec::new();
    nodes(store, "", &mut old_nodes)?;
    let mut arrays = BTreeMap::new();
    for (name, _) in old_nodes.into_iter().filter(|(_, array)| *array) {
        let mut a = attrs(metadata(&store.join(&name))?);
        a.retain(|k, _| !written_by_svar2(k));
        if !a.is_empty() {
            arrays.insert(name, a);
        }
    }
    if root.is_empty() && arrays.is_empty() {
        return Ok(0);
    }
    Ok(svar2_store::dir::add_attributes(new, &root, &arrays)?)
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
}
