"""Read a patch list with zarr-python, for tests/reader.rs to compare svar2's reader with.

Usage: read_patches.py STORE ARRAY PATCHES.json OUT.bin
Each patch [variant_start, n_variants, sample_start, n_samples] selects those variants
(and samples, when the array has a samples axis) and every value of the other axes;
the selections' bytes (C order, little endian) are written one after the other.
"""
import json
import sys

import numpy as np
import zarr


def main(store, array, patches, out):
    a = zarr.open_array(f"{store}/{array}", mode="r")
    meta = a.metadata
    dims = getattr(meta, "dimension_names", None) or a.attrs.get("_ARRAY_DIMENSIONS")
    with open(out, "wb") as f:
        for v0, nv, s0, ns in json.load(open(patches)):
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


if __name__ == "__main__":
    main(*sys.argv[1:])
