//! The VCF header facts of a store: samples, contigs (with lengths), FILTERs, INFO and
//! FORMAT fields with Number, Type and Description, and the `##` lines convert kept.
//! svar2 stores record each field's declared `vcf_number` and `vcf_type`; other stores
//! (bio2zarr's) fall back to what the array's shape and data type say.

use crate::error::{Error, Result};
use serde_json::Value;
use svar2_reader::Store;
use svar2_vcf::schema::{Category, Contig, FieldDef, Filter, Schema, VcfNumber, VcfType};
use svar2_zarr::AnyArray;

fn number_of(a: &AnyArray) -> VcfNumber {
    let inferred =
        svar2_store::fields::inferred_number(&a.name, a.dtype, &a.layout.dimension_names);
    let n = a
        .attributes
        .get("vcf_number")
        .and_then(Value::as_str)
        .unwrap_or(&inferred);
    match n {
        "A" => VcfNumber::A,
        "R" => VcfNumber::R,
        "G" => VcfNumber::G,
        "." => VcfNumber::Dot,
        n => n.parse().map(VcfNumber::Fixed).unwrap_or(VcfNumber::Dot),
    }
}

fn type_of(a: &AnyArray) -> VcfType {
    let t = a
        .attributes
        .get("vcf_type")
        .and_then(Value::as_str)
        .unwrap_or_else(|| svar2_store::fields::inferred_type(a.dtype));
    match t {
        "Float" => VcfType::Float,
        "Flag" => VcfType::Flag,
        "String" => VcfType::String,
        "Character" => VcfType::Character,
        _ => VcfType::Integer,
    }
}

/// The header facts of `store`.
pub fn schema_of(store: &Store) -> Result<Schema> {
    let g = store.group();
    let bad = |m: String| Error::Usage(format!("{}: {m}", g.root.display()));
    let strings = |name: &str| -> Result<Vec<String>> {
        match g.array(name) {
            Some(a) => a.read_strings().map_err(Error::from),
            None => Ok(Vec::new()),
        }
    };
    let names = store.contig_names().to_vec();
    let lengths: Option<Vec<i64>> = match g.array("contig_length") {
        Some(a) => Some(a.read_rows_i64(0, a.shape()[0])?),
        None => None,
    };
    let contigs = names
        .iter()
        .enumerate()
        .map(|(i, name)| Contig {
            name: name.clone(),
            length: lengths.as_ref().and_then(|l| l.get(i).copied()),
            hts_rid: None,
        })
        .collect::<Vec<_>>();
    let filter_ids = strings("filter_id")?;
    let filter_descriptions = strings("filter_description")?;
    let filters: Vec<Filter> = filter_ids
        .iter()
        .enumerate()
        .map(|(i, id)| Filter {
            id: id.clone(),
            description: filter_descriptions.get(i).cloned().unwrap_or_default(),
        })
        .collect();
    let mut fields = Vec::new();
    for (category, prefix) in [(Category::Info, "variant_"), (Category::Format, "call_")] {
        let mut arrays: Vec<&std::sync::Arc<AnyArray>> = g
            .arrays
            .iter()
            .filter(|a| a.name.starts_with(prefix))
            .filter(|a| svar2_store::fields::is_field(&a.name, &a.layout.dimension_names))
            .collect();
        // The header's order where convert recorded it, else the names'.
        arrays.sort_by_key(|a| {
            (
                a.attributes
                    .get("vcf_order")
                    .and_then(Value::as_u64)
                    .unwrap_or(u64::MAX),
                a.name.clone(),
            )
        });
        for a in arrays {
            fields.push(FieldDef {
                category,
                name: a.name[prefix.len()..].to_string(),
                number: number_of(a),
                ty: type_of(a),
                description: a
                    .attributes
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            });
        }
    }
    let meta_information: Vec<(String, String)> = g
        .attributes
        .get("vcf_meta_information")
        .and_then(Value::as_array)
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| {
                    let p = p.as_array()?;
                    Some((
                        p.first()?.as_str()?.to_string(),
                        p.get(1)?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    // Text that goes into the header whole: a line break (or a tab in a name) would
    // print lines the store never held (a crafted `##` line, a second #CHROM line).
    let broken = |t: &str, tab: bool| t.contains(['\n', '\r']) || (tab && t.contains('\t'));
    let text = names
        .iter()
        .chain(store.sample_names())
        .map(|t| (t.as_str(), true))
        .chain(
            filters
                .iter()
                .flat_map(|f: &Filter| [(f.id.as_str(), true), (f.description.as_str(), false)]),
        )
        .chain(
            fields.iter().flat_map(|f: &FieldDef| {
                [(f.name.as_str(), true), (f.description.as_str(), false)]
            }),
        )
        .chain(
            meta_information
                .iter()
                .flat_map(|(k, v): &(String, String)| [(k.as_str(), true), (v.as_str(), false)]),
        );
    for (t, tab) in text {
        if broken(t, tab) {
            return Err(bad(format!(
                "the header text {:?} holds a line break{}: the store's metadata is damaged \
                 (restore it from a copy or convert again)",
                t.chars().take(60).collect::<String>(),
                if tab { " or a tab" } else { "" }
            )));
        }
    }
    // Contig and filter IDs name one each: a name listed twice would print one's
    // records or flags under the other's name, and `-r` would find only the first.
    for (what, list) in [
        (
            "contig_id",
            names.iter().map(String::as_str).collect::<Vec<_>>(),
        ),
        ("filter_id", filters.iter().map(|f| f.id.as_str()).collect()),
    ] {
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = list.iter().find(|n| !seen.insert(**n)) {
            return Err(bad(format!(
                "{what} lists {twice} twice: which records or flags are its cannot be told; \
                 the store's metadata is damaged (restore it from a copy or convert again)"
            )));
        }
    }
    // Records need contigs to lie on; a store of none (a header-only VCF without
    // ##contig lines) prints its header, as bcftools view prints the VCF's.
    let records = g.array("variant_position").map_or(0, |a| a.shape()[0]);
    if names.is_empty() && records > 0 {
        return Err(bad(format!(
            "{records} records but no contigs (contig_id is empty)"
        )));
    }
    Ok(Schema {
        samples: store.sample_names().into(),
        declared_contigs: contigs.len(),
        contigs,
        filters,
        fields,
        has_gt: g.array("call_genotype").is_some(),
        meta_information,
        header_order: stored_header_order(&g.attributes),
    })
}

/// The header's order of line kinds as convert recorded it (`vcf_header_order`: runs
/// of `[kind, lines]`); empty for stores without it (bio2zarr's, older svar2's), or
/// when anything in it is not such a run.
fn stored_header_order(
    attributes: &serde_json::Map<String, Value>,
) -> Vec<(svar2_vcf::schema::HeaderLineKind, usize)> {
    let Some(runs) = attributes.get("vcf_header_order").and_then(Value::as_array) else {
        return Vec::new();
    };
    runs.iter()
        .map(|r| {
            let r = r.as_array()?;
            let kind = svar2_vcf::schema::HeaderLineKind::from_name(r.first()?.as_str()?)?;
            let n = usize::try_from(r.get(1)?.as_u64()?).ok()?;
            Some((kind, n))
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}
