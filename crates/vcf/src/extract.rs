//! Pulling every stored value out of a record into a [`Batch`]'s columns: the
//! record's fixed columns (however they were parsed), INFO and FORMAT values through
//! htslib's typed accessors (into buffers reused across records), and genotypes.

use crate::columns::{RecordColumns, Source};
use crate::error::{Error, Result};
use crate::fastvcf::LineFix;
use crate::genotype;
use crate::ragged::Batch;
use crate::schema::{contig_name, Category, Schema, VcfNumber, VcfType};
use rust_htslib::bcf;
use rust_htslib::htslib;
use std::ffi::{c_int, c_void, CString};
use std::path::Path;

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
        if n == 0 || self.ptr.is_null() {
            return &[]; // htslib allocates nothing for no values
        }
        // SAFETY: htslib wrote at least n values of the requested type.
        unsafe { std::slice::from_raw_parts(self.ptr as *const i32, n) }
    }
    fn u32s(&self, n: usize) -> &[u32] {
        if n == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: htslib wrote at least n values of the requested type.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u32, n) }
    }
    fn bytes(&self, n: usize) -> &[u8] {
        if n == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: htslib wrote at least n bytes.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, n) }
    }
}

impl Drop for HtsBuf {
    fn drop(&mut self) {
        // SAFETY: htslib allocated the buffer with malloc; it is freed once.
        unsafe { crate::hts::free(self.ptr) };
    }
}

pub(crate) struct FieldSlot {
    pub(crate) tag: CString,
    pub(crate) category: Category,
    pub(crate) ty: VcfType,
    pub(crate) number: VcfNumber,
    pub(crate) column: usize,
    pub(crate) name: String,
}

/// A record's fixed columns, however they were parsed.
pub(crate) struct Site<'a> {
    pub rid: u32,
    /// CHROM, to map the contig to the store's list.
    pub contig_name: &'a [u8],
    /// 1-based POS.
    pub pos: i64,
    pub rlen: i64,
    pub id: &'a [u8],
    pub alleles: &'a [&'a [u8]],
    /// QUAL as f32 bits (missing: 0x7F800001).
    pub qual: u32,
}

/// Pulls every stored value out of a record into the batch's columns.
pub struct Extractor {
    pub(crate) fields: Vec<FieldSlot>,
    pub(crate) gt: Option<(CString, usize, usize)>,
    pub(crate) col_contig: usize,
    pub(crate) col_pos: usize,
    pub(crate) col_len: usize,
    pub(crate) col_id: usize,
    pub(crate) col_allele: usize,
    pub(crate) col_qual: usize,
    pub(crate) col_filter: usize,
    /// htslib filter id → index in `filter_id`.
    pub(crate) filter_index: Vec<Option<usize>>,
    pub(crate) n_filters: usize,
    pub(crate) n_samples: usize,
    /// htslib contig id → store contig index, filled as ids are met (htslib gives
    /// undeclared contigs new ids as it meets them; `IDX=` can skip ids).
    contig_of_rid: Vec<Option<u32>>,
    /// Store contig name → index: the schema's, plus any learned from the records.
    contig_index: std::collections::HashMap<String, u32>,
    /// Whether a contig missing from the schema may be appended (one streaming
    /// reader meets contigs in file order; piece readers know them all from the index).
    learns_contigs: bool,
    /// A genotype beyond the ALT count was reported already (shared with the
    /// extractors that parse lines off the reading thread, see [`Extractor::for_lines`]).
    pub(crate) warned_allele: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A string value with an empty element was reported already (shared as
    /// `warned_allele` is).
    warned_empty: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Whether a String INFO key without a value was reported (shared as
    /// `warned_allele` is).
    warned_bare: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// This extractor parses lines off the reading thread: a line it would warn about
    /// goes back to the reading thread, which warns in record order.
    pub(crate) defers_warnings: bool,
    /// htslib counts a buffer's capacity in elements of the requested type, so each
    /// type gets its own buffer.
    bufs: [HtsBuf; 3],
    pub(crate) gt_vals: Vec<i32>,
    pub(crate) phased: Vec<u8>,
    /// Canonical calls of the current record, when decoded from BCF int8.
    pub(crate) gt8: Vec<i8>,
    /// Per-sample ploidy of the current record (direct text parse).
    pub(crate) ploidies: Vec<u8>,
    pub(crate) flags: Vec<u8>,
    /// BCF FORMAT numbers decoded in bulk (canonical integers, float bits).
    bulk_ints: Vec<i32>,
    bulk_floats: Vec<u32>,
}

impl Extractor {
    /// Prepares lookups for any handle on the same header (piece readers open their own).
    pub fn for_header(
        header: &bcf::header::HeaderView,
        schema: &Schema,
        columns: &RecordColumns,
    ) -> Extractor {
        let fields = schema
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| FieldSlot {
                tag: CString::new(f.name.as_str()).expect("header IDs have no NUL"),
                category: f.category,
                ty: f.ty,
                number: f.number,
                column: columns.of(Source::Field(i)),
                name: f.name.clone(),
            })
            .collect();
        let gt = schema.has_gt.then(|| {
            (
                CString::new("GT").expect("static"),
                columns.of(Source::Genotype),
                columns.of(Source::GenotypePhased),
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
            col_contig: columns.of(Source::Contig),
            col_pos: columns.of(Source::Position),
            col_len: columns.of(Source::Length),
            col_id: columns.of(Source::Id),
            col_allele: columns.of(Source::Allele),
            col_qual: columns.of(Source::Quality),
            col_filter: columns.of(Source::Filter),
            filter_index,
            n_filters: schema.filters.len(),
            n_samples: schema.samples.len(),
            contig_of_rid: Vec::new(),
            contig_index: schema
                .contigs
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name.clone(), i as u32))
                .collect(),
            learns_contigs: true,
            warned_allele: Default::default(),
            warned_empty: Default::default(),
            warned_bare: Default::default(),
            defers_warnings: false,
            bufs: [HtsBuf::new(), HtsBuf::new(), HtsBuf::new()],
            gt_vals: Vec::new(),
            phased: Vec::new(),
            gt8: Vec::new(),
            ploidies: Vec::new(),
            flags: Vec::new(),
            bulk_ints: Vec::new(),
            bulk_floats: Vec::new(),
        }
    }

    /// A genotype naming an allele the record lacks (`0/1` with ALT `.`): htslib,
    /// bcftools and bio2zarr read it, and the value is kept as given (the round trip
    /// prints it back), so it is a warning, once per reader, not a refusal.
    pub(crate) fn allele_beyond_alt(&mut self, record_no: u64, locus: &str, index: i32, n: usize) {
        allele_beyond_alt(&self.warned_allele, record_no, locus, index, n);
    }

    /// An extractor like this one for a thread that parses lines ahead of the reading
    /// thread (`svar2_vcf::lines`): it leaves the warnings to this one.
    pub fn for_lines(
        &self,
        header: &bcf::header::HeaderView,
        schema: &Schema,
        columns: &RecordColumns,
    ) -> Extractor {
        let mut ex = Extractor::for_header(header, schema, columns);
        ex.warned_allele = self.warned_allele.clone();
        ex.warned_empty = self.warned_empty.clone();
        ex.warned_bare = self.warned_bare.clone();
        ex.defers_warnings = true;
        ex
    }
}

/// A FORMAT field's BCF data, as [`typed_format`] finds it.
enum Typed<'a> {
    /// Not in the record (or marked for removal).
    Absent,
    /// `n` values per sample, each `width` bytes, samples back to back.
    Values {
        n: usize,
        data: &'a [u8],
        width: usize,
    },
    /// A stored type that cannot hold the declared Type (htslib would exit).
    Malformed(i32),
    /// Anything else (no values): left to `bcf_get_format_values`.
    Other,
}

/// Looks at a FORMAT field's typed BCF data for `s` samples, checked against the
/// record's own lengths.
fn typed_format(f: &htslib::bcf_fmt_t, s: usize, ty: VcfType) -> Typed<'_> {
    if f.p.is_null() {
        return Typed::Absent;
    }
    let width = match (f.type_ as u32, ty) {
        (htslib::BCF_BT_INT8, VcfType::Integer) => 1,
        (htslib::BCF_BT_INT16, VcfType::Integer) => 2,
        (htslib::BCF_BT_INT32, VcfType::Integer) | (htslib::BCF_BT_FLOAT, VcfType::Float) => 4,
        (htslib::BCF_BT_INT8 | htslib::BCF_BT_INT16 | htslib::BCF_BT_INT32, _)
        | (htslib::BCF_BT_FLOAT, _) => return Typed::Other,
        (t, _) => return Typed::Malformed(t as i32),
    };
    let (n, size) = (f.n.max(0) as usize, f.size.max(0) as usize);
    if n == 0 || size != n * width || (f.p_len as usize) < s * size {
        return Typed::Other;
    }
    // SAFETY: htslib's unpack set p to p_len bytes of the record's buffer, at least
    // s * size of them (checked above).
    let data = unsafe { std::slice::from_raw_parts(f.p, s * size) };
    Typed::Values { n, data, width }
}

/// Whether values of BCF type `t` are what a field of Type `ty` holds (no value, and a
/// Flag's, whatever the type).
fn encoded_as_declared(t: u32, ty: VcfType) -> bool {
    match ty {
        _ if t == htslib::BCF_BT_NULL => true,
        VcfType::Flag => true,
        VcfType::Integer => matches!(
            t,
            htslib::BCF_BT_INT8 | htslib::BCF_BT_INT16 | htslib::BCF_BT_INT32
        ),
        VcfType::Float => t == htslib::BCF_BT_FLOAT,
        VcfType::String | VcfType::Character => t == htslib::BCF_BT_CHAR,
    }
}

/// A BCF value type as people name it.
fn encoded_name(t: u32) -> String {
    match t {
        htslib::BCF_BT_INT8 | htslib::BCF_BT_INT16 | htslib::BCF_BT_INT32 => "integers".into(),
        htslib::BCF_BT_INT64 => "64-bit integers".into(),
        htslib::BCF_BT_FLOAT => "floats".into(),
        htslib::BCF_BT_CHAR => "characters".into(),
        t => format!("BCF type {t}"),
    }
}

/// BCF integers (1, 2 or 4 bytes each, `n` per sample) to canonical values, as
/// `bcf_get_format_values` then [`Column::push_htslib_ints`] would give them: the
/// type's missing value is −1, its vector end −2 and so is everything after it. Returns
/// a −1 or −2 the file gave as a value, if any (see [`Column::take_reserved`]).
fn decode_ints(data: &[u8], s: usize, n: usize, width: usize, out: &mut Vec<i32>) -> Option<i32> {
    out.clear();
    out.resize(s * n, 0);
    if n == 0 {
        return None;
    }
    // One loop per width, its reads fixed and its choices selects (the branches of
    // a general loop cost more than the values: measured on FORMAT-heavy BCFs).
    let reserved = match width {
        1 => decode_width(data, n, out, |v: [u8; 1]| v[0] as i8 as i32, missing_of(1)),
        2 => decode_width(
            data,
            n,
            out,
            |v: [u8; 2]| i16::from_le_bytes(v) as i32,
            missing_of(2),
        ),
        _ => decode_width(data, n, out, i32::from_le_bytes, missing_of(4)),
    };
    // Rare (a file giving −1 or −2 as a value): the first one, found again.
    reserved.then(|| {
        let end = missing_of(width) + 1;
        data.chunks_exact(n * width).find_map(|sample| {
            sample
                .chunks_exact(width)
                .map(read_int)
                .take_while(|&x| x != end)
                .find(|&x| x == -1 || x == -2)
        })
    })?
}

/// The BCF missing value of integers `width` bytes wide (the vector end is one more).
fn missing_of(width: usize) -> i32 {
    match width {
        1 => i8::MIN as i32,
        2 => i16::MIN as i32,
        _ => i32::MIN,
    }
}

/// One BCF integer of 1, 2 or 4 bytes.
fn read_int(v: &[u8]) -> i32 {
    match v.len() {
        1 => v[0] as i8 as i32,
        2 => i16::from_le_bytes([v[0], v[1]]) as i32,
        _ => i32::from_le_bytes([v[0], v[1], v[2], v[3]]),
    }
}

/// [`decode_ints`] of `W`-byte integers into `out` (sized already); whether a value
/// before a vector end is −1 or −2.
fn decode_width<const W: usize>(
    data: &[u8],
    n: usize,
    out: &mut [i32],
    read: impl Fn([u8; W]) -> i32,
    missing: i32,
) -> bool {
    let end = missing + 1;
    // All values at once, a select each (vectorised); then, where a sample holds a
    // vector end, what follows it made a vector end too.
    let (mut ends, mut given) = (false, false);
    for (v, d) in data.chunks_exact(W).zip(out.iter_mut()) {
        let x = read(v.try_into().expect("W bytes"));
        ends |= x == end;
        given |= (x == -1) | (x == -2);
        *d = if x == missing {
            -1
        } else if x == end {
            -2
        } else {
            x
        };
    }
    if given {
        // A −1 or −2 the file gave (rare): told from the vector end a value at a time.
        let mut reserved = false;
        for (sample, dst) in data.chunks_exact(n * W).zip(out.chunks_exact_mut(n)) {
            let mut ended = false;
            for (v, d) in sample.chunks_exact(W).zip(dst) {
                let x = read(v.try_into().expect("W bytes"));
                ended |= x == end;
                reserved |= !ended & ((x == -1) | (x == -2));
                if ended {
                    *d = -2;
                }
            }
        }
        return reserved;
    }
    if ends && n > 1 {
        for sample in out.chunks_exact_mut(n) {
            if let Some(k) = sample.iter().position(|&y| y == -2) {
                sample[k..].fill(-2);
            }
        }
    }
    false
}

/// BCF floats (`n` per sample) as bit patterns; after a vector end, vector ends (the
/// sentinels are VCF Zarr's already).
fn decode_floats(data: &[u8], s: usize, n: usize, out: &mut Vec<u32>) {
    out.clear();
    out.reserve(s * n);
    for sample in data.chunks_exact(n * 4) {
        let mut ended = false;
        for v in sample.chunks_exact(4) {
            let x = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
            ended |= x == crate::ragged::FLOAT32_FILL;
            out.push(if ended {
                crate::ragged::FLOAT32_FILL
            } else {
                x
            });
        }
    }
}

/// [`Extractor::allele_beyond_alt`], on the flag alone (for borrows of other fields).
fn allele_beyond_alt(
    warned: &std::sync::atomic::AtomicBool,
    record_no: u64,
    locus: &str,
    index: i32,
    n: usize,
) {
    {
        if !warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!(
                "record {} ({locus}): GT allele index {index} but the record has only {} ALT \
                 allele(s); stored as given (later such records are not reported)",
                record_no + 1,
                n.saturating_sub(1)
            );
        }
    }
}

impl Extractor {
    /// For piece readers: every contig is known from the index, so a contig missing
    /// from the schema is an error rather than a new contig.
    pub(crate) fn no_new_contigs(mut self) -> Extractor {
        self.learns_contigs = false;
        self
    }

    /// The store contig index of a record's contig. A contig the header does not
    /// declare is appended to the store's list (in order of first appearance, as
    /// htslib reads it) with one warning.
    fn contig_for(&mut self, batch: &mut Batch, site: &Site) -> std::result::Result<u32, String> {
        if let Some(Some(i)) = self.contig_of_rid.get(site.rid as usize) {
            return Ok(*i);
        }
        let name = String::from_utf8_lossy(site.contig_name).into_owned();
        let i = match self.contig_index.get(&name) {
            Some(&i) => i,
            None if self.learns_contigs => {
                let i = self.contig_index.len() as u32;
                tracing::warn!(
                    "contig {name} is not declared in the header: it is added to the store's \
                     contig list (without a length)"
                );
                self.contig_index.insert(name.clone(), i);
                batch.new_contigs.push((i, name));
                i
            }
            None => {
                return Err(format!(
                    "contig {name} is neither in the header nor in the index: the index is \
                     stale, re-index the file (`bcftools index -f`)"
                ))
            }
        };
        let r = site.rid as usize;
        if self.contig_of_rid.len() <= r {
            self.contig_of_rid.resize(r + 1, None);
        }
        self.contig_of_rid[r] = Some(i);
        Ok(i)
    }

    /// Appends a record's fixed columns (filters already set in `self.flags`).
    pub(crate) fn push_site(
        &mut self,
        batch: &mut Batch,
        site: &Site,
    ) -> std::result::Result<(), String> {
        let contig = self.contig_for(batch, site)?;
        let cols = &mut batch.columns;
        cols[self.col_contig].push_ints(&[contig as i32], 1);
        // 64-bit where the genome needs it (chromosomes past 2^31 bp).
        cols[self.col_pos].push_longs(&[site.pos], 1);
        cols[self.col_len].push_longs(&[site.rlen], 1);
        batch
            .loci
            .push((contig as i32, site.pos, site.pos + site.rlen - 1));
        let c = &mut cols[self.col_id];
        c.begin_strs(1);
        c.push_str(site.id);
        batch.max_alleles = batch.max_alleles.max(site.alleles.len() as u32);
        let c = &mut cols[self.col_allele];
        c.begin_strs(site.alleles.len() as u32);
        for a in site.alleles {
            c.push_str(a);
        }
        cols[self.col_qual].push_floats(&[site.qual], 1);
        cols[self.col_filter].push_bools(&self.flags, self.n_filters as u32);
        Ok(())
    }

    /// Replaces the values htslib could not hold in the record just appended: INFO
    /// integers past 32 bits (and the variant length an `END` past 2^31 gives).
    pub fn apply_line_fix(&mut self, fix: &LineFix, batch: &mut Batch) {
        for (key, vals) in &fix.long_info {
            let Some(slot) = self
                .fields
                .iter()
                .find(|f| f.category == Category::Info && f.name.as_bytes() == key.as_slice())
            else {
                continue;
            };
            let col = &mut batch.columns[slot.column];
            col.pop_record();
            col.push_longs(vals, vals.len() as u32);
            if key.as_slice() == b"END" && vals.len() == 1 && vals[0] >= 0 {
                let Some(locus) = batch.loci.last_mut() else {
                    continue;
                };
                if vals[0] >= locus.1 {
                    let rlen = vals[0] - locus.1 + 1;
                    locus.2 = vals[0];
                    let len = &mut batch.columns[self.col_len];
                    len.pop_record();
                    len.push_longs(&[rlen], 1);
                }
            }
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
        self.extract_record(path, record_no, rec, batch)?;
        let locus = || {
            let rid = rec.rid().unwrap_or(0);
            let contig = contig_name(rec.header(), rid).map(String::from_utf8_lossy);
            format!("{}:{}", contig.as_deref().unwrap_or("?"), rec.pos() + 1)
        };
        self.check_appended(batch, path, record_no, &locus)
    }

    /// What is checked of a record once it is appended, by either parse: a value the
    /// store reserves refuses it ([`Extractor::reserved_value`]); an empty element of
    /// a string list is warned of ([`Extractor::empty_elements`]).
    pub(crate) fn check_appended(
        &self,
        batch: &mut Batch,
        path: &Path,
        record_no: u64,
        locus: &dyn Fn() -> String,
    ) -> Result<()> {
        if let Some(msg) = self.reserved_value(batch) {
            return Err(Error::Record {
                path: path.into(),
                record: record_no + 1,
                locus: locus(),
                msg,
            });
        }
        self.empty_elements(batch, record_no, locus);
        Ok(())
    }

    /// Warns, once per reader, of a string value with an empty element the record
    /// just appended held (stored as `.`, see [`crate::ragged::Column::push_elements`]).
    fn empty_elements(&self, batch: &mut Batch, record_no: u64, locus: &dyn Fn() -> String) {
        let strings = self
            .fields
            .iter()
            .filter(|f| matches!(f.ty, VcfType::String | VcfType::Character));
        for slot in strings {
            let Some(value) = batch.columns[slot.column].empty_element.take() else {
                continue;
            };
            if self
                .warned_empty
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                continue;
            }
            let kind = match slot.category {
                Category::Info => "INFO",
                Category::Format => "FORMAT",
            };
            tracing::warn!(
                "record {} ({}): {kind}/{} value `{}` has an empty element: stored as `.` \
                 (missing), as an empty value is, since VCF Zarr reads an empty string as \
                 the end of a list (later such values are not reported)",
                record_no + 1,
                locus(),
                slot.name,
                String::from_utf8_lossy(&value)
            );
        }
    }

    /// A BCF record (or a text one htslib parsed) over what one record may take under
    /// the memory budget (`limits`): its bytes as read, or its FORMAT fields laid out
    /// for every sample as 32-bit values, as wide as the widest sample.
    fn check_widths(&self, rec: &bcf::Record) -> std::result::Result<(), String> {
        let inner = rec.inner;
        // SAFETY: the record is live; fmt entries are read within n_fmt after the
        // unpack; their ids are the header's (htslib checked them when it read the
        // record).
        unsafe {
            let held = (*inner).shared.l + (*inner).indiv.l;
            if held > crate::limits::max_line() {
                return Err(crate::limits::record_too_large(held));
            }
            htslib::bcf_unpack(inner, htslib::BCF_UN_FMT as c_int);
            let n_fmt = (*inner).n_fmt() as usize;
            if n_fmt == 0 {
                return Ok(());
            }
            let fmt = std::slice::from_raw_parts((*inner).d.fmt, n_fmt);
            let value_bytes = |f: &htslib::bcf_fmt_t| match f.type_ as u32 {
                htslib::BCF_BT_CHAR => 1u64,
                _ => 4,
            };
            let total: u64 = fmt
                .iter()
                .map(|f| f.n.max(0) as u64 * value_bytes(f) * self.n_samples as u64)
                .sum();
            if total <= crate::limits::values_limit() {
                return Ok(());
            }
            // Over: named for the message.
            let names: Vec<Vec<u8>> = fmt
                .iter()
                .map(|f| rec.header().id_to_name(bcf::header::Id(f.id as u32)))
                .collect();
            let fields = fmt.iter().zip(&names).map(|(f, name)| {
                (
                    name.as_slice(),
                    f.n.max(0) as usize,
                    value_bytes(f) as usize,
                )
            });
            crate::limits::check_format_widths(fields, self.n_samples)
        }
    }

    /// [`Extractor::extract`] before the check for values the store cannot hold.
    fn extract_record(
        &mut self,
        path: &Path,
        record_no: u64,
        rec: &bcf::Record,
        batch: &mut Batch,
    ) -> Result<()> {
        // SAFETY: the record's header outlives this call.
        let hdr = unsafe { rec.header().as_ptr() };
        let rid = rec.rid().unwrap_or(0);
        let pos = rec.pos() + 1;
        let contig_name = contig_name(rec.header(), rid).map(String::from_utf8_lossy);
        let err = |msg: String| Error::Record {
            path: path.into(),
            record: record_no + 1,
            locus: format!("{}:{}", contig_name.as_deref().unwrap_or("?"), pos),
            msg,
        };
        let Some(contig_name) = contig_name.as_deref() else {
            return Err(err(format!(
                "the record's contig id {rid} is not declared in the header (a BCF written \
                 with a different header?)"
            )));
        };
        self.check_widths(rec).map_err(err)?;
        let rlen = rec.rlen();
        let alleles = rec.alleles();
        self.flags.clear();
        self.flags.resize(self.n_filters, 0);
        for f in rec.filters() {
            match self.filter_index.get(f.0 as usize).copied().flatten() {
                Some(i) => self.flags[i] = 1,
                None => return Err(err(format!("FILTER id {} is not in the header", f.0))),
            }
        }
        let site = Site {
            rid,
            contig_name: contig_name.as_bytes(),
            pos,
            rlen,
            id: &rec.id(),
            alleles: &alleles,
            qual: rec.qual().to_bits(),
        };
        self.push_site(batch, &site).map_err(err)?;
        let cols = &mut batch.columns;

        let s = self.n_samples;
        for slot in &self.fields {
            let col = &mut cols[slot.column];
            let inner = rec.inner;
            let per = if slot.category == Category::Format {
                s
            } else {
                1
            };
            if slot.category == Category::Format
                && matches!(slot.ty, VcfType::Integer | VcfType::Float)
                && s > 0
            {
                // SAFETY: hdr/rec are live and unpacked; the result is checked for null.
                let fmt = unsafe { htslib::bcf_get_fmt(hdr, inner, slot.tag.as_ptr()) };
                // SAFETY: a non-null fmt points into the record, which outlives this.
                match unsafe { fmt.as_ref() }.map(|f| typed_format(f, s, slot.ty)) {
                    None | Some(Typed::Absent) => {
                        col.push_absent();
                        continue;
                    }
                    Some(Typed::Malformed(t)) => {
                        return Err(err(format!(
                            "FORMAT/{} is stored as BCF type {t}, not a number of its \
                             declared Type: the BCF is malformed (re-create it with bcftools)",
                            slot.name
                        )))
                    }
                    Some(Typed::Values { n, data, width }) => {
                        let most = match slot.number {
                            VcfNumber::A => Some(alleles.len().saturating_sub(1).max(1)),
                            VcfNumber::R => Some(alleles.len()),
                            _ => None,
                        };
                        // Past Number=A/R: the general path below gives the error.
                        if most.is_none_or(|m| n <= m) {
                            match slot.ty {
                                VcfType::Integer => {
                                    let reserved =
                                        decode_ints(data, s, n, width, &mut self.bulk_ints);
                                    col.push_ints(&self.bulk_ints, n as u32);
                                    if let Some(v) = reserved {
                                        col.note_reserved(v);
                                    }
                                }
                                _ => {
                                    decode_floats(data, s, n, &mut self.bulk_floats);
                                    col.push_floats(&self.bulk_floats, n as u32);
                                }
                            }
                            continue;
                        }
                    }
                    Some(Typed::Other) => {}
                }
            }
            // A BCF's values carry their own type; htslib hands them over as the header
            // declares (a Float's bits as an Integer, an integer's bytes as a String):
            // values that disagree with their header are refused, never stored so.
            // SAFETY: hdr/rec are live and unpacked; a non-null result points into the
            // record.
            let encoded = unsafe {
                match slot.category {
                    Category::Info => htslib::bcf_get_info(hdr, inner, slot.tag.as_ptr())
                        .as_ref()
                        .map(|i| i.type_ as u32),
                    Category::Format => htslib::bcf_get_fmt(hdr, inner, slot.tag.as_ptr())
                        .as_ref()
                        .map(|f| f.type_ as u32),
                }
            };
            if let Some(t) = encoded.filter(|&t| !encoded_as_declared(t, slot.ty)) {
                let kind = match slot.category {
                    Category::Info => "INFO",
                    Category::Format => "FORMAT",
                };
                return Err(err(format!(
                    "{kind}/{} is encoded as {} in the record but declared Type={:?} in the \
                     header: the BCF's header and records disagree (re-create the BCF from \
                     its VCF, or mend the header's Type with bcftools reheader)",
                    slot.name,
                    encoded_name(t),
                    slot.ty
                )));
            }
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
            let get = match slot.category {
                Category::Info => htslib::bcf_get_info_values,
                Category::Format => htslib::bcf_get_format_values,
            };
            // SAFETY: hdr/rec are live; htslib (re)allocates the buffer it is handed.
            let n = unsafe {
                get(
                    hdr,
                    inner,
                    slot.tag.as_ptr(),
                    &mut buf.ptr,
                    &mut buf.cap,
                    ht,
                )
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
            let strings = matches!(slot.ty, VcfType::String | VcfType::Character);
            if n == 0
                && strings
                && slot.category == Category::Info
                && !self
                    .warned_bare
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::warn!(
                    "record {} ({}:{pos}): INFO/{} is given without a value, as a Flag is, \
                     but its header Type is String: it holds no value and is stored as \
                     missing, so svar2 view leaves it out where bcftools prints the bare \
                     key (declare it Type=Flag to keep it; later such values are not \
                     reported)",
                    record_no + 1,
                    contig_name,
                    slot.name
                );
            }
            if per == 0 || !n.is_multiple_of(per) {
                return Err(err(format!("{}: {n} values for {per} samples", slot.name)));
            }
            // Values per cell: numbers as htslib counts them, strings by their
            // comma-separated parts (htslib's count is bytes).
            let (bytes, stride) = (if strings { buf.bytes(n) } else { &[][..] }, n / per);
            let cell = |i: usize| {
                let b = &bytes[i * stride..(i + 1) * stride];
                let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
                &b[..end]
            };
            let per_cell = match slot.ty {
                VcfType::String | VcfType::Character => (0..per)
                    .map(|i| cell(i).split(|&x| x == b',').count())
                    .max()
                    .unwrap_or(0),
                _ => n / per,
            };
            // More values than alleles would make this array's `alleles` axis longer
            // than `variant_allele`'s, a store xarray refuses (bio2zarr refuses too).
            let most = match slot.number {
                VcfNumber::A => Some(alleles.len().saturating_sub(1).max(1)),
                VcfNumber::R => Some(alleles.len()),
                _ => None,
            };
            if let Some(most) = most.filter(|&m| per_cell > m) {
                let (kind, what) = match slot.number {
                    VcfNumber::A => ("A", "one per ALT allele"),
                    _ => ("R", "one per allele, REF included"),
                };
                return Err(err(format!(
                    "{}/{} has {} values{}, but Number={kind} allows {most} here ({what}, \
                     {} ALT): fix the record, or declare the field Number=. (`bcftools \
                     reheader`)",
                    if slot.category == Category::Info {
                        "INFO"
                    } else {
                        "FORMAT"
                    },
                    slot.name,
                    per_cell,
                    if per > 1 { " in a sample" } else { "" },
                    alleles.len().saturating_sub(1)
                )));
            }
            match slot.ty {
                VcfType::Integer => col.push_htslib_ints(buf.i32s(n), (n / per) as u32),
                VcfType::Float => col.push_floats(buf.u32s(n), (n / per) as u32),
                VcfType::String | VcfType::Character => {
                    let width = per_cell as u32;
                    col.begin_strs(width);
                    let chars = slot.ty == VcfType::Character;
                    for i in 0..per {
                        let v = cell(i);
                        let v = if v.is_empty() { &b"."[..] } else { v };
                        let k = col.push_elements(v, chars);
                        for _ in k..width as usize {
                            col.push_str(b"");
                        }
                    }
                }
                VcfType::Flag => unreachable!(),
            }
        }

        if let Some((tag, col_gt, col_phased)) = &self.gt {
            // BCF stores GT as int8 for fewer than 63 alleles: decode those bytes
            // directly instead of widening them through bcf_get_format_values.
            // SAFETY: hdr/rec are live and unpacked; the result is checked for null.
            let fmt = unsafe { htslib::bcf_get_fmt(hdr, rec.inner, tag.as_ptr()) };
            // SAFETY: fmt is non-null (checked first) and points into the record.
            let int8 = |f: *mut htslib::bcf_fmt_t| unsafe {
                (*f).type_ == htslib::BCF_BT_INT8 as c_int && (*f).n > 0 && !(*f).p.is_null()
            };
            if s > 0 && !fmt.is_null() && int8(fmt) {
                // SAFETY: an int8 FORMAT field holds n values for each of the s samples.
                let (n, data) = unsafe {
                    let n = (*fmt).n as usize;
                    (n, std::slice::from_raw_parts((*fmt).p as *const i8, s * n))
                };
                if n == 2 {
                    genotype::decode_bcf_diploid8(data, &mut self.gt8, &mut self.phased);
                } else {
                    self.gt8.clear();
                    self.phased.clear();
                    let allele = |v: i8| genotype::BCF8_ALLELE[v as u8 as usize];
                    let bit = |v: i8| v & 1 == 1;
                    genotype::decode_bcf_calls(
                        data,
                        n,
                        allele,
                        bit,
                        &mut self.gt8,
                        &mut self.phased,
                    );
                }
                let lo = self.gt8.iter().copied().min().unwrap_or(0);
                let hi = self.gt8.iter().copied().max().unwrap_or(0);
                if hi as i32 >= alleles.len() as i32 {
                    let locus = format!("{contig_name}:{pos}");
                    let n = alleles.len();
                    allele_beyond_alt(&self.warned_allele, record_no, &locus, hi as i32, n);
                }
                batch.max_ploidy = batch.max_ploidy.max(n as u32);
                cols[*col_gt].push_i8s(&self.gt8, n as u32, lo, hi);
                cols[*col_phased].push_bools(&self.phased, 1);
                return Ok(());
            }
            // htslib exits the process on a GT stored as anything but integers: GT
            // listed in FORMAT but given by no sample (every sample stops before it)
            // is stored without values, read as absent below; anything else is refused.
            // SAFETY: a non-null fmt points into the record (checked for null).
            if let Some(f) = unsafe { fmt.as_ref() } {
                let t = f.type_ as u32;
                let ints = [
                    htslib::BCF_BT_INT8,
                    htslib::BCF_BT_INT16,
                    htslib::BCF_BT_INT32,
                ];
                if t == htslib::BCF_BT_NULL && f.n == 0 {
                    cols[*col_gt].push_absent();
                    self.phased.clear();
                    self.phased.resize(s, 0);
                    cols[*col_phased].push_bools(&self.phased, 1);
                    return Ok(());
                }
                if !f.p.is_null() && !ints.contains(&t) {
                    return Err(err(format!(
                        "FORMAT/GT is stored as BCF type {t}, not genotype integers: the \
                         record is malformed (check its GT values, or re-create the file \
                         with bcftools)"
                    )));
                }
            }
            // SAFETY: hdr/rec are live; htslib (re)allocates the buffer it is handed.
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
                let bit = |v: i32| v & 1 == 1;
                let (calls, phased) = (&mut self.gt_vals, &mut self.phased);
                genotype::decode_bcf_calls(raw, ploidy, genotype::bcf32_allele, bit, calls, phased);
                let max_allele = self.gt_vals.iter().copied().max().unwrap_or(-1);
                if max_allele >= alleles.len() as i32 {
                    let locus = format!("{contig_name}:{pos}");
                    let n = alleles.len();
                    allele_beyond_alt(&self.warned_allele, record_no, &locus, max_allele, n);
                }
                cols[*col_gt].push_ints(&self.gt_vals, ploidy as u32);
                cols[*col_phased].push_bools(&self.phased, 1);
            }
        }
        Ok(())
    }

    /// Why the record just appended cannot be stored, if an integer field of it held
    /// −1 or −2 as a value (see [`crate::ragged::Column::take_reserved`]).
    pub(crate) fn reserved_value(&self, batch: &mut Batch) -> Option<String> {
        let mut found = None;
        for slot in self.fields.iter().filter(|f| f.ty == VcfType::Integer) {
            if let Some(v) = batch.columns[slot.column].take_reserved() {
                let field = match slot.category {
                    Category::Info => format!("INFO/{}", slot.name),
                    Category::Format => format!("FORMAT/{}", slot.name),
                };
                found.get_or_insert_with(|| {
                    format!(
                        "{field} holds the value {v}, which VCF Zarr keeps for missing (-1) and \
                         fill (-2) integers: stored, it would read back as missing. Recode the \
                         field, or drop it (`bcftools annotate -x {field}`), before converting"
                    )
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop `decode_ints` had, one value at a time, as the reference.
    fn reference(data: &[u8], s: usize, n: usize, width: usize, out: &mut Vec<i32>) -> Option<i32> {
        let mut reserved = None;
        out.clear();
        out.reserve(s * n);
        let (missing, end) = match width {
            1 => (i8::MIN as i32, i8::MIN as i32 + 1),
            2 => (i16::MIN as i32, i16::MIN as i32 + 1),
            _ => (i32::MIN, i32::MIN + 1),
        };
        for sample in data.chunks_exact(n * width) {
            let mut ended = false;
            for v in sample.chunks_exact(width) {
                let x = match width {
                    1 => v[0] as i8 as i32,
                    2 => i16::from_le_bytes([v[0], v[1]]) as i32,
                    _ => i32::from_le_bytes([v[0], v[1], v[2], v[3]]),
                };
                out.push(if ended {
                    -2
                } else if x == missing {
                    -1
                } else if x == end {
                    ended = true;
                    -2
                } else {
                    if x == -1 || x == -2 {
                        reserved.get_or_insert(x);
                    }
                    x
                });
            }
        }
        reserved
    }

    /// Every width, missing values, vector ends (values after one too), −1 and −2
    /// given as values: the same canonical values and the same first reserved value.
    #[test]
    fn decode_ints_is_the_value_at_a_time_loop() {
        let mut next = crate::rng::rng(0x2545_f491_4f6c_dd1du64);
        for case in 0..3000 {
            let width = [1, 2, 4][case % 3];
            let (s, n) = (1 + next(7) as usize, 1 + next(5) as usize);
            let missing = missing_of(width);
            let mut data = Vec::new();
            for _ in 0..s * n {
                let x: i32 = match next(10) {
                    0 => missing,
                    1 | 2 => missing + 1,
                    3 => -1,
                    4 => -2,
                    _ => next(100) as i32 - 3,
                };
                data.extend_from_slice(&x.to_le_bytes()[..width]);
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let ra = reference(&data, s, n, width, &mut a);
            let rb = decode_ints(&data, s, n, width, &mut b);
            assert_eq!((ra, &a), (rb, &b), "case {case}: width {width}, {s} x {n}");
        }
    }
}
