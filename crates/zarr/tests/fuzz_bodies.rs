//! The store's fuzz targets (`fuzz/fuzz_targets/string_chunk.rs`,
//! `store_metadata.rs`) run as bounded, deterministic loops in every `cargo test`:
//! the same bodies over crafted inputs and seeded mutations of valid ones, so they
//! run where `cargo fuzz` (nightly) does not.

#[path = "../../../fuzz/bodies/string_chunk.rs"]
mod string_chunk;

#[path = "../../../fuzz/bodies/store_metadata.rs"]
mod store_metadata;

/// A deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Interesting 32-bit words for length prefixes and counts.
const WORDS: [u32; 8] = [
    0,
    1,
    2,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFF0,
    0xFFFF_FFFF,
    1 << 20,
];

/// `seed` mutated: bytes flipped, set, inserted, removed, words overwritten, cut.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(6) {
            0 if at < b.len() => b[at] ^= 1 << rng.below(8),
            1 if at < b.len() => b[at] = rng.next() as u8,
            2 => b.insert(at, rng.next() as u8),
            3 if at < b.len() => {
                b.remove(at);
            }
            4 if at + 4 <= b.len() => {
                b[at..at + 4].copy_from_slice(&WORDS[rng.below(WORDS.len())].to_le_bytes())
            }
            _ => b.truncate(at),
        }
    }
    b
}

#[test]
fn string_chunks_never_panic() {
    let codec = string_chunk::codec();
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for words in [vec![], vec!["a"], vec!["", "NA12878", "x"], vec!["é"; 5]] {
        let mut s = vec![words.len() as u8];
        s.extend(svar2_store::vlen::encode(&words));
        seeds.push(s.clone());
        // The same, zstd-compressed, and as the whole chain stores it.
        let mut z = vec![words.len() as u8];
        z.extend(zstd::bulk::compress(&s[1..], 1).unwrap());
        seeds.push(z);
    }
    let mut rng = Rng(0x5eed);
    let mut runs = 0;
    for seed in &seeds {
        string_chunk::run(&codec, seed);
        for _ in 0..3000 {
            string_chunk::run(&codec, &mutate(&mut rng, seed));
            runs += 1;
        }
    }
    assert!(runs >= 20_000, "{runs}");
}

/// Edits of one array's metadata (as JSON values): shapes and chunks made huge,
/// zero, negative, fractional, of another rank; types and codecs changed.
fn edit(rng: &mut Rng, v: &mut serde_json::Value) {
    use serde_json::json;
    let big = [
        json!(0),
        json!(1),
        json!(-1),
        json!(1.5),
        json!("7"),
        json!(null),
        json!(1u64 << 20),
        json!(1u64 << 31),
        json!(1u64 << 40),
        json!(1u64 << 62),
        json!(u64::MAX),
    ];
    let places = [
        "/shape",
        "/chunk_grid/configuration/chunk_shape",
        "/codecs/0/configuration/chunk_shape",
    ];
    for _ in 0..1 + rng.below(3) {
        match rng.below(5) {
            0..=2 => {
                let p = places[rng.below(places.len())];
                if let Some(a) = v.pointer_mut(p).and_then(|a| a.as_array_mut()) {
                    if !a.is_empty() {
                        let i = rng.below(a.len());
                        a[i] = big[rng.below(big.len())].clone();
                    } else {
                        a.push(json!(1));
                    }
                }
            }
            3 => {
                let p = places[rng.below(places.len())];
                if let Some(a) = v.pointer_mut(p).and_then(|a| a.as_array_mut()) {
                    if rng.below(2) == 0 {
                        a.pop();
                    } else {
                        a.push(big[rng.below(big.len())].clone());
                    }
                }
            }
            _ => {
                let types = ["int8", "int64", "string", "bool", "float32", "uint8"];
                v["data_type"] = json!(types[rng.below(types.len())]);
            }
        }
    }
}

#[test]
fn store_metadata_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    store_metadata::write_seed(&root);
    // The seed store opens and reads.
    let g = svar2_zarr::AnyGroup::open(&root).unwrap();
    assert_eq!(
        g.array("sample_id").unwrap().read_strings().unwrap().len(),
        3
    );
    let mut rng = Rng(0x5eed7);
    let mut runs = 0;
    for i in 0..store_metadata::ARRAYS.len() {
        let seed = serde_json::to_vec(&store_metadata::meta(i)).unwrap();
        let mut input = vec![i as u8];
        input.extend(&seed);
        store_metadata::run(&root, &input);
        for k in 0..80 {
            let mut input = vec![i as u8];
            if k % 3 == 0 {
                input.extend(mutate(&mut rng, &seed));
            } else {
                let mut v = store_metadata::meta(i);
                edit(&mut rng, &mut v);
                input.extend(serde_json::to_vec(&v).unwrap());
            }
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store_metadata::run(&root, &input)
            }))
            .is_err()
            {
                panic!("input: {}", String::from_utf8_lossy(&input[1..]));
            }
            runs += 1;
        }
    }
    assert!(runs >= 500, "{runs}");
}

/// Writes seed inputs for `cargo fuzz` (`fuzz/corpus/<target>/`).
#[test]
#[ignore]
fn write_seed_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let meta = root.join("store_metadata");
    std::fs::create_dir_all(&meta).unwrap();
    for i in 0..store_metadata::ARRAYS.len() {
        let mut input = vec![i as u8];
        input.extend(serde_json::to_vec_pretty(&store_metadata::meta(i)).unwrap());
        std::fs::write(meta.join(format!("seed{i}")), input).unwrap();
    }
    let strings = root.join("string_chunk");
    std::fs::create_dir_all(&strings).unwrap();
    for (i, words) in [vec!["a", "bc"], vec!["", "NA12878", "x"]]
        .iter()
        .enumerate()
    {
        let mut s = vec![words.len() as u8];
        s.extend(svar2_store::vlen::encode(words));
        std::fs::write(strings.join(format!("seed{i}")), &s).unwrap();
        let mut z = vec![words.len() as u8];
        z.extend(zstd::bulk::compress(&s[1..], 1).unwrap());
        std::fs::write(strings.join(format!("zstd{i}")), z).unwrap();
    }
}
