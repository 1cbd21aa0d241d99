//! Rust errors as Python exceptions, each carrying the CLI's one-line message:
//! a missing path is `FileNotFoundError`, a patch outside the array `IndexError`, a
//! malformed request `ValueError`, everything else `svar2.Error` — or, where the cause
//! is one a program may handle apart, a subclass of it: `svar2.CorruptStoreError` (a
//! damaged chunk or shard: restore the store), `svar2.InputError` (a VCF/BCF that does
//! not convert: fix or re-download it), `svar2.GpuError` (no usable GPU, or the GPU
//! failed: decode on the CPU).

use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    svar2,
    Error,
    pyo3::exceptions::PyException,
    "Any failure svar2 reports: a damaged chunk (named by its key), a path that is not a \
     VCF Zarr store, an input that does not convert. The message is the CLI's."
);

pyo3::create_exception!(
    svar2,
    CorruptStoreError,
    Error,
    "A store that does not read back: a chunk or shard index damaged (its checksum or \
     frame does not match), named by its key. `svar2 verify` lists every such chunk."
);

pyo3::create_exception!(
    svar2,
    InputError,
    Error,
    "A VCF/BCF input that does not convert: it cannot be opened, its header or a record \
     is malformed (named by file, record number and contig:pos), it was cut short, or \
     inputs cannot be read together (different samples, headers that disagree)."
);

pyo3::create_exception!(
    svar2,
    GpuError,
    Error,
    "No usable GPU (the CUDA driver, nvCOMP or NVRTC is missing: named), or the GPU \
     failed during a decode."
);

/// Whether an I/O error is a missing path.
fn not_found(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

pub fn store(e: svar2_store::Error) -> PyErr {
    match &e {
        svar2_store::Error::Io { source, .. } if not_found(source) => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        svar2_store::Error::Corrupt { .. }
        | svar2_store::Error::Chunk { .. }
        | svar2_store::Error::Storage(svar2_storage::Error::Damaged { .. }) => {
            CorruptStoreError::new_err(e.to_string())
        }
        _ => Error::new_err(e.to_string()),
    }
}

pub fn reader(e: svar2_reader::Error) -> PyErr {
    use svar2_reader::Error as E;
    match e {
        E::Store(e) => store(e),
        E::OutOfRange(m) => PyIndexError::new_err(m),
        E::Cancelled => PyKeyboardInterrupt::new_err("the read was cancelled"),
        E::Usage(m) => Error::new_err(m),
        e @ E::Gpu(_) => GpuError::new_err(e.to_string()),
        e @ E::Io { .. } => Error::new_err(e.to_string()),
    }
}

/// The GPU path's errors: a damaged chunk as the store's, the GPU's own as `svar2.Error`.
pub fn gpu(e: svar2_gpu::error::Error) -> PyErr {
    reader(e.into())
}

/// The view crate's errors: a bad expression (`Usage`) or region is a `ValueError`.
pub fn view(e: svar2_view::Error) -> PyErr {
    match e {
        svar2_view::Error::Reader(e) => reader(e),
        svar2_view::Error::Store(e) => store(e),
        svar2_view::Error::Usage(m) => PyValueError::new_err(m),
        svar2_view::Error::Vcf(e) => vcf(e),
        e => Error::new_err(e.to_string()),
    }
}

/// The VCF side's errors: a bad request (a region, a sample, an expression) is a
/// `ValueError`, as `store.select` says it; inputs that do not convert are
/// `InputError`.
fn vcf(e: svar2_vcf::Error) -> PyErr {
    use svar2_vcf::Error as V;
    match e {
        V::Request(m) => PyValueError::new_err(m),
        e @ (V::Open { .. }
        | V::Header { .. }
        | V::Record { .. }
        | V::Truncated { .. }
        | V::Inputs(_)) => InputError::new_err(e.to_string()),
        e => Error::new_err(e.to_string()),
    }
}

pub fn convert(e: svar2_convert::Error) -> PyErr {
    match e {
        svar2_convert::Error::Store(e) => store(e),
        svar2_convert::Error::Vcf(e) => vcf(e),
        e => Error::new_err(e.to_string()),
    }
}

pub fn append(e: svar2_append::Error) -> PyErr {
    use svar2_append::Error as A;
    match e {
        A::Convert(e) => convert(e),
        A::Reader(e) => reader(e),
        A::View(e) => view(e),
        A::Request(m) => PyValueError::new_err(m),
        A::Records(m) => InputError::new_err(m),
        e => Error::new_err(e.to_string()),
    }
}

pub fn rechunk(e: svar2_rechunk::Error) -> PyErr {
    match e {
        svar2_rechunk::Error::Store(e) => store(e),
        e => Error::new_err(e.to_string()),
    }
}

/// A malformed argument.
pub fn value(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}
