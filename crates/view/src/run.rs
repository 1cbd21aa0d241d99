//! `view` and `query`: the rows to print, read block by block (a thread reads and
//! formats the next blocks while this one is written; records are split over the
//! decode pool to format), each block written whole — so a damaged chunk stops the
//! output at a line boundary, and memory holds a few blocks, not the store.

use crate::error::{Error, Result};
use crate::filter::RecordFilter;
use crate::header::schema_of;
use crate::rows::Sources;
use crate::select::{rows_in, Region, Targets};
use rayon::prelude::*;
use std::path::PathBuf;
use svar2_expr::Verdict;
use svar2_reader::{Reader, Store};
use svar2_vcf::block::{Block, Dense, FieldValues};
use svar2_vcf::query::Query;
use svar2_vcf::schema::{Category, Schema, VcfType};
use svar2_vcf::write::{header_text, OutputType, Printer, Sink};

/// What `view` prints, as bcftools' flags say it.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    /// `-r/-R`: records overlapping these (empty: every record).
    pub regions: Vec<Region>,
    /// `-t/-T`: records whose POS lies in these.
    pub targets: Option<Targets>,
    /// `-s/-S`: store sample columns, in output order (`None`: all).
    pub samples: Option<Vec<u64>>,
    /// `-G` makes it false: no FORMAT, no samples.
    pub genotypes: bool,
    /// `-h`: the header only; `-H`: no header.
    pub header_only: bool,
    pub no_header: bool,
    pub output: Option<PathBuf>,
    pub kind: OutputType,
    pub write_index: bool,
    pub threads: usize,
    /// Recompute INFO/AC and INFO/AN for a sample subset (bcftools' default; `-I` off).
    pub update_info: bool,
    /// `-i`/`-e`: the expression and which.
    pub filter: Option<(String, svar2_expr::Logic)>,
    /// `--fill-tags`: INFO tags computed from the printed samples' genotypes.
    pub fill_tags: Vec<crate::fill::Tag>,
    /// FORMAT fields to print in given records whatever the printed samples' values
    /// (`svar2 append` prints some samples of records other samples have a field in).
    pub kept_format: Option<std::sync::Arc<KeptFormat>>,
}

/// Per FORMAT field (its name), the store records it is printed in whatever the
/// printed samples' values: one bit per record.
#[derive(Debug, Clone, Default)]
pub struct KeptFormat {
    pub fields: std::collections::HashMap<String, Vec<u64>>,
}

impl KeptFormat {
    /// Marks `field` kept in store record `record`.
    pub fn keep(&mut self, field: &str, record: u64, records: u64) {
        let bits = self
            .fields
            .entry(field.to_string())
            .or_insert_with(|| vec![0; records.div_ceil(64) as usize]);
        if let Some(w) = bits.get_mut((record / 64) as usize) {
            *w |= 1 << (record % 64);
        }
    }

    fn has(&self, field: &str, record: u64) -> bool {
        self.fields
            .get(field)
            .and_then(|b| b.get((record / 64) as usize))
            .is_some_and(|w| w >> (record % 64) & 1 == 1)
    }
}

/// What a run printed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Printed {
    pub records: u64,
}

/// Records per block: inner-chunk rows of the genotypes, fewer for very wide stores
/// (a block's decoded values stay near 64 MiB).
fn block_rows(store: &Store, samples: usize) -> usize {
    let chunk = store
        .group()
        .array("call_genotype")
        .or_else(|| store.group().array("variant_position"))
        .and_then(|a| a.chunk_shape().first().copied())
        .map_or(1000, |c| c.max(1) as usize);
    chunk.min((64 << 20) / block_row_bytes(samples)).max(1)
}

/// Decoded bytes one row of a block takes, about: 16 a sample.
fn block_row_bytes(samples: usize) -> usize {
    16 * samples.max(1)
}

/// Rows as runs of consecutive rows (`[start, end)`, ascending): a whole store is one
/// run, so the selection's memory does not grow with the store.
type Runs = Vec<std::ops::Range<u64>>;

/// Ascending rows as runs.
fn runs_of(rows: &[u64]) -> Runs {
    let mut out: Runs = Vec::new();
    for &r in rows {
        match out.last_mut() {
            Some(run) if run.end == r => run.end += 1,
            _ => out.push(r..r + 1),
        }
    }
    out
}

/// The runs cut into pieces of at most `max` rows, in order.
fn pieces(runs: &Runs, max: usize) -> impl Iterator<Item = std::ops::Range<u64>> + '_ {
    let max = max.max(1) as u64;
    runs.iter().flat_map(move |r| {
        (r.start..r.end)
            .step_by(max as usize)
            .map(move |a| a..(a + max).min(r.end))
    })
}

/// The rows to print: every row, or those overlapping the regions, less those the
/// targets drop (by POS, read 64 Ki rows at a time).
fn rows_to_print(store: &Store, regions: &[Region], targets: Option<&Targets>) -> Result<Runs> {
    let n = store.array("variant_position")?.shape()[0];
    let rows: Runs = if regions.is_empty() {
        std::iter::once(0..n).collect()
    } else {
        runs_of(&rows_in(store, regions)?)
    };
    let Some(t) = targets else { return Ok(rows) };
    let pos = store.array("variant_position")?;
    let contig = store.array("variant_contig")?;
    let names = store.contig_names();
    let mut kept: Vec<u64> = Vec::new();
    let mut out: Runs = Vec::new();
    for piece in pieces(&rows, 1 << 16) {
        let (p, c) = (
            pos.read_rows_i64(piece.start, piece.end)?,
            contig.read_rows_i64(piece.start, piece.end)?,
        );
        kept.clear();
        for (i, r) in piece.enumerate() {
            let name = names.get(c[i] as usize).map_or("", String::as_str);
            if t.keeps(name, p[i]) {
                kept.push(r);
            }
        }
        for run in runs_of(&kept) {
            match out.last_mut() {
                Some(last) if last.end == run.start => last.end = run.end,
                _ => out.push(run),
            }
        }
    }
    Ok(out)
}

/// The store's header facts with the chosen sample columns (all when `None`), in
/// order, and those columns.
fn chosen_schema(store: &Store, samples: Option<&Vec<u64>>) -> Result<(Schema, Vec<u64>)> {
    let mut schema = schema_of(store)?;
    let columns = match samples {
        Some(c) => c.clone(),
        None => (0..schema.samples.len() as u64).collect(),
    };
    schema.samples = columns
        .iter()
        .map(|&c| schema.samples[c as usize].clone())
        .collect();
    Ok((schema, columns))
}

/// The schema printed: the chosen samples in order; AC and AN declared when they are
/// recomputed.
fn output_schema(store: &Store, o: &ViewOptions) -> Result<(Schema, Vec<u64>, bool)> {
    let (mut schema, columns) = chosen_schema(store, o.samples.as_ref())?;
    if !o.fill_tags.is_empty() {
        if o.samples.as_ref().is_some_and(|s| s.is_empty()) {
            return Err(Error::Usage(
                "--fill-tags computes tags from the genotypes of the samples printed: -s/-S \
                 leaves none"
                    .into(),
            ));
        }
        if !o.genotypes || !schema.has_gt {
            return Err(Error::Usage(
                "--fill-tags computes tags from the genotypes: the store has none, or -G \
                 drops them"
                    .into(),
            ));
        }
        crate::fill::declare(&mut schema, &o.fill_tags)?;
    }
    // bcftools view -s recounts them from the chosen samples' genotypes, -G or not.
    let recompute = o.update_info && o.samples.is_some() && schema.has_gt;
    if recompute {
        if let Some(f) = schema.fields.iter().find(|f| {
            f.category == Category::Info
                && (f.name == "AC" || f.name == "AN")
                && f.ty != VcfType::Integer
        }) {
            return Err(Error::Usage(format!(
                "the store declares INFO/{} as Type={:?}, and -s recounts it as integers: \
                 pass -I to keep AC/AN as stored (svar2 convert -s refuses the same header)",
                f.name, f.ty
            )));
        }
        crate::fill::declare(&mut schema, &[crate::fill::Tag::Ac, crate::fill::Tag::An])?;
    }
    Ok((schema, columns, recompute))
}

/// INFO/AC and INFO/AN of the block's records from the genotypes of its samples, as
/// `bcftools view -s` recomputes them. With `stored_first` (`-s` left no sample, and
/// the block holds every sample's genotypes), a record's own INFO/AC and INFO/AN are
/// kept where it has both, as bcftools then does (`bcf_calc_ac` reads them first).
fn recompute_ac_an(schema: &Schema, b: &mut Block, stored_first: bool) {
    let Some(g) = &b.gt else { return };
    let field = |name: &str| {
        schema
            .fields
            .iter()
            .position(|f| f.category == Category::Info && f.name == name)
            .expect("declared by output_schema")
    };
    let (ac_field, an_field) = (field("AC"), field("AN"));
    let width = b.allele_width.saturating_sub(1).max(1);
    let mut ac = vec![-2i32; b.n * width];
    let mut an = vec![0i32; b.n];
    let stored = |f: usize| b.info.iter().find(|v| v.field == f);
    let (stored_ac, stored_an) = match stored_first {
        true => (stored(ac_field), stored(an_field)),
        false => (None, None),
    };
    for r in 0..b.n {
        if let (Some(sac), Some(san)) = (stored_ac, stored_an) {
            let value = |v: &FieldValues, i: usize| v.values.int(i).filter(|&x| x >= 0);
            if let (Some(n), Some(_)) = (value(san, r), value(sac, r * sac.width)) {
                an[r] = n as i32;
                for k in 0..width.min(sac.width) {
                    ac[r * width + k] = sac.values.int(r * sac.width + k).unwrap_or(-2) as i32;
                }
                continue;
            }
        }
        let alts = (1..b.allele_width)
            .take_while(|&k| !b.alleles.get(r * b.allele_width + k).is_empty())
            .count();
        for k in 0..alts {
            ac[r * width + k] = 0;
        }
        for j in 0..b.n_samples {
            let at = (r * b.n_samples + j) * g.ploidy;
            for i in at..at + g.ploidy {
                let a = g.alleles.int(i).unwrap_or(-2);
                if a >= 0 {
                    an[r] += 1;
                    if a >= 1 && (a as usize) <= alts {
                        ac[r * width + a as usize - 1] += 1;
                    }
                }
            }
        }
    }
    // In place where the store has them (bcftools updates them where they stand),
    // else last.
    for (field, width, values) in [(ac_field, width, ac), (an_field, 1, an)] {
        let new = FieldValues {
            field,
            width,
            values: Dense::I32(values),
        };
        match b.info.iter_mut().find(|f| f.field == field) {
            Some(f) => *f = new,
            None => b.info.push(new),
        }
    }
}

/// Records `run` as a block, and the filter's verdicts on them, if there is one.
fn read_tested(
    reader: &Reader,
    sources: &Sources,
    filter: Option<&RecordFilter>,
    run: &[u64],
) -> Result<(Block, Option<Vec<Verdict>>)> {
    let b = sources.read(reader, run)?;
    let verdicts = filter.map(|f| f.verdicts(reader, run, &b)).transpose()?;
    Ok((b, verdicts))
}

/// Text buffers handed back by the writer once written, for the next blocks: a fresh
/// multi-MiB buffer per block costs more in page faults than formatting it.
struct Buffers {
    give: crossbeam_channel::Sender<Vec<u8>>,
    take: crossbeam_channel::Receiver<Vec<u8>>,
}

impl Buffers {
    fn new() -> Buffers {
        let (give, take) = crossbeam_channel::unbounded();
        Buffers { give, take }
    }

    fn get(&self) -> Vec<u8> {
        self.take.try_recv().unwrap_or_default()
    }

    fn put(&self, mut b: Vec<u8>) {
        b.clear();
        let _ = self.give.send(b);
    }
}

/// Formats a block's records that `verdicts` keep (all without) in parallel parts (a
/// printer each, from `make`), in order.
fn format_block<'s, M, F>(
    reader: &Reader,
    b: &Block,
    verdicts: Option<&[Verdict]>,
    threads: usize,
    buffers: &Buffers,
    make: M,
    line: F,
) -> Vec<Vec<u8>>
where
    M: Fn() -> Printer<'s> + Sync,
    F: Fn(&mut Printer<'s>, &Block, usize, &mut Vec<u8>) + Sync,
{
    let parts = threads.max(1).min(b.n.max(1));
    let per = b.n.div_ceil(parts).max(1);
    reader.install(|| {
        (0..parts)
            .into_par_iter()
            .map(|k| {
                let mut out = buffers.get();
                let mut p = make();
                for r in k * per..((k + 1) * per).min(b.n) {
                    if verdicts.is_none_or(|v| v[r].keep) {
                        line(&mut p, b, r, &mut out);
                    }
                }
                out
            })
            .collect()
    })
}

/// Records of a block that a filter keeps (all without one).
fn kept(n: usize, verdicts: Option<&[Verdict]>) -> usize {
    verdicts.map_or(n, |v| v.iter().filter(|x| x.keep).count())
}

/// Decoded and formatted blocks held at once: enough that every thread has a block
/// while the writer prints the oldest, within about 256 MiB of decoded records.
fn blocks_in_flight(threads: usize, block_bytes: usize) -> usize {
    (BLOCKS_BYTES / block_bytes.max(1)).clamp(2, threads.max(1) + 1)
}

/// What [`blocks_in_flight`] keeps the decoded blocks under.
const BLOCKS_BYTES: usize = 256 << 20;

/// One block's outcome: its records printed and formatted text, in parts.
type Formatted = Result<(usize, Vec<Vec<u8>>)>;

/// Reads and formats `rows` in blocks of `block` rows, up to `window` blocks at once
/// on the reader's pool (a `view-dispatch` thread hands them out), and hands each
/// formatted block, in order, to `write` on the calling thread.
fn pipeline<T, R, F, W>(
    reader: &Reader,
    rows: &Runs,
    block: usize,
    window: usize,
    read: R,
    format: F,
    mut write: W,
) -> Result<u64>
where
    T: Send,
    R: Fn(&[u64]) -> Result<T> + Sync,
    F: Fn(&mut T, &Buffers) -> Formatted + Sync,
    W: FnMut(&[u8]) -> Result<()>,
{
    let buffers = Buffers::new();
    // In block order: where each block's text will arrive. Bounded, so at most
    // `window` blocks wait for the writer.
    let (order_tx, order_rx) =
        crossbeam_channel::bounded::<crossbeam_channel::Receiver<Formatted>>(window.max(1));
    let mut printed = 0u64;
    std::thread::scope(|s| -> Result<()> {
        let (read, format, buffers) = (&read, &format, &buffers);
        let dispatch = move || {
            reader.in_place_scope(|scope| {
                for piece in pieces(rows, block) {
                    let ids: Vec<u64> = piece.collect();
                    let (tx, rx) = crossbeam_channel::bounded(1);
                    // Fails once the writer stopped (an error, or a closed pipe).
                    if order_tx.send(rx).is_err() {
                        return;
                    }
                    scope.spawn(move |_| {
                        let r = read(&ids).and_then(|mut b| format(&mut b, buffers));
                        let _ = tx.send(r);
                    });
                }
            });
            // (order_tx dropped here: the writer's loop ends after the last block.)
        };
        std::thread::Builder::new()
            .name("view-dispatch".into())
            .spawn_scoped(s, dispatch)
            .map_err(|e| Error::Usage(format!("cannot start a thread: {e}")))?;
        // Owned here: an error below drops it, so a dispatcher blocked on a full queue
        // is let go instead of the scope waiting for it forever.
        let order_rx = order_rx;
        for done in order_rx.iter() {
            let r = done
                .recv()
                .map_err(|_| Error::Usage("a decoding thread failed".into()))?;
            let (n, parts) = r?;
            for text in parts {
                write(&text)?;
                buffers.put(text);
            }
            printed += n as u64;
        }
        Ok(())
    })?;
    Ok(printed)
}

/// Refuses an output file that would overwrite the store being read (`-o
/// store/zarr.json`), and `--write-index` where no index file can sit beside the
/// output (standard output, `/dev/stdout`, a pipe).
fn check_output_file(store: &Store, o: &ViewOptions) -> Result<()> {
    if let Some(out) = &o.output {
        if out.is_dir() {
            return Err(Error::Usage(format!(
                "-o {}: a directory; give a file name",
                out.display()
            )));
        }
        if !store.group().arrays.iter().any(|a| a.reads_remote()) {
            svar2_store::replace::refuse_overlap(&store.group().root, out, "store being read")?;
        }
        if let Some(store) = svar2_store::replace::store_at_or_above(out) {
            return Err(Error::Usage(format!(
                "-o {}: {} is a Zarr store, which VCF written there would destroy; give a \
                 file outside any store",
                out.display(),
                store.display()
            )));
        }
    }
    if o.write_index {
        let regular = match &o.output {
            None => false,
            Some(p) => std::fs::metadata(p).map_or(true, |m| m.is_file()),
        };
        if !regular {
            return Err(Error::Usage(
                "--write-index needs -o naming a regular file (the index is written beside \
                 it as FILE.csi); standard output, a pipe or a device has no place for one"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// `svar2 view`: VCF/BCF of the store's records.
pub fn view(store: &Store, reader: &Reader, o: &ViewOptions) -> Result<Printed> {
    check_output_file(store, o)?;
    let (schema, columns, recompute) = output_schema(store, o)?;
    // `-s` that leaves no sample prints sites only (no FORMAT lines either), and
    // bcftools then takes AC/AN from the record, else counts them over every sample.
    let no_samples = columns.is_empty() && o.samples.is_some();
    let genotypes = o.genotypes && !no_samples;
    if genotypes {
        // A VCF names each sample once (htslib refuses a header that repeats one).
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = schema.samples.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(Error::Usage(format!(
                "{}: sample {twice} is listed twice in sample_id, and a VCF names each \
                 sample once: choose other samples (-s), or print sites only (-G)",
                store.group().root.display()
            )));
        }
    }
    let header = header_text(&schema, genotypes);
    // BCF carries its header whatever -H says (its records are coded against it).
    let text = matches!(o.kind, OutputType::Vcf | OutputType::VcfGz);
    let written = if o.no_header && text {
        ""
    } else {
        header.as_str()
    };
    // Everything that can refuse the request is checked before the header is written.
    let rows = match o.header_only {
        true => Runs::new(),
        false => rows_to_print(store, &o.regions, o.targets.as_ref())?,
    };
    let read_columns = match no_samples && recompute {
        true => (0..store.sample_names().len() as u64).collect(),
        false => columns.clone(),
    };
    let read_samples = read_columns.len();
    let mut sources = Sources::new(store, &schema, read_columns, genotypes || recompute)?;
    if !genotypes {
        // The genotypes alone, to count AC/AN from.
        let fields = &schema.fields;
        sources = sources.only(|k| fields[k].category != Category::Format, recompute);
    }
    // bcftools view tests the expression on every sample, before it subsets them.
    // On the printed block when it has every sample (no -s, genotypes printed), else on
    // a block of its own. When it recounts AC/AN it declares them first, so `AC` and
    // `AN` there are the record's own INFO tags (absent: missing), not counts.
    let filter = match &o.filter {
        Some((text, logic)) => {
            let own = o.samples.is_some() || !o.genotypes;
            let mut all = chosen_schema(store, None)?;
            if recompute {
                crate::fill::declare(&mut all.0, &[crate::fill::Tag::Ac, crate::fill::Tag::An])?;
            }
            Some(RecordFilter::new(store, text, *logic, all, false, own)?)
        }
        None => None,
    };
    let mut sink = Sink::create(o.output.as_deref(), o.kind, o.threads, written)?;
    if o.header_only {
        sink.finish(false, o.threads)?;
        return Ok(Printed::default());
    }
    let block = block_rows(store, read_samples);
    let threads = reader.threads();
    let window = blocks_in_flight(threads, block * block_row_bytes(read_samples));
    let kept_format = o.kept_format.as_deref();
    let records = pipeline(
        reader,
        &rows,
        block,
        window,
        |run| {
            let (b, verdicts) = read_tested(reader, &sources, filter.as_ref(), run)?;
            // The FORMAT fields kept in each record (only when asked).
            let kept_fields: Vec<Vec<usize>> = match kept_format {
                Some(kf) => run
                    .iter()
                    .map(|&rec| {
                        (0..b.format.len())
                            .filter(|&k| kf.has(&schema.fields[b.format[k].field].name, rec))
                            .collect()
                    })
                    .collect(),
                None => Vec::new(),
            };
            Ok((b, verdicts, kept_fields))
        },
        |(b, verdicts, kept_fields), buffers| {
            if recompute {
                recompute_ac_an(&schema, b, no_samples);
            }
            crate::fill::fill(&schema, &o.fill_tags, b);
            let v = verdicts.as_deref();
            let kept_fields = &*kept_fields;
            let text = format_block(
                reader,
                b,
                v,
                threads,
                buffers,
                || match text {
                    true => Printer::new(&schema, genotypes),
                    false => Printer::new(&schema, genotypes).for_bcf(),
                },
                |p, b, r, out| match kept_fields.get(r) {
                    Some(k) => p.put_record_with(b, r, k, out),
                    None => p.put_record(b, r, out),
                },
            );
            Ok((kept(b.n, v), text))
        },
        |text| sink.write_lines(text).map_err(Error::from),
    )?;
    sink.finish(o.write_index, o.threads)?;
    Ok(Printed { records })
}

/// What `query` prints.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    pub format: String,
    pub regions: Vec<Region>,
    pub targets: Option<Targets>,
    pub samples: Option<Vec<u64>>,
    /// `-H`: the header line first.
    pub header: bool,
    /// `-i`/`-e`: the expression and which.
    pub filter: Option<(String, svar2_expr::Logic)>,
}

/// `svar2 query`: `bcftools query -f` over the store's records, to `out`.
pub fn query(
    store: &Store,
    reader: &Reader,
    o: &QueryOptions,
    out: &mut dyn std::io::Write,
) -> Result<Printed> {
    let (schema, columns) = chosen_schema(store, o.samples.as_ref())?;
    let q = Query::parse(&o.format, &schema)?;
    // bcftools query tests the expression on the samples it reads (-s/-S's).
    let filter = match &o.filter {
        Some((text, logic)) => Some(RecordFilter::new(
            store,
            text,
            *logic,
            (schema.clone(), columns.clone()),
            q.prints_format(&schema),
            false,
        )?),
        None => None,
    };
    let io = |source: std::io::Error| Error::Io {
        what: "standard output".into(),
        source,
    };
    let rows = rows_to_print(store, &o.regions, o.targets.as_ref())?;
    // The printed blocks also carry what the expression reads: it is tested on them.
    let needs = filter
        .as_ref()
        .map(|f| f.needs().clone())
        .unwrap_or_default();
    let samples = q.uses_samples() || needs.samples;
    let sources = Sources::new(store, &schema, columns.clone(), samples)?.only(
        |k| q.uses_field(&schema, k) || needs.fields.contains(&k),
        q.uses_genotypes() || needs.genotypes,
    );
    if o.header {
        out.write_all(&q.header(&schema.samples)).map_err(io)?;
    }
    let width = if samples { columns.len() } else { 0 };
    let block = block_rows(store, width);
    let threads = reader.threads();
    let window = blocks_in_flight(threads, block * block_row_bytes(width));
    // %LINE prints the samples in file order (bcftools' subset header), [ ] in -s's.
    let file_order = (!columns.is_sorted()).then(|| {
        let mut order: Vec<usize> = (0..columns.len()).collect();
        order.sort_by_key(|&j| columns[j]);
        order
    });
    let records = pipeline(
        reader,
        &rows,
        block,
        window,
        |run| read_tested(reader, &sources, filter.as_ref(), run),
        |(b, verdicts), buffers| {
            let v = verdicts.as_deref();
            let text = format_block(
                reader,
                b,
                v,
                threads,
                buffers,
                || match &file_order {
                    Some(o) => Printer::new(&schema, true).in_order(o.clone()),
                    None => Printer::new(&schema, true),
                },
                |p, b, r, out| {
                    let samples = v.and_then(|v| v[r].samples.as_deref());
                    q.put_record(p, &schema, b, r, samples, out)
                },
            );
            Ok((kept(b.n, v), text))
        },
        |text| out.write_all(text).map_err(io),
    )?;
    out.flush().map_err(io)?;
    Ok(Printed { records })
}
