//! Zarr metadata JSON as Python writes it. zarr-python's `json.dumps` writes a float
//! attribute that is NaN or infinite as a bare `NaN`, `Infinity` or `-Infinity`,
//! which JSON does not have and serde_json refuses; xarray and zarr-python read such
//! stores. svar2 reads them with those values as `null` (an attribute svar2 does
//! not interpret; a `fill_value` of NaN is the spec's string `"NaN"`, untouched).

use serde_json::Value;

/// Parses metadata `bytes`; where they are not JSON only because of Python's bare
/// `NaN`/`Infinity`/`-Infinity` (outside strings), reads those as `null`.
pub fn parse(bytes: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(e) => match without_python_floats(bytes) {
            Some(fixed) => serde_json::from_slice(&fixed).map_err(|_| e),
            None => Err(e),
        },
    }
}

/// Whether metadata `bytes` hold Python's bare `NaN`/`Infinity`/`-Infinity` (and are
/// otherwise JSON): [`parse`] reads them as null, so a command that writes them out
/// again writes null, and says so.
pub fn has_python_floats(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err()
        && without_python_floats(bytes)
            .is_some_and(|b| serde_json::from_slice::<serde::de::IgnoredAny>(&b).is_ok())
}

/// `bytes` with each bare `NaN`, `Infinity` and `-Infinity` outside strings written
/// `null`; `None` where there is none.
fn without_python_floats(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        let token = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t));
        match (b, token) {
            (b'"', _) => {
                in_string = true;
                out.push(b);
                i += 1;
            }
            (_, Some(t)) => {
                out.extend_from_slice(b"null");
                changed = true;
                i += t.len();
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's bare non-finite floats read as null, wherever they sit outside
    /// strings; inside strings (and escaped quotes) nothing changes; other bad JSON
    /// stays an error.
    #[test]
    fn pythons_non_finite_floats_read_as_null() {
        let v = parse(br#"{"a": NaN, "b": [Infinity, -Infinity, 1.5], "c": "NaN \" Infinity", "fill_value": "NaN"}"#).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": null, "b": [null, null, 1.5], "c": "NaN \" Infinity", "fill_value": "NaN"})
        );
        assert!(parse(br#"{"a": Nan}"#).is_err());
        assert!(parse(br#"{"a": NaN"#).is_err());
        assert_eq!(parse(br#"{"a": 1}"#).unwrap()["a"], 1);
    }
}
