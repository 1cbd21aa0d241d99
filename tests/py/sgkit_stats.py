"""sgkit as an oracle: load two VCF Zarr stores of the same input (svar2's and
bio2zarr's) with sgkit.load_dataset and compare every variable of sgkit's
variant_stats and sample_stats. Prints "same" or exits 1 naming the first difference.

Runs in its own virtualenv: sgkit 0.10.0 pins zarr<3 (and numpy<2.2, old xarray and
dask); with zarr>=3 installed over the pin it reads Zarr v3 stores.
Usage: sgkit_stats.py OURS BIO2ZARR
"""
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
import sgkit  # noqa: E402


def stats(path):
    ds = sgkit.load_dataset(path)
    v = sgkit.variant_stats(ds, merge=False).compute()
    s = sgkit.sample_stats(ds, merge=False).compute()
    return ds, v, s


def main(ours, theirs):
    (da, va, sa), (db, vb, sb) = stats(ours), stats(theirs)
    for dim in ("variants", "samples", "ploidy", "alleles"):
        if da.sizes.get(dim) != db.sizes.get(dim):
            sys.exit(f"dimension {dim}: {da.sizes.get(dim)} vs {db.sizes.get(dim)}")
    checked = 0
    for a, b in ((va, vb), (sa, sb)):
        for name in a.data_vars:
            x, y = np.asarray(a[name]), np.asarray(b[name])
            if x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                sys.exit(f"{name}: differs ({x.shape} vs {y.shape})")
            checked += 1
    if checked < 10:
        sys.exit(f"only {checked} statistics compared")
    print(f"same ({checked} statistics, {da.sizes['variants']} variants x {da.sizes['samples']} samples)")


if __name__ == "__main__":
    main(*sys.argv[1:])
