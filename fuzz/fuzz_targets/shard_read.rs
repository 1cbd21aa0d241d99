//! The store-reading path: a shard file's bytes split by its index (checksum and
//! bounds checked), then every inner chunk decoded by the codec chain of one of the
//! store's dtypes. Whatever the bytes, the answer is Ok or a clear Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use svar2_store::codec::InnerCodec;
use svar2_store::{shard, Dtype};

const DTYPES: [Dtype; 8] = Dtype::ALL;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let dtype = DTYPES[data[0] as usize % DTYPES.len()];
    let bitshuffle = data[0] & 0x80 != 0;
    let n = 1 + data[1] as usize % 8;
    let shape = [1 + data[2] as u64 % 40, 3];
    let bytes = &data[3..];
    let codec = InnerCodec::new(dtype, bitshuffle, 1).expect("codec");
    // Raw bytes as one chunk, and as a shard of n chunks.
    let _ = codec.decode(bytes, &shape);
    if let Ok(chunks) = shard::parse("fuzz", bytes, n) {
        for c in chunks.into_iter().flatten() {
            let _ = codec.decode(c, &shape);
        }
    }
    // The tail-only index parse agrees with the whole-shard one, whatever the bytes.
    let tail = &bytes[bytes.len().saturating_sub(shard::index_len(n))..];
    let spans = shard::parse_index("fuzz", tail, n, bytes.len() as u64);
    assert_eq!(spans.is_ok(), shard::parse("fuzz", bytes, n).is_ok());
    // A valid shard holding this chunk must split back to exactly it.
    let shard = shard::assemble(&[Some(bytes.to_vec()), None]);
    if let Some(s) = shard {
        let parts = shard::parse("fuzz", &s, 2).expect("own shard");
        assert_eq!(parts, vec![Some(bytes), None]);
    }
});
