"""The lens-by-lens profile: every lens is charged, the products are split off, and nothing is left patched.

Times are measured, never asserted.
"""

from __future__ import annotations

import numpy as np
import pytest

import prelens
import prelens.core._lens as L
import prelens.nn as nn
from prelens_bench import LMConfig, PeerCase, profile_step
from prelens_bench.profile import ProfileRow

SMALL_LM = LMConfig(vocab=9, seq_len=6, d_model=8, n_heads=2, d_ff=12, n_layers=2, batch=3)


def test_the_language_models_lenses_are_each_charged_and_the_products_split_off():
    p = profile_step(PeerCase(SMALL_LM, "float32"), repeats=3)
    kinds = {r.lens: r for r in p.rows}
    for kind in (
        "token_embedding",
        "positional_embedding",
        "linear",
        "projections",
        "scaled_dot_product_attention",
        "merge_heads",
        "layer_norm",
        "feed_forward",
        "dense",
        "token_cross_entropy",
        "composition",
        "trace (vjp, pullback)",
        "optimiser update (sgd)",
    ):
        assert kind in kinds, kind
    assert "wiring" not in kinds  # the residual connections are one lens each: their adds count as composition
    assert kinds["linear"].calls == 2 and kinds["layer_norm"].calls == 4 and kinds["feed_forward"].calls == 2
    assert kinds["dense"].calls == 1 and kinds["token_cross_entropy"].calls == 1
    with_products = {"projections", "linear", "scaled_dot_product_attention", "feed_forward", "dense"}
    assert {r.lens for r in p.rows if r.matmul > 0} == with_products
    assert all(r.fwd >= 0 or r.lens == "trace (vjp, pullback)" for r in p.rows)
    assert p.step > 0 and p.floor > 0 and p.peak > 0 and p.faults >= 0
    text = str(p)
    assert text.startswith("LM v9 T6 d8 h2 ff12 x2 b3 f32: one SGD step")
    assert "| scaled_dot_product_attention | 2 |" in text and "| **all** |" in text


def test_nothing_stays_wrapped_after_profiling():
    before = {name: (v.fwd, v.bwd) for name, v in vars(nn).items() if isinstance(v, prelens.PreLens)}
    init = L.PreLens.__post_init__
    profile_step(PeerCase((4, 3), "float64", 2), repeats=1)
    assert L.PreLens.__post_init__ is init
    after = {name: (v.fwd, v.bwd) for name, v in vars(nn).items() if isinstance(v, prelens.PreLens)}
    assert after == before
    _, y = nn.relu.fwd((), np.array([-1.0, 2.0]))  # and the lenses still run
    assert y.tolist() == [0.0, 2.0]


def test_a_model_that_fails_to_build_while_wrapped_leaves_nothing_wrapped(monkeypatch):
    import prelens_bench.profile as prof

    init, relu_fwd = L.PreLens.__post_init__, nn.relu.fwd
    real = prof._trained

    def fails_when_wrapped(case):
        if L.PreLens.__post_init__ is not init:
            raise RuntimeError("a constructor failed")
        return real(case)

    monkeypatch.setattr(prof, "_trained", fails_when_wrapped)
    with pytest.raises(RuntimeError, match="a constructor failed"):
        profile_step(PeerCase((4, 3), "float64", 2), repeats=1)
    assert L.PreLens.__post_init__ is init and nn.relu.fwd is relu_fwd


def test_rows_add_up():
    r = ProfileRow("linear", 8, fwd=2e-3, bwd=3e-3, matmul=4e-3)
    assert r.total == pytest.approx(5e-3) and r.rest == pytest.approx(1e-3)
