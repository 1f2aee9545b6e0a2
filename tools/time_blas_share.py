"""How much of the language model's numpy step is BLAS, measured inside the step, against the matmul floor.

Usage (Linux, a C compiler, numpy's bundled scipy-openblas):

    python tools/time_blas_share.py [--dtype float32] [--rounds 30]

It compiles a tiny shim that wraps OpenBLAS's ``cblas_?gemm`` and ``cblas_?gemv`` with a clock, runs itself
again with the shim preloaded, and times the LM step of ``prelens bench --peers`` (forward and backward, no
update) and the matmul floor at 1 and 2 BLAS threads, interleaved: per round each is run 6 times and the
fastest of the last 5 is kept; the table gives medians over rounds of the whole call and of the time spent
inside BLAS. What the step spends outside BLAS (``rest``) is element-wise work, reductions, copies and Python.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>
static double spent = 0; static long calls = 0;
double shim_spent(void) { return spent; }
long shim_calls(void) { return calls; }
void shim_reset(void) { spent = 0; calls = 0; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void *real(const char *name) { return dlsym(dlopen(LIB, RTLD_NOW | RTLD_NOLOAD), name); }
#define GEMM(T, N) \
void N(int o, int ta, int tb, int64_t m, int64_t n, int64_t k, T al, const T *a, int64_t lda, const T *b, \
       int64_t ldb, T be, T *c, int64_t ldc) { \
    static void (*f)(int, int, int, int64_t, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T, \
                     T *, int64_t); \
    if (!f) f = real(#N); \
    double t0 = now(); f(o, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc); spent += now() - t0; calls++; }
#define GEMV(T, N) \
void N(int o, int t, int64_t m, int64_t n, T al, const T *a, int64_t lda, const T *x, int64_t incx, T be, T *y, \
       int64_t incy) { \
    static void (*f)(int, int, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T, T *, int64_t); \
    if (!f) f = real(#N); \
    double t0 = now(); f(o, t, m, n, al, a, lda, x, incx, be, y, incy); spent += now() - t0; calls++; }
GEMM(float, scipy_cblas_sgemm64_) GEMM(double, scipy_cblas_dgemm64_)
GEMV(float, scipy_cblas_sgemv64_) GEMV(double, scipy_cblas_dgemv64_)
"""


def _build() -> str:
    import numpy as np

    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "libscipy_openblas64_*"))
    if not libs:
        sys.exit("time_blas_share: numpy's bundled scipy-openblas was not found (a numpy wheel from PyPI has it)")
    out = Path(tempfile.mkdtemp()) / "libblasclock.so"
    src = out.with_suffix(".c")
    src.write_text(SHIM)
    cc = ["cc", "-O2", "-shared", "-fPIC", f'-DLIB="{os.path.realpath(libs[0])}"', "-o", str(out), str(src), "-ldl"]
    subprocess.run(cc, check=True)
    return str(out)


def _measure(shim: str, dtype: str, rounds: int) -> None:
    import numpy as np
    from threadpoolctl import threadpool_limits

    from prelens_bench._floor import matmul_floor
    from prelens_bench._problem import PeerCase, make_problem
    from prelens_bench.lm import LMConfig, _lens_step

    clock = ctypes.CDLL(shim)
    clock.shim_spent.restype = ctypes.c_double
    case = PeerCase(LMConfig(), dtype)
    problem = make_problem(case)
    _, step = _lens_step(LMConfig(), np.dtype(dtype))
    sides = {"step": lambda: step(problem.params, problem.x, problem.y), "floor": matmul_floor(case, problem.params)}
    got: dict[tuple[str, int], list[tuple[float, float, int]]] = {}
    for _ in range(rounds):
        for threads in (1, 2):
            with threadpool_limits(threads, "blas"):
                for name, f in sides.items():
                    f()
                    best = (float("inf"), 0.0, 0)
                    for _ in range(5):
                        clock.shim_reset()
                        t0 = time.perf_counter()
                        f()
                        best = min(best, (time.perf_counter() - t0, clock.shim_spent(), clock.shim_calls()))
                    got.setdefault((name, threads), []).append(best)
    print(f"{case.label}: medians of {rounds} rounds (ms)\n")
    print("| BLAS threads | side | whole call | inside BLAS | BLAS calls | rest |\n|---:|---|---:|---:|---:|---:|")
    for (name, threads), runs in sorted(got.items(), key=lambda kv: (kv[0][1], kv[0][0] != "step")):
        whole, blas = (1e3 * float(np.median([r[i] for r in runs])) for i in (0, 1))
        print(f"| {threads} | {name} | {whole:.3f} | {blas:.3f} | {runs[-1][2]} | {whole - blas:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    shim = os.environ.get("_BLASCLOCK")
    if shim is None:  # build the shim, then run again with it preloaded
        shim = _build()
        env = {**os.environ, "_BLASCLOCK": shim, "LD_PRELOAD": shim}
        sys.exit(subprocess.run([sys.executable, *sys.argv], env=env).returncode)
    _measure(shim, args.dtype, args.rounds)


if __name__ == "__main__":
    main()
