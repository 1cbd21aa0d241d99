//! One bgzipped VCF read as a stream with its lines parsed ahead on the encoding pool:
//! the `reader` thread only cuts the inflated text into blocks of lines and joins the
//! parsed blocks in order, so the parse — most of the reading of a FORMAT-heavy file,
//! which one streaming reader did alone — runs on every core. This is how a file
//! without an index, and any file the plan gives one reader, is split by record
//! ranges. Lines the direct parse does not
//! take are read on the `reader` thread in order (`svar2_vcf::lines`), so the store,
//! the messages and the warnings are those of reading line by line.

use crossbeam_channel::{bounded, Receiver, Sender};
use std::collections::VecDeque;
use svar2_vcf::columns::RecordColumns;
use svar2_vcf::error::{Error, Result};
use svar2_vcf::extract::Extractor;
use svar2_vcf::lines::{LineBlock, LineParser};
use svar2_vcf::ragged::Batch;
use svar2_vcf::source::{TextLine, VcfReader};

/// Encoding threads from which lines are parsed ahead (the planner charges each
/// parser the record it parses, so the constant is its).
pub(crate) use svar2_planner::PARSE_AHEAD_THREADS;

/// Lines a block holds at most: a hand-off per 64 lines costs nothing beside their
/// parse, and the last block of a chunk row is short.
const BLOCK_LINES: usize = 64;
/// Text a block holds at most (a longer line makes a block of its own): the blocks in
/// flight, one per parser, hold ~256 KiB each, little beside a batch.
const BLOCK_BYTES: usize = 256 * 1024;

/// Where whole chunk rows of records go: `next` gives an empty batch for the row
/// starting at a record (`None` once the writer hung up), `tx` takes each full one
/// (and the last, short one).
pub(crate) struct Rows<'a> {
    pub variants_chunk: usize,
    pub watch: crate::row_limit::RowWatch,
    pub set: &'a crate::arrays::ArraySet,
    pub next: &'a dyn Fn(u64) -> Option<Batch>,
    pub tx: &'a Sender<svar2_vcf::Result<Batch>>,
}

/// A block parsed on the pool: its parser back, the block, the records it took
/// (the block's first `taken` lines, as a batch of their own).
type Parsed = (LineParser, LineBlock, Batch, usize);

/// Reads `reader`'s records from record `n` on into `batch` (the row holding record
/// `n`), parsing lines ahead on `pool`, and sends the rows to `rows.tx`; an error
/// goes there too, after the records before it.
pub(crate) fn read(
    reader: &mut VcfReader,
    ex: &mut Extractor,
    columns: &RecordColumns,
    pool: &rayon::ThreadPool,
    mut rows: Rows,
    batch: Batch,
    n: u64,
) {
    if let Err(e) = read_rows(reader, ex, columns, pool, &mut rows, batch, n) {
        let _ = rows.tx.send(Err(e));
    }
}

/// [`read`]'s work; `Ok` also when the writer hung up (it has an error of its own).
fn read_rows(
    reader: &mut VcfReader,
    ex: &mut Extractor,
    columns: &RecordColumns,
    pool: &rayon::ThreadPool,
    rows: &mut Rows,
    mut batch: Batch,
    mut n: u64,
) -> Result<()> {
    let vc = rows.variants_chunk as u64;
    let n_samples = reader.schema.samples.len();
    if batch.len() as u64 == vc {
        if rows.tx.send(Ok(batch)).is_err() {
            return Ok(());
        }
        let Some(next) = (rows.next)(n) else {
            return Ok(());
        };
        batch = next;
    }
    // One parser a pool thread: a block each keeps every thread busy, and the blocks
    // in flight bounded.
    let mut idle: Vec<LineParser> = (0..pool.current_num_threads().max(1))
        .map(|_| reader.line_parser(ex, columns))
        .collect();
    let mut spare: Vec<(LineBlock, Batch)> = Vec::new();
    let mut in_flight: VecDeque<Receiver<Parsed>> = VecDeque::new();
    // Lines cut into blocks so far (a line is a record: none is left out), and how
    // the input ended: at a `\n`, with a last line without one to read here, or with
    // an error to give once the records before it are in.
    let mut lines = n;
    let mut end: Option<Result<Option<Vec<u8>>>> = None;
    loop {
        while end.is_none() && !idle.is_empty() {
            let (mut block, mut sub) = spare.pop().unwrap_or_else(|| {
                (
                    LineBlock::default(),
                    Batch::new(&columns.specs, n_samples, 0),
                )
            });
            block.reset(lines);
            sub.reset(lines);
            // A block stays inside one chunk row, so its records join one batch.
            let room = (vc - lines % vc) as usize;
            while block.len() < BLOCK_LINES.min(room) && block.bytes() < BLOCK_BYTES {
                match reader.next_text_line(lines) {
                    Ok(TextLine::Line) => {
                        block.push(reader.text_line());
                        lines += 1;
                    }
                    // The last line is copied now: lines read here later replace
                    // the reader's current line.
                    Ok(TextLine::Last) => {
                        end = Some(Ok(Some(reader.text_line().to_vec())));
                        break;
                    }
                    Ok(TextLine::End) => {
                        end = Some(Ok(None));
                        break;
                    }
                    Err(e) => {
                        end = Some(Err(e));
                        break;
                    }
                }
            }
            if block.is_empty() {
                spare.push((block, sub));
                break;
            }
            let mut parser = idle.pop().expect("a parser is idle");
            let (done, parsed) = bounded(1);
            pool.spawn(move || {
                let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    parser.parse(&block, &mut sub)
                }));
                // A parser that panicked sends nothing: the reader thread reports an
                // internal error instead of a short store.
                if let Ok(taken) = taken {
                    let _ = done.send((parser, block, sub, taken));
                }
            });
            in_flight.push_back(parsed);
        }
        let Some(parsed) = in_flight.pop_front() else {
            break;
        };
        let (parser, block, sub, taken) = parsed.recv().map_err(|_| {
            Error::Internal(
                "internal error: a parsing thread stopped; nothing was kept — please report it"
                    .into(),
            )
        })?;
        idle.push(parser);
        let from = batch.len();
        batch.append_range(&sub, 0, taken);
        reader.note_order_of(&batch, from, block.first)?;
        for i in taken..block.len() {
            reader.read_line(ex, block.line(i), false, &mut batch, block.first + i as u64)?;
        }
        n += block.len() as u64;
        let full = batch.len() as u64 == vc;
        let (path, schema) = (&reader.path, &reader.schema);
        rows.watch.look(path, schema, rows.set, n, &batch, full)?;
        spare.push((block, sub));
        if batch.len() as u64 == vc {
            if rows.tx.send(Ok(batch)).is_err() {
                return Ok(());
            }
            let Some(next) = (rows.next)(n) else {
                return Ok(());
            };
            batch = next;
        }
    }
    match end {
        Some(Err(e)) => return Err(reader.reading_error(e)),
        // The input's last line, without its `\n`: read here, as line by line.
        Some(Ok(Some(last))) => {
            reader.read_line(ex, &last, true, &mut batch, n)?;
        }
        _ => {}
    }
    if !batch.is_empty() {
        let _ = rows.tx.send(Ok(batch));
    }
    Ok(())
}
