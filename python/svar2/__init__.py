"""svar2: VCF Zarr stores read fast from Python.

Open any VCF Zarr store (svar2's sharded stores, bio2zarr's v2 and v3 stores, stores
zarr-python wrote) and read random patches (variants x samples) or genomic regions
into numpy, with the GIL released and no copy; convert VCF/BCF and rechunk stores with
the same library calls as the ``svar2`` command line.

Coordinates are **0-based and half-open** on the Python side (numpy's and
GenVarLoader's convention): ``store.region("chr1", 9_999, 20_000)`` is
``bcftools view -r chr1:10000-20000``. The command line keeps bcftools' 1-based ones.

    >>> import numpy as np, svar2
    >>> store = svar2.open("cohort.zarr")
    >>> patches = np.array([[1000, 4096, 7, 1]], dtype=np.int64)
    >>> x = store.read("call_genotype", patches)        # (1, 4096, 1, 2) int8
    >>> gt, pos = store.region("chr1", 10_000, 20_000, samples=["NA12878"])

``svar2.torch.PatchDataset`` feeds a PyTorch training loop (``import svar2`` never
imports torch).
"""

from ._svar2 import (
    ArrayInfo,
    Batches,
    CorruptStoreError,
    Error,
    GpuError,
    InputError,
    Store,
    __version__,
    append,
    convert,
    digest,
    inspect,
    open,
    rechunk,
    usable_cores,
)

__all__ = [
    "ArrayInfo",
    "Batches",
    "CorruptStoreError",
    "Error",
    "GpuError",
    "InputError",
    "Store",
    "__version__",
    "append",
    "convert",
    "digest",
    "inspect",
    "open",
    "rechunk",
    "usable_cores",
]
