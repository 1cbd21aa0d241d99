//! Which VCF field an array is and how it was declared. svar2 records each INFO and
//! FORMAT array's `vcf_number`, `vcf_type` (and `vcf_order`, its place in the header)
//! as attributes; for stores that did not (bio2zarr's), the declaration is inferred
//! from the array's data type and dimensions, so `view` rebuilds a header for any
//! store. (`rechunk` copies the attributes as they are: an inference is not a
//! declaration.)

use crate::Dtype;

/// Arrays of the fixed VCF columns and the genotypes: not INFO/FORMAT fields.
pub const NOT_FIELDS: [&str; 11] = [
    "variant_contig",
    "variant_position",
    "variant_length",
    "variant_id",
    "variant_id_mask",
    "variant_allele",
    "variant_quality",
    "variant_filter",
    "call_genotype",
    "call_genotype_mask",
    "call_genotype_phased",
];

/// Whether `name` (with its dimension names) is an INFO (`variant_`) or FORMAT
/// (`call_`, with a samples axis) field's array.
pub fn is_field(name: &str, dims: &[String]) -> bool {
    if NOT_FIELDS.contains(&name) || dims.first().is_none_or(|d| d != "variants") {
        return false;
    }
    name.starts_with("variant_")
        || (name.starts_with("call_") && dims.get(1).is_some_and(|d| d == "samples"))
}

/// The `Type=` an array's data type stands for.
pub fn inferred_type(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bool => "Flag",
        Dtype::F32 => "Float",
        Dtype::Str => "String",
        Dtype::Char => "Character",
        _ => "Integer",
    }
}

/// The `Number=` an array's trailing dimension stands for (`0` for flags).
pub fn inferred_number(name: &str, dtype: Dtype, dims: &[String]) -> String {
    if dtype == Dtype::Bool {
        return "0".into();
    }
    let fixed = if name.starts_with("call_") { 2 } else { 1 };
    match dims.get(fixed).map(String::as_str) {
        None => "1".into(),
        Some("alt_alleles") => "A".into(),
        Some("alleles") => "R".into(),
        Some("genotypes") => "G".into(),
        Some(_) => ".".into(),
    }
}
