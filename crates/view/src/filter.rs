//! `-i`/`-e` in `view` and `query`: the expression compiled against the header it is
//! tested on — every sample for `view` (bcftools view tests before it subsets), the
//! chosen ones for `query` (bcftools query reads only those) — and each block's
//! verdicts, from a block of just the arrays the expression reads.

use crate::error::{Error, Result};
use crate::rows::Sources;
use svar2_expr::{Filter, Logic, Verdict};
use svar2_reader::{Reader, Store};
use svar2_vcf::schema::Schema;

/// An expression ready to test blocks of records.
pub struct RecordFilter {
    filter: Filter,
    /// As `query` prints samples (see [`Filter::test`]).
    per_sample_output: bool,
    schema: Schema,
    sources: Sources,
}

impl RecordFilter {
    /// Compiles `text` against `schema` (with `columns` its samples' store columns);
    /// `per_sample_output` for `query`.
    pub fn new(
        store: &Store,
        text: &str,
        logic: Logic,
        schema: Schema,
        columns: Vec<u64>,
        per_sample_output: bool,
    ) -> Result<RecordFilter> {
        let filter = Filter::new(text, &schema, logic).map_err(|e| Error::Usage(e.to_string()))?;
        let needs = filter.needs().clone();
        let sources = Sources::new(store, &schema, columns, needs.samples)?
            .only(|k| needs.fields.contains(&k), needs.genotypes);
        Ok(RecordFilter {
            filter,
            per_sample_output,
            schema,
            sources,
        })
    }

    /// The verdicts of records `rows` (consecutive, as a block reads them).
    pub fn verdicts(&self, reader: &Reader, rows: &[u64]) -> Result<Vec<Verdict>> {
        let b = self.sources.read(reader, rows)?;
        (0..b.n)
            .map(|r| {
                self.filter
                    .test(&self.schema, &b, r, self.per_sample_output)
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
