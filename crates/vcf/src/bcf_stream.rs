//! A BCF read record by record by htslib, its BGZF blocks inflated ahead on svar2's
//! own `inflate` threads where the conversion has the threads. htslib's reader
//! inflates every block on the reading thread — a quarter of a FORMAT-heavy BCF's
//! conversion, on the thread the first chunk row waits for — and its thread pool's
//! block-by-block hand-offs cost more than they save on two cores (sim.bcf 0.37 ->
//! 0.49 s). Here the blocks are inflated as VCF text's are (`inflate`) and handed to
//! htslib through an `hFILE` of its own (its `read` takes the inflated bytes in order),
//! which htslib opens as an uncompressed BCF: htslib still reads, checks and unpacks
//! every record, and the bytes it reads are the file's.

use crate::hts::HtsFile;
use crate::inflate::Inflated;
use rust_htslib::bcf::{self, header::HeaderView};
use rust_htslib::htslib;
use std::ffi::{c_int, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An open BCF, its header, read record by record.
pub(crate) struct BcfStream {
    fp: HtsFile,
    header: Arc<HeaderView>,
    path: PathBuf,
    /// Threads inflating the blocks (0: htslib inflates them on the reading thread).
    workers: usize,
    cut: bool,
    /// Why the inflated bytes ended early (a damaged block): htslib then saw an
    /// error, or an end between two records that only this tells from the file's.
    damaged: Arc<Mutex<Option<String>>>,
}

impl BcfStream {
    /// Opens `path`; a bgzipped file's blocks are inflated on `workers` threads when
    /// that is at least one (see [`Inflated::start`], which `cut` is passed to), else
    /// by htslib. Where the inflated stream cannot be opened, htslib's own reading
    /// takes over, unless a block before the first record is damaged: that is the
    /// error ([`OpenError::Damaged`]), never read past.
    pub(crate) fn open(path: &Path, workers: usize, cut: bool) -> Result<BcfStream, OpenError> {
        if workers > 0 && is_bgzf(path) {
            let damaged = Arc::new(Mutex::new(None));
            let opened = inflated_file(path, workers, cut, &damaged)
                .map(|fp| Self::reading(fp, path, workers, cut, damaged.clone()));
            match opened {
                Some(Ok(stream)) => return Ok(stream),
                Some(Err(e)) => tracing::debug!("{}: inflated by htslib ({e})", path.display()),
                None => {}
            }
            if let Some(e) = damaged.lock().ok().and_then(|d| d.clone()) {
                return Err(OpenError::Damaged(e));
            }
        }
        let fp = HtsFile::open(path).ok_or(OpenError::NotBcf("htslib cannot open it".into()));
        let opened = fp.and_then(|fp| {
            Self::reading(fp, path, 0, cut, Arc::new(Mutex::new(None))).map_err(OpenError::NotBcf)
        });
        match opened {
            // htslib says only that it cannot read a header: svar2's inflate names a
            // damaged block there, where there is one.
            Err(OpenError::NotBcf(_)) if workers == 0 && is_bgzf(path) => {
                match BcfStream::open(path, 1, cut) {
                    Err(OpenError::Damaged(e)) => Err(OpenError::Damaged(e)),
                    _ => opened,
                }
            }
            opened => opened,
        }
    }

    /// `fp` at its first record, its header read.
    fn reading(
        fp: HtsFile,
        path: &Path,
        workers: usize,
        cut: bool,
        damaged: Arc<Mutex<Option<String>>>,
    ) -> Result<BcfStream, String> {
        // SAFETY: the handle is open; the format pointer is checked for null.
        let is_variants = unsafe {
            let fmt = htslib::hts_get_format(fp.as_ptr());
            !fmt.is_null() && (*fmt).category == htslib::htsFormatCategory_variant_data
        };
        if !is_variants {
            return Err("htslib does not read it as variant data".into());
        }
        // SAFETY: the handle is open; the header is checked for null and then owned
        // by the view, which frees it.
        let header = unsafe {
            let h = htslib::bcf_hdr_read(fp.as_ptr());
            if h.is_null() {
                return Err("htslib cannot read its header".into());
            }
            HeaderView::from_ptr(h)
        };
        Ok(BcfStream {
            fp,
            header: Arc::new(header),
            path: path.to_path_buf(),
            workers,
            cut,
            damaged,
        })
    }

    /// The same file opened again from its start, a last block cut short read as its
    /// end (`--allow-truncated`), its blocks inflated here (one thread at least), so
    /// that a block damaged elsewhere stays an error, told apart from the cut.
    /// `Ok(None)` when it is read so already, or cannot be (htslib's own reader then
    /// reads it as before); `Err` for a damaged block before the first record.
    pub(crate) fn reopen_cut(&self) -> Result<Option<BcfStream>, String> {
        if self.cut && self.is_inflated() {
            return Ok(None);
        }
        match BcfStream::open(&self.path, self.workers.max(1), true) {
            Ok(stream) => Ok(stream.is_inflated().then_some(stream)),
            Err(OpenError::Damaged(e)) => Err(e),
            Err(OpenError::NotBcf(_)) => Ok(None),
        }
    }

    /// Makes every read from here on fail with `e`, a damaged block met elsewhere.
    pub(crate) fn fail(&self, e: String) {
        if let Ok(mut d) = self.damaged.lock() {
            *d = Some(e);
        }
    }

    /// Whether svar2 inflates the blocks (htslib reads inflated bytes).
    pub(crate) fn is_inflated(&self) -> bool {
        self.workers > 0
    }

    /// The file's header.
    pub(crate) fn header(&self) -> &HeaderView {
        &self.header
    }

    /// A record to read into, reused from record to record.
    pub(crate) fn empty_record(&self) -> bcf::Record {
        bcf::Record::new(self.header.clone())
    }

    /// Reads the next record into `rec` (unpacked): `None` at the end, `Err` with
    /// why it cannot be read.
    pub(crate) fn read(&mut self, rec: &mut bcf::Record) -> Option<Result<(), ReadError>> {
        // SAFETY: the handle and header are open; `rec` was made for this header.
        let r = unsafe { htslib::bcf_read(self.fp.as_ptr(), self.header.as_ptr(), rec.inner) };
        // A record read whole came from blocks before any damaged one (their bytes
        // are handed out first); the read that ran into the damage is the error.
        let damaged = || self.damaged.lock().ok().and_then(|d| d.clone());
        match r {
            0 if !self.failed_early() => {
                // SAFETY: a record htslib just read and checked.
                unsafe { htslib::bcf_unpack(rec.inner, htslib::BCF_UN_ALL as c_int) };
                Some(Ok(()))
            }
            -1 if damaged().is_none() => None,
            _ => Some(Err(match damaged() {
                Some(e) => ReadError::Damaged(e),
                None => ReadError::Invalid,
            })),
        }
    }

    /// Whether [`BcfStream::fail`] marked the stream before it read anything of its
    /// own: htslib's reader, not inflated here, cannot meet the damage itself.
    fn failed_early(&self) -> bool {
        !self.is_inflated() && self.damaged.lock().is_ok_and(|d| d.is_some())
    }
}

/// Why a file cannot be opened as a BCF.
pub(crate) enum OpenError {
    /// A block before the first record is damaged (named, with its offset).
    Damaged(String),
    /// htslib cannot read it as a BCF (why).
    NotBcf(String),
}

/// Why a record cannot be read.
pub(crate) enum ReadError {
    /// A block svar2 inflated is damaged (named, with its offset): an error even in a
    /// file cut short whose records are converted as far as they go.
    Damaged(String),
    /// htslib could not read the record: where a file was cut short, the cut.
    Invalid,
}

/// Whether `path` starts with a BGZF block header (gzip, FEXTRA, the `BC` subfield).
fn is_bgzf(path: &Path) -> bool {
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok();
    read && head[..4] == [31, 139, 8, 4] && head[12..16] == [b'B', b'C', 2, 0]
}

extern "C" {
    /// htslib's constructor of an `hFILE` of a backend of one's own (`hfile_internal.h`,
    /// exported for its plugins): a zeroed struct of `struct_size` bytes whose start is
    /// the `hFILE`, with a buffer of `capacity` bytes.
    fn hfile_init(
        struct_size: usize,
        mode: *const std::ffi::c_char,
        capacity: usize,
    ) -> *mut htslib::hFILE;
}

/// htslib's `struct hFILE_backend`: what an `hFILE` calls to read, write, seek, flush
/// and close its stream.
#[repr(C)]
struct Backend {
    read: unsafe extern "C" fn(*mut htslib::hFILE, *mut c_void, usize) -> isize,
    write: unsafe extern "C" fn(*mut htslib::hFILE, *const c_void, usize) -> isize,
    seek: unsafe extern "C" fn(*mut htslib::hFILE, htslib::off_t, c_int) -> htslib::off_t,
    flush: unsafe extern "C" fn(*mut htslib::hFILE) -> c_int,
    close: unsafe extern "C" fn(*mut htslib::hFILE) -> c_int,
}

static BACKEND: Backend = Backend {
    read: read_inflated,
    write: refuse_write,
    seek: refuse_seek,
    flush: flush_nothing,
    close: close_inflated,
};

/// An `hFILE` over inflated bytes: htslib's struct first, as `hfile_init` lays it out.
#[repr(C)]
struct InflatedFile {
    base: htslib::hFILE,
    source: *mut Source,
}

/// The bytes an [`InflatedFile`] hands out, in order.
struct Source {
    inflated: Inflated,
    buf: Vec<u8>,
    pos: usize,
    damaged: Arc<Mutex<Option<String>>>,
}

/// Bytes htslib's buffer holds (its reads of a record's blobs larger than this go
/// straight to the record).
const HFILE_BUFFER: usize = 256 * 1024;

/// `path` inflated on `workers` threads, opened by htslib through an [`InflatedFile`];
/// `None` where that cannot be done (the caller opens the file itself).
fn inflated_file(
    path: &Path,
    workers: usize,
    cut: bool,
    damaged: &Arc<Mutex<Option<String>>>,
) -> Option<HtsFile> {
    let inflated = Inflated::start(path, 0, cut, workers).ok()?;
    let name = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let source = Box::new(Source {
        inflated,
        buf: Vec::new(),
        pos: 0,
        damaged: damaged.clone(),
    });
    // SAFETY: hfile_init allocates a zeroed struct of our size, its start an hFILE
    // with its buffer; the backend and source are set before htslib reads through it,
    // and the source is freed by the backend's close (or here if htslib cannot open
    // the stream, after hclose called that close).
    unsafe {
        let fp = hfile_init(
            std::mem::size_of::<InflatedFile>(),
            c"r".as_ptr(),
            HFILE_BUFFER,
        );
        if fp.is_null() {
            return None;
        }
        let file = fp as *mut InflatedFile;
        (*file).base.backend = &BACKEND as *const Backend as *const htslib::hFILE_backend;
        (*file).source = Box::into_raw(source);
        let hts = htslib::hts_hopen(fp, name.as_ptr(), c"r".as_ptr());
        if hts.is_null() {
            htslib::hclose(fp);
            return None;
        }
        HtsFile::from_ptr(hts)
    }
}

/// The backend's read: the next inflated bytes, 0 at their end, −1 (EIO) where they
/// ended at a damaged block (kept for the message).
unsafe extern "C" fn read_inflated(fp: *mut htslib::hFILE, buffer: *mut c_void, n: usize) -> isize {
    // SAFETY: `fp` is an InflatedFile made by `inflated_file`, its source live until
    // close; `buffer` has room for `n` bytes (htslib's contract).
    unsafe {
        let source = &mut *(*(fp as *mut InflatedFile)).source;
        loop {
            let left = source.buf.len() - source.pos;
            if left > 0 {
                let k = left.min(n);
                std::ptr::copy_nonoverlapping(
                    source.buf.as_ptr().add(source.pos),
                    buffer as *mut u8,
                    k,
                );
                source.pos += k;
                return k as isize;
            }
            match source.inflated.next_text() {
                Some(Ok(next)) => {
                    let spent = std::mem::replace(&mut source.buf, next);
                    source.inflated.give_back(spent);
                    source.pos = 0;
                }
                Some(Err(e)) => {
                    if let Ok(mut d) = source.damaged.lock() {
                        *d = Some(e);
                    }
                    set_errno(libc::EIO);
                    return -1;
                }
                None => return 0,
            }
        }
    }
}

/// The backend's write: the stream is read-only.
unsafe extern "C" fn refuse_write(_: *mut htslib::hFILE, _: *const c_void, _: usize) -> isize {
    set_errno(libc::EBADF);
    -1
}

/// The backend's seek: the stream is read once, in order.
unsafe extern "C" fn refuse_seek(
    _: *mut htslib::hFILE,
    _: htslib::off_t,
    _: c_int,
) -> htslib::off_t {
    set_errno(libc::ESPIPE);
    -1
}

/// The backend's flush: nothing is written.
unsafe extern "C" fn flush_nothing(_: *mut htslib::hFILE) -> c_int {
    0
}

/// The backend's close: frees the source, which stops the inflating threads (htslib
/// frees the `hFILE` itself).
unsafe extern "C" fn close_inflated(fp: *mut htslib::hFILE) -> c_int {
    // SAFETY: `fp` is an InflatedFile whose source came from Box::into_raw and is
    // freed only here (htslib closes an hFILE once).
    unsafe {
        let file = fp as *mut InflatedFile;
        let source = std::mem::replace(&mut (*file).source, std::ptr::null_mut());
        if !source.is_null() {
            drop(Box::from_raw(source));
        }
    }
    0
}

/// Sets this thread's `errno`, which htslib reads after a backend call fails.
fn set_errno(e: c_int) {
    // SAFETY: the location of this thread's errno, as libc gives it.
    unsafe {
        #[cfg(any(target_os = "macos", target_os = "ios"))]
        let at = libc::__error();
        #[cfg(not(any(target_os = "macos", target_os = "ios")))]
        let at = libc::__errno_location();
        *at = e;
    }
}
