"""`device=`: Store.read and PatchDataset handing torch tensors over through DLPack —
on the CPU, the reader's own buffer (equal to the numpy read for every numeric array,
alive after the store closes, freed when dropped); on a GPU, decoded there (equal to
the CPU read); without a usable GPU, one svar2.Error naming what is missing. And the
PatchDataset's ways of serving: a worker's shared ring never overwrites a batch still
in use; pinned batches."""

import gc
import os

import numpy as np
import pytest

import svar2
from conftest import need_module

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


@pytest.fixture(scope="module")
def torch_mod():
    need_module("torch", "torch")
    import torch

    return torch


def numeric_call_arrays(store):
    return [n for n, i in store.arrays.items() if i.dims[:2] == ["variants", "samples"] and i.dtype != "str"]


def patches_of(rng, nv, ns, v, s, k=40):
    return np.stack(
        [rng.integers(0, nv - v + 1, k), np.full(k, v), rng.integers(0, ns - s + 1, k), np.full(k, s)],
        axis=1,
    ).astype(np.int64)


def test_cpu_tensors_equal_numpy_for_every_numeric_array(torch_mod, svar2_store):
    torch = torch_mod
    store = svar2.open(svar2_store)
    rng = np.random.default_rng(11)
    names = numeric_call_arrays(store)
    assert {"call_genotype", "call_AD", "call_VAF", "call_PL"} <= set(names), names
    for name in names:
        nv, ns = store.arrays[name].shape[:2]
        for v, s in [(1, 1), (170, 5), (333, 13)]:
            p = patches_of(rng, nv, ns, v, s)
            want = store.read(name, p)
            got = store.read(name, p, device="cpu")
            assert isinstance(got, torch.Tensor) and got.device.type == "cpu"
            assert tuple(got.shape) == want.shape, name
            assert got.numpy().dtype == want.dtype, name
            assert got.numpy().tobytes() == want.tobytes(), (name, v, s)
    # A torch.device works as well as its name; sample subsets too.
    cols = [4, 0, 9, 9, 2]
    p = patches_of(rng, store.arrays["call_DP"].shape[0], len(cols), 20, 3)
    want = store.read("call_DP", p, samples=cols)
    got = store.read("call_DP", p, samples=cols, device=torch.device("cpu"))
    assert got.numpy().tobytes() == want.tobytes()


def test_cpu_tensor_outlives_the_store_and_is_freed_when_dropped(torch_mod, svar2_store):
    store = svar2.open(svar2_store)
    p = np.array([[0, 2000, 0, 37]] * 8, np.int64)
    want = store.read("call_AD", p)
    t = store.read("call_AD", p, device="cpu")
    view = t[3:5, 10:20]
    store.close()
    del t
    gc.collect()
    assert view.numpy().tobytes() == want[3:5, 10:20].tobytes()
    # Every tensor dropped frees its buffer (the DLPack deleter ran): 300 reads of
    # ~4.7 MB each leave the process' memory where it was.
    store = svar2.open(svar2_store)

    def rss_mb():
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    for _ in range(20):
        store.read("call_AD", p, device="cpu")
    before = rss_mb()
    for _ in range(300):
        x = store.read("call_AD", p, device="cpu")
        del x
    gc.collect()
    assert rss_mb() - before < 200, f"{rss_mb() - before:.0f} MB kept by 300 dropped tensors"


def test_device_errors_are_one_clear_line(torch_mod, svar2_store):
    store = svar2.open(svar2_store)
    p = np.array([[0, 10, 0, 2]], np.int64)
    for bad in ("tpu", "cuda:x", "cuda:-1", "gpu", "cuda:+1", "cuda:00", "cpu:1", "CPU", ""):
        with pytest.raises(ValueError, match='device: expected None, "cpu", "cuda" or "cuda:N"'):
            store.read("call_genotype", p, device=bad)
    with pytest.raises(ValueError, match="out= fills a numpy array; device= returns a new tensor"):
        store.read("call_genotype", p, out=np.zeros((1, 10, 2, 2), np.int8), device="cpu")
    # torch's own spellings of the CPU.
    torch = torch_mod
    for cpu in ("cpu:0", torch.device("cpu", 0)):
        assert store.read("call_genotype", p, device=cpu).shape == (1, 10, 2, 2)
    # Patches outside the array, however large, are an IndexError before anything is
    # allocated; a batch too large for memory is a MemoryError (never an abort).
    with pytest.raises(IndexError, match="outside the array"):
        store.read("call_genotype", np.array([[0, 2**40, 0, 1]]), device="cpu")
    with pytest.raises(MemoryError, match="does not fit in memory"):
        store.read("call_genotype", np.array([[0, 2**62, 0, 1]] * 4), device="cpu")


def test_cuda_reads_equal_the_cpu_or_name_what_is_missing(torch_mod, svar2_store):
    """Without a GPU (this machine, CI): svar2.Error naming the driver, nvCOMP or NVRTC,
    and the process goes on. With one: every numeric array's patches decoded on the
    GPU equal the CPU read, byte for byte, on 'cuda' and 'cuda:0'."""
    torch = torch_mod
    store = svar2.open(svar2_store)
    p = np.array([[0, 170, 0, 5], [170, 170, 5, 5]], np.int64)
    if not torch.cuda.is_available():
        for dev in ("cuda", "cuda:0", "cuda:3"):
            with pytest.raises(svar2.GpuError) as e:
                store.read("call_genotype", p, device=dev)
            msg = str(e.value)
            assert msg.startswith(f'device="{dev}"'), msg
            assert any(w in msg for w in ("CUDA driver", "nvCOMP", "NVRTC", "cannot open GPU")), msg
            assert "\n" not in msg
        # The store still reads on the CPU afterwards.
        assert store.read("call_genotype", p).shape == (2, 170, 5, 2)
        print("(no GPU here: the CUDA path was checked for its error only)")
        return
    rng = np.random.default_rng(12)
    for name in numeric_call_arrays(store):
        nv, ns = store.arrays[name].shape[:2]
        for v, s in [(1, 1), (170, 5), (400, 13)]:
            q = patches_of(rng, nv, ns, v, s)
            want = store.read(name, q)
            for dev in ("cuda", "cuda:0"):
                got = store.read(name, q, device=dev)
                assert got.is_cuda and tuple(got.shape) == want.shape
                assert got.cpu().numpy().tobytes() == want.tobytes(), (name, v, s, dev)
    cols = [3, 3, 0]
    q = patches_of(rng, store.arrays["call_GQ"].shape[0], len(cols), 50, 2)
    got = store.read("call_GQ", q, samples=cols, device="cuda")
    assert got.cpu().numpy().tobytes() == store.read("call_GQ", q, samples=cols).tobytes()


def test_worker_ring_never_overwrites_a_batch_in_use(torch_mod, svar2_store):
    """Workers send batches from a shared ring of read_ahead + 2 slots. Batches the
    consumer keeps (here: all of them, and views of some) stay as read — the worker
    takes fresh memory when no slot is free; batches it drops go back to the ring."""
    torch = torch_mod
    from svar2.torch import PatchDataset

    store = svar2.open(svar2_store)
    ds = PatchDataset(store, array="call_AD", patch=(50, 3), batch_size=16, seed=5,
                      num_patches=800, with_patches=True, read_ahead=2)
    for workers in (1, 2):
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        kept = [(x, x[2:4].view(-1), p) for x, p in loader]
        assert len(kept) == 50
        for x, v, p in kept:
            want = store.read("call_AD", p.numpy())
            assert x.numpy().tobytes() == want.tobytes()
            assert v.numpy().tobytes() == want[2:4].tobytes()
        # Dropped at once: the slots come back, so most batches lie in a worker's
        # ring, and each still holds what it says.
        from svar2 import torch as svar2_torch

        in_ring = 0
        for x, p in loader:
            assert x.numpy().tobytes() == store.read("call_AD", p.numpy()).tobytes()
            rings = [r for r, _ in svar2_torch._RINGS.values()]
            in_ring += any(r.data_ptr() <= x.data_ptr() < r.data_ptr() + r.nbytes for r in rings)
            del x
        assert in_ring >= 40, in_ring


def test_pinned_and_device_datasets(torch_mod, svar2_store):
    torch = torch_mod
    from svar2.torch import PatchDataset

    store = svar2.open(svar2_store)
    kw = dict(patch=(30, 2), batch_size=10, seed=1, num_patches=95, with_patches=True)
    if torch.cuda.is_available():
        ds = PatchDataset(store, pin_memory=True, **kw)
        batches = list(torch.utils.data.DataLoader(ds, batch_size=None))
        assert all(x.is_pinned() for x, _ in batches)
    else:
        ds = PatchDataset(store, pin_memory=True, **kw)
        with pytest.warns(UserWarning, match="no CUDA device, so batches are not pinned"):
            batches = list(torch.utils.data.DataLoader(ds, batch_size=None))
    assert len(batches) == 10 and len(batches[-1][0]) == 5
    for x, p in batches:
        assert x.numpy().tobytes() == store.read("call_genotype", p.numpy()).tobytes()
    # device="cpu": tensors of the reader's buffers, the same batches.
    ds = PatchDataset(store, device="cpu", **kw)
    for (x, p), (y, q) in zip(torch.utils.data.DataLoader(ds, batch_size=None), batches):
        assert torch.equal(p, q) and torch.equal(x, y)
    with pytest.raises(ValueError, match="device: expected"):
        PatchDataset(store, device="tpu", **kw)
    # A GPU dataset decodes in the main process: a worker says so.
    ds = PatchDataset(store, device="cuda", **kw)
    with pytest.raises(ValueError, match="decodes on the GPU in the main process"):
        list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1))
    if not torch.cuda.is_available():
        with pytest.raises(svar2.Error, match='device="cuda'):
            list(torch.utils.data.DataLoader(ds, batch_size=None))
    else:
        for (x, p), (y, q) in zip(torch.utils.data.DataLoader(ds, batch_size=None), batches):
            assert x.is_cuda and torch.equal(x.cpu(), y)


def _crop_dataset(torch, base):
    class Crop(torch.utils.data.IterableDataset):
        """A user's wrapper that changes each batch in the worker (a crop: a view)."""

        def __iter__(self):
            for x, p in base:
                yield x[:, :10], p

    return Crop()


def test_worker_batches_compose_with_user_code(torch_mod, svar2_store):
    """In a worker a batch is a tensor like any other: a wrapper that crops it (a view
    of the ring) or drops the first batch, a collate_fn that converts it, and
    batch_size=2's stacking all work, and every batch kept to the end holds what it
    says (a slot whose batch was changed in the worker is never written again)."""
    torch = torch_mod
    import itertools

    from svar2.torch import PatchDataset
    from svar2 import torch as svar2_torch

    store = svar2.open(svar2_store)
    ds = PatchDataset(store, array="call_AD", patch=(50, 3), batch_size=16, seed=6,
                      num_patches=400, with_patches=True, read_ahead=1)
    want = lambda p: store.read("call_AD", p.numpy())  # noqa: E731
    loader = torch.utils.data.DataLoader(_crop_dataset(torch, ds), batch_size=None, num_workers=2)
    kept = list(loader)
    assert len(kept) == 25
    for x, p in kept:
        assert type(x) is torch.Tensor
        assert x.numpy().tobytes() == want(p)[:, :10].tobytes()

    class SkipFirst(torch.utils.data.IterableDataset):
        def __iter__(self):
            return itertools.islice(iter(ds), 1, None)

    got = list(torch.utils.data.DataLoader(SkipFirst(), batch_size=None, num_workers=2))
    assert len(got) == 23  # each worker drops its first
    for x, p in got:
        assert x.numpy().tobytes() == want(p).tobytes()
    as_float = torch.utils.data.DataLoader(
        ds, batch_size=None, num_workers=2, collate_fn=lambda b: (b[0].to(torch.float32), b[1]))
    for x, p in as_float:
        assert x.dtype == torch.float32 and (x.numpy() == want(p)).all()
    stacked = torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2, drop_last=True)
    for x, p in stacked:
        assert type(x) is torch.Tensor and x.shape[:2] == (2, 16)
        for i in range(2):
            assert x[i].numpy().tobytes() == want(p[i]).tobytes()
    # Rings of finished epochs go (non-persistent workers: new ones each epoch).
    for _ in range(6):
        for x, _p in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2):
            del x
    assert len(svar2_torch._RINGS) <= 4, len(svar2_torch._RINGS)
