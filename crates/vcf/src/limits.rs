//! The longest record line a conversion reads: set once from its memory budget, so a
//! single record larger than the budget allows (a 100 MB INFO string, ten million ALT
//! alleles) stops the conversion with an error naming the file and the record,
//! instead of growing every buffer it passes through past `--max-mem`.

use crate::error::{Error, Result};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The limit in bytes (no limit until a conversion sets one).
static MAX_LINE: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Share of the memory budget one line may take: a line is held as text and again
/// as the columns it fills (~2.6× its length measured at 100 MB), beside the rest.
pub const LINE_BUDGET_FRACTION: u64 = 4;

/// Sets the longest line from a conversion's memory `budget` (bytes).
pub fn set_budget(budget: u64) {
    let max = (budget / LINE_BUDGET_FRACTION).max(1 << 20);
    MAX_LINE.store(
        usize::try_from(max).unwrap_or(usize::MAX),
        Ordering::Relaxed,
    );
}

/// The longest line a reader takes now.
pub fn max_line() -> usize {
    MAX_LINE.load(Ordering::Relaxed)
}

/// What to say of a line of `len` bytes (or more) over the limit.
pub(crate) fn too_long(len: usize) -> String {
    format!(
        "a line of {len} bytes or more, over the {} bytes one record may take under this \
         memory budget (1/{LINE_BUDGET_FRACTION} of --max-mem): raise --max-mem, or check \
         the record",
        max_line()
    )
}

/// `Err` naming `path` and record `record` (1-based) when `line` is over the limit.
pub(crate) fn check_line(path: &Path, record: u64, line: &[u8]) -> Result<()> {
    if line.len() <= max_line() {
        return Ok(());
    }
    let mut cols = line.split(|&b| b == b'\t');
    let chrom = cols.next().unwrap_or(b"?");
    let pos = cols.next().unwrap_or(b"?");
    let cut = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(64)]).into_owned();
    Err(Error::Record {
        path: path.into(),
        record,
        locus: format!("{}:{}", cut(chrom), cut(pos)),
        msg: too_long(line.len()),
    })
}
