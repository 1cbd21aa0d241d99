//! VCF text (and, through htslib, VCF.gz and BCF) from [`Block`]s: the header rebuilt
//! from a [`Schema`], each record printed as bcftools prints it — floats by htslib's
//! own `kputd`, genotypes with their phasing and ploidy, vectors up to their fill —
//! and the file written plain, bgzipped or as BCF, with an index when asked.
//!
//! What a store cannot tell apart is printed as bcftools prints the same values: an
//! INFO or FORMAT field whose values are all missing is left out of the record (absent
//! and `.` both query as `.`), INFO keys come in header order, FORMAT keys GT first.

use crate::block::{Block, Dense, FieldValues, Genotypes};
use crate::error::{Error, Result};
use crate::hts::KString;
use crate::schema::{Category, FieldDef, HeaderLineKind, Schema, VcfType};
use rust_htslib::htslib;
use std::ffi::CString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

const F32_MISSING: u32 = 0x7F80_0001;
const F32_FILL: u32 = 0x7F80_0002;

fn type_text(t: VcfType) -> &'static str {
    match t {
        VcfType::Integer => "Integer",
        VcfType::Float => "Float",
        VcfType::Flag => "Flag",
        VcfType::String => "String",
        VcfType::Character => "Character",
    }
}

/// A description as the text between a header line's quotes. Descriptions are kept
/// as the header wrote them (htslib, and so bio2zarr, keep `\"` and `\\` escaped), so
/// those escapes pass as they are; a bare `"` or `\` (another tool's store may have
/// unescaped them) is escaped, so the line still parses.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('"' | '\\')) => {
                out.push(c);
                out.extend(chars.next());
            }
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The `##` lines of `schema` of one kind, in order (FORMAT ones only with
/// `genotypes`).
fn lines_of(schema: &Schema, kind: HeaderLineKind, genotypes: bool) -> Vec<String> {
    let fields = |category: Category, tag: &str| -> Vec<String> {
        schema
            .fields
            .iter()
            .filter(|f| f.category == category)
            .map(|f| field_line(tag, f))
            .collect()
    };
    match kind {
        HeaderLineKind::FileFormat => {
            let fileformat = schema
                .meta_information
                .iter()
                .find(|(k, _)| k == "fileformat")
                .map_or("VCFv4.3", |(_, v)| v.as_str());
            vec![format!("##fileformat={fileformat}\n")]
        }
        HeaderLineKind::Filter => schema
            .filters
            .iter()
            .map(|f| {
                format!(
                    "##FILTER=<ID={},Description=\"{}\">\n",
                    f.id,
                    quoted(&f.description)
                )
            })
            .collect(),
        HeaderLineKind::Info => fields(Category::Info, "INFO"),
        HeaderLineKind::Gt if genotypes && schema.has_gt => {
            vec!["##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n".into()]
        }
        HeaderLineKind::Format if genotypes => fields(Category::Format, "FORMAT"),
        HeaderLineKind::Gt | HeaderLineKind::Format => Vec::new(),
        HeaderLineKind::Contig => schema
            .contigs
            .iter()
            .map(|c| match c.length {
                Some(l) if l > 0 => format!("##contig=<ID={},length={l}>\n", c.name),
                _ => format!("##contig=<ID={}>\n", c.name),
            })
            .collect(),
        HeaderLineKind::Meta => schema
            .meta_information
            .iter()
            .filter(|(k, _)| k != "fileformat")
            .map(|(k, v)| format!("##{k}={v}\n"))
            .collect(),
    }
}

/// The VCF header of `schema`, then `#CHROM` with the samples (none with `genotypes`
/// false: `view -G`). Its `##` lines follow the input's order of line kinds where the
/// schema knows it (`header_order`, as htslib and so bcftools print them), lines the
/// order does not place (AC/AN added for `-s`, undeclared contigs) after them;
/// otherwise `##fileformat`, FILTER, INFO, FORMAT (GT first), contigs, the other meta
/// lines.
pub fn header_text(schema: &Schema, genotypes: bool) -> String {
    let mut queues: Vec<(HeaderLineKind, std::collections::VecDeque<String>)> = HeaderLineKind::ALL
        .into_iter()
        .map(|k| (k, lines_of(schema, k, genotypes).into()))
        .collect();
    let mut s = String::new();
    let mut take = |kind: HeaderLineKind, n: usize, s: &mut String| {
        let q = &mut queues
            .iter_mut()
            .find(|(k, _)| *k == kind)
            .expect("every kind")
            .1;
        for line in q.drain(..n.min(q.len())) {
            s.push_str(&line);
        }
    };
    // ##fileformat is first whatever the order says (htslib refuses it elsewhere).
    take(HeaderLineKind::FileFormat, 1, &mut s);
    for &(kind, n) in &schema.header_order {
        take(kind, n, &mut s);
    }
    for kind in HeaderLineKind::ALL {
        take(kind, usize::MAX, &mut s);
    }
    s += "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO";
    if genotypes && !schema.samples.is_empty() {
        s += "\tFORMAT";
        for name in schema.samples.iter() {
            s.push('\t');
            s += name;
        }
    }
    s.push('\n');
    s
}

fn field_line(kind: &str, f: &FieldDef) -> String {
    format!(
        "##{kind}=<ID={},Number={},Type={},Description=\"{}\">\n",
        f.name,
        if f.ty == VcfType::Flag {
            "0".into()
        } else {
            f.number.to_string()
        },
        type_text(f.ty),
        quoted(&f.description)
    )
}

/// Floats as htslib prints them (its `kputd`, on the value widened to a double: six
/// significant digits, as bcftools prints VCF text), or for BCF output, which htslib
/// parses back into binary floats, with the shortest digits that give back the very
/// float (`svar2 append` re-reads a store's records as BCF: six digits changed
/// half of a call set's VAF values).
pub struct FloatText {
    text: KString,
    exact: bool,
}

impl Default for FloatText {
    fn default() -> Self {
        FloatText {
            text: KString::new(),
            exact: false,
        }
    }
}

impl FloatText {
    /// Floats printed so that they parse back to the same `f32` (BCF output).
    pub fn exact() -> FloatText {
        FloatText {
            exact: true,
            ..FloatText::default()
        }
    }

    pub fn put(&mut self, bits: u32, out: &mut Vec<u8>) {
        let x = f32::from_bits(bits);
        if self.exact && x.is_finite() {
            use std::io::Write as _;
            // The shortest digits that parse back to `x`; plain decimals where
            // htslib's own parser takes them (an exponent sends it to strtod).
            let a = x.abs();
            let _ = match a == 0.0 || (1e-4..1e15).contains(&a) {
                true => write!(out, "{x}"),
                false => write!(out, "{x:e}"),
            };
            return;
        }
        let v = x as f64;
        self.text.set(b"");
        // SAFETY: the kstring is owned and htslib grows it as needed.
        unsafe {
            htslib::kputd(v, self.text.raw());
        }
        out.extend_from_slice(self.text.bytes());
    }
}

fn put_int(v: i64, out: &mut Vec<u8>) {
    if (0..10).contains(&v) {
        out.push(b'0' + v as u8);
        return;
    }
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

/// Whether a value is the fill (the vector ended before it).
fn is_fill(d: &Dense, i: usize) -> bool {
    match d {
        Dense::F32(v) => v[i] == F32_FILL,
        Dense::Str(s) => s.get(i).is_empty(),
        Dense::Char(v) => v[i] == 0,
        Dense::Bool(_) => false,
        _ => d.int(i) == Some(-2),
    }
}

/// Whether a value is missing.
fn is_missing(d: &Dense, i: usize) -> bool {
    match d {
        Dense::F32(v) => v[i] == F32_MISSING,
        Dense::Str(s) => s.get(i) == b".",
        Dense::Char(v) => v[i] == '.' as u32,
        Dense::Bool(_) => false,
        _ => d.int(i) == Some(-1),
    }
}

/// Of cell `[at, at + width)`: how many values come before the fill, and whether one
/// of them is not missing. Typed loops: this runs for every field of every call.
fn cell_extent(d: &Dense, at: usize, width: usize) -> (usize, bool) {
    fn scan<T: Copy + PartialEq>(v: &[T], fill: T, missing: T) -> (usize, bool) {
        let mut value = false;
        for (k, &x) in v.iter().enumerate() {
            if x == fill {
                return (k, value);
            }
            value |= x != missing;
        }
        (v.len(), value)
    }
    let c = at..at + width;
    match d {
        Dense::I8(v) => scan(&v[c], -2, -1),
        Dense::I16(v) => scan(&v[c], -2, -1),
        Dense::I32(v) => scan(&v[c], -2, -1),
        Dense::I64(v) => scan(&v[c], -2, -1),
        Dense::F32(v) => scan(&v[c], F32_FILL, F32_MISSING),
        Dense::Char(v) => scan(&v[c], 0, '.' as u32),
        Dense::Bool(_) => (width, true),
        Dense::Str(_) => {
            let n = c.clone().take_while(|&i| !is_fill(d, i)).count();
            (n, (at..at + n).any(|i| !is_missing(d, i)))
        }
    }
}

/// The values of cell `[at, at + width)` up to the fill; `None` when there are none
/// or all are missing (the field is then left out, or printed `.`).
fn cell_end(d: &Dense, at: usize, width: usize) -> Option<usize> {
    let (n, value) = cell_extent(d, at, width);
    value.then_some(at + n)
}

/// Appends cell values `[at, end)` comma-joined, missing as `.`.
fn put_values(d: &Dense, at: usize, end: usize, floats: &mut FloatText, out: &mut Vec<u8>) {
    fn ints<T: Copy + Into<i64>>(v: &[T], out: &mut Vec<u8>) {
        for (k, &x) in v.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            match x.into() {
                -1 => out.push(b'.'),
                x => put_int(x, out),
            }
        }
    }
    match d {
        Dense::I8(v) => return ints(&v[at..end], out),
        Dense::I16(v) => return ints(&v[at..end], out),
        Dense::I32(v) => return ints(&v[at..end], out),
        Dense::I64(v) => return ints(&v[at..end], out),
        _ => {}
    }
    for i in at..end {
        if i > at {
            out.push(b',');
        }
        if is_missing(d, i) {
            out.push(b'.');
            continue;
        }
        match d {
            Dense::F32(v) => floats.put(v[i], out),
            Dense::Str(s) => out.extend_from_slice(s.get(i)),
            Dense::Char(v) => {
                let c = char::from_u32(v[i]).unwrap_or('?');
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
            Dense::Bool(v) => put_int(v[i] as i64, out),
            _ => unreachable!("integers printed above"),
        }
    }
}

/// Appends the value text of cell `cell` of `f`: its values up to the fill, missing
/// ones as `.` (so `.,.` stays `.,.`), or `.` when it has none.
pub fn put_cell(f: &FieldValues, cell: usize, floats: &mut FloatText, out: &mut Vec<u8>) {
    let at = cell * f.width;
    match cell_extent(&f.values, at, f.width).0 {
        0 => out.push(b'.'),
        n => put_values(&f.values, at, at + n, floats, out),
    }
}

/// `|` for a phased call, else `/`.
fn separator(g: &Genotypes, call: usize) -> u8 {
    match g.phased.get(call) {
        Some(&p) if p != 0 => b'|',
        _ => b'/',
    }
}

/// The genotype of one call: alleles up to the fill, `.` missing, `|` or `/`.
pub fn put_gt(g: &Genotypes, call: usize, out: &mut Vec<u8>) {
    let at = call * g.ploidy;
    let sep = separator(g, call);
    if let (2, Dense::I8(v)) = (g.ploidy, &g.alleles) {
        let (a, b) = (v[at], v[at + 1]);
        if (-1..=9).contains(&a) && (-1..=9).contains(&b) {
            let digit = |x: i8| if x < 0 { b'.' } else { b'0' + x as u8 };
            out.extend_from_slice(&[digit(a), sep, digit(b)]);
            return;
        }
    }
    let mut n = 0;
    for i in at..at + g.ploidy {
        let a = g.alleles.int(i).unwrap_or(-2);
        if a == -2 {
            break;
        }
        if n > 0 {
            out.push(sep);
        }
        if a < 0 {
            out.push(b'.');
        } else {
            put_int(a, out);
        }
        n += 1;
    }
    if n == 0 {
        out.push(b'.');
    }
}

/// `\tA|B` for calls `[at, at + n)` when each is two one-digit (or missing) alleles
/// — most records of most call sets, four bytes a call without a branch per byte;
/// false, with nothing written, when some call is not.
fn put_diploid_calls(g: &Genotypes, at: usize, n: usize, out: &mut Vec<u8>) -> bool {
    let (2, Dense::I8(v)) = (g.ploidy, &g.alleles) else {
        return false;
    };
    let calls = &v[at * 2..(at + n) * 2];
    let phased = g.phased.get(at..at + n);
    if calls.iter().any(|&a| !(-1..=9).contains(&a)) {
        return false;
    }
    let digit = |a: i8| if a < 0 { b'.' } else { b'0' + a as u8 };
    let start = out.len();
    out.resize(start + 4 * n, 0);
    for (j, (dst, c)) in out[start..]
        .chunks_exact_mut(4)
        .zip(calls.chunks_exact(2))
        .enumerate()
    {
        let sep = match phased {
            Some(p) if p[j] != 0 => b'|',
            _ => b'/',
        };
        dst.copy_from_slice(&[b'\t', digit(c[0]), sep, digit(c[1])]);
    }
    true
}

/// The alleles of a call as bases (`%TGT`): `A|G`, `.` for missing.
pub fn put_tgt(block: &Block, r: usize, g: &Genotypes, call: usize, out: &mut Vec<u8>) {
    let at = call * g.ploidy;
    let sep = separator(g, call);
    let mut n = 0;
    for i in at..at + g.ploidy {
        let a = g.alleles.int(i).unwrap_or(-2);
        if a == -2 {
            break;
        }
        if n > 0 {
            out.push(sep);
        }
        if a < 0 || a as usize >= block.allele_width {
            out.push(b'.');
        } else {
            out.extend_from_slice(block.alleles.get(r * block.allele_width + a as usize));
        }
        n += 1;
    }
    if n == 0 {
        out.push(b'.');
    }
}

/// Prints records of blocks as VCF text lines, with reused scratch.
pub struct Printer<'s> {
    schema: &'s Schema,
    genotypes: bool,
    floats: FloatText,
    /// FORMAT fields present in the current record.
    present: Vec<usize>,
    /// The block's samples in the order a line prints them (`None`: the block's).
    sample_order: Option<Vec<usize>>,
}

impl<'s> Printer<'s> {
    /// A printer for `schema`'s records; `genotypes` false leaves out FORMAT and the
    /// samples (`view -G`).
    pub fn new(schema: &'s Schema, genotypes: bool) -> Printer<'s> {
        Printer {
            schema,
            genotypes,
            floats: FloatText::default(),
            present: Vec::new(),
            sample_order: None,
        }
    }

    /// Lines print the block's samples in `order` (block sample indexes): `query
    /// %LINE` prints `-s` samples in file order, as bcftools' subset header holds them,
    /// while `[ ]` keeps the order given.
    pub fn in_order(mut self, order: Vec<usize>) -> Printer<'s> {
        self.sample_order = Some(order);
        self
    }

    /// The printer for BCF output: floats as [`FloatText::exact`] prints them.
    pub fn for_bcf(mut self) -> Printer<'s> {
        self.floats = FloatText::exact();
        self
    }

    pub fn floats(&mut self) -> &mut FloatText {
        &mut self.floats
    }

    /// Finds the FORMAT fields record `r` has: those with a value in some sample, or
    /// a call whose values end before the cell does (`.` of a Number=2 field is a
    /// missing value then the fill). The store keeps a key absent from a record as
    /// missing values filling every cell, so only a field whose every call is that
    /// (`.,.` for Number=2) is left out (bcftools prints `.` for it either way).
    pub fn find_present(&mut self, b: &Block, r: usize) {
        let s = b.n_samples;
        self.present.clear();
        for (k, f) in b.format.iter().enumerate() {
            let marks = |j: usize| {
                let (n, value) = cell_extent(&f.values, (r * s + j) * f.width, f.width);
                value || n < f.width
            };
            if (0..s).any(marks) {
                self.present.push(k);
            }
        }
    }

    /// Whether `b.format[k]` is present in the record [`Printer::find_present`] saw last.
    pub fn is_present(&self, k: usize) -> bool {
        self.present.contains(&k)
    }

    /// The value text of INFO field `f` in record `r` (no `KEY=`): `.` when it has no
    /// value (absent and all-missing are the same in a store).
    pub fn put_info_value(&mut self, f: &FieldValues, r: usize, out: &mut Vec<u8>) {
        let at = r * f.width;
        if self.schema.fields[f.field].ty == VcfType::Flag {
            let set = matches!(&f.values, Dense::Bool(v) if v[at] != 0);
            out.push(if set { b'1' } else { b'.' });
            return;
        }
        match cell_end(&f.values, at, f.width) {
            Some(end) => put_values(&f.values, at, end, &mut self.floats, out),
            None => out.push(b'.'),
        }
    }

    /// The fixed columns CHROM to FILTER of record `r`, tab-separated.
    pub fn put_fixed(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(self.schema.contig_label(b.contig[r] as i64).as_bytes());
        out.push(b'\t');
        put_int(b.pos[r], out);
        out.push(b'\t');
        out.extend_from_slice(b.id.get(r));
        out.push(b'\t');
        self.put_ref(b, r, out);
        out.push(b'\t');
        self.put_alt(b, r, out);
        out.push(b'\t');
        self.put_qual(b, r, out);
        out.push(b'\t');
        self.put_filter(b, r, out);
    }

    pub fn put_ref(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        let reference = b.alleles.get(r * b.allele_width);
        out.extend_from_slice(if reference.is_empty() {
            b"N"
        } else {
            reference
        });
    }

    pub fn put_alt(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        let mut n = 0;
        for k in 1..b.allele_width {
            let a = b.alleles.get(r * b.allele_width + k);
            if a.is_empty() {
                break;
            }
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(a);
            n += 1;
        }
        if n == 0 {
            out.push(b'.');
        }
    }

    pub fn put_qual(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        let q = b.qual[r];
        if q == F32_MISSING || q == F32_FILL {
            out.push(b'.');
        } else {
            self.floats.put(q, out);
        }
    }

    pub fn put_filter(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        let mut n = 0;
        for k in 0..b.n_filters {
            if b.filters[r * b.n_filters + k] != 0 {
                if n > 0 {
                    out.push(b';');
                }
                out.extend_from_slice(self.schema.filters[k].id.as_bytes());
                n += 1;
            }
        }
        if n == 0 {
            out.push(b'.');
        }
    }

    /// The INFO column of record `r` (`.` when no field is present).
    pub fn put_info(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        let start = out.len();
        for f in &b.info {
            let def = &self.schema.fields[f.field];
            let at = r * f.width;
            if def.ty == VcfType::Flag {
                if let Dense::Bool(v) = &f.values {
                    if v[at] != 0 {
                        if out.len() > start {
                            out.push(b';');
                        }
                        out.extend_from_slice(def.name.as_bytes());
                    }
                }
                continue;
            }
            let Some(end) = cell_end(&f.values, at, f.width) else {
                continue;
            };
            if out.len() > start {
                out.push(b';');
            }
            out.extend_from_slice(def.name.as_bytes());
            out.push(b'=');
            put_values(&f.values, at, end, &mut self.floats, out);
        }
        if out.len() == start {
            out.push(b'.');
        }
    }

    /// Record `r` as one VCF line, newline included.
    pub fn put_record(&mut self, b: &Block, r: usize, out: &mut Vec<u8>) {
        self.put_record_with(b, r, &[], out)
    }

    /// Record `r` as one VCF line, with the FORMAT fields `b.format[k]` for `k` in
    /// `kept` printed whatever their values (a store keeps an absent field and one
    /// whose every call is missing the same; a caller that knows the record had it
    /// says so).
    pub fn put_record_with(&mut self, b: &Block, r: usize, kept: &[usize], out: &mut Vec<u8>) {
        self.put_fixed(b, r, out);
        out.push(b'\t');
        self.put_info(b, r, out);
        if !self.genotypes || b.n_samples == 0 {
            out.push(b'\n');
            return;
        }
        let s = b.n_samples;
        // FORMAT keys: GT, then each field some sample of this record has.
        self.find_present(b, r);
        if !kept.is_empty() {
            for &k in kept {
                if !self.present.contains(&k) {
                    self.present.push(k);
                }
            }
            self.present.sort_unstable();
        }
        out.push(b'\t');
        let mut keys = 0;
        if b.gt.is_some() {
            out.extend_from_slice(b"GT");
            keys += 1;
        }
        for &k in &self.present {
            if keys > 0 {
                out.push(b':');
            }
            out.extend_from_slice(self.schema.fields[b.format[k].field].name.as_bytes());
            keys += 1;
        }
        if keys == 0 {
            out.push(b'.');
        }
        if self.present.is_empty() && self.sample_order.is_none() {
            if let Some(g) = &b.gt {
                if put_diploid_calls(g, r * s, s, out) {
                    out.push(b'\n');
                    return;
                }
            }
        }
        for i in 0..s {
            let j = self.sample_order.as_ref().map_or(i, |o| o[i]);
            out.push(b'\t');
            let call = r * s + j;
            let mut first = true;
            if let Some(g) = &b.gt {
                put_gt(g, call, out);
                first = false;
            }
            for &k in &self.present {
                if !first {
                    out.push(b':');
                }
                put_cell(&b.format[k], call, &mut self.floats, out);
                first = false;
            }
            if keys == 0 {
                out.push(b'.');
            }
        }
        out.push(b'\n');
    }
}

/// What `-O` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputType {
    /// `v`: plain VCF.
    Vcf,
    /// `z`: bgzipped VCF.
    VcfGz,
    /// `b`: compressed BCF.
    Bcf,
    /// `u`: uncompressed BCF.
    BcfRaw,
    /// BCF at BGZF level 1 (no `-O` letter): svar2's own scratch files (append's
    /// export of a store), 3x faster to write than `b` at a little more disk.
    BcfFast,
}

impl OutputType {
    /// `-O v|z|b|u`.
    pub fn parse(s: &str) -> std::result::Result<OutputType, String> {
        match s {
            "v" => Ok(OutputType::Vcf),
            "z" => Ok(OutputType::VcfGz),
            "b" => Ok(OutputType::Bcf),
            "u" => Ok(OutputType::BcfRaw),
            _ => Err(format!(
                "-O {s}: expected v (VCF), z (VCF.gz), b (BCF) or u (uncompressed BCF)"
            )),
        }
    }
}

/// Where the records go.
enum Out {
    Text(Box<dyn std::io::Write + Send>),
    /// VCF.gz through htslib's BGZF writer.
    Bgzf(*mut htslib::htsFile),
    /// BCF: each line parsed by htslib into a record, then written.
    Bcf {
        fp: *mut htslib::htsFile,
        hdr: *mut htslib::bcf_hdr_t,
        rec: *mut htslib::bcf1_t,
        line: KString,
    },
}

/// An output file (or standard output) of one kind, the header written.
pub struct Sink {
    out: Out,
    path: Option<PathBuf>,
    name: String,
}

// SAFETY: the htslib handles are owned by the sink and used by one thread at a time.
unsafe impl Send for Sink {}

fn io_err(name: &str, source: std::io::Error) -> Error {
    Error::Write {
        name: name.to_string(),
        source,
    }
}

/// Writes out what `fp` still buffers, so a failure there is reported with its
/// reason (a reader gone: broken pipe) before the file is closed.
fn flush_hts(name: &str, fp: *mut htslib::htsFile) -> Result<()> {
    // SAFETY: fp is an open BGZF-backed file; its BGZF and hFILE are live until closed.
    let r = unsafe {
        let b = htslib::hts_get_bgzfp(fp);
        if b.is_null() {
            return Ok(());
        }
        if htslib::bgzf_flush(b) != 0 {
            -1
        } else {
            htslib::hflush((*b).fp)
        }
    };
    match r {
        0 => Ok(()),
        _ => Err(hts_write_err(name, fp)),
    }
}

/// A failed htslib write to `fp`, with the system's reason: the errno its file layer
/// kept (EPIPE when the reader went away; `errno` itself is overwritten by then).
fn hts_write_err(name: &str, fp: *mut htslib::htsFile) -> Error {
    // SAFETY: fp is an open BGZF-backed file (VCF.gz or BCF); its hFILE is live.
    let errno = unsafe {
        let b = htslib::hts_get_bgzfp(fp);
        if b.is_null() || (*b).fp.is_null() {
            0
        } else {
            (*(*b).fp).has_errno
        }
    };
    let source = match errno {
        e if e > 0 => std::io::Error::from_raw_os_error(e),
        _ => std::io::Error::other("htslib could not write"),
    };
    io_err(name, source)
}

impl Sink {
    /// Opens `path` (standard output when `None`) for `kind`, `threads` compressing,
    /// and writes `header`.
    pub fn create(
        path: Option<&Path>,
        kind: OutputType,
        threads: usize,
        header: &str,
    ) -> Result<Sink> {
        let name = path.map_or("standard output".to_string(), |p| p.display().to_string());
        let out = match kind {
            OutputType::Vcf => {
                let w: Box<dyn std::io::Write + Send> = match path {
                    Some(p) => Box::new(std::io::BufWriter::with_capacity(
                        1 << 20,
                        std::fs::File::create(p).map_err(|e| io_err(&name, e))?,
                    )),
                    None => Box::new(std::io::BufWriter::with_capacity(
                        1 << 20,
                        std::io::stdout(),
                    )),
                };
                let mut out = Out::Text(w);
                if let Out::Text(w) = &mut out {
                    w.write_all(header.as_bytes())
                        .map_err(|e| io_err(&name, e))?;
                }
                out
            }
            OutputType::VcfGz | OutputType::Bcf | OutputType::BcfRaw | OutputType::BcfFast => {
                let mode = match kind {
                    OutputType::VcfGz => c"wz",
                    OutputType::Bcf => c"wb",
                    OutputType::BcfFast => c"wb1",
                    _ => c"wbu",
                };
                let target = CString::new(
                    path.map_or("-".into(), |p| p.as_os_str().to_string_lossy().into_owned()),
                )
                .map_err(|_| Error::Request(format!("{name}: a NUL in the path")))?;
                // SAFETY: a plain open; checked for null.
                let fp = unsafe { htslib::hts_open(target.as_ptr(), mode.as_ptr()) };
                if fp.is_null() {
                    return Err(Error::Write {
                        name: name.clone(),
                        source: std::io::Error::other("cannot open for writing"),
                    });
                }
                if threads > 1 {
                    // SAFETY: fp is open.
                    unsafe { htslib::hts_set_threads(fp, threads as i32) };
                }
                if kind == OutputType::VcfGz {
                    let mut out = Out::Bgzf(fp);
                    bgzf_write(&mut out, header.as_bytes(), &name)?;
                    out
                } else {
                    // SAFETY: a fresh header parsed from our own text; checked. Made in
                    // mode "r": "w" would add a second ##fileformat (VCFv4.2) before ours.
                    let hdr = unsafe { htslib::bcf_hdr_init(c"r".as_ptr()) };
                    let text = CString::new(header)
                        .map_err(|_| Error::Inputs("a NUL in the header".into()))?;
                    // SAFETY: hdr is fresh, text NUL-terminated.
                    let parsed = unsafe { htslib::bcf_hdr_parse(hdr, text.as_ptr() as *mut _) };
                    // SAFETY: fp open, hdr parsed.
                    if parsed != 0 || unsafe { htslib::bcf_hdr_write(fp, hdr) } != 0 {
                        // SAFETY: owned here.
                        unsafe {
                            htslib::bcf_hdr_destroy(hdr);
                            htslib::hts_close(fp);
                        }
                        return Err(Error::Inputs(format!("{name}: htslib refused the header")));
                    }
                    // SAFETY: a fresh record.
                    let rec = unsafe { htslib::bcf_init() };
                    Out::Bcf {
                        fp,
                        hdr,
                        rec,
                        line: KString::new(),
                    }
                }
            }
        };
        Ok(Sink {
            out,
            path: path.map(Path::to_path_buf),
            name,
        })
    }

    /// Writes whole lines (each ending with a newline).
    pub fn write_lines(&mut self, text: &[u8]) -> Result<()> {
        let name = self.name.clone();
        match &mut self.out {
            Out::Text(w) => w.write_all(text).map_err(|e| io_err(&name, e)),
            o @ Out::Bgzf(_) => bgzf_write(o, text, &name),
            Out::Bcf { fp, hdr, rec, line } => {
                for l in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
                    line.set(l);
                    // SAFETY: hdr and rec are owned; line is NUL-terminated.
                    if unsafe { htslib::vcf_parse(line.raw(), *hdr, *rec) } != 0 {
                        return Err(Error::Inputs(format!(
                            "{name}: htslib could not write the record {}",
                            String::from_utf8_lossy(&l[..l.len().min(80)])
                        )));
                    }
                    // SAFETY: as above; fp open.
                    if unsafe { htslib::bcf_write(*fp, *hdr, *rec) } != 0 {
                        return Err(hts_write_err(&name, *fp));
                    }
                }
                Ok(())
            }
        }
    }

    /// Flushes and closes; with `index`, writes a CSI beside the file (VCF.gz or BCF
    /// written to a path).
    pub fn finish(mut self, index: bool, threads: usize) -> Result<()> {
        let name = self.name.clone();
        let out = std::mem::replace(&mut self.out, Out::Text(Box::new(std::io::sink())));
        match out {
            Out::Text(mut w) => w.flush().map_err(|e| io_err(&name, e))?,
            Out::Bgzf(fp) => {
                let flushed = flush_hts(&name, fp);
                // SAFETY: owned, closed once.
                let closed = unsafe { htslib::hts_close(fp) };
                flushed?;
                if closed != 0 {
                    return Err(Error::Write {
                        name: name.clone(),
                        source: std::io::Error::other("could not finish writing"),
                    });
                }
            }
            Out::Bcf { fp, hdr, rec, line } => {
                drop(line);
                let flushed = flush_hts(&name, fp);
                // SAFETY: owned, released once.
                let r = unsafe {
                    htslib::bcf_destroy(rec);
                    let r = htslib::hts_close(fp);
                    htslib::bcf_hdr_destroy(hdr);
                    r
                };
                flushed?;
                if r != 0 {
                    return Err(Error::Write {
                        name: name.clone(),
                        source: std::io::Error::other("could not finish writing"),
                    });
                }
            }
        }
        if index {
            let Some(p) = &self.path else {
                return Err(Error::Request("--write-index needs -o FILE".into()));
            };
            let c = CString::new(p.as_os_str().to_string_lossy().into_owned())
                .map_err(|_| Error::Request(format!("{name}: a NUL in the path")))?;
            // SAFETY: a finished file; htslib builds and writes its CSI.
            let r = unsafe {
                htslib::bcf_index_build3(c.as_ptr(), std::ptr::null(), 14, threads as i32)
            };
            if r != 0 {
                return Err(Error::Inputs(format!(
                    "{name}: could not index it (--write-index takes -Oz or -Ob output)"
                )));
            }
        }
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let out = std::mem::replace(&mut self.out, Out::Text(Box::new(std::io::sink())));
        match out {
            Out::Text(_) => {}
            // SAFETY: owned; closed once (finish replaced them when it ran).
            Out::Bgzf(fp) => unsafe {
                htslib::hts_close(fp);
            },
            // SAFETY: as above.
            Out::Bcf { fp, hdr, rec, .. } => unsafe {
                htslib::bcf_destroy(rec);
                htslib::hts_close(fp);
                htslib::bcf_hdr_destroy(hdr);
            },
        }
    }
}

fn bgzf_write(out: &mut Out, data: &[u8], name: &str) -> Result<()> {
    let Out::Bgzf(fp) = out else {
        unreachable!("a BGZF sink")
    };
    // SAFETY: fp is an open BGZF (VCF.gz) file.
    let n = unsafe {
        let bgzf = htslib::hts_get_bgzfp(*fp);
        htslib::bgzf_write(bgzf, data.as_ptr() as *const _, data.len())
    };
    if n < 0 || n as usize != data.len() {
        return Err(hts_write_err(name, *fp));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::quoted;

    /// A description's escapes as the header wrote them pass unchanged (they were
    /// escaped twice, `\\\"`); bare quotes and backslashes are escaped.
    #[test]
    fn descriptions_keep_their_escapes_and_gain_missing_ones() {
        assert_eq!(
            quoted(r#"with \"quotes\" and = sign"#),
            r#"with \"quotes\" and = sign"#
        );
        assert_eq!(quoted(r"a \\ b"), r"a \\ b");
        assert_eq!(
            quoted(r#"bare "q" and \ slash"#),
            r#"bare \"q\" and \\ slash"#
        );
        assert_eq!(quoted(r"ends in \"), r"ends in \\");
        assert_eq!(quoted("plain"), "plain");
    }
}
