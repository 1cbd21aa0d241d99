//! `svar2._svar2`: the extension module of the `svar2` Python package — a thin PyO3
//! layer over the reader, convert and rechunk crates (no logic of its own). Modules in
//! dependency order: `errors`, `json`, `wait` (GIL released, Ctrl-C answered),
//! `arrays` (numpy in and out), `dlpack` (tensors handed over without a copy),
//! `device` (`device=`: torch on the CPU or decoded on a GPU), `batches` (read-ahead),
//! `store`, `ops`.

use pyo3::prelude::*;
use std::path::PathBuf;

mod arrays;
mod batches;
mod device;
mod dlpack;
mod errors;
mod json;
mod ops;
mod store;
mod wait;

/// Opens any VCF Zarr store for reading (svar2's, bio2zarr's v2 or v3, a
/// zarr-python-written one): a directory, a `.vcz.zip` file, or `s3://bucket/path` (credentials and endpoint
/// from the AWS_* variables or `~/.aws`; other URL schemes raise `svar2.Error`).
/// `threads`: decode threads (default every usable core); `io_threads`: threads that
/// only wait on reads — of a bucket store (one request each in flight: give it many,
/// e.g. 64) or of a local store that is not sharded (a local sharded store's shard
/// files are mapped and read by the decode threads).
#[pyfunction]
#[pyo3(signature = (path, threads = None, io_threads = 4))]
fn open(path: PathBuf, threads: Option<usize>, io_threads: usize) -> PyResult<store::Store> {
    store::Store::open(path, threads, io_threads)
}

/// Cores this process may use (CPU affinity and the cgroup's CPU quota applied), as
/// svar2 sizes its thread pools.
#[pyfunction]
fn usable_cores() -> usize {
    svar2_planner::host::Host::system().cores().usable
}

#[pymodule]
fn _svar2(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", m.py().get_type::<errors::Error>())?;
    m.add(
        "CorruptStoreError",
        m.py().get_type::<errors::CorruptStoreError>(),
    )?;
    m.add("InputError", m.py().get_type::<errors::InputError>())?;
    m.add("GpuError", m.py().get_type::<errors::GpuError>())?;
    m.add_class::<store::Store>()?;
    m.add_class::<arrays::ArrayInfo>()?;
    m.add_class::<batches::Batches>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(usable_cores, m)?)?;
    m.add_function(wrap_pyfunction!(ops::convert, m)?)?;
    m.add_function(wrap_pyfunction!(ops::rechunk, m)?)?;
    m.add_function(wrap_pyfunction!(ops::append, m)?)?;
    m.add_function(wrap_pyfunction!(ops::inspect, m)?)?;
    m.add_function(wrap_pyfunction!(ops::digest, m)?)?;
    Ok(())
}
