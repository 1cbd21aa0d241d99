//! The batch plan on the CPU: zstd per task, copies, then the unshuffle computed byte
//! by byte with exactly the index arithmetic of the GPU kernel (one worker per output
//! byte), so that agreeing with c-blosc here proves the plan and the kernel's rules.

use crate::batch_plan::{BatchPlan, Buf, UnshuffleTask};
use crate::error::{Error, Result};

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

/// Runs `plan`'s decode; returns the `out` buffer (the decoded chunks at
/// `plan.chunks`).
pub fn execute(plan: &BatchPlan) -> Result<Vec<u8>> {
    let mut out = vec![0u8; plan.out_bytes];
    let mut stage = vec![0u8; plan.stage_bytes];
    let mut z = zstd::bulk::Decompressor::new().map_err(|e| Error::Codec(e.to_string()))?;
    let key = |c: u32| {
        plan.keys
            .get(c as usize)
            .map_or("?", String::as_str)
            .to_string()
    };
    for t in &plan.zstd {
        let dst = match t.to {
            Buf::Stage => &mut stage[t.dst..t.dst + t.len],
            _ => &mut out[t.dst..t.dst + t.len],
        };
        let n = z
            .decompress_to_buffer(&plan.input[t.src.clone()], dst)
            .map_err(|e| Error::Corrupt {
                key: key(t.chunk),
                msg: format!("zstd stream: {e}"),
            })?;
        if n != t.len {
            return Err(Error::Corrupt {
                key: key(t.chunk),
                msg: format!("zstd stream gave {n} bytes of {}", t.len),
            });
        }
    }
    for c in &plan.copies {
        let src: Vec<u8> = match c.from {
            Buf::Input => plan.input[c.src..c.src + c.len].to_vec(),
            Buf::Stage => stage[c.src..c.src + c.len].to_vec(),
            Buf::Out => out[c.src..c.src + c.len].to_vec(),
        };
        match c.to {
            Buf::Stage => stage[c.dst..c.dst + c.len].copy_from_slice(&src),
            _ => out[c.dst..c.dst + c.len].copy_from_slice(&src),
        }
    }
    for t in &plan.unshuffle {
        for p in 0..t.len {
            out[t.dst + p] = unshuffled_byte(&stage, t, p);
        }
    }
    Ok(out)
}

/// The scatter kernel's work on the CPU: every rectangle of `plan` from `out` (as
/// [`execute`] returns it) into `patches` (`plan.patch_bytes` long).
pub fn scatter(plan: &BatchPlan, out: &[u8], patches: &mut [u8]) {
    for r in &plan.rects {
        for row in 0..r.rows {
            let (s, d) = (r.src + row * r.src_stride, r.dst + row * r.dst_stride);
            patches[d..d + r.row_bytes].copy_from_slice(&out[s..s + r.row_bytes]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch_plan::{BatchPlan, ChunkInput, ALIGN};
    use svar2_blosc::testing::noise;
    use svar2_store::codec::{InnerCodec, Raw};
    use svar2_store::Dtype;

    /// The blosc frame of an encoded chunk (its crc32c checked and removed, as the
    /// reader does before it plans a batch).
    fn frame_of(stored: &[u8]) -> Vec<u8> {
        svar2_store::chain::verified("k", "f", stored)
            .unwrap()
            .to_vec()
    }

    /// One batch of many chunks — every chain svar2 writes (each fixed-size type, bit
    /// and byte shuffle, memcpyed sizes, N % 8 ≠ 0, several blocks) — decodes through
    /// the plan to exactly what c-blosc gives (c-blosc's own split and raw frames:
    /// `tests/blosc_frames.rs`).
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
                    let stored = codec.encode(&Raw::Fixed(raw.clone()), &[n as u64]).unwrap();
                    let Raw::Fixed(theirs) = codec.decode(&stored, &[n as u64]).unwrap() else {
                        panic!()
                    };
                    assert_eq!(theirs, raw);
                    frames.push((
                        format!("{dtype:?}/{bitshuffle}/{n}"),
                        frame_of(&stored),
                        raw,
                    ));
                }
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
        assert!(!plan.copies.is_empty(), "memcpyed data are copies");
        assert!(
            plan.zstd
                .iter()
                .all(|t| t.src.start % ALIGN == 0 && t.dst % ALIGN == 0),
            "nvCOMP's alignment"
        );
        let out = execute(&plan).unwrap();
        for ((key, _, want), range) in frames.iter().zip(&plan.chunks) {
            assert_eq!(&out[range.clone()], &want[..], "{key}");
        }
    }

    #[test]
    fn a_corrupt_frame_names_its_chunk() {
        let codec = InnerCodec::new(Dtype::I32, false, 1).unwrap();
        let enc = frame_of(&codec.encode(&Raw::Fixed(noise(4000, 1)), &[1000]).unwrap());
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
        let e = BatchPlan::build(&inputs)
            .and_then(|p| execute(&p))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a/c/1"), "{e}");
    }
}
