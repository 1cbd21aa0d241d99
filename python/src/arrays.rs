//! Between numpy and the reader: patch lists in, output shapes and dtypes, filling a
//! numpy array's memory in place (a fresh one or the caller's `out=`), and what
//! `store.arrays` says of each array.

use crate::errors;
use crate::wait;
use numpy::{
    PyArray2, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyFixedUnicode, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::atomic::AtomicBool;
use svar2_reader::Patch;
use svar2_store::Dtype;
use svar2_zarr::AnyArray;

static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))?
        .bind(py))
}

/// numpy's name for an array's data type (None: strings, which patches never read).
pub fn numpy_dtype(d: Dtype) -> Option<&'static str> {
    Some(match d {
        Dtype::Bool => "bool",
        Dtype::I8 => "int8",
        Dtype::I16 => "int16",
        Dtype::I32 => "int32",
        Dtype::I64 => "int64",
        Dtype::F32 => "float32",
        Dtype::Char => "<U1",
        Dtype::Str => return None,
    })
}

/// An (N, 4) integer array (or anything numpy turns into one) as patches, refusing
/// negative values and empty patches before anything is read.
pub fn patches_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Patch>> {
    let shape_error = |got: String| {
        errors::value(format!(
            "patches: expected an (N, 4) integer array of rows (variant start, variant count, \
             sample start, sample count); got {got}"
        ))
    };
    let arr = match obj.cast::<PyArray2<i64>>() {
        Ok(a) => a.clone(),
        Err(_) => {
            let a = numpy(py)?.call_method1("asarray", (obj,))?;
            let a = a
                .cast_into::<PyUntypedArray>()
                .map_err(|_| shape_error("no array".into()))?;
            let kind = a.dtype().kind();
            if !matches!(kind, b'i' | b'u') {
                return Err(shape_error(format!("dtype {}", a.dtype())));
            }
            if a.ndim() != 2 {
                return Err(shape_error(format!("shape {:?}", a.shape())));
            }
            // (uint64 past 2^63 − 1 would wrap negative as int64.)
            if kind == b'u' && a.dtype().itemsize() == 8 && a.len() > 0 {
                let top: u64 = a.call_method0("max")?.extract()?;
                if top > i64::MAX as u64 {
                    return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                        "patches: value {top} is past every array's bounds"
                    )));
                }
            }
            a.call_method1("astype", ("int64",))?
                .cast_into::<PyArray2<i64>>()
                .map_err(|_| shape_error("an array numpy cannot make int64".into()))?
        }
    };
    if arr.shape()[1] != 4 {
        return Err(shape_error(format!("shape {:?}", arr.shape())));
    }
    let ro = arr
        .try_readonly()
        .map_err(|e| errors::value(e.to_string()))?;
    let view = ro.as_array();
    let mut out = Vec::with_capacity(view.nrows());
    for (i, row) in view.rows().into_iter().enumerate() {
        if let Some(v) = row.iter().find(|v| **v < 0) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "patch {i} {:?}: negative value {v}",
                row.to_vec()
            )));
        }
        if row[1] == 0 || row[3] == 0 {
            return Err(errors::value(format!(
                "patch {i} {:?}: a count of 0 (patches hold at least one variant and one sample)",
                row.to_vec()
            )));
        }
        out.push(Patch {
            variant_start: row[0] as u64,
            n_variants: row[1] as u64,
            sample_start: row[2] as u64,
            n_samples: row[3] as u64,
        });
    }
    Ok(out)
}

/// One patch's block shape in the array's axis order: `nv` along variants, `ns`
/// along samples, the other axes whole.
fn block_shape(a: &AnyArray, nv: usize, ns: usize) -> Vec<usize> {
    a.layout
        .dimension_names
        .iter()
        .zip(a.shape())
        .map(|(d, n)| match d.as_str() {
            "variants" => nv,
            "samples" => ns,
            _ => *n as usize,
        })
        .collect()
}

fn has_samples(a: &AnyArray) -> bool {
    a.layout.dimension_names.iter().any(|d| d == "samples")
}

/// The ndarray shape of a batch: (N, *block), every patch of one shape.
pub fn batch_shape(a: &AnyArray, patches: &[Patch]) -> PyResult<Vec<usize>> {
    numpy_dtype(a.dtype).ok_or_else(|| {
        errors::value(format!(
            "{}: a string array; patches are read from numeric arrays (read strings with \
             zarr-python)",
            a.name
        ))
    })?;
    let samples = has_samples(a);
    let first = patches.first().copied().unwrap_or(Patch {
        variant_start: 0,
        n_variants: 1,
        sample_start: 0,
        n_samples: 1,
    });
    if let Some((i, p)) = patches.iter().enumerate().find(|(_, p)| {
        p.n_variants != first.n_variants || (samples && p.n_samples != first.n_samples)
    }) {
        return Err(errors::value(format!(
            "patches: one shape per call (patch 0 is {}x{}, patch {i} is {}x{}); read each shape \
             in its own call",
            first.n_variants, first.n_samples, p.n_variants, p.n_samples
        )));
    }
    let mut shape = vec![patches.len()];
    shape.extend(block_shape(
        a,
        first.n_variants as usize,
        first.n_samples as usize,
    ));
    if patches.is_empty() {
        shape[1] = 0;
    }
    Ok(shape)
}

/// The ndarray shape of a region: (rows, columns, trailing…), or (rows, trailing…).
pub fn region_shape(a: &AnyArray, rows: usize, columns: usize) -> Vec<usize> {
    block_shape(a, rows, columns)
}

/// A zeroed array of the array's dtype (calloc: pages cost nothing until written).
pub fn zeros<'py>(py: Python<'py>, a: &AnyArray, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let dtype = numpy_dtype(a.dtype).ok_or_else(|| errors::value("a string array"))?;
    numpy(py)?.call_method1("zeros", (shape.to_vec(), dtype))
}

macro_rules! typed {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            Dtype::Bool => {
                type $T = bool;
                $body
            }
            Dtype::I8 => {
                type $T = i8;
                $body
            }
            Dtype::I16 => {
                type $T = i16;
                $body
            }
            Dtype::I32 => {
                type $T = i32;
                $body
            }
            Dtype::I64 => {
                type $T = i64;
                $body
            }
            Dtype::F32 => {
                type $T = f32;
                $body
            }
            Dtype::Char => {
                type $T = PyFixedUnicode<1>;
                $body
            }
            Dtype::Str => Err(errors::value("a string array")),
        }
    };
}

/// Fills `target` (an ndarray of exactly `shape` and the array's dtype, C-contiguous
/// and writeable) through `job`, which gets its bytes; the GIL is released meanwhile,
/// and large jobs run where Ctrl-C can cancel them. The array stays borrowed (numpy's
/// borrow flags, as rust-numpy keeps them) for the duration.
pub fn fill<'py>(
    py: Python<'py>,
    target: &Bound<'py, PyAny>,
    a: &AnyArray,
    shape: &[usize],
    cancel: &AtomicBool,
    job: impl FnOnce(&mut [u8]) -> svar2_reader::Result<()> + Send,
) -> PyResult<()> {
    let expect = || {
        format!(
            "out: expected a C-contiguous, writeable numpy array of shape {:?} and dtype {}",
            shape,
            numpy_dtype(a.dtype).unwrap_or("?")
        )
    };
    typed!(a.dtype, T => {
        let arr = target
            .cast::<PyArrayDyn<T>>()
            .map_err(|_| errors::value(format!("{}; got {}", expect(), describe(target))))?;
        if arr.shape() != shape || !arr.is_c_contiguous() {
            return Err(errors::value(format!("{}; got {}", expect(), describe(target))));
        }
        let rw = arr
            .try_readwrite()
            .map_err(|e| errors::value(format!("{}: {e}", expect())))?;
        let len = shape.iter().product::<usize>() * std::mem::size_of::<T>();
        let data = rw.data() as usize;
        let run = move || {
            // SAFETY: `data` is the start of a C-contiguous numpy buffer of exactly
            // `len` bytes (shape and dtype checked above), kept alive and exclusively
            // borrowed by `rw` (rust-numpy's borrow flag) until this call returns; numpy
            // memory is initialised (zeros, or the caller's array).
            let bytes = unsafe { std::slice::from_raw_parts_mut(data as *mut u8, len) };
            job(bytes)
        };
        let r = wait::sized(py, len, cancel, run)?;
        drop(rw);
        r.map_err(errors::reader)
    })
}

fn describe(x: &Bound<'_, PyAny>) -> String {
    match x.cast::<PyUntypedArray>() {
        Ok(a) => format!(
            "shape {:?}, dtype {}{}{}",
            a.shape(),
            a.dtype(),
            if a.is_c_contiguous() {
                ""
            } else {
                ", not C-contiguous"
            },
            if a.getattr("flags")
                .and_then(|f| f.getattr("writeable"))
                .and_then(|w| w.extract::<bool>())
                .unwrap_or(true)
            {
                ""
            } else {
                ", read-only"
            }
        ),
        Err(_) => x
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "an object".into()),
    }
}

/// One array as `store.arrays` shows it.
#[pyclass(frozen, get_all, module = "svar2", name = "ArrayInfo")]
pub struct ArrayInfo {
    /// The array's name (`call_genotype`).
    name: String,
    shape: Vec<u64>,
    /// numpy's name for its data type (`int8`; `str` for strings).
    dtype: String,
    /// Dimension names (`variants`, `samples`, `ploidy`).
    dims: Vec<String>,
    /// The chunk a read decodes (the inner chunk of a sharded array).
    chunks: Vec<u64>,
    /// The shard (one file) of a sharded array, else None.
    shards: Option<Vec<u64>>,
    /// The codec chain, outermost first.
    codecs: String,
    zarr_format: u8,
}

impl ArrayInfo {
    pub fn of(a: &AnyArray) -> ArrayInfo {
        ArrayInfo {
            name: a.name.clone(),
            shape: a.shape().to_vec(),
            dtype: numpy_dtype(a.dtype).unwrap_or("str").to_string(),
            dims: a.layout.dimension_names.clone(),
            chunks: a.chunk_shape(),
            shards: a.layout.shard.clone(),
            codecs: a.layout.codecs.clone(),
            zarr_format: a.layout.zarr_format,
        }
    }
}

#[pymethods]
impl ArrayInfo {
    fn __repr__(&self) -> String {
        let shards = match &self.shards {
            Some(s) => format!("{s:?}"),
            None => "None".into(),
        };
        format!(
            "ArrayInfo(name={:?}, shape={:?}, dtype={:?}, dims={:?}, chunks={:?}, shards={shards})",
            self.name, self.shape, self.dtype, self.dims, self.chunks
        )
    }
}
