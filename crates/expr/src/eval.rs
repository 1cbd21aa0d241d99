//! The tree compiled against a header (names resolved, types checked, regexes built),
//! and tested on one record of a decoded [`Block`] with bcftools' semantics
//! (`filter.c`): every value is a list — per site, or per sample — compared element by
//! element with "any pair passes" logic; `=` passes where both sides are missing and
//! `!=` where one side is; `&`/`|` combine samples one by one and `&&`/`||` sites;
//! numbers compare as `float` below 2^24, as bcftools' do.

use crate::parse::{Node, Op};
use crate::Error;
use regex::bytes::Regex;
use svar2_vcf::block::{Block, Dense};
use svar2_vcf::schema::{Category, Schema, VcfType};
use svar2_vcf::variant_type::{
    variant_types, VCF_BND, VCF_INDEL, VCF_MNP, VCF_OTHER, VCF_OVERLAP, VCF_SNP,
};

const MISSING_BITS: u64 = 0x7FF0_0000_0000_0001;
const END_BITS: u64 = 0x7FF0_0000_0000_0002;
fn missing() -> f64 {
    f64::from_bits(MISSING_BITS)
}
fn end() -> f64 {
    f64::from_bits(END_BITS)
}
fn absent(x: f64) -> bool {
    let b = x.to_bits();
    b == MISSING_BITS || b == END_BITS
}

/// Which elements of a vector a subscript keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Sel {
    All,
    One(usize),
    /// Listed elements (`0,2-4`), and every one from `open` on (`1-`).
    Set(Vec<bool>, Option<usize>),
}

impl Sel {
    fn parse(text: &str) -> Option<Sel> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Some(Sel::All);
        }
        if let Ok(n) = t.parse::<usize>() {
            return Some(Sel::One(n));
        }
        let mut want = Vec::new();
        let mut open = None;
        for part in t.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, Some(b)),
                None => (part, None),
            };
            let a: usize = a.trim().parse().ok()?;
            let b = match b {
                Some(b) if b.trim().is_empty() => {
                    open = Some(open.map_or(a, |o: usize| o.min(a)));
                    a
                }
                Some(b) => b.trim().parse().ok()?,
                None => a,
            };
            if b < a || b > 1 << 20 {
                return None;
            }
            if want.len() <= b {
                want.resize(b + 1, false);
            }
            want[a..=b].iter_mut().for_each(|w| *w = true);
        }
        Some(Sel::Set(want, open))
    }

    fn keeps(&self, i: usize) -> bool {
        match self {
            Sel::All => true,
            Sel::One(n) => *n == i,
            Sel::Set(w, open) => w.get(i).copied().unwrap_or(false) || open.is_some_and(|o| i >= o),
        }
    }
}

/// What the allele counts give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Counted {
    Ac,
    An,
    Af,
    Mac,
    Maf,
}

/// A value read from the record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Term {
    Chrom,
    Pos,
    Id,
    Ref,
    Alt(Sel),
    Qual,
    NAlt,
    NSamples,
    ILen,
    Counted(Counted, Sel),
    /// N_MISSING (false) or F_MISSING (true).
    Missing(bool),
    Info {
        field: usize,
        ty: VcfType,
        sel: Sel,
    },
    Format {
        field: usize,
        samples: Sel,
        sel: Sel,
    },
    /// GT as classes: 2 (r, a, rr, ra, aA, aa), 3 (hap, hom, het), 4 (mis, ref, alt).
    GtClass(u8),
    /// GT as text (`0/1`, `.|.`).
    GtText,
}

impl Term {
    fn per_sample(&self) -> bool {
        matches!(self, Term::Format { .. } | Term::GtClass(_) | Term::GtText)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Func {
    Max,
    Min,
    Avg,
    Median,
    Sum,
    Stdev,
    Count,
    Abs,
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) enum Expr {
    Num(f64),
    /// `"."` where a number is compared: the missing value.
    Missing,
    Str(Vec<u8>),
    Term(Term),
    Neg(Box<Expr>),
    Arith(Op, Box<Expr>, Box<Expr>),
    CmpNum(Op, Box<Expr>, Box<Expr>),
    /// A string comparison; with a regex, the pattern side is the constant.
    CmpStr(Op, Box<Expr>, Box<Expr>, Option<Regex>),
    /// FILTER against the listed FILTER indexes (empty: `.`).
    Filter(Op, Vec<usize>),
    /// TYPE against a type's bit (see [`variant_types`]): `=`/`!=` compare the whole
    /// set, `~`/`!~` test the bit, as bcftools does.
    Type(Op, u32),
    Logic(Op, Box<Expr>, Box<Expr>),
    Func(Func, bool, Box<Expr>),
    /// N_PASS (false) or F_PASS (true).
    Pass(bool, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Num,
    Str,
    Bool,
}

/// What evaluating the expression reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Schema field indexes (INFO and FORMAT).
    pub fields: Vec<usize>,
    pub genotypes: bool,
    /// Whether any value is per sample (FORMAT, GT).
    pub samples: bool,
}

pub(crate) struct Compiler<'a> {
    pub text: &'a str,
    pub schema: &'a Schema,
    pub needs: Needs,
}

impl Compiler<'_> {
    fn err(&self, at: usize, msg: impl Into<String>) -> Error {
        Error::new(self.text, at, msg.into())
    }

    fn field(&self, cat: Category, name: &str) -> Option<usize> {
        self.schema
            .fields
            .iter()
            .position(|f| f.category == cat && f.name == name)
    }

    fn need_field(&mut self, k: usize) {
        if !self.needs.fields.contains(&k) {
            self.needs.fields.push(k);
        }
    }

    /// bcftools' own AC, AN, AF, MAC or MAF (`upper`: the name in capitals), counted
    /// from the genotypes (from INFO/AC and AN where a record has both); `None` for
    /// another name.
    fn counted(
        &mut self,
        upper: &str,
        sub: Option<&str>,
        at: usize,
    ) -> Result<Option<Term>, Error> {
        let c = match upper {
            "AC" => Counted::Ac,
            "AN" => Counted::An,
            "AF" => Counted::Af,
            "MAC" => Counted::Mac,
            "MAF" => Counted::Maf,
            _ => return Ok(None),
        };
        self.needs.genotypes = true;
        self.needs.samples = true;
        // INFO/AC and AN, when both are there, are what bcftools counts from.
        for t in ["AC", "AN"] {
            if let Some(k) = self.field(Category::Info, t) {
                self.need_field(k);
            }
        }
        // Without a subscript bcftools takes the first ALT's.
        let which = match sub {
            None => Sel::One(0),
            Some(t) => Sel::parse(t)
                .ok_or_else(|| Error::new(self.text, at, format!("`[{t}]`: not a subscript")))?,
        };
        Ok(Some(Term::Counted(c, which)))
    }

    /// A name as a term.
    fn term(&mut self, name: &str, sub: Option<&str>, at: usize) -> Result<Term, Error> {
        let text = self.text;
        let sel = |s: Option<&str>| -> Result<Sel, Error> {
            match s {
                None => Ok(Sel::All),
                Some(t) => Sel::parse(t)
                    .ok_or_else(|| Error::new(text, at, format!("`[{t}]`: not a subscript"))),
            }
        };
        let (prefix, tag) = match name.split_once('/') {
            Some((p, t)) => (Some(p), t),
            None => (None, name),
        };
        let info_only = matches!(prefix, Some("INFO"));
        let format_only = matches!(prefix, Some("FORMAT" | "FMT"));
        if prefix.is_some() && !info_only && !format_only {
            return Err(self.err(
                at,
                format!("`{name}`: the prefix is INFO/, FORMAT/ or FMT/"),
            ));
        }
        // bcftools takes a tag the header declares (INFO or FORMAT, by the name as
        // written) before its own AC, AN, AF, MAC, MAF and ILEN (not before ALT); and
        // takes `INFO/AC` (or `INFO/ILEN`…) for its own where none is declared.
        let declared = self.field(Category::Info, tag).is_some()
            || self.field(Category::Format, tag).is_some();
        if info_only && !declared {
            let upper = tag.to_ascii_uppercase();
            if upper == "ILEN" {
                if sub.is_some() {
                    return Err(self.err(at, format!("`{name}` takes no subscript")));
                }
                return Ok(Term::ILen);
            }
            if let Some(t) = self.counted(&upper, sub, at)? {
                return Ok(t);
            }
        }
        if prefix.is_none() {
            let upper = name.to_ascii_uppercase();
            let fixed = match upper.as_str() {
                "ILEN" if declared => None,
                "CHROM" => Some(Term::Chrom),
                "POS" => Some(Term::Pos),
                "ID" => Some(Term::Id),
                "REF" => Some(Term::Ref),
                "ALT" => Some(Term::Alt(sel(sub)?)),
                "QUAL" => Some(Term::Qual),
                "N_ALT" => Some(Term::NAlt),
                "N_SAMPLES" => Some(Term::NSamples),
                "ILEN" => Some(Term::ILen),
                "FILTER" => {
                    return Err(self.err(at, "FILTER is compared with =, !=, ~ or !~ and a string"))
                }
                "TYPE" => {
                    return Err(self.err(
                        at,
                        "TYPE is compared with a type: TYPE=\"snp\" (or indel, mnp, other, \
                         bnd, overlap, ref), with =, !=, ~ or !~",
                    ))
                }
                _ => None,
            };
            if let Some(t) = fixed {
                if sub.is_some() && !matches!(t, Term::Alt(_)) {
                    return Err(self.err(at, format!("`{name}` takes no subscript")));
                }
                return Ok(t);
            }
            // INFO/AC, AN, AF when the header has them; counted from GT otherwise.
            if !declared {
                if let Some(t) = self.counted(&upper, sub, at)? {
                    return Ok(t);
                }
            }
            if upper == "N_MISSING" || upper == "F_MISSING" {
                self.needs.genotypes = true;
                self.needs.samples = true;
                return Ok(Term::Missing(upper == "F_MISSING"));
            }
        }
        if tag == "GT" && !info_only {
            if !self.schema.has_gt {
                return Err(self.err(at, "GT: the store has no genotypes"));
            }
            if sub.is_some() {
                return Err(self.err(at, "GT takes no subscript"));
            }
            self.needs.genotypes = true;
            self.needs.samples = true;
            return Ok(Term::GtText);
        }
        if prefix.is_none()
            && self.field(Category::Info, tag).is_some()
            && self.field(Category::Format, tag).is_some()
        {
            return Err(self.err(
                at,
                format!(
                    "`{tag}` is ambiguous: the header has INFO/{tag} and FORMAT/{tag}; write one"
                ),
            ));
        }
        if !format_only {
            if let Some(k) = self.field(Category::Info, tag) {
                let ty = self.schema.fields[k].ty;
                if ty == VcfType::Character {
                    return Err(self.err(
                        at,
                        format!("{name}: INFO fields of type Character are not supported yet"),
                    ));
                }
                self.need_field(k);
                return Ok(Term::Info {
                    field: k,
                    ty,
                    sel: sel(sub)?,
                });
            }
        }
        if !info_only {
            if let Some(k) = self.field(Category::Format, tag) {
                let f = &self.schema.fields[k];
                if matches!(f.ty, VcfType::String | VcfType::Character) {
                    return Err(self.err(
                        at,
                        format!(
                            "{name}: FORMAT fields of type {:?} are not supported yet",
                            f.ty
                        ),
                    ));
                }
                let (samples, values) = match sub {
                    None => (Sel::All, Sel::All),
                    Some(s) => match s.split_once(':') {
                        Some((a, b)) => (sel(Some(a))?, sel(Some(b))?),
                        // One subscript picks samples: bcftools refuses it where a
                        // sample has several values (AD[1] is not the ALT depth).
                        None if f.number != svar2_vcf::schema::VcfNumber::Fixed(1) => {
                            return Err(self.err(
                                at,
                                format!(
                                    "FORMAT/{tag} can have several values per sample: write \
                                     {tag}[sample:value], e.g. {tag}[*:1]"
                                ),
                            ))
                        }
                        None => (sel(Some(s))?, Sel::All),
                    },
                };
                self.need_field(k);
                self.needs.samples = true;
                return Ok(Term::Format {
                    field: k,
                    samples,
                    sel: values,
                });
            }
        }
        let what = if info_only {
            "INFO"
        } else if format_only {
            "FORMAT"
        } else {
            "INFO or FORMAT"
        };
        Err(self.err(at, format!("`{name}`: no such {what} field in the header")))
    }

    pub(crate) fn compile(&mut self, n: &Node) -> Result<(Expr, Kind), Error> {
        match n {
            Node::Num(v, _) => Ok((Expr::Num(*v), Kind::Num)),
            Node::Str(s, _) => Ok((Expr::Str(s.as_bytes().to_vec()), Kind::Str)),
            Node::Neg(x, at) => {
                let (e, k) = self.compile(x)?;
                if k != Kind::Num {
                    return Err(self.err(*at, "`-` negates numbers only"));
                }
                Ok((Expr::Neg(Box::new(e)), Kind::Num))
            }
            Node::Name(name, sub, at) => {
                let t = self.term(name, sub.as_deref(), *at)?;
                let kind = match &t {
                    Term::Chrom | Term::Id | Term::Ref | Term::Alt(_) | Term::GtText => Kind::Str,
                    Term::Info {
                        ty: VcfType::String | VcfType::Character,
                        ..
                    } => Kind::Str,
                    _ => Kind::Num,
                };
                Ok((Expr::Term(t), kind))
            }
            Node::Call(f, args, at) => self.call(f, args, *at),
            Node::Bin(op, l, r, at) => self.binary(*op, l, r, *at),
        }
    }

    fn call(&mut self, f: &str, args: &[Node], at: usize) -> Result<(Expr, Kind), Error> {
        let upper = f.to_ascii_uppercase();
        let (name, per_sample) = match upper.strip_prefix("SMPL_") {
            Some(x) => (x.to_string(), true),
            None => match f.strip_prefix('s') {
                Some(x) if ["MAX", "MIN", "AVG", "MEAN", "MEDIAN", "SUM", "STDEV"].contains(&x) => {
                    (x.to_string(), true)
                }
                _ => (upper.clone(), false),
            },
        };
        let func = match name.as_str() {
            "MAX" => Func::Max,
            "MIN" => Func::Min,
            "AVG" | "MEAN" => Func::Avg,
            "MEDIAN" => Func::Median,
            "SUM" => Func::Sum,
            "STDEV" => Func::Stdev,
            "COUNT" if !per_sample => Func::Count,
            "ABS" if !per_sample => Func::Abs,
            "N_PASS" | "F_PASS" if !per_sample => {
                let [arg] = args else {
                    return Err(self.err(at, format!("{upper} takes one expression")));
                };
                let (e, k) = self.compile(arg)?;
                if k != Kind::Bool {
                    return Err(self.err(at, format!("{upper} takes a test, such as GQ>20")));
                }
                if !per_sample_expr(&e) {
                    return Err(self.err(
                        at,
                        format!("{upper} counts samples: its test needs a FORMAT field or GT"),
                    ));
                }
                return Ok((Expr::Pass(name == "F_PASS", Box::new(e)), Kind::Num));
            }
            "STRLEN" | "BINOM" | "PHRED" | "FISHER" | "SCOUNT" | "COUNT" => {
                return Err(self.err(at, format!("{f}() is not supported yet")))
            }
            _ => return Err(self.err(at, format!("{f}(): no such function"))),
        };
        let [arg] = args else {
            return Err(self.err(at, format!("{f}() takes one value")));
        };
        let (e, k) = self.compile(arg)?;
        if k == Kind::Str {
            return Err(self.err(at, format!("{f}() takes numbers")));
        }
        if k == Kind::Bool && func != Func::Count {
            return Err(self.err(at, format!("{f}() takes numbers, not a test")));
        }
        Ok((Expr::Func(func, per_sample, Box::new(e)), Kind::Num))
    }

    fn binary(&mut self, op: Op, l: &Node, r: &Node, at: usize) -> Result<(Expr, Kind), Error> {
        // FILTER and GT classes are special forms with a constant string on one side.
        for (a, b) in [(l, r), (r, l)] {
            if let (Node::Name(n, sub, nat), Node::Str(s, _)) = (a, b) {
                if n.eq_ignore_ascii_case("TYPE") && op.compares() {
                    if sub.is_some() {
                        return Err(self.err(*nat, "TYPE takes no subscript"));
                    }
                    return self.variant_type(op, s, at);
                }
                if n.eq_ignore_ascii_case("FILTER") && op.compares() {
                    if sub.is_some() {
                        return Err(self.err(*nat, "FILTER takes no subscript"));
                    }
                    return self.filter(op, s, at);
                }
                if matches!(n.as_str(), "GT" | "FMT/GT" | "FORMAT/GT") && op.compares() {
                    if let Some((class, kind)) = gt_class(s) {
                        if !matches!(op, Op::Eq | Op::Ne | Op::Like | Op::NotLike) {
                            return Err(self.err(at, "GT classes are compared with =, !=, ~ or !~"));
                        }
                        let t = self.term("GT", sub.as_deref(), *nat)?;
                        debug_assert_eq!(t, Term::GtText);
                        let op = match op {
                            Op::Like => Op::Eq,
                            Op::NotLike => Op::Ne,
                            o => o,
                        };
                        let (term, konst) = (
                            Box::new(Expr::Term(Term::GtClass(kind))),
                            Box::new(Expr::Str(class.into_bytes())),
                        );
                        let (x, y) = if std::ptr::eq(a, l) {
                            (term, konst)
                        } else {
                            (konst, term)
                        };
                        return Ok((Expr::CmpStr(op, x, y, None), Kind::Bool));
                    }
                }
            }
        }
        let (le, lk) = self.compile(l)?;
        let (re, rk) = self.compile(r)?;
        if matches!(op, Op::And | Op::AndAnd | Op::Or | Op::OrOr) {
            if lk != Kind::Bool || rk != Kind::Bool {
                return Err(self.err(at, "`&`, `&&`, `|` and `||` join tests, such as DP>10"));
            }
            return Ok((Expr::Logic(op, Box::new(le), Box::new(re)), Kind::Bool));
        }
        if op.arithmetic() {
            if lk != Kind::Num || rk != Kind::Num {
                return Err(self.err(at, "arithmetic takes numbers"));
            }
            return Ok((Expr::Arith(op, Box::new(le), Box::new(re)), Kind::Num));
        }
        // Comparisons.
        if lk == Kind::Bool || rk == Kind::Bool {
            return Err(self.err(at, "a test cannot be compared; join tests with && or ||"));
        }
        let dot = |e: &Expr| matches!(e, Expr::Str(s) if s == b".");
        match (lk, rk) {
            (Kind::Num, Kind::Num) => {
                if matches!(op, Op::Like | Op::NotLike) {
                    return Err(self.err(at, "`~` and `!~` match strings"));
                }
                Ok((Expr::CmpNum(op, Box::new(le), Box::new(re)), Kind::Bool))
            }
            (Kind::Num, Kind::Str) | (Kind::Str, Kind::Num)
                if matches!(op, Op::Eq | Op::Ne) && (dot(&le) || dot(&re)) =>
            {
                let (le, re) = if dot(&le) {
                    (Expr::Missing, re)
                } else {
                    (le, Expr::Missing)
                };
                Ok((Expr::CmpNum(op, Box::new(le), Box::new(re)), Kind::Bool))
            }
            (Kind::Str, Kind::Str) => {
                let regex = if matches!(op, Op::Like | Op::NotLike) {
                    let pat = match (&le, &re) {
                        (_, Expr::Str(p)) | (Expr::Str(p), _) => p.clone(),
                        _ => return Err(self.err(at, "`~` needs a constant pattern on one side")),
                    };
                    Some(self.regex(&String::from_utf8_lossy(&pat), at)?)
                } else if matches!(op, Op::Eq | Op::Ne) {
                    None
                } else {
                    return Err(self.err(at, "strings compare with =, !=, ~ or !~"));
                };
                if per_sample_str(&le) && per_sample_str(&re) {
                    return Err(self.err(at, "comparison between samples is not supported"));
                }
                // A pattern goes on the right: the other side is what it is tested on.
                let (le, re) = match (&le, &re) {
                    (Expr::Str(_), r) if regex.is_some() && !matches!(r, Expr::Str(_)) => (re, le),
                    _ => (le, re),
                };
                Ok((
                    Expr::CmpStr(op, Box::new(le), Box::new(re), regex),
                    Kind::Bool,
                ))
            }
            _ => Err(self.err(at, "a string compared with a number")),
        }
    }

    fn regex(&self, pattern: &str, at: usize) -> Result<Regex, Error> {
        let (p, icase) = crate::bre::translate(pattern)
            .map_err(|e| self.err(at, format!("the pattern {pattern:?}: {e}")))?;
        regex::bytes::RegexBuilder::new(&p)
            .case_insensitive(icase)
            .unicode(false)
            .build()
            .map_err(|e| {
                let why = e.to_string();
                let why = why.lines().last().unwrap_or("").trim().to_string();
                self.err(
                    at,
                    format!("the pattern {pattern:?} does not compile: {why}"),
                )
            })
    }

    /// `TYPE="snp"`…: the type's bit as bcftools numbers it (htslib's bit shifted
    /// one left; `ref`, no variant type, is 1).
    fn variant_type(&mut self, op: Op, value: &str, at: usize) -> Result<(Expr, Kind), Error> {
        if !matches!(op, Op::Eq | Op::Ne | Op::Like | Op::NotLike) {
            return Err(self.err(at, "TYPE is compared with =, !=, ~ or !~"));
        }
        let bit = match value.to_ascii_lowercase().as_str() {
            "snp" | "snps" => VCF_SNP << 1,
            "indel" | "indels" => VCF_INDEL << 1,
            "mnp" | "mnps" => VCF_MNP << 1,
            "other" => VCF_OTHER << 1,
            "bnd" => VCF_BND << 1,
            "overlap" => VCF_OVERLAP << 1,
            "ref" => 1,
            _ => {
                return Err(self.err(
                    at,
                    format!(
                        "the type {value:?} is not one of snp, indel, mnp, other, bnd, overlap, ref"
                    ),
                ))
            }
        };
        Ok((Expr::Type(op, bit), Kind::Bool))
    }

    fn filter(&mut self, op: Op, value: &str, at: usize) -> Result<(Expr, Kind), Error> {
        if !matches!(op, Op::Eq | Op::Ne | Op::Like | Op::NotLike) {
            return Err(self.err(at, "FILTER is compared with =, !=, ~ or !~"));
        }
        let mut ids = Vec::new();
        let mut dot = false;
        for part in value.split(';') {
            if part == "." {
                dot = true;
                continue;
            }
            let i = self
                .schema
                .filters
                .iter()
                .position(|f| f.id == part)
                .ok_or_else(|| self.err(at, format!("the filter {part:?} is not in the header")))?;
            ids.push(i);
        }
        if dot && !ids.is_empty() {
            return Err(self.err(at, "a FILTER value is either \".\" or filter names"));
        }
        Ok((Expr::Filter(op, ids), Kind::Bool))
    }
}

/// Whether any value of `e` is per sample.
fn per_sample_expr(e: &Expr) -> bool {
    match e {
        Expr::Term(t) => t.per_sample(),
        Expr::Num(_) | Expr::Missing | Expr::Str(_) | Expr::Filter(..) | Expr::Type(..) => false,
        Expr::Neg(x) | Expr::Func(_, _, x) | Expr::Pass(_, x) => per_sample_expr(x),
        Expr::Arith(_, a, b)
        | Expr::CmpNum(_, a, b)
        | Expr::CmpStr(_, a, b, _)
        | Expr::Logic(_, a, b) => per_sample_expr(a) || per_sample_expr(b),
    }
}

fn per_sample_str(e: &Expr) -> bool {
    matches!(e, Expr::Term(t) if t.per_sample())
}

/// A GT class keyword as bcftools spells it after normalising, and its kind.
fn gt_class(s: &str) -> Option<(String, u8)> {
    let l = s.to_ascii_lowercase();
    Some(match l.as_str() {
        "hom" | "het" | "hap" => (l, 3),
        "mis" | "ref" | "alt" => (l, 4),
        "rr" => (l, 2),
        "ra" | "ar" => ("ra".into(), 2),
        "a" | "r" => (l, 2),
        "aa" if s == "aA" || s == "Aa" => ("aA".into(), 2),
        "aa" => ("aa".into(), 2),
        _ => return None,
    })
}

/// A value while the expression is tested: a list of numbers or strings per site, or
/// per sample (`ns` samples of `n1` numbers, or one string each), and, for tests, the
/// site's and each sample's verdict.
#[derive(Debug, Clone, Default)]
pub(crate) struct Val {
    nums: Vec<f64>,
    n1: usize,
    pub(crate) ns: usize,
    is_str: bool,
    /// Site strings: none (absent) or one comma-separated list; per sample: one each.
    strs: Vec<Vec<u8>>,
    pub(crate) site: bool,
    pub(crate) pass: Vec<bool>,
    used: Vec<bool>,
    /// A FORMAT field as read (COUNT counts its values rather than passing samples).
    raw: bool,
}

impl Val {
    fn num(v: Vec<f64>) -> Val {
        Val {
            nums: v,
            ..Val::default()
        }
    }

    /// One string per sample, every sample in use.
    fn sample_strings(strs: Vec<Vec<u8>>) -> Val {
        let ns = strs.len();
        Val {
            strs,
            ns,
            is_str: true,
            used: vec![true; ns],
            pass: vec![false; ns],
            ..Val::default()
        }
    }

    fn string(s: Option<Vec<u8>>) -> Val {
        Val {
            is_str: true,
            strs: s.into_iter().collect(),
            ..Val::default()
        }
    }

    /// The samples `t` passes, for the samples this value uses.
    fn take_passes(&mut self, t: &Val) {
        for i in 0..self.ns {
            if self.used[i] {
                self.pass[i] = t.pass[i];
            }
        }
    }

    fn sample(&self, i: usize) -> &[f64] {
        &self.nums[i * self.n1..(i + 1) * self.n1]
    }
}

/// `[missing both? , one missing, both missing]` passes, per operator.
fn missing_logic(op: Op) -> [bool; 3] {
    match op {
        Op::Eq | Op::Like => [true, false, true],
        Op::Ne | Op::NotLike => [true, true, false],
        _ => [false, false, false],
    }
}

fn cmp(op: Op, a: f64, b: f64) -> bool {
    let big = 16_777_216.0;
    if a > big || b > big {
        cmp_exact(op, a, b)
    } else {
        cmp_exact(op, a as f32 as f64, b as f32 as f64)
    }
}

fn cmp_exact(op: Op, a: f64, b: f64) -> bool {
    match op {
        Op::Eq => a == b,
        Op::Ne => a != b,
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        _ => false,
    }
}

/// The result value of a binary operation on `a` and `b`: their samples.
fn init_samples(a: &Val, b: &Val) -> Val {
    let ns = a.ns.max(b.ns);
    let mut used = vec![false; ns];
    for (i, u) in used.iter_mut().enumerate() {
        *u = a.used.get(i).copied().unwrap_or(false) || b.used.get(i).copied().unwrap_or(false);
    }
    Val {
        ns,
        used,
        pass: vec![false; ns],
        ..Val::default()
    }
}

fn cmp_num(op: Op, a: &Val, b: &Val) -> Result<Val, String> {
    let ml = missing_logic(op);
    let mut r = init_samples(a, b);
    if a.ns == 0 && b.ns == 0 {
        if a.nums.is_empty() && b.nums.is_empty() {
            r.site = ml[2];
        } else if a.nums.is_empty() || b.nums.is_empty() {
            let t = if a.nums.is_empty() { b } else { a };
            r.site = t
                .nums
                .iter()
                .any(|&v| if absent(v) { ml[2] } else { ml[1] });
        } else {
            'outer: for &x in &a.nums {
                for &y in &b.nums {
                    let nmiss = absent(x) as usize + absent(y) as usize;
                    let hit = if nmiss > 0 { ml[nmiss] } else { cmp(op, x, y) };
                    if hit {
                        r.site = true;
                        break 'outer;
                    }
                }
            }
        }
        return Ok(r);
    }
    if a.nums.is_empty() && b.nums.is_empty() {
        if ml[2] {
            for i in 0..r.ns {
                if r.used[i] {
                    r.pass[i] = true;
                    r.site = true;
                }
            }
        }
    } else if a.nums.is_empty() || b.nums.is_empty() {
        let t = if a.nums.is_empty() { b } else { a };
        if t.ns == 0 {
            let miss = t.nums.iter().any(|&v| absent(v)) as usize;
            if ml[miss + 1] {
                for i in 0..r.ns {
                    if r.used[i] {
                        r.pass[i] = true;
                        r.site = true;
                    }
                }
            }
        } else {
            for i in 0..t.ns {
                if !r.used[i] {
                    continue;
                }
                let miss = t.sample(i).iter().any(|&v| absent(v)) as usize;
                if ml[miss + 1] {
                    r.pass[i] = true;
                    r.site = true;
                }
            }
        }
    } else if a.ns > 0 && b.ns > 0 {
        if a.n1 != b.n1 {
            return Err(format!(
                "incompatible numbers of per-sample values in a comparison: {} vs {}",
                a.n1, b.n1
            ));
        }
        for i in 0..a.ns {
            if !a.used[i] || !b.used[i] {
                r.used[i] = false;
                continue;
            }
            for (&x, &y) in a.sample(i).iter().zip(b.sample(i)) {
                let amiss = absent(x) as usize;
                if amiss > 0 && !ml[0] {
                    continue;
                }
                let nmiss = amiss + absent(y) as usize;
                let hit = if nmiss > 0 { ml[nmiss] } else { cmp(op, x, y) };
                if hit {
                    r.pass[i] = true;
                    r.site = true;
                    break;
                }
            }
        }
    } else {
        // One side per sample, the other per site.
        let (s, t, s_left) = if a.ns > 0 {
            (a, b, true)
        } else {
            (b, a, false)
        };
        for i in 0..s.ns {
            if !r.used[i] {
                continue;
            }
            'sample: for &x in s.sample(i) {
                let miss = absent(x) as usize;
                if miss > 0 && !ml[0] {
                    continue;
                }
                for &y in &t.nums {
                    let nmiss = miss + absent(y) as usize;
                    let hit = if nmiss > 0 {
                        ml[nmiss]
                    } else if s_left {
                        cmp(op, x, y)
                    } else {
                        cmp(op, y, x)
                    };
                    if hit {
                        r.pass[i] = true;
                        r.site = true;
                        break 'sample;
                    }
                }
            }
        }
    }
    Ok(r)
}

fn pieces(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&c| c == b',')
}

fn has_missing(s: &[u8]) -> bool {
    pieces(s).any(|p| p == b".")
}

fn match_strings(a: &[u8], b: &[u8], op: Op, ml: [bool; 3]) -> bool {
    for x in pieces(a) {
        let miss = (x == b".") as usize;
        for y in pieces(b) {
            let nmiss = miss + (y == b".") as usize;
            if nmiss > 0 {
                if ml[nmiss] {
                    return true;
                }
            } else if (x == y) != (op == Op::Ne) {
                return true;
            }
        }
    }
    false
}

fn match_regex(re: &Regex, s: &[u8], op: Op, ml: [bool; 3]) -> bool {
    for x in pieces(s) {
        if x == b"." && ml[1] {
            return true;
        }
        if re.is_match(x) != (op == Op::NotLike) {
            return true;
        }
    }
    false
}

fn cmp_str(op: Op, a: &Val, b: &Val, re: Option<&Regex>) -> Val {
    let ml = missing_logic(op);
    let mut r = init_samples(a, b);
    let both = |x: &[u8], y: &[u8]| match re {
        None => match_strings(x, y, op, ml),
        // The pattern is the constant: match the other side.
        Some(re) => match_regex(re, x, op, ml),
    };
    if a.ns == 0 && b.ns == 0 {
        match (a.strs.first(), b.strs.first()) {
            (None, None) => r.site = ml[2],
            (Some(s), None) | (None, Some(s)) => r.site = ml[has_missing(s) as usize + 1],
            // With a pattern, `b` is it (the compiler puts it on the right).
            (Some(x), Some(y)) => r.site = both(x, y),
        }
        return r;
    }
    let (s, t) = if a.ns > 0 { (a, b) } else { (b, a) };
    match (s.strs.is_empty(), t.strs.first()) {
        (true, None) => {
            if ml[2] {
                for i in 0..r.ns {
                    if r.used[i] {
                        r.pass[i] = true;
                        r.site = true;
                    }
                }
            }
        }
        (true, Some(c)) => {
            if ml[has_missing(c) as usize + 1] {
                for i in 0..r.ns {
                    if r.used[i] {
                        r.pass[i] = true;
                        r.site = true;
                    }
                }
            }
        }
        (false, None) => {
            for i in 0..s.ns {
                if r.used[i] && ml[has_missing(&s.strs[i]) as usize + 1] {
                    r.pass[i] = true;
                    r.site = true;
                }
            }
        }
        (false, Some(c)) => {
            for i in 0..s.ns {
                if r.used[i] && both(&s.strs[i], c) {
                    r.pass[i] = true;
                    r.site = true;
                }
            }
        }
    }
    r
}

fn arith(op: Op, a: &Val, b: &Val) -> Result<Val, String> {
    let f = |x: f64, y: f64| -> f64 {
        if absent(x) || absent(y) {
            return missing();
        }
        match op {
            Op::Add => x + y,
            Op::Sub => x - y,
            Op::Mul => x * y,
            Op::Div => x / y,
            Op::Mod => {
                let (x, y) = (x as i64, y as i64);
                if y == 0 {
                    missing()
                } else {
                    (x % y) as f64
                }
            }
            _ => missing(),
        }
    };
    let mut r = Val::default();
    if a.nums.is_empty() || b.nums.is_empty() {
        return Ok(r);
    }
    r = init_samples(a, b);
    if a.ns == 0 && b.ns == 0 {
        let (na, nb) = (a.nums.len(), b.nums.len());
        if na != nb && na != 1 && nb != 1 {
            return Err(format!(
                "arithmetic on vectors of different lengths: {na} vs {nb}"
            ));
        }
        let n = na.max(nb);
        r.nums = (0..n)
            .map(|i| {
                f(
                    a.nums[if na > 1 { i } else { 0 }],
                    b.nums[if nb > 1 { i } else { 0 }],
                )
            })
            .collect();
    } else if a.ns > 0 && b.ns > 0 {
        if a.n1 != b.n1 && a.n1 != 1 && b.n1 != 1 {
            return Err(format!(
                "arithmetic on vectors of different lengths: {} vs {}",
                a.n1, b.n1
            ));
        }
        r.n1 = a.n1.max(b.n1);
        for i in 0..r.ns {
            for k in 0..r.n1 {
                let x = a.sample(i)[if a.n1 > 1 { k } else { 0 }];
                let y = b.sample(i)[if b.n1 > 1 { k } else { 0 }];
                r.nums.push(f(x, y));
            }
        }
    } else {
        let (s, t, s_left) = if a.ns > 0 {
            (a, b, true)
        } else {
            (b, a, false)
        };
        if t.nums.len() != 1 {
            return Err("arithmetic between per-sample values and a vector".into());
        }
        r.n1 = s.n1;
        let y = t.nums[0];
        r.nums = s
            .nums
            .iter()
            .map(|&x| if s_left { f(x, y) } else { f(y, x) })
            .collect();
    }
    if r.nums.iter().all(|&v| absent(v)) {
        r.nums.clear();
    }
    Ok(r)
}

fn logic(op: Op, a: &Val, b: &Val) -> Val {
    let mut r = init_samples(a, b);
    match op {
        Op::Or | Op::OrOr => {
            if !a.site && !b.site {
                return r;
            }
            r.site = true;
            if a.ns == 0 && b.ns == 0 {
                return r;
            }
            if op == Op::OrOr {
                if (a.ns == 0 && !a.site) || (b.ns == 0 && !b.site) {
                    r.take_passes(if a.ns > 0 { a } else { b });
                } else {
                    for i in 0..r.ns {
                        if r.used[i] {
                            r.pass[i] = true;
                        }
                    }
                }
                return r;
            }
            if a.ns == 0 || b.ns == 0 {
                r.take_passes(if a.ns > 0 { a } else { b });
                return r;
            }
            for i in 0..r.ns {
                if r.used[i] {
                    r.pass[i] = a.pass[i] || b.pass[i];
                }
            }
        }
        _ => {
            if !a.site || !b.site {
                return r;
            }
            if a.ns == 0 && b.ns == 0 {
                r.site = true;
                return r;
            }
            if a.ns == 0 || b.ns == 0 {
                r.take_passes(if a.ns > 0 { a } else { b });
                r.site = true;
                return r;
            }
            if op == Op::AndAnd {
                for i in 0..r.ns {
                    if r.used[i] {
                        r.pass[i] = a.pass[i] || b.pass[i];
                    }
                }
                r.site = true;
            } else {
                for i in 0..r.ns {
                    if r.used[i] {
                        r.pass[i] = a.pass[i] && b.pass[i];
                        r.site |= r.pass[i];
                    }
                }
            }
        }
    }
    r
}

fn func(f: Func, per_sample: bool, a: &Val) -> Val {
    if f == Func::Count {
        let n = if a.ns > 0 && a.raw && a.nums.is_empty() {
            0
        } else if a.ns > 0 && a.raw {
            (0..a.ns)
                .filter(|&i| a.used[i])
                .map(|i| a.sample(i).iter().filter(|&&v| !absent(v)).count())
                .sum()
        } else if a.ns > 0 {
            a.pass.iter().filter(|&&p| p).count()
        } else if a.is_str {
            a.strs.first().map_or(0, |s| pieces(s).count())
        } else {
            a.nums.len()
        };
        return Val::num(vec![n as f64]);
    }
    if f == Func::Abs {
        let mut r = a.clone();
        r.raw = false;
        for v in r.nums.iter_mut() {
            if !absent(*v) {
                *v = v.abs();
            } else {
                *v = missing();
            }
        }
        return r;
    }
    let reduce = |vals: &mut Vec<f64>| -> Option<f64> {
        vals.retain(|v| !absent(*v));
        if vals.is_empty() {
            return None;
        }
        let n = vals.len() as f64;
        Some(match f {
            Func::Max => vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            Func::Min => vals.iter().cloned().fold(f64::INFINITY, f64::min),
            Func::Sum => vals.iter().sum(),
            Func::Avg => vals.iter().sum::<f64>() / n,
            Func::Stdev => {
                if vals.len() == 1 {
                    0.0
                } else {
                    let m = vals.iter().sum::<f64>() / n;
                    (vals.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt()
                }
            }
            Func::Median => {
                vals.sort_by(|x, y| x.total_cmp(y));
                let k = vals.len();
                if k % 2 == 1 {
                    vals[k / 2]
                } else {
                    (vals[k / 2 - 1] + vals[k / 2]) * 0.5
                }
            }
            Func::Count | Func::Abs => unreachable!("handled above"),
        })
    };
    if per_sample && a.ns > 0 {
        let mut r = Val {
            ns: a.ns,
            n1: 1,
            used: a.used.clone(),
            pass: vec![false; a.ns],
            ..Val::default()
        };
        for i in 0..a.ns {
            let v = if a.used[i] && !a.nums.is_empty() {
                reduce(&mut a.sample(i).to_vec()).unwrap_or_else(missing)
            } else {
                missing()
            };
            r.nums.push(v);
        }
        return r;
    }
    if a.nums.is_empty() {
        return Val::default();
    }
    let mut all: Vec<f64> = if a.ns > 0 {
        (0..a.ns)
            .filter(|&i| a.used[i])
            .flat_map(|i| a.sample(i).to_vec())
            .collect()
    } else {
        a.nums.clone()
    };
    match reduce(&mut all) {
        Some(v) => Val::num(vec![v]),
        None => Val::default(),
    }
}

/// `GT="het"` and the like: the class kind and keyword, either way round.
fn gt_class_test<'e>(a: &'e Expr, b: &'e Expr) -> Option<(&'e u8, &'e [u8])> {
    match (a, b) {
        (Expr::Term(Term::GtClass(k)), Expr::Str(c))
        | (Expr::Str(c), Expr::Term(Term::GtClass(k))) => Some((k, c)),
        _ => None,
    }
}

/// A record's genotype calls as stored.
enum Calls<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
}

/// A call's class of `kind` (see [`Term::GtClass`]) as bcftools names it; `"."` for a
/// missing call where the kind has no word for it. Alleles stop at the first fill
/// (a lower ploidy); a missing allele makes the call missing.
fn classify<T: Copy + Into<i64>>(call: &[T], kind: u8) -> &'static [u8] {
    let (mut n, mut missing, mut has_ref, mut het, mut first) = (0, false, false, false, 0i64);
    for &a in call {
        let a: i64 = a.into();
        if a == -2 {
            break;
        }
        if a < 0 {
            missing = true;
            break;
        }
        has_ref |= a == 0;
        if n == 0 {
            first = a;
        } else if a != first {
            het = true;
        }
        n += 1;
    }
    let missing = missing || n == 0;
    match kind {
        4 if missing => b"mis",
        4 if !has_ref => b"alt",
        4 if !het => b"ref",
        4 => b"alt",
        _ if missing => b".",
        3 if n == 1 => b"hap",
        3 if !het => b"hom",
        3 => b"het",
        _ if n == 1 && has_ref => b"r",
        _ if n == 1 => b"a",
        _ if !het && has_ref => b"rr",
        _ if !het => b"aa",
        _ if has_ref => b"ra",
        _ => b"aA",
    }
}

/// One record's context: the block, and where each field's values sit in it.
pub(crate) struct Record<'a> {
    pub schema: &'a Schema,
    pub b: &'a Block,
    pub r: usize,
    /// Each block sample's place among the block's samples in file order (None: the
    /// block is in file order).
    pub ranks: Option<&'a [usize]>,
    /// Block position of each schema field's values (INFO in `b.info`, FORMAT in
    /// `b.format`), by schema index.
    pub at: &'a [Option<usize>],
}

fn float_of(bits: u32) -> f64 {
    match bits {
        0x7F80_0001 => missing(),
        0x7F80_0002 => end(),
        b => f32::from_bits(b) as f64,
    }
}

fn int_of(v: i64) -> f64 {
    match v {
        -1 => missing(),
        -2 => end(),
        v => v as f64,
    }
}

/// Number `i` of a dense field.
fn number_at(d: &Dense, i: usize) -> f64 {
    match d {
        Dense::F32(v) => float_of(v[i]),
        Dense::Bool(v) => v[i] as f64,
        d => int_of(d.int(i).unwrap_or(-1)),
    }
}

/// Numbers `[from, from + n)` of a dense field.
fn numbers(d: &Dense, from: usize, n: usize) -> Vec<f64> {
    (from..from + n).map(|i| number_at(d, i)).collect()
}

impl Record<'_> {
    fn alts(&self) -> Vec<&[u8]> {
        let w = self.b.allele_width;
        (1..w)
            .map(|k| self.b.alleles.get(self.r * w + k))
            .take_while(|a| !a.is_empty())
            .collect()
    }

    /// Allele counts from GT (or INFO/AC and AN when both are there), REF first.
    fn counts(&self) -> Option<Vec<i64>> {
        let n_alleles = self.alts().len() + 1;
        let info = |name: &str| {
            let k = self
                .schema
                .fields
                .iter()
                .position(|f| f.category == Category::Info && f.name == name)?;
            let f = &self.b.info[self.at[k]?];
            let v: Vec<i64> = (0..f.width)
                .filter_map(|i| f.values.int(self.r * f.width + i))
                .filter(|&x| x >= 0)
                .collect();
            (!v.is_empty()).then_some(v)
        };
        if let (Some(ac), Some(an)) = (info("AC"), info("AN")) {
            let mut c = vec![0i64; n_alleles];
            for (k, &x) in ac.iter().enumerate().take(n_alleles - 1) {
                c[k + 1] = x;
            }
            c[0] = an[0] - c[1..].iter().sum::<i64>();
            return Some(c);
        }
        self.b.gt.as_ref()?;
        let mut c = vec![0i64; n_alleles];
        fn count<T: Copy + Into<i64>>(calls: &[T], c: &mut [i64]) -> bool {
            let mut any = false;
            for &a in calls {
                let a: i64 = a.into();
                if a >= 0 && (a as usize) < c.len() {
                    c[a as usize] += 1;
                    any = true;
                }
            }
            any
        }
        let any = match self.calls() {
            Calls::I8(v) => count(v, &mut c),
            Calls::I16(v) => count(v, &mut c),
            Calls::I32(v) => count(v, &mut c),
            Calls::I64(v) => count(v, &mut c),
        };
        any.then_some(c)
    }

    /// Sample `j`'s alleles, up to the first fill (a lower ploidy).
    fn call(&self, j: usize) -> (Vec<i64>, bool) {
        // A record without GT (a conversion's, read from the file) has no calls.
        let Some(g) = self.b.gt.as_ref() else {
            return (Vec::new(), false);
        };
        let at = (self.r * self.b.n_samples + j) * g.ploidy;
        let alleles = (at..at + g.ploidy)
            .map(|i| g.alleles.int(i).unwrap_or(-2))
            .take_while(|&a| a != -2)
            .collect();
        (
            alleles,
            g.phased
                .get(self.r * self.b.n_samples + j)
                .is_some_and(|&p| p != 0),
        )
    }

    /// The record's calls, `ploidy` alleles per sample, typed as stored.
    fn calls(&self) -> Calls<'_> {
        let Some(g) = self.b.gt.as_ref() else {
            return Calls::I8(&[]);
        };
        let n = self.b.n_samples * g.ploidy;
        let at = self.r * n;
        match &g.alleles {
            Dense::I8(v) => Calls::I8(&v[at..at + n]),
            Dense::I16(v) => Calls::I16(&v[at..at + n]),
            Dense::I32(v) => Calls::I32(&v[at..at + n]),
            Dense::I64(v) => Calls::I64(&v[at..at + n]),
            _ => Calls::I8(&[]),
        }
    }

    /// Sample `j`'s GT class of `kind` (see [`Term::GtClass`]).
    fn gt_class(&self, kind: u8, j: usize) -> &'static [u8] {
        let Some(p) = self.b.gt.as_ref().map(|g| g.ploidy) else {
            return b".";
        };
        match self.calls() {
            Calls::I8(v) => classify(&v[j * p..(j + 1) * p], kind),
            Calls::I16(v) => classify(&v[j * p..(j + 1) * p], kind),
            Calls::I32(v) => classify(&v[j * p..(j + 1) * p], kind),
            Calls::I64(v) => classify(&v[j * p..(j + 1) * p], kind),
        }
    }

    /// `GT="het"` (or `!=`) for every sample: the string comparison's outcome (a
    /// class `"."` is missing: `=` fails and `!=` passes) without building strings —
    /// this runs for every call of every record such a filter sees.
    fn gt_classes(&self, kind: u8, class: &[u8], op: Op) -> Val {
        let ns = self.b.n_samples;
        let p = self.b.gt.as_ref().map_or(1, |g| g.ploidy).max(1);
        let mut r = Val {
            ns,
            used: vec![true; ns],
            pass: vec![false; ns],
            ..Val::default()
        };
        fn each<T: Copy + Into<i64>>(
            calls: &[T],
            p: usize,
            kind: u8,
            class: &[u8],
            op: Op,
            pass: &mut [bool],
        ) -> bool {
            let mut any = false;
            for (call, out) in calls.chunks_exact(p).zip(pass.iter_mut()) {
                let c = classify(call, kind);
                let hit = if c == b"." {
                    op == Op::Ne
                } else {
                    (c == class) == (op == Op::Eq)
                };
                *out = hit;
                any |= hit;
            }
            any
        }
        if self.b.gt.is_none() {
            // No calls: every sample's class is missing.
            r.pass.iter_mut().for_each(|x| *x = op == Op::Ne);
            r.site = op == Op::Ne && ns > 0;
            return r;
        }
        r.site = match self.calls() {
            Calls::I8(v) => each(v, p, kind, class, op, &mut r.pass),
            Calls::I16(v) => each(v, p, kind, class, op, &mut r.pass),
            Calls::I32(v) => each(v, p, kind, class, op, &mut r.pass),
            Calls::I64(v) => each(v, p, kind, class, op, &mut r.pass),
        };
        r
    }

    fn term(&self, t: &Term) -> Val {
        let b = self.b;
        let r = self.r;
        match t {
            Term::Chrom => Val::string(Some(
                self.schema
                    .contig_label(b.contig[r] as i64)
                    .as_bytes()
                    .to_vec(),
            )),
            Term::Pos => Val::num(vec![b.pos[r] as f64]),
            Term::Id => Val::string(Some(b.id.get(r).to_vec())),
            Term::Ref => Val::string(Some(b.alleles.get(r * b.allele_width).to_vec())),
            Term::Alt(sel) => {
                let alts = self.alts();
                let s = match sel {
                    Sel::One(i) => alts.get(*i).map_or(b".".to_vec(), |a| a.to_vec()),
                    _ if alts.is_empty() => b".".to_vec(),
                    sel => alts
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| sel.keeps(*i))
                        .map(|(_, a)| a.to_vec())
                        .collect::<Vec<_>>()
                        .join(&b","[..]),
                };
                Val::string(Some(s))
            }
            Term::Qual => Val::num(vec![float_of(b.qual[r])]),
            Term::NAlt => Val::num(vec![self.alts().len() as f64]),
            Term::NSamples => Val::num(vec![self.schema.samples.len() as f64]),
            Term::ILen => {
                let rlen = b.alleles.get(r * b.allele_width).len() as f64;
                Val::num(
                    self.alts()
                        .iter()
                        // bcftools 1.16: equal lengths are missing, symbolic alleles by
                        // their text.
                        .map(|a| {
                            if a.len() as f64 == rlen {
                                missing()
                            } else {
                                a.len() as f64 - rlen
                            }
                        })
                        .collect(),
                )
            }
            Term::Counted(what, sel) => {
                let Some(c) = self.counts() else {
                    return match what {
                        Counted::An => Val::num(vec![0.0]),
                        _ => Val::default(),
                    };
                };
                let an: i64 = c.iter().sum();
                if an == 0 {
                    return match what {
                        Counted::An => Val::num(vec![0.0]),
                        _ => Val::default(),
                    };
                }
                if *what == Counted::An {
                    return Val::num(vec![an as f64]);
                }
                let alt: Vec<f64> = match sel {
                    Sel::One(i) => vec![c.get(i + 1).copied().unwrap_or(0) as f64],
                    _ if c.len() == 1 => vec![0.0],
                    _ => c[1..].iter().map(|&x| x as f64).collect(),
                };
                let an = an as f64;
                Val::num(
                    alt.into_iter()
                        .map(|x| match what {
                            Counted::Ac => x,
                            Counted::Af => x / an,
                            Counted::Mac => {
                                if x > an * 0.5 {
                                    an - x
                                } else {
                                    x
                                }
                            }
                            Counted::Maf => {
                                let f = x / an;
                                if f > 0.5 {
                                    1.0 - f
                                } else {
                                    f
                                }
                            }
                            Counted::An => an,
                        })
                        .collect(),
                )
            }
            Term::Missing(fraction) => {
                if b.n_samples == 0 {
                    return Val::num(vec![0.0]);
                }
                if b.gt.is_none() {
                    // No GT in the record (or the header): bcftools has no value.
                    return Val::default();
                }
                let n = (0..b.n_samples)
                    .filter(|&j| self.call(j).0.contains(&-1))
                    .count() as f64;
                Val::num(vec![if *fraction { n / b.n_samples as f64 } else { n }])
            }
            Term::Info { field, ty, sel } => {
                let Some(f) = self.at[*field].map(|i| &b.info[i]) else {
                    return if *ty == VcfType::Flag {
                        Val::num(vec![0.0])
                    } else {
                        Val::default()
                    };
                };
                let w = f.width;
                match &f.values {
                    Dense::Str(s) => {
                        let all: Vec<&[u8]> = (0..w).map(|k| s.get(r * w + k)).collect();
                        let kept: Vec<&[u8]> = match sel {
                            Sel::One(i) => {
                                // One string value may itself be a comma list.
                                let joined = all
                                    .iter()
                                    .filter(|x| !x.is_empty())
                                    .cloned()
                                    .collect::<Vec<_>>()
                                    .join(&b","[..]);
                                let piece =
                                    joined.split(|&c| c == b',').nth(*i).map(|p| p.to_vec());
                                return Val::string(Some(piece.unwrap_or_else(|| b".".to_vec())));
                            }
                            _ => all.into_iter().filter(|x| !x.is_empty()).collect(),
                        };
                        if kept.is_empty() {
                            return Val::string(None);
                        }
                        let joined = kept.join(&b","[..]);
                        match sel {
                            Sel::All => Val::string(Some(joined)),
                            sel => Val::string(Some(
                                joined
                                    .split(|&c| c == b',')
                                    .enumerate()
                                    .filter(|(i, _)| sel.keeps(*i))
                                    .map(|(_, p)| p.to_vec())
                                    .collect::<Vec<_>>()
                                    .join(&b","[..]),
                            )),
                        }
                    }
                    Dense::Char(v) => {
                        let s: Vec<u8> = (0..w)
                            .map(|k| v[r * w + k])
                            .take_while(|&c| c != 0)
                            .map(|c| char::from_u32(c).unwrap_or('?'))
                            .collect::<String>()
                            .into_bytes();
                        Val::string((!s.is_empty()).then_some(s))
                    }
                    Dense::Bool(v) if *ty == VcfType::Flag => Val::num(vec![v[r * w] as f64]),
                    d => {
                        let mut vals = numbers(d, r * w, w);
                        while vals.last().is_some_and(|v| v.to_bits() == END_BITS) {
                            vals.pop();
                        }
                        if vals.iter().all(|&v| absent(v)) {
                            return Val::default();
                        }
                        match sel {
                            Sel::All => Val::num(vals),
                            Sel::One(i) => {
                                Val::num(vec![vals.get(*i).copied().unwrap_or_else(missing)])
                            }
                            sel => Val::num(
                                vals.into_iter()
                                    .enumerate()
                                    .filter(|(i, _)| sel.keeps(*i))
                                    .map(|(_, v)| v)
                                    .collect(),
                            ),
                        }
                    }
                }
            }
            Term::Format {
                field,
                samples,
                sel,
            } => {
                let ns = b.n_samples;
                // Sample subscripts count the samples in file order (bcftools reads a
                // subset in file order whatever order -s names them in).
                let rank = |j: usize| self.ranks.map_or(j, |r| r[j]);
                let used: Vec<bool> = (0..ns).map(|j| samples.keeps(rank(j))).collect();
                let absent_field = |used| Val {
                    ns,
                    used,
                    pass: vec![false; ns],
                    raw: true,
                    ..Val::default()
                };
                let Some(f) = self.at[*field].map(|i| &b.format[i]) else {
                    return absent_field(used);
                };
                // The store pads every cell to the file's widest; bcftools sees this
                // record's own width (its longest cell), padding shorter cells with
                // vector ends.
                let stride = f.width;
                let end_at = |i: usize| match &f.values {
                    Dense::F32(v) => v[i] == 0x7F80_0002,
                    d => d.int(i) == Some(-2),
                };
                let w = (0..ns)
                    .map(|j| {
                        let at = (r * ns + j) * stride;
                        (0..stride)
                            .rev()
                            .find(|&k| !end_at(at + k))
                            .map_or(0, |k| k + 1)
                    })
                    .max()
                    .unwrap_or(0);
                if w == 0 {
                    return absent_field(used);
                }
                let n1 = match sel {
                    Sel::All => w,
                    Sel::One(_) => 1,
                    s => (0..w).filter(|&k| s.keeps(k)).count().max(1),
                };
                let mut nums = Vec::with_capacity(ns * n1);
                for j in 0..ns {
                    let at = (r * ns + j) * stride;
                    match sel {
                        Sel::All => nums.extend((at..at + w).map(|i| number_at(&f.values, i))),
                        Sel::One(i) => nums.push(if *i < w {
                            number_at(&f.values, at + i)
                        } else {
                            missing()
                        }),
                        s => {
                            let before = nums.len();
                            nums.extend(
                                (0..w)
                                    .filter(|&k| s.keeps(k))
                                    .map(|k| number_at(&f.values, at + k)),
                            );
                            if nums.len() == before {
                                nums.push(missing());
                            }
                        }
                    }
                }
                if nums.iter().all(|&v| absent(v)) {
                    nums.clear();
                }
                Val {
                    nums,
                    n1,
                    ns,
                    used,
                    pass: vec![false; ns],
                    raw: true,
                    ..Val::default()
                }
            }
            Term::GtClass(kind) => {
                let strs = (0..b.n_samples)
                    .map(|j| self.gt_class(*kind, j).to_vec())
                    .collect();
                Val::sample_strings(strs)
            }
            Term::GtText => {
                let strs = (0..b.n_samples)
                    .map(|j| {
                        let (alleles, phased) = self.call(j);
                        let mut s = Vec::new();
                        for (k, a) in alleles.iter().enumerate() {
                            if k > 0 {
                                s.push(if phased { b'|' } else { b'/' });
                            }
                            if *a < 0 {
                                s.push(b'.');
                            } else {
                                s.extend_from_slice(a.to_string().as_bytes());
                            }
                        }
                        if s.is_empty() {
                            s.push(b'.');
                        }
                        s
                    })
                    .collect();
                Val::sample_strings(strs)
            }
        }
    }

    fn filter(&self, op: Op, ids: &[usize]) -> bool {
        let b = self.b;
        let set: Vec<usize> = (0..b.n_filters)
            .filter(|&k| b.filters[self.r * b.n_filters + k] != 0)
            .collect();
        match op {
            Op::Eq | Op::Ne => {
                let same = if ids.is_empty() {
                    set.is_empty()
                } else {
                    set.len() == ids.len() && ids.iter().all(|i| set.contains(i))
                };
                same == (op == Op::Eq)
            }
            // `~`: every listed filter is set; `!~`: some listed filter is not.
            _ => {
                let all = if ids.is_empty() {
                    set.is_empty()
                } else {
                    ids.iter().all(|i| set.contains(i))
                };
                all == (op == Op::Like)
            }
        }
    }

    pub(crate) fn eval(&self, e: &Expr) -> Result<Val, String> {
        Ok(match e {
            Expr::Num(v) => Val::num(vec![*v]),
            Expr::Missing => Val::num(vec![missing()]),
            Expr::Str(s) => Val::string(Some(s.clone())),
            Expr::Term(t) => self.term(t),
            Expr::Neg(x) => {
                let mut v = self.eval(x)?;
                v.raw = false;
                v.nums
                    .iter_mut()
                    .filter(|x| !absent(**x))
                    .for_each(|x| *x = -*x);
                v
            }
            Expr::Arith(op, a, b) => arith(*op, &self.eval(a)?, &self.eval(b)?)?,
            Expr::CmpNum(op, a, b) => cmp_num(*op, &self.eval(a)?, &self.eval(b)?)?,
            Expr::CmpStr(op, a, b, None) if gt_class_test(a, b).is_some() => {
                let (kind, class) = gt_class_test(a, b).expect("checked");
                self.gt_classes(*kind, class, *op)
            }
            Expr::CmpStr(op, a, b, re) => cmp_str(*op, &self.eval(a)?, &self.eval(b)?, re.as_ref()),
            Expr::Filter(op, ids) => Val {
                site: self.filter(*op, ids),
                ..Val::default()
            },
            Expr::Type(op, bit) => {
                let alts = self.alts();
                let reference = self.b.alleles.get(self.r * self.b.allele_width);
                let types = variant_types(reference, &alts);
                let value = if types == 0 { 1 } else { types << 1 };
                Val {
                    site: match op {
                        Op::Eq => value == *bit,
                        Op::Ne => value != *bit,
                        Op::Like => value & bit != 0,
                        _ => value & bit == 0,
                    },
                    ..Val::default()
                }
            }
            Expr::Logic(op, a, b) => logic(*op, &self.eval(a)?, &self.eval(b)?),
            Expr::Func(f, per_sample, a) => func(*f, *per_sample, &self.eval(a)?),
            Expr::Pass(fraction, a) => {
                let v = self.eval(a)?;
                if v.ns == 0 {
                    return Err("N_PASS and F_PASS work with FORMAT fields".into());
                }
                let used = v.used.iter().filter(|&&u| u).count();
                let n = (0..v.ns).filter(|&i| v.used[i] && v.pass[i]).count() as f64;
                Val::num(vec![if *fraction {
                    if used > 0 {
                        n / used as f64
                    } else {
                        0.0
                    }
                } else {
                    n
                }])
            }
        })
    }
}
