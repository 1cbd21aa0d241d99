//! Re-laying shard rows whose layout was outgrown (a wider trailing dimension, a
//! wider integer type) once every record is read, so the store equals one written
//! with the final layouts from the start.
use super::*;

impl Writer {
    /// Re-lays one inner chunk from `old` to `new` layout.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn transcode(
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

    /// Re-encodes shard rows written under a layout that later data outgrew.
    /// The inner chunks of one shard of array `a` under layout `new`: a chunk already
    /// in it is kept as it is, any other is decoded under its old layout and laid out
    /// again (a stored-nothing chunk too: absent records read back differently under
    /// a wider layout). `parts` is in the shard's C order (`[inner row][sample chunk
    /// of ks]`); the shard's records start at `first` and the array's end at `end`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn relay_shard(
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

    pub(super) fn rewrite_outgrown(&mut self, finals: &[Layout]) -> Result<()> {
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
}

/// Removes `dir` and any directories under it that are empty (a store's chunk
/// directories a re-layout left behind).
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
