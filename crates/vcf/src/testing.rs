//! Test data and checks shared by this crate's tests, the workspace's integration
//! tests and the fuzz targets: a VCF generator that mixes every shape the direct parse
//! takes with records it must hand over, and the differential check of the two text
//! paths. Compiled only for tests and with the `testing` feature (the integration
//! tests and fuzz targets turn it on); not part of the API.

use crate::columns::RecordColumns;
use crate::direct::Direct;
use crate::extract::Extractor;
use crate::fastvcf::TextReader;
use crate::ragged::Batch;
use crate::source::VcfReader;
use std::path::Path;

/// A VCF mixing every shape the direct parse takes with records it must hand over
/// (odd Numbers, strings, flags, missing and short vectors, omitted trailing fields,
/// haploid and multi-digit calls; `END`, empty values, 10-digit integers, exponents,
/// `.5`, `+1`), seeded; for the tests of both paths (here and `tests/oracles.rs`).
/// `long_decimals` adds floats of up to eight decimals (bit-exact rounding; vcztools
/// prints three, so the round trip tests go without).
pub fn mixed_vcf(samples: usize, records: usize, seed: u64, long_decimals: bool) -> String {
    let mut rnd = crate::rng::rng(seed);
    let mut v = String::from(
        "##fileformat=VCFv4.3\n##contig=<ID=c1,length=100000000>\n##contig=<ID=c2>\n\
         ##FILTER=<ID=PASS,Description=\"ok\">\n##FILTER=<ID=q10,Description=\"low\">\n\
         ##INFO=<ID=AC,Number=A,Type=Integer,Description=\"x\">\n\
         ##INFO=<ID=AN,Number=1,Type=Integer,Description=\"x\">\n\
         ##INFO=<ID=AF,Number=A,Type=Float,Description=\"x\">\n\
         ##INFO=<ID=DB,Number=0,Type=Flag,Description=\"x\">\n\
         ##INFO=<ID=TAG,Number=.,Type=String,Description=\"x\">\n\
         ##INFO=<ID=CH,Number=1,Type=Character,Description=\"x\">\n\
         ##INFO=<ID=RC,Number=R,Type=Integer,Description=\"x\">\n\
         ##INFO=<ID=END,Number=1,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"x\">\n\
         ##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=GQ,Number=1,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=PL,Number=G,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=VAF,Number=A,Type=Float,Description=\"x\">\n\
         ##FORMAT=<ID=HQ,Number=2,Type=Integer,Description=\"x\">\n\
         ##FORMAT=<ID=FT,Number=.,Type=String,Description=\"x\">\n\
         ##FORMAT=<ID=FC,Number=1,Type=Character,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO",
    );
    if samples > 0 {
        v += "\tFORMAT";
    }
    for i in 0..samples {
        v += &format!("\ts{i}");
    }
    v += "\n";
    let formats = [
        "GT:AD:DP:GQ:PL",
        "GT:GQ:DP:AD:VAF:PL",
        "GT",
        "GT:FT:HQ",
        "DP:AD",
        "GT:FC:VAF",
        "GT:AD:DP:GQ:PL:FT",
    ];
    for r in 0..records {
        let chrom = if r < records / 2 { "c1" } else { "c2" };
        let pos = 100 + 7 * r;
        let n_alt = 1 + rnd(3) as usize;
        let alt: Vec<&str> = ["G", "T", "CA"][..n_alt].to_vec();
        let ints = |k: usize, rnd: &mut dyn FnMut(u64) -> u64| {
            (0..k)
                .map(|_| match rnd(12) {
                    0 => ".".to_string(),
                    1 => format!("-{}", 3 + rnd(50)), // -1, -2: VCF Zarr's missing, fill
                    _ => rnd(1000).to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let floats = |k: usize, missing: bool, rnd: &mut dyn FnMut(u64) -> u64| {
            (0..k)
                .map(|_| match rnd(10) {
                    0 if missing => ".".to_string(),
                    1 => format!("{}.{:03}", rnd(5), rnd(1000)),
                    2 => format!("-{}", 1 + rnd(9)),
                    3 if long_decimals => format!("0.{}", rnd(100_000_000)),
                    _ => format!("{}.{}", rnd(100), rnd(10)),
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut info: Vec<String> = Vec::new();
        if rnd(4) > 0 {
            // (An INFO vector of only `.` prints back as one `.`: none here.)
            info.push(format!("AC={}", ints(n_alt, &mut rnd).replace('.', "7")));
            info.push(format!("AN={}", rnd(5000)));
            info.push(format!("AF={}", floats(n_alt, false, &mut rnd)));
        }
        if rnd(3) == 0 {
            info.push("DB".into());
        }
        if rnd(4) == 0 {
            info.push(format!("TAG=t{},u{}", rnd(9), rnd(99)));
        }
        if rnd(6) == 0 {
            info.push(format!("CH={}", ["A", "b", "z"][rnd(3) as usize]));
        }
        if rnd(5) == 0 {
            let k = 1 + rnd(n_alt as u64 + 1) as usize;
            info.push(format!("RC={}", ints(k, &mut rnd).replace('.', "0")));
        }
        // Records the direct parse hands over.
        match rnd(25) {
            0 => info.push(format!("END={}", pos + 10)),
            1 => info.push("AN=".into()),
            2 => info.push("AN=1234567890".into()),
            3 => info.push("AF=1e-3".into()),
            4 => info.push("AN=+5".into()),
            _ => {}
        }
        let info = if info.is_empty() {
            ".".to_string()
        } else {
            info.join(";")
        };
        let fmt = formats[rnd(formats.len() as u64) as usize];
        let filter = ["PASS", ".", "q10", "PASS;q10"][rnd(4) as usize];
        let qual = match rnd(4) {
            0 => ".".to_string(),
            _ => format!("{}.{}", rnd(999), rnd(10)),
        };
        v += &format!(
            "{chrom}\t{pos}\t{}\tA\t{}\t{qual}\t{filter}\t{info}",
            if rnd(5) == 0 {
                format!("rs{r}")
            } else {
                ".".into()
            },
            alt.join(",")
        );
        if samples > 0 {
            v += "\t";
            v += fmt;
        }
        let n_gt = (n_alt + 1) * (n_alt + 2) / 2;
        let odd = rnd(30);
        for k in 0..samples {
            let mut vals: Vec<String> = Vec::new();
            for key in fmt.split(':') {
                let val = match key {
                    "GT" => match rnd(20) {
                        0 => "./.".into(),
                        1 => ".".into(),
                        2 => format!("{}", rnd(n_alt as u64 + 1)),
                        3 => format!("{}|{}|{}", rnd(2), rnd(2), rnd(2)),
                        4 if n_alt > 1 => "10/1".into(),
                        _ => format!(
                            "{}{}{}",
                            rnd(n_alt as u64 + 1),
                            ["/", "|"][rnd(2) as usize],
                            rnd(n_alt as u64 + 1)
                        ),
                    },
                    "AD" => match rnd(8) {
                        0 => ".".into(),
                        1 => ints(1, &mut rnd), // a short vector
                        _ => ints(n_alt + 1, &mut rnd),
                    },
                    "DP" | "GQ" => ints(1, &mut rnd),
                    "PL" => match rnd(10) {
                        0 => ".".into(),
                        _ => ints(n_gt, &mut rnd),
                    },
                    "VAF" => floats(n_alt, true, &mut rnd),
                    "HQ" => ints(1 + rnd(2) as usize, &mut rnd),
                    "FT" => ["PASS", "LowQual", "a,b", "."][rnd(4) as usize].into(),
                    "FC" => ["x", "Y", "."][rnd(3) as usize].into(),
                    _ => unreachable!(),
                };
                vals.push(val);
            }
            // Values the direct parse hands over, in the first sample now and then.
            let at = |key: &str| fmt.split(':').position(|k| k == key);
            if k == 0 {
                match (odd, at("DP"), at("GQ"), at("VAF")) {
                    // (An empty string value bcftools query drops: numbers only.)
                    (0, _, _, _) if !matches!(fmt.split(':').nth(1), None | Some("FT" | "FC")) => {
                        vals[1] = String::new()
                    }
                    (1, Some(i), _, _) => vals[i] = "1234567890".into(),
                    (2, _, _, Some(i)) => vals[i] = ".5".into(),
                    (3, _, Some(i), _) => vals[i] = "+3".into(),
                    (4, _, _, Some(i)) => vals[i] = "1e-3".into(),
                    _ => {}
                }
            }
            // Trailing fields omitted (`./.` alone), now and then.
            if vals.len() > 1 && rnd(15) == 0 {
                vals.truncate(1 + rnd(vals.len() as u64 - 1) as usize);
            }
            let call = vals.join(":");
            v += "\t";
            v += &call;
        }
        v += "\n";
    }
    v
}

/// Every line of the VCF text at `path` that the direct parse takes must be one the
/// line checks and htslib accept, giving the same columns (values, widths, stats),
/// loci and maxima; returns (lines taken directly, lines), or what differs first.
/// For the tests and the differential fuzz target (`fuzz/fuzz_targets/direct_parse.rs`).
pub fn both_paths(path: &Path) -> std::result::Result<(usize, usize), String> {
    let schema = VcfReader::open(path, 1).map_err(|e| e.to_string())?.schema;
    let columns = RecordColumns::new(&schema);
    let mut parse = Direct::for_schema(&schema);
    let mut t = match TextReader::open(path) {
        Ok(Some(t)) => t,
        _ => return Err("not VCF text".into()),
    };
    t.set_schema(&schema);
    let n = schema.samples.len();
    let mut ex_d = Extractor::for_header(t.header(), &schema, &columns);
    let mut ex_h = Extractor::for_header(t.header(), &schema, &columns);
    let (mut d, mut h) = (
        Batch::new(&columns.specs, n, 0),
        Batch::new(&columns.specs, n, 0),
    );
    let (mut direct, mut lines) = (0, 0);
    while t.next_line(path, lines as u64).unwrap_or(false) {
        let line = t.line().to_vec();
        let r = lines as u64;
        lines += 1;
        let shown = || String::from_utf8_lossy(&line[..line.len().min(300)]).into_owned();
        match ex_d.extract_direct_line(&mut parse, path, r, &line, t.lookups(), &mut d) {
            Ok(true) => {}
            // Not taken (or refused as htslib's path would refuse it): the batch is
            // left as it was only when not taken; start both afresh.
            _ => {
                d.reset(0);
                h.reset(0);
                continue;
            }
        }
        direct += 1;
        let (rec, fix) = t.parse_line(path, r).map_err(|e| {
            format!(
                "line {lines}: taken directly but refused by htslib's path: {e}\n{}",
                shown()
            )
        })?;
        ex_h.extract(path, r, rec, &mut h).map_err(|e| {
            format!(
                "line {lines}: taken directly but refused by htslib's path: {e}\n{}",
                shown()
            )
        })?;
        ex_h.apply_line_fix(&fix, &mut h);
        for (c, (a, b)) in d.columns.iter().zip(&h.columns).enumerate() {
            if format!("{a:?}") != format!("{b:?}") {
                let name = columns.source_of(c);
                return Err(format!(
                    "line {lines}, column {c} ({name:?}): direct {a:?}\nhtslib {b:?}\n{}",
                    shown()
                ));
            }
        }
        if d.loci != h.loci || (d.max_alleles, d.max_ploidy) != (h.max_alleles, h.max_ploidy) {
            return Err(format!("line {lines}: loci or maxima differ\n{}", shown()));
        }
        d.reset(0);
        h.reset(0);
    }
    Ok((direct, lines))
}

/// Writes `text` bgzipped to `path` with htslib's writer, ending a block after every
/// `lines_per_block` lines (as bcftools does, records not straddling blocks; 0: full
/// 64 KiB blocks, cut anywhere). For the tests of inputs cut short.
pub fn bgzip(path: &Path, text: &[u8], lines_per_block: usize) {
    use rust_htslib::bgzf::{CompressionLevel, Writer};
    use std::io::Write;
    let mut w = Writer::from_path_with_level(path, CompressionLevel::Default).expect("bgzf writer");
    if lines_per_block == 0 {
        w.write_all(text).expect("bgzf write");
        return;
    }
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        w.write_all(line).expect("bgzf write");
        if (i + 1) % lines_per_block == 0 {
            w.flush().expect("bgzf flush");
        }
    }
}

/// The file offsets where the BGZF blocks of `bytes` start (each block's BSIZE field).
pub fn bgzf_block_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0;
    while at + 18 <= bytes.len() {
        starts.push(at);
        at += u16::from_le_bytes([bytes[at + 16], bytes[at + 17]]) as usize + 1;
    }
    starts
}

#[cfg(test)]
mod both_paths {
    use std::path::Path;

    fn both(path: &Path) -> (usize, usize) {
        super::both_paths(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A FORMAT column refused half-way (a known key, then an unknown one) must not be
    /// taken for the next line's empty FORMAT column (found by fuzzing: it indexed past
    /// the per-key buffers).
    #[test]
    fn a_half_resolved_format_is_not_cached() {
        let dir = std::env::temp_dir().join(format!("svar2-direct-fmt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f.vcf");
        let text = "##fileformat=VCFv4.3\n##contig=<ID=chr1>\n\
            ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
            ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n\
            #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n\
            chr1\t1\t.\tA\tC\t.\t.\t.\tGT:DP:ZZ\t0/1:3:1\n\
            chr1\t2\t.\tA\tC\t.\t.\t.\t\t0/1:3\n\
            chr1\t3\t.\tA\tC\t.\t.\t.\tGT:DP\t0/1:3\n";
        std::fs::write(&p, text).unwrap();
        // Lines 1 and 2 are refused (htslib's path then errors on them); line 3 is taken.
        assert_eq!(both(&p), (1, 3));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_direct_parse_stores_what_htslib_does() {
        let dir = std::env::temp_dir().join(format!("svar2-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (samples, records, seed) in [(5, 400, 1), (1, 300, 2), (40, 200, 3), (0, 50, 4)] {
            let p = dir.join(format!("mixed{seed}.vcf"));
            std::fs::write(&p, super::mixed_vcf(samples, records, seed, true)).unwrap();
            let (direct, lines) = both(&p);
            assert_eq!(lines, records);
            eprintln!("{}: direct {direct} of {lines}", p.display());
            assert!(
                direct * 10 >= lines * 6,
                "{}: direct {direct} of {lines}",
                p.display()
            );
            assert!(
                direct < lines,
                "{}: the hand-over cases were all taken",
                p.display()
            );
        }
        let af = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/all_fields.vcf");
        let (direct, lines) = both(&af);
        assert!(direct > 0 && lines > 0);
        std::fs::remove_dir_all(&dir).ok();
    }
}
