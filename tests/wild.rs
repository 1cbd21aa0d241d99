//! Files as they come from other projects and pipelines: header quirks (contig `IDX=`
//! gaps, contigs or GT left undeclared, contigs without lengths), values htslib reads
//! in its own way (empty values, integers past 32 bits, long `Character`s), and the
//! shapes bio2zarr gives them. Each either converts and round-trips, or is refused in
//! one line that says what to do; every store written opens in xarray (`TestDir`).

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// Writes a VCF whose record lines are given with single spaces between columns.
fn vcf(dir: &Path, name: &str, header: &str, records: &[&str]) -> PathBuf {
    let mut text = String::from(header);
    for r in records {
        text.push_str(&r.split(' ').collect::<Vec<_>>().join("\t"));
        text.push('\n');
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `dtype`, `shape`, dimension names and values of some arrays, read by zarr-python
/// (NaN as null); `null` for an array the store does not have.
fn arrays(store: &Path, names: &[&str]) -> serde_json::Value {
    let out = sh_ok(&format!(
        "python3 {} {} {}",
        py("read_arrays.py"),
        store.display(),
        names.join(" ")
    ));
    serde_json::from_str(&out).expect("json from zarr-python")
}

fn values(v: &serde_json::Value, name: &str) -> serde_json::Value {
    v[name]["values"].clone()
}

/// The VCF round trip: bcftools' view of `input` equals `svar2 view` of the store.
fn round_trips(input: &Path, store: &Path) {
    assert_same_lines(
        &format!("{} round trip", input.display()),
        &query_all(input, None),
        &query_store(input, store, None),
    );
}

/// `svar2 convert` without `-q` (warnings shown); asserts success, returns stderr.
fn convert_loud(input: &Path, out: &Path, args: &[&str]) -> String {
    let o = svar2()
        .arg("convert")
        .args(args)
        .arg(input)
        .arg(out)
        .output()
        .expect("svar2 runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

const ORACLES: &[Tool] = &[Tool::Bcftools, Tool::Vcztools, Tool::ZarrPython];

#[test]
fn contig_ids_with_gaps_convert_and_plan() {
    if !tools("contig_ids_with_gaps_convert_and_plan", ORACLES) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    // IDX=1 leaves htslib's contig id 0 empty: a null name, which used to crash.
    let src = vcf(
        d,
        "idx_src.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=chr22,length=51304566,IDX=1>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n",
        &[
            "chr22 100 . A G . . . GT 0|1",
            "chr22 200 . C T . . . GT 1/1",
        ],
    );
    for input in forms(&src, d, "idx") {
        let out = d.join("idx.zarr");
        convert(&input, &out, &[]);
        let a = arrays(&out, &["contig_id", "contig_length", "variant_contig"]);
        assert_eq!(values(&a, "contig_id"), serde_json::json!(["chr22"]));
        assert_eq!(values(&a, "contig_length"), serde_json::json!([51304566]));
        assert_eq!(values(&a, "variant_contig"), serde_json::json!([0, 0]));
        round_trips(&input, &out);
        let plan = plan_json(&input, &[]);
        assert_eq!(plan["contig_names"], serde_json::json!(["chr22"]));
    }
}

#[test]
fn more_values_than_alleles_are_refused_and_fewer_are_padded() {
    let dir = test_dir();
    let d = dir.path();
    let header = "##fileformat=VCFv4.3\n##contig=<ID=1>\n\
         ##INFO=<ID=AC,Number=A,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n";
    for (name, rec, needle) in [
        (
            "ad.vcf",
            "1 10 . A G . . . GT:AD 0/1:3,4 0/1:3,4,5",
            "FORMAT/AD has 3 values in a sample, but Number=R allows 2",
        ),
        (
            "ac.vcf",
            "1 10 . A G . . AC=1,2 GT:AD 0/1:3,4 0/1:3,4",
            "INFO/AC has 2 values, but Number=A allows 1",
        ),
    ] {
        let input = vcf(
            d,
            name,
            header,
            &["1 5 . A G,T . . AC=1,1 GT:AD 1/2:1,2,3 0/0:4", rec],
        );
        let err = convert_fails(&input, &d.join("o.zarr"), &[]);
        assert!(
            err.contains(needle) && err.contains("record 2 (1:10)"),
            "{err}"
        );
        assert!(err.contains("Number=."), "says what to do: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Fewer values than alleles (and `.`) are padded: the store opens in xarray.
    let input = vcf(
        d,
        "fewer.vcf",
        header,
        &[
            "1 5 . A G,T . . AC=. GT:AD 1/2:1 0/0:.",
            "1 10 . A G . . AC=1 GT:AD 0/1:3,4 ./.:.",
        ],
    );
    convert(&input, &d.join("fewer.zarr"), &[]);
    let a = arrays(&d.join("fewer.zarr"), &["call_AD", "variant_AC"]);
    assert_eq!(a["call_AD"]["shape"], serde_json::json!([2, 2, 3]));
    assert_eq!(
        a["variant_AC"]["dims"],
        serde_json::json!(["variants", "alt_alleles"])
    );
    // The values as zarr-python reads them: what was given, then fill (−2) to the
    // width; `.` is one missing value (−1) then fill, as htslib reads it (bio2zarr
    // stores missing in every slot of a lone `.` INFO value: docs/store.md).
    assert_eq!(
        values(&a, "call_AD"),
        serde_json::json!([[[1, -2, -2], [-1, -2, -2]], [[3, 4, -2], [-1, -2, -2]]])
    );
    assert_eq!(
        values(&a, "variant_AC"),
        serde_json::json!([[-1, -2], [1, -2]])
    );
}

#[test]
fn contig_length_is_written_when_any_contig_has_one() {
    if !tools("contig_length_is_written_when_any_contig_has_one", ORACLES) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let records = ["19 10 . A G . . . GT 0|1", "20 10 . A G . . . GT 0|1"];
    for (name, contigs, lengths) in [
        ("none", "##contig=<ID=19>\n##contig=<ID=20>\n", None),
        (
            "some",
            "##contig=<ID=19,length=500>\n##contig=<ID=20>\n",
            Some(serde_json::json!([500, -1])),
        ),
        (
            "all",
            "##contig=<ID=19,length=500>\n##contig=<ID=20,length=600>\n",
            Some(serde_json::json!([500, 600])),
        ),
    ] {
        let header = format!(
            "##fileformat=VCFv4.3\n{contigs}\
             ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
             #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n"
        );
        let input = vcf(d, &format!("{name}.vcf"), &header, &records);
        let out = d.join(format!("{name}.zarr"));
        convert(&input, &out, &[]);
        let a = arrays(&out, &["contig_length"]);
        match &lengths {
            Some(l) => assert_eq!(values(&a, "contig_length"), *l, "{name}"),
            None => assert!(a["contig_length"].is_null(), "{name}: {a}"),
        }
        // The VCF svar2 prints back is valid: htslib writes it as BCF.
        round_trips(&input, &out);
        sh_ok(&format!(
            "{} view {} | bcftools view -Ob -o {}",
            env!("CARGO_BIN_EXE_svar2"),
            out.display(),
            d.join(format!("{name}.bcf")).display()
        ));
    }
}

#[test]
fn undeclared_contigs_join_the_store_with_or_without_an_index() {
    if !tools("undeclared_contigs_join_the_store", ORACLES) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let src = vcf(
        d,
        "undeclared_src.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1,length=1000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n",
        &[
            "1 10 . A G . . . GT 0|1",
            "2 20 . A G . . . GT 0|1",
            "2 30 . A G . . . GT 1|1",
            "X 5 . A G . . . GT 0|0",
        ],
    );
    // The plain file streams (no index); the bgzipped one is read through its index
    // by two readers; the store is the same.
    let plain = d.join("plain.zarr");
    let err = convert_loud(&src, &plain, &[]);
    assert_eq!(err.matches("contig 2 is not declared").count(), 1, "{err}");
    assert_eq!(err.matches("contig X is not declared").count(), 1, "{err}");
    assert!(
        !err.contains('\x1b'),
        "no colour codes off a terminal: {err:?}"
    );
    // bgzip + tabix keep the header text as it is (bcftools would add a line).
    let gz = d.join("undeclared.vcf.gz");
    sh_ok(&format!(
        "bgzip -c {} > {gz} && tabix -p vcf {gz}",
        src.display(),
        gz = gz.display()
    ));
    let indexed = d.join("indexed.zarr");
    convert(&gz, &indexed, &["--readers", "2"]);
    assert_eq!(digest(&plain), digest(&indexed));
    let a = arrays(&plain, &["contig_id", "variant_contig", "contig_length"]);
    assert_eq!(values(&a, "contig_id"), serde_json::json!(["1", "2", "X"]));
    assert_eq!(
        values(&a, "variant_contig"),
        serde_json::json!([0, 1, 1, 2])
    );
    assert_eq!(
        values(&a, "contig_length"),
        serde_json::json!([1000, -1, -1]),
        "2 and X have no length"
    );
    round_trips(&src, &plain);
}

#[test]
fn undeclared_gt_is_read_as_the_genotype() {
    if !tools("undeclared_gt_is_read_as_the_genotype", &[Tool::ZarrPython]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let input = vcf(
        d,
        "nogt.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1>\n\
         ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n",
        &[
            "1 10 . A G . . . GT:DP 0/1:3 1|1:4",
            "1 20 . A G,T . . . GT 2/1 .",
        ],
    );
    let out = d.join("nogt.zarr");
    let err = convert_loud(&input, &out, &[]);
    assert!(err.contains("FORMAT/GT is not declared"), "{err}");
    let a = arrays(&out, &["call_genotype", "call_genotype_phased", "call_DP"]);
    assert_eq!(
        values(&a, "call_genotype"),
        serde_json::json!([[[0, 1], [1, 1]], [[2, 1], [-1, -2]]])
    );
    assert_eq!(
        values(&a, "call_genotype_phased"),
        serde_json::json!([[false, true], [false, true]])
    );
    assert_eq!(values(&a, "call_DP"), serde_json::json!([[3, 4], [-1, -1]]));
}

#[test]
fn empty_values_are_missing() {
    if !tools("empty_values_are_missing", &[Tool::ZarrPython]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let input = vcf(
        d,
        "empty.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1>\n\
         ##INFO=<ID=DP,Number=1,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=LAA,Number=.,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=LAD,Number=.,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=FF,Number=1,Type=Float,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n",
        // `0/1/2::` as a GATK/DRAGEN local-alleles line has it; htslib would read an
        // empty Float as 0, and `DP=` as an error.
        &["1 10 . A G,T . . DP= GT:LAA:LAD:FF 0/1/2::: .:1:2,3:0.5"],
    );
    let out = d.join("empty.zarr");
    convert(&input, &out, &[]);
    let a = arrays(
        &out,
        &[
            "variant_DP",
            "call_LAA",
            "call_LAD",
            "call_FF",
            "call_genotype",
        ],
    );
    assert_eq!(values(&a, "variant_DP"), serde_json::json!([-1]));
    assert_eq!(values(&a, "call_LAA"), serde_json::json!([[[-1], [1]]]));
    assert_eq!(
        values(&a, "call_LAD"),
        serde_json::json!([[[-1, -2], [2, 3]]])
    );
    assert_eq!(values(&a, "call_FF"), serde_json::json!([[null, 0.5]]));
    assert_eq!(
        values(&a, "call_genotype"),
        serde_json::json!([[[0, 1, 2], [-1, -2, -2]]])
    );
}

/// An empty element of a string list (`a,,b`, `,a`, `a,`) is stored as `.`, as an
/// empty value is, with one warning: VCF Zarr reads an empty string as the end of a
/// list, so main (and bio2zarr) stored `a,,b` as `a`, `""`, `b` and it read back as
/// `a` without a word. The same through the direct parse, htslib's (a subset) and BCF.
#[test]
fn empty_elements_of_string_lists_are_missing_and_said() {
    if !tools(
        "empty_elements_of_string_lists_are_missing_and_said",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let input = vcf(
        d,
        "elements.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1,length=1000>\n\
         ##INFO=<ID=S1,Number=1,Type=String,Description=\"x\">\n\
         ##INFO=<ID=SD,Number=.,Type=String,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=FS,Number=.,Type=String,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\n",
        &[
            "1 1 . A G . . S1=a,,b;SD=x,,y GT:FS 0/1:a,,b 0/1:p",
            "1 2 . A G . . S1=,a;SD=,x GT:FS 0/1:,a 0/1:,",
            "1 3 . A G . . S1=a, GT:FS 0/1:a, 0/1:q",
        ],
    );
    let bcf = d.join("elements.bcf");
    sh_ok(&format!(
        "bcftools view --no-version -Ob -o {} {}",
        bcf.display(),
        input.display()
    ));
    let want = "1 a,.,b x,.,y a,.,b p\n2 .,a .,x .,a .,.\n3 a,. . a,. q\n";
    for (name, from, args) in [
        ("direct", &input, &[][..]),
        ("htslib", &input, &["-s", "A,B"][..]),
        ("bcf", &bcf, &[][..]),
    ] {
        let out = d.join(format!("{name}.zarr"));
        let err = convert_loud(from, &out, args);
        assert_eq!(
            err.matches("has an empty element").count(),
            1,
            "{name}: {err}"
        );
        assert!(
            err.contains("record 1 (1:1): INFO/S1 value `a,,b` has an empty element"),
            "{name}: {err}"
        );
        let printed = sh_ok(&format!(
            "{} query -f '%POS %S1 %SD[ %FS]\\n' {}",
            env!("CARGO_BIN_EXE_svar2"),
            out.display()
        ));
        assert_eq!(printed, want, "{name}");
    }
}

/// A String INFO key given bare, as a Flag is (`SK`): it holds no value, so it is
/// stored as missing, and convert says so once, naming the first record, whichever
/// path reads it (the direct text parse hands such lines to htslib; BCF; -s).
#[test]
fn string_info_keys_without_a_value_are_missing_and_said() {
    if !tools(
        "string_info_keys_without_a_value_are_missing_and_said",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let input = vcf(
        d,
        "bare.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1,length=1000>\n\
         ##INFO=<ID=SK,Number=.,Type=String,Description=\"x\">\n\
         ##INFO=<ID=DP,Number=1,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\n",
        &[
            "1 1 . A G . . SK=a,b GT 0/1",
            "1 2 . A G . . DP=3;SK GT 0/1",
            "1 3 . A G . . SK;DP=4 GT 1/1",
        ],
    );
    let bcf = d.join("bare.bcf");
    sh_ok(&format!(
        "bcftools view --no-version -Ob -o {} {}",
        bcf.display(),
        input.display()
    ));
    for (name, from, args) in [
        ("text", &input, &[][..]),
        ("htslib", &input, &["-s", "A"][..]),
        ("bcf", &bcf, &[][..]),
    ] {
        let out = d.join(format!("{name}.zarr"));
        let err = convert_loud(from, &out, args);
        assert_eq!(err.matches("without a value").count(), 1, "{name}: {err}");
        assert!(
            err.contains("record 2 (1:2): INFO/SK is given without a value"),
            "{name}: {err}"
        );
        let printed = sh_ok(&format!(
            "{} query -f '%POS %SK %DP\\n' {}",
            env!("CARGO_BIN_EXE_svar2"),
            out.display()
        ));
        assert_eq!(printed, "1 a,b .\n2 . 3\n3 . 4\n", "{name}");
    }
}

#[test]
fn positions_and_integers_past_32_bits_are_stored_whole() {
    if !tools("positions_and_integers_past_32_bits", &[Tool::ZarrPython]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    // Chromosomes of large plant and amphibian genomes pass 2^31 bp.
    let input = vcf(
        d,
        "big.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1,length=3000000000>\n\
         ##INFO=<ID=END,Number=1,Type=Integer,Description=\"end\">\n\
         ##INFO=<ID=BIG,Number=.,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n",
        &[
            "1 10 . A G . . BIG=5 GT 0/1",
            "1 2500000000 . A <DEL> . . END=2600000000;BIG=1,4000000000,. GT 0/1",
            // A 32-bit value after the batch's column went 64-bit (found by fuzzing:
            // it hit an unreachable branch).
            "1 2600000001 . C T . . BIG=7 GT 1/1",
        ],
    );
    // Also with one-record shards, where the first row is written as int32 and
    // re-encoded as int64 once the second record arrives.
    let rows = &["--variants-chunk", "1", "--variants-shard", "1"][..];
    for (name, args) in [("whole", &[][..]), ("rows", rows)] {
        let out = d.join(format!("{name}.zarr"));
        convert(&input, &out, args);
        let a = arrays(
            &out,
            &[
                "variant_position",
                "variant_length",
                "variant_END",
                "variant_BIG",
            ],
        );
        assert_eq!(a["variant_position"]["dtype"], "int64");
        assert_eq!(
            values(&a, "variant_position"),
            serde_json::json!([10, 2500000000u64, 2600000001u64])
        );
        assert_eq!(
            values(&a, "variant_length"),
            serde_json::json!([1, 100000001, 1])
        );
        assert_eq!(
            values(&a, "variant_END"),
            serde_json::json!([-1, 2600000000u64, -1])
        );
        assert_eq!(
            values(&a, "variant_BIG"),
            serde_json::json!([[5, -2, -2], [1, 4000000000u64, -1], [7, -2, -2]])
        );
    }
}

#[test]
fn character_values_are_never_cut_short() {
    if !tools("character_values_are_never_cut_short", &[Tool::ZarrPython]) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let header = "##fileformat=VCFv4.3\n##contig=<ID=1>\n\
         ##INFO=<ID=CH,Number=1,Type=Character,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=FC,Number=1,Type=Character,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n";
    // One character each: numpy U1, as bio2zarr writes it.
    let single = vcf(
        d,
        "single.vcf",
        header,
        &["1 10 . A G . . CH=C GT:FC 0/1:A"],
    );
    convert(&single, &d.join("single.zarr"), &[]);
    let a = arrays(&d.join("single.zarr"), &["variant_CH", "call_FC"]);
    assert_eq!(a["variant_CH"]["dtype"], "<U1");
    // A longer value (`CTCF`) makes the array strings; before, it was cut to `C`.
    let long = vcf(
        d,
        "long.vcf",
        header,
        &[
            "1 10 . A G . . CH=C GT:FC 0/1:A",
            "1 20 . A G . . CH=CTCF GT:FC 0/1:XYZ",
        ],
    );
    // Two rows of one-record chunks: the first written as U1, then re-encoded.
    convert(
        &long,
        &d.join("long.zarr"),
        &["--variants-chunk", "1", "--variants-shard", "1"],
    );
    let a = arrays(&d.join("long.zarr"), &["variant_CH", "call_FC"]);
    assert_eq!(values(&a, "variant_CH"), serde_json::json!(["C", "CTCF"]));
    assert_eq!(values(&a, "call_FC"), serde_json::json!([["A"], ["XYZ"]]));
}

#[test]
fn local_alleles_get_their_dimension_as_in_bio2zarr() {
    if !tools(
        "local_alleles_get_their_dimension_as_in_bio2zarr",
        &[Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    // FORMAT/LAA always has its own dimension in bio2zarr, even when every record
    // holds one value; other Number=. fields only past one value.
    let input = vcf(
        d,
        "laa.vcf",
        "##fileformat=VCFv4.3\n##contig=<ID=1,length=100>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=LAA,Number=.,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=XD,Number=.,Type=Integer,Description=\"x\">\n\
         ##INFO=<ID=IX,Number=.,Type=Float,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n",
        &[
            "1 10 . A G . . IX=. GT:LAA:XD 0/1:1:. 0/0:.:3",
            "1 20 . A G . . . GT:LAA 0/1:1 0/0:1",
        ],
    );
    assert_same_as_bio2zarr(&input, &[]);
    let ours = d.join("svar2.zarr");
    convert(&input, &ours, &[]);
    let a = arrays(&ours, &["call_LAA", "call_XD"]);
    assert_eq!(a["call_LAA"]["shape"], serde_json::json!([2, 2, 1]));
    assert_eq!(a["call_XD"]["shape"], serde_json::json!([2, 2]));
}

#[test]
fn messages_say_what_is_true() {
    let dir = test_dir();
    let d = dir.path();
    // No index and no ##contig lines: nothing about a stale index.
    let input = vcf(
        d,
        "bare.vcf",
        "##fileformat=VCFv4.3\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n",
        &["1 10 . A G . . ."],
    );
    let err = convert_loud(&input, &d.join("bare.zarr"), &[]);
    assert!(!err.contains("index") && !err.contains('\x1b'), "{err}");
    assert!(err.contains("contig 1 is not declared"), "{err}");
    let header = "##fileformat=VCFv4.4\n##contig=<ID=1>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n";
    // VCF 4.4's explicit phasing prefix: named, not "could not parse".
    let phase = vcf(d, "phase.vcf", header, &["1 10 . A G . . . GT /0|1 0/1"]);
    let err = convert_fails(&phase, &d.join("p.zarr"), &[]);
    assert!(
        err.contains("record 1 (1:10)") && err.contains("`/0|1` starts with a phasing mark"),
        "{err}"
    );
    // A trailing tab after the last sample: the line and what is wrong.
    let trailing = vcf(
        d,
        "trailing.vcf",
        &header.replace("\ts2\n", "\ts2\t\n"),
        &["1 10 . A G . . . GT 0/1 0/1"],
    );
    let err = convert_fails(&trailing, &d.join("t.zarr"), &[]);
    assert!(
        err.contains("line 4 (#CHROM)") && err.contains("trailing tab"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_budget_above_the_machine_is_capped() {
    let plan = plan_json(&data("all_fields.vcf"), &["--max-mem", "1000TiB"]);
    let limit = plan["memory_limit"]["bytes"]
        .as_u64()
        .expect("a memory limit");
    let budget = plan["budget"].as_u64().unwrap();
    assert!(budget <= limit, "budget {budget} above the limit {limit}");
    assert!(
        plan["budget_from"].as_str().unwrap().contains("capped"),
        "{}",
        plan["budget_from"]
    );
    // A budget under the limit is kept as given.
    let plan = plan_json(&data("all_fields.vcf"), &["--max-mem", "512MiB"]);
    assert_eq!(plan["budget"].as_u64(), Some(512 << 20));
}

/// VCF 3.3's `Number=-1` (samtools wrote it; `.` since 4.0) is read as `Number=.`
/// with one warning per field, where svar2 refused the header; an unknown Type is
/// refused naming the field and how to mend it (fifth hostile pass).
#[test]
fn number_minus_one_reads_as_dot_and_a_bad_type_names_its_field() {
    if !tools(
        "number_minus_one_reads_as_dot_and_a_bad_type_names_its_field",
        ORACLES,
    ) {
        return;
    }
    let dir = test_dir();
    let header = "##fileformat=VCFv4.1\n##contig=<ID=1>\n\
                  ##INFO=<ID=XS,Number=-1,Type=Integer,Description=\"x\">\n\
                  ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
                  ##FORMAT=<ID=PQ,Number=-1,Type=Integer,Description=\"p\">\n\
                  #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\n";
    let input = vcf(
        dir.path(),
        "old.vcf",
        header,
        &[
            "1 5 . A C . . XS=1,2,3 GT:PQ 0/1:3,0,4",
            "1 6 . A C . . XS=1 GT:PQ 0/1:3",
        ],
    );
    let store = dir.path().join("old.zarr");
    let err = convert_loud(&input, &store, &[]);
    for field in ["INFO/XS", "FORMAT/PQ"] {
        let said = format!("{field} has Number=-1");
        assert_eq!(err.matches(&said).count(), 1, "{said} once: {err}");
    }
    round_trips(&input, &store);
    let bad = vcf(
        dir.path(),
        "bad.vcf",
        &header.replace("ID=XS,Number=-1,Type=Integer", "ID=XS,Number=1,Type=Integr"),
        &["1 5 . A C . . XS=1 GT:PQ 0/1:3"],
    );
    let o = svar2()
        .args(["convert", "-q"])
        .arg(&bad)
        .arg(dir.path().join("bad.zarr"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("INFO/XS: Type=Integr is not Integer, Float, Flag, String or Character"),
        "{err}"
    );
}
