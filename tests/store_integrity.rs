//! Nothing lost, nothing silently wrong: a shard svar2 wrote and that is gone later is
//! damage for every reader and `verify` (a store without svar2's record keeps Zarr's
//! fill); arrays that disagree on a dimension, or VCF arrays whose dimensions are out
//! of place (swapped, 0-d), are refused at open with one line; a region index in any
//! row order finds the records, and one that misses records is damage in `verify`.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `all_fields.vcf` converted with several shards on both axes.
fn tiny_store(dir: &Path) -> PathBuf {
    let out = dir.join("s.zarr");
    convert(&data("all_fields.vcf"), &out, TINY_GEOMETRY);
    out
}

fn run(args: &[&str], store: &Path) -> Output {
    svar2().args(args).arg(store).output().expect("svar2 runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Edits `<store>/<node>/zarr.json` (the root's for `""`).
fn edit_json(store: &Path, node: &str, f: impl FnOnce(&mut Value)) {
    let p = if node.is_empty() {
        store.join("zarr.json")
    } else {
        store.join(node).join("zarr.json")
    };
    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// Refused with exit 1, one line naming each of `names`, no panic.
fn refused(o: &Output, names: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    for n in names {
        assert!(e.contains(n), "{n} not in: {e}");
    }
}

/// The root's record of the shards written.
fn record(store: &Path) -> Value {
    let v: Value =
        serde_json::from_slice(&std::fs::read(store.join("zarr.json")).unwrap()).unwrap();
    v.pointer("/attributes/svar2/shards")
        .cloned()
        .expect("a shard record")
}

#[test]
fn a_deleted_shard_is_damage_for_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    let rec = record(&s);
    assert_eq!(rec["call_genotype"]["grid"], serde_json::json!([3, 1, 1]));
    assert_eq!(run(&["verify"], &s).status.code(), Some(0));
    std::fs::remove_file(s.join("call_genotype/c/1/0/0")).unwrap();
    std::fs::remove_file(s.join("variant_position/c/0")).unwrap();
    let names = std::fs::read(s.join("sample_id/c/0")).unwrap();
    std::fs::remove_file(s.join("sample_id/c/0")).unwrap();
    let v = run(&["verify"], &s);
    let text = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{text}");
    assert!(text.contains("3 damaged"), "{text}");
    // (An array without a variants axis names no records: it said "records 0..4".)
    assert!(
        text.contains("DAMAGED sample_id/c/0: samples 0..4: missing shard"),
        "{text}"
    );
    std::fs::write(s.join("sample_id/c/0"), names).unwrap();
    assert!(
        text.contains("DAMAGED call_genotype/c/1/0/0: records 4..8, samples 0..4: missing shard"),
        "{text}"
    );
    assert!(text.contains("DAMAGED variant_position/c/0: records 0..4: missing shard"));
    for args in [
        &["view"][..],
        &["query", "-f", "%POS\\n"],
        &["read", "--region", "chr1"],
    ] {
        let o = run(args, &s);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.contains("missing shard: the store is damaged"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("panicked"), "{e}");
    }
    // The reader library (and Python, through it) names array, shard and file.
    let st = svar2_reader::Store::open(&s).unwrap();
    let a = st.array("call_genotype").unwrap();
    let r = svar2_reader::Reader::new(2, 2).unwrap();
    let patch = [svar2_reader::Patch {
        variant_start: 4,
        n_variants: 2,
        sample_start: 0,
        n_samples: 2,
    }];
    let mut out = vec![0u8; r.batch_bytes(&a, &patch).unwrap()];
    let e = r.read_batch(&a, &patch, &mut out).unwrap_err().to_string();
    assert!(
        e.contains("call_genotype/c/1/0/0") && e.contains("missing shard") && e.contains("s.zarr"),
        "{e}"
    );
    // rechunk copies nothing from a damaged store.
    let o = svar2()
        .arg("rechunk")
        .arg(&s)
        .arg(dir.path().join("r.zarr"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing shard"), "{}", stderr(&o));
}

#[test]
fn a_deleted_array_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    std::fs::remove_dir_all(s.join("call_DP")).unwrap();
    refused(&run(&["verify"], &s), &["call_DP", "missing"]);
}

#[test]
fn shards_left_out_as_fill_and_stores_without_the_record_read_as_fill() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    // svar2 leaves all-fill shards out and records them as absent: still fill.
    let rec = record(&s);
    let absent: u64 = rec
        .as_object()
        .unwrap()
        .values()
        .flat_map(|a| a["absent"].as_array().unwrap().iter())
        .map(|r| r[1].as_u64().unwrap())
        .sum();
    assert!(absent > 0, "the fixture has all-fill shards: {rec}");
    let whole = run(&["view", "-H"], &s);
    assert!(whole.status.success(), "{}", stderr(&whole));
    // An attribute edit keeps the record (it fingerprints the structure only): a shard
    // lost afterwards is still damage. (Arrays another writer wrote in its own chunk
    // format keep Zarr's fill: python/tests, the zarr-python copies.)
    edit_json(&s, "call_DP", |v| v["attributes"]["copied"] = true.into());
    std::fs::remove_file(s.join("call_DP/c/0/0")).unwrap();
    let o = run(&["verify"], &s);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("DAMAGED call_DP/c/0/0"),
        "{}",
        stdout(&o)
    );
    // A store without the record (another writer, an older svar2): Zarr's fill.
    edit_json(&s, "", |v| {
        v["attributes"]["svar2"]
            .as_object_mut()
            .unwrap()
            .remove("shards");
    });
    let gt = |s: &Path| {
        let o = run(&["query", "-f", "[%GT ]\\n"], s);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let before = gt(&s);
    std::fs::remove_file(s.join("call_genotype/c/0/0/0")).unwrap();
    let o = run(&["verify"], &s);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let after = gt(&s);
    assert_ne!(after, before);
    // Fill: allele 0 everywhere the shard was (as the tester saw `0|0`).
    let first = after.lines().next().unwrap();
    assert!(first.chars().all(|c| "0|/ ".contains(c)), "{after}");
}

#[test]
fn the_record_is_the_same_whoever_wrote_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    // rechunk to the same layout writes the same shards, so the same record; to
    // another, a record of its own grid.
    let same = dir.path().join("same.zarr");
    let mut args = vec!["rechunk"];
    args.extend_from_slice(TINY_GEOMETRY);
    let o = svar2().args(&args).arg(&s).arg(&same).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(record(&same), record(&s));
    let other = dir.path().join("other.zarr");
    let o = svar2()
        .args(["rechunk", "--variants-chunk", "3", "--variants-shard", "3"])
        .arg(&s)
        .arg(&other)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        record(&other)["variant_position"]["grid"],
        serde_json::json!([3])
    );
    std::fs::remove_file(other.join("variant_position/c/2")).unwrap();
    let v = run(&["verify"], &other);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    // Partitions and finalize: the record of one conversion.
    if !tools(
        "the_record_is_the_same_whoever_wrote_the_store",
        &[Tool::Bcftools],
    ) {
        return;
    }
    let gz = dir.path().join("all_fields.vcf.gz");
    sh_ok(&format!(
        "bcftools view -Oz -o {gz} {} && bcftools index {gz}",
        data("all_fields.vcf").display(),
        gz = gz.display()
    ));
    let one = dir.path().join("one.zarr");
    convert(&gz, &one, TINY_GEOMETRY);
    let plan = dir.path().join("plan.json");
    let parts = dir.path().join("p.zarr");
    let o = svar2()
        .args(["plan", "--partitions", "3", "-o"])
        .arg(&plan)
        .args(TINY_GEOMETRY)
        .arg(&gz)
        .arg(&parts)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for k in 0..3 {
        let o = svar2()
            .args(["convert", "-q", "--plan"])
            .arg(&plan)
            .args(["--partition", &k.to_string()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = svar2()
        .args(["finalize", "-q"])
        .arg(&plan)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(record(&parts), record(&one));
    assert_eq!(digest(&parts), digest(&one));
}

#[test]
fn arrays_that_disagree_on_a_dimension_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    // Without the record (another writer's store): the dimensions alone decide. (With
    // it, the shape is not the one recorded: crafted_store.)
    edit_json(&s, "", |v| {
        v["attributes"]["svar2"]
            .as_object_mut()
            .unwrap()
            .remove("shards");
    });
    edit_json(&s, "variant_position", |v| {
        v["shape"] = serde_json::json!([10])
    });
    for args in [&["view"][..], &["verify"], &["read", "--region", "chr1"]] {
        refused(
            &run(args, &s),
            &["variant_position", "call_AB", "`variants`"],
        );
    }
    let o = svar2()
        .arg("rechunk")
        .arg(&s)
        .arg(dir.path().join("r.zarr"))
        .output()
        .unwrap();
    refused(&o, &["variant_position", "`variants`"]);
    assert!(!dir.path().join("r.zarr/zarr.json").exists());
}

#[test]
fn swapped_or_missing_dimensions_of_vcf_arrays_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    // Without the record too (another writer's store): the dimensions alone decide.
    edit_json(&s, "", |v| {
        v["attributes"]["svar2"]
            .as_object_mut()
            .unwrap()
            .remove("shards");
    });
    let swapped = dir.path().join("swapped.zarr");
    sh_ok(&format!("cp -a {} {}", s.display(), swapped.display()));
    edit_json(&swapped, "call_genotype", |v| {
        v["dimension_names"] = serde_json::json!(["samples", "variants", "ploidy"])
    });
    let o = svar2()
        .arg("rechunk")
        .arg(&swapped)
        .arg(dir.path().join("r.zarr"))
        .output()
        .unwrap();
    refused(&o, &["call_genotype", "samples, variants, ploidy"]);
    // A 0-d call_genotype: verify and view refuse it by name, never panic.
    edit_json(&s, "call_genotype", |v| {
        v["shape"] = serde_json::json!([]);
        v["dimension_names"] = serde_json::json!([]);
        v["chunk_grid"]["configuration"]["chunk_shape"] = serde_json::json!([]);
        v["codecs"][0]["configuration"]["chunk_shape"] = serde_json::json!([]);
    });
    for args in [&["verify"][..], &["view"]] {
        refused(&run(args, &s), &["call_genotype", "variants, samples"]);
    }
    // A 0-d array that is no VCF field is read, as one chunk.
    std::fs::remove_dir_all(s.join("call_genotype")).unwrap();
    std::fs::create_dir_all(s.join("extra")).unwrap();
    std::fs::write(
        s.join("extra/zarr.json"),
        serde_json::json!({"zarr_format": 3, "node_type": "array", "shape": [],
            "data_type": "int32", "fill_value": 0,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "dimension_names": []})
        .to_string(),
    )
    .unwrap();
    let v = run(&["verify"], &s);
    assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));
}

/// Rewrites `region_index` with `rows` (its shard of one inner chunk), as another
/// writer would, on purpose: its entry in the store's record of what svar2 wrote goes
/// (as verify's message for values rewritten in place says), or verify would call
/// the rewrite damage.
fn write_region_index(store: &Path, rows: &[[i64; 6]]) {
    edit_json(store, "", |v| {
        v["attributes"]["svar2"]["shards"]
            .as_object_mut()
            .unwrap()
            .remove("region_index");
    });
    let g = svar2_zarr::AnyGroup::open(store).unwrap();
    let ri = g.array("region_index").unwrap();
    let (dtype, raw) = svar2_store::region::encode(rows, ri.dtype);
    assert_eq!(dtype, ri.dtype);
    let codec = svar2_store::codec::InnerCodec::new(dtype, false, 1).unwrap();
    let chunk = codec.encode(&raw, &[rows.len() as u64, 6]).unwrap();
    let shard = svar2_store::shard::assemble(&[Some(chunk)]).unwrap();
    std::fs::write(store.join("region_index/c/0/0"), shard).unwrap();
}

fn region_rows(store: &Path) -> Vec<[i64; 6]> {
    let g = svar2_zarr::AnyGroup::open(store).unwrap();
    let ri = g.array("region_index").unwrap();
    ri.read_rows_i64(0, ri.shape()[0])
        .unwrap()
        .chunks_exact(6)
        .map(|r| r.try_into().unwrap())
        .collect()
}

#[test]
fn region_index_rows_in_any_order_find_the_records_and_bad_rows_are_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    let want = |args: &[&str]| {
        let o = run(args, &s);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let read = want(&["read", "--region", "chr1:150-350"]);
    let view = want(&["view", "-H", "-r", "chr1:150-350"]);
    assert_eq!(read.lines().count(), 2, "{read}");
    let rows = region_rows(&s);
    let mut reversed = rows.clone();
    reversed.reverse();
    write_region_index(&s, &reversed);
    assert_eq!(want(&["read", "--region", "chr1:150-350"]), read);
    assert_eq!(want(&["view", "-H", "-r", "chr1:150-350"]), view);
    assert_eq!(run(&["verify"], &s).status.code(), Some(0));
    // A row that no longer covers its records: `-r` would miss them; verify says so.
    let mut short = rows.clone();
    short[0][4] = short[0][2];
    short[0][3] = short[0][2];
    write_region_index(&s, &short);
    let v = run(&["verify"], &s);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("DAMAGED region_index"),
        "{}",
        stdout(&v)
    );
    assert!(stdout(&v).contains("covers record"), "{}", stdout(&v));
    // A row naming a chunk there is not: an error, not a panic or a wrong answer.
    let mut past = rows.clone();
    past[0][0] = 1000;
    write_region_index(&s, &past);
    let v = run(&["verify"], &s);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("names variants chunk 1000"),
        "{}",
        stdout(&v)
    );
    refused(
        &run(&["read", "--region", "chr1:150-350"], &s),
        &["region_index", "chunk 1000"],
    );
}

/// Shards that each pass their checksums but lie where another was written — two
/// swapped, one copied over another — read as the other records' values; main's verify
/// called such a store clean. The record's fingerprint of the shards' sizes catches
/// them (a swap of two shards of one size it cannot tell).
#[test]
fn shards_swapped_or_copied_over_fail_verify() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    let o = run(&["verify"], &s);
    assert!(o.status.success(), "{}", stdout(&o));
    let size = |k: &str| std::fs::metadata(s.join(k)).unwrap().len();
    let (a, b) = ("variant_position/c/0", "variant_position/c/2");
    assert_ne!(size(a), size(b), "the fixture's shards differ in size");
    let tmp = dir.path().join("t");
    std::fs::rename(s.join(a), &tmp).unwrap();
    std::fs::rename(s.join(b), s.join(a)).unwrap();
    std::fs::rename(&tmp, s.join(b)).unwrap();
    let o = run(&["verify"], &s);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("DAMAGED variant_position/c: records 0..9")
            && stdout(&o).contains("not the ones svar2 wrote there"),
        "{}",
        stdout(&o)
    );
    // rechunk writes nothing from it (it would carry the swap on under a fresh record,
    // which verify calls clean: second hostile pass).
    let r = dir.path().join("r.zarr");
    let o = svar2().arg("rechunk").arg(&s).arg(&r).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not the ones svar2 wrote there"),
        "{}",
        stderr(&o)
    );
    assert!(!r.join("zarr.json").exists());
    // Swapped back: clean again. Then one copied over another.
    std::fs::rename(s.join(a), &tmp).unwrap();
    std::fs::rename(s.join(b), s.join(a)).unwrap();
    std::fs::rename(&tmp, s.join(b)).unwrap();
    assert!(run(&["verify"], &s).status.success());
    let (c, d) = ("call_genotype/c/0/0/0", "call_genotype/c/2/0/0");
    assert_ne!(size(c), size(d));
    std::fs::copy(s.join(c), s.join(d)).unwrap();
    let o = run(&["verify"], &s);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("DAMAGED call_genotype/c:"),
        "{}",
        stdout(&o)
    );
}

/// Copies directory `from` to `to` (a store, file by file).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Rewrites the index of shard `key` of `store` (inner chunks `n`) by `f` over its
/// (offset, length) entries, its checksum made again: the shard keeps its size and
/// every chunk its crc32c.
fn edit_index(store: &Path, key: &str, n: usize, f: impl FnOnce(&mut Vec<Option<(u64, u64)>>)) {
    let p = store.join(key);
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes.len() - svar2_store::shard::index_len(n);
    let mut spans: Vec<_> = (0..n)
        .map(|i| svar2_store::shard::entry(&bytes[at..], i))
        .collect();
    f(&mut spans);
    bytes.truncate(at);
    bytes.extend_from_slice(&svar2_store::shard::index(&spans));
    std::fs::write(&p, bytes).unwrap();
}

/// Chunks that each pass their checksum in a shard of the size svar2 wrote, yet are
/// not the ones stored there: two of one size swapped within their shard, or one made
/// "not stored" (it then reads as fill: 0|0 where the call was 1|1). Both kept every
/// checksum and every shard's size, so main's verify called them clean and rechunk
/// carried them on; the record's fingerprint of the chunks catches them.
#[test]
fn chunks_swapped_or_dropped_inside_a_shard_fail_verify() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny_store(dir.path());
    assert!(run(&["verify"], &s).status.success());
    let original = dir.path().join("original.zarr");
    copy_dir(&s, &original);
    // call_genotype: shards of 4 x 4 x 4, inner chunks 2 x 2 x 4: four a shard.
    let key = "call_genotype/c/0/0/0";
    let before = std::fs::metadata(s.join(key)).unwrap().len();
    let chunk = |spans: &Vec<Option<(u64, u64)>>, i: usize, bytes: &[u8]| {
        let (o, l) = spans[i].unwrap();
        bytes[o as usize..(o + l) as usize].to_vec()
    };
    let bytes = std::fs::read(s.join(key)).unwrap();
    edit_index(&s, key, 4, |spans| {
        let (a, b) = (chunk(spans, 0, &bytes), chunk(spans, 3, &bytes));
        assert!(
            a.len() == b.len() && a != b,
            "two chunks of one size, unlike"
        );
        spans.swap(0, 3);
    });
    assert_eq!(std::fs::metadata(s.join(key)).unwrap().len(), before);
    let damaged = |o: &Output| {
        o.status.code() == Some(1)
            && stdout(o).contains("DAMAGED call_genotype/c: records 0..9")
            && stdout(o).contains("not the ones svar2 stored there")
    };
    let o = run(&["verify"], &s);
    assert!(damaged(&o), "{}", stdout(&o));
    let r = dir.path().join("r.zarr");
    let o = svar2().arg("rechunk").arg(&s).arg(&r).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("call_genotype: its shard files are not the ones")
            && stderr(&o).contains("remove the array's entry from attributes.svar2.shards"),
        "{}",
        stderr(&o)
    );
    assert!(!r.join("zarr.json").exists());
    // The way out the message names, for values rewritten on purpose: the entry gone,
    // verify and rechunk take the array as it is.
    let kept = dir.path().join("kept.zarr");
    copy_dir(&s, &kept);
    edit_json(&kept, "", |v| {
        v["attributes"]["svar2"]["shards"]
            .as_object_mut()
            .unwrap()
            .remove("call_genotype");
    });
    assert!(run(&["verify"], &kept).status.success());
    let o = svar2().arg("rechunk").arg(&kept).arg(&r).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // One chunk made "not stored": it reads as fill.
    std::fs::remove_dir_all(&s).unwrap();
    copy_dir(&original, &s);
    edit_index(&s, key, 4, |spans| spans[1] = None);
    let o = run(&["verify"], &s);
    assert!(damaged(&o), "{}", stdout(&o));
    // The array's attributes edited (its zarr.json rewritten, the shards svar2's by
    // their sizes): still checked (a hostile pass found the check skipped there).
    std::fs::remove_dir_all(&s).unwrap();
    copy_dir(&original, &s);
    edit_json(&s, "call_genotype", |v| {
        v["attributes"]["note"] = "mine".into()
    });
    assert!(run(&["verify"], &s).status.success());
    edit_index(&s, key, 4, |spans| spans.swap(0, 3));
    let o = run(&["verify"], &s);
    assert!(damaged(&o), "{}", stdout(&o));
    // Put back: clean.
    std::fs::remove_dir_all(&s).unwrap();
    copy_dir(&original, &s);
    assert!(run(&["verify"], &s).status.success());
}

/// A list's shard left out as all fill (a shard of POS=0 records) is in the record, not
/// damage: main refused the store ("holds at most 2") since its files hold fewer.
#[test]
fn a_list_shard_left_out_as_fill_opens() {
    let dir = tempfile::tempdir().unwrap();
    let vcf = dir.path().join("p0.vcf");
    std::fs::write(
        &vcf,
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=100>\n\
         ##FORMAT=<ID=GT,Number=1,Type=String,Description=\"g\">\n\
         #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\n\
         1\t0\t.\tA\tC\t.\t.\t.\tGT\t0|1\n1\t5\t.\tA\tC\t.\t.\t.\tGT\t0|1\n\
         1\t7\t.\tA\tC\t.\t.\t.\tGT\t1|1\n",
    )
    .unwrap();
    let s = dir.path().join("p0.zarr");
    convert(
        &vcf,
        &s,
        &["--variants-chunk", "1", "--variants-shard", "1"],
    );
    assert!(!s.join("variant_position/c/0").exists(), "left out as fill");
    let o = run(&["view", "-H"], &s);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 3);
    assert!(run(&["verify"], &s).status.success());
}

/// zarr-python writes a float attribute that is NaN or infinite as a bare `NaN`,
/// `Infinity` or `-Infinity` (Python's `json`), which JSON lacks; xarray reads such
/// stores, and so does svar2, those values as null: `view`, `verify` and `rechunk`,
/// with them on the root and on arrays. Before, every command refused the store
/// ("not JSON").
#[test]
fn stores_with_pythons_nan_attributes_read() {
    let dir = test_dir();
    let store = tiny_store(dir.path());
    let want = stdout(&run(&["view"], &store));
    for node in [
        "zarr.json",
        "variant_position/zarr.json",
        "call_DP/zarr.json",
    ] {
        let path = store.join(node);
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replacen(
            "\"attributes\": {",
            "\"attributes\": {\"qc\": NaN, \"range\": [-Infinity, Infinity], \"s\": \"NaN\",",
            1,
        );
        assert_ne!(text, edited, "{node}");
        std::fs::write(&path, edited).unwrap();
    }
    assert_eq!(stdout(&run(&["view"], &store)), want);
    let v = run(&["verify"], &store);
    assert!(v.status.success(), "{}", stdout(&v));
    let copy = dir.path().join("copy.zarr");
    let r = svar2()
        .arg("rechunk")
        .arg(&store)
        .arg(&copy)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    // The copy holds null where Python wrote NaN or Infinity: said, node by node.
    let said = stderr(&r);
    assert!(
        said.contains("the root's attributes hold NaN or Infinity")
            && said.contains("variant_position's attributes hold NaN or Infinity"),
        "{said}"
    );
    assert_eq!(stdout(&run(&["view"], &copy)), want);
}
