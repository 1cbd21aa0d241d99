"""Hostile stores crafted byte by byte (see tests/crafted_store.rs for the CLI): a
damaged string chunk, a shape beyond the stored data and a FIFO in place of a shard
are each one svar2.Error — never a PanicException, an abort or a hang."""

import json
import os
import struct
import subprocess
import sys

import pytest

import svar2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def crc32c(b: bytes) -> int:
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


def with_crc(b: bytes) -> bytes:
    return b + struct.pack("<I", crc32c(b))


def zstd_raw(data: bytes) -> bytes:
    """One zstd frame holding `data` (under 256 bytes) as a raw block."""
    return bytes([0x28, 0xB5, 0x2F, 0xFD, 0x20, len(data)]) + struct.pack("<I", 1 | len(data) << 3)[:3] + data


def shard(chunks) -> bytes:
    out, index = b"", b""
    for c in chunks:
        index += struct.pack("<QQ", len(out), len(c))
        out += c
    return out + with_crc(index)


@pytest.fixture
def tiny(tmp_path):
    store = tmp_path / "s"
    svar2.convert(os.path.join(ROOT, "tests/data/all_fields.vcf"), store, variants_chunk=2,
                  variants_shard=4, samples_chunk=2, samples_shard=4)
    return store


def test_a_4gb_string_length_is_svar2_error(tiny):
    # sample_id: 4 names, 2 inner chunks of 2; the first says its first name is 4 GB.
    bad = struct.pack("<II", 2, 0xFFFFFFF0) + b"ab"
    good = struct.pack("<IIcIc", 2, 1, b"c", 1, b"d")
    (tiny / "sample_id" / "c" / "0").write_bytes(shard([with_crc(zstd_raw(bad)), with_crc(zstd_raw(good))]))
    with pytest.raises(svar2.Error, match="sample_id.*string chunk"):
        svar2.open(tiny).samples


def test_a_huge_shape_is_svar2_error(tiny):
    meta = tiny / "sample_id" / "zarr.json"
    m = json.loads(meta.read_text())
    m["shape"] = [1 << 40]
    meta.write_text(json.dumps(m))
    # svar2's shard record names the grid it wrote.
    with pytest.raises(svar2.Error, match="sample_id: its shape or chunks are not the ones"):
        svar2.open(tiny)
    # Without the record (another writer's store): what its stored files can hold.
    root = tiny / "zarr.json"
    r = json.loads(root.read_text())
    del r["attributes"]["svar2"]
    root.write_text(json.dumps(r))
    with pytest.raises(svar2.Error, match="sample_id says 1099511627776 samples"):
        svar2.open(tiny)


def test_a_fifo_shard_is_svar2_error(tiny):
    p = tiny / "call_DP" / "c" / "0" / "0"
    p.unlink()
    os.mkfifo(p)
    code = f"import svar2\ntry:\n    svar2.open({str(tiny)!r})\nexcept svar2.Error as e:\n    print(e)\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "a FIFO, not a regular file" in r.stdout, r.stdout + r.stderr
