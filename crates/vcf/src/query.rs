//! `bcftools query -f` formats over [`Block`]s: `%CHROM %POS %POS0 %ID %REF %ALT
//! %FIRST_ALT %QUAL %FILTER %INFO %INFO/TAG %TAG %END %END0 %LINE`, per sample inside
//! `[ … ]`: `%SAMPLE %GT %TGT %TAG`; `%ALT{N}` and `%TAG{N}`, a list's N-th value
//! (0-based; an INFO value one number or one byte long prints whatever N, as
//! bcftools prints it);
//! `\t \n \\` escapes; `-H`'s header line. Values print as bcftools prints them (`.`
//! for missing or absent, a Flag as `1`). bcftools' `%TYPE`, `%MASK`, `%IUPACGT`,
//! `%PBINOM`, `%FORMAT` and `%N_PASS` are refused by name.

use crate::block::Block;
use crate::error::{Error, Result};
use crate::schema::{Category, Schema};
use crate::write::{put_cell, put_gt, put_tgt, Printer};

#[derive(Debug, Clone, PartialEq)]
enum Tag {
    Chrom,
    Pos,
    Id,
    Ref,
    Alt,
    Qual,
    Filter,
    Info,
    End,
    /// `%POS0`, `%END0`: 0-based.
    Pos0,
    End0,
    Line,
    /// `%TYPE`: the record's variant types (`SNP`, `INDEL,OTHER`, `REF`), as htslib
    /// classifies the alleles.
    Type,
    /// An INFO field (index into the schema's fields).
    InfoField(usize),
    Sample,
    Gt,
    Tgt,
    /// A FORMAT field, inside brackets.
    FormatField(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Text(Vec<u8>),
    /// A tag, its name as given, and `{N}`'s element (0-based) of its values.
    Tag(Tag, String, Option<usize>),
    /// `[ … ]`: repeated for every sample.
    Samples(Vec<Token>),
}

/// A parsed `-f` format.
#[derive(Debug, Clone)]
pub struct Query {
    tokens: Vec<Token>,
}

fn unescape(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut it = text.bytes().peekable();
    while let Some(c) = it.next() {
        if c == b'\\' {
            match it.next() {
                Some(b't') => out.push(b'\t'),
                Some(b'n') => out.push(b'\n'),
                Some(b'\\') => out.push(b'\\'),
                Some(o) => {
                    out.push(b'\\');
                    out.push(o);
                }
                None => out.push(b'\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl Query {
    /// Parses `format` against `schema`'s fields; an unknown tag is an error naming it.
    pub fn parse(format: &str, schema: &Schema) -> Result<Query> {
        let bad = |m: String| Error::Request(format!("-f '{format}': {m}"));
        let field = |name: &str, cat: Category| {
            schema
                .fields
                .iter()
                .position(|f| f.name == name && f.category == cat)
        };
        let mut stack: Vec<Vec<Token>> = vec![Vec::new()];
        let mut text = String::new();
        let b = format.as_bytes();
        let mut i = 0;
        let flush = |text: &mut String, stack: &mut Vec<Vec<Token>>| {
            if !text.is_empty() {
                stack
                    .last_mut()
                    .expect("a level")
                    .push(Token::Text(unescape(text)));
                text.clear();
            }
        };
        while i < b.len() {
            match b[i] {
                b'[' => {
                    flush(&mut text, &mut stack);
                    if stack.len() > 1 {
                        return Err(bad("nested [ ]".into()));
                    }
                    stack.push(Vec::new());
                    i += 1;
                }
                b']' => {
                    flush(&mut text, &mut stack);
                    if stack.len() < 2 {
                        return Err(bad("a ] without its [".into()));
                    }
                    let inner = stack.pop().expect("checked");
                    stack
                        .last_mut()
                        .expect("a level")
                        .push(Token::Samples(inner));
                    i += 1;
                }
                b'%' if b.get(i + 1) == Some(&b'%') => {
                    text.push('%');
                    i += 2;
                }
                b'%' => {
                    flush(&mut text, &mut stack);
                    let start = i + 1;
                    let mut end = start;
                    while end < b.len()
                        && (b[end].is_ascii_alphanumeric()
                            || b[end] == b'_'
                            || b[end] == b'/'
                            || b[end] == b'.')
                    {
                        end += 1;
                    }
                    let name = &format[start..end];
                    // `%TAG{N}`: the N-th (0-based) of the tag's comma-separated values.
                    let (element, after) = match b.get(end) {
                        Some(b'{') => {
                            let close = format[end..]
                                .find('}')
                                .map(|k| end + k)
                                .ok_or_else(|| bad(format!("%{name}{{ without its }}")))?;
                            let n = format[end + 1..close].parse::<usize>().map_err(|_| {
                                bad(format!(
                                    "%{name}{{{}}}: give one 0-based index, e.g. %{name}{{0}}",
                                    &format[end + 1..close]
                                ))
                            })?;
                            (Some(n), close + 1)
                        }
                        _ => (None, end),
                    };
                    let element = match (name, element) {
                        ("FIRST_ALT", None) => Some(0),
                        ("FIRST_ALT", Some(_)) => {
                            return Err(bad("%FIRST_ALT is one allele: no {N} after it".into()))
                        }
                        _ => element,
                    };
                    let in_samples = stack.len() > 1;
                    let tag = match (name, in_samples) {
                        ("CHROM", _) => Tag::Chrom,
                        ("POS", _) => Tag::Pos,
                        ("ID", _) => Tag::Id,
                        ("REF", _) => Tag::Ref,
                        ("ALT", _) => Tag::Alt,
                        ("QUAL", _) => Tag::Qual,
                        ("FILTER", _) => Tag::Filter,
                        ("INFO", _) => Tag::Info,
                        ("END", _) => Tag::End,
                        ("POS0", _) => Tag::Pos0,
                        ("END0", _) => Tag::End0,
                        // The first ALT allele: `%ALT{0}`.
                        ("FIRST_ALT", _) => Tag::Alt,
                        ("LINE", _) => Tag::Line,
                        ("SAMPLE", true) => Tag::Sample,
                        ("GT", true) => Tag::Gt,
                        ("TGT", true) => Tag::Tgt,
                        ("TYPE", _)
                            if field("TYPE", Category::Info).is_none()
                                && field("TYPE", Category::Format).is_none() =>
                        {
                            Tag::Type
                        }
                        (n @ ("MASK" | "IUPACGT" | "PBINOM" | "FORMAT" | "N_PASS"), _)
                            if field(n, Category::Info).is_none()
                                && field(n, Category::Format).is_none() =>
                        {
                            return Err(bad(format!(
                                "bcftools query's %{n} is not offered by svar2 query yet"
                            )))
                        }
                        (n, _) if n.starts_with("INFO/") => Tag::InfoField(
                            field(&n[5..], Category::Info)
                                .ok_or_else(|| bad(format!("no INFO/{} in the header", &n[5..])))?,
                        ),
                        (n, true) if n.starts_with("FORMAT/") || n.starts_with("FMT/") => {
                            let t = n.split_once('/').map_or(n, |x| x.1);
                            Tag::FormatField(
                                field(t, Category::Format)
                                    .ok_or_else(|| bad(format!("no FORMAT/{t} in the header")))?,
                            )
                        }
                        (n, true) => Tag::FormatField(
                            field(n, Category::Format)
                                .ok_or_else(|| bad(format!("no FORMAT/{n} in the header")))?,
                        ),
                        (n, false) => Tag::InfoField(
                            field(n, Category::Info)
                                .ok_or_else(|| bad(format!("no INFO/{n} in the header")))?,
                        ),
                    };
                    if matches!(tag, Tag::Sample | Tag::Gt | Tag::Tgt) && !in_samples {
                        return Err(bad(format!("%{name} belongs inside [ ]")));
                    }
                    let listed = matches!(tag, Tag::Alt | Tag::InfoField(_) | Tag::FormatField(_));
                    if element.is_some() && !listed {
                        return Err(bad(format!(
                            "%{name}{{…}}: an element is taken of ALT and of INFO and FORMAT \
                             fields only"
                        )));
                    }
                    stack.last_mut().expect("a level").push(Token::Tag(
                        tag,
                        format[start..after].to_string(),
                        element,
                    ));
                    i = after;
                }
                c => {
                    text.push(c as char);
                    i += 1;
                    // (multi-byte UTF-8 text passes through byte by byte)
                    if c >= 0x80 {
                        let s = &format[i - 1..];
                        let ch = s.chars().next().unwrap_or(' ');
                        text.pop();
                        text.push(ch);
                        i += ch.len_utf8() - 1;
                    }
                }
            }
        }
        flush(&mut text, &mut stack);
        if stack.len() != 1 {
            return Err(bad("a [ without its ]".into()));
        }
        Ok(Query {
            tokens: stack.pop().expect("one level"),
        })
    }

    /// Whether the format reads FORMAT values (so samples must be read).
    pub fn uses_samples(&self) -> bool {
        self.tokens
            .iter()
            .any(|t| matches!(t, Token::Samples(_) | Token::Tag(Tag::Line, ..)))
    }

    /// Every tag of the format, those inside brackets too.
    fn tags(&self) -> Vec<&Tag> {
        let mut out = Vec::new();
        for t in &self.tokens {
            match t {
                Token::Tag(tag, ..) => out.push(tag),
                Token::Samples(inner) => out.extend(inner.iter().filter_map(|t| match t {
                    Token::Tag(tag, ..) => Some(tag),
                    _ => None,
                })),
                Token::Text(_) => {}
            }
        }
        out
    }

    /// Whether the format prints the values of `schema.fields[k]` (`%LINE` prints
    /// every field, `%INFO` every INFO field): a field it does not print is not read
    /// or decoded — a `[%GT]` query never decodes a thousand-allele `PL`.
    pub fn uses_field(&self, schema: &Schema, k: usize) -> bool {
        let info = schema.fields.get(k).map(|f| f.category) == Some(Category::Info);
        self.tags().into_iter().any(|t| match t {
            Tag::Line => true,
            Tag::Info => info,
            Tag::InfoField(i) | Tag::FormatField(i) => *i == k,
            _ => false,
        })
    }

    /// Whether the format prints FORMAT values (a FORMAT field, `%GT`, `%TGT`, `%LINE`):
    /// what makes bcftools query print, for a record `-e` excludes, the samples that
    /// fail the expression (with `[%SAMPLE]` alone it drops the record).
    pub fn prints_format(&self, schema: &Schema) -> bool {
        self.uses_genotypes()
            || schema
                .fields
                .iter()
                .enumerate()
                .any(|(k, f)| f.category == Category::Format && self.uses_field(schema, k))
    }

    /// Whether the format prints genotypes (`%GT`, `%TGT`, `%LINE`).
    pub fn uses_genotypes(&self) -> bool {
        self.tags()
            .into_iter()
            .any(|t| matches!(t, Tag::Gt | Tag::Tgt | Tag::Line))
    }

    /// `-H`: `# [1]CHROM\t[2]POS …`, per sample `[n]NAME:TAG`.
    pub fn header(&self, samples: &[String]) -> Vec<u8> {
        let mut out = b"# ".to_vec();
        let mut n = 0;
        // As bcftools 1.16 labels them: without a `{N}` subscript.
        let bare = |name: &str| -> String { name.split('{').next().unwrap_or(name).to_string() };
        let label = |tag: &Tag, name: &str| -> String {
            let name = &bare(name);
            match tag {
                Tag::InfoField(_) => name.strip_prefix("INFO/").unwrap_or(name).to_string(),
                _ => name.to_string(),
            }
        };
        for t in &self.tokens {
            match t {
                Token::Text(x) => out.extend_from_slice(x),
                Token::Tag(tag, name, _) => {
                    n += 1;
                    out.extend_from_slice(format!("[{n}]{}", label(tag, name)).as_bytes());
                }
                Token::Samples(inner) => {
                    for s in samples {
                        for t in inner {
                            match t {
                                Token::Text(x) => out.extend_from_slice(x),
                                Token::Tag(Tag::Sample, ..) => {
                                    n += 1;
                                    out.extend_from_slice(format!("[{n}]SAMPLE").as_bytes());
                                }
                                Token::Tag(tag, name, _) => {
                                    n += 1;
                                    let tag_name = match tag {
                                        Tag::Gt | Tag::Tgt => "GT".to_string(),
                                        _ => bare(name.rsplit('/').next().unwrap_or(name)),
                                    };
                                    out.extend_from_slice(
                                        format!("[{n}]{s}:{tag_name}").as_bytes(),
                                    );
                                }
                                Token::Samples(_) => {}
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Appends record `r` of `b` formatted; inside `[ ]` only the samples `samples`
    /// marks (all when None: a filter's verdict leaves the others out).
    pub fn put_record(
        &self,
        p: &mut Printer,
        schema: &Schema,
        b: &Block,
        r: usize,
        samples: Option<&[bool]>,
        out: &mut Vec<u8>,
    ) {
        for t in &self.tokens {
            match t {
                Token::Text(x) => out.extend_from_slice(x),
                Token::Tag(tag, _, element) => {
                    let start = out.len();
                    self.put_site(tag, p, schema, b, r, out);
                    // bcftools prints an INFO value of length 1 in BCF whatever the
                    // index: one number, or a string of one byte (`hello` only at 0).
                    let text = |k: &usize| {
                        schema.fields.get(*k).is_some_and(|f| {
                            matches!(
                                f.ty,
                                crate::schema::VcfType::String | crate::schema::VcfType::Character
                            )
                        })
                    };
                    let printed = &out[start..];
                    let one = match tag {
                        Tag::InfoField(k) if text(k) => printed.len() == 1,
                        Tag::InfoField(_) => !printed.contains(&b','),
                        _ => false,
                    };
                    if !one {
                        keep_element(out, start, *element);
                    }
                }
                Token::Samples(inner) => {
                    p.find_present(b, r);
                    for j in 0..b.n_samples {
                        if samples.is_some_and(|s| !s[j]) {
                            continue;
                        }
                        for t in inner {
                            match t {
                                Token::Text(x) => out.extend_from_slice(x),
                                Token::Tag(tag, _, element) => {
                                    let start = out.len();
                                    put_call(tag, p, schema, b, r, j, out);
                                    keep_element(out, start, *element);
                                }
                                Token::Samples(_) => {}
                            }
                        }
                    }
                }
            }
        }
    }

    fn put_site(
        &self,
        tag: &Tag,
        p: &mut Printer,
        schema: &Schema,
        b: &Block,
        r: usize,
        out: &mut Vec<u8>,
    ) {
        match tag {
            Tag::Chrom => out.extend_from_slice(schema.contig_label(b.contig[r] as i64).as_bytes()),
            Tag::Pos => out.extend_from_slice(b.pos[r].to_string().as_bytes()),
            Tag::Id => out.extend_from_slice(b.id.get(r)),
            Tag::Ref => p.put_ref(b, r, out),
            Tag::Alt => p.put_alt(b, r, out),
            Tag::Qual => p.put_qual(b, r, out),
            Tag::Filter => p.put_filter(b, r, out),
            Tag::Info => p.put_info(b, r, out),
            Tag::End => {
                out.extend_from_slice((b.pos[r] + b.rlen[r].max(1) - 1).to_string().as_bytes())
            }
            Tag::Pos0 => out.extend_from_slice((b.pos[r] - 1).to_string().as_bytes()),
            Tag::End0 => {
                out.extend_from_slice((b.pos[r] + b.rlen[r].max(1) - 2).to_string().as_bytes())
            }
            Tag::Line => p.put_record(b, r, out),
            Tag::Type => put_type(b, r, out),
            Tag::InfoField(k) => match b.info.iter().find(|f| f.field == *k) {
                Some(f) => p.put_info_value(f, r, out),
                None => out.push(b'.'),
            },
            // Sample tags outside brackets are refused by `parse`.
            Tag::Sample | Tag::Gt | Tag::Tgt | Tag::FormatField(_) => out.push(b'.'),
        }
    }
}

/// `%TYPE` of record `r`, as bcftools' `process_type` prints it: `REF` for none,
/// else each type present, comma-separated, in htslib's bit order.
fn put_type(b: &Block, r: usize, out: &mut Vec<u8>) {
    use crate::variant_type::*;
    let w = b.allele_width;
    let reference = b.alleles.get(r * w);
    let alts: Vec<&[u8]> = (1..w)
        .map(|k| b.alleles.get(r * w + k))
        .take_while(|a| !a.is_empty())
        .collect();
    let types = variant_types(reference, &alts);
    if types == 0 {
        out.extend_from_slice(b"REF");
        return;
    }
    let names = [
        (VCF_SNP, "SNP"),
        (VCF_MNP, "MNP"),
        (VCF_INDEL, "INDEL"),
        (VCF_OTHER, "OTHER"),
        (VCF_BND, "BND"),
        (VCF_OVERLAP, "OVERLAP"),
    ];
    let mut first = true;
    for (bit, name) in names {
        if types & bit != 0 {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(name.as_bytes());
            first = false;
        }
    }
}

/// Keeps of the values printed at `out[start..]` only the `element`-th (0-based) of
/// their comma-separated list (`.` past its end), as bcftools query's `%TAG{N}`.
fn keep_element(out: &mut Vec<u8>, start: usize, element: Option<usize>) {
    let Some(n) = element else { return };
    let kept = out[start..]
        .split(|&c| c == b',')
        .nth(n)
        .filter(|e| !e.is_empty())
        .map(<[u8]>::to_vec);
    out.truncate(start);
    match kept {
        Some(e) => out.extend_from_slice(&e),
        None => out.push(b'.'),
    }
}

fn put_call(
    tag: &Tag,
    p: &mut Printer,
    schema: &Schema,
    b: &Block,
    r: usize,
    j: usize,
    out: &mut Vec<u8>,
) {
    let call = r * b.n_samples + j;
    match tag {
        Tag::Sample => out.extend_from_slice(schema.samples[j].as_bytes()),
        Tag::Gt => match &b.gt {
            Some(g) => put_gt(g, call, out),
            None => out.push(b'.'),
        },
        Tag::Tgt => match &b.gt {
            Some(g) => put_tgt(b, r, g, call, out),
            None => out.push(b'.'),
        },
        Tag::FormatField(k) => match b.format.iter().position(|f| f.field == *k) {
            Some(i) if p.is_present(i) => put_cell(&b.format[i], call, p.floats(), out),
            _ => out.push(b'.'),
        },
        // Site tags inside brackets print the site's value, as bcftools does.
        other => {
            let q = Query { tokens: Vec::new() };
            q.put_site(other, p, schema, b, r, out);
        }
    }
}
