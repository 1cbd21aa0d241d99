//! The conversion pipeline: readers fill inner-chunk rows of records (one streaming
//! reader, or readers through the index, see `pieces`), the rayon pool lays them out
//! and encodes every inner chunk straight into its shard's partial file, and each
//! shard row is finished (index appended, renamed into place) when its last record
//! arrives, in whatever order rows complete. Memory holds the raw rows in flight, not
//! shards: encoded chunks are on disk as soon as they exist.

use crate::arrays::{ArraySet, Geometry};
use crate::error::{Error, Result};
use crate::planning::{make_plan, make_plan_inputs, PlanReport, PlanRequest};
use crate::writer::{Limits, Writer};
use std::path::Path;
use std::time::Instant;
use svar2_planner::geometry::whole_chunks;
use svar2_planner::PIECES_PER_READER;
use svar2_store::dir::{disk_usage, StoreDir};
use svar2_vcf::column::Batch;
use svar2_vcf::inputs::{is_stdin, Input};
use svar2_vcf::schema::Schema;
use svar2_vcf::source::{Stream, VcfReader};

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
pub fn normalise(g: Geometry, n_samples: u64) -> Geometry {
    let vc = g.variants_chunk.max(1);
    let vs = whole_chunks(g.variants_shard, vc);
    let sc = g.samples_chunk.max(1).min(n_samples.max(1));
    let ss = whole_chunks(g.samples_shard, sc).min(whole_chunks(n_samples, sc));
    Geometry {
        variants_chunk: vc,
        samples_chunk: sc,
        variants_shard: vs,
        samples_shard: ss,
        zstd_level: g.zstd_level,
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
pub fn convert(input: &Path, output: &Path, opts: &Options) -> Result<Summary> {
    convert_inputs(&[input.to_path_buf()], output, opts)
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

/// Opens a call set's inputs — headers read and checked, merged when there are
/// several — and plans its conversion. The readers come back in reading order.
pub(crate) fn open_call_set(
    inputs: &[std::path::PathBuf],
    req: &PlanRequest,
) -> Result<(PlanReport, Vec<VcfReader>, Schema)> {
    let first = inputs
        .first()
        .ok_or_else(|| Error::Usage("no input files".into()))?;
    if inputs.len() == 1 && !is_stdin(first) {
        let report = make_plan(first, req)?;
        let reader = VcfReader::open(first, report.threads)?;
        let schema = reader.schema.clone();
        return Ok((report, vec![reader], schema));
    }
    let threads = req.threads.unwrap_or(1);
    let opened = inputs
        .iter()
        .map(|p| VcfReader::open(p, threads))
        .collect::<svar2_vcf::Result<Vec<_>>>()?;
    let ins: Vec<Input> = opened
        .iter()
        .map(|r| Input {
            path: r.path.clone(),
            schema: r.schema.clone(),
        })
        .collect();
    let merged = match ins.len() {
        1 => ins[0].schema.clone(),
        _ => svar2_vcf::inputs::merge(&ins)?,
    };
    let report = make_plan_inputs(&ins, &merged, req)?;
    let firsts: Vec<Option<String>> = opened.iter().map(first_contig).collect();
    let order = svar2_vcf::inputs::read_order(&ins, &firsts, &merged);
    let mut slots: Vec<Option<VcfReader>> = opened.into_iter().map(Some).collect();
    let files = order
        .iter()
        .map(|&i| slots[i].take().expect("each input once"))
        .collect();
    Ok((report, files, merged))
}

/// Feeds the readers' batches through the stitcher (when reading in pieces) to the
/// writer, and hands a chunk the stitcher completes only in part — one this
/// partition shares with another — to `shared`. Ends with the writer holding every
/// record, or the first error.
pub(crate) fn drain(
    rx: crossbeam_channel::Receiver<svar2_vcf::Result<Batch>>,
    mut stitcher: Option<&mut svar2_vcf::pieces::Stitcher>,
    w: &mut Writer,
    recycle: &crossbeam_channel::Sender<Batch>,
    pb: &indicatif::ProgressBar,
    mut shared: impl FnMut(Batch) -> Result<()>,
) -> Result<()> {
    for batch in rx.iter() {
        let batch = batch?;
        let n = batch.len() as u64;
        pb.inc(n);
        let batch = match stitcher.as_deref_mut() {
            None => batch,
            Some(s) => match s.push(batch) {
                Some(whole) if s.is_shared(&whole) => {
                    shared(whole)?;
                    continue;
                }
                Some(whole) => whole,
                None => continue,
            },
        };
        let batch = w.add_batch(batch)?;
        let _ = recycle.try_send(batch);
    }
    match stitcher {
        Some(s) if s.pending() > 0 => Err(Error::Usage(format!(
            "{} inner chunks were left incomplete; the input changed while it was read",
            s.pending()
        ))),
        _ => Ok(()),
    }
}

/// Converts the inputs of one call set — one file, several (per-chromosome files: the
/// same samples, each contig in one file), or `-` (standard input, alone) — into a
/// VCF Zarr store at `output`. Variants are in contig order (the headers'), then
/// position, whatever the order of `inputs`.
pub fn convert_inputs(
    inputs: &[std::path::PathBuf],
    output: &Path,
    opts: &Options,
) -> Result<Summary> {
    let t0 = Instant::now();
    let Some(first) = inputs.first() else {
        return Err(Error::Usage("no input files".into()));
    };
    if inputs.len() > 1 && inputs.iter().any(|p| is_stdin(p)) {
        return Err(Error::Usage(
            "`-` (standard input) is read alone, not with other inputs".into(),
        ));
    }
    // Nothing is written before the output is known to be writable, every input's
    // header is read and checked, and the plan fits.
    svar2_store::dir::check_output(output, opts.force)?;
    let input = first.as_path();
    let single = inputs.len() == 1 && !is_stdin(input);
    let (report, mut files, mut schema) = open_call_set(inputs, &opts.request)?;
    let threads = report.threads;
    tracing::info!(
        cc = report.plan.cc,
        w = report.plan.w,
        predicted_peak_rss = report.plan.predicted_peak_rss,
        budget = report.budget,
        "plan\n{}",
        report.render()
    );
    schema.add_undeclared_contigs(&report.undeclared_contigs);
    let set = ArraySet::new(&schema);
    let g = normalise(report.geometry(), schema.samples.len() as u64);
    let store = StoreDir::create(output, opts.force)?;
    tracing::info!(
        samples = schema.samples.len(),
        contigs = schema.contigs.len(),
        arrays = set.arrays.len(),
        ?g,
        "converting {}",
        input.display()
    );
    let mut w = Writer::new(
        input,
        Limits::of(&report),
        schema.clone(),
        set.clone(),
        g,
        store,
    );
    let pool = crate::chunk::encoder_pool(threads)?;
    let pb = progress_bar(opts.progress, report.plan.records);
    let (tx, rx) = crossbeam_channel::bounded::<svar2_vcf::Result<Batch>>(0);
    // Encoded batches come back to the reader to be refilled: two batches exist in all.
    let (recycle_tx, recycle_rx) = crossbeam_channel::bounded::<Batch>(2);
    let vc = g.variants_chunk as usize;
    let n_samples = schema.samples.len();
    // Readers through the index when the plan asks for more than one stream.
    let (cc, readers) = (report.plan.cc, report.plan.w as usize);
    let counts: Vec<u64> = report.contigs.iter().map(|c| c.cost).collect();
    let parallel = cc > 1 || readers > 1;
    let per_contig = PIECES_PER_READER as usize * readers;
    let pieces = (parallel && report.index.is_some())
        .then(|| {
            if single {
                svar2_vcf::pieces::plan_pieces(input, &schema, &counts, per_contig)
            } else {
                let own: Vec<(&Path, &svar2_vcf::schema::Schema)> = files
                    .iter()
                    .map(|r| (r.path.as_path(), &r.schema))
                    .collect();
                svar2_vcf::pieces::plan_pieces_inputs(&own, &schema, per_contig)
            }
        })
        .flatten();
    let paths: Vec<std::path::PathBuf> = files.iter().map(|r| r.path.clone()).collect();
    if pieces.is_none() && opts.request.readers.is_some_and(|r| r > 1) {
        return Err(Error::Usage(format!(
            "{0}: --readers {readers} reads the file through its index, and it has none \
             (bgzip it if needed, then `bcftools index {0}`), or drop --readers",
            input.display()
        )));
    }
    if parallel && pieces.is_none() {
        tracing::warn!(
            "{}: no usable index, so one streaming reader (index it with `bcftools index`)",
            input.display()
        );
    }
    let order: Option<Vec<usize>> = pieces.as_ref().and_then(|p| match opts.contig_order {
        ContigOrder::Planned => (cc > 1).then(|| report.plan.order.clone()),
        ContigOrder::File => None,
        ContigOrder::Reverse => {
            let mut rids: Vec<usize> = p.iter().map(|p| p.rid as usize).collect();
            rids.dedup();
            rids.reverse();
            Some(rids)
        }
    });
    let mut stitcher = pieces.as_ref().map(|_| {
        let total = counts.iter().sum();
        svar2_vcf::pieces::Stitcher::new(&set.record, n_samples, vc, 0..total, total)
    });
    let result = std::thread::scope(|scope| {
        let set_ref = &set;
        if let Some(pieces) = &pieces {
            let runs = svar2_vcf::pieces::contig_runs(pieces, &counts, order.as_deref());
            let schema_ref = &schema;
            tracing::info!(
                cc,
                readers_per_contig = readers,
                pieces = pieces.len(),
                order = ?opts.contig_order,
                "reading through the index"
            );
            let paths = &paths;
            scope.spawn(move || {
                svar2_vcf::pieces::read_in_pieces(
                    paths,
                    schema_ref,
                    &set_ref.record,
                    pieces,
                    &runs,
                    (cc, readers),
                    vc,
                    &tx,
                );
            });
            drop(files);
        } else {
            let widths = set.planned_column_widths();
            let schema_ref = &schema;
            scope.spawn(move || {
                // Built here: extractors hold htslib buffers and stay on this thread.
                let mut stream = if single {
                    Stream::single(files.pop().expect("one reader"), &set_ref.record)
                } else {
                    Stream::many(files, schema_ref, &set_ref.record)
                };
                let mut n: u64 = 0;
                loop {
                    let mut batch = match recycle_rx.try_recv() {
                        Ok(mut b) => {
                            b.reset(n);
                            b
                        }
                        Err(_) => {
                            let mut b = Batch::new(&set_ref.record.specs, n_samples, n);
                            b.reserve(vc, &widths);
                            b
                        }
                    };
                    while batch.len() < vc {
                        match stream.read_into(&mut batch, n) {
                            Ok(true) => n += 1,
                            Ok(false) => break,
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        }
                    }
                    let done = batch.len() < vc;
                    if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
                        return;
                    }
                    if done {
                        return;
                    }
                }
            });
        }
        pool.install(|| -> Result<()> {
            // Owned here, so an error below hangs up on the readers instead of leaving
            // them blocked on a send while the scope waits for them.
            drain(rx, stitcher.as_mut(), &mut w, &recycle_tx, &pb, |b| {
                Err(Error::Usage(format!(
                    "{}: records {}.. were left out of their inner chunk; the input changed \
                     while it was read",
                    input.display(),
                    b.first
                )))
            })?;
            w.finish()
        })
    });
    pb.finish_and_clear();
    result?;
    let listed = report.index.and(report.plan.records);
    if let Some(listed) = listed.filter(|&n| n != w.records()) {
        // (Index-driven reading checks each contig and fails; one stream reads it all.)
        tracing::warn!(
            "{}: the index lists {listed} records but {} were read: it is stale, \
             re-index with `bcftools index -f`",
            input.display(),
            w.records()
        );
    }
    let (store_bytes, files) = disk_usage(output);
    Ok(Summary {
        records: w.records(),
        seconds: t0.elapsed().as_secs_f64(),
        store_bytes,
        files,
        rewritten_shards: w.rewritten(),
    })
}
