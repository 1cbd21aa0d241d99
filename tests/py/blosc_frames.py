"""Blosc frames made by c-blosc itself (numcodecs), for tests/blosc_frames.rs: every
shape svar2's frame decoder must handle — each typesize, no/byte/bit shuffle, blocks
split into typesize streams or not (BLOSC_SPLITMODE), streams stored raw when they do
not compress, memcpyed frames, partial last blocks, sizes not a multiple of 8 — each
with the bytes c-blosc decodes it to.

Usage: blosc_frames.py OUTDIR      writes OUTDIR/index.json and a .frame/.raw pair each
"""
import json
import os
import sys

import numpy as np
import numcodecs.blosc as blosc

# BLOSC_SPLITMODE is read by blosc_compress (the threaded path), not by the _ctx one.
blosc.use_threads = True


def data(kind, n, typesize, seed):
    rng = np.random.default_rng(seed)
    if kind == "small":  # genotype- and count-like: compresses
        v = rng.integers(0, 4, n)
    elif kind == "noise":  # incompressible: raw streams, memcpyed frames
        return rng.integers(0, 256, n * typesize, dtype=np.uint8).tobytes()
    else:  # "mixed": runs of zeros and noise
        v = np.where(rng.random(n) < 0.7, 0, rng.integers(0, 1 << 30, n))
    return v.astype(f"<u{typesize}" if typesize > 1 else "u1").tobytes()


def main(out):
    os.makedirs(out, exist_ok=True)
    index = []
    shuffles = {"none": blosc.NOSHUFFLE, "byte": blosc.SHUFFLE, "bit": blosc.BITSHUFFLE}
    k = 0
    for typesize in (1, 2, 4, 8):
        for shuffle, code in shuffles.items():
            for split in ("ALWAYS", "NEVER"):
                for kind in ("small", "noise", "mixed"):
                    for n, blocksize in ((1, 0), (7, 0), (100, 0), (1001, 2048), (4096, 4096),
                                         (70_001, 0), (70_001, 16384), (3333, 1030)):
                        os.environ["BLOSC_SPLITMODE"] = split
                        raw = data(kind, n, typesize, k)
                        frame = blosc.compress(raw, b"zstd", 1, code, blocksize, typesize)
                        try:
                            back = blosc.decompress(frame)
                        except RuntimeError:
                            # Forced splits of blocks under 128 elements: c-blosc writes
                            # frames its own decoder refuses. No valid data; left out.
                            continue
                        assert back == raw
                        name = f"f{k:04d}"
                        with open(os.path.join(out, name + ".frame"), "wb") as f:
                            f.write(frame)
                        with open(os.path.join(out, name + ".raw"), "wb") as f:
                            f.write(back)
                        index.append({"name": name, "typesize": typesize, "shuffle": shuffle,
                                      "split": split, "kind": kind, "nbytes": len(raw),
                                      "flags": frame[2]})
                        k += 1
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f)
    print(k)


if __name__ == "__main__":
    main(sys.argv[1])
