//! Per-contig record counts from a CSI or TBI index, without reading records
//! (`hts_idx_get_stat` per contig). A tabix index (TBI, or CSI written by
//! tabix/bcftools for a .vcf.gz) numbers contigs in its own order, so names are mapped
//! through the index's name table; a BCF's CSI uses the header's contig ids. Every id
//! is bounded by `hts_idx_nseq` (htslib does not check).

use crate::schema::Contig;
use rust_htslib::htslib;
use std::collections::HashMap;
use std::ffi::{c_int, CStr, CString};
use std::path::{Path, PathBuf};

/// Which index was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    Csi,
    Tbi,
}

/// Record counts per store contig, from an index.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IndexCounts {
    pub kind: IndexKind,
    pub path: PathBuf,
    /// One count per contig asked about (0 for contigs the index does not list).
    pub counts: Vec<u64>,
    /// Contigs a tabix index lists that the header does not declare, in the index's
    /// order (the order the file meets them), with their counts.
    pub undeclared: Vec<(String, u64)>,
}

/// Why no counts are available (said in the plan).
#[derive(Debug, Clone, serde::Serialize)]
pub struct NoCounts {
    pub reason: String,
}

fn cpath(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).ok()
}

/// Counts from `<input>.csi` or `<input>.tbi`, whichever exists (CSI first).
pub fn contig_counts(input: &Path, contigs: &[Contig]) -> Result<IndexCounts, NoCounts> {
    let mut tried = Vec::new();
    for (ext, kind) in [("csi", IndexKind::Csi), ("tbi", IndexKind::Tbi)] {
        let mut idx_path = input.as_os_str().to_owned();
        idx_path.push(format!(".{ext}"));
        let idx_path = PathBuf::from(idx_path);
        if !idx_path.exists() {
            continue;
        }
        tried.push(idx_path.display().to_string());
        if let Some((counts, undeclared)) = read_counts(input, &idx_path, contigs) {
            return Ok(IndexCounts {
                kind,
                path: idx_path,
                counts,
                undeclared,
            });
        }
    }
    Err(NoCounts {
        reason: if tried.is_empty() {
            format!(
                "no index ({0}.csi or {0}.tbi); index it with `bcftools index {0}`",
                input.display()
            )
        } else {
            format!(
                "index {} has no usable per-contig statistics",
                tried.join(", ")
            )
        },
    })
}

fn stats(idx: *const htslib::hts_idx_t, tid: c_int) -> Option<u64> {
    let (mut mapped, mut unmapped) = (0u64, 0u64);
    // SAFETY: idx is a live index and tid < hts_idx_nseq(idx).
    let r = unsafe { htslib::hts_idx_get_stat(idx, tid, &mut mapped, &mut unmapped) };
    (r >= 0).then_some(mapped)
}

type Counts = (Vec<u64>, Vec<(String, u64)>);

fn read_counts(input: &Path, idx_path: &Path, contigs: &[Contig]) -> Option<Counts> {
    let (fnc, idxc) = (cpath(input)?, cpath(idx_path)?);
    let by_name: HashMap<&str, usize> = contigs
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let mut counts = vec![0u64; contigs.len()];
    let mut undeclared = Vec::new();
    // SAFETY: pointers come from htslib and are destroyed before returning.
    unsafe {
        let tbx = htslib::tbx_index_load2(fnc.as_ptr(), idxc.as_ptr());
        if !tbx.is_null() {
            let mut n: c_int = 0;
            let names = htslib::tbx_seqnames(tbx, &mut n);
            let nseq = htslib::hts_idx_nseq((*tbx).idx);
            let mut ok = !names.is_null();
            if ok {
                for tid in 0..n.min(nseq) {
                    let name = *names.add(tid as usize);
                    if name.is_null() {
                        continue;
                    }
                    let name = CStr::from_ptr(name).to_string_lossy();
                    let Some(c) = stats((*tbx).idx, tid) else {
                        ok = false;
                        break;
                    };
                    match by_name.get(name.as_ref()) {
                        Some(&i) => counts[i] = c,
                        None => undeclared.push((name.into_owned(), c)),
                    }
                }
                libc_free(names as *mut std::ffi::c_void);
            }
            htslib::tbx_destroy(tbx);
            return ok.then_some((counts, undeclared));
        }
        let idx = htslib::hts_idx_load2(fnc.as_ptr(), idxc.as_ptr());
        if idx.is_null() {
            return None;
        }
        let nseq = htslib::hts_idx_nseq(idx).max(0);
        // A BCF's CSI numbers contigs as the header does (ids, which `IDX=` can
        // skip); a contig without records has no bins and so no stats (0 records).
        let mut any = false;
        for (c, contig) in counts.iter_mut().zip(contigs) {
            let Some(tid) = contig.hts_rid.and_then(|r| c_int::try_from(r).ok()) else {
                continue;
            };
            if tid >= nseq {
                continue;
            }
            if let Some(v) = stats(idx, tid) {
                *c = v;
                any = true;
            }
        }
        let ok = any || nseq == 0;
        htslib::hts_idx_destroy(idx);
        ok.then_some((counts, undeclared))
    }
}

extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut std::ffi::c_void);
}
