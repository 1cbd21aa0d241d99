"""Write a Zarr v3 VCF Zarr store with zarr-python itself (sharded, its own codec
defaults), from another store's arrays, for tests/reader.rs.

Usage: zarr_python_store.py SRC DST
Copies the arrays every VCF Zarr store has and call_genotype, with inner chunks of
(100, 7, 2) in shards of (300, 21, 2) (zstd, zarr-python's default compressor).
"""
import sys

import zarr


def main(src, dst):
    s = zarr.open_group(src, mode="r")
    d = zarr.open_group(dst, mode="w", zarr_format=3)
    d.attrs.update(dict(s.attrs))
    for name in ["sample_id", "contig_id", "variant_contig", "variant_position", "variant_length", "call_genotype"]:
        a = s[name]
        dims = list(a.metadata.dimension_names)
        if name == "call_genotype":
            chunks, shards = (100, 7, a.shape[2]), (300, 21, a.shape[2])
        else:
            chunks, shards = a.shape, None
        b = d.create_array(name, shape=a.shape, dtype=a.dtype, chunks=chunks, shards=shards,
                           dimension_names=dims, fill_value=a.fill_value)
        b[...] = a[...]


if __name__ == "__main__":
    main(*sys.argv[1:])
