//! One partition's conversion (`convert --plan PLAN --partition K`): the lock, the
//! cut counts it publishes and reads, its rows and shared parts, its completion record.

use super::call_set::CallSet;
use super::records::{
    host_name, plan_error, PartitionPlan, PartitionRecord, PartitionSummary, PlannedPartition,
    PlannedSpan, Spill, WORK_DIR,
};
use super::space::{Claim, Space};
use crate::arrays::{ArraySet, Stats};
use crate::convert::normalise;
use crate::error::{Error, Result};
use crate::pipeline::{Source, Stages};
use crate::planning::{plan_partition, PlanRequest};
use crate::row_limit::RowLimit;
use crate::schedule::{ContigRun, Stitcher};
use crate::writer::Writer;
use std::path::{Path, PathBuf};
use std::time::Instant;
use svar2_planner::pieces_for;
use svar2_store::dir::StoreDir;
use svar2_vcf::pieces::{Piece, PieceReader};

/// Where each contig cut starts, counted on demand and shared between tasks through
/// `<WORK_DIR>/counts/`.
pub(super) struct CutCounts<'a> {
    plan: &'a PartitionPlan,
    cs: &'a CallSet,
    set: &'a ArraySet,
    space: &'a Space,
    reader: Option<(usize, PieceReader)>,
}

impl CutCounts<'_> {
    fn piece(&self, contig: usize, cut: usize) -> Piece {
        let c = &self.plan.contigs[contig];
        let whole = self
            .cs
            .contigs
            .iter()
            .find(|p| p.rid == c.rid)
            .expect("checked against the plan");
        let (beg, end) = c.cuts[cut];
        Piece {
            rid: c.rid,
            tid: whole.tid,
            beg: beg as i64,
            end: end.map_or(i64::MAX >> 2, |e| e as i64),
            last_of_contig: end.is_none(),
            file: c.file,
        }
    }

    /// Records in the cuts of `contig` before `cut`.
    fn before(&mut self, contig: usize, cut: usize) -> Result<u64> {
        let mut n = 0;
        for j in 0..cut {
            n += self.get(contig, j)?;
        }
        Ok(n)
    }

    /// Records in cut `cut` of `contig`: the last cut holds what the others leave of
    /// the index's count (never read for it).
    fn records(&mut self, contig: usize, cut: usize) -> Result<u64> {
        let c = &self.plan.contigs[contig];
        if cut + 1 < c.cuts.len() {
            return self.get(contig, cut);
        }
        let (records, name, file) = (c.records, c.name.clone(), c.file as usize);
        let before = self.before(contig, cut)?;
        records.checked_sub(before).ok_or_else(|| {
            Error::Usage(format!(
                "{}: contig {name} has {records} records by its index but its cuts count \
                 {before}: the index is stale (re-index with `bcftools index -f`) and plan again",
                self.cs.files[file].path.display(),
            ))
        })
    }

    /// Records in cut `cut` of contig `contig`.
    fn get(&mut self, contig: usize, cut: usize) -> Result<u64> {
        let c = &self.plan.contigs[contig];
        if c.cuts.len() == 1 {
            return Ok(c.records);
        }
        let key = format!("counts/{contig}.{cut}");
        if let Some(text) = self.space.get(&key)? {
            if let Some(n) = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
            {
                return Ok(n);
            }
        }
        let piece = self.piece(contig, cut);
        let f = c.file as usize;
        if self.reader.as_ref().is_none_or(|(open, _)| *open != f) {
            self.reader = None;
            let r = PieceReader::open(&self.cs.files[f].path, &self.cs.schema, &self.set.record)?;
            self.reader = Some((f, r));
        }
        let t = Instant::now();
        let n = self
            .reader
            .as_mut()
            .expect("opened above")
            .1
            .count(&piece)?;
        tracing::info!(
            contig = c.name,
            cut,
            records = n,
            seconds = t.elapsed().as_secs_f64(),
            "counted a cut"
        );
        self.space.put(&key, format!("{n}\n").as_bytes())?;
        Ok(n)
    }
}

/// Converts partition `k` of the plan at `plan_path` on this machine (budget, cores
/// and readers from `request`; the layout is the plan's).
pub fn run(
    plan_path: &Path,
    k: usize,
    request: &PlanRequest,
    progress: bool,
) -> Result<PartitionSummary> {
    let t0 = Instant::now();
    let plan = PartitionPlan::load(plan_path)?;
    let n = plan.partitions.len();
    if k >= n {
        return Err(plan_error(
            plan_path,
            format!("has {n} partitions: --partition takes 0 to {}", n - 1),
        ));
    }
    let cs = plan.open_checked(plan_path, request)?;
    let space = Space::of(&plan.output)?;
    if space.is_complete()? {
        return Err(Error::Usage(format!(
            "{}: already a complete store (finalize ran); remove it to convert again",
            plan.output.display()
        )));
    }
    let (store, claim) = space.open_partition(&plan.id, k)?;
    let root = store.root.clone();
    // A previous attempt's leftovers: its record, its failure, its own files.
    for stale in [format!("{k}.json"), format!("{k}.failed"), k.to_string()] {
        space.remove(&stale)?;
    }
    let result = run_claimed(&plan, &cs, &space, k, store, &claim, request, progress, t0);
    if let Err(e) = &result {
        let _ = space.put(&format!("{k}.failed"), format!("{e}\n").as_bytes());
    }
    drop(claim);
    space.drop_staging(&root);
    result
}

#[allow(clippy::too_many_arguments)]
fn run_claimed(
    plan: &PartitionPlan,
    cs: &CallSet,
    space: &Space,
    k: usize,
    store: StoreDir,
    claim: &Claim,
    request: &PlanRequest,
    progress: bool,
    t0: Instant,
) -> Result<PartitionSummary> {
    let part = &plan.partitions[k];
    let root = store.root.clone();
    let own = root.join(WORK_DIR).join(k.to_string());
    let schema = &cs.schema;
    let set = ArraySet::new(schema);
    let geometry = plan.geometry;
    let n_samples = schema.samples.len();
    let mut counts = CutCounts {
        plan,
        cs,
        set: &set,
        space,
        reader: None,
    };
    // Own cuts first (a neighbour started at the same time needs them), then the
    // cuts before them.
    for s in &part.spans {
        if s.cut + 1 < plan.contigs[s.contig].cuts.len() {
            counts.get(s.contig, s.cut)?;
        }
    }
    let mut runs_at: Vec<(usize, u64, u64)> = Vec::new(); // (span, offset, records)
    for (i, s) in part.spans.iter().enumerate() {
        let offset = plan.contigs[s.contig].offset + counts.before(s.contig, s.cut)?;
        runs_at.push((i, offset, counts.records(s.contig, s.cut)?));
    }
    let first = runs_at.first().map_or(0, |r| r.1);
    let end = runs_at.last().map_or(0, |r| r.1 + r.2);
    let records: u64 = runs_at.iter().map(|r| r.2).sum();
    if first + records != end {
        return Err(Error::Usage(format!(
            "partition {k}: its cuts do not meet on the variants axis (records {first}..{end} \
             hold {records}): the index is stale; re-index and plan again"
        )));
    }
    // Boundaries moved onto the inner-chunk grid, so no chunk is shared: the records
    // up to the next chunk boundary go to the partition before it, when they lie in
    // the first span of the partition after it (both sides decide alike; otherwise
    // the chunk is shared and spilled).
    let vc = geometry.variants_chunk;
    let to_grid = |b: u64| (b.div_ceil(vc) * vc).min(plan.records);
    let lead = to_grid(first) - first;
    let skip = match runs_at.first() {
        Some(&(_, _, n)) if lead > 0 && lead <= n => lead,
        _ => 0,
    };
    // The partition after this one on the axis that holds records (some hold none).
    let mut after: Vec<&PlannedPartition> = plan
        .partitions
        .iter()
        .filter(|p| p.axis > part.axis)
        .collect();
    after.sort_by_key(|p| p.axis);
    let mut next = None;
    'after: for p in after {
        for s in &p.spans {
            if counts.records(s.contig, s.cut)? > 0 {
                next = Some(p.spans[0].clone());
                break 'after;
            }
        }
    }
    let tail = to_grid(end) - end;
    let borrow = match (&next, records) {
        (Some(s), 1..) if tail > 0 && tail <= counts.records(s.contig, s.cut)? => {
            Some((s.clone(), tail))
        }
        _ => None,
    };
    drop(counts);
    let lo = first + skip;
    let hi = end + borrow.as_ref().map_or(0, |b| b.1);
    // This machine's plan for this partition's records, on the plan's grid.
    let mut per_contig = vec![0u64; schema.contigs.len()];
    for &(i, _, n) in &runs_at {
        per_contig[plan.contigs[part.spans[i].contig].rid as usize] += n;
    }
    if let Some((s, n)) = &borrow {
        per_contig[plan.contigs[s.contig].rid as usize] += n;
    }
    let label = cs.files[0].path.clone();
    let report = plan_partition(
        &label,
        schema.clone(),
        cs.kind,
        per_contig,
        cs.files.len(),
        geometry,
        cs.report.prefix,
        request,
    )
    .map_err(|e| {
        Error::Usage(format!(
            "partition {k}: {e} (the plan fixes the chunks: give this task a larger \
             --max-mem, or plan again with a smaller --variants-chunk)"
        ))
    })?;
    if normalise(report.geometry(), n_samples as u64) != geometry {
        return Err(Error::Usage(format!(
            "partition {k}: this machine's plan would change the plan's chunking ({:?}): give \
             it more --max-mem",
            report.geometry()
        )));
    }
    let (cc, w) = (report.plan.cc, report.plan.w as usize);
    svar2_vcf::limits::set_budget(report.budget);
    tracing::info!(
        "converting partition {k} (rows {first}..{end}): {cc} contigs at once, {w} \
         reader(s) each, predicted peak RSS {} of a {} budget",
        svar2_planner::size::human(report.plan.predicted_peak_rss),
        svar2_planner::size::human(report.budget),
    );
    // Each span cut into pieces for its readers.
    let mut pieces = Vec::new();
    let mut runs = Vec::new();
    let whole = |rid: u32| cs.contigs.iter().find(|p| p.rid == rid).expect("planned");
    // (span, offset of its first kept record, records kept, skipped, borrowed)
    let mut todo: Vec<(&PlannedSpan, u64, u64, u64, bool)> = runs_at
        .iter()
        .enumerate()
        .map(|(j, &(i, offset, n))| {
            let skip = if j == 0 { skip } else { 0 };
            (&part.spans[i], offset + skip, n - skip, skip, false)
        })
        .filter(|t| t.2 > 0)
        .collect();
    if let Some((s, n)) = &borrow {
        todo.push((s, end, *n, 0, true));
    }
    for &(s, offset, expected, skip, take) in &todo {
        let c = &plan.contigs[s.contig];
        let (beg, end) = c.cuts[s.cut];
        let length = schema.contigs[c.rid as usize].length.unwrap_or(0).max(0) as u64;
        let stop = end.unwrap_or(length.max(beg + 1));
        let k_pieces = if length > 0 && !take {
            pieces_for(skip + expected, report.plan.piece_rows, w as u32)
        } else {
            1
        };
        let step = (stop - beg).div_ceil(k_pieces).max(1);
        let mut idx = Vec::new();
        let mut at = beg;
        while at < stop || idx.is_empty() {
            let next = (at + step).min(stop);
            let last = next >= stop;
            idx.push(pieces.len());
            pieces.push(Piece {
                rid: c.rid,
                tid: whole(c.rid).tid,
                beg: at as i64,
                end: if last {
                    end.map_or(i64::MAX >> 2, |e| e as i64)
                } else {
                    next as i64
                },
                last_of_contig: last && end.is_none(),
                file: c.file,
            });
            at = next;
            if last {
                break;
            }
        }
        let file_start = plan
            .contigs
            .iter()
            .filter(|d| d.file == c.file)
            .map(|d| d.offset)
            .min()
            .unwrap_or(0);
        runs.push(ContigRun {
            rid: c.rid,
            pieces: idx,
            offset,
            expected,
            skip,
            take,
            file_start,
        });
    }
    // Longest first when several run at once.
    if cc > 1 {
        runs.sort_by(|a, b| b.expected.cmp(&a.expected).then(a.offset.cmp(&b.offset)));
    }
    let threads = report.threads;
    let mut writer = Writer::new(
        &label,
        RowLimit::of(&report),
        schema.clone(),
        set.clone(),
        geometry,
        store,
    );
    writer.set_parts_dir(own.join("parts"));
    std::fs::create_dir_all(&own).map_err(|e| Error::io(&own, e))?;
    let vc = geometry.variants_chunk as usize;
    let stitcher = Stitcher::new(&set.record, n_samples, vc, lo..hi, plan.records);
    let paths: Vec<PathBuf> = cs.files.iter().map(|f| f.path.clone()).collect();
    let mut spills = Vec::new();
    let vs = geometry.variants_shard;
    let total = plan.records;
    let stages = Stages {
        schema,
        set: &set,
        threads,
        window: crate::pipeline::Window::of(&report),
        progress: crate::convert::progress_bar(progress, Some(hi - lo)),
    };
    let source = Source::Pieces {
        paths: &paths,
        pieces: &pieces,
        runs,
        cc,
        w,
        piece_rows: report.plan.piece_rows,
    };
    let spilled = &mut spills;
    let output = crate::pipeline::run(
        stages,
        source,
        &mut writer,
        Some(stitcher),
        |b| {
            let file = format!("spill.{}.bin", b.first);
            crate::spill::write(&own.join(&file), &b)?;
            let mut stats = Stats::new(&set);
            for (s, c) in stats.columns.iter_mut().zip(&b.columns) {
                s.merge(&c.stats);
            }
            stats.max_alleles = b.max_alleles;
            stats.max_ploidy = b.max_ploidy;
            spilled.push(Spill {
                file,
                first: b.first,
                records: b.len() as u64,
                stats,
            });
            Ok(())
        },
        |writer| writer.finish_partition(|row| row * vs >= lo && ((row + 1) * vs).min(total) <= hi),
    );
    let output = output?;
    let files = writer.written_files(&output)?;
    let digest = digest_files(&root, &files)?;
    let chunk_sums = files
        .iter()
        .map(|(rel, size)| writer.shard_chunk_sum(rel, *size))
        .collect::<Option<Vec<u64>>>()
        .unwrap_or_default();
    let record = PartitionRecord {
        plan: plan.id.clone(),
        partition: k,
        first: lo,
        end: hi,
        output,
        spills,
        files,
        chunk_sums,
        digest,
        seconds: t0.elapsed().as_secs_f64(),
        host: host_name(),
    };
    let n_files = record.files.len();
    space.publish(
        &root,
        &record.files,
        k,
        claim,
        &serde_json::to_vec(&record).expect("records serialise"),
    )?;
    Ok(PartitionSummary {
        records: hi - lo,
        seconds: t0.elapsed().as_secs_f64(),
        files: n_files,
        cc,
        w: w as u32,
        predicted_peak_rss: report.plan.predicted_peak_rss,
    })
}

/// blake3 over files (relative path and bytes, in order), as `svar2 digest` hashes.
pub(super) fn digest_files(root: &Path, files: &[(String, u64)]) -> Result<String> {
    let mut h = blake3::Hasher::new();
    for (rel, _) in files {
        let p = root.join(rel);
        let bytes = std::fs::read(&p).map_err(|e| Error::io(&p, e))?;
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().to_hex().to_string())
}
