//! `svar2.Store`: an open VCF Zarr store and its reader (IO threads, decode pool),
//! safe to share between Python threads. Heavy calls release the GIL; results land
//! in numpy arrays without a copy. After a `fork` (a DataLoader worker) the store is
//! reopened in the child, whose copy of the parent's threads does not exist.

use crate::arrays::{self, ArrayInfo};
use crate::errors::{self, Error};
use crate::wait;
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock, RwLock};
use svar2_reader::Reader;
use svar2_zarr::AnyArray;

/// What an open store holds, for the process that opened it.
pub(crate) struct Opened {
    pid: u32,
    pub(crate) store: svar2_reader::Store,
    pub(crate) reader: Arc<Reader>,
    samples: OnceLock<Py<PyTuple>>,
    contigs: OnceLock<Py<PyTuple>>,
}

/// An open VCF Zarr store (svar2's, bio2zarr's v2 or v3, any zarr-python-written
/// one). Open it with `svar2.open(path)`.
#[pyclass(frozen, module = "svar2", name = "Store")]
pub struct Store {
    path: PathBuf,
    threads: Option<usize>,
    io_threads: usize,
    open: RwLock<Option<Arc<Opened>>>,
}

/// Opens the store at `path` for this process; a panic while opening (a damaged
/// store) is `svar2.Error`.
fn open_here(path: &Path, threads: Option<usize>, io_threads: usize) -> PyResult<Opened> {
    wait::guarded(|| open_unguarded(path, threads, io_threads))
}

fn open_unguarded(path: &Path, threads: Option<usize>, io_threads: usize) -> PyResult<Opened> {
    svar2_storage::refuse_url(path).map_err(|e| errors::store(e.into()))?;
    // (`x.vcz.zip/` names the zip file, as on the command line.)
    let path = &svar2_store::replace::without_trailing_slash(path);
    if !svar2_storage::bucket::is_bucket_url(path) && !path.exists() {
        return Err(pyo3::exceptions::PyFileNotFoundError::new_err(format!(
            "{}: no such file or directory",
            path.display()
        )));
    }
    let threads = threads.unwrap_or_else(|| svar2_planner::host::Host::system().cores().usable);
    let reader = Reader::new(threads, io_threads).map_err(errors::reader)?;
    let store = reader
        .install(|| svar2_reader::Store::open(path))
        .map_err(errors::reader)?;
    Ok(Opened {
        pid: std::process::id(),
        store,
        reader: Arc::new(reader),
        samples: OnceLock::new(),
        contigs: OnceLock::new(),
    })
}

impl Store {
    pub(crate) fn open(
        path: PathBuf,
        threads: Option<usize>,
        io_threads: usize,
    ) -> PyResult<Store> {
        // Made absolute before opening: the shards opened later, and a forked child
        // (a DataLoader worker) reopening the store, are found where the store was,
        // whatever `chdir` happens in between.
        // (A URL, one svar2 reads or one it refuses by name, stays as given.)
        let url = path.to_string_lossy().contains("://");
        let path = match url {
            true => path,
            false => std::path::absolute(&path).unwrap_or(path),
        };
        let opened = open_here(&path, threads, io_threads)?;
        Ok(Store {
            path,
            threads,
            io_threads,
            open: RwLock::new(Some(Arc::new(opened))),
        })
    }

    /// The store as this process has it: an error once closed; reopened after a fork.
    pub(crate) fn opened(&self) -> PyResult<Arc<Opened>> {
        let current = self
            .open
            .read()
            .map_err(|_| Error::new_err("the store's lock was poisoned"))?
            .clone();
        let Some(o) = current else {
            return Err(Error::new_err(format!(
                "{}: the store is closed",
                self.path.display()
            )));
        };
        if o.pid == std::process::id() {
            return Ok(o);
        }
        // A forked child: the parent's reader threads are not here. Its handles are
        // left alone (forgotten), and the store opened afresh.
        let fresh = Arc::new(open_here(&self.path, self.threads, self.io_threads)?);
        let mut slot = self
            .open
            .write()
            .map_err(|_| Error::new_err("the store's lock was poisoned"))?;
        if let Some(old) = slot.replace(fresh.clone()) {
            std::mem::forget(old);
        }
        std::mem::forget(o);
        Ok(fresh)
    }

    /// The array `name`, as the reader reads it.
    pub(crate) fn array(&self, name: &str) -> PyResult<(Arc<Opened>, Arc<AnyArray>)> {
        let o = self.opened()?;
        let a = o.store.array(name).map_err(errors::reader)?;
        Ok((o, a))
    }
}

/// Sample columns from names or indices (a list, tuple or numpy array).
pub(crate) fn columns_of(o: &Opened, samples: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let n = o.store.sample_names().len() as i64;
    // (A string iterates as its letters: "S1" would ask for samples "S" and "1".)
    if samples.is_instance_of::<pyo3::types::PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "samples: a list of names or indices, not one string ({})",
            samples.repr()?
        )));
    }
    let mut out = Vec::new();
    for item in samples.try_iter()? {
        let item = item?;
        if let Ok(name) = item.extract::<String>() {
            out.push(o.store.sample_columns(&[&name]).map_err(errors::reader)?[0]);
        } else if let Ok(i) = item.extract::<i64>() {
            if i < 0 || i >= n {
                return Err(PyIndexError::new_err(format!(
                    "sample index {i} is outside the store's {n} samples"
                )));
            }
            out.push(i as u64);
        } else {
            return Err(errors::value(
                "samples: give sample names (str) or sample indices (int)",
            ));
        }
    }
    if out.is_empty() {
        return Err(errors::value("samples: an empty list"));
    }
    Ok(out)
}

/// Variant rows `[first, end)` overlapping a 0-based, half-open region.
fn rows_of(
    py: Python<'_>,
    o: &Opened,
    contig: &str,
    start: i64,
    end: Option<i64>,
) -> PyResult<Vec<u64>> {
    if start < 0 || end.is_some_and(|e| e <= start) {
        return Err(errors::value(format!(
            "region {contig}:{start}-{}: expected 0 <= start < end (0-based, half-open)",
            end.map_or("".into(), |e| e.to_string())
        )));
    }
    // 0-based half-open [start, end) is 1-based inclusive [start + 1, end].
    let end = end.unwrap_or(i64::MAX);
    wait::inline(py, || {
        o.reader.install(|| o.store.locate(contig, start + 1, end))
    })?
    .map_err(errors::reader)
}

#[pymethods]
impl Store {
    /// The store's local path made absolute at open (a forked worker reopens it
    /// there, whatever its working directory), or its `s3://` URL.
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// Sample names, in store order (a tuple; indices into it are sample columns).
    #[getter]
    fn samples(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let o = self.opened()?;
        let t = o.samples.get_or_init(|| {
            PyTuple::new(py, o.store.sample_names())
                .expect("a tuple of str")
                .unbind()
        });
        Ok(t.clone_ref(py))
    }

    /// Contig names, in store order.
    #[getter]
    fn contigs(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let o = self.opened()?;
        let t = o.contigs.get_or_init(|| {
            PyTuple::new(py, o.store.contig_names())
                .expect("a tuple of str")
                .unbind()
        });
        Ok(t.clone_ref(py))
    }

    #[getter]
    fn num_samples(&self) -> PyResult<usize> {
        Ok(self.opened()?.store.sample_names().len())
    }

    #[getter]
    fn num_variants(&self) -> PyResult<u64> {
        let (_, a) = self.array("variant_position")?;
        Ok(a.shape().first().copied().unwrap_or(0))
    }

    /// Every array: name -> ArrayInfo (shape, dtype, dimension names, chunk and shard
    /// shape, codecs).
    #[getter]
    fn arrays<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.opened()?;
        let d = PyDict::new(py);
        for a in &o.store.group().arrays {
            d.set_item(&a.name, ArrayInfo::of(a))?;
        }
        Ok(d)
    }

    /// The root group's attributes (`vcf_zarr_version`, `vcf_meta_information`, …).
    #[getter]
    fn attrs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let o = self.opened()?;
        crate::json::to_py(
            py,
            &serde_json::Value::Object(o.store.group().attributes.clone()),
        )
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.open.read().map(|o| o.is_none()).unwrap_or(true)
    }

    /// Reads a batch of patches of `array` into one ndarray.
    ///
    /// `patches`: an (N, 4) integer array of rows (variant start, variant count,
    /// sample start, sample count), 0-based, all of one shape. With `samples` (names
    /// or indices), sample starts index that list instead of the store's samples.
    /// Returns (N, variants, samples, *trailing) — e.g. (N, 4096, 1, 2) int8 for
    /// `call_genotype` — or (N, variants, *trailing) for arrays without a samples
    /// axis. With `out` (a C-contiguous writeable array of exactly that shape and
    /// dtype) it fills and returns `out`, allocating nothing. Raises IndexError for a
    /// patch outside the array, ValueError for a malformed `patches`, svar2.Error for
    /// a damaged chunk (naming its key). The GIL is released while it reads.
    ///
    /// `device`: where the result lives. None (default): a numpy array. `"cpu"`: a
    /// torch tensor of the reader's own buffer. `"cuda"` (PyTorch's current device) or
    /// `"cuda:N"`: a torch CUDA tensor decoded on that GPU (nvCOMP), complete when
    /// this returns, so any stream may use it (with `samples`, read on the CPU and
    /// copied). Both without a copy (DLPack); torch is imported only then. Without a
    /// usable GPU, svar2.Error names what is missing (the CUDA driver, nvCOMP, NVRTC).
    #[pyo3(signature = (array, patches, out = None, samples = None, device = None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        array: &str,
        patches: &Bound<'py, PyAny>,
        out: Option<Bound<'py, PyAny>>,
        samples: Option<Bound<'py, PyAny>>,
        device: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let target = crate::device::parse(py, device.as_ref())?;
        let (o, a) = self.array(array)?;
        let list = arrays::patches_of(py, patches)?;
        let columns = samples.map(|s| columns_of(&o, &s)).transpose()?;
        let shape = arrays::batch_shape(&a, &list)?;
        if let crate::device::Target::Torch(place) = target {
            if out.is_some() {
                return Err(errors::value(
                    "out= fills a numpy array; device= returns a new tensor: pass one or the other",
                ));
            }
            return crate::device::read_torch(
                py,
                &o.reader,
                &a,
                &list,
                columns.as_deref(),
                &shape,
                place,
            );
        }
        let out = match out {
            Some(buf) => buf,
            None => {
                if columns.is_none() {
                    // A patch outside the array is an IndexError before its output is
                    // allocated (2^40 variants is not a MemoryError).
                    o.reader.batch_bytes(&a, &list).map_err(errors::reader)?;
                }
                arrays::zeros(py, &a, &shape)?
            }
        };
        let reader = o.reader.clone();
        let cancel = AtomicBool::new(false);
        arrays::fill(py, &out, &a, &shape, &cancel, |bytes| match &columns {
            Some(c) => reader.read_batch_columns(&a, &list, c, bytes, &cancel),
            None => reader.read_batch_cancellable(&a, &list, bytes, &cancel),
        })?;
        Ok(out)
    }

    /// The values of a genomic region: `(values, positions)`.
    ///
    /// `start`, `end`: 0-based, half-open (`end=None`: to the contig's end); a record
    /// is included when it overlaps the region, as `bcftools view -r` selects.
    /// `values`: (variants, samples, *trailing) of `array` (default `call_genotype`:
    /// (variants, samples, ploidy) int8, -1 missing, -2 fill); `positions`: int64,
    /// 0-based (VCF POS − 1). `samples`: names or indices, in the order wanted
    /// (default all).
    #[pyo3(signature = (contig, start = 0, end = None, samples = None, array = "call_genotype"))]
    fn region<'py>(
        &self,
        py: Python<'py>,
        contig: &str,
        start: i64,
        end: Option<i64>,
        samples: Option<Bound<'py, PyAny>>,
        array: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<i64>>)> {
        let (o, a) = self.array(array)?;
        let columns = match samples {
            Some(s) => columns_of(&o, &s)?,
            None => (0..o.store.sample_names().len() as u64).collect(),
        };
        let rows = rows_of(py, &o, contig, start, end)?;
        let pos = o.store.array("variant_position").map_err(errors::reader)?;
        let shape = arrays::region_shape(&a, rows.len(), columns.len());
        let values = arrays::zeros(py, &a, &shape)?;
        let reader = o.reader.clone();
        let cancel = AtomicBool::new(false);
        arrays::fill(py, &values, &a, &shape, &cancel, |bytes| {
            svar2_reader::region::read_rows_into(&reader, &a, &rows, &columns, bytes, &cancel)
        })?;
        let positions = wait::inline(py, || -> svar2_reader::Result<Vec<i64>> {
            let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
                return Ok(Vec::new());
            };
            let all = o.reader.install(|| pos.read_rows_i64(*first, last + 1))?;
            Ok(rows.iter().map(|r| all[(r - first) as usize] - 1).collect())
        })?
        .map_err(errors::reader)?;
        Ok((values, PyArray1::from_vec(py, positions)))
    }

    /// Variant rows (int64) overlapping a 0-based, half-open region of `contig`.
    #[pyo3(signature = (contig, start = 0, end = None))]
    fn variant_rows<'py>(
        &self,
        py: Python<'py>,
        contig: &str,
        start: i64,
        end: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let o = self.opened()?;
        let rows = rows_of(py, &o, contig, start, end)?;
        Ok(PyArray1::from_vec(
            py,
            rows.into_iter().map(|r| r as i64).collect(),
        ))
    }

    /// The variant rows (int64, ascending) whose record satisfies `expr`, bcftools'
    /// `-i` expression (`svar2 view -i`'s language: `"QUAL>30 && INFO/DP>10"`,
    /// `"MAF>0.01"`, `'COUNT(GT="het")>5'`; a FORMAT test passes where any sample
    /// does), within a 0-based, half-open region of `contig` (default every record).
    /// A malformed expression or an unknown tag is a ValueError naming its column.
    /// The GIL is released while it reads; Ctrl-C stops it.
    #[pyo3(signature = (expr, contig = None, start = 0, end = None))]
    fn select<'py>(
        &self,
        py: Python<'py>,
        expr: &str,
        contig: Option<&str>,
        start: i64,
        end: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let o = self.opened()?;
        if contig.is_none() && (start != 0 || end.is_some()) {
            return Err(errors::value(
                "select: start and end need a contig (0-based, half-open)",
            ));
        }
        let rows: Vec<u64> = match contig {
            Some(c) => rows_of(py, &o, c, start, end)?,
            None => (0..self.num_variants()?).collect(),
        };
        let filter = wait::guarded(|| {
            let schema = svar2_view::header::schema_of(&o.store).map_err(errors::view)?;
            let columns = (0..schema.samples.len() as u64).collect();
            svar2_view::filter::RecordFilter::new(
                &o.store,
                expr,
                svar2_expr::Logic::Include,
                (schema, columns),
                false,
                true,
            )
            .map_err(errors::view)
        })?;
        let cancel = AtomicBool::new(false);
        let kept = wait::interruptible(py, &cancel, || -> Result<Vec<i64>, svar2_view::Error> {
            let none = svar2_vcf::block::Block::default();
            let mut kept = Vec::new();
            // Runs of consecutive rows, a block at a time.
            let mut at = 0;
            while at < rows.len() {
                if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let mut end = at + 1;
                while end < rows.len() && end - at < 4096 && rows[end] == rows[end - 1] + 1 {
                    end += 1;
                }
                let piece = &rows[at..end];
                let verdicts = filter.verdicts(&o.reader, piece, &none)?;
                kept.extend(
                    piece
                        .iter()
                        .zip(verdicts)
                        .filter(|(_, v)| v.keep)
                        .map(|(&r, _)| r as i64),
                );
                at = end;
            }
            Ok(kept)
        })?
        .map_err(errors::view)?;
        Ok(PyArray1::from_vec(py, kept))
    }

    /// `n` random patches of `shape` (variants, samples) as an (n, 4) int64 array,
    /// drawn as `svar2 bench-read --seed` draws them (epoch 0 is that very list):
    /// variant starts uniform over every start whose patch fits inside one of
    /// `regions` ((contig, start, end) tuples, 0-based half-open; default the whole
    /// store), sample starts uniform in [0, num_samples − samples], where
    /// `num_samples` defaults to the store's (give the length of a sample list).
    #[pyo3(signature = (n, shape = (4096, 1), seed = 7, epoch = 0, regions = None, num_samples = None))]
    #[allow(clippy::too_many_arguments)]
    fn random_patches<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        shape: (u64, u64),
        seed: u64,
        epoch: u64,
        regions: Option<Vec<(String, i64, Option<i64>)>>,
        num_samples: Option<u64>,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let o = self.opened()?;
        let windows: Vec<std::ops::Range<u64>> = match regions {
            None => std::iter::once(0..self.num_variants()?).collect(),
            Some(rs) => {
                let mut w = Vec::with_capacity(rs.len());
                for (contig, start, end) in rs {
                    let rows = rows_of(py, &o, &contig, start, end)?;
                    if let (Some(a), Some(b)) = (rows.first(), rows.last()) {
                        w.push(*a..b + 1);
                    }
                }
                w
            }
        };
        let n_samples = num_samples.unwrap_or(o.store.sample_names().len() as u64);
        let seed = svar2_reader::patch::epoch_seed(seed, epoch);
        let list = wait::guarded(|| {
            svar2_reader::patch::draw_in(n, shape.0, shape.1, &windows, n_samples, seed)
                .map_err(errors::reader)
        })?;
        let flat: Vec<i64> = list
            .iter()
            .flat_map(|p| <[u64; 4]>::from(*p).map(|x| x as i64))
            .collect();
        PyArray1::from_vec(py, flat).reshape([list.len(), 4])
    }

    /// Batches of `patches` read ahead on a background thread (at most `depth`
    /// waiting): an iterator of ndarrays shaped as `read` returns them.
    #[pyo3(signature = (array, patches, batch_size = 256, samples = None, depth = 4))]
    fn read_ahead(
        &self,
        py: Python<'_>,
        array: &str,
        patches: &Bound<'_, PyAny>,
        batch_size: usize,
        samples: Option<Bound<'_, PyAny>>,
        depth: usize,
    ) -> PyResult<crate::batches::Batches> {
        if !(1..=svar2_reader::ahead::MAX_DEPTH).contains(&depth) || batch_size == 0 {
            return Err(errors::value(format!(
                "depth {depth}, batch_size {batch_size}: depth is 1 to {}, batch_size at \
                 least 1",
                svar2_reader::ahead::MAX_DEPTH
            )));
        }
        let (o, a) = self.array(array)?;
        let list = arrays::patches_of(py, patches)?;
        let columns = samples.map(|s| columns_of(&o, &s)).transpose()?;
        wait::guarded(|| {
            crate::batches::Batches::start(o.reader.clone(), a, list, columns, batch_size, depth)
        })
    }

    /// Closes the store: later calls raise svar2.Error. Reads in progress finish.
    fn close(&self) -> PyResult<()> {
        let mut slot = self
            .open
            .write()
            .map_err(|_| Error::new_err("the store's lock was poisoned"))?;
        *slot = None;
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }

    /// Pickles as its path (a DataLoader worker started with `spawn` reopens it).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let open = py.import("svar2")?.getattr("open")?;
        let args = PyTuple::new(
            py,
            [
                self.path().into_pyobject(py)?.into_any(),
                self.threads.into_pyobject(py)?.into_any(),
                self.io_threads.into_pyobject(py)?.into_any(),
            ],
        )?;
        Ok((open, args))
    }

    fn __repr__(&self) -> String {
        match self.opened() {
            Ok(o) => format!(
                "<svar2.Store {} ({} variants x {} samples, {} arrays)>",
                self.path.display(),
                o.store
                    .array("variant_position")
                    .map(|a| a.shape()[0])
                    .unwrap_or(0),
                o.store.sample_names().len(),
                o.store.group().arrays.len()
            ),
            Err(_) => format!("<svar2.Store {} (closed)>", self.path.display()),
        }
    }
}
