"""Check that a rechunked store holds exactly its source's arrays (zarr-python reads both).

Usage: same_arrays.py SOURCE RECHUNKED
Every array of SOURCE (Zarr v2 or v3) must be in RECHUNKED with the same dtype, shape,
dimension names, fill value, attributes and values (floats bit for bit, NaN payloads
included). region_index depends on the chunking: it is checked against the variants
it indexes instead. Root attributes must be kept (svar2's own provenance may differ).
Exit status 1 and one line per difference.
"""
import sys

import numpy as np
import zarr


def dims(a):
    d = getattr(a.metadata, "dimension_names", None)
    if d is None:
        d = a.attrs.get("_ARRAY_DIMENSIONS")
    return list(d) if d is not None else None


def attrs(a):
    return {k: v for k, v in a.attrs.asdict().items() if k != "_ARRAY_DIMENSIONS"}


def fill(a):
    """Zarr v3 has no `null` fill value: a v2 array's `null` is the type's zero (as
    zarrs and zarr-python's own v2 to v3 conversion read it)."""
    if a.fill_value is None:
        return {"f": "0.0", "b": "False", "i": "0", "u": "0"}.get(a.dtype.kind, "")
    return str(a.fill_value)


def same_values(x, y):
    if x.dtype.kind == "f":
        return np.array_equal(x.view(f"u{x.dtype.itemsize}"), y.view(f"u{y.dtype.itemsize}"))
    if x.dtype.kind in "OTU":
        return x.shape == y.shape and [str(v) for v in x.ravel()] == [str(v) for v in y.ravel()]
    return np.array_equal(x, y)


def region_index_ok(g):
    """Each region_index row describes its chunk's records exactly."""
    ri = g["region_index"][:]
    contig = g["variant_contig"][:]
    pos = g["variant_position"][:].astype(np.int64)
    end = pos + g["variant_length"][:].astype(np.int64) - 1
    vc = g["variant_position"].metadata.codecs[0].chunk_shape[0] if hasattr(
        g["variant_position"].metadata.codecs[0], "chunk_shape") else g["variant_position"].chunks[0]
    seen = 0
    for chunk, c, start, stop, max_end, n in ri:
        rows = np.arange(chunk * vc, min((chunk + 1) * vc, len(pos)))
        rows = rows[contig[rows] == c]
        if len(rows) != n or pos[rows[0]] != start or pos[rows[-1]] != stop or end[rows].max() != max_end:
            return f"row {[chunk, c, start, stop, max_end, n]} does not describe its records"
        seen += n
    return None if seen == len(pos) else f"rows cover {seen} of {len(pos)} records"


def main(src_path, out_path):
    src = zarr.open_group(src_path, mode="r")
    out = zarr.open_group(out_path, mode="r")
    problems = []
    for k, v in src.attrs.asdict().items():
        if k != "svar2" and out.attrs.get(k) != v:
            problems.append(f"root attribute {k} differs")
    names = set(src.array_keys())
    for missing in sorted(names ^ set(out.array_keys())):
        problems.append(f"{missing}: in one store only")
    for name in sorted(names & set(out.array_keys())):
        a, b = src[name], out[name]
        if name == "region_index":
            if (why := region_index_ok(out)) is not None:
                problems.append(f"region_index: {why}")
            continue
        for what, x, y in [
            ("dtype", str(a.dtype), str(b.dtype)),
            ("shape", a.shape, b.shape),
            ("dimension names", dims(a), dims(b)),
            ("fill value", fill(a), str(b.fill_value)),
            ("attributes", attrs(a), attrs(b)),
        ]:
            if x != y:
                problems.append(f"{name}: {what} {x!r} != {y!r}")
        if not same_values(a[...], b[...]):
            problems.append(f"{name}: values differ")
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(*sys.argv[1:])
