"""Run the vcztools CLI with one fix for sharded Zarr v3 arrays.

vcztools 0.2.0 sizes blocks by `arr.chunks` (zarr-python reports the *inner* chunk
shape of a sharded array) but reads them with `arr.blocks[i]`, which zarr-python indexes
by *shard*. On a store whose shards hold several inner chunks it reads the wrong rows.
This wrapper reads block i as the inner-chunk slice vcztools meant; nothing else changes.
Usage: exactly as `vcztools` (e.g. `vcztools_sharded.py view -r chr1:1-100 store.zarr`).
"""
import sys

import vcztools.retrieval as retrieval
from vcztools.cli import vcztools_main


def _block_slice(i, c, n):
    if isinstance(i, slice):
        start, stop, _ = i.indices(-(-n // c))
        return slice(start * c, min(stop * c, n))
    return slice(i * c, min((i + 1) * c, n))


def _read_block(arr, block_index):
    if not isinstance(block_index, tuple):
        block_index = (block_index,)
    sel = tuple(
        _block_slice(i, c, n) for i, c, n in zip(block_index, arr.chunks, arr.shape)
    )
    return arr[sel]


retrieval._read_block = _read_block

if __name__ == "__main__":
    sys.exit(vcztools_main())
