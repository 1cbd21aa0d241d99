//! Running Rust work with the GIL released while Ctrl-C still works: long work runs on
//! a helper thread and the calling thread wakes every 50 ms to let Python look at its
//! signals; on `KeyboardInterrupt` the work's cancel flag is set and the exception
//! raised once the work has stopped. A panic becomes `svar2.Error`, never an abort.

use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Work smaller than this runs on the calling thread (it ends within milliseconds;
/// Python sees a pending Ctrl-C as soon as it returns).
pub const INLINE_BYTES: usize = 32 << 20;

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn caught<T>(r: std::thread::Result<T>) -> PyResult<T> {
    r.map_err(|p| {
        crate::errors::Error::new_err(format!(
            "internal error (please report it): {}",
            panic_message(p)
        ))
    })
}

/// Runs `job` on this thread, the GIL held (opening a store, drawing patches): a
/// panic in it becomes `svar2.Error`, never a `PanicException`.
pub fn guarded<T>(job: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    caught(catch_unwind(AssertUnwindSafe(job)))?
}

/// Runs `job` without the GIL on this thread (small work).
pub fn inline<T: Send>(py: Python<'_>, job: impl FnOnce() -> T + Send) -> PyResult<T> {
    caught(py.detach(|| catch_unwind(AssertUnwindSafe(job))))
}

/// Runs `job` without the GIL on a helper thread, polling for signals; `cancel` is
/// what `job` watches.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    cancel: &AtomicBool,
    job: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|s| {
        let (tx, rx) = crossbeam_channel::bounded(1);
        s.spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(job)));
        });
        loop {
            match py.detach(|| rx.recv_timeout(Duration::from_millis(50))) {
                Ok(r) => return caught(r),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        cancel.store(true, Ordering::Relaxed);
                        let _ = py.detach(|| rx.recv());
                        return Err(e);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(crate::errors::Error::new_err(
                        "internal error (please report it): the worker thread vanished",
                    ))
                }
            }
        }
    })
}

/// Runs `job` (which produces about `bytes` bytes) without the GIL: on this thread
/// when small, else where Ctrl-C can cancel it.
pub fn sized<T: Send>(
    py: Python<'_>,
    bytes: usize,
    cancel: &AtomicBool,
    job: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    if bytes <= INLINE_BYTES {
        inline(py, job)
    } else {
        interruptible(py, cancel, job)
    }
}
