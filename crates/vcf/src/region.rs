//! bcftools' regions (`-r/-R`: records overlapping them) and targets (`-t/-T`: records
//! whose POS lies in them, `^` to exclude), parsed as bcftools parses them: one home
//! for `view`, `query` and subsetting at conversion.

use crate::error::{Error, Result};
use std::path::Path;

/// A region: contig and 1-based inclusive positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub contig: String,
    pub start: i64,
    pub end: i64,
}

impl Region {
    /// Whether a record on `contig` from `pos` to `end` overlaps it. A region whose
    /// end is before its start (`chr1:300-200`) overlaps nothing, as in bcftools.
    pub fn overlaps(&self, contig: &str, pos: i64, end: i64) -> bool {
        self.start <= self.end && self.contig == contig && self.start <= end && pos <= self.end
    }
}

/// A position as htslib reads one (`hts_parse_decimal`): digits with commas, and an
/// optional fraction, exponent or k/M/G suffix (`1.5k` = 1500, `2e6`), truncated.
fn decimal(text: &str) -> Option<i64> {
    let t = text.replace(',', "");
    let (digits, scale) = match t.as_bytes().last()? {
        b'k' | b'K' => (&t[..t.len() - 1], 1e3),
        b'm' | b'M' => (&t[..t.len() - 1], 1e6),
        b'g' | b'G' => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if scale == 1.0 && digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits.parse().ok();
    }
    if !digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let v = digits.parse::<f64>().ok()? * scale;
    (v.is_finite() && v < 9.0e18).then(|| v.trunc() as i64)
}

/// `CHR`, `CHR:POS`, `CHR:BEG-END`, `CHR:BEG-` (numbers as htslib reads them:
/// commas, `1.5k`, `2e6`). A range whose end is before its start selects nothing.
pub fn parse_region(text: &str) -> Result<Region> {
    let bad = || {
        Error::Request(format!(
            "region {text:?}: expected CHR, CHR:POS, CHR:BEG-END or CHR:BEG-"
        ))
    };
    let num = |t: &str| decimal(t).ok_or_else(bad);
    // `{HLA-A*01:01:01:01}` or `{…}:BEG-END`: a contig name with colons, as htslib
    // takes it (without braces the last colon splits off the range).
    let braced = text.strip_prefix('{').and_then(|t| t.split_once('}'));
    let (contig, range) = match (braced, text.rsplit_once(':')) {
        (Some((c, "")), _) => (c, None),
        (Some((c, rest)), _) => (c, Some(rest.strip_prefix(':').ok_or_else(bad)?)),
        (None, Some((c, r)))
            if !r.is_empty() && r.chars().next().is_some_and(|c| c.is_ascii_digit()) =>
        {
            (c, Some(r))
        }
        _ => (text, None),
    };
    let (start, end) = match range {
        None => (1, i64::MAX),
        Some(r) => match r.split_once('-') {
            Some((a, "")) => (num(a)?, i64::MAX),
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let p = num(r)?;
                (p, p)
            }
        },
    };
    if contig.is_empty() {
        return Err(bad());
    }
    Ok(Region {
        contig: contig.to_string(),
        start,
        end,
    })
}

/// A comma-separated list of regions.
pub fn parse_regions(list: &str) -> Result<Vec<Region>> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(parse_region)
        .collect()
}

/// A regions, targets or samples file, as bcftools reads one (through htslib): plain
/// text, gzip or bgzip.
pub fn read_text_file(path: &Path) -> Result<String> {
    let unreadable = |why: String| Error::Request(format!("{}: {why}", path.display()));
    // htslib's own message for a missing file is a line on stderr; this says it once.
    std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    let mut fp = crate::hts::HtsFile::open(path)
        .ok_or_else(|| unreadable("htslib cannot open it".into()))?;
    let mut ks = crate::hts::KString::new();
    let mut bytes = Vec::new();
    loop {
        match fp.getline(&mut ks) {
            n if n >= 0 => {
                bytes.extend_from_slice(ks.bytes());
                bytes.push(b'\n');
            }
            -1 => break,
            _ => {
                return Err(unreadable(
                    "cannot be read to its end (a damaged gzip?)".into(),
                ))
            }
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        unreadable(format!(
            "not UTF-8 text (byte {} of the decompressed text)",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// A regions file: `CHR\tBEG\tEND` (1-based, inclusive) or `CHR\tPOS` lines; a `.bed`
/// file is BED (0-based, half-open). `#` lines are skipped. Plain, gzip or bgzip.
pub fn read_regions_file(path: &std::path::Path) -> Result<Vec<Region>> {
    let text = read_text_file(path)?;
    let bed =
        path.extension().is_some_and(|e| e == "bed") || path.to_string_lossy().ends_with(".bed.gz");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') || line.starts_with("track ") {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || {
            Error::Request(format!(
                "{} line {}: expected CHR, BEG[, END] separated by tabs",
                path.display(),
                i + 1
            ))
        };
        let num = |s: &str| decimal(s.trim()).ok_or_else(bad);
        let (start, end) = match (f.get(1), f.get(2)) {
            (Some(a), Some(b)) if bed => (num(a)? + 1, num(b)?),
            (Some(a), Some(b)) => (num(a)?, num(b)?),
            (Some(a), None) => (num(a)?, num(a)?),
            _ => return Err(bad()),
        };
        out.push(Region {
            contig: f[0].to_string(),
            start,
            end,
        });
    }
    // No regions is no selection at all, which would print every record (bcftools
    // refuses the file: "Failed to read the regions").
    if out.is_empty() {
        return Err(Error::Request(format!(
            "{}: holds no regions (blank or # lines only): give a file with CHR, BEG[, END] \
             lines, or leave -R/-T out for every record",
            path.display()
        )));
    }
    Ok(out)
}

/// `-r LIST` or `-R FILE`, whichever is given (`None`: neither).
pub fn regions_from_flags(list: Option<&str>, file: Option<&Path>) -> Result<Option<Vec<Region>>> {
    match (list, file) {
        (Some(l), _) => parse_regions(l).map(Some),
        (None, Some(f)) => read_regions_file(f).map(Some),
        (None, None) => Ok(None),
    }
}

/// Targets: records whose POS lies in one of them (or, `exclude`, in none).
#[derive(Debug, Clone)]
pub struct Targets {
    pub regions: Vec<Region>,
    pub exclude: bool,
}

impl Targets {
    /// `-t LIST` (`^LIST` excludes).
    pub fn parse(list: &str) -> Result<Targets> {
        let (exclude, list) = match list.strip_prefix('^') {
            Some(l) => (true, l),
            None => (false, list),
        };
        Ok(Targets {
            regions: parse_regions(list)?,
            exclude,
        })
    }

    /// `-t LIST` or `-T FILE` (`^FILE` excludes), whichever is given.
    pub fn from_flags(list: Option<&str>, file: Option<&Path>) -> Result<Option<Targets>> {
        if let Some(t) = list {
            return Targets::parse(t).map(Some);
        }
        let Some(f) = file else { return Ok(None) };
        let (exclude, path) = match f.to_str().and_then(|s| s.strip_prefix('^')) {
            Some(p) => (true, std::path::PathBuf::from(p)),
            None => (false, f.to_path_buf()),
        };
        Ok(Some(Targets {
            regions: read_regions_file(&path)?,
            exclude,
        }))
    }

    /// Whether a record on `contig` at `pos` is kept.
    pub fn keeps(&self, contig: &str, pos: i64) -> bool {
        let inside = self
            .regions
            .iter()
            .any(|r| r.contig == contig && r.start <= pos && pos <= r.end);
        inside != self.exclude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_as_bcftools_takes_them() {
        assert_eq!(parse_region("chr1").unwrap().end, i64::MAX);
        assert_eq!(
            parse_region("chr1:1,000-2,000").unwrap(),
            Region {
                contig: "chr1".into(),
                start: 1000,
                end: 2000
            }
        );
        assert_eq!(parse_region("chr1:5").unwrap().end, 5);
        assert_eq!(parse_region("chr1:5-").unwrap().end, i64::MAX);
        assert_eq!(parse_region("HLA-A:5").unwrap().contig, "HLA-A");
        let hla = parse_region("{HLA-A*01:01:01:01}").unwrap();
        assert_eq!(
            (hla.contig.as_str(), hla.end),
            ("HLA-A*01:01:01:01", i64::MAX)
        );
        let hla = parse_region("{HLA-A*01:01}:5-9").unwrap();
        assert_eq!(
            (hla.contig.as_str(), hla.start, hla.end),
            ("HLA-A*01:01", 5, 9)
        );
        assert!(parse_region("{HLA}5-9").is_err());
        // htslib's numbers; a reversed range is a region of nothing.
        assert_eq!(parse_region("chr1:1.5k-2e3").unwrap().start, 1500);
        assert_eq!(parse_region("chr1:1.5k-2e3").unwrap().end, 2000);
        assert_eq!(parse_region("chr1:2M").unwrap().end, 2_000_000);
        assert!(parse_region("chr1:1x").is_err() && parse_region("chr1:1-k").is_err());
        let reversed = parse_region("chr1:9-2").unwrap();
        assert!(!reversed.overlaps("chr1", 1, 20) && !reversed.overlaps("chr1", 5, 5));
        assert!(parse_region("chr1:2-9").unwrap().overlaps("chr1", 1, 2));
        let t = Targets::parse("^chr1:10-20").unwrap();
        assert!(t.keeps("chr1", 9) && !t.keeps("chr1", 10) && t.keeps("chr2", 15));
    }
}
