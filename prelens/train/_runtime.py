"""The runtime of a training run: BLAS threads chosen from the problem's sizes (:func:`blas_threads`, set with
``threadpoolctl``; :func:`_probe` says why it times as it does), and freed memory kept (:func:`retain_freed_memory`:
faulting a step's freed blocks back in page by page costs 5-15% of a step). Measurements: docs/performance.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core._tree import tree_leaves

__all__ = ["MIN_WORK_PER_THREAD", "blas_threads", "choose_blas_threads", "current_blas_threads", "retain_freed_memory"]

#: Multiply-adds a product must give each thread before sharing it can pay (``2**21``: about
#: 0.1 ms of float64 work on one core of the machines measured; docs/performance.md).
MIN_WORK_PER_THREAD = 2**21

#: The environment variable that overrides ``"auto"``: a number of threads, or ``auto``.
ENV = "PRELENS_BLAS_THREADS"
#: The variables with which a user sets BLAS's threads for every program: ``"auto"`` then keeps them.
USER_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def _controller() -> Any:
    from threadpoolctl import ThreadpoolController  # a dependency, imported when first asked

    return ThreadpoolController()


def current_blas_threads() -> int:
    """The number of threads the BLAS that numpy uses runs with now (1 if none is found).

    >>> with blas_threads(1):
    ...     current_blas_threads()
    1
    """
    counts = [int(info["num_threads"]) for info in _controller().info() if info.get("user_api") == "blas"]
    return max(counts, default=1)


def batch_rows(batch: Any) -> int:
    """Rows of the products one batch makes: the leading axes of float features, every axis of integer ids."""
    if isinstance(batch, np.ndarray) and batch.ndim >= 1:
        shape = batch.shape[:-1] if batch.dtype.kind == "f" and batch.ndim >= 2 else batch.shape
        return int(np.prod(shape, dtype=np.int64))
    if isinstance(batch, (tuple, list)) and batch:
        return max(batch_rows(x) for x in batch)
    raise E.bad_argument("choose_blas_threads", "batch", E.describe_tree(batch), "one batch of inputs (an array)")


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _largest(params: Any, batch: Any) -> tuple[int, tuple[int, int], np.dtype[Any]]:
    """The largest product of a step: ``(rows, weight shape, dtype)``."""
    weights = [leaf for leaf in tree_leaves(params) if isinstance(leaf, np.ndarray) and leaf.ndim == 2]
    rows = batch_rows(batch)
    w = max(weights, key=lambda a: a.size, default=np.zeros((0, 0)))
    dt = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    return rows, (int(w.shape[0]), int(w.shape[1])), dt


def choose_blas_threads(params: Any, batch: Any, *, cpus: int | None = None) -> int:
    """The most BLAS threads that training ``params`` on batches like ``batch`` can use: 1 for small products.

    The largest product of a step is taken as the rows of ``batch`` (the batch size, times the positions for token
    ids or ``(batch, time, features)`` inputs) times the size of the largest 2-D weight in ``params``. The answer is
    ``work // MIN_WORK_PER_THREAD`` threads, at least 1 and at most ``cpus`` (default: the CPUs this process may run
    on). Whether they pay on this machine now is for :func:`blas_threads` to measure.

    >>> from prelens.nn import mlp
    >>> choose_blas_threads(mlp(4, [8, 3]).init(0), np.zeros((16, 4)), cpus=2)
    1
    >>> choose_blas_threads(mlp(784, [256, 128, 10]).init(0), np.zeros((128, 784)), cpus=2)
    2
    """
    if cpus is None:
        cpus = _cpus()
    elif not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        raise E.bad_argument("choose_blas_threads", "cpus", cpus, "an int >= 1 or None")
    rows, (k, n), _ = _largest(params, batch)
    return max(1, min(cpus, rows * k * n // MIN_WORK_PER_THREAD))


def _probe(ctl: Any, params: Any, batch: Any, threads: int, repeats: int = 9) -> int:
    """``threads`` if the step's largest product runs faster on that many threads than on one, else 1.

    Each side runs the product for about 4 ms at a time, the two sides alternating, ``repeats`` times (the first of
    each is a warm-up). ``threads`` must win every time, by 10% of one thread's median: on a busy machine some of
    its blocks wait for a descheduled helper thread, and one such block is enough to keep one thread, the choice
    that cannot lose much (a wrong one thread costs at most what the helper would have saved; a wrong two costs up
    to three times the step).
    """
    if threads <= 1:
        return 1
    rows, (k, n), dt = _largest(params, batch)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((rows, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)
    out = np.empty((rows, n), dt)
    seconds: dict[int, list[float]] = {1: [], threads: []}
    inner = 1
    for r in range(repeats):
        for t in (1, threads) if r % 2 else (threads, 1):
            with ctl.limit(limits=t, user_api="blas"):
                start = time.perf_counter()
                for _ in range(inner):
                    np.matmul(a, b, out=out)
                seconds[t].append((time.perf_counter() - start) / inner)
        if r == 0:  # a warm-up; size the blocks to about 4 ms from its one-thread run
            inner = max(1, min(200, int(0.004 / max(seconds[1][0], 1e-6))))
            seconds = {1: [], threads: []}
        elif max(seconds[threads]) >= 0.9 * float(np.median(seconds[1])):
            return 1  # lost once: one thread (and no need to go on)
    return threads


def resolve_threads(threads: int | str, params: Any = None, batch: Any = None) -> int | str | None:
    """What :func:`blas_threads` sets: a number, ``"probe"`` (auto, more than one thread possible: measure), or
    ``None`` (leave BLAS as it is)."""
    if isinstance(threads, str) and threads == "auto":
        raw = os.environ.get(ENV, "").strip()
        if raw.isdigit() and int(raw) >= 1:
            return int(raw)
        if raw not in ("", "auto"):
            expected = "a number of threads >= 1, or auto"
            raise E.bad_argument("blas_threads", f"the environment variable {ENV}", raw, expected)
        if any(os.environ.get(name) for name in USER_ENV) or params is None or batch is None:
            return None
        return "probe" if choose_blas_threads(params, batch) > 1 else 1
    if isinstance(threads, (int, np.integer)) and not isinstance(threads, bool) and threads >= 1:
        return int(threads)
    raise E.bad_argument("blas_threads", "threads", threads, "a number of threads >= 1, or 'auto'")


@contextlib.contextmanager
def blas_threads(threads: int | str = "auto", *, params: Any = None, batch: Any = None) -> Iterator[int]:
    """Run the block with ``threads`` BLAS threads (``"auto"``: chosen for ``params`` and ``batch`` here and now).

    Yields the number of threads the block runs with; the previous number is restored after it. ``"auto"`` uses
    ``PRELENS_BLAS_THREADS`` when set, leaves BLAS alone when ``OPENBLAS_NUM_THREADS`` (or its kin) is set or no
    ``params``/``batch`` is given, and otherwise keeps :func:`choose_blas_threads` threads only if they beat one
    thread every time in about 80 ms of timing (docs/api.md says how).

    >>> from prelens.nn import mlp
    >>> net = mlp(4, [8, 3])
    >>> with blas_threads("auto", params=net.init(0), batch=np.zeros((16, 4))) as n:
    ...     n
    1
    """
    n = resolve_threads(threads, params, batch)
    if n is None:
        yield current_blas_threads()
        return
    ctl = _controller()
    if n == "probe":
        n = _probe(ctl, params, batch, choose_blas_threads(params, batch))
    with ctl.limit(limits=n, user_api="blas"):
        yield int(n)


# ---------------------------------------------------------------------- memory

#: glibc's ``mallopt`` parameters (malloc.h) and the values :func:`retain_freed_memory` sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 2**20  #: blocks below this come from the heap (glibc's largest allowed value)
TRIM_THRESHOLD = 256 * 2**20  #: free memory at the heap's top is handed back to the system only above this
_RETAINED: list[bool] = []


def retain_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse; True if done (now or before), False elsewhere.

    Sets ``M_MMAP_THRESHOLD`` to 32 MiB and ``M_TRIM_THRESHOLD`` to 256 MiB (``mallopt``), so that the arrays a
    training step frees are reused by the next step instead of being faulted back in page by page. For the whole
    process, and not undone; ``MALLOC_MMAP_THRESHOLD_=33554432`` and ``MALLOC_TRIM_THRESHOLD_=268435456`` do the
    same from outside.

    >>> retain_freed_memory() in (True, False)
    True
    """
    if _RETAINED:
        return _RETAINED[0]
    done, mallopt = False, None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # not glibc (musl has no mallopt)
            mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    if mallopt is not None:
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _RETAINED.append(done)
    return done
