"""Open and fully read every array of a store with zarr-python, and every numeric one
with tensorstore's zarr3 driver; print counts, exit 1 on any failure."""
import sys

import numpy as np
import tensorstore as ts
import zarr


def main(path):
    g = zarr.open_group(path, mode="r")
    names = sorted(g.array_keys())
    numeric = 0
    for name in names:
        a = g[name][...]
        assert a.shape == g[name].shape
        if a.dtype.kind in "biuf":
            t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{path}/{name}"}}).result()
            b = t.read().result()
            if a.dtype.kind == "f":
                same = np.array_equal(a.view(np.uint32), b.view(np.uint32))
            else:
                same = np.array_equal(a, b)
            if not same:
                print(f"{name}: tensorstore and zarr-python disagree")
                return 1
            numeric += 1
    print(f"zarr-python read {len(names)} arrays")
    print(f"tensorstore read {numeric} numeric arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
