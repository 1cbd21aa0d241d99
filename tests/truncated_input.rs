//! Inputs cut short (an interrupted download or copy) are never converted quietly:
//! a bgzipped VCF or BCF without the BGZF end-of-file block is an error naming the
//! file, the records read and the remedy — read as a file, through its index with
//! sub-contig readers, or from standard input — unless `--allow-truncated` asks for
//! what it holds (then one warning, and a record the cut fell inside is dropped). A
//! VCF cut in the middle of a line says so, and record messages name the right
//! record in plain text.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use svar2_vcf::testing::{bgzf_block_starts, bgzip};

/// A VCF of `n` records on chr1 (POS 100, 101, ...) with 3 samples (GT and DP).
fn vcf_text(n: usize) -> Vec<u8> {
    contigs_text(&[("chr1", n)], 1_000_000, 1)
}

/// [`vcf_text`]'s records over `contigs` (name, records), each contig `length` long,
/// records `step` apart.
fn contigs_text(contigs: &[(&str, usize)], length: u64, step: usize) -> Vec<u8> {
    let mut t = String::from("##fileformat=VCFv4.3\n");
    for (name, _) in contigs {
        t += &format!("##contig=<ID={name},length={length}>\n");
    }
    t += "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
          ##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"d\">\n\
          #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC\n";
    for &(chrom, n) in contigs {
        for i in 0..n {
            t += &format!(
                "{chrom}\t{}\t.\tA\tC\t.\t.\t.\tGT:DP\t0/1:{}\t1|1:{}\t./.:.\n",
                100 + i * step,
                i % 97,
                1000 + i
            );
        }
    }
    t.into_bytes()
}

fn run(args: &[&str], paths: &[&Path], stdin: Option<&[u8]>) -> Output {
    let mut cmd = svar2();
    cmd.arg("convert").args(args).args(paths);
    let Some(bytes) = stdin else {
        return cmd.output().unwrap();
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let _ = child.stdin.take().unwrap().write_all(bytes);
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The record count of the closing summary line (`svar2: N records in ...`).
fn records(o: &Output) -> u64 {
    let err = stderr(o);
    assert!(o.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("svar2: ") && l.contains(" records in "))
        .unwrap_or_else(|| panic!("no summary line in {err}"));
    line["svar2: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The refusal: exit 1, one line naming `name`, the records read, the missing
/// end-of-file block, the remedy and the opt-in.
fn assert_refused(o: &Output, name: &str, read: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for want in [
        name,
        read,
        "cut short",
        "BGZF end-of-file block",
        "re-download or re-create it",
        "--allow-truncated",
    ] {
        assert!(err.contains(want), "`{want}` not in {err}");
    }
}

/// `text` bgzipped to `dir/name` as bcftools writes it (blocks end at line ends), and
/// the same file cut at the block boundary nearest its middle, with the records the
/// kept blocks hold.
fn cut_at_block(dir: &Path, text: &[u8]) -> (PathBuf, PathBuf, u64) {
    let whole = dir.join("whole.vcf.gz");
    bgzip(&whole, text, 40);
    let bytes = std::fs::read(&whole).unwrap();
    let starts = bgzf_block_starts(&bytes);
    let at = starts[starts.len() / 2];
    let cut = dir.join("cut.vcf.gz");
    std::fs::write(&cut, &bytes[..at]).unwrap();
    let inflated = inflated_len(&bytes[..at]);
    let kept = text[..inflated]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
        .count() as u64
        - u64::from(text[inflated - 1] != b'\n'); // a line the cut fell inside
    (whole, cut, kept)
}

/// The text bytes whole BGZF blocks inflate to (the sum of their ISIZE fields).
fn inflated_len(bytes: &[u8]) -> usize {
    let starts = bgzf_block_starts(bytes);
    let mut ends: Vec<usize> = starts[1..].to_vec();
    ends.push(bytes.len());
    ends.iter()
        .map(|&e| u32::from_le_bytes(bytes[e - 4..e].try_into().unwrap()) as usize)
        .sum()
}

#[test]
fn a_bgzipped_file_cut_at_a_block_boundary_is_an_error_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = vcf_text(2000);
    let (whole, cut, kept) = cut_at_block(d, &text);
    assert!(kept > 100 && kept < 2000, "{kept}");
    let out = d.join("o.zarr");
    assert_eq!(records(&run(&["--force"], &[&whole, &out], None)), 2000);

    let refused = d.join("refused.zarr");
    let o = run(&[], &[&cut, &refused], None);
    assert_refused(&o, "cut.vcf.gz", "before reading any record");
    assert!(!refused.exists());

    let o = run(&["--force", "--allow-truncated"], &[&cut, &out], None);
    assert_eq!(records(&o), kept);
    assert_eq!(stderr(&o).matches("cut short").count(), 1, "{}", stderr(&o));
    // At one thread the text is read by htslib's line reader, not the inflate thread.
    let o = run(
        &["--force", "--allow-truncated", "--threads", "1"],
        &[&cut, &out],
        None,
    );
    assert_eq!(records(&o), kept);
}

/// 3,000 records bgzipped in full 64 KiB blocks (`d/whole.vcf.gz`): the text, the
/// file's bytes and where each block starts (at least three).
fn in_full_blocks(d: &Path) -> (Vec<u8>, Vec<u8>, Vec<usize>) {
    let text = vcf_text(3000);
    let whole = d.join("whole.vcf.gz");
    bgzip(&whole, &text, 0);
    let bytes = std::fs::read(&whole).unwrap();
    let starts = bgzf_block_starts(&bytes);
    assert!(starts.len() > 2, "{starts:?}");
    (text, bytes, starts)
}

#[test]
fn a_cut_inside_a_record_drops_that_record_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Full 64 KiB blocks: the cut falls inside a line.
    let (text, bytes, starts) = in_full_blocks(d);
    let at = starts[starts.len() - 2];
    let inflated = inflated_len(&bytes[..at]);
    assert_ne!(text[inflated - 1], b'\n');
    let kept = text[..inflated]
        .split(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"#"))
        .count() as u64
        - 1;
    let cut = d.join("cut.vcf.gz");
    std::fs::write(&cut, &bytes[..at]).unwrap();
    let out = d.join("o.zarr");
    for threads in ["1", "2"] {
        let o = run(
            &["--force", "--allow-truncated", "--threads", threads],
            &[&cut, &out],
            None,
        );
        assert_eq!(records(&o), kept, "--threads {threads}");
    }
    // Piped: the last line is dropped however it parses, or the cut is refused.
    let cut_bytes = std::fs::read(&cut).unwrap();
    let dash = Path::new("-");
    let o = run(&["--force"], &[dash, &out], Some(&cut_bytes));
    assert_refused(
        &o,
        "standard input",
        &format!("stream ended after {kept} records"),
    );
    let o = run(
        &["--force", "--allow-truncated"],
        &[dash, &out],
        Some(&cut_bytes),
    );
    assert_eq!(records(&o), kept);
    assert_eq!(stderr(&o).matches("cut short").count(), 1, "{}", stderr(&o));
    // Whatever record the cut falls inside.
    for at in (0..12).map(|k| text.len() / 2 + k * 7) {
        let short = &text[..at];
        let whole_lines = short.iter().filter(|&&b| b == b'\n').count() as u64 - 5;
        let f = d.join("short.vcf.gz");
        bgzip(&f, short, 0);
        let mut b = std::fs::read(&f).unwrap();
        b.truncate(b.len() - 28); // drop the end-of-file block
        let o = run(&["--force", "--allow-truncated"], &[dash, &out], Some(&b));
        assert_eq!(records(&o), whole_lines, "cut at {at}");
    }
}

#[test]
fn bgzipped_standard_input_cut_short_is_an_error_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = vcf_text(2000);
    let (_, cut, kept) = cut_at_block(d, &text);
    let bytes = std::fs::read(&cut).unwrap();
    stdin_cut_short(&d.join("o.zarr"), &bytes, kept);
}

/// Pipes `bytes`, bgzipped text cut short after `kept` whole records, to a
/// conversion into `out`: refused without `--allow-truncated`, naming standard input
/// and the records read; with it, those records and one warning.
fn stdin_cut_short(out: &Path, bytes: &[u8], kept: u64) {
    let dash = Path::new("-");
    let o = run(&["--force"], &[dash, out], Some(bytes));
    assert_refused(
        &o,
        "standard input",
        &format!("stream ended after {kept} records"),
    );
    assert!(!out.join("zarr.json").exists());
    let o = run(&["--force", "--allow-truncated"], &[dash, out], Some(bytes));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(records(&o), kept);
    assert_eq!(stderr(&o).matches("cut short").count(), 1, "{}", stderr(&o));
}

#[test]
fn an_indexed_file_cut_short_is_an_error_for_sub_contig_readers_too() {
    let test = "an_indexed_file_cut_short_is_an_error_for_sub_contig_readers_too";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = vcf_text(4000);
    let (whole, cut, kept) = cut_at_block(d, &text);
    sh_ok(&format!(
        "bcftools index {0} && cp {0}.csi {1}.csi",
        whole.display(),
        cut.display()
    ));
    let out = d.join("o.zarr");
    let args = ["--force", "--readers", "2", "--threads", "2"];
    assert_eq!(records(&run(&args, &[&whole, &out], None)), 4000);
    let o = run(&args, &[&cut, &out], None);
    assert_refused(&o, "cut.vcf.gz", "before reading any record");
    let mut allowed = args.to_vec();
    allowed.push("--allow-truncated");
    let o = run(&allowed, &[&cut, &out], None);
    assert_eq!(records(&o), kept);
    let err = stderr(&o);
    assert_eq!(err.matches("WARN").count(), 1, "{err}");
    // `plan` shares the flag and the check.
    let p = svar2().arg("plan").arg(&cut).output().unwrap();
    assert_refused(&p, "cut.vcf.gz", "before reading any record");
    let p = svar2()
        .args(["plan", "--allow-truncated"])
        .arg(&cut)
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", stderr(&p));
}

/// `d/whole.bcf`, written by bcftools from [`vcf_text`]'s 20,000 records: its path,
/// bytes and BGZF block starts.
fn whole_bcf(d: &Path) -> (PathBuf, Vec<u8>, Vec<usize>) {
    let vcf = d.join("in.vcf");
    std::fs::write(&vcf, vcf_text(20000)).unwrap();
    let bcf = d.join("whole.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {} {}",
        bcf.display(),
        vcf.display()
    ));
    let bytes = std::fs::read(&bcf).unwrap();
    let starts = bgzf_block_starts(&bytes);
    (bcf, bytes, starts)
}

#[test]
fn a_bcf_cut_short_is_refused_with_the_same_message() {
    let test = "a_bcf_cut_short_is_refused_with_the_same_message";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, bytes, starts) = whole_bcf(d);
    let (mid, next) = (starts[starts.len() / 2], starts[starts.len() / 2 + 1]);
    let cut = d.join("cut.bcf");
    let out = d.join("o.zarr");
    // At a block's start, and inside a block (the first block too: bcftools writes
    // the header in a block of its own).
    for at in [mid, (mid + next) / 2, (starts[1] + starts[2]) / 2] {
        std::fs::write(&cut, &bytes[..at]).unwrap();
        // One thread: htslib inflates; four: svar2's inflate threads feed htslib.
        let mut held = Vec::new();
        for threads in ["1", "4"] {
            let o = run(&["--force", "--threads", threads], &[&cut, &out], None);
            assert_refused(&o, "cut.bcf", "before reading any record");
            let o = run(
                &["--force", "--allow-truncated", "--threads", threads],
                &[&cut, &out],
                None,
            );
            let n = records(&o);
            assert!(n > 0 && n < 20000, "{n}");
            held.push((n, digest(&out)));
        }
        assert_eq!(held[0], held[1], "cut at byte {at}");
    }
}

/// A BCF whose middle block is damaged (one flipped bit), read as one stream with its
/// blocks inflated by svar2 (`--threads 4`), is an error naming the block and its CRC
/// check; the whole file gives the same store read either way.
#[test]
fn a_damaged_bcf_block_is_named_when_svar2_inflates_it() {
    let test = "a_damaged_bcf_block_is_named_when_svar2_inflates_it";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (bcf, mut bytes, starts) = whole_bcf(d);
    let (from, to) = (starts[starts.len() / 2], starts[starts.len() / 2 + 1]);
    let whole = d.join("o.zarr");
    let mut digests = Vec::new();
    for threads in ["1", "4"] {
        let o = run(&["--force", "--threads", threads], &[&bcf, &whole], None);
        assert!(o.status.success(), "{}", stderr(&o));
        digests.push(digest(&whole));
    }
    assert_eq!(digests[0], digests[1]);
    bytes[(from + to) / 2] ^= 1;
    let damaged = d.join("damaged.bcf");
    std::fs::write(&damaged, &bytes).unwrap();
    let o = run(
        &["--force", "--threads", "4"],
        &[&damaged, &d.join("d.zarr")],
        None,
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("damaged.bcf: record ")
            && err.contains(&format!(
                "the BGZF block at byte {from} does not inflate or fails its CRC check"
            )),
        "{err}"
    );
    // Also cut short (its end-of-file block gone): converting what it holds still
    // stops at the damage, whatever the threads (it stopped quietly there, exit 0),
    // also in the first block after the header's (it was read by htslib as the cut),
    // and in the header's block.
    let clean = std::fs::read(&bcf).unwrap();
    let (first, second) = (starts[1], starts[2]);
    for at in [from, first, 0] {
        let mut cut = clean.clone();
        let next = starts.iter().find(|&&s| s > at).copied().unwrap_or(to);
        cut[(at + next) / 2] ^= 1;
        let damaged_cut = d.join("damaged_cut.bcf");
        std::fs::write(&damaged_cut, &cut[..cut.len() - 28]).unwrap();
        for threads in ["1", "4"] {
            let o = run(
                &["--force", "--allow-truncated", "--threads", threads],
                &[&damaged_cut, &d.join("d.zarr")],
                None,
            );
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "--threads {threads}: {err}");
            assert!(
                err.contains(&format!("the BGZF block at byte {at} ")),
                "block at {at} (then {second}): {err}"
            );
        }
    }
}

/// A block whose stated inflated size (ISIZE) is damaged but whose data and CRC are
/// whole reads as htslib reads it — the same records whoever inflates it (htslib at
/// `--threads 1`, svar2's inflate at 4): svar2's refused it, so the outcome hung on
/// `--threads` (second hostile pass).
#[test]
fn a_damaged_stated_size_reads_alike_at_every_thread_count() {
    let test = "a_damaged_stated_size_reads_alike_at_every_thread_count";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (bcf, bytes, starts) = whole_bcf(d);
    let gz = d.join("whole.vcf.gz");
    bgzip(&gz, &vcf_text(20000), 40);
    for (clean, bytes, starts) in [
        (bcf, bytes, starts),
        (gz.clone(), std::fs::read(&gz).unwrap(), {
            let b = std::fs::read(&gz).unwrap();
            bgzf_block_starts(&b)
        }),
    ] {
        let name = clean.file_name().unwrap().to_string_lossy().into_owned();
        let mut damaged = bytes.clone();
        let next = starts[starts.len() / 2 + 1];
        damaged[next - 2] ^= 0x40; // ISIZE's third byte: over 4 MiB
        let bent = d.join(format!("bent_{name}"));
        std::fs::write(&bent, &damaged).unwrap();
        let mut digests = Vec::new();
        for (input, threads) in [(&clean, "1"), (&bent, "1"), (&bent, "4")] {
            let out = d.join("o.zarr");
            let o = run(&["--force", "--threads", threads], &[input, &out], None);
            assert!(
                o.status.success(),
                "{name} --threads {threads}: {}",
                stderr(&o)
            );
            digests.push(digest(&out));
        }
        assert!(
            digests.iter().all(|g| g == &digests[0]),
            "{name}: {digests:?}"
        );
    }
}

/// `--merge` of inputs one of which is cut short: refused before any work, with or
/// without `--allow-truncated`, naming the file (the merge stopped at the cut with
/// htslib's error, which offered `--allow-truncated` again).
#[test]
fn a_merge_of_an_input_cut_short_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = d.join("first.vcf.gz");
    bgzip(&first, &vcf_text(20000), 40);
    let text = String::from_utf8(vcf_text(20000)).unwrap();
    let other = text.replace("FORMAT\tA\tB\tC", "FORMAT\tD\tE\tF");
    let (_, cut, _) = cut_at_block(d, other.as_bytes());
    let out = d.join("o.zarr");
    let o = run(&["--merge"], &[&first, &cut, &out], None);
    assert_refused(&o, "cut.vcf.gz", "before reading any record");
    let o = run(
        &["-q", "--merge", "--allow-truncated"],
        &[&first, &cut, &out],
        None,
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cut.vcf.gz: cut short")
            && err.contains("--merge does not convert an input cut short"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_vcf_cut_in_the_middle_of_a_line_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = vcf_text(50);
    // Cut inside the last record's genotype (`0/`), where the message used to blame
    // a bad genotype.
    let end = text.len() - "1:49\t1|1:1049\t./.:.\n".len();
    let cut = &text[..end];
    assert!(
        cut.ends_with(b"0/"),
        "{}",
        String::from_utf8_lossy(&cut[end - 10..])
    );
    let file = d.join("cut.vcf");
    std::fs::write(&file, cut).unwrap();
    let out = d.join("o.zarr");
    let o = run(&["--force"], &[&file, &out], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("record 50 (chr1:149)"), "{err}");
    assert!(
        err.contains("last line and it has no newline") && err.contains("cut short"),
        "{err}"
    );
    let o = run(&["--force"], &[Path::new("-"), &out], Some(cut));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("svar2: error: -: record 50"), "{err}");
    assert!(
        err.contains("ends in the middle of a record") && err.contains("cut short"),
        "{err}"
    );
    // A bad genotype on a complete last line is the line's own fault.
    let mut bad = text.clone();
    let n = bad.len();
    bad[n - 5] = b'x'; // `./.:.` -> `.x.:.`
    std::fs::write(&file, &bad).unwrap();
    let o = run(&["--force"], &[&file, &out], None);
    let err = stderr(&o);
    assert!(err.contains("not a genotype"), "{err}");
    assert!(!err.contains("cut short"), "{err}");
}

#[test]
fn negative_or_junk_pos_is_named_in_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("o.zarr");
    for pos in ["-3", "abc", "1\u{1}2"] {
        let mut text = String::from_utf8(vcf_text(3)).unwrap();
        text = text.replacen("chr1\t101\t", &format!("chr1\t{pos}\t"), 1);
        let file = d.join("pos.vcf");
        std::fs::write(&file, &text).unwrap();
        let o = run(&["--force"], &[&file, &out], None);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("record 2"), "{err}");
        assert!(err.contains("is not a position"), "{err}");
        assert!(
            !err.trim_end().chars().any(|c| c.is_control() && c != '\n'),
            "{err:?}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_number_dot_field_too_wide_for_the_budget_names_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = String::from(
        "##fileformat=VCFv4.3\n##contig=<ID=chr1,length=1000000>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         ##FORMAT=<ID=XS,Number=.,Type=Integer,Description=\"x\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC\tD\n",
    );
    let wide = vec!["7"; 400_000].join(",");
    for i in 0..600 {
        let xs = if i == 500 { wide.as_str() } else { "1,2" };
        t += &format!(
            "chr1\t{}\t.\tA\tC\t.\t.\t.\tGT:XS\t0/1:{xs}\t0/0:1\t1/1:.\t0/1:3\n",
            100 + i
        );
    }
    let file = d.join("wide.vcf");
    std::fs::write(&file, t).unwrap();
    let out = d.join("o.zarr");
    let o = run(&["--force", "--max-mem", "1GiB"], &[&file, &out], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("record 501 (chr1:600)"), "{err}");
    assert!(err.contains("XS"), "{err}");
}

/// [`in_full_blocks`]' file cut halfway into its second-to-last block: its bytes, a
/// VCF of what its whole blocks hold to their last full line (`d/recovered.vcf`),
/// and that VCF's record count.
fn cut_inside_a_block(d: &Path) -> (Vec<u8>, PathBuf, u64) {
    let (text, bytes, starts) = in_full_blocks(d);
    let (last_whole, at) = (
        starts[starts.len() - 3],
        (starts[starts.len() - 3] + starts[starts.len() - 2]) / 2,
    );
    let held = &text[..inflated_len(&bytes[..last_whole])];
    let end = held.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let recovered = d.join("recovered.vcf");
    std::fs::write(&recovered, &held[..end]).unwrap();
    let kept = held[..end]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
        .count() as u64;
    (bytes[..at].to_vec(), recovered, kept)
}

/// An interrupted download rarely stops on a block boundary: a file cut inside a BGZF
/// block converts, with --allow-truncated, the records of its whole blocks (the
/// partial one cannot be inflated, by htslib either), a record those blocks end inside
/// dropped — the store the text of the whole blocks gives, a subset too — with a
/// warning naming the block; without the flag it stays an error. (Found by a hostile
/// pass: it was refused.)
#[test]
fn a_cut_inside_a_block_converts_its_whole_blocks_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (cut_bytes, recovered, _) = cut_inside_a_block(d);
    let cut = d.join("cut.vcf.gz");
    std::fs::write(&cut, &cut_bytes).unwrap();
    let out = d.join("o.zarr");
    let o = run(&["--force"], &[&cut, &out], None);
    assert!(
        !o.status.success() && stderr(&o).contains("cut short"),
        "{}",
        stderr(&o)
    );
    for extra in [&[][..], &["-s", "C,A", "-i", "FMT/DP>20"]] {
        let mut args = vec!["--force", "--allow-truncated"];
        args.extend(extra);
        let o = run(&args, &[&cut, &out], None);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("cut inside the BGZF block"),
            "{}",
            stderr(&o)
        );
        let theirs = d.join("theirs.zarr");
        let _ = std::fs::remove_dir_all(&theirs);
        convert(&recovered, &theirs, extra);
        assert_eq!(digest(&out), digest(&theirs), "{extra:?}");
    }
}

/// Bgzipped standard input cut inside a block (a download cut short, piped in) is
/// cut short as a file is: an error naming standard input and the records read,
/// unless `--allow-truncated` asks for its whole blocks' records. (Found by a hostile
/// pass: it failed as "truncated or corrupt" after the work, the flag given or not.)
#[test]
fn bgzipped_standard_input_cut_inside_a_block_converts_its_whole_blocks_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (cut_bytes, recovered, kept) = cut_inside_a_block(d);
    let out = d.join("o.zarr");
    stdin_cut_short(&out, &cut_bytes, kept);
    let theirs = d.join("theirs.zarr");
    convert(&recovered, &theirs, &[]);
    assert_eq!(digest(&out), digest(&theirs));
}

/// A damaged block inside chr1 of an indexed BCF read by many piece readers is
/// reported as the block that does not inflate, in chr1: a reader whose piece failed
/// went on to another contig's piece with its stream in an error state, whose
/// sequencer often reported first ("chr2 … the index is stale"; hostile pass).
#[test]
fn a_damaged_block_read_through_the_index_is_named_in_its_contig() {
    let test = "a_damaged_block_read_through_the_index_is_named_in_its_contig";
    if !tools(test, &[Tool::Bcftools]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let vcf = d.join("in.vcf");
    let contigs = [("chr1", 30000), ("chr2", 15000), ("chr3", 15000)];
    std::fs::write(&vcf, contigs_text(&contigs, 2_000_000, 40)).unwrap();
    let bcf = d.join("whole.bcf");
    sh_ok(&format!(
        "bcftools view -Ob -o {0} {1} && bcftools index {0}",
        bcf.display(),
        vcf.display()
    ));
    let mut bytes = std::fs::read(&bcf).unwrap();
    let starts = bgzf_block_starts(&bytes);
    // A block a quarter of the way in: chr1's records.
    let k = starts.len() / 4;
    let (from, to) = (starts[k], starts[k + 1]);
    bytes[(from + to) / 2] ^= 1;
    let damaged = d.join("damaged.bcf");
    std::fs::write(&damaged, &bytes).unwrap();
    std::fs::copy(d.join("whole.bcf.csi"), d.join("damaged.bcf.csi")).unwrap();
    // Also in rows of ten records, where a piece is more than its channel holds and
    // its reader waits for room: the failing contig's sequencer drops such pieces
    // unjoined, and their readers must let go (they waited forever; third pass).
    let settings: [&[&str]; 4] = [
        &["--readers", "4", "--threads", "16"],
        &["--readers", "4", "--threads", "16"],
        &[
            "--readers",
            "2",
            "--threads",
            "16",
            "--variants-chunk",
            "10",
        ],
        &[
            "--readers",
            "1",
            "--threads",
            "16",
            "--variants-chunk",
            "10",
        ],
    ];
    for args in settings {
        // (Under `timeout`: a hang fails the test instead of holding CI.)
        let o = std::process::Command::new("timeout")
            .arg("120")
            .arg(env!("CARGO_BIN_EXE_svar2"))
            .args(["convert", "--force"])
            .args(args)
            .arg(&damaged)
            .arg(d.join("d.zarr"))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("(chr1:")
                && err.contains(&format!(
                    "the BGZF block at byte {from} does not inflate or fails its CRC check"
                )),
            "{err}"
        );
    }
}
