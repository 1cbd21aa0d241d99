//! `svar2 finalize`: completes the store of a partitioned conversion.

use crate::flags::BudgetArgs;
use crate::output::regrown;
use std::path::PathBuf;
use svar2_convert::planning::PlanRequest;
use svar2_planner::size::human;

#[derive(clap::Args)]
pub struct Args {
    /// The plan `svar2 plan --partitions N -o PLAN` wrote.
    #[arg(value_parser = crate::flags::local_path)]
    plan: PathBuf,
    #[command(flatten)]
    budget: BudgetArgs,
}

pub fn run(a: Args, quiet: bool) -> Result<(), Box<dyn std::error::Error>> {
    // The layout is the plan's; only the budget and threads are this machine's.
    let request = PlanRequest {
        layout: Default::default(),
        budget: a.budget.request(),
        readers: None,
        probe: false,
        allow_truncated: false,
        subset: Default::default(),
        merge: None,
    };
    crate::interrupt::say_on_interrupt(
        "the store is not finalized; run the same command again, which says what remains".into(),
    );
    let s = svar2_convert::partition::finalize(&a.plan, &request)?;
    if quiet {
        return Ok(());
    }
    if s.already_done {
        eprintln!("svar2: the store is already complete; nothing to do");
    } else {
        eprintln!(
            "svar2: finalized {} records in {:.2} s ({} shared shard rows{}) -> {} in {} files",
            s.records,
            s.seconds,
            s.shared_rows,
            regrown(s.rewritten_shards),
            human(s.store_bytes),
            s.files
        );
    }
    Ok(())
}
