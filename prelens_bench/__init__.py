"""Benchmarks: each lens-built training step against hand-written numpy, timed in the same run.

* :mod:`prelens_bench.mlp`: the fast MLP (784-256-128-10 at batch 128,
  4-8-8-3 at batch 16) and chains of n identity lenses;
* :mod:`prelens_bench.lm`: the decoder-only language model of issue 5;
* :mod:`prelens_bench.tambara`: the blog's TriLens route at real sizes (no numpy twin: it
  reports build and pass times, peak memory and counted work, and the TriLens route against
  the pre-lens route; ``python -m prelens_bench.tambara``).

* :mod:`prelens_bench.peers`: the same steps in prelens, by hand in numpy, in PyTorch
  eager, in JAX under ``jit``, prelens on JAX compiled by ``compile_step``, and the
  matmul floor (``prelens bench --peers``);
* :mod:`prelens_bench.mnist1d`: the MNIST-1D paper's four models and protocol, its table of test
  accuracy reproduced (``python -m prelens_bench.mnist1d``);
* :mod:`prelens_bench.memory`: peak memory of a long-sequence LM step, plain and with each
  block rematerialised (:func:`prelens.nn.remat`), beside :class:`prelens.tambara.Cost`'s residue bytes
  (``python -m prelens_bench.memory``);
* :mod:`prelens_bench.profile`: where prelens's step spends its time, lens by lens
  (``prelens bench --profile``);
* :mod:`prelens_bench.scaling`: how the LM step grows with sequence length, width, batch and
  depth in prelens (numpy, JAX) and the peers, and the memory along the sequence
  (``prelens bench --scaling``: a table and a PNG).

The three modules run with ``python -m`` are not imported by this package (so that ``-m`` runs
them cleanly): import their names from them. Each checks the implementations' gradients equal
before timing anything,
then times them interleaved and reports median times and their ratios. Run them
with ``OPENBLAS_NUM_THREADS=1 python -m prelens bench``.
"""

from prelens_bench.lm import HandLM, LMConfig, lm_benchmark_rows, run_lm_benchmark
from prelens_bench.mlp import (
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
from prelens_bench.peers import (
    DEFAULT_PEERS,
    JAX_JIT,
    MATMUL_FLOOR,
    NUMPY_HAND,
    PEER_CASES,
    PRELENS_JAX,
    TORCH_EAGER,
    Peer,
    PeerCase,
    PeerReport,
    PeerRow,
    PeerStep,
    Problem,
    check_peer_gradients,
    make_problem,
    run_peers,
)
from prelens_bench.profile import Profile, ProfileRow, profile_step
from prelens_bench.scaling import (
    PRELENS_NUMPY,
    SCALING_AXES,
    SCALING_GRIDS,
    SCALING_SIDES,
    ScalingGrid,
    ScalingMemory,
    ScalingReport,
    ScalingRow,
    run_scaling,
)

__all__ = [
    "CASES",
    "DEFAULT_PEERS",
    "JAX_JIT",
    "MATMUL_FLOOR",
    "NUMPY_HAND",
    "PEER_CASES",
    "PRELENS_JAX",
    "PRELENS_NUMPY",
    "SCALING_AXES",
    "SCALING_GRIDS",
    "SCALING_SIDES",
    "TORCH_EAGER",
    "ChainResult",
    "HandLM",
    "LMConfig",
    "MlpCase",
    "MlpResult",
    "Peer",
    "PeerCase",
    "PeerReport",
    "PeerRow",
    "PeerStep",
    "Problem",
    "Profile",
    "ProfileRow",
    "Report",
    "ScalingGrid",
    "ScalingMemory",
    "ScalingReport",
    "ScalingRow",
    "check_gradients",
    "check_peer_gradients",
    "lm_benchmark_rows",
    "make_problem",
    "numpy_mlp_grads",
    "numpy_mlp_step",
    "profile_step",
    "run_benchmarks",
    "run_lm_benchmark",
    "run_peers",
    "run_scaling",
    "time_chains",
    "time_mlp_step",
]
