//! The VCF record path: arbitrary record lines under a header that declares every
//! field type, read by the same reader and extractor a conversion uses (the direct
//! text parse, the line checks and htslib's parse behind them). Whatever the lines,
//! each record is stored or refused with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;
use svar2_vcf::ragged::Batch;
use svar2_vcf::columns::RecordColumns;
use svar2_vcf::source::VcfReader;

const HEADER: &str = "##fileformat=VCFv4.3
##contig=<ID=chr1,length=1000000>
##contig=<ID=2>
##FILTER=<ID=q10,Description=\"q\">
##INFO=<ID=DP,Number=1,Type=Integer,Description=\"d\">
##INFO=<ID=AF,Number=A,Type=Float,Description=\"a\">
##INFO=<ID=FL,Number=0,Type=Flag,Description=\"f\">
##INFO=<ID=S,Number=.,Type=String,Description=\"s\">
##INFO=<ID=C,Number=2,Type=Character,Description=\"c\">
##INFO=<ID=END,Number=1,Type=Integer,Description=\"e\">
##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description=\"a\">
##FORMAT=<ID=GL,Number=G,Type=Float,Description=\"l\">
##FORMAT=<ID=FT,Number=1,Type=String,Description=\"t\">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2
";

fuzz_target!(|data: &[u8]| {
    if data.contains(&b'#') {
        return; // header lines are the header's business, not the record path's
    }
    let dir = std::env::temp_dir().join(format!("svar2-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("in.vcf");
    let mut f = std::fs::File::create(&path).expect("temp file");
    f.write_all(HEADER.as_bytes()).expect("write");
    f.write_all(data).expect("write");
    drop(f);
    let Ok(mut reader) = VcfReader::open(&path, 1) else {
        return;
    };
    let columns = RecordColumns::new(&reader.schema);
    let mut ex = reader.extractor(&columns);
    let mut batch = Batch::new(&columns.specs, reader.schema.samples.len(), 0);
    let mut n = 0;
    while let Ok(true) = reader.read_into(&mut ex, &mut batch, n) {
        n += 1;
        if n > 10_000 {
            break;
        }
    }
});
