//! Which contig goes first. The longest runs first so the tail of the job is short
//! contigs filling idle cores, not one long contig on one core.

/// How a contig's cost was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostTier {
    /// Exact record count from the CSI/TBI index statistics.
    IndexCount,
    /// The header's contig length: a coarser proxy, used only to sort.
    ContigLength,
    /// Nothing known.
    Unestimated,
}

/// What is known about one contig before reading it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ContigCost {
    pub name: String,
    pub tier: CostTier,
    /// Records (index tier) or bases (length tier).
    pub cost: u64,
}

/// Dispatch order: unestimated contigs first (they might be the longest), then by
/// cost, largest first; ties broken by name so the order is deterministic.
pub fn dispatch_order(contigs: &[ContigCost]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..contigs.len()).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (&contigs[a], &contigs[b]);
        let unknown = |c: &ContigCost| c.tier != CostTier::Unestimated;
        unknown(x)
            .cmp(&unknown(y))
            .then(y.cost.cmp(&x.cost))
            .then(x.name.cmp(&y.name))
    });
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, tier: CostTier, cost: u64) -> ContigCost {
        ContigCost {
            name: name.into(),
            tier,
            cost,
        }
    }

    #[test]
    fn longest_first_unestimated_first_ties_by_name() {
        let contigs = vec![
            c("chr2", CostTier::IndexCount, 50),
            c("chr1", CostTier::IndexCount, 100),
            c("chrM", CostTier::Unestimated, 0),
            c("chr3", CostTier::IndexCount, 50),
            c("chrY", CostTier::IndexCount, 0),
        ];
        let names: Vec<_> = dispatch_order(&contigs)
            .into_iter()
            .map(|i| contigs[i].name.as_str())
            .collect();
        assert_eq!(names, ["chrM", "chr1", "chr2", "chr3", "chrY"]);
    }
}
