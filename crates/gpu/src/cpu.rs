//! The batch plan on the CPU: zstd per task, copies, then the unshuffle computed byte
//! by byte with exactly the index arithmetic of the GPU kernel (one worker per output
//! byte), so that agreeing with c-blosc here proves the plan and the kernel's rules.

use crate::plan::{BatchPlan, UnshuffleTask};
use svar2_store::{Error, Result};

/// One output byte of an unshuffle, as a kernel thread computes it.
pub fn unshuffled_byte(stage: &[u8], t: &UnshuffleTask, p: usize) -> u8 {
    let ts = t.typesize;
    let n = t.len / ts;
    let src = &stage[t.src..t.src + t.len];
    if p >= n * ts {
        return src[p]; // leftover bytes past the last whole element
    }
    let (i, j) = (p / ts, p % ts);
    if t.bit {
        if t.len < ts || !n.is_multiple_of(8) {
            return src[p]; // c-blosc leaves such blocks unshuffled
        }
        let plane = n / 8;
        (0..8).fold(0u8, |v, k| {
            v | (((src[(8 * j + k) * plane + i / 8] >> (i % 8)) & 1) << k)
        })
    } else if ts > 1 {
        src[j * n + i]
    } else {
        src[p]
    }
}

/// Runs `plan`; returns the decoded chunks back to back.
pub fn execute(plan: &BatchPlan, keys: &[&str]) -> Result<Vec<u8>> {
    let mut out = vec![0u8; plan.out_bytes];
    let mut stage = vec![0u8; plan.stage_bytes];
    let mut z = zstd::bulk::Decompressor::new().map_err(|e| Error::Codec(e.to_string()))?;
    for t in &plan.zstd {
        let dst = if t.to_stage {
            &mut stage[t.dst.clone()]
        } else {
            &mut out[t.dst.clone()]
        };
        let n = z
            .decompress_to_buffer(&plan.input[t.src.clone()], dst)
            .map_err(|e| Error::Corrupt {
                key: keys.get(t.chunk as usize).unwrap_or(&"?").to_string(),
                msg: format!("zstd stream: {e}"),
            })?;
        if n != t.dst.len() {
            return Err(Error::Corrupt {
                key: keys.get(t.chunk as usize).unwrap_or(&"?").to_string(),
                msg: format!("zstd stream gave {n} bytes of {}", t.dst.len()),
            });
        }
    }
    for c in &plan.copies {
        let src = &plan.input[c.src.clone()];
        let dst = if c.to_stage {
            &mut stage[c.dst..c.dst + src.len()]
        } else {
            &mut out[c.dst..c.dst + src.len()]
        };
        dst.copy_from_slice(src);
    }
    for t in &plan.unshuffle {
        for p in 0..t.len {
            out[t.dst + p] = unshuffled_byte(&stage, t, p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{BatchPlan, ChunkInput};
    use svar2_store::blosc::testing::{hand_frame, noise};
    use svar2_store::codec::{InnerCodec, Raw};
    use svar2_store::Dtype;

    /// One batch of many chunks — every chain svar2 writes (each fixed-size type, bit
    /// and byte shuffle, memcpyed sizes, N % 8 ≠ 0, several blocks) and hand-made split
    /// and raw frames — decodes through the plan to exactly what c-blosc gives.
    #[test]
    fn a_batch_decodes_as_c_blosc_does() {
        let mut frames: Vec<(String, Vec<u8>, Vec<u8>)> = Vec::new();
        for dtype in Dtype::ALL {
            let Some(size) = dtype.size() else { continue };
            for bitshuffle in [false, true] {
                let codec = InnerCodec::new(dtype, bitshuffle, 1).unwrap();
                for n in [1usize, 7, 100, 1001, 4096, 70_001] {
                    let mut raw = noise(n * size, (n * size) as u64 + bitshuffle as u64);
                    if dtype == Dtype::Bool {
                        raw.iter_mut().for_each(|b| *b &= 1);
                    }
                    let enc = codec.encode(&Raw::Fixed(raw.clone()), &[n as u64]).unwrap();
                    let Raw::Fixed(theirs) = codec.decode(&enc, &[n as u64]).unwrap() else {
                        panic!()
                    };
                    assert_eq!(theirs, raw);
                    frames.push((format!("{dtype:?}/{bitshuffle}/{n}"), enc, raw));
                }
            }
        }
        let data = noise(5000, 9);
        for (flags, raw) in [
            (0x80 | 0x04, false),
            (0x80 | 0x01, false),
            (0x80 | 0x01, true),
            (0x80, false),
        ] {
            for t in [1usize, 2, 4, 8] {
                frames.push((
                    format!("hand {flags:#x} t{t} raw {raw}"),
                    hand_frame(&data, t, 2048, flags, raw),
                    Vec::new(),
                ));
            }
        }
        // The hand frames' expected bytes: svar2's own frame decoder (checked against
        // the formula and c-blosc in the store crate).
        let mut dec = svar2_store::blosc::Decoder::new().unwrap();
        for (key, enc, want) in frames.iter_mut() {
            if want.is_empty() {
                let f = svar2_store::blosc::Frame::parse(key, enc, data.len()).unwrap();
                want.resize(data.len(), 0);
                dec.decode(key, enc, &f, want).unwrap();
            }
        }
        let inputs: Vec<ChunkInput> = frames
            .iter()
            .map(|(k, e, w)| ChunkInput {
                key: k,
                bytes: e,
                nbytes: w.len(),
            })
            .collect();
        let plan = BatchPlan::build(&inputs).unwrap();
        assert!(
            plan.zstd.len() > frames.len(),
            "split streams are separate tasks"
        );
        assert!(!plan.copies.is_empty(), "raw and memcpyed data are copies");
        let keys: Vec<&str> = frames.iter().map(|f| f.0.as_str()).collect();
        let out = execute(&plan, &keys).unwrap();
        for ((key, _, want), range) in frames.iter().zip(&plan.chunks) {
            assert_eq!(&out[range.clone()], &want[..], "{key}");
        }
    }

    #[test]
    fn a_corrupt_frame_names_its_chunk() {
        let codec = InnerCodec::new(Dtype::I32, false, 1).unwrap();
        let enc = codec.encode(&Raw::Fixed(noise(4000, 1)), &[1000]).unwrap();
        let mut bad = enc.clone();
        bad[20] ^= 0xff;
        let inputs = [
            ChunkInput {
                key: "a/c/0",
                bytes: &enc,
                nbytes: 4000,
            },
            ChunkInput {
                key: "a/c/1",
                bytes: &bad,
                nbytes: 4000,
            },
        ];
        let keys = ["a/c/0", "a/c/1"];
        let e = BatchPlan::build(&inputs)
            .and_then(|p| execute(&p, &keys))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a/c/1"), "{e}");
    }
}
