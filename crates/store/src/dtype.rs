//! The data types a store's arrays have, and their Zarr v3 JSON (written and read).

use serde_json::{json, Value};

/// The zarr data type of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    Bool,
    I8,
    I16,
    I32,
    I64,
    F32,
    /// Variable-length UTF-8 (`string`, `vlen-utf8`).
    Str,
    /// One UTF-32 code point (`fixed_length_utf32`, numpy `U1`), for VCF `Character`.
    Char,
}

impl Dtype {
    /// Every data type svar2 writes (for tests and readers that enumerate them).
    pub const ALL: [Dtype; 8] = [
        Dtype::Bool,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::F32,
        Dtype::Str,
        Dtype::Char,
    ];

    /// Bytes per element for fixed-size types; `None` for strings.
    pub fn size(self) -> Option<usize> {
        match self {
            Dtype::Bool | Dtype::I8 => Some(1),
            Dtype::I16 => Some(2),
            Dtype::I32 | Dtype::F32 | Dtype::Char => Some(4),
            Dtype::I64 => Some(8),
            Dtype::Str => None,
        }
    }

    /// The smallest signed integer type holding `[min, max]`, as numpy/bio2zarr pick it.
    pub fn smallest_int(min: i64, max: i64) -> Dtype {
        if min >= i8::MIN as i64 && max <= i8::MAX as i64 {
            Dtype::I8
        } else if min >= i16::MIN as i64 && max <= i16::MAX as i64 {
            Dtype::I16
        } else if min >= i32::MIN as i64 && max <= i32::MAX as i64 {
            Dtype::I32
        } else {
            Dtype::I64
        }
    }

    /// The `data_type` of Zarr v3 array metadata.
    pub fn json(self) -> Value {
        match self {
            Dtype::Bool => json!("bool"),
            Dtype::I8 => json!("int8"),
            Dtype::I16 => json!("int16"),
            Dtype::I32 => json!("int32"),
            Dtype::I64 => json!("int64"),
            Dtype::F32 => json!("float32"),
            Dtype::Str => json!("string"),
            Dtype::Char => {
                json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 4}})
            }
        }
    }

    /// Reads a `data_type` back; `None` for one svar2 does not write.
    pub fn from_json(v: &Value) -> Option<Dtype> {
        if let Some(name) = v.as_str() {
            return Dtype::ALL.into_iter().find(|d| d.json() == *name);
        }
        (v.get("name")?.as_str()? == "fixed_length_utf32"
            && v.pointer("/configuration/length_bytes")?.as_u64()? == 4)
            .then_some(Dtype::Char)
    }

    /// The array's `fill_value` (zero / false / empty, as VCF Zarr pads).
    pub fn fill_json(self) -> Value {
        match self {
            Dtype::Bool => json!(false),
            Dtype::F32 => json!(0.0),
            Dtype::Str | Dtype::Char => json!(""),
            _ => json!(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_int_matches_numpy_rules() {
        assert_eq!(Dtype::smallest_int(-2, 127), Dtype::I8);
        assert_eq!(Dtype::smallest_int(-129, 0), Dtype::I16);
        assert_eq!(Dtype::smallest_int(0, 70000), Dtype::I32);
        assert_eq!(Dtype::smallest_int(0, 1 << 40), Dtype::I64);
    }

    #[test]
    fn json_round_trips_for_every_type() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::from_json(&d.json()), Some(d), "{d:?}");
        }
        assert_eq!(Dtype::from_json(&json!("uint8")), None);
    }
}
