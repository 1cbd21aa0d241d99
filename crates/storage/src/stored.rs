//! A chunk's stored bytes as a read hands them over: owned (zarrs' reads, `pread`
//! where a file cannot be mapped) or a range of a shard file mapped into memory — the
//! reader's hot path, where a 4 KiB patch chunk is ~400 stored bytes and a copy, a
//! system call and a fresh buffer per chunk cost more than decoding it.

use std::ops::Deref;
use std::sync::Arc;

/// One chunk's stored bytes (as encoded, checksum included).
pub struct Stored(Repr);

enum Repr {
    Owned(Vec<u8>),
    Mapped {
        map: Arc<memmap2::Mmap>,
        at: usize,
        len: usize,
    },
}

impl Stored {
    pub fn owned(bytes: Vec<u8>) -> Stored {
        Stored(Repr::Owned(bytes))
    }

    /// `len` bytes at `at` of `map` (the caller checked they lie inside it).
    pub fn mapped(map: Arc<memmap2::Mmap>, at: usize, len: usize) -> Stored {
        debug_assert!(at + len <= map.len());
        Stored(Repr::Mapped { map, at, len })
    }

    /// The bytes as a vector (a copy only for mapped bytes).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Owned(v) => v,
            Repr::Mapped { .. } => self.deref().to_vec(),
        }
    }
}

impl Deref for Stored {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::Mapped { map, at, len } => &map[*at..*at + *len],
        }
    }
}

impl AsRef<[u8]> for Stored {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stored({} bytes)", self.len())
    }
}
