"""Fixtures for the Python package's tests: VCFs made here (a FORMAT-heavy call set
from scripts/make_format_vcf.py, tests/data/all_fields.vcf, the shared corpus when
present) and the five kinds of store the reader must read alike.

A test that needs a tool the machine lacks skips with the reason — or fails, when
SVAR2_REQUIRE_TOOLS is set (CI).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import svar2

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def need(what: str, ok: bool, how: str) -> None:
    """Skips (or, under SVAR2_REQUIRE_TOOLS, fails) when a tool is missing."""
    if ok:
        return
    msg = f"{what} not available ({how})"
    if os.environ.get("SVAR2_REQUIRE_TOOLS"):
        pytest.fail(msg + ", and SVAR2_REQUIRE_TOOLS is set")
    log = os.environ.get("SVAR2_SKIP_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"SKIP python: {msg}\n")
    pytest.skip(msg)


def need_bcftools() -> None:
    need("bcftools", shutil.which("bcftools") is not None and shutil.which("bgzip") is not None,
         "apt-get install bcftools tabix")


def need_module(name: str, pip: str) -> None:
    try:
        __import__(name)
        ok = True
    except ImportError:
        ok = False
    need(name, ok, f"pip install {pip}")


def need_vcf2zarr() -> None:
    need("vcf2zarr", shutil.which("vcf2zarr") is not None, "pip install 'bio2zarr[vcf]'")


def run(*cmd, env=None) -> str:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed:\n{r.stderr}")
    return r.stdout


def bgzip_index(vcf: Path) -> Path:
    need_bcftools()
    gz = vcf.with_suffix(vcf.suffix + ".gz")
    run("bcftools", "view", "-Oz", "-o", gz, vcf)
    run("bcftools", "index", "-f", gz)
    return gz


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("svar2py")


@pytest.fixture(scope="session")
def format_vcf(work) -> Path:
    """A FORMAT-heavy call set: 2,400 records x 37 samples over 3 contigs, GT:AD:DP:GQ:
    PL:VAF:PS, ~2 % missing calls, 10 % multiallelic — bgzipped and indexed."""
    vcf = work / "fmt.vcf"
    run(sys.executable, ROOT / "scripts/make_format_vcf.py", vcf, 37, 2400,
        "GT:AD:DP:GQ:PL:VAF:PS", 3)
    return bgzip_index(vcf)


@pytest.fixture(scope="session")
def all_fields_vcf(work) -> Path:
    dst = work / "all_fields.vcf"
    shutil.copy(ROOT / "tests/data/all_fields.vcf", dst)
    return bgzip_index(dst)


@pytest.fixture(scope="session")
def svar2_store(work, format_vcf) -> Path:
    """svar2 convert with chunks that leave partial chunks on both axes and several
    inner chunks per shard."""
    out = work / "svar2.zarr"
    svar2.convert(format_vcf, out, variants_chunk=170, samples_chunk=5,
                  variants_shard=510, samples_shard=15)
    return out


@pytest.fixture(scope="session")
def svar2_zip_store(work, format_vcf) -> Path:
    """The same store written as one .vcz.zip file."""
    out = work / "svar2.vcz.zip"
    svar2.convert(format_vcf, out, variants_chunk=170, samples_chunk=5,
                  variants_shard=510, samples_shard=15)
    return out


def open_zarr_group(path):
    """zarr-python's group at `path`: a directory, or a .zip through its ZipStore."""
    import zarr

    if str(path).endswith(".zip"):
        return zarr.open_group(zarr.storage.ZipStore(path, mode="r"), mode="r")
    return zarr.open_group(path, mode="r")


@pytest.fixture(scope="session")
def bio2zarr_stores(work, format_vcf):
    """bio2zarr's own stores of the same file: Zarr v2 and v3."""
    need_vcf2zarr()
    v2, v3 = work / "b2.vcz", work / "b3.vcz"
    run("vcf2zarr", "convert", "-p", "1", "-l", "230", "-w", "6", format_vcf, v2)
    env = dict(os.environ, BIO2ZARR_DEFAULT_ZARR_FORMAT="3")
    run("vcf2zarr", "convert", "-p", "1", "-l", "230", "-w", "6", format_vcf, v3, env=env)
    return v2, v3


@pytest.fixture(scope="session")
def rechunked_store(work, bio2zarr_stores) -> Path:
    out = work / "rechunked.zarr"
    svar2.rechunk(bio2zarr_stores[0], out, patch="64x3")
    return out


@pytest.fixture(scope="session")
def zarr_python_store(work, svar2_store) -> Path:
    """Every array of the svar2 store rewritten by zarr-python itself: sharded, with
    zarr-python's default codecs (zstd, no blosc)."""
    need_module("zarr", "zarr")
    import zarr

    src = zarr.open_group(svar2_store, mode="r")
    dst_path = work / "zarr_python.zarr"
    dst = zarr.open_group(dst_path, mode="w", zarr_format=3)
    dst.attrs.update(dict(src.attrs))
    for name, a in src.arrays():
        dims = list(a.metadata.dimension_names)
        if dims and dims[0] == "variants" and a.dtype.kind in "biuf":
            chunks = tuple([97] + [min(n, 4) if d == "samples" else n for d, n in zip(dims[1:], a.shape[1:])])
            shards = tuple([97 * 3] + [min(n, 4) * 3 if d == "samples" else n for d, n in zip(dims[1:], a.shape[1:])])
        else:
            chunks, shards = a.shape, None
        b = dst.create_array(name, shape=a.shape, dtype=a.dtype, chunks=chunks, shards=shards,
                             dimension_names=dims, fill_value=a.fill_value)
        b[...] = a[...]
        b.attrs.update(dict(a.attrs))
    return dst_path


@pytest.fixture(scope="session")
def small_corpus_store(work) -> Path:
    """The shared corpus's sim_small as a svar2 store (patch layout), when present."""
    gz = CORPUS / "sim_small.vcf.gz"
    need("the shared corpus", gz.exists(), "../shared/corpus/sim_small.vcf.gz")
    out = work / "sim_small.zarr"
    svar2.convert(gz, out, patch="256x1")
    return out
