"""Time the LM's forward and backward pass on two batch halves in two threads against the whole batch on one.

Usage::

    python tools/time_sharded_step.py [float32|float64] [--rounds 9]

Builds ``prelens bench``'s language model (vocab 64, T 32, d_model 64, 4 heads, FFN 256, 2 blocks, batch 16)
with its loss, checks that the two halves' gradients (each pulled back from a delta of 1/2: both halves count
the same tokens) sum to the whole batch's, then prints the median ms of: the whole batch with one and with
two BLAS threads, the two halves at once (one on the calling thread, one on a pool's thread, BLAS at one
thread each), and the step's matrix products alone (the matmul floor) with one and two BLAS threads.
A prototype, not used by prelens: it asks whether splitting the step, rather than each kernel, lets numpy's
element-wise work use the second core.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from prelens import vjp
from prelens.core._tree import tree_paths, tree_sum
from prelens.train import retain_freed_memory
from prelens.train._runtime import blas_threads
from prelens_bench._floor import matmul_floor
from prelens_bench._problem import PeerCase, make_problem, trained_parts
from prelens_bench.lm import LMConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dtype", nargs="?", default="float32", choices=["float32", "float64"])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    retain_freed_memory()  # as the benchmarks do: no side pays page faults
    case = PeerCase(LMConfig(), args.dtype)
    problem = make_problem(case)
    model, loss = trained_parts(case)
    trained = model >> loss
    x, y, params = problem.x, problem.y, problem.params
    h = x.shape[0] // 2
    halves = [(x[:h], y[:h]), (x[h:], y[h:])]
    pool = ThreadPoolExecutor(1)

    def whole() -> Any:
        return vjp(trained, (y, params), x)[1](1.0)[0][1]

    def half(i: int) -> Any:
        xs, ys = halves[i]
        return vjp(trained, (ys, params), xs)[1](0.5)[0][1]

    def sharded() -> Any:
        other = pool.submit(half, 1)
        return tree_sum([half(0), other.result()])

    diff = max(float(np.max(np.abs(a - b))) for (_, a), (_, b) in zip(tree_paths(whole()), tree_paths(sharded())))
    print(f"{case.label}: the halves' gradients differ from the whole batch's by at most {diff:.1e}")
    floor = matmul_floor(case, params)
    sides: dict[str, tuple[int, Callable[[], Any]]] = {
        "whole batch, 1 BLAS thread": (1, whole),
        "whole batch, 2 BLAS threads": (2, whole),
        "two halves in two threads, 1 BLAS thread each": (1, sharded),
        "matmul floor, 1 BLAS thread": (1, floor),
        "matmul floor, 2 BLAS threads": (2, floor),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, (threads, f) in sides.items():
            with blas_threads(threads):
                start = time.perf_counter()
                for _ in range(20):
                    f()
                times[name].append((time.perf_counter() - start) / 20 * 1e3)
    for name, ts in times.items():
        print(f"{name:48} {statistics.median(ts):7.2f} ms")


if __name__ == "__main__":
    main()
