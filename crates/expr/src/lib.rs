//! `svar2-expr`: bcftools' filtering expressions — what `-i`/`-e` take — parsed once,
//! checked against a store's header (every name resolved, strings never compared with
//! numbers), then tested record by record on decoded blocks, with bcftools' semantics:
//! a site passes or not, and, where FORMAT values are tested, so does each sample
//! (what `query` prints inside `[ ]`).
//!
//! Modules in dependency order: `parse` (text to tree), `bre` (bcftools' POSIX basic
//! regexes in the `regex` crate's syntax), `eval` (the tree compiled and tested).
//!
//! Supported: numbers, strings, `.`; `CHROM POS ID REF ALT QUAL FILTER`, `INFO/TAG`,
//! `FORMAT/TAG` (numeric) and bare tags, subscripts (`AF[0]`, `AD[*:1]`, `DP[0,2-4]`),
//! `GT` classes and text; `TYPE` (htslib's variant types: `=` the set, `~` one of
//! them); `N_ALT N_SAMPLES ILEN AC AN AF MAC MAF N_MISSING F_MISSING`;
//! `+ - * / %`, comparisons, `~ !~`, `& | && ||`; `MIN MAX AVG MEAN MEDIAN SUM STDEV
//! COUNT ABS`, their per-sample `sMIN`… forms, `N_PASS() F_PASS()`. Anything else —
//! `@file`, `binom()`, FORMAT string fields… — is refused by name, never
//! guessed.

pub mod bre;
mod eval;
pub mod parse;

pub use eval::Needs;
use svar2_vcf::block::Block;
use svar2_vcf::schema::{Category, Schema};

/// A malformed expression: the message, and where in the expression the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg} (column {col} of the expression: {expr})", col = .at + 1)]
pub struct Error {
    pub expr: String,
    /// Byte offset of the problem.
    pub at: usize,
    pub msg: String,
}

impl Error {
    pub(crate) fn new(expr: &str, at: usize, msg: String) -> Error {
        Error {
            expr: expr.to_string(),
            at,
            msg,
        }
    }
}

/// Whether matching records are kept (`-i`) or dropped (`-e`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logic {
    Include,
    Exclude,
}

/// An expression compiled against a header.
#[derive(Debug)]
pub struct Filter {
    expr: eval::Expr,
    logic: Logic,
    needs: Needs,
    /// The expression's text, for messages.
    pub text: String,
}

/// A record's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the record is printed.
    pub keep: bool,
    /// Which samples are printed inside `query`'s `[ ]` (None: all of them).
    pub samples: Option<Vec<bool>>,
}

impl Filter {
    /// Compiles `text` against `schema` (its fields and filters, not its samples).
    pub fn new(text: &str, schema: &Schema, logic: Logic) -> Result<Filter, Error> {
        let tree = parse::parse(text)?;
        let mut c = eval::Compiler {
            text,
            schema,
            needs: Needs::default(),
        };
        let (expr, kind) = c.compile(&tree)?;
        if kind != eval::Kind::Bool {
            return Err(Error::new(
                text,
                0,
                "the expression is a value, not a test (compare it: DP>10, GT=\"het\")".into(),
            ));
        }
        Ok(Filter {
            expr,
            logic,
            needs: c.needs,
            text: text.to_string(),
        })
    }

    /// What testing a record reads.
    pub fn needs(&self) -> &Needs {
        &self.needs
    }

    /// Tests record `r` of `b`, whose INFO and FORMAT values are those of `schema`'s
    /// fields the block carries; `per_sample_output` as `query` prints samples (an
    /// excluded record still prints the samples that fail the expression), else as
    /// `view` (a record is kept or dropped whole). An error is a record the expression
    /// cannot be applied to (vectors of different lengths in arithmetic). `ranks`:
    /// each block sample's place among them in file order, when the block is in
    /// another order (sample subscripts count in file order, as bcftools does).
    pub fn test(
        &self,
        schema: &Schema,
        b: &Block,
        r: usize,
        per_sample_output: bool,
        ranks: Option<&[usize]>,
    ) -> Result<Verdict, String> {
        let mut at = vec![None; schema.fields.len()];
        for (i, f) in b.info.iter().enumerate() {
            if schema.fields.get(f.field).map(|d| d.category) == Some(Category::Info) {
                at[f.field] = Some(i);
            }
        }
        for (i, f) in b.format.iter().enumerate() {
            if schema.fields.get(f.field).map(|d| d.category) == Some(Category::Format) {
                at[f.field] = Some(i);
            }
        }
        let rec = eval::Record {
            schema,
            b,
            r,
            ranks,
            at: &at,
        };
        let v = rec.eval(&self.expr)?;
        let samples = self.needs.samples.then(|| {
            if v.ns == 0 {
                vec![v.site; b.n_samples]
            } else {
                v.pass.clone()
            }
        });
        Ok(match (self.logic, per_sample_output) {
            (Logic::Include, _) => Verdict {
                keep: v.site,
                samples: if v.site { samples } else { None },
            },
            (Logic::Exclude, false) => Verdict {
                keep: !v.site,
                samples: None,
            },
            // bcftools query: an excluded site still prints the samples that fail the
            // expression.
            (Logic::Exclude, true) => match (v.site, samples) {
                (false, _) => Verdict {
                    keep: true,
                    samples: None,
                },
                (true, Some(s)) => {
                    let rest: Vec<bool> = s.iter().map(|p| !p).collect();
                    Verdict {
                        keep: rest.iter().any(|&p| p),
                        samples: Some(rest),
                    }
                }
                (true, None) => Verdict {
                    keep: false,
                    samples: None,
                },
            },
        })
    }
}
