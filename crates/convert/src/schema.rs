//! The VCF header, read once, as the plain facts the store needs: samples, contigs,
//! filters, INFO/FORMAT field definitions and the generic `##key=value` lines.

use crate::error::{Error, Result};
use rust_htslib::bcf::header::{HeaderRecord, HeaderView};
use std::path::Path;

/// VCF `Type=` of an INFO or FORMAT field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcfType {
    Integer,
    Float,
    Flag,
    String,
    Character,
}

/// VCF `Number=`: how many values a field carries per record (or per sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcfNumber {
    Fixed(u32),
    /// One per ALT allele.
    A,
    /// One per allele, REF included.
    R,
    /// One per possible genotype.
    G,
    /// Unknown, varies by record.
    Dot,
}

/// Whether a field lives in INFO (one value set per record) or FORMAT (per sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Info,
    Format,
}

/// One INFO or FORMAT field as declared in the header.
#[derive(Debug, Clone)]
pub struct FieldDef {
    pub category: Category,
    pub name: String,
    pub number: VcfNumber,
    pub ty: VcfType,
    pub description: String,
}

impl FieldDef {
    /// The VCF Zarr array name: `variant_<ID>` for INFO, `call_<ID>` for FORMAT.
    pub fn array_name(&self) -> String {
        match self.category {
            Category::Info => format!("variant_{}", self.name),
            Category::Format => format!("call_{}", self.name),
        }
    }
}

/// A header contig; `length` is −1 when the header gives none (as bio2zarr writes it).
#[derive(Debug, Clone)]
pub struct Contig {
    pub name: String,
    pub length: i64,
}

/// A header FILTER; PASS always comes first.
#[derive(Debug, Clone)]
pub struct Filter {
    pub id: String,
    pub description: String,
}

/// Everything svar2 takes from a VCF header.
#[derive(Debug, Clone)]
pub struct Schema {
    pub samples: Vec<String>,
    /// In htslib id order, which is the order `variant_contig` indexes.
    pub contigs: Vec<Contig>,
    pub filters: Vec<Filter>,
    /// INFO fields then FORMAT fields (GT excluded), in header order.
    pub fields: Vec<FieldDef>,
    /// Whether the header declares FORMAT/GT.
    pub has_gt: bool,
    /// `##key=value` lines other than contig/FILTER/INFO/FORMAT, as bio2zarr stores them.
    pub meta_information: Vec<(String, String)>,
}

fn strip_quotes(s: &str) -> String {
    s.trim_matches('"').to_string()
}

fn parse_number(path: &Path, id: &str, s: &str) -> Result<VcfNumber> {
    Ok(match s {
        "A" => VcfNumber::A,
        "R" => VcfNumber::R,
        "G" => VcfNumber::G,
        "." => VcfNumber::Dot,
        n => VcfNumber::Fixed(n.parse().map_err(|_| Error::Header {
            path: path.into(),
            msg: format!("field {id}: Number={n} is not A, R, G, . or an integer"),
        })?),
    })
}

fn parse_type(path: &Path, id: &str, s: &str) -> Result<VcfType> {
    Ok(match s {
        "Integer" => VcfType::Integer,
        "Float" => VcfType::Float,
        "Flag" => VcfType::Flag,
        "String" => VcfType::String,
        "Character" => VcfType::Character,
        t => {
            return Err(Error::Header {
                path: path.into(),
                msg: format!("field {id}: unknown Type={t}"),
            })
        }
    })
}

impl Schema {
    /// Reads the schema from an open htslib header. `raw_header` is the header text
    /// htslib prints (used for the generic meta-information lines).
    pub fn from_header(path: &Path, header: &HeaderView, raw_header: &str) -> Result<Schema> {
        let samples = header
            .samples()
            .iter()
            .map(|s| {
                String::from_utf8(s.to_vec()).map_err(|_| Error::Header {
                    path: path.into(),
                    msg: format!("sample name {:?} is not UTF-8", String::from_utf8_lossy(s)),
                })
            })
            .collect::<Result<Vec<_>>>()?;

        let records = header.header_records();
        let mut lengths = std::collections::HashMap::new();
        let mut filters = Vec::new();
        let mut fields = Vec::new();
        let mut has_gt = false;
        for rec in &records {
            match rec {
                HeaderRecord::Contig { values, .. } => {
                    if let Some(id) = values.get("ID") {
                        let len = values
                            .get("length")
                            .and_then(|l| l.parse::<i64>().ok())
                            .unwrap_or(-1);
                        lengths.insert(id.clone(), len);
                    }
                }
                HeaderRecord::Filter { values, .. } => {
                    if let Some(id) = values.get("ID") {
                        filters.push(Filter {
                            id: id.clone(),
                            description: values
                                .get("Description")
                                .map(|d| strip_quotes(d))
                                .unwrap_or_default(),
                        });
                    }
                }
                HeaderRecord::Info { values, .. } | HeaderRecord::Format { values, .. } => {
                    let category = if matches!(rec, HeaderRecord::Info { .. }) {
                        Category::Info
                    } else {
                        Category::Format
                    };
                    let id = values.get("ID").cloned().unwrap_or_default();
                    if category == Category::Format && id == "GT" {
                        has_gt = true;
                        continue;
                    }
                    let ty = parse_type(path, &id, values.get("Type").map_or("", |s| s))?;
                    if category == Category::Format && ty == VcfType::Flag {
                        return Err(Error::Header {
                            path: path.into(),
                            msg: format!("FORMAT/{id} has Type=Flag, which VCF does not allow"),
                        });
                    }
                    let number = parse_number(path, &id, values.get("Number").map_or(".", |s| s))?;
                    fields.push(FieldDef {
                        category,
                        name: id,
                        number,
                        ty,
                        description: values
                            .get("Description")
                            .map(|d| strip_quotes(d))
                            .unwrap_or_default(),
                    });
                }
                _ => {}
            }
        }
        // INFO before FORMAT keeps array creation order stable and readable.
        fields.sort_by_key(|f| f.category == Category::Format);
        if let Some(i) = filters.iter().position(|f| f.id == "PASS") {
            let pass = filters.remove(i);
            filters.insert(0, pass);
        }

        let contigs = (0..header.contig_count())
            .map(|rid| {
                let name =
                    String::from_utf8_lossy(header.rid2name(rid).unwrap_or(b"")).into_owned();
                let length = *lengths.get(&name).unwrap_or(&-1);
                Contig { name, length }
            })
            .collect();

        let meta_information = raw_header
            .lines()
            .filter_map(|line| line.strip_prefix("##"))
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| !matches!(*k, "contig" | "FILTER" | "INFO" | "FORMAT"))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();

        Ok(Schema {
            samples,
            contigs,
            filters,
            fields,
            has_gt,
            meta_information,
        })
    }
}
