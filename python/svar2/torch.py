"""A PyTorch dataset of random patches, read ahead in Rust.

``PatchDataset`` is an ``IterableDataset``: each epoch it draws ``num_patches``
patches from ``(seed, epoch)`` (the xorshift draw ``svar2 bench-read --seed`` uses;
epoch 0 is exactly that list), cuts them into batches of ``batch_size`` and serves
each batch once across all DataLoader workers and DDP ranks — whatever the worker
count, an epoch is the same multiset of patches. A background Rust thread reads
batches ahead into a bounded queue, so the training step rarely waits on the reader.

    >>> from svar2.torch import PatchDataset
    >>> ds = PatchDataset(store, patch=(4096, 1), batch_size=256, seed=0)
    >>> loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    >>> for epoch in range(3):
    ...     ds.set_epoch(epoch)
    ...     for x in loader: ...          # x: (256, 4096, 1, 2) int8 tensor
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Iterator, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.utils.data

from . import Store
from . import open as _open
from . import usable_cores

Region = Tuple[str, int, Optional[int]]


class PatchDataset(torch.utils.data.IterableDataset):
    """Random (variants x samples) patches of one array, in batches.

    Args:
        store: an open ``svar2.Store`` or a store path.
        array: the array to read (``call_genotype``: batches of (B, V, S, ploidy) int8,
            -1 missing, -2 fill).
        patch: (variants, samples) of each patch.
        batch_size: patches per batch (the last batch of an epoch may be shorter
            unless ``drop_last``).
        seed: the draw's seed; epoch ``e`` draws from ``(seed, e)``.
        num_patches: patches per epoch, over all workers and ranks together.
        samples: sample names or indices to draw from (default all); a patch of S
            samples takes S consecutive entries of this list.
        regions: ``(contig, start, end)`` tuples, 0-based half-open (``end`` None: to
            the contig's end), to draw variants from (default the whole store); a patch
            lies inside one region.
        drop_last: drop a last, shorter batch.
        read_ahead: batches read ahead per worker.
        with_patches: yield ``(x, patches)`` with the (B, 4) int64 patch rows (variant
            start, count, sample start, count; sample starts index ``samples`` when
            given), to know what each batch holds.
        rank, world_size: this process's DDP rank and the number of ranks (default:
            from ``torch.distributed`` when initialised, else 0 and 1).

    Use it with ``DataLoader(ds, batch_size=None, ...)``: batches are already formed.
    Call ``set_epoch(e)`` before each epoch (it reaches persistent workers too).
    """

    def __init__(
        self,
        store: Union[Store, str, os.PathLike],
        array: str = "call_genotype",
        patch: Tuple[int, int] = (4096, 1),
        batch_size: int = 256,
        seed: int = 0,
        num_patches: int = 100_000,
        samples: Optional[Sequence[Union[str, int]]] = None,
        regions: Optional[Sequence[Region]] = None,
        drop_last: bool = False,
        read_ahead: int = 4,
        with_patches: bool = False,
        threads_per_worker: Optional[int] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
    ):
        super().__init__()
        self.store = store if isinstance(store, Store) else _open(store)
        self.array = array
        self.patch = (int(patch[0]), int(patch[1]))
        if batch_size < 1 or num_patches < 0 or read_ahead < 1:
            raise ValueError("batch_size and read_ahead must be >= 1, num_patches >= 0")
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.num_patches = int(num_patches)
        self.samples = None if samples is None else list(samples)
        self.regions = None if regions is None else [_region(r) for r in regions]
        self.drop_last = bool(drop_last)
        self.read_ahead = int(read_ahead)
        self.with_patches = bool(with_patches)
        self.threads_per_worker = threads_per_worker
        self._rank, self._world = rank, world_size
        # Shared with worker processes (fork or spawn), so that set_epoch in the main
        # process reaches persistent workers.
        self._epoch = multiprocessing.get_context().Value("q", 0, lock=False)
        # Check the arguments once, here, rather than in every worker.
        self.epoch_patches(0)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration serves (call it before each epoch)."""
        self._epoch.value = int(epoch)

    @property
    def epoch(self) -> int:
        return int(self._epoch.value)

    def epoch_patches(self, epoch: Optional[int] = None) -> np.ndarray:
        """Every patch of an epoch, (num_patches, 4) int64, before it is split."""
        n_samples = None if self.samples is None else len(self.samples)
        return self.store.random_patches(
            self.num_patches,
            shape=self.patch,
            seed=self.seed,
            epoch=self.epoch if epoch is None else int(epoch),
            regions=self.regions,
            num_samples=n_samples,
        )

    def _ranks(self) -> Tuple[int, int]:
        if self._rank is not None or self._world is not None:
            return int(self._rank or 0), int(self._world or 1)
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def _batches(self) -> int:
        n = self.num_patches
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _reader(self) -> Store:
        """The store to read through: in a DataLoader worker, one of its own whose decode
        threads share the cores with the other workers (they all run at once)."""
        info = torch.utils.data.get_worker_info()
        if info is None:
            return self.store
        if getattr(self, "_worker_store", None) is None:
            threads = self.threads_per_worker or max(1, usable_cores() // info.num_workers)
            self._worker_store = _open(self.store.path, threads=threads)
        return self._worker_store

    def _mine(self) -> range:
        """The batch numbers this worker of this rank serves."""
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        rank, world = self._ranks()
        return range(rank * workers + worker, self._batches(), world * workers)

    def __len__(self) -> int:
        """Batches this rank serves per epoch (all its workers together)."""
        rank, world = self._ranks()
        return len(range(rank, self._batches(), world))

    def __iter__(self) -> Iterator[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]]:
        every = self.epoch_patches()
        b = self.batch_size
        mine = self._mine()
        if len(mine) == 0:
            return
        rows = np.concatenate([every[k * b : (k + 1) * b] for k in mine])
        batches = self._reader().read_ahead(
            self.array, rows, batch_size=b, samples=self.samples, depth=self.read_ahead
        )
        at = 0
        try:
            for x in batches:
                t = torch.from_numpy(x)
                if self.with_patches:
                    yield t, torch.from_numpy(rows[at : at + len(x)])
                else:
                    yield t
                at += len(x)
        finally:
            batches.close()


def _region(r: Region) -> Region:
    if len(r) == 2:
        return (str(r[0]), int(r[1]), None)
    contig, start, end = r
    return (str(contig), int(start), None if end is None else int(end))
