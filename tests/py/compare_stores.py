"""Compare every array of a reference VCF Zarr store (bio2zarr) with svar2's.

Usage: compare_stores.py REFERENCE OURS
Checks name, dtype, shape, dimension_names, fill value and decoded values. Floats are
compared bit for bit, except that bio2zarr stores FORMAT float padding (htslib
vector-end) as the *missing* NaN: there svar2 keeps the spec's *fill* NaN, which is what
makes the VCF round trip exact (see README, "Differences from bio2zarr").
region_index depends on chunking and is checked through region queries instead.
Exit status 1 and a line per difference when they differ.
"""
import json
import sys

import numpy as np
import zarr

MISSING = 0x7F800001
FILL = 0x7F800002


def meta(path, name):
    with open(f"{path}/{name}/zarr.json") as f:
        return json.load(f)


def main(ref_path, ours_path):
    ref = zarr.open_group(ref_path, mode="r")
    ours = zarr.open_group(ours_path, mode="r")
    problems = []
    ref_names = set(ref.array_keys())
    our_names = set(ours.array_keys())
    for missing in sorted(ref_names - our_names):
        problems.append(f"{missing}: missing from our store")
    for extra in sorted(our_names - ref_names):
        # Both ways: an array svar2 adds is a difference too.
        problems.append(f"{extra}: in our store, not in bio2zarr's")
    for name in sorted(ref_names & our_names):
        if name == "region_index":
            continue
        a, b = ref[name], ours[name]
        ma, mb = meta(ref_path, name), meta(ours_path, name)
        for key in ("data_type", "shape", "dimension_names", "fill_value"):
            if ma[key] != mb[key]:
                problems.append(f"{name}: {key} {ma[key]!r} (bio2zarr) != {mb[key]!r} (svar2)")
        if ma["shape"] != mb["shape"] or ma["data_type"] != mb["data_type"]:
            continue
        va, vb = a[:], b[:]
        if va.dtype.kind == "f":
            ia = va.view(np.uint32).copy()
            ib = vb.view(np.uint32)
            if name.startswith("call_"):
                ia[(ia == MISSING) & (ib == FILL)] = FILL
            diff = ia != ib
        else:
            diff = va != vb
        if np.any(diff):
            idx = tuple(int(i) for i in np.argwhere(diff)[0])
            problems.append(
                f"{name}: {int(diff.sum())} values differ, first at {idx}: "
                f"bio2zarr {va[idx]!r} svar2 {vb[idx]!r}"
            )
    root_a = json.load(open(f"{ref_path}/zarr.json"))["attributes"]
    root_b = json.load(open(f"{ours_path}/zarr.json"))["attributes"]
    for key in ("vcf_zarr_version", "vcf_meta_information"):
        if root_a.get(key) != root_b.get(key):
            problems.append(f"root attribute {key}: {root_a.get(key)!r} != {root_b.get(key)!r}")
    for p in problems:
        print(p)
    print(f"compared {len(ref_names & our_names)} arrays: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
