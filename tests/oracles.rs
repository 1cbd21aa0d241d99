//! Correctness against tools nobody here wrote: the VCF round trip through
//! `svar2 view` checked by bcftools (and plain vcztools where it can read the store),
//! the arrays bio2zarr writes, and readability by zarr-python and tensorstore.

mod common;
use common::*;
use std::path::Path;

/// Round trip of every form of a fixture under a geometry, whole file and regions.
fn round_trip(src: &Path, name: &str, geometry: &[&str], regions: &[&str]) {
    let dir = test_dir();
    for input in forms(src, dir.path(), name) {
        let store = dir.path().join("out.zarr");
        convert(&input, &store, geometry);
        let expected = query_all(&input, None);
        for kind in ["v", "z", "b"] {
            assert_same_lines(
                &format!("{} round trip, -O{kind}", input.display()),
                &expected,
                &query_view_as(&input, &store, kind),
            );
        }
        if input.extension().is_some_and(|e| e == "vcf") {
            continue; // bcftools needs an index for regions
        }
        for r in regions {
            let expected = query_all(&input, Some(r));
            assert!(!expected.is_empty(), "region {r} selects records");
            assert_same_lines(
                &format!("{} region {r}", input.display()),
                &expected,
                &query_store(&input, &store, Some(r)),
            );
        }
    }
}

#[test]
fn round_trip_every_field_type_and_number() {
    if !tools("round_trip_every_field_type_and_number", &[Tool::Bcftools]) {
        return;
    }
    let regions = ["chr1:150-450", "chrX:1500-3000,chr3:1-5", "chr1:500"];
    round_trip(
        &data("all_fields.vcf"),
        "all_fields",
        TINY_GEOMETRY,
        &regions,
    );
    round_trip(&data("all_fields.vcf"), "all_fields", &[], &regions);
}

/// A FORMAT-heavy file mixing every shape the direct text parse takes with records it
/// hands to htslib: the VCF (direct parse), bgzipped and BCF (htslib) forms all round
/// trip through `svar2 view` to what bcftools reads from the input, and equal bio2zarr.
#[test]
fn round_trip_format_heavy_mixed_file() {
    if !tools(
        "round_trip_format_heavy_mixed_file",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let src = dir.path().join("mixed_src.vcf");
    std::fs::write(&src, svar2_vcf::testing::mixed_vcf(6, 240, 7, false)).unwrap();
    round_trip(&src, "mixed", TINY_GEOMETRY, &["c1:100-400", "c2"]);
    let [_, gz, bcf] = forms(&src, dir.path(), "mixed2");
    assert_same_as_bio2zarr(&gz, TINY_GEOMETRY);
    assert_same_as_bio2zarr(&bcf, &[]);
}

/// GT listed in FORMAT after another key and given by no sample (every sample stops
/// before it): htslib stores it without values (reading it through
/// `bcf_get_format_values` would exit the process; found by fuzzing). It round trips
/// as missing, in every form.
#[test]
fn gt_given_by_no_sample_round_trips() {
    if !tools("gt_given_by_no_sample_round_trips", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let src = dir.path().join("nogt_src.vcf");
    let header = "##fileformat=VCFv4.3\n##contig=<ID=chr1,length=1000>\n\
        ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
        ##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">\n\
        #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n";
    let records = "chr1\t10\t.\tA\tC\t.\t.\t.\tGT:AD\t0/1:1,2\t1/1:0,3\n\
        chr1\t20\t.\tT\tC\t.\t.\t.\tAD:GT\t1,2\t3,4\n\
        chr1\t30\t.\tG\tA\t.\t.\t.\tGT:AD\t0|0:5,0\t./.:.\n";
    std::fs::write(&src, format!("{header}{records}")).unwrap();
    // Read from the VCF or its BCF, that GT has no values: bcftools prints `.`; the
    // store keeps missing calls, printed `./.` like any other (see
    // tests/py/as_stored.py). bcftools' own VCF.gz of it writes `.` out, kept as is.
    let filled = dir.path().join("nogt_filled.vcf");
    let records_filled = records.replace("AD:GT\t1,2\t3,4", "GT:AD\t./.:1,2\t./.:3,4");
    std::fs::write(&filled, format!("{header}{records_filled}")).unwrap();
    for input in forms(&src, dir.path(), "nogt") {
        let store = dir.path().join("out.zarr");
        convert(&input, &store, &[]);
        let gz = input.to_string_lossy().ends_with(".vcf.gz");
        let want = query_all(if gz { &input } else { &filled }, None);
        for kind in ["v", "z", "b"] {
            let got = query_view_as(&input, &store, kind);
            assert_same_lines(&format!("{} -O{kind}", input.display()), &want, &got);
        }
    }
}

#[test]
fn round_trip_when_layouts_grow_late() {
    if !tools("round_trip_when_layouts_grow_late", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let src = growth_vcf(dir.path());
    let geometry = GROWTH_GEOMETRY;
    round_trip(
        &src,
        "growth",
        &geometry,
        &["1:10000-30000", "2:1-5000,2:60000-70000"],
    );
}

/// vcztools 0.2.0 misreads stores whose shards hold several inner chunks (it indexes
/// `arr.blocks` by shard while sizing blocks by the inner chunk); with one inner chunk
/// per shard it reads svar2's store as an independent reader.
#[test]
fn unpatched_vcztools_reads_one_chunk_per_shard_layout() {
    if !tools(
        "unpatched_vcztools_reads_one_chunk_per_shard_layout",
        &[Tool::Bcftools, Tool::Vcztools],
    ) {
        return;
    }
    let dir = test_dir();
    let src = growth_vcf(dir.path());
    let [_, gz, _] = forms(&src, dir.path(), "growth");
    let store = dir.path().join("one.zarr");
    convert(&gz, &store, &ONE_CHUNK_PER_SHARD);
    assert_same_lines(
        "unpatched vcztools",
        &query_all(&gz, None),
        &query_vcztools(&gz, &store, None),
    );
    let r = "1:10000-30000";
    assert_same_lines(
        "unpatched region",
        &query_all(&gz, Some(r)),
        &query_vcztools(&gz, &store, Some(r)),
    );
}

#[test]
fn same_arrays_as_bio2zarr() {
    if !tools(
        "same_arrays_as_bio2zarr",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let [_, gz, bcf] = forms(&data("all_fields.vcf"), dir.path(), "all_fields");
    assert_same_as_bio2zarr(&gz, TINY_GEOMETRY);
    assert_same_as_bio2zarr(&bcf, &[]);
    let src = growth_vcf(dir.path());
    let [_, ggz, _] = forms(&src, dir.path(), "growth");
    assert_same_as_bio2zarr(
        &ggz,
        &["--variants-chunk", "100", "--variants-shard", "400"],
    );
}

/// A polyploid call whose separators differ is phased as its second allele is, as
/// bio2zarr (through cyvcf2) stores it: `0|1/1` phased, `0/1|1` not; read from VCF
/// text (the direct parse and htslib's) and from BCF.
#[test]
fn mixed_phase_calls_as_bio2zarr() {
    if !tools(
        "mixed_phase_calls_as_bio2zarr",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let src = dir.path().join("mixed_source.vcf");
    let mut text = String::from(
        "##fileformat=VCFv4.3\n##contig=<ID=1,length=1000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n\
         ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC\tD\tE\n",
    );
    text += "1\t10\t.\tA\tC\t.\t.\t.\tGT\t0/1|1\t0|1/1\t0|1|1\t0/1/1\t.|./1\n";
    text += "1\t20\t.\tA\tC,G\t.\t.\t.\tGT:DP\t0/1|2:3\t2|1/0:4\t1:5\t0|1:6\t0/1:7\n";
    text += "1\t30\t.\tA\tC\t.\t.\t.\tGT\t0/1/1|1\t1|0/0/1\t.\t1|1\t./.\n";
    std::fs::write(&src, text).unwrap();
    let [_, gz, bcf] = forms(&src, dir.path(), "mixed");
    assert_same_as_bio2zarr(&gz, &[]);
    assert_same_as_bio2zarr(&bcf, &[]);
}

/// bio2zarr's stores of an input without records (its chunks `[0, 6]`: no extent
/// along the variants axis), Zarr v2 and v3, are read: inspect, verify and view take
/// them, and view gives the header and no record, as bcftools does of the input.
#[test]
fn a_bio2zarr_store_without_records_is_read() {
    if !tools(
        "a_bio2zarr_store_without_records_is_read",
        &[Tool::Bcftools, Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let meta = "##fileformat=VCFv4.3\n##contig=<ID=1,length=1000>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n";
    let gz = vcf_of_rows(d, "empty", meta, &["A", "B"], &[]);
    // Zarr v2 (bio2zarr's default: `"chunks": [0, 6]`) and v3.
    for format in [2, 3] {
        let store = d.join(format!("bio2zarr{format}.zarr"));
        sh_ok(&format!(
            "vcf2zarr convert -Q --zarr-format {format} -p 1 {} {} >/dev/null 2>&1",
            gz.display(),
            store.display()
        ));
        for cmd in ["inspect", "verify"] {
            let o = svar2().arg(cmd).arg(&store).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "v{format} {cmd}: {err}");
        }
        let o = svar2().arg("view").arg(&store).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "v{format}: {err}");
        let text = String::from_utf8_lossy(&o.stdout);
        let last = text.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("#CHROM") && last.ends_with("FORMAT\tA\tB"),
            "{text}"
        );
    }
}

/// sgkit (0.10.0, with zarr>=3 over its pin) loads a svar2 store and computes the same
/// variant and sample statistics as on bio2zarr's store of the input: a FORMAT-heavy
/// call set (missing calls, multiallelic sites) in svar2's default sharded layout.
#[test]
fn sgkit_statistics_equal_bio2zarrs() {
    if !tools(
        "sgkit_statistics_equal_bio2zarrs",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::Sgkit],
    ) {
        return;
    }
    let dir = test_dir();
    let d = dir.path();
    let vcf = format_call_set(d, "fmt", 60, 700, "GT:AD:DP:GQ", 2);
    let (ours, theirs) = (d.join("ours.zarr"), d.join("b2z.vcz"));
    let out = svar2()
        .args([
            "convert",
            "-q",
            "--variants-chunk",
            "100",
            "--variants-shard",
            "300",
        ])
        .arg(&vcf)
        .arg(&ours)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sh_ok(&format!(
        "BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 1 {} {} >/dev/null 2>&1",
        vcf.display(),
        theirs.display()
    ));
    let said = sh_ok(&format!(
        "{} {} {} {}",
        sgkit_python(),
        py("sgkit_stats.py"),
        ours.display(),
        theirs.display()
    ));
    assert!(said.starts_with("same"), "{said}");
}

#[test]
fn shared_corpus_matches_bio2zarr_and_round_trips() {
    let Some(small) = need_corpus(
        "shared_corpus_matches_bio2zarr_and_round_trips",
        "sim_small.vcf.gz",
    ) else {
        return;
    };
    if !tools(
        "shared_corpus_matches_bio2zarr_and_round_trips",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    assert_same_as_bio2zarr(&small, &[]);
    let dir = test_dir();
    let store = dir.path().join("s.zarr");
    convert(
        &small,
        &store,
        &[
            "--variants-chunk",
            "500",
            "--samples-chunk",
            "30",
            "--samples-shard",
            "60",
        ],
    );
    let expected = query_all(&small, None);
    for kind in ["v", "z", "b"] {
        assert_same_lines(
            &format!("sim_small round trip, -O{kind}"),
            &expected,
            &query_view_as(&small, &store, kind),
        );
    }
    let r = "chr1:10000-200000,chr3:1-50000";
    assert_same_lines(
        "sim_small regions",
        &query_all(&small, Some(r)),
        &query_store(&small, &store, Some(r)),
    );
}

#[test]
fn zarr_python_and_tensorstore_read_every_array() {
    if !tools(
        "zarr_python_and_tensorstore_read_every_array",
        &[Tool::ZarrPython, Tool::Tensorstore],
    ) {
        return;
    }
    let dir = test_dir();
    let store = dir.path().join("r.zarr");
    convert(&data("all_fields.vcf"), &store, TINY_GEOMETRY);
    let out = sh_ok(&format!(
        "python3 {} {}",
        py("open_everywhere.py"),
        store.display()
    ));
    // (contig_length included: -1 for chrUn, which has no length in the header.)
    assert!(out.contains("zarr-python read 46 arrays"), "{out}");
    assert!(out.contains("tensorstore read 33 numeric arrays"), "{out}");
}

/// Many VCFs in the wild declare no ##contig lines; contigs then come from the
/// records, in file order (as htslib, and so bio2zarr, sees them).
#[test]
fn header_without_contig_lines() {
    if !tools(
        "header_without_contig_lines",
        &[Tool::Bcftools, Tool::Bio2zarr, Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let src = dir.path().join("nocontig_src.vcf");
    let text = std::fs::read_to_string(data("all_fields.vcf")).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("##contig"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&src, text).unwrap();
    // BCF cannot be written without a contig dictionary: VCF and tabix'd VCF.gz only.
    let gz = dir.path().join("nocontig.vcf.gz");
    sh_ok(&format!(
        "bgzip -c {} > {gz} && tabix -p vcf {gz}",
        src.display(),
        gz = gz.display()
    ));
    for input in [&src, &gz] {
        let store = dir.path().join("nc.zarr");
        convert(input, &store, TINY_GEOMETRY);
        assert_same_lines(
            "no ##contig round trip",
            &query_all(input, None),
            &query_store(input, &store, None),
        );
    }
    assert_same_as_bio2zarr(&gz, &[]);
}
