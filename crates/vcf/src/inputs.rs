//! Many input files as one call set (per-chromosome releases): the checks made before
//! anything is written — the same samples in the same order, one definition per
//! field, each contig in one file — the merged schema, and the order the files are
//! read in, which depends on their contents, never on the order they were given.

use crate::error::{Error, Result};
use crate::schema::{Category, Schema};
use std::path::{Path, PathBuf};

/// One input: its path (`-` is standard input) and its own header's schema.
pub struct Input {
    pub path: PathBuf,
    pub schema: Schema,
}

/// Whether `path` names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The schema of the whole call set: the samples (which must match), every field
/// (one Type and Number per name), FILTERs and contigs in the order the headers
/// declare them (inputs taken by path, so the result does not depend on argument
/// order), and the first file's other meta lines.
pub fn merge(inputs: &[Input]) -> Result<Schema> {
    let mut by_path: Vec<&Input> = inputs.iter().collect();
    by_path.sort_by(|a, b| a.path.cmp(&b.path));
    let first = by_path[0];
    let mut merged = first.schema.clone();
    for other in &by_path[1..] {
        let s = &other.schema;
        if s.samples != merged.samples {
            let at = merged
                .samples
                .iter()
                .zip(s.samples.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(merged.samples.len().min(s.samples.len()));
            let name = |v: &[String]| v.get(at).map_or("(none)".to_string(), |x| x.clone());
            return Err(Error::Inputs(format!(
                "{} and {} have different samples: sample {} is {} in one and {} in the \
                 other ({} and {} samples); convert files of one call set (same samples, \
                 same order: `bcftools view -s` to subset or reorder)",
                first.path.display(),
                other.path.display(),
                at + 1,
                name(&merged.samples),
                name(&s.samples),
                merged.samples.len(),
                s.samples.len()
            )));
        }
        for f in &s.fields {
            match merged
                .fields
                .iter()
                .find(|m| m.category == f.category && m.name == f.name)
            {
                Some(m) if m.ty != f.ty || m.number != f.number => {
                    let kind = match f.category {
                        Category::Info => "INFO",
                        Category::Format => "FORMAT",
                    };
                    return Err(Error::Inputs(format!(
                        "{kind}/{} is declared Type={:?},Number={} in {} but \
                         Type={:?},Number={} in {}: make the headers agree (`bcftools \
                         reheader`)",
                        f.name,
                        m.ty,
                        m.number,
                        first.path.display(),
                        f.ty,
                        f.number,
                        other.path.display()
                    )));
                }
                Some(_) => {}
                None => merged.fields.push(f.clone()),
            }
        }
        // INFO fields before FORMAT fields, as one header lists them.
        merged
            .fields
            .sort_by_key(|f| matches!(f.category, Category::Format));
        merged.has_gt |= s.has_gt;
        for flt in &s.filters {
            if !merged.filters.iter().any(|m| m.id == flt.id) {
                merged.filters.push(flt.clone());
            }
        }
        for c in &s.contigs {
            if !merged.contigs.iter().any(|m| m.name == c.name) {
                let mut c = c.clone();
                c.hts_rid = None; // ids are per file; the merged list is by name
                merged.contigs.insert(merged.declared_contigs, c);
                merged.declared_contigs += 1;
            }
        }
    }
    Ok(merged)
}

/// The contig each input's records start on (by the index's counts, else by reading
/// its first record), as a rank in `merged`'s contig list; inputs are read in that
/// order (then by path). An input with no records goes last.
pub fn read_order(
    inputs: &[Input],
    first_contigs: &[Option<String>],
    merged: &Schema,
) -> Vec<usize> {
    let rank = |i: usize| {
        first_contigs[i]
            .as_ref()
            .and_then(|n| merged.contigs.iter().position(|c| &c.name == n))
            .unwrap_or(usize::MAX)
    };
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by(|&a, &b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| inputs[a].path.cmp(&inputs[b].path))
    });
    order
}
