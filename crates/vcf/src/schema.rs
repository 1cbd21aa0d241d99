//! The VCF header, read once, as the plain facts the store needs: samples, contigs,
//! filters, INFO/FORMAT field definitions and the generic `##key=value` lines.

use crate::error::{Error, Result};
use crate::hts::KString;
use rust_htslib::bcf::header::HeaderView;
use rust_htslib::htslib;
use std::ffi::{c_char, CStr};
use std::path::Path;

/// VCF `Type=` of an INFO or FORMAT field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcfType {
    Integer,
    Float,
    Flag,
    String,
    Character,
}

/// VCF `Number=`: how many values a field carries per record (or per sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcfNumber {
    Fixed(u32),
    /// One per ALT allele.
    A,
    /// One per allele, REF included.
    R,
    /// One per possible genotype.
    G,
    /// Unknown, varies by record.
    Dot,
}

/// As a header writes it (`Number=1`, `A`, `.`).
impl std::fmt::Display for VcfNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VcfNumber::Fixed(k) => write!(f, "{k}"),
            VcfNumber::A => f.write_str("A"),
            VcfNumber::R => f.write_str("R"),
            VcfNumber::G => f.write_str("G"),
            VcfNumber::Dot => f.write_str("."),
        }
    }
}

/// Whether a field lives in INFO (one value set per record) or FORMAT (per sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Info,
    Format,
}

/// One INFO or FORMAT field as declared in the header.
#[derive(Debug, Clone)]
pub struct FieldDef {
    pub category: Category,
    pub name: String,
    pub number: VcfNumber,
    pub ty: VcfType,
    pub description: String,
}

impl FieldDef {
    /// The VCF Zarr array name: `variant_<ID>` for INFO, `call_<ID>` for FORMAT.
    pub fn array_name(&self) -> String {
        match self.category {
            Category::Info => format!("variant_{}", self.name),
            Category::Format => format!("call_{}", self.name),
        }
    }
}

/// A contig of the store, in `variant_contig` order: the header's, then any the
/// records (or the index) name that the header does not declare.
#[derive(Debug, Clone)]
pub struct Contig {
    pub name: String,
    /// The header's `length=`; `None` when it gives none (or does not declare the contig).
    pub length: Option<i64>,
    /// htslib's id for the contig in this file's header (what a BCF record and a BCF's
    /// CSI index use). Ids can skip numbers (`IDX=`), so it is not the store index.
    pub hts_rid: Option<u32>,
}

/// A header FILTER; PASS always comes first.
#[derive(Debug, Clone)]
pub struct Filter {
    pub id: String,
    pub description: String,
}

/// Everything svar2 takes from a VCF header.
#[derive(Debug, Clone)]
pub struct Schema {
    pub samples: std::sync::Arc<[String]>,
    /// The store's contigs: the header's in htslib id order (empty ids skipped), then
    /// undeclared ones in order of first appearance. `variant_contig` indexes this.
    pub contigs: Vec<Contig>,
    /// How many of `contigs` the header declares.
    pub declared_contigs: usize,
    pub filters: Vec<Filter>,
    /// INFO fields then FORMAT fields (GT excluded), in header order.
    pub fields: Vec<FieldDef>,
    /// Whether the header declares FORMAT/GT.
    pub has_gt: bool,
    /// `##key=value` lines other than contig/FILTER/INFO/FORMAT, as bio2zarr stores them.
    pub meta_information: Vec<(String, String)>,
    /// The header's lines by kind, in the input's order, as runs (kind, lines): what
    /// lets `view -h` print them where bcftools does (`[]`: an order of svar2's own).
    pub header_order: Vec<(HeaderLineKind, usize)>,
}

/// The kinds of `##` header line, for [`Schema::header_order`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderLineKind {
    FileFormat,
    Filter,
    Info,
    /// `##FORMAT=<ID=GT,…>`, kept apart from the other FORMAT fields.
    Gt,
    Format,
    Contig,
    /// Any other `##key=value` line (`##source`, `##ALT`, a tool's command line).
    Meta,
}

impl HeaderLineKind {
    /// Every kind, in the order svar2 prints them when the input's is not known.
    pub const ALL: [HeaderLineKind; 7] = [
        HeaderLineKind::FileFormat,
        HeaderLineKind::Filter,
        HeaderLineKind::Info,
        HeaderLineKind::Gt,
        HeaderLineKind::Format,
        HeaderLineKind::Contig,
        HeaderLineKind::Meta,
    ];

    /// The name stored in a store's `vcf_header_order` attribute.
    pub fn name(self) -> &'static str {
        match self {
            HeaderLineKind::FileFormat => "fileformat",
            HeaderLineKind::Filter => "FILTER",
            HeaderLineKind::Info => "INFO",
            HeaderLineKind::Gt => "GT",
            HeaderLineKind::Format => "FORMAT",
            HeaderLineKind::Contig => "contig",
            HeaderLineKind::Meta => "meta",
        }
    }

    /// The kind a stored name says (`None`: not one of [`name`](Self::name)'s).
    pub fn from_name(name: &str) -> Option<HeaderLineKind> {
        HeaderLineKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind of one `##` line of a header.
    fn of(line: &str) -> Option<HeaderLineKind> {
        let (key, value) = line.strip_prefix("##")?.split_once('=')?;
        Some(match key {
            "fileformat" => HeaderLineKind::FileFormat,
            "FILTER" => HeaderLineKind::Filter,
            "INFO" => HeaderLineKind::Info,
            "FORMAT" if value.starts_with("<ID=GT,") => HeaderLineKind::Gt,
            "FORMAT" => HeaderLineKind::Format,
            "contig" => HeaderLineKind::Contig,
            _ => HeaderLineKind::Meta,
        })
    }
}

/// The runs of line kinds of a header's text, in order.
fn header_order(meta_lines: &str) -> Vec<(HeaderLineKind, usize)> {
    let mut runs: Vec<(HeaderLineKind, usize)> = Vec::new();
    for kind in meta_lines.lines().filter_map(HeaderLineKind::of) {
        match runs.last_mut() {
            Some((k, n)) if *k == kind => *n += 1,
            _ => runs.push((kind, 1)),
        }
    }
    // A last run of contig lines is left to print as the lines the order does not
    // place, which come there anyway: htslib appends the contigs it learns from an
    // index there, and an indexed input must record the order its plain text does.
    if runs
        .last()
        .is_some_and(|(k, _)| *k == HeaderLineKind::Contig)
    {
        runs.pop();
    }
    runs
}

fn strip_quotes(s: &str) -> String {
    s.trim_matches('"').to_string()
}

fn parse_number(path: &Path, id: &str, s: &str) -> Result<VcfNumber> {
    Ok(match s {
        "A" => VcfNumber::A,
        "R" => VcfNumber::R,
        "G" => VcfNumber::G,
        "." => VcfNumber::Dot,
        // VCF 3.3's "varies" (samtools wrote it; `.` since VCF 4.0).
        "-1" => {
            // Once per file and field: a header is read again by each reader.
            static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
            let key = format!("{}\0{id}", path.display());
            let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
            if !warned.contains(&key) {
                warned.push(key);
                tracing::warn!(
                    "{}: {id} has Number=-1, VCF 3.3's way to say the number varies: read \
                     as Number=.",
                    path.display()
                );
            }
            VcfNumber::Dot
        }
        n => VcfNumber::Fixed(n.parse().map_err(|_| Error::Header {
            path: path.into(),
            msg: format!(
                "{id}: Number={n} is not A, R, G, . or a whole number: mend the header line \
                 (bcftools reheader)"
            ),
        })?),
    })
}

fn parse_type(path: &Path, id: &str, s: &str) -> Result<VcfType> {
    Ok(match s {
        "Integer" => VcfType::Integer,
        "Float" => VcfType::Float,
        "Flag" => VcfType::Flag,
        "String" => VcfType::String,
        "Character" => VcfType::Character,
        t => {
            return Err(Error::Header {
                path: path.into(),
                msg: format!(
                    "{id}: Type={t} is not Integer, Float, Flag, String or Character: mend \
                     the header line (bcftools reheader)"
                ),
            })
        }
    })
}

impl Schema {
    /// Reads the schema from an open htslib header. `meta_lines` are its `##` lines
    /// as htslib prints them ([`meta_lines`]: the generic meta-information lines, and
    /// the order of the header's kinds of line).
    pub fn from_header(path: &Path, header: &HeaderView, meta_lines: &str) -> Result<Schema> {
        let samples = sample_names(header)
            .iter()
            .map(|s| {
                String::from_utf8(s.to_vec()).map_err(|_| Error::Header {
                    path: path.into(),
                    msg: format!("sample name {:?} is not UTF-8", String::from_utf8_lossy(s)),
                })
            })
            .collect::<Result<Vec<_>>>()?;

        let mut lengths = std::collections::HashMap::new();
        let mut filters = Vec::new();
        let mut fields = Vec::new();
        let mut has_gt = false;
        for line in header_lines(header) {
            let get = |k: &str| line.values.iter().find(|(key, _)| key == k).map(|(_, v)| v);
            match line.kind {
                LineKind::Contig => {
                    if let Some(id) = get("ID") {
                        let len = get("length").and_then(|l| l.parse::<i64>().ok());
                        lengths.insert(id.clone(), len);
                    }
                }
                LineKind::Filter => {
                    if let Some(id) = get("ID") {
                        filters.push(Filter {
                            id: id.clone(),
                            description: get("Description")
                                .map(|d| strip_quotes(d))
                                .unwrap_or_default(),
                        });
                    }
                }
                LineKind::Info | LineKind::Format => {
                    let category = if line.kind == LineKind::Info {
                        Category::Info
                    } else {
                        Category::Format
                    };
                    let id = get("ID").cloned().unwrap_or_default();
                    if category == Category::Format && id == "GT" {
                        has_gt = true;
                        continue;
                    }
                    let named = format!(
                        "{}/{id}",
                        if category == Category::Info {
                            "INFO"
                        } else {
                            "FORMAT"
                        }
                    );
                    let ty = parse_type(path, &named, get("Type").map_or("", |s| s))?;
                    if category == Category::Format && ty == VcfType::Flag {
                        return Err(Error::Header {
                            path: path.into(),
                            msg: format!("FORMAT/{id} has Type=Flag, which VCF does not allow"),
                        });
                    }
                    let number = parse_number(path, &named, get("Number").map_or(".", |s| s))?;
                    fields.push(FieldDef {
                        category,
                        name: id,
                        number,
                        ty,
                        description: get("Description")
                            .map(|d| strip_quotes(d))
                            .unwrap_or_default(),
                    });
                }
                LineKind::Other => {}
            }
        }
        // INFO before FORMAT keeps array creation order stable and readable.
        fields.sort_by_key(|f| f.category == Category::Format);
        if let Some(i) = filters.iter().position(|f| f.id == "PASS") {
            let pass = filters.remove(i);
            filters.insert(0, pass);
        }

        // `IDX=` can leave ids without a contig: those are skipped, not stored.
        let contigs: Vec<Contig> = (0..header.contig_count())
            .filter_map(|rid| {
                let name = String::from_utf8_lossy(contig_name(header, rid)?).into_owned();
                let length = lengths.get(&name).copied().flatten();
                Some(Contig {
                    name,
                    length,
                    hts_rid: Some(rid),
                })
            })
            .collect();

        let meta_information = meta_lines
            .lines()
            .filter_map(|line| line.strip_prefix("##"))
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| !matches!(*k, "contig" | "FILTER" | "INFO" | "FORMAT"))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();

        Ok(Schema {
            samples: samples.into(),
            declared_contigs: contigs.len(),
            contigs,
            filters,
            fields,
            has_gt,
            meta_information,
            header_order: header_order(meta_lines),
        })
    }
}

impl Schema {
    /// The name of store contig `i` for messages (`?` for an index out of range).
    pub fn contig_label(&self, i: i64) -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.contigs.get(i))
            .map_or("?", |c| c.name.as_str())
    }

    /// Appends contigs the header does not declare (found in the index), once each.
    pub fn add_undeclared_contigs(&mut self, names: &[String]) {
        for n in names {
            if !self.contigs.iter().any(|c| &c.name == n) {
                self.contigs.push(Contig {
                    name: n.clone(),
                    length: None,
                    hts_rid: None,
                });
            }
        }
    }

    /// Every contig's length, −1 (VCF Zarr's missing integer) where the header gives
    /// none, as bio2zarr writes them; `None` when no contig has a length (bio2zarr
    /// leaves the array out then, and so do we).
    pub fn contig_lengths(&self) -> Option<Vec<i64>> {
        if self.contigs.iter().all(|c| c.length.is_none()) {
            return None;
        }
        Some(
            self.contigs
                .iter()
                .map(|c| c.length.unwrap_or(-1))
                .collect(),
        )
    }
}

/// Declares FORMAT/GT in a header that lacks it; `true` if it was added.
///
/// # Safety
/// `hdr` is a live, writable htslib header that no other thread uses meanwhile.
pub unsafe fn declare_gt(hdr: *mut htslib::bcf_hdr_t) -> bool {
    // SAFETY: the caller's contract; the strings are NUL-terminated literals.
    unsafe {
        let declared = !htslib::bcf_hdr_get_hrec(
            hdr,
            htslib::BCF_HL_FMT as i32,
            c"ID".as_ptr(),
            c"GT".as_ptr(),
            std::ptr::null(),
        )
        .is_null();
        if declared {
            return false;
        }
        htslib::bcf_hdr_append(
            hdr,
            c"##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">".as_ptr(),
        ) == 0
            && htslib::bcf_hdr_sync(hdr) == 0
    }
}

/// The name of htslib contig id `rid`, or `None` for an id the header does not fill.
/// `##contig=<…,IDX=n>` can skip ids, and htslib leaves a null name there, which
/// rust-htslib's `rid2name` would hand to `CStr::from_ptr` (and it also reads one
/// past the end); this checks both.
pub fn contig_name(header: &HeaderView, rid: u32) -> Option<&[u8]> {
    // SAFETY: the header pointer is live for `header`'s lifetime; `rid` is checked
    // against the dictionary's size and the name pointer against null before use.
    unsafe {
        let hdr = header.as_ptr();
        if hdr.is_null() || rid >= header.contig_count() {
            return None;
        }
        let dict = (*hdr).id[htslib::BCF_DT_CTG as usize];
        if dict.is_null() {
            return None;
        }
        let key = (*dict.add(rid as usize)).key;
        (!key.is_null()).then(|| CStr::from_ptr(key).to_bytes())
    }
}

/// The sample names, read with the pointers checked: rust-htslib's `samples` builds
/// a slice from htslib's array even when it is null (no samples).
fn sample_names(header: &HeaderView) -> Vec<&[u8]> {
    // SAFETY: the header is live; `n[BCF_DT_SAMPLE]` bounds `samples`, and each name
    // pointer is checked against null before it is read.
    unsafe {
        let hdr = header.as_ptr();
        if hdr.is_null() || (*hdr).samples.is_null() {
            return Vec::new();
        }
        let n = (*hdr).n[htslib::BCF_DT_SAMPLE as usize].max(0) as usize;
        (0..n)
            .filter_map(|i| {
                let p = *(*hdr).samples.add(i);
                (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
            })
            .collect()
    }
}

/// What a structured header line declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Contig,
    Filter,
    Info,
    Format,
    Other,
}

/// One `##key=<k=v,…>` header line as htslib parsed it.
struct HeaderLine {
    kind: LineKind,
    values: Vec<(String, String)>,
}

/// A C string from htslib as text: `None` for null, non-UTF-8 bytes replaced.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string of a live htslib structure.
unsafe fn lossy(p: *const c_char) -> Option<String> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The header's structured lines, read from htslib's records with every pointer
/// checked: rust-htslib's `header_records` panics on a value that is not UTF-8.
fn header_lines(header: &HeaderView) -> Vec<HeaderLine> {
    let mut out = Vec::new();
    // SAFETY: the header is live; `nhrec` bounds `hrec`, `nkeys` bounds keys/vals, and
    // each pointer is checked against null before it is read.
    unsafe {
        let hdr = header.as_ptr();
        if hdr.is_null() || (*hdr).hrec.is_null() {
            return out;
        }
        for i in 0..(*hdr).nhrec.max(0) as usize {
            let rec = *(*hdr).hrec.add(i);
            if rec.is_null() || (*rec).keys.is_null() || (*rec).vals.is_null() {
                continue;
            }
            let kind = match (*rec).type_ as u32 {
                htslib::BCF_HL_CTG => LineKind::Contig,
                htslib::BCF_HL_FLT => LineKind::Filter,
                htslib::BCF_HL_INFO => LineKind::Info,
                htslib::BCF_HL_FMT => LineKind::Format,
                _ => LineKind::Other,
            };
            let values = (0..(*rec).nkeys.max(0) as usize)
                .filter_map(|k| {
                    let key = lossy(*(*rec).keys.add(k))?;
                    Some((key, lossy(*(*rec).vals.add(k)).unwrap_or_default()))
                })
                .collect();
            out.push(HeaderLine { kind, values });
        }
    }
    out
}

/// The header's `##` lines as VCF text, as `bcf_hdr_format` writes them, for the
/// meta-information lines a store keeps; empty if htslib cannot format them. Not the
/// `#CHROM` line: a biobank header names hundreds of thousands of samples there, one
/// `ksprintf` each, and formatting them was half the cost of opening such a file
/// (which a conversion of many files does three times per file).
pub fn meta_lines(header: &HeaderView) -> String {
    let mut ks = KString::new();
    // SAFETY: the header pointer is valid for the reader's lifetime, and `hrec` holds
    // `nhrec` records (htslib's own loop in bcf_hdr_format); htslib fills ks.
    let ok = unsafe {
        let h = &*header.as_ptr();
        (0..h.nhrec.max(0) as usize).all(|i| htslib::bcf_hrec_format(*h.hrec.add(i), ks.raw()) == 0)
    };
    if !ok {
        return String::new();
    }
    String::from_utf8_lossy(ks.bytes()).into_owned()
}
