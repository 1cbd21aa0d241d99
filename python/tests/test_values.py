"""store.read and store.region against outside oracles: zarr-python's decode of the
same arrays (five kinds of store), and bcftools query's genotypes."""

import numpy as np
import pytest

import svar2
from conftest import need_bcftools, need_module, open_zarr_group, run

STORE_KINDS = ["svar2", "svar2_zip", "rechunked_bio2zarr", "bio2zarr_v2", "bio2zarr_v3",
               "zarr_python"]


@pytest.fixture(params=STORE_KINDS)
def store_path(request):
    kind = request.param
    if kind == "svar2":
        return request.getfixturevalue("svar2_store")
    if kind == "svar2_zip":
        return request.getfixturevalue("svar2_zip_store")
    if kind == "rechunked_bio2zarr":
        return request.getfixturevalue("rechunked_store")
    if kind == "bio2zarr_v2":
        return request.getfixturevalue("bio2zarr_stores")[0]
    if kind == "bio2zarr_v3":
        return request.getfixturevalue("bio2zarr_stores")[1]
    return request.getfixturevalue("zarr_python_store")


def random_shapes_and_patches(rng, nv, ns, total=520):
    """`total` patches in groups of one shape each: starts anywhere, shapes from 1 x 1
    to a few hundred variants x a dozen samples, edges included."""
    out = []
    while sum(len(p) for _, p in out) < total:
        v = int(rng.integers(1, min(nv, 400) + 1))
        s = int(rng.integers(1, min(ns, 13) + 1))
        k = int(rng.integers(5, 30))
        starts_v = rng.integers(0, nv - v + 1, k)
        starts_s = rng.integers(0, ns - s + 1, k)
        # Always one patch at the far corner (the partial chunks).
        starts_v[0], starts_s[0] = nv - v, ns - s
        p = np.stack([starts_v, np.full(k, v), starts_s, np.full(k, s)], axis=1).astype(np.int64)
        out.append(((v, s), p))
    return out


def test_read_equals_zarr_python_on_every_numeric_call_array(store_path):
    need_module("zarr", "zarr")
    z = open_zarr_group(store_path)
    store = svar2.open(store_path)
    names = [
        n for n, info in store.arrays.items()
        if info.dims[:2] == ["variants", "samples"] and info.dtype != "str"
    ]
    assert {"call_genotype", "call_AD", "call_DP", "call_GQ", "call_PL", "call_VAF"} <= set(names), names
    rng = np.random.default_rng(5)
    checked = 0
    for name in names:
        full = np.asarray(z[name][...])
        nv, ns = full.shape[:2]
        for (v, s), patches in random_shapes_and_patches(rng, nv, ns):
            got = store.read(name, patches)
            want = np.stack([full[a:a + v, c:c + s] for a, _, c, _ in patches])
            assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
            assert got.shape == want.shape, (name, got.shape, want.shape)
            # Byte-identical (NaN payloads included).
            assert got.tobytes() == want.tobytes(), (name, v, s)
            checked += len(patches)
    assert checked >= 500 * len(names)


def test_arrays_without_samples_and_sample_subsets(store_path):
    need_module("zarr", "zarr")
    z = open_zarr_group(store_path)
    store = svar2.open(store_path)
    rng = np.random.default_rng(9)
    pos = np.asarray(z["variant_position"][...])
    p = np.array([[a, 50, 0, 1] for a in rng.integers(0, len(pos) - 50, 40)], dtype=np.int64)
    got = store.read("variant_position", p)
    assert got.shape == (40, 50)
    assert (got == np.stack([pos[a:a + 50] for a in p[:, 0]])).all()
    # Patches over a chosen sample list, in any order, with repeats.
    gt = np.asarray(z["call_genotype"][...])
    cols = [7, 3, 4, 5, 30, 30, 0]
    names = [store.samples[c] for c in cols]
    p = np.array([[a, 33, b, 4] for a, b in zip(rng.integers(0, len(pos) - 33, 25), rng.integers(0, 4, 25))],
                 dtype=np.int64)
    for samples in (cols, names):
        got = store.read("call_genotype", p, samples=samples)
        want = np.stack([gt[a:a + 33][:, cols[b:b + 4]] for a, _, b, _ in p])
        assert got.tobytes() == want.tobytes()


def test_out_is_filled_in_place(svar2_store):
    store = svar2.open(svar2_store)
    p = store.random_patches(64, shape=(100, 3), seed=1)
    want = store.read("call_AD", p)
    out = np.full_like(want, 99)
    got = store.read("call_AD", p, out=out)
    assert got is out
    assert (out == want).all()


def gt_text(g, phased):
    """A genotype as bcftools prints it: '.' for missing, fill dropped."""
    alleles = ["." if a == -1 else str(a) for a in g if a != -2]
    return ("|" if phased else "/").join(alleles)


@pytest.mark.parametrize("fixture,regions,samples", [
    ("format_vcf", [("c1", 0, None), ("c2", 9_000, 20_000), ("c3", 36, 37)], ["s3", "s0", "s36"]),
    ("all_fields_vcf", [("chr1", 0, None), ("chrX", 0, None), ("chr2", 0, 100_000)], None),
])
def test_region_equals_bcftools_query(request, work, fixture, regions, samples):
    need_bcftools()
    vcf = request.getfixturevalue(fixture)
    out = work / f"region_{fixture}.zarr"
    if not out.exists():
        svar2.convert(vcf, out, variants_chunk=50, samples_chunk=7)
    store = svar2.open(out)
    for contig, start, end in regions:
        gt, pos = store.region(contig, start, end, samples=samples)
        ph, _ = store.region(contig, start, end, samples=samples, array="call_genotype_phased")
        region = f"{contig}:{start + 1}-{end}" if end is not None else contig
        cmd = ["bcftools", "query", "-r", region, "-f", "%POS[\t%GT]\n"]
        if samples:
            cmd += ["-s", ",".join(samples)]
        want = run(*cmd, vcf).splitlines()
        got = [
            "\t".join([str(p + 1)] + [gt_text(gt[i, k], ph[i, k]) for k in range(gt.shape[1])])
            for i, p in enumerate(pos)
        ]
        assert got == want, (contig, start, end)
        assert gt.shape[0] == len(want)
