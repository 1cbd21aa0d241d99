//! `region_index`: one row per run of one contig within one variants inner chunk —
//! `[chunk, contig, first position, last position, largest end, records]`, as bio2zarr
//! writes it — so `vcztools view -r` and svar2's reader find a genomic range from a
//! few hundred numbers. Convert builds it as chunks are encoded; rechunk rebuilds it
//! for its new chunks from `variant_contig`, `variant_position` and `variant_length`.

use crate::codec::Raw;
use crate::dtype::Dtype;

/// One record's place: (contig index, position, end = position + length − 1).
pub type Locus = (i32, i64, i64);

/// Appends the rows of inner chunk `chunk`, whose records are `loci` in order.
pub fn push_rows(chunk: u64, loci: &[Locus], out: &mut Vec<[i64; 6]>) {
    let mut i = 0;
    while i < loci.len() {
        let (contig, start, _) = loci[i];
        let mut j = i;
        let mut max_end = i64::MIN;
        while j < loci.len() && loci[j].0 == contig {
            max_end = max_end.max(loci[j].2);
            j += 1;
        }
        out.push([
            chunk as i64,
            contig as i64,
            start,
            loci[j - 1].1,
            max_end,
            (j - i) as i64,
        ]);
        i = j;
    }
}

/// The array's data type and little-endian values: `variant_position`'s type, as
/// bio2zarr does, widened when a value (a largest end) would not fit.
pub fn encode(rows: &[[i64; 6]], position: Dtype) -> (Dtype, Raw) {
    let (lo, hi) = rows
        .iter()
        .flatten()
        .fold((0i64, 0i64), |(l, h), &v| (l.min(v), h.max(v)));
    let dtype = match (position, Dtype::smallest_int(lo, hi)) {
        (p, r) if r.size() > p.size() => r,
        (p, _) => p,
    };
    let mut bytes = Vec::with_capacity(rows.len() * 6 * dtype.size().unwrap_or(8));
    for &v in rows.iter().flatten() {
        match dtype {
            Dtype::I8 => bytes.push(v as i8 as u8),
            Dtype::I16 => bytes.extend_from_slice(&(v as i16).to_le_bytes()),
            Dtype::I32 => bytes.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => bytes.extend_from_slice(&v.to_le_bytes()),
        }
    }
    (dtype, Raw::Fixed(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_contig_run_and_the_type_widens_for_ends() {
        let mut rows = Vec::new();
        push_rows(
            3,
            &[(0, 10, 10), (0, 20, 90), (0, 30, 30), (1, 5, 6)],
            &mut rows,
        );
        assert_eq!(rows, vec![[3, 0, 10, 30, 90, 3], [3, 1, 5, 5, 6, 1]]);
        let (dtype, _) = encode(&rows, Dtype::I8);
        assert_eq!(dtype, Dtype::I8);
        rows.push([4, 1, 100, 100, 40_000, 1]);
        let (dtype, Raw::Fixed(b)) = encode(&rows, Dtype::I8) else {
            panic!()
        };
        assert_eq!((dtype, b.len()), (Dtype::I32, 3 * 6 * 4));
        assert_eq!(encode(&rows, Dtype::I64).0, Dtype::I64);
    }
}
