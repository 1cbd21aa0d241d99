"""One flipped bit anywhere in a store's chunk data or shard indexes is always caught:
500 random single-bit flips, each run through `svar2 verify`, `svar2 read`,
`svar2 bench-read`, `svar2 rechunk`, `svar2 view` and the Python `store.read` — every
one fails naming the damaged chunk, none panics, none prints a wrong value."""

import json
import os
import random
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import svar2
from conftest import CORPUS, ROOT, need, run

# 500 hit the store's 30+ shard files many times each (weighted by size) in ~25 s
# of CI (1,000 took ~70 s and, like 500, were all caught).
FLIPS = 500


def exe():
    p = ROOT / "target/release/svar2"
    need("target/release/svar2", p.exists(), "cargo build --release")
    return p


@pytest.fixture(scope="module")
def flip_store(tmp_path_factory):
    """The corpus's first 3,000 records of 20 samples, in small chunks: several shards
    per array, several inner chunks per shard."""
    src = CORPUS / "sim_small.vcf.gz"
    need("the shared corpus", src.exists(), "../shared/corpus/sim_small.vcf.gz")
    d = tmp_path_factory.mktemp("flips")
    vcf = d / "in.vcf"
    text = run("bcftools", "view", "-s", ",".join(f"tsk_{i}" for i in range(20)), src)
    lines = text.splitlines(keepends=True)
    head = [l for l in lines if l.startswith("#")]
    body = [l for l in lines if not l.startswith("#")][:3000]
    vcf.write_text("".join(head + body))
    out = d / "store.zarr"
    run(exe(), "convert", "-q", "--variants-chunk", "256", "--variants-shard", "1024",
        "--samples-chunk", "5", "--samples-shard", "10", vcf, out)
    return out


def shard_files(store):
    files = []
    for p in sorted(store.rglob("*")):
        if p.is_file() and "/c/" in str(p.relative_to(store)).replace(os.sep, "/") + "/":
            if p.parent.name != store.name and p.name != "zarr.json":
                files.append(p)
    return files


def tiling(shape, nv, ns):
    """Patches covering a (variants, samples) grid whole."""
    rows = []
    for v in range(0, shape[0], nv):
        for s in range(0, max(shape[1], 1) if len(shape) > 1 else 1, ns):
            rows.append([v, min(nv, shape[0] - v), s, min(ns, shape[1] - s) if len(shape) > 1 else 1])
    return rows


def test_every_single_bit_flip_is_caught(flip_store, tmp_path):
    svar = exe()
    contigs = list(svar2.open(flip_store).contigs)
    files = shard_files(flip_store)
    numeric = {}
    with svar2.open(flip_store) as st:
        for name, info in st.arrays.items():
            if info.dtype != "str" and info.dims[0] == "variants":
                numeric[name] = info
    assert len(files) > 30 and numeric, (len(files), list(numeric))
    # The undamaged outputs every run is held to.
    good_read = {c: run(svar, "read", "--region", c, flip_store) for c in contigs}
    run(svar, "rechunk", "-q", "--patch", "64x2", flip_store, tmp_path / "good.zarr")
    good_rechunk = run(svar, "digest", tmp_path / "good.zarr")
    good_view = run(svar, "view", flip_store)
    lists = {}
    for name, info in numeric.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(tiling(info.shape, 300, 7)))
        lists[name] = p
    rng = random.Random(24)
    sizes = [f.stat().st_size for f in files]
    flips = []
    for _ in range(FLIPS):
        f = rng.choices(range(len(files)), weights=sizes)[0]
        flips.append((f, rng.randrange(sizes[f] * 8)))
    # Two workers, each on its own copy of the store.
    copies = []
    for w in range(2):
        c = tmp_path / f"copy{w}.zarr"
        shutil.copytree(flip_store, c)
        copies.append(c)
    lock = threading.Lock()
    problems, caught = [], {"verify": 0, "read": 0, "bench-read": 0, "rechunk": 0, "python": 0,
                          "view": 0}

    def one(worker, f, bit):
        store = copies[worker]
        rel = files[f].relative_to(flip_store)
        path = store / rel
        array = rel.parts[0]
        with open(path, "r+b") as fh:
            fh.seek(bit // 8)
            b = fh.read(1)[0]
            fh.seek(bit // 8)
            fh.write(bytes([b ^ (1 << (bit % 8))]))
        try:
            found = []
            r = subprocess.run([svar, "verify", store], capture_output=True, text=True)
            found.append(("verify", r.returncode == 1 and str(rel) in r.stdout, r))
            out = tmp_path / f"re{worker}.zarr"
            r = subprocess.run([svar, "rechunk", "-q", "--force", "--patch", "64x2", store, out],
                               capture_output=True, text=True)
            if array == "region_index":
                # Rechunk rebuilds the region index from the variant arrays and never
                # reads the source's: the damage cannot reach its output. Inert.
                digest = subprocess.run([svar, "digest", out], capture_output=True, text=True)
                found.append(("rechunk", r.returncode == 0 and digest.stdout == good_rechunk, r))
            else:
                found.append(("rechunk", r.returncode != 0 and array in r.stderr, r))
            # view: the damaged array named, exit 1, and what it printed is whole lines
            # of the undamaged output; arrays view never reads (the masks, and the region
            # index without -r) print the undamaged output.
            r = subprocess.run([svar, "view", store], capture_output=True, text=True,
                               errors="replace")
            if array in ("region_index", "call_genotype_mask", "variant_id_mask"):
                found.append(("view", r.returncode == 0 and r.stdout == good_view, r))
            else:
                whole = r.stdout == "" or r.stdout.endswith("\n")
                found.append(("view", r.returncode == 1 and array in r.stderr and whole
                              and good_view.startswith(r.stdout), r))
            if array in numeric:
                r = subprocess.run([svar, "bench-read", "--array", array, "--patches",
                                    lists[array], store], capture_output=True, text=True)
                found.append(("bench-read", r.returncode != 0 and array in r.stderr, r))
                try:
                    with svar2.open(store) as st:
                        rows = np.array(json.loads(lists[array].read_text()))
                        for shape in {(int(v), int(s)) for _, v, _, s in rows}:
                            st.read(array, rows[(rows[:, 1] == shape[0]) & (rows[:, 3] == shape[1])])
                    found.append(("python", False, "read without an error"))
                except svar2.Error as e:
                    found.append(("python", array in str(e), str(e)))
                if array in ("call_genotype", "call_genotype_phased", "variant_position",
                             "variant_contig", "variant_length", "region_index"):
                    bad = False
                    for c in contigs:
                        r = subprocess.run([svar, "read", "--region", c, store],
                                           capture_output=True, text=True)
                        if "panicked" in r.stderr:
                            bad = True
                        # Whatever is printed is right (a prefix of the good output);
                        # the damaged chunk's region fails.
                        if not good_read[c].startswith(r.stdout):
                            bad = True
                        if r.returncode != 0:
                            found.append(("read", not bad and "corrupt" in r.stderr, r))
                            break
                    else:
                        found.append(("read", False, "every region read without an error"))
            with lock:
                for tool, ok, r in found:
                    if ok:
                        caught[tool] += 1
                    else:
                        problems.append((tool, str(rel), bit, r))
                    if hasattr(r, "stderr") and "panicked" in r.stderr:
                        problems.append((tool, str(rel), bit, "panic"))
        finally:
            with open(path, "r+b") as fh:
                fh.seek(bit // 8)
                fh.write(bytes([b]))

    def worker(w):
        for i in range(w, len(flips), 2):
            one(w, *flips[i])

    with ThreadPoolExecutor(2) as ex:
        list(ex.map(worker, range(2)))
    kinds = sorted({(t, f.split("/")[0]) for t, f, _, _ in problems})
    assert not problems, (kinds, problems[:3])
    assert caught["verify"] == FLIPS and caught["rechunk"] == FLIPS, caught
    assert caught["view"] == FLIPS, caught
    assert caught["python"] > FLIPS // 2 and caught["read"] > FLIPS // 20, caught


def test_a_zip_store_cut_short_is_a_corrupt_store(svar2_zip_store, tmp_path):
    """A .vcz.zip opens by its path with or without a trailing slash; one cut short
    (an interrupted download) is CorruptStoreError, what a program re-downloads on."""
    whole = svar2.open(str(svar2_zip_store) + "/")
    assert whole.read("call_genotype", np.array([[0, 3, 0, 2]])).shape[:3] == (1, 3, 2)
    cut = tmp_path / "cut.vcz.zip"
    data = svar2_zip_store.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(svar2.CorruptStoreError, match="cut short"):
        svar2.open(cut)
