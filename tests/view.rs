//! `svar2 view` and `svar2 query` against bcftools: regions, targets and sample
//! subsets print what `bcftools view` prints of the input (AC/AN recomputed as it
//! does), every `svar2 query` format string in the README prints what `bcftools
//! query` prints, `--write-index` makes an index bcftools uses, and bad requests and
//! damaged stores end with one line and exit 1 (never a half-written line).
//! (The whole-file round trips, -Ov/-Oz/-Ob, are in oracles.rs.)

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("command runs")
}

fn ok(what: &str, o: Output) -> String {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// `svar2 view ARGS STORE -o OUT` (VCF); asserts success.
fn view_to(store: &Path, out: &Path, args: &[&str]) {
    let o = run(svar2().arg("view").args(args).arg("-o").arg(out).arg(store));
    ok(&format!("svar2 view {args:?}"), o);
}

/// `bcftools view ARGS INPUT -o OUT` (VCF); asserts success.
fn bcftools_to(input: &Path, out: &Path, args: &[&str]) {
    let o = run(Command::new("bcftools")
        .arg("view")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(input));
    ok(&format!("bcftools view {args:?}"), o);
}

/// Every column and field of `file`, as a store keeps them (see [`query_all`]).
fn query(file: &Path) -> String {
    query_all(file, None)
}

/// The same selection through bcftools (from the indexed input) and svar2 (from the
/// store): equal queries of every field.
fn same_selection(input: &Path, store: &Path, dir: &Path, args: &[&str]) {
    let (want, got) = (dir.join("want.vcf"), dir.join("got.vcf"));
    bcftools_to(input, &want, args);
    view_to(store, &got, args);
    assert_same_lines(&format!("view {args:?}"), &query(&want), &query(&got));
    let n = |p: &Path| sh_ok(&format!("bcftools view -H {} | wc -l", p.display()));
    assert_eq!(n(&want), n(&got), "records of view {args:?}");
}

#[test]
fn regions_targets_and_samples_equal_bcftools_view() {
    if !tools(
        "regions_targets_and_samples_equal_bcftools_view",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let samples = d.join("samples.txt");
    std::fs::write(&samples, "样本3\nNA00001\n").unwrap();
    let bed = d.join("regions.bed");
    std::fs::write(&bed, "chr1\t149\t300\nchr3\t0\t5\n").unwrap();
    // Compressed lists, as bcftools reads them through htslib.
    sh_ok(&format!(
        "cd {} && bgzip -c regions.bed > regions.bed.gz && gzip -c samples.txt > samples.txt.gz \
         && printf 'chr1\\t150\\t450\\nchr1\\t500\\t400\\n' | gzip -c > targets.txt.gz",
        d.display()
    ));
    let bed_gz = d.join("regions.bed.gz");
    let samples_gz = d.join("samples.txt.gz");
    let targets_gz = d.join("targets.txt.gz");
    for geometry in [TINY_GEOMETRY, &[]] {
        let store = d.join("af.zarr");
        convert(&gz, &store, geometry);
        let s = samples.to_str().unwrap();
        let excluded = format!("^{s}");
        let b = bed.to_str().unwrap();
        let cases: Vec<Vec<&str>> = vec![
            vec!["-r", "chr1:150-450"],
            vec!["-r", "chrX:1500-3000,chr3:1-5", "-s", "Zoë,NA00001"],
            vec!["-r", "chr1:500"],
            // Contig by contig in the order the regions name them, as bcftools.
            vec!["-r", "chr3,chr1:150-450,chr3:1-5,chr1:100-200"],
            vec!["-s", "^NA00001"],
            vec!["-s", "s-4 x,Zoë"],
            vec!["-S", s],
            vec!["-S", &excluded, "-r", "chr1"],
            vec!["-R", b, "-s", "Zoë"],
            vec!["-t", "chr1:150-450"],
            vec!["-t", "^chr1:150-450,chr3"],
            vec!["-G", "-r", "chr2"],
            vec!["-I", "-s", "NA00001"],
            vec![
                "-R",
                bed_gz.to_str().unwrap(),
                "-S",
                samples_gz.to_str().unwrap(),
            ],
            vec!["-T", targets_gz.to_str().unwrap()],
            // htslib's numbers (1.5k, 2e3); a reversed range selects nothing.
            vec!["-r", "chr1:0.15k-4.5e2"],
            vec!["-r", "chr1:450-150,chr3"],
            vec!["-G", "-s", "Zoë,NA00001"],
            // Blocks decoded many at once (or one at a time) still print in order.
            vec!["--threads", "8"],
            vec!["--threads", "1", "-s", "Zoë"],
        ];
        for args in &cases {
            same_selection(&gz, &store, d, args);
        }
    }
    // A real-sized store: the corpus's small file, a region with 10 samples.
    let Some(small) = need_corpus(
        "regions_targets_and_samples_equal_bcftools_view (corpus part)",
        "sim_small.vcf.gz",
    ) else {
        return;
    };
    let store = d.join("small.zarr");
    convert(
        &small,
        &store,
        &["--variants-chunk", "500", "--samples-chunk", "30"],
    );
    let ten = "tsk_90,tsk_3,tsk_31,tsk_32,tsk_33,tsk_60,tsk_61,tsk_7,tsk_8,tsk_99";
    same_selection(
        &small,
        &store,
        d,
        &["-r", "chr1:100000-900000,chr3", "-s", ten],
    );
    same_selection(&small, &store, d, &["-r", "chr2:2000000-", "-s", "^tsk_0"]);
}

/// AC and AN under `-s` as `bcftools view` has them: recounted from the chosen
/// samples with `-G` too; from the record (else every sample) when `-s` leaves none;
/// and an expression's bare `AC`/`AN` is the INFO tag -s declares (absent from these
/// records: missing), while MAC and AF are still counted. And `query`'s `%LINE`.
#[test]
fn sample_subsets_count_ac_an_as_bcftools_view() {
    if !tools(
        "sample_subsets_count_ac_an_as_bcftools_view",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let vcf = d.join("acan.vcf");
    std::fs::write(
        &vcf,
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n\
         ##INFO=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC\n\
         1\t10\t.\tA\tG\t.\t.\tDP=3\tGT:DP\t0/1:3\t1/1:4\t./.:.\n\
         1\t20\t.\tA\tG,T\t.\t.\t.\tGT\t0/0\t0/2\t1|2\n\
         1\t30\t.\tC\tT\t.\t.\t.\tGT\t0/0\t0/0\t0\n",
    )
    .unwrap();
    let gz = d.join("acan.vcf.gz");
    sh_ok(&format!(
        "bgzip -c {} > {gz} && bcftools index {gz}",
        vcf.display(),
        gz = gz.display()
    ));
    let store = d.join("acan.zarr");
    convert(&gz, &store, &[]);
    for args in [
        &["-s", "^A,B,C"][..],
        &["-G", "-s", "B"],
        &["-G", "-s", "C,A"],
        &["-s", "B", "-i", "AC>=1"],
        &["-s", "B", "-G", "-e", "AN>1"],
        &["-s", "B", "-i", "MAC>=1"],
        &["-s", "^A", "-i", "AF>0.2"],
        &["-I", "-G", "-s", "B"],
        &["--force-samples", "-s", "C,nobody,A"],
    ] {
        same_selection(&gz, &store, d, args);
    }
    for list in ["", "^", "A,"] {
        fails_naming(
            run(svar2().args(["view", "-s", list]).arg(&store)),
            "names an empty sample",
        );
    }
    // No sample left: sites only, the header without FORMAT lines, as bcftools'.
    let want = sh_ok(&format!(
        "bcftools view -h --no-version -s ^A,B,C {}",
        gz.display()
    ));
    let got = ok(
        "view -h -s ^A,B,C",
        run(svar2().args(["view", "-h", "-s", "^A,B,C"]).arg(&store)),
    );
    assert_eq!(got, want, "header with no sample left");
    // A regions file naming a contig the store lacks besides one it has (a genome-wide
    // BED file): the others are passed over, as bcftools does; an empty file is refused.
    let rx = d.join("rx.txt");
    std::fs::write(&rx, "X\t1\t5\n1\t5\t25\n").unwrap();
    same_selection(&gz, &store, d, &["-R", rx.to_str().unwrap()]);
    let empty = d.join("empty.txt");
    std::fs::write(&empty, "# nothing\n\n").unwrap();
    fails_naming(
        run(svar2().arg("view").arg("-R").arg(&empty).arg(&store)),
        "holds no regions",
    );
    // query's %LINE prints -s samples in file order, its [ ] in the order given.
    let fmt = "'[%SAMPLE=%GT ]|%LINE'";
    let want = sh_ok(&format!("bcftools query -s C,A -f {fmt} {}", gz.display()));
    let got = sh_ok(&format!(
        "{} query -s C,A -f {fmt} {}",
        env!("CARGO_BIN_EXE_svar2"),
        store.display()
    ));
    assert_eq!(got, want, "query -s C,A %LINE");
}

/// `view -h` prints the header as `bcftools view -h` does, line for line: the input's
/// order of FILTER, INFO, FORMAT, contig and other meta lines, contig lengths kept
/// where the header gives them (all_fields.vcf has one contig without).
#[test]
fn header_lines_in_the_inputs_order() {
    if !tools("header_lines_in_the_inputs_order", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    for input in [root().join("examples/small.vcf.gz"), data("all_fields.vcf")] {
        let store = d.join("h.zarr");
        convert(&input, &store, &[]);
        let want = sh_ok(&format!(
            "bcftools view -h --no-version {}",
            input.display()
        ));
        let got = ok(
            "svar2 view -h",
            run(svar2().args(["view", "-h"]).arg(&store)),
        );
        assert_eq!(got, want, "{}", input.display());
    }
}

/// The `svar2 query` lines of README.md, run on the store of `all_fields.vcf` and,
/// with `bcftools query`, on the file itself: the same output for each.
#[test]
fn readme_query_formats_equal_bcftools_query() {
    if !tools(
        "readme_query_formats_equal_bcftools_query",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let store = d.join("store.zarr");
    convert(&gz, &store, &[]);
    // bcftools reads the file as the store keeps it (INFO in header order: `%INFO`).
    let stored = d.join("stored.vcf.gz");
    sh_ok(&format!(
        "python3 {} {} | bgzip > {s} && bcftools index {s}",
        py("as_stored.py"),
        gz.display(),
        s = stored.display()
    ));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme
        .lines()
        .map(|l| l.split("  #").next().unwrap().trim())
        .filter(|l| l.starts_with("svar2 query ") && l.ends_with(" store.zarr"))
        .collect();
    assert!(lines.len() >= 5, "README shows svar2 query: {lines:?}");
    let mut args: Vec<&str> = lines
        .iter()
        .map(|line| &line["svar2 query ".len()..line.len() - " store.zarr".len()])
        .collect();
    // -H labels subscripted tags without the subscript (main printed `ALT{1}`).
    args.push("-H -f '%CHROM %ALT{1} %AC{0}[ %AD{1}]\\n'");
    for args in args {
        let line = args;
        let want = sh_ok(&format!("bcftools query {args} {}", stored.display()));
        let got = sh_ok(&format!(
            "{} query {args} {}",
            env!("CARGO_BIN_EXE_svar2"),
            store.display()
        ));
        assert!(!want.is_empty(), "{line} prints something");
        assert_same_lines(line, &want, &got);
    }
}

#[test]
fn written_index_serves_bcftools_regions() {
    if !tools("written_index_serves_bcftools_regions", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let store = d.join("af.zarr");
    convert(&gz, &store, &[]);
    for (name, kind) in [("out.vcf.gz", "z"), ("out.bcf", "b")] {
        let out = d.join(name);
        let o = run(svar2()
            .args(["view", "-O", kind, "--write-index", "-o"])
            .arg(&out)
            .arg(&store));
        ok("view --write-index", o);
        assert!(PathBuf::from(format!("{}.csi", out.display())).exists());
        let r = "chr1:150-450";
        assert_same_lines(
            &format!("{name} by its index"),
            &query_all(&gz, Some(r)),
            &query_all(&out, Some(r)),
        );
    }
}

/// One line on stderr naming `needle`, exit 1, nothing on stdout.
fn fails_naming(o: Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "exit 1: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "names {needle}: {err}");
    assert!(o.stdout.is_empty(), "prints nothing");
}

#[test]
fn bad_requests_and_damaged_stores_end_in_one_line() {
    if !tools(
        "bad_requests_and_damaged_stores_end_in_one_line",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let store = d.join("af.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let view = |args: &[&str], s: &Path| run(svar2().arg("view").args(args).arg(s));
    fails_naming(view(&["-r", "chrZ:1-10"], &store), "chrZ");
    fails_naming(view(&["-s", "NA00001,nobody"], &store), "nobody");
    // A sample asked for twice: main printed a header htslib cannot read, exit 0.
    fails_naming(
        view(&["-s", "NA00001,NA00001"], &store),
        "sample NA00001 is asked for twice",
    );
    fails_naming(
        run(svar2()
            .args(["query", "-f", "%POS\\t%INFO/NOPE\\n"])
            .arg(&store)),
        "NOPE",
    );
    // bcftools tags svar2 does not print are refused by name (were "no INFO/MASK").
    for (format, needle) in [
        ("%MASK\\n", "%MASK is not offered"),
        ("[%IUPACGT]\\n", "%IUPACGT is not offered"),
        ("%POS{1}\\n", "of ALT and of INFO and FORMAT fields only"),
        ("%AC{x}\\n", "give one 0-based index"),
    ] {
        fails_naming(
            run(svar2().args(["query", "-f", format]).arg(&store)),
            needle,
        );
    }
    fails_naming(view(&[], d), "not a");
    // A region matching nothing: the header, no records, exit 0 (as bcftools).
    let o = view(&["-r", "chr2:1-10"], &store);
    let text = ok("empty region", o);
    assert!(text.lines().last().unwrap().starts_with("#CHROM"), "{text}");

    // A closed pipe ends quietly, whatever the output type (BGZF and BCF output is
    // written by htslib: the broken pipe is told by the errno its file layer keeps),
    // and so do query and read.
    let growth = growth_vcf(d);
    let big = d.join("growth.zarr");
    convert(&growth, &big, &GROWTH_GEOMETRY);
    for args in [
        "view",
        "view -Oz",
        "view -Ob",
        "view -Ou",
        "query -f '%POS[\\t%GT]\\n'",
        "read --region 1",
        "read --region 1 --array call_genotype --format npy",
    ] {
        let o = sh(&format!(
            "{} {args} {} | head -c 1000 > /dev/null; exit ${{PIPESTATUS[0]}}",
            env!("CARGO_BIN_EXE_svar2"),
            big.display()
        ));
        assert!(
            o.stderr.is_empty() && o.status.success(),
            "{args}: quiet on a closed pipe: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    // A damaged genotype chunk midway: one line naming the array, exit 1, and the
    // output ends with whole lines only, fewer than the store's records.
    let shard = big.join("call_genotype/c/3/0/0");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[100] ^= 0x10;
    std::fs::write(&shard, bytes).unwrap();
    let o = view(&["-H"], &big);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("call_genotype"), "{err}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "whole lines only");
    let columns = 9 + 23;
    assert!(text.lines().all(|l| l.split('\t').count() == columns));
    assert!(text.lines().count() < 3000, "stopped at the damage");
}

/// bio2zarr's Zarr v2 and v3 stores print what the VCF holds, up to bio2zarr's own
/// documented differences (docs/store.md): records regrouped by the header's contig
/// order, and a vector cut short padded with missing values, not fill (`.,.,.` where
/// the file had `.`, `-2,.` where it had `-2`). Both are normalised here, nothing else.
/// A header-only VCF without `##contig` lines converts to a store of no contigs,
/// whose view is the header bcftools prints (main refused to view it: "no contigs").
#[test]
fn a_store_of_no_records_and_no_contigs_prints_its_header() {
    let dir = test_dir();
    let input = dir.path().join("bare.vcf");
    std::fs::write(
        &input,
        "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n",
    )
    .unwrap();
    let store = dir.path().join("bare.zarr");
    convert(&input, &store, &[]);
    let printed = ok("view", run(svar2().arg("view").arg(&store)));
    assert!(
        printed.ends_with("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"),
        "{printed}"
    );
    let queried = ok(
        "query",
        run(svar2().args(["query", "-f", "%POS\\n"]).arg(&store)),
    );
    assert_eq!(queried, "");
}

#[test]
fn bio2zarr_stores_print_the_vcf() {
    if !tools(
        "bio2zarr_stores_print_the_vcf",
        &[Tool::Bcftools, Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let normal = |text: String| {
        let mut lines: Vec<String> = text
            .lines()
            .map(|l| {
                l.split(['\t', ':'])
                    .map(|v| {
                        // Missing values at the end of a vector: bio2zarr's padding.
                        let mut v = v;
                        while let Some(cut) = v.strip_suffix(",.") {
                            v = cut;
                        }
                        v
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect();
        lines.sort();
        lines.join("\n")
    };
    let want = normal(query_all(&gz, None));
    for (v, env) in [("v2", ""), ("v3", "BIO2ZARR_DEFAULT_ZARR_FORMAT=3 ")] {
        let store = d.join(format!("b{v}.zarr"));
        sh_ok(&format!(
            "{env}vcf2zarr convert -p 1 {} {} >/dev/null 2>&1",
            gz.display(),
            store.display()
        ));
        let got = normal(query_store(&gz, &store, None));
        assert_same_lines(&format!("bio2zarr {v}"), &want, &got);
    }
}

/// `view --fill-tags` sets each tag as `bcftools +fill-tags` does — haploid, triploid
/// and half-missing calls, multiallelic sites, tags the file has (updated) and lacks
/// (declared) — for every sample and after `-s`, several tags at once.
#[test]
fn fill_tags_equal_bcftools_fill_tags() {
    if !tools("fill_tags_equal_bcftools_fill_tags", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let [_, gz, _] = forms(&data("all_fields.vcf"), d, "af");
    let calls = format_call_set(d, "calls", 23, 300, "GT:AD:DP", 2);
    let svar2 = env!("CARGO_BIN_EXE_svar2");
    for (input, name) in [(&gz, "af"), (&calls, "calls")] {
        let store = d.join(format!("{name}.zarr"));
        convert(input, &store, &[]);
        let first = sh_ok(&format!("bcftools query -l {} | head -1", input.display()));
        let subset = sh_ok(&format!(
            "bcftools query -l {} | sed -n '2p;3p' | paste -sd,",
            input.display()
        ));
        for samples in [
            String::new(),
            format!("-s '{}'", subset.trim()),
            format!("-s '^{}'", first.trim()),
        ] {
            let tags = "AC,AN,AF,MAF,NS,AC_Het,AC_Hom,AC_Hemi,F_MISSING";
            let fmt: String = tags.split(',').map(|t| format!("\\t%INFO/{t}")).collect();
            let want = sh_ok(&format!(
                "bcftools view {samples} {} | bcftools +fill-tags -- -t {tags} | \
                 bcftools query -f '%CHROM:%POS{fmt}\\n'",
                input.display()
            ));
            let got = sh_ok(&format!(
                "{svar2} view {samples} --fill-tags {tags} {} | bcftools query -f '%CHROM:%POS{fmt}\\n'",
                store.display()
            ));
            assert!(want.lines().count() > 5, "{name} {samples}");
            assert_same_lines(&format!("{name} --fill-tags {samples}"), &want, &got);
        }
    }
}
