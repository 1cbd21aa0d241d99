"""The Python side of scripts/bench_python.sh: one patch list (bench-read's, from
--emit-patches), read from Python by svar2 (store.read with and without out=, the
read-ahead iterator, PatchDataset through a DataLoader with a trivial step, at 0, 1,
2 and 4 persistent workers, timed over a second epoch),
tensorstore (every read of a batch a future first) and zarr-python (per patch, as its
users write it; a tenth of the list). Prints one JSON object: patches/s per way.

Usage: bench_python.py STORE PATCHES.json [BATCH]
"""
import json
import sys
import time

import numpy as np

import svar2


def timed(n, fn):
    t = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t)


def main(store_path, patches_json, batch="256"):
    b = int(batch)
    p = np.array(json.load(open(patches_json)), dtype=np.int64)
    batches = [p[i:i + b] for i in range(0, len(p), b)]
    store = svar2.open(store_path, io_threads=4)
    r = {}
    out = np.empty((b, p[0, 1], p[0, 3], 2), np.int8)

    def read_out():
        for x in batches:
            if len(x) == b:
                store.read("call_genotype", x, out=out)
            else:
                store.read("call_genotype", x)

    def read_alloc():
        for x in batches:
            store.read("call_genotype", x)

    def read_ahead():
        for _ in store.read_ahead("call_genotype", p, batch_size=b):
            pass

    read_out()  # warm: threads, index caches
    r["store.read out="] = timed(len(p), read_out)
    r["store.read"] = timed(len(p), read_alloc)
    r["store.read_ahead"] = timed(len(p), read_ahead)
    try:
        import torch
        from svar2.torch import PatchDataset

        shape = (int(p[0, 1]), int(p[0, 3]))
        for workers in (0, 1, 2, 4):
            ds = PatchDataset(store, patch=shape, batch_size=b, seed=7, num_patches=len(p))
            assert (ds.epoch_patches(0) == p).all(), "PatchDataset's epoch 0 is bench-read's list"
            loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                                 persistent_workers=workers > 0)

            def step():
                s = 0
                for x in loader:
                    s += int(x[0, 0, 0, 0])  # a trivial training step
                return s

            # Steady state: the second epoch (workers started, rings made).
            ds.set_epoch(1)
            step()
            ds.set_epoch(0)
            r[f"PatchDataset workers={workers}"] = timed(len(p), step)
            del loader
    except ImportError:
        pass
    try:
        import tensorstore as ts

        a = None
        for driver in ("zarr3", "zarr"):
            try:
                a = ts.open({"driver": driver, "kvstore": {"driver": "file",
                                                           "path": f"{store_path}/call_genotype"}}).result()
                break
            except Exception:
                continue

        def ts_read():
            for x in batches:
                futs = [a[v0:v0 + nv, s0:s0 + ns].read() for v0, nv, s0, ns in x.tolist()]
                for f in futs:
                    f.result()

        r["tensorstore futures"] = timed(len(p), ts_read)
    except ImportError:
        pass
    try:
        import zarr

        z = zarr.open_array(f"{store_path}/call_genotype", mode="r")
        tenth = p[: max(1, len(p) // 10)].tolist()

        def zarr_read():
            for v0, nv, s0, ns in tenth:
                z[v0:v0 + nv, s0:s0 + ns]

        r["zarr-python"] = timed(len(tenth), zarr_read)
    except ImportError:
        pass
    print(json.dumps(r))


if __name__ == "__main__":
    main(*sys.argv[1:])
