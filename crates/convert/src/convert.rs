//! The conversion pipeline: readers fill inner-chunk rows of records (one streaming
//! reader, or readers through the index, see `pieces`), the rayon pool lays them out
//! and encodes every inner chunk straight into its shard's partial file, and each
//! shard row is finished (index appended, renamed into place) when its last record
//! arrives, in whatever order rows complete. Memory holds the raw rows in flight, not
//! shards: encoded chunks are on disk as soon as they exist.

use crate::arrays::{ArraySet, Geometry};
use crate::error::{Error, Result};
use crate::pipeline::{Source, Stages, StreamInputs};
use crate::planning::{make_plan_inputs, plan_reader, PlanReport, PlanRequest};
use crate::row_limit::RowLimit;
use crate::writer::Writer;
use std::path::Path;
use std::time::Instant;
use svar2_planner::geometry::whole_chunks;
use svar2_planner::PIECES_PER_READER;
use svar2_store::dir::{disk_usage, StoreDir};
use svar2_vcf::inputs::{is_stdin, Input};
use svar2_vcf::ragged::Batch;
use svar2_vcf::schema::Schema;
use svar2_vcf::source::VcfReader;

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Budget, chunking and threads, as handed to the planner.
    pub request: PlanRequest,
    /// Replace an existing output.
    pub force: bool,
    /// Draw a progress bar (only on a terminal).
    pub progress: bool,
    /// Which contig goes first (a debugging aid: the store must not depend on it).
    pub contig_order: ContigOrder,
}

/// The order contigs are handed to readers when they are read through the index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ContigOrder {
    /// The plan's: longest first when contigs run concurrently, else file order.
    #[default]
    Planned,
    /// As they appear in the file.
    File,
    /// The file's order backwards (the worst case for stitching).
    Reverse,
}

/// What a conversion did, for the closing summary line.
#[derive(Debug, Clone)]
pub struct Summary {
    pub records: u64,
    pub seconds: f64,
    pub store_bytes: u64,
    pub files: u64,
    /// Shards re-encoded at the end because a later record widened their layout.
    pub rewritten_shards: u64,
}

/// Makes the user's chunk sizes consistent: shards are whole multiples of inner chunks
/// and no axis is chunked wider than the data needs.
pub fn normalise(geometry: Geometry, n_samples: u64) -> Geometry {
    let vc = geometry.variants_chunk.max(1);
    let vs = whole_chunks(geometry.variants_shard, vc);
    let samples_chunk = geometry.samples_chunk.max(1).min(n_samples.max(1));
    let ss = whole_chunks(geometry.samples_shard, samples_chunk)
        .min(whole_chunks(n_samples, samples_chunk));
    Geometry {
        variants_chunk: vc,
        samples_chunk,
        variants_shard: vs,
        samples_shard: ss,
        zstd_level: geometry.zstd_level,
    }
}

/// A bar with ETA when the index gave the record count, a spinner otherwise; hidden
/// unless stderr is a terminal.
pub(crate) fn progress_bar(enabled: bool, total: Option<u64>) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !enabled || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let (pb, template) = match total {
        Some(n) => (
            indicatif::ProgressBar::new(n),
            "{elapsed} [{bar:40}] {human_pos}/{human_len} records ({per_sec}, ETA {eta})",
        ),
        None => (
            indicatif::ProgressBar::new_spinner(),
            "{spinner} {elapsed} {human_pos} records ({per_sec})",
        ),
    };
    pb.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("template")
            .progress_chars("=> "),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb
}

/// Converts `input` (VCF, VCF.gz or BCF) into a VCF Zarr store at `output`.
pub fn convert(input: &Path, output: &Path, options: &Options) -> Result<Summary> {
    convert_inputs(&[input.to_path_buf()], output, options)
}

/// The contig of an input's first record: VCF text's line read ahead, else the
/// first contig with records in its index, else the first record of a fresh handle.
fn first_contig(r: &VcfReader) -> Option<String> {
    if let Some(c) = r.first_text_contig() {
        return Some(c);
    }
    if let Ok(ic) = svar2_vcf::index::contig_counts(&r.path, &r.schema.contigs) {
        let named = r.schema.contigs.iter().map(|c| &c.name).zip(&ic.counts);
        return named.filter(|(_, &n)| n > 0).map(|(c, _)| c.clone()).next();
    }
    let mut fresh = VcfReader::open(&r.path, 1).ok()?;
    let set = ArraySet::new(&fresh.schema);
    let mut ex = fresh.extractor(&set.record);
    let mut b = Batch::new(&set.record.specs, fresh.schema.samples.len(), 0);
    fresh.read_into(&mut ex, &mut b, 0).ok()?.then_some(())?;
    let rid = b.loci.first()?.0;
    Some(fresh.schema.contig_label(rid as i64).to_string())
}

/// A call set's inputs in reading order, each with its own header's schema, and the
/// first one open. The others are closed until a stream reaches them (or a piece
/// reader opens them): an open input holds its header and buffers, ~450 bytes a
/// sample, so 24 per-chromosome files of a 300,000-sample cohort held open took ~3 GB.
pub(crate) struct Opened {
    pub(crate) first: VcfReader,
    /// Every input, `first`'s included. A later input's schema keeps no sample
    /// names: they were checked equal to the first's.
    pub(crate) inputs: Vec<Input>,
}

impl Opened {
    fn one(first: VcfReader) -> Opened {
        let inputs = vec![Input {
            path: first.path.clone(),
            schema: first.schema.clone(),
        }];
        Opened { first, inputs }
    }

    /// Each input's path and own schema, in reading order.
    pub(crate) fn own(&self) -> Vec<(&Path, &Schema)> {
        self.inputs
            .iter()
            .map(|i| (i.path.as_path(), &i.schema))
            .collect()
    }
}

/// Opens a call set's inputs — headers read and checked, merged when there are
/// several — and plans its conversion.
pub(crate) fn open_call_set(
    inputs: &[std::path::PathBuf],
    request: &PlanRequest,
) -> Result<(PlanReport, Opened, Schema)> {
    let first = inputs
        .first()
        .ok_or_else(|| Error::Usage("no input files".into()))?;
    // A file cut short fails here, before any work (standard input at its end).
    let cut = svar2_vcf::truncation::check_complete(inputs, request.allow_truncated)?;
    crate::planning::refuse_cut_merge(&cut, request)?;
    let opt_in = |r: VcfReader| {
        let is_cut = cut.contains(&r.path);
        opt_in_cut(r, request, is_cut)
    };
    crate::planning::set_read_limits(request);
    if let Some(m) = request.merge {
        if !request.subset.is_empty() {
            return Err(Error::Usage(
                "--merge with -s/-S/-r/-R/-t/-T/-i/-e is not offered yet: merge into a store, \
                 then subset it (svar2 view), or subset each input first"
                    .into(),
            ));
        }
        let (report, reader) = crate::planning::plan_merge(inputs, m, request, true)?;
        let reader = opt_in(reader);
        let schema = reader.schema.clone();
        return Ok((report, Opened::one(reader), schema));
    }
    if inputs.len() == 1 && !is_stdin(first) {
        // Planned from its header, closed while the plan reads the file again, then
        // opened for the conversion. Opened without the inflate helper: a read
        // through the index (pieces) never uses this reader, and a stream adds the
        // helper when it starts.
        let report = plan_reader(crate::planning::open_input(first, 1, request)?, request)?;
        let reader = opt_in(crate::planning::open_input(first, 1, request)?);
        let schema = reader.schema.clone();
        return Ok((report, Opened::one(reader), schema));
    }
    let threads = request.budget.threads.unwrap_or(1);
    let open = |p: &Path| crate::planning::open_input(p, threads, request).map(opt_in);
    if inputs.len() == 1 {
        // Standard input, which is read once: kept open.
        let reader = open(first)?;
        let opened = Opened::one(reader);
        let merged = opened.inputs[0].schema.clone();
        let report = make_plan_inputs(&opened.inputs, &merged, request)?;
        return Ok((report, opened, merged));
    }
    // Several files: each opened for its header and first contig, then closed.
    let mut ins = Vec::with_capacity(inputs.len());
    let mut firsts = Vec::with_capacity(inputs.len());
    for p in inputs {
        let r = open(p)?;
        firsts.push(first_contig(&r));
        ins.push(Input {
            path: r.path.clone(),
            schema: r.schema.clone(),
        });
    }
    let merged = svar2_vcf::inputs::merge(&ins)?;
    let report = make_plan_inputs(&ins, &merged, request)?;
    let order = svar2_vcf::inputs::read_order(&ins, &firsts, &merged);
    let mut slots: Vec<Option<Input>> = ins.into_iter().map(Some).collect();
    let mut ins: Vec<Input> = order
        .iter()
        .map(|&i| slots[i].take().expect("each input once"))
        .collect();
    for later in &mut ins[1..] {
        later.schema.samples = std::sync::Arc::from([]);
    }
    let first = open(&ins[0].path)?;
    Ok((report, Opened { first, inputs: ins }, merged))
}

/// Reads `r` to its end though it lacks BGZF's end-of-file block (`is_cut`), where
/// the user allowed that (`--allow-truncated`).
fn opt_in_cut(mut r: VcfReader, request: &PlanRequest, is_cut: bool) -> VcfReader {
    if request.allow_truncated {
        r.allow_truncated(is_cut);
    }
    r
}

/// Opens a later input of a stream as [`open_call_set`] opened it first.
fn reopener(request: &PlanRequest) -> svar2_vcf::source::Opener {
    let request = request.clone();
    let threads = request.budget.threads.unwrap_or(1);
    Box::new(move |p: &Path| {
        let r = crate::planning::open_input(p, threads, &request).map_err(|e| match e {
            Error::Vcf(e) => e,
            other => svar2_vcf::Error::Open {
                path: p.into(),
                msg: other.to_string(),
            },
        })?;
        let is_cut = svar2_vcf::truncation::lacks_eof_block(p);
        Ok(opt_in_cut(r, &request, is_cut))
    })
}

/// How the records are read: through the index in pieces (contigs at once, sub-contig
/// readers, re-joined by the stitcher), or by one streaming reader in file order.
enum Reading {
    Pieces {
        pieces: Vec<svar2_vcf::pieces::Piece>,
        /// The order contigs go to readers (`None`: file order).
        order: Option<Vec<usize>>,
    },
    /// `single`: one file with its own schema (else inputs one after another, or
    /// standard input, read into the merged schema).
    Stream { single: bool },
}

/// Refuses an output that holds an input (`convert --force out.zarr/in.vcf out.zarr`
/// would delete the input with the store it replaces).
pub(crate) fn check_not_in_output(inputs: &[std::path::PathBuf], output: &Path) -> Result<()> {
    for input in inputs.iter().filter(|p| !is_stdin(p)) {
        svar2_store::replace::refuse_overlap(input, output, "input file")?;
    }
    Ok(())
}

/// Whether one input file (not standard input) is converted.
fn is_single(inputs: &[std::path::PathBuf]) -> bool {
    inputs.len() == 1 && !is_stdin(&inputs[0])
}

/// Chooses the way to read: pieces through the index when the plan asks for more than
/// one stream and every input has a usable index; else one stream (an error when the
/// user asked for several readers, a warning when only the plan did). `cut`: an input
/// was cut short and the user chose to convert what it holds.
fn plan_reading(
    inputs: &[std::path::PathBuf],
    opened: &Opened,
    schema: &Schema,
    report: &PlanReport,
    options: &Options,
    cut: bool,
) -> Result<Reading> {
    let input = inputs[0].as_path();
    let (cc, readers) = (report.plan.cc, report.plan.w as usize);
    let counts: Vec<u64> = report.contigs.iter().map(|c| c.cost).collect();
    let parallel = cc > 1 || readers > 1;
    let shape = (PIECES_PER_READER as usize * readers, report.plan.piece_rows);
    // An input cut short (converted as far as it goes, --allow-truncated) is read by
    // one stream: its index describes the whole file.
    if opened.first.is_merge() {
        if options.request.readers.is_some_and(|r| r > 1) {
            tracing::warn!("--merge: the inputs are read side by side by one streaming reader");
        }
        return Ok(Reading::Stream { single: true });
    }
    if opened.first.is_subset() {
        if let Some(r) = options.request.readers.filter(|&r| r > 1) {
            tracing::warn!("--readers {r}: a subset is read by one streaming reader");
        } else if parallel {
            tracing::info!("subsetting: read by one streaming reader (encoding stays parallel)");
        }
        return Ok(Reading::Stream {
            single: is_single(inputs),
        });
    }
    if cut {
        if parallel {
            tracing::info!(
                "{}: cut short, so read by one streaming reader (its index describes the \
                 whole file)",
                input.display()
            );
        }
        return Ok(Reading::Stream {
            single: is_single(inputs),
        });
    }
    let pieces = (parallel && report.index.is_some())
        .then(|| {
            if is_single(inputs) {
                svar2_vcf::pieces::plan_pieces(input, schema, &counts, shape)
            } else {
                svar2_vcf::pieces::plan_pieces_inputs(&opened.own(), schema, shape)
            }
        })
        .flatten();
    let Some(pieces) = pieces else {
        if let Some(asked) = options.request.readers.filter(|&r| r > 1) {
            if svar2_vcf::inputs::is_stdin(input) {
                return Err(Error::Usage(format!(
                    "--readers {asked} reads a file through its index, and standard input \
                     has none: give the indexed file's path, or drop --readers"
                )));
            }
            // A file not compressed at all is indexed as its bgzipped copy.
            let mut magic = [0u8; 2];
            let gzip = std::fs::File::open(input)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
                .is_ok_and(|_| magic == [0x1f, 0x8b]);
            if !gzip {
                return Err(Error::Usage(format!(
                    "{0}: --readers {asked} reads the file through its index, and a file not \
                     compressed has none: `bgzip {0} && bcftools index {0}.gz`, then convert \
                     {0}.gz, or drop --readers",
                    input.display()
                )));
            }
            return Err(Error::Usage(format!(
                "{0}: --readers {asked} reads the file through its index, and it has none \
                 (bgzip it if needed, then `bcftools index {0}`), or drop --readers",
                input.display()
            )));
        }
        if parallel {
            tracing::warn!(
                "{}: no usable index, so one streaming reader (index it with `bcftools index`)",
                input.display()
            );
        }
        return Ok(Reading::Stream {
            single: is_single(inputs),
        });
    };
    let order = match options.contig_order {
        ContigOrder::Planned => (cc > 1).then(|| report.plan.order.clone()),
        ContigOrder::File => None,
        ContigOrder::Reverse => {
            let mut rids: Vec<usize> = pieces.iter().map(|p| p.rid as usize).collect();
            rids.dedup();
            rids.reverse();
            Some(rids)
        }
    };
    Ok(Reading::Pieces { pieces, order })
}

/// Reads every record (as `reading` says) into the writer and finishes the store.
#[allow(clippy::too_many_arguments)]
fn run_pipeline(
    input: &Path,
    reading: Reading,
    opened: Opened,
    schema: &Schema,
    set: &ArraySet,
    report: &PlanReport,
    options: &Options,
    writer: &mut Writer,
) -> Result<()> {
    let variants_chunk = writer.geometry().variants_chunk as usize;
    let (cc, readers) = (report.plan.cc, report.plan.w as usize);
    let counts: Vec<u64> = report.contigs.iter().map(|c| c.cost).collect();
    let Opened { first, inputs } = opened;
    let paths: Vec<std::path::PathBuf> = inputs.into_iter().map(|i| i.path).collect();
    let (source, stitcher) = match &reading {
        Reading::Pieces { pieces, order } => {
            let runs = crate::schedule::contig_runs(pieces, &counts, order.as_deref());
            tracing::info!(
                "reading through the index: {cc} contig(s) at once, {readers} reader(s) each, \
                 {} pieces, {:?} order",
                pieces.len(),
                options.contig_order
            );
            drop(first); // piece readers open their own
            let total = counts.iter().sum();
            let stitcher = crate::schedule::Stitcher::new(
                &set.record,
                schema.samples.len(),
                variants_chunk,
                0..total,
                total,
            );
            let source = Source::Pieces {
                paths: &paths,
                pieces,
                runs,
                cc,
                w: readers,
                piece_rows: report.plan.piece_rows,
            };
            (source, Some(stitcher))
        }
        &Reading::Stream { single } => {
            let inputs = match single {
                true => StreamInputs::Single(first.for_threads(report.threads)?),
                false => {
                    let later = paths[1..].to_vec();
                    StreamInputs::Many(first, later, reopener(&options.request))
                }
            };
            (Source::Stream(Box::new(inputs)), None)
        }
    };
    let stages = Stages {
        schema,
        set,
        threads: report.threads,
        window: crate::pipeline::Window::of(report),
        progress: progress_bar(options.progress, report.plan.records),
    };
    crate::pipeline::run(
        stages,
        source,
        writer,
        stitcher,
        |b| {
            Err(Error::Usage(format!(
                "{}: records {}.. were left out of their inner chunk; the input changed while \
                 it was read",
                input.display(),
                b.first
            )))
        },
        |writer| writer.finish(),
    )
}

/// Converts the inputs of one call set — one file, several (per-chromosome files: the
/// same samples, each contig in one file), or `-` (standard input, alone) — into a
/// VCF Zarr store at `output`. Variants are in contig order (the headers'), then
/// position, whatever the order of `inputs`.
pub fn convert_inputs(
    inputs: &[std::path::PathBuf],
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    convert_call_set(inputs, output, options, None)
}

/// Converts the inputs into the sample columns of a store after `later`'s (see
/// [`crate::later`]): the store `output` becomes is the existing one with the inputs'
/// samples after its first `later.samples_before`.
pub fn convert_later_columns(
    inputs: &[std::path::PathBuf],
    output: &Path,
    options: &Options,
    later: std::sync::Arc<crate::later::LaterColumns>,
) -> Result<Summary> {
    convert_call_set(inputs, output, options, Some(later))
}

fn convert_call_set(
    inputs: &[std::path::PathBuf],
    output: &Path,
    options: &Options,
    later: Option<std::sync::Arc<crate::later::LaterColumns>>,
) -> Result<Summary> {
    let t0 = Instant::now();
    crate::planning::check_inputs(inputs)?;
    // Nothing is written before the output is known to be writable (and to hold no
    // input: replacing it would delete what is being read), every input's header is
    // read and checked, and the plan fits.
    check_not_in_output(inputs, output)?;
    svar2_store::dir::check_output(output, options.force)?;
    let input = inputs[0].as_path();
    let (report, opened, mut schema) = open_call_set(inputs, &options.request)?;
    svar2_vcf::limits::set_budget(report.budget);
    tracing::info!("plan\n{}", report.render().trim_end());
    schema.add_undeclared_contigs(&report.undeclared_contigs);
    let set = ArraySet::new(&schema);
    let geometry = match &later {
        Some(l) => l.geometry,
        None => normalise(report.geometry(), schema.samples.len() as u64),
    };
    // Inputs cut short that the user chose to convert (others were refused above).
    let cut = options.request.allow_truncated
        && inputs
            .iter()
            .any(|p| svar2_vcf::truncation::lacks_eof_block(p));
    let reading = plan_reading(inputs, &opened, &schema, &report, options, cut)?;
    let store = StoreDir::create(output, options.force)?;
    tracing::info!(
        "converting {}: {} samples, {} contigs, {} arrays; {geometry}",
        input.display(),
        schema.samples.len(),
        schema.contigs.len(),
        set.arrays.len(),
    );
    let mut writer = Writer::new(
        input,
        RowLimit::of(&report),
        schema.clone(),
        set.clone(),
        geometry,
        store,
    );
    if let Some(l) = later {
        writer.write_later_columns(l);
    }
    writer.name_inputs(report.contig_inputs.clone());
    writer.record_request(&options.request.layout.requested);
    run_pipeline(
        input,
        reading,
        opened,
        &schema,
        &set,
        &report,
        options,
        &mut writer,
    )?;
    // A subset keeps fewer records than the index lists.
    let listed = report
        .index
        .and(report.plan.records)
        .filter(|_| options.request.subset.is_empty() && options.request.merge.is_none());
    // An input cut short holds fewer than its index lists (warned at the check).
    if let Some(listed) = listed.filter(|&n| n != writer.records() && !cut) {
        // (Index-driven reading checks each contig and fails; one stream reads it all.)
        tracing::warn!(
            "{}: the index lists {listed} records but {} were read: it is stale, \
             re-index with `bcftools index -f`",
            input.display(),
            writer.records()
        );
    }
    let (records, rewritten_shards) = (writer.records(), writer.rewritten());
    // (A bucket's or zip's staging copy is removed with the writer: timed too.)
    drop(writer);
    let (store_bytes, files) = disk_usage(output);
    Ok(Summary {
        records,
        seconds: t0.elapsed().as_secs_f64(),
        store_bytes,
        files,
        rewritten_shards,
    })
}
