//! The conversion pipeline: readers fill inner-chunk rows of records (one streaming
//! reader, or readers through the index, see `pieces`), the rayon pool lays them out
//! and encodes every inner chunk straight into its shard's partial file, and each
//! shard row is finished (index appended, renamed into place) when its last record
//! arrives, in whatever order rows complete. Memory holds the raw rows in flight, not
//! shards: encoded chunks are on disk as soon as they exist.

use crate::arrays::{ArraySet, ArraySpec, Dims, Geometry, Layout, Stats};
use crate::chunk::{chunk_tasks, column_from_raw, encode_chunk, materialize, ChunkView};
use crate::column::Batch;
use crate::error::{Error, Result};
use crate::planning::{make_plan, PlanRequest};
use crate::schema::Schema;
use crate::source::VcfReader;
use rayon::prelude::*;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use svar2_planner::PIECES_PER_READER;
use svar2_store::codec::{InnerCodec, Raw};
use svar2_store::dir::{disk_usage, StoreDir};
use svar2_store::metadata::ArrayMeta;
use svar2_store::{shard, Dtype};

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
    let vs = g.variants_shard.max(vc).div_ceil(vc) * vc;
    let sc = g.samples_chunk.max(1).min(n_samples.max(1));
    let s_full = n_samples.max(1).div_ceil(sc) * sc;
    let ss = (g.samples_shard.max(sc).div_ceil(sc) * sc).min(s_full);
    Geometry {
        variants_chunk: vc,
        samples_chunk: sc,
        variants_shard: vs,
        samples_shard: ss,
        zstd_level: g.zstd_level,
    }
}

/// One encoded inner chunk of the current shard row: where it sits in the shard's
/// partial file (`None`: all fill, not stored) and the layout it was encoded under.
#[derive(Clone)]
struct Slot {
    span: Option<(u64, u64)>,
    layout: Layout,
}

/// One inner chunk of a shard being laid out again: its stored bytes (`None`: all
/// fill, not stored) and the layout they were encoded under.
#[derive(Clone, Copy)]
struct Part<'a> {
    bytes: Option<&'a [u8]>,
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
#[derive(Default)]
struct OpenRow {
    /// Per array: the row's inner chunks, `[inner row][sample chunk]`.
    slots: Vec<Vec<Option<Slot>>>,
    /// Bytes already appended to each (array, sample shard) partial file of the row.
    part_len: HashMap<(usize, usize), u64>,
    /// Per growable array: records (row-relative) whose field was absent.
    absent: Vec<Option<Vec<u64>>>,
    records: u64,
}

struct Writer {
    input: PathBuf,
    /// `--max-mem`, the plan's predicted peak and the encoding threads: wide records
    /// are checked against what the plan left over.
    budget: u64,
    planned_peak: u64,
    threads: usize,
    schema: Schema,
    set: ArraySet,
    g: Geometry,
    store: StoreDir,
    stats: Stats,
    codecs: HashMap<(Dtype, bool), Arc<InnerCodec>>,
    records: u64,
    open: std::collections::BTreeMap<u64, OpenRow>,
    /// Per array, per finished shard row: the layout it was written under.
    history: Vec<std::collections::BTreeMap<u64, RowInfo>>,
    /// Region index rows, each tagged with its inner chunk (sorted at the end).
    region: Vec<[i64; 6]>,
    rewritten: u64,
}

impl Writer {
    fn n_samples(&self) -> usize {
        self.schema.samples.len()
    }
    fn inner_per_shard(&self) -> usize {
        (self.g.variants_shard / self.g.variants_chunk) as usize
    }
    fn sample_chunks(&self, a: &ArraySpec) -> usize {
        if a.per_sample {
            (self.n_samples() as u64)
                .div_ceil(self.g.samples_chunk)
                .max(1) as usize
        } else {
            1
        }
    }
    fn chunks_per_sample_shard(&self) -> usize {
        (self.g.samples_shard / self.g.samples_chunk) as usize
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
        let c = Arc::new(InnerCodec::new(dtype, bitshuffle, self.g.zstd_level)?);
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
        a.shapes(l, 0, self.n_samples() as u64, &self.g)[2].clone()
    }

    /// Encodes one inner-chunk row of records into the current shard row and hands
    /// the batch back for reuse.
    fn add_batch(&mut self, batch: Batch) -> Result<Batch> {
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
        let vc = self.g.variants_chunk as usize;
        let sc = self.g.samples_chunk as usize;
        let n_samples = self.n_samples();
        let ips = self.inner_per_shard();
        let inner_row = ((batch.first / vc as u64) % ips as u64) as usize;
        let chunk_index = batch.first / vc as u64;
        let row_index = chunk_index / ips as u64;
        let n_arrays = self.set.arrays.len();
        let mut open = self.open.remove(&row_index).unwrap_or_else(|| OpenRow {
            slots: vec![Vec::new(); n_arrays],
            absent: vec![None; n_arrays],
            ..OpenRow::default()
        });

        // Region index rows: one per run of one contig within this inner chunk.
        let mut i = 0;
        while i < batch.loci.len() {
            let (contig, start, _) = batch.loci[i];
            let mut j = i;
            let mut max_end = i64::MIN;
            while j < batch.loci.len() && batch.loci[j].0 == contig {
                max_end = max_end.max(batch.loci[j].2);
                j += 1;
            }
            let end = batch.loci[j - 1].1;
            self.region.push([
                chunk_index as i64,
                contig as i64,
                start,
                end,
                max_end,
                (j - i) as i64,
            ]);
            i = j;
        }

        let tasks = chunk_tasks(&self.set, n_samples, sc);
        let (set, g) = (&self.set, &self.g);
        let results: Vec<Result<Option<Vec<u8>>>> = tasks
            .par_iter()
            .map(|&(a, k)| encode_chunk(set, &batch, &layouts[a], &codecs[a], g, n_samples, a, k))
            .collect();
        // Encoded chunks go straight to their shard's partial file, in a fixed order,
        // so memory never holds more than one inner-chunk row of encoded bytes.
        let cps = self.chunks_per_sample_shard();
        for (&(a, k), r) in tasks.iter().zip(results) {
            let n_sc = self.sample_chunks(&self.set.arrays[a]);
            let span = match r? {
                None => None,
                Some(bytes) => {
                    let j = k / cps;
                    let path = self.part_path(row_index, a, j);
                    let off = open.part_len.entry((a, j)).or_insert(0);
                    append(&path, &bytes)?;
                    let span = (*off, bytes.len() as u64);
                    *off += bytes.len() as u64;
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
            });
        }
        for (a, spec) in self.set.arrays.iter().enumerate() {
            if !spec.growable() {
                continue;
            }
            let col = &batch.columns[spec.column];
            for (r, &w) in col.widths.iter().enumerate() {
                if w == 0 {
                    let i = inner_row * vc + r;
                    let bits = open.absent[a].get_or_insert_with(|| {
                        vec![0u64; (self.g.variants_shard as usize).div_ceil(64)]
                    });
                    bits[i / 64] |= 1 << (i % 64);
                }
            }
        }
        self.records += batch.len() as u64;
        open.records += batch.len() as u64;
        if open.records == self.g.variants_shard {
            self.flush_row(row_index, open)?;
        } else {
            self.open.insert(row_index, open);
        }
        Ok(batch)
    }

    /// Refuses a layout whose inner chunks no longer fit the memory budget. An array
    /// is as wide as its widest record, so one record with a million values makes
    /// every chunk of that array a million wide; each encoding thread holds one such
    /// chunk and its encoded copy.
    fn check_widths(&self, batch: &Batch, layouts: &[Layout]) -> Result<()> {
        for (spec, l) in self.set.arrays.iter().zip(layouts) {
            let Some(width) = l.width else { continue };
            let planned = spec.planned_width();
            if u64::from(width) <= planned {
                continue;
            }
            let shape = self.inner_shape(spec, l);
            let chunk = shape.iter().product::<u64>() * l.dtype.size().unwrap_or(16) as u64;
            // What the plan did not budget: the chunk's width beyond the planned one.
            let excess = chunk - chunk / u64::from(width) * planned;
            let need = self
                .planned_peak
                .saturating_add(excess.saturating_mul(2 * self.threads as u64));
            if need <= self.budget {
                continue;
            }
            let col = &batch.columns[spec.column];
            let widest = col
                .widths
                .iter()
                .enumerate()
                .max_by_key(|&(_, w)| *w)
                .filter(|&(_, &w)| w >= width)
                .map(|(i, _)| i / col.per_record.max(1));
            let locus = widest
                .and_then(|r| batch.loci.get(r))
                .map(|&(rid, pos, _)| {
                    let name = self
                        .schema
                        .contigs
                        .get(rid as usize)
                        .map_or("?", |c| &c.name);
                    format!("{name}:{pos}")
                })
                .unwrap_or_else(|| "header".into());
            return Err(Error::Record {
                path: self.input.clone(),
                record: batch.first + widest.unwrap_or(0) as u64 + 1,
                locus,
                msg: format!(
                    "{} is {width} values wide here; every inner chunk of it would hold {} \
                     ({}), which does not fit --max-mem {}. Drop the field (`bcftools \
                     annotate -x`), or pass a smaller --variants-chunk or a larger --max-mem \
                     (about {})",
                    spec.name,
                    shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" x "),
                    svar2_planner::size::human(chunk),
                    svar2_planner::size::human(self.budget),
                    svar2_planner::size::human(need.saturating_mul(5) / 4)
                ),
            });
        }
        Ok(())
    }

    /// Re-lays one inner chunk from `old` to `new` layout.
    #[allow(clippy::too_many_arguments)]
    fn transcode(
        &self,
        a: usize,
        enc: Option<&[u8]>,
        old: &Layout,
        new: &Layout,
        old_codec: &InnerCodec,
        new_codec: &InnerCodec,
        first_record: u64,
        end_record: u64,
        k: usize,
        absent: &dyn Fn(usize) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let spec = &self.set.arrays[a];
        let vc = self.g.variants_chunk as usize;
        let n_samples = self.n_samples();
        // The decoded chunk is its own column: samples are chunk-relative (s0 = 0).
        let (ns, cols) = if spec.per_sample {
            let sc = self.g.samples_chunk as usize;
            (sc.min(n_samples.saturating_sub(k * sc)), sc)
        } else {
            (1, 1)
        };
        let nr = (end_record.saturating_sub(first_record) as usize).min(vc);
        if nr == 0 || ns == 0 {
            return Ok(None);
        }
        let old_shape = self.inner_shape(spec, old);
        let raw = match enc {
            Some(b) => old_codec.decode(b, &old_shape)?,
            None => {
                let n = old_shape.iter().product::<u64>() as usize;
                match old.dtype.size() {
                    Some(sz) => Raw::Fixed(vec![0; n * sz]),
                    None => Raw::Strings {
                        bytes: Vec::new(),
                        offsets: vec![0; n + 1],
                    },
                }
            }
        };
        let col = column_from_raw(spec, raw, old, vc, cols, absent)?;
        let view = ChunkView {
            r0: 0,
            nr,
            s0: 0,
            ns,
            rows: vc,
            cols,
        };
        let raw = materialize(spec, &col, new, &view);
        if raw.is_fill() {
            return Ok(None);
        }
        Ok(Some(new_codec.encode(&raw, &self.inner_shape(spec, new))?))
    }

    /// Where a shard's chunks accumulate while its row is being written; the final
    /// name depends on the layout, known only when the row is flushed.
    fn part_path(&self, row: u64, a: usize, j: usize) -> PathBuf {
        self.store
            .root
            .join(&self.set.arrays[a].name)
            .join("c")
            .join(format!("{row}.{j}.part"))
    }

    /// Finishes every shard of a row: index appended and renamed into place, or
    /// re-encoded when some of its chunks were written under an older layout.
    fn flush_row(&mut self, row_index: u64, open: OpenRow) -> Result<()> {
        if open.slots.iter().all(|r| r.iter().all(Option::is_none)) {
            return Ok(());
        }
        let layouts = self.layouts();
        // Every codec the row's chunks were (or will be) encoded with.
        self.codecs_for(&layouts)?;
        let mut keys = Vec::new();
        for (a, row) in open.slots.iter().enumerate() {
            for s in row.iter().flatten() {
                keys.push((s.layout.dtype, self.set.arrays[a].bitshuffle));
            }
        }
        for (d, b) in keys {
            self.codec(d, b)?;
        }
        let cps = self.chunks_per_sample_shard();
        let ips = self.inner_per_shard();
        let end_record = row_index * self.g.variants_shard + open.records;
        // (array, sample shard) jobs.
        let jobs: Vec<(usize, usize)> = self
            .set
            .arrays
            .iter()
            .enumerate()
            .flat_map(|(a, spec)| {
                let n = self.sample_chunks(spec).div_ceil(cps);
                (0..n).map(move |j| (a, j))
            })
            .collect();
        let this = &*self;
        let results: Vec<Result<()>> = jobs
            .par_iter()
            .map(|&(a, j)| {
                let spec = &this.set.arrays[a];
                let n_sc = this.sample_chunks(spec);
                let row = &open.slots[a];
                let absent = &open.absent[a];
                let part = this.part_path(row_index, a, j);
                let ks: Vec<usize> = if spec.per_sample {
                    (j * cps..(j * cps + cps)).collect()
                } else {
                    vec![0]
                };
                let slots: Vec<Option<&Slot>> = (0..ips)
                    .flat_map(|vi| {
                        ks.iter().map(move |&k| {
                            (k < n_sc && !row.is_empty())
                                .then(|| row[vi * n_sc + k].as_ref())
                                .flatten()
                        })
                    })
                    .collect();
                let stored = slots.iter().flatten().any(|s| s.span.is_some());
                let current = slots.iter().flatten().all(|s| s.layout == layouts[a]);
                // Chunks that arrived out of order (concurrent contigs) are rewritten
                // in slot order: the bytes must not depend on arrival.
                let in_order = slots
                    .iter()
                    .filter_map(|s| s.and_then(|s| s.span))
                    .try_fold(0, |at, (o, n)| (o == at).then_some(o + n))
                    .is_some();
                let path = this.store.shard_path(
                    &spec.name,
                    &this.shard_indices(spec, &layouts[a], row_index, j),
                );
                if current && in_order {
                    if !stored {
                        return Ok(());
                    }
                    // Fast path: the chunks on disk are final; add the index and rename.
                    let spans: Vec<Option<(u64, u64)>> =
                        slots.iter().map(|s| s.and_then(|s| s.span)).collect();
                    append(&part, &shard::index(&spans))?;
                    return Ok(this.store.rename(&part, &path)?);
                }
                let data = if stored {
                    std::fs::read(&part).map_err(|e| Error::io(&part, e))?
                } else {
                    Vec::new()
                };
                let parts: Vec<Option<Part>> = slots
                    .iter()
                    .map(|slot| {
                        slot.map(|s| Part {
                            bytes: s.span.map(|(o, n)| &data[o as usize..(o + n) as usize]),
                            layout: s.layout,
                        })
                    })
                    .collect();
                let first = row_index * this.g.variants_shard;
                let chunks =
                    this.relay_shard(a, &parts, &layouts[a], first, end_record, &ks, absent)?;
                if stored {
                    std::fs::remove_file(&part).map_err(|e| Error::io(&part, e))?;
                }
                if let Some(bytes) = shard::assemble(&chunks) {
                    this.store.write(&path, &bytes)?;
                }
                Ok(())
            })
            .collect();
        results.into_iter().collect::<Result<()>>()?;
        for (a, (spec, absent)) in self.set.arrays.iter().zip(open.absent).enumerate() {
            self.history[a].insert(
                row_index,
                RowInfo {
                    layout: layouts[a],
                    absent: if spec.growable() { absent } else { None },
                },
            );
        }
        Ok(())
    }

    fn shard_indices(&self, spec: &ArraySpec, l: &Layout, row: u64, j: usize) -> Vec<u64> {
        let mut idx = vec![row];
        if spec.per_sample {
            idx.push(j as u64);
        }
        if l.width.is_some() {
            idx.push(0);
        }
        idx
    }

    /// Re-encodes shard rows written under a layout that later data outgrew.
    /// The inner chunks of one shard of array `a` under layout `new`: a chunk already
    /// in it is kept as it is, any other is decoded under its old layout and laid out
    /// again (a stored-nothing chunk too: absent records read back differently under
    /// a wider layout). `parts` is in the shard's C order (`[inner row][sample chunk
    /// of ks]`); the shard's records start at `first` and the array's end at `end`.
    #[allow(clippy::too_many_arguments)]
    fn relay_shard(
        &self,
        a: usize,
        parts: &[Option<Part>],
        new: &Layout,
        first: u64,
        end: u64,
        ks: &[usize],
        absent: &Option<Vec<u64>>,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let spec = &self.set.arrays[a];
        let new_codec = &self.codecs[&(new.dtype, spec.bitshuffle)];
        let vc = self.g.variants_chunk as usize;
        parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let Some(p) = part else { return Ok(None) };
                if p.layout == *new {
                    return Ok(p.bytes.map(<[u8]>::to_vec));
                }
                let (vi, kk) = (i / ks.len(), i % ks.len());
                let off = vi * vc;
                let old_codec = &self.codecs[&(p.layout.dtype, spec.bitshuffle)];
                self.transcode(
                    a,
                    p.bytes,
                    &p.layout,
                    new,
                    old_codec,
                    new_codec,
                    first + off as u64,
                    end,
                    ks[kk],
                    &|r| bit(absent, off + r),
                )
            })
            .collect()
    }

    fn rewrite_outgrown(&mut self, finals: &[Layout]) -> Result<()> {
        let mut jobs = Vec::new();
        for (a, rows) in self.history.iter().enumerate() {
            for (&r, info) in rows {
                if info.layout != finals[a] {
                    jobs.push((a, r));
                }
            }
        }
        if jobs.is_empty() {
            return Ok(());
        }
        for &(a, r) in &jobs {
            let bitshuffle = self.set.arrays[a].bitshuffle;
            self.codec(self.history[a][&r].layout.dtype, bitshuffle)?;
            self.codec(finals[a].dtype, bitshuffle)?;
        }
        let cps = self.chunks_per_sample_shard();
        let ips = self.inner_per_shard();
        let this = &*self;
        let counts: Vec<Result<u64>> = jobs
            .par_iter()
            .map(|&(a, r)| {
                let spec = &this.set.arrays[a];
                let info = &this.history[a][&r];
                let n_sc = this.sample_chunks(spec);
                let n_shards = n_sc.div_ceil(cps);
                let mut written = 0;
                for j in 0..n_shards {
                    let old_path = this
                        .store
                        .shard_path(&spec.name, &this.shard_indices(spec, &info.layout, r, j));
                    let new_path = this
                        .store
                        .shard_path(&spec.name, &this.shard_indices(spec, &finals[a], r, j));
                    let ks: Vec<usize> = if spec.per_sample {
                        (j * cps..(j * cps + cps)).collect()
                    } else {
                        vec![0]
                    };
                    let old_bytes = match std::fs::read(&old_path) {
                        Ok(b) => Some(b),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                        Err(e) => return Err(Error::io(&old_path, e)),
                    };
                    let parts = match &old_bytes {
                        Some(b) => {
                            let key = old_path.strip_prefix(&this.store.root).unwrap_or(&old_path);
                            shard::parse(&key.to_string_lossy(), b, ips * ks.len())?
                        }
                        None => vec![None; ips * ks.len()],
                    };
                    // Sample chunks past the last sample are not part of the array.
                    let parts: Vec<Option<Part>> = parts
                        .iter()
                        .enumerate()
                        .map(|(i, &bytes)| {
                            (ks[i % ks.len()] < n_sc).then_some(Part {
                                bytes,
                                layout: info.layout,
                            })
                        })
                        .collect();
                    let first = r * this.g.variants_shard;
                    let chunks = this.relay_shard(
                        a,
                        &parts,
                        &finals[a],
                        first,
                        this.records,
                        &ks,
                        &info.absent,
                    )?;
                    if old_bytes.is_some() {
                        std::fs::remove_file(&old_path).map_err(|e| Error::io(&old_path, e))?;
                    }
                    if let Some(bytes) = shard::assemble(&chunks) {
                        this.store.write(&new_path, &bytes)?;
                        written += 1;
                    }
                }
                Ok(written)
            })
            .collect();
        for c in counts {
            self.rewritten += c?;
        }
        // Arrays whose trailing dimension appeared or vanished leave old directories.
        for &(a, _) in &jobs {
            let spec = &self.set.arrays[a];
            let l = finals[a];
            if l.width.is_none() {
                // Old rows had a trailing index level: c/<row>/<j>/0; nothing is left
                // there now, so drop any empty directories.
                remove_empty_dirs(&self.store.root.join(&spec.name).join("c"));
            }
        }
        Ok(())
    }

    /// Writes a small array that is not on the variants axis as one shard holding
    /// one inner chunk.
    fn write_small(
        &mut self,
        name: &str,
        dims: &[&str],
        shape: &[u64],
        dtype: Dtype,
        raw: Raw,
    ) -> Result<()> {
        let chunk: Vec<u64> = shape.iter().map(|&s| s.max(1)).collect();
        let dim_names: Vec<String> = dims.iter().map(|s| s.to_string()).collect();
        let meta = ArrayMeta {
            shape: shape.to_vec(),
            shard: chunk.clone(),
            inner: chunk.clone(),
            dimension_names: dim_names,
            dtype,
            bitshuffle: false,
            level: self.g.zstd_level,
            description: String::new(),
        };
        self.store.write_json(name, &meta.to_json())?;
        if shape.iter().product::<u64>() == 0 || raw.is_fill() {
            return Ok(());
        }
        let codec = self.codec(dtype, false)?;
        let enc = codec.encode(&raw, &chunk)?;
        let bytes = shard::assemble(&[Some(enc)]).expect("one chunk");
        let path = self.store.shard_path(name, &vec![0; shape.len()]);
        Ok(self.store.write(&path, &bytes)?)
    }

    /// Writes `sample_id` on the same samples grid as the call arrays (readers such as
    /// vcztools take the samples chunk size from it).
    fn write_sample_ids(&mut self) -> Result<()> {
        let samples = self.schema.samples.clone();
        let (sc, ss) = (self.g.samples_chunk as usize, self.g.samples_shard as usize);
        let n = samples.len() as u64;
        let meta = ArrayMeta {
            shape: vec![n],
            shard: vec![ss as u64],
            inner: vec![sc as u64],
            dimension_names: vec!["samples".to_string()],
            dtype: Dtype::Str,
            bitshuffle: false,
            level: self.g.zstd_level,
            description: String::new(),
        };
        self.store.write_json("sample_id", &meta.to_json())?;
        let codec = self.codec(Dtype::Str, false)?;
        for (j, shard_names) in samples.chunks(ss).enumerate() {
            let mut chunks = Vec::new();
            for names in shard_names.chunks(sc) {
                let mut bytes = Vec::new();
                let mut offsets = vec![0];
                for k in 0..sc {
                    if let Some(s) = names.get(k) {
                        bytes.extend_from_slice(s.as_bytes());
                    }
                    offsets.push(bytes.len());
                }
                let raw = Raw::Strings { bytes, offsets };
                chunks.push(if raw.is_fill() {
                    None
                } else {
                    Some(codec.encode(&raw, &[sc as u64])?)
                });
            }
            chunks.resize(ss / sc, None);
            if let Some(bytes) = shard::assemble(&chunks) {
                self.store
                    .write(&self.store.shard_path("sample_id", &[j as u64]), &bytes)?;
            }
        }
        Ok(())
    }

    /// Every array that names a dimension must give it one length, or xarray cannot
    /// open the store. Only a `Number=G` field wider than the genotypes the alleles and
    /// ploidy allow can break this here (A and R are checked per record).
    fn check_shared_dimensions(&self, finals: &[Layout]) -> Result<()> {
        let mut seen: HashMap<&str, (u32, &str)> = HashMap::new();
        // The standard arrays come first, so they set each length.
        for (spec, l) in self.set.arrays.iter().zip(finals) {
            let Some(w) = l.width else { continue };
            let (len, first) = *seen.entry(&spec.trailing_dim).or_insert((w, &spec.name));
            if len != w {
                return Err(Error::Usage(format!(
                    "{}: {} has {w} values per cell where {first} gives dimension `{}` {len}: \
                     a field declared Number=G carries more values than the alleles and \
                     ploidy allow; declare it Number=. (`bcftools reheader`) and convert again",
                    self.input.display(),
                    spec.name,
                    spec.trailing_dim
                )));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        // Only the last row is short, but with concurrent contigs it need not arrive last.
        while let Some((row, open)) = self.open.pop_first() {
            self.flush_row(row, open)?;
        }
        // Rows arrive in any order; each chunk's rows arrived together, in record order.
        self.region.sort_by_key(|r| r[0]);
        let finals = self.layouts();
        self.check_shared_dimensions(&finals)?;
        self.rewrite_outgrown(&finals)?;
        let n = self.records;
        let s = self.n_samples() as u64;
        for (a, spec) in self.set.arrays.iter().enumerate() {
            let meta = spec.metadata(&finals[a], n, s, &self.g);
            self.store.write_json(&spec.name, &meta.to_json())?;
        }
        let strings = |v: Vec<&str>| {
            let mut bytes = Vec::new();
            let mut offsets = vec![0];
            for s in v {
                bytes.extend_from_slice(s.as_bytes());
                offsets.push(bytes.len());
            }
            Raw::Strings { bytes, offsets }
        };
        let schema = self.schema.clone();
        self.write_sample_ids()?;
        let nc = schema.contigs.len() as u64;
        self.write_small(
            "contig_id",
            &["contigs"],
            &[nc],
            Dtype::Str,
            strings(schema.contigs.iter().map(|c| c.name.as_str()).collect()),
        )?;
        // Only when every contig has a length: the array has no missing value, and a
        // −1 would be printed back as `length=-1`, which htslib then drops.
        let unknown: Vec<&str> = schema
            .contigs
            .iter()
            .filter(|c| c.length.is_none())
            .map(|c| c.name.as_str())
            .collect();
        if !unknown.is_empty() && unknown.len() < schema.contigs.len() {
            tracing::warn!(
                "{}: the header gives no length for contig {}{}: contig_length is left out \
                 (add lengths with `bcftools reheader --fai`)",
                self.input.display(),
                unknown[0],
                match unknown.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                }
            );
        }
        if let Some(lengths) = schema.contig_lengths() {
            self.write_small(
                "contig_length",
                &["contigs"],
                &[nc],
                Dtype::I64,
                Raw::Fixed(lengths.iter().flat_map(|l| l.to_le_bytes()).collect()),
            )?;
        }
        let nf = schema.filters.len() as u64;
        self.write_small(
            "filter_id",
            &["filters"],
            &[nf],
            Dtype::Str,
            strings(schema.filters.iter().map(|f| f.id.as_str()).collect()),
        )?;
        self.write_small(
            "filter_description",
            &["filters"],
            &[nf],
            Dtype::Str,
            strings(
                schema
                    .filters
                    .iter()
                    .map(|f| f.description.as_str())
                    .collect(),
            ),
        )?;

        // region_index takes variant_position's type, as bio2zarr does (widened if a
        // max-end would not fit).
        let pos_dtype = finals[self
            .set
            .arrays
            .iter()
            .position(|a| a.name == "variant_position")
            .expect("pos")]
        .dtype;
        let (lo, hi) = self
            .region
            .iter()
            .flatten()
            .fold((0i64, 0i64), |(l, h), &v| (l.min(v), h.max(v)));
        let dtype = match (pos_dtype, Dtype::smallest_int(lo, hi)) {
            (p, r) if r.size() > p.size() => r,
            (p, _) => p,
        };
        let mut bytes = Vec::new();
        for v in self.region.iter().flatten() {
            match dtype {
                Dtype::I8 => bytes.push(*v as i8 as u8),
                Dtype::I16 => bytes.extend_from_slice(&(*v as i16).to_le_bytes()),
                Dtype::I32 => bytes.extend_from_slice(&(*v as i32).to_le_bytes()),
                _ => bytes.extend_from_slice(&v.to_le_bytes()),
            }
        }
        let nr = self.region.len() as u64;
        self.write_small(
            "region_index",
            &["region_index_values", "region_index_fields"],
            &[nr, 6],
            dtype,
            Raw::Fixed(bytes),
        )?;

        let root = json!({
            "zarr_format": 3,
            "node_type": "group",
            "attributes": {
                "vcf_zarr_version": "0.5",
                "source": format!("svar2-{}", env!("CARGO_PKG_VERSION")),
                "vcf_meta_information": schema.meta_information.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "svar2": {
                    "version": env!("CARGO_PKG_VERSION"),
                    "layout": self.g,
                    "blosc_blocksize": svar2_store::codecs::BLOSC_BLOCKSIZE,
                }
            }
        });
        // Written last: its presence is what marks the store complete.
        Ok(self.store.finish(&root)?)
    }
}

/// Appends bytes to a file, creating it (and its directory) if needed.
fn append(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| Error::io(path, e))
}

fn remove_empty_dirs(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// A bar with ETA when the index gave the record count, a spinner otherwise; hidden
/// unless stderr is a terminal.
fn progress_bar(enabled: bool, total: Option<u64>) -> indicatif::ProgressBar {
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
    let t0 = Instant::now();
    // Nothing is written before the output is known to be writable and the plan to fit.
    svar2_store::dir::check_output(output, opts.force)?;
    let report = make_plan(input, &opts.request)?;
    let threads = report.threads;
    tracing::info!(
        cc = report.plan.cc,
        w = report.plan.w,
        predicted_peak_rss = report.plan.predicted_peak_rss,
        budget = report.budget,
        "plan\n{}",
        report.render()
    );
    let mut reader = VcfReader::open(input, threads)?;
    let mut schema = reader.schema.clone();
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
    let mut stats = Stats::new(&set);
    if let Some(a) = set.arrays.iter().find(|a| a.name == "variant_contig") {
        stats.columns[a.column].max = schema.contigs.len() as i64;
    }
    let n_arrays = set.arrays.len();
    let mut w = Writer {
        input: input.into(),
        budget: report.budget,
        planned_peak: report.plan.predicted_peak_rss,
        threads,
        schema: schema.clone(),
        set: set.clone(),
        g,
        store,
        stats,
        codecs: HashMap::new(),
        records: 0,
        open: Default::default(),
        history: (0..n_arrays).map(|_| Default::default()).collect(),
        region: Vec::new(),
        rewritten: 0,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {threads} threads: {e}")))?;
    let pb = progress_bar(opts.progress, report.plan.records);
    let (tx, rx) = crossbeam_channel::bounded::<Result<Batch>>(0);
    // Encoded batches come back to the reader to be refilled: two batches exist in all.
    let (recycle_tx, recycle_rx) = crossbeam_channel::bounded::<Batch>(2);
    let vc = g.variants_chunk as usize;
    let n_samples = schema.samples.len();
    // Readers through the index when the plan asks for more than one stream.
    let (cc, readers) = (report.plan.cc, report.plan.w as usize);
    let counts: Vec<u64> = report.contigs.iter().map(|c| c.cost).collect();
    let parallel = cc > 1 || readers > 1;
    let pieces = (parallel && report.index.is_some())
        .then(|| {
            crate::pieces::plan_pieces(
                input,
                &schema,
                &counts,
                PIECES_PER_READER as usize * readers,
            )
        })
        .flatten();
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
    let mut stitcher = pieces
        .as_ref()
        .map(|_| crate::pieces::Stitcher::new(&set, n_samples, vc, counts.iter().sum()));
    let result = std::thread::scope(|scope| {
        let set_ref = &set;
        if let Some(pieces) = &pieces {
            let (schema_ref, counts_ref, order_ref) = (&schema, &counts, order.as_deref());
            tracing::info!(
                cc,
                readers_per_contig = readers,
                pieces = pieces.len(),
                order = ?opts.contig_order,
                "reading through the index"
            );
            scope.spawn(move || {
                crate::pieces::read_in_pieces(
                    input,
                    schema_ref,
                    set_ref,
                    pieces,
                    counts_ref,
                    order_ref,
                    (cc, readers),
                    vc,
                    &tx,
                );
            });
            drop(reader);
        } else {
            let widths = set.planned_column_widths();
            scope.spawn(move || {
                let mut ex = reader.extractor(set_ref);
                let mut n: u64 = 0;
                loop {
                    let mut batch = match recycle_rx.try_recv() {
                        Ok(mut b) => {
                            b.reset(n);
                            b
                        }
                        Err(_) => {
                            let mut b = Batch::new(&set_ref.columns, n_samples, n);
                            b.reserve(vc, &widths);
                            b
                        }
                    };
                    while batch.len() < vc {
                        match reader.read_into(&mut ex, &mut batch, n) {
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
            let rx = rx;
            for batch in rx.iter() {
                let batch = batch?;
                let n = batch.len() as u64;
                let batch = match &mut stitcher {
                    None => batch,
                    Some(s) => match s.push(batch) {
                        Some(whole) => whole,
                        None => {
                            pb.inc(n);
                            continue;
                        }
                    },
                };
                let batch = w.add_batch(batch)?;
                let _ = recycle_tx.try_send(batch);
                pb.inc(n);
            }
            if let Some(s) = &stitcher {
                if s.pending() > 0 {
                    return Err(Error::Usage(format!(
                        "{}: {} inner chunks were left incomplete; the input changed while \
                         it was read",
                        input.display(),
                        s.pending()
                    )));
                }
            }
            w.finish()
        })
    });
    pb.finish_and_clear();
    result?;
    let listed = report.index.and(report.plan.records);
    if let Some(listed) = listed.filter(|&n| n != w.records) {
        // (Index-driven reading checks each contig and fails; one stream reads it all.)
        tracing::warn!(
            "{}: the index lists {listed} records but {} were read: it is stale, \
             re-index with `bcftools index -f`",
            input.display(),
            w.records
        );
    }
    let (store_bytes, files) = disk_usage(output);
    Ok(Summary {
        records: w.records,
        seconds: t0.elapsed().as_secs_f64(),
        store_bytes,
        files,
        rewritten_shards: w.rewritten,
    })
}
