//! Owned htslib handles — an open file and a growable line buffer — each closed or
//! freed exactly once when dropped, so no reader carries its own close/free code.

use rust_htslib::htslib;
use std::ffi::{c_void, CString};
use std::path::Path;

extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
    #[link_name = "realloc"]
    fn libc_realloc(p: *mut c_void, n: usize) -> *mut c_void;
}

/// Frees memory htslib allocated with `malloc` and handed over (name tables, value
/// buffers).
///
/// # Safety
/// `p` is null or came from htslib's `malloc`/`realloc` and is not used afterwards.
pub(crate) unsafe fn free(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        unsafe { libc_free(p) }
    }
}

/// An open `htsFile`, closed on drop.
pub(crate) struct HtsFile(*mut htslib::htsFile);

// SAFETY: the handle is owned and used by one thread at a time (through &mut).
unsafe impl Send for HtsFile {}

impl HtsFile {
    /// Opens `path` for reading; `None` if htslib cannot (missing, unreadable).
    pub(crate) fn open(path: &Path) -> Option<HtsFile> {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: a plain open; the result is checked for null.
        let fp = unsafe { htslib::hts_open(c.as_ptr(), c"r".as_ptr()) };
        (!fp.is_null()).then_some(HtsFile(fp))
    }

    /// Owns `fp`, an open handle (closed on drop).
    ///
    /// # Safety
    /// `fp` is an open `htsFile` that nothing else closes.
    pub(crate) unsafe fn from_ptr(fp: *mut htslib::htsFile) -> Option<HtsFile> {
        (!fp.is_null()).then_some(HtsFile(fp))
    }

    /// The raw handle, for htslib calls (valid while `self` lives).
    pub(crate) fn as_ptr(&self) -> *mut htslib::htsFile {
        self.0
    }

    /// Whether htslib detected VCF text (plain or bgzipped).
    pub(crate) fn is_vcf_text(&self) -> bool {
        // SAFETY: the handle is open; the format pointer is checked for null.
        unsafe {
            let fmt = htslib::hts_get_format(self.0);
            !fmt.is_null() && (*fmt).format == htslib::htsExactFormat_vcf
        }
    }

    /// Reads the next line into `ks`: its length, −1 at end of file, < −1 on error.
    pub(crate) fn getline(&mut self, ks: &mut KString) -> i32 {
        const KS_SEP_LINE: i32 = 2;
        // SAFETY: the handle is open; htslib grows ks as needed.
        unsafe { htslib::hts_getline(self.0, KS_SEP_LINE, &mut ks.0) }
    }

    /// Whether the file is compressed (bgzipped or plain gzip).
    pub(crate) fn is_compressed(&self) -> bool {
        // SAFETY: the handle is open; the format pointer is checked for null.
        unsafe {
            let fmt = htslib::hts_get_format(self.0);
            !fmt.is_null() && (*fmt).compression != htslib::htsCompression_no_compression
        }
    }

    /// Whether the file is bgzipped (not plain text, not plain gzip).
    pub(crate) fn is_bgzf(&self) -> bool {
        // SAFETY: the handle is open; the format pointer is checked for null.
        unsafe {
            let fmt = htslib::hts_get_format(self.0);
            !fmt.is_null() && (*fmt).compression == htslib::htsCompression_bgzf
        }
    }

    /// The BGZF virtual offset of the next byte to read (htslib's `bgzf_tell`, a
    /// macro): where a reader of the raw blocks takes over.
    pub(crate) fn tell(&self) -> Option<u64> {
        let b = self.bgzf();
        if b.is_null() {
            return None;
        }
        // SAFETY: non-null, owned by the open handle; two plain fields are read.
        let (address, offset) = unsafe { ((*b).block_address, (*b).block_offset) };
        Some(((address as u64) << 16) | (offset as u64 & 0xffff))
    }

    /// Whether htslib found the stream, read to its end, without the BGZF
    /// end-of-file block (a file is checked at open, standard input at its end);
    /// `false` for plain text and plain gzip.
    pub(crate) fn lacks_eof_block(&self) -> bool {
        let Some(b) = self.bgzf_stream() else {
            return false;
        };
        // SAFETY: non-null, owned by the open handle; one bit field is read.
        unsafe { (*b).no_eof_block() != 0 }
    }

    /// After a read failed: whether it failed because the stream ended inside a BGZF
    /// block (a block's header or data read short, and the stream at its end), not
    /// because a whole block was damaged (it does not inflate, or its checksum
    /// differs): a download cut short and piped in.
    pub(crate) fn ended_inside_block(&self) -> bool {
        let Some(b) = self.bgzf_stream() else {
            return false;
        };
        // SAFETY: non-null, owned by the open handle; bit fields of it and of its
        // hFILE (checked for null) are read.
        unsafe {
            let errcode = (*b).errcode();
            let short = htslib::BGZF_ERR_IO | htslib::BGZF_ERR_HEADER;
            let damaged = htslib::BGZF_ERR_ZLIB | htslib::BGZF_ERR_CRC;
            let file = (*b).fp;
            errcode & short != 0
                && errcode & damaged == 0
                && !file.is_null()
                && (*file).at_eof() != 0
        }
    }

    /// After a line was read from a bgzipped stream: `Some(ends with \n)` once the
    /// stream has nothing more (the last byte of its last block, which htslib keeps
    /// after the end: the one place standard input shows whether it was cut inside
    /// a line); `None` while more follows, or when it cannot be told (plain text or
    /// gzip, threaded reading, an empty last block).
    pub(crate) fn ended_with_newline(&mut self) -> Option<bool> {
        let b = self.bgzf_stream()?;
        // SAFETY: non-null, owned by the open handle, read by one thread (no `mt`).
        // The next block is read only where the next line read would (what
        // `bgzf_peek` does, which is not called: on a failed read it overwrites the
        // error code with BGZF_ERR_ZLIB, hiding a stream that ended inside a block,
        // see `ended_inside_block`); a failed read is the next line read's to report.
        // At the end the read leaves both block buffers as the last block filled them.
        // The compressed buffer holds a whole block (at most 64 KiB, its size in bytes
        // 16-17 and its inflated size in its last 4), the inflated one that size.
        unsafe {
            if !(*b).mt.is_null() {
                return None;
            }
            if (*b).block_offset >= (*b).block_length && htslib::bgzf_read_block(b) < 0 {
                return None;
            }
            if (*b).block_length > (*b).block_offset {
                return None; // more follows
            }
            let c = (*b).compressed_block as *const u8;
            let u = (*b).uncompressed_block as *const u8;
            if c.is_null() || u.is_null() {
                return None;
            }
            let bsize = u16::from_le_bytes([*c.add(16), *c.add(17)]) as usize + 1;
            if bsize < 26 {
                return None;
            }
            let mut isize = [0u8; 4];
            std::ptr::copy_nonoverlapping(c.add(bsize - 4), isize.as_mut_ptr(), 4);
            let isize = u32::from_le_bytes(isize) as usize;
            if isize == 0 || isize > 1 << 16 {
                return None;
            }
            Some(*u.add(isize - 1) == b'\n')
        }
    }

    /// The BGZF stream under a bgzipped handle (`None` for plain text or gzip, or
    /// where htslib has none): the one the end-of-stream checks read.
    fn bgzf_stream(&self) -> Option<*mut htslib::BGZF> {
        let b = self.bgzf();
        (self.is_bgzf() && !b.is_null()).then_some(b)
    }

    /// The BGZF stream under the handle, for index iterators.
    pub(crate) fn bgzf(&self) -> *mut htslib::BGZF {
        // SAFETY: the handle is open.
        unsafe { htslib::hts_get_bgzfp(self.0) }
    }
}

impl Drop for HtsFile {
    fn drop(&mut self) {
        // SAFETY: opened by hts_open, closed only here.
        unsafe { htslib::hts_close(self.0) };
    }
}

/// An htslib `kstring_t` line buffer, freed on drop.
pub(crate) struct KString(htslib::kstring_t);

// SAFETY: the buffer is owned and used by one thread at a time (through &mut).
unsafe impl Send for KString {}

impl KString {
    /// An empty buffer (htslib allocates on first use).
    pub(crate) fn new() -> KString {
        KString(htslib::kstring_t {
            l: 0,
            m: 0,
            s: std::ptr::null_mut(),
        })
    }

    /// The bytes held.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.0.s.is_null() {
            return &[];
        }
        // SAFETY: htslib keeps `l` valid bytes at `s`.
        unsafe { std::slice::from_raw_parts(self.0.s as *const u8, self.0.l) }
    }

    /// Replaces the contents (NUL-terminated, as htslib expects).
    pub(crate) fn set(&mut self, bytes: &[u8]) {
        let ks = &mut self.0;
        if ks.m < bytes.len() + 1 || ks.s.is_null() {
            // SAFETY: `s` is null or was allocated by htslib with malloc; realloc keeps
            // ownership with this buffer (freed in Drop).
            let p = unsafe { libc_realloc(ks.s as *mut c_void, bytes.len() + 1) };
            assert!(!p.is_null(), "out of memory for one VCF line");
            ks.s = p as *mut std::ffi::c_char;
            ks.m = bytes.len() + 1;
        }
        // SAFETY: `s` has room for bytes.len() + 1 bytes (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), ks.s as *mut u8, bytes.len());
            *ks.s.add(bytes.len()) = 0;
        }
        ks.l = bytes.len();
    }

    /// The raw buffer, for htslib calls that fill or parse it.
    pub(crate) fn raw(&mut self) -> &mut htslib::kstring_t {
        &mut self.0
    }
}

impl Drop for KString {
    fn drop(&mut self) {
        // SAFETY: `s` is null or htslib's malloc'd buffer, freed only here.
        unsafe { free(self.0.s as *mut c_void) };
    }
}
