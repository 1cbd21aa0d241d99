"""store.select(expr): the variant rows whose record satisfies a bcftools expression,
against `bcftools query -i` on the file converted — whole store and regions — and a
bad expression as a ValueError naming its column."""

import numpy as np
import pytest

import svar2
from conftest import need_bcftools, need_module, run

EXPRESSIONS = [
    "QUAL>300",
    "INFO/DP>1000 && AC>2",
    "MAF<0.02",
    'GT="het"',
    'COUNT(GT="hom")=0',
    "FMT/DP>30 & FMT/GQ>50",
    "N_MISSING>2",
    'CHROM="c2" && POS<500',
]


def loci(store_path):
    need_module("zarr", "zarr")
    import zarr

    g = zarr.open_group(store_path, mode="r")
    names = [str(c) for c in g["contig_id"][:]]
    return [f"{names[c]}:{p}" for c, p in zip(g["variant_contig"][:], g["variant_position"][:])]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_select_equals_bcftools_query(expr, format_vcf, svar2_store):
    need_bcftools()
    store = svar2.open(svar2_store)
    at = loci(svar2_store)
    rows = store.select(expr)
    assert rows.dtype == np.int64 and (np.diff(rows) > 0).all()
    want = run("bcftools", "query", "-i", expr, "-f", "%CHROM:%POS\\n", str(format_vcf)).split()
    assert [at[r] for r in rows] == want
    # Within a region: the rows of both.
    region = store.variant_rows("c1", 100, 5000)
    inside = store.select(expr, "c1", 100, 5000)
    assert inside.tolist() == [r for r in rows.tolist() if r in set(region.tolist())]


def test_bad_expression_is_a_value_error(svar2_store):
    store = svar2.open(svar2_store)
    with pytest.raises(ValueError, match="column 6 "):
        store.select("QUAL>>3")
    with pytest.raises(ValueError, match="no such INFO or FORMAT field"):
        store.select("NOPE>1")
    assert store.select("QUAL<0").tolist() == []


def test_patch_dataset_where_starts_patches_at_selected_variants(svar2_store):
    need_module("torch", "torch")
    import torch

    from svar2.torch import PatchDataset

    store = svar2.open(svar2_store)
    chosen = set(store.select("MAF<0.05").tolist())
    contig_rows = [store.variant_rows(c) for c in store.contigs]
    ds = PatchDataset(store, patch=(40, 3), batch_size=25, seed=2, num_patches=500,
                      where="MAF<0.05", with_patches=True)
    e0, e1 = ds.epoch_patches(0), ds.epoch_patches(1)
    assert (e0 == ds.epoch_patches(0)).all() and not (e0 == e1).all()
    for v0, nv, s0, ns in e0.tolist():
        assert v0 in chosen, v0
        assert any(rows[0] <= v0 and v0 + nv <= rows[-1] + 1 for rows in contig_rows)
        assert 0 <= s0 <= store.num_samples - ns
    # Through a DataLoader with workers: the same patches, each batch what it says.
    for workers in (0, 2):
        got = []
        for x, p in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers):
            assert x.numpy().tobytes() == store.read("call_genotype", p.numpy()).tobytes()
            got.extend(map(tuple, p.tolist()))
        assert sorted(got) == sorted(map(tuple, e0.tolist()))
    with pytest.raises(ValueError, match="no selected variant starts"):
        PatchDataset(store, patch=(40, 3), where="QUAL<0")
    with pytest.raises(ValueError, match="column"):
        PatchDataset(store, patch=(40, 3), where="QUAL<<0")


@pytest.mark.parametrize(
    "kwargs,flags",
    [
        ({"samples": ["s3", "s1"], "include": "MAF>0.05"}, ["-s", "s3,s1", "-i", "MAF>0.05"]),
        ({"samples": "^s0", "regions": "c2", "exclude": 'GT="mis"'}, ["-s", "^s0", "-r", "c2", "-e", 'GT="mis"']),
        ({"targets": "^c1:1-5000"}, ["-t", "^c1:1-5000"]),
    ],
)
def test_convert_subset_equals_bcftools_view(kwargs, flags, format_vcf, work):
    """svar2.convert(samples=, regions=, targets=, include=/exclude=) writes the store
    converting `bcftools view` of the same flags gives."""
    need_bcftools()
    tag = "-".join(sorted(kwargs))
    ours = work / f"subset-{tag}.zarr"
    via = work / f"subset-{tag}.vcf.gz"
    theirs = work / f"subset-{tag}-bcftools.zarr"
    svar2.convert(format_vcf, ours, force=True, **kwargs)
    run("bcftools", "view", "--no-version", *flags, str(format_vcf), "-Oz", "-o", str(via))
    svar2.convert(via, theirs, force=True)
    assert svar2.digest(ours) == svar2.digest(theirs)


def test_convert_subset_errors_are_value_errors(format_vcf, work):
    with pytest.raises(ValueError, match="include or exclude"):
        svar2.convert(format_vcf, work / "x.zarr", include="QUAL>1", exclude="QUAL<1")
    # A request the input cannot serve is a ValueError, as store.select says it; an
    # input that does not convert is svar2.InputError.
    with pytest.raises(ValueError, match="nosuch"):
        svar2.convert(format_vcf, work / "x.zarr", samples=["nosuch"])
    with pytest.raises(ValueError, match="column"):
        svar2.convert(format_vcf, work / "x.zarr", include="QUAL>")
    with pytest.raises(ValueError, match="region"):
        svar2.convert(format_vcf, work / "x.zarr", regions="1:abc")
    other = work / "other-samples.vcf"
    other.write_text(
        "##fileformat=VCFv4.2\n##contig=<ID=1>\n##FORMAT=<ID=GT,Number=1,Type=String,"
        "Description=\"g\">\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tzz\n"
        "1\t1\t.\tA\tC\t.\t.\t.\tGT\t0/1\n"
    )
    with pytest.raises(svar2.InputError, match="different samples"):
        svar2.convert([format_vcf, other], work / "x.zarr")


def test_convert_subset_from_files_and_lists(format_vcf, work):
    """samples_file/force_samples/no_update as -S/--force-samples/-I; a list of
    names as given (an empty list is refused, not a sites-only store)."""
    need_bcftools()
    names = work / "names.txt"
    names.write_text("s4\ns2\n")
    a, b = work / "from-file.zarr", work / "from-list.zarr"
    svar2.convert(format_vcf, a, force=True, samples_file=names, no_update=True)
    svar2.convert(format_vcf, b, force=True, samples=["s4", "nosuch", "s2"], force_samples=True, no_update=True)
    assert svar2.digest(a) == svar2.digest(b)
    with pytest.raises(ValueError, match="keeps no sample"):
        svar2.convert(format_vcf, work / "none.zarr", samples=[])
