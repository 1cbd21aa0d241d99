//! A call set opened for a partitioned conversion: readers, schema, index counts
//! and whole contigs (the plan, every task and finalize start from it).

use crate::convert::open_call_set;
use crate::error::{Error, Result};
use crate::planning::PlanRequest;
use std::path::{Path, PathBuf};
use svar2_vcf::index::IndexKind;
use svar2_vcf::inputs::Input;
use svar2_vcf::pieces::Piece;
use svar2_vcf::schema::Schema;

/// The whole contigs of a call set with records, in variants-axis order (the
/// pieces a one-reader conversion reads).
pub(super) fn whole_contigs(
    files: &[Input],
    schema: &Schema,
    counts: &[u64],
) -> Option<Vec<Piece>> {
    if files.len() == 1 {
        svar2_vcf::pieces::plan_pieces(&files[0].path, schema, counts, (1, u64::MAX))
    } else {
        let own: Vec<(&Path, &Schema)> = files
            .iter()
            .map(|r| (r.path.as_path(), &r.schema))
            .collect();
        svar2_vcf::pieces::plan_pieces_inputs(&own, schema, (1, u64::MAX))
    }
}

/// A call set opened for a partitioned conversion: its inputs in reading order,
/// its schema (undeclared contigs added), the index kind, and the whole contigs.
pub(super) struct CallSet {
    pub(super) files: Vec<Input>,
    pub(super) schema: Schema,
    pub(super) kind: IndexKind,
    pub(super) counts: Vec<u64>,
    pub(super) contigs: Vec<Piece>,
    pub(super) report: crate::planning::PlanReport,
}

pub(super) fn open_indexed(inputs: &[PathBuf], request: &PlanRequest) -> Result<CallSet> {
    if inputs.iter().any(|p| svar2_vcf::inputs::is_stdin(p)) {
        return Err(Error::Usage(
            "partitions read their inputs through the index; standard input cannot be \
             partitioned"
                .into(),
        ));
    }
    if request.allow_truncated {
        if let Some(p) = inputs
            .iter()
            .find(|p| svar2_vcf::truncation::lacks_eof_block(p))
        {
            return Err(Error::Usage(format!(
                "{}: cut short (no BGZF end-of-file block); partitions read through the \
                 index, which describes the whole file: re-download or re-create it, or \
                 convert what it holds without partitions (`svar2 convert --allow-truncated`)",
                p.display()
            )));
        }
    }
    let mut request = request.clone();
    request.probe = false;
    let (report, opened, mut schema) = open_call_set(inputs, &request)?;
    let files = opened.inputs;
    schema.add_undeclared_contigs(&report.undeclared_contigs);
    let no_counts = || {
        Error::Usage(format!(
            "{}: partitions need record counts from an index beside every input (CSI or \
             TBI with counts: `bcftools index`); {}",
            report.input.display(),
            report.counts_from
        ))
    };
    let kind = report.index.ok_or_else(no_counts)?;
    report.plan.records.ok_or_else(no_counts)?;
    let counts: Vec<u64> = report.contigs.iter().map(|c| c.cost).collect();
    let contigs = whole_contigs(&files, &schema, &counts).ok_or_else(no_counts)?;
    Ok(CallSet {
        files,
        schema,
        kind,
        counts,
        contigs,
        report,
    })
}
