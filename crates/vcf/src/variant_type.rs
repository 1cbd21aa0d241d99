//! A record's variant types (SNP, MNP, INDEL, OTHER, BND, OVERLAP) from its alleles,
//! by htslib's rules: one home for `-i/-e`'s `TYPE` and `query`'s `%TYPE`.

/// htslib's variant type bits (`VCF_SNP`…), as `bcf_get_variant_types` reports them.
pub const VCF_SNP: u32 = 1;
pub const VCF_MNP: u32 = 2;
pub const VCF_INDEL: u32 = 4;
pub const VCF_OTHER: u32 = 8;
pub const VCF_BND: u32 = 16;
pub const VCF_OVERLAP: u32 = 32;

/// The record's variant types, one bit per kind any ALT is (0: none, a REF-only
/// site), by htslib 1.16's `bcf_set_variant_type`, rule for rule.
pub fn variant_types(reference: &[u8], alts: &[&[u8]]) -> u32 {
    alts.iter()
        .fold(0, |t, alt| t | variant_type(reference, alt))
}

/// One ALT's type against REF (htslib's `bcf_set_variant_type`).
fn variant_type(r: &[u8], a: &[u8]) -> u32 {
    let eq = |x: u8, y: u8| x.eq_ignore_ascii_case(&y);
    if a == b"*" {
        return VCF_OVERLAP;
    }
    if r.len() == 1 && a.len() == 1 {
        if a[0] == b'.' || r[0] == a[0] || a[0] == b'X' {
            return 0;
        }
        return VCF_SNP;
    }
    if a.first() == Some(&b'<') {
        if a.get(1..3) == Some(b"X>") || a.get(1..3) == Some(b"*>") || &a[1..] == b"NON_REF>" {
            return 0;
        }
        return VCF_OTHER;
    }
    if matches!(a.first(), Some(b']' | b'[')) {
        return VCF_BND;
    }
    // The common prefix (htslib compares up to the shorter one's end).
    let mut i = 0;
    while i < r.len() && i < a.len() && eq(r[i], a[i]) {
        i += 1;
    }
    match (i < r.len(), i < a.len()) {
        (false, true) => {
            return match a[i] {
                b']' | b'[' => VCF_BND,
                _ => VCF_INDEL,
            }
        }
        (true, false) => return VCF_INDEL,
        (false, false) => return 0,
        (true, true) => {}
    }
    // The common suffix, not into the prefix.
    let (mut re, mut ae) = (r.len() - 1, a.len() - 1);
    while re > i && ae > i && eq(r[re], a[ae]) {
        re -= 1;
        ae -= 1;
    }
    if ae == i {
        if re == i {
            return VCF_SNP;
        }
        return if eq(r[re], a[ae]) {
            VCF_INDEL
        } else {
            VCF_OTHER
        };
    }
    if re == i {
        return if eq(r[re], a[ae]) {
            VCF_INDEL
        } else {
            VCF_OTHER
        };
    }
    if re - i == ae - i {
        VCF_MNP
    } else {
        VCF_OTHER
    }
}
