"""Forward-only use records nothing, and never stops the first backward pass from checking.

A lens made from its own passes checks, on its first backward pass under the trace, that its
deltas fit what its forward pass was given; only forward passes run by ``vjp``/``backward`` are
recorded for that. ``forward``, ``predict``, ``evaluate`` and ``generate`` drop the residue: they
record nothing, however often they run.
"""

from __future__ import annotations

import numpy as np
import pytest

import prelens.core._check as C
from prelens import PreLens, StructureError, chain, forward, vjp
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
def records(monkeypatch):
    made = []
    real = C._remember
    monkeypatch.setattr(C, "_remember", lambda seen, p, s, a: made.append(1) or real(seen, p, s, a))
    return made


def test_forward_predict_evaluate_and_generate_record_nothing(records):
    model = chain(dense(3, 3), transposing())
    p, x = model.init(0), np.ones((4, 3))
    for _ in range(3):
        forward(model, p, x)
        predict(model, p, x, batch_size=2)
        evaluate(model, mse, p, x, np.zeros((4, 2)))
    lm = decoder_lm(5, 4, 2, 8, 1, 6)
    generate(lm, lm.init(0), np.array([[1, 2]]), 3)
    assert records == []
    vjp(model, p, x)  # a residue a backward pass may read: its leaves record
    assert len(records) == 2


def test_the_first_backward_pass_still_checks_after_any_number_of_forward_only_passes():
    model = chain(dense(3, 3), transposing())
    p, x = model.init(0), np.ones((4, 3))
    for _ in range(100):
        forward(model, p, x)
        m, _ = model.fwd(p, x)
    model.bwd(m, np.ones((4, 2)))  # a residue the trace did not record: nothing to compare, nothing decided
    _, pullback = vjp(model, p, x)
    with pytest.raises(StructureError, match=r"^transposing: bwd returned a dp that does not fit"):
        pullback(np.ones((4, 2)))


def test_once_checked_a_model_records_no_more(records):
    model = chain(dense(3, 3), dense(3, 2))
    p, x = model.init(0), np.ones((4, 3))
    for _ in range(3):
        _, pullback = vjp(model, p, x)
        pullback(np.ones((4, 2)))
    assert len(records) == 2  # the first step only


def test_recording_nests_and_is_undone_on_errors():
    assert not getattr(C._RECORDING, "on", False)
    with C.recording():
        with C.recording():
            assert C._RECORDING.on
        assert C._RECORDING.on
    with pytest.raises(ValueError), C.recording():
        raise ValueError
    assert not C._RECORDING.on
