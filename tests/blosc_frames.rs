//! svar2's blosc frame decoder (the CPU reader's) and the GPU batch plan (through its
//! CPU executor, the kernels' own index arithmetic) against c-blosc itself: frames
//! made by c-blosc (numcodecs, `tests/py/blosc_frames.py`) in every shape it writes —
//! each typesize, no/byte/bit shuffle, split and unsplit blocks, raw streams, memcpyed
//! frames, partial last blocks — must decode to exactly what c-blosc decodes them to,
//! whole and in wanted byte ranges.

mod common;
use common::*;
use svar2_blosc::{Decoder, Frame};
use svar2_gpu::batch_plan::{BatchPlan, ChunkInput};

struct Made {
    name: String,
    frame: Vec<u8>,
    raw: Vec<u8>,
    flags: u8,
}

fn c_blosc_frames(dir: &std::path::Path) -> Vec<Made> {
    sh_ok(&format!(
        "python3 {} {}",
        py("blosc_frames.py"),
        dir.display()
    ));
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            Made {
                frame: std::fs::read(dir.join(format!("{name}.frame"))).unwrap(),
                raw: std::fs::read(dir.join(format!("{name}.raw"))).unwrap(),
                flags: e["flags"].as_u64().unwrap() as u8,
                name: format!("{name} {e}"),
            }
        })
        .collect()
}

#[test]
fn c_blosc_frames_decode_as_c_blosc_decodes_them() {
    if !tools(
        "c_blosc_frames_decode_as_c_blosc_decodes_them",
        &[Tool::ZarrPython],
    ) {
        return;
    }
    let dir = test_dir();
    let made = c_blosc_frames(dir.path());
    // The fixture covers what it claims: split and unsplit (0x10), memcpyed (0x02),
    // each shuffle (0x01 byte, 0x04 bit, neither).
    let has = |f: &dyn Fn(u8) -> bool| made.iter().any(|m| f(m.flags));
    assert!(made.len() > 400, "{} frames", made.len());
    assert!(has(&|f| f & 0x10 == 0) && has(&|f| f & 0x10 != 0));
    assert!(has(&|f| f & 0x02 != 0) && has(&|f| f & 0x02 == 0));
    assert!(has(&|f| f & 0x05 == 0x01) && has(&|f| f & 0x05 == 0x04) && has(&|f| f & 0x05 == 0));
    let mut dec = Decoder::new().unwrap();
    let mut split_streams = 0;
    for m in &made {
        let frame = Frame::parse(&m.name, &m.frame, m.raw.len())
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
        split_streams += frame.blocks.iter().filter(|b| b.streams.len() > 1).count();
        let mut out = vec![0u8; m.raw.len()];
        dec.decode(&m.name, &m.frame, &frame, &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
        assert!(out == m.raw, "{}: differs from c-blosc's decode", m.name);
        // Only some byte ranges, as the reader unshuffles a patch's part of a chunk.
        let len = m.raw.len();
        let ranges: Vec<(usize, usize)> = (0..len)
            .step_by((len / 5).max(3))
            .map(|a| (a, (a + 1 + a % 17).min(len)))
            .collect();
        let mut part = vec![0xA5u8; len];
        dec.decode_ranges(&m.name, &m.frame, &frame, &mut part, Some(&ranges))
            .unwrap();
        for &(a, b) in &ranges {
            assert!(part[a..b] == m.raw[a..b], "{}: range {a}..{b}", m.name);
        }
    }
    assert!(split_streams > 0, "no frame had split blocks");
    // All of them as one GPU batch, through the plan's CPU executor.
    let inputs: Vec<ChunkInput> = made
        .iter()
        .map(|m| ChunkInput {
            key: &m.name,
            bytes: &m.frame,
            nbytes: m.raw.len(),
        })
        .collect();
    let plan = BatchPlan::build(&inputs).unwrap();
    let out = svar2_gpu::cpu::execute(&plan).unwrap();
    for (m, range) in made.iter().zip(&plan.chunks) {
        assert!(
            out[range.clone()] == m.raw[..],
            "{}: the GPU plan differs",
            m.name
        );
    }
}
