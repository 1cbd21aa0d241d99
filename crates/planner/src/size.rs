//! Byte sizes as users write them (`auto`, `512MiB`, `8G`, `1000000`).

/// A `--max-mem` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxMem {
    /// 0.8 × the memory this process may use (cgroup limit, else host memory).
    Auto,
    Bytes(u64),
}

/// The share of the detected limit `auto` plans for: headroom for the page cache,
/// the allocator and anything else in the job.
pub const AUTO_FRACTION: f64 = 0.8;

/// Parses `auto`, a bare byte count, or a number with a unit: K/M/G/T (powers of 1024,
/// as `ulimit` and Slurm read them), optionally followed by `iB` or `B`.
pub fn parse_max_mem(s: &str) -> Result<MaxMem, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(MaxMem::Auto);
    }
    parse_bytes(t).map(MaxMem::Bytes)
}

/// Parses a byte size such as `512MiB`, `8G`, `1.5GiB` or `1000000`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (try 8GiB, 512M or auto)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => return Err(format!("{s:?}: unknown unit {u:?} (use K, M, G or T)")),
    };
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("{s:?} is not a usable size"));
    }
    Ok(bytes as u64)
}

/// Formats bytes for people: `1.5 GiB`.
pub fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_users_write() {
        assert_eq!(parse_max_mem("auto"), Ok(MaxMem::Auto));
        assert_eq!(parse_max_mem("AUTO"), Ok(MaxMem::Auto));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert_eq!(parse_bytes("8gb"), Ok(8 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("1000000"), Ok(1_000_000));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("5X").is_err());
        assert!(parse_bytes("0").is_err());
        assert_eq!(human(3 << 29), "1.5 GiB");
    }
}
