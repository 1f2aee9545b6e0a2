"""Checks for the exercises of notebook 04_attention (solutions: ``solutions/ex04_attention.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, chain, copy_l, forward, id_pre_lens
from prelens.nn import linear, sinusoidal_encoding, softmax
from prelens.nn.composed import attention_scores, causal_mask, weighted_sum
from prelens.testing import check_vjp

from ._kit import answered, call, exercise, expect


@exercise("4.1", "the scores lens", answer="function")
def scores_l(fn: Any) -> str:
    """``scores_l(d_k)`` equals ``attention_scores(d_k)``, forward and backward."""
    rng = np.random.default_rng(8)
    for d_k, shape in [(4, (1, 5)), (3, (2, 4)), (8, (2, 3, 6))]:
        lens = call(fn, d_k)
        expect(isinstance(lens, PreLens), f"scores_l({d_k}) should return a PreLens, got {type(lens).__name__}")
        q, k = rng.standard_normal((*shape, d_k)), rng.standard_normal((*shape, d_k))
        _, s = lens.fwd((), (q, k))
        want = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
        expect(
            np.shape(s) == want.shape,
            f"for Q, K of shape {q.shape}, S should have shape {want.shape}, got {np.shape(s)}",
        )
        expect(np.allclose(s, want), "S should be Q Kᵀ / √d_k (check the scale and which axes are transposed)")
        ds = rng.standard_normal(want.shape)
        m, _ = lens.fwd((), (q, k))
        dp, (dq, dk) = lens.bwd(m, ds)
        ref = attention_scores(d_k)
        _, (want_dq, want_dk) = ref.bwd(ref.fwd((), (q, k))[0], ds)
        expect(dp == (), f"the lens has no parameters: dp should be (), got {dp!r}")
        expect(np.allclose(dq, want_dq), "dQ should be dS K / √d_k")
        expect(np.allclose(dk, want_dk), "dK should be dSᵀ Q / √d_k (transpose the last two axes of dS)")
        check_vjp(lens, (), (q, k))
    return "dQ = dS K / √d_k and dK = dSᵀ Q / √d_k"


@exercise("4.2", "the sinusoidal table", answer="function")
def sinusoidal(fn: Any) -> str:
    """``sinusoidal(T, d)`` equals the table ``sinusoidal_encoding(d, T)`` adds to its input."""
    for t, d in [(5, 4), (64, 32), (1, 2), (10, 16)]:
        got = np.asarray(call(fn, t, d))
        want = forward(sinusoidal_encoding(d, t), (), np.zeros((t, d)))
        expect(got.shape == want.shape, f"sinusoidal({t}, {d}) should have shape {want.shape}, got {got.shape}")
        if not np.allclose(got, want, atol=1e-9):
            r, c = np.argwhere(~np.isclose(got, want, atol=1e-9))[0]
            raise AssertionError(
                f"sinusoidal({t}, {d})[{r}, {c}] should be {want[r, c]:.6f}, got {got[r, c]:.6f}: "
                "even columns sin(t ω_i), odd columns cos(t ω_i), ω_i = 10000^(−2i/d)"
            )
    return "each pair of columns a sine and a cosine of one frequency"


def _head(d_model: int, d_k: int) -> PreLens:
    return chain(
        copy_l,
        (copy_l >> (linear(d_model, d_k) @ linear(d_model, d_k)) >> attention_scores(d_k)) @ linear(d_model, d_k),
        causal_mask() @ id_pre_lens,
        softmax @ id_pre_lens,
        weighted_sum(),
    )


@exercise("4.3", "attention weights from the residue", answer="function")
def weights_from_residue(fn: Any) -> str:
    """``weights_from_residue(m)`` returns the softmax output of the head's fourth stage."""
    answered(fn)
    rng = np.random.default_rng(9)
    for d_model, d_k, b, t in [(8, 4, 1, 7), (6, 2, 3, 5)]:
        head = _head(d_model, d_k)
        params, x = head.init(rng), rng.standard_normal((b, t, d_model))
        m, _ = head.fwd(params, x)
        got = np.asarray(call(fn, m))
        wq, wk, _ = (params[1][0][1][0][0], params[1][0][1][0][1], params[1][1])
        s = (x @ wq) @ np.swapaxes(x @ wk, -1, -2) / np.sqrt(d_k)
        s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
        want = np.exp(s - s.max(axis=-1, keepdims=True))
        want /= want.sum(axis=-1, keepdims=True)
        expect(got.shape == want.shape, f"A should have shape (batch, T, T) = {want.shape}, got {got.shape}")
        expect(
            np.allclose(got, want),
            "those are not the attention weights: they are the softmax's output, kept by "
            "the softmax stage (stage 3), in the left half of its pair",
        )
    return "m[3][0]: stage 3 is softmax @ id, and the softmax keeps its output"
