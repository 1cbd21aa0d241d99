//! Subsetting at conversion (`convert -s/-S/-r/-R/-t/-T/-i/-e`, `--force-samples`,
//! `-I`) against bcftools view (the oracle): each store is digest-equal to the one
//! converting `bcftools view --no-version FLAGS input -Oz` gives — samples chosen and
//! reordered, INFO/AC and AN recounted (declared where the header lacks them), regions
//! by overlap, targets by POS, every expression of the view/query tests — from VCF.gz
//! and BCF inputs (a BCF keeps pre-subset widths: the store must not). And what is
//! refused: unknown samples, regions out of the header's order, bad expressions, a
//! subset with partitions.

mod common;
use common::exprs::{ALL_FIELDS, CALL_SET};
use common::*;
use std::path::Path;

/// `svar2 convert FLAGS input` and `bcftools view --no-version FLAGS input -Oz`
/// converted: their digests, or the first's stderr when only svar2 failed.
fn both(input: &Path, flags: &[&str], d: &Path) -> Result<(String, String), String> {
    let ours = d.join("ours.zarr");
    let theirs = d.join("theirs.zarr");
    let via = d.join("via.vcf.gz");
    for p in [&ours, &theirs] {
        let _ = std::fs::remove_dir_all(p);
    }
    let mut cmd = svar2();
    cmd.arg("convert")
        .arg("-q")
        .args(flags)
        .arg(input)
        .arg(&ours);
    let out = cmd.output().expect("svar2 runs");
    let oracle = std::process::Command::new("bcftools")
        .args(["view", "--no-version"])
        .args(flags)
        .arg(input)
        .args(["-Oz", "-o"])
        .arg(&via)
        .output()
        .expect("bcftools runs");
    if !oracle.status.success() {
        // What bcftools refuses, svar2 refuses.
        assert!(
            !out.status.success(),
            "bcftools refuses {flags:?} ({}) but svar2 converted",
            String::from_utf8_lossy(&oracle.stderr).trim()
        );
        return Err("both refused".into());
    }
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    convert(&via, &theirs, &[]);
    Ok((digest(&ours), digest(&theirs)))
}

fn assert_same(input: &Path, flags: &[&str], d: &Path) {
    match both(input, flags, d) {
        Ok((a, b)) => assert_eq!(
            a,
            b,
            "{}: convert {flags:?} differs from converting bcftools view's output",
            input.display()
        ),
        Err(e) => panic!("{}: convert {flags:?} failed: {e}", input.display()),
    }
}

#[test]
fn sample_region_and_target_subsets_equal_bcftools_view() {
    if !tools(
        "sample_region_and_target_subsets_equal_bcftools_view",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = format_call_set(d, "calls", 37, 600, "GT:AD:DP:GQ:PL:VAF", 3);
    let bcf = d.join("calls.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {0} {1} && bcftools index -f {0}",
        bcf.display(),
        gz.display()
    ));
    std::fs::write(d.join("some.txt"), "s5\ns2\n").unwrap();
    std::fs::write(d.join("r.tsv"), "c1\t100\t2000\nc3\t5\t900000\n").unwrap();
    std::fs::write(d.join("r.bed"), "c1\t99\t2000\n").unwrap();
    let (some, tsv, bed) = (
        d.join("some.txt").display().to_string(),
        d.join("r.tsv").display().to_string(),
        d.join("r.bed").display().to_string(),
    );
    let not_some = format!("^{some}");
    let everyone: Vec<String> = (0..37).map(|i| format!("s{i}")).collect();
    let nobody = format!("^{}", everyone.join(","));
    let cases: Vec<Vec<&str>> = vec![
        vec!["-s", "s3,s1,s7"],
        vec!["-s", "^s0,s36"],
        vec!["-S", &some],
        vec!["-S", &not_some],
        vec!["-s", "s4", "-I"],
        vec!["--force-samples", "-s", "s9,nobody,s2"],
        vec!["-s", &nobody],
        vec!["-r", "c1:1000-200000,c3"],
        vec!["-R", &tsv],
        vec!["-R", &bed],
        vec!["-t", "^c2"],
        vec!["-T", &tsv],
        vec!["-s", "s1,s2", "-r", "c2", "-i", "FMT/DP>30 & FMT/GQ>50"],
        vec!["-s", "^s5", "-e", "MAF<0.1"],
        vec!["-S", &some, "-t", "c1:1-5000,c3", "-i", r#"GT="het""#],
    ];
    for input in [&gz, &bcf] {
        for flags in &cases {
            assert_same(input, flags, d);
        }
    }
    // Unicode names, haploid and triploid calls, Number=G fields, strings, flags.
    let [plain, afgz, afbcf] = forms(&data("all_fields.vcf"), d, "af");
    let af_cases: Vec<Vec<&str>> = vec![
        vec!["-s", "Zoë,NA00001"],
        vec!["-s", "^样本3"],
        vec!["-s", "s-4 x", "-i", r#"GT="alt""#],
        vec!["-s", "NA00001"],
        vec!["-s", "^Zoë", "-i", "FMT/DP>3"],
        vec!["-r", "chr1,chrX"],
        vec!["-t", "chr2:1-100000000"],
    ];
    for input in [&afgz, &afbcf] {
        for flags in &af_cases {
            assert_same(input, flags, d);
        }
    }
    // Plain VCF (no index): targets and samples stream.
    assert_same(&plain, &["-s", "Zoë", "-t", "^chr2"], d);
    // No INFO/AC in the header: -s declares it, and a bare AC then names it (missing
    // in every record), as in bcftools.
    let small = root().join("examples/small.vcf.gz");
    assert_same(&small, &["-s", "^tsk_0", "-e", "AC<3"], d);
    assert_same(&small, &["-s", "tsk_3,tsk_1", "-r", "chr2"], d);
}

#[test]
fn expression_subsets_equal_bcftools_view() {
    if !tools("expression_subsets_equal_bcftools_view", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let calls = format_call_set(d, "calls", 37, 600, "GT:AD:DP:GQ:PL:VAF", 3);
    let [_, af, _] = forms(&data("all_fields.vcf"), d, "af");
    let mut compared = 0;
    for (input, exprs) in [(&calls, CALL_SET), (&af, ALL_FIELDS)] {
        for (k, e) in exprs.iter().enumerate() {
            // Every expression included; every third excluded too.
            let flags: &[&str] = if k % 3 == 0 { &["-i", "-e"] } else { &["-i"] };
            for flag in flags {
                match both(input, &[flag, e], d) {
                    Ok((a, b)) => {
                        assert_eq!(a, b, "convert {flag} {e:?} of {}", input.display());
                        compared += 1;
                    }
                    Err(msg) if msg == "both refused" => {}
                    Err(msg) => panic!("convert {flag} {e:?} failed: {msg}"),
                }
            }
        }
    }
    assert!(compared >= 150, "{compared} expression subsets compared");
}

#[test]
fn subsets_svar2_cannot_make_are_refused_by_name() {
    let dir = test_dir();
    let d = dir.path();
    let small = root().join("examples/small.vcf.gz");
    let out = d.join("out.zarr");
    let err = convert_fails(&small, &out, &["-s", "tsk_1,nosuch"]);
    assert!(
        err.contains("\"nosuch\"") && err.contains("--force-samples"),
        "{err}"
    );
    let err = convert_fails(&small, &out, &["-r", "chr2,chr1"]);
    assert!(err.contains("header's contig order"), "{err}");
    let err = convert_fails(&small, &out, &["-i", "QUAL>"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("column"), "{err}");
    let err = convert_fails(&small, &out, &["-i", "NOSUCH>1"]);
    assert!(err.contains("NOSUCH"), "{err}");
    assert!(
        !out.exists(),
        "nothing is written before the subset is known to work"
    );
    let o = svar2()
        .args(["plan", "--partitions", "2", "-s", "tsk_1"])
        .arg(&small)
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--partitions"));
}

#[test]
fn the_plan_counts_the_samples_kept() {
    let small = root().join("examples/small.vcf.gz");
    let all = plan_json(&small, &[]);
    let two = plan_json(&small, &["-s", "tsk_1,tsk_2"]);
    assert_eq!(two["samples"], 2, "{two}");
    assert!(all["samples"].as_u64().unwrap() > 2);
    assert!(
        two["row_bytes"].as_u64().unwrap() < all["row_bytes"].as_u64().unwrap(),
        "the budget is planned for the samples kept"
    );
}

#[test]
fn a_subset_is_the_same_whatever_the_thread_count() {
    let dir = test_dir();
    let d = dir.path();
    let small = root().join("examples/small.vcf.gz");
    let flags = ["-s", "^tsk_2", "-i", "MAF>0.05", "-t", "^chr2:1-200000"];
    let mut digests = Vec::new();
    for t in ["1", "2", "4"] {
        let out = d.join(format!("t{t}.zarr"));
        let mut args = vec!["--threads", t];
        args.extend(flags);
        convert(&small, &out, &args);
        digests.push(digest(&out));
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
}

/// Found by a hostile pass: records without GT under a GT test (a panic in the reader
/// once finished the store short, exit 101), AC/AN declared as another type, empty
/// sample names, malformed regions, and contigs the header lacks.
#[test]
fn odd_inputs_under_a_subset_convert_as_bcftools_or_are_refused() {
    if !tools(
        "odd_inputs_under_a_subset_convert_as_bcftools_or_are_refused",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let head = "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
                ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n";
    // A record without GT among records with it.
    let nogt = d.join("nogt.vcf");
    std::fs::write(
        &nogt,
        format!(
            "{head}#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\n\
             1\t5\t.\tA\tG\t.\t.\t.\tGT:DP\t0/1:3\t0/0:4\n\
             1\t10\t.\tA\tG\t.\t.\t.\tDP\t3\t5\n\
             1\t12\t.\tA\tC\t.\t.\t.\tGT\t1/1\t0/1\n"
        ),
    )
    .unwrap();
    for e in [
        r#"GT="het""#,
        r#"GT!="het""#,
        r#"COUNT(GT="alt")=0"#,
        "N_MISSING=0",
    ] {
        assert_same(&nogt, &["-i", e], d);
        assert_same(&nogt, &["-s", "B", "-e", e], d);
    }
    // AC declared as a String: -s would write integers into it; refused unless -I.
    let ac = d.join("ac.vcf");
    std::fs::write(
        &ac,
        format!(
            "{head}##INFO=<ID=AC,Number=A,Type=String,Description=\"c\">\n\
             #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\n\
             1\t5\t.\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n"
        ),
    )
    .unwrap();
    let out = d.join("out.zarr");
    let err = convert_fails(&ac, &out, &["-s", "A"]);
    assert!(err.contains("Type=String") && err.contains("-I"), "{err}");
    assert_same(&ac, &["-s", "A", "-I"], d);
    // Empty names, malformed regions, regions of no header contig: one line, exit 1.
    for flags in [
        &["-s", ""][..],
        &["-s", "A,"],
        &["-s", "^"],
        &["-r", "1:abc"],
        &["-r", "1:"],
        &["-t", "1:-5"],
        &["-r", "chrNope"],
    ] {
        let err = convert_fails(&nogt, &out, flags);
        assert_eq!(err.trim().lines().count(), 1, "{flags:?}: {err}");
    }
    // A contig the header does not declare: named, not taken for a BCF's mismatch.
    let undeclared = d.join("undeclared.vcf");
    std::fs::write(
        &undeclared,
        format!(
            "{head}#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\n\
             1\t5\t.\tA\tG\t.\t.\t.\tGT\t0/1\t0/0\n\
             2\t5\t.\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n"
        ),
    )
    .unwrap();
    let err = convert_fails(&undeclared, &out, &["-s", "A"]);
    assert!(err.contains("contig 2 is not declared"), "{err}");
    assert!(!out.exists());
}

/// TYPE on every allele shape htslib 1.16 classifies (SNP, MNP, insertions and
/// deletions, complex, symbolic, `<NON_REF>`/`<*>`/`<X>`, breakends both ways, `*`,
/// lower case, REF-only, mixed multiallelics, "." among the alleles): through convert
/// (digest-equal) and
/// view (the records bcftools keeps).
#[test]
fn variant_types_equal_bcftools() {
    if !tools("variant_types_equal_bcftools", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let mut vcf = String::from(
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=100000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\n",
    );
    let shapes = [
        "A C",
        "A .",
        "AC GT",
        "ACG ATG",
        "A AT",
        "AT A",
        "ACGT AGGA",
        "ACGT ATCGT",
        "A <DEL>",
        "A <NON_REF>",
        "A <*>",
        "A <X>",
        "A X",
        "A ]1:5]A",
        "A A[1:7[",
        "A *",
        "a C",
        "ACG acg",
        "AC A,G",
        "ACGT AC,ACTT",
        "A C,<NON_REF>",
        "ATG ACGTG",
        "ATTG AG",
        "AG ATTTG",
        // "." among the alleles: kept as the store keeps it.
        "A .,C",
        ". A",
        "A C,.",
        ". .",
        ". AT",
        "AT .,A",
        ". *",
        "A .,.",
    ];
    for (i, s) in shapes.iter().enumerate() {
        let (r, a) = s.split_once(' ').unwrap();
        vcf.push_str(&format!(
            "1\t{}\t.\t{r}\t{a}\t.\t.\t.\tGT\t0/1\n",
            10 * (i + 1)
        ));
    }
    let input = d.join("types.vcf");
    std::fs::write(&input, vcf).unwrap();
    let store = d.join("types.zarr");
    convert(&input, &store, &[]);
    for e in [
        r#"TYPE="snp""#,
        r#"TYPE="indel""#,
        r#"TYPE="mnp""#,
        r#"TYPE="other""#,
        r#"TYPE="bnd""#,
        r#"TYPE="overlap""#,
        r#"TYPE="ref""#,
        r#"TYPE~"snp""#,
        r#"TYPE~"indel""#,
        r#"TYPE~"other""#,
        r#"TYPE!~"ref""#,
        r#"TYPE!="snp""#,
        "N_ALT=2",
        "N_ALT=0",
        r#"REF=".""#,
        r#"ALT="C""#,
        "ILEN=1",
    ] {
        assert_same(&input, &["-i", e], d);
        let want = sh_ok(&format!(
            "bcftools view -H -i '{e}' {} | cut -f2",
            input.display()
        ));
        let got = sh_ok(&format!(
            "{} view -H -i '{e}' {} | cut -f2",
            env!("CARGO_BIN_EXE_svar2"),
            store.display()
        ));
        assert_eq!(got, want, "view -i {e}");
    }
}
