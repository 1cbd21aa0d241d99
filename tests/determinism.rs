//! The same input gives byte-identical stores whatever the thread count, run to run.

mod common;
use common::*;

#[test]
fn digest_is_identical_across_runs_and_thread_counts() {
    let dir = tempfile::tempdir().unwrap();
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
    let geometry = [
        "--variants-chunk",
        "100",
        "--variants-shard",
        "400",
        "--samples-chunk",
        "10",
        "--samples-shard",
        "20",
    ];
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
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("d.zarr");
    convert(&data("all_fields.vcf"), &store, &[]);
    let before = digest(&store);
    let f = store.join("variant_position/zarr.json");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push(' ');
    std::fs::write(&f, text).unwrap();
    assert_ne!(before, digest(&store));
}
