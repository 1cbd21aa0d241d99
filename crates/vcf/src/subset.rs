//! `bcftools view`'s subsetting, record by record, at conversion (`convert -s/-S/-r/
//! -R/-t/-T/-i/-e`): the records a conversion of `bcftools view`'s output would see,
//! made the way bcftools makes them — with htslib's own `bcf_subset`, `bcf_calc_ac`
//! and header calls, in bcftools' order: regions and targets, then the expression
//! (on the whole record, every sample), then the samples, then INFO/AC and AN
//! recounted over the samples kept (unless `-I`).

use crate::block::{Block, Dense, FieldValues, Genotypes, Strs};
use crate::error::{Error, Result};
use crate::region::{regions_from_flags, Region, Targets};
use crate::schema::{contig_name, Category, Schema, VcfType};
use rust_htslib::bcf;
use rust_htslib::bcf::header::HeaderView;
use rust_htslib::htslib;
use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the user asked to keep, as bcftools' flags give it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubsetRequest {
    /// `-s`: names, comma-separated; a leading `^` keeps every other sample.
    pub samples: Option<String>,
    /// The names as a list (Python's `samples=[…]`: a name may hold a comma).
    pub sample_list: Option<Vec<String>>,
    /// `-S`: a file of names, one per line; `^FILE` excludes them.
    pub samples_file: Option<PathBuf>,
    /// `--force-samples`: a name the header lacks is skipped with a warning.
    pub force_samples: bool,
    /// `-r` / `-R`: records overlapping these.
    pub regions: Option<String>,
    pub regions_file: Option<PathBuf>,
    /// `-t` / `-T`: records whose POS lies in these (`^` excludes).
    pub targets: Option<String>,
    pub targets_file: Option<PathBuf>,
    /// `-I`: INFO/AC and AN left as the input has them when samples are dropped.
    pub no_update: bool,
    /// `-i` (true) or `-e` (false) and the expression.
    pub expression: Option<(String, bool)>,
}

impl SubsetRequest {
    /// Whether nothing is subset (`--force-samples` and `-I` alone change nothing).
    pub fn is_empty(&self) -> bool {
        !self.chooses_samples()
            && self.regions.is_none()
            && self.regions_file.is_none()
            && self.targets.is_none()
            && self.targets_file.is_none()
            && self.expression.is_none()
    }

    /// Whether samples are chosen.
    pub fn chooses_samples(&self) -> bool {
        self.samples.is_some() || self.samples_file.is_some() || self.sample_list.is_some()
    }
}

/// An expression tested on each record (every sample, the input's header), as
/// bcftools view tests `-i`/`-e` before it drops samples.
pub trait SiteTest: Send {
    /// Whether the one record of `b` (of `schema`, the input's) is kept; an error is
    /// a record the expression cannot be applied to.
    fn keep(&mut self, schema: &Schema, b: &Block) -> std::result::Result<bool, String>;

    /// The schema fields (indexes) and whether the genotypes the test reads: the
    /// block is made of only these.
    fn reads(&self) -> (Vec<usize>, bool);
}

/// Builds a file's [`SiteTest`] from its schema (the expression compiled against it).
pub type SiteTestMaker<'a> = &'a dyn Fn(&Schema) -> Result<Box<dyn SiteTest>>;

/// The subsetting of one input: the header its records are converted under, and the
/// per-record steps.
pub struct Subset {
    /// The input's header with INFO/AC and AN declared where they are recounted: what
    /// `bcf_subset` and the AC/AN update look tags up in.
    full: HeaderView,
    /// The output header (samples chosen); its records are extracted into the store.
    out: Arc<HeaderView>,
    /// Output sample `i` is input sample `imap[i]`; `None`: every sample, in order.
    imap: Option<Vec<i32>>,
    update_ac: bool,
    regions: Option<Vec<Region>>,
    targets: Option<Targets>,
    test: Option<Box<dyn SiteTest>>,
    /// The input's schema with INFO/AC and AN as `full` declares them (what the
    /// expression reads), and the output's.
    input: Schema,
    pub schema: Schema,
    /// The record handed to the extractor, in the output header's samples.
    rec: bcf::Record,
    ac: Vec<i32>,
    path: PathBuf,
    /// Input records seen so far.
    read: u64,
}

// SAFETY: the headers and record are owned by this value alone and used by one thread
// at a time (a reader moves between threads, never shares).
unsafe impl Send for Subset {}

/// Reads `-s`/`-S` into (names, exclude).
fn sample_names(req: &SubsetRequest) -> Result<Option<(Vec<String>, bool)>> {
    if let Some(names) = &req.sample_list {
        return Ok(Some((names.clone(), false)));
    }
    if let Some(list) = &req.samples {
        let (exclude, list) = match list.strip_prefix('^') {
            Some(l) => (true, l),
            None => (false, list.as_str()),
        };
        // An empty name (`-s ""`, `-s A,`) is a name the header lacks, as in bcftools.
        let names = list.split(',').map(String::from).collect();
        return Ok(Some((names, exclude)));
    }
    let Some(file) = &req.samples_file else {
        return Ok(None);
    };
    let (exclude, path) = match file.to_str().and_then(|s| s.strip_prefix('^')) {
        Some(p) => (true, PathBuf::from(p)),
        None => (false, file.clone()),
    };
    let text =
        crate::region::read_text_file(&path).map_err(|e| Error::Request(format!("-S {e}")))?;
    let names = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    Ok(Some((names, exclude)))
}

/// The output's samples, by bcftools view's rules: the names in the order given
/// (excluded: the header's order of the rest); a name the header lacks is an error
/// unless `force`.
fn choose_samples(
    path: &Path,
    header: &[String],
    names: &[String],
    exclude: bool,
    force: bool,
) -> Result<Vec<String>> {
    let known: std::collections::HashSet<&str> = header.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !known.contains(n.as_str()) {
            let what = if exclude { "excluded" } else { "chosen" };
            if force {
                tracing::warn!(
                    "{}: sample {n:?} ({what}) is not in the header: skipped",
                    path.display()
                );
                continue;
            }
            return Err(Error::Request(format!(
                "{}: sample {n:?} ({what} by -s/-S) is not in the header (--force-samples \
                 skips names it lacks)",
                path.display()
            )));
        }
        if !exclude && !seen.insert(n.as_str()) {
            return Err(Error::Request(format!(
                "{}: sample {n:?} is named twice in -s/-S",
                path.display()
            )));
        }
        out.push(n.clone());
    }
    if exclude {
        let drop: std::collections::HashSet<&str> = out.iter().map(String::as_str).collect();
        return Ok(header
            .iter()
            .filter(|s| !drop.contains(s.as_str()))
            .cloned()
            .collect());
    }
    Ok(out)
}

impl Subset {
    /// Prepares `req` for an input whose header is `header` and schema `input`;
    /// `test` compiles the expression, if any, against the input's schema.
    pub fn new(
        path: &Path,
        header: &HeaderView,
        input: &Schema,
        req: &SubsetRequest,
        test: Option<SiteTestMaker>,
    ) -> Result<Subset> {
        let regions = regions_from_flags(req.regions.as_deref(), req.regions_file.as_deref())?;
        if let Some(rs) = &regions {
            check_region_order(path, input, rs)?;
        }
        let targets = Targets::from_flags(req.targets.as_deref(), req.targets_file.as_deref())?;
        let chosen = match sample_names(req)? {
            Some((names, exclude)) => Some(choose_samples(
                path,
                &input.samples,
                &names,
                exclude,
                req.force_samples,
            )?),
            None => None,
        };
        let update_ac = chosen.is_some() && !req.no_update;
        if update_ac {
            for f in input
                .fields
                .iter()
                .filter(|f| f.category == Category::Info && (f.name == "AC" || f.name == "AN"))
            {
                if f.ty != VcfType::Integer {
                    return Err(Error::Inputs(format!(
                        "{}: the header declares INFO/{} as Type={:?}, and -s recounts it as \
                         integers (bcftools would write them into it as they are): pass -I to \
                         keep AC/AN as the input has them, or fix the header",
                        path.display(),
                        f.name,
                        f.ty
                    )));
                }
            }
        }
        for (flag, list) in [
            ("-r/-R", regions.as_deref()),
            ("-t/-T", targets.as_ref().map(|t| t.regions.as_slice())),
        ] {
            if let Some(list) = list {
                check_contigs(path, input, flag, list)?;
            }
        }
        // SAFETY: `header` is live; the duplicate is owned by `full` from here on.
        let full = unsafe { HeaderView::from_ptr(htslib::bcf_hdr_dup(header.as_ptr())) };
        if update_ac {
            for line in [
                "##INFO=<ID=AC,Number=A,Type=Integer,Description=\"Allele count in genotypes\">",
                "##INFO=<ID=AN,Number=1,Type=Integer,Description=\"Total number of alleles in called genotypes\">",
            ] {
                let c = CString::new(line).expect("no NUL");
                // SAFETY: `full` is a live header this value owns; htslib copies the line.
                if unsafe { htslib::bcf_hdr_append(full.as_ptr(), c.as_ptr()) } < 0 {
                    return Err(Error::Inputs(format!("{}: cannot declare INFO/AC and AN", path.display())));
                }
            }
        }
        // SAFETY: as above.
        if unsafe { htslib::bcf_hdr_sync(full.as_ptr()) } < 0 {
            return Err(Error::Inputs(format!(
                "{}: cannot update the header",
                path.display()
            )));
        }
        // The expression is compiled against this header, as bcftools compiles it
        // (a bare AC then names INFO/AC once -s declares it).
        let mut tested = Schema::from_header(path, &full, &crate::schema::meta_lines(&full))?;
        tested.contigs = input.contigs.clone();
        tested.declared_contigs = input.declared_contigs;
        let test = match (&req.expression, test) {
            (Some(_), Some(make)) => Some(make(&tested)?),
            (Some(_), None) => {
                return Err(Error::Request(
                    "-i/-e: no expression compiler was given".into(),
                ))
            }
            _ => None,
        };
        let (out, imap) = match &chosen {
            Some(names) => {
                let c: Vec<CString> = names
                    .iter()
                    .map(|n| CString::new(n.as_str()).expect("header names have no NUL"))
                    .collect();
                let ptrs: Vec<*mut c_char> = c.iter().map(|s| s.as_ptr() as *mut c_char).collect();
                let mut imap = vec![0i32; names.len().max(1)];
                // SAFETY: `full` is live, `ptrs` holds `names.len()` NUL-terminated names
                // that outlive the call, and `imap` has room for one index per name.
                let sub = unsafe {
                    htslib::bcf_hdr_subset(
                        full.as_ptr(),
                        names.len() as i32,
                        ptrs.as_ptr(),
                        imap.as_mut_ptr(),
                    )
                };
                if sub.is_null() {
                    return Err(Error::Inputs(format!(
                        "{}: cannot subset the samples",
                        path.display()
                    )));
                }
                imap.truncate(names.len());
                if names.is_empty() {
                    // Every sample dropped: bcftools writes a sites-only header.
                    tracing::warn!(
                        "{}: -s/-S leaves no samples: the store holds sites only",
                        path.display()
                    );
                    // SAFETY: `sub` is the live header just made; NULL removes every FORMAT line.
                    unsafe {
                        htslib::bcf_hdr_remove(sub, htslib::BCF_HL_FMT as i32, std::ptr::null());
                        htslib::bcf_hdr_sync(sub);
                    }
                }
                // SAFETY: a fresh header htslib made; owned by the view from here on.
                (unsafe { HeaderView::from_ptr(sub) }, Some(imap))
            }
            // SAFETY: `full` is live; the duplicate is owned by the view.
            None => (
                unsafe { HeaderView::from_ptr(htslib::bcf_hdr_dup(full.as_ptr())) },
                None,
            ),
        };
        let raw = crate::schema::meta_lines(&out);
        let mut schema = Schema::from_header(path, &out, &raw)?;
        // Contigs the input's records name beyond its header stay as the reader found them.
        schema.contigs = input.contigs.clone();
        schema.declared_contigs = input.declared_contigs;
        let out = Arc::new(out);
        let rec = bcf::Record::new(out.clone());
        Ok(Subset {
            full,
            out,
            imap,
            update_ac,
            regions,
            targets,
            test,
            input: tested,
            schema,
            rec,
            ac: Vec::new(),
            path: path.into(),
            read: 0,
        })
    }

    /// The header the kept records are in (what the extractor reads them with).
    pub fn header(&self) -> &HeaderView {
        &self.out
    }

    /// Records of the input tested so far, kept or not: the 0-based number in the
    /// file of the record read next (messages count the input's records).
    pub fn tested(&self) -> u64 {
        self.read
    }

    /// Whether `src` (read under the input's header) is kept; if so, its 0-based
    /// number among the input's records (for messages) and the record to extract, in
    /// the output's samples, with AC/AN recounted.
    pub fn apply(&mut self, src: &bcf::Record) -> Result<Option<(u64, &bcf::Record)>> {
        // Messages count the input's records (the kept ones are fewer).
        let record_no = self.read;
        self.read += 1;
        let rid = src.rid().unwrap_or(0);
        let name = contig_name(src.header(), rid).unwrap_or(b"");
        let name = std::str::from_utf8(name).unwrap_or("");
        let pos = src.pos() + 1;
        // A contig htslib met in the text without a ##contig line: its id is past the
        // output header's (a copy made before reading).
        if rid >= self.out.contig_count() {
            return Err(Error::Record {
                path: self.path.clone(),
                record: record_no + 1,
                locus: format!("{name}:{pos}"),
                msg: format!(
                    "contig {name} is not declared in the header (##contig): subsetting reads \
                     records through htslib, which needs every contig declared — add the line \
                     (bcftools reheader), or convert without -s/-r/-t/-i/-e"
                ),
            });
        }
        if let Some(rs) = &self.regions {
            let end = pos + src.rlen().max(1) - 1;
            if !rs.iter().any(|r| r.overlaps(name, pos, end)) {
                return Ok(None);
            }
        }
        if self.targets.as_ref().is_some_and(|t| !t.keeps(name, pos)) {
            return Ok(None);
        }
        if let Some(test) = &mut self.test {
            let (fields, gt) = test.reads();
            let b = record_block(&self.input, src, &fields, gt);
            let keep = test.keep(&self.input, &b).map_err(|msg| Error::Record {
                path: self.path.clone(),
                record: record_no + 1,
                locus: format!("{name}:{pos}"),
                msg,
            })?;
            if !keep {
                return Ok(None);
            }
        }
        let dst = self.rec.inner;
        // SAFETY: both records are live and owned (`src` by its reader, `dst` by this
        // value); bcf_copy deep-copies src into dst.
        unsafe { htslib::bcf_copy(dst, src.inner) };
        let Some(imap) = &mut self.imap else {
            return Ok(Some((record_no, &self.rec)));
        };
        // SAFETY: `dst` is a live record of the input's dictionary, which `full` extends
        // (AC/AN appended); `imap` holds one input index per output sample.
        unsafe {
            let full = self.full.as_ptr();
            htslib::bcf_unpack(dst, htslib::BCF_UN_ALL as i32);
            let n_allele = (*dst).n_allele() as usize;
            self.ac.clear();
            self.ac.resize(n_allele.max(1), 0);
            if imap.is_empty() && self.update_ac {
                // Every sample dropped: bcftools counts over the input's (INFO first).
                htslib::bcf_calc_ac(
                    full,
                    dst,
                    self.ac.as_mut_ptr(),
                    (htslib::BCF_UN_INFO | htslib::BCF_UN_FMT) as i32,
                );
            }
            htslib::bcf_subset(full, dst, imap.len() as i32, imap.as_mut_ptr());
            let gt = CString::new("GT").expect("static");
            let has_gt = !htslib::bcf_get_fmt(full, dst, gt.as_ptr()).is_null();
            let update = self.update_ac && (imap.is_empty() || has_gt);
            if update && !imap.is_empty() {
                self.ac.iter_mut().for_each(|x| *x = 0);
                htslib::bcf_calc_ac(
                    self.out.as_ptr(),
                    dst,
                    self.ac.as_mut_ptr(),
                    htslib::BCF_UN_FMT as i32,
                );
            }
            if update {
                let an: i32 = self.ac.iter().sum();
                let (k_ac, k_an) = (CString::new("AC").unwrap(), CString::new("AN").unwrap());
                htslib::bcf_update_info(
                    full,
                    dst,
                    k_ac.as_ptr(),
                    self.ac[1..].as_ptr() as *const _,
                    n_allele.saturating_sub(1) as i32,
                    htslib::BCF_HT_INT as i32,
                );
                htslib::bcf_update_info(
                    full,
                    dst,
                    k_an.as_ptr(),
                    &an as *const i32 as *const _,
                    1,
                    htslib::BCF_HT_INT as i32,
                );
            }
        }
        self.trim_widths();
        Ok(Some((record_no, &self.rec)))
    }

    /// Narrows each numeric FORMAT field (and GT) of the subset record to the most
    /// values a kept sample has: a BCF record keeps the width of every sample's
    /// values, and the VCF text bcftools view prints (what is converted when its
    /// output is) holds only the kept samples' own. A sample left with no values is
    /// printed, and so read back, as one missing value.
    fn trim_widths(&mut self) {
        trim_widths(&mut self.rec, &self.out, &self.schema);
    }
}

/// Narrows each numeric FORMAT field (and GT) of `rec` (of `hdr`, whose schema is
/// `schema`) to the most values a sample has, as VCF text prints it (see
/// [`Subset::apply`]): a record built in memory reads as its printed text does.
pub(crate) fn trim_widths(rec: &mut bcf::Record, hdr: &HeaderView, schema: &Schema) {
    {
        let ns = rec.sample_count() as usize;
        if ns == 0 {
            return;
        }
        let numeric = schema.fields.iter().filter(|f| {
            f.category == Category::Format && matches!(f.ty, VcfType::Integer | VcfType::Float)
        });
        let tags: Vec<(Vec<u8>, bool)> = numeric
            .map(|f| (f.name.as_bytes().to_vec(), f.ty == VcfType::Float))
            .chain(schema.has_gt.then(|| (b"GT".to_vec(), false)))
            .collect();
        for (tag, float) in tags {
            let Ok(c) = CString::new(tag.clone()) else {
                continue;
            };
            // SAFETY: the record and its header are live; the result is checked for null,
            // and `p` holds `n` values of `type_` for each of the `ns` samples.
            let n = unsafe {
                let fmt = htslib::bcf_get_fmt(hdr.as_ptr(), rec.inner, c.as_ptr());
                if fmt.is_null() || (*fmt).p.is_null() || (*fmt).n <= 0 {
                    continue;
                }
                let n = (*fmt).n as usize;
                if already_narrow((*fmt).type_ as u32, (*fmt).p, n, ns) {
                    continue;
                }
                n
            };
            let _ = match float {
                false => {
                    let missing = if tag == b"GT" {
                        0
                    } else {
                        crate::ragged::BCF_INT32_MISSING
                    };
                    let Some(flat) = rec.format(&tag).integer().ok().and_then(|v| {
                        narrowed(&v, n, missing, crate::ragged::BCF_INT32_VECTOR_END)
                    }) else {
                        continue;
                    };
                    rec.push_format_integer(&tag, &flat)
                }
                true => {
                    let Some(flat) = rec.format(&tag).float().ok().and_then(|v| {
                        let bits: Vec<Vec<u32>> = v
                            .iter()
                            .map(|s| s.iter().map(|x| x.to_bits()).collect())
                            .collect();
                        let slices: Vec<&[u32]> = bits.iter().map(Vec::as_slice).collect();
                        narrowed(
                            &slices,
                            n,
                            crate::ragged::FLOAT32_MISSING,
                            crate::ragged::FLOAT32_FILL,
                        )
                    }) else {
                        continue;
                    };
                    let flat: Vec<f32> = flat.into_iter().map(f32::from_bits).collect();
                    rec.push_format_float(&tag, &flat)
                }
            };
        }
    }
}

/// Whether no sample's values start with a vector end and some sample fills all
/// `n` (the common case, checked on the raw bytes): then there is nothing to narrow.
///
/// # Safety
/// `p` must hold `n` values of `ty` for each of `ns` samples.
unsafe fn already_narrow(ty: u32, p: *const u8, n: usize, ns: usize) -> bool {
    if !matches!(
        ty,
        htslib::BCF_BT_INT8 | htslib::BCF_BT_INT16 | htslib::BCF_BT_INT32 | htslib::BCF_BT_FLOAT
    ) {
        return true; // not narrowed (strings, or types the extractor refuses)
    }
    // SAFETY (each read): the caller's promise; values read unaligned.
    let is_end = |i: usize| unsafe {
        match ty {
            htslib::BCF_BT_INT8 => *(p as *const i8).add(i) == -127,
            htslib::BCF_BT_INT16 => (p as *const i16).add(i).read_unaligned() == i16::MIN + 1,
            htslib::BCF_BT_INT32 => (p as *const i32).add(i).read_unaligned() == i32::MIN + 1,
            _ => (p as *const u32).add(i).read_unaligned() == crate::ragged::FLOAT32_FILL,
        }
    };
    let mut full = false;
    for j in 0..ns {
        if is_end(j * n) {
            return false;
        }
        full |= !is_end(j * n + n - 1);
    }
    full
}

/// Per-sample values (vector ends already cut) laid out `w` wide, `w` the most any
/// sample has (at least one), when that is narrower than `n` or a sample has none
/// (it gets one `missing`, as VCF text prints it: `.`).
fn narrowed<T: Copy>(samples: &[&[T]], n: usize, missing: T, end: T) -> Option<Vec<T>> {
    let w = samples.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
    if w >= n && samples.iter().all(|s| !s.is_empty()) {
        return None;
    }
    let mut flat = Vec::with_capacity(w * samples.len());
    for s in samples {
        match s.is_empty() {
            true => flat.push(missing),
            false => flat.extend_from_slice(s),
        }
        flat.resize(flat.len().next_multiple_of(w), end);
    }
    Some(flat)
}

/// Refuses regions that cannot be the user's intent: a malformed one (`1:abc`, `1:`,
/// read as a contig name with a colon that the header lacks), or a list none of whose
/// contigs the header has (nothing could match); other unknown contigs are warned
/// about (a genome-wide regions file given for one chromosome's file is common).
fn check_contigs(path: &Path, schema: &Schema, flag: &str, regions: &[Region]) -> Result<()> {
    let known = |c: &str| schema.contigs.iter().any(|k| k.name == c);
    let unknown: Vec<&str> = regions
        .iter()
        .map(|r| r.contig.as_str())
        .filter(|c| !known(c))
        .collect();
    if let Some(bad) = unknown.iter().find(|c| c.contains(':')) {
        return Err(Error::Request(format!(
            "{}: {flag} region {bad:?} is not CHR, CHR:POS, CHR:BEG-END or CHR:BEG- of a \
             contig the header declares",
            path.display()
        )));
    }
    if !regions.is_empty() && unknown.len() == regions.len() {
        let some: Vec<&str> = schema
            .contigs
            .iter()
            .take(8)
            .map(|c| c.name.as_str())
            .collect();
        return Err(Error::Request(format!(
            "{}: no contig {flag} names is in the header ({}; the header's: {})",
            path.display(),
            unknown.join(", "),
            some.join(", ")
        )));
    }
    if !unknown.is_empty() {
        tracing::warn!(
            "{}: {flag} names contigs the header lacks: {}",
            path.display(),
            unknown.join(", ")
        );
    }
    Ok(())
}

/// Refuses `-r` regions whose contigs are named out of the header's order: bcftools
/// view visits them in the order given, and a conversion reads the input once, in
/// its own order (the stores would differ).
fn check_region_order(path: &Path, schema: &Schema, regions: &[Region]) -> Result<()> {
    let rank = |c: &str| schema.contigs.iter().position(|k| k.name == c);
    let mut last: Option<(usize, &str)> = None;
    for r in regions {
        let Some(k) = rank(&r.contig) else { continue };
        if let Some((l, name)) = last {
            if k < l {
                return Err(Error::Request(format!(
                    "{}: -r/-R names {} after {name}, against the header's contig order: \
                     bcftools view would write {name}'s records first, and a conversion reads \
                     the file once in its order (list the regions in the header's order)",
                    path.display(),
                    r.contig
                )));
            }
        }
        if last.is_none_or(|(l, _)| k > l) {
            last = Some((k, &r.contig));
        }
    }
    Ok(())
}

/// A block of the one record `rec`, of `schema` (its header's): the fixed fields,
/// `fields` (schema indexes) and, with `gt`, the genotypes — what an expression reads,
/// as a store would hold it: absent INFO and FORMAT fields left out, htslib's missing
/// values and vector ends as −1 / −2 (floats: their own NaN patterns).
pub fn record_block(schema: &Schema, rec: &bcf::Record, fields: &[usize], gt: bool) -> Block {
    let rid = rec.rid().unwrap_or(0);
    let name = contig_name(rec.header(), rid).unwrap_or(b"");
    let contig = schema
        .contigs
        .iter()
        .position(|c| c.name.as_bytes() == name)
        .unwrap_or(0) as u32;
    let ns = rec.sample_count() as usize;
    let mut alleles = Strs::default();
    let all = rec.alleles();
    // As the store holds them: a "." among the ALTs (`A .,C`) or as REF stays ".".
    for a in &all {
        alleles.push(a);
    }
    let mut id = Strs::default();
    id.push(&rec.id());
    // The record's own FILTER ids (htslib's has_filter takes "." for PASS).
    let mut filters = vec![0u8; schema.filters.len()];
    for id in rec.filters() {
        let name = rec.header().id_to_name(id);
        if let Some(k) = schema.filters.iter().position(|f| f.id.as_bytes() == name) {
            filters[k] = 1;
        }
    }
    let mut b = Block {
        n: 1,
        n_samples: ns,
        contig: vec![contig],
        pos: vec![rec.pos() + 1],
        rlen: vec![rec.rlen()],
        id,
        alleles,
        allele_width: all.len().max(1),
        qual: vec![rec.qual().to_bits()],
        n_filters: filters.len(),
        filters,
        ..Block::default()
    };
    // SAFETY: the record and its header are live; htslib unpacks what these calls read
    // and returns null for a tag the record lacks (checked before use).
    let hdr = unsafe { rec.header().as_ptr() };
    for &k in fields {
        let Some(f) = schema.fields.get(k) else {
            continue;
        };
        let Ok(tag) = CString::new(f.name.as_str()) else {
            continue;
        };
        let values = match (f.category, f.ty) {
            (Category::Info, VcfType::String) => rec
                .info(f.name.as_bytes())
                .string()
                .ok()
                .flatten()
                .map(|v| {
                    let mut s = Strs::default();
                    s.push(&v.join(&b","[..]));
                    (1, Dense::Str(s))
                }),
            (Category::Info, ty @ (VcfType::Flag | VcfType::Integer | VcfType::Float)) => {
                // SAFETY: as above; `vptr` holds `len` values of `type_`.
                unsafe {
                    let info = htslib::bcf_get_info(hdr, rec.inner, tag.as_ptr());
                    if info.is_null() {
                        None
                    } else if ty == VcfType::Flag {
                        Some((1, Dense::Bool(vec![1])))
                    } else {
                        let n = (*info).len.max(0) as usize;
                        raw_numbers((*info).type_ as u32, (*info).vptr, n, ty == VcfType::Float)
                            .map(|d| (n, d))
                    }
                }
            }
            (Category::Format, ty @ (VcfType::Integer | VcfType::Float)) => {
                // SAFETY: as above; `p` holds `n` values of `type_` for each sample.
                unsafe {
                    let fmt = htslib::bcf_get_fmt(hdr, rec.inner, tag.as_ptr());
                    if fmt.is_null() || (*fmt).p.is_null() || (*fmt).n <= 0 {
                        None
                    } else {
                        let n = (*fmt).n as usize;
                        raw_numbers((*fmt).type_ as u32, (*fmt).p, n * ns, ty == VcfType::Float)
                            .map(|d| (n, d))
                    }
                }
            }
            // Character INFO and FORMAT strings: expressions refuse them.
            _ => None,
        };
        let Some((width, values)) = values else {
            continue;
        };
        let fv = FieldValues {
            field: k,
            width: width.max(1),
            values,
        };
        match f.category {
            Category::Info => b.info.push(fv),
            Category::Format => b.format.push(fv),
        }
    }
    if schema.has_gt && gt && ns > 0 {
        b.gt = genotypes(hdr, rec, ns);
    }
    b
}

/// The record's calls as a store holds them; `None` when GT is absent or not stored
/// as integers (htslib would exit on it: the extractor refuses such a record).
fn genotypes(hdr: *mut htslib::bcf_hdr_t, rec: &bcf::Record, ns: usize) -> Option<Genotypes> {
    let tag = CString::new("GT").expect("static");
    // SAFETY: the record and header are live; `p` holds `n` values of `type_` per
    // sample, checked non-null first.
    let (ty, n, p) = unsafe {
        let fmt = htslib::bcf_get_fmt(hdr, rec.inner, tag.as_ptr());
        if fmt.is_null() || (*fmt).p.is_null() || (*fmt).n <= 0 {
            return None;
        }
        ((*fmt).type_ as u32, (*fmt).n as usize, (*fmt).p)
    };
    let mut phased = Vec::new();
    if ty == htslib::BCF_BT_INT8 {
        let mut alleles = Vec::new();
        // SAFETY: int8 values, n per sample.
        let raw = unsafe { std::slice::from_raw_parts(p as *const i8, n * ns) };
        if n == 2 {
            crate::genotype::decode_bcf_diploid8(raw, &mut alleles, &mut phased);
        } else {
            let allele = |v: i8| crate::genotype::BCF8_ALLELE[v as u8 as usize];
            let bit = |v: i8| v & 1 == 1;
            crate::genotype::decode_bcf_calls(raw, n, allele, bit, &mut alleles, &mut phased);
        }
        return Some(Genotypes {
            ploidy: n,
            alleles: Dense::I8(alleles),
            phased,
        });
    }
    // SAFETY: as above, for the integer types raw_ints reads.
    let raw = unsafe { raw_ints(ty, p, n * ns) }?;
    let raw: Vec<i32> = raw
        .into_iter()
        .map(|v| match v {
            -1 => crate::ragged::BCF_INT32_MISSING,
            -2 => crate::ragged::BCF_INT32_VECTOR_END,
            v => v,
        })
        .collect();
    let mut alleles = Vec::new();
    crate::genotype::decode_bcf_calls(
        &raw,
        n,
        crate::genotype::bcf32_allele,
        |x| x & 1 == 1,
        &mut alleles,
        &mut phased,
    );
    Some(Genotypes {
        ploidy: n,
        alleles: Dense::I32(alleles),
        phased,
    })
}

/// `count` BCF values of `ty` at `p` as a store holds them: integers with −1 missing
/// and −2 vector end, floats as their bits; `None` for a type the field's declared
/// type does not allow.
///
/// # Safety
/// `p` must hold `count` values of `ty`.
unsafe fn raw_numbers(ty: u32, p: *const u8, count: usize, float: bool) -> Option<Dense> {
    if float {
        if ty != htslib::BCF_BT_FLOAT || p.is_null() {
            return None;
        }
        // SAFETY: the caller's promise; read unaligned (BCF packs values).
        let bits = (0..count)
            .map(|i| unsafe { (p as *const u32).add(i).read_unaligned() })
            .collect();
        return Some(Dense::F32(bits));
    }
    // SAFETY: the caller's promise.
    unsafe { raw_ints(ty, p, count) }.map(Dense::I32)
}

/// `count` BCF integers of `ty` at `p`, −1 missing and −2 vector end; `None` for a
/// non-integer type.
///
/// # Safety
/// `p` must hold `count` values of `ty`.
unsafe fn raw_ints(ty: u32, p: *const u8, count: usize) -> Option<Vec<i32>> {
    if p.is_null() {
        return None;
    }
    // SAFETY (each read): the caller's promise; read unaligned (BCF packs values).
    Some(match ty {
        htslib::BCF_BT_INT8 => (0..count)
            .map(|i| match unsafe { *(p as *const i8).add(i) } {
                -128 => -1,
                -127 => -2,
                v => v as i32,
            })
            .collect(),
        htslib::BCF_BT_INT16 => (0..count)
            .map(
                |i| match unsafe { (p as *const i16).add(i).read_unaligned() } {
                    i16::MIN => -1,
                    v if v == i16::MIN + 1 => -2,
                    v => v as i32,
                },
            )
            .collect(),
        htslib::BCF_BT_INT32 => (0..count)
            .map(|i| canonical(unsafe { (p as *const i32).add(i).read_unaligned() }))
            .collect(),
        _ => return None,
    })
}

/// htslib's integer sentinels as a store holds them.
fn canonical(x: i32) -> i32 {
    match x {
        crate::ragged::BCF_INT32_MISSING => -1,
        crate::ragged::BCF_INT32_VECTOR_END => -2,
        x => x,
    }
}
