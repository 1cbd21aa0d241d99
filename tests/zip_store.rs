//! `.vcz.zip` stores: svar2 writes one the other tools open (vcztools, zarr-python,
//! bio2zarr's unzip) and reads theirs (bio2zarr's zipzarr, Python's zipfile stored or
//! deflated, a store in one folder of the archive) — each with the digest of the same
//! store as a directory. A zip output appears whole or not at all.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `python3 -c SCRIPT` must succeed.
fn python(script: &str) -> String {
    sh_ok(&format!("python3 -c '{script}'"))
}

/// A zip of the directory store `dir` made by Python's zipfile: `method` is
/// `ZIP_STORED` or `ZIP_DEFLATED`; `folder` puts the store in one archive folder.
fn python_zip(dir: &Path, zip: &Path, method: &str, folder: &str) {
    python(&format!(
        "import zipfile, pathlib\n\
         d = pathlib.Path(\"{d}\")\n\
         with zipfile.ZipFile(\"{z}\", \"w\", zipfile.{method}) as z:\n\
         \x20   for p in sorted(d.rglob(\"*\")):\n\
         \x20       z.write(p, \"{folder}\" + str(p.relative_to(d)))\n",
        d = dir.display(),
        z = zip.display()
    ));
}

#[test]
fn a_zip_store_is_the_directory_store_in_one_file() {
    if !tools(
        "a_zip_store_is_the_directory_store_in_one_file",
        &[
            Tool::Bcftools,
            Tool::Vcztools,
            Tool::ZarrPython,
            Tool::Xarray,
        ],
    ) {
        return;
    }
    let dir = test_dir();
    let src = growth_vcf(dir.path());
    let [_, gz, _] = forms(&src, dir.path(), "growth");
    let plain = dir.path().join("g.zarr");
    let zip = dir.path().join("g.vcz.zip");
    convert(&gz, &plain, &ONE_CHUNK_PER_SHARD);
    convert(&gz, &zip, &ONE_CHUNK_PER_SHARD);
    assert!(zip.is_file(), "a zip output is one file");
    assert_eq!(digest(&zip), digest(&plain), "same objects, same bytes");
    for leftover in ["g.vcz.zip.svar2-staging", "g.vcz.zip.svar2-partial"] {
        assert!(
            !dir.path().join(leftover).exists(),
            "{leftover} left behind"
        );
    }

    // svar2's own readers.
    let ok = svar2().arg("verify").arg(&zip).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let view = |s: &Path| {
        sh_ok(&format!(
            "{} view {}",
            env!("CARGO_BIN_EXE_svar2"),
            s.display()
        ))
    };
    assert_eq!(view(&zip), view(&plain));
    let query = |s: &Path| {
        sh_ok(&format!(
            "{} query -r 2:1-5000 -f '%CHROM\\t%POS[\\t%GT]\\n' {}",
            env!("CARGO_BIN_EXE_svar2"),
            s.display()
        ))
    };
    assert_eq!(query(&zip), query(&plain));

    // vcztools reads svar2's zip as it reads the input.
    assert_same_lines(
        "vcztools on the zip",
        &query_all(&gz, None),
        &query_vcztools(&gz, &zip, None),
    );
    // zarr-python's ZipStore sees the same arrays and values.
    let arrays = |open: &str| {
        python(&format!(
            "import zarr, hashlib\n\
             g = zarr.open_group({open}, mode=\"r\")\n\
             for k in sorted(g.array_keys()):\n\
             \x20   a = g[k][...]\n\
             \x20   print(k, a.shape, hashlib.md5(repr(a.tolist()).encode()).hexdigest())\n"
        ))
    };
    assert_eq!(
        arrays(&format!(
            "zarr.storage.ZipStore(\"{}\", mode=\"r\")",
            zip.display()
        )),
        arrays(&format!("\"{}\"", plain.display()))
    );

    // xarray opens it as users will (arrays agreeing on every dimension's length).
    python(&format!(
        "import xarray, zarr\n\
         ds = xarray.open_zarr(zarr.storage.ZipStore(\"{}\", mode=\"r\"), consolidated=False)\n\
         assert ds.sizes[\"variants\"] > 0 and ds.sizes[\"samples\"] > 0\n",
        zip.display()
    ));

    // Other writers' zips read as the directory does: stored, deflated, in a folder.
    for (name, method, folder) in [
        ("stored.zip", "ZIP_STORED", ""),
        ("deflated.zip", "ZIP_DEFLATED", ""),
        ("folder.zip", "ZIP_STORED", "g.zarr/"),
    ] {
        let z = dir.path().join(name);
        python_zip(&plain, &z, method, folder);
        assert_eq!(digest(&z), digest(&plain), "{name}");
        assert_eq!(view(&z), view(&plain), "{name}");
    }
    // (Not named .zip: recognised by its bytes.)
    let renamed = dir.path().join("stored.vcz");
    std::fs::rename(dir.path().join("stored.zip"), &renamed).unwrap();
    assert_eq!(digest(&renamed), digest(&plain));

    // rechunk reads a zip and writes one.
    let re_plain = dir.path().join("r.zarr");
    let re_zip = dir.path().join("r.vcz.zip");
    rechunk(&plain, &re_plain, &[]);
    rechunk(&zip, &re_zip, &[]);
    assert_eq!(digest(&re_zip), digest(&re_plain));
}

#[test]
fn bio2zarr_packs_and_unpacks_the_same_store() {
    if !tools(
        "bio2zarr_packs_and_unpacks_the_same_store",
        &[Tool::Bio2zarr],
    ) {
        return;
    }
    let dir = test_dir();
    let plain = dir.path().join("s.zarr");
    let zip = dir.path().join("s.vcz.zip");
    convert(&data("all_fields.vcf"), &plain, &[]);
    convert(&data("all_fields.vcf"), &zip, &[]);
    let theirs = dir.path().join("theirs.zip");
    let unpacked = dir.path().join("unpacked.zarr");
    sh_ok(&format!(
        "python3 -m bio2zarr zipzarr --keep {} {} && python3 -m bio2zarr zipzarr -u {} {}",
        plain.display(),
        theirs.display(),
        zip.display(),
        unpacked.display()
    ));
    let want = digest(&plain);
    assert_eq!(digest(&theirs), want, "bio2zarr's zip of svar2's directory");
    assert_eq!(digest(&unpacked), want, "svar2's zip unpacked by bio2zarr");
}

/// What `path` holds now (for "left as it was").
fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[test]
fn a_zip_output_is_replaced_only_whole_and_only_when_svar2_may() {
    let dir = test_dir();
    let input = data("all_fields.vcf");
    let zip = dir.path().join("s.vcz.zip");
    convert(&input, &zip, &[]);
    let before = bytes(&zip);

    // A store there: refused without --force, replaced with it.
    let err = convert_fails(&input, &zip, &[]);
    assert!(err.contains("pass --force"), "{err}");
    assert_eq!(bytes(&zip), before);
    convert(&input, &zip, &[]);
    assert_eq!(bytes(&zip), before, "the same input gives the same bytes");

    // A conversion that fails leaves the old store as it was, and nothing beside it.
    let bad = dir.path().join("bad.vcf");
    std::fs::write(
        &bad,
        "##fileformat=VCFv4.2\n##contig=<ID=1>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n\
         1\t5\t.\tA\tC\t.\t.\t.\n1\tx\t.\tA\tC\t.\t.\t.\n",
    )
    .unwrap();
    convert_fails(&bad, &zip, &["--force"]);
    assert_eq!(bytes(&zip), before);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains("svar2-")),
        "leftovers: {names:?}"
    );

    // Anyone else's file, or a directory, under the name: never replaced.
    let mine = dir.path().join("notes.zip");
    std::fs::write(&mine, b"my notes").unwrap();
    let err = convert_fails(&input, &mine, &["--force"]);
    assert!(err.contains("not a zip store"), "{err}");
    assert_eq!(bytes(&mine), b"my notes");
    let other_zip = dir.path().join("photos.zip");
    let photos = dir.path().join("photos");
    std::fs::create_dir(&photos).unwrap();
    std::fs::write(photos.join("a.jpg"), b"jpeg").unwrap();
    python_zip(&photos, &other_zip, "ZIP_STORED", "");
    let theirs = bytes(&other_zip);
    let err = convert_fails(&input, &other_zip, &["--force"]);
    assert!(err.contains("not a Zarr store"), "{err}");
    assert_eq!(bytes(&other_zip), theirs);
    let folder = dir.path().join("folder.zip");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("keep.txt"), b"x").unwrap();
    let err = convert_fails(&input, &folder, &["--force"]);
    assert!(err.contains("written as one file"), "{err}");
    assert!(folder.join("keep.txt").exists());

    // A partitioned conversion cannot meet in a zip: refused by name.
    let o = svar2()
        .args(["plan", "--partitions", "2", "-o"])
        .arg(dir.path().join("plan.json"))
        .arg(&input)
        .arg(dir.path().join("p.vcz.zip"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("zipzarr"));
}

/// `kill -9` while a conversion replaces a zip store: the old store is whole (same
/// bytes, `verify` clean), and the next run clears what the killed one left.
#[test]
fn a_killed_conversion_leaves_the_old_zip_whole() {
    let Some(corpus) = need_corpus("a_killed_conversion_leaves_the_old_zip_whole", "sim.bcf")
    else {
        return;
    };
    let dir = test_dir();
    let zip = dir.path().join("s.vcz.zip");
    convert(&data("all_fields.vcf"), &zip, &[]);
    let before = bytes(&zip);
    let staging: PathBuf = dir.path().join("s.vcz.zip.svar2-staging");
    for wait in [
        Duration::ZERO,
        Duration::from_millis(150),
        Duration::from_millis(400),
    ] {
        let mut child = svar2()
            .args(["convert", "-q", "--force", "--threads", "1"])
            .arg(&corpus)
            .arg(&zip)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while !staging.exists() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(wait);
        let _ = child.kill();
        let _ = child.wait();
        let now = bytes(&zip);
        if now != before {
            // Killed after the move: the new store, whole.
            let ok = svar2().arg("verify").arg(&zip).output().unwrap();
            assert!(ok.status.success(), "a zip neither old nor whole");
            return;
        }
        let ok = svar2().arg("verify").arg(&zip).output().unwrap();
        assert!(ok.status.success(), "the old zip no longer verifies");
    }
    // A run to the end after the kills clears their leftovers.
    convert(&corpus, &zip, &[]);
    assert!(!staging.exists());
    assert!(!dir.path().join("s.vcz.zip.svar2-partial").exists());
}

/// What a hostile pass found: a link at the partial file's name is never written
/// through; a staging folder a killed run left half-removed is replaced; an entry whose
/// CRC-32 does not match fails `verify`; two names for one key are refused.
#[test]
fn zip_writes_and_reads_refuse_what_a_hostile_user_plants() {
    let dir = test_dir();
    let input = data("all_fields.vcf");
    let zip = dir.path().join("s.vcz.zip");

    // A symbolic or hard link planted at `<out>.svar2-partial`.
    let victim = dir.path().join("victim.txt");
    for hard in [false, true] {
        std::fs::write(&victim, b"precious").unwrap();
        let partial = dir.path().join("s.vcz.zip.svar2-partial");
        let _ = std::fs::remove_file(&partial);
        if hard {
            std::fs::hard_link(&victim, &partial).unwrap();
        } else {
            std::os::unix::fs::symlink(&victim, &partial).unwrap();
        }
        convert(&input, &zip, &[]);
        assert_eq!(
            bytes(&victim),
            b"precious",
            "written through a link (hard: {hard})"
        );
        assert!(std::fs::symlink_metadata(&zip).unwrap().is_file());
    }

    // A staging folder a kill left half-removed (its marker removed last, so still
    // marked) is replaced; so is one holding a store, with --force.
    let staging = dir.path().join("s.vcz.zip.svar2-staging");
    std::fs::create_dir_all(staging.join("call_genotype/c/1/0")).unwrap();
    std::fs::write(staging.join("call_genotype/c/1/0/0"), b"x").unwrap();
    std::fs::write(staging.join(".svar2-in-progress"), b"svar2 0.1.0 pid 1\n").unwrap();
    convert(&input, &zip, &[]);
    assert!(!staging.exists());

    // An entry whose bytes no longer match its CRC-32 (the directory's CRC changed,
    // the bytes intact: only the zip's own check can tell).
    let good = bytes(&zip);
    let name = b"variant_position/c/0";
    let at = good
        .windows(name.len())
        .rposition(|w| w == name)
        .expect("the central directory names the shard");
    let mut bad = good.clone();
    assert_eq!(&bad[at - 46..at - 42], &[0x50, 0x4b, 0x01, 0x02]);
    bad[at - 46 + 16] ^= 0xFF;
    let damaged = dir.path().join("crc.vcz.zip");
    std::fs::write(&damaged, &bad).unwrap();
    let o = svar2().arg("verify").arg(&damaged).output().unwrap();
    assert!(!o.status.success(), "verify passed a zip with a bad CRC-32");
    assert!(String::from_utf8_lossy(&o.stdout).contains("CRC-32"));

    // Two names for one key (`x` and `./x`): refused, never read one way or the other.
    let aliased = dir.path().join("alias.vcz.zip");
    python(&format!(
        "import zipfile\n\
         src = zipfile.ZipFile(\"{src}\")\n\
         with zipfile.ZipFile(\"{dst}\", \"w\") as z:\n\
         \x20   for i in src.infolist():\n\
         \x20       z.writestr(i.filename, src.read(i))\n\
         \x20   z.writestr(\"./variant_position/c/0\", src.read(\"variant_position/zarr.json\"))\n",
        src = zip.display(),
        dst = aliased.display()
    ));
    let o = svar2().arg("view").arg(&aliased).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("two entries name"));
    // ... and one name twice (a zip appended to): the later copy is not read silently.
    let twice = dir.path().join("twice.vcz.zip");
    python(&format!(
        "import zipfile, warnings\n\
         warnings.simplefilter(\"ignore\")\n\
         src = zipfile.ZipFile(\"{src}\")\n\
         with zipfile.ZipFile(\"{dst}\", \"w\") as z:\n\
         \x20   for i in src.infolist():\n\
         \x20       z.writestr(i.filename, src.read(i))\n\
         \x20   z.writestr(\"variant_position/c/0\", src.read(\"variant_position/c/0\"))\n",
        src = zip.display(),
        dst = twice.display()
    ));
    for cmd in ["view", "verify", "digest"] {
        let o = svar2().arg(cmd).arg(&twice).output().unwrap();
        assert!(!o.status.success(), "{cmd} read a zip with one name twice");
    }

    // A zip cut short (an interrupted download) says so.
    let cut = dir.path().join("cut.vcz.zip");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
    let o = svar2().arg("verify").arg(&cut).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cut short"));

    // VCF is never written over a zip store, or into a directory store.
    let before = bytes(&zip);
    let other = dir.path().join("d.zarr");
    convert(&input, &other, &[]);
    for (target, read) in [(zip.clone(), &other), (other.join("zarr.json"), &zip)] {
        let o = svar2()
            .args(["view", "-o"])
            .arg(&target)
            .arg(read)
            .output()
            .unwrap();
        assert!(!o.status.success(), "view -o {}", target.display());
        assert!(String::from_utf8_lossy(&o.stderr).contains("is a Zarr store"));
    }
    assert_eq!(bytes(&zip), before);
}

/// A zip whose deflated `zarr.json` inflates to 300 MiB (valid JSON, then spaces) is
/// refused as a bomb before it is inflated: main held the whole of it (a 6 GiB one
/// took 6 GB) for `view -h`, `verify` and `inspect`.
#[test]
fn a_deflated_bomb_is_not_inflated() {
    if !tools("a_deflated_bomb_is_not_inflated", &[Tool::ZarrPython]) {
        return;
    }
    let dir = test_dir();
    let plain = dir.path().join("s.zarr");
    convert(&data("all_fields.vcf"), &plain, &[]);
    let bomb = dir.path().join("bomb.zip");
    python(&format!(
        "import os, zipfile\n\
         src = \"{src}\"\n\
         with zipfile.ZipFile(\"{dst}\", \"w\") as w:\n\
         \x20   for root, _, files in os.walk(src):\n\
         \x20       for f in sorted(files):\n\
         \x20           p = os.path.join(root, f); k = os.path.relpath(p, src)\n\
         \x20           data = open(p, \"rb\").read()\n\
         \x20           if k == \"call_genotype/zarr.json\":\n\
         \x20               zi = zipfile.ZipInfo(k); zi.compress_type = zipfile.ZIP_DEFLATED\n\
         \x20               with w.open(zi, \"w\", force_zip64=True) as out:\n\
         \x20                   out.write(data)\n\
         \x20                   for _ in range(300): out.write(b\" \" * (1 << 20))\n\
         \x20           else:\n\
         \x20               w.writestr(k, data)\n",
        src = plain.display(),
        dst = bomb.display()
    ));
    for cmd in ["view -h", "verify", "inspect"] {
        let o = sh(&format!(
            "ulimit -v 2000000; {} {cmd} {}",
            env!("CARGO_BIN_EXE_svar2"),
            bomb.display()
        ));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("zip bomb"), "{cmd}: {err}");
    }
}
