//! The device kernels, compiled at run time by NVRTC (no nvcc at build time). Each
//! does per byte exactly what [`crate::cpu`] does, which the tests prove against
//! c-blosc: the CPU executor is the kernels' specification.
//!
//! Every kernel takes a task table of `u64`s and runs on a grid of (task, slice):
//! block `(t, y)` handles bytes `y·SLICE, (y + gridDim.y)·SLICE, …` of task `t`, so
//! any task length works with any grid height.

/// Bytes one block handles per step.
pub const SLICE: u64 = 4096;

/// `u64`s per task of each table.
pub const COPY_FIELDS: usize = 5; // from, src, to, dst, len
pub const UNSHUFFLE_FIELDS: usize = 5; // src, dst, len, typesize, bit
pub const RECT_FIELDS: usize = 6; // src, src_stride, dst, dst_stride, rows, row_bytes

/// The CUDA C source (buffers: 0 input, 1 stage, 2 out, as [`crate::batch_plan::Buf`]).
pub const SOURCE: &str = r#"
typedef unsigned long long u64;
typedef unsigned char u8;
#define SLICE 4096ULL

extern "C" __global__ void copies(const u8* input, u8* stage, u8* out,
                                  const u64* tasks, u64 n) {
    u64 t = blockIdx.x;
    if (t >= n) return;
    const u64* k = tasks + 5 * t;
    const u8* s = (k[0] == 0 ? input : (k[0] == 1 ? (const u8*)stage : (const u8*)out)) + k[1];
    u8* d = (k[2] == 1 ? stage : out) + k[3];
    u64 len = k[4];
    for (u64 lo = blockIdx.y * SLICE; lo < len; lo += gridDim.y * SLICE) {
        u64 hi = lo + SLICE < len ? lo + SLICE : len;
        for (u64 i = lo + threadIdx.x; i < hi; i += blockDim.x) d[i] = s[i];
    }
}

extern "C" __global__ void unshuffle(const u8* stage, u8* out, const u64* tasks, u64 n) {
    u64 t = blockIdx.x;
    if (t >= n) return;
    const u64* k = tasks + 5 * t;
    const u8* s = stage + k[0];
    u8* d = out + k[1];
    u64 len = k[2], ts = k[3];
    bool bit = k[4] != 0;
    u64 nel = len / ts;
    bool plain = bit ? (len < ts || nel % 8 != 0) : ts == 1;
    u64 plane = nel / 8;
    for (u64 lo = blockIdx.y * SLICE; lo < len; lo += gridDim.y * SLICE) {
        u64 hi = lo + SLICE < len ? lo + SLICE : len;
        for (u64 p = lo + threadIdx.x; p < hi; p += blockDim.x) {
            u8 v;
            if (plain || p >= nel * ts) {
                v = s[p];
            } else {
                u64 i = p / ts, j = p % ts;
                if (bit) {
                    v = 0;
                    for (int b = 0; b < 8; b++)
                        v |= ((s[(8 * j + b) * plane + (i >> 3)] >> (i & 7)) & 1) << b;
                } else {
                    v = s[j * nel + i];
                }
            }
            d[p] = v;
        }
    }
}

extern "C" __global__ void scatter(const u8* out, u8* patches, const u64* rects, u64 n) {
    u64 t = blockIdx.x;
    if (t >= n) return;
    const u64* k = rects + 6 * t;
    u64 row_bytes = k[5];
    u64 len = k[4] * row_bytes;
    for (u64 lo = blockIdx.y * SLICE; lo < len; lo += gridDim.y * SLICE) {
        u64 hi = lo + SLICE < len ? lo + SLICE : len;
        for (u64 q = lo + threadIdx.x; q < hi; q += blockDim.x) {
            u64 r = q / row_bytes, c = q % row_bytes;
            patches[k[2] + r * k[3] + c] = out[k[0] + r * k[1] + c];
        }
    }
}
"#;

/// The grid for `n` tasks whose longest is `max_len` bytes: (tasks, slices).
pub fn grid(n: usize, max_len: u64) -> (u32, u32, u32) {
    let y = max_len.div_ceil(SLICE).clamp(1, 65_535) as u32;
    (n.min(i32::MAX as usize) as u32, y, 1)
}

/// The kernels compiled to PTX by NVRTC (found by [`crate::probe::nvrtc`]); needs no
/// GPU.
pub fn compile() -> Result<cudarc::nvrtc::Ptx, String> {
    let path = crate::probe::nvrtc()?;
    // SAFETY: only checks that cudarc can load NVRTC (probe::nvrtc loaded it), since
    // cudarc panics on first use of a library that is absent.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(format!(
            "NVRTC at {} did not load for cudarc: set SVAR2_NVRTC=/path/libnvrtc.so.12",
            path.display()
        ));
    }
    cudarc::nvrtc::compile_ptx(SOURCE).map_err(|e| format!("compiling the kernels: {e}"))
}

#[cfg(test)]
mod tests {
    /// NVRTC compiles the kernels (no GPU needed; CI installs the NVRTC wheel).
    #[test]
    fn the_kernels_compile() {
        if let Err(why) = crate::probe::nvrtc() {
            if std::env::var_os("SVAR2_REQUIRE_GPU").is_some() {
                panic!("{why}");
            }
            eprintln!("SKIP the_kernels_compile: {why}");
            return;
        }
        let ptx = super::compile().unwrap().to_src();
        for k in ["copies", "unshuffle", "scatter"] {
            assert!(
                ptx.contains(&format!(".entry {k}(")),
                "{k} missing from the PTX"
            );
        }
    }
}
