"""max_pool, avg_pool, flatten: derivatives (central differences), the lens laws, the twin law, and errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, chain, vjp
from prelens.errors import ArgumentError
from prelens.nn import avg_pool, composed, dense, flatten, max_pool
from prelens.testing import check_lens_laws, check_vjp, seeds


def _distinct(shape, rng):  # type: ignore[no-untyped-def]
    """Values far apart from each other (max pooling is differentiable away from ties)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n)).reshape(shape)


@pytest.mark.parametrize(
    "lens, shape",
    [
        (max_pool(2), (8, 40, 25)),
        (max_pool(3, stride=2, padding=1), (8, 40, 25)),
        (avg_pool(3, stride=2, padding=1), (8, 40, 25)),
        (avg_pool(4, stride=1, padding=2), (8, 40, 6)),
        (max_pool((2, 3), stride=(1, 2), padding=(1, 1)), (4, 9, 10, 5)),
        (avg_pool((3, 3), stride=2, padding=1), (4, 9, 10, 5)),
        (flatten(), (8, 40, 25)),
        (flatten(), (4, 3, 5, 2)),
    ],
    ids=repr,
)
def test_pool_backward_is_the_derivative(lens, shape):  # type: ignore[no-untyped-def]
    check_vjp(lens, (), _distinct(shape, np.random.default_rng(1)))


@pytest.mark.parametrize(
    "lens, shape",
    [
        (max_pool(3, stride=2, padding=1), (2, 9, 3)),
        (avg_pool(2), (2, 8, 3)),
        (max_pool((2, 2)), (2, 4, 6, 3)),
        (avg_pool((2, 3), padding=(1, 1)), (2, 4, 6, 3)),
        (flatten(), (2, 4, 3)),
        (composed.max_pool(3, stride=2, padding=1), (2, 9, 3)),
        (composed.avg_pool((2, 3), padding=(1, 1)), (2, 4, 6, 3)),
    ],
    ids=repr,
)
def test_pool_lens_laws(lens, shape):  # type: ignore[no-untyped-def]
    check_lens_laws(lens, (), _distinct(shape, np.random.default_rng(2)))


def test_max_pool_sends_a_tie_to_the_first_maximum_as_pytorch():
    x = np.array([[[1.0], [3.0], [3.0], [0.0], [2.0], [2.0]]])
    y, pullback = vjp(max_pool(2, stride=1), (), x)
    assert y[0, :, 0].tolist() == [3.0, 3.0, 3.0, 2.0, 2.0]
    _, dx = pullback(np.ones_like(y))
    assert dx[0, :, 0].tolist() == [0.0, 2.0, 1.0, 0.0, 2.0, 0.0]


def test_avg_pool_counts_the_padding_as_zeros():
    y = avg_pool(3, stride=3, padding=1).fwd((), np.full((1, 4, 1), 3.0))[1]
    assert y[0, :, 0].tolist() == [2.0, 2.0]


def test_stride_defaults_to_the_kernel():
    assert max_pool(3).fwd((), np.zeros((1, 10, 2)))[1].shape == (1, 3, 2)
    assert avg_pool((2, 3)).fwd((), np.zeros((1, 5, 9, 2)))[1].shape == (1, 2, 3, 2)
    assert (
        repr(max_pool(3, stride=3)) == "max_pool(kernel=3)"
        and repr(max_pool(3, stride=1)) == "max_pool(kernel=3, stride=1)"
    )


def _assert_same(fast, twin, x, rng):  # type: ignore[no-untyped-def]
    y_fast, pull_fast = vjp(fast, (), x)
    y_twin, pull_twin = vjp(twin, (), x)
    np.testing.assert_allclose(y_twin, y_fast, rtol=1e-13, atol=0)
    dy = rng.standard_normal(y_fast.shape)
    (dp_fast, dx_fast), (dp_twin, dx_twin) = pull_fast(dy), pull_twin(dy)
    assert dp_fast == dp_twin == ()
    np.testing.assert_allclose(dx_twin, dx_fast, rtol=1e-12, atol=1e-13)


@settings(max_examples=50, deadline=None)
@given(
    kind=st.sampled_from(["max", "avg"]),
    two_d=st.booleans(),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.one_of(st.none(), st.tuples(st.integers(1, 3), st.integers(1, 3))),
    pad=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    channels=st.integers(1, 3),
    ties=st.booleans(),
    seed=seeds(),
)
def test_pools_equal_their_twins(kind, two_d, kernel, stride, pad, size, channels, ties, seed):  # type: ignore[no-untyped-def]
    dims = 2 if two_d else 1
    k, p, n = kernel[:dims], tuple(min(a, b // 2) for a, b in zip(pad[:dims], kernel)), size[:dims]
    for m, kk, pp in zip(n, k, p):
        assume(m + 2 * pp >= kk)
    s = None if stride is None else stride[:dims]
    arg = (lambda t: t) if two_d else (lambda t: None if t is None else t[0])
    fast = (max_pool if kind == "max" else avg_pool)(arg(k), stride=arg(s), padding=arg(p))
    twin = getattr(composed, f"{kind}_pool")(arg(k), stride=arg(s), padding=arg(p))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, *n, channels))
    if ties:
        x = np.round(x)
    _assert_same(fast, twin, x, rng)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: max_pool(0), r"^max_pool: kernel"),
        (lambda: max_pool(2, stride=0), r"^max_pool: stride"),
        (
            lambda: max_pool(2, padding=2),
            r"^max_pool: padding must be at most half the kernel 2 \(as PyTorch\), got 2$",
        ),
        (lambda: avg_pool((2, 2), padding=(1, 2)), r"^avg_pool: padding must be at most half"),
        (lambda: avg_pool((2, 2, 2)), r"^avg_pool: kernel must be an int >= 1 or a pair"),
        (lambda: max_pool(2.0), r"^max_pool: kernel"),
    ],
)
def test_bad_arguments_are_refused_at_construction(make, match):  # type: ignore[no-untyped-def]
    with pytest.raises((ArgumentError, StructureError), match=match):
        make()


def test_a_kernel_larger_than_the_padded_input_is_refused_at_call_time():
    with pytest.raises(
        ShapeError, match=r"^max_pool\(kernel=5\): input: expected spatial sizes of at least 5 .*got f64\[2,3,4\]"
    ):
        max_pool(5).fwd((), np.zeros((2, 3, 4)))
    with pytest.raises(
        ShapeError, match=r"^avg_pool\(kernel=\(2, 2\)\): input: expected float\[N,H,W,C\], got f64\[3,4\]"
    ):
        avg_pool((2, 2)).fwd((), np.zeros((3, 4)))
    with pytest.raises(ShapeError, match=r"^flatten: input: expected float\[\.\.\.,\*,\*\], got f64\[3\]"):
        flatten().fwd((), np.zeros(3))


@pytest.mark.parametrize(
    "lens, shape",
    [(max_pool(2), (4, 6, 3)), (avg_pool((2, 2)), (2, 4, 4, 3)), (flatten(), (4, 6, 3))],
    ids=repr,
)
def test_a_float32_pool_refuses_a_float64_delta_and_passes_none_through(lens, shape):  # type: ignore[no-untyped-def]
    """The delta keeps the input's dtype (a float32 model never computes its gradient in float64), and no delta
    (``None``, from a next layer with ``input_delta=False`` fed by this one) passes through, as data."""
    x = np.ones(shape, np.float32)
    y, pullback = vjp(lens, (), x)
    assert pullback(np.ones_like(y))[1].dtype == np.float32
    with pytest.raises(DTypeError, match=rf"^{re.escape(lens.name)}: output delta: expected f32\[.*\], got f64\["):
        lens.bwd(lens.fwd((), x)[0], np.ones(y.shape))
    assert lens.bwd(lens.fwd((), x)[0], None) == ((), None)
    net = chain(lens, flatten(), dense(int(np.prod(y.shape[1:])), 2, dtype=np.float32, input_delta=False))
    out, pullback = vjp(net, net.init(0), x)
    assert pullback(np.ones_like(out))[1] is None  # e.g. images flattened into a first layer without input delta
