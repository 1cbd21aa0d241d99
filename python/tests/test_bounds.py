"""Counts a caller gives are bounded: a thread count far beyond the cores and a
patch list larger than this machine's memory raise svar2.Error with one line,
instead of spawning threads for minutes or aborting the interpreter."""

import pytest

import svar2


def test_thread_counts_beyond_the_cores_are_refused(svar2_store, format_vcf, tmp_path):
    for kwargs, says in (({"threads": 10**6}, "threads 1000000"),
                         ({"io_threads": 10**6}, "io_threads 1000000"),
                         ({"threads": 0}, "threads 0")):
        with pytest.raises(svar2.Error, match=says):
            svar2.open(svar2_store, **kwargs)
    with pytest.raises(svar2.Error, match="readers 100000"):
        svar2.convert(format_vcf, tmp_path / "o.zarr", readers=100000)


def test_patch_lists_beyond_memory_are_refused(svar2_store):
    store = svar2.open(svar2_store)
    with pytest.raises(svar2.Error, match="more than this machine's memory"):
        store.random_patches(2**60, shape=(1, 1))
    assert store.random_patches(3, shape=(1, 1)).shape == (3, 4)
