//! What to print: regions (`-r/-R`, records overlapping them, found through the region
//! index), targets (`-t/-T`, records whose POS lies in them, `^` to exclude), samples
//! (`-s/-S`, `^` to exclude) — parsed as bcftools parses them, checked against the
//! store (an unknown contig or sample is an error naming it).

use crate::error::{Error, Result};
use svar2_reader::Store;

pub use svar2_vcf::region::{parse_region, parse_regions, read_regions_file, Region, Targets};

/// Store rows overlapping any of `regions`, each once: contig by contig in the order
/// the regions first name them (as bcftools view visits `-r 2,1`: contig 2 first),
/// ascending within each. An unknown contig is an error naming it.
pub fn rows_in(store: &Store, regions: &[Region]) -> Result<Vec<u64>> {
    // Regions on contigs the store lacks are passed over with a warning while some
    // region names one it has (a genome-wide BED file over one chromosome's store, as
    // bcftools and svar2 convert take it); where none does, the first is the error.
    let known = |r: &&Region| store.contig_names().iter().any(|c| c == &r.contig);
    let unknown: Vec<&str> = regions
        .iter()
        .filter(|r| !known(r))
        .map(|r| r.contig.as_str())
        .collect();
    let some_known = unknown.len() < regions.len();
    if some_known && !unknown.is_empty() {
        let mut names = unknown.clone();
        names.dedup();
        tracing::warn!(
            "regions on contigs the store lacks are passed over: {}",
            names.join(", ")
        );
    }
    let regions: Vec<Region> = match some_known {
        true => regions.iter().filter(known).cloned().collect(),
        false => regions.to_vec(),
    };
    let mut contigs: Vec<&str> = Vec::new();
    for r in &regions {
        if !contigs.contains(&r.contig.as_str()) {
            contigs.push(&r.contig);
        }
    }
    let mut rows = Vec::new();
    for contig in contigs {
        let mut of_contig = Vec::new();
        for r in regions.iter().filter(|r| r.contig == contig) {
            of_contig.extend(rows_of(store, r)?);
        }
        of_contig.sort_unstable();
        of_contig.dedup();
        rows.extend(of_contig);
    }
    Ok(rows)
}

/// Store rows overlapping `r`, ascending.
fn rows_of(store: &Store, r: &Region) -> Result<Vec<u64>> {
    if !store.contig_names().iter().any(|c| c == &r.contig) {
        return Err(Error::Usage(format!(
            "{}: no contig {} in the store (contigs: {})",
            store.group().root.display(),
            r.contig,
            store
                .contig_names()
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if r.start > r.end {
        // A reversed range (`1:300-200`) selects nothing, as in bcftools.
        return Ok(Vec::new());
    }
    Ok(store.locate(&r.contig, r.start, r.end)?)
}

/// Sample columns from `-s LIST` / `-S FILE` (a leading `^` excludes), in the order
/// given (excluded: the store's order of the rest). Unknown names are an error, or,
/// with `force` (bcftools' `--force-samples`), passed over with a warning.
pub fn sample_columns(
    store: &Store,
    list: Option<&str>,
    file: Option<&std::path::Path>,
    force: bool,
) -> Result<Option<Vec<u64>>> {
    let (spec, from_file): (Option<String>, bool) = match (list, file) {
        (Some(l), None) => (Some(l.to_string()), false),
        (None, Some(f)) => {
            let (exclude, path) = match f.to_str().and_then(|s| s.strip_prefix('^')) {
                Some(p) => (true, std::path::PathBuf::from(p)),
                None => (false, f.to_path_buf()),
            };
            let text = svar2_vcf::region::read_text_file(&path)
                .map_err(|e| Error::Usage(e.to_string()))?;
            let names: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            (
                Some(format!(
                    "{}{}",
                    if exclude { "^" } else { "" },
                    names.join("\u{1}")
                )),
                true,
            )
        }
        (None, None) => (None, false),
        (Some(_), Some(_)) => return Err(Error::Usage("give -s or -S, not both".into())),
    };
    let Some(spec) = spec else { return Ok(None) };
    let (exclude, spec) = match spec.strip_prefix('^') {
        Some(s) => (true, s.to_string()),
        None => (false, spec),
    };
    let sep = if from_file { '\u{1}' } else { ',' };
    let names: Vec<&str> = match from_file {
        true => spec.split(sep).filter(|s| !s.is_empty()).collect(),
        false => spec.split(sep).collect(),
    };
    // `-s ""`, `-s ^` and `-s A,` name an empty sample (bcftools refuses them too).
    if names.iter().any(|n| n.is_empty()) {
        return Err(Error::Usage(format!(
            "-s {:?}: a sample list names an empty sample (a stray comma, or nothing after \
             ^); give the names, comma-separated",
            if exclude {
                format!("^{spec}")
            } else {
                spec.clone()
            }
        )));
    }
    let names: Vec<&str> = match force {
        false => names,
        true => {
            let known: std::collections::HashSet<&str> =
                store.sample_names().iter().map(String::as_str).collect();
            let (kept, unknown): (Vec<&str>, Vec<&str>) =
                names.into_iter().partition(|n| known.contains(n));
            if !unknown.is_empty() {
                tracing::warn!(
                    "--force-samples: samples the store lacks are passed over: {}",
                    unknown.join(", ")
                );
            }
            kept
        }
    };
    if !exclude {
        // A VCF names each sample once: its readers (htslib) refuse a header that
        // names one twice, and bcftools view refuses the request.
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = names.iter().find(|n| !seen.insert(**n)) {
            return Err(Error::Usage(format!(
                "sample {twice} is asked for twice (-s/-S): a VCF holds one column per \
                 sample; name it once"
            )));
        }
    }
    let cols = store.sample_columns(&names).map_err(Error::from)?;
    if !exclude {
        return Ok(Some(cols));
    }
    let drop: std::collections::HashSet<u64> = cols.into_iter().collect();
    Ok(Some(
        (0..store.sample_names().len() as u64)
            .filter(|c| !drop.contains(c))
            .collect(),
    ))
}
