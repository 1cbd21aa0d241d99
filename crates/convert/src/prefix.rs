//! The sample probe: how the input's records lie in memory — its first ones, and for
//! one indexed file some at spots spread over it. A batch holds diploid calls packed
//! two alleles to a byte and FORMAT integers in 16 bits while they fit, so a row of a
//! GT-only biobank file takes a third of what the header's worst case (an i8 per
//! allele and a byte per phase flag) says, and a call set's AD/DP/GQ/PL half. The
//! plan charges what the sampled records measure, so the budget buys chunk rows and
//! concurrency instead of slack; the pipeline checks each batch against the same
//! figure and encodes fewer at once when later records fill more (haploid calls on
//! chrX, alleles past 13, values past 16 bits).

use crate::arrays::{ArraySet, Dims, Layout, Stats};
use svar2_vcf::ragged::{Batch, Values};
use svar2_vcf::schema::Schema;
use svar2_vcf::source::{Stream, VcfReader};

/// Records the probe reads at most: enough that a column which will not pack shows
/// (a multiallelic site, a haploid call), few enough to cost milliseconds.
pub const PREFIX_RECORDS: usize = 64;

/// Bytes the probe's batch may fill before it stops (at least one record is read):
/// 64 records of a 300,000-sample call set with FORMAT fields would fill ~600 MB.
/// An eighth of the budget at most: planning holds the batch beside the record it
/// parses (see the planner's `PARSE_COPIES`), and a 5,000-sample call set of 231 PL
/// values a sample (2.3 MB a record in the batch) peaked at 48 MB planning under a
/// 40 MiB budget with 16 MB of them.
pub const PREFIX_BYTES: usize = 16 << 20;

/// [`PREFIX_BYTES`] under the budget reading works under.
fn prefix_bytes() -> usize {
    PREFIX_BYTES.min(svar2_vcf::limits::budget() / 8)
}

/// Threads the probe's reader is set up for: the least at which BGZF text is
/// inflated by svar2's own reader, as a conversion's is, so a record line over the
/// budget's limit is refused before it is held whole.
pub const READ_THREADS: usize = 2;

/// What the sampled records measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RowBytes {
    /// Records read.
    pub records: u64,
    /// Bytes a record is expected to fill in a batch: every column at its planned
    /// width (or the widest seen), each value as these records hold it.
    pub row: u64,
    /// The part of `row` in per-sample FORMAT fields other than GT.
    pub format: u64,
    /// Bytes per sample of every per-sample array's chunk layout, at the dtypes and
    /// widths the records need: what an encoding thread lays out per chunk cell.
    pub scratch_cell: u64,
    /// Bytes per sample the text of per-sample string fields adds to an encoder's
    /// chunk (`ArraySet::text_cell_of`): what later, longer text is measured against
    /// (the law's fit already holds these records' text in `scratch_cell`'s share).
    pub text_cell: u64,
    /// Whether every genotype column stayed packed.
    pub packed: bool,
}

impl RowBytes {
    /// The most of two inputs' figures (each figure on its own): what a plan for
    /// both must charge.
    pub fn most(self, other: RowBytes) -> RowBytes {
        RowBytes {
            records: self.records + other.records,
            row: self.row.max(other.row),
            format: self.format.max(other.format),
            scratch_cell: self.scratch_cell.max(other.scratch_cell),
            text_cell: self.text_cell.max(other.text_cell),
            packed: self.packed && other.packed,
        }
    }
}

/// Reads up to [`PREFIX_RECORDS`] records of `reader` (the input opened as the
/// conversion will open it) into one batch with `schema`'s columns, and measures
/// them. `None` when the input has no records, or its first ones fail to read: the
/// plan then charges the header's worst case, and the conversion names the error.
/// `Err` for a record that needs more of the budget than one record may take
/// ([`size_refusal`]).
pub fn measure(
    reader: VcfReader,
    schema: &Schema,
    set: &ArraySet,
) -> svar2_vcf::Result<Option<RowBytes>> {
    let never = Box::new(|_: &std::path::Path| unreachable!("one input"));
    let mut stream = Stream::many(reader, Vec::new(), never, schema, &set.record);
    let mut batch = Batch::new(&set.record.specs, schema.samples.len(), 0);
    let most = prefix_bytes();
    while batch.len() < PREFIX_RECORDS && batch.filled_bytes() < most {
        let record_no = batch.len() as u64;
        match stream.read_into(&mut batch, record_no) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                size_refusal(e)?;
                break;
            }
        }
    }
    Ok(estimate(&batch, schema, set))
}

/// `Err(e)` where `e` refused a record for the budget it needs (`svar2_vcf::limits`
/// noted how much: its FORMAT values laid out, its alleles): the plan names it rather
/// than plan from the records before it. Other errors are the conversion's to name.
fn size_refusal(e: svar2_vcf::Error) -> svar2_vcf::Result<()> {
    if svar2_vcf::limits::needed_budget() > 0 {
        return Err(e);
    }
    tracing::debug!("the sample probe stopped: {e}");
    Ok(())
}

/// What `batch`'s records say a row of the input fills (see [`RowBytes`]); `None`
/// for an empty batch.
fn estimate(batch: &Batch, schema: &Schema, set: &ArraySet) -> Option<RowBytes> {
    let n = batch.len() as u64;
    if n == 0 {
        return None;
    }
    let (row, format) = set.row_bytes_estimate(schema.samples.len() as u64, Some(batch));
    Some(RowBytes {
        records: n,
        row,
        format,
        scratch_cell: set.scratch_cell_of(&layouts_of(batch, schema, set)),
        text_cell: set.text_cell_of(batch),
        packed: set
            .record
            .specs
            .iter()
            .zip(&batch.columns)
            .filter(|(spec, _)| spec.genotype)
            .all(|(_, c)| matches!(c.values, Values::Diploid(_))),
    })
}

/// Every array's layout as `batch`'s values alone need it.
pub(crate) fn layouts_of(batch: &Batch, schema: &Schema, set: &ArraySet) -> Vec<Layout> {
    let stats = Stats::of_batch(set, batch);
    let dims = Dims::from_stats(set, &stats, schema.has_gt);
    set.arrays.iter().map(|a| a.layout(&stats, &dims)).collect()
}

/// Pieces of an indexed file whose first records the probe also reads, besides the
/// file's head: spread over its contigs (each contig's start first, the largest
/// first, then where each quarter of its bytes and each quarter of its length
/// begins), so a later
/// contig or region whose records fill more (chrX's haploid calls, a stretch of
/// multiallelic sites) is planned for too.
pub const SPOTS: usize = 32;

/// Records read at each spot (fewer where they would fill over 4 MB).
pub const SPOT_RECORDS: usize = 16;

/// The spots read together at most one record in this many of the input's (at least
/// one at each spot): 32 spots of 16 records read 8 % of a 4,000-record call set
/// again, 3 % of its conversion's CPU spent before any encoding starts.
pub const SPOT_SHARE: u64 = 64;

/// Threads that read spots at once at most: each holds a quarter of
/// [`PREFIX_BYTES`]' share at most (see `rows` in [`measure_spots`]), so four hold what
/// the head's one batch may, and on a 16-core machine 32 spots take eight reads' time.
pub const SPOT_THREADS: usize = 4;

/// [`RowBytes`] of up to [`SPOT_RECORDS`] records at the start of up to [`SPOTS`]
/// pieces of `input` (read through its index; `counts` are its records per contig),
/// each taken on its own, and the most any fills, with `head` (what the file's first
/// records measured). Read by up to `threads` threads (at most [`SPOT_THREADS`]),
/// each with its own reader: the figure is the same whatever their number. `None`
/// without a usable index; `Err` as [`measure`] says.
pub fn measure_spots(
    input: &std::path::Path,
    schema: &Schema,
    set: &ArraySet,
    counts: &[u64],
    head: RowBytes,
    threads: usize,
) -> svar2_vcf::Result<Option<RowBytes>> {
    // The starts of pieces cut by bytes (the records wherever they lie) and by
    // position (records packed closer than the index tells apart), each spot read
    // up to the next.
    use svar2_vcf::pieces::{cut_pieces, Cut, PieceReader};
    let (Some(mut pieces), Some(by_position)) = (
        cut_pieces(input, schema, counts, (4, u64::MAX), Cut::Bytes),
        cut_pieces(input, schema, counts, (4, u64::MAX), Cut::Position),
    ) else {
        return Ok(None);
    };
    pieces.extend(by_position);
    pieces.sort_by_key(|p| (p.rid, p.beg));
    pieces.dedup_by_key(|p| (p.rid, p.beg));
    for i in 0..pieces.len() {
        if let Some(next) = pieces.get(i + 1).filter(|n| n.rid == pieces[i].rid) {
            pieces[i].end = next.beg;
        }
    }
    // Every contig's first piece before any contig's second, contigs with the most
    // records first: each contig is sampled before any is sampled twice.
    let mut order: Vec<(usize, std::cmp::Reverse<u64>, usize)> = Vec::new();
    let mut nth = std::collections::HashMap::new();
    for (i, p) in pieces.iter().enumerate() {
        let k = nth.entry(p.rid).or_insert(0usize);
        let records = counts.get(p.rid as usize).copied().unwrap_or(0);
        order.push((*k, std::cmp::Reverse(records), i));
        *k += 1;
    }
    order.sort();
    let spots: Vec<&svar2_vcf::pieces::Piece> = order
        .iter()
        .take(SPOTS)
        .map(|&(_, _, i)| &pieces[i])
        .collect();
    // (A quarter of the head's bytes at each spot: they add up over many contigs.)
    let bytes = prefix_bytes() as u64 / 4;
    let share = counts.iter().sum::<u64>() / SPOT_SHARE / spots.len().max(1) as u64;
    let rows = (bytes / head.row.max(1))
        .min(share)
        .clamp(1, SPOT_RECORDS as u64) as usize;
    let n_samples = schema.samples.len();
    let threads = threads.clamp(1, SPOT_THREADS).min(spots.len().max(1));
    // Each thread takes the next spot not yet taken; each spot's result is kept at
    // its place, so what is folded below does not depend on which thread read it.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<svar2_vcf::Result<Option<RowBytes>>>>> =
        spots.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let opened = std::sync::atomic::AtomicBool::new(true);
    let read_spots = || {
        // The plan's quiet: what the records say, the conversion says once.
        let quiet = tracing::subscriber::NoSubscriber::default();
        tracing::subscriber::with_default(quiet, || {
            let Ok(mut reader) = PieceReader::open(input, schema, &set.record) else {
                opened.store(false, std::sync::atomic::Ordering::Relaxed);
                return;
            };
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(piece) = spots.get(i) else {
                    return;
                };
                let got = reader
                    .first_rows(piece, rows, &set.record.specs, n_samples)
                    .map(|b| b.and_then(|b| estimate(&b, schema, set)));
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(got);
            }
        })
    };
    std::thread::scope(|scope| {
        for t in 1..threads {
            // A thread that cannot start leaves its share to the others.
            let _ = std::thread::Builder::new()
                .name(format!("probe-{t}"))
                .spawn_scoped(scope, read_spots);
        }
        read_spots();
    });
    if !opened.into_inner() {
        return Ok(None);
    }
    let mut most = head;
    for r in results {
        match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(Some(m))) => most = most.most(m),
            Some(Ok(None)) | None => {}
            Some(Err(e)) => size_refusal(e)?,
        }
    }
    Ok(Some(most))
}
