//! The VCF side's errors: each names the file and, for a record, its number and
//! `contig:pos`, because that is what a user needs to find and fix the input.

use std::path::PathBuf;

/// Everything reading VCF/BCF can fail on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: cannot open: {msg}")]
    Open { path: PathBuf, msg: String },
    #[error("{path}: bad header: {msg}")]
    Header { path: PathBuf, msg: String },
    #[error("{path}: record {record} ({locus}): {msg}")]
    Record {
        path: PathBuf,
        record: u64,
        locus: String,
        msg: String,
    },
    /// A bgzipped input without the BGZF end-of-file block (see `truncation`);
    /// `records`: how many were read before its end (`None`: found up front).
    #[error("{}", truncated_message(.path, *.records))]
    Truncated { path: PathBuf, records: Option<u64> },
    /// A request that is malformed or names what is not there: a region that is not
    /// `CHR:BEG-END`, a sample or contig the header lacks, a query format that does not
    /// parse. (Python: `ValueError`.)
    #[error("{0}")]
    Request(String),
    /// Inputs that cannot be read together or converted as asked (different samples,
    /// headers that disagree, a contig split across files, a header htslib refuses).
    /// (Python: `svar2.InputError`.)
    #[error("{0}")]
    Inputs(String),
    /// svar2 itself failed: a thread that could not start, a reader that stopped.
    #[error("{0}")]
    Internal(String),
    /// Writing VCF or BCF out failed (`name`: the file, or standard output); a
    /// reader that went away (`| head`) is [`std::io::ErrorKind::BrokenPipe`].
    #[error("{name}: {source}")]
    Write {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A write to a reader that went away (`| head`): callers end quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Write { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// How a user opts in to converting what a cut-short input holds.
pub const OPT_IN: &str = "--allow-truncated (Python: allow_truncated=True)";

/// The message for an input cut short (the truncation module finds them); `records`:
/// how many were read before its end (`None`: found before reading any).
fn truncated_message(path: &std::path::Path, records: Option<u64>) -> String {
    // (`-` is standard input, as `inputs::is_stdin` says.)
    let name = if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    let read = match records {
        Some(n) => format!("its stream ended after {n} records"),
        None => "found before reading any record".into(),
    };
    format!(
        "{name}: cut short ({read}): it lacks the BGZF end-of-file block every complete \
         bgzipped VCF or BCF ends with (an interrupted download or copy); re-download or \
         re-create it, or pass {OPT_IN} to convert the records it holds"
    )
}

/// Bytes from a file shown in a message: invalid UTF-8 replaced, control bytes
/// (a NUL, a tab, an escape) written as escapes, so one error stays one clean line.
pub fn printable(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for c in String::from_utf8_lossy(bytes).chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;
