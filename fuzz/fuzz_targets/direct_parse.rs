//! Differential: every record line the direct text parse takes must be one the line
//! checks and htslib accept, with the same columns (values, widths, stats) — so a
//! store never depends on which path read a line. Lines under a header declaring
//! every field type and Number.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;

const HEADER: &str = "##fileformat=VCFv4.3
##contig=<ID=chr1,length=1000000>
##contig=<ID=2>
##FILTER=<ID=q10,Description=\"q\">
##INFO=<ID=DP,Number=1,Type=Integer,Description=\"d\">
##INFO=<ID=AC,Number=A,Type=Integer,Description=\"a\">
##INFO=<ID=RC,Number=R,Type=Integer,Description=\"r\">
##INFO=<ID=AF,Number=A,Type=Float,Description=\"a\">
##INFO=<ID=FL,Number=0,Type=Flag,Description=\"f\">
##INFO=<ID=S,Number=.,Type=String,Description=\"s\">
##INFO=<ID=C,Number=1,Type=Character,Description=\"c\">
##INFO=<ID=END,Number=1,Type=Integer,Description=\"e\">
##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">
##FORMAT=<ID=GL,Number=G,Type=Float,Description=\"l\">
##FORMAT=<ID=VAF,Number=A,Type=Float,Description=\"v\">
##FORMAT=<ID=HQ,Number=2,Type=Integer,Description=\"h\">
##FORMAT=<ID=FT,Number=.,Type=String,Description=\"t\">
##FORMAT=<ID=FC,Number=1,Type=Character,Description=\"c\">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\ts3
";

fuzz_target!(|data: &[u8]| {
    if data.contains(&b'#') || data.contains(&0) {
        return; // header lines are the header's business
    }
    let dir = std::env::temp_dir().join(format!("svar2-fuzz-direct-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("in.vcf");
    let mut f = std::fs::File::create(&path).expect("temp file");
    f.write_all(HEADER.as_bytes()).expect("write");
    f.write_all(data).expect("write");
    drop(f);
    if let Err(e) = svar2_vcf::testing::both_paths(&path) {
        if e != "not VCF text" {
            panic!("{e}");
        }
    }
});
