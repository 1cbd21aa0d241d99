//! What a user sees from the command line: refusals, errors and the summary.

mod common;
use common::*;
use std::path::Path;

#[test]
fn refuses_existing_output_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exists.zarr");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "user data").unwrap();
    let err = convert_fails(&data("all_fields.vcf"), &out, &[]);
    assert!(
        err.contains("not an svar2 store") && err.contains("--force"),
        "{err}"
    );
    assert!(out.join("keep.txt").exists(), "nothing touched");
    let o = svar2()
        .args(["convert", "-q", "--force"])
        .arg(data("all_fields.vcf"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join("keep.txt").exists() && out.join("zarr.json").exists());
}

#[test]
fn summary_line_reports_records_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.zarr");
    let o = svar2()
        .arg("convert")
        .arg(data("all_fields.vcf"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("9 records in") && err.contains("files"),
        "{err}"
    );
}

#[test]
fn missing_and_non_vcf_inputs_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.zarr");
    let err = convert_fails(Path::new("/nonexistent/in.vcf.gz"), &out, &[]);
    assert!(
        err.contains("/nonexistent/in.vcf.gz") && err.contains("no such file"),
        "{err}"
    );
    assert!(!out.exists(), "no store for a missing input");

    let junk = dir.path().join("junk.vcf");
    std::fs::write(&junk, "this is not a VCF\n").unwrap();
    let err = convert_fails(&junk, &out, &[]);
    assert!(err.contains("junk.vcf"), "{err}");
}

#[test]
fn record_errors_name_the_locus() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.vcf");
    let text = std::fs::read_to_string(data("all_fields.vcf")).unwrap();
    // chr1:100 is biallelic: a genotype allele 3 is beyond its ALT count.
    let text = text.replacen("1/1:43:5", "3/1:43:5", 1);
    std::fs::write(&bad, text).unwrap();
    let err = convert_fails(&bad, &dir.path().join("o.zarr"), &[]);
    assert!(
        err.contains("bad.vcf") && err.contains("chr1:100") && err.contains("allele index 3"),
        "{err}"
    );
}

#[test]
fn digest_refuses_an_incomplete_store() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.zarr");
    convert(&data("all_fields.vcf"), &out, &[]);
    std::fs::remove_file(out.join("zarr.json")).unwrap();
    let o = svar2().arg("digest").arg(&out).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a complete store"));
}

#[test]
fn record_on_an_undeclared_contig_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let vcf = dir.path().join("undeclared.vcf");
    std::fs::write(
        &vcf,
        "##fileformat=VCFv4.3\n##contig=<ID=chr1>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n\
         chr1\t5\t.\tA\tC\t.\tPASS\t.\tGT\t0|1\n\
         chrZ\t7\t.\tA\tC\t.\tPASS\t.\tGT\t0|1\n",
    )
    .unwrap();
    let err = convert_fails(&vcf, &dir.path().join("o.zarr"), &[]);
    assert!(
        err.contains("undeclared.vcf") && err.contains("chrZ:7") && err.contains("not declared"),
        "{err}"
    );
}
