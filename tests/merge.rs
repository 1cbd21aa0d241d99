//! `convert --merge` against `bcftools merge` (the oracle): call sets split by samples
//! (`bcftools view -s`), then edited so the inputs disagree — sites missing from some,
//! other ALTs at the same position (SNP beside SNP, SNP beside indel), FORMAT and INFO
//! fields only some declare, contigs only some have — merged back by svar2 and by
//! `bcftools merge --no-version` (default `-m both`, and `-m none`): the stores are
//! digest-equal, in the contig order bcftools' synced reader walks the indexes. And what is refused: a sample name in two inputs (bcftools too),
//! unless --force-samples; unsorted inputs; a subset with --merge.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// `svar2 convert --merge[=MODE] inputs` and `bcftools merge [-m MODE] inputs`
/// converted: their digests.
fn merged_both_ways(
    inputs: &[PathBuf],
    mode: &str,
    extra: &[&str],
    threads: &str,
    d: &Path,
) -> (String, String) {
    let ours = d.join(format!("ours-{mode}.zarr"));
    let theirs = d.join(format!("theirs-{mode}.zarr"));
    let via = d.join(format!("via-{mode}.vcf.gz"));
    for p in [&ours, &theirs] {
        let _ = std::fs::remove_dir_all(p);
    }
    let out = svar2()
        .args([
            "convert",
            "-q",
            &format!("--merge={mode}"),
            "--threads",
            threads,
        ])
        .args(extra)
        .args(inputs)
        .arg(&ours)
        .output()
        .expect("svar2 runs");
    assert!(
        out.status.success(),
        "convert --merge={mode} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let oracle = std::process::Command::new("bcftools")
        .args(["merge", "--no-version", "-m", mode])
        .args(extra)
        .args(inputs)
        .args(["-Oz", "-o"])
        .arg(&via)
        .output()
        .expect("bcftools runs");
    assert!(
        oracle.status.success(),
        "bcftools merge: {}",
        String::from_utf8_lossy(&oracle.stderr)
    );
    convert(&via, &theirs, &[]);
    (digest(&ours), digest(&theirs))
}

/// Both modes; one thread (the reader merges) and four (contigs merged side by side
/// on `merge-K` workers when the inputs are indexed).
fn assert_merge_equal(inputs: &[PathBuf], extra: &[&str], d: &Path) {
    for mode in ["both", "none"] {
        for threads in ["1", "4"] {
            let (a, b) = merged_both_ways(inputs, mode, extra, threads, d);
            assert_eq!(
                a, b,
                "convert --merge={mode} --threads {threads} {inputs:?} differs from converting \
                 bcftools merge -m {mode}"
            );
        }
    }
}

/// Changes ALT at some positions: a SNP to another base, a SNP to an insertion.
const NEW_ALTS: &str = r#"awk 'BEGIN{OFS="\t"} /^#/{print;next} $2==100{$5="C"} $2==1000{$5="TA"} $2==6{$5="G,A"} {print}'"#;

#[test]
fn split_fixtures_merge_back_as_bcftools_merge() {
    if !tools(
        "split_fixtures_merge_back_as_bcftools_merge",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let all = all_fields_indexed(d);
    let a = sample_part(&all, d, "a.vcf.gz", "NA00001,Zoë", "", "cat");
    let b = sample_part(&all, d, "b.vcf.gz", "样本3,s-4 x", "", "cat");
    // The same sites: the split call set comes back whole.
    assert_merge_equal(&[a.clone(), b.clone()], &[], d);
    // Sites only some inputs have, in either order.
    let fewer = sample_part(
        &all,
        d,
        "fewer.vcf.gz",
        "样本3,s-4 x",
        "-e 'POS==200 || POS==2000'",
        "cat",
    );
    assert_merge_equal(&[a.clone(), fewer.clone()], &[], d);
    assert_merge_equal(&[fewer.clone(), a.clone()], &[], d);
    // Other ALTs at one position: joined (-m both) or apart (-m none).
    let alts = sample_part(&all, d, "alts.vcf.gz", "样本3,s-4 x", "", NEW_ALTS);
    assert_merge_equal(&[a.clone(), alts.clone()], &[], d);
    // FORMAT and INFO fields one input lacks.
    let fewer_fields = d.join("fields.vcf.gz");
    sh_ok(&format!(
        "bcftools annotate --no-version -x FORMAT/PL,FORMAT/GQ,INFO/AF -Oz -o {0} {1} && \
         bcftools index -f {0}",
        fewer_fields.display(),
        b.display()
    ));
    assert_merge_equal(&[a.clone(), fewer_fields.clone()], &[], d);
    assert_merge_equal(&[fewer_fields, a.clone()], &[], d);
    // A contig only the second input declares, one it lacks.
    let contigs = sample_part(
        &all,
        d,
        "contigs.vcf.gz",
        "样本3,s-4 x",
        "-t ^chrX",
        r###"awk '/^##contig=<ID=chrX/{next} /^##contig=<ID=chrUn/{print "##contig=<ID=chr9,length=5>"} {print}'"###,
    );
    assert_merge_equal(&[a.clone(), contigs.clone()], &[], d);
    assert_merge_equal(&[contigs.clone(), a.clone()], &[], d);
    // Headers listing the contigs in other orders, VCF.gz beside BCF: the output
    // follows the order bcftools' synced reader walks the indexes.
    let reordered = sample_part(
        &all,
        d,
        "reordered.vcf.gz",
        "NA00001,Zoë",
        "",
        r###"awk '/^##contig=<ID=chr3/{next} /^##contig=<ID=chr1,/{print "##contig=<ID=chr3,length=198295559>"} {print}'"###,
    );
    let bcf = d.join("contigs.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {0} {1} && bcftools index -f {0}",
        bcf.display(),
        contigs.display()
    ));
    assert_merge_equal(&[reordered.clone(), b.clone()], &[], d);
    assert_merge_equal(&[b.clone(), reordered], &[], d);
    assert_merge_equal(&[bcf, a.clone()], &[], d);
    // A name in two inputs: refused as bcftools refuses it, kept as 3:NAME with
    // --force-samples.
    let refused = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&a, &fewer, &alts])
        .arg(d.join("dup.zarr"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let msg = String::from_utf8_lossy(&refused.stderr);
    assert!(
        msg.contains("样本3") && msg.contains("--force-samples") && msg.contains("alts.vcf.gz"),
        "{msg}"
    );
    assert!(!d.join("dup.zarr").join("zarr.json").exists());
    assert_merge_equal(&[a.clone(), fewer, alts], &["--force-samples"], d);
    // Sites only (no samples anywhere): AC and AN summed, as bcftools' rules do then.
    let sites_a = sample_part(
        &all,
        d,
        "sites_a.vcf.gz",
        "^NA00001,Zoë,样本3,s-4 x",
        "",
        "cat",
    );
    let sites_b = sample_part(
        &all,
        d,
        "sites_b.vcf.gz",
        "^NA00001,Zoë,样本3,s-4 x",
        "-e 'POS==300'",
        NEW_ALTS,
    );
    assert_merge_equal(&[sites_a, sites_b], &[], d);
}

#[test]
fn format_heavy_call_sets_merge_as_bcftools_merge() {
    if !tools(
        "format_heavy_call_sets_merge_as_bcftools_merge",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let gz = format_call_set(d, "calls", 30, 1500, "GT:AD:DP:GQ:PL:VAF:PS:FT", 3);
    let names = sh_ok(&format!("bcftools query -l {}", gz.display()));
    let names: Vec<&str> = names.lines().collect();
    let (g1, g2, g3) = (
        names[..10].join(","),
        names[10..20].join(","),
        names[20..].join(","),
    );
    let p1 = sample_part(&gz, d, "p1.vcf.gz", &g1, "", "cat");
    let p2 = sample_part(&gz, d, "p2.vcf.gz", &g2, "-i 'POS%4!=0'", "cat");
    let bcf = d.join("p2.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {0} {1} && bcftools index -f {0}",
        bcf.display(),
        p2.display()
    ));
    // Every seventh site's ALT changed where biallelic: AD, PL and VAF placed by allele.
    let p3 = sample_part(
        &gz,
        d,
        "p3.vcf.gz",
        &g3,
        "",
        r#"awk 'BEGIN{OFS="\t"} /^#/{print;next} $2%7==0 && $5!~/,/ {$5=($4=="A"?"T":"A")} {print}'"#,
    );
    assert_merge_equal(&[p1, bcf, p3], &[], d);
}

#[test]
fn merge_refuses_what_it_cannot_join() {
    if !tools("merge_refuses_what_it_cannot_join", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let all = all_fields_indexed(d);
    let a = sample_part(&all, d, "a.vcf.gz", "NA00001,Zoë", "", "cat");
    // Records out of order (a VCF is not checked by bcftools view, only by merge).
    let unsorted = d.join("unsorted.vcf.gz");
    sh_ok(&format!(
        "bcftools view --no-version -s '样本3,s-4 x' {} | awk '/^#/{{print;next}} \
         {{l[NR]=$0}} END{{for(i=NR;i>0;i--) if(i in l) print l[i]}}' | bgzip > {}",
        all.display(),
        unsorted.display()
    ));
    let out = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&a, &unsorted])
        .arg(d.join("u.zarr"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("unsorted.vcf.gz") && msg.contains("sort"),
        "{msg}"
    );
    // An empty bgzipped file beside another file's index (htslib's indexed reader of
    // a file without a header crashed the process).
    let empty = d.join("empty.vcf.gz");
    sh_ok(&format!(
        "printf '' | bgzip > {0} && cp {1}.csi {0}.csi",
        empty.display(),
        a.display()
    ));
    let out = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&empty, &a])
        .arg(d.join("e.zarr"))
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("empty.vcf.gz") && msg.contains("not a VCF"),
        "{msg}"
    );
    // A header without its #CHROM line (a plain-gzip VCF cut short): rust-htslib's
    // reader took htslib's null header and the process died (SIGSEGV), in append too.
    let headless = d.join("headless.vcf");
    std::fs::write(&headless, "##fileformat=VCFv4.2\n##contig=<ID=chr1>\n").unwrap();
    let out = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&a, &headless])
        .arg(d.join("h.zarr"))
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("headless.vcf") && msg.contains("no #CHROM line"),
        "{msg}"
    );
    for (flags, needle) in [
        (vec!["--merge", "-s", "NA00001"], "subset"),
        (vec!["--merge=all"], "-m all"),
        (vec!["--merge", "none"], "write --merge=none"),
    ] {
        let out = svar2()
            .args(["convert", "-q"])
            .args(&flags)
            .args([&a, &unsorted])
            .arg(d.join("x.zarr"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flags:?} was accepted");
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(msg.contains(needle), "{flags:?}: {msg}");
    }
    // A tag without its ## line (read through the index or as a stream) and a field
    // declared with another Type: one clear error each, never a crash or a silent PASS.
    // Through the index, the tag is named from the line (the index reader's header
    // copy lacks htslib's stand-in for it: it was "FILTER (a tag)"), for INFO and
    // FORMAT too.
    let undeclared_vcf = d.join("undeclared.vcf");
    std::fs::write(
        &undeclared_vcf,
        "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=248956422>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"d\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tb\n\
         chr1\t100\t.\tA\tC\t10\tnope\t.\tGT\t0/1\n",
    )
    .unwrap();
    let undeclared = bgzip_indexed(&undeclared_vcf);
    let tags = d.join("tags.vcf");
    std::fs::write(
        &tags,
        "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=248956422>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"d\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tb\n\
         chr1\t1234567\t.\tA\tC\t10\tPASS\tFOO=1\tGT\t0/1\n\
         chr1\t1234568\t.\tA\tC\t10\tPASS\t.\tGT:XY\t0/1:3\n",
    )
    .unwrap();
    let tags_gz = bgzip_indexed(&tags);
    let tags_format = d.join("tags_format.vcf.gz");
    sh_ok(&format!(
        "bcftools view --no-version -t chr1:1234568 -Oz -o {0} {1} && bcftools index -f {0}",
        tags_format.display(),
        tags_gz.display()
    ));
    for (second, needle) in [
        (&undeclared, "FILTER nope is not declared"),
        (&undeclared_vcf, "FILTER nope is not declared"),
        (&tags_gz, "INFO/FOO is not declared"),
        (&tags_format, "FORMAT/XY is not declared"),
    ] {
        let out = svar2()
            .args(["convert", "-q", "--merge", "--threads", "1"])
            .args([&a, second])
            .arg(d.join("undeclared.zarr"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", second.display());
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(
            msg.contains(needle) && msg.contains("not declared"),
            "{msg}"
        );
    }
    // A field ID only the second input declares is blamed on it (main named the
    // first input, and append the store).
    let named = d.join("named.vcf");
    std::fs::write(
        &named,
        "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=248956422>\n\
         ##INFO=<ID=contig,Number=1,Type=Integer,Description=\"c\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"d\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tb\n\
         chr1\t5000100\t.\tA\tC\t10\t.\tcontig=3\tGT\t0/1\n",
    )
    .unwrap();
    let out = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&a, &named])
        .arg(d.join("named.zarr"))
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("named.vcf: bad header: INFO/contig would be stored as variant_contig"),
        "{msg}"
    );
    // The error's record number counts the file's records, whichever worker merges
    // the contig (main counted from the contig's start at --threads 4: "record 2").
    let later_vcf = d.join("later.vcf");
    std::fs::write(
        &later_vcf,
        "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=248956422>\n\
         ##contig=<ID=chr2,length=242193529>\n##FILTER=<ID=q10,Description=\"q\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"d\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tb\n\
         chr1\t5000100\t.\tA\tC\t10\tq10\t.\tGT\t0/1\n\
         chr1\t5000200\t.\tA\tC\t10\tq10\t.\tGT\t0/1\n\
         chr1\t5000300\t.\tA\tC\t10\tq10\t.\tGT\t0/1\n\
         chr2\t5000100\t.\tA\tC\t10\tq10\t.\tGT\t0/1\n\
         chr2\t5000200\t.\tA\tC\t10\tnope\t.\tGT\t0/1\n",
    )
    .unwrap();
    let later = bgzip_indexed(&later_vcf);
    for threads in ["1", "4"] {
        let out = svar2()
            .args(["convert", "-q", "--merge", "--threads", threads])
            .args([&a, &later])
            .arg(d.join("later.zarr"))
            .output()
            .unwrap();
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(
            msg.contains("later.vcf.gz: record 5 ("),
            "--threads {threads}: {msg}"
        );
    }
    let typed = d.join("typed.vcf");
    sh_ok(&format!(
        "bcftools view --no-version -s 样本3 -e 'POS==300' {} | sed 's/ID=NS,Number=1,Type=Integer/ID=NS,Number=1,Type=Float/' > {}",
        all.display(),
        typed.display()
    ));
    let out = svar2()
        .args(["convert", "-q", "--merge"])
        .args([&a, &typed])
        .arg(d.join("typed.zarr"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains(
            "INFO/NS is declared Number=1,Type=Float here and Number=1,Type=Integer in an \
             earlier input"
        ),
        "{msg}"
    );

    let one = svar2()
        .args(["convert", "-q", "--merge"])
        .arg(&a)
        .arg(d.join("one.zarr"))
        .output()
        .unwrap();
    assert!(!one.status.success());
    assert!(String::from_utf8_lossy(&one.stderr).contains("two or more"));
}

/// Several records at one position, in one input or in both: bcftools merge takes
/// them in the order htslib's synced reader pairs them (the first variant set's line
/// of each input first), stages them with allele counts kept from the position's
/// earlier records (three SNPs of one input come out 1, 3, 2), and upper-cases a
/// line's alleles for good when its REF differs from another's in case only. Found
/// by hostile passes, which fuzzed such inputs against bcftools.
#[test]
fn several_records_at_a_position_merge_as_bcftools_merge() {
    if !tools(
        "several_records_at_a_position_merge_as_bcftools_merge",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
                ##contig=<ID=2,length=1000>\n\
                ##INFO=<ID=END,Number=1,Type=Integer,Description=\"e\">\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n";
    let vcf = |name: &str, sample: &str, rows: &[&str]| vcf_of_rows(d, name, meta, &[sample], rows);
    let a = vcf(
        "a",
        "A",
        &[
            "1 10 . A AT 50 PASS . GT 0/1",
            "1 10 . ACG A 50 PASS . GT 1/1",
            "1 10 . AC A 50 PASS . GT 0/0",
            "1 20 . A G 50 PASS . GT 0/1",
            "1 20 . A C 50 PASS . GT 1/1",
            "1 20 . A T 50 PASS . GT 0/0",
            "1 30 . C T 50 PASS . GT 0/1",
            "1 30 . C A,G,T 50 PASS . GT 1/2",
            "1 30 . C G 50 PASS . GT 1/1",
            "1 40 . G T 50 PASS . GT 0/1",
            "1 40 . G T 50 PASS . GT 1/1",
            "1 40 . G <DEL> 50 PASS END=60 GT 0/1",
            "2 5 . T A 50 PASS . GT 0/1",
            // REF in another case: bcftools upper-cases the line's alleles in place.
            "2 9 . A T 50 PASS . GT 0/1",
            "2 9 . a G 50 PASS . GT 1/1",
            "2 12 . g C 50 PASS . GT 0/1",
            "2 12 . G c 50 PASS . GT 1/1",
        ],
    );
    let b = vcf(
        "b",
        "B",
        &[
            "1 20 . A C 50 PASS . GT 0/1",
            "1 30 . C G 50 PASS . GT 0/1",
            "1 30 . C T 50 PASS . GT 1/1",
            "1 30 . C T,G,A 50 PASS . GT 2/3",
            "1 40 . G . 50 PASS . GT 0/0",
            "1 40 . G T 50 PASS . GT 0/1",
            "1 40 . G <DEL> 50 PASS END=60 GT 1/1",
            "2 5 . T A 50 PASS . GT 1/1",
        ],
    );
    assert_merge_equal(&[a.clone(), b.clone()], &[], d);
    assert_merge_equal(&[b, a], &[], d);
}
