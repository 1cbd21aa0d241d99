//! Completing the store: array metadata under the final layouts, the small arrays
//! (samples, contigs, filters), the region index, and the root group written last.
use super::*;

impl Writer {
    /// Writes a small array that is not on the variants axis as one shard holding
    /// one inner chunk.
    pub(super) fn write_small(
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
            level: self.geometry.zstd_level,
            attributes: ArrayMeta::described(""),
        };
        self.store.write_json(name, &meta.to_json())?;
        if shape.iter().product::<u64>() == 0 || raw.is_fill() {
            return Ok(());
        }
        let codec = self.codec(dtype, false)?;
        let enc = codec.encode(&raw, &chunk)?;
        Ok(self
            .store
            .write_shard(name, &vec![0; shape.len()], &[Some(enc)])?)
    }

    /// Writes `sample_id` on the same samples grid as the call arrays (readers such as
    /// vcztools take the samples chunk size from it).
    pub(super) fn write_sample_ids(&mut self) -> Result<()> {
        let mut samples = self
            .later
            .as_ref()
            .map_or_else(Vec::new, |l| l.samples_before.clone());
        samples.extend(self.schema.samples.iter().cloned());
        let (samples_chunk, ss) = (
            self.geometry.samples_chunk as usize,
            self.geometry.samples_shard as usize,
        );
        let n = samples.len() as u64;
        let meta = ArrayMeta {
            shape: vec![n],
            shard: vec![ss as u64],
            inner: vec![samples_chunk as u64],
            dimension_names: vec!["samples".to_string()],
            dtype: Dtype::Str,
            bitshuffle: false,
            level: self.geometry.zstd_level,
            attributes: ArrayMeta::described(""),
        };
        self.store.write_json("sample_id", &meta.to_json())?;
        let codec = self.codec(Dtype::Str, false)?;
        for (j, shard_names) in samples.chunks(ss).enumerate() {
            let mut chunks = Vec::new();
            for names in shard_names.chunks(samples_chunk) {
                let mut bytes = Vec::new();
                let mut offsets = vec![0];
                for k in 0..samples_chunk {
                    if let Some(s) = names.get(k) {
                        bytes.extend_from_slice(s.as_bytes());
                    }
                    offsets.push(bytes.len());
                }
                let raw = Raw::Strings { bytes, offsets };
                chunks.push(if raw.is_fill() {
                    None
                } else {
                    Some(codec.encode(&raw, &[samples_chunk as u64])?)
                });
            }
            chunks.resize(ss / samples_chunk, None);
            self.store.write_shard("sample_id", &[j as u64], &chunks)?;
        }
        Ok(())
    }

    /// Every array that names a dimension must give it one length, or xarray cannot
    /// open the store. Only a `Number=G` field wider than the genotypes the alleles and
    /// ploidy allow can break this here (A and R are checked per record).
    pub(super) fn check_shared_dimensions(&self, finals: &[Layout]) -> Result<()> {
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

    pub(crate) fn finish(&mut self) -> Result<()> {
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
        let s = self.total_samples();
        for (a, spec) in self.set.arrays.iter().enumerate() {
            let meta = spec.metadata(&finals[a], n, s, &self.geometry);
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
        // An unknown length is −1 (printed back without `length=`); the array is left
        // out when no contig has one.
        let unknown: Vec<&str> = schema
            .contigs
            .iter()
            .filter(|c| c.length.is_none())
            .map(|c| c.name.as_str())
            .collect();
        if !unknown.is_empty() && unknown.len() < schema.contigs.len() {
            tracing::warn!(
                "{}: the header gives no length for contig {}{}: its contig_length is -1 \
                 (missing; add lengths with `bcftools reheader --fai`)",
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

        let pos_dtype = finals[self
            .set
            .arrays
            .iter()
            .position(|a| a.name == "variant_position")
            .expect("pos")]
        .dtype;
        let (dtype, raw) = svar2_store::region::encode(&self.region, pos_dtype);
        let nr = self.region.len() as u64;
        self.write_small(
            "region_index",
            &["region_index_values", "region_index_fields"],
            &[nr, 6],
            dtype,
            raw,
        )?;

        let mut root = json!({
            "zarr_format": 3,
            "node_type": "group",
            "attributes": {
                "vcf_zarr_version": "0.5",
                "source": format!("svar2-{}", env!("CARGO_PKG_VERSION")),
                "vcf_meta_information": schema.meta_information.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "vcf_header_order": schema.header_order.iter().map(|(k, n)| json!([k.name(), n])).collect::<Vec<_>>(),
                "svar2": {
                    "version": env!("CARGO_PKG_VERSION"),
                    "layout": self.geometry,
                    "blosc_blocksize": svar2_store::chain::BLOSC_BLOCKSIZE,
                }
            }
        });
        if let Some(asked) = &self.requested {
            root["attributes"]["svar2"]["requested"] = asked.clone();
        }
        if let Some(later) = self.later.clone() {
            self.link_earlier_columns(&later)?;
        }
        // Written last: its presence is what marks the store complete.
        Ok(self.store.finish(&root)?)
    }

    /// Links the existing store's shard files of the sample columns before those
    /// written (no byte copied), so the store's record of its shards counts them,
    /// with the chunk sums checking the store found in them.
    fn link_earlier_columns(&mut self, later: &crate::later::LaterColumns) -> Result<()> {
        let first = later.first_shard();
        for spec in self.set.arrays.iter().filter(|a| a.per_sample) {
            let rows = later.store.join(&spec.name).join("c");
            let Ok(entries) = std::fs::read_dir(&rows) else {
                continue;
            };
            for row in entries {
                let row = row.map_err(|e| Error::io(&rows, e))?;
                let Some(r) = row.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else {
                    continue;
                };
                for j in 0..first {
                    let from = row.path().join(j.to_string());
                    let to = self.store.shard_path(&spec.name, &[r, j]);
                    link_tree(&from, &to, &mut |linked, size| {
                        let Some(key) = linked
                            .strip_prefix(&later.store)
                            .ok()
                            .and_then(|k| k.to_str())
                        else {
                            return;
                        };
                        if let Some(&(at, sum)) = later.chunk_sums.get(key) {
                            if at == size {
                                self.store.note_chunks(key.to_string(), size, sum);
                            }
                        }
                    })?;
                }
            }
        }
        Ok(())
    }
}

/// Hard-links the file `from` (or every file under the directory `from`) to `to`,
/// telling `linked` of each file linked (its path under `from`, its size); nothing
/// there is nothing linked.
fn link_tree(from: &Path, to: &Path, linked: &mut dyn FnMut(&Path, u64)) -> Result<()> {
    let meta = match std::fs::symlink_metadata(from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(from, e)),
        Ok(m) => m,
    };
    if meta.is_dir() {
        for entry in std::fs::read_dir(from).map_err(|e| Error::io(from, e))? {
            let entry = entry.map_err(|e| Error::io(from, e))?;
            link_tree(&entry.path(), &to.join(entry.file_name()), linked)?;
        }
        return Ok(());
    }
    if !meta.is_file() {
        return Ok(());
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::hard_link(from, to).map_err(|e| Error::io(to, e))?;
    linked(from, meta.len());
    Ok(())
}
