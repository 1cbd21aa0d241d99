//! Inner-chunk encoding and decoding: numeric chunks are encoded by svar2's own
//! blosc encoder (c-blosc's exact bytes, faster; see [`svar2_blosc`]), strings and
//! every decode go through zarrs' codec implementations, so the bytes svar2 writes
//! are exactly what any zarrs-based (and zarr-python) reader decodes.

use crate::chain::{inner_codecs, BLOSC_BLOCKSIZE, CHECKSUM_BYTES};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::num::NonZeroU64;
use svar2_blosc::{Encoder, Shuffle};
use zarrs::array::{
    ArrayBytes, ArrayBytesOffsets, ArrayToBytesCodecTraits, CodecChain, CodecOptions, DataType,
    FillValue,
};
use zarrs::metadata::v3::MetadataV3;

/// Decoded (or to-be-encoded) chunk contents.
#[derive(Debug, Clone, PartialEq)]
pub enum Raw {
    /// Little-endian fixed-size elements.
    Fixed(Vec<u8>),
    /// Concatenated UTF-8 strings; `offsets` has one more entry than there are strings.
    Strings { bytes: Vec<u8>, offsets: Vec<usize> },
}

impl Raw {
    /// Whether every element equals the fill value (zero bytes / empty string), in
    /// which case the chunk is not stored.
    pub fn is_fill(&self) -> bool {
        match self {
            // OR-folded in blocks: the fold vectorises (a per-byte early exit does
            // not), and genotype chunks are mostly zero bytes (0|0 calls).
            Raw::Fixed(b) => b
                .chunks(1024)
                .all(|c| c.iter().fold(0u8, |acc, &x| acc | x) == 0),
            Raw::Strings { bytes, .. } => bytes.is_empty(),
        }
    }
}

impl Raw {
    /// Takes the bytes zarrs decoded (any array's, not only svar2's).
    pub fn from_array_bytes(bytes: ArrayBytes<'_>) -> Result<Raw> {
        Ok(match bytes {
            ArrayBytes::Fixed(b) => Raw::Fixed(b.into_owned()),
            ArrayBytes::Variable(v) => {
                let (bytes, offsets) = v.into_parts();
                Raw::Strings {
                    bytes: bytes.into_owned(),
                    offsets: offsets.to_vec(),
                }
            }
            ArrayBytes::Optional(_) => {
                return Err(Error::Codec(
                    "optional (nullable) data is not VCF Zarr".into(),
                ))
            }
        })
    }
}

/// The inner codec chain of one (dtype, shuffle, level) combination.
pub struct InnerCodec {
    chain: CodecChain,
    data_type: DataType,
    fill: FillValue,
    options: CodecOptions,
    /// Numeric chunks: (type size, shuffle, blosc clevel) for [`Encoder`].
    blosc: Option<(usize, Shuffle, u8)>,
}

/// The most a thread's frame buffer keeps between chunks (an inner chunk of 1,000
/// variants x 1,000 samples of diploid int8 calls is 2 MB).
const KEPT_FRAME_BYTES: usize = 8 << 20;

thread_local! {
    /// Each encoding thread's blosc encoder (its zstd context and buffers) and the
    /// buffer it writes frames into.
    static ENCODER: RefCell<Option<(Encoder, Vec<u8>)>> = const { RefCell::new(None) };
}

fn codec_err(e: impl std::fmt::Display) -> Error {
    Error::Codec(e.to_string())
}

impl InnerCodec {
    /// Builds the chain from the same JSON that goes into the array metadata.
    pub fn new(dtype: Dtype, bitshuffle: bool, level: i32) -> Result<InnerCodec> {
        let metas: Vec<MetadataV3> =
            serde_json::from_value(inner_codecs(dtype, bitshuffle, level)).map_err(codec_err)?;
        let chain = CodecChain::from_metadata(&metas).map_err(codec_err)?;
        let dt_json = dtype.json();
        let dt_meta: MetadataV3 = serde_json::from_value(dt_json).map_err(codec_err)?;
        let data_type = DataType::from_metadata(&dt_meta).map_err(codec_err)?;
        let fill = match dtype.size() {
            Some(n) => FillValue::from(vec![0u8; n]),
            None => FillValue::from(Vec::<u8>::new()),
        };
        // Chunks are encoded in parallel by the caller; each encode stays on one thread.
        let options = CodecOptions::default().with_concurrent_target(1);
        let blosc = match dtype.size() {
            Some(size) => {
                let shuffle = if bitshuffle {
                    Shuffle::Bit
                } else {
                    Shuffle::Byte
                };
                let clevel = u8::try_from(level)
                    .ok()
                    .filter(|l| *l <= 9)
                    .ok_or_else(|| Error::Codec(format!("blosc clevel {level} (0-9)")))?;
                Some((size, shuffle, clevel))
            }
            None => None,
        };
        Ok(InnerCodec {
            chain,
            data_type,
            fill,
            options,
            blosc,
        })
    }

    fn shape(shape: &[u64]) -> Vec<NonZeroU64> {
        shape
            .iter()
            .map(|&s| NonZeroU64::new(s.max(1)).expect("nonzero"))
            .collect()
    }

    /// Encodes one inner chunk of the given shape.
    pub fn encode(&self, raw: &Raw, shape: &[u64]) -> Result<Vec<u8>> {
        match (raw, self.blosc) {
            (Raw::Fixed(b), Some((typesize, shuffle, clevel))) => {
                ENCODER.with_borrow_mut(|slot| {
                    let (enc, frame) = match slot {
                        Some(e) => e,
                        None => slot.insert((Encoder::new()?, Vec::new())),
                    };
                    // The frame goes to the thread's buffer (room for the worst case,
                    // reused), and only its bytes to the chunk's own: a chunk of rare
                    // variants compresses ~100x, and a worst-case buffer per chunk
                    // cost a 500,000-sample conversion ~6 % in malloc and free.
                    frame.clear();
                    let blocksize = BLOSC_BLOCKSIZE as usize;
                    enc.encode(b, typesize, shuffle, clevel, blocksize, frame)?;
                    let mut out = Vec::with_capacity(frame.len() + CHECKSUM_BYTES);
                    out.extend_from_slice(frame);
                    out.extend_from_slice(&crc32c::crc32c(frame).to_le_bytes());
                    // A thread that lives on (a Python process's pool) keeps at most
                    // this much between chunks.
                    if frame.capacity() > KEPT_FRAME_BYTES {
                        *frame = Vec::new();
                    }
                    Ok(out)
                })
            }
            _ => self.encode_with_zarrs(raw, shape),
        }
    }

    /// Encodes one inner chunk through zarrs' codec chain (c-blosc for numbers): the
    /// reference [`encode`](Self::encode)'s own blosc encoder is tested against.
    pub fn encode_with_zarrs(&self, raw: &Raw, shape: &[u64]) -> Result<Vec<u8>> {
        let bytes = match raw {
            Raw::Fixed(b) => ArrayBytes::new_flen(b.as_slice()),
            Raw::Strings { bytes, offsets } => ArrayBytes::new_vlen(
                bytes.as_slice(),
                ArrayBytesOffsets::new(offsets.as_slice()).map_err(codec_err)?,
            )
            .map_err(codec_err)?,
        };
        let out = self
            .chain
            .encode(
                bytes,
                &Self::shape(shape),
                &self.data_type,
                &self.fill,
                &self.options,
            )
            .map_err(codec_err)?;
        // The codec allocates for the worst case; a chunk held until its shard is
        // complete keeps only its bytes (4 KiB genotype chunks shrink ~10×).
        let mut out = out.into_owned();
        out.shrink_to_fit();
        Ok(out)
    }

    /// Decodes one inner chunk of the given shape (strings through
    /// [`crate::vlen`], checked and bounded, never zarrs' vlen-utf8).
    pub fn decode(&self, encoded: &[u8], shape: &[u64]) -> Result<Raw> {
        if self.blosc.is_none() {
            let dims: Vec<u64> = shape.iter().map(|&x| x.max(1)).collect();
            let n = crate::boxes::elements(&dims)
                .ok_or_else(|| Error::Codec(format!("chunk shape {shape:?} overflows")))?;
            let data = crate::chain::verified("chunk", "(in memory)", encoded)?;
            let (bytes, offsets) = crate::vlen::decode_zstd("chunk", data, n)?;
            return Ok(Raw::Strings { bytes, offsets });
        }
        let out = self
            .chain
            .decode(
                encoded.into(),
                &Self::shape(shape),
                &self.data_type,
                &self.fill,
                &self.options,
            )
            .map_err(codec_err)?;
        Raw::from_array_bytes(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chain svar2 writes: each data type, bit and byte shuffle, and a length
    /// that is not a multiple of 8 (the shuffles' leftover rule).
    #[test]
    fn encode_then_decode_every_chain() {
        let shape = [37u64, 3];
        let n = 37 * 3;
        for dtype in Dtype::ALL {
            for bitshuffle in [false, true] {
                let codec = InnerCodec::new(dtype, bitshuffle, 1).unwrap();
                let raw = match dtype.size() {
                    Some(sz) => Raw::Fixed((0..n * sz).map(|i| (i * 7 % 251) as u8).collect()),
                    None => {
                        let words: Vec<String> = (0..n).map(|i| "x".repeat(i % 5)).collect();
                        let mut offsets = vec![0];
                        for w in &words {
                            offsets.push(offsets.last().unwrap() + w.len());
                        }
                        Raw::Strings {
                            bytes: words.concat().into_bytes(),
                            offsets,
                        }
                    }
                };
                // Char holds UTF-32 code points: keep them valid.
                let raw = match (dtype, raw) {
                    (Dtype::Char, Raw::Fixed(_)) => Raw::Fixed(
                        (0..n as u32)
                            .flat_map(|i| (65 + i % 26).to_le_bytes())
                            .collect(),
                    ),
                    (Dtype::Bool, Raw::Fixed(b)) => Raw::Fixed(b.iter().map(|x| x & 1).collect()),
                    (_, r) => r,
                };
                let enc = codec.encode(&raw, &shape).unwrap();
                assert_eq!(codec.decode(&enc, &shape).unwrap(), raw, "{dtype:?}");
                // Damaged bytes are an error, never a panic: cut short, or one bit
                // flipped anywhere (the chain ends with crc32c).
                assert!(codec.decode(&enc[..enc.len() / 2], &shape).is_err());
                for at in [0, enc.len() / 2, enc.len() - 1] {
                    let mut bad = enc.clone();
                    bad[at] ^= 0x10;
                    assert!(codec.decode(&bad, &shape).is_err(), "{dtype:?} byte {at}");
                }
            }
        }
    }

    /// svar2's own blosc encoder writes c-blosc's bytes (zarrs' encode), which zarrs
    /// decodes back: every fixed-size type, both shuffles, sizes around every rule
    /// (under 128 bytes, not a multiple of 8 elements, one block, a partial last block,
    /// many), contents from all-zero through incompressible, levels 0 to 9.
    #[test]
    fn own_blosc_frames_equal_c_bloscs() {
        let mut enc = Encoder::new().unwrap();
        let (mut checked, mut stored_as_is, mut raw_streams) = (0, 0, 0);
        for dtype in Dtype::ALL {
            let Some(size) = dtype.size() else { continue };
            for bitshuffle in [false, true] {
                let shuffle = if bitshuffle {
                    Shuffle::Bit
                } else {
                    Shuffle::Byte
                };
                for n in [1usize, 7, 31, 32, 100, 1001, 4096, 65_537, 140_000] {
                    let len = n * size;
                    let contents = [
                        vec![0; len],
                        svar2_blosc::testing::noise(len, n as u64 + size as u64),
                        (0..len).map(|i| (i / 3 % 7) as u8).collect(),
                        // Incompressible: every byte from a wide generator.
                        (0..len as u64)
                            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
                            .collect::<Vec<u8>>(),
                    ];
                    for (c, raw) in contents.into_iter().enumerate() {
                        // Values zarrs decodes: booleans 0/1, characters code points.
                        let raw = match dtype {
                            Dtype::Bool => raw.iter().map(|b| b & 1).collect(),
                            Dtype::Char => raw
                                .chunks_exact(4)
                                .flat_map(|x| (65 + u32::from(x[0]) % 26).to_le_bytes())
                                .collect(),
                            _ => raw,
                        };
                        let levels: &[u8] = if c == 1 { &[0, 1, 3, 9] } else { &[1] };
                        for &clevel in levels {
                            let what = format!("{dtype:?} bitshuffle {bitshuffle} n {n} contents {c} clevel {clevel}");
                            let codec = InnerCodec::new(dtype, bitshuffle, clevel as i32).unwrap();
                            let (fixed, shape) = (Raw::Fixed(raw.clone()), [n as u64]);
                            let want = codec.encode_with_zarrs(&fixed, &shape).unwrap();
                            let ours = codec.encode(&fixed, &shape).unwrap();
                            assert!(ours == want, "{what}");
                            assert_eq!(codec.decode(&ours, &shape).unwrap(), fixed, "{what}");
                            // The encoder appends after what its buffer holds.
                            let mut got = vec![7u8; 3];
                            let block = BLOSC_BLOCKSIZE as usize;
                            enc.encode(&raw, size, shuffle, clevel, block, &mut got)
                                .unwrap();
                            assert!(got[3..] == want[..want.len() - CHECKSUM_BYTES], "{what}");
                            checked += 1;
                            let f = svar2_blosc::Frame::parse("k", &got[3..], raw.len()).unwrap();
                            stored_as_is += usize::from(f.memcpyed);
                            raw_streams += f
                                .blocks
                                .iter()
                                .flat_map(|b| &b.streams)
                                .filter(|s| s.raw)
                                .count();
                        }
                    }
                }
            }
        }
        // Every path was taken: frames stored as is, and blocks stored raw.
        assert!(checked > 500, "{checked}");
        assert!(
            stored_as_is > 50 && raw_streams > 10,
            "{stored_as_is} {raw_streams}"
        );
    }

    /// The frame parser (reader and GPU plan) accepts a frame's block size exactly
    /// when c-blosc (through zarrs) does: 0, negative, over the decoded size or
    /// 2^31 - 1 are refused by both, memcpyed frames included.
    #[test]
    fn frame_parser_and_c_blosc_agree_on_block_sizes() {
        let mut dec = svar2_blosc::Decoder::new().unwrap();
        for (n, contents) in [(20usize, 0u8), (5000, 0), (5000, 1)] {
            let codec = InnerCodec::new(Dtype::I32, false, 1).unwrap();
            let raw: Vec<u8> = (0..n * 4)
                .map(|i| {
                    if contents == 0 {
                        (i % 3) as u8
                    } else {
                        (i * 7919 % 251) as u8
                    }
                })
                .collect();
            let shape = [n as u64];
            let enc = codec.encode(&Raw::Fixed(raw.clone()), &shape).unwrap();
            let frame = &enc[..enc.len() - CHECKSUM_BYTES];
            let stored = i32::from_le_bytes(frame[8..12].try_into().unwrap());
            for bs in [
                0i32,
                -1,
                1,
                stored,
                (n * 4) as i32,
                (n * 4) as i32 + 1,
                i32::MAX,
            ] {
                let mut f = frame.to_vec();
                f[8..12].copy_from_slice(&bs.to_le_bytes());
                let mut out = vec![0u8; n * 4];
                let ours = svar2_blosc::Frame::parse("k", &f, n * 4)
                    .and_then(|fr| dec.decode("k", &f, &fr, &mut out))
                    .is_ok();
                f.extend_from_slice(&crc32c::crc32c(&f).to_le_bytes());
                let theirs = codec.decode(&f, &shape).is_ok();
                assert_eq!(ours, theirs, "n {n} contents {contents} block size {bs}");
                if bs == stored {
                    assert!(ours && out == raw);
                }
            }
        }
    }
}
