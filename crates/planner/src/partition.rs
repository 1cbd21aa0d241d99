//! Cutting a conversion into partitions for a batch scheduler (Slurm array tasks,
//! `xargs -P`): contiguous stretches of the variants axis with about equal record
//! counts. A contig longer than a partition is cut by position (records assumed
//! spread evenly over its length, the index having no finer counts); a contig of
//! unknown length is never cut. Pure: counts and lengths in, position ranges out.

use serde::{Deserialize, Serialize};

/// One contig's share of the work, in variants-axis order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Records, from the index.
    pub records: u64,
    /// The contig's length from the header, when known (then it may be cut).
    pub length: Option<u64>,
}

/// A position range of one unit: `beg..end`, 0-based, half-open; `end` `None` runs
/// to the contig's end (records past a declared length included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub unit: usize,
    pub beg: u64,
    pub end: Option<u64>,
    /// Records the index gives (`exact`) or the share of the contig's length implies.
    pub records: u64,
    pub exact: bool,
}

impl Span {
    /// Whether the span is the whole contig.
    pub fn whole(&self) -> bool {
        self.beg == 0 && self.end.is_none()
    }
}

/// One partition: its spans in axis order and where it sits on the axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// Its rank along the variants axis (partitions are numbered by work instead).
    pub axis: usize,
    pub spans: Vec<Span>,
}

impl Cut {
    /// Records in the partition (estimated where a contig is cut).
    pub fn records(&self) -> u64 {
        self.spans.iter().map(|s| s.records).sum()
    }
}

/// A point on the axis: unit `u` at position `pos` (0: the unit's start).
type Point = (usize, u64);

/// Cuts `units` into `n` partitions of about equal records, numbered longest first
/// (ties in axis order) so a scheduler that starts tasks in index order runs the
/// biggest first. Partitions may be empty when there are fewer records, or fewer
/// places to cut, than partitions.
pub fn partition(units: &[Unit], n: usize) -> Vec<Cut> {
    let n = n.max(1);
    let total: u64 = units.iter().map(|u| u.records).sum();
    let mut cum = Vec::with_capacity(units.len() + 1);
    cum.push(0u64);
    for u in units {
        cum.push(cum.last().copied().unwrap_or(0) + u.records);
    }
    let end: Point = (units.len(), 0);
    let point = |target: u64| -> Point {
        // The unit holding record `target` (the first record right of the cut).
        let u = cum.partition_point(|&c| c <= target).saturating_sub(1);
        if u >= units.len() {
            return end;
        }
        let unit = units[u];
        let within = target - cum[u];
        match unit.length {
            Some(len) if len > 1 && unit.records > 1 && within > 0 => {
                let pos = (within as u128 * len as u128 / unit.records as u128) as u64;
                (u, pos.clamp(1, len - 1))
            }
            // Not cuttable: the nearer end of the contig.
            _ if within * 2 < unit.records => (u, 0),
            _ => (u + 1, 0),
        }
    };
    let mut points: Vec<Point> = vec![(0, 0)];
    for k in 1..n {
        let target = (total as u128 * k as u128 / n as u128) as u64;
        let p = point(target);
        let last = *points.last().expect("starts with the origin");
        points.push(p.max(last));
    }
    points.push(end);
    let spans_between = |(u0, p0): Point, (u1, p1): Point| -> Vec<Span> {
        let mut spans = Vec::new();
        let last = u1.min(units.len().saturating_sub(1));
        for (u, &unit) in units.iter().enumerate().take(last + 1).skip(u0) {
            let beg = if u == u0 { p0 } else { 0 };
            let stop = if u == u1 { Some(p1) } else { None };
            if stop == Some(0) || unit.records == 0 || stop.is_some_and(|s| s <= beg) {
                continue;
            }
            let whole = beg == 0 && stop.is_none();
            let records = match unit.length {
                _ if whole => unit.records,
                Some(len) if len > 0 => {
                    let to = stop.unwrap_or(len).min(len);
                    (unit.records as u128 * to.saturating_sub(beg) as u128 / len as u128) as u64
                }
                _ => unit.records,
            };
            spans.push(Span {
                unit: u,
                beg,
                end: stop,
                records,
                exact: whole,
            });
        }
        spans
    };
    let mut cuts: Vec<Cut> = points
        .windows(2)
        .enumerate()
        .map(|(axis, w)| Cut {
            axis,
            spans: spans_between(w[0], w[1]),
        })
        .collect();
    cuts.sort_by(|a, b| b.records().cmp(&a.records()).then(a.axis.cmp(&b.axis)));
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(records: u64, length: Option<u64>) -> Unit {
        Unit { records, length }
    }

    /// Every record position of every unit is covered by exactly one partition.
    fn assert_tiles(units: &[Unit], cuts: &[Cut]) {
        let mut by_axis = cuts.to_vec();
        by_axis.sort_by_key(|c| c.axis);
        let spans: Vec<Span> = by_axis.iter().flat_map(|c| c.spans.clone()).collect();
        for (i, unit) in units.iter().enumerate() {
            let mine: Vec<&Span> = spans.iter().filter(|s| s.unit == i).collect();
            if unit.records == 0 {
                assert!(mine.is_empty());
                continue;
            }
            assert_eq!(
                mine.first().map(|s| s.beg),
                Some(0),
                "unit {i} starts covered"
            );
            assert_eq!(
                mine.last().map(|s| s.end),
                Some(None),
                "unit {i} ends covered"
            );
            for w in mine.windows(2) {
                assert_eq!(w[0].end, Some(w[1].beg), "unit {i}: no gap, no overlap");
            }
        }
    }

    #[test]
    fn one_partition_is_everything_whole() {
        let units = [u(100, Some(1000)), u(0, Some(10)), u(50, None)];
        let cuts = partition(&units, 1);
        assert_eq!(cuts.len(), 1);
        assert!(cuts[0].spans.iter().all(|s| s.whole() && s.exact));
        assert_eq!(cuts[0].records(), 150);
        assert_tiles(&units, &cuts);
    }

    #[test]
    fn long_contigs_are_cut_by_position_and_balanced() {
        let units = [
            u(1200, Some(12_000)),
            u(600, Some(6000)),
            u(200, Some(2000)),
        ];
        for n in [2, 5, 13] {
            let cuts = partition(&units, n);
            assert_eq!(cuts.len(), n);
            assert_tiles(&units, &cuts);
            let target = 2000 / n as u64;
            for c in &cuts {
                assert!(
                    c.records().abs_diff(target) <= target / 10 + 2,
                    "{n}: {c:?}"
                );
            }
            // Longest first.
            assert!(cuts.windows(2).all(|w| w[0].records() >= w[1].records()));
        }
    }

    #[test]
    fn uncuttable_contigs_snap_to_their_ends() {
        let units = [u(10, None), u(10, None), u(10, None)];
        let cuts = partition(&units, 2);
        assert_tiles(&units, &cuts);
        assert!(cuts.iter().all(|c| c.spans.iter().all(Span::whole)));
        let cuts = partition(&units, 5);
        assert_eq!(cuts.len(), 5);
        assert_tiles(&units, &cuts);
        assert_eq!(cuts.iter().filter(|c| c.spans.is_empty()).count(), 2);
    }

    #[test]
    fn more_partitions_than_records_leaves_some_empty() {
        let units = [u(3, Some(3))];
        let cuts = partition(&units, 13);
        assert_eq!(cuts.len(), 13);
        assert_tiles(&units, &cuts);
    }
}
