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
