"""PatchDataset through a real torch DataLoader: any worker count serves one epoch's
patches exactly once, epochs differ, persistent workers see set_epoch, ranks split."""

from collections import Counter

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


def served(loader, torch):
    xs, ps = [], []
    for x, p in loader:
        assert isinstance(x, torch.Tensor) and x.dtype == torch.int8
        xs.append(x.numpy())
        ps.append(p.numpy())
    return xs, ps


def multiset(rows):
    return Counter(map(tuple, np.concatenate(rows).tolist()))


def test_every_worker_count_serves_the_epoch_once(torch_mod, svar2_store):
    torch = torch_mod
    from svar2.torch import PatchDataset

    store = svar2.open(svar2_store)
    ds = PatchDataset(store, patch=(64, 2), batch_size=32, seed=3, num_patches=1000, with_patches=True)
    want = {e: multiset([ds.epoch_patches(e)]) for e in (0, 1)}
    assert want[0] != want[1]
    assert sum(want[0].values()) == 1000
    for workers in (0, 1, 3):
        for epoch in (0, 1):
            ds.set_epoch(epoch)
            loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
            xs, ps = served(loader, torch)
            assert multiset(ps) == want[epoch], (workers, epoch)
            assert len(xs) == 32  # 31 full batches and one of 8
            # Each batch holds the patches it says it holds.
            for x, p in zip(xs[:3], ps[:3]):
                assert (x == store.read("call_genotype", p)).all()


def test_persistent_workers_follow_set_epoch(torch_mod, svar2_store):
    torch = torch_mod
    from svar2.torch import PatchDataset

    ds = PatchDataset(str(svar2_store), patch=(16, 1), batch_size=50, seed=4, num_patches=600,
                      with_patches=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=3, persistent_workers=True)
    seen = []
    for epoch in range(3):
        ds.set_epoch(epoch)
        _, ps = served(loader, torch)
        got = multiset(ps)
        assert got == multiset([ds.epoch_patches(epoch)]), epoch
        seen.append(got)
    assert seen[0] != seen[1] != seen[2]


def test_ranks_split_the_epoch_and_regions_and_samples_bound_the_draw(torch_mod, svar2_store):
    torch = torch_mod
    from svar2.torch import PatchDataset

    store = svar2.open(svar2_store)
    regions = [("c2", 0, None), ("c3", 3_000, 20_000)]
    rows = np.concatenate([store.variant_rows(c, s, e) for c, s, e in regions])
    samples = ["s5", "s1", "s2", "s30"]
    parts = []
    for rank in range(2):
        ds = PatchDataset(store, patch=(8, 2), batch_size=10, seed=5, num_patches=205,
                          regions=regions, samples=samples, with_patches=True, rank=rank, world_size=2)
        assert len(ds) == (11 if rank == 0 else 10)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
        xs, ps = served(loader, torch)
        parts.append(ps)
        for x, p in zip(xs, ps):
            assert x.shape[1:] == (8, 2, 2)
            assert np.isin(p[:, 0], rows).all() and np.isin(p[:, 0] + 7, rows).all()
            assert (p[:, 2] <= 2).all()
            assert (x == store.read("call_genotype", p, samples=samples)).all()
    # Together the ranks serve the epoch's list exactly (no patch twice, none left).
    assert multiset(parts[0] + parts[1]) == multiset([ds.epoch_patches(0)])


def test_spawned_workers_reopen_the_store(torch_mod, svar2_store):
    """With the spawn start method the dataset is pickled: the store travels as its
    path and set_epoch still reaches the workers."""
    torch = torch_mod
    from svar2.torch import PatchDataset

    ds = PatchDataset(svar2_store, patch=(32, 1), batch_size=40, seed=6, num_patches=200,
                      with_patches=True)
    ds.set_epoch(2)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context="spawn")
    _, ps = served(loader, torch)
    assert multiset(ps) == multiset([ds.epoch_patches(2)])


def test_epoch_zero_is_bench_reads_list(svar2_store):
    """Figures compare: epoch 0 of seed 7 is `svar2 bench-read --seed 7`'s draw."""
    import json
    import subprocess

    from conftest import ROOT

    exe = ROOT / "target/release/svar2"
    if not exe.exists():
        pytest.skip("no target/release/svar2 (cargo build --release)")
    out = svar2_store.parent / "bench_patches.json"
    subprocess.run([exe, "bench-read", "--patch", "64x2", "--n", "300", "--seed", "7",
                    "--emit-patches", out, svar2_store], check=True, capture_output=True)
    want = np.array(json.loads(out.read_text()), dtype=np.int64)
    got = svar2.open(svar2_store).random_patches(300, shape=(64, 2), seed=7)
    assert (got == want).all()


def test_a_dataset_pickles_and_copies_and_checks_its_arguments(torch_mod, svar2_store):
    """A checkpoint, ``copy.deepcopy`` or Ray pickles the dataset outside a worker's
    start: the copy serves the same epoch, with a counter of its own. Arguments that
    cannot work are refused when the dataset is made, not in a worker later."""
    import copy
    import pickle

    from svar2.torch import PatchDataset

    store = svar2.open(svar2_store)
    ds = PatchDataset(store, patch=(20, 2), batch_size=8, num_patches=40, seed=3)
    ds.set_epoch(2)
    for twin in (pickle.loads(pickle.dumps(ds)), copy.deepcopy(ds)):
        assert twin.epoch == 2
        assert (twin.epoch_patches() == ds.epoch_patches()).all()
        twin.set_epoch(5)
        assert ds.epoch == 2
    bad = [
        (dict(batch_size=2.5), TypeError), (dict(num_patches=2.9), TypeError),
        (dict(patch=(5, 1, 1)), ValueError), (dict(read_ahead=1000), ValueError),
        (dict(threads_per_worker=0), ValueError), (dict(rank=3, world_size=2), ValueError),
        (dict(rank=-1, world_size=2), ValueError), (dict(world_size=0), ValueError),
        (dict(array="nope"), ValueError), (dict(array="variant_allele"), ValueError),
        (dict(samples="S1"), TypeError), (dict(samples=["nobody"]), ValueError),
        (dict(samples=[10**6]), IndexError), (dict(samples=[-1]), IndexError),
        (dict(patch=(-5, 4)), ValueError), (dict(seed=-1), ValueError),
        (dict(rank=0.0, world_size=2), TypeError),
    ]
    for kw, error in bad:
        with pytest.raises(error):
            PatchDataset(store, **{"patch": (20, 2), **kw})
    for epoch in (-1, 2**63):
        with pytest.raises(ValueError, match="epoch"):
            ds.set_epoch(epoch)
    with pytest.raises(TypeError, match="epoch"):
        ds.epoch_patches(1.7)
    # A per-variant array has one column whatever the samples (a sites-only store too).
    pos = PatchDataset(store, array="variant_position", patch=(20, 1), batch_size=4, num_patches=8)
    assert [tuple(x.shape) for x in pos] == [(4, 20), (4, 20)]
