"""Every ```python block of README.md runs as written, in a folder holding the files
it names (`cohort.zarr` and `out.zarr`: stores of the repo's example, unless the block
writes one; `in.vcf.gz`: the example itself), so the README cannot drift from the package."""

import re
import shutil

import pytest

import svar2

from conftest import ROOT, need_module

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 2, "README.md shows Python"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    code = BLOCKS[index]
    for module in ("torch", "zarr", "xarray"):
        if re.search(rf"\bimport .*\b{module}\b", code):
            need_module(module, module)
    example = ROOT / "examples" / "small.vcf.gz"
    shutil.copy(example, tmp_path / "in.vcf.gz")
    for store in ("cohort.zarr", "out.zarr"):
        if not re.search(rf"convert\([^)]*\"{store}\"", code):  # (one the block writes)
            svar2.convert(str(example), str(tmp_path / store))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md python block {index}", "exec"), {})
