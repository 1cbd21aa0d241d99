//! The store-reading path: a shard file's bytes split by its index (checksum and
//! bounds checked), then every inner chunk decoded by the codec chain of one of the
//! store's dtypes. Whatever the bytes, the answer is Ok or a clear Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use svar2_convert::arrays::Dtype;
use svar2_convert::codec::InnerCodec;

const DTYPES: [Dtype; 8] = [
    Dtype::Bool,
    Dtype::I8,
    Dtype::I16,
    Dtype::I32,
    Dtype::I64,
    Dtype::F32,
    Dtype::Str,
    Dtype::Char,
];

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
    if let Ok(chunks) = svar2_convert::shard::parse(Path::new("fuzz"), bytes, n) {
        for c in chunks.into_iter().flatten() {
            let _ = codec.decode(c, &shape);
        }
    }
    // A valid shard holding this chunk must split back to exactly it.
    let shard = svar2_convert::shard::assemble(&[Some(bytes.to_vec()), None]);
    if let Some(s) = shard {
        let parts = svar2_convert::shard::parse(Path::new("fuzz"), &s, 2).expect("own shard");
        assert_eq!(parts, vec![Some(bytes), None]);
    }
});
