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


def test_same_sites_append_writes_the_last_sample_shard(tmp_path):
    """A batch with the store's sites: only the last sample shard's columns and the
    variant arrays are written, and the store equals converting bcftools merge."""
    need_bcftools()
    names = [f"p{i}" for i in range(9)]
    lines = ["##fileformat=VCFv4.2", "##contig=<ID=1,length=100000>",
             '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
             '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">',
             "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO",
                        "FORMAT"] + names)]
    for r in range(40):
        calls = [f"{(r + s) % 2}|{(r * s) % 2}:{(r * 7 + s) % 50}" for s in range(9)]
        lines.append("\t".join(["1", str(100 + r * 10), ".", "A", "G", "30", "PASS", ".",
                                "GT:DP"] + calls))
    vcf = tmp_path / "all.vcf"
    vcf.write_text("\n".join(lines) + "\n")
    src = tmp_path / "all.vcf.gz"
    subprocess.run(f"bgzip -c {vcf} > {src} && bcftools index -f {src}", shell=True,
                   check=True)
    parts = []
    for name, samples in [("a", names[:7]), ("b", names[7:])]:
        out = tmp_path / f"{name}.vcf.gz"
        subprocess.run(f"bcftools view --no-version -s {','.join(samples)} -Oz -o {out} "
                       f"{src} && bcftools index -f {out}", shell=True, check=True)
        parts.append(out)
    layout = dict(variants_chunk=8, variants_shard=16, samples_chunk=2, samples_shard=2)
    store = tmp_path / "store.zarr"
    svar2.convert(parts[0], store, **layout)
    s = svar2.append(store, [parts[1]])
    assert s["first_sample_written"] == 6
    assert 0 < s["bytes_written"] < s["store_bytes"]
    oracle = tmp_path / "oracle.zarr"
    svar2.convert(bcftools_merge(parts, tmp_path / "m.vcf.gz"), oracle, **layout)
    assert svar2.digest(store) == svar2.digest(oracle)
