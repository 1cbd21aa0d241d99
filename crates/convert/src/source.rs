//! Reading records through htslib and appending their values to a [`Batch`].
//!
//! Values are fetched with htslib's typed accessors into buffers reused across records
//! (no per-record allocation on the genotype path), and mapped straight to the
//! canonical VCF Zarr values.

use crate::arrays::{ArraySet, Source};
use crate::column::{Batch, BCF_INT32_MISSING, BCF_INT32_VECTOR_END};
use crate::error::{Error, Result};
use crate::schema::{Category, Schema, VcfType};
use rust_htslib::bcf::{self, Read};
use rust_htslib::htslib;
use std::ffi::{c_int, c_void, CString};
use std::path::{Path, PathBuf};

/// Silences htslib's own stderr messages: svar2 reports every failure itself, with
/// the file and record. `-v` leaves them on for debugging.
pub fn quiet_htslib() {
    // SAFETY: sets a global log level; no pointers involved.
    unsafe { htslib::hts_set_log_level(htslib::htsLogLevel_HTS_LOG_OFF) };
}

/// An open VCF/BCF file and its parsed header.
pub struct VcfReader {
    pub path: PathBuf,
    reader: bcf::Reader,
    pub schema: Schema,
}

fn raw_header(header: &bcf::header::HeaderView) -> String {
    let mut ks = htslib::kstring_t {
        l: 0,
        m: 0,
        s: std::ptr::null_mut(),
    };
    // SAFETY: the header pointer is valid for the reader's lifetime; kstring is freed below.
    unsafe {
        if htslib::bcf_hdr_format(header.as_ptr(), 0, &mut ks) != 0 || ks.s.is_null() {
            return String::new();
        }
        let bytes = std::slice::from_raw_parts(ks.s as *const u8, ks.l);
        let text = String::from_utf8_lossy(bytes).into_owned();
        libc_free(ks.s as *mut c_void);
        text
    }
}

extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

impl VcfReader {
    /// Opens a VCF, bgzipped VCF or BCF and reads its header.
    pub fn open(path: &Path, threads: usize) -> Result<VcfReader> {
        if !path.exists() {
            return Err(Error::Open {
                path: path.into(),
                msg: "no such file".into(),
            });
        }
        let mut reader = bcf::Reader::from_path(path).map_err(|e| Error::Open {
            path: path.into(),
            msg: format!("not a readable VCF/BCF ({e})"),
        })?;
        if threads >= 4 {
            // bgzf decompression is a small share of the reader's time; a helper thread
            // only pays once cores are not all busy parsing and encoding.
            let _ = reader.set_threads(1);
        }
        let raw = raw_header(reader.header());
        let schema = Schema::from_header(path, reader.header(), &raw)?;
        Ok(VcfReader {
            path: path.into(),
            reader,
            schema,
        })
    }

    /// A fresh record buffer bound to this file's header.
    pub fn empty_record(&self) -> bcf::Record {
        self.reader.empty_record()
    }

    /// Reads the next record into `rec`; `Ok(false)` at end of file. On a parse error
    /// the message names the last good record, since the bad one has no usable locus.
    pub fn next(&mut self, rec: &mut bcf::Record, record_no: u64) -> Result<bool> {
        let last = (record_no > 0).then(|| (rec.rid().unwrap_or(0), rec.pos() + 1));
        match self.reader.read(rec) {
            None => Ok(false),
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => {
                let locus = match last {
                    Some((rid, pos)) => format!(
                        "after {}:{pos}",
                        String::from_utf8_lossy(self.reader.header().rid2name(rid).unwrap_or(b"?"))
                    ),
                    None => "first record".into(),
                };
                Err(Error::Record {
                    path: self.path.clone(),
                    record: record_no + 1,
                    locus,
                    msg: format!("htslib could not parse the record ({e})"),
                })
            }
        }
    }
}

/// An htslib-managed value buffer, reused across records.
struct HtsBuf {
    ptr: *mut c_void,
    cap: c_int,
}

impl HtsBuf {
    fn new() -> Self {
        HtsBuf {
            ptr: std::ptr::null_mut(),
            cap: 0,
        }
    }
    fn i32s(&self, n: usize) -> &[i32] {
        // SAFETY: htslib wrote at least n values of the requested type.
        unsafe { std::slice::from_raw_parts(self.ptr as *const i32, n) }
    }
    fn u32s(&self, n: usize) -> &[u32] {
        unsafe { std::slice::from_raw_parts(self.ptr as *const u32, n) }
    }
    fn bytes(&self, n: usize) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, n) }
    }
}

impl Drop for HtsBuf {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            unsafe { libc_free(self.ptr) };
        }
    }
}

struct FieldSlot {
    tag: CString,
    category: Category,
    ty: VcfType,
    column: usize,
    name: String,
}

/// Pulls every stored value out of a record into the batch's columns.
pub struct Extractor {
    fields: Vec<FieldSlot>,
    gt: Option<(CString, usize, usize)>,
    col_contig: usize,
    col_pos: usize,
    col_len: usize,
    col_id: usize,
    col_allele: usize,
    col_qual: usize,
    col_filter: usize,
    /// htslib filter id → index in `filter_id`.
    filter_index: Vec<Option<usize>>,
    n_filters: usize,
    n_samples: usize,
    /// htslib counts a buffer's capacity in elements of the requested type, so each
    /// type gets its own buffer.
    bufs: [HtsBuf; 3],
    gt_vals: Vec<i32>,
    phased: Vec<u8>,
    flags: Vec<u8>,
}

fn column_of(set: &ArraySet, source: Source) -> usize {
    set.arrays
        .iter()
        .find(|a| a.source == source)
        .map(|a| a.column)
        .expect("array present")
}

impl Extractor {
    /// Prepares lookups for a header.
    pub fn new(reader: &VcfReader, set: &ArraySet) -> Extractor {
        let schema = &reader.schema;
        let header = reader.reader.header();
        let fields = schema
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| FieldSlot {
                tag: CString::new(f.name.as_str()).expect("header IDs have no NUL"),
                category: f.category,
                ty: f.ty,
                column: column_of(set, Source::Field(i)),
                name: f.name.clone(),
            })
            .collect();
        let gt = schema.has_gt.then(|| {
            (
                CString::new("GT").expect("static"),
                column_of(set, Source::Genotype),
                column_of(set, Source::GenotypePhased),
            )
        });
        let mut filter_index = Vec::new();
        for (i, f) in schema.filters.iter().enumerate() {
            if let Ok(id) = header.name_to_id(f.id.as_bytes()) {
                let id = id.0 as usize;
                if filter_index.len() <= id {
                    filter_index.resize(id + 1, None);
                }
                filter_index[id] = Some(i);
            }
        }
        Extractor {
            fields,
            gt,
            col_contig: column_of(set, Source::Contig),
            col_pos: column_of(set, Source::Position),
            col_len: column_of(set, Source::Length),
            col_id: column_of(set, Source::Id),
            col_allele: column_of(set, Source::Allele),
            col_qual: column_of(set, Source::Quality),
            col_filter: column_of(set, Source::Filter),
            filter_index,
            n_filters: schema.filters.len(),
            n_samples: schema.samples.len(),
            bufs: [HtsBuf::new(), HtsBuf::new(), HtsBuf::new()],
            gt_vals: Vec::new(),
            phased: Vec::new(),
            flags: Vec::new(),
        }
    }

    /// Appends one record to `batch`. `locus` names the record in errors.
    pub fn extract(
        &mut self,
        path: &Path,
        record_no: u64,
        rec: &bcf::Record,
        batch: &mut Batch,
    ) -> Result<()> {
        let hdr = unsafe { rec.header().as_ptr() };
        let rid = rec.rid().unwrap_or(0);
        let pos = rec.pos() + 1;
        let err = |msg: String| Error::Record {
            path: path.into(),
            record: record_no + 1,
            locus: format!(
                "{}:{}",
                String::from_utf8_lossy(rec.header().rid2name(rid).unwrap_or(b"?")),
                pos
            ),
            msg,
        };
        let pos32 = i32::try_from(pos).map_err(|_| err("POS does not fit in 32 bits".into()))?;
        let rlen = rec.rlen();
        let rlen32 = i32::try_from(rlen).map_err(|_| err(format!("length {rlen} too large")))?;
        let cols = &mut batch.columns;
        cols[self.col_contig].push_ints(&[rid as i32], 1);
        cols[self.col_pos].push_ints(&[pos32], 1);
        cols[self.col_len].push_ints(&[rlen32], 1);
        batch.loci.push((rid as i32, pos, pos + rlen - 1));

        let id = rec.id();
        let c = &mut cols[self.col_id];
        c.begin_strs(1);
        c.push_str(&id);

        let alleles = rec.alleles();
        batch.max_alleles = batch.max_alleles.max(alleles.len() as u32);
        let c = &mut cols[self.col_allele];
        c.begin_strs(alleles.len() as u32);
        for a in &alleles {
            c.push_str(a);
        }

        cols[self.col_qual].push_floats(&[rec.qual().to_bits()], 1);

        self.flags.clear();
        self.flags.resize(self.n_filters, 0);
        for f in rec.filters() {
            match self.filter_index.get(f.0 as usize).copied().flatten() {
                Some(i) => self.flags[i] = 1,
                None => return Err(err(format!("FILTER id {} is not in the header", f.0))),
            }
        }
        cols[self.col_filter].push_bools(&self.flags, self.n_filters as u32);

        let s = self.n_samples;
        for slot in &self.fields {
            let col = &mut cols[slot.column];
            let inner = rec.inner;
            let per = if slot.category == Category::Format {
                s
            } else {
                1
            };
            let ht = match slot.ty {
                VcfType::Integer => htslib::BCF_HT_INT,
                VcfType::Float => htslib::BCF_HT_REAL,
                VcfType::Flag => htslib::BCF_HT_FLAG,
                VcfType::String | VcfType::Character => htslib::BCF_HT_STR,
            } as c_int;
            let buf = &mut self.bufs[match slot.ty {
                VcfType::Integer => 0,
                VcfType::Float => 1,
                _ => 2,
            }];
            // SAFETY: hdr/rec are live; htslib (re)allocates the buffer it is handed.
            let n = unsafe {
                match slot.category {
                    Category::Info => htslib::bcf_get_info_values(
                        hdr,
                        inner,
                        slot.tag.as_ptr(),
                        &mut buf.ptr,
                        &mut buf.cap,
                        ht,
                    ),
                    Category::Format => htslib::bcf_get_format_values(
                        hdr,
                        inner,
                        slot.tag.as_ptr(),
                        &mut buf.ptr,
                        &mut buf.cap,
                        ht,
                    ),
                }
            };
            if slot.ty == VcfType::Flag {
                col.push_bools(&[u8::from(n == 1)], 1);
                continue;
            }
            if n == -2 {
                return Err(err(format!(
                    "{} value does not match its header Type",
                    slot.name
                )));
            }
            if n < 0 {
                col.push_absent();
                continue;
            }
            let n = n as usize;
            if per == 0 || !n.is_multiple_of(per) {
                return Err(err(format!("{}: {n} values for {per} samples", slot.name)));
            }
            match slot.ty {
                VcfType::Integer => col.push_htslib_ints(buf.i32s(n), (n / per) as u32),
                VcfType::Float => col.push_floats(buf.u32s(n), (n / per) as u32),
                VcfType::String | VcfType::Character => {
                    let bytes = buf.bytes(n);
                    let stride = n / per;
                    let cell = |i: usize| {
                        let b = &bytes[i * stride..(i + 1) * stride];
                        let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
                        &b[..end]
                    };
                    let width = (0..per)
                        .map(|i| cell(i).split(|&x| x == b',').count())
                        .max()
                        .unwrap_or(0) as u32;
                    col.begin_strs(width);
                    for i in 0..per {
                        let mut k = 0;
                        let v = cell(i);
                        let v = if v.is_empty() { &b"."[..] } else { v };
                        for part in v.split(|&x| x == b',') {
                            col.push_str(part);
                            k += 1;
                        }
                        for _ in k..width as usize {
                            col.push_str(b"");
                        }
                    }
                }
                VcfType::Flag => unreachable!(),
            }
        }

        if let Some((tag, col_gt, col_phased)) = &self.gt {
            let n = unsafe {
                htslib::bcf_get_format_values(
                    hdr,
                    rec.inner,
                    tag.as_ptr(),
                    &mut self.bufs[0].ptr,
                    &mut self.bufs[0].cap,
                    htslib::BCF_HT_INT as c_int,
                )
            };
            if n < 0 || s == 0 {
                cols[*col_gt].push_absent();
                self.phased.clear();
                self.phased.resize(s, 0);
                cols[*col_phased].push_bools(&self.phased, 1);
            } else {
                let n = n as usize;
                if !n.is_multiple_of(s) {
                    return Err(err(format!("GT: {n} values for {s} samples")));
                }
                let ploidy = n / s;
                batch.max_ploidy = batch.max_ploidy.max(ploidy as u32);
                let raw = self.bufs[0].i32s(n);
                self.gt_vals.clear();
                self.phased.clear();
                let mut max_allele = -1i32;
                for call in raw.chunks_exact(ploidy) {
                    let mut phased = 0u8;
                    for (j, &v) in call.iter().enumerate() {
                        let a = match v {
                            BCF_INT32_VECTOR_END => -2,
                            BCF_INT32_MISSING => -1,
                            v => {
                                if j > 0 && v & 1 == 1 {
                                    phased = 1;
                                }
                                (v >> 1) - 1
                            }
                        };
                        max_allele = max_allele.max(a);
                        self.gt_vals.push(a);
                    }
                    // A haploid call counts as phased (as cyvcf2, and so bio2zarr, has it).
                    if call.len() == 1 || call[1] == BCF_INT32_VECTOR_END {
                        phased = 1;
                    }
                    self.phased.push(phased);
                }
                if max_allele >= alleles.len() as i32 {
                    return Err(err(format!(
                        "GT allele index {max_allele} but the record has only {} ALT allele(s)",
                        alleles.len().saturating_sub(1)
                    )));
                }
                cols[*col_gt].push_ints(&self.gt_vals, ploidy as u32);
                cols[*col_phased].push_bools(&self.phased, 1);
            }
        }
        Ok(())
    }
}
