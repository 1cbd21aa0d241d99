//! The store writer: encoded inner chunks go straight to their shard's partial file
//! as rows of records arrive (in any order, with concurrent contigs), each shard row
//! is finished when its last record arrives, and the store is completed at the end.
//! One job per file: rows and parts here; shard assembly in `shards`; re-laying rows
//! whose layout was outgrown in `relayout`; the arrays written at the end (small
//! arrays, region index, root group) in `finish`.

mod finish;
mod partition;
mod relayout;
mod shards;

pub use partition::{Fragment, LayoutRecord, PartitionOutput, RowRecord, SlotRecord};

use crate::arrays::{ArraySet, ArraySpec, Dims, Geometry, Layout, Stats};
use crate::chunk::{chunk_tasks, column_from_raw, encode_chunk, materialize, ChunkView};
use crate::error::{Error, Result};
use crate::row_limit::{Fill, RowLimit};
use rayon::prelude::*;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use svar2_store::codec::{InnerCodec, Raw};
use svar2_store::dir::StoreDir;
use svar2_store::metadata::ArrayMeta;
use svar2_store::{shard, Dtype};
use svar2_vcf::ragged::Batch;
use svar2_vcf::schema::Schema;

/// One encoded inner chunk of the current shard row: where it sits in the shard's
/// partial file (`None`: all fill, not stored) and the layout it was encoded under.
#[derive(Clone)]
struct Slot {
    span: Option<(u64, u64)>,
    layout: Layout,
    /// A stored chunk's last four bytes (its crc32c), for the store's record of the
    /// chunks (`None`: not known here, a partition's fragment).
    tail: Option<[u8; 4]>,
}

/// One inner chunk of a shard being laid out again: where its stored bytes are in
/// the old file (`None`: all fill, not stored) and the layout they were encoded under.
#[derive(Clone, Copy)]
struct Part {
    span: Option<(u64, u64)>,
    layout: Layout,
}

/// What the finish step needs to know about a written shard row of one array.
struct RowInfo {
    layout: Layout,
    /// Records (row-relative) whose field was absent, for growable arrays.
    absent: Option<Vec<u64>>,
}

fn bit(bits: &Option<Vec<u64>>, i: usize) -> bool {
    bits.as_ref()
        .is_some_and(|b| b.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1))
}

/// A shard row still being filled. Concurrent contigs fill several rows at once, in
/// any order; each is finished when its last record arrives.
#[derive(Default, Clone)]
struct OpenRow {
    /// Per array: the row's inner chunks, `[inner row][sample chunk]`.
    slots: Vec<Vec<Option<Slot>>>,
    /// Bytes already appended to each (array, sample shard) partial file of the row.
    part_len: HashMap<(usize, usize), u64>,
    /// Per growable array: records (row-relative) whose field was absent.
    absent: Vec<Option<Vec<u64>>>,
    records: u64,
}

/// A batch the writer has taken in, with the layouts and codecs its chunks are
/// encoded under and the (array, sample chunk) tasks that encode them.
pub(crate) struct Admitted {
    batch: Batch,
    layouts: Vec<Layout>,
    codecs: Vec<Arc<InnerCodec>>,
    tasks: Vec<(usize, usize)>,
    n_samples: usize,
}

/// Each task's encoded chunk (`None`: all fill, not stored), in task order.
pub(crate) type Encoded = Vec<Result<Option<Vec<u8>>>>;

/// An encoded batch without its records: what [`Writer::commit`] needs of it, so the
/// records (a chunk row of every sample: 260 MB at 300,000 samples) go back to the
/// reader before the chunks are written, not after the reader has had to fill a
/// fresh batch beside them.
pub(crate) struct Placed {
    /// The batch's first record and its number of records.
    first: u64,
    records: usize,
    layouts: Vec<Layout>,
    tasks: Vec<(usize, usize)>,
    /// Per growable array (by index): the batch's records without a value in it.
    absent: Vec<(usize, Vec<usize>)>,
}

impl Admitted {
    /// Parts the encoded batch from what committing it needs (see [`Placed`]).
    pub(crate) fn release(self, set: &ArraySet) -> (Placed, Batch) {
        let Admitted {
            batch,
            layouts,
            tasks,
            ..
        } = self;
        let absent = set
            .arrays
            .iter()
            .enumerate()
            .filter(|(_, spec)| spec.growable())
            .filter_map(|(a, spec)| {
                let widths = &batch.columns[spec.column].widths;
                let rows: Vec<usize> = (0..widths.len()).filter(|&r| widths[r] == 0).collect();
                (!rows.is_empty()).then_some((a, rows))
            })
            .collect();
        let placed = Placed {
            first: batch.first,
            records: batch.len(),
            layouts,
            tasks,
            absent,
        };
        (placed, batch)
    }

    /// Encodes every inner chunk of the batch, in parallel on the current rayon pool:
    /// each of the pool's threads takes the largest chunk not yet taken, so the last
    /// batch of an input does not end on one thread encoding its widest array (PL)
    /// while the others wait. The results keep task order: the bytes do not depend
    /// on which thread encoded what.
    pub(crate) fn encode(&self, set: &ArraySet, geometry: &Geometry) -> Encoded {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let n = self.tasks.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&t| {
            let (a, k) = self.tasks[t];
            std::cmp::Reverse(self.task_bytes(set, geometry, a, k))
        });
        let next = AtomicUsize::new(0);
        let done: Vec<std::sync::OnceLock<Result<Option<Vec<u8>>>>> =
            (0..n).map(|_| std::sync::OnceLock::new()).collect();
        let takers = rayon::current_num_threads().clamp(1, n.max(1));
        (0..takers).into_par_iter().for_each(|_| loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&t) = order.get(i) else {
                return;
            };
            let (a, k) = self.tasks[t];
            let encoded = encode_chunk(
                set,
                &self.batch,
                &self.layouts[a],
                &self.codecs[a],
                geometry,
                self.n_samples,
                a,
                k,
            );
            let _ = done[t].set(encoded);
        });
        done.into_iter()
            .map(|d| d.into_inner().expect("every task is taken once"))
            .collect()
    }

    /// Bytes sample chunk `k` of array `a` lays out: what encoding it costs, roughly.
    fn task_bytes(&self, set: &ArraySet, geometry: &Geometry, a: usize, k: usize) -> u64 {
        let spec = &set.arrays[a];
        let layout = &self.layouts[a];
        let samples = match spec.per_sample {
            true => {
                let chunk = geometry.samples_chunk as usize;
                chunk.min(self.n_samples.saturating_sub(k * chunk))
            }
            false => 1,
        };
        let value = layout.dtype.size().unwrap_or(16);
        (samples * layout.cell() * value) as u64
    }
}

pub(crate) struct Writer {
    input: PathBuf,
    /// See [`Writer::name_inputs`].
    contig_inputs: Vec<Option<PathBuf>>,
    /// `--max-mem` and what the plan charged the rows in flight and the encoders'
    /// chunks: wide records are checked against what the plan left over.
    rows: RowLimit,
    schema: Schema,
    set: ArraySet,
    geometry: Geometry,
    store: StoreDir,
    /// Where shards' partial files accumulate: the store itself, or a partition's
    /// own directory (rows it shares with another partition are finished by
    /// `finalize`).
    parts: PathBuf,
    stats: Stats,
    codecs: HashMap<(Dtype, bool), Arc<InnerCodec>>,
    records: u64,
    open: std::collections::BTreeMap<u64, OpenRow>,
    /// Per array, per finished shard row: the layout it was written under.
    history: Vec<std::collections::BTreeMap<u64, RowInfo>>,
    /// Region index rows, each tagged with its inner chunk (sorted at the end).
    region: Vec<[i64; 6]>,
    rewritten: u64,
    /// Set when only the later sample columns of an existing store are written.
    later: Option<std::sync::Arc<crate::later::LaterColumns>>,
    /// Sample-axis sizes the user asked for that the sample count clamped, recorded
    /// beside the layout (see [`Writer::record_request`]).
    requested: Option<serde_json::Value>,
}

impl Writer {
    /// The store geometry the writer lays rows out on.
    pub(crate) fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// A writer for `set`'s arrays into `store` (empty stats: `Stats::for_store`),
    /// within `rows` (wide records are checked against it).
    /// Names, for messages about a record, the input holding each contig's records
    /// (`PlanReport::contig_inputs`): with several inputs, `input` names them all.
    pub(crate) fn name_inputs(&mut self, contig_inputs: Vec<Option<PathBuf>>) {
        self.contig_inputs = contig_inputs;
    }

    /// The input a record of contig `rid` came from.
    fn input_of(&self, rid: i32) -> PathBuf {
        let known = usize::try_from(rid)
            .ok()
            .and_then(|r| self.contig_inputs.get(r));
        known
            .cloned()
            .flatten()
            .unwrap_or_else(|| self.input.clone())
    }

    pub(crate) fn new(
        input: &Path,
        rows: RowLimit,
        schema: Schema,
        set: ArraySet,
        geometry: Geometry,
        store: StoreDir,
    ) -> Writer {
        let n_arrays = set.arrays.len();
        Writer {
            input: input.into(),
            contig_inputs: Vec::new(),
            rows,
            stats: Stats::for_store(&set, &schema),
            schema,
            set,
            geometry,
            parts: store.root.clone(),
            store,
            codecs: HashMap::new(),
            records: 0,
            open: Default::default(),
            history: (0..n_arrays).map(|_| Default::default()).collect(),
            region: Vec::new(),
            rewritten: 0,
            later: None,
            requested: None,
        }
    }

    /// Records the samples chunk and shard the user asked for when the sample count
    /// cut one of them down: the layout then holds the sample count, which reads as
    /// "clamped, choose again" to `svar2 append`; this keeps what was asked. (Other
    /// stores are left as they were: a size asked equal to the sample count writes
    /// the store a conversion without it writes.)
    pub(crate) fn record_request(&mut self, r: &svar2_planner::geometry::Requested) {
        let n = self.total_samples();
        let axes = [
            ("samples_chunk", r.samples_chunk),
            ("samples_shard", r.samples_shard),
        ];
        if !axes.iter().any(|(_, v)| v.is_some_and(|v| v > n)) {
            return;
        }
        let asked: serde_json::Map<String, serde_json::Value> = axes
            .iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v.into())))
            .collect();
        self.requested = Some(asked.into());
    }

    /// Writes only the sample columns after `later.samples_before`, under at least
    /// the existing store's layouts, with its earlier columns linked in at the end.
    pub(crate) fn write_later_columns(
        &mut self,
        later: std::sync::Arc<crate::later::LaterColumns>,
    ) {
        later.seed(&self.set, &mut self.stats);
        self.later = Some(later);
    }

    /// Samples in the finished store (those before the columns written, if any).
    fn total_samples(&self) -> u64 {
        let before = self.later.as_ref().map_or(0, |l| l.samples_before.len());
        (before + self.n_samples()) as u64
    }

    /// Records written so far.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Shards re-encoded because their layout was outgrown.
    pub(crate) fn rewritten(&self) -> u64 {
        self.rewritten
    }

    fn n_samples(&self) -> usize {
        self.schema.samples.len()
    }

    fn inner_per_shard(&self) -> usize {
        (self.geometry.variants_shard / self.geometry.variants_chunk) as usize
    }

    fn sample_chunks(&self, a: &ArraySpec) -> usize {
        if a.per_sample {
            (self.n_samples() as u64)
                .div_ceil(self.geometry.samples_chunk)
                .max(1) as usize
        } else {
            1
        }
    }

    fn chunks_per_sample_shard(&self) -> usize {
        (self.geometry.samples_shard / self.geometry.samples_chunk) as usize
    }

    fn dims(&self) -> Dims {
        Dims::from_stats(&self.set, &self.stats, self.schema.has_gt)
    }

    fn layouts(&self) -> Vec<Layout> {
        let dims = self.dims();
        self.set
            .arrays
            .iter()
            .map(|a| a.layout(&self.stats, &dims))
            .collect()
    }

    fn codec(&mut self, dtype: Dtype, bitshuffle: bool) -> Result<Arc<InnerCodec>> {
        if let Some(c) = self.codecs.get(&(dtype, bitshuffle)) {
            return Ok(c.clone());
        }
        let c = Arc::new(InnerCodec::new(
            dtype,
            bitshuffle,
            self.geometry.zstd_level,
        )?);
        self.codecs.insert((dtype, bitshuffle), c.clone());
        Ok(c)
    }

    fn codecs_for(&mut self, layouts: &[Layout]) -> Result<Vec<Arc<InnerCodec>>> {
        let keys: Vec<_> = self
            .set
            .arrays
            .iter()
            .zip(layouts)
            .map(|(a, l)| (l.dtype, a.bitshuffle))
            .collect();
        keys.into_iter().map(|(d, b)| self.codec(d, b)).collect()
    }

    fn inner_shape(&self, a: &ArraySpec, l: &Layout) -> Vec<u64> {
        a.shapes(l, 0, self.n_samples() as u64, &self.geometry)[2].clone()
    }

    /// Encodes one inner-chunk row of records into the current shard row and hands
    /// the batch back for reuse (admit, encode and commit in one step; the pipeline
    /// keeps several batches between `admit` and `commit`).
    pub(crate) fn add_batch(&mut self, batch: Batch) -> Result<Batch> {
        let admitted = self.admit(batch)?;
        let encoded = admitted.encode(&self.set, &self.geometry);
        let (placed, batch) = admitted.release(&self.set);
        self.commit(placed, encoded, None)?;
        Ok(batch)
    }

    /// Takes a batch in: its statistics widen the store's layouts, and the layouts
    /// its chunks are encoded under are fixed here. Batches are admitted and
    /// committed in the same order, so the bytes do not depend on how many are
    /// encoded at once.
    pub(crate) fn admit(&mut self, mut batch: Batch) -> Result<Admitted> {
        if let Some(later) = &self.later {
            later.add_counts(&self.set, &mut batch);
        }
        for (s, c) in self.stats.columns.iter_mut().zip(&batch.columns) {
            s.merge(&c.stats);
        }
        for (i, name) in &batch.new_contigs {
            debug_assert_eq!(*i as usize, self.schema.contigs.len());
            self.schema
                .add_undeclared_contigs(std::slice::from_ref(name));
        }
        if !batch.new_contigs.is_empty() {
            // bio2zarr sizes variant_contig by the contig count.
            let col = self.set.arrays[0].column;
            let n = self.schema.contigs.len() as i64;
            self.stats.columns[col].max = self.stats.columns[col].max.max(n);
        }
        self.stats.max_alleles = self.stats.max_alleles.max(batch.max_alleles);
        self.stats.max_ploidy = self.stats.max_ploidy.max(batch.max_ploidy);
        let layouts = self.layouts();
        self.check_widths(&batch, &layouts)?;
        let codecs = self.codecs_for(&layouts)?;
        let vc = self.geometry.variants_chunk;
        svar2_store::region::push_rows(batch.first / vc, &batch.loci, &mut self.region);
        let tasks = chunk_tasks(
            &self.set,
            self.n_samples(),
            self.geometry.samples_chunk as usize,
        );
        Ok(Admitted {
            batch,
            layouts,
            codecs,
            tasks,
            n_samples: self.n_samples(),
        })
    }

    /// Writes an admitted batch's encoded chunks to their shards' partial files and
    /// finishes the shard row it completes (in parallel on `pool`, else on the current
    /// rayon pool).
    pub(crate) fn commit(
        &mut self,
        placed: Placed,
        encoded: Encoded,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<()> {
        let Placed {
            first,
            records,
            layouts,
            tasks,
            absent,
        } = placed;
        let vc = self.geometry.variants_chunk as usize;
        let ips = self.inner_per_shard();
        let inner_row = ((first / vc as u64) % ips as u64) as usize;
        let chunk_index = first / vc as u64;
        let row_index = chunk_index / ips as u64;
        let n_arrays = self.set.arrays.len();
        let mut open = self.open.remove(&row_index).unwrap_or_else(|| OpenRow {
            slots: vec![Vec::new(); n_arrays],
            absent: vec![None; n_arrays],
            ..OpenRow::default()
        });
        // Encoded chunks go straight to their shard's partial file, in a fixed order,
        // so memory never holds more than the batches in flight of encoded bytes.
        let cps = self.chunks_per_sample_shard();
        let mut appends: std::collections::BTreeMap<(usize, usize), Vec<Vec<u8>>> =
            Default::default();
        for (&(a, k), r) in tasks.iter().zip(encoded) {
            let n_sc = self.sample_chunks(&self.set.arrays[a]);
            let mut tail = None;
            let span = match r? {
                None => None,
                Some(bytes) => {
                    tail = Some(svar2_store::written::last4(&bytes));
                    let j = k / cps;
                    let off = open.part_len.entry((a, j)).or_insert(0);
                    let span = (*off, bytes.len() as u64);
                    *off += bytes.len() as u64;
                    appends.entry((a, j)).or_default().push(bytes);
                    Some(span)
                }
            };
            let row = &mut open.slots[a];
            if row.is_empty() {
                row.resize(ips * n_sc, None);
            }
            row[inner_row * n_sc + k] = Some(Slot {
                span,
                layout: layouts[a],
                tail,
            });
        }
        // Each partial file's chunks appended in order, the files side by side on the
        // pool: the writes of an input's last batch were a serial tail (35 ms of
        // fmt2000.bcf's 0.9 s with the encoders idle).
        let appends: Vec<(PathBuf, Vec<Vec<u8>>)> = appends
            .into_iter()
            .map(|((a, j), chunks)| (self.part_path(row_index, a, j), chunks))
            .collect();
        let write = |(path, chunks): &(PathBuf, Vec<Vec<u8>>)| append(path, chunks);
        match pool {
            Some(pool) => pool.install(|| appends.par_iter().try_for_each(write))?,
            None => appends.iter().try_for_each(write)?,
        }
        for (a, rows) in absent {
            let bits = open.absent[a].get_or_insert_with(|| {
                vec![0u64; (self.geometry.variants_shard as usize).div_ceil(64)]
            });
            for r in rows {
                let i = inner_row * vc + r;
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        self.records += records as u64;
        open.records += records as u64;
        if open.records == self.geometry.variants_shard {
            match pool {
                Some(pool) => pool.install(|| self.flush_row(row_index, open))?,
                None => self.flush_row(row_index, open)?,
            }
        } else {
            self.open.insert(row_index, open);
        }
        Ok(())
    }

    /// The arrays and geometry encoding needs, for encoders that run while the
    /// writer admits and commits other batches.
    pub(crate) fn encoding_context(&self) -> (ArraySet, Geometry) {
        (self.set.clone(), self.geometry)
    }

    /// Refuses a layout whose inner chunks no longer fit the memory budget. An array
    /// is as wide as its widest record, so one record with a million values makes
    /// every chunk of that array a million wide; each encoding thread holds one such
    /// chunk and its encoded copy.
    fn check_widths(&self, batch: &Batch, layouts: &[Layout]) -> Result<()> {
        let fill = Fill::of(batch, &self.set, layouts);
        if self.rows.admit(fill, batch) {
            return Ok(());
        }
        // The array wider than planned whose chunks grew the most, if any.
        let wider = self
            .set
            .arrays
            .iter()
            .zip(layouts)
            .filter_map(|(spec, l)| Some((spec, l, l.width?)))
            .filter(|(spec, _, width)| u64::from(*width) > spec.planned_width())
            .max_by_key(|(spec, l, width)| {
                let cells = if spec.per_sample {
                    self.n_samples() as u64
                } else {
                    1
                };
                let size = l.dtype.size().unwrap_or(16) as u64;
                (u64::from(*width) - spec.planned_width()) * cells * size
            });
        let Some((spec, l, width)) = wider else {
            // Longer text, or wider dtypes: every chunk of the row laid out wider.
            let last = batch.loci.last();
            let locus = last
                .map(|&(rid, pos, _)| format!("{}:{pos}", self.schema.contig_label(rid as i64)))
                .unwrap_or_default();
            return Err(svar2_vcf::Error::Record {
                path: self.input_of(last.map_or(-1, |l| l.0)),
                record: batch.first + batch.len() as u64,
                locus,
                msg: format!(
                    "records here lay out {} a sample in every chunk row (the plan measured \
                     {} on the input's first records: longer text, wider values), which with \
                     the rows in flight does not fit --max-mem {}; {}",
                    svar2_planner::size::human(self.rows.cells(fill).0),
                    svar2_planner::size::human(self.rows.cells(fill).1),
                    svar2_planner::size::human(self.rows.budget),
                    self.rows.advice(fill),
                ),
            }
            .into());
        };
        let shape = self.inner_shape(spec, l);
        let chunk = shape.iter().product::<u64>() * l.dtype.size().unwrap_or(16) as u64;
        // The first record of this batch that is this wide (`widths` holds one width
        // per record, whatever the cells per record). None is, where the width is the
        // store's dimension (Number=G: the most alleles at the most ploidy seen, maybe
        // in different records): the batch's first is named.
        let widest = batch.columns[spec.column]
            .widths
            .iter()
            .position(|&w| w >= width);
        let at = batch.loci.get(widest.unwrap_or(0));
        let locus = at
            .map(|&(rid, pos, _)| format!("{}:{pos}", self.schema.contig_label(rid as i64)))
            .unwrap_or_else(|| "header".into());
        let why = match widest {
            Some(_) => String::new(),
            None => " (the dimension the alleles and ploidy seen so far give it)".into(),
        };
        // A larger budget alone moves the goal: the plan then chooses longer chunk
        // rows. Name the rows that fit this budget, and pin them with a larger one.
        Err(svar2_vcf::Error::Record {
            path: self.input_of(at.map_or(-1, |l| l.0)),
            record: batch.first + widest.unwrap_or(0) as u64 + 1,
            locus,
            msg: format!(
                "{} is {width} values wide here{why}; every inner chunk of it would hold {} \
                 ({}), which with the rows in flight does not fit --max-mem {}. Drop the \
                 field (`bcftools annotate -x`), or {}",
                spec.name,
                shape
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(" x "),
                svar2_planner::size::human(chunk),
                svar2_planner::size::human(self.rows.budget),
                self.rows.advice(fill),
            ),
        }
        .into())
    }
}

/// Appends byte runs to a file in order, creating it (and its directory) if needed.
fn append<B: AsRef<[u8]>>(path: &Path, runs: &[B]) -> Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| runs.iter().try_for_each(|r| f.write_all(r.as_ref())))
        .map_err(|e| Error::io(path, e))
}
