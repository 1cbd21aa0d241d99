"""Read a patch list with zarr-python, for tests/reader.rs to compare svar2's reader with.

Usage: read_patches.py STORE PATCHES.json OUT ARRAY...
For each ARRAY (one process for all: zarr-python's start-up is a second), OUT.ARRAY
gets the patches' bytes. Each patch [variant_start, n_variants, sample_start, n_samples] selects those variants
(and samples, when the array has a samples axis) and every value of the other axes;
the selections' bytes (C order, little endian) are written one after the other.
"""
import json
import sys

import numpy as np
import zarr


def read(store, array, patches, out):
    a = zarr.open_array(f"{store}/{array}", mode="r")
    meta = a.metadata
    dims = getattr(meta, "dimension_names", None) or a.attrs.get("_ARRAY_DIMENSIONS")
    with open(out, "wb") as f:
        for v0, nv, s0, ns in patches:
            sel = []
            for d in dims:
                if d == "variants":
                    sel.append(slice(v0, v0 + nv))
                elif d == "samples":
                    sel.append(slice(s0, s0 + ns))
                else:
                    sel.append(slice(None))
            x = np.ascontiguousarray(a[tuple(sel)])
            f.write(x.astype(x.dtype.newbyteorder("<")).tobytes())


def main(store, patches, out, *arrays):
    patches = json.load(open(patches))
    for array in arrays:
        read(store, array, patches, f"{out}.{array}")


if __name__ == "__main__":
    main(*sys.argv[1:])
