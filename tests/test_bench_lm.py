"""A smoke test of the language-model benchmark: the hand-written model agrees with the lenses.

Times are measured, never asserted (the machines are noisy).
"""

import numpy as np
import pytest

from prelens import LawError
from prelens.core import tree_allclose
from prelens_bench.lm import HandLM, LMConfig, _lens_step, lm_benchmark_rows, run_lm_benchmark

SMALL = LMConfig(vocab=9, seq_len=5, d_model=8, n_heads=2, d_ff=12, n_layers=2, batch=3)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_hand_written_model_has_the_lens_models_loss_and_gradient(dtype, tol):
    rng = np.random.default_rng(0)
    lm, step = _lens_step(SMALL, dtype)
    p = lm.init(rng)
    ids = rng.integers(0, SMALL.vocab, (SMALL.batch, SMALL.seq_len))
    labels = rng.integers(0, SMALL.vocab, (SMALL.batch, SMALL.seq_len))
    labels[:, :2] = -1
    loss_l, grads_l = step(p, ids, labels)
    loss_h, grads_h = HandLM(SMALL).loss_and_grads(p, ids, labels)
    assert np.isclose(loss_l, loss_h, rtol=tol) and loss_h.dtype == dtype
    assert tree_allclose(grads_l, grads_h, rtol=tol, atol=tol * 1e-2)
    wrong = p._replace(blocks=[p.blocks[1], p.blocks[0]])
    assert not tree_allclose(grads_l, HandLM(SMALL).loss_and_grads(wrong, ids, labels)[1], rtol=tol)


def test_benchmark_rows_and_table():
    rows = lm_benchmark_rows(SMALL, repeats=2)
    assert [r["dtype"] for r in rows] == ["float64", "float32"]
    assert all(r["lens_s"] > 0 and r["hand_s"] > 0 and r["ratio"] > 0 for r in rows)
    assert rows[0]["max_grad_diff"] < 1e-10
    table = run_lm_benchmark(quick=True, repeats=1, dtypes=("float32",))
    assert "float32" in table and "ratio" in table


def test_a_wrong_hand_written_gradient_stops_the_benchmark(monkeypatch):
    real = HandLM.loss_and_grads

    def off_by_a_bit(self, params, ids, labels):
        loss, grads = real(self, params, ids, labels)
        return loss, grads._replace(unembedding=grads.unembedding._replace(weight=grads.unembedding.weight * 1.01))

    monkeypatch.setattr(HandLM, "loss_and_grads", off_by_a_bit)
    with pytest.raises(LawError, match=r"hand-written numpy = lens.*float64.*unembedding"):
        lm_benchmark_rows(SMALL, repeats=1, dtypes=("float64",))
