"""A PyTorch dataset of random patches, read ahead in Rust.

``PatchDataset`` is an ``IterableDataset``: each epoch it draws ``num_patches``
patches from ``(seed, epoch)`` (the xorshift draw ``svar2 bench-read --seed`` uses;
epoch 0 is exactly that list), cuts them into batches of ``batch_size`` and serves
each batch once across all DataLoader workers and DDP ranks — whatever the worker
count, an epoch is the same multiset of patches. Batches are read ahead into a
bounded queue, so the training step rarely waits on the reader.

Where batches go: in the main process (``num_workers=0``, the fastest way: the reader
is already parallel) they are read ahead by a background Rust thread, or — with
``pin_memory=True`` — straight into pinned host memory, or — with ``device="cuda"`` —
decoded on the GPU into CUDA tensors. In DataLoader workers they are read into a
small ring of shared-memory buffers per worker, reused once the consumer has dropped
a batch (and every view of it), so no batch costs a new shared-memory segment; a
consumer that keeps batches gets fresh ones, never a buffer still in use.

    >>> from svar2.torch import PatchDataset
    >>> ds = PatchDataset(store, patch=(4096, 1), batch_size=256, seed=0)
    >>> loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    >>> for epoch in range(3):
    ...     ds.set_epoch(epoch)
    ...     for x in loader: ...          # x: (256, 4096, 1, 2) int8 tensor
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import multiprocessing.context
import operator
import os
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
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
        threads_per_worker: decode threads of each DataLoader worker's reader (default:
            usable cores / workers, so the workers share the cores).
        rank, world_size: this process's DDP rank and the number of ranks (default:
            from ``torch.distributed`` when initialised, else 0 and 1).
        device: None (CPU tensors), ``"cuda"`` (PyTorch's current device, which DDP
            sets per rank with ``torch.cuda.set_device``) or ``"cuda:N"``: batches
            decoded on that GPU (``Store.read(device=...)``), in the main process
            (``num_workers=0``). Without a usable GPU, ``svar2.Error`` names what is
            missing.
        where: a bcftools ``-i`` expression (``"MAF>0.01"``, ``'COUNT(GT="het")>5'``):
            patches start only at variants whose record satisfies it
            (``Store.select``). A patch is consecutive variants, so ``where`` chooses
            where patches may start, not every variant inside them; each patch still
            lies inside one contig (or one of ``regions``). The draw is then numpy's
            ``default_rng((seed, epoch))``, not ``bench-read``'s.
        pin_memory: read batches straight into pinned host memory (main process), so
            ``.cuda(non_blocking=True)`` overlaps the copy; the DataLoader's own
            ``pin_memory=True`` then passes them through without copying. Ignored, with
            a warning, where CUDA is unavailable (as the DataLoader does); DataLoader
            workers cannot pin (the DataLoader pins what they send).

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
        device: Optional[Union[str, "torch.device"]] = None,
        pin_memory: bool = False,
        where: Optional[str] = None,
    ):
        super().__init__()
        self.store = store if isinstance(store, Store) else _open(store)
        if len(patch) != 2:
            raise ValueError(f"patch: (variants, samples), got {tuple(patch)!r}")
        self.patch = (_whole("patch", patch[0]), _whole("patch", patch[1]))
        if min(self.patch) < 1:
            raise ValueError(f"patch {self.patch}: at least 1 variant and 1 sample")
        self.batch_size = _whole("batch_size", batch_size)
        self.num_patches = _whole("num_patches", num_patches)
        self.read_ahead = _whole("read_ahead", read_ahead)
        if self.batch_size < 1 or self.num_patches < 0 or not 1 <= self.read_ahead <= 64:
            raise ValueError("batch_size must be >= 1, read_ahead 1 to 64, num_patches >= 0")
        self.seed = _whole("seed", seed)
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be 0 to 2**64 - 1, got {self.seed}")
        if isinstance(samples, (str, bytes)):
            raise TypeError(f"samples: a list of names or indices, not one string ({samples!r})")
        self.samples = None if samples is None else list(samples)
        if self.samples is not None:
            names, n = set(self.store.samples), self.store.num_samples
            for x in self.samples:
                if isinstance(x, str):
                    if x not in names:
                        raise ValueError(f"samples: no sample {x!r} in {self.store.path}")
                elif not 0 <= _whole("samples", x) < n:
                    raise IndexError(f"samples: index {x} is outside the store's {n} samples")
        self.regions = None if regions is None else [_region(r) for r in regions]
        self.drop_last = bool(drop_last)
        self.with_patches = bool(with_patches)
        if threads_per_worker is not None and _whole("threads_per_worker", threads_per_worker) < 1:
            raise ValueError(f"threads_per_worker must be >= 1 (or None: the cores shared out), got {threads_per_worker}")
        self.threads_per_worker = threads_per_worker
        if rank is not None or world_size is not None:
            r = _whole("rank", 0 if rank is None else rank)
            w = _whole("world_size", 1 if world_size is None else world_size)
            if w < 1 or not 0 <= r < w:
                raise ValueError(f"rank {r} of world_size {w}: expected 0 <= rank < world_size")
        self._rank, self._world = rank, world_size
        if array not in self.store.arrays:
            raise ValueError(f"no array {array!r} in {self.store.path}")
        _torch_dtype(self.store.arrays[array].dtype)
        self.array = array
        self.device = None if device is None else str(device)
        if self.device == "cpu:0":
            self.device = "cpu"
        if self.device not in (None, "cpu") and self.device.split(":")[0] != "cuda":
            raise ValueError(f'device: expected None, "cpu", "cuda" or "cuda:N"; got {self.device!r}')
        self.pin_memory = bool(pin_memory)
        self.where = where
        self._starts = None if where is None else self._allowed_starts(where)
        # Shared with worker processes (fork or spawn), so that set_epoch in the main
        # process reaches persistent workers.
        self._epoch = multiprocessing.get_context().Value("q", 0, lock=False)
        # Check the arguments once, here, rather than in every worker.
        self.epoch_patches(0)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration serves (call it before each epoch)."""
        e = _whole("epoch", epoch)
        if not 0 <= e < 2**63:
            raise ValueError(f"epoch must be 0 to 2**63 - 1, got {e}")
        self._epoch.value = e

    def __getstate__(self) -> dict:
        """Pickled to start a spawn/forkserver worker, the epoch counter is shared with
        it; pickled otherwise (a checkpoint, ``copy.deepcopy``, Ray), the copy holds
        the epoch's number and gets a counter of its own."""
        state = self.__dict__.copy()
        state.pop("_worker_store", None)
        if multiprocessing.context.get_spawning_popen() is None:
            state["_epoch"] = int(self._epoch.value)
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("_epoch"), int):
            state["_epoch"] = multiprocessing.get_context().Value("q", state["_epoch"], lock=False)
        self.__dict__.update(state)

    @property
    def epoch(self) -> int:
        return int(self._epoch.value)

    def _allowed_starts(self, where: str) -> np.ndarray:
        """The variant rows a patch may start at: those ``where`` selects whose patch
        ends inside the same contig (or region)."""
        nv = self.patch[0]
        spans = []  # (first row, one past the last) a patch must lie in
        if self.regions is None:
            for contig in self.store.contigs:
                rows = self.store.variant_rows(contig)
                if len(rows):
                    spans.append((int(rows[0]), int(rows[-1]) + 1))
        else:
            for contig, start, end in self.regions:
                rows = self.store.variant_rows(contig, start, end)
                if len(rows):
                    spans.append((int(rows[0]), int(rows[-1]) + 1))
        chosen = self.store.select(where)
        ok = np.zeros(len(chosen), dtype=bool)
        for lo, hi in spans:
            ok |= (chosen >= lo) & (chosen + nv <= hi)
        starts = chosen[ok]
        if len(starts) == 0:
            raise ValueError(f"where={where!r}: no selected variant starts a {nv}-variant patch inside "
                             "one contig (or region)")
        return starts

    def epoch_patches(self, epoch: Optional[int] = None) -> np.ndarray:
        """Every patch of an epoch, (num_patches, 4) int64, before it is split."""
        n_samples = None if self.samples is None else len(self.samples)
        if "samples" not in self.store.arrays[self.array].dims:
            n_samples = 1  # a per-variant array (a sites-only store's too): one column
        e = self.epoch if epoch is None else _whole("epoch", epoch)
        if not 0 <= e < 2**63:
            raise ValueError(f"epoch must be 0 to 2**63 - 1, got {e}")
        if self._starts is not None:
            rng = np.random.default_rng((self.seed, e))
            ns = self.patch[1]
            width = self.store.num_samples if n_samples is None else n_samples
            if ns > width:
                raise ValueError(f"patch of {ns} samples does not fit in {width} samples")
            out = np.empty((self.num_patches, 4), dtype=np.int64)
            out[:, 0] = rng.choice(self._starts, size=self.num_patches)
            out[:, 1] = self.patch[0]
            out[:, 2] = rng.integers(0, width - ns + 1, size=self.num_patches)
            out[:, 3] = ns
            return out
        return self.store.random_patches(
            self.num_patches,
            shape=self.patch,
            seed=self.seed,
            epoch=e,
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
        in_worker = torch.utils.data.get_worker_info() is not None
        gpu = self.device is not None and self.device != "cpu"
        if in_worker and gpu:
            raise ValueError(
                f"PatchDataset(device={self.device!r}) decodes on the GPU in the main process: "
                "use DataLoader(num_workers=0) (the decode is already parallel)"
            )
        if in_worker:
            if self.pin_memory:
                warnings.warn(
                    "PatchDataset(pin_memory=True) does not pin in DataLoader workers: "
                    "pass pin_memory=True to the DataLoader, which pins what they send"
                )
            batches = self._shared_batches(rows)
        elif gpu or self._pinning():
            batches = self._read_each(rows)
        else:
            batches = self._read_ahead(rows)
        at = 0
        for x in batches:
            n = len(x)
            if self.with_patches:
                yield x, torch.from_numpy(rows[at : at + n])
            else:
                yield x
            at += n

    def _batch_rows(self, rows: np.ndarray) -> Iterator[np.ndarray]:
        for i in range(0, len(rows), self.batch_size):
            yield rows[i : i + self.batch_size]

    def _read_ahead(self, rows: np.ndarray) -> Iterator[torch.Tensor]:
        """Main process: the Rust read-ahead thread's arrays, as tensors (no copy)."""
        batches = self._reader().read_ahead(
            self.array, rows, batch_size=self.batch_size, samples=self.samples, depth=self.read_ahead
        )
        try:
            for x in batches:
                yield torch.from_numpy(x)
        finally:
            batches.close()

    def _pinning(self) -> bool:
        if not self.pin_memory:
            return False
        if torch.cuda.is_available():
            return True
        warnings.warn("PatchDataset(pin_memory=True): no CUDA device, so batches are not pinned")
        self.pin_memory = False
        return False

    def _read_one(self, rows: np.ndarray) -> torch.Tensor:
        store = self._reader()
        if self.device is not None:
            return store.read(self.array, rows, samples=self.samples, device=self.device)
        info = store.arrays[self.array]
        x = torch.empty(_batch_shape(info, rows), dtype=_torch_dtype(info.dtype), pin_memory=True)
        store.read(self.array, rows, samples=self.samples, out=x.numpy())
        return x

    def _read_each(self, rows: np.ndarray) -> Iterator[torch.Tensor]:
        """Main process, pinned or on a GPU: each batch one ``Store.read`` (the GIL
        released), ``read_ahead`` of them in flight on two helper threads, so one
        batch is planned on the host while another decodes."""
        pending = collections.deque()
        parts = self._batch_rows(rows)
        with ThreadPoolExecutor(2, thread_name_prefix="svar2-batch") as pool:
            try:
                for part in parts:
                    pending.append(pool.submit(self._read_one, part))
                    if len(pending) >= self.read_ahead:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for f in pending:
                    f.cancel()

    def _shared_batches(self, rows: np.ndarray) -> Iterator[torch.Tensor]:
        """In a DataLoader worker: each batch read into a free slot of a shared-memory
        ring of this worker's and yielded as a tensor (a ``_RingBatch``: anything done
        to it gives plain tensors). Sent to the main process as it is, it travels as
        its slot's number (the ring itself until the main process has it), so no batch
        costs a new shared-memory segment or file descriptor; the slot is written again
        only once the main process has dropped every view of that batch. A batch
        changed or dropped in the worker instead travels as torch sends any tensor, and
        its slot is not reused this epoch. With no slot free (the consumer keeps
        batches), a fresh shared tensor. The ring is retired when the epoch ends."""
        store = self._reader()
        info = store.arrays[self.array]
        dtype = _torch_dtype(info.dtype)
        ring = _Ring(self.read_ahead + 2, _batch_shape(info, rows[: self.batch_size]), dtype)
        try:
            for part in self._batch_rows(rows):
                k = ring.take()
                if k is None:
                    x = torch.empty(_batch_shape(info, part), dtype=dtype).share_memory_()
                    store.read(self.array, part, samples=self.samples, out=x.numpy())
                    yield x
                    continue
                view = ring.tensor[k, : len(part)]
                store.read(self.array, part, samples=self.samples, out=view.numpy())
                yield _RingBatch.of(view, ring, k)
        finally:
            ring.retire()


_RING_SERIAL = itertools.count()


class _Ring:
    """A worker's shared-memory ring: ``slots`` batches, and an int32 flag per slot —
    1 free, 0 taken (being read, in flight, or held by the consumer), 2 abandoned (its
    batch was changed or dropped in the worker, so a view of it may live on) —
    followed by two more: the main process has the ring; the worker is done with it."""

    def __init__(self, slots: int, shape: Tuple[int, ...], dtype: torch.dtype):
        self.tensor = torch.empty((slots, *shape), dtype=dtype).share_memory_()
        self.flags = torch.ones(slots + 2, dtype=torch.int32).share_memory_()
        self.flags[slots:] = 0
        self.np = self.flags.numpy()
        self.slots = slots
        # Unique for the life of the main process (an id() would come back for the
        # next ring at the same address).
        self.token = (os.getpid(), next(_RING_SERIAL))

    def take(self) -> Optional[int]:
        for k in range(self.slots):
            if self.np[k] == 1:
                self.np[k] = 0
                return k
        return None

    def known(self) -> bool:
        """Whether the main process has registered the ring."""
        return bool(self.np[self.slots] == 1)

    def retire(self) -> None:
        self.np[self.slots + 1] = 1


class _RingBatch(torch.Tensor):
    """A batch in a slot of a worker's ring (see ``PatchDataset._shared_batches``)."""

    # Operations on it give plain tensors: only the batch as yielded travels as a slot.
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def of(view: torch.Tensor, ring: _Ring, k: int) -> "_RingBatch":
        x = view.as_subclass(_RingBatch)
        x._svar2_ring, x._svar2_slot, x._svar2_sent = ring, k, [False]
        weakref.finalize(x, _abandon, ring.np, k, x._svar2_sent)
        return x

    def __reduce_ex__(self, protocol):
        ring, k = self._svar2_ring, self._svar2_slot
        self._svar2_sent[0] = True
        # The ring (its memory and flags, as torch shares them) until the main process
        # says it has it; then only the slot's number.
        shared = None if ring.known() else (ring.tensor, ring.flags)
        return (_receive_slot, (ring.token, k, len(self), shared))


# The main process' rings, by (worker pid, ring). An entry goes when its worker is done
# with it or has exited, seen when another ring arrives; batches still alive keep
# their memory.
_RINGS: dict = {}


def _receive_slot(token, k: int, n: int, shared) -> torch.Tensor:
    """The main process' end of a ``_RingBatch``: a tensor over the slot (no copy)
    whose storage holds a numpy array; when the last tensor or view of the batch is
    gone, that array dies and its finaliser marks the slot free for the worker."""
    if shared is not None and token not in _RINGS:
        # Rings whose worker is done (or gone) and whose slots have all come back: no
        # batch of theirs is in flight any more.
        for old, (_, flags) in list(_RINGS.items()):
            done = flags[-1] == 1 or not _alive(old[0])
            if done and (flags[:-2] != 0).all():
                del _RINGS[old]
        tensor, flags = shared
        flags = flags.numpy()
        _RINGS[token] = (tensor, flags)
        flags[-2] = 1  # the worker may send slot numbers alone from now on
    try:
        tensor, flags = _RINGS[token]
    except KeyError:
        raise RuntimeError(f"svar2: a batch of DataLoader worker {token[0]} arrived without its ring") from None
    keep = tensor[k, :n].numpy()
    weakref.finalize(keep, _release, flags, k)
    return torch.from_numpy(keep)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _abandon(flags: np.ndarray, k: int, sent: list) -> None:
    # A batch that died in the worker without being sent as a slot: a view of it may
    # have been sent as torch sends tensors, so its slot is never written again.
    if not sent[0]:
        flags[k] = 2


def _release(flags: np.ndarray, k: int) -> None:
    # After the consumer's last use of the batch (a finaliser runs once every
    # reference is gone); the worker sees the slot free and writes it again.
    flags[k] = 1


_TORCH_DTYPES = {
    "bool": torch.bool,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float32": torch.float32,
}


def _whole(name: str, value) -> int:
    """``value`` as an int, refusing what is not a whole number (2.5 is not taken as 2)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: expected a whole number, got {value!r}") from None


def _torch_dtype(numpy_dtype: str) -> torch.dtype:
    try:
        return _TORCH_DTYPES[numpy_dtype]
    except KeyError:
        raise ValueError(f"PatchDataset reads numeric arrays; this one holds {numpy_dtype}") from None


def _batch_shape(info, rows: np.ndarray) -> Tuple[int, ...]:
    """The shape ``Store.read`` gives a batch: (B, *patch), the patch's variants and
    samples axes cut to the patch, its other axes whole."""
    nv, ns = int(rows[0, 1]), int(rows[0, 3])
    cut = {"variants": nv, "samples": ns}
    return (len(rows), *(cut.get(d, n) for d, n in zip(info.dims, info.shape)))


def _region(r: Region) -> Region:
    if len(r) == 2:
        return (str(r[0]), int(r[1]), None)
    contig, start, end = r
    return (str(contig), int(start), None if end is None else int(end))
