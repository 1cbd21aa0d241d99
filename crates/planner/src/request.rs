//! What a user asks of any command that writes a store — convert, plan, rechunk, a
//! partition, Python's `convert`/`rechunk` — declared once: the store's layout and
//! the machine's budget. The CLI's flags and Python's keywords both build these, and
//! their rules (the compression levels, the amplification) are checked here alone.

use crate::geometry::{PatchShape, Requested};
use crate::size::MaxMem;

/// The compression levels a store may be written at (the blosc clevel of numeric
/// chunks, the zstd level of strings).
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=9;

/// The store layout asked for: the patch the chunks are sized for (or explicit
/// sizes, which override it), and the compression level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayoutRequest {
    pub patch: Option<PatchShape>,
    /// Bytes decoded / bytes needed allowed for a `patch`.
    pub max_amplification: f64,
    pub requested: Requested,
    pub zstd_level: i32,
}

impl Default for LayoutRequest {
    fn default() -> LayoutRequest {
        LayoutRequest {
            patch: None,
            max_amplification: 1.5,
            requested: Requested::default(),
            zstd_level: 1,
        }
    }
}

impl LayoutRequest {
    /// Whether anything but the defaults was asked (a partition takes its plan's
    /// layout, and refuses another).
    pub fn given(&self) -> bool {
        *self != LayoutRequest::default()
    }

    /// Checks the request's numbers: `Err` says which is wrong and what is allowed.
    pub fn checked(self) -> Result<LayoutRequest, String> {
        zstd_level(self.zstd_level)?;
        max_amplification(self.max_amplification)?;
        let r = &self.requested;
        for (name, v) in [
            ("variants chunk", r.variants_chunk),
            ("samples chunk", r.samples_chunk),
            ("variants shard", r.variants_shard),
            ("samples shard", r.samples_shard),
        ] {
            if v == Some(0) {
                return Err(format!("{name} 0: a chunk or shard holds at least 1"));
            }
        }
        Ok(self)
    }
}

/// The one rule for a compression level (`--zstd-level`, `zstd_level=`).
pub fn zstd_level(level: i32) -> Result<i32, String> {
    if ZSTD_LEVELS.contains(&level) {
        Ok(level)
    } else {
        Err(format!(
            "zstd level {level} is not in {}..={}",
            ZSTD_LEVELS.start(),
            ZSTD_LEVELS.end()
        ))
    }
}

/// The one rule for `--max-amplification` (`max_amplification=`): a positive number
/// (below 1 is allowed and noted by the plan: chunks stop at their smallest useful
/// size); NaN or infinity would silently disable the bound.
pub fn max_amplification(a: f64) -> Result<f64, String> {
    if a.is_finite() && a > 0.0 {
        Ok(a)
    } else {
        Err(format!(
            "max amplification {a} is not a positive number (bytes decoded / bytes needed)"
        ))
    }
}

/// The machine budget asked for: memory and encoding threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetRequest {
    pub max_mem: MaxMem,
    /// Encoding threads (`None`: every usable core).
    pub threads: Option<usize>,
}

impl Default for BudgetRequest {
    fn default() -> BudgetRequest {
        BudgetRequest {
            max_mem: MaxMem::Auto,
            threads: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(zstd_level(0).is_err() && zstd_level(10).is_err());
        assert_eq!(zstd_level(9), Ok(9));
        assert!(max_amplification(0.0).is_err() && max_amplification(f64::NAN).is_err());
        assert_eq!(max_amplification(0.5), Ok(0.5));
        assert!(!LayoutRequest::default().given());
        let l = LayoutRequest {
            zstd_level: 3,
            ..Default::default()
        };
        assert!(l.given() && l.checked().is_ok());
        let zero = LayoutRequest {
            requested: Requested {
                samples_shard: Some(0),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(zero.checked().is_err());
    }
}
