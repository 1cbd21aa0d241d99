//! svar2's own blosc frame parser and decoder (the reader's fast path) and the GPU
//! path's batch plan with its CPU executor: whatever the bytes, Ok or a clear Err,
//! never a panic; the plan decodes what the decoder decodes; and that equals c-blosc's
//! decode (through zarrs) whenever both accept the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use svar2_blosc::{Decoder, Frame};
use svar2_store::codec::{InnerCodec, Raw};
use svar2_store::Dtype;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let n = 1 + data[0] as usize * 7 + data[1] as usize;
    let bytes = &data[2..];
    let mut dec = Decoder::new().expect("decoder");
    let Ok(frame) = Frame::parse("fuzz", bytes, n) else {
        return;
    };
    let mut out = vec![0u8; n];
    let ours = dec.decode("fuzz", bytes, &frame, &mut out);
    // Partial decodes never panic either.
    let mut part = vec![0u8; n];
    let _ = dec.decode_ranges("fuzz", bytes, &frame, &mut part, Some(&[(0, n / 2), (n / 3, n)]));
    // The GPU batch plan of the same frame: the same bytes, or an error.
    let plan = svar2_gpu::batch_plan::BatchPlan::build(&[svar2_gpu::batch_plan::ChunkInput {
        key: "fuzz",
        bytes,
        nbytes: n,
    }])
    .expect("the frame parsed above");
    if let (Ok(planned), true) = (svar2_gpu::cpu::execute(&plan), ours.is_ok()) {
        assert_eq!(&planned[plan.chunks[0].clone()], &out[..]);
    }
    if ours.is_ok() {
        // c-blosc (through zarrs) must agree on every frame svar2 accepts.
        let codec = InnerCodec::new(Dtype::I8, frame.shuffle == svar2_blosc::Shuffle::Bit, 1)
            .expect("codec");
        if let Ok(Raw::Fixed(theirs)) = codec.decode(bytes, &[n as u64]) {
            if frame.typesize == 1 {
                assert_eq!(out, theirs);
            }
        }
    }
});
