"""Benchmarks: each lens-built training step against hand-written numpy, timed in the same run.

* :mod:`prelens.bench.mlp`: the fast MLP (784-256-128-10 at batch 128,
  4-8-8-3 at batch 16) and chains of n identity lenses;
* :mod:`prelens.bench.lm`: the decoder-only language model of issue 5;
* :mod:`prelens.bench.tambara`: the blog's TriLens route at real sizes (no numpy twin: it
  reports build and pass times, peak memory and counted work, and the TriLens route against
  the pre-lens route).

Both check the two implementations' gradients equal before timing anything,
then time them interleaved and report median times and their ratio. Run them
with ``OPENBLAS_NUM_THREADS=1 python -m prelens bench``.
"""

from .lm import HandLM, LMConfig, lm_benchmark_rows, run_lm_benchmark
from .tambara import TambaraRow, count_work, tambara_routes, tambara_sweep
from .mlp import (
    CASES,
    ChainResult,
    MlpCase,
    MlpResult,
    Report,
    check_gradients,
    numpy_mlp_grads,
    numpy_mlp_step,
    run_benchmarks,
    time_chains,
    time_mlp_step,
)

__all__ = [
    "CASES",
    "ChainResult",
    "HandLM",
    "LMConfig",
    "MlpCase",
    "MlpResult",
    "Report",
    "TambaraRow",
    "check_gradients",
    "count_work",
    "lm_benchmark_rows",
    "numpy_mlp_grads",
    "numpy_mlp_step",
    "run_benchmarks",
    "run_lm_benchmark",
    "tambara_routes",
    "tambara_sweep",
    "time_chains",
    "time_mlp_step",
]
