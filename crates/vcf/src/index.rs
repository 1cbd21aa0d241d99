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

/// The index files beside `input` that exist, CSI first.
pub(crate) fn index_paths(input: &Path) -> Vec<(PathBuf, IndexKind)> {
    [("csi", IndexKind::Csi), ("tbi", IndexKind::Tbi)]
        .into_iter()
        .filter_map(|(ext, kind)| {
            let mut p = input.as_os_str().to_owned();
            p.push(format!(".{ext}"));
            let p = PathBuf::from(p);
            p.exists().then_some((p, kind))
        })
        .collect()
}

/// Whether `input` is VCF text (by its first bytes; the header is not read): its index
/// is tabix-style (contigs by name), a BCF's a plain CSI (header ids).
pub fn is_text(input: &Path) -> bool {
    crate::hts::HtsFile::open(input).is_some_and(|fp| fp.is_vcf_text())
}

/// Counts from `<input>.csi` or `<input>.tbi`, whichever exists (CSI first).
pub fn contig_counts(input: &Path, contigs: &[Contig]) -> Result<IndexCounts, NoCounts> {
    let found = index_paths(input);
    for (idx_path, kind) in &found {
        // A VCF's index names its contigs (tabix); a BCF's CSI uses header ids (and
        // htslib reports a BCF's CSI opened as tabix as a bad header: not tried).
        let index = match is_text(input) {
            true => {
                Index::open(input, idx_path, true).or_else(|| Index::open(input, idx_path, false))
            }
            false => Index::open(input, idx_path, false),
        };
        if let Some((counts, undeclared)) = index.and_then(|i| i.counts(contigs)) {
            return Ok(IndexCounts {
                kind: *kind,
                path: idx_path.clone(),
                counts,
                undeclared,
            });
        }
    }
    Err(NoCounts {
        reason: if found.is_empty() {
            format!(
                "no index ({0}.csi or {0}.tbi); index it with `bcftools index {0}`",
                input.display()
            )
        } else {
            format!(
                "index {} has no usable per-contig statistics",
                found
                    .iter()
                    .map(|(p, _)| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
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

impl Index {
    /// Records per contig from the index's statistics (and the contigs a tabix index
    /// lists that `contigs` lacks); `None` when the index has no statistics.
    fn counts(&self, contigs: &[Contig]) -> Option<Counts> {
        let by_name: HashMap<&str, usize> = contigs
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_str(), i))
            .collect();
        let mut counts = vec![0u64; contigs.len()];
        let mut undeclared = Vec::new();
        // SAFETY: the index is live; ids are bounded by hts_idx_nseq; the name table
        // is checked for null, each name too, and freed once.
        unsafe {
            let nseq = htslib::hts_idx_nseq(self.idx).max(0);
            if !self.tbx.is_null() {
                let mut n: c_int = 0;
                let names = htslib::tbx_seqnames(self.tbx, &mut n);
                if names.is_null() {
                    return None;
                }
                let mut ok = true;
                for tid in 0..n.min(nseq) {
                    let name = *names.add(tid as usize);
                    if name.is_null() {
                        continue;
                    }
                    let name = CStr::from_ptr(name).to_string_lossy();
                    let Some(c) = stats(self.idx, tid) else {
                        ok = false;
                        break;
                    };
                    match by_name.get(name.as_ref()) {
                        Some(&i) => counts[i] = c,
                        None => undeclared.push((name.into_owned(), c)),
                    }
                }
                crate::hts::free(names as *mut std::ffi::c_void);
                return ok.then_some((counts, undeclared));
            }
            // A contig without records has no bins and so no stats (0 records).
            let mut any = false;
            for (c, contig) in counts.iter_mut().zip(contigs) {
                let Some(tid) = contig.hts_rid.and_then(|r| c_int::try_from(r).ok()) else {
                    continue;
                };
                if tid >= nseq {
                    continue;
                }
                if let Some(v) = stats(self.idx, tid) {
                    *c = v;
                    any = true;
                }
            }
            (any || nseq == 0).then_some((counts, undeclared))
        }
    }
}

/// An open index: tabix (VCF text) or CSI (BCF).
pub struct Index {
    tbx: *mut htslib::tbx_t,
    idx: *mut htslib::hts_idx_t,
}

impl Index {
    /// The first of `<input>.csi`, `<input>.tbi` that loads: as a tabix index for VCF
    /// text (contigs named in the index), as a plain CSI for BCF (header ids).
    pub fn load(input: &Path, text: bool) -> Option<Index> {
        index_paths(input)
            .into_iter()
            .find_map(|(p, _)| Index::open(input, &p, text))
    }

    /// Opens one index file (see [`Index::load`]).
    fn open(input: &Path, idx_path: &Path, tabix: bool) -> Option<Index> {
        let (c, ci) = (cpath(input)?, cpath(idx_path)?);
        // SAFETY: plain htslib loads; null checked; freed in Drop.
        unsafe {
            if tabix {
                let tbx = htslib::tbx_index_load2(c.as_ptr(), ci.as_ptr());
                (!tbx.is_null() && !(*tbx).idx.is_null()).then(|| Index {
                    tbx,
                    idx: (*tbx).idx,
                })
            } else {
                let idx = htslib::hts_idx_load2(c.as_ptr(), ci.as_ptr());
                (!idx.is_null()).then_some(Index {
                    tbx: std::ptr::null_mut(),
                    idx,
                })
            }
        }
    }

    /// The contig names a tabix index lists, in its order (the order htslib's synced
    /// reader walks a VCF.gz, so `bcftools merge`'s); `None` for a BCF's CSI.
    /// Records the index counts on contig `tid` (`None`: it keeps no count).
    pub(crate) fn records(&self, tid: i32) -> Option<u64> {
        // (stats bounds nothing itself: tid is checked against the index here.)
        // SAFETY: the index is live.
        let nseq = unsafe { htslib::hts_idx_nseq(self.idx) };
        (tid >= 0 && tid < nseq)
            .then(|| stats(self.idx, tid))
            .flatten()
    }

    pub fn tabix_names(&self) -> Option<Vec<Vec<u8>>> {
        if self.tbx.is_null() {
            return None;
        }
        let mut n: c_int = 0;
        // SAFETY: the tabix handle is live; the name table is checked for null, each
        // name copied, and the table freed once (the names are the index's).
        unsafe {
            let names = htslib::tbx_seqnames(self.tbx, &mut n);
            if names.is_null() {
                return Some(Vec::new());
            }
            let out = (0..n.max(0) as usize)
                .map(|i| *names.add(i))
                .filter(|p| !p.is_null())
                .map(|p| CStr::from_ptr(p).to_bytes().to_vec())
                .collect();
            crate::hts::free(names as *mut std::ffi::c_void);
            Some(out)
        }
    }

    /// The tabix handle htslib's text iterator reads lines through (null for BCF).
    pub(crate) fn tabix_ptr(&self) -> *mut htslib::tbx_t {
        self.tbx
    }

    /// The index's id for a contig: by name in a tabix index, by the header's id in a
    /// BCF's CSI.
    pub(crate) fn tid(&self, name: &str, hts_rid: Option<u32>) -> Option<i32> {
        if self.tbx.is_null() {
            let rid = i32::try_from(hts_rid?).ok()?;
            // SAFETY: idx is live.
            let n = unsafe { htslib::hts_idx_nseq(self.idx) };
            return (rid < n).then_some(rid);
        }
        let c = CString::new(name).ok()?;
        // SAFETY: tbx is live.
        let t = unsafe { htslib::tbx_name2id(self.tbx, c.as_ptr()) };
        let n = unsafe { htslib::hts_idx_nseq(self.idx) };
        (t >= 0 && t < n).then_some(t)
    }

    pub(crate) fn query(&self, tid: i32, beg: i64, end: i64) -> *mut htslib::hts_itr_t {
        let readrec = if self.tbx.is_null() {
            Some(htslib::bcf_readrec as unsafe extern "C" fn(_, _, _, _, _, _) -> _)
        } else {
            Some(htslib::tbx_readrec as unsafe extern "C" fn(_, _, _, _, _, _) -> _)
        };
        // SAFETY: idx is live; tid bounded by hts_idx_nseq in `tid`.
        unsafe { htslib::hts_itr_query(self.idx, tid, beg, end, readrec) }
    }

    /// The virtual file offsets (first, end) of the data of contig `tid`'s records
    /// at or after `pos` (`None`: none there). They grow with `pos`, so a contig can
    /// be cut where a share of its bytes lies (at BGZF-block resolution).
    pub fn data_from(&self, tid: i32, pos: i64) -> Option<(u64, u64)> {
        self.span_of(tid, pos, i64::MAX >> 2)
    }

    /// The virtual offset where contig `tid`'s records at or after `pos` start, as
    /// [`Index::data_from`] gives it, looked for in a few windows past `pos`, widened
    /// up to 8 Mb (`None` when they hold no records). A query to the contig's end
    /// takes htslib through every bin past `pos` (up to a millisecond on a long
    /// contig), and a contig cut into pieces of a chunk row asks this a dozen times a
    /// cut. The windows past `pos` hold later records only, so the nearest with any
    /// gives the same first offset; past a gap of more than 8 Mb a cut falls in the
    /// gap, which splits no records differently.
    pub fn first_from(&self, tid: i32, pos: i64) -> Option<u64> {
        [1i64 << 14, 1 << 17, 1 << 20, 1 << 23]
            .into_iter()
            .find_map(|span| self.span_of(tid, pos, pos.saturating_add(span)))
            .map(|(first, _)| first)
    }

    /// The virtual offsets (first, end) of the index's chunks for `beg..end`.
    fn span_of(&self, tid: i32, beg: i64, end: i64) -> Option<(u64, u64)> {
        let itr = self.query(tid, beg, end);
        if itr.is_null() {
            return None;
        }
        // SAFETY: itr is live until destroyed below; `off` holds `n_off` chunks.
        unsafe {
            let n = usize::try_from((*itr).n_off).unwrap_or(0);
            let chunks = if n > 0 && !(*itr).off.is_null() {
                std::slice::from_raw_parts((*itr).off, n)
            } else {
                &[]
            };
            let span = chunks
                .iter()
                .map(|c| (c.u, c.v))
                .reduce(|(u0, v0), (u, v)| (u0.min(u), v0.max(v)));
            htslib::hts_itr_destroy(itr);
            span
        }
    }

    /// The position where `share` of contig `tid`'s bytes (by the index's file
    /// offsets) lies behind: the first position whose records start past that share.
    /// 0 when the index cannot tell (the contig is then not cut there). Cuts by bytes
    /// follow the records wherever they lie, not the header's length: a file of one
    /// region of a long contig (a biobank's pVCF block) is cut inside that region.
    pub fn locate(&self, tid: i32, length: Option<i64>, share: f64) -> u64 {
        self.locate_shares(tid, length, &[share])[0]
    }

    /// [`Index::locate`] for each of `shares` (the contig's extent looked up once).
    pub fn locate_shares(&self, tid: i32, length: Option<i64>, shares: &[f64]) -> Vec<u64> {
        let Some((lo, hi)) = self.data_from(tid, 0) else {
            return vec![0; shares.len()];
        };
        shares
            .iter()
            .map(|share| {
                let target = lo + ((hi - lo) as f64 * share.clamp(0.0, 1.0)) as u64;
                self.first_position_past(tid, length, target)
            })
            .collect()
    }

    /// The smallest position whose records start at or past virtual offset `target`.
    fn first_position_past(&self, tid: i32, length: Option<i64>, target: u64) -> u64 {
        const WINDOW: u64 = 1 << 14;
        let starts_past = |pos: u64| {
            self.first_from(tid, pos as i64)
                .is_none_or(|first| first >= target)
        };
        // The smallest position whose records start at or past the target, to the
        // index's resolution: its offsets change only from one 16 kb window to the
        // next (min_shift 14), so the search stops there (11 lookups for a 36 Mb
        // contig instead of 25; each costs tens of µs on the planning thread).
        let (mut a, mut b) = (1u64, length.map_or(1 << 31, |l| l as u64).max(2));
        if !starts_past(b) {
            return 0;
        }
        while b - a > WINDOW {
            let mid = a + (b - a) / 2;
            if starts_past(mid) {
                b = mid;
            } else {
                a = mid + 1;
            }
        }
        // The start of `b`'s window, where the offsets change: a reader that begins
        // there finds the piece's first record at the index's offset, where one that
        // begins inside it re-scans the window's earlier lines (up to 16 kb of
        // records: 30 ms of a 2,000-sample call set's).
        let window_start = b / WINDOW * WINDOW;
        if window_start >= a && window_start > 0 && starts_past(window_start) {
            return window_start;
        }
        b
    }

    /// Compressed offset where a contig's records start (for file order).
    pub(crate) fn first_offset(&self, tid: i32) -> Option<u64> {
        let itr = self.query(tid, 0, i64::MAX >> 2);
        if itr.is_null() {
            return None;
        }
        // SAFETY: itr is live until destroyed below.
        unsafe {
            let o = ((*itr).n_off > 0).then(|| (*(*itr).off).u);
            htslib::hts_itr_destroy(itr);
            o
        }
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        // SAFETY: owned pointers from htslib.
        unsafe {
            if self.tbx.is_null() {
                htslib::hts_idx_destroy(self.idx);
            } else {
                htslib::tbx_destroy(self.tbx);
            }
        }
    }
}
