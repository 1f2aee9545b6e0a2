"""Timing shared by the benchmarks: interleaved medians, page faults, peak memory."""

from __future__ import annotations

import resource
import time
import tracemalloc
from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["peak_bytes", "time_interleaved"]


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_interleaved(
    fns: Mapping[str, Callable[[], object]], repeats: int, inner: int
) -> dict[str, tuple[float, float]]:
    """Median seconds and minor page faults per call of each function, timed interleaved.

    Each of ``repeats`` rounds runs every function ``inner`` times in a row,
    the order rotating from round to round, so that drifts of a noisy machine
    hit every function alike.

    >>> out = time_interleaved({"a": lambda: None, "b": lambda: None}, repeats=3, inner=2)
    >>> sorted(out), all(t >= 0 for t, _ in out.values())
    (['a', 'b'], True)
    """
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    faults: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            f = fns[name]
            f0 = _faults()
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            t1 = time.perf_counter()
            times[name].append((t1 - t0) / inner)
            faults[name].append((_faults() - f0) / inner)
    return {n: (float(np.median(times[n])), float(np.median(faults[n]))) for n in names}


def peak_bytes(f: Callable[[], object]) -> int:
    """Bytes allocated at the peak of one call of ``f``, above what was live before it."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        f()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before
