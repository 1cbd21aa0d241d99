//! `view --fill-tags`: INFO tags computed from the printed samples' genotypes, as
//! `bcftools +fill-tags` (1.16) computes them. A sample counts each distinct allele of
//! its call once: in AC_Het where the call has several, twice in AC_Hom where it has
//! one, once in AC_Hemi where it is haploid or has a missing allele (`.|1`); AC, AN,
//! AF and MAF (the second most common allele's frequency, REF included) follow from
//! those counts; NS counts samples with any allele called; F_MISSING is the fraction
//! of samples whose call has a missing allele.

use crate::error::{Error, Result};
use svar2_vcf::block::{Block, Dense, FieldValues};
use svar2_vcf::schema::{Category, FieldDef, Schema, VcfNumber, VcfType};

/// A tag `--fill-tags` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Ac,
    An,
    Af,
    Maf,
    Ns,
    AcHet,
    AcHom,
    AcHemi,
    FMissing,
}

impl Tag {
    const ALL: [(Tag, &'static str, VcfNumber, VcfType, &'static str); 9] = [
        (
            Tag::Ac,
            "AC",
            VcfNumber::A,
            VcfType::Integer,
            "Allele count in genotypes",
        ),
        (
            Tag::An,
            "AN",
            VcfNumber::Fixed(1),
            VcfType::Integer,
            "Total number of alleles in called genotypes",
        ),
        (
            Tag::Af,
            "AF",
            VcfNumber::A,
            VcfType::Float,
            "Allele frequency",
        ),
        (
            Tag::Maf,
            "MAF",
            VcfNumber::Fixed(1),
            VcfType::Float,
            "Frequency of the second most common allele",
        ),
        (
            Tag::Ns,
            "NS",
            VcfNumber::Fixed(1),
            VcfType::Integer,
            "Number of samples with data",
        ),
        (
            Tag::AcHet,
            "AC_Het",
            VcfNumber::A,
            VcfType::Integer,
            "Allele counts in heterozygous genotypes",
        ),
        (
            Tag::AcHom,
            "AC_Hom",
            VcfNumber::A,
            VcfType::Integer,
            "Allele counts in homozygous genotypes",
        ),
        (
            Tag::AcHemi,
            "AC_Hemi",
            VcfNumber::A,
            VcfType::Integer,
            "Allele counts in hemizygous genotypes",
        ),
        (
            Tag::FMissing,
            "F_MISSING",
            VcfNumber::Fixed(1),
            VcfType::Float,
            "Fraction of missing genotypes",
        ),
    ];

    fn name(self) -> &'static str {
        Tag::ALL.iter().find(|t| t.0 == self).expect("listed").1
    }
}

/// `AC,AN,AF` (case as bcftools takes it: any) as tags, each once.
pub fn parse(list: &str) -> Result<Vec<Tag>> {
    let mut out = Vec::new();
    for word in list.split(',').map(str::trim) {
        let Some(t) = Tag::ALL.iter().find(|t| t.1.eq_ignore_ascii_case(word)) else {
            return Err(Error::Usage(format!(
                "--fill-tags: {word:?} is not one of {}",
                Tag::ALL.iter().map(|t| t.1).collect::<Vec<_>>().join(", ")
            )));
        };
        if !out.contains(&t.0) {
            out.push(t.0);
        }
    }
    Ok(out)
}

/// Declares in `schema` every tag it lacks (after its INFO fields), and checks that
/// the ones it declares are of the type the tag is: the printed header and the
/// values must agree.
pub fn declare(schema: &mut Schema, tags: &[Tag]) -> Result<()> {
    for &t in tags {
        let (_, name, number, ty, description) =
            *Tag::ALL.iter().find(|x| x.0 == t).expect("listed");
        match schema
            .fields
            .iter()
            .find(|f| f.category == Category::Info && f.name == name)
        {
            Some(f) if f.ty == ty => {}
            Some(f) => {
                return Err(Error::Usage(format!(
                    "--fill-tags {name}: the store declares INFO/{name} as {:?}, not {ty:?}",
                    f.ty
                )))
            }
            None => {
                let at = schema
                    .fields
                    .iter()
                    .take_while(|f| f.category == Category::Info)
                    .count();
                schema.fields.insert(
                    at,
                    FieldDef {
                        category: Category::Info,
                        name: name.into(),
                        number,
                        ty,
                        description: description.into(),
                    },
                );
            }
        }
    }
    Ok(())
}

const MISSING_F32: u32 = 0x7F80_0001;
const FILL_F32: u32 = 0x7F80_0002;

/// Sets `tags` on every record of `b` from its genotypes (`schema` is the printed
/// one, which [`declare`] completed).
pub fn fill(schema: &Schema, tags: &[Tag], b: &mut Block) {
    let Some(g) = &b.gt else { return };
    let (n, ns, p) = (b.n, b.n_samples, g.ploidy);
    let width = b.allele_width.saturating_sub(1).max(1);
    let mut ints: Vec<(Tag, Vec<i32>)> = Vec::new();
    let mut floats: Vec<(Tag, Vec<u32>)> = Vec::new();
    for &t in tags {
        match t {
            Tag::An | Tag::Ns => ints.push((t, vec![0; n])),
            Tag::Ac | Tag::AcHet | Tag::AcHom | Tag::AcHemi => ints.push((t, vec![-2; n * width])),
            Tag::Maf | Tag::FMissing => floats.push((t, vec![MISSING_F32; n])),
            Tag::Af => floats.push((t, vec![FILL_F32; n * width])),
        }
    }
    let mut het = Vec::new();
    let mut hom = Vec::new();
    let mut hemi = Vec::new();
    let mut seen = Vec::new();
    for r in 0..n {
        let alts = (1..b.allele_width)
            .take_while(|&k| !b.alleles.get(r * b.allele_width + k).is_empty())
            .count();
        let na = alts + 1;
        for v in [&mut het, &mut hom, &mut hemi] {
            v.clear();
            v.resize(na, 0i32);
        }
        let (mut called, mut missing) = (0i32, 0usize);
        for j in 0..ns {
            let at = (r * ns + j) * p;
            seen.clear();
            let (mut nals, mut entries, mut any_missing) = (0, 0, false);
            for i in at..at + p {
                let a = g.alleles.int(i).unwrap_or(-2);
                if a == -2 {
                    break;
                }
                entries += 1;
                if a < 0 {
                    any_missing = true;
                    continue;
                }
                nals += 1;
                if (a as usize) < na && !seen.contains(&(a as usize)) {
                    seen.push(a as usize);
                }
            }
            missing += usize::from(any_missing);
            if nals == 0 {
                continue;
            }
            called += 1;
            let is_hom = seen.len() == 1;
            let is_hemi = nals != entries || nals == 1;
            for &a in &seen {
                if !is_hom {
                    het[a] += 1;
                } else if !is_hemi {
                    hom[a] += 2;
                } else {
                    hemi[a] += 1;
                }
            }
        }
        let total: Vec<i32> = (0..na).map(|a| het[a] + hom[a] + hemi[a]).collect();
        let an: i32 = total.iter().sum();
        let freq = |a: usize| (total[a] as f32) / (an as f32);
        for (t, v) in &mut ints {
            match t {
                Tag::An => v[r] = an,
                Tag::Ns => v[r] = called,
                _ => {
                    let src = match t {
                        Tag::Ac => &total,
                        Tag::AcHet => &het,
                        Tag::AcHom => &hom,
                        _ => &hemi,
                    };
                    for k in 0..alts {
                        v[r * width + k] = src[k + 1];
                    }
                }
            }
        }
        for (t, v) in &mut floats {
            match t {
                Tag::FMissing if ns > 0 => v[r] = (missing as f32 / ns as f32).to_bits(),
                Tag::FMissing => v[r] = 0f32.to_bits(),
                Tag::Maf if alts > 0 && an > 0 => {
                    let mut f: Vec<f32> = (0..na).map(freq).collect();
                    f.sort_by(|x, y| y.total_cmp(x));
                    v[r] = f[1].to_bits();
                }
                Tag::Af => {
                    for k in 0..alts {
                        v[r * width + k] = if an > 0 {
                            freq(k + 1).to_bits()
                        } else {
                            MISSING_F32
                        };
                    }
                }
                _ => {}
            }
        }
    }
    let field = |t: Tag| {
        schema
            .fields
            .iter()
            .position(|f| f.category == Category::Info && f.name == t.name())
            .expect("declared by declare")
    };
    let mut set = |t: Tag, w: usize, values: Dense| {
        let new = FieldValues {
            field: field(t),
            width: w,
            values,
        };
        match b.info.iter_mut().find(|f| f.field == new.field) {
            Some(f) => *f = new,
            None => b.info.push(new),
        }
    };
    for (t, v) in ints {
        let w = if matches!(t, Tag::An | Tag::Ns) {
            1
        } else {
            width
        };
        set(t, w, Dense::I32(v));
    }
    for (t, v) in floats {
        let w = if t == Tag::Af { width } else { 1 };
        set(t, w, Dense::F32(v));
    }
}
