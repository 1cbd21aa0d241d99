//! Fuzz body (shared by `fuzz_targets/string_chunk.rs` and the store crate's
//! deterministic `tests/fuzz_bodies.rs` loop): a string chunk's bytes, checked and
//! decoded as vlen-utf8 (raw, and after zstd, and through the whole inner chain with
//! its crc32c). Whatever the bytes: Ok or a clear Err naming the chunk, never a panic
//! or an allocation the bytes do not back; what decodes re-encodes to the same
//! strings.

use svar2_store::codec::{InnerCodec, Raw};
use svar2_store::{vlen, Dtype};

/// One run: `data[0]` is the element count the chunk shape says, the rest the bytes.
pub fn run(codec: &InnerCodec, data: &[u8]) {
    let Some((&n, bytes)) = data.split_first() else {
        return;
    };
    let n = n as usize;
    let ours = vlen::decode("fuzz/c/0", bytes, n);
    if let Err(e) = &ours {
        assert!(e.to_string().starts_with("fuzz/c/0: "), "{e}");
    }
    let _ = vlen::decode_zstd("fuzz/c/0", bytes, n);
    let _ = codec.decode(bytes, &[n as u64]);
    if let Ok((strings, offsets)) = ours {
        assert_eq!(offsets.len(), n + 1);
        assert_eq!(*offsets.last().unwrap(), strings.len());
        // What decodes is exactly the input's layout: re-encoding gives its bytes,
        // and the chain (zarrs' encode, svar2's decode) gives the strings back.
        let items: Vec<&[u8]> = offsets.windows(2).map(|w| &strings[w[0]..w[1]]).collect();
        assert_eq!(vlen::encode(&items), bytes);
        let raw = Raw::Strings {
            bytes: strings,
            offsets,
        };
        let shape = [n.max(1) as u64];
        if n > 0 {
            if let Ok(enc) = codec.encode(&raw, &shape) {
                assert_eq!(codec.decode(&enc, &shape).unwrap(), raw);
            }
        }
    }
}

/// The string chain svar2 writes.
pub fn codec() -> InnerCodec {
    InnerCodec::new(Dtype::Str, false, 1).unwrap()
}
