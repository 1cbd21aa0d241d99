"""Cohorts that grow, from Python: ``svar2.convert(inputs, out, merge=...)`` equals
converting ``bcftools merge``'s output, and ``svar2.append`` grows a store to the same
bytes; what cannot be done raises the documented error class."""

import subprocess
from pathlib import Path

import pytest

import svar2
from conftest import ROOT, need_bcftools

LAYOUT = dict(variants_chunk=3, variants_shard=6, samples_chunk=1, samples_shard=1)


def split(tmp: Path, name: str, samples: str, edit: str = "cat") -> Path:
    src = tmp / "all.vcf.gz"
    if not src.exists():
        subprocess.run(["bcftools", "view", "-Oz", "-o", str(src),
                        str(ROOT / "tests/data/all_fields.vcf")], check=True)
        subprocess.run(["bcftools", "index", "-f", str(src)], check=True)
    out = tmp / name
    subprocess.run(
        f"bcftools view --no-version -s '{samples}' {src} | {edit} | bgzip > {out} "
        f"&& bcftools index -f {out}", shell=True, check=True)
    return out


def bcftools_merge(inputs, out: Path, mode: str = "both") -> Path:
    subprocess.run(["bcftools", "merge", "--no-version", "-m", mode, "-Oz", "-o", str(out)]
                   + [str(p) for p in inputs], check=True)
    subprocess.run(["bcftools", "index", "-f", str(out)], check=True)
    return out


NEW_ALT = r"""awk 'BEGIN{OFS="\t"} /^#/{print;next} $2==100{$5="C"} {print}'"""


def test_convert_merge_and_append_equal_bcftools_merge(tmp_path):
    need_bcftools()
    a = split(tmp_path, "a.vcf.gz", "NA00001,Zoë")
    b = split(tmp_path, "b.vcf.gz", "样本3,s-4 x", NEW_ALT)
    for mode, flag in [("both", True), ("none", "none")]:
        ours = tmp_path / f"ours-{mode}.zarr"
        svar2.convert([a, b], ours, merge=flag)
        theirs = tmp_path / f"theirs-{mode}.zarr"
        svar2.convert(bcftools_merge([a, b], tmp_path / f"m-{mode}.vcf.gz", mode), theirs)
        assert svar2.digest(ours) == svar2.digest(theirs), mode

    store = tmp_path / "grown.zarr"
    svar2.convert(a, store, **LAYOUT)
    s = svar2.append(store, [b])
    assert (s["samples_before"], s["samples_after"]) == (2, 4)
    oracle = tmp_path / "oracle.zarr"
    svar2.convert(tmp_path / "m-both.vcf.gz", oracle, **LAYOUT)
    assert svar2.digest(store) == svar2.digest(oracle)
    assert list(svar2.open(store).samples) == ["NA00001", "Zoë", "样本3", "s-4 x"]


def test_append_and_merge_refusals(tmp_path):
    need_bcftools()
    a = split(tmp_path, "a.vcf.gz", "NA00001,Zoë")
    b = split(tmp_path, "b.vcf.gz", "NA00001")
    with pytest.raises(svar2.InputError, match="NA00001"):
        svar2.convert([a, b], tmp_path / "dup.zarr", merge=True)
    with pytest.raises(ValueError, match="both"):
        svar2.convert([a, b], tmp_path / "x.zarr", merge="all")
    zip_store = tmp_path / "a.vcz.zip"
    svar2.convert(a, zip_store)
    with pytest.raises(ValueError, match="written once"):
        svar2.append(zip_store, b)
    store = tmp_path / "a.zarr"
    svar2.convert(a, store)
    with pytest.raises(svar2.InputError, match="NA00001"):
        svar2.append(store, b)
    kept = svar2.append(store, b, force_samples=True)
    assert kept["samples_after"] == 3
    assert svar2.open(store).samples[-1] == "2:NA00001"
