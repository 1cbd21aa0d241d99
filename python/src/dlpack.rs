//! DLPack export: bytes svar2 owns (a host buffer, or a batch in GPU memory) handed to
//! PyTorch — or any DLPack consumer — without a copy. The capsule follows the DLPack
//! protocol (a `DLManagedTensor` named "dltensor", renamed "used_dltensor" by the
//! consumer, which then calls its deleter when its tensor dies); the owner of the
//! bytes travels inside and is dropped by that deleter, on whatever thread it runs.

use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use svar2_store::dtype::Dtype;

/// Where the bytes are (DLPack's `DLDeviceType` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Cpu,
    Cuda(usize),
}

#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// The managed tensor with what it points at: its shape and the bytes' owner. The
/// tensor comes first, so a pointer to it is a pointer to this.
#[repr(C)]
struct Managed {
    tensor: DLManagedTensor,
    shape: Vec<i64>,
    _owner: Box<dyn Send>,
}

const NAME: &CStr = c"dltensor";

/// DLPack's type code and width for an array's dtype (None: text, never exported).
fn dl_dtype(d: Dtype) -> Option<DLDataType> {
    let (code, bits) = match d {
        Dtype::Bool => (6, 8),
        Dtype::I8 => (0, 8),
        Dtype::I16 => (0, 16),
        Dtype::I32 => (0, 32),
        Dtype::I64 => (0, 64),
        Dtype::F32 => (2, 32),
        Dtype::Char | Dtype::Str => return None,
    };
    Some(DLDataType {
        code,
        bits,
        lanes: 1,
    })
}

/// Frees a `Managed`: the consumer calls this when its tensor dies.
unsafe extern "C" fn delete_managed(t: *mut DLManagedTensor) {
    if !t.is_null() {
        // SAFETY: every DLManagedTensor this module hands out is the first field of a
        // `Managed` leaked from a Box in `capsule`, and DLPack calls the deleter once.
        drop(unsafe { Box::from_raw(t.cast::<Managed>()) });
    }
}

/// The capsule's destructor: frees the tensor only if no consumer took it (a taken
/// capsule is renamed "used_dltensor" and its tensor belongs to the consumer).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed (the GIL held);
    // IsValid checks the name before the pointer is read.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let t = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()).cast::<DLManagedTensor>();
            delete_managed(t);
        }
    }
}

/// A DLPack capsule of `len` bytes at `data` in `place`, of `shape` and `dtype`, C
/// order; `owner` keeps the bytes alive until the consumer's tensor dies. The caller
/// promises `data` stays valid while `owner` lives.
pub fn capsule<'py>(
    py: Python<'py>,
    owner: Box<dyn Send>,
    data: *mut u8,
    place: Place,
    shape: &[usize],
    dtype: Dtype,
) -> PyResult<Bound<'py, PyAny>> {
    let dl = dl_dtype(dtype).ok_or_else(|| crate::errors::value("a string array"))?;
    let (device_type, device_id) = match place {
        Place::Cpu => (1, 0),
        Place::Cuda(n) => (2, n as i32),
    };
    let mut m = Box::new(Managed {
        tensor: DLManagedTensor {
            dl_tensor: DLTensor {
                data: data.cast(),
                device: DLDevice {
                    device_type,
                    device_id,
                },
                ndim: shape.len() as i32,
                dtype: dl,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(), // C order
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_managed),
        },
        shape: shape.iter().map(|&n| n as i64).collect(),
        _owner: owner,
    });
    // The shape's heap buffer does not move with the Box.
    m.tensor.dl_tensor.shape = m.shape.as_mut_ptr();
    let raw = Box::into_raw(m);
    // SAFETY: `raw` is a live `Managed` whose first field is the DLManagedTensor; the
    // capsule either hands it to a consumer or frees it in its destructor.
    unsafe {
        (*raw).tensor.manager_ctx = raw.cast();
        let cap = ffi::PyCapsule_New(raw.cast(), NAME.as_ptr(), Some(capsule_destructor));
        if cap.is_null() {
            delete_managed(raw.cast());
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, cap))
    }
}

/// A torch tensor of the capsule's bytes (`torch.from_dlpack`); torch is imported
/// here, on first use, so `import svar2` never imports it.
pub fn to_torch<'py>(py: Python<'py>, capsule: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let torch = py.import("torch").map_err(|e| {
        crate::errors::Error::new_err(format!(
            "device=: the result is a torch tensor, and torch does not import ({e})"
        ))
    })?;
    torch.call_method1("from_dlpack", (capsule,))
}
