"""Memory: a loop of batches keeps RSS flat, and `out=` allocates nothing per batch;
Ctrl-C stops a long read promptly."""

import os
import signal
import threading
import time
import tracemalloc

import numpy as np
import pytest

import svar2


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_hundred_batches_keep_rss_flat(svar2_store):
    store = svar2.open(svar2_store)
    p = store.random_patches(100 * 64, shape=(512, 4), seed=2)
    batch_bytes = 64 * 512 * 4 * 2
    after = []
    for i in range(100):
        x = store.read("call_genotype", p[i * 64:(i + 1) * 64])
        assert x.nbytes == batch_bytes
        del x
        after.append(rss_bytes())
    growth = after[-1] - after[9]
    # 90 more batches of 256 KiB each were made and freed.
    assert growth < 4 * batch_bytes, [a // 1024 for a in after[::10]]


def test_out_allocates_nothing_per_batch(svar2_store):
    store = svar2.open(svar2_store)
    p = store.random_patches(100 * 64, shape=(512, 4), seed=2)
    out = np.empty((64, 512, 4, 2), np.int8)
    batches = [p[i * 64:(i + 1) * 64] for i in range(100)]
    store.read("call_genotype", batches[0], out=out)
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for b in batches:
            store.read("call_genotype", b, out=out)
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # numpy reports its data allocations to tracemalloc: one batch would be 256 KiB.
    assert peak - base < 16 * 1024, (base, now, peak)
    tracemalloc.start()
    try:
        store.read("call_genotype", batches[0])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak >= out.nbytes, "tracemalloc sees numpy's allocations (else this test proves nothing)"


def test_ctrl_c_stops_a_long_read(svar2_store):
    store = svar2.open(svar2_store, threads=1)
    # A read long enough to interrupt on this machine (at most ~200 MB of output).
    n, whole = 25_000, 0.0
    while True:
        p = store.random_patches(n, shape=(256, 1), seed=1)
        t = time.perf_counter()
        store.read("call_genotype", p)
        whole = time.perf_counter() - t
        if whole >= 0.5 or n >= 400_000:
            break
        n *= 2
    assert whole >= 0.2, f"{n} patches read in {whole:.2f} s: too fast to interrupt"
    timer = threading.Timer(whole / 8, lambda: os.kill(os.getpid(), signal.SIGINT))
    t = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        store.read("call_genotype", p)
    stopped = time.perf_counter() - t
    assert stopped < whole * 0.6, (stopped, whole)
    # The store still works afterwards.
    assert store.read("call_genotype", p[:10]).shape == (10, 256, 1, 2)
