//! Inputs cut short (an interrupted download or copy): a bgzipped VCF or BCF that
//! lacks the BGZF end-of-file block is refused before anything is read, standard
//! input when its stream ends, unless the user opts in (`--allow-truncated`) to
//! convert the records it holds. One message for every way it is found.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The empty block every complete BGZF file (bgzipped VCF, BCF) ends with.
const BGZF_EOF: [u8; 28] = [
    0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, 0x42, 0x43, 2, 0, 0x1b, 0, 3, 0, 0, 0, 0, 0, 0, 0,
    0, 0,
];

pub use crate::error::OPT_IN;

/// Whether `path` is a BGZF file (bgzipped VCF, BCF) without the end-of-file block:
/// it was cut short. Reads its first 16 and last 28 bytes; plain text, plain gzip
/// (which has no such block) and unreadable files are `false`.
pub fn lacks_eof_block(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = [0u8; 16];
    let mut tail = [0u8; 28];
    // gzip magic, deflate, FEXTRA, XLEN 6 with the `BC` subfield: a BGZF block.
    let bgzf = f.read_exact(&mut head).is_ok()
        && head[..3] == [0x1f, 0x8b, 8]
        && head[3] & 4 != 0
        && head[10..12] == [6, 0]
        && head[12..16] == [b'B', b'C', 2, 0];
    bgzf && f.seek(SeekFrom::End(-28)).is_ok()
        && f.read_exact(&mut tail).is_ok()
        && tail != BGZF_EOF
}

/// Names the usual cause of a read failure in a compressed file: it lacks the BGZF
/// end-of-file block (appended to the failure's own message).
pub fn truncation_hint(path: &Path) -> &'static str {
    if lacks_eof_block(path) {
        "; the file lacks the BGZF end-of-file block: it was cut short (an interrupted \
         download or copy), re-download or re-create it"
    } else {
        ""
    }
}

/// Checks every input file (standard input is checked when its stream ends) for the
/// end-of-file block before anything is read: a cut-short one is an error, or with
/// `allow` a warning, once per file. Returns the inputs cut short.
pub fn check_complete(inputs: &[PathBuf], allow: bool) -> Result<Vec<PathBuf>> {
    let mut cut = Vec::new();
    for p in inputs {
        if crate::inputs::is_stdin(p) || !lacks_eof_block(p) {
            continue;
        }
        if !allow {
            return Err(Error::Truncated {
                path: p.clone(),
                records: None,
            });
        }
        warn_allowed(p, None);
        cut.push(p.clone());
    }
    Ok(cut)
}

/// The one warning for an input cut short that the user chose to convert.
pub(crate) fn warn_allowed(path: &Path, records: Option<u64>) {
    let name = if crate::inputs::is_stdin(path) {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    let what = match records {
        Some(n) => format!("{n} records converted"),
        None => "converting the records it holds".into(),
    };
    tracing::warn!(
        "{name}: cut short (no BGZF end-of-file block); {what} (a last record the cut \
         fell inside is dropped; where it fell inside a BGZF block, that block's records), \
         as --allow-truncated asks"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BGZF file without its last block is cut short; with it, or as plain gzip or
    /// text, it is not.
    #[test]
    fn only_bgzf_without_the_eof_block_is_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("t.gz");
        {
            // (htslib's writer directly: the testing module sits above this one.)
            use std::io::Write;
            let mut w = rust_htslib::bgzf::Writer::from_path(&whole).unwrap();
            w.write_all(b"a\tb\n".repeat(1000).as_slice()).unwrap();
        }
        assert!(!lacks_eof_block(&whole));
        let bytes = std::fs::read(&whole).unwrap();
        let cut = dir.path().join("cut.gz");
        std::fs::write(&cut, &bytes[..bytes.len() - 28]).unwrap();
        assert!(lacks_eof_block(&cut));
        let text = dir.path().join("t.txt");
        std::fs::write(
            &text,
            b"plain text, long enough to have a tail of 28 bytes\n",
        )
        .unwrap();
        assert!(!lacks_eof_block(&text));
        // Plain gzip (flags 0): no BGZF block header.
        let gz = dir.path().join("plain.gz");
        let mut plain = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        plain.extend_from_slice(&[0u8; 40]);
        std::fs::write(&gz, plain).unwrap();
        assert!(!lacks_eof_block(&gz));
        let e = check_complete(std::slice::from_ref(&cut), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cut.gz") && e.contains("--allow-truncated"),
            "{e}"
        );
        assert_eq!(check_complete(&[cut.clone(), text], true).unwrap(), [cut]);
    }
}
