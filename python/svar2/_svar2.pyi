"""Type stubs of svar2's extension module (re-exported by ``svar2``)."""

import os
from typing import Any, Iterator, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

PathLike = Union[str, os.PathLike[str]]
Samples = Sequence[Union[str, int]]

class Error(Exception):
    """Any failure svar2 reports (a damaged chunk, not a store, an input that does not
    convert); the message is the CLI's one line."""

class CorruptStoreError(Error):
    """A damaged chunk or shard index, named by its key (``svar2 verify`` lists all)."""

class InputError(Error):
    """A VCF/BCF input that does not convert: unreadable, a malformed header or record
    (file, record number, contig:pos), cut short, or inputs that cannot be read
    together (different samples, headers that disagree)."""

class GpuError(Error):
    """No usable GPU (the missing CUDA driver, nvCOMP or NVRTC named), or the GPU failed."""

class ArrayInfo:
    """One array of a store, as ``Store.arrays`` lists it."""

    name: str
    shape: list[int]
    dtype: str
    dims: list[str]
    chunks: list[int]
    shards: Optional[list[int]]
    codecs: str
    zarr_format: int

class Batches(Iterator[np.ndarray]):
    """Batches read ahead on a background thread (``Store.read_ahead``)."""

    def __iter__(self) -> "Batches": ...
    def __next__(self) -> np.ndarray: ...
    def __len__(self) -> int: ...
    def close(self) -> None:
        """Stops reading ahead and frees the queue."""

class Store:
    """An open VCF Zarr store; safe to share between threads, reopened after a fork."""

    @property
    def path(self) -> str:
        """The store's local path made absolute at open (a forked worker reopens it
        there, whatever its working directory), or its ``s3://`` URL."""
    @property
    def samples(self) -> Tuple[str, ...]:
        """Sample names in store order."""
    @property
    def contigs(self) -> Tuple[str, ...]: ...
    @property
    def num_samples(self) -> int: ...
    @property
    def num_variants(self) -> int: ...
    @property
    def arrays(self) -> dict[str, ArrayInfo]: ...
    @property
    def attrs(self) -> dict[str, Any]: ...
    @property
    def closed(self) -> bool: ...
    def read(
        self,
        array: str,
        patches: npt.ArrayLike,
        out: Optional[np.ndarray] = None,
        samples: Optional[Samples] = None,
        device: Optional[Any] = None,
    ) -> Any:
        """Patches (N, 4: variant start, count, sample start, count; 0-based, one
        shape) -> (N, variants, samples, *trailing); into ``out`` when given. A numpy
        array, or with ``device`` ("cpu", "cuda", "cuda:N", a torch.device) a torch
        tensor handed over by DLPack, decoded on that GPU for "cuda"."""
    def select(
        self,
        expr: str,
        contig: Optional[str] = None,
        start: int = 0,
        end: Optional[int] = None,
    ) -> np.ndarray:
        """The variant rows (int64, ascending) whose record satisfies ``expr``, bcftools'
        ``-i`` language (``"MAF>0.01"``, ``'COUNT(GT="het")>5'``), within a 0-based
        half-open region of ``contig`` (default every record)."""
    def region(
        self,
        contig: str,
        start: int = 0,
        end: Optional[int] = None,
        samples: Optional[Samples] = None,
        array: str = "call_genotype",
    ) -> Tuple[np.ndarray, npt.NDArray[np.int64]]:
        """(values (variants, samples, *trailing), 0-based positions) of the records
        overlapping [start, end) (0-based, half-open)."""
    def variant_rows(
        self, contig: str, start: int = 0, end: Optional[int] = None
    ) -> npt.NDArray[np.int64]: ...
    def random_patches(
        self,
        n: int,
        shape: Tuple[int, int] = (4096, 1),
        seed: int = 7,
        epoch: int = 0,
        regions: Optional[Sequence[Tuple[str, int, Optional[int]]]] = None,
        num_samples: Optional[int] = None,
    ) -> npt.NDArray[np.int64]: ...
    def read_ahead(
        self,
        array: str,
        patches: npt.ArrayLike,
        batch_size: int = 256,
        samples: Optional[Samples] = None,
        depth: int = 4,
    ) -> Batches:
        """Batches of ``patches`` read ahead on a background thread (at most ``depth``,
        1 to 64, waiting); ValueError for a depth or batch_size outside that."""
    def close(self) -> None: ...
    def __enter__(self) -> "Store": ...
    def __exit__(self, *args: object) -> bool: ...

def open(path: PathLike, threads: Optional[int] = None, io_threads: int = 4) -> Store:
    """Opens any VCF Zarr store for reading: a directory, a ``.vcz.zip`` file, or
    ``s3://bucket/path``
    (credentials and endpoint from the AWS_* variables or ``~/.aws``; other URL schemes
    raise svar2.Error). Local shard files are mapped and read by the `threads` decode
    threads; `io_threads` wait on reads of bucket stores (one request each in flight:
    give a bucket many, e.g. 64) and of local stores that are not sharded."""

def usable_cores() -> int:
    """Cores this process may use (affinity and cgroup CPU quota applied)."""

def convert(
    inputs: Union[PathLike, Sequence[PathLike]],
    output: PathLike,
    *,
    max_mem: str = "auto",
    threads: Optional[int] = None,
    readers: Optional[int] = None,
    patch: Optional[str] = None,
    max_amplification: float = 1.5,
    variants_chunk: Optional[int] = None,
    samples_chunk: Optional[int] = None,
    variants_shard: Optional[int] = None,
    samples_shard: Optional[int] = None,
    zstd_level: int = 1,
    force: bool = False,
    progress: bool = False,
    allow_truncated: bool = False,
    samples: Optional[Union[str, Sequence[str]]] = None,
    regions: Optional[str] = None,
    targets: Optional[str] = None,
    include: Optional[str] = None,
    exclude: Optional[str] = None,
    samples_file: Optional[PathLike] = None,
    regions_file: Optional[PathLike] = None,
    targets_file: Optional[PathLike] = None,
    force_samples: bool = False,
    no_update: bool = False,
    merge: Union[bool, str, None] = None,
) -> dict[str, Any]:
    """VCF/BCF -> VCF Zarr, as ``svar2 convert``; ``output`` is a directory, a
    ``.vcz.zip`` file (written whole, moved into place) or ``s3://bucket/path``.
    Bad keywords, a malformed expression or region, or a sample the input lacks raise
    ``ValueError``; inputs that do not convert ``svar2.InputError``. ``samples`` (a list of names, or
    bcftools' comma string with ``^``), ``regions``, ``targets``, ``include``/``exclude``,
    ``samples_file``, ``regions_file``, ``targets_file``, ``force_samples`` and
    ``no_update`` subset as bcftools view's -s, -r, -t, -i/-e, -S, -R, -T,
    --force-samples and -I. ``merge`` (``True`` or ``"both"``, or ``"none"``): the
    inputs are of different samples, joined as ``bcftools merge`` (``-m both``, its
    default, or ``-m none``) joins them, as ``convert --merge``; ``force_samples`` then
    keeps a name met twice as ``K:NAME``."""

def append(
    store: PathLike,
    inputs: Union[PathLike, Sequence[PathLike]],
    *,
    merge: str = "both",
    force_samples: bool = False,
    max_mem: str = "auto",
    threads: Optional[int] = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Adds the samples of ``inputs`` (VCF/BCF, each sorted, samples not in the
    store) to the directory store ``store``, as ``svar2 append``: the store's records
    and the inputs joined as ``bcftools merge`` joins them (``merge``: ``"both"`` or
    ``"none"``), written with the store's layout beside it and swapped in whole (a
    reader sees the old version or the new one). When the inputs have the store's
    sites (a joint-called batch), only the sample columns from the store's last
    sample shard on are written and the rest are the old version's files, linked.
    Returns records, samples_before, samples_after, seconds, store_bytes,
    bytes_written and first_sample_written (0: the whole store). Attributes added to
    the store (``zarr`` ``attrs``) are carried over. A zip or bucket store, a symbolic
    link, an array or group svar2 did not write, or a sample already in the store
    (without ``force_samples``) raise ``ValueError`` / ``svar2.InputError``."""

def rechunk(
    input: PathLike,
    output: PathLike,
    *,
    patch: Optional[str] = None,
    max_amplification: float = 1.5,
    variants_chunk: Optional[int] = None,
    samples_chunk: Optional[int] = None,
    variants_shard: Optional[int] = None,
    samples_shard: Optional[int] = None,
    zstd_level: int = 1,
    max_mem: str = "auto",
    threads: Optional[int] = None,
    io_threads: Optional[int] = None,
    force: bool = False,
    dry_run: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Any VCF Zarr store -> svar2's layout for a patch, as ``svar2 rechunk``."""

def inspect(store: PathLike, patch: Optional[str] = None) -> dict[str, Any]:
    """A store's layout, as ``svar2 inspect --json`` (``"append"``: what
    ``svar2.append`` would cost the store, or why it cannot grow in place)."""

def digest(store: PathLike) -> str:
    """blake3 over every file of a store, as ``svar2 digest``."""
