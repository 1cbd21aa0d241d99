//! `svar2 finalize PLAN`: refuses until every partition is done, then joins shared
//! rows and chunks, re-lays outgrown rows, and writes the root `zarr.json` last.

use super::records::{
    plan_error, remove_if_present, FinalizeSummary, PartitionPlan, PartitionRecord, WORK_DIR,
};
use super::space::{Holder, Space};
use crate::arrays::ArraySet;
use crate::error::{Error, Result};
use crate::planning::PlanRequest;
use crate::row_limit::RowLimit;
use crate::schedule::Stitcher;
use crate::writer::Fragment;
use crate::writer::Writer;
use std::path::{Path, PathBuf};
use std::time::Instant;
use svar2_store::written::{ChunkSum, Elsewhere};

/// Where a partition stands, for `finalize`.
pub(super) enum State {
    Done(Box<PartitionRecord>),
    Running(String),
    Failed(String),
    Interrupted,
    NotRun,
}

pub(super) fn state(plan: &PartitionPlan, space: &Space, k: usize) -> Result<State> {
    let holder = space.holder(k)?;
    if let Holder::Running(who) = holder {
        return Ok(State::Running(who));
    }
    if let Some(bytes) = space.get(&format!("{k}.json"))? {
        return Ok(match serde_json::from_slice::<PartitionRecord>(&bytes) {
            Ok(r) if r.plan == plan.id && r.partition == k => State::Done(Box::new(r)),
            _ => State::Failed("its completion record is not this plan's".into()),
        });
    }
    if let Some(msg) = space.get(&format!("{k}.failed"))? {
        return Ok(State::Failed(
            String::from_utf8_lossy(&msg).trim().to_string(),
        ));
    }
    Ok(match holder {
        Holder::Left => State::Interrupted,
        _ => State::NotRun,
    })
}

/// Marks a finalize that began re-encoding shards the partitions wrote: if it is
/// interrupted, those shards can no longer be told apart, so the partitions must run
/// again.
pub(super) const RELAYING: &str = "finalize.relaying";

/// Completes the store of the plan at `plan_path` once every partition is done.
pub fn finalize(plan_path: &Path, request: &PlanRequest) -> Result<FinalizeSummary> {
    let t0 = Instant::now();
    let plan = PartitionPlan::load(plan_path)?;
    let space = Space::of(&plan.output)?;
    if space.is_complete()? {
        // A finalize stopped after the root was written left only its clean-up.
        space.clean_up()?;
        let (store_bytes, files) = space.usage();
        return Ok(FinalizeSummary {
            records: plan.records,
            seconds: t0.elapsed().as_secs_f64(),
            shared_rows: 0,
            rewritten_shards: 0,
            store_bytes,
            files,
            already_done: true,
        });
    }
    let cs = plan.open_checked(plan_path, request)?;
    if space.get(RELAYING)?.is_some() {
        return Err(plan_error(
            plan_path,
            format!(
                "a previous finalize was interrupted while re-encoding shards the partitions \
                 wrote, which can no longer be told from new ones: remove {} and run every \
                 partition again, then finalize",
                plan.output.display()
            ),
        ));
    }
    let mut records = Vec::new();
    let mut not_done = Vec::new();
    for k in 0..plan.partitions.len() {
        match state(&plan, &space, k)? {
            State::Done(r) => records.push(*r),
            State::Running(who) => not_done.push(format!("{k} (still running: {})", who.trim())),
            State::Failed(why) => not_done.push(format!("{k} (failed: {why})")),
            State::Interrupted => not_done.push(format!("{k} (started, did not finish)")),
            State::NotRun => not_done.push(format!("{k} (not run)")),
        }
    }
    if !not_done.is_empty() {
        return Err(plan_error(
            plan_path,
            format!(
                "{} of {} partitions are not done: {}; run each with `svar2 convert --plan {} \
                 --partition K`, then finalize again",
                not_done.len(),
                plan.partitions.len(),
                not_done.join(", "),
                plan_path.display()
            ),
        ));
    }
    // Every file a partition wrote is still whole (one listing of a bucket for all).
    let keys: Vec<&str> = records
        .iter()
        .flat_map(|r| r.files.iter().map(|(rel, _)| rel.as_str()))
        .collect();
    let mut sizes = space.sizes(&keys)?.into_iter();
    for r in &records {
        for ((rel, bytes), now) in r.files.iter().zip(sizes.by_ref()) {
            if now != Some(*bytes) {
                return Err(plan_error(
                    plan_path,
                    format!(
                        "partition {}: {}/{rel} is {} (it wrote {bytes} bytes); run partition {} \
                         again",
                        r.partition,
                        plan.output.display(),
                        now.map_or("missing".into(), |n| format!("{n} bytes")),
                        r.partition
                    ),
                ));
            }
        }
    }
    records.sort_by_key(|r| r.first);
    let store = space.open_finalize(&plan.id)?;
    let root = store.root.clone();
    let work = root.join(WORK_DIR);
    let done: Vec<usize> = records.iter().map(|r| r.partition).collect();
    space.fetch_work(&root, &done)?;
    let schema = cs.schema.clone();
    let set = ArraySet::new(&schema);
    let geometry = plan.geometry;
    let host = svar2_planner::host::Host::system();
    let (budget, _) =
        svar2_planner::host::resolve_budget(request.budget.max_mem, host.memory_limit().as_ref())
            .map_err(Error::Usage)?;
    let threads = request.budget.threads.unwrap_or(host.cores().usable).max(1);
    let mut w = Writer::new(
        plan_path,
        RowLimit::unplanned(budget),
        schema,
        set.clone(),
        geometry,
        store,
    );
    w.record_request(&request.layout.requested);
    let own = work.join("finalize");
    remove_if_present(&own)?;
    w.set_parts_dir(own);
    for r in &records {
        w.absorb(&r.output)?;
        for s in &r.spills {
            w.note_stats(&s.stats);
        }
    }
    let pool = crate::chunk::encoder_pool(threads)?;
    let vc = geometry.variants_chunk;
    // Shared rows are completed in record order — fragments and the chunks the
    // partitions shared (their parts joined, then encoded once) — so each row's
    // chunks land in slot order and most shards need only their index appended.
    enum Shared<'a> {
        Fragment(&'a Fragment, PathBuf),
        Chunk(u64),
    }
    let mut todo: Vec<(u64, Shared)> = Vec::new();
    let mut chunk_parts: std::collections::BTreeMap<u64, Vec<PathBuf>> = Default::default();
    for r in &records {
        let dir = work.join(r.partition.to_string());
        for f in &r.output.fragments {
            let at = (f.row * geometry.variants_shard).max(r.first);
            todo.push((at, Shared::Fragment(f, dir.join("parts"))));
        }
        for s in &r.spills {
            let chunk = s.first / vc;
            let parts = chunk_parts.entry(chunk).or_default();
            if parts.is_empty() {
                todo.push((chunk * vc, Shared::Chunk(chunk)));
            }
            parts.push(dir.join(&s.file));
        }
    }
    todo.sort_by_key(|(at, _)| *at);
    let shared_rows = pool.install(|| -> Result<usize> {
        let mut rows = std::collections::BTreeSet::new();
        let n_samples = cs.schema.samples.len();
        for (at, piece) in &todo {
            rows.insert(at / geometry.variants_shard);
            match piece {
                Shared::Fragment(f, dir) => w.add_fragment(f, dir)?,
                Shared::Chunk(chunk) => {
                    let mut stitcher = Stitcher::new(
                        &set.record,
                        n_samples,
                        vc as usize,
                        0..plan.records,
                        plan.records,
                    );
                    let mut whole = None;
                    for path in &chunk_parts[chunk] {
                        whole = stitcher.push(crate::spill::read(path, &set.record.specs)?);
                    }
                    match whole {
                        Some(b) => {
                            w.add_batch(b)?;
                        }
                        None => {
                            return Err(plan_error(
                                plan_path,
                                format!(
                                    "the parts of inner chunk {chunk} the partitions shared do \
                                     not join up: run the partitions again"
                                ),
                            ))
                        }
                    }
                }
            }
        }
        Ok(rows.len())
    })?;
    if w.records() != plan.records {
        return Err(plan_error(
            plan_path,
            format!(
                "the partitions hold {} records, and the plan {}: run the partitions again",
                w.records(),
                plan.records
            ),
        ));
    }
    let relaying = w.outgrown_rows() > 0;
    // (A bucket's shards are re-laid from local copies.)
    let outgrown_keys = w.outgrown_files();
    let outgrown = space.fetch(&root, &outgrown_keys)?;
    if matches!(space, Space::Bucket { .. }) {
        // The partitions' shards stay in the bucket: the root's record of the shards
        // written counts them (less those finishing re-lays here, found locally).
        let relaid: std::collections::HashSet<&String> = outgrown_keys.iter().collect();
        let said = |r: &PartitionRecord, i: usize| {
            (r.chunk_sums.len() == r.files.len()).then(|| ChunkSum(r.chunk_sums[i]))
        };
        w.store().stored_elsewhere(
            records
                .iter()
                .flat_map(|r| r.files.iter().enumerate().map(move |(i, f)| (r, i, f)))
                .filter(|(_, _, (k, _))| !relaid.contains(k))
                .map(|(r, i, (key, size))| Elsewhere {
                    key: key.clone(),
                    size: *size,
                    chunks: said(r, i),
                })
                .collect(),
        );
    }
    if relaying {
        space.put(RELAYING, b"")?;
    }
    pool.install(|| w.finish())?;
    let gone: Vec<String> = outgrown
        .into_iter()
        .filter(|key| !root.join(key).is_file())
        .collect();
    space.upload_finished(&root, &gone)?;
    remove_if_present(&work)?;
    space.drop_staging(&root);
    let (store_bytes, files) = space.usage();
    Ok(FinalizeSummary {
        records: plan.records,
        seconds: t0.elapsed().as_secs_f64(),
        shared_rows,
        rewritten_shards: w.rewritten(),
        store_bytes,
        files,
        already_done: false,
    })
}
