//! Putting it together: cores, memory and data sizes in; concurrency, readers, chunk
//! geometry and a predicted peak RSS out — or an error that says what would fit.

use crate::geometry::{
    amplification, requested_chunks, requested_shards, Chunks, PatchShape, Requested,
};
use crate::memory::{InFlight, RssModel, HEADROOM};
use crate::order::{dispatch_order, ContigCost, CostTier};
use crate::size::human;

/// Where the readers-per-contig count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReaderSource {
    /// `--readers N`.
    User,
    /// The measured rate probe.
    Probe,
    /// No probe ran (dry run, or the executor has one reader per contig).
    Default,
}

/// Everything the planner needs, as plain numbers.
#[derive(Debug, Clone)]
pub struct PlanInput {
    /// Cores this process may use (affinity and cgroup quota applied).
    pub cores: usize,
    /// Encoding threads (each holds one inner chunk of scratch).
    pub threads: usize,
    /// Memory budget in bytes.
    pub budget: u64,
    pub contigs: Vec<ContigCost>,
    pub samples: u64,
    /// Raw in-memory bytes one record occupies before encoding.
    pub row_bytes: u64,
    /// The part of `row_bytes` that per-sample FORMAT fields other than GT take (the
    /// law weighs it apart: see `memory`).
    pub format_row_bytes: u64,
    /// Genotype bytes per call (ploidy × itemsize), for chunk sizing.
    pub cell_bytes: u64,
    /// In-memory bytes per sample of all per-sample arrays together (5 for GT alone:
    /// genotype, mask, phase; 33 with AD, DP, GQ and PL): it sizes the encoder
    /// scratch, since each encoding thread lays out and compresses their inner chunks.
    pub scratch_cell_bytes: u64,
    /// Arrays with and without a samples axis, for shard counts.
    pub call_arrays: u64,
    pub variant_arrays: u64,
    pub patch: Option<PatchShape>,
    pub max_amplification: f64,
    pub requested: Requested,
    /// `--readers N`, if given.
    pub readers: Option<u32>,
    /// The share of one record's CPU time its reading takes (the rest is encoding),
    /// when the rate probe measured it.
    pub read_share: Option<f64>,
    /// The most contigs the executor can convert at once.
    pub max_concurrent_contigs: usize,
    /// Input files of the call set (per-chromosome files: several).
    pub inputs: usize,
    /// Whether a plan of one contig at a time and one reader is read by one streaming
    /// reader, which fills no more rows than the window holds (see `window` below). A
    /// partition reads through its index whatever its plan, and its readers' rows are
    /// charged apart.
    pub serial_stream: bool,
    pub model: RssModel,
}

/// How the conversion will run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    /// Contig indexes in dispatch order.
    pub order: Vec<usize>,
    /// Contigs converted at once.
    pub cc: usize,
    /// Readers per contig, and where that number came from.
    pub w: u32,
    pub readers_from: ReaderSource,
    /// The read share the readers were sized by (measured, or [`DEFAULT_READ_SHARE`]).
    pub read_share: f64,
    /// Batches (inner-chunk rows) encoded at once on the encoder pool: enough to keep
    /// every encoding thread busy whatever the arrays of one batch, fewer when the
    /// memory budget says so. One streaming reader fills its row as one of these (two
    /// alive at least); readers through the index fill one more.
    pub window: u64,
    /// Encoding threads: `--threads` (or the cores), fewer when the memory budget
    /// cannot hold their scratch.
    pub threads: usize,
    pub chunks: Chunks,
    pub variants_shard: u64,
    pub samples_shard: u64,
    /// Decode amplification for the `--patch`, when one was given.
    pub amplification: Option<f64>,
    /// Records known from the index (all contigs counted), if every contig was.
    pub records: Option<u64>,
    pub in_flight_bytes: u64,
    /// The part of `in_flight_bytes` in per-sample FORMAT fields other than GT of
    /// the rows being encoded (the law's κ_f; rows held before encoding weigh κ).
    pub in_flight_format_bytes: u64,
    /// Records that stay in flight however few batches encode at once (one encoding,
    /// the reader's, and those held before encoding): what later records that fill
    /// more than the measured rows multiply, since the pipeline narrows the window
    /// down to one batch but no further.
    pub least_in_flight_records: u64,
    /// Encoder scratch: threads × one inner chunk of every per-sample array.
    pub scratch_bytes: u64,
    /// Records a piece read through the index holds ([`piece_rows`]).
    pub piece_rows: u64,
    pub predicted_peak_rss: u64,
    pub budget: u64,
    /// Shard files at most (empty shards are not written), and all files at most.
    pub shards: Option<u64>,
    pub files: Option<u64>,
    /// Decisions worth telling the user (budget-driven shrinking, clamps).
    pub notes: Vec<String>,
}

/// A plan that cannot work, with what would.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanError {
    /// Even one record per chunk row does not fit.
    BudgetTooSmall { budget: u64, minimum: u64 },
    /// The chunk size the user fixed does not fit the budget.
    ChunkTooLarge {
        budget: u64,
        variants_chunk: u64,
        fits: u64,
    },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::BudgetTooSmall { budget, minimum } => write!(
                f,
                "--max-mem {} is below the smallest plan, which needs {} \
                 (one record per chunk row); pass --max-mem {} or more",
                human(*budget),
                human(*minimum),
                human(minimum.div_ceil(1 << 20) << 20)
            ),
            PlanError::ChunkTooLarge {
                budget,
                variants_chunk,
                fits,
            } => write!(
                f,
                "--variants-chunk {variants_chunk} does not fit --max-mem {}; \
                 use --variants-chunk {fits} or less, or a larger --max-mem",
                human(*budget)
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// Memory one extra piece reader adds beyond its chunk rows: file handle, header,
/// index, malloc arena. Measured as the peak's step per reader past two
/// (`scripts/bench_memory.sh`, 2026-12-05): ~5 MB at 1,000 samples, ~6 MB at 20,000,
/// none to see at 300,000 — a reader's header copy is small beside the law's
/// per-sample bytes, which it used to charge again for every reader (+300 MB a reader
/// at biobank width, which cost concurrency).
const PER_READER_BYTES: u64 = 8 << 20;

/// Memory each input file past the first adds, whatever the chunk rows: its schema
/// (kept for the plan's pieces), and what reading its start while planning and
/// opening it in turn leave behind (thread arenas). Measured 2026-12-05 at the
/// smallest budgets: 1.9 MB a file at 20,000 samples (8 per-contig files against the
/// same records in one), under 11 MB at 300,000.
const PER_INPUT_BYTES: u64 = 2 << 20;
const PER_INPUT_SAMPLE_BYTES: u64 = 40;

/// Pieces each contig is cut into per reader: enough that readers finishing early
/// find work, few enough that each piece spans many chunk rows.
pub const PIECES_PER_READER: u64 = 4;

/// Records a piece read through the index holds: a chunk row of `rows` records, or
/// [`MIN_PIECE_BYTES`] of rows of `row_bytes` where a row holds less and two such
/// pieces for each of `readers` take at most a sixteenth of the `budget` (a budget
/// that shrank the chunk rows keeps its pieces to them). A reader reads
/// a whole piece while earlier ones wait to be joined (two a reader at most, see
/// `svar2_convert::schedule`), so it is what a reader holds; each piece also costs a
/// seek and a BGZF block inflated twice, which a piece of small records must
/// outweigh: 2 M sites-only records (216 batch bytes each) cut into 1,000-record
/// pieces took their readers ~15 % more CPU than 4 pieces a reader, and none more in
/// 1 MiB pieces (4,855 records).
pub fn piece_rows(rows: u64, row_bytes: u64, readers: u64, budget: u64) -> u64 {
    let floor = MIN_PIECE_BYTES.div_ceil(row_bytes.max(1));
    let affordable = 2 * readers * MIN_PIECE_BYTES <= budget / 16;
    match floor > rows && affordable {
        true => floor,
        false => rows.max(1),
    }
}

/// The least batch bytes a piece holds (see [`piece_rows`]).
pub const MIN_PIECE_BYTES: u64 = 1 << 20;

/// Pieces a contig of `records` is read in by `w` readers: [`PIECES_PER_READER`]
/// each at least, and none much longer than `piece_rows` records
/// (`svar2_vcf::pieces::cut_finer`; with pieces a contig's quarter long the readers
/// of one contig read about as fast as one).
pub fn pieces_for(records: u64, piece_rows: u64, w: u32) -> u64 {
    (PIECES_PER_READER * w.max(1) as u64).max(records.div_ceil(piece_rows.max(1)))
}

/// Memory each encoding thread past the two the law was calibrated with adds (its
/// malloc arena and codec contexts): sim.vcf.gz at `--threads` 1-4 measured ~6.5 MB
/// per thread past two that the law did not see (27 % under at 4 threads without it).
const PER_EXTRA_THREAD_BYTES: u64 = 6_500_000;

/// Encoding threads from which one streaming reader's lines of bgzipped VCF text are
/// parsed ahead on the encoding pool (`svar2_convert`'s `ahead`): every encoding
/// thread then parses a block of lines, beside the reader. On two cores the parse
/// gains nothing there (the cores are busy either way) and the copy of every line
/// into a block costs: sim.vcf.gz +10 % CPU, fmt2000 and fmt500 unchanged; from three
/// on the reading thread stops being the bound (fmt2000 with no index at `--threads
/// 16`: bound 3.3 -> 13).
pub const PARSE_AHEAD_THREADS: usize = 3;

/// Copies of a record's batch bytes its reader holds while it parses it, beside the
/// rows in flight the law charges: the record's text (a FORMAT integer's few
/// characters and comma, against its 2 bytes in the batch) and its values at 32 bits
/// before they are narrowed. A 20,000-sample call set of 231 PL values a sample (13.3
/// MB of text, 18.5 MB of values and 9.2 MB in the batch a record) peaked 22-31 MB over
/// the law's prediction at 81-200 MiB (hostile pass, 2026-12-05); for an ordinary
/// record it is a few hundred KB a reader, inside the law's fit.
const PARSE_COPIES: u64 = 4;

/// Readers per contig a user may ask for (`--readers`, `readers=`): each is a thread
/// with its own decompressor and record buffers.
pub const MAX_READERS: u32 = 64;

/// Readers `cores` leave room for beside one encoding core: at 1 the rate probe could
/// change the plan only by a reader sharing the encoder's core (on 2 cores: ~0.3 s of
/// a 1.3 s FORMAT-heavy conversion for ~10 %), so it is skipped.
pub fn readers_that_fit(cores: usize) -> u32 {
    (cores as u32).saturating_sub(1).max(1)
}

/// The share of a record's CPU time its reading takes when the rate probe did not run:
/// VCF text with GT only, where parsing and encoding cost about the same (measured on
/// sim.vcf.gz with named threads: readers 48-55 % of all CPU).
pub const DEFAULT_READ_SHARE: f64 = 0.5;

/// Readers per contig chosen without `--readers`: past this, a contig's pieces get too
/// short to be worth a reader of their own.
pub const MAX_AUTO_READERS: u32 = 16;

/// Builds the plan. Readers and encoders share the cores: the encoders are one pool
/// serving every contig, and the readers take the cores their share of the work needs
/// (`cores × read share`), spread over contigs so that the longest contig — read
/// first, by `w` readers — is not the critical path.
pub fn plan(input: &PlanInput) -> Result<Plan, PlanError> {
    let mut notes = Vec::new();
    let order = dispatch_order(&input.contigs);
    // (No contigs at all means no index counted anything: the header declares none.)
    let all_counted =
        !input.contigs.is_empty() && input.contigs.iter().all(|c| c.tier == CostTier::IndexCount);
    let records = all_counted.then(|| input.contigs.iter().map(|c| c.cost).sum::<u64>());
    let biggest = all_counted.then(|| input.contigs.iter().map(|c| c.cost).max().unwrap_or(0));
    let with_data = if all_counted {
        input.contigs.iter().filter(|c| c.cost > 0).count()
    } else {
        input.contigs.len()
    }
    .max(1);

    let cores = input.cores.max(1);
    let read_share = input
        .read_share
        .unwrap_or(DEFAULT_READ_SHARE)
        .clamp(0.05, 0.95);
    // Reader threads in all: their share of the cores, rounded up (readers go first on
    // a shared core, so one too many costs the encoders little; one too few starves
    // them).
    let readers_total = ((cores as f64 * read_share - 1e-9).ceil() as u32).clamp(1, cores as u32);
    // The longest contig's share of the records: its readers must keep up with the rest.
    let longest = match (biggest, records) {
        (Some(b), Some(n)) if n > 0 => b as f64 / n as f64,
        _ => 1.0,
    };
    let (mut w, readers_from) = match input.readers {
        Some(n) => (n.max(1), ReaderSource::User),
        None => {
            let spread = readers_total.div_ceil(with_data as u32);
            let for_longest = (readers_total as f64 * longest).ceil() as u32;
            let w = spread.max(for_longest).clamp(1, MAX_AUTO_READERS);
            let from = match input.read_share {
                Some(_) => ReaderSource::Probe,
                None => ReaderSource::Default,
            };
            (w, from)
        }
    };
    let by_cores = (readers_total / w).max(1) as usize;
    let mut cc = by_cores
        .min(with_data)
        .min(input.max_concurrent_contigs.max(1));
    if (cc > 1 || w > 1) && !all_counted {
        // A contig's place on the variants axis is the sum of the counts before it,
        // and a piece's is the sum of the pieces' before it.
        notes.push(
            "no index record counts, so one contig at a time by one streaming reader \
             (index with `bcftools index`)"
                .into(),
        );
        cc = 1;
        if readers_from != ReaderSource::User {
            w = 1;
        }
    }
    // A batch in flight for every encoder (two at least: one encoding while the next
    // is admitted). More would only hold memory: a thread that finishes its batch
    // helps with the others' chunks while the writer admits the next.
    let mut window = input.threads.max(2) as u64;

    let mut chunks = requested_chunks(
        input.patch,
        input.max_amplification,
        input.samples,
        input.cell_bytes,
        &input.requested,
    );

    // Memory: in-flight rows are what the budget buys.
    let eff_rows = |vc: u64, cc: usize| -> u64 {
        let cap = if cc == 1 { records } else { biggest };
        cap.map_or(vc, |n| vc.min(n.max(1)))
    };
    // Rows piece readers hold: two pieces a reader (the one it reads and the one it
    // read, waiting to be joined), of `piece_rows` records or the contig's share;
    // concurrent contigs each have their readers. (Two contigs at once of a
    // 20,000-sample file, 16,000 records each, peaked at 349 MB beside a second
    // conversion where one row a reader had been charged: 293.)
    let reader_rows = |vc: u64, cc: usize, w: u32| -> u64 {
        if w == 1 && cc == 1 {
            return 0;
        }
        let target = piece_rows(vc, input.row_bytes, cc as u64 * w as u64, input.budget);
        let piece = biggest.map_or(target, |n| n.div_ceil(pieces_for(n, target, w)).max(1));
        2 * w as u64 * piece
    };
    // Concurrent contigs finish out of file order, so the chunk rows that straddle two
    // contigs wait in the stitcher for their other part: under one row per boundary.
    // (One contig with piece readers: a row waits only for the next contig's start.)
    let stitch_rows = |cc: usize, w: u32| match (cc, w) {
        (1, 1) => 0,
        (1, _) => 1,
        _ => (with_data - 1) as u64,
    };
    // Each contig read in pieces: the row its sequencer is cutting.
    let sequencer_count = |cc: usize, w: u32| -> u64 {
        if w == 1 && cc == 1 {
            return 0; // one streaming reader fills the rows itself
        }
        cc as u64
    };
    let sequencer_rows = |vc: u64, cc: usize, w: u32| sequencer_count(cc, w) * eff_rows(vc, cc);
    let format_row = input.format_row_bytes.min(input.row_bytes);
    let per_row = InFlight {
        other: input.row_bytes - format_row,
        format: format_row,
    };
    // One pool serves every contig: `window` rows admitted for encoding, whatever cc,
    // and the one the reader fills, all full at once whenever encoding is the slower
    // side — a loaded or shared machine, or a call set. (Charged as two alive before:
    // what quiet runs of GT-only files show, where reading is slower and the window
    // is rarely full. Beside a second conversion, a 20,000-sample file then held one
    // more 22 MB row than planned and went over a --max-mem its plan fitted.) A window
    // of one holds two, so a tight budget gives up the window first.
    // Rows held before encoding (piece readers, sequencers, the stitcher) are raw
    // columns, FORMAT fields included, so they all weigh κ: κ_f is the cost of laying
    // FORMAT fields out and compressing them, which only the encoding rows pay. (With
    // κ_f on them, a 2,000-sample call set read by two readers was over-predicted
    // by 60 %.)
    // The rows of the window and the one being read. One streaming reader fills its
    // row as one of the window's (it waits for one back before it fills more: see
    // `svar2_convert::pipeline::Window::alive`), so two rows at least; a row read
    // through the index is cut by a sequencer, one more. (Charged window + 1 before:
    // quiet runs of a 2,000-sample call set peaked 35 % under that, a 300,000-sample
    // file 55 %.)
    let alive_rows = |cc: usize, w: u32, window: u64| match cc == 1 && w == 1 && input.serial_stream
    {
        true => window.max(2),
        false => window.max(1) + 1,
    };
    let in_flight_of = |encoding_rows: u64, held_rows: u64| {
        let encoding = InFlight::rows(encoding_rows, per_row);
        InFlight {
            other: encoding.other + held_rows * per_row.total(),
            format: encoding.format,
        }
    };
    let held_records = |vc: u64, cc: usize, w: u32| {
        stitch_rows(cc, w) * eff_rows(vc, cc)
            + cc as u64 * reader_rows(vc, cc, w)
            + sequencer_rows(vc, cc, w)
    };
    let in_flight = |vc: u64, cc: usize, window: u64, w: u32| {
        in_flight_of(
            alive_rows(cc, w, window) * eff_rows(vc, cc),
            held_records(vc, cc, w),
        )
    };
    let sc = chunks.samples;
    // Each encoding thread holds one inner chunk of every per-sample array, and each
    // past the two the law was fitted with its own arena.
    let scratch_row = |threads: usize| threads.max(1) as u64 * sc * input.scratch_cell_bytes.max(1);
    let threads_extra = |threads: usize| threads.saturating_sub(2) as u64 * PER_EXTRA_THREAD_BYTES;
    let m = &input.model;
    // Each reader past the first: its own file handle, header, index and malloc arena;
    // each input file past the first: see PER_INPUT_BYTES.
    let handles_extra = |cc: usize, w: u32| {
        (cc as u64 * w as u64 - 1) * PER_READER_BYTES
            + input.inputs.saturating_sub(1) as u64
                * (PER_INPUT_BYTES + PER_INPUT_SAMPLE_BYTES * input.samples)
    };
    // Each reader parses one record at a time (see PARSE_COPIES), and so does every
    // encoding thread where one streaming reader's lines are parsed ahead (a 20,000-
    // sample record of 231 PL values a sample peaked 97-132 MiB over the prediction
    // at --threads 4).
    let parsing = |cc: usize, w: u32, threads: usize| {
        let parsers = match threads >= PARSE_AHEAD_THREADS {
            true => (cc as u64 * w as u64).max(threads as u64 + 1),
            false => cc as u64 * w as u64,
        };
        parsers * PARSE_COPIES * input.row_bytes
    };
    let pred = |vc: u64, cc: usize, window: u64, w: u32, threads: usize| {
        m.peak(
            input.samples,
            in_flight(vc, cc, window, w),
            vc * scratch_row(threads),
        ) + handles_extra(cc, w)
            + threads_extra(threads)
            + parsing(cc, w, threads)
    };
    // What the budget allows the law to predict (see HEADROOM).
    let allowed = (input.budget as f64 / HEADROOM) as u64;
    let least_w = if readers_from == ReaderSource::User {
        w
    } else {
        1
    };
    let minimum = (pred(1, 1, 1, least_w, 1) as f64 * HEADROOM).ceil() as u64;
    if minimum > input.budget {
        return Err(PlanError::BudgetTooSmall {
            budget: input.budget,
            minimum,
        });
    }
    // What the budget cannot hold goes first from the window (encoders wait), then
    // from the contigs at once, the readers per contig (sized by the cores, not by the
    // user) and the encoding threads, and last from the chunk rows — which are sized
    // for one thread, so that the store's chunking never depends on the threads.
    let mut threads = input.threads.max(1);
    let full = (window, cc, w, threads);
    let fits_rows = |vc: u64, cc: usize, window: u64, w: u32, threads: usize| {
        pred(vc, cc, window, w, threads) <= allowed
    };
    let vc = chunks.variants;
    let fits = |cc, window, w, threads| fits_rows(vc, cc, window, w, threads);
    while window > 1 && !fits(cc, window, w, threads) {
        window -= 1;
    }
    while cc > 1 && !fits(cc, window, w, threads) {
        cc -= 1;
    }
    while w > 1 && readers_from != ReaderSource::User && !fits(cc, window, w, threads) {
        w -= 1;
    }
    while threads > 1 && !fits(cc, window, w, threads) {
        threads -= 1;
    }
    if !fits(cc, window, w, threads) {
        let fits = m
            .max_rows(
                input.samples,
                allowed.saturating_sub(
                    handles_extra(cc, w) + threads_extra(threads) + parsing(cc, w, threads),
                ),
                // (Pieces counted as whole rows here: a bound, not the estimate.)
                in_flight_of(
                    alive_rows(cc, w, window),
                    cc as u64 * reader_rows(1, cc, w) + stitch_rows(cc, w) + sequencer_count(cc, w),
                ),
                scratch_row(threads),
            )
            .max(1);
        if input.requested.variants_chunk.is_some() {
            return Err(PlanError::ChunkTooLarge {
                budget: input.budget,
                variants_chunk: chunks.variants,
                fits,
            });
        }
        notes.push(format!(
            "variants chunk reduced from {} to {fits} records to fit the memory budget \
             (this changes the store's chunking)",
            chunks.variants
        ));
        chunks.variants = fits;
    }
    // Shorter chunk rows may leave room for threads and batches given up above.
    let vc = chunks.variants;
    while threads < full.3 && fits_rows(vc, cc, window, w, threads + 1) {
        threads += 1;
    }
    while window < full.0.min(threads.max(2) as u64) && fits_rows(vc, cc, window + 1, w, threads) {
        window += 1;
    }
    for (what, was, now) in [
        ("batches encoded at once", full.0, window),
        ("concurrent contigs", full.1 as u64, cc as u64),
        ("readers per contig", full.2 as u64, w as u64),
        ("encoding threads", full.3 as u64, threads as u64),
    ] {
        if now < was {
            notes.push(format!(
                "{what} reduced from {was} to {now} to fit the memory budget"
            ));
        }
    }

    let (vs, ss) = requested_shards(chunks, input.samples, input.cell_bytes, &input.requested);

    let in_flight_split = in_flight(chunks.variants, cc, window, w);
    let in_flight_bytes = in_flight_split.total();
    let least_in_flight_records =
        2 * eff_rows(chunks.variants, cc) + held_records(chunks.variants, cc, w);
    let in_flight_format_bytes = in_flight_split.format;
    let predicted_peak_rss = pred(chunks.variants, cc, window, w, threads);
    let amplification = input
        .patch
        .map(|p| amplification(p, chunks.variants, chunks.samples, input.samples));
    if let (Some(a), Some(p)) = (amplification, input.patch) {
        if a > input.max_amplification {
            notes.push(format!(
                "decode amplification {a:.2} for a {}x{} patch exceeds --max-amplification {} \
                 (chunks are kept at or above the minimum useful size)",
                p.variants, p.samples, input.max_amplification
            ));
        }
    }
    if by_cores > cc && cc == input.max_concurrent_contigs {
        notes.push(format!(
            "cores allow {by_cores} concurrent contigs; this build converts {cc} at a time"
        ));
    }
    // One contig at a time gains nothing from longest-first: keep the file's order,
    // which streams without stitching.
    let order = if cc == 1 {
        (0..input.contigs.len()).collect()
    } else {
        order
    };
    let shard_columns = input.samples.max(1).div_ceil(ss);
    let shards = records
        .map(|n| n.div_ceil(vs) * (input.variant_arrays + input.call_arrays * shard_columns));
    // Metadata per array, the root, and the six small arrays' shards.
    let files = shards.map(|s| s + input.variant_arrays + input.call_arrays + 1 + 12);
    Ok(Plan {
        order,
        cc,
        w,
        readers_from,
        read_share,
        window,
        chunks,
        variants_shard: vs,
        samples_shard: ss,
        amplification,
        records,
        in_flight_bytes,
        in_flight_format_bytes,
        least_in_flight_records,
        scratch_bytes: chunks.variants * scratch_row(threads),
        piece_rows: piece_rows(
            chunks.variants,
            input.row_bytes,
            cc as u64 * w as u64,
            input.budget,
        ),
        threads,
        predicted_peak_rss,
        budget: input.budget,
        shards,
        files,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MEASURED;

    fn input(budget: u64, samples: u64) -> PlanInput {
        PlanInput {
            cores: 8,
            threads: 2,
            budget,
            contigs: vec![
                ContigCost {
                    name: "1".into(),
                    tier: CostTier::IndexCount,
                    cost: 100_000,
                },
                ContigCost {
                    name: "2".into(),
                    tier: CostTier::IndexCount,
                    cost: 50_000,
                },
            ],
            samples,
            row_bytes: samples * 9 + 200,
            format_row_bytes: 0,
            cell_bytes: 2,
            scratch_cell_bytes: 5,
            call_arrays: 3,
            variant_arrays: 8,
            patch: None,
            max_amplification: 1.5,
            requested: Requested::default(),
            readers: None,
            read_share: None,
            max_concurrent_contigs: 1,
            inputs: 1,
            serial_stream: true,
            model: MEASURED,
        }
    }

    #[test]
    fn roomy_budget_keeps_defaults() {
        let p = plan(&input(8 << 30, 1000)).unwrap();
        assert_eq!(p.chunks, crate::geometry::DEFAULT_CHUNKS);
        assert_eq!(p.cc, 1);
        assert_eq!(p.readers_from, ReaderSource::Default);
        assert!(p.predicted_peak_rss <= 8 << 30);
        assert_eq!(p.records, Some(150_000));
        // 8 cores, half of the work reading: 4 reader threads, and the longest contig
        // (2/3 of the records) needs 3 of them so as not to be the critical path.
        assert_eq!(p.w, 3);
        // Every encoding thread has a batch.
        assert_eq!(p.window, 2);
    }

    #[test]
    fn tight_budget_shrinks_chunk_rows() {
        let p = plan(&input(256 << 20, 100_000)).unwrap();
        assert!(p.chunks.variants < 1000);
        assert!(p.predicted_peak_rss as f64 * HEADROOM <= (256u64 << 20) as f64);
        assert!(p.notes.iter().any(|n| n.contains("reduced")));
    }

    #[test]
    fn the_chunking_does_not_depend_on_the_threads() {
        // A budget that holds few threads' scratch: threads go, the chunk rows stay.
        let mut i = input(100 << 20, 1000);
        let rows: Vec<u64> = [1, 2, 8, 10, 64]
            .iter()
            .map(|&t| {
                i.threads = t;
                i.cores = t;
                let p = plan(&i).unwrap();
                assert!(p.predicted_peak_rss as f64 * HEADROOM <= (100u64 << 20) as f64);
                assert!(p.threads <= t);
                p.chunks.variants
            })
            .collect();
        assert!(rows.iter().all(|&r| r == rows[0]), "{rows:?}");
        i.threads = 64;
        let p = plan(&i).unwrap();
        assert!(p.threads < 64, "{p:?}");
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("encoding threads reduced")));
    }

    #[test]
    fn impossible_budget_names_the_minimum() {
        let e = plan(&input(1 << 20, 1000)).unwrap_err();
        let PlanError::BudgetTooSmall { minimum, .. } = e.clone() else {
            panic!("{e:?}")
        };
        assert!(minimum > 1 << 20);
        assert!(e.to_string().contains("pass --max-mem"));
        // The minimum it names really plans.
        assert!(plan(&input(minimum, 1000)).is_ok());
    }

    #[test]
    fn explicit_chunk_that_cannot_fit_is_an_error() {
        let mut i = input(256 << 20, 100_000);
        i.requested.variants_chunk = Some(1000);
        assert!(matches!(plan(&i), Err(PlanError::ChunkTooLarge { .. })));
    }

    #[test]
    fn readers_take_their_share_of_the_cores() {
        let mut i = input(64 << 30, 1000);
        i.max_concurrent_contigs = 64;
        i.cores = 8;
        i.readers = Some(3);
        // Half the work reading: 4 reader threads, so one contig of 3 at a time.
        assert_eq!(plan(&i).unwrap().cc, 1);
        // Three quarters reading (the probe says so): 6 readers, two contigs of 3.
        i.read_share = Some(0.75);
        assert_eq!(plan(&i).unwrap().cc, 2);
        i.readers = Some(1);
        assert_eq!(plan(&i).unwrap().cc, 2); // only two contigs have data
                                             // Without --readers: the longest contig gets the readers its share needs.
        i.readers = None;
        i.cores = 64;
        i.read_share = None;
        let p = plan(&i).unwrap();
        assert_eq!((p.w, p.cc), (MAX_AUTO_READERS, 2));
        assert_eq!(p.readers_from, ReaderSource::Default);
    }

    #[test]
    fn a_tight_budget_takes_the_window_and_readers_before_the_chunk_rows() {
        // 100,000 samples: every row in flight is big, and each reader holds rows.
        let mut i = input(3 << 30, 100_000);
        i.threads = 8;
        let roomy = plan(&input(64 << 30, 100_000)).unwrap();
        let p = plan(&i).unwrap();
        assert!(p.predicted_peak_rss as f64 * HEADROOM <= (3u64 << 30) as f64);
        assert!(p.window < 8 && p.w < roomy.w, "{p:?}");
        assert_eq!(p.chunks.variants, roomy.chunks.variants);
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("batches encoded at once reduced")));
    }

    #[test]
    fn a_reader_costs_its_rows_and_handle_not_the_samples_again() {
        // 300,000 samples: charging each reader the law's per-sample bytes again
        // would add ~290 MB a reader (measured: nothing to see).
        let mut i = input(64 << 30, 300_000);
        i.cores = 16;
        i.readers = Some(2);
        let two = plan(&i).unwrap();
        i.readers = Some(3);
        let three = plan(&i).unwrap();
        assert_eq!((two.w, three.w), (2, 3));
        let rows = three.in_flight_bytes - two.in_flight_bytes;
        let step = three.predicted_peak_rss - two.predicted_peak_rss;
        let expected =
            (MEASURED.kappa * rows as f64) as u64 + PER_READER_BYTES + PARSE_COPIES * i.row_bytes;
        assert!(step.abs_diff(expected) <= 1, "{step} vs {expected}");
        // Rows held before encoding weigh κ, FORMAT fields included.
        i.format_row_bytes = i.row_bytes;
        let f2 = plan(&i).unwrap();
        i.readers = Some(1);
        i.serial_stream = false; // the same rows encoding as two readers'
        let f1 = plan(&i).unwrap();
        assert_eq!(f2.in_flight_format_bytes, f1.in_flight_format_bytes);
    }

    #[test]
    fn one_streaming_reader_fills_a_row_of_the_window() {
        let mut i = input(64 << 30, 1000);
        i.readers = Some(1);
        let stream = plan(&i).unwrap();
        assert_eq!((stream.cc, stream.w, stream.window), (1, 1, 2));
        assert_eq!(stream.in_flight_bytes, 2000 * i.row_bytes);
        // A partition reads pieces: the row its sequencer cuts is one more.
        i.serial_stream = false;
        let pieces = plan(&i).unwrap();
        assert_eq!(pieces.in_flight_bytes, 3000 * i.row_bytes);
        assert!(pieces.predicted_peak_rss > stream.predicted_peak_rss);
        // Many encoders: as many rows as batches encoding at once.
        i.serial_stream = true;
        i.threads = 8;
        let wide = plan(&i).unwrap();
        assert_eq!(wide.in_flight_bytes, wide.window * 1000 * i.row_bytes);
    }

    #[test]
    fn concurrent_contigs_need_counts_and_pay_for_stitching() {
        let mut i = input(64 << 30, 1000);
        i.max_concurrent_contigs = 64;
        i.readers = Some(1);
        let p = plan(&i).unwrap();
        assert_eq!((p.cc, p.order.clone()), (2, vec![0, 1]));
        // Straddling rows wait for their other part: more in flight than cc rows.
        // Two batches encoding and one filling (see `in_flight`), one straddling, two
        // per reader (two contigs, one reader each: filling and queued) and one per
        // sequencer.
        assert_eq!(p.in_flight_bytes, 10000 * i.row_bytes);
        // With one batch encoding (the window narrowed): one row less.
        assert_eq!(p.least_in_flight_records, 9000);
        i.contigs[1].tier = CostTier::ContigLength;
        let p = plan(&i).unwrap();
        assert_eq!(p.cc, 1);
        assert!(p.notes.iter().any(|n| n.contains("one contig at a time")));
    }

    #[test]
    fn one_contig_at_a_time_keeps_file_order() {
        let mut i = input(64 << 30, 1000);
        i.contigs.swap(0, 1); // the longer contig second in the file
        let p = plan(&i).unwrap();
        assert_eq!((p.cc, p.order), (1, vec![0, 1]));
        i.max_concurrent_contigs = 64;
        i.readers = Some(1);
        assert_eq!(plan(&i).unwrap().order, vec![1, 0]);
    }
}
