"""conv1d and conv2d: derivatives (central differences), the lens laws, the twin law, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, vjp
from prelens.errors import ArgumentError
from prelens.nn import ConvParams, composed, conv1d, conv2d, max_pool
from prelens.testing import check_lens_laws, check_no_alias, check_pure, check_vjp, seeds

RNG = np.random.default_rng(0)


def _params(lens, rng):  # type: ignore[no-untyped-def]
    """Random parameters with a non-zero bias (the default draw is PyTorch's, already non-zero)."""
    return lens.init(rng)


# ------------------------------------------------------------------ derivatives


@pytest.mark.parametrize(
    "lens, shape",
    [
        (conv1d(25, 25, 3, stride=2, padding=1), (8, 40, 25)),  # the MNIST-1D CNN's middle layer, batch 8
        (conv1d(1, 25, 5, stride=2, padding=1), (8, 40, 1)),
        (conv1d(6, 9, 4, stride=3, padding=2, dilation=2, groups=3), (8, 40, 6)),
        (conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2), (4, 12, 10, 4)),
        (conv2d(3, 5, 3, padding=1), (4, 9, 8, 3)),
    ],
    ids=repr,
)
def test_conv_backward_is_the_derivative(lens, shape):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    check_vjp(lens, _params(lens, rng), rng.standard_normal(shape))


@pytest.mark.parametrize(
    "lens, shape",
    [
        (conv1d(3, 4, 3, stride=2, padding=1), (2, 9, 3)),
        (conv1d(4, 6, 2, dilation=2, groups=2), (2, 7, 4)),
        (conv2d(2, 3, (2, 3), stride=2, padding=(1, 0)), (2, 5, 6, 2)),
    ],
    ids=repr,
)
def test_conv_lens_laws(lens, shape):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    p, x = _params(lens, rng), rng.standard_normal(shape)
    check_lens_laws(lens, p, x)
    check_no_alias(lens, p, x)
    check_pure(lens, p, x)


def test_conv_twins_pass_the_laws_too():
    rng = np.random.default_rng(3)
    twin = composed.conv1d(4, 6, 3, stride=2, padding=1, groups=2)
    p, x = twin.init(rng), rng.standard_normal((2, 9, 4))
    assert type(p) is ConvParams
    check_lens_laws(twin, p, x)
    check_vjp(composed.conv2d(2, 3, 2, padding=1), composed.conv2d(2, 3, 2).init(0), rng.standard_normal((2, 4, 5, 2)))


# ------------------------------------------------------------------ the twin law


def _assert_same(fast, twin, p, x, rng):  # type: ignore[no-untyped-def]
    y_fast, pull_fast = vjp(fast, p, x)
    y_twin, pull_twin = vjp(twin, p, x)
    np.testing.assert_allclose(y_twin, y_fast, rtol=1e-12, atol=1e-12)
    dy = rng.standard_normal(y_fast.shape)
    (dp_fast, dx_fast), (dp_twin, dx_twin) = pull_fast(dy), pull_twin(dy)
    assert type(dp_fast) is type(dp_twin) is ConvParams
    for a, b in zip((*dp_fast, dx_fast), (*dp_twin, dx_twin)):
        np.testing.assert_allclose(b, a, rtol=1e-11, atol=1e-11)


@settings(max_examples=40, deadline=None)
@given(
    groups=st.integers(1, 3),
    per_group_in=st.integers(1, 3),
    per_group_out=st.integers(1, 3),
    kernel=st.integers(1, 5),
    stride=st.integers(1, 3),
    padding=st.integers(0, 3),
    dilation=st.integers(1, 3),
    length=st.integers(1, 20),
    batch=st.integers(1, 3),
    seed=seeds(),
)
def test_conv1d_equals_its_twin(
    groups, per_group_in, per_group_out, kernel, stride, padding, dilation, length, batch, seed
):  # type: ignore[no-untyped-def]
    assume(length + 2 * padding >= dilation * (kernel - 1) + 1)
    c_in, c_out = groups * per_group_in, groups * per_group_out
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    fast, twin = conv1d(c_in, c_out, kernel, **kw), composed.conv1d(c_in, c_out, kernel, **kw)
    rng = np.random.default_rng(seed)
    _assert_same(fast, twin, fast.init(rng), rng.standard_normal((batch, length, c_in)), rng)


@settings(max_examples=25, deadline=None)
@given(
    groups=st.integers(1, 2),
    per_group=st.integers(1, 2),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 3)),
    padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    size=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    seed=seeds(),
)
def test_conv2d_equals_its_twin(groups, per_group, kernel, stride, padding, dilation, size, seed):  # type: ignore[no-untyped-def]
    for n, k, p, d in zip(size, kernel, padding, dilation):
        assume(n + 2 * p >= d * (k - 1) + 1)
    c_in, c_out = groups * per_group, groups * (per_group + 1)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    fast, twin = conv2d(c_in, c_out, kernel, **kw), composed.conv2d(c_in, c_out, kernel, **kw)
    rng = np.random.default_rng(seed)
    _assert_same(fast, twin, fast.init(rng), rng.standard_normal((2, *size, c_in)), rng)


# ------------------------------------------------------------------ shapes, dtypes, initialisation


def test_output_sizes_are_pytorchs():
    lens = conv1d(1, 25, 5, stride=2, padding=1)
    assert lens.fwd(lens.init(0), np.zeros((3, 40, 1)))[1].shape == (3, 19, 25)
    lens = conv2d(2, 3, (3, 5), stride=(2, 3), padding=(1, 2), dilation=(2, 1))
    # H: (11 + 2 - 2·2 - 1) // 2 + 1 = 5; W: (10 + 4 - 4 - 1) // 3 + 1 = 4
    assert lens.fwd(lens.init(0), np.zeros((1, 11, 10, 2)))[1].shape == (1, 5, 4, 3)


def test_float32_stays_float32_and_init_schemes():
    lens = conv1d(3, 4, 3, dtype=np.float32)
    p = lens.init(0)
    assert p.weight.dtype == p.bias.dtype == np.float32 and p.weight.shape == (3, 3, 4)
    _, y = lens.fwd(p, np.ones((2, 5, 3), np.float32))
    assert y.dtype == np.float32
    bound = 1 / np.sqrt(9)
    assert np.abs(p.weight).max() <= bound and np.abs(p.bias).max() <= bound and p.bias.any()
    he = conv2d(4, 6, 3, groups=2, init="he").init(0)
    assert he.weight.shape == (3, 3, 2, 6) and not he.bias.any()


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: conv1d(6, 4, 3, groups=4), r"^conv1d: groups must be a divisor of c_in=6 and of c_out=4, got 4$"),
        (lambda: conv1d(4, 6, 3, groups=4), r"^conv1d: groups must be a divisor"),
        (lambda: conv1d(0, 4, 3), r"^conv1d: c_in"),
        (lambda: conv1d(2, 4, 0), r"^conv1d: kernel"),
        (lambda: conv1d(2, 4, 3, stride=0), r"^conv1d: stride"),
        (lambda: conv1d(2, 4, 3, padding=-1), r"^conv1d: padding"),
        (lambda: conv1d(2, 4, 3, dilation=0), r"^conv1d: dilation"),
        (lambda: conv1d(2, 4, (3, 3)), r"^conv1d: kernel"),
        (lambda: conv2d(2, 4, (3, 3, 3)), r"^conv2d: kernel must be an int >= 1 or a pair of them"),
        (lambda: conv2d(2, 4, 3, stride=(1, 0)), r"^conv2d: stride\[1\]"),
        (lambda: conv1d(2, 4, 3, init="xavier"), r"^conv1d: init"),
        (lambda: conv1d(2, 4, 3, dtype=np.int32), r"^conv1d: dtype"),
    ],
)
def test_bad_arguments_are_refused_at_construction(make, match):  # type: ignore[no-untyped-def]
    with pytest.raises((ArgumentError, StructureError, DTypeError), match=match):
        make()


def test_a_kernel_larger_than_the_padded_input_is_refused_at_call_time():
    lens = conv1d(2, 3, 5, padding=1, dilation=2)
    with pytest.raises(ShapeError, match=r"^conv1d\(2→3, kernel=5, padding=1, dilation=2\): input: expected "
                       r"spatial sizes of at least 9 after padding 1 .*got .*\[4,6,2\]"):  # fmt: skip
        lens.fwd(lens.init(0), np.zeros((4, 6, 2)))
    lens2 = conv2d(1, 1, (2, 4))
    with pytest.raises(ShapeError, match=r"conv2d.*at least \(2, 4\)"):
        lens2.fwd(lens2.init(0), np.zeros((1, 5, 3, 1)))


@pytest.mark.parametrize(
    "x, p, cls, match",
    [
        (np.zeros((2, 9, 4)), None, ShapeError, r"^conv1d\(3→4, kernel=3\): input: expected f64\[N,L,3\], got f64\[2,9,4\]"),
        (np.zeros((9, 3)), None, ShapeError, r"input: expected f64\[N,L,3\], got f64\[9,3\]"),
        (np.zeros((2, 9, 3), np.float32), None, DTypeError, r"input: expected f64\[N,L,3\], got f32"),
        (np.zeros((2, 9, 3)), (np.zeros((3, 3, 4)),), StructureError, r"parameters: expected ConvParams"),
        (np.zeros((2, 9, 3)), ConvParams(np.zeros((3, 4, 3)), np.zeros(4)), ShapeError, r"parameters at \.weight: expected f64\[3,3,4\]"),
    ],
)  # fmt: skip
def test_misfits_are_named_by_the_declaration(x, p, cls, match):  # type: ignore[no-untyped-def]
    lens = conv1d(3, 4, 3)
    with pytest.raises(cls, match=match):
        lens.fwd(lens.init(0) if p is None else p, x)


@pytest.mark.parametrize(
    "lens, shape, match",
    [
        (composed.patches((2, 2)), (2, 5, 5, 1, 1), r"^patches\(kernel=\(2, 2\)\): input: expected float\[N,H,W,C\], got f64\[2,5,5,1,1\]"),
        (composed.patches(2), (2, 5, 1, 1), r"^patches\(kernel=2\): input: expected float\[N,L,C\], got f64\[2,5,1,1\]"),
        (composed.patches((2, 2)), (3, 4), r"^patches\(kernel=\(2, 2\)\): input: expected float\[N,H,W,C\], got f64\[3,4\]"),
        (composed.window_max(), (3,), r"^window_max: input: expected float\[\.\.\.,\*,\*\], got f64\[3\]"),
        (composed.window_mean(), (3,), r"^window_mean: input: expected float\[\.\.\.,\*,\*\], got f64\[3\]"),
    ],
)  # fmt: skip
def test_the_twins_pieces_refuse_an_input_of_the_wrong_rank(lens, shape, match):  # type: ignore[no-untyped-def]
    """An input with an axis too many was read as one of the right rank (a wrong result, no error)."""
    with pytest.raises(ShapeError, match=match):
        lens.fwd((), np.zeros(shape))


@pytest.mark.parametrize(
    "lens, x, match",
    [
        (conv2d(1, 8, 3), np.zeros((4, 1, 28, 28)), r"^conv2d\(1→8, kernel=\(3, 3\)\): input: expected f64\[N,H,W,1\], got f64\[4,1,28,28\]"),
        (conv1d(1, 8, 3), np.zeros((4, 1, 100)), r"^conv1d\(1→8, kernel=3\): input: expected f64\[N,L,1\], got f64\[4,1,100\]"),
        (max_pool((2, 2)), np.zeros((4, 28, 28)), r"^max_pool\(kernel=\(2, 2\)\): input: expected float\[N,H,W,C\], got f64\[4,28,28\]"),
        (composed.patches(2), np.zeros((2, 5, 1, 1)), r"^patches\(kernel=2\): input: expected float\[N,L,C\], got f64\[2,5,1,1\]"),
    ],
)  # fmt: skip
def test_a_channels_first_input_is_told_the_layout(lens, x, match):  # type: ignore[no-untyped-def]
    """A PyTorch user's (N, C, H, W) batch: the error shows the layout, channels last, not ``[*,*,*,1]``."""
    with pytest.raises(ShapeError, match=match):
        lens.fwd(lens.init(0) if lens.init_fn else (), x)
