"""PyTorch eager and JAX themselves: their gradients equal prelens's, and their steps run.

These need the optional extra ``peers`` (``pip install '.[peers]'``: ``torch==2.13.0`` and
``jax``), so they live outside ``tests/`` and run as a step of their own (``.ci/run``, and the
README): ``python -m pytest tests_peers``. Nothing here is skipped: without the extra, the
imports fail. Everything else of ``prelens bench --peers`` is tested without it in
``tests/test_bench_peers.py``.
"""

from __future__ import annotations

import jax  # noqa: F401  (the extra must be there: a missing peer fails, never skips)
import pytest
import torch

from prelens.bench import JAX_JIT, TORCH_EAGER, LMConfig, PeerCase, check_peer_gradients, make_problem, run_peers
from prelens.bench.peers import PRELENS

SMALL_LM = LMConfig(vocab=9, seq_len=6, d_model=8, n_heads=2, d_ff=12, n_layers=2, batch=3)
CASES = [PeerCase((6, 5, 3), dtype, 4) for dtype in ("float64", "float32")] + [
    PeerCase(SMALL_LM, dtype) for dtype in ("float64", "float32")
]


def _peer(name: str) -> object:
    return TORCH_EAGER if name == "torch" else JAX_JIT


@pytest.mark.parametrize("name", ["torch", "jax"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_peers_gradients_are_prelenss(name, case):
    peer = _peer(name)
    problem = make_problem(case, seed=3)
    ours = PRELENS.prepare(problem).grads()
    prepared = peer.prepare(problem)
    err = check_peer_gradients(peer.name, case, ours, prepared.grads())
    assert err <= (1e-12 if case.dtype == "float64" else 1e-5)
    prepared.step()  # the timed step runs


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_run_with_a_peer_fills_its_column(name):
    peer = _peer(name)
    report = run_peers([CASES[0], CASES[2]], peers=[peer], repeats=3, inner=1)
    assert all(peer.name in r.times and r.ratio(peer.name) > 0 for r in report.rows)
    assert str(report).count(f"prelens / {'torch' if name == 'torch' else 'JAX'}") == 1


def test_the_torch_peer_is_the_pinned_version():
    assert torch.__version__.split("+")[0] == "2.13.0"
