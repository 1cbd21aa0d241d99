//! `svar2 append`: new samples into an existing directory store, as a new version
//! swapped in whole (see `svar2_append`).

use crate::flags::BudgetArgs;
use std::path::PathBuf;
use svar2_planner::size::human;

#[derive(clap::Args)]
pub struct Args {
    /// The store (a directory svar2 or another tool wrote).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// The new samples: VCF, bgzipped VCF or BCF files, each sorted, their samples
    /// not in the store. Sites may differ from the store's: they are joined as
    /// `bcftools merge` joins them.
    #[arg(required = true, num_args = 1.., value_parser = crate::flags::local_path)]
    inputs: Vec<PathBuf>,
    /// How records at one position are joined: `both` (bcftools merge's default: SNPs
    /// with SNPs, indels with indels) or `none` (only records of the same alleles).
    #[arg(short = 'm', long = "merge", default_value = "both")]
    merge: svar2_vcf::merge::Collapse,
    /// Keep a sample name already in the store, the new one as `K:NAME` (K: the
    /// input's number, the store being 1), as bcftools merge does; by default refused.
    #[arg(long)]
    force_samples: bool,
    #[command(flatten)]
    budget: BudgetArgs,
}

pub fn run(a: Args, quiet: bool) -> Result<(), Box<dyn std::error::Error>> {
    let o = svar2_append::AppendOptions {
        merge: svar2_vcf::merge::MergeRequest {
            collapse: a.merge,
            force_samples: a.force_samples,
        },
        budget: a.budget.request(),
        progress: !quiet,
    };
    // The staging folder sits beside the store's own path (`.` names no folder beside).
    let store = std::fs::canonicalize(&a.store).unwrap_or_else(|_| a.store.clone());
    crate::interrupt::say_on_interrupt(format!(
        "{} holds its old version, or the new one if the swap was made (never a mix: `svar2 \
         query -l` lists its samples); the next append clears {}",
        a.store.display(),
        svar2_append::staging_of(&store).display()
    ));
    let s = svar2_append::append(&a.store, &a.inputs, &o)?;
    if !quiet {
        let how = match s.first_sample_written {
            0 => format!(
                "{} written: a new version, swapped in whole",
                human(s.store_bytes)
            ),
            first => format!(
                "the store's sites: sample columns {first}.. and the variant arrays written, \
                 {} of {}; the rest is the old version's files",
                human(s.bytes_written),
                human(s.store_bytes)
            ),
        };
        eprintln!(
            "svar2: {} -> {} samples, {} records in {:.2} s -> {} ({how})",
            s.samples_before,
            s.samples_after,
            s.records,
            s.seconds,
            a.store.display(),
        );
    }
    Ok(())
}
