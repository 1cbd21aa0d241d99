//! `-i`/`-e` against bcftools (the oracle, 1.16+): each expression, included and
//! excluded, through `svar2 view` (the records kept) and `svar2 query` (the records
//! and, inside `[ ]`, the samples printed — by a FORMAT test, or all), record for
//! record, on two fixtures: a FORMAT-heavy call set (37 samples, GT:AD:DP:GQ:PL:VAF,
//! multiallelic sites, missing calls) and `all_fields.vcf` (strings, flags,
//! Number=A/R/G/., haploid and triploid calls, FILTER sets, symbolic alleles). And the
//! refusals: a bad expression is one line naming the column, exit 1, nothing on
//! standard output.

mod common;
use common::exprs::{ALL_FIELDS, CALL_SET};
use common::*;
use std::path::Path;

/// What bcftools and svar2 print for `-i`/`-e EXPR`: view's records (CHROM POS REF
/// ALT) and two queries; a failure as its exit status (bcftools exits 255 on a bad
/// expression, svar2 1: both failing is agreement).
fn outputs(tool: &[&str], flag: &str, expr: &str, input: &Path) -> Vec<String> {
    let q = shell_quote(expr);
    let file = input.display();
    let run = |cmd: String| {
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("set -o pipefail; {cmd}"))
            .output()
            .expect("sh runs");
        match o.status.code() {
            Some(0) => String::from_utf8_lossy(&o.stdout).into_owned(),
            _ => "(refused)".into(),
        }
    };
    let t = tool.join(" ");
    vec![
        run(format!("{t} view -H {flag} {q} {file} | cut -f1,2,4,5")),
        run(format!(
            "{t} query {flag} {q} -f '%CHROM:%POS[ %SAMPLE]\\n' {file}"
        )),
        run(format!(
            "{t} query {flag} {q} -f '%CHROM:%POS[ %SAMPLE=%GT:%DP]\\n' {file}"
        )),
    ]
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Every expression of `exprs`, included and excluded, equal through bcftools (on
/// `vcf`) and svar2 (on `store`); returns how many printed records at all.
fn same_as_bcftools(vcf: &Path, store: &Path, exprs: &[&str]) -> usize {
    let svar2 = env!("CARGO_BIN_EXE_svar2");
    let mut failures = Vec::new();
    let mut nonempty = 0;
    for expr in exprs {
        for flag in ["-i", "-e"] {
            let want = outputs(&["bcftools"], flag, expr, vcf);
            let got = outputs(&[svar2], flag, expr, store);
            for (k, what) in ["view", "query [%SAMPLE]", "query [%SAMPLE=%GT:%DP]"]
                .iter()
                .enumerate()
            {
                if want[k] != got[k] {
                    failures.push(format!(
                        "{flag} {expr:?} ({what}): bcftools {} lines, svar2 {}\n  bcftools: {:.300}\n  svar2:    {:.300}",
                        want[k].lines().count(),
                        got[k].lines().count(),
                        want[k],
                        got[k]
                    ));
                }
            }
            nonempty += !want[0].is_empty() as usize;
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    nonempty
}

#[test]
fn call_set_expressions_equal_bcftools() {
    if !tools("call_set_expressions_equal_bcftools", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let vcf = format_call_set(d, "calls", 37, 600, "GT:AD:DP:GQ:PL:VAF", 3);
    let store = d.join("calls.zarr");
    convert(&vcf, &store, &[]);
    let n = same_as_bcftools(&vcf, &store, CALL_SET);
    // Each expression selects something, included or excluded.
    assert!(
        n >= CALL_SET.len(),
        "{n} of {} print records",
        2 * CALL_SET.len()
    );
}

#[test]
fn all_fields_expressions_equal_bcftools() {
    if !tools("all_fields_expressions_equal_bcftools", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    // Small chunks: blocks and shards cut the records several ways.
    let store = d.join("af.zarr");
    convert(&gz, &store, TINY_GEOMETRY);
    let n = same_as_bcftools(&gz, &store, ALL_FIELDS);
    assert!(
        n >= ALL_FIELDS.len(),
        "{n} of {} print records",
        2 * ALL_FIELDS.len()
    );
}

/// A bad expression: one line on standard error naming the problem's column, exit 1,
/// nothing on standard output (not even the header or `query -H`'s line).
#[test]
fn bad_expressions_are_one_line_with_the_column() {
    let dir = test_dir();
    let d = dir.path();
    let store = d.join("af.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let cases: &[(&str, usize, &str)] = &[
        ("DP>>3", 4, "an operator where a value is expected"),
        ("(QUAL>3", 8, "never closed"),
        ("QUAL>3 POS", 8, "unexpected text"),
        ("NOPE>3", 1, "no such INFO or FORMAT field"),
        ("INFO/GQ>3", 1, "no such INFO field"),
        ("FMT/NS>3", 1, "no such FORMAT field"),
        (r#"QUAL="high""#, 5, "a string compared with a number"),
        (r#"AA>3"#, 3, "a string compared with a number"),
        ("QUAL+", 6, "ends where a value is expected"),
        ("QUAL", 1, "not a test"),
        (r#"FILTER="nofilter""#, 7, "not in the header"),
        ("TYPE=\"snv\"", 5, "not one of snp"),
        ("TYPE>1", 1, "compared with a type"),
        ("binom(FMT/AD)>0", 1, "not supported yet"),
        ("ID=@ids.txt", 4, "not supported yet"),
        ("XI[x]>1", 1, "not a subscript"),
        ("FMT/AD[1]>=2", 1, "several values per sample"),
        ("N_PASS(QUAL>1)>0", 1, "counts samples"),
        (r#"REF~"\(""#, 4, "does not compile"),
        (r#"GT="het" QUAL"#, 10, "unexpected text"),
    ];
    for &(expr, col, what) in cases {
        for cmd in [
            vec!["view", "-i", expr],
            vec!["query", "-H", "-f", "%POS\\n", "-e", expr],
        ] {
            let o = svar2().args(&cmd).arg(&store).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{cmd:?}: {err}");
            assert!(
                o.stdout.is_empty(),
                "{cmd:?} printed {:?}",
                String::from_utf8_lossy(&o.stdout)
            );
            assert_eq!(err.trim_end().lines().count(), 1, "{cmd:?}: {err}");
            assert!(err.contains(what), "{cmd:?}: {err}");
            assert!(err.contains(&format!("column {col} ")), "{cmd:?}: {err}");
            assert!(err.contains(expr), "{cmd:?}: {err}");
        }
    }
    // -i and -e together are refused by the flags themselves.
    let o = svar2()
        .args(["view", "-i", "QUAL>1", "-e", "QUAL>2"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Sample subscripts count the samples `query` reads in file order, whatever order
/// `-s` names them in (as bcftools does), and an OR-list of 300 tests is read (its
/// operators group to the right without nesting the parser).
#[test]
fn sample_subscripts_and_long_lists_equal_bcftools() {
    if !tools(
        "sample_subscripts_and_long_lists_equal_bcftools",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let store = d.join("af.zarr");
    convert(&gz, &store, &[]);
    let svar2 = env!("CARGO_BIN_EXE_svar2");
    let or_list: Vec<String> = (0..300).map(|i| format!("POS={}", i * 5)).collect();
    let or_list = or_list.join("||");
    for (expr, samples) in [
        ("GQ[0]>40", "样本3,Zoë"),
        ("GQ[1]>25", "样本3,Zoë,NA00001"),
        ("AD[1:1]>=2", "Zoë,NA00001"),
        (or_list.as_str(), "Zoë"),
    ] {
        let q = shell_quote(expr);
        let fmt = "'%CHROM:%POS[ %SAMPLE=%GT]\n'";
        let want = sh_ok(&format!(
            "bcftools query -i {q} -s '{samples}' -f {fmt} {}",
            gz.display()
        ));
        let got = sh_ok(&format!(
            "{svar2} query -i {q} -s '{samples}' -f {fmt} {}",
            store.display()
        ));
        assert!(!want.is_empty(), "{expr} -s {samples} prints something");
        assert_eq!(got, want, "{expr} -s {samples}");
    }
}

/// The `svar2 view` lines of README.md with `-i`/`-e`, on all_fields' store and, with
/// bcftools, on the file: the same records.
#[test]
fn readme_view_expressions_equal_bcftools() {
    if !tools("readme_view_expressions_equal_bcftools", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let store = d.join("store.zarr");
    convert(&gz, &store, &[]);
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme
        .lines()
        .map(|l| l.split("  #").next().unwrap().trim())
        .filter(|l| l.starts_with("svar2 view ") && l.ends_with(" store.zarr"))
        .filter(|l| l.contains(" -i ") || l.contains(" -e "))
        .collect();
    assert!(lines.len() >= 2, "README shows svar2 view -i/-e: {lines:?}");
    for line in lines {
        let args = &line["svar2 view ".len()..line.len() - " store.zarr".len()];
        let want = sh_ok(&format!(
            "bcftools view -H {args} {} | cut -f1-5",
            gz.display()
        ));
        let got = sh_ok(&format!(
            "{} view -H {args} {} | cut -f1-5",
            env!("CARGO_BIN_EXE_svar2"),
            store.display()
        ));
        assert!(!want.is_empty(), "{line} prints something");
        assert_eq!(got, want, "{line}");
    }
}

/// A tag the header declares is what an expression names, before bcftools' own ILEN
/// (and AC, AN, AF, MAC, MAF; not ALT): an INFO/ILEN that disagrees with the alleles'
/// length selects by its values, in view and query; `INFO/AC` where no AC is declared
/// is bcftools' own count.
#[test]
fn declared_tags_come_before_bcftools_own() {
    if !tools("declared_tags_come_before_bcftools_own", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let vcf = d.join("ilen.vcf");
    std::fs::write(
        &vcf,
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
         ##INFO=<ID=ILEN,Number=1,Type=Integer,Description=\"x\">\n\
         ##INFO=<ID=ALT,Number=1,Type=String,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\n\
         1\t100\t.\tC\tCTT\t.\t.\tILEN=1;ALT=CT\tGT\t0/1\n\
         1\t101\t.\tC\tCT\t.\t.\tILEN=2\tGT\t1/1\n\
         1\t102\t.\tCA\tC\t.\t.\t.\tGT\t0/0\n",
    )
    .unwrap();
    let gz = d.join("ilen.vcf.gz");
    sh_ok(&format!(
        "bgzip -c {} > {gz} && bcftools index {gz}",
        vcf.display(),
        gz = gz.display()
    ));
    let store = d.join("ilen.zarr");
    convert(&gz, &store, &[]);
    // ALT is the column whatever the header declares; INFO/AC and INFO/MAF with no
    // such tag declared are bcftools' own counts.
    let n = same_as_bcftools(
        &gz,
        &store,
        &[
            "ILEN=1",
            "ILEN>1",
            "ilen=2",
            "ALT=\"CT\"",
            "INFO/AC>=1",
            "INFO/MAF>0.2",
        ],
    );
    assert!(n >= 6, "{n} print records");
}
