//! `store.read_ahead(...)`: batches read on a background thread into a bounded queue
//! (the reader crate's `ReadAhead`), handed to Python as ndarrays that own the bytes.

use crate::arrays;
use crate::errors;
use numpy::PyArray1;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use svar2_reader::ahead::{Next, ReadAhead};
use svar2_reader::Patch;
use svar2_zarr::AnyArray;

/// An iterator of batches read ahead (at most `depth` waiting); ends when the list
/// does. Iterating it releases the GIL while it waits and answers Ctrl-C.
#[pyclass(frozen, module = "svar2", name = "Batches")]
pub struct Batches {
    /// Shared so that no lock is held while a thread waits without the GIL.
    ahead: Mutex<Option<Arc<ReadAhead>>>,
    /// The shape of one patch (the batch is (n, *patch)).
    block: Vec<usize>,
    dtype: &'static str,
    batches: usize,
}

impl Batches {
    pub(crate) fn start(
        reader: Arc<svar2_reader::Reader>,
        a: Arc<AnyArray>,
        patches: Vec<Patch>,
        columns: Option<Vec<u64>>,
        batch_size: usize,
        depth: usize,
    ) -> PyResult<Batches> {
        if batch_size == 0 {
            return Err(errors::value("batch_size: at least 1"));
        }
        let shape = arrays::batch_shape(&a, &patches)?;
        let dtype = arrays::numpy_dtype(a.dtype).expect("batch_shape refused strings");
        let ahead = ReadAhead::start(reader, a, patches, columns, batch_size, depth)
            .map_err(errors::reader)?;
        Ok(Batches {
            batches: ahead.batches(),
            ahead: Mutex::new(Some(Arc::new(ahead))),
            block: shape[1..].to_vec(),
            dtype,
        })
    }
}

#[pymethods]
impl Batches {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __len__(&self) -> usize {
        self.batches
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        loop {
            let ahead = self
                .ahead
                .lock()
                .map_err(|_| errors::Error::new_err("the read-ahead's lock was poisoned"))?
                .clone();
            let Some(ahead) = ahead else {
                return Err(PyStopIteration::new_err(()));
            };
            let next = crate::wait::inline(py, || ahead.next_within(Duration::from_millis(50)))?;
            match next {
                Next::Batch(b) => {
                    let mut shape = vec![b.patches];
                    shape.extend(&self.block);
                    let bytes = PyArray1::from_vec(py, b.bytes);
                    return bytes
                        .call_method1("view", (self.dtype,))?
                        .call_method1("reshape", (shape,));
                }
                Next::Pending => py.check_signals()?,
                Next::Done => {
                    self.close()?;
                    return Err(PyStopIteration::new_err(()));
                }
                Next::Failed(e) => {
                    self.close()?;
                    return Err(errors::reader(e));
                }
            }
        }
    }

    /// Stops reading ahead (a read in progress is cancelled) and frees the queue.
    fn close(&self) -> PyResult<()> {
        let taken = self
            .ahead
            .lock()
            .map_err(|_| errors::Error::new_err("the read-ahead's lock was poisoned"))?
            .take();
        drop(taken);
        Ok(())
    }
}
