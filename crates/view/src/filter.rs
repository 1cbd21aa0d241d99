//! `-i`/`-e` in `view` and `query`: the expression compiled against the header it is
//! tested on — every sample for `view` (bcftools view tests before it subsets), the
//! chosen ones for `query` (bcftools query reads only those) — and each block's
//! verdicts: tested on the printed block itself where it holds what the expression
//! reads (no second decode), else on a block of just the arrays the expression reads.

use crate::error::{Error, Result};
use crate::rows::Sources;
use svar2_expr::{Filter, Logic, Verdict};
use svar2_reader::{Reader, Store};
use svar2_vcf::block::Block;
use svar2_vcf::schema::Schema;

/// An expression ready to test blocks of records.
pub struct RecordFilter {
    filter: Filter,
    /// As `query` prints samples (see [`Filter::test`]).
    per_sample_output: bool,
    schema: Schema,
    /// The expression's own block, when the printed one cannot serve.
    sources: Option<Sources>,
    /// Each sample's place among the chosen ones in file order, when they are chosen
    /// in another order (`-s C,A`).
    ranks: Option<Vec<usize>>,
}

impl RecordFilter {
    /// Compiles `text` against `schema` (with `columns` its samples' store columns);
    /// `per_sample_output` for `query`. With `own_block`, blocks of just what the
    /// expression reads are read for it; without, it is tested on the printed blocks,
    /// which must be of `schema` and `columns` and carry [`RecordFilter::needs`].
    pub fn new(
        store: &Store,
        text: &str,
        logic: Logic,
        (schema, columns): (Schema, Vec<u64>),
        per_sample_output: bool,
        own_block: bool,
    ) -> Result<RecordFilter> {
        let filter = Filter::new(text, &schema, logic).map_err(|e| Error::Usage(e.to_string()))?;
        let needs = filter.needs().clone();
        let mut sorted = columns.clone();
        sorted.sort_unstable();
        let ranks = (sorted != columns).then(|| {
            columns
                .iter()
                .map(|c| sorted.binary_search(c).unwrap_or(0))
                .collect()
        });
        let sources = match own_block {
            true => Some(
                Sources::new(store, &schema, columns, needs.samples)?
                    .only(|k| needs.fields.contains(&k), needs.genotypes),
            ),
            false => None,
        };
        Ok(RecordFilter {
            filter,
            ranks,
            per_sample_output,
            schema,
            sources,
        })
    }

    /// What the expression reads (for a printed block to carry).
    pub fn needs(&self) -> &svar2_expr::Needs {
        self.filter.needs()
    }

    /// The verdicts of records `rows` (consecutive, as a block reads them), whose
    /// printed block is `printed`.
    pub fn verdicts(&self, reader: &Reader, rows: &[u64], printed: &Block) -> Result<Vec<Verdict>> {
        let own;
        let b = match &self.sources {
            Some(s) => {
                own = s.read(reader, rows)?;
                &own
            }
            None => printed,
        };
        (0..b.n)
            .map(|r| {
                self.filter
                    .test(
                        &self.schema,
                        b,
                        r,
                        self.per_sample_output,
                        self.ranks.as_deref(),
                    )
                    .map_err(|e| {
                        Error::Usage(format!(
                            "the expression {:?} at {}:{}: {e}",
                            self.filter.text,
                            self.schema.contig_label(b.contig[r] as i64),
                            b.pos[r]
                        ))
                    })
            })
            .collect()
    }
}
