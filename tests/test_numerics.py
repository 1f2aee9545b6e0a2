"""Numerics: the lenses stay finite and warning-free where naive formulas overflow.

Every check runs with numpy's floating-point errors raised as exceptions and
warnings turned into errors, so an overflow inside a lens fails the test even
when the result happens to come out finite. The activations run under
``np.errstate(all="raise")``; the softmax family under every error but
underflow: ``exp(x − max)`` of a far-below-the-maximum logit underflowing to
``0`` is the exact, intended result of the shift (numpy ignores underflow by
default).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

from prelens import vjp
from prelens.nn import (
    MASKED,
    gelu,
    layer_norm,
    multi_head_attention,
    relu,
    sigmoid,
    softmax,
    softmax_cross_entropy,
    tanh,
    token_cross_entropy,
)
from prelens.nn.composed import causal_mask

DTYPES = [np.float64, np.float32]


@pytest.fixture(autouse=True)
def strict_floats() -> Iterator[None]:
    """Overflow, invalid operations and division by zero raise; so does any warning."""
    with warnings.catch_warnings(), np.errstate(all="raise", under="ignore"):
        warnings.simplefilter("error")
        yield


def _all_finite(*xs: object) -> bool:
    return all(bool(np.all(np.isfinite(np.asarray(x, dtype=np.float64)))) for x in xs)


def _logsumexp(row: list[float]) -> float:
    """log Σ exp(x), exactly in Python floats (the reference)."""
    top = max(row)
    return top + math.log(sum(math.exp(x - top) for x in row))


# ------------------------------------------------------------ softmax family

BIG_LOGITS = [
    [1e4, -1e4, 0.0],
    [-1e4, -1e4, -1e4],
    [1e4, 1e4, 1e4],
    [1e4, 1e4 - 1.0, -1e4],
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_of_huge_logits_is_finite_and_exact(dtype: type) -> None:
    s = np.array(BIG_LOGITS, dtype=dtype)
    y, pullback = vjp(softmax, (), s)
    want = np.array([[math.exp(x - _logsumexp(row)) for x in row] for row in BIG_LOGITS])
    assert y.dtype == dtype
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-6)
    _, ds = pullback(np.ones_like(s))
    assert _all_finite(ds)
    np.testing.assert_allclose(ds, 0.0, atol=1e-6)  # softmax is invariant to a shift: Σ ds = 0 per row


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_cross_entropy_of_huge_logits_matches_log_sum_exp(dtype: type) -> None:
    s = np.array(BIG_LOGITS, dtype=dtype)
    labels = np.array([1, 0, 2, 1])
    loss, pullback = vjp(softmax_cross_entropy, labels, s)
    want = sum(_logsumexp(row) - row[k] for row, k in zip(BIG_LOGITS, labels)) / len(labels)
    assert _all_finite(loss)
    assert float(loss) == pytest.approx(want, rel=1e-6)
    _, ds = pullback(1.0)
    assert _all_finite(ds)
    probs = np.array([[math.exp(x - _logsumexp(row)) for x in row] for row in BIG_LOGITS])
    probs[np.arange(4), labels] -= 1
    np.testing.assert_allclose(ds, probs / 4, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_token_cross_entropy_of_huge_logits_is_finite(dtype: type) -> None:
    s = np.array([BIG_LOGITS], dtype=dtype)  # (1, T=4, vocab=3)
    labels = np.array([[1, -1, 2, 0]])  # position 1 ignored
    loss, pullback = vjp(token_cross_entropy(), labels, s)
    counted = [(BIG_LOGITS[t], k) for t, k in enumerate(labels[0]) if k >= 0]
    want = sum(_logsumexp(row) - row[k] for row, k in counted) / len(counted)
    assert float(loss) == pytest.approx(want, rel=1e-6)
    _, ds = pullback(1.0)
    assert _all_finite(ds)
    assert np.all(ds[0, 1] == 0)  # the ignored position gets no gradient


def test_token_cross_entropy_with_nothing_counted_is_zero_not_nan() -> None:
    s = np.zeros((2, 3, 5))
    loss, pullback = vjp(token_cross_entropy(), np.full((2, 3), -1), s)
    assert float(loss) == 0.0
    assert np.all(pullback(1.0)[1] == 0)


# ---------------------------------------------------------------- layer norm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [0.0, 3.0, -1e4, 1e6])
def test_layer_norm_of_constant_rows_is_its_bias_with_a_finite_gradient(dtype: type, value: float) -> None:
    ln = layer_norm(4, dtype=dtype)
    gain = np.array([1.0, 2.0, -1.0, 0.5], dtype=dtype)
    bias = np.array([0.1, 0.2, 0.3, 0.4], dtype=dtype)
    x = np.full((3, 4), value, dtype=dtype)
    y, pullback = vjp(ln, (gain, bias), x)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, np.broadcast_to(bias, (3, 4)), atol=1e-3 if value else 0)
    dp, dx = pullback(np.ones((3, 4), dtype=dtype))
    assert _all_finite(dx, *dp)


# --------------------------------------------------------------- activations


@pytest.mark.parametrize("act", [tanh, sigmoid, gelu, relu], ids=lambda a: a.name)
@pytest.mark.parametrize("dtype", DTYPES)
def test_activations_at_plus_minus_1e4_raise_no_overflow(act: object, dtype: type) -> None:
    s = np.array([-1e4, -50.0, -1.0, 0.0, 1.0, 50.0, 1e4], dtype=dtype)
    with np.errstate(all="raise"):  # underflow too
        y, pullback = vjp(act, (), s)  # type: ignore[arg-type]
        _, ds = pullback(np.ones_like(s))
    assert y.dtype == dtype and ds.dtype == dtype
    assert _all_finite(y, ds)
    assert abs(float(y[-1]) - {"tanh": 1.0, "sigmoid": 1.0, "gelu": 1e4, "relu": 1e4}[act.name]) <= 1e-6 * 1e4  # type: ignore[attr-defined]
    assert abs(float(y[0]) - {"tanh": -1.0, "sigmoid": 0.0, "gelu": 0.0, "relu": 0.0}[act.name]) <= 1e-6  # type: ignore[attr-defined]
    assert float(ds[0]) == pytest.approx(0.0, abs=1e-6) and float(ds[4]) > 0


# ------------------------------------------------------------------- masking


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_give_uniform_weights_not_nan(dtype: type) -> None:
    # more queries (5) than keys (3): under the causal mask the first queries see no key at all
    scores = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(dtype)
    m, masked = causal_mask().fwd((), scores)
    assert not m[0].any()  # query 0 sees nothing
    weights, pullback = vjp(softmax, (), masked)
    assert _all_finite(weights)
    np.testing.assert_allclose(weights[:, 0], 1 / 3, rtol=1e-6)
    _, ds = pullback(np.ones_like(weights))
    assert _all_finite(ds)
    _, dscores = causal_mask().bwd(m, ds)
    assert _all_finite(dscores) and np.all(dscores[:, 0] == 0)


def test_masked_value_is_finite_in_float32() -> None:
    assert np.isfinite(np.float32(MASKED))


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_attention_with_huge_inputs_stays_finite(dtype: type) -> None:
    mha = multi_head_attention(8, 2, causal=True, dtype=dtype)
    p = mha.init(0)
    x = np.random.default_rng(1).standard_normal((2, 4, 8)).astype(dtype) * 30  # scores of order 1e3
    y, pullback = vjp(mha, p, x)
    dp, dx = pullback(np.ones_like(y))
    assert _all_finite(y, dx, *dp)


def test_softmax_of_a_row_of_minus_infinity_is_uniform_not_nan() -> None:
    """A mask written with -inf (as many tutorials do) must not turn into NaN."""
    s = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    y, pullback = vjp(softmax, (), s)
    np.testing.assert_array_equal(y, [[0.5, 0.5], [1.0, 0.0]])
    _, ds = pullback(np.ones_like(s))
    assert _all_finite(ds)
