"""Does splitting numpy's element-wise work over row blocks on 2 threads pay? (issue 26, item 2)

A standalone prototype, not used by prelens: numpy releases the GIL inside ufuncs, so the
element-wise work of a step (activations, softmax, layer norm, residual adds, Adam's update)
could run on both cores by splitting the rows in two and handing one half to a
``concurrent.futures`` pool of one worker while the calling thread does the other. This times
each kernel whole (1 thread) and split (2 threads), interleaved, on the language model's shapes
(batch 16 x T 32 = 512 rows, 64 and 256 features) and larger ones, and checks that the split
result equals the whole one bit for bit (the kernels are row-wise: nothing is reordered).

    OPENBLAS_NUM_THREADS=1 python tools/bench_threads_elementwise.py [--repeats 15] [--dtype float32]

Prints a Markdown table: median microseconds per call each way and the speed-up (1 thread / 2
threads). Run it on a quiet machine: with other work on the cores a second thread buys nothing.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray], None]  # (x, y, out) rows -> out rows, in place

GELU_C = math.sqrt(2.0 / math.pi)


def tanh(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    np.tanh(x, out=out)


def gelu(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:  # the tanh approximation, 6 ufunc passes
    np.multiply(x, x, out=out)
    out *= 0.044715
    out += 1.0
    out *= x
    out *= GELU_C
    np.tanh(out, out=out)
    out += 1.0
    out *= x
    out *= 0.5


def softmax(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)


def layer_norm(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    np.subtract(x, x.mean(axis=-1, keepdims=True), out=out)
    r = np.einsum("ij,ij->i", out, out)[:, None]
    r *= 1.0 / x.shape[-1]
    r += 1e-5
    np.sqrt(r, out=r)
    out /= r


def residual_add(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    np.add(x, y, out=out)


class Adam:
    """Adam's update of a parameter block in place (m, v and the parameter: x is the gradient)."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.m = np.zeros(shape, dtype)
        self.v = np.zeros(shape, dtype)

    def __call__(self, g: np.ndarray, y: np.ndarray, p: np.ndarray, rows: slice = slice(None)) -> None:
        m, v = self.m[rows], self.v[rows]
        m *= 0.9
        m += 0.1 * g
        v *= 0.999
        g2 = g * g
        g2 *= 0.001
        v += g2
        np.sqrt(v, out=g2)
        g2 += 1e-8
        np.divide(m, g2, out=g2)
        g2 *= 1e-3
        p -= g2


def split_rows(n: int, k: int) -> list[slice]:
    bounds = [n * i // k for i in range(k + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def run_split(pool: ThreadPoolExecutor, kernel: Callable[..., None], args: tuple[np.ndarray, ...], k: int = 2) -> None:
    """``kernel`` on row blocks: the pool takes all but the first, the calling thread the first."""
    blocks = split_rows(args[0].shape[0], k)
    futures = [pool.submit(kernel, *(a[s] for a in args)) for s in blocks[1:]]
    kernel(*(a[blocks[0]] for a in args))
    for f in futures:
        f.result()


def run_split_adam(pool: ThreadPoolExecutor, adam: Adam, args: tuple[np.ndarray, ...], k: int = 2) -> None:
    g, y, p = args
    blocks = split_rows(g.shape[0], k)
    futures = [pool.submit(adam, g[s], y[s], p[s], s) for s in blocks[1:]]
    adam(g[blocks[0]], y[blocks[0]], p[blocks[0]], blocks[0])
    for f in futures:
        f.result()


def median_us(fns: dict[str, Callable[[], None]], repeats: int, inner: int) -> dict[str, float]:
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for n in names[r % 2 :] + names[: r % 2]:
            f = fns[n]
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            times[n].append((time.perf_counter() - t0) / inner * 1e6)
    return {n: float(np.median(v)) for n, v in times.items()}


#: (rows, features): the LM's activations (16 x 32 rows; d_model 64, FFN 256), then larger.
SHAPES = ((512, 64), (512, 256), (4096, 256), (8192, 512), (32768, 512))

KERNELS: dict[str, Kernel] = {
    "tanh": tanh,
    "gelu": gelu,
    "softmax": softmax,
    "layer norm": layer_norm,
    "residual add": residual_add,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--shapes", default=None, help="rows x features, comma-separated: 512x64,32768x512")
    args = parser.parse_args()
    dt = np.dtype(args.dtype)
    shapes = SHAPES
    if args.shapes:
        shapes = tuple(tuple(int(v) for v in s.split("x")) for s in args.shapes.split(","))  # type: ignore[misc]
    rng = np.random.default_rng(0)
    load = os.getloadavg()[0]
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, load average {load:.1f}, {dt}, median of {args.repeats}")
    print("\n| kernel | rows x features | 1 thread (µs) | 2 threads (µs) | speed-up |\n|---|---|---:|---:|---:|")
    with ThreadPoolExecutor(max_workers=1) as pool:
        for rows, feats in shapes:
            x = rng.standard_normal((rows, feats)).astype(dt)
            y = rng.standard_normal((rows, feats)).astype(dt)
            inner = max(1, int(2e5 // (rows * feats)))  # about 0.2 M elements per timed block at least
            cases: list[tuple[str, Callable[[], None], Callable[[], None], Callable[[], np.ndarray]]] = []
            for name, kernel in KERNELS.items():
                o1, o2 = np.empty_like(x), np.empty_like(x)

                def whole(kernel: Kernel = kernel, o1: np.ndarray = o1) -> None:
                    kernel(x, y, o1)

                def split(kernel: Kernel = kernel, o2: np.ndarray = o2) -> None:
                    run_split(pool, kernel, (x, y, o2))

                whole()
                split()
                assert np.array_equal(o1, o2), name
                cases.append((name, whole, split, lambda: o1))
            a1, a2 = Adam(x.shape, dt), Adam(x.shape, dt)
            p1, p2 = x.copy(), x.copy()
            a1(y, y, p1)
            run_split_adam(pool, a2, (y, y, p2))
            assert np.array_equal(p1, p2), "adam"
            cases.append(
                ("Adam update", lambda: a1(y, y, p1), lambda: run_split_adam(pool, a2, (y, y, p2)), lambda: p1)
            )
            for name, whole, split, _ in cases:
                t = median_us({"1": whole, "2": split}, args.repeats, inner)
                print(f"| {name} | {rows} x {feats} | {t['1']:.1f} | {t['2']:.1f} | {t['1'] / t['2']:.2f} |")


if __name__ == "__main__":
    main()
