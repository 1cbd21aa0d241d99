//! Shard assembly: partial files of encoded chunks, finished into `sharding_indexed`
//! shards (index appended and renamed into place, or laid out again in slot order).
use super::*;

/// A shard's partial file under `parts` (the store, or a partition's own directory).
pub(super) fn part_file(parts: &Path, array: &str, row: u64, j: usize) -> PathBuf {
    parts.join(array).join("c").join(format!("{row}.{j}.part"))
}

impl Writer {
    /// Where a shard's chunks accumulate while its row is being written; the final
    /// name depends on the layout, known only when the row is flushed.
    pub(super) fn part_path(&self, row: u64, a: usize, j: usize) -> PathBuf {
        part_file(&self.parts, &self.set.arrays[a].name, row, j)
    }

    /// Finishes every shard of a row: index appended and renamed into place, or
    /// re-encoded when some of its chunks were written under an older layout.
    pub(super) fn flush_row(&mut self, row_index: u64, open: OpenRow) -> Result<()> {
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
        let end_record = row_index * self.geometry.variants_shard + open.records;
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
                    append(&part, &[shard::index(&spans)])?;
                    this.store.rename(&part, &path)?;
                    this.note_chunks(&path, slots.iter().map(|s| s.map(|s| (s.span, s.tail))));
                    return Ok(());
                }
                let src = if stored {
                    Some(std::fs::File::open(&part).map_err(|e| Error::io(&part, e))?)
                } else {
                    None
                };
                let parts: Vec<Option<Part>> = slots
                    .iter()
                    .map(|slot| {
                        slot.map(|s| Part {
                            span: s.span,
                            layout: s.layout,
                        })
                    })
                    .collect();
                let first = row_index * this.geometry.variants_shard;
                let source = src.as_ref().map(|f| (f, part.as_path()));
                this.relay_shard(
                    a,
                    source,
                    &parts,
                    &layouts[a],
                    (first, end_record),
                    &ks,
                    absent,
                    &path,
                    || Ok(()),
                )?;
                if stored {
                    std::fs::remove_file(&part).map_err(|e| Error::io(&part, e))?;
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

    /// Notes, for the store's record of the chunks, what shard file `path` holds:
    /// each inner position's (span, last four bytes) in index order. Nothing is noted
    /// where a stored chunk's bytes were not seen here (a partition's fragment): the
    /// record then reads the file.
    pub(super) fn note_chunks(
        &self,
        path: &Path,
        slots: impl Iterator<Item = Option<(Option<(u64, u64)>, Option<[u8; 4]>)>>,
    ) {
        let Ok(rel) = path.strip_prefix(&self.store.root) else {
            return;
        };
        let key: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let Some((name, rest)) = key.split_first() else {
            return;
        };
        let rest = rest.join("/");
        let mut sum = svar2_store::written::ChunkSum::default();
        for (i, slot) in slots.enumerate() {
            match slot {
                Some((Some(_), Some(tail))) => sum.add(&rest, i as u64, &tail),
                Some((Some(_), None)) => return,
                _ => {}
            }
        }
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        self.store
            .note_chunks(format!("{name}/{rest}"), meta.len(), sum);
    }

    pub(super) fn shard_indices(
        &self,
        spec: &ArraySpec,
        l: &Layout,
        row: u64,
        j: usize,
    ) -> Vec<u64> {
        let mut idx = vec![row];
        if spec.per_sample {
            idx.push(j as u64 + self.later.as_ref().map_or(0, |l| l.first_shard()));
        }
        if l.width.is_some() {
            idx.push(0);
        }
        idx
    }
}
