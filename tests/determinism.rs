//! The same input gives byte-identical stores whatever the thread count, run to run.

mod common;
use common::*;

#[test]
fn digest_is_identical_across_runs_and_thread_counts() {
    let dir = test_dir();
    let src = dir.path().join("growth.vcf");
    // The growth fixture forces re-encoding of outgrown shards, the path most likely
    // to let scheduling leak into bytes; it needs only python3.
    if !sh(&format!(
        "python3 {} {} 3000",
        py("make_growth_vcf.py"),
        src.display()
    ))
    .status
    .success()
    {
        panic!("python3 is required to generate the fixture");
    }
    let geometry = GROWTH_GEOMETRY;
    let mut digests = Vec::new();
    for (input, threads) in [
        (src.clone(), "1"),
        (src.clone(), "2"),
        (src.clone(), "2"),
        (src.clone(), "4"),
        (data("all_fields.vcf"), "1"),
        (data("all_fields.vcf"), "3"),
    ] {
        let store = dir.path().join(format!("t{threads}.zarr"));
        let mut args = geometry.to_vec();
        args.extend(["--threads", threads]);
        convert(&input, &store, &args);
        digests.push(digest(&store));
    }
    assert_eq!(digests[0], digests[1], "threads 1 vs 2");
    assert_eq!(digests[1], digests[2], "two runs at 2 threads");
    assert_eq!(digests[0], digests[3], "threads 1 vs 4");
    assert_eq!(digests[4], digests[5], "all_fields threads 1 vs 3");
    assert_ne!(digests[0], digests[4], "different inputs differ");
}

#[test]
fn digest_changes_with_any_byte() {
    let dir = test_dir();
    let store = dir.path().join("d.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let before = digest(&store);
    let f = store.join("variant_position/zarr.json");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push(' ');
    std::fs::write(&f, text).unwrap();
    assert_ne!(before, digest(&store));
}

/// VCF text takes a direct parse for INFO `.` / FORMAT `GT` lines; BCF always goes
/// through htslib. The arrays must be byte-identical (only the root's header lines,
/// where bcftools records its own command, may differ).
#[test]
fn direct_text_parse_matches_htslib_parse() {
    if !tools("direct_text_parse_matches_htslib_parse", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let vcf = dir.path().join("mixed.vcf");
    // The shipped example, with every 5th record given an INFO value (htslib path),
    // and haploid, missing, multi-digit and mixed-phase calls sprinkled in.
    sh_ok(&format!(
        r###"bcftools view {src} | awk 'BEGIN{{OFS="\t"}}
           /^##fileformat/ {{print; print "##INFO=<ID=X,Number=1,Type=Integer,Description=\"x\">"; next}}
           /^#/ {{print; next}}
           {{ n++; if (n % 5 == 0) $8 = "X=" n;
              if (n % 7 == 0) $10 = ".";
              if (n % 11 == 0) $11 = "1";
              if (n % 13 == 0) $12 = "./.";
              if (n % 17 == 0) $13 = "0/1";
              if (n % 19 == 0) {{ $5 = $5 ",C,G,T,A,C,G,T,A,C"; $14 = "10|3" }}
              if (n % 23 == 0) $6 = "12.5";
              if (n % 29 == 0) $3 = "rs" n;
              print }}' > {vcf}"###,
        src = root().join("examples/small.vcf.gz").display(),
        vcf = vcf.display()
    ));
    let bcf = dir.path().join("mixed.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {} {}",
        bcf.display(),
        vcf.display()
    ));
    let (a, b) = (dir.path().join("a.zarr"), dir.path().join("b.zarr"));
    convert(&vcf, &a, &["--variants-chunk", "500"]);
    convert(&bcf, &b, &["--variants-chunk", "500"]);
    std::fs::remove_file(a.join("zarr.json")).unwrap();
    std::fs::remove_file(b.join("zarr.json")).unwrap();
    std::fs::write(a.join("zarr.json"), "{}").unwrap();
    std::fs::write(b.join("zarr.json"), "{}").unwrap();
    assert_eq!(digest(&a), digest(&b));
}

/// Schedule invariance: sub-contig readers, their count, the piece count and the
/// thread count never move a byte. The fixture has deliberately unequal contigs (else
/// any order is the same order) and multiallelic and long-allele records.
#[test]
fn readers_and_threads_do_not_move_bytes() {
    if !tools("readers_and_threads_do_not_move_bytes", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let vcf = dir.path().join("u.vcf");
    let spec = [
        "c1:2600", "c2:700", "c3:0", "c4:1900", "c5:90", "c6:1250", "c7:3",
    ];
    sh_ok(&format!(
        "python3 {} {} {}",
        py("make_unequal_vcf.py"),
        vcf.display(),
        spec.join(" ")
    ));
    let gz = dir.path().join("u.vcf.gz");
    let bcf = dir.path().join("u.bcf");
    sh_ok(&format!(
        "bcftools view -Oz -o {gz} {vcf} && bcftools index {gz} && bcftools view -Ob -o {bcf} {vcf} && bcftools index {bcf}",
        gz = gz.display(),
        vcf = vcf.display(),
        bcf = bcf.display()
    ));
    // The fixture is what it claims.
    let counts = sh_ok(&format!(
        "bcftools index -s {} | cut -f3 | sort -u | wc -l",
        gz.display()
    ));
    assert_eq!(counts.trim(), "6", "six distinct contig sizes");
    let multi = sh_ok(&format!("bcftools view -H -m3 {} | wc -l", gz.display()));
    assert!(
        multi.trim().parse::<u32>().unwrap() > 100,
        "multiallelic records"
    );
    let long = sh_ok(&format!(
        "bcftools query -i 'strlen(REF)>=300' -f '%POS\\n' {} | wc -l",
        gz.display()
    ));
    assert!(long.trim().parse::<u32>().unwrap() > 100, "long alleles");

    // (readers per contig, threads, contig order): threads buy concurrent contigs
    // (cc = threads x read share / readers, the share 1/2 without the probe);
    // `reverse` makes every straddling chunk arrive in parts, later part first.
    let settings = [
        ("1", "1", "planned"),
        ("2", "8", "planned"),
        ("3", "1", "planned"),
        ("5", "2", "file"),
        ("1", "4", "planned"),
        ("1", "8", "reverse"),
        ("1", "12", "planned"),
        ("2", "12", "reverse"),
    ];
    let geometry = ["--variants-chunk", "256", "--variants-shard", "1024"];
    let mut ccs = Vec::new();
    for input in [&gz, &bcf] {
        let mut digests = Vec::new();
        for (readers, threads, order) in settings {
            let out = dir.path().join(format!("r{readers}t{threads}{order}.zarr"));
            let mut args = vec![
                "--readers",
                readers,
                "--threads",
                threads,
                "--debug-contig-order",
                order,
            ];
            args.extend(geometry);
            convert(input, &out, &args);
            digests.push(((readers, threads, order), digest(&out)));
            let mut plan_args = vec!["--readers", readers, "--threads", threads];
            plan_args.extend(geometry);
            let json = plan_json(input, &plan_args);
            ccs.push(json["plan"]["cc"].as_u64().unwrap());
        }
        for (s, d) in &digests[1..] {
            assert_eq!(
                d,
                &digests[0].1,
                "{}: (readers, threads, order) {s:?} differs from one reader",
                input.display()
            );
        }
    }
    // The settings really ran contigs concurrently, up to six at once.
    assert_eq!(
        ccs.iter().max(),
        Some(&6),
        "concurrent contigs per setting: {ccs:?}"
    );
    assert!(ccs.iter().filter(|&&c| c > 1).count() >= 8, "{ccs:?}");
}

/// Late-growing layouts (re-encoded at the end) under concurrent contigs in reverse
/// order: rows finish out of order and are transcoded out of order, same bytes.
#[test]
fn concurrent_contigs_with_late_growth_do_not_move_bytes() {
    if !tools(
        "concurrent_contigs_with_late_growth_do_not_move_bytes",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let vcf = growth_vcf(dir.path());
    let gz = bgzip_indexed(&vcf);
    let mut digests = Vec::new();
    for (threads, order) in [("1", "planned"), ("4", "reverse"), ("4", "planned")] {
        let out = dir.path().join(format!("t{threads}{order}.zarr"));
        let mut args = vec![
            "--readers",
            "1",
            "--threads",
            threads,
            "--debug-contig-order",
            order,
        ];
        args.extend(GROWTH_GEOMETRY);
        convert(&gz, &out, &args);
        digests.push(digest(&out));
    }
    assert_eq!(digests[0], digests[1], "reverse order, two contigs at once");
    assert_eq!(digests[0], digests[2], "planned order, two contigs at once");
}

/// A count that disagrees with the index is a clear error, not a silently short store.
#[test]
fn stale_index_is_an_error() {
    if !tools("stale_index_is_an_error", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let (a, b) = (dir.path().join("a.vcf"), dir.path().join("b.vcf"));
    sh_ok(&format!(
        "python3 {} {} c1:300 c2:200",
        py("make_unequal_vcf.py"),
        a.display()
    ));
    sh_ok(&format!(
        "python3 {} {} c1:250 c2:200",
        py("make_unequal_vcf.py"),
        b.display()
    ));
    let gz = dir.path().join("x.vcf.gz");
    // Index one file, then replace it with another: the index is now stale.
    sh_ok(&format!(
        "bcftools view -Oz -o {gz} {a} && bcftools index {gz} && bcftools view -Oz -o {gz}.tmp {b} && mv {gz}.tmp {gz}",
        gz = gz.display(),
        a = a.display(),
        b = b.display()
    ));
    let err = convert_fails(&gz, &dir.path().join("o.zarr"), &["--readers", "2"]);
    assert!(
        err.contains("stale") && err.contains("bcftools index -f"),
        "{err}"
    );
}

/// A bgzipped VCF without an index, read as one stream: from three threads on its
/// lines are parsed ahead on the encoding threads (`convert::ahead`) and its blocks
/// inflated on several (`vcf::inflate`). Lines the direct parse leaves to htslib (a
/// float with an exponent, one just before the last line), a FORMAT that changes from
/// line to line, a genotype naming an allele the record lacks (a warning, once), a
/// last line without `\n`: the same store and the same warning as reading line by line; and an unsorted record or a damaged block gives
/// the same message, naming the same record.
#[test]
fn lines_parsed_ahead_read_as_line_by_line() {
    if !tools("lines_parsed_ahead_read_as_line_by_line", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let text = dir.path().join("ahead.vcf");
    sh_ok(&format!(
        r###"bcftools view {src} | awk 'BEGIN{{OFS="\t"}}
           /^##fileformat/ {{print; print "##INFO=<ID=X,Number=1,Type=Integer,Description=\"x\">";
                             print "##INFO=<ID=F,Number=1,Type=Float,Description=\"f\">";
                             print "##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">"; next}}
           /^#/ {{print; next}}
           {{ n++; if (n % 5 == 0) $8 = "X=" n;
              if (n % 13 == 0) $12 = "./.";
              if (n % 19 == 0) {{ $5 = $5 ",C,G,T"; $14 = "3|1" }}
              if (n % 31 == 0 && n % 19 != 0) $10 = "0|3";
              if (n % 37 == 0) {{ $9 = "GT:DP"; for (i = 10; i <= NF; i++) $i = $i ":" (i * n % 97) }}
              if (n % 97 == 0 || n == last - 1) $8 = "F=1.5e-3";
              print }}' last=$(bcftools view -H {src} | wc -l) > {text}"###,
        src = root().join("examples/small.vcf.gz").display(),
        text = text.display()
    ));
    // The last line without its newline, then bgzipped with no index.
    sh_ok(&format!(
        "truncate -s -1 {t} && bgzip -c {t} > {t}.gz",
        t = text.display()
    ));
    let gz = dir.path().join("ahead.vcf.gz");
    assert!(!dir.path().join("ahead.vcf.gz.csi").exists());
    let geometry = ["--variants-chunk", "100", "--variants-shard", "400"];
    let run = |input: &std::path::Path, threads: &str| {
        let out = dir.path().join(format!("t{threads}.zarr"));
        let mut args = vec!["convert", "--force", "--threads", threads];
        args.extend(geometry);
        let o = svar2().args(args).arg(input).arg(&out).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        let said: Vec<String> = stderr
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("error"))
            .map(|l| l.split_once("WARN").map_or(l, |(_, w)| w).to_string())
            .collect();
        (o.status.success(), out, said)
    };
    // Two threads: lines inflated ahead by one thread, parsed on the reading thread.
    let (ok, serial, warned) = run(&gz, "2");
    assert!(ok, "{warned:?}");
    assert_eq!(warned.len(), 1, "one warning: {warned:?}");
    assert!(warned[0].contains("record 31 "), "{warned:?}");
    let want = digest(&serial);
    for threads in ["3", "8"] {
        let (ok, store, said) = run(&gz, threads);
        assert!(ok, "{said:?}");
        assert_eq!(said, warned, "--threads {threads}");
        assert_eq!(digest(&store), want, "--threads {threads}");
    }

    // Record 2001 moved after record 2004: unsorted, named as reading line by line
    // names it.
    let unsorted = dir.path().join("unsorted.vcf.gz");
    sh_ok(&format!(
        "awk '/^#/ {{print; next}} {{n++}} n == 2001 {{held = $0; next}} {{print}} n == 2004 {{print held}}' {t} | bgzip > {u}",
        t = text.display(),
        u = unsorted.display()
    ));
    // A byte flipped in a block in the middle of the file.
    let damaged = dir.path().join("damaged.vcf.gz");
    let mut bytes = std::fs::read(&gz).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(&damaged, bytes).unwrap();
    for (input, what) in [(&unsorted, "not sorted"), (&damaged, "corrupt")] {
        let (ok, _, serial) = run(input, "2");
        assert!(!ok && serial.iter().any(|l| l.contains(what)), "{serial:?}");
        for threads in ["3", "8"] {
            let (ok, _, said) = run(input, threads);
            assert!(!ok);
            assert_eq!(said, serial, "{}: --threads {threads}", input.display());
        }
    }
}

/// One contig read by several readers: every piece a reader reads is about the
/// plan's `piece_rows`, so it can read the whole of it while the piece before is
/// joined (pieces a reader's quarter of the contig long let only the reader of the
/// piece being joined work, the others stopped at their first rows); the store is
/// the one reader's.
#[test]
fn readers_of_one_contig_read_pieces_they_hold_whole() {
    if !tools(
        "readers_of_one_contig_read_pieces_they_hold_whole",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let dir = test_dir();
    let records = 90_000u64;
    let rows: Vec<String> = (0..records)
        .map(|i| {
            format!(
                "c1\t{}\t.\tA\tG\t.\tPASS\t.\tGT\t0|1\t1|1\t0|0",
                1000 + i * 700
            )
        })
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let meta = "##fileformat=VCFv4.2\n##contig=<ID=c1,length=90000000>\n\
                ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n";
    let gz = vcf_of_rows(dir.path(), "one", meta, &["A", "B", "C"], &rows);
    let args = ["--readers", "2", "--variants-chunk", "1000"];
    let piece_rows = plan_json(&gz, &args)["plan"]["piece_rows"]
        .as_u64()
        .unwrap();
    // Four pieces a reader would each be longer than a piece may be here.
    assert!(records / 8 > piece_rows * 3 / 2, "piece_rows {piece_rows}");
    let one = dir.path().join("one.zarr");
    convert(&gz, &one, &["--readers", "1", "--variants-chunk", "1000"]);
    let out = dir.path().join("two.zarr");
    let run = svar2()
        .env("RUST_LOG", "svar2_convert::schedule=debug")
        .arg("convert")
        .args(args)
        .arg(&gz)
        .arg(&out)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{log}");
    let pieces: Vec<u64> = log
        .lines()
        .filter(|l| l.contains("piece read"))
        .map(|l| {
            let at = l.find("records=").expect("records=") + "records=".len();
            let n: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
            n.parse().unwrap()
        })
        .collect();
    assert_eq!(pieces.iter().sum::<u64>(), records, "{log}");
    assert!(
        pieces.len() as u64 >= records / piece_rows,
        "{} pieces of at most {piece_rows}: {pieces:?}",
        pieces.len()
    );
    assert!(
        pieces.iter().all(|&n| n <= piece_rows * 3 / 2),
        "{piece_rows}: {pieces:?}"
    );
    assert_eq!(digest(&out), digest(&one));
}

/// Thousands of contigs in one-record rows, read by many readers: 40,000 pieces
/// whose channels, each made with room for a whole piece, were all made before
/// reading started (24 GB at --variants-chunk 1; hostile pass). A channel is now made
/// when a reader takes its piece: the run stays under its --max-mem, and the store
/// is one reader's.
#[test]
fn many_small_pieces_stay_under_max_mem() {
    if !tools("many_small_pieces_stay_under_max_mem", &[Tool::Bcftools]) {
        return;
    }
    let dir = test_dir();
    let mut meta = String::from("##fileformat=VCFv4.2\n");
    let mut rows = Vec::new();
    for c in 0..2000 {
        meta += &format!("##contig=<ID=c{c},length=1000000>\n");
        for i in 0..3 {
            rows.push(format!(
                "c{c}\t{}\t.\tA\tG\t.\tPASS\t.\tGT\t0|1\t1|1",
                100 + i * 20_000
            ));
        }
    }
    meta += "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n";
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let gz = vcf_of_rows(dir.path(), "many", &meta, &["A", "B"], &rows);
    let geometry = ["--variants-chunk", "1", "--variants-shard", "64"];
    let one = dir.path().join("one.zarr");
    let mut args = vec!["--readers", "1", "--threads", "1"];
    args.extend(geometry);
    convert(&gz, &one, &args);
    let out = dir.path().join("nine.zarr");
    let report = sh_ok(&format!(
        "ulimit -v 4000000; /usr/bin/time -v {} convert -q --readers 9 --threads 16 \
         --max-mem 1GiB {} {} {} 2>&1 >/dev/null",
        env!("CARGO_BIN_EXE_svar2"),
        geometry.join(" "),
        gz.display(),
        out.display()
    ));
    let mib = max_rss_kib(&report) as f64 / 1024.0;
    assert!(mib <= 1024.0, "peak {mib:.0} MiB over --max-mem 1GiB");
    assert_eq!(digest(&out), digest(&one));
}
