//! Laying out ragged [`Column`] values as one inner chunk of an array, and re-laying a
//! decoded chunk under a wider layout (see `arrays` for why that happens).

use crate::arrays::{ArraySet, ArraySpec, Geometry, Layout};
use crate::error::{Error, Result};
use svar2_store::codec::InnerCodec;
use svar2_store::codec::Raw;
use svar2_store::Dtype;
use svar2_vcf::columns::{Base, Source};
use svar2_vcf::packed::{negative_alleles, unpack_diploid, unpack_diploid_bytes, Bits};
use svar2_vcf::ragged::Batch;
use svar2_vcf::ragged::{Column, Values, FLOAT32_FILL, FLOAT32_MISSING};

/// Which part of a column one inner chunk covers.
#[derive(Debug, Clone, Copy)]
pub struct ChunkView {
    /// First record (within the column) and how many records are real.
    pub r0: usize,
    pub nr: usize,
    /// First sample and how many samples are real.
    pub s0: usize,
    pub ns: usize,
    /// Chunk extent along variants and samples (1 for variant-only arrays); cells past
    /// the real records/samples hold the fill value (zero).
    pub rows: usize,
    pub cols: usize,
}

/// A value a chunk holds: a plain integer (or a float's bits), for which every bit
/// pattern is valid and zero bytes are the fill value (`T::default()`).
///
/// # Safety
/// Implemented only for primitive integers.
unsafe trait Plain: Copy + Default {
    fn write_le(self, out: &mut [u8]);
}
macro_rules! plain {
    ($($t:ty)*) => {$(
        // SAFETY: a primitive integer: any bits are a valid value, zero is its default.
        unsafe impl Plain for $t {
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
plain!(u8 i16 i32 i64 u32);

thread_local! {
    static POOL: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Chunk buffers each encoding thread keeps for the next chunks.
const POOLED: usize = 4;

/// A byte buffer from this thread's pool, one holding `bytes` if any does: a fresh
/// multi-megabyte buffer per chunk costs page faults and the zeroing of new pages (a
/// fifth of all CPU time in profiles of the shared corpus, and a quarter of fmt2000's
/// page faults when only byte outputs were pooled). It keeps the bytes of the chunk
/// it last held (its length too), so [`chunk_bytes`] zeroes only what the layout
/// will not write.
fn pooled(bytes: usize) -> Vec<u8> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let fits = (0..p.len())
            .filter(|&i| p[i].capacity() >= bytes)
            .min_by_key(|&i| p[i].capacity());
        let pick = fits.or_else(|| (0..p.len()).max_by_key(|&i| p[i].capacity()));
        pick.map(|i| p.swap_remove(i)).unwrap_or_default()
    })
}

/// The chunk `v` of cells of `cell` values of `T`, laid out by `fill`, as the
/// little-endian bytes the codec takes. `fill` writes every value of the real records
/// × real samples (`[r][..v.ns][..cell]` for `r < v.nr`, as every `lay_out_*` does);
/// the rest is the fill value, zero, written here. On a little-endian machine the
/// values are written straight into a pooled byte buffer; elsewhere through a typed
/// copy.
fn chunk_bytes<T: Plain>(v: &ChunkView, cell: usize, fill: impl FnOnce(&mut [T])) -> Vec<u8> {
    let size = std::mem::size_of::<T>();
    let n = v.rows * v.cols * cell;
    let mut out = pooled(n * size);
    // A recycled buffer keeps its old bytes (only growth is zeroed here): the memset
    // of a whole chunk was 3-4 % of a GT-only conversion, for bytes overwritten next.
    out.resize(n * size, 0);
    let outside = |vals: &mut [T]| {
        let (row, real) = (v.cols * cell, v.ns * cell);
        if real < row {
            for r in vals[..v.nr * row].chunks_exact_mut(row) {
                r[real..].fill(T::default());
            }
        }
        vals[v.nr * row..].fill(T::default());
    };
    if cfg!(target_endian = "little") {
        // SAFETY: `Plain` types take any bit pattern, and align_to_mut hands back only
        // the aligned middle (checked to be the whole buffer before use).
        let (head, mid, tail) = unsafe { out.align_to_mut::<T>() };
        if head.is_empty() && tail.is_empty() {
            fill(mid);
            outside(mid);
            return out;
        }
    }
    let mut vals = vec![T::default(); n];
    fill(&mut vals);
    outside(&mut vals);
    for (d, v) in out.chunks_exact_mut(size).zip(vals) {
        v.write_le(d);
    }
    out
}

/// Returns a laid-out chunk's buffer to this thread's pool once it is encoded.
pub fn recycle(raw: Raw) {
    if let Raw::Fixed(v) = raw {
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < POOLED {
                p.push(v);
            }
        });
    }
}

/// Lays out a column's values as `[rows][cols][cell]`, mapping each through `f`;
/// `pad` goes past a record's own values, `absent` where the field is missing from the
/// record, and the fill value already in `out` (`v.rows * v.cols * cell` values)
/// outside the real records and samples.
#[allow(clippy::too_many_arguments)]
fn lay_out<S: Copy, T: Copy>(
    col: &Column,
    v: &ChunkView,
    cell: usize,
    pad: T,
    absent: T,
    vals: &[S],
    f: impl Fn(S) -> T,
    out: &mut [T],
) {
    for r in 0..v.nr {
        let w = col.widths[v.r0 + r] as usize;
        let start = col.starts[v.r0 + r];
        let row = &mut out[r * v.cols * cell..(r * v.cols + v.ns) * cell];
        if w == 0 {
            row.fill(absent);
        } else if w == cell {
            // Common case (every call diploid, every scalar present): one contiguous run.
            let src = &vals[start + v.s0 * w..start + (v.s0 + v.ns) * w];
            for (d, &x) in row.iter_mut().zip(src) {
                *d = f(x);
            }
        } else {
            let n = w.min(cell);
            for (s, dst) in row.chunks_exact_mut(cell).enumerate() {
                let src = start + (v.s0 + s) * w;
                for (d, &x) in dst[..n].iter_mut().zip(&vals[src..src + n]) {
                    *d = f(x);
                }
                dst[n..].fill(pad);
            }
        }
    }
}

/// Unpacks a run of packed calls into a row of pairs at once (vectorized byte outputs
/// from `packed.rs`).
type Pairs<T> = fn(&[u8], &mut [T]);

/// [`lay_out`] for packed diploid calls ([`Values::Diploid`]): every record holds two
/// values per sample (or none, when absent), read through a table of `f` over the 256
/// possible bytes — or, where given and the cell is a pair, by `pairs`, which unpacks
/// a run of calls into `f`'s values at once (vectorized byte outputs).
#[allow(clippy::too_many_arguments)]
fn lay_out_diploid<T: Copy>(
    col: &Column,
    v: &ChunkView,
    cell: usize,
    pad: T,
    absent: T,
    packed: &[u8],
    f: impl Fn(i8) -> T,
    pairs: Option<Pairs<T>>,
    out: &mut [T],
) {
    let table: Vec<[T; 2]> = (0..=255u8).map(|b| unpack_diploid(b).map(&f)).collect();
    for r in 0..v.nr {
        let w = col.widths[v.r0 + r] as usize;
        let row = &mut out[r * v.cols * cell..(r * v.cols + v.ns) * cell];
        if w == 0 {
            row.fill(absent);
            continue;
        }
        debug_assert_eq!(w, 2, "packed calls are diploid");
        let first = col.starts[v.r0 + r] / 2 + v.s0;
        let src = &packed[first..first + v.ns];
        if let (2, Some(pairs)) = (cell, pairs) {
            pairs(src, row);
        } else if cell == 2 {
            for (dst, &b) in row.chunks_exact_mut(2).zip(src) {
                dst.copy_from_slice(&table[b as usize]);
            }
        } else {
            let n = cell.min(2);
            for (dst, &b) in row.chunks_exact_mut(cell).zip(src) {
                dst[..n].copy_from_slice(&table[b as usize][..n]);
                dst[n..].fill(pad);
            }
        }
    }
}

/// [`lay_out`] for booleans packed eight to a byte.
fn lay_out_bits(col: &Column, v: &ChunkView, cell: usize, bits: &Bits, out: &mut [u8]) {
    for r in 0..v.nr {
        let w = col.widths[v.r0 + r] as usize;
        let start = col.starts[v.r0 + r];
        let row = &mut out[r * v.cols * cell..(r * v.cols + v.ns) * cell];
        if w == 0 {
            row.fill(0);
        } else if w == cell {
            bits.unpack_into(start + v.s0 * w, row);
        } else {
            let n = w.min(cell);
            for (s, dst) in row.chunks_exact_mut(cell).enumerate() {
                let src = start + (v.s0 + s) * w;
                bits.unpack_into(src, &mut dst[..n]);
                dst[n..].fill(0);
            }
        }
    }
}

/// Lays out an integer column (i64, i32 or i8) mapping each canonical value through
/// `f`.
fn lay_out_ints<T: Copy>(
    col: &Column,
    v: &ChunkView,
    cell: usize,
    pad: T,
    absent: T,
    f: impl Fn(i64) -> T,
    out: &mut [T],
) {
    match &col.values {
        Values::Int16(vals) => lay_out(col, v, cell, pad, absent, vals, |x| f(x as i64), out),
        Values::Int(vals) => lay_out(col, v, cell, pad, absent, vals, |x| f(x as i64), out),
        Values::Long(vals) => lay_out(col, v, cell, pad, absent, vals, f, out),
        Values::Int8(vals) => lay_out(col, v, cell, pad, absent, vals, |x| f(x as i64), out),
        Values::Diploid(b) => {
            lay_out_diploid(col, v, cell, pad, absent, b, |x| f(x as i64), None, out)
        }
        _ => unreachable!("int column"),
    }
}

/// Integers narrowed to `dtype` as little-endian bytes.
fn ints(col: &Column, v: &ChunkView, cell: usize, dtype: Dtype) -> Vec<u8> {
    // Genotypes: i8 in, i8 out.
    match (&col.values, dtype) {
        (Values::Int8(vals), Dtype::I8) => {
            return chunk_bytes(v, cell, |out: &mut [u8]| {
                lay_out(col, v, cell, -2i8 as u8, -1i8 as u8, vals, |x| x as u8, out)
            });
        }
        (Values::Diploid(b), Dtype::I8) => {
            let pairs: Pairs<u8> = unpack_diploid_bytes;
            return chunk_bytes(v, cell, |out: &mut [u8]| {
                let f = |x: i8| x as u8;
                lay_out_diploid(col, v, cell, -2i8 as u8, -1i8 as u8, b, f, Some(pairs), out)
            });
        }
        _ => {}
    }
    match dtype {
        Dtype::I8 => chunk_bytes(v, cell, |out: &mut [u8]| {
            lay_out_ints(col, v, cell, -2i8 as u8, -1i8 as u8, |x| x as i8 as u8, out)
        }),
        Dtype::I16 => chunk_bytes(v, cell, |out: &mut [i16]| {
            lay_out_ints(col, v, cell, -2, -1, |x| x as i16, out)
        }),
        Dtype::I32 => chunk_bytes(v, cell, |out: &mut [i32]| {
            lay_out_ints(col, v, cell, -2, -1, |x| x as i32, out)
        }),
        Dtype::I64 => chunk_bytes(v, cell, |out: &mut [i64]| {
            lay_out_ints(col, v, cell, -2, -1, |x| x, out)
        }),
        d => unreachable!("int array as {d:?}"),
    }
}

fn first_char(s: &[u8]) -> u32 {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.chars().next())
        .map_or(0, |c| c as u32)
}

/// Lays out one inner chunk of `spec` from `col` under `layout`.
pub fn materialize(spec: &ArraySpec, col: &Column, layout: &Layout, v: &ChunkView) -> Raw {
    let cell = layout.cell();
    match (spec.base, spec.source) {
        (_, Source::GenotypeMask) => {
            Raw::Fixed(chunk_bytes(v, cell, |out: &mut [u8]| match &col.values {
                Values::Diploid(b) => {
                    let pairs: Pairs<u8> = negative_alleles;
                    let f = |x: i8| u8::from(x < 0);
                    lay_out_diploid(col, v, cell, 1, 1, b, f, Some(pairs), out)
                }
                _ => lay_out_ints(col, v, cell, 1u8, 1u8, |x| u8::from(x < 0), out),
            }))
        }
        (_, Source::IdMask) => {
            let idx = lay_out_indices(col, v, 1);
            Raw::Fixed(
                idx.iter()
                    .map(|i| u8::from(matches!(i, Some(i) if col.values.str_at(*i) == b".")))
                    .collect(),
            )
        }
        (Base::Int, _) => Raw::Fixed(ints(col, v, cell, layout.dtype)),
        (Base::Float, _) => {
            let Values::Float(vals) = &col.values else {
                unreachable!()
            };
            Raw::Fixed(chunk_bytes(v, cell, |out: &mut [u32]| {
                lay_out(
                    col,
                    v,
                    cell,
                    FLOAT32_FILL,
                    FLOAT32_MISSING,
                    vals,
                    |x| x,
                    out,
                )
            }))
        }
        (Base::Bool, _) => {
            let Values::Bool(bits) = &col.values else {
                unreachable!()
            };
            Raw::Fixed(chunk_bytes(v, cell, |out: &mut [u8]| {
                lay_out_bits(col, v, cell, bits, out)
            }))
        }
        (Base::Str, _) | (Base::Char, _) => {
            let idx = lay_out_indices(col, v, cell);
            // A `Character` field holds strings once a value is longer than one.
            if layout.dtype == Dtype::Char {
                Raw::Fixed(
                    idx.iter()
                        .flat_map(|i| {
                            let c = match i {
                                Some(usize::MAX) => b'.' as u32,
                                Some(i) => first_char(col.values.str_at(*i)),
                                None => 0,
                            };
                            c.to_le_bytes()
                        })
                        .collect(),
                )
            } else {
                let mut bytes = Vec::new();
                let mut offsets = Vec::with_capacity(idx.len() + 1);
                offsets.push(0);
                for i in &idx {
                    match i {
                        Some(usize::MAX) => bytes.push(b'.'),
                        Some(i) => bytes.extend_from_slice(col.values.str_at(*i)),
                        None => {}
                    }
                    offsets.push(bytes.len());
                }
                Raw::Strings { bytes, offsets }
            }
        }
    }
}

/// For string columns: the value index of each cell; `None` for fill (""),
/// `Some(usize::MAX)` for an absent field (".").
fn lay_out_indices(col: &Column, v: &ChunkView, cell: usize) -> Vec<Option<usize>> {
    let mut out = vec![None; v.rows * v.cols * cell];
    for r in 0..v.nr {
        let w = col.widths[v.r0 + r] as usize;
        let start = col.starts[v.r0 + r];
        let row = &mut out[r * v.cols * cell..(r * v.cols + v.ns) * cell];
        if w == 0 {
            row.fill(Some(usize::MAX));
            continue;
        }
        let n = w.min(cell);
        for (s, dst) in row.chunks_exact_mut(cell).enumerate() {
            let src = start + (v.s0 + s) * w;
            for (j, d) in dst[..n].iter_mut().enumerate() {
                *d = Some(src + j);
            }
        }
    }
    out
}

fn codec_err(msg: String) -> Error {
    svar2_store::Error::Codec(msg).into()
}

/// Turns a decoded chunk back into a column (one "record" per chunk row) so it can be
/// laid out again under another layout. `absent[r]` marks rows whose field was absent.
pub fn column_from_raw(
    spec: &ArraySpec,
    raw: Raw,
    old: &Layout,
    rows: usize,
    cols: usize,
    absent: &dyn Fn(usize) -> bool,
) -> Result<Column> {
    let cell = old.cell();
    let per_row = cols * cell;
    let values = match (spec.base, spec.source, raw) {
        (_, Source::GenotypeMask, Raw::Fixed(b)) => {
            Values::Int(b.iter().map(|&x| if x != 0 { -2 } else { 0 }).collect())
        }
        (Base::Int, _, Raw::Fixed(b)) if old.dtype == Dtype::I64 => Values::Long(
            b.chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
        (Base::Int, _, Raw::Fixed(b)) => Values::Int(match old.dtype {
            Dtype::I8 => b.iter().map(|&x| x as i8 as i32).collect(),
            Dtype::I16 => b
                .chunks_exact(2)
                .map(|c| i16::from_le_bytes([c[0], c[1]]) as i32)
                .collect(),
            Dtype::I32 => b
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            d => return Err(codec_err(format!("int array stored as {d:?}"))),
        }),
        (Base::Float, _, Raw::Fixed(b)) => Values::Float(
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        (Base::Bool, _, Raw::Fixed(b)) => Values::Bool(Bits::from_flags(&b)),
        (Base::Char, _, Raw::Fixed(b)) => {
            let mut bytes = Vec::new();
            let mut ends = Vec::new();
            for c in b.chunks_exact(4) {
                let code = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                if let Some(ch) = char::from_u32(code).filter(|_| code != 0) {
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                ends.push(bytes.len());
            }
            Values::Str { bytes, ends }
        }
        (Base::Str, _, Raw::Strings { bytes, offsets }) => Values::Str {
            ends: offsets[1..].to_vec(),
            bytes,
        },
        _ => {
            return Err(codec_err(format!(
                "{}: decoded chunk of unexpected kind",
                spec.name
            )))
        }
    };
    let widths = (0..rows)
        .map(|r| if absent(r) { 0 } else { cell as u32 })
        .collect();
    Ok(Column {
        per_record: cols,
        values,
        starts: (0..rows).map(|r| r * per_row).collect(),
        widths,
        stats: Default::default(),
        reserved: None,
        empty_element: None,
    })
}

/// Every (array, sample chunk) of one inner-chunk row: the units encoded in parallel.
pub fn chunk_tasks(set: &ArraySet, n_samples: usize, samples_chunk: usize) -> Vec<(usize, usize)> {
    set.arrays
        .iter()
        .enumerate()
        .flat_map(|(a, spec)| {
            let n = if spec.per_sample {
                n_samples.div_ceil(samples_chunk).max(1)
            } else {
                1
            };
            (0..n).map(move |k| (a, k))
        })
        .collect()
}

/// Lays out and encodes sample chunk `k` of array `a` for a batch; `None` when the
/// chunk is all fill (not stored).
#[allow(clippy::too_many_arguments)]
pub fn encode_chunk(
    set: &ArraySet,
    batch: &Batch,
    layout: &Layout,
    codec: &InnerCodec,
    geometry: &Geometry,
    n_samples: usize,
    a: usize,
    k: usize,
) -> Result<Option<Vec<u8>>> {
    let spec = &set.arrays[a];
    let samples_chunk = geometry.samples_chunk as usize;
    let (s0, ns, cols) = if spec.per_sample {
        (
            k * samples_chunk,
            samples_chunk.min(n_samples - k * samples_chunk),
            samples_chunk,
        )
    } else {
        (0, 1, 1)
    };
    let view = ChunkView {
        r0: 0,
        nr: batch.len(),
        s0,
        ns,
        rows: geometry.variants_chunk as usize,
        cols,
    };
    let raw = materialize(spec, &batch.columns[spec.column], layout, &view);
    if raw.is_fill() {
        recycle(raw);
        return Ok(None);
    }
    let shape = spec.shapes(layout, 0, n_samples as u64, geometry)[2].clone();
    let encoded = codec.encode(&raw, &shape);
    recycle(raw);
    Ok(Some(encoded?))
}

/// Lowers the calling thread's priority (nice +19), so that where encoders and readers
/// share cores the reader, which every chunk row waits on, runs first. At +5, Linux's
/// EEVDF scheduler (6.6 on) still let two encoders take ~80 % of two cores while a
/// reader woken by its inflate thread waited: a wide GT-only file was read and encoded
/// in turns, not side by side (w300k at `--threads 2`: +19 is 0.90x the wall of +5,
/// the corpus 0.92x, FORMAT-heavy files within the noise). The encoders still get
/// every cycle the readers leave; where a job runs in a cgroup of its own (Slurm,
/// systemd) or the session's autogroup, nice ranks its threads among themselves, not
/// against other jobs.
#[cfg(target_os = "linux")]
fn yield_to_readers() {
    extern "C" {
        fn setpriority(
            which: std::ffi::c_int,
            who: std::ffi::c_uint,
            prio: std::ffi::c_int,
        ) -> std::ffi::c_int;
        fn gettid() -> std::ffi::c_int;
    }
    const PRIO_PROCESS: std::ffi::c_int = 0;
    // SAFETY: plain system calls on this thread's own id; a refusal changes nothing.
    unsafe {
        setpriority(PRIO_PROCESS, gettid() as std::ffi::c_uint, 19);
    }
}

#[cfg(not(target_os = "linux"))]
fn yield_to_readers() {}

/// The rayon pool that lays out and encodes chunks.
pub(crate) fn encoder_pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("encode-{i}"))
        .start_handler(|_| yield_to_readers())
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {threads} threads: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrays::{ArraySpec, Width};
    use svar2_store::codec::InnerCodec;

    fn spec(base: Base, source: Source) -> ArraySpec {
        ArraySpec {
            name: "t".into(),
            source,
            base,
            per_sample: true,
            width: Width::Own {
                declared: 0,
                always: false,
            },
            trailing_dim: "d".into(),
            description: String::new(),
            declared: None,
            column: 0,
            bitshuffle: false,
        }
    }

    /// All three records and both samples, in a 4 × 3 chunk (fill past them).
    const VIEW: ChunkView = ChunkView {
        r0: 0,
        nr: 3,
        s0: 0,
        ns: 2,
        rows: 4,
        cols: 3,
    };

    /// Three records × 2 samples: widths 1, absent, 2.
    fn column() -> Column {
        let mut c = Column::new(
            &svar2_vcf::columns::ColumnSpec {
                base: Base::Int,
                per_sample: true,
                genotype: false,
            },
            2,
        );
        c.push_ints(&[5, 6], 1);
        c.push_absent();
        c.push_ints(&[1, -2, 3, 4], 2);
        c
    }

    #[test]
    fn lays_out_pad_absent_and_fill() {
        let c = column();
        let s = spec(Base::Int, Source::Field(0));
        let view = VIEW;
        let l = Layout {
            dtype: Dtype::I8,
            width: Some(2),
        };
        #[rustfmt::skip]
        let want: Vec<i8> = vec![
            5, -2, 6, -2, 0, 0,
            -1, -1, -1, -1, 0, 0,
            1, -2, 3, 4, 0, 0,
            0, 0, 0, 0, 0, 0,
        ];
        // A fresh buffer, then recycled ones still holding other chunks' bytes (of
        // every length around this chunk's): the fill past the real records and
        // samples is written, not inherited.
        for round in 0..3 {
            let Raw::Fixed(b) = materialize(&s, &c, &l, &view) else {
                panic!()
            };
            let v: Vec<i8> = b.iter().map(|&x| x as i8).collect();
            assert_eq!(v, want, "round {round}");
            recycle(Raw::Fixed(b));
            for len in [3, 24, 40] {
                recycle(Raw::Fixed(vec![0x55; len]));
            }
        }
        let wide = Layout {
            dtype: Dtype::I16,
            width: Some(2),
        };
        recycle(Raw::Fixed(vec![0x55; 48]));
        let Raw::Fixed(b) = materialize(&s, &c, &wide, &view) else {
            panic!()
        };
        let v: Vec<i16> = b
            .chunks_exact(2)
            .map(|x| i16::from_le_bytes([x[0], x[1]]))
            .collect();
        assert_eq!(v, want.iter().map(|&x| x as i16).collect::<Vec<_>>());
    }

    /// Re-laying an encoded chunk under a wider, wider-typed layout gives the very
    /// bytes a direct encode under that layout gives: why rewrites keep stores
    /// byte-identical.
    #[test]
    fn transcode_equals_direct_encode() {
        let c = column();
        let s = spec(Base::Int, Source::Field(0));
        let view = VIEW;
        let old = Layout {
            dtype: Dtype::I8,
            width: Some(2),
        };
        let new = Layout {
            dtype: Dtype::I16,
            width: Some(4),
        };
        let oc = InnerCodec::new(old.dtype, false, 3).unwrap();
        let nc = InnerCodec::new(new.dtype, false, 3).unwrap();
        let enc = oc
            .encode(&materialize(&s, &c, &old, &view), &[4, 3, 2])
            .unwrap();
        let dec = oc.decode(&enc, &[4, 3, 2]).unwrap();
        let back = column_from_raw(&s, dec, &old, 4, 3, &|r| r == 1).unwrap();
        let view2 = ChunkView { s0: 0, ..view };
        let via = nc
            .encode(&materialize(&s, &back, &new, &view2), &[4, 3, 4])
            .unwrap();
        let direct = nc
            .encode(&materialize(&s, &c, &new, &view), &[4, 3, 4])
            .unwrap();
        assert_eq!(via, direct);
    }
}
