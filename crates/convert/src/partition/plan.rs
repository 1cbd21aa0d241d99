//! `svar2 plan --partitions N`: cutting the variants axis into partitions (contigs
//! cut where the index's file offsets put a share of their bytes), and the plan file
//! written, read back and checked.

use super::call_set::{open_indexed, CallSet};
use super::records::{
    plan_error, PartitionPlan, PlannedContig, PlannedInput, PlannedOn, PlannedPartition,
    PlannedSpan,
};
use crate::convert::normalise;
use crate::error::{Error, Result};
use crate::planning::{plan_partition, PlanRequest};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use svar2_planner::partition::Unit;
use svar2_planner::size::human;
use svar2_vcf::index::Index;

/// Partitions a plan may have at most: each is a task (a Slurm array holds at most
/// MaxArraySize, 1001 by default) and entries of the plan; a count beyond it is a
/// typo, not a cluster, and would be planned for hours.
pub const MAX_PARTITIONS: usize = 1 << 16;

/// Plans a conversion of `inputs` into `output` as `n` partitions.
pub fn plan(
    inputs: &[PathBuf],
    output: &Path,
    n: usize,
    request: &PlanRequest,
) -> Result<PartitionPlan> {
    if n == 0 {
        return Err(Error::Usage("--partitions must be 1 or more".into()));
    }
    if svar2_storage::is_zip_path(output) {
        return Err(Error::Usage(format!(
            "{}: a partitioned conversion writes a directory or an s3:// bucket, where \
             its tasks meet; write a directory, then pack it (`python -m bio2zarr zipzarr \
             DIR {}`: svar2 digest is the same)",
            output.display(),
            output.display()
        )));
    }
    if n > MAX_PARTITIONS {
        return Err(Error::Usage(format!(
            "--partitions {n}: more tasks than svar2 plans ({MAX_PARTITIONS}); give at most \
             {MAX_PARTITIONS}"
        )));
    }
    let absolute = |p: &Path| std::path::absolute(p).map_err(|e| Error::io(p, e));
    let inputs = inputs
        .iter()
        .map(|p| absolute(p))
        .collect::<Result<Vec<_>>>()?;
    crate::convert::check_not_in_output(&inputs, output)?;
    let cs = open_indexed(&inputs, request)?;
    let samples = cs.schema.samples.len() as u64;
    let geometry = normalise(cs.report.geometry(), samples);
    let mut contigs = Vec::new();
    let mut at = 0u64;
    for p in &cs.contigs {
        let records = cs.counts[p.rid as usize];
        contigs.push(PlannedContig {
            name: cs.schema.contigs[p.rid as usize].name.clone(),
            rid: p.rid,
            file: p.file,
            records,
            offset: at,
            cuts: Vec::new(),
        });
        at += records;
    }
    let indexes: Vec<Option<Index>> = cs
        .files
        .iter()
        .map(|f| Index::load(&f.path, svar2_vcf::pieces::is_text(&f.path)))
        .collect();
    let units: Vec<Unit> = contigs
        .iter()
        .map(|c| Unit {
            records: c.records,
            cuttable: indexes[c.file as usize].is_some(),
        })
        .collect();
    let tids: Vec<i32> = contigs
        .iter()
        .map(|c| {
            cs.contigs
                .iter()
                .find(|p| p.rid == c.rid)
                .expect("planned")
                .tid
        })
        .collect();
    let cuts = svar2_planner::partition::partition(&units, n, |u, share| {
        let c = &contigs[u];
        let length = cs.schema.contigs[c.rid as usize].length.filter(|&l| l > 0);
        indexes[c.file as usize]
            .as_ref()
            .map_or(0, |idx| idx.locate(tids[u], length, share))
    });
    let mut by_axis: Vec<&svar2_planner::partition::Cut> = cuts.iter().collect();
    by_axis.sort_by_key(|c| c.axis);
    for cut in &by_axis {
        for s in &cut.spans {
            contigs[s.unit].cuts.push((s.beg, s.end));
        }
    }
    // Where each partition starts on the axis (estimated where a contig is cut).
    let mut starts = vec![0u64; cuts.len()];
    let mut at_axis = 0;
    for cut in &by_axis {
        starts[cut.axis] = at_axis;
        at_axis += cut.records();
    }
    let label = cs.report.input.clone();
    let mut partitions = Vec::with_capacity(cuts.len());
    for (index, cut) in cuts.iter().enumerate() {
        let spans: Vec<PlannedSpan> = cut
            .spans
            .iter()
            .map(|s| PlannedSpan {
                contig: s.unit,
                cut: contigs[s.unit]
                    .cuts
                    .iter()
                    .position(|&c| c == (s.beg, s.end))
                    .expect("recorded above"),
                records: s.records,
                exact: s.exact,
            })
            .collect();
        let records = cut.records();
        let first = starts[cut.axis];
        let shard_rows = (records > 0).then(|| {
            let last = first + records - 1;
            (
                first / geometry.variants_shard,
                last / geometry.variants_shard,
            )
        });
        let mut counts = vec![0u64; cs.schema.contigs.len()];
        for s in &cut.spans {
            counts[contigs[s.unit].rid as usize] += s.records;
        }
        let predicted = plan_partition(
            &label,
            cs.schema.clone(),
            cs.kind,
            counts,
            cs.files.len(),
            geometry,
            cs.report.prefix,
            request,
        )?;
        let regions = spans
            .iter()
            .map(|sp| {
                let c = &contigs[sp.contig];
                match c.cuts[sp.cut] {
                    (0, None) => c.name.clone(),
                    (beg, None) => format!("{}:{}-", c.name, beg + 1),
                    (beg, Some(end)) => format!("{}:{}-{end}", c.name, beg + 1),
                }
            })
            .collect();
        partitions.push(PlannedPartition {
            index,
            axis: cut.axis,
            spans,
            regions,
            records,
            exact: cut.spans.iter().all(|s| s.exact),
            shard_rows,
            predicted_peak_rss: predicted.plan.predicted_peak_rss,
        });
    }
    let mut notes = Vec::new();
    let sizes: Vec<u64> = partitions
        .iter()
        .map(|p| p.records)
        .filter(|&r| r > 0)
        .collect();
    let empty = partitions.len() - sizes.len();
    if empty > 0 {
        notes.push(format!(
            "{empty} partition(s) are empty (fewer records, or places to cut, than \
             partitions): their tasks finish at once"
        ));
    }
    if let Some(&smallest) = sizes.iter().min() {
        if smallest < 2 * geometry.variants_shard && sizes.len() > 1 {
            notes.push(format!(
                "partitions of ~{smallest} records are under two shard rows ({} records \
                 each): rows shared by partitions are finished by finalize, so it does much \
                 of the writing; fewer partitions or a smaller --variants-shard keep it short",
                geometry.variants_shard
            ));
        }
    }
    let mut plan = PartitionPlan {
        svar2: env!("CARGO_PKG_VERSION").into(),
        id: String::new(),
        // (A bucket URL as given: it names no local path.)
        output: if svar2_storage::bucket::is_bucket_url(output) {
            output.to_path_buf()
        } else {
            absolute(output)?
        },
        inputs: cs
            .files
            .iter()
            .map(|f| {
                let bytes = std::fs::metadata(&f.path)
                    .map_err(|e| Error::io(&f.path, e))?
                    .len();
                Ok(PlannedInput {
                    path: f.path.clone(),
                    bytes,
                })
            })
            .collect::<Result<Vec<_>>>()?,
        samples,
        records: at,
        geometry,
        contigs,
        partitions,
        planned_on: PlannedOn {
            budget: cs.report.budget,
            budget_from: cs.report.budget_from.clone(),
            cores: cs.report.cores.usable,
        },
        notes,
    };
    plan.id = blake3::hash(&serde_json::to_vec(&plan).expect("plans serialise"))
        .to_hex()
        .to_string();
    Ok(plan)
}

impl PartitionPlan {
    /// Reads a plan `svar2 plan --partitions` wrote, refusing one of another
    /// version or one whose content no longer matches its id.
    pub fn load(path: &Path) -> Result<PartitionPlan> {
        let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let plan: PartitionPlan = serde_json::from_slice(&text)
            .map_err(|e| plan_error(path, format!("not a partition plan ({e})")))?;
        if plan.svar2 != env!("CARGO_PKG_VERSION") {
            return Err(plan_error(
                path,
                format!(
                    "made by svar2 {}, and this is {}: every task must run the version that \
                     planned (plan again with this one)",
                    plan.svar2,
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
        let mut check = plan.clone();
        check.id = String::new();
        let id = blake3::hash(&serde_json::to_vec(&check).expect("plans serialise")).to_hex();
        if id.as_str() != plan.id {
            return Err(plan_error(path, "was edited after planning: plan again"));
        }
        plan.check_numbers().map_err(|why| {
            plan_error(
                path,
                format!("is not a plan svar2 writes ({why}): plan again"),
            )
        })?;
        Ok(plan)
    }

    /// Every number a task or finalize will index by, checked before any is used: a
    /// plan edited with its id recomputed is refused in one line, never a panic.
    fn check_numbers(&self) -> std::result::Result<(), String> {
        let g = &self.geometry;
        if g.variants_chunk == 0
            || g.samples_chunk == 0
            || g.variants_shard == 0
            || g.samples_shard == 0
        {
            return Err("a chunk or shard of size 0".into());
        }
        if !g.variants_shard.is_multiple_of(g.variants_chunk)
            || !g.samples_shard.is_multiple_of(g.samples_chunk)
        {
            return Err("shards that are not whole inner chunks".into());
        }
        if !(1..=9).contains(&g.zstd_level) {
            return Err(format!("zstd level {}", g.zstd_level));
        }
        if self.inputs.is_empty() || self.partitions.is_empty() {
            return Err("no inputs or no partitions".into());
        }
        let n = self.partitions.len();
        let mut places = vec![false; n];
        for (i, p) in self.partitions.iter().enumerate() {
            // Listed by number (tasks take `partitions[K]`); `axis` places them along
            // the variants axis, each place once.
            if p.index != i {
                return Err(format!("partition {i} numbered {}", p.index));
            }
            if p.axis >= n || std::mem::replace(&mut places[p.axis], true) {
                return Err(format!("partition {i} at axis place {} of {n}", p.axis));
            }
            if let Some((a, b)) = p.shard_rows {
                if a > b {
                    return Err(format!("partition {i}'s shard rows {a}..{b}"));
                }
            }
            for sp in &p.spans {
                let Some(c) = self.contigs.get(sp.contig) else {
                    return Err(format!(
                        "partition {i} names contig {} of {}",
                        sp.contig,
                        self.contigs.len()
                    ));
                };
                if sp.cut >= c.cuts.len() {
                    return Err(format!(
                        "partition {i} names cut {} of contig {}",
                        sp.cut, c.name
                    ));
                }
            }
        }
        let mut offset = 0u64;
        for c in &self.contigs {
            if c.file as usize >= self.inputs.len() {
                return Err(format!(
                    "contig {} in input {} of {}",
                    c.name,
                    c.file,
                    self.inputs.len()
                ));
            }
            if c.cuts.is_empty() {
                return Err(format!("contig {} without a cut", c.name));
            }
            let mut at = 0u64;
            for &(beg, end) in &c.cuts {
                if beg < at || end.is_some_and(|e| e < beg) {
                    return Err(format!("contig {}'s cuts out of order", c.name));
                }
                at = end.unwrap_or(u64::MAX);
            }
            if c.offset != offset {
                return Err(format!(
                    "contig {} at offset {} where {offset} was expected",
                    c.name, c.offset
                ));
            }
            offset = offset
                .checked_add(c.records)
                .ok_or("record counts overflow")?;
        }
        if offset != self.records {
            return Err(format!(
                "contigs of {offset} records in a plan of {}",
                self.records
            ));
        }
        Ok(())
    }

    /// The plan as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plans serialise") + "\n"
    }

    /// The plan as people read it.
    pub fn render(&self) -> String {
        let geometry = &self.geometry;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "partition plan {} -> {} ({} records, {} samples, {} input(s))",
            &self.id[..12],
            self.output.display(),
            self.records,
            self.samples,
            self.inputs.len()
        );
        let _ = writeln!(
            s,
            "chunks         inner {} variants x {} samples; shards {} x {}; level {}",
            geometry.variants_chunk,
            geometry.samples_chunk,
            geometry.variants_shard,
            geometry.samples_shard,
            geometry.zstd_level
        );
        let _ = writeln!(
            s,
            "planned with   {} ({}), {} cores; each task plans its own machine",
            human(self.planned_on.budget),
            self.planned_on.budget_from,
            self.planned_on.cores
        );
        let _ = writeln!(
            s,
            "{:>5} {:>12} {:>13} {:>9}  regions",
            "part", "records", "shard rows", "peak RSS"
        );
        for p in &self.partitions {
            let rows = p.shard_rows.map_or("-".into(), |(a, b)| format!("{a}-{b}"));
            let regions = &p.regions;
            let _ = writeln!(
                s,
                "{:>5} {:>11}{} {:>13} {:>9}  {}",
                p.index,
                p.records,
                if p.exact { " " } else { "~" },
                rows,
                human(p.predicted_peak_rss),
                if regions.is_empty() {
                    "(empty)".into()
                } else {
                    regions.join(" ")
                }
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "note           {n}");
        }
        let _ = writeln!(
            s,
            "run            svar2 convert --plan PLAN --partition K   (K = 0..{}), then \
             svar2 finalize PLAN",
            self.partitions.len().saturating_sub(1)
        );
        s
    }

    /// Opens the inputs and checks they are the ones planned: same files, sizes,
    /// samples and index counts (a changed input would put records elsewhere).
    pub(super) fn open_checked(&self, plan_path: &Path, request: &PlanRequest) -> Result<CallSet> {
        for i in &self.inputs {
            let now = std::fs::metadata(&i.path)
                .map_err(|e| Error::io(&i.path, e))?
                .len();
            if now != i.bytes {
                return Err(plan_error(
                    plan_path,
                    format!(
                        "{} has {now} bytes, and {} when planned: the input changed; plan again",
                        i.path.display(),
                        i.bytes
                    ),
                ));
            }
        }
        let paths: Vec<PathBuf> = self.inputs.iter().map(|i| i.path.clone()).collect();
        let cs = open_indexed(&paths, request)?;
        let same_order = cs.files.iter().map(|f| &f.path).eq(paths.iter());
        let same_counts = self.contigs.iter().all(|c| {
            cs.counts.get(c.rid as usize) == Some(&c.records)
                && cs.schema.contigs[c.rid as usize].name == c.name
                && cs.contigs.iter().any(|p| p.rid == c.rid)
        });
        if !same_order
            || !same_counts
            || cs.schema.samples.len() as u64 != self.samples
            || cs.counts.iter().sum::<u64>() != self.records
        {
            return Err(plan_error(
                plan_path,
                "the inputs' headers or indexes no longer match the plan: plan again",
            ));
        }
        Ok(cs)
    }
}
