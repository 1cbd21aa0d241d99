"""Open every VCF Zarr store under the given directories with xarray.open_zarr (as
sgkit and most users do) and print how many opened; exit 1 naming any that does not.

Usage: xarray_open.py [--any] DIR [DIR ...]
(--any: finding no store is fine; without it, it is an error.)
A store is a directory whose zarr.json is a group with a vcf_zarr_version attribute.
xarray refuses a store in which two arrays give one dimension name different lengths,
which zarr-python alone does not notice."""
import json
import os
import sys
import warnings

import xarray as xr
import zarr


def stores(root):
    for d, dirs, files in os.walk(root):
        if "zarr.json" in files:
            try:
                meta = json.load(open(os.path.join(d, "zarr.json")))
            except ValueError:
                continue
            if meta.get("node_type") == "group" and "vcf_zarr_version" in meta.get("attributes", {}):
                yield d
                dirs[:] = []


def main(args):
    allow_none = "--any" in args
    roots = [a for a in args if a != "--any"]
    found = [s for r in roots for s in stores(r)]
    bad = 0
    for s in found:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ds = xr.open_zarr(s, consolidated=False)
            # Every array is a variable, and each dimension has the one length every
            # array naming it gives it in its own metadata (read by zarr, not xarray).
            g = zarr.open_group(s, mode="r")
            lengths = {}
            for name, a in g.arrays():
                dims = list(getattr(a.metadata, "dimension_names", None)
                            or a.attrs.get("_ARRAY_DIMENSIONS", []))
                assert name in ds.variables, f"{name} is not a variable"
                assert dims == list(ds[name].dims), (name, dims, ds[name].dims)
                for d, n in zip(dims, a.shape):
                    lengths.setdefault(d, set()).add(n)
            for d, ns in lengths.items():
                assert ns == {ds.sizes[d]}, (d, ns, ds.sizes[d])
        except Exception as e:  # noqa: BLE001 - report every failure the same way
            print(f"{s}: xarray.open_zarr failed: {e}")
            bad += 1
    if not found and not allow_none:
        print(f"no VCF Zarr store under {' '.join(roots)}")
        return 1
    print(f"xarray opened {len(found) - bad} of {len(found)} stores")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
