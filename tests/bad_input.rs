//! Bad input ends with a non-zero exit and one message naming the file, the place
//! (contig:pos or record) and what is wrong — never a panic, never a store that looks
//! complete. One case per row of the table in the README's "When input is bad".

mod common;
use common::*;
use std::path::{Path, PathBuf};

const HEADER: &str = "##fileformat=VCFv4.3
##contig=<ID=chr1,length=100000>
##contig=<ID=chr2,length=100000>
##INFO=<ID=DP,Number=1,Type=Integer,Description=\"d\">
##INFO=<ID=AF,Number=A,Type=Float,Description=\"a\">
##INFO=<ID=XS,Number=.,Type=Integer,Description=\"x\">
##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2
";

/// One record line from space-separated columns (tabs are hard to read in a table).
fn rec(cols: &str) -> String {
    cols.split(' ').collect::<Vec<_>>().join("\t") + "\n"
}

const GOOD: [&str; 3] = [
    "chr1 10 . A C 30 PASS DP=5 GT:AD 0/1:1,2 1/1:0,3",
    "chr1 20 . A G 30 PASS DP=6 GT:AD 0/0:3,0 0/1:1,1",
    "chr2 5 . G T 30 PASS DP=7 GT:AD 1/1:0,4 0/1:2,2",
];

fn write_vcf(dir: &Path, name: &str, header: &str, records: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let body: String = records.iter().map(|r| rec(r)).collect();
    std::fs::write(&path, format!("{header}{body}")).unwrap();
    path
}

/// Converts, expects a refusal whose one-line message holds every `needle`; returns it.
fn refused(input: &Path, args: &[&str], needles: &[&str]) -> String {
    let out = input.with_extension("zarr");
    let err = convert_fails(input, &out, args);
    let name = input.file_name().unwrap().to_string_lossy();
    assert!(!err.contains("panicked"), "{name}: a panic: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{name}: one message: {err}");
    assert!(
        err.contains(&*name),
        "{name}: the message names the file: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "{name}: expected `{n}` in: {err}");
    }
    assert!(!out.exists(), "{name}: the partial store is removed");
    err
}

#[test]
fn record_and_header_errors_name_file_place_and_fix() {
    let dir = test_dir();
    let d = dir.path();
    let cases: Vec<(&str, String, Vec<&str>, &[&str])> = vec![
        (
            "no_chrom.vcf",
            HEADER.replace("#CHROM", "##CHROM"),
            vec![GOOD[0]],
            &["bad header", "#CHROM line"],
        ),
        (
            "unsorted.vcf",
            HEADER.into(),
            vec![GOOD[1], GOOD[0]],
            &[
                "chr1:10",
                "comes after chr1:20",
                "not sorted",
                "bcftools sort",
            ],
        ),
        (
            "unsorted_contigs.vcf",
            HEADER.into(),
            vec![GOOD[0], GOOD[2], GOOD[1]],
            &["chr1:20", "chr1 resumes after chr2", "bcftools sort"],
        ),
        (
            "few_samples.vcf",
            HEADER.into(),
            vec![GOOD[0], "chr1 20 . A G 30 PASS DP=6 GT:AD 0/0:3,0"],
            &[
                "record 2 (chr1:20)",
                "1 sample column(s)",
                "names 2 sample(s)",
            ],
        ),
        (
            "many_samples.vcf",
            HEADER.into(),
            vec!["chr1 20 . A G 30 PASS DP=6 GT:AD 0/0:3,0 0/1:1,1 1/1:0,2"],
            &["chr1:20", "3 sample column(s)"],
        ),
        (
            "malformed_gt.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 PASS DP=5 GT:AD 0/x:1,2 1/1:0,3"],
            &["chr1:10", "sample s1, FORMAT/GT", "`0/x` is not a genotype"],
        ),
        (
            "info_wrong_type.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 PASS DP=abc GT:AD 0/1:1,2 1/1:0,3"],
            &["chr1:10", "INFO/DP", "`abc` is not a 32-bit integer"],
        ),
        (
            "float_wrong_type.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 PASS AF=0.5x GT:AD 0/1:1,2 1/1:0,3"],
            &["chr1:10", "INFO/AF", "`0.5x` is not a number"],
        ),
        (
            "format_wrong_type.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 PASS DP=5 GT:AD 0/1:1,2 1/1:0,zz"],
            &[
                "chr1:10",
                "sample s2, FORMAT/AD",
                "`zz` is not a 32-bit integer",
            ],
        ),
        (
            "info_not_in_header.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 PASS DP=5;NEW=3 GT:AD 0/1:1,2 1/1:0,3"],
            &["chr1:10", "INFO/NEW is not declared", "bcftools annotate"],
        ),
        (
            "filter_not_in_header.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 q10 . GT 0/1 1/1"],
            &["chr1:10", "FILTER q10 is not declared", "##FILTER"],
        ),
        (
            "format_not_in_header.vcf",
            HEADER.into(),
            vec!["chr1 10 . A C 30 PASS DP=5 GT:ZZ 0/1:1 1/1:2"],
            &["chr1:10", "FORMAT/ZZ is not declared", "bcftools annotate"],
        ),
        (
            "huge_number_in_header.vcf",
            HEADER.replace("ID=XS,Number=.", "ID=XS,Number=2000000000"),
            vec![GOOD[0]],
            &["INFO/XS declares Number=2000000000", "fix the header"],
        ),
        (
            // Its array would be variant_contig: main wrote the field over the
            // records' contigs and exited 0.
            "info_named_like_a_column.vcf",
            HEADER.replace("ID=XS,", "ID=contig,"),
            vec![GOOD[0]],
            &[
                "INFO/contig would be stored as variant_contig",
                "--rename-annots",
            ],
        ),
        (
            "format_named_like_a_column.vcf",
            HEADER.replace("ID=AD,", "ID=genotype_phased,"),
            vec![GOOD[0]],
            &["FORMAT/genotype_phased would be stored as call_genotype_phased"],
        ),
        (
            // One file on a case-folding file system (macOS, Windows).
            "info_named_like_a_column_in_capitals.vcf",
            HEADER.replace("ID=XS,", "ID=Length,"),
            vec![GOOD[0]],
            &["INFO/Length would be stored as variant_Length, which is variant_length where"],
        ),
        (
            "id_with_a_backslash.vcf",
            HEADER.replace("ID=XS,", r"ID=..\..\x,"),
            vec![GOOD[0]],
            &["holds a path separator"],
        ),
        (
            // htslib only warns of such an ID; main wrote `escaped/` beside the store.
            "id_with_a_slash.vcf",
            HEADER.replace("ID=XS,", "ID=x/../../escaped,"),
            vec![GOOD[0]],
            &[
                "INFO/x/../../escaped holds a path separator",
                "--rename-annots",
            ],
        ),
        (
            // A contig the header does not declare is named too (it was `?`).
            "unsorted_undeclared.vcf",
            HEADER.into(),
            vec![
                GOOD[0],
                "chrU 5 . A C 30 PASS DP=5 GT:AD 0/1:1,2 1/1:0,3",
                GOOD[1],
            ],
            &["chr1:20", "chr1 resumes after chrU began"],
        ),
        (
            // A comment, or a second file's header after `cat a.vcf b.vcf`.
            "hash_line_among_records.vcf",
            HEADER.into(),
            vec![GOOD[0], "##fileformat=VCFv4.3", GOOD[1]],
            &["record 2", "`#` line among the records", "bcftools concat"],
        ),
    ];
    for (name, header, records, needles) in &cases {
        let input = write_vcf(d, name, header, records);
        refused(&input, &[], needles);
    }
    assert!(
        !d.join("escaped").exists(),
        "nothing written outside the store"
    );
    // The same lines through the index (piece readers check them too).
    if tools("record_and_header_errors: indexed", &[Tool::Bcftools]) {
        for (name, header, records, needles) in &cases[3..12] {
            let plain = write_vcf(d, name, header, records);
            let gz = d.join(format!("{name}.gz"));
            sh_ok(&format!(
                "bgzip -c {} > {gz} && bcftools index {gz}",
                plain.display(),
                gz = gz.display()
            ));
            refused(&gz, &["--readers", "2"], needles);
        }
    }
}

#[test]
fn damaged_files_and_indexes_are_named() {
    if !tools("damaged_files_and_indexes_are_named", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let vcf = unequal_vcf(d, "u.vcf", &["c1:3000", "c2:2000"]);
    let gz = bgzip_indexed(&vcf);
    let bcf = d.join("u.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {} {}",
        bcf.display(),
        vcf.display()
    ));
    // Truncated mid-records: found before reading (no BGZF end-of-file block), and
    // that it was cut short (tests/truncated_input.rs has the rest).
    for (src, name) in [(&gz, "cut.vcf.gz"), (&bcf, "cut.bcf")] {
        let bytes = std::fs::read(src).unwrap();
        let cut = d.join(name);
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        refused(
            &cut,
            &[],
            &["cut short", "end-of-file block", "re-download"],
        );
    }
    // Truncated inside the header.
    let bytes = std::fs::read(&gz).unwrap();
    let cut = d.join("cut_header.vcf.gz");
    std::fs::write(&cut, &bytes[..60]).unwrap();
    refused(&cut, &[], &["cut short", "end-of-file block"]);
    // Not a VCF at all.
    let junk = d.join("junk.vcf");
    std::fs::write(&junk, b"\x7fELF\x02\x01\x01 this is no VCF\n").unwrap();
    refused(&junk, &[], &["not a VCF", "BCF"]);
    // Another file's index: m.vcf.gz's index beside u.vcf.gz's data.
    let mismatched = bgzip_indexed(&unequal_vcf(d, "m.vcf", &["c1:100", "c2:4000"]));
    std::fs::copy(&gz, &mismatched).unwrap();
    refused(
        &mismatched,
        &["--readers", "2"],
        &["index", "bcftools index -f"],
    );
    // An index is needed for --readers, and there is none.
    refused(
        &bcf,
        &["--readers", "3"],
        &["--readers 3", "bcftools index", "has none"],
    );
    // Nor can a file not compressed have one: its bgzipped copy is named.
    let plain = d.join("plain.vcf");
    sh_ok(&format!(
        "bcftools view -Ov -o {} {}",
        plain.display(),
        gz.display()
    ));
    refused(
        &plain,
        &["--readers", "2"],
        &["--readers 2", "bgzip", "bcftools index", "plain.vcf.gz"],
    );
}

#[test]
fn huge_values_are_handled_within_the_budget_or_refused() {
    let dir = test_dir();
    let d = dir.path();
    // One record with a million INFO values: at 256 MiB every inner chunk of the
    // array (1000 records x 10^6) cannot fit, and the record is named.
    let wide = format!(
        "chr1 10 . A C 30 PASS XS={} GT:AD 0/1:1,2 1/1:0,3",
        vec!["7"; 1_000_000].join(",")
    );
    let input = write_vcf(
        d,
        "wide_info.vcf",
        HEADER,
        &[GOOD[0].replace("chr1 10", "chr1 9").as_str(), &wide],
    );
    let err = refused(
        &input,
        &["--max-mem", "256MiB"],
        &[
            "record 2 (chr1:10)",
            "variant_XS is 1000000 values wide",
            "(it fits this budget)",
        ],
    );
    // With room for it (the smaller chunk the message names), it converts: a larger
    // budget alone would only make the plan choose longer chunk rows.
    let rows = err
        .split("--variants-chunk ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .unwrap();
    let out = d.join("wide_ok.zarr");
    convert(
        &input,
        &out,
        &["--max-mem", "256MiB", "--variants-chunk", rows],
    );
    if tools("huge_values: the wide field read back", &[Tool::ZarrPython]) {
        // Every one of the million values; the record without the field is missing in
        // every slot (an absent field, as bio2zarr stores it).
        let got = sh_ok(&format!(
            "python3 -c \"import zarr, numpy as np; a = zarr.open_group('{}', mode='r')['variant_XS'][:]; \
             print(a.shape, int((a[1] == 7).sum()), int((a[0] == -1).sum()))\"",
            out.display()
        ));
        assert_eq!(got.trim(), "(2, 1000000) 1000000 1000000");
    }
    // A 1 MB allele is just a long string.
    let allele = "A".repeat(1 << 20);
    let long = format!("chr1 10 . {allele} C 30 PASS DP=1 GT:AD 0/1:1,2 1/1:0,3");
    let input = write_vcf(d, "long_allele.vcf", HEADER, &[&long]);
    let out = d.join("long_allele.zarr");
    convert(&input, &out, &["--max-mem", "256MiB"]);
    if tools("huge_values: read back", &[Tool::ZarrPython]) {
        let got = sh_ok(&format!(
            "python3 -c \"import zarr; print(len(zarr.open_group('{}', mode='r')['variant_allele'][:][0, 0]))\"",
            out.display()
        ));
        assert_eq!(got.trim(), (1 << 20).to_string());
    }
}

/// A tmpfs mounted for the test and unmounted however it ends.
struct Mount(PathBuf);
impl Mount {
    fn tmpfs(at: &Path, opts: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let ok = sh(&format!("mount -t tmpfs -o {opts} tmpfs {}", at.display()))
            .status
            .success();
        ok.then(|| Mount(at.into()))
    }
}
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = sh(&format!("umount {}", self.0.display()));
    }
}

#[test]
fn full_or_read_only_disk_is_a_clear_error() {
    let dir = test_dir();
    let d = dir.path();
    let input = unequal_vcf(d, "in.vcf", &["c1:5000", "c2:3000"]);
    let Some(full) = Mount::tmpfs(&d.join("full"), "size=64k") else {
        skip(
            "full_or_read_only_disk_is_a_clear_error",
            "cannot mount a tmpfs (needs root) to simulate a full or read-only disk",
        );
        return;
    };
    let out = full.0.join("o.zarr");
    let err = convert_fails(&input, &out, &[]);
    assert!(
        err.contains("No space left on device") && err.contains("free some space"),
        "{err}"
    );
    assert!(
        !out.exists(),
        "the partial store is removed, freeing the space"
    );
    let ro = Mount::tmpfs(&d.join("ro"), "size=1m,ro").expect("second tmpfs");
    let err = convert_fails(&input, &ro.0.join("o.zarr"), &[]);
    assert!(
        err.contains("Read-only file system") && err.contains("writable"),
        "{err}"
    );
}

#[test]
fn a_finished_store_is_kept_unless_forced() {
    let dir = test_dir();
    let d = dir.path();
    let input = write_vcf(d, "in.vcf", HEADER, &GOOD);
    // (A directory that is not a store: tests/cli.rs.)
    // A finished store: refused without --force, replaced with it.
    let out = d.join("o.zarr");
    convert(&input, &out, &[]);
    let o = run_convert(&input, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert!(
        out.join("zarr.json").exists(),
        "the finished store is untouched"
    );
}

/// `dir/NAME.vcf.gz`, bgzipped and tabix-indexed: GT-only, one contig `contig`,
/// `samples` samples, `records` records at POS 10, 110, …; `bend(r, pos, calls)` may
/// change record `r`'s POS text or calls. bgzip and tabix take a bad line as it is
/// (bcftools would refuse it).
fn indexed_gt_vcf(
    dir: &Path,
    name: &str,
    contig: &str,
    (samples, records): (usize, usize),
    bend: impl Fn(usize, String, String) -> (String, String),
) -> PathBuf {
    let names: Vec<String> = (0..samples).map(|i| format!("s{i}")).collect();
    let mut text = format!(
        "##fileformat=VCFv4.3\n##contig=<ID={contig},length=1000000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t{}\n",
        names.join("\t")
    );
    for r in 0..records {
        let calls = vec!["0|1"; samples].join("\t");
        let (pos, calls) = bend(r, (10 + r * 100).to_string(), calls);
        text += &format!("{contig}\t{pos}\t.\tA\tC\t.\tPASS\t.\tGT\t{calls}\n");
    }
    let vcf = dir.join(format!("{name}.vcf"));
    std::fs::write(&vcf, text).unwrap();
    sh_ok(&format!(
        "bgzip -f {0} && tabix -f -p vcf {0}.gz",
        vcf.display()
    ));
    dir.join(format!("{name}.vcf.gz"))
}

/// A bad record in one of many per-contig files stops the conversion with its error,
/// whatever the threads and readers: every reader is let go, none waits forever to
/// hand over a piece of a contig that no sequencer will take (main's binary hung here
/// at --threads 2 --readers 2, --threads 4 and --threads 16 --readers 2).
#[test]
fn a_bad_record_among_many_files_is_an_error_not_a_hang() {
    if !tools(
        "a_bad_record_among_many_files_is_an_error_not_a_hang",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    // The sixth file's record 200 has one sample column.
    let inputs: Vec<String> = (0..12)
        .map(|f| {
            let bend = move |r, pos, calls| match f == 5 && r == 199 {
                true => (pos, "0/1".to_string()),
                false => (pos, calls),
            };
            let name = format!("c{f}");
            let gz = indexed_gt_vcf(dir.path(), &name, &name, (100, 333), bend);
            gz.display().to_string()
        })
        .collect();
    for (threads, readers) in [("2", "2"), ("4", "1"), ("4", "2"), ("16", "2")] {
        let out = dir.path().join(format!("t{threads}r{readers}.zarr"));
        let o = sh(&format!(
            "timeout 60 {} convert -q --threads {threads} --readers {readers} {} {}",
            env!("CARGO_BIN_EXE_svar2"),
            inputs.join(" "),
            out.display()
        ));
        let err = String::from_utf8_lossy(&o.stderr);
        let what = format!("--threads {threads} --readers {readers}");
        assert_ne!(o.status.code(), Some(124), "{what}: hung");
        assert_eq!(o.status.code(), Some(1), "{what}: {err}");
        assert!(
            err.contains("c5.vcf.gz: record 200 (c5:19910)") && err.contains("sample column"),
            "{what}: the record numbered in its own file: {err}"
        );
    }
}

/// A record's number in a message counts its own file's records: with several
/// inputs read one after another (text and BCF), and with records a subset (`-i`)
/// does not keep. Before, the second file's third record was "record 6" after a
/// three-record file, and "record 2" where `-i` skipped one before it.
#[test]
fn records_are_numbered_in_their_own_file() {
    if !tools("records_are_numbered_in_their_own_file", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let first = write_vcf(d, "first.vcf", HEADER, &GOOD);
    // The second file: chr2 only, its third record out of order.
    let late = [
        "chr2 5 . G T 30 PASS DP=7 GT:AD 1/1:0,4 0/1:2,2",
        "chr2 30 . G T 30 PASS DP=7 GT:AD 1/1:0,4 0/1:2,2",
        "chr2 20 . G T 30 PASS DP=7 GT:AD 1/1:0,4 0/1:2,2",
    ];
    let first_chr1 = write_vcf(d, "first1.vcf", HEADER, &GOOD[..2]);
    let second = write_vcf(d, "second.vcf", HEADER, &late);
    for ext in ["vcf", "bcf"] {
        let (a, b) = match ext {
            "vcf" => (first_chr1.clone(), second.clone()),
            _ => {
                for f in ["first1", "second"] {
                    sh_ok(&format!(
                        "bcftools view --no-version -Ob -o {0}/{f}.bcf {0}/{f}.vcf",
                        d.display()
                    ));
                }
                (d.join("first1.bcf"), d.join("second.bcf"))
            }
        };
        for threads in ["1", "4"] {
            let out = d.join(format!("two_{ext}_{threads}.zarr"));
            let o = sh(&format!(
                "{} convert -q --threads {threads} {} {} {}",
                env!("CARGO_BIN_EXE_svar2"),
                a.display(),
                b.display(),
                out.display()
            ));
            let err = String::from_utf8_lossy(&o.stderr);
            let name = b.file_name().unwrap().to_string_lossy();
            assert!(
                err.contains(&format!("{name}: record 3 (chr2:20)")) && err.contains("not sorted"),
                "{ext} at --threads {threads}: {err}"
            );
        }
    }
    // One file, its third record bad, the first not kept by -i.
    let bad = write_vcf(
        d,
        "subset.vcf",
        HEADER,
        &[
            GOOD[0],
            GOOD[1],
            "chr2 5 . G T 30 PASS DP=7 GT:AD 1/1:0,4 0/Z:2,2",
        ],
    );
    refused(&bad, &["-i", "POS>15"], &["subset.vcf: record 3 (chr2:5)"]);
    let _ = first;
}

/// A POS that is no position, in an indexed file read in pieces through the index, is
/// the same error as in a stream: main skipped the record without a word and exited 0
/// (tabix indexes such a file without complaint).
#[test]
fn a_bad_pos_read_through_the_index_is_an_error() {
    if !tools(
        "a_bad_pos_read_through_the_index_is_an_error",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let bend = |r, pos, calls| match r == 1500 {
        true => ("X12".to_string(), calls),
        false => (pos, calls),
    };
    let gz = indexed_gt_vcf(dir.path(), "bad_pos", "c1", (2, 3000), bend);
    for args in [
        &["--threads", "4", "--readers", "3"][..],
        &["--threads", "1"],
    ] {
        // Numbered in the file whichever reader read it (a piece's reader counts from
        // its piece's start: "record 501" once).
        let err = refused(
            &gz,
            args,
            &[
                "bad_pos.vcf.gz: record 1501 (",
                "POS `X12` is not a position",
            ],
        );
        assert!(err.contains("c1:"), "{args:?}: {err}");
    }
}

/// A bad record in a later piece of a contig read by several readers is named by its
/// number in the file, as one reader names it: a piece's reader counts from its
/// piece's start, and said "record 1001" for the file's 2,500th.
#[test]
fn a_bad_record_read_in_pieces_is_numbered_in_the_file() {
    if !tools(
        "a_bad_record_read_in_pieces_is_numbered_in_the_file",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let bend = |r, pos, calls| match r == 2499 {
        true => (pos, "0/1".to_string()),
        false => (pos, calls),
    };
    let gz = indexed_gt_vcf(dir.path(), "late_bad", "c1", (2, 3000), bend);
    for args in [
        &["--threads", "4", "--readers", "3"][..],
        &["--threads", "1"],
    ] {
        refused(
            &gz,
            args,
            &["late_bad.vcf.gz: record 2500 (c1:249910)", "sample column"],
        );
    }
}

/// A −1 or −2 given as an integer value, INFO or FORMAT, in text, bgzipped or BCF:
/// VCF Zarr keeps those two for missing and fill, so stored they would read back as
/// missing (bio2zarr stores them so, silently). The record is refused, naming the
/// field and the value; −3 and the missing `.` convert.
#[test]
fn integers_the_store_reserves_are_refused() {
    if !tools("integers_the_store_reserves_are_refused", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let cases = [
        (
            "info1",
            "chr1 10 . A C 30 PASS DP=-1 GT:AD 0/1:1,2 1/1:0,3",
            "INFO/DP holds the value -1",
        ),
        (
            "info2",
            "chr1 10 . A C 30 PASS DP=-2 GT:AD 0/1:1,2 1/1:0,3",
            "INFO/DP holds the value -2",
        ),
        (
            "fmt1",
            "chr1 10 . A C 30 PASS DP=5 GT:AD 0/1:1,-1 1/1:0,3",
            "FORMAT/AD holds the value -1",
        ),
        (
            "fmt2",
            "chr1 10 . A C 30 PASS DP=5 GT:AD 0/1:1,2 1/1:-2,3",
            "FORMAT/AD holds the value -2",
        ),
    ];
    for (name, bad, needle) in cases {
        let vcf = write_vcf(d, &format!("{name}.vcf"), HEADER, &[GOOD[0], bad, GOOD[2]]);
        let gz = d.join(format!("{name}.vcf.gz"));
        let bcf = d.join(format!("{name}.bcf"));
        sh_ok(&format!(
            "bcftools view -Oz -o {gz} {v} && bcftools view -Ob -o {bcf} {v}",
            gz = gz.display(),
            bcf = bcf.display(),
            v = vcf.display()
        ));
        for input in [&vcf, &gz, &bcf] {
            refused(
                input,
                &[],
                &["record 2 (chr1:10)", needle, "bcftools annotate -x"],
            );
        }
    }
    // Other negative values and missing ones convert, and read back as given.
    let ok = write_vcf(
        d,
        "neg.vcf",
        HEADER,
        &[
            "chr1 10 . A C 30 PASS DP=-3 GT:AD 0/1:.,-7 1/1:0,3",
            GOOD[2],
        ],
    );
    let store = d.join("neg.zarr");
    convert(&ok, &store, &[]);
    let o = svar2()
        .args(["query", "-f", "%DP[ %AD]\\n"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "-3 .,-7 0,3\n7 0,4 2,2\n"
    );
}

/// A BCF whose header declares a Type its records do not encode (reheadered: Float
/// values under Type=Integer, floats under String): htslib hands the bits over as the
/// header says, and svar2 stored 2.5 as 1075838976 with exit 0 (fifth hostile pass).
/// Now refused naming the field, the record and the two types.
#[test]
fn a_bcf_whose_records_disagree_with_its_header_types_is_refused() {
    if !tools(
        "a_bcf_whose_records_disagree_with_its_header_types_is_refused",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let header = HEADER.replace(
        "##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">",
        "##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">\n\
         ##FORMAT=<ID=VF,Number=1,Type=Float,Description=\"v\">",
    );
    let vcf = write_vcf(
        dir.path(),
        "t.vcf",
        &header,
        &["chr1 10 . A C 30 PASS DP=5;AF=0.25 GT:AD:VF 0/1:1,2:0.5 1/1:0,3:0.75"],
    );
    let bcf = dir.path().join("t.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {} {}",
        bcf.display(),
        vcf.display()
    ));
    for (from, to, says) in [
        (
            "ID=AF,Number=A,Type=Float",
            "ID=AF,Number=A,Type=Integer",
            "INFO/AF is encoded as floats in the record but declared Type=Integer",
        ),
        (
            "ID=AF,Number=A,Type=Float",
            "ID=AF,Number=A,Type=String",
            "INFO/AF is encoded as floats in the record but declared Type=String",
        ),
        (
            "ID=VF,Number=1,Type=Float",
            "ID=VF,Number=1,Type=Integer",
            "FORMAT/VF is encoded as floats in the record but declared Type=Integer",
        ),
        (
            "ID=DP,Number=1,Type=Integer",
            "ID=DP,Number=1,Type=Float",
            "INFO/DP is encoded as integers in the record but declared Type=Float",
        ),
    ] {
        let re = dir.path().join("re.bcf");
        sh_ok(&format!(
            "bcftools view -h {b} | sed 's/{from}/{to}/' > {d}/h.txt && \
             bcftools reheader -h {d}/h.txt -o {r} {b}",
            b = bcf.display(),
            d = dir.path().display(),
            r = re.display()
        ));
        refused(&re, &[], &["re.bcf", "record 1 (chr1:10)", says]);
    }
}

/// A record whose first columns are separated by spaces, where a reader starts through
/// the index: tabix's parser refuses the line and htslib reports no more than a failed
/// read, which said only "the index is stale" — re-indexing does not fix the file. The
/// message shows the line (hostile pass, 2026-12-06).
#[test]
fn a_malformed_line_where_the_index_points_is_shown() {
    if !tools(
        "a_malformed_line_where_the_index_points_is_shown",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let vcf = d.join("spaced.vcf");
    let calls = "GT:DP\t0/1:4\t1/1:5";
    let mut text = String::from(
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n##contig=<ID=2,length=1000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS0\tS1\n",
    );
    text += &format!("1\t20\t.\tT\tA\t.\t.\t.\t{calls}\n");
    text += &format!("1 30 .\tT\tA\t.\t.\t.\t{calls}\n");
    text += &format!("2\t20\t.\tT\tA\t.\t.\t.\t{calls}\n");
    std::fs::write(&vcf, text).unwrap();
    let gz = d.join("spaced.vcf.gz");
    sh_ok(&format!(
        "bgzip -c {0} > {1} && tabix -f -p vcf {1}",
        vcf.display(),
        gz.display()
    ));
    refused(
        &gz,
        &["--readers", "2"],
        &["the line there begins `1 30 .\\tT", "fix the file"],
    );
}
