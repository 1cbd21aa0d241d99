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
        let vc = self.geometry.variants_chunk as usize;
        let n_samples = self.n_samples();
        // The decoded chunk is its own column: samples are chunk-relative (s0 = 0).
        let (ns, cols) = if spec.per_sample {
            let samples_chunk = self.geometry.samples_chunk as usize;
            (
                samples_chunk.min(n_samples.saturating_sub(k * samples_chunk)),
                samples_chunk,
            )
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
    /// Writes one shard of array `a` under layout `new` to `out`, chunk by chunk: a
    /// chunk already in it is copied as it is, any other is decoded under its old
    /// layout and laid out again (a stored-nothing chunk too: absent records read back
    /// differently under a wider layout). Old chunks are read one at a time at their
    /// spans in `source` (file, path) and new ones streamed to a temporary file, so a
    /// thread holds one chunk in and one out, not the shard. `parts` is in the shard's
    /// C order (`[inner row][sample chunk of ks]`); `records` = (the shard's first
    /// record, the end of the array's records). `clear` runs once every old chunk is
    /// read and before the new shard is moved into place (it removes an old shard file
    /// that may sit where the new shard's directory goes). Returns whether a shard was
    /// written (none when every chunk is fill).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn relay_shard(
        &self,
        a: usize,
        source: Option<(&std::fs::File, &Path)>,
        parts: &[Option<Part>],
        new: &Layout,
        (first, end): (u64, u64),
        ks: &[usize],
        absent: &Option<Vec<u64>>,
        out: &Path,
        clear: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        use std::io::Write;
        use std::os::unix::fs::FileExt;
        let spec = &self.set.arrays[a];
        let new_codec = &self.codecs[&(new.dtype, spec.bitshuffle)];
        let vc = self.geometry.variants_chunk as usize;
        // Beside the array's chunk directory, never under the new shard's path (whose
        // parent may still be the old shard file).
        let rel = out.strip_prefix(&self.store.root).unwrap_or(out);
        let tmp = self.store.root.join(&spec.name).join(format!(
            ".relay.{}",
            rel.to_string_lossy().replace('/', ".")
        ));
        let mut writer: Option<std::io::BufWriter<std::fs::File>> = None;
        let mut spans = Vec::with_capacity(parts.len());
        // Each stored chunk's last four bytes, for the store's record of the chunks.
        let mut tails = Vec::with_capacity(parts.len());
        let mut at = 0u64;
        let mut old = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let chunk = match part {
                None => None,
                Some(p) => {
                    let bytes = match (p.span, source) {
                        (Some((o, n)), Some((f, path))) => {
                            old.resize(n as usize, 0);
                            f.read_exact_at(&mut old, o)
                                .map_err(|e| Error::io(path, e))?;
                            Some(old.as_slice())
                        }
                        _ => None,
                    };
                    if p.layout == *new {
                        bytes.map(<[u8]>::to_vec)
                    } else {
                        let (vi, kk) = (i / ks.len(), i % ks.len());
                        let off = vi * vc;
                        let old_codec = &self.codecs[&(p.layout.dtype, spec.bitshuffle)];
                        self.transcode(
                            a,
                            bytes,
                            &p.layout,
                            new,
                            old_codec,
                            new_codec,
                            first + off as u64,
                            end,
                            ks[kk],
                            &|r| bit(absent, off + r),
                        )?
                    }
                }
            };
            tails.push(chunk.as_deref().map(svar2_store::written::last4));
            spans.push(match chunk {
                None => None,
                Some(c) => {
                    if writer.is_none() {
                        if let Some(dir) = tmp.parent() {
                            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                        }
                        let f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
                        writer = Some(std::io::BufWriter::new(f));
                    }
                    let w = writer.as_mut().expect("opened above");
                    w.write_all(&c).map_err(|e| Error::io(&tmp, e))?;
                    let span = (at, c.len() as u64);
                    at += c.len() as u64;
                    Some(span)
                }
            });
        }
        let Some(mut w) = writer else {
            clear()?;
            return Ok(false);
        };
        w.write_all(&shard::index(&spans))
            .and_then(|()| w.flush())
            .map_err(|e| Error::io(&tmp, e))?;
        drop(w);
        clear()?;
        self.store.rename(&tmp, out)?;
        self.note_chunks(out, spans.iter().zip(&tails).map(|(s, t)| Some((*s, *t))));
        Ok(true)
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
                    // The old shard's index, read from its tail alone; its chunks are
                    // then read one at a time.
                    let n = ips * ks.len();
                    let source = match std::fs::File::open(&old_path) {
                        Ok(f) => Some(f),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                        Err(e) => return Err(Error::io(&old_path, e)),
                    };
                    let spans = match &source {
                        Some(f) => {
                            use std::os::unix::fs::FileExt;
                            let len = f.metadata().map_err(|e| Error::io(&old_path, e))?.len();
                            let tail_len = shard::index_len(n).min(len as usize);
                            let mut tail = vec![0u8; tail_len];
                            f.read_exact_at(&mut tail, len - tail_len as u64)
                                .map_err(|e| Error::io(&old_path, e))?;
                            let key = old_path.strip_prefix(&this.store.root).unwrap_or(&old_path);
                            shard::parse_index(&key.to_string_lossy(), &tail, n, len)?
                        }
                        None => vec![None; n],
                    };
                    // Sample chunks past the last sample are not part of the array.
                    let parts: Vec<Option<Part>> = spans
                        .iter()
                        .enumerate()
                        .map(|(i, &span)| {
                            (ks[i % ks.len()] < n_sc).then_some(Part {
                                span,
                                layout: info.layout,
                            })
                        })
                        .collect();
                    let first = r * this.geometry.variants_shard;
                    let wrote = this.relay_shard(
                        a,
                        source.as_ref().map(|f| (f, old_path.as_path())),
                        &parts,
                        &finals[a],
                        (first, this.records),
                        &ks,
                        &info.absent,
                        &new_path,
                        || match std::fs::remove_file(&old_path) {
                            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                                Err(Error::io(&old_path, e))
                            }
                            _ => Ok(()),
                        },
                    )?;
                    written += u64::from(wrote);
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
