"""The tensorstore peer of scripts/bench_read.sh: reads a patch list from a store's
array as a tensorstore user would — per batch, every read issued as a future before
any result is awaited, with or without one ts.Batch — and prints patches/s as JSON.

Usage: peer_read.py STORE ARRAY PATCHES.json MODE [BATCH]     MODE: futures | batch
"""
import json
import sys
import time

import tensorstore as ts


def main(store, array, patches, mode, batch="256"):
    batch = int(batch)
    with open(patches) as f:
        plist = json.load(f)
    try:
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{store}/{array}"}}
        a = ts.open(spec).result()
    except Exception:
        spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": f"{store}/{array}"}}
        a = ts.open(spec).result()
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(plist), batch):
        part = plist[i:i + batch]
        if mode == "batch":
            with ts.Batch() as b:
                futs = [a[v0:v0 + nv, s0:s0 + ns].read(batch=b) for v0, nv, s0, ns in part]
        else:
            futs = [a[v0:v0 + nv, s0:s0 + ns].read() for v0, nv, s0, ns in part]
        for f in futs:
            n += f.result().nbytes
    s = time.perf_counter() - t0
    print(json.dumps({"patches_per_s": len(plist) / s, "seconds": s, "bytes": n}))


if __name__ == "__main__":
    main(*sys.argv[1:])
