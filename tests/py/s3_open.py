"""Open a store in an S3 bucket with zarr-python (its fsspec S3 store, s3fs) and
xarray, and check every array equals the same store's local twin.

Usage: s3_open.py s3://bucket/store.zarr LOCAL_DIR
Endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY (as svar2 reads them). Prints "N arrays equal; xarray: DIMS".
"""
import os
import sys

import numpy as np
import xarray as xr
import zarr


def main(url, local):
    so = {
        "endpoint_url": os.environ["AWS_ENDPOINT_URL"],
        "key": os.environ["AWS_ACCESS_KEY_ID"],
        "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
    }
    remote = zarr.open_group(url, mode="r", storage_options=so)
    here = zarr.open_group(local, mode="r")
    names = sorted(here.array_keys())
    assert sorted(remote.array_keys()) == names, (sorted(remote.array_keys()), names)
    assert dict(remote.attrs) == dict(here.attrs), "root attributes differ"
    for n in names:
        a, b = np.asarray(remote[n][...]), np.asarray(here[n][...])
        same = a.dtype == b.dtype and a.shape == b.shape and (
            np.array_equal(a, b, equal_nan=True) if a.dtype.kind == "f" else np.array_equal(a, b)
        )
        assert same, f"{n}: the bucket's array differs from the local store's"
    ds = xr.open_zarr(url, storage_options=so, consolidated=False)
    assert ds.sizes["variants"] == here["variant_position"].shape[0]
    print(f"{len(names)} arrays equal; xarray: {dict(ds.sizes)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
