"""The rechunk a user would write with tensorstore or zarr-python, for
scripts/bench_rechunk.sh: copy arrays of a Zarr v3 store into sharded arrays with
blosc-zstd inner chunks (zarr-python shard row by shard row; tensorstore in one
write, as its documentation shows).

Usage: peer_rechunk.py TOOL SRC DST ARRAYS INNER SHARD LEVEL
  TOOL   tensorstore | zarr
  ARRAYS comma-separated names, or "all" (every numeric array on the variants axis;
         tensorstore's zarr3 driver has no variable-length strings, so string arrays
         and the small arrays are copied by neither peer: the comparison favours them)
  INNER, SHARD  sizes along (variants, samples), e.g. 1024,8 65536,256; other axes whole
  LEVEL  blosc clevel; bitshuffle for bool/int8 genotype arrays, shuffle otherwise
"""
import json
import os
import sys

import numpy as np


def arrays(src, names):
    out = []
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name, "zarr.json")
        if not os.path.exists(p):
            continue
        m = json.load(open(p))
        dims = m.get("dimension_names") or []
        if names != "all" and name not in names.split(","):
            continue
        if names == "all" and ("variants" not in dims or m["data_type"] in ("string",) or
                               isinstance(m["data_type"], dict)):
            continue
        out.append((name, m))
    return out


def geometry(m, inner, shard):
    """(inner chunk, shard) of an array: variants and samples as asked (samples no wider
    than the array), any other axis whole."""
    def sizes(pair):
        return [pair[0] if d == "variants" else min(pair[1], max(n, 1)) if d == "samples" else max(n, 1)
                for d, n in zip(m["dimension_names"], m["shape"])]
    return sizes(inner), sizes(shard)


def shuffle_for(name, dtype):
    return "bitshuffle" if dtype in ("bool", "int8") and (dtype == "bool" or name == "call_genotype") else "shuffle"


def run_tensorstore(src, dst, todo, inner, shard, level):
    import tensorstore as ts
    for name, m in todo:
        ic, sc = geometry(m, inner, shard)
        s = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{src}/{name}"}}).result()
        itemsize = np.dtype(s.dtype.numpy_dtype).itemsize
        d = ts.open({
            "driver": "zarr3", "kvstore": {"driver": "file", "path": f"{dst}/{name}"},
            "metadata": {
                "shape": m["shape"], "data_type": m["data_type"],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": sc}},
                "codecs": [{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": ic,
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                               {"name": "blosc", "configuration": {
                                   "cname": "zstd", "clevel": level,
                                   "shuffle": shuffle_for(name, m["data_type"]),
                                   "typesize": itemsize, "blocksize": 0}}],
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                     {"name": "crc32c"}]}}],
                "dimension_names": m["dimension_names"]},
            "create": True, "delete_existing": True}).result()
        # What tensorstore's docs show: one write of the whole source; tensorstore
        # schedules the chunk reads and shard writes itself.
        d.write(s).result()


def run_zarr(src, dst, todo, inner, shard, level):
    import zarr
    from zarr.codecs import BloscCodec
    out = zarr.open_group(dst, mode="w", zarr_format=3)
    for name, m in todo:
        ic, sc = geometry(m, inner, shard)
        a = zarr.open_array(f"{src}/{name}", mode="r")
        b = out.create_array(name, shape=a.shape, dtype=a.dtype, chunks=ic, shards=sc,
                             compressors=BloscCodec(cname="zstd", clevel=level,
                                                    shuffle=shuffle_for(name, m["data_type"])),
                             dimension_names=m["dimension_names"], fill_value=a.fill_value)
        for i in range(0, a.shape[0], sc[0]):
            b[i:i + sc[0]] = a[i:i + sc[0]]


def main(tool, src, dst, names, inner, shard, level):
    inner = [int(x) for x in inner.split(",")]
    shard = [int(x) for x in shard.split(",")]
    todo = arrays(src, names)
    if not todo:
        sys.exit(f"no arrays to copy in {src}")
    {"tensorstore": run_tensorstore, "zarr": run_zarr}[tool](src, dst, todo, inner, shard, int(level))


if __name__ == "__main__":
    main(*sys.argv[1:])
