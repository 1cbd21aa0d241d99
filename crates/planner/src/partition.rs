//! Cutting a conversion into partitions for a batch scheduler (Slurm array tasks,
//! `xargs -P`): contiguous stretches of the variants axis with about equal record
//! counts. A contig longer than a partition is cut by position, where the caller's
//! `locate` says that share of its records begins (from the index: the file offset
//! that share of the contig's bytes reaches); a contig that cannot be located is
//! never cut. Pure: counts in, position ranges out.

use serde::{Deserialize, Serialize};

/// One contig's share of the work, in variants-axis order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Records, from the index.
    pub records: u64,
    /// Whether it may be cut by position.
    pub cuttable: bool,
}

/// A position range of one unit: `beg..end`, 0-based, half-open; `end` `None` runs
/// to the contig's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub unit: usize,
    pub beg: u64,
    pub end: Option<u64>,
    /// Records the index gives (`exact`) or the share of the contig the cut aimed at.
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

/// A point on the axis: unit `u` at position `pos` (0: the unit's start), and the
/// records of the unit before it (aimed at, where `pos` > 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    unit: usize,
    pos: u64,
    before: u64,
}

/// Cuts `units` into `n` partitions of about equal records, numbered longest first
/// (ties in axis order) so a scheduler that starts tasks in index order runs the
/// biggest first. `locate(unit, share)` is the position where that share (0..1) of
/// a cuttable unit's records begins. Partitions may be empty when there are fewer
/// records, or fewer places to cut, than partitions.
pub fn partition(units: &[Unit], n: usize, mut locate: impl FnMut(usize, f64) -> u64) -> Vec<Cut> {
    let n = n.max(1);
    let total: u64 = units.iter().map(|u| u.records).sum();
    let mut cum = Vec::with_capacity(units.len() + 1);
    cum.push(0u64);
    for u in units {
        cum.push(cum.last().copied().unwrap_or(0) + u.records);
    }
    let start = |unit: usize| Point {
        unit,
        pos: 0,
        before: 0,
    };
    let mut point = |target: u64| -> Point {
        // The unit holding record `target` (the first record right of the cut).
        let u = cum.partition_point(|&c| c <= target).saturating_sub(1);
        if u >= units.len() {
            return start(units.len());
        }
        let unit = units[u];
        let within = target - cum[u];
        if unit.cuttable && unit.records > 1 && within > 0 {
            let pos = locate(u, within as f64 / unit.records as f64);
            if pos > 0 {
                return Point {
                    unit: u,
                    pos,
                    before: within,
                };
            }
        }
        // Not cuttable here: the nearer end of the contig.
        if within * 2 < unit.records {
            start(u)
        } else {
            start(u + 1)
        }
    };
    let mut points = vec![start(0)];
    for k in 1..n {
        let target = (total as u128 * k as u128 / n as u128) as u64;
        let p = point(target);
        let last = *points.last().expect("starts with the origin");
        points.push(if (p.unit, p.pos) <= (last.unit, last.pos) {
            last
        } else {
            p
        });
    }
    points.push(start(units.len()));
    let spans_between = |a: Point, b: Point| -> Vec<Span> {
        let mut spans = Vec::new();
        let last = b.unit.min(units.len().saturating_sub(1));
        for (u, &unit) in units.iter().enumerate().take(last + 1).skip(a.unit) {
            let (beg, from) = if u == a.unit {
                (a.pos, a.before)
            } else {
                (0, 0)
            };
            let (end, to) = if u == b.unit {
                (Some(b.pos), b.before)
            } else {
                (None, unit.records)
            };
            if end == Some(0) || unit.records == 0 || end.is_some_and(|e| e <= beg) {
                continue;
            }
            spans.push(Span {
                unit: u,
                beg,
                end,
                records: to.saturating_sub(from),
                exact: beg == 0 && end.is_none(),
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

    /// Units from (records, length), and a `locate` for records spread evenly along
    /// the length.
    fn units(specs: &[(u64, Option<u64>)]) -> Vec<Unit> {
        specs
            .iter()
            .map(|&(records, len)| Unit {
                records,
                cuttable: len.is_some(),
            })
            .collect()
    }

    fn cut(specs: &[(u64, Option<u64>)], n: usize) -> Vec<Cut> {
        partition(&units(specs), n, |i, share| {
            (share * specs[i].1.unwrap_or(0) as f64) as u64
        })
    }

    /// Every record position of every unit is covered by exactly one partition.
    fn assert_tiles(specs: &[(u64, Option<u64>)], cuts: &[Cut]) {
        let mut by_axis = cuts.to_vec();
        by_axis.sort_by_key(|c| c.axis);
        let spans: Vec<Span> = by_axis.iter().flat_map(|c| c.spans.clone()).collect();
        for (i, &(records, _)) in specs.iter().enumerate() {
            let mine: Vec<&Span> = spans.iter().filter(|s| s.unit == i).collect();
            if records == 0 {
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
            assert_eq!(mine.iter().map(|s| s.records).sum::<u64>(), records);
        }
    }

    #[test]
    fn one_partition_is_everything_whole() {
        let specs = [(100, Some(1000)), (0, Some(10)), (50, None)];
        let cuts = cut(&specs, 1);
        assert_eq!(cuts.len(), 1);
        assert!(cuts[0].spans.iter().all(|s| s.whole() && s.exact));
        assert_eq!(cuts[0].records(), 150);
        assert_tiles(&specs, &cuts);
    }

    #[test]
    fn long_contigs_are_cut_where_located_and_balanced() {
        let specs = [(1200, Some(12_000)), (600, Some(6000)), (200, Some(2000))];
        for n in [2, 5, 13] {
            let cuts = cut(&specs, n);
            assert_eq!(cuts.len(), n);
            assert_tiles(&specs, &cuts);
            let target = 2000 / n as u64;
            for c in &cuts {
                assert!(c.records().abs_diff(target) <= 2, "{n}: {c:?}");
            }
            // Longest first.
            assert!(cuts.windows(2).all(|w| w[0].records() >= w[1].records()));
        }
    }

    #[test]
    fn uncuttable_contigs_snap_to_their_ends() {
        let specs = [(10, None), (10, None), (10, None)];
        let cuts = cut(&specs, 2);
        assert_tiles(&specs, &cuts);
        assert!(cuts.iter().all(|c| c.spans.iter().all(Span::whole)));
        let cuts = cut(&specs, 5);
        assert_eq!(cuts.len(), 5);
        assert_tiles(&specs, &cuts);
        assert_eq!(cuts.iter().filter(|c| c.spans.is_empty()).count(), 2);
    }

    #[test]
    fn cuts_that_land_on_one_position_leave_partitions_empty() {
        // Every record near the contig's start: located cuts collapse.
        let specs = [(1000, Some(1_000_000))];
        let cuts = partition(&units(&specs), 13, |_, share| 1 + (share * 3.0) as u64);
        assert_eq!(cuts.len(), 13);
        assert_tiles(&specs, &cuts);
        assert!(cuts.iter().filter(|c| !c.spans.is_empty()).count() <= 4);
    }
}
