//! Rust errors as Python exceptions, each carrying the CLI's one-line message:
//! a missing path is `FileNotFoundError`, a patch outside the array `IndexError`, a
//! malformed request `ValueError`, everything else (a damaged chunk, not a store, an
//! input that does not convert) `svar2.Error`.

use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    svar2,
    Error,
    pyo3::exceptions::PyException,
    "Any failure svar2 reports: a damaged chunk (named by its key), a path that is not a \
     VCF Zarr store, an input that does not convert. The message is the CLI's."
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
        e @ (E::Io { .. } | E::Gpu(_)) => Error::new_err(e.to_string()),
    }
}

/// The GPU path's errors: a damaged chunk as the store's, the GPU's own as `svar2.Error`.
pub fn gpu(e: svar2_gpu::error::Error) -> PyErr {
    reader(e.into())
}

/// The view crate's errors: a bad expression (`Usage`) is a `ValueError`.
pub fn view(e: svar2_view::Error) -> PyErr {
    match e {
        svar2_view::Error::Reader(e) => reader(e),
        svar2_view::Error::Store(e) => store(e),
        svar2_view::Error::Usage(m) => PyValueError::new_err(m),
        e => Error::new_err(e.to_string()),
    }
}

pub fn convert(e: svar2_convert::Error) -> PyErr {
    match e {
        svar2_convert::Error::Store(e) => store(e),
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
