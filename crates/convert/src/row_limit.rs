//! How much the chunk rows of records may fill under `--max-mem`. The plan charges
//! rows at what the input's first records (and spots spread over an indexed file)
//! measured; later records can fill more (more alleles, values that do not pack,
//! longer strings) and lay out wider chunks. The pipeline then encodes fewer batches
//! at once, down to one and no further, so past a point a row is refused — while it
//! is read, before it takes the memory, or when a wider layout is admitted — with the
//! chunk rows or the budget that would hold it. Both refusals give the same advice.

use crate::arrays::{ArraySet, Layout};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use svar2_planner::memory::{HEADROOM, MEASURED};
use svar2_planner::size::human;
use svar2_planner::{Plan, PlanInput};
use svar2_vcf::ragged::Batch;
use svar2_vcf::schema::Schema;

/// Records between two looks at a batch being filled, at most (summing its columns
/// costs a few dozen nanoseconds, a record's parse microseconds), and the blocks a
/// refusal's advice measures records in.
pub(crate) const CHECK_EVERY: usize = 16;

/// The most the law has predicted under a measured peak: 4-10 % at the smallest
/// budgets (a hostile pass). Plans keep the full headroom (`HEADROOM`); rows that
/// fill more than planned may take it, less this much.
const LAW_ERROR: f64 = 1.1;

/// What records at hand need, beside what the plan measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill {
    /// Bytes a record fills in a batch.
    pub per_record: u64,
    /// Bytes per sample of every per-sample array's chunk layout.
    pub sample_cell: u64,
    /// Bytes per sample the text of per-sample string fields adds to it.
    pub text_cell: u64,
    /// Bytes per record by which the per-variant arrays are wider than planned.
    pub variant_excess: u64,
}

impl Fill {
    /// `batch`'s records, with every array laid out as `layouts`. A record's bytes
    /// (and its text) are those of the batch's dearest 16 records: a row that mixes
    /// cheap records with dear ones says less than rows of the dear ones would take.
    pub(crate) fn of(batch: &Batch, set: &ArraySet, layouts: &[Layout]) -> Fill {
        let n = batch.len();
        // Blocks of 16 records: the dearest says what rows of such records take.
        let (mut per_record, mut text) = (0, 0);
        let mut hi = n;
        while hi > 0 {
            let lo = hi.saturating_sub(CHECK_EVERY);
            let bytes = batch.filled_bytes_from(lo) - batch.filled_bytes_from(hi);
            per_record = per_record.max(bytes / (hi - lo));
            text = text.max(set.text_cell_between(batch, lo, hi));
            hi = lo;
        }
        Fill {
            per_record: per_record as u64,
            sample_cell: set.scratch_cell_of(layouts),
            text_cell: text,
            variant_excess: set.variant_excess_of(layouts),
        }
    }
}

/// What the budget leaves the rows in flight and the encoders' chunks, from a plan,
/// and the plan's input, to re-plan for the advice a refusal gives.
#[derive(Debug, Clone)]
pub(crate) struct RowLimit {
    /// `--max-mem`, bytes.
    pub budget: u64,
    now: Charges,
    /// Encoder scratch the writer admitted past the plan's (wider layouts, longer
    /// text): the readers' rows get that much less room.
    scratch_extra: Arc<AtomicU64>,
    /// What the plan was made from, and what was added to its peak after (`--merge`).
    input: Option<Arc<PlanInput>>,
    extra: u64,
}

/// What one plan charges the rows in flight and the encoders' chunks.
#[derive(Debug, Clone, Copy)]
struct Charges {
    /// The plan's predicted peak less its rows in flight and its encoder scratch:
    /// what neither changes.
    rest: u64,
    /// Records in flight whatever the window (see `Plan::least_in_flight_records`).
    records: u64,
    /// Bytes a record in flight weighs per byte it fills past its planned bytes (the
    /// larger of the law's κ, κ_f: where the excess lies is not known).
    weight: f64,
    /// Bytes a record in flight weighs per planned byte: the plan's own mean of κ and
    /// κ_f over its rows (κ for a GT-only file).
    planned_weight: f64,
    /// Bytes a record was planned to fill.
    planned: u64,
    /// The law's encoder scratch (τ × threads × one inner chunk of every per-sample
    /// array), and the bytes per sample of that chunk it was planned at.
    scratch: f64,
    scratch_cell: u64,
    /// The text a sample's cell held in the records the plan measured (only what
    /// is longer costs more: see `prefix::RowBytes::text_cell`).
    text_cell: u64,
    /// Rows encoding at once (the window, no more than the threads).
    encoding: u64,
    /// Readers sharing the slack (contigs at once × readers a contig; one stream).
    readers: u64,
    /// Records in a chunk row.
    variants_chunk: u64,
}

impl Charges {
    fn of(p: &Plan, planned: u64, text_cell: u64, extra: u64) -> Charges {
        let format = p.in_flight_format_bytes.min(p.in_flight_bytes);
        let rows = MEASURED.kappa * (p.in_flight_bytes - format) as f64
            + MEASURED.kappa_format * format as f64;
        let scratch = MEASURED.tau * p.scratch_bytes as f64;
        let variants_chunk = p.chunks.variants.max(1);
        let cells = variants_chunk * p.chunks.samples.max(1) * p.threads.max(1) as u64;
        Charges {
            rest: (p.predicted_peak_rss + extra).saturating_sub((rows + scratch) as u64),
            records: p.least_in_flight_records.max(1),
            weight: MEASURED.kappa.max(MEASURED.kappa_format),
            planned_weight: match p.in_flight_bytes {
                0 => MEASURED.kappa,
                bytes => rows / bytes as f64,
            },
            planned: planned.max(1),
            scratch,
            scratch_cell: (p.scratch_bytes / cells).max(1),
            text_cell,
            encoding: p.window.min(p.threads as u64).max(1),
            readers: (p.cc as u64 * u64::from(p.w)).max(1),
            variants_chunk,
        }
    }

    /// The encoders' scratch when records lay out as `fill` says (no less than
    /// planned).
    fn scratch_at(&self, fill: Fill) -> f64 {
        let cell = self.cell(fill).max(self.scratch_cell) as f64 / self.scratch_cell as f64;
        // A per-variant array is one task a row (no samples axis to split): the rows
        // encoding at once hold one chunk each.
        let variant = MEASURED.tau
            * (self.encoding * self.variants_chunk) as f64
            * fill.variant_excess as f64;
        self.scratch * cell + variant
    }

    /// Bytes per sample of an encoder's chunk when records lay out as `fill` says:
    /// the layout's, and the text longer than the plan's records held.
    fn cell(&self, fill: Fill) -> u64 {
        fill.sample_cell + fill.text_cell.saturating_sub(self.text_cell)
    }

    /// Predicted peak when every record in flight fills as `fill` says (each figure
    /// no less than planned).
    fn need(&self, fill: Fill) -> u64 {
        // What records fill past the plan counts twice for each reader, as a
        // reader's watch holds it to half its share of the slack (see
        // `RowWatch::look`).
        let past = fill.per_record.saturating_sub(self.planned) as f64;
        let per_record = self.planned_weight * self.planned as f64
            + self.weight * 2.0 * self.readers as f64 * past;
        let rows = self.records as f64 * per_record;
        self.rest
            .saturating_add((rows + self.scratch_at(fill)) as u64)
    }
}

impl RowLimit {
    /// A plan's.
    pub(crate) fn of(report: &crate::planning::PlanReport) -> RowLimit {
        let extra = report.merge.map_or(0, |m| m.extra_bytes);
        RowLimit {
            budget: report.budget,
            now: Charges::of(
                &report.plan,
                report.row_bytes,
                report.prefix.map_or(0, |p| p.text_cell),
                extra,
            ),
            scratch_extra: Arc::default(),
            input: Some(Arc::new(report.plan_input.clone())),
            extra,
        }
    }

    /// No plan: only the budget (a run that admits no records).
    pub(crate) fn unplanned(budget: u64) -> RowLimit {
        RowLimit {
            budget,
            now: Charges {
                rest: 0,
                records: 1,
                weight: 1.0,
                planned_weight: 1.0,
                planned: 1,
                scratch: 0.0,
                scratch_cell: 1,
                text_cell: 0,
                encoding: 1,
                readers: 1,
                variants_chunk: 1,
            },
            scratch_extra: Arc::default(),
            input: None,
            extra: 0,
        }
    }

    /// What the rows may take the budget to: all of it but what the law can be
    /// short by ([`LAW_ERROR`]).
    fn usable(&self) -> f64 {
        self.budget as f64 / LAW_ERROR
    }

    /// Whether records laid out as `fill` says still fit: the wider scratch, `batch`
    /// as it filled and the other rows in flight as planned (each reader holds the
    /// records it read lately to its share of what is left: see [`RowWatch`]). `true`
    /// admits that scratch, and the readers get the less room.
    pub(crate) fn admit(&self, fill: Fill, batch: &Batch) -> bool {
        let c = &self.now;
        if c.cell(fill) <= c.scratch_cell && fill.variant_excess == 0 {
            return true;
        }
        let scratch = c.scratch_at(fill);
        let others = c.records.saturating_sub(batch.len() as u64) * c.planned;
        let filled = batch.filled_bytes() as u64 + others;
        let planned = c.records * c.planned;
        let rows = c.planned_weight * filled.min(planned) as f64
            + c.weight * filled.saturating_sub(planned) as f64;
        if c.rest as f64 + scratch + rows > self.usable() {
            return false;
        }
        let extra = (scratch - c.scratch).max(0.0) as u64;
        self.scratch_extra.fetch_max(extra, Ordering::Relaxed);
        true
    }

    /// Bytes per sample of an encoder's chunk, text included: as records lay out
    /// as `fill` says, and as the plan measured.
    pub(crate) fn cells(&self, fill: Fill) -> (u64, u64) {
        let c = &self.now;
        (
            fill.sample_cell + fill.text_cell,
            c.scratch_cell + c.text_cell,
        )
    }

    /// What the planner charges at `budget` with chunk rows of `variants_chunk`
    /// records (and `readers` a contig, where given), if it can plan them.
    fn replan(&self, budget: u64, variants_chunk: u64, readers: Option<u32>) -> Option<Charges> {
        let mut input = PlanInput::clone(self.input.as_ref()?);
        input.budget = budget;
        input.requested.variants_chunk = Some(variants_chunk);
        if readers.is_some() {
            input.readers = readers;
        }
        let plan = svar2_planner::plan(&input).ok()?;
        let c = &self.now;
        Some(Charges::of(&plan, c.planned, c.text_cell, self.extra))
    }

    /// What to pass instead, as the planner would run it: the longest chunk rows
    /// whose records, filling as `fill` says, fit this budget (else one reader a
    /// contig, where several were planned and one fits), and the least budget that
    /// holds them at these chunk rows.
    pub(crate) fn advice(&self, fill: Fill) -> String {
        let vc = self.now.variants_chunk;
        let fits_at = |budget: u64, n: u64, readers: Option<u32>| {
            self.replan(budget, n, readers)
                .is_some_and(|c| c.need(fill) as f64 <= budget as f64 / LAW_ERROR)
        };
        // The longest rows that fit, by bisection (the need grows with the rows); 0
        // for none.
        let longest = |readers: Option<u32>| {
            if readers.is_some() && fits_at(self.budget, vc, readers) {
                return vc;
            }
            let (mut lo, mut hi) = (0, vc);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                match fits_at(self.budget, mid, readers) {
                    true => lo = mid,
                    false => hi = mid,
                }
            }
            lo
        };
        let lo = longest(None);
        // The least budget that holds these rows, by bisection up to one at which
        // the planner gives every thread and batch back (the need grows with the
        // budget only as far as that): a plan's pieces are cut by the rows it
        // expects, so past several readers' pieces no chunk row may fit, and the
        // roomiest plan's need overstated what a run at this shape takes ~6x.
        let roomy = self.replan(u64::MAX >> 8, vc, None).unwrap_or(self.now);
        let mut high = ((roomy.need(fill) as f64 * HEADROOM) as u64).max(self.budget);
        let mut low = self.budget;
        while high as f64 > low as f64 * 1.01 {
            let mid = low + (high - low) / 2;
            match fits_at(mid, vc, None) {
                true => high = mid,
                false => low = mid,
            }
        }
        // Two percent over: what `human` rounds off stays inside.
        let pinned = human((high as f64 * 1.02) as u64);
        // Several readers' pieces are cut by the rows the plan expects, so shorter
        // chunk rows may not help them where one reader's would.
        let one_reader = match (lo, self.now.readers > 1) {
            (0, true) => longest(Some(1)),
            _ => 0,
        };
        match (lo, one_reader) {
            (0, 0) => format!("pass --max-mem {pinned} with --variants-chunk {vc}"),
            (0, n) if n == vc => format!(
                "pass --readers 1 (it fits this budget), or --max-mem {pinned} with \
                 --variants-chunk {vc}"
            ),
            (0, n) => format!(
                "pass --readers 1 --variants-chunk {n} (it fits this budget), or --max-mem \
                 {pinned} with --variants-chunk {vc}"
            ),
            (n, _) => format!(
                "pass --variants-chunk {n} (it fits this budget), or --max-mem {pinned} with \
                 --variants-chunk {vc}"
            ),
        }
    }

    /// Bytes the rows in flight may fill past what was planned for them: the room
    /// the plan left, less the scratch the writer admitted since.
    fn slack(&self) -> f64 {
        let c = &self.now;
        let scratch = c.scratch + self.scratch_extra.load(Ordering::Relaxed) as f64;
        let planned_rows = c.planned_weight * (c.records * c.planned) as f64;
        self.usable() - c.rest as f64 - scratch - planned_rows
    }
}

/// One reader's watch over the records it read lately: what they fill past their
/// planned bytes, over as many records as can be in flight (the rows in flight are
/// at most those), may take no more than this reader's share of the slack. Exact for
/// one streaming reader, whatever the stretch of dear records (a short one converts,
/// a long one is refused); each of several readers gets an equal share. Every run of
/// the same input and options sees the same records in the same blocks, so a refusal
/// does not depend on the machine's pace.
pub(crate) struct RowWatch {
    limit: RowLimit,
    /// Blocks of records read lately, oldest first: (records, bytes).
    blocks: std::collections::VecDeque<(u64, u64)>,
    records: u64,
    bytes: u64,
    /// The records and bytes of the batch being filled at the last look.
    seen: (usize, u64),
    /// The batch's length at which to look next.
    due_at: usize,
    /// Readers sharing the slack.
    readers: u64,
}

impl RowWatch {
    pub(crate) fn new(limit: &RowLimit, readers: usize) -> RowWatch {
        RowWatch {
            limit: limit.clone(),
            blocks: Default::default(),
            records: 0,
            bytes: 0,
            seen: (0, 0),
            due_at: 1,
            readers: readers.max(1) as u64,
        }
    }

    /// Whether to look at a batch now `len` records long: at its first record, then
    /// every [`CHECK_EVERY`] records, or sooner where the last records were dear
    /// (records of 13 MB each would take 200 MB between two looks 16 apart).
    pub(crate) fn due(&self, len: usize) -> bool {
        len >= self.due_at || len < self.seen.0
    }

    /// Looks at `batch` (`path`'s records up to record `record`, 1-based) after
    /// records were added to it: when [`RowWatch::due`] and when it is full (`full`:
    /// the next look is at a new batch). `Err` when the records read lately
    /// take more than this reader's share of the slack.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn look(
        &mut self,
        path: &Path,
        schema: &Schema,
        set: &ArraySet,
        record: u64,
        batch: &Batch,
        full: bool,
    ) -> svar2_vcf::Result<()> {
        let (len, filled) = (batch.len(), batch.filled_bytes() as u64);
        if len < self.seen.0 {
            self.seen = (0, 0); // a new batch
        }
        let (records, bytes) = (len - self.seen.0, filled.saturating_sub(self.seen.1));
        self.seen = if full { (0, 0) } else { (len, filled) };
        self.blocks.push_back((records as u64, bytes));
        self.records += records as u64;
        self.bytes += bytes;
        let c = &self.limit.now;
        while let Some(&(r, b)) = self.blocks.front() {
            if self.records - r < c.records {
                break;
            }
            self.blocks.pop_front();
            self.records -= r;
            self.bytes -= b;
        }
        // The oldest block counted for its share of the last `c.records` records.
        let over = self.records.saturating_sub(c.records);
        let (old_r, old_b) = self.blocks.front().copied().unwrap_or((1, 0));
        let window_bytes = self.bytes as f64 - old_b as f64 * over as f64 / old_r.max(1) as f64;
        let window_records = self.records - over;
        let past = c.weight * (window_bytes - (window_records * c.planned) as f64);
        // Half the slack: the rows' bytes are not all a peak holds while they are
        // encoded (the layouts' copies, allocator slack); at 64 MiB a stretch of dear
        // records allowed the whole slack peaked 5 % over the budget one run in four.
        let share = self.limit.slack() / 2.0 / self.readers as f64;
        if past <= share || batch.is_empty() {
            // The next look before a quarter of what is left could be filled at the
            // latest block's pace.
            let per_record = c.weight * bytes as f64 / records.max(1) as f64;
            let step = ((share - past) / 4.0 / per_record.max(1.0)) as usize;
            let from = if full { 0 } else { len };
            self.due_at = from + step.clamp(1, CHECK_EVERY);
            return Ok(());
        }
        let fill = Fill::of(batch, set, &crate::prefix::layouts_of(batch, schema, set));
        let locus = batch
            .loci
            .last()
            .map(|&(rid, pos, _)| format!("{}:{pos}", schema.contig_label(rid as i64)))
            .unwrap_or_default();
        Err(svar2_vcf::Error::Record {
            path: path.into(),
            record,
            locus,
            msg: format!(
                "the last {} records read fill {} ({} a record, where the plan measured {} \
                 on the input's first records: more alleles, values or text), which as \
                 the rows in flight does not fit --max-mem {}; {}",
                window_records,
                human(window_bytes as u64),
                human(window_bytes as u64 / window_records.max(1)),
                human(c.planned),
                human(self.limit.budget),
                self.limit.advice(fill),
            ),
        })
    }
}
