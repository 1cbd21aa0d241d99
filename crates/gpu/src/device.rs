//! The batch plan on a GPU: one upload of the packed streams and the task tables,
//! one nvCOMP batched zstd call, then the copy, unshuffle and scatter kernels, all on
//! one stream; the patches stay in device memory. Buffers grow to the largest batch
//! seen and are reused.

use crate::batch_plan::{BatchPlan, Buf};
use crate::error::{Error, Result};
use crate::kernels::{self, COPY_FIELDS, RECT_FIELDS, UNSHUFFLE_FIELDS};
use crate::nvcomp::Nvcomp;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

fn gpu_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Gpu(format!("{what}: {e}"))
}

/// A GPU ready to decode batches.
pub struct Device {
    stream: Arc<CudaStream>,
    nvcomp: Nvcomp,
    copies: CudaFunction,
    unshuffle: CudaFunction,
    scatter: CudaFunction,
    input: CudaSlice<u8>,
    stage: CudaSlice<u8>,
    out: CudaSlice<u8>,
    patches: CudaSlice<u8>,
    temp: CudaSlice<u8>,
    /// nvCOMP's pointer and size arrays and the kernels' task tables, packed.
    meta: CudaSlice<u64>,
    statuses: CudaSlice<i32>,
    host_meta: Vec<u64>,
    patch_bytes: usize,
    /// The device's name, for reports.
    pub name: String,
    pub nvcomp_version: u32,
}

/// Offsets of each table in `meta`.
struct Layout {
    n: usize,
    copies: usize,
    unshuffle: usize,
    rects: usize,
    total: usize,
}

impl Layout {
    fn of(plan: &BatchPlan) -> Layout {
        let n = plan.zstd.len();
        let copies = 5 * n;
        let unshuffle = copies + COPY_FIELDS * plan.copies.len();
        let rects = unshuffle + UNSHUFFLE_FIELDS * plan.unshuffle.len();
        let total = rects + RECT_FIELDS * plan.rects.len();
        Layout {
            n,
            copies,
            unshuffle,
            rects,
            total,
        }
    }
}

/// `slot` holds at least `need` elements (grown by doubling; contents not kept).
fn ensure<T: cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    slot: &mut CudaSlice<T>,
    need: usize,
) -> Result<()> {
    if slot.len() < need {
        let len = need.next_power_of_two().max(64);
        // SAFETY: uninitialised device memory; every byte a kernel reads is written
        // first by the plan (the upload, nvCOMP, a copy or an unshuffle task).
        *slot = unsafe { stream.alloc::<T>(len) }.map_err(gpu_err("allocating device memory"))?;
    }
    Ok(())
}

fn base<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

impl Device {
    /// Opens GPU 0: the driver, NVRTC and nvCOMP, and compiles the kernels. The error
    /// is one line saying what is missing.
    pub fn open() -> std::result::Result<Device, String> {
        Device::open_on(0)
    }

    /// Opens GPU `ordinal` (CUDA's numbering, as `cuda:N` in PyTorch), in its primary
    /// context — the one PyTorch uses, so its pointers are PyTorch's too.
    pub fn open_on(ordinal: usize) -> std::result::Result<Device, String> {
        let found = crate::probe::check()?;
        // SAFETY: only checks whether the libraries load (cudarc panics on first use
        // of a library that is absent, so this comes before any other call).
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no CUDA driver found (libcuda.so.1)".into());
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| format!("cannot open GPU {ordinal} (cuda:{ordinal}): {e}"))?;
        let name = ctx.name().unwrap_or_else(|_| format!("GPU {ordinal}"));
        // SAFETY: svar2 uses one stream, so cudarc's cross-stream events are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let ptx = kernels::compile()?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| format!("loading the kernels: {e}"))?;
        let f = |n: &str| {
            module
                .load_function(n)
                .map_err(|e| format!("kernel {n}: {e}"))
        };
        let nvcomp = Nvcomp::load(&found.nvcomp)?;
        let alloc8 = || {
            // SAFETY: placeholder buffers, grown before any use.
            unsafe { stream.alloc::<u8>(64) }.map_err(|e| format!("device memory: {e}"))
        };
        Ok(Device {
            copies: f("copies")?,
            unshuffle: f("unshuffle")?,
            scatter: f("scatter")?,
            input: alloc8()?,
            stage: alloc8()?,
            out: alloc8()?,
            patches: alloc8()?,
            temp: alloc8()?,
            // SAFETY: as above.
            meta: unsafe { stream.alloc::<u64>(64) }.map_err(|e| format!("device memory: {e}"))?,
            // SAFETY: as above.
            statuses: unsafe { stream.alloc::<i32>(64) }
                .map_err(|e| format!("device memory: {e}"))?,
            host_meta: Vec::new(),
            patch_bytes: 0,
            nvcomp_version: nvcomp.version,
            nvcomp,
            stream,
            name,
        })
    }

    /// Runs `plan` and waits for it: afterwards [`patches`](Self::patches) holds the
    /// batch's patches. A stream nvCOMP cannot decode is an error naming its chunk.
    pub fn decode(&mut self, plan: &BatchPlan) -> Result<()> {
        let st = self.stream.clone();
        let lay = Layout::of(plan);
        if [plan.copies.len(), plan.unshuffle.len(), plan.rects.len()]
            .iter()
            .any(|&n| n > i32::MAX as usize)
        {
            return Err(Error::Gpu("batch too large: use smaller batches".into()));
        }
        ensure(&st, &mut self.input, plan.input.len().max(1))?;
        ensure(&st, &mut self.stage, plan.stage_bytes.max(1))?;
        ensure(&st, &mut self.out, plan.out_bytes.max(1))?;
        ensure(&st, &mut self.patches, plan.patch_bytes.max(1))?;
        ensure(&st, &mut self.meta, lay.total.max(1))?;
        ensure(&st, &mut self.statuses, lay.n.max(1))?;
        let (input, stage, out) = (
            base(&self.input, &st),
            base(&self.stage, &st),
            base(&self.out, &st),
        );
        let buf = |b: Buf| match b {
            Buf::Input => input,
            Buf::Stage => stage,
            Buf::Out => out,
        };
        // The tables, in one upload.
        let m = &mut self.host_meta;
        m.clear();
        m.extend(plan.zstd.iter().map(|t| input + t.src.start as u64));
        m.extend(plan.zstd.iter().map(|t| t.src.len() as u64));
        m.extend(plan.zstd.iter().map(|t| t.len as u64));
        m.extend(plan.zstd.iter().map(|_| 0u64));
        m.extend(plan.zstd.iter().map(|t| buf(t.to) + t.dst as u64));
        for c in &plan.copies {
            m.extend([
                c.from as u64,
                c.src as u64,
                c.to as u64,
                c.dst as u64,
                c.len as u64,
            ]);
        }
        for u in &plan.unshuffle {
            m.extend([
                u.src as u64,
                u.dst as u64,
                u.len as u64,
                u.typesize as u64,
                u.bit as u64,
            ]);
        }
        for r in &plan.rects {
            m.extend([
                r.src as u64,
                r.src_stride as u64,
                r.dst as u64,
                r.dst_stride as u64,
                r.rows as u64,
                r.row_bytes as u64,
            ]);
        }
        debug_assert_eq!(m.len(), lay.total);
        st.memcpy_htod(&plan.input[..], &mut self.input)
            .map_err(gpu_err("uploading streams"))?;
        st.memcpy_htod(&m[..], &mut self.meta)
            .map_err(gpu_err("uploading the plan"))?;
        let meta = base(&self.meta, &st);
        let at = |i: usize| meta + 8 * i as u64;
        if lay.n > 0 {
            let total: usize = plan.zstd.iter().map(|t| t.len).sum();
            let temp = self
                .nvcomp
                .temp_bytes(
                    lay.n,
                    plan.max_stream_bytes(),
                    total,
                    st.cu_stream() as usize,
                )
                .map_err(Error::Gpu)?;
            ensure(&st, &mut self.temp, temp.max(1))?;
            // SAFETY: the five arrays of `n` entries are at `at(0..5n)` of `meta`
            // (uploaded above, in stream order), every pointer in them lies in
            // `input`, `stage` or `out` (sized from the plan, aligned as nvCOMP
            // requires: batch_plan::ALIGN), the temp buffer holds `temp` bytes, and every
            // stream was parsed and checked on the host by Frame::parse.
            let status = unsafe {
                self.nvcomp.decompress(
                    at(0),
                    at(lay.n),
                    at(2 * lay.n),
                    at(3 * lay.n),
                    lay.n,
                    base(&self.temp, &st),
                    temp,
                    at(4 * lay.n),
                    base(&self.statuses, &st),
                    st.cu_stream() as _,
                )
            };
            if status != 0 {
                return Err(Error::Gpu(format!(
                    "nvCOMP could not start the batch (status {status})"
                )));
            }
        }
        let block = (256, 1, 1);
        let launch = |f: &CudaFunction, table: usize, n: usize, max_len: u64, bufs: &[u64]| {
            if n == 0 {
                return Ok(());
            }
            let (tab, n64) = (at(table), n as u64);
            let mut b = st.launch_builder(f);
            for p in bufs {
                b.arg(p);
            }
            b.arg(&tab).arg(&n64);
            let cfg = LaunchConfig {
                grid_dim: kernels::grid(n, max_len),
                block_dim: block,
                shared_mem_bytes: 0,
            };
            // SAFETY: the kernel's parameters are the device buffers it names and its
            // task table (u64 fields as in `kernels`), whose every offset the plan
            // keeps inside the buffers sized above.
            unsafe { b.launch(cfg) }
                .map(|_| ())
                .map_err(gpu_err("launching a kernel"))
        };
        let max = |it: &mut dyn Iterator<Item = usize>| it.max().unwrap_or(0) as u64;
        let patches = base(&self.patches, &st);
        launch(
            &self.copies,
            lay.copies,
            plan.copies.len(),
            max(&mut plan.copies.iter().map(|c| c.len)),
            &[input, stage, out],
        )?;
        launch(
            &self.unshuffle,
            lay.unshuffle,
            plan.unshuffle.len(),
            max(&mut plan.unshuffle.iter().map(|u| u.len)),
            &[stage, out],
        )?;
        launch(
            &self.scatter,
            lay.rects,
            plan.rects.len(),
            max(&mut plan.rects.iter().map(|r| r.rows * r.row_bytes)),
            &[out, patches],
        )?;
        // Per-stream results: a status and the bytes each stream really gave.
        let mut statuses = vec![0i32; lay.n];
        let mut actual = vec![0u64; lay.n];
        if lay.n > 0 {
            st.memcpy_dtoh(&self.statuses.slice(0..lay.n), &mut statuses[..])
                .map_err(gpu_err("reading statuses"))?;
            st.memcpy_dtoh(&self.meta.slice(3 * lay.n..4 * lay.n), &mut actual[..])
                .map_err(gpu_err("reading sizes"))?;
        }
        st.synchronize().map_err(gpu_err("decoding"))?;
        for (i, t) in plan.zstd.iter().enumerate() {
            if statuses[i] != 0 || actual[i] != t.len as u64 {
                return Err(Error::Corrupt {
                    key: plan.keys[t.chunk as usize].clone(),
                    msg: format!(
                        "zstd stream: nvCOMP status {}, {} bytes of {}",
                        statuses[i], actual[i], t.len
                    ),
                });
            }
        }
        self.patch_bytes = plan.patch_bytes;
        Ok(())
    }

    /// The last batch's patches, in device memory (`plan.patch_bytes` long).
    pub fn patches(&self) -> cudarc::driver::CudaView<'_, u8> {
        self.patches.slice(0..self.patch_bytes)
    }

    /// The last batch's patches copied into device memory of their own, for a consumer
    /// that keeps them past the next batch (a PyTorch tensor through DLPack). The copy
    /// is finished when this returns, so any stream may read it.
    pub fn take_patches(&self) -> Result<DeviceBatch> {
        // SAFETY: uninitialised device memory, every byte of it written by the copy
        // below before anything can read it.
        let mut bytes = unsafe { self.stream.alloc::<u8>(self.patch_bytes.max(1)) }
            .map_err(gpu_err("allocating device memory"))?;
        self.stream
            .memcpy_dtod(&self.patches(), &mut bytes.slice_mut(0..self.patch_bytes))
            .map_err(gpu_err("copying patches"))?;
        self.stream
            .synchronize()
            .map_err(gpu_err("copying patches"))?;
        let ptr = base(&bytes, &self.stream);
        Ok(DeviceBatch {
            bytes: Some(bytes),
            ptr,
            len: self.patch_bytes,
            ordinal: self.stream.context().ordinal(),
        })
    }

    /// The last batch's patches copied to the host (for checks).
    pub fn patches_to_host(&self) -> Result<Vec<u8>> {
        let mut host = vec![0u8; self.patch_bytes];
        self.stream
            .memcpy_dtoh(&self.patches(), &mut host[..])
            .map_err(gpu_err("reading patches"))?;
        self.stream
            .synchronize()
            .map_err(gpu_err("reading patches"))?;
        Ok(host)
    }
}

/// A batch's patches in device memory of their own (see [`Device::take_patches`]).
/// Dropping it waits for all work on the GPU first: a consumer's kernels still reading
/// it on another stream finish before the memory is freed.
pub struct DeviceBatch {
    bytes: Option<CudaSlice<u8>>,
    ptr: u64,
    len: usize,
    /// The GPU it lives on (CUDA's numbering).
    pub ordinal: usize,
}

impl DeviceBatch {
    /// The device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for DeviceBatch {
    fn drop(&mut self) {
        if let Some(bytes) = self.bytes.take() {
            // Errors cannot be reported from a drop; a failed synchronise means the
            // context is already broken, and freeing is then all that is left to do.
            let _ = bytes.stream().context().synchronize();
            drop(bytes);
        }
    }
}
