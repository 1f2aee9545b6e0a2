"""The fast layers ``linear``, ``bias``, ``dense``: derivatives, laws, shapes, dtypes, errors, purity."""

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, chain, vjp
from prelens.core import tree_allclose, tree_shapes
from prelens.nn import DenseParams, bias, dense, gelu, linear, mlp, relu, sigmoid, softmax, tanh
from prelens.nn._linear import init_weight
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds

ACTS = [tanh, relu, sigmoid, gelu, None]


def _params(lens, rng):
    """Parameters from ``init``, with a random (non-zero) bias so that it matters."""
    p = lens.init(rng)
    if isinstance(p, DenseParams):
        return p._replace(bias=rng.standard_normal(p.bias.shape))
    if p.ndim == 1:
        return rng.standard_normal(p.shape)
    return p


@st.composite
def lead_shapes(draw):
    """Leading axes: none (one vector), a batch, or (batch, time)."""
    return tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))


@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(ACTS), lead_shapes(), seeds())
def test_dense_is_a_correct_derivative_and_a_lawful_lens(n_in, n_out, act, lead, seed):
    rng = np.random.default_rng(seed)
    layer = dense(n_in, n_out, act)
    p, x = _params(layer, rng), rng.standard_normal((*lead, n_in))
    check_vjp(layer, p, x, rng=rng)
    check_lens_laws(layer, p, x, rng=rng, vjp=False)


@given(st.integers(1, 4), st.integers(1, 4), lead_shapes(), seeds())
def test_linear_and_bias_are_correct_derivatives_and_lawful(n_in, n_out, lead, seed):
    rng = np.random.default_rng(seed)
    lin, b = linear(n_in, n_out), bias(n_out)
    x = rng.standard_normal((*lead, n_in))
    check_lens_laws(lin, lin.init(rng), x, rng=rng)
    check_lens_laws(b, rng.standard_normal(n_out), rng.standard_normal((*lead, n_out)), rng=rng)


@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(ACTS), lead_shapes(), seeds())
def test_dense_equals_linear_then_bias_then_activation(n_in, n_out, act, lead, seed):
    rng = np.random.default_rng(seed)
    layer = dense(n_in, n_out, act)
    parts = [linear(n_in, n_out), bias(n_out)] + ([act] if act is not None else [])
    composite = chain(*parts)
    residue = (lambda m: [(m[0], m[1]), (), m[2]]) if act is not None else (lambda m: [(m[0], m[1]), ()])
    params = (lambda p: [p.weight, p.bias, ()]) if act is not None else (lambda p: [p.weight, p.bias])
    check_lens_equal(
        "dense = chain(linear, bias, activation)",
        layer,
        composite,
        _params(layer, rng),
        rng.standard_normal((*lead, n_in)),
        p_iso=params,
        m_iso=residue,
        rng=rng,
    )


def test_batch_deltas_are_sums_over_every_leading_axis():
    rng = np.random.default_rng(0)
    layer = dense(3, 2, tanh)
    p, x = _params(layer, rng), rng.standard_normal((4, 5, 3))
    da = rng.standard_normal((4, 5, 2))
    m, _ = layer.fwd(p, x)
    dp, _ = layer.bwd(m, da)
    total = None
    for i in range(4):
        for t in range(5):
            mi, _ = layer.fwd(p, x[i, t])
            dpi, _ = layer.bwd(mi, da[i, t])
            total = dpi if total is None else DenseParams(total.weight + dpi.weight, total.bias + dpi.bias)
    assert tree_allclose(dp, total, rtol=1e-12, atol=1e-14)


def test_reprs_and_parameter_shapes():
    assert repr(dense(784, 256, tanh)) == "dense(784→256, tanh)"
    assert repr(dense(784, 10, None)) == "dense(784→10)"
    assert repr(dense(3, 2, "gelu", dtype=np.float32)) == "dense(3→2, gelu, f32)"
    assert repr(dense(3, 2, input_delta=False)) == "dense(3→2, tanh, input_delta=False)"
    assert repr(linear(784, 256)) == "linear(784→256)"
    assert repr(bias(7)) == "bias(7)"
    assert tree_shapes(dense(784, 256).init(0)) == DenseParams("f64[784,256]", "f64[256]")
    assert tree_shapes(dense(784, 256, dtype=np.float32).init(0)) == DenseParams("f32[784,256]", "f32[256]")


def test_initialisation_follows_the_activation():
    rng = np.random.default_rng(0)
    glorot = dense(400, 100, tanh).init(rng)
    assert np.abs(glorot.weight).max() <= np.sqrt(6 / 500)
    assert np.std(glorot.weight) == pytest.approx(np.sqrt(2 / 500), rel=0.05)  # U(±l) has std l/√3
    he = dense(400, 100, relu).init(rng)
    assert np.std(he.weight) == pytest.approx(np.sqrt(2 / 400), rel=0.05)
    assert np.std(dense(400, 100, relu, init="lecun").init(rng).weight) == pytest.approx(0.05, rel=0.05)
    assert not he.bias.any()
    assert np.array_equal(dense(5, 3).init(7).weight, dense(5, 3).init(7).weight)
    with pytest.raises(StructureError, match="init must be one of"):
        dense(5, 3, init="xavier")
    with pytest.raises(StructureError, match="scheme must be one of"):
        init_weight("orthogonal", 2, 2, np.float64, rng)


def test_float32_end_to_end_never_upcasts():
    rng = np.random.default_rng(0)
    for layer in (dense(6, 4, act, dtype=np.float32) for act in ACTS):
        p = layer.init(rng)
        x = rng.standard_normal((3, 6)).astype(np.float32)
        m, y = layer.fwd(p, x)
        dp, dx = layer.bwd(m, np.ones_like(y))
        assert {a.dtype for a in (y, dp.weight, dp.bias, dx, m[2])} == {np.dtype(np.float32)}, layer
    f32 = np.float32
    _, a = linear(2, 2, dtype=f32).fwd(np.eye(2, dtype=f32), np.ones((1, 2), f32))
    assert a.dtype == f32
    assert bias(2, dtype=f32).bwd((), np.ones((3, 2), f32))[0].dtype == f32


def test_float32_is_float64_rounded():
    rng = np.random.default_rng(0)
    p64 = dense(5, 3).init(1)
    p32 = dense(5, 3, dtype=np.float32).init(1)
    assert np.array_equal(p64.weight.astype(np.float32), p32.weight)
    x = rng.standard_normal((4, 5))
    y64 = dense(5, 3).fwd(p64, x)[1]
    y32 = dense(5, 3, dtype=np.float32).fwd(p32, x.astype(np.float32))[1]
    np.testing.assert_allclose(y32, y64, rtol=1e-5, atol=1e-6)


def test_a_wrong_input_width_is_a_shape_error_naming_lens_expected_and_received():
    layer = dense(784, 256, tanh)
    with pytest.raises(
        ShapeError, match=r"dense\(784→256, tanh\): input: expected f64\[\.\.\.,784\], got f64\[32,100\]"
    ):
        layer.fwd(layer.init(0), np.zeros((32, 100)))
    with pytest.raises(ShapeError, match=r"linear\(3→2\): input: expected f64\[\.\.\.,3\], got f64\[\]"):
        linear(3, 2).fwd(np.zeros((3, 2)), np.zeros(()))
    with pytest.raises(ShapeError, match=r"bias\(3\): input: expected f64\[\.\.\.,3\], got f64\[2,4\]"):
        bias(3).fwd(np.zeros(3), np.zeros((2, 4)))


def test_a_wrong_dtype_or_kind_of_input_is_reported():
    layer = dense(3, 2)
    p = layer.init(0)
    with pytest.raises(DTypeError, match=r"dense\(3→2, tanh\): input: expected f64\[\.\.\.,3\], got f32\[4,3\]"):
        layer.fwd(p, np.zeros((4, 3), np.float32))
    with pytest.raises(DTypeError, match=r"got i64\[4,3\]"):
        layer.fwd(p, np.zeros((4, 3), np.int64))
    with pytest.raises(StructureError, match=r"dense\(3→2, tanh\): input: expected an array f64\[\.\.\.,3\], got list"):
        layer.fwd(p, [[1.0, 2.0, 3.0]])
    with pytest.raises(DTypeError, match=r"dtype: expected a float dtype"):
        dense(3, 2, dtype=np.int32)


def test_wrong_parameters_are_reported():
    layer = dense(3, 2)
    x = np.zeros((4, 3))
    with pytest.raises(
        ShapeError, match=r"dense\(3→2, tanh\): parameters at \.weight: expected f64\[3,2\], got f64\[2,3\]"
    ):
        layer.fwd(DenseParams(np.zeros((2, 3)), np.zeros(2)), x)
    with pytest.raises(ShapeError, match=r"parameters at \.bias: expected f64\[2\], got f64\[3\]"):
        layer.fwd(DenseParams(np.zeros((3, 2)), np.zeros(3)), x)
    with pytest.raises(DTypeError, match=r"parameters at \.weight: expected f64\[3,2\], got f32\[3,2\]"):
        layer.fwd(DenseParams(np.zeros((3, 2), np.float32), np.zeros(2)), x)
    with pytest.raises(
        StructureError, match=r"parameters: expected DenseParams\(weight=f64\[3,2\], bias=f64\[2\]\), got f64\[3,2\]"
    ):
        layer.fwd(np.zeros((3, 2)), x)
    with pytest.raises(ShapeError, match=r"linear\(3→2\): parameters: expected f64\[3,2\], got f64\[3,3\]"):
        linear(3, 2).fwd(np.zeros((3, 3)), x)


def test_wrong_output_deltas_are_reported():
    layer = dense(3, 2)
    m, _ = layer.fwd(layer.init(0), np.zeros((4, 3)))
    with pytest.raises(ShapeError, match=r"output delta: expected f64\[4,2\], got f64\[4,3\]"):
        layer.bwd(m, np.zeros((4, 3)))
    with pytest.raises(DTypeError, match=r"output delta: expected f64\[4,2\], got f32\[4,2\]"):
        layer.bwd(m, np.zeros((4, 2), np.float32))
    m, _ = linear(3, 2).fwd(np.zeros((3, 2)), np.zeros((4, 3)))
    with pytest.raises(ShapeError, match=r"linear\(3→2\): output delta: expected f64\[4,2\], got f64\[5,2\]"):
        linear(3, 2).bwd(m, np.zeros((5, 2)))


def test_bad_constructor_arguments():
    with pytest.raises(StructureError, match=r"dense: n_in must be a positive int, got 0"):
        dense(0, 3)
    with pytest.raises(StructureError, match=r"activation must be one of .* got 'swish'"):
        dense(2, 3, "swish")
    with pytest.raises(StructureError, match="softmax is not pointwise"):
        dense(2, 3, softmax)
    with pytest.raises(StructureError, match="softmax is not pointwise"):  # by name, as a PyTorch user would
        mlp(2, [3], "relu", last_activation="softmax")


@pytest.mark.parametrize("act", ACTS)
def test_passes_mutate_nothing_and_results_are_never_overwritten(act):
    rng = np.random.default_rng(0)
    layer = dense(4, 3, act)
    p, x = _params(layer, rng), rng.standard_normal((5, 4))
    p0, x0 = copy.deepcopy(p), x.copy()
    y, pullback = vjp(layer, p, x)
    m = layer.fwd(p, x)[0]
    m0 = copy.deepcopy(m)
    da = rng.standard_normal(y.shape)
    da0 = da.copy()
    grads = pullback(da)
    kept = copy.deepcopy((y, grads))
    layer.bwd(m, da)
    # a second step on other data must not touch what the first one returned
    _, pullback2 = vjp(layer, p, -2 * x)
    pullback2(3 * da)
    assert tree_allclose((p, x, m, da), (p0, x0, m0, da0), rtol=0, atol=0)
    assert tree_allclose((y, grads), kept, rtol=0, atol=0)


def test_input_delta_false_skips_only_the_input_delta():
    rng = np.random.default_rng(0)
    full, data = dense(4, 3), dense(4, 3, input_delta=False)
    p, x = _params(full, rng), rng.standard_normal((5, 4))
    da = rng.standard_normal((5, 3))
    dp_full, dx = full.bwd(full.fwd(p, x)[0], da)
    dp_data, none = data.bwd(data.fwd(p, x)[0], da)
    assert none is None and dx.shape == x.shape
    assert tree_allclose(dp_full, dp_data, rtol=0, atol=0)
    dw, none = linear(4, 3, input_delta=False).bwd((x, p.weight), da)
    assert none is None and np.allclose(dw, x.T @ da)
