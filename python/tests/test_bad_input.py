"""Every failure is a Python exception with the CLI's one-line message, refused
before any read where it can be: never an abort, never fill values passed off as
data."""

import os
import shutil

import numpy as np
import pytest

import svar2


def test_missing_path():
    with pytest.raises(FileNotFoundError, match="no-such.zarr"):
        svar2.open("/no/such/dir/no-such.zarr")


def test_urls_are_refused_by_name(tmp_path, format_vcf, svar2_store, monkeypatch):
    # Never a local folder called "gs:" that the user takes for the bucket; s3:// is
    # read and written (test_s3.py), here with nothing listening at the endpoint.
    monkeypatch.chdir(tmp_path)
    for k, v in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1",
                 "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(k, v)
    for call, says in (
            (lambda: svar2.open("s3://bucket/cohort.zarr"), "cannot reach the server"),
            (lambda: svar2.convert(format_vcf, "s3://bucket/cohort.zarr"), "cannot reach the server"),
            (lambda: svar2.rechunk(svar2_store, "gs://bucket/ml.zarr", patch="4096x1"),
             "gs:// URLs are not supported"),
            (lambda: svar2.inspect("https://host/cohort.zarr"), "https:// URLs are not supported")):
        with pytest.raises(svar2.Error, match=says):
            call()
    assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())


def test_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(svar2.Error):
        svar2.open(tmp_path)
    with pytest.raises(svar2.Error):
        svar2.open(tmp_path / "notes.txt")


def test_unknown_array_and_sample(svar2_store):
    store = svar2.open(svar2_store)
    with pytest.raises(svar2.Error, match="no array call_XX.*call_genotype"):
        store.read("call_XX", [[0, 1, 0, 1]])
    with pytest.raises(svar2.Error, match="no sample nobody"):
        store.region("c1", samples=["s0", "nobody"])
    with pytest.raises(svar2.Error, match="no contig chrZ"):
        store.region("chrZ")
    with pytest.raises(IndexError):
        store.region("c1", samples=[37])
    with pytest.raises(ValueError, match="string array"):
        store.read("variant_allele", [[0, 1, 0, 1]])


def test_patches_out_of_range_and_negative(svar2_store):
    store = svar2.open(svar2_store)
    nv, ns = store.num_variants, store.num_samples
    for bad in ([[nv - 5, 10, 0, 1]], [[0, 10, ns, 1]], [[2**40, 1, 0, 1]]):
        with pytest.raises(IndexError, match="outside the array"):
            store.read("call_genotype", np.array(bad, dtype=np.int64))
    with pytest.raises(IndexError, match="negative"):
        store.read("call_genotype", np.array([[-1, 10, 0, 1]]))
    with pytest.raises(ValueError, match="a count of 0"):
        store.read("call_genotype", np.array([[0, 0, 0, 1]]))
    with pytest.raises(IndexError):
        store.read("call_genotype", [[0, 4, 2, 2]], samples=["s1", "s2"])


def test_patches_of_the_wrong_dtype_or_shape(svar2_store):
    store = svar2.open(svar2_store)
    for bad in (np.zeros((3, 4), np.float64), np.zeros((3, 3), np.int64), np.zeros(4, np.int64),
                [["a", "b", "c", "d"]], np.zeros((2, 4, 1), np.int64)):
        with pytest.raises(ValueError, match=r"\(N, 4\) integer array"):
            store.read("call_genotype", bad)
    with pytest.raises(ValueError, match="one shape per call"):
        store.read("call_genotype", [[0, 10, 0, 1], [0, 11, 0, 1]])
    # Any integer dtype and plain lists are fine.
    a = store.read("call_genotype", np.array([[0, 10, 0, 1]], dtype=np.uint16))
    assert (a == store.read("call_genotype", [[0, 10, 0, 1]])).all()


def test_out_of_the_wrong_kind(svar2_store):
    store = svar2.open(svar2_store)
    p = np.array([[0, 10, 0, 2]] * 3)
    for bad in (np.zeros((3, 10, 2, 2), np.int16), np.zeros((3, 10, 2, 3), np.int8),
                np.zeros((3, 10, 2, 2, 2), np.int8)[..., 0], [1, 2, 3]):
        with pytest.raises(ValueError, match="out: expected"):
            store.read("call_genotype", p, out=bad)
    ro = np.zeros((3, 10, 2, 2), np.int8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out: expected"):
        store.read("call_genotype", p, out=ro)


def damage(path, offset=2, length=8):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(b"\xa5" * length)


def test_a_damaged_shard_names_its_chunk(tmp_path, svar2_store):
    store_dir = tmp_path / "damaged.zarr"
    shutil.copytree(svar2_store, store_dir)
    shard = store_dir / "call_genotype" / "c" / "0" / "0" / "0"
    assert shard.exists()
    # The first inner chunk's blosc header: the frame no longer parses.
    damage(shard)
    store = svar2.open(store_dir)
    # A damaged store is its own class (a program may restore it), still an svar2.Error.
    with pytest.raises(svar2.CorruptStoreError, match=r"call_genotype/c/0/0/0 \(inner chunk \[0, 0, 0\]\)"):
        store.read("call_genotype", [[0, 100, 0, 5]])
    # The rest still reads.
    store.read("call_genotype", [[600, 100, 20, 5]])
    # A shard cut short: its index no longer checks.
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) - 7)
    with pytest.raises(svar2.CorruptStoreError, match="call_genotype/c/0/0/0"):
        svar2.open(store_dir).read("call_genotype", [[0, 100, 0, 5]])


def test_closed_store(svar2_store):
    with svar2.open(svar2_store) as store:
        store.read("call_genotype", [[0, 10, 0, 1]])
    assert store.closed
    with pytest.raises(svar2.Error, match="closed"):
        store.read("call_genotype", [[0, 10, 0, 1]])
    with pytest.raises(svar2.Error, match="closed"):
        store.samples


def test_store_deleted_under_a_reader(tmp_path, svar2_store):
    store_dir = tmp_path / "deleted.zarr"
    shutil.copytree(svar2_store, store_dir)
    store = svar2.open(store_dir)
    first = store.read("call_genotype", [[0, 100, 0, 5]])
    shutil.rmtree(store_dir)
    # What was read before stays right; a chunk never read is an error, not fill.
    assert (store.read("call_genotype", [[0, 100, 0, 5]]) == first).all()
    with pytest.raises(svar2.Error, match="deleted or moved"):
        store.read("call_genotype", [[2000, 100, 30, 5]])


def test_store_replaced_under_a_reader(tmp_path, format_vcf, svar2_store):
    """`convert --force` (or an append) over a store a handle has open: chunks read
    before stay as they were; a shard opened after is another version's, which the
    metadata read at open does not describe (other samples under the old names, or a
    grid changed), so it is an error saying so, never those values."""
    store_dir = tmp_path / "replaced.zarr"
    shutil.copytree(svar2_store, store_dir)
    store = svar2.open(store_dir)
    first = store.read("call_genotype", [[0, 100, 0, 5]])
    names = list(reversed(store.samples))
    svar2.convert(format_vcf, store_dir, force=True, samples=names, variants_chunk=170,
                  samples_chunk=5, variants_shard=510, samples_shard=15)
    assert (store.read("call_genotype", [[0, 100, 0, 5]]) == first).all()
    with pytest.raises(svar2.Error, match="replaced while it was open") as e:
        store.read("call_genotype", [[2000, 100, 30, 5]])
    assert not isinstance(e.value, svar2.CorruptStoreError)
    # Opened again: the new version.
    assert svar2.open(store_dir).samples == tuple(names)


def test_attributes_edited_under_a_reader_are_no_replacement(tmp_path, svar2_store):
    """zarr-python's ``attrs[...]`` replaces an array's zarr.json (a new file), but
    the shards and the root are the same version: reading goes on."""
    from conftest import need_module

    need_module("zarr", "zarr")
    import zarr

    store_dir = tmp_path / "edited.zarr"
    shutil.copytree(svar2_store, store_dir)
    store = svar2.open(store_dir)
    store.read("call_genotype", [[0, 100, 0, 5]])
    zarr.open_array(store_dir / "call_genotype", mode="r+").attrs["note"] = 1
    store.read("call_genotype", [[2000, 100, 30, 5]])


def test_a_relative_path_is_reopened_where_it_was_opened(tmp_path, svar2_store, monkeypatch):
    """A forked worker reopens the store by its path: the one opened, not another of
    the same relative name under the working directory the worker has."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copytree(svar2_store, tmp_path / "a" / "s.zarr")
    monkeypatch.chdir(tmp_path / "a")
    store = svar2.open("s.zarr")
    assert os.path.isabs(store.path)
    want = store.read("call_genotype", [[0, 64, 5, 1]])
    monkeypatch.chdir(tmp_path / "b")
    # This process too: shards not opened yet are found where the store is.
    store.read("call_genotype", [[2000, 100, 30, 5]])
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if (store.read("call_genotype", [[0, 64, 5, 1]]) == want).all() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_error_classes(tmp_path):
    """svar2.Error's subclasses tell what a program may handle apart: an input that
    does not convert (InputError: file, record, contig:pos), a damaged store
    (CorruptStoreError, above), no usable GPU (GpuError, test_device.py)."""
    assert issubclass(svar2.InputError, svar2.Error)
    assert issubclass(svar2.CorruptStoreError, svar2.Error)
    assert issubclass(svar2.GpuError, svar2.Error)
    bad = tmp_path / "bad.vcf"
    bad.write_text(
        "##fileformat=VCFv4.2\n##contig=<ID=1>\n"
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
        "1\t10\t.\tA\tG\t.\t.\t.\n"
        "1\tnot-a-position\t.\tA\tG\t.\t.\t.\n"
    )
    with pytest.raises(svar2.InputError, match="bad.vcf: record 2"):
        svar2.convert(bad, tmp_path / "out.zarr")
    assert not (tmp_path / "out.zarr" / "zarr.json").exists()


def test_convert_keywords_out_of_range_are_value_errors(format_vcf, tmp_path):
    """Zero threads, a chunk or shard of 0, a NaN amplification: refused as the CLI
    refuses them, never quietly taken as something else."""
    for kw in (dict(threads=0), dict(variants_chunk=0), dict(samples_shard=0),
               dict(max_amplification=float("nan")), dict(zstd_level=10)):
        with pytest.raises(ValueError):
            svar2.convert(format_vcf, tmp_path / "x.zarr", **kw)
        with pytest.raises(ValueError):
            svar2.rechunk(tmp_path / "none.zarr", tmp_path / "y.zarr",
                          **kw)


def test_arguments_that_cannot_read_are_refused_before_any_allocation(svar2_store):
    store = svar2.open(svar2_store)
    # One string is not a list of names (it would be its letters).
    with pytest.raises(TypeError, match="not one string"):
        store.read("call_genotype", [[0, 10, 0, 1]], samples="tsk_1")
    # Counts far past the array: IndexError, not a MemoryError for the output.
    for n in (2**40, 2**62):
        with pytest.raises(IndexError):
            store.read("call_genotype", [[0, n, 0, 1]])
    with pytest.raises(IndexError, match="past every array"):
        store.read("call_genotype", np.array([[2**63, 1, 0, 1]], dtype=np.uint64))
    for kw in (dict(depth=1000), dict(depth=0), dict(batch_size=0)):
        with pytest.raises(ValueError, match="depth"):
            store.read_ahead("call_genotype", [[0, 10, 0, 1]], **kw)
