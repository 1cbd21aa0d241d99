//! `device=`: where a read's result lives. Without it, a numpy array (the default,
//! torch never imported); `"cpu"`, a torch tensor of the reader's own buffer; `"cuda"`
//! or `"cuda:N"`, a torch CUDA tensor decoded on that GPU (nvCOMP and our kernels,
//! `svar2_gpu`) — both handed over through DLPack, without a copy.

use crate::dlpack::{self, Place};
use crate::errors::{self, Error, GpuError};
use crate::wait;
use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use svar2_gpu::device::Device;
use svar2_reader::{Patch, Reader};
use svar2_zarr::AnyArray;

/// What `device=` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Numpy,
    Torch(Place),
}

/// `device=` as a target: None, `"cpu"`, `"cuda"`, `"cuda:N"` or a `torch.device`
/// (anything whose `str()` is one of those). A bare `"cuda"` is PyTorch's current
/// device (`torch.cuda.set_device`, as DDP sets it per rank), asked of torch only
/// once svar2's own GPU check has passed, so a machine without a GPU gets svar2's
/// message naming what is missing.
pub fn parse(py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<Target> {
    let Some(device) = device else {
        return Ok(Target::Numpy);
    };
    if device.is_none() {
        return Ok(Target::Numpy);
    }
    let text = device.str()?.to_string();
    let bad = || {
        errors::value(format!(
            "device: expected None, \"cpu\", \"cuda\" or \"cuda:N\"; got {text:?}"
        ))
    };
    // An ordinal as torch writes it: digits, no sign, no leading zero.
    let ordinal = |n: &str| -> Option<usize> {
        let plain = !n.is_empty()
            && n.bytes().all(|c| c.is_ascii_digit())
            && (n == "0" || !n.starts_with('0'));
        plain
            .then(|| n.parse::<usize>().ok())
            .flatten()
            .filter(|&n| n <= i32::MAX as usize)
    };
    match text.split_once(':') {
        None if text == "cpu" => Ok(Target::Torch(Place::Cpu)),
        Some(("cpu", "0")) => Ok(Target::Torch(Place::Cpu)),
        None if text == "cuda" => {
            usable_gpu_check(None)?;
            Ok(Target::Torch(Place::Cuda(torch_current_device(py)?)))
        }
        Some(("cuda", n)) => {
            let n = ordinal(n).ok_or_else(bad)?;
            usable_gpu_check(Some(n))?;
            Ok(Target::Torch(Place::Cuda(n)))
        }
        _ => Err(bad()),
    }
}

/// The libraries a GPU read needs, checked once per process: `svar2.Error` naming
/// the missing one (the CUDA driver, nvCOMP, NVRTC).
fn usable_gpu_check(ordinal: Option<usize>) -> PyResult<()> {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let asked = match ordinal {
        Some(n) => format!("cuda:{n}"),
        None => "cuda".into(),
    };
    CHECKED
        .get_or_init(|| svar2_gpu::probe::check().map(|_| ()))
        .clone()
        .map_err(|e| GpuError::new_err(format!("device=\"{asked}\": {e}")))
}

fn torch_current_device(py: Python<'_>) -> PyResult<usize> {
    match py.import("torch") {
        Ok(torch) => torch
            .getattr("cuda")?
            .call_method0("current_device")?
            .extract(),
        Err(_) => Ok(0),
    }
}

/// The GPUs opened so far, by ordinal (opening compiles the kernels: once each), or
/// why one could not be opened. One batch decodes on a GPU at a time.
type Gpus = Mutex<HashMap<usize, Result<Arc<Mutex<Device>>, String>>>;

fn gpu(ordinal: usize) -> PyResult<Arc<Mutex<Device>>> {
    static GPUS: OnceLock<Gpus> = OnceLock::new();
    let mut gpus = GPUS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| Error::new_err("the GPU table's lock was poisoned"))?;
    gpus.entry(ordinal)
        .or_insert_with(|| Device::open_on(ordinal).map(|d| Arc::new(Mutex::new(d))))
        .clone()
        .map_err(|e| GpuError::new_err(format!("device=\"cuda:{ordinal}\": {e}")))
}

/// Reads `patches` of `a` as a torch tensor on `place` (shape `shape`): on the CPU
/// into a buffer of the reader's own; on a GPU decoded there, unless `columns` picks
/// samples (the GPU plan reads whole patches), which are read on the CPU and copied.
pub fn read_torch<'py>(
    py: Python<'py>,
    reader: &Arc<Reader>,
    a: &Arc<AnyArray>,
    patches: &[Patch],
    columns: Option<&[u64]>,
    shape: &[usize],
    place: Place,
) -> PyResult<Bound<'py, PyAny>> {
    match (place, columns) {
        (Place::Cuda(n), None) => {
            reader.batch_bytes(a, patches).map_err(errors::reader)?;
            let gpu = gpu(n)?;
            let batch = wait::inline(py, || -> Result<_, PyErr> {
                let plan = reader.plan_batch(a, patches).map_err(errors::reader)?;
                let mut device = gpu
                    .lock()
                    .map_err(|_| Error::new_err("the GPU's lock was poisoned"))?;
                device.decode(&plan).map_err(errors::gpu)?;
                device.take_patches().map_err(errors::gpu)
            })??;
            let data = batch.ptr() as *mut u8;
            let cap = dlpack::capsule(py, Box::new(batch), data, Place::Cuda(n), shape, a.dtype)?;
            dlpack::to_torch(py, cap)
        }
        (Place::Cuda(n), Some(_)) => {
            let host = read_torch(py, reader, a, patches, columns, shape, Place::Cpu)?;
            host.call_method1("to", (format!("cuda:{n}"),))
        }
        (Place::Cpu, _) => {
            let element = a
                .dtype
                .size()
                .ok_or_else(|| errors::value("a string array"))?;
            let too_big = || {
                PyMemoryError::new_err(format!(
                    "{}: a batch of shape {shape:?} does not fit in memory",
                    a.name
                ))
            };
            let len = shape
                .iter()
                .try_fold(element, |n, &d| n.checked_mul(d))
                .ok_or_else(too_big)?;
            if columns.is_none() {
                // Patches outside the array are an IndexError before anything is
                // allocated for them.
                reader.batch_bytes(a, patches).map_err(errors::reader)?;
            }
            // Eight-byte words, so that every dtype's elements are aligned; an
            // allocation that fails is a MemoryError, never an abort.
            let mut words: Vec<u64> = Vec::new();
            words
                .try_reserve_exact(len.div_ceil(8))
                .map_err(|_| too_big())?;
            words.resize(len.div_ceil(8), 0);
            let cancel = AtomicBool::new(false);
            let data = words.as_mut_ptr().cast::<u8>();
            {
                // SAFETY: `words` is `len.div_ceil(8) * 8 >= len` initialised bytes,
                // borrowed only here; u8 has no alignment or validity requirement.
                let bytes = unsafe { std::slice::from_raw_parts_mut(data, len) };
                wait::sized(py, len, &cancel, || match columns {
                    Some(c) => reader.read_batch_columns(a, patches, c, bytes, &cancel),
                    None => reader.read_batch_cancellable(a, patches, bytes, &cancel),
                })?
                .map_err(errors::reader)?;
            }
            // The Vec's heap buffer does not move when the Vec does.
            let cap = dlpack::capsule(py, Box::new(words), data, Place::Cpu, shape, a.dtype)?;
            dlpack::to_torch(py, cap)
        }
    }
}
