//! The few nvCOMP functions svar2 calls, declared by hand (no crate binds nvCOMP) and
//! loaded with dlopen, so svar2 builds and runs without it. 5.x and 6.x differ in one
//! function (the temp-size query was renamed and gained a stream): the ABI is chosen
//! by the library's own major version (`nvcompGetProperties`).

use std::ffi::c_void;
use std::path::Path;

/// `nvcompStatus_t`; 0 is success.
pub type Status = i32;

/// `nvcompBatchedZstdDecompressOpts_t`: 64 bytes passed by value; the first field is
/// the backend (0 = default), the rest reserved zeros.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ZstdDecompressOpts {
    pub backend: i32,
    pub reserved: [u8; 60],
}

impl Default for ZstdDecompressOpts {
    fn default() -> Self {
        ZstdDecompressOpts {
            backend: 0,
            reserved: [0; 60],
        }
    }
}

#[repr(C)]
#[derive(Default)]
struct Properties {
    version: u32,
    cudart_version: u32,
}

type GetProperties = unsafe extern "C" fn(*mut Properties) -> Status;
/// 5.x: `(num_chunks, max_chunk_bytes, opts, *temp_bytes, max_total_bytes)`.
type TempSize5 =
    unsafe extern "C" fn(usize, usize, ZstdDecompressOpts, *mut usize, usize) -> Status;
/// 6.x: as 5.x plus the stream.
type TempSize6 = unsafe extern "C" fn(
    usize,
    usize,
    ZstdDecompressOpts,
    *mut usize,
    usize,
    *mut c_void,
) -> Status;
type Decompress = unsafe extern "C" fn(
    *const *const c_void, // device: compressed chunk pointers
    *const usize,         // device: compressed sizes
    *const usize,         // device: output buffer sizes
    *mut usize,           // device: actual decompressed sizes
    usize,                // number of chunks
    *mut c_void,          // device temp
    usize,                // temp bytes
    *const *mut c_void,   // device: output pointers
    ZstdDecompressOpts,
    *mut Status, // device: per-chunk statuses
    *mut c_void, // cudaStream_t
) -> Status;

enum TempSize {
    V5(TempSize5),
    V6(TempSize6),
}

/// nvCOMP, loaded.
pub struct Nvcomp {
    /// The library's version (major × 1000 + minor × 100 + patch).
    pub version: u32,
    temp_size: TempSize,
    decompress: Decompress,
    _lib: libloading::Library,
}

impl Nvcomp {
    /// Loads nvCOMP from `path`; an error says what is wrong with it.
    pub fn load(path: &Path) -> Result<Nvcomp, String> {
        let what = |e: String| format!("nvCOMP at {}: {e}", path.display());
        // SAFETY: nvCOMP is a vendor library made to be dlopened (its Python wheels
        // do so); loading runs only its initialisers.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| what(e.to_string()))?;
        // SAFETY: the symbol's type is nvcomp.h's `nvcompGetProperties`, the same in
        // every version.
        let missing =
            |name: &'static str| move |e: libloading::Error| what(format!("no {name} ({e})"));
        let props: GetProperties = *unsafe { lib.get::<GetProperties>(b"nvcompGetProperties\0") }
            .map_err(missing("nvcompGetProperties"))?;
        let mut p = Properties::default();
        // SAFETY: `p` is a valid nvcompProperties_t to write; the call needs no device.
        let st = unsafe { props(&mut p) };
        if st != 0 {
            return Err(what(format!("nvcompGetProperties failed ({st})")));
        }
        let major = p.version / 1000;
        // SAFETY (both arms): the declared types are the zstd.h prototypes of that
        // major version, quoted above each type alias.
        let temp_size = match major {
            5 => TempSize::V5(unsafe {
                *lib.get::<TempSize5>(b"nvcompBatchedZstdDecompressGetTempSizeAsync\0")
                    .map_err(missing("nvcompBatchedZstdDecompressGetTempSizeAsync"))?
            }),
            6 => TempSize::V6(unsafe {
                *lib.get::<TempSize6>(b"nvcompBatchedZstdDecompressGetTempSize\0")
                    .map_err(missing("nvcompBatchedZstdDecompressGetTempSize"))?
            }),
            _ => {
                return Err(what(format!(
                    "version {} is not supported (5.x or 6.x: pip install nvidia-libnvcomp-cu12)",
                    p.version
                )))
            }
        };
        // SAFETY: `nvcompBatchedZstdDecompressAsync` has this prototype in 5.x and 6.x.
        let decompress = unsafe {
            *lib.get::<Decompress>(b"nvcompBatchedZstdDecompressAsync\0")
                .map_err(missing("nvcompBatchedZstdDecompressAsync"))?
        };
        Ok(Nvcomp {
            version: p.version,
            temp_size,
            decompress,
            _lib: lib,
        })
    }

    /// Device temp bytes for `n` streams of at most `max_chunk` bytes, `total` in all
    /// (6.x asks for the stream, a `cudaStream_t` given as its address).
    pub fn temp_bytes(
        &self,
        n: usize,
        max_chunk: usize,
        total: usize,
        stream: usize,
    ) -> Result<usize, String> {
        let mut temp = 0usize;
        let opts = ZstdDecompressOpts::default();
        // SAFETY: host-side queries writing one size_t; `stream` is a live CUDA stream.
        let st = unsafe {
            match self.temp_size {
                TempSize::V5(f) => f(n, max_chunk, opts, &mut temp, total),
                TempSize::V6(f) => f(n, max_chunk, opts, &mut temp, total, stream as *mut c_void),
            }
        };
        if st != 0 {
            return Err(format!("nvCOMP temp size query failed ({st})"));
        }
        Ok(temp)
    }

    /// Queues the batched decompression of `n` streams on `stream`.
    ///
    /// # Safety
    /// Every pointer is device memory of the stated length, valid until the stream
    /// has run the call: `in_ptrs`/`out_ptrs` hold `n` pointers (8-byte aligned
    /// buffers), `in_bytes`/`out_bytes`/`actual` `n` sizes, `statuses` `n` statuses,
    /// `temp` `temp_bytes` bytes; and every compressed stream was checked on the host.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn decompress(
        &self,
        in_ptrs: u64,
        in_bytes: u64,
        out_bytes: u64,
        actual: u64,
        n: usize,
        temp: u64,
        temp_bytes: usize,
        out_ptrs: u64,
        statuses: u64,
        stream: *mut c_void,
    ) -> Status {
        // SAFETY: the caller's contract; device addresses are passed as the pointers
        // they are.
        unsafe {
            (self.decompress)(
                in_ptrs as *const *const c_void,
                in_bytes as *const usize,
                out_bytes as *const usize,
                actual as *mut usize,
                n,
                temp as *mut c_void,
                temp_bytes,
                out_ptrs as *const *mut c_void,
                ZstdDecompressOpts::default(),
                statuses as *mut Status,
                stream,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missing file or a library that is not nvCOMP is a one-line error naming the
    /// path, never a crash.
    #[test]
    fn loading_something_else_is_an_error() {
        let e = Nvcomp::load(Path::new("/nonexistent/libnvcomp.so.5"))
            .err()
            .unwrap();
        assert!(
            e.starts_with("nvCOMP at /nonexistent/libnvcomp.so.5: "),
            "{e}"
        );
        let e = Nvcomp::load(Path::new("libc.so.6")).err().unwrap();
        assert!(e.contains("nvcompGetProperties"), "{e}");
    }

    #[test]
    fn the_options_are_64_bytes() {
        assert_eq!(std::mem::size_of::<ZstdDecompressOpts>(), 64);
    }
}

#[cfg(test)]
mod real {
    use super::*;

    /// The real library (CI installs the wheel): its version picks an ABI we bind,
    /// every symbol we call resolves, and the temp-size query (no GPU needed) answers
    /// through our declaration of it: ~3 × the decoded bytes.
    #[test]
    fn the_wheels_nvcomp_loads_and_binds() {
        let path = match crate::probe::nvcomp() {
            Ok(p) => p,
            Err(why) => {
                if std::env::var_os("SVAR2_REQUIRE_GPU").is_some() {
                    panic!("{why}");
                }
                eprintln!("SKIP the_wheels_nvcomp_loads_and_binds: {why}");
                return;
            }
        };
        let n = Nvcomp::load(&path).unwrap();
        assert!(matches!(n.version / 1000, 5 | 6), "{}", n.version);
        let t = n.temp_bytes(16, 1 << 18, 16 << 18, 0);
        let t = t.unwrap();
        assert!(
            (4 << 20..64 << 20).contains(&t),
            "nvCOMP {}: {t} temp bytes",
            n.version
        );
    }
}
