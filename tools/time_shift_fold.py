"""Time numpy's attention weights with the softmax's shift inside the scores' product against a pass that
subtracts it, in one process, interleaved.

Usage::

    OPENBLAS_NUM_THREADS=1 python tools/time_shift_fold.py [--rounds 21]

For T = 32 ... 256 keys (causal, 4 heads, d_k 16; the batch shrinks as T grows, so that each call has
about the same number of scores), float32 and float64, runs ``_numpy_weights`` with ``FOLD_KEYS = 1``
(the shift inside) and past T (a pass that subtracts it), checks that the two agree, and prints the median
µs of each and their ratio: ``FOLD_KEYS`` is where the ratio falls below 1.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import prelens.nn._dot_attention as D
from prelens.train import retain_freed_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    rounds = parser.parse_args().rounds
    retain_freed_memory()  # as the benchmarks do: no side pays page faults
    rng = np.random.default_rng(0)
    print("T  dtype    batch  inside (µs)  apart (µs)  inside / apart")
    for t in (32, 64, 96, 128, 256):
        for dt in (np.float32, np.float64):
            batch = max(1, 16 * 32 // t)
            q, k = (rng.standard_normal((batch, 4, t, 16)).astype(dt) for _ in range(2))
            n = max(1, int(2e6 // (batch * 4 * t * t)))

            def run(keys: int) -> float:
                D.FOLD_KEYS = keys
                start = time.perf_counter()
                for _ in range(n):
                    D._numpy_weights(q, k, True, 0.25)
                return (time.perf_counter() - start) / n * 1e6

            np.testing.assert_allclose(_weights(q, k, 1), _weights(q, k, 10**9), rtol=1e-5, atol=1e-6)
            inside, apart = zip(*((run(1), run(10**9)) for _ in range(rounds)))
            a, b = statistics.median(inside), statistics.median(apart)
            print(f"{t:<3} {dt.__name__:8} {batch:5} {a:12.1f} {b:11.1f} {a / b:15.3f}")


def _weights(q: np.ndarray, k: np.ndarray, keys: int) -> np.ndarray:
    D.FOLD_KEYS = keys
    return D._numpy_weights(q, k, True, 0.25)


if __name__ == "__main__":
    main()
