//! The longest record line a conversion reads: set once from its memory budget, so a
//! single record larger than the budget allows (a 100 MB INFO string, ten million ALT
//! alleles) stops the conversion with an error naming the file and the record,
//! instead of growing every buffer it passes through past `--max-mem`.

use crate::error::{Error, Result};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The limit in bytes (no limit until a conversion sets one).
static MAX_LINE: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The whole budget (no limit until a conversion sets one).
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Bytes reading a text header takes per sample, beyond its `#CHROM` line: htslib's
/// sample dictionary and svar2's sample lists (357 MB measured for 10^6 samples of
/// 8-character names, of which htslib's header 193 MB).
pub const HEADER_BYTES_PER_SAMPLE: u64 = 300;

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
    BUDGET.store(
        usize::try_from(budget).unwrap_or(usize::MAX),
        Ordering::Relaxed,
    );
    NEEDED.store(0, Ordering::Relaxed);
}

/// Refuses a text header whose samples alone would take more than the budget, from
/// its `#CHROM` line read first (one line held, nothing parsed): htslib's header
/// parse would otherwise grow to hundreds of MB before the planner could refuse.
/// `line` is that `#CHROM` line.
pub(crate) fn check_header_samples(path: &Path, line: &[u8]) -> Result<()> {
    let budget = BUDGET.load(Ordering::Relaxed) as u64;
    let samples = (memchr::memchr_iter(b'\t', line).count() as u64).saturating_sub(8);
    let need = samples
        .saturating_mul(HEADER_BYTES_PER_SAMPLE)
        .saturating_add(4 * line.len() as u64);
    if need <= budget {
        return Ok(());
    }
    // (Not the header's fault: the budget's.)
    Err(Error::Inputs(format!(
        "{}: {samples} samples: reading them takes ~{} MB, over the memory budget of {} MB \
         (--max-mem); raise --max-mem (once the header fits, the plan names the least a \
         conversion needs)",
        path.display(),
        need.div_ceil(1 << 20),
        budget >> 20
    )))
}

/// Whether a budget is set (a conversion is planned), so headers are checked first.
pub(crate) fn budget_set() -> bool {
    BUDGET.load(Ordering::Relaxed) != usize::MAX
}

/// The memory budget reading works under (`usize::MAX` until one is set).
pub fn budget() -> usize {
    BUDGET.load(Ordering::Relaxed)
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

/// What to say of a BCF record of `len` bytes (its size read, exact) over the limit;
/// notes the budget it needs.
pub(crate) fn record_too_large(len: usize) -> String {
    let least = (len as u64).saturating_mul(LINE_BUDGET_FRACTION);
    needs(least);
    format!(
        "a BCF record of {len} bytes, over the {} bytes one record may take under this \
         memory budget (1/{LINE_BUDGET_FRACTION} of --max-mem): pass --max-mem {} or more, \
         or check the record",
        max_line(),
        mib_up(least)
    )
}

/// Share of the memory budget one record's FORMAT values may take laid out as 32-bit
/// values, every sample as wide as the widest (htslib's parse and the batch pad them
/// so): they are held twice (padded, then in the batch's column, ~1.5–2× that size),
/// about the share a line at a quarter takes held as text and columns (~2.6×).
pub const VALUES_BUDGET_FRACTION: u64 = 3;

/// The least budget a record refused for its size needs (the most over the refusals
/// since [`set_budget`]; 0 when none): what a plan that sampled it must ask for.
static NEEDED: AtomicU64 = AtomicU64::new(0);

/// Notes that a record needs a budget of `bytes` (see [`needed_budget`]).
fn needs(bytes: u64) {
    NEEDED.fetch_max(bytes, Ordering::Relaxed);
}

/// The least budget the records refused for their size since the budget was set
/// need (0 when none was): the plan reads it after sampling records.
pub fn needed_budget() -> u64 {
    NEEDED.load(Ordering::Relaxed)
}

/// Bytes one record's FORMAT values may take laid out (see
/// [`VALUES_BUDGET_FRACTION`]).
pub(crate) fn values_limit() -> u64 {
    BUDGET.load(Ordering::Relaxed) as u64 / VALUES_BUDGET_FRACTION
}

/// `Err` with the message for a record whose FORMAT fields — each `(name, values in
/// its widest sample, bytes a value)`, bytes of text where that is 1 — laid out for
/// every one of `samples` samples take more than [`VALUES_BUDGET_FRACTION`] of the
/// budget: a merged cohort's one 50-allele call with its 1,326 PL values, the other
/// samples `.`, is a short line whose PL takes 26 MB laid out at 5,000 samples (2.6 GB
/// at 500,000). Named by the field that takes the most.
pub(crate) fn check_format_widths<'a>(
    fields: impl Iterator<Item = (&'a [u8], usize, usize)>,
    samples: usize,
) -> std::result::Result<(), String> {
    let max = values_limit();
    let (mut total, mut widest, mut others) = (0u64, None, 0);
    for (name, per_sample, value_bytes) in fields {
        let bytes = (per_sample as u64)
            .saturating_mul(value_bytes as u64)
            .saturating_mul(samples as u64);
        total = total.saturating_add(bytes);
        match widest {
            Some((_, _, _, b)) if b >= bytes => others += 1,
            Some(_) => {
                others += 1;
                widest = Some((name, per_sample, value_bytes, bytes));
            }
            None => widest = Some((name, per_sample, value_bytes, bytes)),
        }
    }
    if total <= max {
        return Ok(());
    }
    let Some((field, per_sample, value_bytes, _)) = widest else {
        return Ok(());
    };
    let least = total.saturating_mul(VALUES_BUDGET_FRACTION);
    needs(least);
    let field = String::from_utf8_lossy(field);
    // (A string field is laid out a byte of its text at a time.)
    let unit = if value_bytes == 1 {
        "bytes of text"
    } else {
        "values"
    };
    let with = match others {
        0 => String::new(),
        n => format!(" (with the record's {n} other FORMAT field(s))"),
    };
    Err(format!(
        "FORMAT/{field} has {per_sample} {unit} in one sample, which laid out for all \
         {samples} samples{with} take {}, over the {} one record's values may take under \
         this memory budget (1/{VALUES_BUDGET_FRACTION} of --max-mem): pass --max-mem {} or \
         more, or drop the field (`bcftools annotate -x FORMAT/{field}`)",
        mib(total),
        mib(max),
        mib_up(least)
    ))
}

/// `bytes` in MiB, one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// `bytes` rounded up to a whole MiB, for a `--max-mem` to pass.
fn mib_up(bytes: u64) -> String {
    format!("{}MiB", bytes.div_ceil(1 << 20))
}

/// Bytes the parse takes per allele of a record (its offsets, htslib's pointers, the
/// allele columns: 284 MB measured for a record of 10^7 ALT alleles).
pub const BYTES_PER_ALLELE: usize = 32;

/// `Err` naming `path` and record `record` (1-based) when `line` is over the limit,
/// or names more alleles than the limit holds parsed.
pub(crate) fn check_line(path: &Path, record: u64, line: &[u8]) -> Result<()> {
    let max = max_line();
    // Alleles are at most half the line's bytes: most lines need no count.
    if line.len() <= max && line.len().saturating_mul(BYTES_PER_ALLELE / 2) <= max {
        return Ok(());
    }
    let mut cols = line.split(|&b| b == b'\t');
    let chrom = cols.next().unwrap_or(b"?");
    let pos = cols.next().unwrap_or(b"?");
    let alt = cols.nth(2).unwrap_or(b"");
    let alleles = memchr::memchr_iter(b',', alt).count() + 2;
    let msg = if line.len() > max {
        too_long(line.len())
    } else if alleles.saturating_mul(BYTES_PER_ALLELE) > max {
        let bytes = (alleles * BYTES_PER_ALLELE) as u64;
        needs(bytes.saturating_mul(LINE_BUDGET_FRACTION));
        format!(
            "{} ALT alleles take {} parsed, over the {} one record may take under this \
             memory budget (1/{LINE_BUDGET_FRACTION} of --max-mem): pass --max-mem {} or \
             more, or check the record",
            alleles - 1,
            mib(bytes),
            mib(max as u64),
            mib_up(bytes.saturating_mul(LINE_BUDGET_FRACTION))
        )
    } else {
        return Ok(());
    };
    let cut = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(64)]).into_owned();
    Err(Error::Record {
        path: path.into(),
        record,
        locus: format!("{}:{}", cut(chrom), cut(pos)),
        msg,
    })
}
