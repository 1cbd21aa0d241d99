//! Hostile stores, crafted byte by byte: every reader (view, query, verify, digest,
//! rechunk) ends with one error line naming what is wrong and exit 1 — never a panic
//! (exit 101), an abort (134), a hang or gigabytes of memory — and never passes a
//! chunk c-blosc would refuse.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A small store (4 samples, 9 records), several inner chunks per shard.
fn store(dir: &Path) -> PathBuf {
    let s = dir.join("s");
    let o = svar2()
        .args(["convert", "-q"])
        .arg(data("all_fields.vcf"))
        .arg(&s)
        .args(TINY_GEOMETRY)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    s
}

/// `svar2 ARGS` under `timeout` (a hang is exit 124), in a shell with `limit`
/// KiB of address space when given.
fn run(args: &str, limit: Option<u64>) -> Output {
    let ulimit = limit.map_or(String::new(), |k| format!("ulimit -v {k}; "));
    sh(&format!(
        "{ulimit}exec timeout 60 {} {args}",
        env!("CARGO_BIN_EXE_svar2")
    ))
}

/// Asserts `svar2 ARGS` failed cleanly: exit 1, one `svar2: error:` line that
/// contains every one of `says`.
fn fails(args: &str, limit: Option<u64>, says: &[&str]) {
    let o = run(args, limit);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "svar2 {args}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("svar2: error: "),
        "svar2 {args}: {err}"
    );
    for s in says {
        assert!(lines[0].contains(s), "svar2 {args}: wanted {s:?} in {err}");
    }
}

/// Asserts `svar2 verify STORE` reports the store damaged: exit 1, and its report
/// names every one of `says`.
fn damaged(store: &Path, says: &[&str]) {
    let o = run(&format!("verify {}", store.display()), None);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(1), "svar2 verify: {all}");
    for s in says {
        assert!(all.contains(s), "svar2 verify: wanted {s:?} in {all}");
    }
}

/// CRC-32C (Castagnoli), as the crc32c codec appends it.
fn crc32c(b: &[u8]) -> u32 {
    let mut c = !0u32;
    for &x in b {
        c ^= x as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// `b` followed by its crc32c.
fn with_crc(mut b: Vec<u8>) -> Vec<u8> {
    let c = crc32c(&b);
    b.extend_from_slice(&c.to_le_bytes());
    b
}

/// A shard file of these inner chunks (`None`: not stored), index at the end.
fn shard(chunks: &[Option<Vec<u8>>]) -> Vec<u8> {
    let (mut out, mut index) = (Vec::new(), Vec::new());
    for c in chunks {
        let (at, len) = match c {
            Some(c) => {
                let at = out.len() as u64;
                out.extend_from_slice(c);
                (at, c.len() as u64)
            }
            None => (u64::MAX, u64::MAX),
        };
        index.extend_from_slice(&at.to_le_bytes());
        index.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(&with_crc(index));
    out
}

/// The inner chunks of a shard file of `n` (its bytes, crc32c included).
fn chunks_of(shard: &[u8], n: usize) -> Vec<Option<Vec<u8>>> {
    let index = &shard[shard.len() - 4 - 16 * n..shard.len() - 4];
    (0..n)
        .map(|i| {
            let w = |k: usize| {
                u64::from_le_bytes(index[16 * i + k..16 * i + k + 8].try_into().unwrap())
            };
            let (at, len) = (w(0), w(8));
            (at != u64::MAX).then(|| shard[at as usize..(at + len) as usize].to_vec())
        })
        .collect()
}

/// One zstd frame holding `data` as a raw block (`data` under 256 bytes).
fn zstd_raw(data: &[u8]) -> Vec<u8> {
    assert!(data.len() < 256);
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0x20, data.len() as u8];
    let header = 1u32 | ((data.len() as u32) << 3);
    f.extend_from_slice(&header.to_le_bytes()[..3]);
    f.extend_from_slice(data);
    f
}

/// One zstd frame of `blocks` RLE blocks of 128 KiB of zeros each (4 bytes a block:
/// a 128 KiB frame says 4 GiB).
fn zstd_zeros(blocks: usize) -> Vec<u8> {
    // No content size; window 128 KiB (exponent 7).
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 7 << 3];
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | (1 << 1) | ((128 * 1024) << 3);
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

/// vlen-utf8 bytes: a count, then each length and its bytes.
fn vlen(count: u32, items: &[(u32, &[u8])]) -> Vec<u8> {
    let mut b = count.to_le_bytes().to_vec();
    for (len, bytes) in items {
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(bytes);
    }
    b
}

/// Rewrites a shard file of `sample_id` (4 samples, 2 inner chunks of 2) with these
/// stored chunks.
fn write_sample_id(s: &Path, chunk0: Vec<u8>) {
    let good = with_crc(zstd_raw(&vlen(2, &[(1, b"c"), (1, b"d")])));
    std::fs::write(s.join("sample_id/c/0"), shard(&[Some(chunk0), Some(good)])).unwrap();
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn copy(from: &Path, to: &Path) {
    sh_ok(&format!(
        "rm -rf {1} && cp -r {0} {1}",
        from.display(),
        to.display()
    ));
}

/// Item 7: a blosc frame whose block size c-blosc refuses (0, or 2^31 - 1 on a
/// chunk of 16 bytes) is refused by svar2's own reader too, memcpyed frames included.
#[test]
fn blosc_block_sizes_c_blosc_refuses_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    for bs in [0i32, i32::MAX] {
        copy(&s, &f);
        // call_DP: [variants, samples] int32, inner chunks of 2x2 (16 bytes: stored
        // as is, "memcpyed"), 4 per shard.
        let path = f.join("call_DP/c/0/0");
        let mut chunks = chunks_of(&std::fs::read(&path).unwrap(), 4);
        let c = chunks[0].as_mut().expect("chunk 0 stored");
        let mut frame = c[..c.len() - 4].to_vec();
        assert_eq!(frame[2] & 0x02, 0x02, "a memcpyed frame");
        frame[8..12].copy_from_slice(&bs.to_le_bytes());
        *c = with_crc(frame);
        std::fs::write(&path, shard(&chunks)).unwrap();
        let fs = f.display();
        let says = format!("block size {bs}");
        damaged(&f, &["DAMAGED call_DP/c/0/0", &says]);
        fails(&format!("view {fs}"), None, &["call_DP", &says]);
    }
}

/// Item 8: a string chunk whose first length says 4 GB: an error naming the chunk,
/// not a panic in zarrs (exit 101) or an abort (134).
#[test]
fn a_4gb_string_length_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    copy(&s, &f);
    let bad = vlen(2, &[(0xFFFF_FFF0, b"ab")]);
    write_sample_id(&f, with_crc(zstd_raw(&bad)));
    let fs = f.display();
    damaged(&f, &["sample_id", "string chunk"]);
    for cmd in ["view", "query -l"] {
        fails(&format!("{cmd} {fs}"), None, &["sample_id", "string chunk"]);
    }
    let out = dir.path().join("out");
    fails(
        &format!("rechunk -q {fs} {}", out.display()),
        None,
        &["sample_id"],
    );
}

/// Item 13: a 128 KiB `sample_id` chunk of zstd RLE blocks that says 4 GiB of zeros is
/// refused after decoding a few bytes: `query -l` under 1 GiB of address space.
#[test]
fn a_zstd_bomb_in_names_is_refused_without_decoding_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    copy(&s, &f);
    write_sample_id(&f, with_crc(zstd_zeros(32 * 1024)));
    let fs = f.display();
    fails(
        &format!("query -l {fs}"),
        Some(1 << 20),
        &["sample_id", "says 0 elements"],
    );
}

/// Item 9: shapes beyond the data that exists are refused when the store is opened,
/// before anything is sized from them or loops over their chunk grid.
#[test]
fn shapes_beyond_the_stored_data_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    let fs = f.display();
    let out = dir.path().join("out");
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit, &str); 5] = [
        (
            "sample_id",
            |v| v["shape"][0] = (1u64 << 40).into(),
            "sample_id says",
        ),
        (
            "contig_id",
            |v| v["shape"][0] = (1u64 << 50).into(),
            "contig_id says",
        ),
        (
            "variant_position",
            |v| v["shape"][0] = (1u64 << 62).into(),
            "variant_position says",
        ),
        (
            "call_genotype",
            |v| v["shape"][1] = (1u64 << 40).into(),
            "1099511627776",
        ),
        (
            "call_genotype",
            |v| {
                v["shape"][2] = (1u64 << 30).into();
                v["chunk_grid"]["configuration"]["chunk_shape"][2] = (1u64 << 30).into();
                v["codecs"][0]["configuration"]["chunk_shape"][2] = (1u64 << 30).into();
            },
            "more than a chunk may hold",
        ),
    ];
    for (array, edit, says) in cases {
        // With svar2's shard record, a grid that is not the one it wrote is named so;
        // without it (another writer's store), what the stored files can hold.
        for record in [true, false] {
            copy(&s, &f);
            edit_json(&f.join(array).join("zarr.json"), edit);
            if !record {
                edit_json(&f.join("zarr.json"), |v| {
                    v["attributes"].as_object_mut().unwrap().remove("svar2");
                });
            }
            // (The variants axis alone regridded is held by variant_position's files,
            // record or not: xarray appends along it.)
            let says = match record && !says.contains("chunk") && array != "variant_position" {
                true => "not the ones svar2 wrote",
                false => says,
            };
            for cmd in ["verify", "view", "query -l", "inspect"] {
                if cmd == "inspect" && !says.contains("chunk") {
                    continue; // inspect shows lengths; it sizes nothing by them
                }
                fails(&format!("{cmd} {fs}"), Some(4 << 20), &[says]);
            }
            fails(
                &format!("rechunk --dry-run {fs} {}", out.display()),
                Some(4 << 20),
                &[says],
            );
        }
    }
}

/// Item 11: a FIFO in place of a shard is an error naming it, for every reader and
/// the digest — not a reader blocked forever, nor a file the digest skips.
#[test]
fn a_fifo_in_place_of_a_shard_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    copy(&s, &f);
    for shard in ["call_DP/c/0/0", "sample_id/c/0"] {
        let p = f.join(shard);
        std::fs::remove_file(&p).unwrap();
        sh_ok(&format!("mkfifo {}", p.display()));
        let fs = f.display();
        for cmd in ["verify", "view", "query -l", "digest", "inspect"] {
            fails(&format!("{cmd} {fs}"), None, &[shard, "a FIFO"]);
        }
        std::fs::remove_file(&p).unwrap();
        std::fs::copy(s.join(shard), &p).unwrap();
    }
    assert_eq!(
        sh_ok(&format!(
            "{} digest {}",
            env!("CARGO_BIN_EXE_svar2"),
            f.display()
        )),
        sh_ok(&format!(
            "{} digest {}",
            env!("CARGO_BIN_EXE_svar2"),
            s.display()
        ))
    );
}

/// Item 18: a `shape` that is not whole numbers is reported as such (it was "no
/// dimension names").
#[test]
fn a_non_integer_shape_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    copy(&s, &f);
    edit_json(&f.join("call_DP/zarr.json"), |v| v["shape"][0] = 1.5.into());
    let fs = f.display();
    for cmd in ["view", "verify", "inspect"] {
        fails(
            &format!("{cmd} {fs}"),
            None,
            &[
                "call_DP/zarr.json",
                "`shape` is [1.5,4]: not a list of whole numbers",
            ],
        );
    }
}

/// Metadata that would print a VCF the store never held: a line break in a header
/// text (a crafted `##` line, a second `#CHROM`) and a `variant_contig` past the
/// contigs `contig_id` lists. main printed the extra lines, and the records on
/// contig `?`, with exit 0.
#[test]
fn header_text_and_contig_indexes_past_the_lists_are_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    let fs = f.display();
    copy(&s, &f);
    edit_json(&f.join("zarr.json"), |v| {
        v["attributes"]["vcf_meta_information"][0][1] = "x\n#CHROM\tPOS".into();
    });
    for cmd in ["view -h", "view", "query -f %POS\\\\n"] {
        fails(&format!("{cmd} {fs}"), None, &["holds a line break"]);
    }
    copy(&s, &f);
    for array in ["contig_id", "contig_length"] {
        edit_json(&f.join(array).join("zarr.json"), |v| {
            v["shape"][0] = 1.into();
        });
    }
    // The shard record fingerprints the shape: refused at open.
    fails(
        &format!("view -H {fs}"),
        None,
        &["not the ones svar2 wrote"],
    );
    // Without the record (a store bio2zarr wrote), by the readers.
    edit_json(&f.join("zarr.json"), |v| {
        v["attributes"]["svar2"]
            .as_object_mut()
            .unwrap()
            .remove("shards");
    });
    for cmd in ["view -H", "query -f %CHROM\\\\n"] {
        fails(
            &format!("{cmd} {fs}"),
            None,
            &["but contig_id lists 1: the store is damaged"],
        );
    }
}

/// An axis of an svar2 array edited past what svar2 wrote (alleles to 10^10, ploidy
/// one more, the filters to 10^6): main's verify aborted on an 80 GB list of chunk
/// indices, and its readers printed fill values (a third allele, 10^6 empty FILTER
/// lines) with exit 0. The shard record names the grid svar2 wrote.
#[test]
fn axes_edited_past_what_svar2_wrote_are_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    let fs = f.display();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&[&str], Edit); 3] = [
        (&["variant_allele"], |v| {
            v["shape"][1] = 10_000_000_000u64.into()
        }),
        (&["call_genotype", "call_genotype_mask"], |v| {
            v["shape"][2] = (v["shape"][2].as_u64().unwrap() + 1).into()
        }),
        (
            &["filter_id", "filter_description", "variant_filter"],
            |v| {
                let n = v["shape"].as_array().unwrap().len();
                v["shape"][n - 1] = 1_000_000.into()
            },
        ),
    ];
    for (arrays, edit) in cases {
        copy(&s, &f);
        for a in arrays {
            edit_json(&f.join(a).join("zarr.json"), edit);
        }
        for cmd in ["verify", "view", "query -l"] {
            fails(
                &format!("{cmd} {fs}"),
                Some(4 << 20),
                &["not the ones svar2 wrote"],
            );
        }
    }
}

/// A root `zarr.json` that is not a group's metadata (`"hello"`, `{}`): main read it
/// as a store without attributes, so the shard record was gone and a deleted shard
/// read as `0|0` with verify clean.
#[test]
fn a_root_that_is_no_group_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    for root in ["\"hello\"", "{}"] {
        copy(&s, &f);
        std::fs::write(f.join("zarr.json"), root).unwrap();
        for cmd in ["verify", "view", "query -l"] {
            fails(
                &format!("{cmd} {}", f.display()),
                None,
                &["not a Zarr group's metadata"],
            );
        }
    }
}

/// Positions out of order within a contig, written by zarr-python with valid
/// checksums: view and query stop at them instead of printing a VCF no tool reads by
/// region (main printed it, exit 0).
#[test]
fn positions_out_of_order_are_damage() {
    if !tools("positions_out_of_order_are_damage", &[Tool::ZarrPython]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    sh_ok(&format!(
        "python3 -c \"import zarr; a = zarr.open_array('{}/variant_position', mode='r+'); \
         v = a[:]; v[[0, 1]] = v[[1, 0]]; a[:] = v\"",
        s.display()
    ));
    for cmd in ["view -H", "query -f %POS\\\\n"] {
        fails(
            &format!("{cmd} {}", s.display()),
            None,
            &["on the same contig: the store is damaged"],
        );
    }
}

/// Edits that keep the shard grid (a ploidy shrunk, another data type, another key
/// separator): main's record stopped applying without a word, so GT printed what the
/// chunks never held and a lost shard read as fill. The record fingerprints the
/// structure, so they are damage; an attribute edit in zarr-python's style (its own
/// key order, an empty `storage_transformers`) keeps the record, and a shard lost
/// after it is still named.
#[test]
fn edits_that_keep_the_grid_are_damage_and_attribute_edits_keep_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    let fs = f.display();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&[&str], Edit); 3] = [
        (&["call_genotype", "call_genotype_mask"], |v| {
            v["shape"][2] = (v["shape"][2].as_u64().unwrap() - 1).into()
        }),
        (&["call_DP"], |v| v["data_type"] = "int32".into()),
        (&["variant_position"], |v| {
            v["chunk_key_encoding"]["configuration"]["separator"] = ".".into()
        }),
    ];
    for (arrays, edit) in cases {
        copy(&s, &f);
        for a in arrays {
            edit_json(&f.join(a).join("zarr.json"), edit);
        }
        for cmd in ["verify", "view", "query -l"] {
            fails(&format!("{cmd} {fs}"), None, &["not the ones svar2 wrote"]);
        }
    }
    copy(&s, &f);
    let meta = f.join("call_genotype/zarr.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    let mut edited = serde_json::Map::new();
    for (k, x) in v.as_object().unwrap().iter().rev() {
        edited.insert(k.clone(), x.clone());
    }
    edited.insert("attributes".into(), serde_json::json!({"note": "edited"}));
    edited.insert("storage_transformers".into(), serde_json::json!([]));
    std::fs::write(&meta, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    let o = run(&format!("verify {fs}"), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_file(f.join("call_genotype/c/0/0/0")).unwrap();
    damaged(&f, &["call_genotype", "missing shard"]);
}

/// zarr-python's own attribute edits (every array and the root): the record still
/// applies, so a shard lost afterwards is damage, not `0|0` read with verify clean.
#[test]
fn a_shard_lost_after_zarr_python_edits_attributes_is_damage() {
    if !tools(
        "a_shard_lost_after_zarr_python_edits_attributes_is_damage",
        &[Tool::ZarrPython],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    sh_ok(&format!(
        "python3 -W ignore -c \"import zarr; g = zarr.open_group('{}', mode='r+'); \
         g.attrs['note'] = 'edited'\n\
         for _, a in g.arrays(): a.attrs['note'] = 'edited'\"",
        s.display()
    ));
    let meta = std::fs::read_to_string(s.join("call_genotype/zarr.json")).unwrap();
    assert!(meta.contains("edited"), "{meta}");
    let o = run(&format!("verify {}", s.display()), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_file(s.join("call_genotype/c/0/0/0")).unwrap();
    damaged(&s, &["call_genotype", "missing shard"]);
}

/// Every variants axis set to 10^15 and the shard record rewritten to match it (as
/// svar2 would record those files), or then claiming every shard written: main's
/// verify ran out of memory listing 10^10 missing shards and rechunk hung. Refused at
/// open: the lists' files, and the shards the record says are gone, hold far fewer.
#[test]
fn a_record_rewritten_for_an_axis_of_10_15_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let f = dir.path().join("f");
    for claim_all in [false, true] {
        copy(&s, &f);
        for e in std::fs::read_dir(&f).unwrap() {
            let meta = e.unwrap().path().join("zarr.json");
            if !meta.exists() {
                continue;
            }
            edit_json(&meta, |v| {
                if v["dimension_names"][0] == "variants" {
                    v["shape"][0] = 1_000_000_000_000_000u64.into();
                }
            });
        }
        let local = svar2_storage::LocalDir { root: f.clone() };
        let mut record = svar2_store::written::record(&local, &[], &Default::default()).unwrap();
        if claim_all {
            for a in record.as_object_mut().unwrap().values_mut() {
                a["absent"] = serde_json::json!([]);
            }
        }
        edit_json(&f.join("zarr.json"), |v| {
            v["attributes"]["svar2"]["shards"] = record;
        });
        for cmd in ["verify", "view", "query -l", "rechunk --dry-run"] {
            let out = if cmd.starts_with("rechunk") {
                format!(" {}", dir.path().join("r").display())
            } else {
                String::new()
            };
            fails(
                &format!("{cmd} {fs}{out}", fs = f.display()),
                Some(4 << 20),
                &[if claim_all {
                    "shard(s) of it were written"
                } else {
                    "hold at most"
                }],
            );
        }
    }
}

/// xarray copies of an svar2 store keep svar2's encoding and carry its root
/// attributes, the shard record with them: a copy of some samples is another writer's
/// arrays (their shards rewritten), not damage; a whole copy verifies clean although
/// xarray rewrote the float arrays' bytes.
#[test]
fn xarray_copies_that_keep_svar2_encoding_open() {
    if !tools(
        "xarray_copies_that_keep_svar2_encoding_open",
        &[Tool::Xarray],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let (some, whole) = (dir.path().join("some.vcz"), dir.path().join("whole.vcz"));
    sh_ok(&format!(
        "python3 -W ignore -c \"import xarray as xr; ds = xr.open_zarr('{}', consolidated=False)\n\
         ds.isel(samples=[0, 1]).to_zarr('{}', mode='w', zarr_format=3, consolidated=False)\n\
         ds.to_zarr('{}', mode='w', zarr_format=3, consolidated=False)\"",
        s.display(),
        some.display(),
        whole.display()
    ));
    for copy in [&some, &whole] {
        let o = run(&format!("verify {}", copy.display()), None);
        assert!(
            o.status.success(),
            "{}: {}{}",
            copy.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = run(&format!("query -l {}", some.display()), None);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
    // Records appended along variants (xarray's append_dim) regrid that axis alone,
    // all-fill arrays with no new shard included: another writer's arrays, which open
    // (hostile pass: "not the ones svar2 wrote" for every variant array).
    sh_ok(&format!(
        "python3 -W ignore -c \"import xarray as xr; ds = xr.open_zarr('{}', consolidated=False)\n\
         ds.isel(variants=slice(0, 8)).to_zarr('{}', append_dim='variants', consolidated=False)\"",
        s.display(),
        whole.display()
    ));
    let o = run(&format!("query -l {}", whole.display()), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A shard record whose grid has another rank than its array (`[]`): main ignored the
/// record for it, so a deleted shard read as `0|0` with verify clean.
#[test]
fn a_record_grid_of_another_rank_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    std::fs::remove_file(s.join("call_genotype/c/0/0/0")).unwrap();
    edit_json(&s.join("zarr.json"), |v| {
        v["attributes"]["svar2"]["shards"]["call_genotype"]["grid"] = serde_json::json!([]);
    });
    for cmd in ["verify", "view"] {
        fails(
            &format!("{cmd} {}", s.display()),
            None,
            &["shard record of call_genotype has 0 axes"],
        );
    }
}

/// The ploidy axis edited to 2^32 in a store without the shard record (bio2zarr's kind
/// of store): main's verify walked ~10^11 chunk indices of fill (a hang past 60 s).
/// One damage line instead, at once.
#[test]
fn verify_does_not_walk_a_grid_past_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    edit_json(&s.join("zarr.json"), |v| {
        v["attributes"]["svar2"]
            .as_object_mut()
            .unwrap()
            .remove("shards");
    });
    for a in ["call_genotype", "call_genotype_mask"] {
        edit_json(&s.join(a).join("zarr.json"), |v| {
            v["shape"][2] = 4_294_967_296u64.into()
        });
    }
    let t0 = std::time::Instant::now();
    damaged(
        &s,
        &["DAMAGED call_genotype/c", "stored file(s) hold at most"],
    );
    assert!(t0.elapsed().as_secs() < 30, "{:?}", t0.elapsed());
}

/// A copy of `original` at `to`, edited by the Python statements `edit` (zarr-python's
/// group `g`, its path `d`).
fn edited_copy(original: &Path, to: &Path, edit: &str) -> PathBuf {
    copy(original, to);
    sh_ok(&format!(
        "python3 -c \"import zarr; d = '{}'; g = zarr.open_group(d, mode='r+'); {edit}\"",
        to.display()
    ));
    to.to_path_buf()
}

/// A store without svar2's shard record (another tool's, or one whose record was
/// dropped as svar2's own message advises), edited with zarr-python: arrays rewritten
/// at another data type, `filter_id` gone, a sample named twice, records out of order,
/// an array's metadata lost, a tab in an ID. Each was printed as missing values,
/// unphased calls, another sample's column, a forged record, or a panic, with
/// `verify` clean (fourth hostile pass). Now each is refused by name, or damage.
#[test]
fn foreign_edits_are_refused_never_printed_wrong() {
    if !tools(
        "foreign_edits_are_refused_never_printed_wrong",
        &[Tool::ZarrPython],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = store(dir.path());
    edit_json(&original.join("zarr.json"), |m| {
        m["attributes"]["svar2"]
            .as_object_mut()
            .unwrap()
            .remove("shards");
    });
    // Each case: a fresh copy, a Python edit of `g` (the group) at `d` (its path),
    // then a command that must fail saying `says`, or a verify that must name it.
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "phased",
            "a = g['call_genotype_phased']; x = a[:]; attrs = dict(a.attrs); \
             dims = a.metadata.dimension_names; del g['call_genotype_phased']; \
             m = g.create_array('call_genotype_phased', shape=x.shape, dtype='int8', \
             chunks=a.chunks, dimension_names=dims); m[...] = x.astype('int8'); \
             m.attrs.update(attrs)",
            "view -H",
            "data type int8, where phase flags are stored as bool",
        ),
        (
            "quality",
            "a = g['variant_quality']; x = a[:]; attrs = dict(a.attrs); \
             dims = a.metadata.dimension_names; del g['variant_quality']; \
             m = g.create_array('variant_quality', shape=x.shape, dtype='int32', \
             chunks=a.chunks, dimension_names=dims); m[...] = x.astype('int32'); \
             m.attrs.update(attrs)",
            "view -H",
            "where QUAL values are stored as float32",
        ),
        (
            "no_filter_id",
            "import shutil; shutil.rmtree(d + '/filter_id'); \
             shutil.rmtree(d + '/filter_description', ignore_errors=True)",
            "view -H",
            "filter_id lists 0 filters",
        ),
        (
            "named_twice",
            "a = g['sample_id']; v = a[:]; v[1] = v[0]; a[:] = v",
            "query -s NA00001 -f [%GT]",
            "sample NA00001 is listed twice in sample_id (columns 0 and 1)",
        ),
        (
            "named_twice_view",
            "a = g['sample_id']; v = a[:]; v[1] = v[0]; a[:] = v",
            "view -H",
            "a VCF names each sample once",
        ),
        (
            "lost_metadata",
            "open(d + '/call_genotype/zarr.json', 'w').write('null')",
            "view -H",
            "without an array's metadata",
        ),
        (
            "tab",
            "a = g['variant_id']; v = a[:]; v[2] = 'x\\tforged'; a[:] = v",
            "view -H",
            "a value holds a tab",
        ),
        (
            "group_metadata",
            "open(d + '/call_genotype_phased/zarr.json', 'w').write('{\\\"zarr_format\\\": 3, \\\"node_type\\\": \\\"group\\\"}')",
            "view -H",
            "without an array's metadata",
        ),
        (
            "contig_twice",
            "a = g['contig_id']; v = a[:]; v[1] = v[0]; a[:] = v",
            "view -H",
            "contig_id lists",
        ),
        (
            "filter_twice",
            "a = g['filter_id']; v = a[:]; v[2] = v[1]; a[:] = v",
            "view -H",
            "filter_id lists",
        ),
        (
            "comma_allele",
            "a = g['variant_allele']; v = a[:]; v[0, 1] = 'G,T'; a[:] = v",
            "view -H",
            "a value holds `,`",
        ),
        (
            "colon_format",
            "a = g['call_FT']; v = a[:]; v[0, 1] = 'q10:99'; a[:] = v",
            "view -H",
            "a value holds `:`",
        ),
        (
            "semicolon_info",
            "a = g['variant_AA']; v = a[:]; v[0] = 'A;DB'; a[:] = v",
            "view -H",
            "a value holds `;`",
        ),
        (
            "newline_sample",
            "a = g['sample_id']; v = a[:]; v[1] = 'S\\nEVIL'; a[:] = v",
            "query -l",
            "holds a line break",
        ),
    ];
    for (name, edit, cmd, says) in cases {
        let s = edited_copy(&original, &dir.path().join(name), edit);
        fails(&format!("{cmd} {}", s.display()), None, &[says]);
    }
    // What verify reads itself: the records' order and the sample names.
    for (name, edit, says) in [
        (
            "order",
            "a = g['variant_position']; v = a[:]; v[[0, 1]] = v[[1, 0]]; a[:] = v",
            "records out of order are missed by region reads",
        ),
        (
            "twice",
            "a = g['sample_id']; v = a[:]; v[1] = v[0]; a[:] = v",
            "sample NA00001 is listed twice (entries 0 and 1)",
        ),
        (
            "contig_twice_verify",
            "a = g['contig_id']; v = a[:]; v[1] = v[0]; a[:] = v",
            "is listed twice (entries 0 and 1)",
        ),
    ] {
        let s = edited_copy(&original, &dir.path().join(name), edit);
        damaged(&s, &[says]);
    }
}

/// A variable-length string chunk of another writer's (bio2zarr's Zarr v2 vlen-utf8)
/// whose first length runs past the chunk: zarrs panics decoding it. svar2 says one
/// error line naming the chunk, with no panic report above it.
#[test]
fn a_vlen_length_past_the_chunk_is_one_error_line() {
    if !tools(
        "a_vlen_length_past_the_chunk_is_one_error_line",
        &[Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("b2.vcz");
    let vcf = dir.path().join("all_fields.vcf.gz");
    sh_ok(&format!(
        "bgzip -c {} > {v} && tabix -p vcf {v} && \
         vcf2zarr convert -Q --zarr-format 2 -p 1 {v} {} >/dev/null 2>&1",
        data("all_fields.vcf").display(),
        s.display(),
        v = vcf.display(),
    ));
    edit_json(&s.join("variant_id/.zarray"), |m| {
        m["compressor"] = serde_json::Value::Null;
    });
    // Nine items of one byte each, the first said to be 2^30 bytes long.
    let mut chunk = 9u32.to_le_bytes().to_vec();
    for i in 0..9u8 {
        let len: u32 = if i == 0 { 1 << 30 } else { 1 };
        chunk.extend_from_slice(&len.to_le_bytes());
        chunk.push(b'a' + i);
    }
    std::fs::write(s.join("variant_id/0"), chunk).unwrap();
    fails(
        &format!("view -H {}", s.display()),
        None,
        &["variant_id/0: corrupt chunk: zarrs failed decoding it"],
    );
}
