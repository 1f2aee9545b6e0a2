"""Forward-only use builds no first-call witness, and never stops the first backward pass from checking.

Before its first checked backward pass a composite returns its residue as a witness (what each
part was given, to check the part's deltas). ``forward``, ``predict``, ``evaluate`` and
``generate`` drop the residue: they build none, however often they run.
"""

from __future__ import annotations

import numpy as np
import pytest

import prelens.core._lens as L
from prelens import PreLens, StructureError, chain, forward, vjp
from prelens.core._lens import forward_only
from prelens.nn import decoder_lm, dense, generate, mse
from prelens.train import evaluate, predict


def transposing() -> PreLens:
    """A lens whose bwd returns the weight's delta transposed: caught at the first checked backward pass."""

    def fwd(w, x):
        return (x.copy(), w.copy()), x @ w

    def bwd(m, da):
        x, w = m
        return (x.T @ da).T, da @ w.T

    return PreLens(fwd, bwd, "transposing", lambda rng: rng.standard_normal((3, 2)))


@pytest.fixture
def witnesses(monkeypatch):
    made = []
    real, real_list = L._witness, L._witness_list
    monkeypatch.setattr(L, "_witness", lambda m, g: made.append("w") or real(m, g))
    import prelens.core._combinators as C

    monkeypatch.setattr(C, "_witness_list", lambda m, g: made.append("l") or real_list(m, g))
    return made


def test_forward_predict_evaluate_and_generate_build_no_witness(witnesses):
    model = chain(dense(3, 3), transposing())
    p, x = model.init(0), np.ones((4, 3))
    for _ in range(3):
        forward(model, p, x)
        predict(model, p, x, batch_size=2)
        evaluate(model, mse, p, x, np.zeros((4, 2)))
    lm = decoder_lm(5, 4, 2, 8, 1, 6)
    generate(lm, lm.init(0), np.array([[1, 2]]), 3)
    assert witnesses == []
    model.fwd(p, x)  # outside forward_only: the first-call witness is there
    assert witnesses == ["l"]


def test_the_first_backward_pass_still_checks_after_any_number_of_forward_only_passes():
    model = chain(dense(3, 3), transposing())
    p, x = model.init(0), np.ones((4, 3))
    for _ in range(5):
        forward(model, p, x)
        with forward_only():
            m, _ = model.fwd(p, x)
    model.bwd(m, np.ones((4, 2)))  # a plain residue run backward: nothing checked, nothing decided
    _, pullback = vjp(model, p, x)
    with pytest.raises(StructureError, match=r"^transposing: bwd returned a dp that does not fit"):
        pullback(np.ones((4, 2)))


def test_forward_only_nests_and_is_undone_on_errors():
    assert L.witnessing()
    with forward_only():
        with forward_only():
            assert not L.witnessing()
        assert not L.witnessing()
    with pytest.raises(ValueError), forward_only():
        raise ValueError
    assert L.witnessing()
