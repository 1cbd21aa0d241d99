"""Print some arrays of a store as JSON, read by zarr-python: for each name its dtype,
shape, dimension names and values (NaN as null); null for an array the store lacks.

Usage: read_arrays.py STORE NAME [NAME ...]"""
import json
import sys

import numpy as np
import zarr


def main(path, names):
    g = zarr.open_group(path, mode="r")
    out = {}
    for n in names:
        if n not in g:
            out[n] = None
            continue
        a = g[n]
        v = a[...]
        if v.dtype.kind == "f":
            vals = np.where(np.isnan(v), None, v).tolist()
        else:
            vals = v.astype(object).tolist()
        out[n] = {
            "dtype": str(v.dtype),
            "shape": list(a.shape),
            "dims": list(a.metadata.dimension_names or []),
            "values": vals,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
