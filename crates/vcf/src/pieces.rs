//! Reading through the index: contigs split into pieces by position, and one piece's
//! records read into batches. A record belongs to the piece that holds its POS (a
//! record overlapping a boundary is read once). Scheduling pieces on readers and
//! re-joining them in order is the conversion's (`svar2_convert::schedule`).

use crate::columns::RecordColumns;
use crate::direct::Direct;
use crate::error::{Error, Result};
use crate::extract::Extractor;
use crate::fastvcf::{Lookups, TextReader};
use crate::hts::{HtsFile, KString};
use crate::index::Index;
use crate::ragged::Batch;
use crate::schema::Schema;
use rust_htslib::bcf::{self, header::HeaderView};
use rust_htslib::htslib;
use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One position range of one contig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Store contig index (what `variant_contig` stores).
    pub rid: u32,
    /// The index's id for the contig.
    pub tid: i32,
    /// 0-based, half-open.
    pub beg: i64,
    pub end: i64,
    /// True for the contig's last piece (where its record count is checked).
    pub last_of_contig: bool,
    /// Which input holds it (an index into the inputs in reading order).
    pub file: u32,
}

pub use crate::index::is_text;

/// Splits every contig with records into about `per_contig` pieces of about equal
/// bytes (cut where the index's file offsets put each share; by the header's length
/// where the index cannot tell) and orders contigs as the file does. Cut by bytes,
/// each piece is about as much work, and the pieces follow the records: a file of
/// one region of a long contig, or of records packed into its start, is cut inside
/// them instead of into pieces of which all but one are empty. `None` when the input
/// has no usable index.
///
/// A contig of more than `per_contig` × `piece_rows` records (by `counts`) is cut
/// into pieces of about `piece_rows` records instead, still where the index puts
/// each share of its bytes (so never finer than the index tells offsets apart).
pub fn plan_pieces(
    input: &Path,
    schema: &Schema,
    counts: &[u64],
    (per_contig, piece_rows): (usize, u64),
) -> Option<Vec<Piece>> {
    cut_pieces(input, schema, counts, (per_contig, piece_rows), Cut::Bytes)
}

/// Where [`cut_pieces`] cuts a contig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Where the index puts each share of its bytes (by position where it cannot tell).
    Bytes,
    /// At equal shares of the header's length (one piece when it gives none).
    Position,
}

/// [`plan_pieces`], cut as `cut` says. Positions find what bytes cannot: the index
/// tells offsets apart only bin by bin (16 kb), so records packed closer than that
/// are one lump to it.
pub fn cut_pieces(
    input: &Path,
    schema: &Schema,
    counts: &[u64],
    (per_contig, piece_rows): (usize, u64),
    cut: Cut,
) -> Option<Vec<Piece>> {
    let index = Index::load(input, is_text(input))?;
    let mut contigs = Vec::new();
    for (rid, c) in schema.contigs.iter().enumerate() {
        if counts.get(rid).copied().unwrap_or(0) == 0 {
            continue;
        }
        let tid = index.tid(&c.name, c.hts_rid)?;
        contigs.push((
            index.first_offset(tid)?,
            rid as u32,
            tid,
            c.length.filter(|&l| l > 0),
        ));
    }
    contigs.sort();
    let mut pieces = Vec::new();
    for (_, rid, tid, length) in contigs {
        let k = per_contig.max(1);
        let mut cuts: Vec<i64> = match cut {
            Cut::Bytes => {
                let records = counts.get(rid as usize).copied().unwrap_or(0);
                let fine = records
                    .div_ceil(piece_rows.max(1))
                    .min(MAX_PIECES_PER_CONTIG);
                let k = k.max(fine as usize);
                let shares: Vec<f64> = (1..k).map(|i| i as f64 / k as f64).collect();
                let mut cuts: Vec<i64> = index
                    .locate_shares(tid, length, &shares)
                    .into_iter()
                    .map(|c| c as i64)
                    .collect();
                // (The index cannot tell where some shares lie: by position, then.)
                if cuts.contains(&0) {
                    cuts = vec![0];
                }
                cuts
            }
            Cut::Position => vec![0],
        };
        if cuts.contains(&0) {
            // The index cannot tell: by position, where the header gives a length.
            cuts = match length {
                Some(l) => (1..k as i64)
                    .map(|i| window_start(i * ((l + k as i64 - 1) / k as i64)))
                    .collect(),
                None => Vec::new(),
            };
        }
        cuts.dedup(); // (a cut met twice would make an empty piece)
        let end = OPEN_END;
        let bounds: Vec<i64> = std::iter::once(0).chain(cuts).chain([end]).collect();
        for (i, b) in bounds.windows(2).enumerate() {
            pieces.push(Piece {
                rid,
                tid,
                beg: b[0],
                end: b[1],
                last_of_contig: i + 2 == bounds.len(),
                file: 0,
            });
        }
    }
    Some(pieces)
}

/// The start of the index window (16 kb) holding `pos`, where a reader finds its first
/// record at the index's offset instead of re-scanning the window's earlier lines;
/// `pos` itself in a contig's first window.
fn window_start(pos: i64) -> i64 {
    match pos & !((1 << 14) - 1) {
        0 => pos,
        start => start,
    }
}

/// A piece as a region (`chr1:16385-`: a contig's last piece runs to its end).
fn piece_region(contig: &str, piece: &Piece) -> String {
    match piece.end >= OPEN_END {
        true => format!("{contig}:{}-", piece.beg + 1),
        false => format!("{contig}:{}-{}", piece.beg + 1, piece.end),
    }
}

/// htslib's BGZF error bits for a block whose data does not inflate (bgzf.h).
const BGZF_ERR_ZLIB: u32 = 1;
const BGZF_ERR_CRC: u32 = 32;

/// Where an open-ended piece (a contig's last) ends: past any position.
const OPEN_END: i64 = i64::MAX >> 2;

/// Pieces [`plan_pieces`] cuts a contig into at most (each is a channel and a queue
/// entry, made before reading starts: a bound on what a record count read out of an
/// index can ask for). 16,384 pieces of a 1,000-record row: a 16 M-record contig.
const MAX_PIECES_PER_CONTIG: u64 = 1 << 14;

/// Pieces over several inputs of one call set (each with its own header's schema, in
/// reading order): each input's contigs planned from its own index as [`plan_pieces`]
/// does, numbered as `merged`'s contigs. `None` if an input has no usable index.
pub fn plan_pieces_inputs(
    inputs: &[(&Path, &Schema)],
    merged: &Schema,
    cut: (usize, u64),
) -> Option<Vec<Piece>> {
    let mut all = Vec::new();
    for (f, (path, own)) in inputs.iter().enumerate() {
        // This input's own counts (its header may declare every contig of the set).
        let own_counts = crate::index::contig_counts(path, &own.contigs).ok()?.counts;
        for mut p in plan_pieces(path, own, &own_counts, cut)? {
            let name = &own.contigs[p.rid as usize].name;
            p.rid = merged.contigs.iter().position(|c| &c.name == name)? as u32;
            p.file = f as u32;
            all.push(p);
        }
    }
    Some(all)
}

/// A reader of pieces: its own file handle, index, header and extractor.
pub struct PieceReader {
    path: PathBuf,
    fp: HtsFile,
    index: Index,
    header: Arc<HeaderView>,
    rec: bcf::Record,
    ks: KString,
    text: bool,
    /// Name lookups for the direct text parse; `None` for BCF.
    lookups: Option<Lookups>,
    ex: Extractor,
    /// The direct text parse's lookups and buffers.
    direct: Direct,
    /// The schema (contig names for messages).
    schema: Schema,
}

// SAFETY: the index's raw handles (and the record's) are owned by this reader and
// used by one thread at a time.
unsafe impl Send for PieceReader {}

impl PieceReader {
    /// Opens `input` for piece reading.
    pub fn open(input: &Path, schema: &Schema, columns: &RecordColumns) -> Result<PieceReader> {
        let open_err = |msg: &str| Error::Open {
            path: input.into(),
            msg: msg.into(),
        };
        // One open tells text from BCF and, for text, yields the header and the parse
        // lookups: a header of 500,000 samples takes htslib 0.1 s to read.
        let (fp, header, lookups) = match TextReader::open(input)? {
            Some(mut t) => {
                t.set_schema(schema);
                let (fp, header, lookups) = t.into_parts();
                (fp, header, Some(lookups))
            }
            None => {
                let fp = HtsFile::open(input).ok_or_else(|| open_err("cannot reopen"))?;
                // SAFETY: the file is open; the header is checked for null and owned
                // by the HeaderView made from it.
                let header = unsafe {
                    let hdr = htslib::bcf_hdr_read(fp.as_ptr());
                    if hdr.is_null() {
                        return Err(open_err("cannot reread the header"));
                    }
                    HeaderView::from_ptr(hdr)
                };
                (fp, header, None)
            }
        };
        let text = lookups.is_some();
        let index = Index::load(input, text).ok_or_else(|| open_err("index disappeared"))?;
        if schema.has_gt {
            // As the first reader did for a GT the header does not declare.
            // SAFETY: the header is this reader's alone and valid; nothing holds a
            // record or view of it yet.
            unsafe { crate::schema::declare_gt(header.as_ptr()) };
        }
        let header = Arc::new(header);
        let rec = header.empty_record();
        let ex = Extractor::for_header(&header, schema, columns).no_new_contigs();
        Ok(PieceReader {
            path: input.into(),
            fp,
            index,
            header,
            rec,
            ks: KString::new(),
            text,
            lookups,
            ex,
            direct: Direct::for_schema(schema),
            schema: schema.clone(),
        })
    }

    fn contig(&self, piece: &Piece) -> &str {
        self.schema.contig_label(piece.rid as i64)
    }

    /// Moves to the piece's next record: text in `ks`, BCF in `rec` (not unpacked).
    /// `Ok(None)` past the piece; `located` is false before the first call.
    fn next_record(
        &mut self,
        piece: &Piece,
        itr: *mut htslib::hts_itr_t,
        located: &mut bool,
        n: u64,
    ) -> Result<Option<i64>> {
        loop {
            // Text: the index places the stream at the piece's first record; the lines
            // after it are read as they come (the iterator would re-scan every line
            // with tabix's parser) until one leaves the contig or passes the end.
            // SAFETY: fp/itr live; ks/rec are owned buffers htslib fills.
            let bgzf = self.fp.bgzf();
            let r = unsafe {
                if self.text && *located {
                    htslib::bgzf_getline(bgzf, b'\n' as i32, self.ks.raw())
                } else if self.text {
                    *located = true;
                    htslib::hts_itr_next(
                        bgzf,
                        itr,
                        self.ks.raw() as *mut _ as *mut c_void,
                        self.index.tabix_ptr() as *mut c_void,
                    )
                } else {
                    htslib::hts_itr_next(
                        bgzf,
                        itr,
                        self.rec.inner as *mut c_void,
                        std::ptr::null_mut(),
                    )
                }
            };
            if r == -1 {
                return Ok(None);
            }
            if r < -1 {
                let name = self.contig(piece);
                // SAFETY: the BGZF handle is live (owned by `fp`).
                let (errcode, block) = unsafe { ((*bgzf).errcode(), (*bgzf).block_address) };
                // (A block header not where the index points is a stale index as
                // often as damage: only data that does not inflate is named damage.)
                // A text line that tabix's parser refused (BGZF read it without an
                // error) is in `ks`: shown, as it may be the file's fault (spaces for
                // tabs), which re-indexing does not fix.
                let line = match self.text && errcode == 0 {
                    true => self.ks.bytes(),
                    false => &[],
                };
                let (there, or_fix) = match line.is_empty() {
                    true => (String::new(), ""),
                    false => (
                        format!(
                            " (the line there begins `{}`)",
                            String::from_utf8_lossy(&line[..line.len().min(60)]).escape_debug()
                        ),
                        "; if that line is not a tab-separated VCF record, fix the file",
                    ),
                };
                let msg = match errcode & (BGZF_ERR_ZLIB | BGZF_ERR_CRC) {
                    0 => format!(
                        "cannot read the records the index points to{there}: the index is \
                         stale or the file is corrupt (re-index with `bcftools index -f \
                         {}`{or_fix})",
                        self.path.display()
                    ),
                    _ => format!(
                        "the BGZF block at byte {block} does not inflate or fails its CRC \
                         check where the index points: a damaged copy (re-download or \
                         re-create it) or another file's index (re-index with `bcftools \
                         index -f {}`)",
                        self.path.display()
                    ),
                };
                return Err(Error::Record {
                    path: self.path.clone(),
                    record: n + 1,
                    locus: piece_region(name, piece),
                    msg,
                });
            }
            // POS decides which piece owns the record.
            let pos = if self.text {
                let line = self.ks.bytes();
                crate::limits::check_line(&self.path, n + 1, line)?;
                let mut cols = line.split(|&b| b == b'\t');
                let chrom = cols.next().unwrap_or(b"");
                if chrom != self.contig(piece).as_bytes() {
                    return Ok(None); // past the contig (sorted input)
                }
                // A POS that is no position cannot be placed in any piece: an error,
                // as the streaming reader's, never a record skipped without a word.
                let text = cols.next().unwrap_or(b"");
                let Some(pos) = std::str::from_utf8(text)
                    .ok()
                    .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|t| t.parse::<i64>().ok())
                else {
                    return Err(Error::Record {
                        path: self.path.clone(),
                        record: n + 1,
                        locus: format!("{}:{}", self.contig(piece), String::from_utf8_lossy(text)),
                        msg: format!(
                            "POS `{}` is not a position (a whole number, 1-based)",
                            String::from_utf8_lossy(text)
                        ),
                    });
                };
                let pos = pos - 1;
                if pos >= piece.end {
                    return Ok(None); // past the piece (sorted input)
                }
                pos
            } else {
                let pos = self.rec.pos();
                if pos >= piece.end {
                    return Ok(None);
                }
                pos
            };
            if pos >= piece.beg {
                return Ok(Some(pos));
            }
        }
    }

    /// Counts the records of one piece without parsing them (the bytes are still
    /// read): where a partition starts when a contig is cut between partitions.
    pub fn count(&mut self, piece: &Piece) -> Result<u64> {
        let itr = self.index.query(piece.tid, piece.beg, piece.end);
        if itr.is_null() {
            return Ok(0);
        }
        let mut located = false;
        let mut n = 0u64;
        let result = (|| -> Result<()> {
            while self.next_record(piece, itr, &mut located, n)?.is_some() {
                n += 1;
            }
            Ok(())
        })();
        // SAFETY: itr from hts_itr_query.
        unsafe { htslib::hts_itr_destroy(itr) };
        result.map(|_| n)
    }

    /// The first `rows` records of a piece (fewer where it holds fewer; `None` where
    /// it holds none): what a probe samples.
    pub fn first_rows(
        &mut self,
        piece: &Piece,
        rows: usize,
        specs: &[crate::columns::ColumnSpec],
        n_samples: usize,
    ) -> Result<Option<Batch>> {
        let mut got = None;
        let no_limit = |_: &Batch, _| Ok(());
        let fresh = || Batch::new(specs, n_samples, 0);
        self.read(piece, rows, fresh, no_limit, |b| {
            got = Some(b);
            false
        })?;
        Ok(got)
    }

    /// Reads one piece, handing out batches of at most `rows` records, each an empty
    /// one from `fresh` (a spent batch reused keeps its buffers: no page of it is
    /// faulted in again). Returns the number of records read. `check` sees the batch
    /// after each record and its number in the piece (1-based): an `Err` stops the
    /// read (a batch filling more than the memory budget holds).
    pub fn read(
        &mut self,
        piece: &Piece,
        rows: usize,
        mut fresh: impl FnMut() -> Batch,
        mut check: impl FnMut(&Batch, u64) -> Result<()>,
        mut emit: impl FnMut(Batch) -> bool,
    ) -> Result<u64> {
        let itr = self.index.query(piece.tid, piece.beg, piece.end);
        if itr.is_null() {
            return Ok(0);
        }
        let mut batch = fresh();
        let mut n = 0u64;
        let mut located = false;
        let result = (|| -> Result<()> {
            while let Some(pos) = self.next_record(piece, itr, &mut located, n)? {
                if self.text {
                    let line = self.ks.bytes();
                    let lookups = self.lookups.as_ref().expect("text input");
                    let done = self.ex.extract_direct_line(
                        &mut self.direct,
                        &self.path,
                        n,
                        line,
                        lookups,
                        &mut batch,
                    )?;
                    if !done {
                        let fix = crate::fastvcf::parse_general(
                            lookups,
                            &mut self.ks,
                            &self.header,
                            &mut self.rec,
                        )
                        .map_err(|msg| Error::Record {
                            path: self.path.clone(),
                            record: n + 1,
                            locus: format!(
                                "{}:{}",
                                self.schema.contig_label(piece.rid as i64),
                                pos + 1
                            ),
                            msg,
                        })?;
                        self.ex.extract(&self.path, n, &self.rec, &mut batch)?;
                        self.ex.apply_line_fix(&fix, &mut batch);
                    }
                } else {
                    // SAFETY: rec holds the record just read.
                    unsafe { htslib::bcf_unpack(self.rec.inner, htslib::BCF_UN_ALL as c_int) };
                    self.ex.extract(&self.path, n, &self.rec, &mut batch)?;
                }
                n += 1;
                check(&batch, n)?;
                if batch.len() == rows {
                    let full = std::mem::replace(&mut batch, fresh());
                    if !emit(full) {
                        return Ok(());
                    }
                }
            }
            if !batch.is_empty() {
                emit(batch);
            }
            Ok(())
        })();
        // SAFETY: itr from hts_itr_query.
        unsafe { htslib::hts_itr_destroy(itr) };
        result.map(|_| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::VcfReader;

    /// A file of one region of a long contig: pieces cut by bytes lie inside the
    /// region and share its records about equally (cut by the header's length, one
    /// piece would hold them all).
    #[test]
    fn pieces_follow_the_records_not_the_header_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("region.vcf.gz");
        let mut text = String::from(
            "##fileformat=VCFv4.3\n##contig=<ID=c1,length=100000000>\n\
             ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"x\">\n\
             #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\n",
        );
        for i in 0..4000 {
            text += &format!(
                "c1\t{}\t.\tA\tC\t.\t.\t.\tGT\t0|1\t1|1\n",
                10_000_000 + i * 500
            );
        }
        crate::testing::bgzip(&path, text.as_bytes(), 50);
        rust_htslib::bcf::index::build(&path, None, 1, rust_htslib::bcf::index::Type::Csi(14))
            .unwrap();
        let schema = VcfReader::open(&path, 1).unwrap().schema;
        let pieces = plan_pieces(&path, &schema, &[4000], (4, u64::MAX)).unwrap();
        assert_eq!(pieces.len(), 4, "{pieces:?}");
        let columns = RecordColumns::new(&schema);
        let mut reader = PieceReader::open(&path, &schema, &columns).unwrap();
        let counts: Vec<u64> = pieces.iter().map(|p| reader.count(p).unwrap()).collect();
        assert_eq!(counts.iter().sum::<u64>(), 4000);
        assert!(
            counts.iter().all(|&n| (800..=1200).contains(&n)),
            "{counts:?}"
        );
        // Each cut at the start of an index window: a reader starting there finds its
        // first record at the index's offset, with no lines of the window re-scanned.
        assert!(
            pieces[1..].iter().all(|p| p.beg % (1 << 14) == 0),
            "{pieces:?}"
        );
        // By position, as the spots also cut: the region is in the first quarter.
        // About 250 records a piece, still where the index's offsets fall: each a few
        // index windows (32 records here).
        let fine = plan_pieces(&path, &schema, &[4000], (4, 250)).unwrap();
        let counts: Vec<u64> = fine.iter().map(|p| reader.count(p).unwrap()).collect();
        assert_eq!(counts.iter().sum::<u64>(), 4000, "{fine:?}");
        assert!(counts.len() >= 14, "{counts:?}");
        assert!(
            counts.iter().all(|&n| (150..=350).contains(&n)),
            "{counts:?}"
        );
        assert!(fine.windows(2).all(|w| w[0].end == w[1].beg), "{fine:?}");
        let last: Vec<bool> = fine.iter().map(|p| p.last_of_contig).collect();
        assert!(last[..last.len() - 1].iter().all(|&l| !l) && last[last.len() - 1]);
        let by_length = cut_pieces(&path, &schema, &[4000], (4, u64::MAX), Cut::Position).unwrap();
        let counts: Vec<u64> = by_length.iter().map(|p| reader.count(p).unwrap()).collect();
        assert_eq!(counts, [4000, 0, 0, 0]);
    }
}
