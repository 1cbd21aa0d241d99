//! Why a read failed, when the file itself is the cause: a bgzipped VCF or BCF cut
//! short (an interrupted download or copy) lacks the BGZF end-of-file block.

use std::path::Path;

/// The empty block every complete BGZF file (bgzipped VCF, BCF) ends with.
const BGZF_EOF: [u8; 28] = [
    0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, 0x42, 0x43, 2, 0, 0x1b, 0, 3, 0, 0, 0, 0, 0, 0, 0,
    0, 0,
];

/// Names the usual cause of a read failure in a compressed file: it was cut short
/// (an interrupted download or copy) and lacks the BGZF end-of-file block.
pub fn truncation_hint(path: &Path) -> &'static str {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return "";
    };
    let mut head = [0u8; 2];
    let mut tail = [0u8; 28];
    let truncated = f.read_exact(&mut head).is_ok()
        && head == [0x1f, 0x8b]
        && f.seek(SeekFrom::End(-28)).is_ok()
        && f.read_exact(&mut tail).is_ok()
        && tail != BGZF_EOF;
    if truncated {
        "; the file is truncated (no BGZF end-of-file block): it was cut short, \
         re-download or re-create it"
    } else {
        ""
    }
}
