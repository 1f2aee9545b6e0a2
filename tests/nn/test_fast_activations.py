"""Activations: values against the textbook formulas, derivatives, laws, dtypes, extreme inputs."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, batch_n, chain, from_tamb, vec_lens
from prelens.faithful import activ_t
from prelens.nn import ACTIVATIONS, Activation, bias, dense, gelu, linear, pointwise, relu, sigmoid, softmax, tanh
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds

POINTWISE = [tanh, relu, sigmoid, gelu]

REFERENCE = {
    "tanh": math.tanh,
    "relu": lambda z: max(z, 0.0),
    "sigmoid": lambda z: 1 / (1 + math.exp(-z)),
    "gelu": lambda z: 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3))),
}


@st.composite
def shapes(draw):
    return tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))


@given(st.sampled_from([*POINTWISE, softmax]), shapes(), seeds())
def test_activations_are_correct_derivatives_and_lawful(act, shape, seed):
    rng = np.random.default_rng(seed)
    s = 2 * rng.standard_normal(shape)
    check_lens_laws(act, (), s, rng=rng)


@pytest.mark.parametrize("act", POINTWISE, ids=repr)
def test_values_match_the_scalar_formulas(act):
    z = np.linspace(-5, 5, 41)
    expected = np.array([REFERENCE[act.name](v) for v in z])
    np.testing.assert_allclose(act.fwd((), z)[1], expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("act", POINTWISE, ids=repr)
def test_apply_and_grad_are_the_lens_passes(act):
    rng = np.random.default_rng(0)
    z, da = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    m, y = act.fwd((), z)
    assert m is not z and np.array_equal(m, z)  # the input, as in the post's activL (a copy: never an alias)
    np.testing.assert_array_equal(act.apply(z), y)
    np.testing.assert_array_equal(act.grad(z, da), act.bwd(m, da)[1])
    check_vjp(act, (), z, rng=1)


def test_pointwise_activations_are_the_blog_activation_on_every_entry():
    """``tanh`` on a batch of vectors equals ``batch_n(vec_lens(activ_t))`` (the blog's activation)."""
    rng = np.random.default_rng(0)
    s = rng.standard_normal((3, 4))
    faithful = batch_n(3, vec_lens(4, from_tamb(activ_t)))
    check_lens_equal(
        "tanh = batch_n(vec_lens(activ_t))",
        tanh,
        faithful,
        (),
        s,
        p_iso=lambda p: [()] * 4,
        m_iso=lambda m: [list(row) for row in m],
        s_iso=lambda x: [list(row) for row in x],
        a_iso=lambda x: [list(row) for row in x],
    )


@pytest.mark.parametrize("act", [*POINTWISE, softmax], ids=repr)
def test_float32_stays_float32(act):
    s = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    m, y = act.fwd((), s)
    _, ds = act.bwd(m, np.ones_like(y))
    assert y.dtype == ds.dtype == np.float32


def test_extreme_inputs_stay_finite_without_warnings():
    big = np.array([[-1e4, 0.0, 1e4], [800.0, -800.0, 0.0]])
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is fine
        for act in (sigmoid, tanh, softmax):
            m, y = act.fwd((), big)
            _, ds = act.bwd(m, np.ones_like(y))
            assert np.isfinite(y).all() and np.isfinite(ds).all(), act
    np.testing.assert_allclose(sigmoid.fwd((), big)[1][0], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(softmax.fwd((), big)[1][0], [0.0, 0.0, 1.0])


@pytest.mark.parametrize("dtype, big", [(np.float32, 1e14), (np.float64, 1e104)])
def test_gelu_gradient_of_huge_inputs_is_its_limit_not_nan(dtype, big):
    """Far out gelu'(z) is 1 (or 0): ``(1 − t²) z`` is formed first (zero), then scaled, so ``z³`` never overflows
    into ``0 · inf`` (PyTorch's tanh form gives the same limits)."""
    z = np.array([-big, -10.0, 0.0, 10.0, big], dtype)
    with np.errstate(over="ignore", invalid="raise"):  # z³ may overflow to inf (tanh(inf) = 1), never to 0 · inf
        m, y = gelu.fwd((), z)
        _, ds = gelu.bwd(m, np.ones_like(y))
    np.testing.assert_allclose(ds[[0, -1]], [0.0, 1.0])
    assert ds.dtype == dtype and np.isfinite(y).all()


def test_softmax_rows_are_distributions():
    rng = np.random.default_rng(0)
    y = softmax.fwd((), rng.standard_normal((2, 3, 5)))[1]
    assert (y > 0).all()
    np.testing.assert_allclose(y.sum(axis=-1), 1.0)
    ds = softmax.bwd(y, np.ones_like(y))[1]
    np.testing.assert_allclose(ds, 0.0, atol=1e-15)  # a constant shift of the logits changes nothing


def test_relu_derivative_at_zero_is_zero():
    assert relu.bwd(np.array([0.0, 1.0]), np.array([1.0, 1.0]))[1].tolist() == [0.0, 1.0]


def test_bad_inputs_are_reported_with_the_lens_name():
    with pytest.raises(DTypeError, match=r"tanh: input: expected a float array, got i64\[3\]"):
        tanh.fwd((), np.arange(3))
    with pytest.raises(StructureError, match=r"gelu: input: expected a float array, got list of 2"):
        gelu.fwd((), [1.0, 2.0])
    with pytest.raises(DTypeError, match=r"softmax: input"):
        softmax.fwd((), np.arange(3))


def test_registry_and_reprs():
    assert ACTIVATIONS == {"tanh": tanh, "relu": relu, "sigmoid": sigmoid, "gelu": gelu}
    assert [repr(a) for a in POINTWISE] == ["tanh", "relu", "sigmoid", "gelu"]
    assert all(isinstance(a, Activation) for a in POINTWISE) and not isinstance(softmax, Activation)
    assert {a.name: a.init_scheme for a in POINTWISE} == {
        "tanh": "glorot",
        "relu": "he",
        "sigmoid": "glorot",
        "gelu": "he",
    }


def test_a_user_made_pointwise_activation_is_fused_by_dense():
    softplus = pointwise("softplus", lambda z: np.logaddexp(z, 0), lambda z, da: da / (1 + np.exp(-z)))
    rng = np.random.default_rng(0)
    check_vjp(softplus, (), rng.standard_normal((3, 2)))
    layer = dense(2, 3, softplus)
    p = layer.init(rng)
    check_lens_equal(
        "dense(softplus) = chain(linear, bias, softplus)",
        layer,
        chain(linear(2, 3), bias(3), softplus),
        p,
        rng.standard_normal((4, 2)),
        p_iso=lambda q: [q.weight, q.bias, ()],
        m_iso=lambda m: [(m[0], m[1]), (), m[2]],
    )
    assert layer.init_fn is not None and repr(layer) == "dense(2→3, softplus)"


def test_a_user_activation_answering_in_another_dtype_or_shape_is_refused_naming_it():
    """``np.where(z > 0, 1.0, 0.01)`` is float64: a float32 dense layer's deltas silently became float64 (and its
    parameters too, after an optimiser step); a float64 ``apply`` was blamed on the caller's output delta."""
    from prelens.nn import mlp

    leaky = pointwise("leaky", lambda z: np.where(z > 0, z, 0.01 * z), lambda z, da: da * np.where(z > 0, 1.0, 0.01))
    x = np.full((5, 3), -0.5, np.float32)
    layer = dense(3, 4, leaky, dtype=np.float32)
    m, y = layer.fwd(layer.init(0), x)
    with pytest.raises(
        DTypeError, match=r"^leaky: the result of grad: expected f32\[5,4\], like its argument, got f64"
    ):
        layer.bwd(m, np.ones_like(y))
    with pytest.raises(
        DTypeError, match=r"^leaky: the result of grad: expected f32\[5,3\], like its argument, got f64"
    ):
        leaky.bwd(leaky.fwd((), x)[0], np.ones_like(x))
    wide = pointwise("wide", lambda z: z.astype(np.float64), lambda z, da: da)
    with pytest.raises(DTypeError, match=r"wide: the result of apply: expected f32\[5,4\], like its argument, got f64"):
        mlp(3, [4, 2], wide, dtype=np.float32).fwd(mlp(3, [4, 2], wide, dtype=np.float32).init(0), x)
    summed = pointwise("summed", lambda z: z.sum(axis=-1), lambda z, da: da)
    with pytest.raises(
        ShapeError, match=r"summed: the result of apply: expected f64\[2,3\], like its argument, got f64\[2\]"
    ):
        summed.fwd((), np.ones((2, 3)))
