//! `bcftools merge` at conversion (`convert --merge`): inputs of different samples,
//! each sorted, read side by side, and joined record by record into the records a
//! conversion of `bcftools merge`'s output sees — its default (`-m both`: SNPs with
//! SNPs, indels with indels, alleles joined) or `-m none` (only records with the same
//! alleles joined). The rules are bcftools 1.16's (`vcfmerge.c`), ported step for step
//! so that the stores are equal: the union of sites in order, ID joined, QUAL the
//! highest, FILTER joined (PASS dropped beside others), INFO from the first input
//! that has it (DP and DP4 summed, Number=A/R/G fields placed by allele, AC and AN
//! counted again from the merged genotypes), FORMAT fields every input's samples
//! fill, missing where an input lacks the record or the field.
//!
//! Left out (refused or not offered): gVCF blocks (`-g`), `--merge-by-id`,
//! `-m snps|indels|all|id`, `-i` rules other than the default, `-F x`, `-0`, local
//! alleles (`-L`).

use crate::error::{Error, Result};
use crate::schema::{contig_name, Schema};
use rust_htslib::bcf;
use rust_htslib::bcf::header::HeaderView;
use rust_htslib::bcf::Read;
use rust_htslib::htslib;
use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which records at one position are joined (`bcftools merge -m`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub enum Collapse {
    /// `-m both` (bcftools' default): SNPs with SNPs and indels with indels, their
    /// alleles joined into one multiallelic record.
    #[default]
    Both,
    /// `-m none`: only records whose alleles agree are joined.
    None,
}

impl std::str::FromStr for Collapse {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "both" => Ok(Collapse::Both),
            "none" => Ok(Collapse::None),
            _ => Err(format!(
                "-m {s}: svar2 merges as `bcftools merge -m both` (the default) or `-m none`"
            )),
        }
    }
}

/// What `convert --merge` asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MergeRequest {
    pub collapse: Collapse,
    /// `--force-samples`: a sample name in two inputs is kept as `2:NAME` (the input's
    /// number), as bcftools does, instead of refused.
    pub force_samples: bool,
}

// bcftools' variant-type masks: htslib's VCF_* shifted by two, REF-only as 2.
const SNP_MASK: i32 = ((htslib::VCF_SNP | htslib::VCF_MNP) << 2) as i32;
const INDEL_MASK: i32 = (htslib::VCF_INDEL << 2) as i32;
const INS_MASK: i32 = (htslib::VCF_INS << 2) as i32;
const DEL_MASK: i32 = (htslib::VCF_DEL << 2) as i32;
const REF_MASK: i32 = 2;
const SKIP_DONE: u8 = 1;
const SKIP_DIFF: u8 = 2;
const INT_MISSING: i32 = i32::MIN;
const INT_END: i32 = i32::MIN + 1;
const FLOAT_MISSING: u32 = 0x7F80_0001;
const FLOAT_END: u32 = 0x7F80_0002;
const VL_VAR: u32 = 1;
const VL_A: u32 = 2;
const VL_G: u32 = 3;
const VL_R: u32 = 4;

/// One record of an input at the position being merged.
struct Line {
    rec: bcf::Record,
    /// The input's record number (1-based), for messages.
    number: u64,
    /// Input allele index → merged allele index.
    map: Vec<usize>,
    skip: u8,
}

/// An input read from start to end, or contig by contig through its index.
enum Src {
    Stream(bcf::Reader),
    Indexed(bcf::IndexedReader),
}

impl Src {
    fn header(&self) -> &HeaderView {
        match self {
            Src::Stream(r) => r.header(),
            Src::Indexed(r) => r.header(),
        }
    }

    fn empty_record(&self) -> bcf::Record {
        match self {
            Src::Stream(r) => r.empty_record(),
            Src::Indexed(r) => r.empty_record(),
        }
    }

    fn read(&mut self, rec: &mut bcf::Record) -> Option<rust_htslib::errors::Result<()>> {
        match self {
            Src::Stream(r) => r.read(rec),
            Src::Indexed(r) => r.read(rec),
        }
    }
}

/// One input: its reader, the record read ahead, the records at the position.
struct Input {
    path: PathBuf,
    reader: Src,
    samples: usize,
    ahead: Option<bcf::Record>,
    ahead_number: u64,
    read: u64,
    /// An indexed input's records before each contig, by name (file order): where
    /// `read` starts when a contig is fetched, so messages number records in the file.
    before: HashMap<Vec<u8>, u64>,
    lines: Vec<Line>,
    /// The line staged for the output record being made.
    cur: Option<usize>,
    /// The merged header's contig id of each of this input's contig ids.
    rid_out: Vec<i32>,
    last: Option<(i32, i64)>,
}

/// The merged stream: one record at a time, in the merged header.
pub struct Merger {
    inputs: Vec<Input>,
    out_hdr: Arc<HeaderView>,
    /// The schema of the merged header (what the store is made from).
    pub schema: Schema,
    collapse: Collapse,
    /// Merged records made and not yet handed out.
    ready: VecDeque<bcf::Record>,
    current: bcf::Record,
    made: u64,
    // The position's joined alleles and how many inputs share each.
    als: Vec<Vec<u8>>,
    cnt: Vec<u32>,
    var_types: i32,
    /// Per merged sample, its ploidy in the current record's genotypes.
    ploidy: Vec<i32>,
    /// INFO tags summed (bcftools' default rules: DP and DP4 where declared).
    sum_rules: Vec<CString>,
    /// When every input is indexed: the contigs in the order bcftools' synced reader
    /// walks them (each input's — a BCF's header contigs, a VCF.gz's index names —
    /// joined in input order), and the next one to read.
    contigs: Option<Vec<Vec<u8>>>,
    next_contig: usize,
    /// One past the last contig this merger reads (a worker reads one at a time).
    contig_end: usize,
}

/// A header's pointer, for htslib's calls.
fn hp(h: &HeaderView) -> *mut htslib::bcf_hdr_t {
    // SAFETY: only the pointer is taken; every use is inside an unsafe block that
    // keeps `h` alive for its length.
    unsafe { h.as_ptr() }
}

fn c(s: &[u8]) -> CString {
    CString::new(s).unwrap_or_else(|_| CString::new("?").expect("no NUL"))
}

/// The `Number` kind (`BCF_VL_*`) of tag `id` of header line kind `hl`.
///
/// # Safety
/// `hdr` is a live header and `id` one of its dictionary ids.
unsafe fn id_length(hdr: *const htslib::bcf_hdr_t, hl: u32, id: i32) -> u32 {
    let pair = (*hdr).id[htslib::BCF_DT_ID as usize].add(id as usize);
    (((*(*pair).val).info[hl as usize] >> 8) & 0xf) as u32
}

/// The name of tag `id` of line kind `hl` (`BCF_HL_FLT`/`INFO`/`FMT`) in an input's
/// header `ih`, checked declared there and in the merged header `out`: a tag htslib met
/// in a record without its `##` line (an index reader's header lacks it, a stream's got
/// a stand-in after the headers were merged) is an error naming it.
///
/// # Safety
/// Both headers are live.
unsafe fn declared_tag(
    ih: *const htslib::bcf_hdr_t,
    out: *const htslib::bcf_hdr_t,
    id: i32,
    hl: u32,
) -> std::result::Result<Vec<u8>, String> {
    let kind = match hl {
        htslib::BCF_HL_FLT => "FILTER",
        htslib::BCF_HL_INFO => "INFO",
        _ => "FORMAT",
    };
    let undeclared = |name: &str| undeclared_message(kind, name);
    let n = (*ih).n[htslib::BCF_DT_ID as usize];
    if id < 0 || id >= n {
        return Err(undeclared(UNNAMED));
    }
    let pair = (*ih).id[htslib::BCF_DT_ID as usize].add(id as usize);
    if (*pair).key.is_null() {
        return Err(undeclared(UNNAMED));
    }
    let name = CStr::from_ptr((*pair).key).to_bytes().to_vec();
    let shown = String::from_utf8_lossy(&name).into_owned();
    if (*pair).val.is_null() || (*(*pair).val).hrec[hl as usize].is_null() {
        return Err(undeclared(&shown));
    }
    let oid = htslib::bcf_hdr_id2int(out, htslib::BCF_DT_ID as i32, c(&name).as_ptr());
    let opair = (*out).id[htslib::BCF_DT_ID as usize].add(oid.max(0) as usize);
    if oid < 0 || (*opair).val.is_null() || (*(*opair).val).hrec[hl as usize].is_null() {
        return Err(undeclared(&shown));
    }
    Ok(name)
}

/// What names a tag `name` of line kind `kind` (FILTER, INFO, FORMAT) no `##` line
/// declares, as a conversion's own parser says it; [`UNNAMED`] where the header
/// could not give the name.
fn undeclared_message(kind: &str, name: &str) -> String {
    match (name, kind) {
        (UNNAMED, _) => format!(
            "{kind} {UNNAMED} is not declared in the header: add its ##{kind} line (e.g. \
             `bcftools annotate -h lines.txt`)"
        ),
        (_, "FILTER") => format!(
            "FILTER {name} is not declared in the header: declare it (a ##FILTER line, \
             `bcftools annotate -h`) or drop it (`bcftools annotate -x FILTER/{name}`)"
        ),
        _ => format!(
            "{kind}/{name} is not declared in the header: declare it (a ##{kind} line, \
             `bcftools annotate -h`) or drop it (`bcftools annotate -x {kind}/{name}`)"
        ),
    }
}

/// The stand-in for a tag's name the header does not hold.
const UNNAMED: &str = "(a tag)";

/// The tag of kind `hl` at `rec`'s line of the text input `path` that the input's
/// header does not declare, read from the line itself through the index: htslib adds
/// a stand-in for such a tag to the header it parses with, but an index reader's
/// header is a copy made before, so the record names the tag by an id the copy lacks.
fn undeclared_in_line(path: &Path, rec: &bcf::Record, hl: u32) -> Option<String> {
    if !is_text(path) {
        return None;
    }
    let header = rec.header();
    let contig = contig_name(header, rec.rid()?)?;
    let pos = u64::try_from(rec.pos()).ok()?;
    let mut tbx = rust_htslib::tbx::Reader::from_path(path).ok()?;
    let tid = tbx.tid(std::str::from_utf8(contig).ok()?).ok()?;
    tbx.fetch(tid, pos, pos + 1).ok()?;
    let (column, separator) = match hl {
        htslib::BCF_HL_FLT => (6, b';'),
        htslib::BCF_HL_INFO => (7, b';'),
        _ => (8, b':'),
    };
    let mut line = Vec::new();
    use rust_htslib::tbx::Read as _;
    while tbx.read(&mut line).ok()? {
        let mut cols = line.split(|&b| b == b'\t');
        let at = cols
            .nth(1)
            .and_then(|p| std::str::from_utf8(p).ok()?.parse::<u64>().ok());
        if at != Some(pos + 1) {
            continue;
        }
        let field = cols.nth(column - 2)?;
        for item in field.split(|&b| b == separator) {
            let key = item.split(|&b| b == b'=').next().unwrap_or_default();
            if key.is_empty() || key == b"." || key == b"PASS" {
                continue;
            }
            let id = header.name_to_id(key).ok().map(|i| i.0 as i32);
            // SAFETY: the header is live and `id` one of its dictionary ids.
            let declared = id.is_some_and(|id| unsafe {
                let pair = (*hp(header)).id[htslib::BCF_DT_ID as usize].add(id as usize);
                !(*pair).val.is_null() && !(*(*pair).val).hrec[hl as usize].is_null()
            });
            if !declared {
                return Some(String::from_utf8_lossy(key).into_owned());
            }
        }
    }
    None
}

/// `msg` from [`declared_tag`], naming the tag from `rec`'s line where the header
/// could not.
fn name_the_tag(msg: String, path: &Path, rec: &bcf::Record, hl: u32) -> String {
    let kind = match hl {
        htslib::BCF_HL_FLT => "FILTER",
        htslib::BCF_HL_INFO => "INFO",
        _ => "FORMAT",
    };
    if msg != undeclared_message(kind, UNNAMED) {
        return msg;
    }
    match undeclared_in_line(path, rec, hl) {
        Some(name) => undeclared_message(kind, &name),
        None => msg,
    }
}

/// Typed values (`BCF_BT_*`) widened to i32 sentinels (or f32 bits for floats).
///
/// # Safety
/// `p` holds `n` values of `ty`.
unsafe fn widen(ty: u32, p: *const u8, n: usize) -> Vec<i32> {
    (0..n)
        .map(|i| match ty {
            htslib::BCF_BT_INT8 => match *(p as *const i8).add(i) {
                -128 => INT_MISSING,
                -127 => INT_END,
                v => v as i32,
            },
            htslib::BCF_BT_INT16 => match (p as *const i16).add(i).read_unaligned() {
                i16::MIN => INT_MISSING,
                v if v == i16::MIN + 1 => INT_END,
                v => v as i32,
            },
            htslib::BCF_BT_INT32 => (p as *const i32).add(i).read_unaligned(),
            _ => (p as *const u32).add(i).read_unaligned() as i32,
        })
        .collect()
}

fn is_missing(v: i32, float: bool) -> bool {
    match float {
        true => v as u32 == FLOAT_MISSING,
        false => v == INT_MISSING,
    }
}

fn is_end(v: i32, float: bool) -> bool {
    match float {
        true => v as u32 == FLOAT_END,
        false => v == INT_END,
    }
}

fn missing(float: bool) -> i32 {
    match float {
        true => FLOAT_MISSING as i32,
        false => INT_MISSING,
    }
}

fn end(float: bool) -> i32 {
    match float {
        true => FLOAT_END as i32,
        false => INT_END,
    }
}

fn alleles2gt(a: usize, b: usize) -> usize {
    match a > b {
        true => a * (a + 1) / 2 + b,
        false => b * (b + 1) / 2 + a,
    }
}

/// Number=G values placed by the allele map, as bcftools' loops place them: the value
/// of each pair of the input's alleles goes to the merged pair's slot, up to the first
/// vector end; a missing value is written only with `write_missing` (FORMAT writes it,
/// INFO skips it).
fn place_by_genotype(
    src: &[i32],
    nal: usize,
    map: &[usize],
    float: bool,
    write_missing: bool,
    dst: &mut [i32],
) {
    for i in 0..nal {
        for j in 0..=i {
            let Some(&v) = src.get(i * (i + 1) / 2 + j) else {
                return;
            };
            if is_end(v, float) {
                return;
            }
            if is_missing(v, float) && !write_missing {
                continue;
            }
            if let Some(t) = dst.get_mut(alleles2gt(map[i], map[j])) {
                *t = if is_missing(v, float) {
                    missing(float)
                } else {
                    v
                };
            }
        }
    }
}

/// bcftools' `vcmp`: compares alleles of records whose REFs differ in length.
#[derive(Default)]
struct Vcmp {
    dref: Vec<u8>,
    /// Positive when the first REF is the longer, negative when the second is.
    ndref: i32,
}

impl Vcmp {
    fn set_ref(&mut self, ref1: &[u8], ref2: &[u8]) -> bool {
        self.ndref = 0;
        let m = ref1
            .iter()
            .zip(ref2)
            .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
            .count();
        let (ra, rb) = (&ref1[m..], &ref2[m..]);
        if ra.is_empty() && rb.is_empty() {
            return true;
        }
        if !ra.is_empty() && !rb.is_empty() {
            return false;
        }
        self.dref = match ra.is_empty() {
            false => ra.to_ascii_uppercase(),
            true => rb.to_ascii_uppercase(),
        };
        self.ndref = self.dref.len() as i32 * if ra.is_empty() { -1 } else { 1 };
        true
    }

    fn find_allele(&self, als1: &[Vec<u8>], al2: &[u8]) -> Option<usize> {
        als1.iter().position(|a1| {
            let m = a1
                .iter()
                .zip(al2)
                .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
                .count();
            let (a, b) = (&a1[m..], &al2[m..]);
            if !a.is_empty() && !b.is_empty() {
                return false;
            }
            if self.ndref == 0 {
                return a.is_empty() && b.is_empty();
            }
            if !a.is_empty() {
                return self.ndref > 0 && a.to_ascii_uppercase() == self.dref;
            }
            self.ndref <= 0 && b.to_ascii_uppercase() == self.dref
        })
    }
}

/// bcftools' `merge_alleles`: `a`'s alleles joined into `b`, `map` set to where each
/// of `a`'s went; `None` when the REFs disagree.
fn merge_alleles(a: &mut [Vec<u8>], map: &mut Vec<usize>, b: &mut Vec<Vec<u8>>) -> Option<()> {
    map.clear();
    map.resize(a.len(), 0);
    let rla = a[0].len().max(1);
    let rlb = b[0].len().max(1);
    let same_snp = a.len() == 2 && b.len() == 2 && rla == 1 && rlb == 1;
    if same_snp && a[1].len() == 1 && b[1].len() == 1 && a[1][0] == b[1][0] {
        map[1] = 1;
        return Some(());
    }
    let n = rla.min(rlb);
    let (pa, pb) = (&a[0][..n.min(a[0].len())], &b[0][..n.min(b[0].len())]);
    if pa != pb {
        if !pa.eq_ignore_ascii_case(pb) {
            return None;
        }
        a.iter_mut().for_each(|x| x.make_ascii_uppercase());
        b.iter_mut().for_each(|x| x.make_ascii_uppercase());
    }
    if rla > rlb {
        let tail = a[0][rlb..].to_vec();
        for x in b.iter_mut() {
            if x.first() == Some(&b'<') || x.first() == Some(&b'*') {
                continue;
            }
            x.extend_from_slice(&tail);
        }
    }
    for i in 1..a.len() {
        let ai = if rlb > rla && a[i].first() != Some(&b'<') && a[i].first() != Some(&b'*') {
            let mut v = a[i].clone();
            v.extend_from_slice(&b[0][rla..]);
            v
        } else {
            a[i].clone()
        };
        match (1..b.len()).find(|&j| b[j].eq_ignore_ascii_case(&ai)) {
            Some(j) => map[i] = j,
            None => {
                map[i] = b.len();
                b.push(ai);
            }
        }
    }
    Some(())
}

/// bcftools' `normalize_alleles`: the common suffix trimmed (REF kept one base).
fn normalize_alleles(als: &mut [Vec<u8>]) {
    if als[0].len() <= 1 {
        return;
    }
    let lens: Vec<usize> = als.iter().map(Vec::len).collect();
    let mut i = 1;
    let mut done = false;
    while i < lens[0] {
        for j in 1..als.len() {
            if i >= lens[j] {
                done = true;
            }
            if i > lens[j] || als[j][lens[j] - i] != als[0][lens[0] - i] {
                done = true;
                break;
            }
        }
        if done {
            break;
        }
        i += 1;
    }
    if i > 1 {
        i -= 1;
        for (j, a) in als.iter_mut().enumerate() {
            a.truncate(lens[j] - i);
        }
    }
}

/// bcftools' `copy_string_field`: the `isrc`-th comma field of `src` into the
/// `idst`-th of `dst`, where that is still `.`.
fn copy_string_field(src: &[u8], isrc: usize, dst: &mut Vec<u8>, idst: usize) -> bool {
    let src = &src[..src.iter().position(|&b| b == 0).unwrap_or(src.len())];
    let Some(field) = src.split(|&b| b == b',').nth(isrc) else {
        return false;
    };
    if field == b"." {
        return true;
    }
    let mut start = 0;
    for _ in 0..idst {
        match dst[start..].iter().position(|&b| b == b',') {
            Some(p) => start += p + 1,
            None => return false,
        }
    }
    let end = dst[start..]
        .iter()
        .position(|&b| b == b',')
        .map_or(dst.len(), |p| start + p);
    if &dst[start..end] != b"." {
        return true;
    }
    dst.splice(start..end, field.iter().copied());
    true
}

impl Merger {
    /// Opens the inputs and merges their headers as bcftools does (header lines
    /// joined in input order, samples appended; a name met twice refused, or renamed
    /// `K:NAME` with `--force-samples`).
    pub fn open(paths: &[PathBuf], req: MergeRequest) -> Result<Merger> {
        if paths.len() < 2 {
            return Err(Error::Request(
                "--merge joins two or more inputs (of different samples)".into(),
            ));
        }
        if let Some(p) = paths.iter().find(|p| crate::inputs::is_stdin(p)) {
            return Err(Error::Request(format!(
                "--merge reads files side by side: {} (standard input) cannot be one",
                p.display()
            )));
        }
        // SAFETY: a fresh header owned by `out` from here on.
        let out = unsafe { HeaderView::from_ptr(htslib::bcf_hdr_init(c(b"w").as_ptr())) };
        let mut inputs = Vec::with_capacity(paths.len());
        for (i, path) in paths.iter().enumerate() {
            if !path.exists() {
                return Err(Error::Open {
                    path: path.clone(),
                    msg: "no such file".into(),
                });
            }
            let reader = open_input(path)?;
            let hr = hp(reader.header());
            let prefix = (i + 1).to_string();
            // SAFETY: both headers are live; htslib copies what it merges.
            unsafe {
                htslib::bcf_hdr_merge(out.as_ptr(), hr);
                for s in 0..(*hr).n[htslib::BCF_DT_SAMPLE as usize] {
                    let mut name = CStr::from_ptr(*(*hr).samples.add(s as usize))
                        .to_bytes()
                        .to_vec();
                    loop {
                        let cn = c(&name);
                        let id = htslib::bcf_hdr_id2int(
                            out.as_ptr(),
                            htslib::BCF_DT_SAMPLE as i32,
                            cn.as_ptr(),
                        );
                        if id == -1 {
                            break;
                        }
                        if !req.force_samples {
                            return Err(Error::Inputs(format!(
                                "{}: sample {} is also in an earlier input: --merge joins \
                                 inputs of different samples (pass --force-samples to keep \
                                 both, this one as {prefix}:{}, as bcftools does)",
                                path.display(),
                                String::from_utf8_lossy(&name),
                                String::from_utf8_lossy(&name),
                            )));
                        }
                        name = [prefix.as_bytes(), b":", &name].concat();
                    }
                    htslib::bcf_hdr_add_sample(out.as_ptr(), c(&name).as_ptr());
                }
            }
            let samples = reader.header().sample_count() as usize;
            let before = match &reader {
                Src::Indexed(r) => records_before(path, r.header()),
                Src::Stream(_) => HashMap::new(),
            };
            inputs.push(Input {
                path: path.clone(),
                reader,
                samples,
                ahead: None,
                ahead_number: 0,
                read: 0,
                before,
                lines: Vec::new(),
                cur: None,
                rid_out: Vec::new(),
                last: None,
            });
        }
        // SAFETY: `out` is live and owned here.
        unsafe {
            if htslib::bcf_hdr_sync(out.as_ptr()) < 0 {
                return Err(Error::Inputs("cannot merge the inputs' headers".into()));
            }
            let v = htslib::bcf_hdr_get_version(hp(inputs[0].reader.header()));
            htslib::bcf_hdr_set_version(out.as_ptr(), v);
        }
        for inp in &inputs {
            check_definitions(&inp.path, hp(inp.reader.header()), hp(&out))?;
        }
        let raw = crate::schema::meta_lines(&out);
        let schema = Schema::from_header(&paths[0], &out, &raw)?;
        let mut sum_rules = Vec::new();
        // bcftools' default rules: DP and DP4 summed; without samples (nothing to count
        // AC and AN from) AN and AC summed too.
        let no_samples = schema.samples.is_empty();
        let tags: &[&[u8]] = match no_samples {
            true => &[b"DP", b"DP4", b"AN", b"AC"],
            false => &[b"DP", b"DP4"],
        };
        for &tag in tags {
            let t = c(tag);
            // SAFETY: `out` is live.
            let declared = unsafe {
                let id = htslib::bcf_hdr_id2int(out.as_ptr(), htslib::BCF_DT_ID as i32, t.as_ptr());
                id >= 0 && {
                    let pair = (*out.as_ptr()).id[htslib::BCF_DT_ID as usize].add(id as usize);
                    !(*pair).val.is_null()
                        && !(*(*pair).val).hrec[htslib::BCF_HL_INFO as usize].is_null()
                }
            };
            if declared {
                sum_rules.push(t);
            }
        }
        let contigs = synced_order(&inputs);
        let out = Arc::new(out);
        let current = bcf::Record::new(out.clone());
        let n = schema.samples.len();
        let mut m = Merger {
            inputs,
            out_hdr: out,
            schema,
            collapse: req.collapse,
            ready: VecDeque::new(),
            current,
            made: 0,
            als: Vec::new(),
            cnt: Vec::new(),
            var_types: 0,
            ploidy: vec![0; n],
            sum_rules,
            contig_end: contigs.as_ref().map_or(0, Vec::len),
            contigs,
            next_contig: 0,
        };
        if m.contigs.is_none() {
            for i in 0..m.inputs.len() {
                m.advance(i)?;
            }
        }
        Ok(m)
    }

    /// The merged header (what the records are extracted with).
    pub fn header(&self) -> &HeaderView {
        &self.out_hdr
    }

    /// The inputs, in order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.inputs.iter().map(|i| i.path.clone()).collect()
    }

    /// The next merged record and its number; `None` when every input has ended.
    pub fn next_record(&mut self) -> Result<Option<(u64, &bcf::Record)>> {
        while self.ready.is_empty() {
            if !self.merge_position()? {
                return Ok(None);
            }
        }
        self.current = self.ready.pop_front().expect("one is ready");
        self.made += 1;
        Ok(Some((self.made - 1, &self.current)))
    }

    /// The number of contigs an indexed merge reads (`None`: the inputs stream).
    pub fn contig_count(&self) -> Option<usize> {
        self.contigs.as_ref().map(Vec::len)
    }

    /// Merges contig `c` of the synced order alone, handing each record to `sink`
    /// (which says `false` to stop). For workers merging contigs side by side.
    fn merge_contig(&mut self, c: usize, sink: &mut dyn FnMut(bcf::Record) -> bool) -> Result<()> {
        self.next_contig = c;
        self.contig_end = c + 1;
        self.ready.clear();
        for inp in &mut self.inputs {
            inp.ahead = None;
        }
        loop {
            while self.ready.is_empty() {
                if !self.merge_position()? {
                    return Ok(());
                }
            }
            while let Some(rec) = self.ready.pop_front() {
                if !sink(rec) {
                    return Ok(());
                }
            }
        }
    }

    /// Reads input `i`'s next record into `ahead`, checking the order.
    fn advance(&mut self, i: usize) -> Result<()> {
        let out_hdr = hp(&self.out_hdr);
        let inp = &mut self.inputs[i];
        let mut rec = inp.reader.empty_record();
        match inp.reader.read(&mut rec) {
            None => {
                inp.ahead = None;
                return Ok(());
            }
            Some(Err(e)) => {
                return Err(Error::Record {
                    path: inp.path.clone(),
                    record: inp.read + 1,
                    locus: match inp.last {
                        Some((_, pos)) => format!("after position {}", pos + 1),
                        None => "first record".into(),
                    },
                    msg: format!(
                        "htslib could not read the record ({e}){}",
                        crate::truncation::truncation_hint(&inp.path)
                    ),
                })
            }
            Some(Ok(())) => {}
        }
        inp.read += 1;
        let rid = rec.rid().unwrap_or(0);
        let name = contig_name(rec.header(), rid).unwrap_or(b"?").to_vec();
        while inp.rid_out.len() <= rid as usize {
            let k = inp.rid_out.len() as u32;
            let n = c(contig_name(rec.header(), k).unwrap_or(b""));
            // SAFETY: the merged header is live.
            let id =
                unsafe { htslib::bcf_hdr_id2int(out_hdr, htslib::BCF_DT_CTG as i32, n.as_ptr()) };
            inp.rid_out.push(id);
        }
        let out_rid = inp.rid_out[rid as usize];
        let locus = format!("{}:{}", String::from_utf8_lossy(&name), rec.pos() + 1);
        if out_rid < 0 {
            return Err(Error::Record {
                path: inp.path.clone(),
                record: inp.read,
                locus,
                msg: format!(
                    "contig {} is not declared in the header (##contig): --merge reads \
                     records through htslib, which needs every contig declared — add the line \
                     (bcftools reheader)",
                    String::from_utf8_lossy(&name)
                ),
            });
        }
        let key = (out_rid, rec.pos());
        if let Some(last) = inp.last.filter(|&l| key < l) {
            // SAFETY: the merged header is live and `last.0` one of its contig ids.
            let before = unsafe {
                let pair = (*out_hdr).id[htslib::BCF_DT_CTG as usize].add(last.0 as usize);
                CStr::from_ptr((*pair).key)
            };
            return Err(Error::Record {
                path: inp.path.clone(),
                record: inp.read,
                locus,
                msg: format!(
                    "comes after {}:{}: --merge reads every input in the merged header's \
                     contig order, then by position (sort it with `bcftools sort`, and give \
                     every input the same ##contig order, e.g. with `bcftools reheader`)",
                    before.to_string_lossy(),
                    last.1 + 1
                ),
            });
        }
        inp.last = Some(key);
        inp.ahead_number = inp.read;
        inp.ahead = Some(rec);
        Ok(())
    }

    /// Indexed inputs: every input positioned at the start of the next contig of the
    /// synced order that any holds; `false` when none is left (or not indexed).
    fn fetch_next_contig(&mut self) -> Result<bool> {
        if self.contigs.is_none() {
            return Ok(false);
        }
        while self.next_contig < self.contig_end {
            let name = self.contigs.as_ref().expect("indexed")[self.next_contig].clone();
            self.next_contig += 1;
            let mut any = false;
            for i in 0..self.inputs.len() {
                let inp = &mut self.inputs[i];
                inp.ahead = None;
                inp.last = None;
                let Src::Indexed(r) = &mut inp.reader else {
                    continue;
                };
                let Ok(rid) = r.header().name2rid(&name) else {
                    continue;
                };
                if r.fetch(rid, 0, None).is_err() {
                    continue; // no records there
                }
                if let Some(&n) = inp.before.get(name.as_slice()) {
                    inp.read = n;
                }
                self.advance(i)?;
                any |= self.inputs[i].ahead.is_some();
            }
            if any {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn key(&self, i: usize) -> Option<(i32, i64)> {
        let inp = &self.inputs[i];
        let rec = inp.ahead.as_ref()?;
        Some((inp.rid_out[rec.rid().unwrap_or(0) as usize], rec.pos()))
    }

    /// Merges every input's records at the next position into `ready`; `false` at
    /// the end of every input.
    fn merge_position(&mut self) -> Result<bool> {
        let min = loop {
            if let Some(min) = (0..self.inputs.len()).filter_map(|i| self.key(i)).min() {
                break min;
            }
            if !self.fetch_next_contig()? {
                return Ok(false);
            }
        };
        for i in 0..self.inputs.len() {
            self.inputs[i].lines.clear();
            self.inputs[i].cur = None;
            while self.key(i) == Some(min) {
                let rec = self.inputs[i].ahead.take().expect("keyed");
                let number = self.inputs[i].ahead_number;
                self.inputs[i].lines.push(Line {
                    rec,
                    number,
                    map: Vec::new(),
                    skip: 0,
                });
                self.advance(i)?;
            }
        }
        self.order_as_synced_reader();
        // bcftools' maux_reset zeroes the allele counts once per position; can_merge
        // then overwrites only the first line's alleles' counts, so counts of alleles
        // past those stay from the position's earlier rounds and steer stage_line's
        // choice of the next line (three lines at a position come out 1, 3, 2).
        self.cnt.iter_mut().for_each(|c| *c = 0);
        while self.can_merge()? {
            self.stage_line();
            let rec = self.merge_line()?;
            self.ready.push_back(rec);
        }
        Ok(true)
    }

    /// Puts first, in each input with lines at this position, the line htslib's
    /// synced reader hands bcftools merge as that input's current line: when two or
    /// more inputs have lines here, `bcf_sr_sort` pairs them into variant sets and
    /// moves the first set's line of each input to the front of its buffer (the rest
    /// keep file order). Only the first set matters: bcftools merges every line at
    /// the position before it asks for the next.
    fn order_as_synced_reader(&mut self) {
        if self.inputs.iter().all(|inp| inp.lines.len() < 2) {
            return;
        }
        let lines: Vec<Vec<&bcf::Record>> = self
            .inputs
            .iter()
            .map(|inp| inp.lines.iter().map(|l| &l.rec).collect())
            .collect();
        let first = synced_first_set(&lines);
        for (inp, chosen) in self.inputs.iter_mut().zip(first) {
            if let Some(j) = chosen.filter(|&j| j > 0) {
                let line = inp.lines.remove(j);
                inp.lines.insert(0, line);
            }
        }
    }

    /// bcftools' `can_merge`: picks the lines still to do that join the first one.
    fn can_merge(&mut self) -> Result<bool> {
        self.als.clear();
        self.var_types = 0;
        let mut todo = 0;
        for inp in &mut self.inputs {
            for line in inp.lines.iter_mut().filter(|l| l.skip & SKIP_DONE == 0) {
                line.skip = SKIP_DIFF;
                todo += 1;
                let t = variant_types(&mut line.rec);
                self.var_types |= if t != 0 { t << 2 } else { 2 };
            }
        }
        if todo == 0 {
            return Ok(false);
        }
        let mut vcmp = Vcmp::default();
        for inp in &mut self.inputs {
            for line in inp.lines.iter_mut() {
                if line.skip & SKIP_DONE != 0 {
                    continue;
                }
                let t = variant_types(&mut line.rec);
                let line_type = if t != 0 { t << 2 } else { 2 };
                let mut alleles: Vec<Vec<u8>> =
                    line.rec.alleles().iter().map(|a| a.to_vec()).collect();
                if self.collapse == Collapse::None && !self.als.is_empty() {
                    if (self.var_types & line_type) != line_type {
                        continue;
                    }
                    if !vcmp.set_ref(&self.als[0], &alleles[0]) {
                        continue;
                    }
                    let k = (1..alleles.len())
                        .find(|&k| vcmp.find_allele(&self.als[1..], &alleles[k]).is_some())
                        .unwrap_or(alleles.len());
                    if line_type & REF_MASK == 0 && k == alleles.len() {
                        continue;
                    }
                }
                if line_type & (INDEL_MASK | INS_MASK | DEL_MASK) != 0
                    && line_type & SNP_MASK == 0
                    && self.var_types & SNP_MASK != 0
                {
                    continue; // SNPs come first
                }
                line.skip = 0;
                if self.als.is_empty() {
                    line.map = (0..alleles.len()).collect();
                    if self.cnt.len() < alleles.len() {
                        self.cnt.resize(alleles.len(), 0);
                    }
                    self.cnt[..alleles.len()].fill(1);
                    self.als = alleles;
                    continue;
                }
                let cased = alleles.clone();
                if merge_alleles(&mut alleles, &mut line.map, &mut self.als).is_none() {
                    return Err(Error::Record {
                        path: inp.path.clone(),
                        record: line.number,
                        locus: locus_of(&line.rec),
                        msg: "its REF disagrees with another input's at this position: \
                              the inputs are not of the same reference"
                            .into(),
                    });
                }
                // bcftools upper-cases the line's own alleles (`line->d.allele`, in
                // place) when its REF differs from the others' in case only: later
                // rounds at this position, and the record's output, see them so.
                if alleles != cased {
                    let refs: Vec<&[u8]> = alleles.iter().map(Vec::as_slice).collect();
                    line.rec
                        .set_alleles(&refs)
                        .map_err(|e| Error::Internal(format!("cannot set alleles ({e})")))?;
                }
                if self.cnt.len() < self.als.len() {
                    self.cnt.resize(self.als.len(), 0);
                }
                for k in 1..alleles.len() {
                    self.cnt[line.map[k]] += 1;
                }
                self.cnt[0] += 1;
            }
        }
        Ok(true)
    }

    /// bcftools' `stage_line`: per input, the line that goes into the next record.
    fn stage_line(&mut self) {
        let nals = self.als.len();
        let mut icnt = 1;
        for i in 2..nals {
            if self.cnt[i] > self.cnt[icnt] {
                icnt = i;
            }
        }
        let var_types = self.var_types;
        for inp in &mut self.inputs {
            inp.cur = None;
            let found = inp.lines.iter().position(|l| {
                l.skip == 0 && ((nals == 1 && l.rec.allele_count() == 1) || l.map.contains(&icnt))
            });
            let found = match (found, self.collapse) {
                (Some(j), _) => Some(j),
                (None, Collapse::None) => None,
                (None, Collapse::Both) => inp.lines.iter_mut().position(|l| {
                    if l.skip != 0 {
                        return false;
                    }
                    let t = variant_types(&mut l.rec);
                    let snp = htslib::VCF_SNP as i32;
                    let indel = htslib::VCF_INDEL as i32;
                    if var_types & SNP_MASK != 0 && t & snp != 0 {
                        return true;
                    }
                    if var_types & INDEL_MASK != 0 && t & indel != 0 {
                        return true;
                    }
                    if t == htslib::VCF_REF as i32 {
                        return var_types & (SNP_MASK | INDEL_MASK | REF_MASK) != 0;
                    }
                    // bcftools tests the unshifted type against the shifted masks here.
                    var_types & REF_MASK != 0 && t & (SNP_MASK | INDEL_MASK) != 0
                }),
            };
            if let Some(j) = found {
                inp.cur = Some(j);
                inp.lines[j].skip = SKIP_DONE;
            }
        }
    }

    /// bcftools' `merge_line`: the staged lines joined into one record.
    fn merge_line(&mut self) -> Result<bcf::Record> {
        let mut out = bcf::Record::new(self.out_hdr.clone());
        let hdr = hp(&self.out_hdr);
        let o = out.inner;
        // CHROM, POS, ID, QUAL and the alleles used.
        let mut ids: Vec<Vec<u8>> = Vec::new();
        let mut qual: Option<f32> = None;
        let mut used = vec![false; self.als.len()];
        let mut first = None;
        for inp in &self.inputs {
            let Some(j) = inp.cur else { continue };
            let line = &inp.lines[j];
            let rec = &line.rec;
            for k in 1..rec.allele_count() as usize {
                used[line.map[k]] = true;
            }
            if first.is_none() {
                first = Some((inp.rid_out[rec.rid().unwrap_or(0) as usize], rec.pos()));
            }
            let id = rec.id();
            if id != b"." && !ids.contains(&id) {
                ids.push(id);
            }
            let q = rec.qual();
            if q.to_bits() != FLOAT_MISSING && qual.is_none_or(|x| x < q) {
                qual = Some(q);
            }
        }
        let (rid, pos) = first.expect("a line is staged");
        // Merged allele indexes renumbered over the alleles used.
        let mut renumber = vec![0usize; self.als.len()];
        let mut out_als = vec![self.als[0].clone()];
        for i in 1..self.als.len() {
            if used[i] {
                renumber[i] = out_als.len();
                out_als.push(self.als[i].clone());
            }
        }
        for inp in &mut self.inputs {
            let Some(j) = inp.cur else { continue };
            let line = &mut inp.lines[j];
            for k in 1..line.map.len() {
                line.map[k] = renumber[line.map[k]];
            }
        }
        normalize_alleles(&mut out_als);
        out.set_rid(Some(rid as u32));
        out.set_pos(pos);
        let id = match ids.is_empty() {
            true => b".".to_vec(),
            false => ids.join(&b';'),
        };
        let _ = out.set_id(&id);
        match qual {
            Some(q) => out.set_qual(q),
            None => out.set_qual(f32::from_bits(FLOAT_MISSING)),
        }
        let als: Vec<&[u8]> = out_als.iter().map(Vec::as_slice).collect();
        out.set_alleles(&als)
            .map_err(|e| self.fail(&format!("cannot set the alleles ({e})")))?;
        let n_out = out_als.len();

        // FILTER: joined, PASS dropped beside others.
        let mut flt: Vec<i32> = Vec::new();
        for inp in &self.inputs {
            let Some(j) = inp.cur else { continue };
            let rec = &inp.lines[j].rec;
            let ih = hp(rec.header());
            for f in rec.filters() {
                // SAFETY: `ih` and `hdr` are live; the id is checked against `ih`.
                let id = unsafe {
                    let name =
                        declared_tag(ih, hdr, f.0 as i32, htslib::BCF_HL_FLT).map_err(|msg| {
                            Error::Record {
                                path: inp.path.clone(),
                                record: inp.lines[j].number,
                                locus: locus_of(rec),
                                msg: name_the_tag(msg, &inp.path, rec, htslib::BCF_HL_FLT),
                            }
                        })?;
                    htslib::bcf_hdr_id2int(hdr, htslib::BCF_DT_ID as i32, c(&name).as_ptr())
                };
                if id >= 0 && !flt.contains(&id) {
                    flt.push(id);
                }
            }
        }
        if flt.len() > 1 {
            // SAFETY: `hdr` is live.
            let pass = unsafe {
                htslib::bcf_hdr_id2int(hdr, htslib::BCF_DT_ID as i32, c(b"PASS").as_ptr())
            };
            if let Some(p) = flt.iter().position(|&f| f == pass) {
                flt.remove(p);
            }
        }
        // SAFETY: `o` is live and `flt` holds `flt.len()` of `hdr`'s filter ids.
        unsafe { htslib::bcf_update_filter(hdr, o, flt.as_mut_ptr(), flt.len() as i32) };

        self.merge_info(&mut out, n_out)?;
        self.merge_format(&mut out, n_out)?;
        crate::subset::trim_widths(&mut out, &self.out_hdr, &self.schema);
        Ok(out)
    }

    fn fail(&self, msg: &str) -> Error {
        Error::Inputs(format!("--merge: {msg}"))
    }

    fn merge_info(&mut self, out: &mut bcf::Record, n_out: usize) -> Result<()> {
        let hdr = hp(&self.out_hdr);
        let o = out.inner;
        let mut seen: Vec<Vec<u8>> = Vec::new();
        // Number=A/R/G tags: (tag, header type, values or text).
        struct Agr {
            tag: Vec<u8>,
            ht: u32,
            vals: Vec<i32>,
            text: Vec<u8>,
        }
        let mut agr: Vec<Agr> = Vec::new();
        let mut sums: Vec<(usize, Vec<i32>, usize, bool)> = Vec::new(); // (rule, vals, block, float)
        for inp in &self.inputs {
            let Some(j) = inp.cur else { continue };
            let line = &inp.lines[j];
            let rec = line.rec.inner;
            let ih = hp(line.rec.header());
            // SAFETY: the record and its header are live; info entries are read within
            // `n_info` and their `len` values of `type_`.
            unsafe {
                htslib::bcf_unpack(rec, htslib::BCF_UN_INFO as i32);
                for k in 0..(*rec).n_info() as usize {
                    let info = &*(*rec).d.info.add(k);
                    if info.vptr.is_null() {
                        continue;
                    }
                    let key =
                        declared_tag(ih, hdr, info.key, htslib::BCF_HL_INFO).map_err(|msg| {
                            Error::Record {
                                path: inp.path.clone(),
                                record: line.number,
                                locus: locus_of(&line.rec),
                                msg: name_the_tag(msg, &inp.path, &line.rec, htslib::BCF_HL_INFO),
                            }
                        })?;
                    let summed = |t: &[u8]| self.sum_rules.iter().any(|r| r.as_bytes() == t);
                    if (key == b"AC" || key == b"AN") && !summed(&key) {
                        continue; // counted again from the merged genotypes
                    }
                    let ck = c(&key);
                    let oid = htslib::bcf_hdr_id2int(hdr, htslib::BCF_DT_ID as i32, ck.as_ptr());
                    if oid < 0 {
                        continue;
                    }
                    let len = id_length(ih, htslib::BCF_HL_INFO, info.key);
                    let ty = info.type_ as u32;
                    let n = info.len as usize;
                    let float = ty == htslib::BCF_BT_FLOAT;
                    if let Some(r) = self.sum_rules.iter().position(|t| t.as_bytes() == key) {
                        if ty == htslib::BCF_BT_CHAR || n == 0 {
                            continue;
                        }
                        let mut v = widen(ty, info.vptr, n);
                        let mut n = n;
                        if matches!(len, VL_A | VL_R | VL_G) {
                            // Placed by allele, as bcftools' rules place them.
                            let nal = line.rec.allele_count() as usize;
                            let map = &line.map;
                            let (size, slots): (usize, Vec<usize>) = match len {
                                VL_A => (n_out - 1, (1..nal).map(|i| map[i] - 1).collect()),
                                VL_R => (n_out, (0..nal).map(|i| map[i]).collect()),
                                _ if n == nal => (n_out, (0..nal).map(|i| map[i]).collect()),
                                _ => (
                                    n_out * (n_out + 1) / 2,
                                    (0..nal)
                                        .flat_map(|i| (0..=i).map(move |j| (i, j)))
                                        .map(|(i, j)| alleles2gt(map[i], map[j]))
                                        .collect(),
                                ),
                            };
                            if v.len() != slots.len() {
                                return Err(Error::Record {
                                    path: inp.path.clone(),
                                    record: line.number,
                                    locus: locus_of(&line.rec),
                                    msg: format!(
                                        "INFO/{} has {} values, not the {} its Number and the \
                                         alleles call for",
                                        String::from_utf8_lossy(&key),
                                        v.len(),
                                        slots.len()
                                    ),
                                });
                            }
                            let mut block = vec![missing(float); size];
                            for (x, s) in v.iter().zip(slots) {
                                block[s] = *x;
                            }
                            (v, n) = (block, size);
                        }
                        match sums.iter_mut().find(|s| s.0 == r) {
                            None => sums.push((r, v, n, float)),
                            Some(s) => {
                                if n != s.2 {
                                    return Err(Error::Record {
                                        path: inp.path.clone(),
                                        record: line.number,
                                        locus: locus_of(&line.rec),
                                        msg: format!(
                                            "INFO/{} has {n} values where an earlier input has \
                                             {}: they cannot be summed",
                                            String::from_utf8_lossy(&key),
                                            s.2
                                        ),
                                    });
                                }
                                s.1.extend(v);
                            }
                        }
                        continue;
                    }
                    if matches!(len, VL_A | VL_G | VL_R) {
                        let nvals = match len {
                            VL_A => n_out - 1,
                            VL_G => n_out * (n_out + 1) / 2,
                            _ => n_out,
                        };
                        let ht = (((*(*(*ih).id[htslib::BCF_DT_ID as usize]
                            .add(info.key as usize))
                        .val)
                            .info[htslib::BCF_HL_INFO as usize]
                            >> 4)
                            & 0xf) as u32;
                        let idx = match agr.iter().position(|a| a.tag == key) {
                            Some(i) => i,
                            None => {
                                let text = match ty == htslib::BCF_BT_CHAR {
                                    true => {
                                        let mut t = b".".to_vec();
                                        for _ in 1..nvals {
                                            t.extend_from_slice(b",.");
                                        }
                                        t
                                    }
                                    false => Vec::new(),
                                };
                                agr.push(Agr {
                                    tag: key.clone(),
                                    ht,
                                    vals: vec![missing(float); nvals],
                                    text,
                                });
                                agr.len() - 1
                            }
                        };
                        let a = &mut agr[idx];
                        let nal = line.rec.allele_count() as usize;
                        if ty == htslib::BCF_BT_CHAR {
                            let src = std::slice::from_raw_parts(info.vptr, n);
                            let ok = match len {
                                VL_G => (0..nal).all(|i| {
                                    (0..=i).all(|j| {
                                        copy_string_field(
                                            src,
                                            i * (i + 1) / 2 + j,
                                            &mut a.text,
                                            alleles2gt(line.map[i], line.map[j]),
                                        )
                                    })
                                }),
                                _ => {
                                    let from = (len == VL_A) as usize;
                                    (from..nal).all(|i| {
                                        copy_string_field(
                                            src,
                                            i - from,
                                            &mut a.text,
                                            line.map[i] - from,
                                        )
                                    })
                                }
                            };
                            if !ok {
                                return Err(Error::Record {
                                    path: inp.path.clone(),
                                    record: line.number,
                                    locus: locus_of(&line.rec),
                                    msg: format!(
                                        "INFO/{}: wrong number of fields for its Number",
                                        String::from_utf8_lossy(&key)
                                    ),
                                });
                            }
                            continue;
                        }
                        let src = widen(ty, info.vptr, n);
                        match len {
                            VL_A | VL_R => {
                                let from = (len == VL_A) as usize;
                                for (s, i) in (from..nal).enumerate() {
                                    let Some(&v) = src.get(s) else { break };
                                    if is_end(v, float) || is_missing(v, float) {
                                        break; // bcftools stops at the first missing value
                                    }
                                    if let Some(t) = a.vals.get_mut(line.map[i] - from) {
                                        *t = v;
                                    }
                                }
                            }
                            _ => place_by_genotype(&src, nal, &line.map, float, false, &mut a.vals),
                        }
                        continue;
                    }
                    if seen.contains(&key) {
                        continue;
                    }
                    seen.push(key.clone());
                    // The first input's value, as it is.
                    let (p, n, ht) = match ty {
                        _ if n == 0 => (std::ptr::null::<u8>(), 1usize, htslib::BCF_HT_FLAG),
                        htslib::BCF_BT_CHAR => (info.vptr as *const u8, n, htslib::BCF_HT_STR),
                        _ => {
                            let v = widen(ty, info.vptr, n);
                            let ht = match float {
                                true => htslib::BCF_HT_REAL,
                                false => htslib::BCF_HT_INT,
                            };
                            let rc = htslib::bcf_update_info(
                                hdr,
                                o,
                                ck.as_ptr(),
                                v.as_ptr() as *const _,
                                n as i32,
                                ht as i32,
                            );
                            let _ = rc;
                            continue;
                        }
                    };
                    if ht == htslib::BCF_HT_STR {
                        let s = std::slice::from_raw_parts(p, n);
                        let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(n)];
                        let cs = c(s);
                        htslib::bcf_update_info(
                            hdr,
                            o,
                            ck.as_ptr(),
                            cs.as_ptr() as *const _,
                            1,
                            ht as i32,
                        );
                    } else {
                        let one: i32 = 1;
                        htslib::bcf_update_info(
                            hdr,
                            o,
                            ck.as_ptr(),
                            &one as *const i32 as *const _,
                            1,
                            ht as i32,
                        );
                    }
                }
            }
        }
        for (r, vals, block, float) in sums {
            let blocks = vals.len() / block.max(1);
            let mut acc = vec![0i32; block];
            let mut accf = vec![0f32; block];
            for b in 0..blocks {
                for j in 0..block {
                    let v = vals[b * block + j];
                    if float {
                        let f = if is_missing(v, true) {
                            0.0
                        } else {
                            f32::from_bits(v as u32)
                        };
                        accf[j] += f;
                    } else {
                        let x = if v == INT_MISSING { 0 } else { v };
                        acc[j] = acc[j].wrapping_add(x);
                    }
                }
            }
            let (values, ht) = match float {
                true => (
                    accf.as_ptr() as *const std::ffi::c_void,
                    htslib::BCF_HT_REAL,
                ),
                false => (acc.as_ptr() as *const std::ffi::c_void, htslib::BCF_HT_INT),
            };
            // SAFETY: `o` is live; `values` holds `block` numbers of the type named.
            unsafe {
                htslib::bcf_update_info(
                    hdr,
                    o,
                    self.sum_rules[r].as_ptr(),
                    values,
                    block as i32,
                    ht as i32,
                );
            }
        }
        for a in agr {
            let ck = c(&a.tag);
            // SAFETY: `o` is live; the values match the type and count given.
            unsafe {
                if a.ht == htslib::BCF_HT_STR {
                    let cs = c(&a.text);
                    htslib::bcf_update_info(
                        hdr,
                        o,
                        ck.as_ptr(),
                        cs.as_ptr() as *const _,
                        1,
                        a.ht as i32,
                    );
                } else {
                    htslib::bcf_update_info(
                        hdr,
                        o,
                        ck.as_ptr(),
                        a.vals.as_ptr() as *const _,
                        a.vals.len() as i32,
                        a.ht as i32,
                    );
                }
            }
        }
        Ok(())
    }

    fn merge_format(&mut self, out: &mut bcf::Record, n_out: usize) -> Result<()> {
        let hdr = hp(&self.out_hdr);
        let o = out.inner;
        let ns_out = self.schema.samples.len();
        // The tags in the order first met (GT first), and per input its field.
        let mut tags: Vec<Vec<u8>> = Vec::new();
        let mut has_gt = false;
        for inp in &self.inputs {
            let Some(j) = inp.cur else { continue };
            let rec = inp.lines[j].rec.inner;
            let ih = hp(inp.lines[j].rec.header());
            // SAFETY: the record and header are live; fmt entries read within n_fmt.
            unsafe {
                htslib::bcf_unpack(rec, htslib::BCF_UN_FMT as i32);
                for k in 0..(*rec).n_fmt() as usize {
                    let f = &*(*rec).d.fmt.add(k);
                    let key = declared_tag(ih, hp(&self.out_hdr), f.id, htslib::BCF_HL_FMT)
                        .map_err(|msg| Error::Record {
                            path: inp.path.clone(),
                            record: inp.lines[j].number,
                            locus: locus_of(&inp.lines[j].rec),
                            msg: name_the_tag(
                                msg,
                                &inp.path,
                                &inp.lines[j].rec,
                                htslib::BCF_HL_FMT,
                            ),
                        })?;
                    if key == b"GT" {
                        has_gt = true;
                    } else if !tags.contains(&key) {
                        tags.push(key);
                    }
                }
            }
        }
        // SAFETY: `o` is live.
        unsafe { (*o).set_n_sample(ns_out as u32) };
        // AC and AN from the merged genotypes (counted as htslib's bcf_calc_ac counts,
        // which would exit the process on an allele past the record's).
        if has_gt {
            let ac = self.merge_gt(out, n_out)?;
            // SAFETY: `o` is live with `n_out` alleles; `ac` holds one count for each.
            unsafe {
                let an: i32 = ac.iter().sum();
                htslib::bcf_update_info(
                    hdr,
                    o,
                    c(b"AN").as_ptr(),
                    &an as *const i32 as *const _,
                    1,
                    htslib::BCF_HT_INT as i32,
                );
                htslib::bcf_update_info(
                    hdr,
                    o,
                    c(b"AC").as_ptr(),
                    ac[1..].as_ptr() as *const _,
                    (n_out - 1) as i32,
                    htslib::BCF_HT_INT as i32,
                );
            }
        }
        for tag in tags {
            self.merge_field(out, &tag, n_out)?;
        }
        Ok(())
    }

    /// The field `tag` of input `i`'s staged line: (type, values per sample, raw).
    fn field(&self, i: usize, tag: &[u8]) -> Option<(u32, usize, usize, *const u8, i32)> {
        let inp = &self.inputs[i];
        let line = &inp.lines[inp.cur?];
        let ih = hp(line.rec.header());
        // SAFETY: the record and header are live.
        unsafe {
            let f = htslib::bcf_get_fmt(ih, line.rec.inner, c(tag).as_ptr());
            if f.is_null() || (*f).p.is_null() {
                return None;
            }
            Some((
                (*f).type_ as u32,
                (*f).n as usize,
                (*f).size as usize,
                (*f).p,
                (*f).id,
            ))
        }
    }

    /// The merged GT (bcftools' `merge_GT`) into `out`; returns the count of each of
    /// the `n_out` alleles.
    fn merge_gt(&mut self, out: &mut bcf::Record, n_out: usize) -> Result<Vec<i32>> {
        let mut nsize = 0usize;
        let mut fields = Vec::new();
        for i in 0..self.inputs.len() {
            let f = self.field(i, b"GT");
            if let Some((ty, n, _, p, _)) = f {
                // SAFETY: `p` holds `n` values of `ty` per sample.
                let v = unsafe { widen(ty, p, n * self.inputs[i].samples) };
                let used = v
                    .chunks(n.max(1))
                    .map(|s| s.iter().take_while(|&&x| x != INT_END).count())
                    .max()
                    .unwrap_or(0);
                nsize = nsize.max(used);
                fields.push(Some((v, n)));
            } else {
                fields.push(None);
            }
        }
        let nsize = nsize.max(1);
        let mut ac = vec![0i32; n_out];
        self.ploidy.iter_mut().for_each(|p| *p = 0);
        // Written in place (every call's values, then its vector end), not pushed: this
        // runs for every allele of every sample.
        let mut gt = vec![INT_END; nsize * self.schema.samples.len()];
        let mut s0 = 0;
        for (i, f) in fields.into_iter().enumerate() {
            let ns = self.inputs[i].samples;
            let Some((v, n)) = f else {
                gt[s0 * nsize..(s0 + ns) * nsize].fill(0);
                self.ploidy[s0..s0 + ns].fill(nsize as i32);
                s0 += ns;
                continue;
            };
            let map = self.inputs[i].cur.map(|j| &self.inputs[i].lines[j].map);
            let differ = map.is_some_and(|m| m.iter().enumerate().skip(1).any(|(k, &x)| x != k));
            for s in 0..ns {
                let src = &v[s * n..(s + 1) * n];
                let dst = &mut gt[(s0 + s) * nsize..(s0 + s + 1) * nsize];
                let mut k = 0;
                // (No sample holds more than `nsize` values before its vector end.)
                for (&x, d) in src.iter().zip(dst.iter_mut()) {
                    if x == INT_END {
                        break;
                    }
                    let y = match (x >> 1) == 0 {
                        true => 0,
                        false if !differ => x,
                        false => {
                            let al = (x >> 1) - 1;
                            let al = match al <= 0 {
                                true => al + 1,
                                false => {
                                    map.and_then(|m| m.get(al as usize))
                                        .map_or(al, |&m| m as i32)
                                        + 1
                                }
                            };
                            (al << 1) | (x & 1)
                        }
                    };
                    if y >> 1 != 0 {
                        match ac.get_mut(((y >> 1) - 1) as usize) {
                            Some(c) => *c += 1,
                            None => {
                                let inp = &self.inputs[i];
                                let line = &inp.lines[inp.cur.expect("staged")];
                                return Err(Error::Record {
                                    path: inp.path.clone(),
                                    record: line.number,
                                    locus: locus_of(&line.rec),
                                    msg: format!(
                                        "sample {} has GT allele {} and the record {} \
                                         alleles: fix the input's genotypes",
                                        s + 1,
                                        (x >> 1) - 1,
                                        line.rec.allele_count()
                                    ),
                                });
                            }
                        }
                    }
                    *d = y;
                    k += 1;
                }
                self.ploidy[s0 + s] += k;
            }
            s0 += ns;
        }
        out.push_format_integer(b"GT", &gt)
            .map_err(|e| self.fail(&format!("cannot set FORMAT/GT ({e})")))?;
        Ok(ac)
    }

    fn merge_field(&mut self, out: &mut bcf::Record, tag: &[u8], n_out: usize) -> Result<()> {
        let ih_len = |i: usize, id: i32| {
            let ih = hp(self.inputs[i].lines[self.inputs[i].cur.expect("staged")]
                .rec
                .header());
            // SAFETY: `id` is one of this input header's ids.
            unsafe { id_length(ih, htslib::BCF_HL_FMT, id) }
        };
        let mut length = 0u32;
        let mut nsize = 0usize;
        let mut ty = u32::MAX;
        for i in 0..self.inputs.len() {
            let Some((t, n, _, _, id)) = self.field(i, tag) else {
                continue;
            };
            ty = t;
            let l = ih_len(i, id);
            match l {
                VL_G => {
                    length = VL_G;
                    nsize = n_out * (n_out + 1) / 2;
                    break;
                }
                VL_A => {
                    length = VL_A;
                    nsize = n_out - 1;
                    break;
                }
                VL_R => {
                    length = VL_R;
                    nsize = n_out;
                    break;
                }
                _ => nsize = nsize.max(n),
            }
        }
        if ty == htslib::BCF_BT_CHAR {
            return self.merge_strings(out, tag, length, nsize);
        }
        let ns_out = self.schema.samples.len();
        let mut tmp = vec![0i32; ns_out * nsize];
        let mut float = false;
        let mut s0 = 0;
        for i in 0..self.inputs.len() {
            let ns = self.inputs[i].samples;
            let Some((t, n, _, p, _)) = self.field(i, tag) else {
                float = float || ty == htslib::BCF_BT_FLOAT;
                for s in 0..ns {
                    let row = &mut tmp[(s0 + s) * nsize..(s0 + s + 1) * nsize];
                    row.fill(end(ty == htslib::BCF_BT_FLOAT));
                    if let Some(x) = row.first_mut() {
                        *x = missing(ty == htslib::BCF_BT_FLOAT);
                    }
                }
                s0 += ns;
                continue;
            };
            float = t == htslib::BCF_BT_FLOAT;
            let line = &self.inputs[i].lines[self.inputs[i].cur.expect("staged")];
            let nal = line.rec.allele_count() as usize;
            let bad = |what: &str| Error::Record {
                path: self.inputs[i].path.clone(),
                record: line.number,
                locus: locus_of(&line.rec),
                msg: format!(
                    "FORMAT/{} has {n} values where Number={what} and {nal} alleles call for \
                     another count: --merge cannot place them (fix the field, or drop it with \
                     `bcftools annotate -x FORMAT/{}`)",
                    String::from_utf8_lossy(tag),
                    String::from_utf8_lossy(tag)
                ),
            };
            match length {
                VL_G if n != 1 && n != nal * (nal + 1) / 2 && n != nal => return Err(bad("G")),
                VL_A if n != 1 && n != nal - 1 => return Err(bad("A")),
                VL_R if n != 1 && n != nal => return Err(bad("R")),
                _ => {}
            }
            // SAFETY: `p` holds `n` values of `t` per sample.
            let v = unsafe { widen(t, p, n * ns) };
            let map = &line.map;
            let differ = map.iter().enumerate().skip(1).any(|(k, &x)| x != k);
            let (mis, fill) = (missing(float), end(float));
            let allelic = matches!(length, VL_G | VL_A | VL_R);
            for s in 0..ns {
                let src = &v[s * n..(s + 1) * n];
                let row = &mut tmp[(s0 + s) * nsize..(s0 + s + 1) * nsize];
                if !allelic || (nal == n_out && !differ) {
                    let mut l = 0;
                    while l < n && l < nsize {
                        if is_end(src[l], float) {
                            break;
                        }
                        row[l] = if is_missing(src[l], float) {
                            mis
                        } else {
                            src[l]
                        };
                        l += 1;
                    }
                    row[l..].fill(fill);
                    continue;
                }
                if nsize == 0 {
                    continue;
                }
                if (is_missing(src[0], float) && n == 1) || (n >= 2 && is_end(src[1], float)) {
                    row.fill(fill);
                    row[0] = mis;
                    continue;
                }
                if length == VL_G {
                    let haploid = self.ploidy[s0 + s] == 1;
                    let ng = if haploid {
                        n_out
                    } else {
                        n_out * (n_out + 1) / 2
                    };
                    row[..ng.min(nsize)].fill(mis);
                    row[ng.min(nsize)..].fill(fill);
                    if haploid {
                        for io in 0..nal {
                            let Some(&x) = src.get(io) else { break };
                            if is_end(x, float) {
                                break;
                            }
                            row[map[io]] = if is_missing(x, float) { mis } else { x };
                        }
                    } else {
                        place_by_genotype(src, nal, map, float, true, row);
                    }
                } else {
                    let from = (length == VL_A) as usize;
                    row.fill(mis);
                    for (k, io) in (from..nal).enumerate() {
                        let Some(&x) = src.get(k) else { break };
                        if is_end(x, float) {
                            break;
                        }
                        row[map[io] - from] = if is_missing(x, float) { mis } else { x };
                    }
                }
            }
            s0 += ns;
        }
        let r = match float {
            true => {
                let f: Vec<f32> = tmp.iter().map(|&x| f32::from_bits(x as u32)).collect();
                out.push_format_float(tag, &f)
            }
            false => out.push_format_integer(tag, &tmp),
        };
        r.map_err(|e| {
            self.fail(&format!(
                "cannot set FORMAT/{} ({e})",
                String::from_utf8_lossy(tag)
            ))
        })
    }

    fn merge_strings(
        &mut self,
        out: &mut bcf::Record,
        tag: &[u8],
        length: u32,
        nsize: usize,
    ) -> Result<()> {
        let ns_out = self.schema.samples.len();
        let init = match length {
            0 | VL_VAR => b".".to_vec(),
            _ => {
                let mut t = b".".to_vec();
                for _ in 1..nsize {
                    t.extend_from_slice(b",.");
                }
                t
            }
        };
        let mut strs = vec![init; ns_out];
        let mut s0 = 0;
        let n_out = out.allele_count() as usize;
        for i in 0..self.inputs.len() {
            let ns = self.inputs[i].samples;
            let Some((_, n, size, p, _)) = self.field(i, tag) else {
                s0 += ns;
                continue;
            };
            let line = &self.inputs[i].lines[self.inputs[i].cur.expect("staged")];
            let nal = line.rec.allele_count() as usize;
            let differ = line.map.iter().enumerate().skip(1).any(|(k, &x)| x != k);
            // SAFETY: `p` holds `size` bytes per sample.
            let raw = unsafe { std::slice::from_raw_parts(p, size * ns) };
            for s in 0..ns {
                let src = &raw[s * size..s * size + n.min(size)];
                let dst = &mut strs[s0 + s];
                if matches!(length, 0 | VL_VAR) || (nal == n_out && !differ) {
                    *dst = src.to_vec();
                    continue;
                }
                if length == VL_G {
                    return Err(Error::Record {
                        path: self.inputs[i].path.clone(),
                        record: line.number,
                        locus: locus_of(&line.rec),
                        msg: format!(
                            "FORMAT/{} is a Number=G string, which bcftools merge cannot join \
                             across alleles either (drop it with `bcftools annotate -x`)",
                            String::from_utf8_lossy(tag)
                        ),
                    });
                }
                let from = (length == VL_A) as usize;
                for io in from..nal {
                    copy_string_field(src, io - from, dst, line.map[io] - from);
                }
            }
            s0 += ns;
        }
        let refs: Vec<&[u8]> = strs
            .iter()
            .map(|s| &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())])
            .collect();
        out.push_format_string(tag, &refs).map_err(|e| {
            self.fail(&format!(
                "cannot set FORMAT/{} ({e})",
                String::from_utf8_lossy(tag)
            ))
        })
    }
}

/// The most input handles a parallel merge opens in all (workers x inputs): well under
/// the usual 1024 open files, and ~70 MiB of htslib read buffers.
const MAX_OPEN_INPUTS: usize = 512;

/// Records a worker sends in one message.
const SENT_TOGETHER: usize = 64;

/// What a worker sends for its contig.
enum Msg {
    /// Records in order (sent [`SENT_TOGETHER`] at a time: one message per record
    /// costs the handing thread more than the records), and the bytes counted for
    /// them against the queues' limit.
    Records(Vec<bcf::Record>, u64),
    Failed(Error),
    /// The contig is complete (a channel closed without it: the worker died).
    Done,
}

/// Bytes a merged record holds (its packed data, doubled for what htslib keeps
/// unpacked beside it): what the queues count.
fn record_bytes(r: &bcf::Record) -> u64 {
    let i = r.inner();
    2 * (i.shared.m + i.indiv.m) as u64 + 256
}

/// What the workers' queued records may hold in all: `limit` bytes, except that the
/// contig being handed out may always queue a message when nothing of it is queued
/// (so the records the caller waits for are never held back by later contigs').
struct QueueGate {
    limit: u64,
    queued: std::sync::atomic::AtomicU64,
    /// Per contig: bytes of its records queued.
    per_contig: Vec<std::sync::atomic::AtomicU64>,
    /// The contig being handed out.
    at: std::sync::atomic::AtomicUsize,
}

impl QueueGate {
    /// Waits until contig `c` may queue `bytes` more (or `stop`), and counts them.
    fn admit(&self, c: usize, bytes: u64, stop: &std::sync::atomic::AtomicBool) {
        use std::sync::atomic::Ordering::{Relaxed, SeqCst};
        loop {
            let queued = self.queued.load(SeqCst);
            let open = queued + bytes <= self.limit
                || (c == self.at.load(SeqCst) && self.per_contig[c].load(SeqCst) == 0);
            if open || stop.load(Relaxed) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.queued.fetch_add(bytes, SeqCst);
        self.per_contig[c].fetch_add(bytes, SeqCst);
    }

    /// Contig `c`'s `bytes` were taken off its queue.
    fn release(&self, c: usize, bytes: u64) {
        use std::sync::atomic::Ordering::SeqCst;
        self.queued.fetch_sub(bytes, SeqCst);
        self.per_contig[c].fetch_sub(bytes, SeqCst);
    }
}

/// The most bytes of merged records the workers queue by default (`convert` sizes it
/// from what `--max-mem` leaves).
pub const DEFAULT_QUEUE_BYTES: u64 = 64 << 20;

/// Indexed inputs merged by `merge-K` worker threads, one contig at a time each (in
/// the synced order, the next free contig to the next free worker), the records
/// handed out contig by contig in order: the merge's work spreads over the workers,
/// the caller's thread only takes records. The records waiting in the contigs' queues
/// hold at most the queue bytes given (plus one message of the contig being handed
/// out), so memory stays bounded whatever the contig sizes and however many finish
/// ahead.
pub struct ParallelMerge {
    main: Merger,
    queues: Vec<crossbeam_channel::Receiver<Msg>>,
    at: usize,
    /// The records of the message being handed out.
    pending: std::vec::IntoIter<bcf::Record>,
    current: bcf::Record,
    made: u64,
    stop: Arc<std::sync::atomic::AtomicBool>,
    gate: Arc<QueueGate>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl ParallelMerge {
    /// `main` (opened) gives the header; `workers` more mergers are opened for the
    /// threads. `None` when the inputs are not all indexed or there is one contig.
    fn start(
        main: Merger,
        paths: &[PathBuf],
        req: MergeRequest,
        workers: usize,
        queue_bytes: u64,
    ) -> Result<std::result::Result<ParallelMerge, Merger>> {
        let Some(n) = main.contig_count().filter(|&n| n > 1 && workers > 1) else {
            return Ok(Err(main));
        };
        // Every worker opens every input: keep the open files (and their read buffers,
        // ~130 KiB each) to [`MAX_OPEN_INPUTS`] in all.
        let workers = workers.min(n).min((MAX_OPEN_INPUTS / paths.len()).max(1));
        if workers < 2 {
            return Ok(Err(main));
        }
        let mut mergers = Vec::with_capacity(workers);
        for _ in 0..workers {
            mergers.push(Merger::open(paths, req)?);
        }
        // The gate bounds the bytes queued; the channels only the messages.
        let gate = Arc::new(QueueGate {
            limit: queue_bytes,
            queued: Default::default(),
            per_contig: (0..n).map(|_| Default::default()).collect(),
            at: Default::default(),
        });
        let (senders, queues): (Vec<_>, Vec<_>) = (0..n)
            .map(|_| crossbeam_channel::bounded::<Msg>(64))
            .unzip();
        let senders: Arc<Vec<std::sync::Mutex<Option<crossbeam_channel::Sender<Msg>>>>> = Arc::new(
            senders
                .into_iter()
                .map(|s| std::sync::Mutex::new(Some(s)))
                .collect(),
        );
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut handles = Vec::with_capacity(workers);
        for (k, mut m) in mergers.into_iter().enumerate() {
            let (senders, next, stop, gate) =
                (senders.clone(), next.clone(), stop.clone(), gate.clone());
            let work = move || {
                use std::sync::atomic::Ordering::Relaxed;
                loop {
                    let c = next.fetch_add(1, Relaxed);
                    if c >= n || stop.load(Relaxed) {
                        return;
                    }
                    let Some(tx) = senders[c].lock().map(|mut s| s.take()).unwrap_or(None) else {
                        return;
                    };
                    let mut batch = Vec::with_capacity(SENT_TOGETHER);
                    let mut bytes = 0;
                    let send = |batch: Vec<bcf::Record>, bytes: u64| {
                        gate.admit(c, bytes, &stop);
                        !stop.load(Relaxed) && tx.send(Msg::Records(batch, bytes)).is_ok()
                    };
                    let merged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        m.merge_contig(c, &mut |rec| {
                            bytes += record_bytes(&rec);
                            batch.push(rec);
                            if batch.len() < SENT_TOGETHER {
                                return true;
                            }
                            let full =
                                std::mem::replace(&mut batch, Vec::with_capacity(SENT_TOGETHER));
                            send(full, std::mem::take(&mut bytes))
                        })
                    }));
                    if !batch.is_empty() && !send(batch, bytes) {
                        return;
                    }
                    let last = match merged {
                        Ok(Ok(())) => Msg::Done,
                        Ok(Err(e)) => Msg::Failed(e),
                        Err(_) => Msg::Failed(Error::Internal(
                            "internal error: a merge worker stopped; nothing was kept — please \
                             report it"
                                .into(),
                        )),
                    };
                    let failed = !matches!(last, Msg::Done);
                    if tx.send(last).is_err() || failed {
                        return;
                    }
                }
            };
            let h = std::thread::Builder::new()
                .name(format!("merge-{k}"))
                .spawn(work)
                .map_err(|e| Error::Internal(format!("cannot start a merge thread: {e}")))?;
            handles.push(h);
        }
        let current = bcf::Record::new(main.out_hdr.clone());
        Ok(Ok(ParallelMerge {
            main,
            queues,
            at: 0,
            pending: Vec::new().into_iter(),
            current,
            made: 0,
            stop,
            gate,
            workers: handles,
        }))
    }

    fn next_record(&mut self) -> Result<Option<(u64, &bcf::Record)>> {
        while self.at < self.queues.len() {
            if let Some(rec) = self.pending.next() {
                self.current = rec;
                self.made += 1;
                return Ok(Some((self.made - 1, &self.current)));
            }
            match self.queues[self.at].recv() {
                Ok(Msg::Records(recs, bytes)) => {
                    // (Counted off as taken: the records handed out one by one are the
                    // caller's batch's now, which the plan charges.)
                    self.gate.release(self.at, bytes);
                    self.pending = recs.into_iter();
                }
                Ok(Msg::Failed(e)) => return Err(e),
                Ok(Msg::Done) => {
                    self.at += 1;
                    self.gate
                        .at
                        .store(self.at, std::sync::atomic::Ordering::SeqCst);
                }
                Err(_) => {
                    return Err(Error::Internal(
                        "internal error: a merge worker ended without finishing its contig; \
                         nothing was kept — please report it"
                            .into(),
                    ))
                }
            }
        }
        Ok(None)
    }
}

impl Drop for ParallelMerge {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // Workers blocked on a full queue wake when it is dropped.
        self.queues.clear();
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

/// A merge as the streaming reader takes it: on its thread, or by workers.
pub enum MergedStream {
    Serial(Box<Merger>),
    Parallel(Box<ParallelMerge>),
}

impl MergedStream {
    /// Opens the inputs (see [`Merger::open`]); with `workers` > 1 and indexed inputs
    /// of more than one contig, the contigs are merged side by side, their queued records
    /// holding at most `queue_bytes`.
    pub fn open(
        paths: &[PathBuf],
        req: MergeRequest,
        workers: usize,
        queue_bytes: u64,
    ) -> Result<MergedStream> {
        let main = Merger::open(paths, req)?;
        Ok(
            match ParallelMerge::start(main, paths, req, workers, queue_bytes)? {
                Ok(p) => MergedStream::Parallel(Box::new(p)),
                Err(m) => MergedStream::Serial(Box::new(m)),
            },
        )
    }

    pub fn schema(&self) -> &Schema {
        match self {
            MergedStream::Serial(m) => &m.schema,
            MergedStream::Parallel(p) => &p.main.schema,
        }
    }

    pub fn header(&self) -> &HeaderView {
        match self {
            MergedStream::Serial(m) => m.header(),
            MergedStream::Parallel(p) => p.main.header(),
        }
    }

    pub fn next_record(&mut self) -> Result<Option<(u64, &bcf::Record)>> {
        match self {
            MergedStream::Serial(m) => m.next_record(),
            MergedStream::Parallel(p) => p.next_record(),
        }
    }
}

/// Refuses an input that declares an INFO or FORMAT field with another Type or Number
/// than the merged header (the first input's): its values would be read as the other
/// type (bcftools merge writes garbage there). A fixed Number where the merged header
/// has `Number=.` and the same Type joins: N values are one of the counts `.` holds,
/// and need no remapping by allele. (bio2zarr 0.2 stores record no Number, so `svar2
/// append` reads their `CIPOS` as `Number=.` while the new samples declare `Number=2`.)
fn check_definitions(
    path: &Path,
    ih: *const htslib::bcf_hdr_t,
    out: *const htslib::bcf_hdr_t,
) -> Result<()> {
    // SAFETY: both headers are live; ids are read within `n` and checked for null.
    unsafe {
        let n = (*ih).n[htslib::BCF_DT_ID as usize].max(0) as usize;
        for id in 0..n {
            let pair = (*ih).id[htslib::BCF_DT_ID as usize].add(id);
            if (*pair).key.is_null() || (*pair).val.is_null() {
                continue;
            }
            for (hl, kind) in [
                (htslib::BCF_HL_INFO, "INFO"),
                (htslib::BCF_HL_FMT, "FORMAT"),
            ] {
                if (*(*pair).val).hrec[hl as usize].is_null() {
                    continue;
                }
                let oid = htslib::bcf_hdr_id2int(out, htslib::BCF_DT_ID as i32, (*pair).key);
                if oid < 0 {
                    continue;
                }
                let opair = (*out).id[htslib::BCF_DT_ID as usize].add(oid as usize);
                if (*opair).val.is_null() || (*(*opair).val).hrec[hl as usize].is_null() {
                    continue;
                }
                // Type, Number kind and number (the column type bits left out).
                let mine = (*(*pair).val).info[hl as usize] >> 4;
                let merged = (*(*opair).val).info[hl as usize] >> 4;
                // (Shifted, htslib's bits are 0-3 Type, 4-7 Number kind, 8- the number.)
                let number_kind = |info: u64| (info >> 4 & 0xf) as u32;
                let fixed_into_dot = mine & 0xf == merged & 0xf
                    && number_kind(mine) == htslib::BCF_VL_FIXED
                    && number_kind(merged) == htslib::BCF_VL_VAR;
                if mine != merged && !fixed_into_dot {
                    let name = CStr::from_ptr((*pair).key).to_string_lossy();
                    return Err(Error::Inputs(format!(
                        "{}: {kind}/{name} is declared {} here and {} in an earlier input (for \
                         append, the store): --merge cannot join its values (make the \
                         ##{kind} lines agree, e.g. with `bcftools reheader -h`, or drop the \
                         field with `bcftools annotate -x {kind}/{name}`; a fixed Number \
                         joins an earlier Number=. of the same Type)",
                        path.display(),
                        declared(mine),
                        declared(merged),
                    )));
                }
            }
        }
    }
    Ok(())
}

/// `Number=…,Type=…` of an INFO/FORMAT declaration from htslib's header bits, shifted
/// past the column type (0-3 Type, 4-7 Number kind, 8- the number).
fn declared(info: u64) -> String {
    let number = match (info >> 4 & 0xf) as u32 {
        htslib::BCF_VL_FIXED => (info >> 8).to_string(),
        htslib::BCF_VL_VAR => ".".into(),
        htslib::BCF_VL_A => "A".into(),
        htslib::BCF_VL_G => "G".into(),
        htslib::BCF_VL_R => "R".into(),
        _ => "?".into(),
    };
    let kind = match (info & 0xf) as u32 {
        htslib::BCF_HT_FLAG => "Flag",
        htslib::BCF_HT_INT => "Integer",
        htslib::BCF_HT_REAL => "Float",
        htslib::BCF_HT_STR => "String",
        _ => "?",
    };
    format!("Number={number},Type={kind}")
}

/// Opens one input: through its index when it has one (`<path>.csi`, or `.tbi` for
/// VCF.gz), else as a stream.
/// The records of indexed `path` before each of its contigs, by name, in the file's
/// order (a tabix index's names; a BCF's header ids), from the index's counts.
fn records_before(path: &Path, header: &HeaderView) -> HashMap<Vec<u8>, u64> {
    let mut out = HashMap::new();
    let Some(index) = crate::index::Index::load(path, crate::index::is_text(path)) else {
        return out;
    };
    let names: Vec<Vec<u8>> = index.tabix_names().unwrap_or_else(|| {
        (0..header.contig_count())
            .map(|t| contig_name(header, t).unwrap_or(b"").to_vec())
            .collect()
    });
    let mut at = 0u64;
    for (tid, name) in names.into_iter().enumerate() {
        out.insert(name, at);
        at += index.records(tid as i32).unwrap_or(0);
    }
    out
}

fn open_input(path: &Path) -> Result<Src> {
    let open_err = |e: rust_htslib::errors::Error| Error::Open {
        path: path.into(),
        msg: format!("not a VCF (plain or bgzipped) or BCF file ({e})"),
    };
    // The header read first, as a conversion reads it: rust-htslib's readers do not
    // check htslib's header for null, and a file without one (no #CHROM line, a
    // plain-gzip VCF cut short, empty, or not VCF beside a stale index) crashed them.
    if crate::fastvcf::TextReader::open(path)?.is_none() {
        use crate::bcf_stream::{BcfStream, OpenError};
        BcfStream::open(path, 0, false).map_err(|e| Error::Open {
            path: path.into(),
            msg: match e {
                OpenError::Damaged(msg) => msg,
                OpenError::NotBcf(e) => format!("not a VCF (plain or bgzipped) or BCF file ({e})"),
            },
        })?;
    }
    let stream = bcf::Reader::from_path(path).map_err(open_err)?;
    if crate::index::index_paths(path)
        .iter()
        .any(|(p, _)| p.is_file())
    {
        if let Ok(r) = bcf::IndexedReader::from_path(path) {
            return Ok(Src::Indexed(r));
        }
    }
    Ok(Src::Stream(stream))
}

/// The contig order htslib's synced reader walks indexed inputs in (bcftools merge's
/// output order): each input's contigs — a VCF.gz's as its tabix index lists them, a
/// BCF's as its header declares them — new names appended in input order. `None`
/// unless every input is indexed (they are then read as streams, in the merged
/// header's contig order).
fn synced_order(inputs: &[Input]) -> Option<Vec<Vec<u8>>> {
    let mut order: Vec<Vec<u8>> = Vec::new();
    for inp in inputs {
        if !matches!(inp.reader, Src::Indexed(_)) {
            return None;
        }
        // (A BCF's CSI is not loaded as tabix: htslib would log a bad index header.)
        let tabix = || crate::index::Index::load(&inp.path, true).and_then(|i| i.tabix_names());
        let names = match is_text(&inp.path).then(tabix).flatten() {
            Some(names) => names,
            None => {
                let h = inp.reader.header();
                (0..h.contig_count())
                    .filter_map(|r| h.rid2name(r).ok().map(<[u8]>::to_vec))
                    .collect()
            }
        };
        for n in names {
            if !order.contains(&n) {
                order.push(n);
            }
        }
    }
    Some(order)
}

/// Whether `path` is VCF text (plain or bgzipped), as htslib detects it.
fn is_text(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a plain open, format read, close; null checked.
    unsafe {
        let fp = htslib::hts_open(c.as_ptr(), c"r".as_ptr());
        if fp.is_null() {
            return false;
        }
        let text = (*htslib::hts_get_format(fp)).format == htslib::htsExactFormat_vcf;
        htslib::hts_close(fp);
        text
    }
}

/// The variant types htslib finds in a record (`bcf_has_variant_types`, overlap match).
fn variant_types(rec: &mut bcf::Record) -> i32 {
    // SAFETY: the record is live and owned.
    let t = unsafe {
        htslib::bcf_has_variant_types(
            rec.inner,
            htslib::VCF_ANY,
            htslib::bcf_variant_match_bcf_match_overlap,
        )
    };
    t.max(0)
}

/// htslib's `bcf_sr_sort` variant-set types.
const SR_REF: u8 = 1;
const SR_SNP: u8 = 2;
const SR_INDEL: u8 = 4;
const SR_OTHER: u8 = 8;

/// One distinct variant at a position (`bcf_sr_sort`'s `var_t`): its key, ALT count,
/// type, and the (input, line) pairs that have it.
struct SortVar {
    key: String,
    nalt: usize,
    kind: u8,
    lines: Vec<(usize, usize)>,
}

/// The line of each input in the first variant set htslib's `bcf_sr_sort_set`
/// builds for a position, as bcftools merge sets it up (pairing logic
/// `BCF_SR_PAIR_EXACT`: bcftools 1.16 leaves the reader's collapse at
/// `COLLAPSE_NONE`): `None` for an input not in it (or without lines). Nothing is
/// reordered unless two inputs have lines here.
fn synced_first_set(lines: &[Vec<&bcf::Record>]) -> Vec<Option<usize>> {
    let mut chosen = vec![None; lines.len()];
    // Only an input of several lines here can be reordered.
    if lines.iter().filter(|l| !l.is_empty()).count() < 2 || lines.iter().all(|l| l.len() < 2) {
        return chosen;
    }
    let mut vars: Vec<SortVar> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    // Per input: its variants (the group key is their sorted keys).
    let mut group_keys: Vec<String> = Vec::new();
    let mut var_groups: Vec<Vec<usize>> = Vec::new();
    for (i, recs) in lines.iter().enumerate() {
        if recs.is_empty() {
            continue;
        }
        let mut mine = Vec::new();
        for (j, rec) in recs.iter().enumerate() {
            let alleles = rec.alleles();
            let mut key = String::new();
            let mut end_pos: Option<i64> = None;
            for (k, alt) in alleles.iter().enumerate().skip(1) {
                if k > 1 {
                    key.push(',');
                }
                key.push_str(&String::from_utf8_lossy(alleles[0]));
                key.push('>');
                key.push_str(&String::from_utf8_lossy(alt));
                if alt.first() == Some(&b'<') {
                    let end = *end_pos.get_or_insert_with(|| info_end(rec));
                    if end != 0 {
                        key.push('/');
                        key.push_str(&end.to_string());
                    }
                }
            }
            if alleles.len() == 1 {
                key.push_str(&String::from_utf8_lossy(alleles[0]));
                key.push_str(">.");
            }
            // The same variant twice in one input: numbered apart.
            let base = key.clone();
            let mut n = 0;
            let ivar = loop {
                match by_key.get(&key) {
                    Some(&v) if vars[v].lines.last().is_some_and(|&(r, _)| r == i) => {
                        key = format!("{base}{n}");
                        n += 1;
                    }
                    Some(&v) => break v,
                    None => {
                        // SAFETY: a live record.
                        let t = unsafe { htslib::bcf_get_variant_types(rec.inner) };
                        let t = t.max(0) as u32;
                        let mut kind = 0;
                        if t == htslib::VCF_REF {
                            kind |= SR_REF;
                        } else {
                            if t & (htslib::VCF_SNP | htslib::VCF_MNP) != 0 {
                                kind |= SR_SNP;
                            }
                            if t & htslib::VCF_INDEL != 0 {
                                kind |= SR_INDEL;
                            }
                            if t & htslib::VCF_OTHER != 0 {
                                kind |= SR_OTHER;
                            }
                        }
                        // (Found by the numbered key; compared, and grouped, by the
                        // variant's own, as htslib's `var->str`.)
                        vars.push(SortVar {
                            key: base.clone(),
                            nalt: alleles.len() - 1,
                            kind,
                            lines: Vec::new(),
                        });
                        var_groups.push(Vec::new());
                        by_key.insert(key.clone(), vars.len() - 1);
                        break vars.len() - 1;
                    }
                }
            };
            vars[ivar].lines.push((i, j));
            mine.push(ivar);
        }
        let mut keys: Vec<&str> = mine.iter().map(|&v| vars[v].key.as_str()).collect();
        keys.sort_unstable();
        let gkey = keys.join(";");
        let g = match group_keys.iter().position(|k| *k == gkey) {
            Some(g) => g,
            None => {
                group_keys.push(gkey);
                group_keys.len() - 1
            }
        };
        for v in mine {
            if !var_groups[v].contains(&g) {
                var_groups[v].push(g);
            }
        }
    }
    // Variant sets: (variants, count of lines, groups).
    let mut sets: Vec<(Vec<usize>, usize, Vec<usize>)> = (0..vars.len())
        .map(|v| (vec![v], vars[v].lines.len(), var_groups[v].clone()))
        .collect();
    loop {
        let mut imax = 0;
        for k in 1..sets.len() {
            if sets[imax].1 < sets[k].1 {
                imax = k;
            }
        }
        let exact =
            |a: &SortVar, b: &SortVar| a.kind == b.kind && (a.key == b.key || multi_is_exact(a, b));
        let pair = (0..sets.len()).find(|&k| {
            !sets[k].2.iter().any(|g| sets[imax].2.contains(g))
                && sets[imax]
                    .0
                    .iter()
                    .any(|&a| sets[k].0.iter().any(|&b| exact(&vars[a], &vars[b])))
        });
        match pair {
            Some(k) if k != imax => {
                let (lo, hi) = (imax.min(k), imax.max(k));
                let (vs, cnt, groups) = sets.remove(hi);
                sets[lo].0.extend(vs);
                sets[lo].1 += cnt;
                sets[lo].2.extend(groups);
            }
            _ => {
                for &v in &sets[imax].0 {
                    for &(i, j) in &vars[v].lines {
                        chosen[i] = Some(j);
                    }
                }
                return chosen;
            }
        }
    }
}

/// htslib's `multi_is_exact`: the same ALTs in any order (case aside).
fn multi_is_exact(a: &SortVar, b: &SortVar) -> bool {
    if a.nalt != b.nalt || a.key.len() != b.key.len() {
        return false;
    }
    a.key.split(',').all(|x| {
        b.key
            .split(',')
            .any(|y| x.len() == y.len() && x.eq_ignore_ascii_case(y))
    })
}

/// INFO/END of a record, 0 without one (only a key for symbolic alleles).
fn info_end(rec: &bcf::Record) -> i64 {
    match rec.info(b"END").integer() {
        Ok(Some(v)) => v.first().copied().unwrap_or(0) as i64,
        _ => 0,
    }
}

fn locus_of(rec: &bcf::Record) -> String {
    let name = contig_name(rec.header(), rec.rid().unwrap_or(0)).unwrap_or(b"?");
    format!("{}:{}", String::from_utf8_lossy(name), rec.pos() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alleles_join_as_bcftools() {
        let mut b = vec![b"ACGT".to_vec(), b"A".to_vec()];
        let mut a = vec![b"ACG".to_vec(), b"AC".to_vec(), b"A".to_vec()];
        let mut map = Vec::new();
        merge_alleles(&mut a, &mut map, &mut b).unwrap();
        assert_eq!(
            b,
            vec![
                b"ACGT".to_vec(),
                b"A".to_vec(),
                b"ACT".to_vec(),
                b"AT".to_vec()
            ]
        );
        assert_eq!(map, vec![0, 2, 3]);
        let mut als = vec![b"GTTT".to_vec(), b"GTT".to_vec()];
        normalize_alleles(&mut als);
        assert_eq!(als, vec![b"GT".to_vec(), b"G".to_vec()]);
    }

    /// Workers whose queues may hold nothing (one byte) still hand every record over,
    /// in the serial merge's order: the contig being handed out always gets through.
    #[test]
    fn a_full_queue_holds_back_only_later_contigs() {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (k, sample) in ["A", "B"].iter().enumerate() {
            let mut text = String::from("##fileformat=VCFv4.2\n");
            for c in 0..12 {
                text += &format!("##contig=<ID=c{c},length=100000>\n");
            }
            text += "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n";
            text += &format!("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t{sample}\n");
            for c in 0..12 {
                for r in 0..300 {
                    // Every third site the other input lacks.
                    if (r + k) % 3 == 0 {
                        continue;
                    }
                    text += &format!("c{c}\t{}\t.\tA\tG\t.\t.\t.\tGT\t0|1\n", 10 + r * 7);
                }
            }
            let path = dir.path().join(format!("{sample}.vcf.gz"));
            {
                use std::io::Write;
                let mut w = rust_htslib::bgzf::Writer::from_path(&path).unwrap();
                w.write_all(text.as_bytes()).unwrap();
            }
            let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            // SAFETY: a NUL-terminated path; htslib's VCF tabix configuration.
            let built = unsafe { htslib::tbx_index_build(c.as_ptr(), 0, &htslib::tbx_conf_vcf) };
            assert_eq!(built, 0, "tabix index");
            paths.push(path);
        }
        let req = MergeRequest::default();
        let positions = |mut m: MergedStream| {
            let mut out = Vec::new();
            while let Some((_, rec)) = m.next_record().unwrap() {
                out.push((rec.rid(), rec.pos()));
            }
            out
        };
        let serial = positions(MergedStream::open(&paths, req, 1, 0).unwrap());
        let parallel = MergedStream::open(&paths, req, 3, 1).unwrap();
        assert!(matches!(parallel, MergedStream::Parallel(_)));
        assert_eq!(positions(parallel), serial);
        assert_eq!(serial.len(), 12 * 300);
    }

    #[test]
    fn string_fields_fill_missing_slots_only() {
        let mut dst = b".,.,.".to_vec();
        assert!(copy_string_field(b"x,yy", 1, &mut dst, 2));
        assert_eq!(dst, b".,.,yy");
        assert!(copy_string_field(b"z", 0, &mut dst, 2));
        assert_eq!(dst, b".,.,yy");
    }
}
