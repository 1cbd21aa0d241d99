//! The writer's part in a partitioned conversion. A partition finishes the shard
//! rows that hold only its records and hands the rest — rows it shares with a
//! neighbour, as fragments (its encoded chunks and where they are), and what decides
//! the final layouts (stats, the layout each row was written under) — to `finalize`,
//! whose writer absorbs every partition's output, completes the shared rows, re-lays
//! outgrown ones and writes the arrays that span partitions, exactly as one process
//! would have.
use super::shards::part_file;
use super::*;
use serde::{Deserialize, Serialize};

/// A [`Layout`] as it is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutRecord {
    /// Zarr v3 `data_type`.
    pub dtype: serde_json::Value,
    pub width: Option<u32>,
}

impl LayoutRecord {
    fn of(l: &Layout) -> LayoutRecord {
        LayoutRecord {
            dtype: l.dtype.json(),
            width: l.width,
        }
    }

    fn layout(&self) -> Result<Layout> {
        let dtype = Dtype::from_json(&self.dtype).ok_or_else(|| {
            Error::Usage(format!(
                "a partition record names data type {}: run the partition again",
                self.dtype
            ))
        })?;
        Ok(Layout {
            dtype,
            width: self.width,
        })
    }
}

/// One finished shard row: per array, the layout it was written under and (for
/// growable arrays) which of its records lacked the field.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowRecord {
    pub row: u64,
    pub layouts: Vec<LayoutRecord>,
    pub absent: Vec<Option<Vec<u64>>>,
}

/// One encoded inner chunk of a shared row: its place in the row (`[inner row][sample
/// chunk]`), its bytes in the partial file (`None`: all fill) and its layout.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SlotRecord {
    pub slot: usize,
    pub span: Option<(u64, u64)>,
    pub layout: LayoutRecord,
}

/// A partition's part of a shard row it shares with another partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fragment {
    pub row: u64,
    pub records: u64,
    /// Per array, the chunks it encoded.
    pub slots: Vec<Vec<SlotRecord>>,
    pub absent: Vec<Option<Vec<u64>>>,
    /// (array, sample shard, bytes) of each partial file it wrote for the row.
    pub parts: Vec<(usize, usize, u64)>,
}

/// What a partition leaves for `finalize`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartitionOutput {
    /// Records encoded (those of chunks shared with a neighbour are not: they are
    /// spilled whole, see `spill`).
    pub records: u64,
    pub stats: Stats,
    pub rows: Vec<RowRecord>,
    pub region: Vec<[i64; 6]>,
    pub fragments: Vec<Fragment>,
}

impl Writer {
    /// Puts shards' partial files under `dir` instead of the store.
    pub(crate) fn set_parts_dir(&mut self, dir: PathBuf) {
        self.parts = dir;
    }

    /// Ends a partition: rows `owns` says are its own are finished; the others become
    /// fragments (their partial files stay in the parts directory).
    pub(crate) fn finish_partition(
        &mut self,
        owns: impl Fn(u64) -> bool,
    ) -> Result<PartitionOutput> {
        let mut fragments = Vec::new();
        while let Some((row, open)) = self.open.pop_first() {
            if owns(row) {
                self.flush_row(row, open)?;
                continue;
            }
            let mut parts: Vec<(usize, usize, u64)> = open
                .part_len
                .iter()
                .map(|(&(a, j), &n)| (a, j, n))
                .collect();
            parts.sort_unstable();
            fragments.push(Fragment {
                row,
                records: open.records,
                slots: open
                    .slots
                    .iter()
                    .map(|slots| {
                        slots
                            .iter()
                            .enumerate()
                            .filter_map(|(slot, s)| {
                                s.as_ref().map(|s| SlotRecord {
                                    slot,
                                    span: s.span,
                                    layout: LayoutRecord::of(&s.layout),
                                })
                            })
                            .collect()
                    })
                    .collect(),
                absent: open.absent,
                parts,
            });
        }
        let rows = self.history[0]
            .keys()
            .map(|&row| RowRecord {
                row,
                layouts: self
                    .history
                    .iter()
                    .map(|h| LayoutRecord::of(&h[&row].layout))
                    .collect(),
                absent: self
                    .history
                    .iter()
                    .map(|h| h[&row].absent.clone())
                    .collect(),
            })
            .collect();
        Ok(PartitionOutput {
            records: self.records,
            stats: self.stats.clone(),
            rows,
            region: std::mem::take(&mut self.region),
            fragments,
        })
    }

    /// Takes in a partition's output: its stats, rows, region rows and records.
    /// Fragments are added apart ([`Writer::add_fragment`]), once every partition's
    /// stats are in, so shared rows are laid out under the final layouts.
    pub(crate) fn absorb(&mut self, out: &PartitionOutput) -> Result<()> {
        let n = self.set.arrays.len();
        let bad = |what: &str| {
            Error::Usage(format!(
                "a partition record does not match this plan's arrays ({what}): run the \
                 partition again"
            ))
        };
        if out.stats.columns.len() != self.stats.columns.len() {
            return Err(bad("columns"));
        }
        self.stats.merge(&out.stats);
        self.records += out.records;
        self.region.extend_from_slice(&out.region);
        for r in &out.rows {
            if r.layouts.len() != n || r.absent.len() != n {
                return Err(bad("arrays"));
            }
            for (a, (l, absent)) in r.layouts.iter().zip(&r.absent).enumerate() {
                let info = RowInfo {
                    layout: l.layout()?,
                    absent: absent.clone(),
                };
                if self.history[a].insert(r.row, info).is_some() {
                    return Err(bad(&format!("shard row {} written twice", r.row)));
                }
            }
        }
        Ok(())
    }

    /// Folds in stats of records not yet added (chunks partitions shared), so rows
    /// are laid out under the final layouts.
    pub(crate) fn note_stats(&mut self, s: &Stats) {
        self.stats.merge(s);
    }

    /// The shard files of the rows a partition finished (relative path, bytes): what
    /// `finalize` checks are still whole.
    pub(crate) fn written_files(&self, out: &PartitionOutput) -> Result<Vec<(String, u64)>> {
        let cps = self.chunks_per_sample_shard();
        let mut files = Vec::new();
        for r in &out.rows {
            for (a, spec) in self.set.arrays.iter().enumerate() {
                let layout = self.history[a][&r.row].layout;
                for j in 0..self.sample_chunks(spec).div_ceil(cps) {
                    let path = self
                        .store
                        .shard_path(&spec.name, &self.shard_indices(spec, &layout, r.row, j));
                    match std::fs::metadata(&path) {
                        Ok(m) => {
                            let rel = path.strip_prefix(&self.store.root).unwrap_or(&path);
                            let rel: Vec<String> = rel
                                .components()
                                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                                .collect();
                            files.push((rel.join("/"), m.len()));
                        }
                        // An all-fill shard is not written.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io(&path, e)),
                    }
                }
            }
        }
        Ok(files)
    }

    /// What a partition found in a shard file it finished (`rel` under the store,
    /// `size` bytes): its chunks' [`ChunkSum`](svar2_store::written::ChunkSum), for the
    /// store's record when finalize finds the file only in the bucket.
    pub(crate) fn shard_chunk_sum(&self, rel: &str, size: u64) -> Option<u64> {
        let (name, rest) = rel.split_once('/')?;
        let spec = self.set.arrays.iter().find(|a| a.name == name)?;
        let per_sample = if spec.per_sample {
            self.chunks_per_sample_shard() as u64
        } else {
            1
        };
        if let Some(sum) = self.store.noted_chunks(rel, size) {
            return Some(sum.0);
        }
        let inner = self.inner_per_shard() as u64 * per_sample;
        let path = self.store.root.join(rel);
        svar2_store::written::shard_sum(&path, size, rest, Some(inner)).map(|s| s.0)
    }

    /// The store being written (finalize notes the shards a bucket already holds).
    pub(crate) fn store(&self) -> &StoreDir {
        &self.store
    }

    /// The shard files (relative paths) of the rows [`outgrown_rows`](Self::outgrown_rows)
    /// counts, as the partitions wrote them (an all-fill shard is not written, so
    /// some may not exist): what finishing reads and replaces.
    pub(crate) fn outgrown_files(&self) -> Vec<String> {
        let finals = self.layouts();
        let cps = self.chunks_per_sample_shard();
        let mut files = Vec::new();
        for ((rows, f), spec) in self.history.iter().zip(&finals).zip(&self.set.arrays) {
            for (&row, info) in rows.iter().filter(|(_, i)| i.layout != *f) {
                for j in 0..self.sample_chunks(spec).div_ceil(cps) {
                    let indices = self.shard_indices(spec, &info.layout, row, j);
                    files.push(svar2_store::key::chunk_key(&spec.name, &indices));
                }
            }
        }
        files
    }

    /// Shard rows some partition wrote under a layout other than the final one
    /// (finishing re-encodes them in place).
    pub(crate) fn outgrown_rows(&self) -> usize {
        let finals = self.layouts();
        self.history
            .iter()
            .zip(&finals)
            .map(|(rows, f)| rows.values().filter(|i| i.layout != *f).count())
            .sum()
    }

    /// Adds a partition's fragment of a shared row: its partial files (under `dir`)
    /// are appended to the row's own and its chunks take their slots.
    pub(crate) fn add_fragment(&mut self, f: &Fragment, dir: &Path) -> Result<()> {
        let n_arrays = self.set.arrays.len();
        let bad = |what: String| {
            Error::Usage(format!(
                "{}: a fragment of shard row {} {what}: run its partition again",
                dir.display(),
                f.row
            ))
        };
        if f.slots.len() != n_arrays || f.absent.len() != n_arrays {
            return Err(bad("does not match this plan's arrays".into()));
        }
        let mut open = self.open.remove(&f.row).unwrap_or_else(|| OpenRow {
            slots: vec![Vec::new(); n_arrays],
            absent: vec![None; n_arrays],
            ..OpenRow::default()
        });
        let mut shift = HashMap::new();
        for &(a, j, len) in &f.parts {
            let spec = self
                .set
                .arrays
                .get(a)
                .ok_or_else(|| bad(format!("names array {a}")))?;
            let src = part_file(dir, &spec.name, f.row, j);
            let dst = self.part_path(f.row, a, j);
            let at = open.part_len.entry((a, j)).or_insert(0);
            shift.insert((a, j), *at);
            let copied = copy_append(&src, &dst)?;
            if copied != len {
                return Err(bad(format!(
                    "has {copied} bytes in {} where its record says {len}",
                    src.display()
                )));
            }
            *at += len;
        }
        let cps = self.chunks_per_sample_shard();
        let ips = self.inner_per_shard();
        for (a, slots) in f.slots.iter().enumerate() {
            let n_sc = self.sample_chunks(&self.set.arrays[a]);
            let row = &mut open.slots[a];
            if row.is_empty() && !slots.is_empty() {
                row.resize(ips * n_sc, None);
            }
            for s in slots {
                let j = (s.slot % n_sc) / cps;
                let span = match s.span {
                    None => None,
                    Some((o, n)) => {
                        let base = shift.get(&(a, j)).ok_or_else(|| {
                            bad(format!("has a chunk of array {a} without its partial file"))
                        })?;
                        Some((o + base, n))
                    }
                };
                match row.get_mut(s.slot) {
                    Some(slot @ None) => {
                        *slot = Some(Slot {
                            span,
                            layout: s.layout.layout()?,
                            tail: None,
                        })
                    }
                    _ => return Err(bad(format!("puts a chunk in slot {} twice", s.slot))),
                }
            }
            if let Some(bits) = &f.absent[a] {
                let mine = open.absent[a].get_or_insert_with(|| vec![0; bits.len()]);
                if mine.len() != bits.len() {
                    return Err(bad("has absent-record bits of another row size".into()));
                }
                mine.iter_mut().zip(bits).for_each(|(m, b)| *m |= b);
            }
        }
        open.records += f.records;
        self.open.insert(f.row, open);
        Ok(())
    }
}

/// Appends `src`'s bytes to `dst` (created with its directory); returns how many.
fn copy_append(src: &Path, dst: &Path) -> Result<u64> {
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    // (A large buffer: where the file system cannot copy in the kernel, io::copy
    // falls back to 8 KiB reads and writes.)
    let mut from = std::io::BufReader::with_capacity(
        1 << 20,
        std::fs::File::open(src).map_err(|e| Error::io(src, e))?,
    );
    let mut to = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dst)
        .map_err(|e| Error::io(dst, e))?;
    std::io::copy(&mut from, &mut to).map_err(|e| Error::io(dst, e))
}
