"""The fast MLP: a chain of dense layers; structure, activations, dtypes, derivatives, training."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import ShapeError, StructureError, chain, vjp
from prelens.core import tree_shapes
from prelens.learn import sgd
from prelens.nn import DenseParams, dense, mlp, mse, relu, softmax_cross_entropy, squared_distance, tanh
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds


@given(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(1, 3), seeds())
def test_mlp_is_a_correct_derivative_and_lawful(n_in, sizes, batch, seed):
    rng = np.random.default_rng(seed)
    net = mlp(n_in, sizes)
    p, x = net.init(rng), rng.standard_normal((batch, n_in))
    check_vjp(net, p, x, rng=rng)
    check_lens_laws(net, p, x, rng=rng, vjp=False)


def test_mlp_is_the_chain_of_its_dense_layers():
    net = mlp(4, [8, 8, 3], relu, last_activation=None)
    layers = chain(dense(4, 8, relu), dense(8, 8, relu), dense(8, 3, None))
    rng = np.random.default_rng(0)
    check_lens_equal("mlp = chain(dense, ...)", net, layers, net.init(rng), rng.standard_normal((5, 4)))
    assert net.op == "chain" and [repr(part) for part in net.parts] == [
        "dense(4→8, relu)",
        "dense(8→8, relu)",
        "dense(8→3)",
    ]


def test_default_is_the_post_network_tanh_everywhere():
    net = mlp(784, [256, 128, 10])
    assert repr(net) == "mlp(784→256→128→10, tanh)"
    assert [repr(part) for part in net.parts] == [
        "dense(784→256, tanh)",
        "dense(256→128, tanh)",
        "dense(128→10, tanh)",
    ]
    assert repr(mlp(4, [3], "relu", last_activation="tanh")) == "mlp(4→3, relu, last=tanh)"
    assert repr(mlp(4, [3], dtype=np.float32, input_delta=False)) == "mlp(4→3, tanh, f32, input_delta=False)"


def test_parameters_are_a_list_in_data_flow_order_drawn_in_that_order():
    net = mlp(784, [256, 128, 10])
    params = net.init(0)
    assert tree_shapes(params) == [
        DenseParams("f64[784,256]", "f64[256]"),
        DenseParams("f64[256,128]", "f64[128]"),
        DenseParams("f64[128,10]", "f64[10]"),
    ]
    rng = np.random.default_rng(0)
    first = dense(784, 256).init(rng)
    assert np.array_equal(params[0].weight, first.weight)


def test_float32_end_to_end():
    net = mlp(4, [8, 3], dtype=np.float32)
    p = net.init(0)
    x = np.ones((16, 4), np.float32)
    y, pullback = vjp(net >> squared_distance, (np.zeros((16, 3), np.float32), p), x)
    (_, dp), dx = pullback(1.0)
    assert y.dtype == np.float32
    assert {a.dtype for d in dp for a in d} == {np.dtype(np.float32)} and dx.dtype == np.float32


def test_input_delta_false_only_affects_the_first_layer():
    rng = np.random.default_rng(0)
    full, data = mlp(3, [4, 2]), mlp(3, [4, 2], input_delta=False)
    p, x = full.init(rng), rng.standard_normal((5, 3))
    da = rng.standard_normal((5, 2))
    dp_full, dx = full.bwd(full.fwd(p, x)[0], da)
    dp_data, none = data.bwd(data.fwd(p, x)[0], da)
    assert dx.shape == (5, 3) and none is None
    assert all(np.array_equal(a.weight, b.weight) for a, b in zip(dp_full, dp_data))
    assert [repr(part) for part in data.parts] == ["dense(3→4, tanh, input_delta=False)", "dense(4→2, tanh)"]


def test_bad_arguments_and_inputs():
    with pytest.raises(StructureError, match=r"mlp: sizes must be a non-empty list"):
        mlp(3, [])
    with pytest.raises(StructureError, match=r"mlp: sizes\[1\] must be a positive int, got 0"):
        mlp(3, [4, 0])
    net = mlp(784, [256, 10])
    with pytest.raises(
        ShapeError, match=r"dense\(784→256, tanh\): input: expected f64\[\.\.\.,784\], got f64\[2,100\]"
    ):
        net.fwd(net.init(0), np.zeros((2, 100)))


@pytest.mark.parametrize(
    ("loss", "last"), [(squared_distance, "same"), (mse, "same"), (softmax_cross_entropy, None)], ids=repr
)
def test_a_few_sgd_steps_reduce_the_loss(loss, last):
    """The fast level trains: a small separable problem, plain SGD from prelens.optim."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2))
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int64)
    target = labels if loss is softmax_cross_entropy else np.eye(2)[labels] * 1.6 - 0.8
    net = mlp(2, [16, 2], tanh, last_activation=last, input_delta=False)
    step = net >> loss
    params = net.init(rng)
    opt = sgd(0.5 if loss is not squared_distance else 0.01)
    state = opt.init(params)
    first = None
    for _ in range(200):
        value, pullback = vjp(step, (target, params), x)
        first = value if first is None else first
        (_, grads), _ = pullback(1.0)
        params, state = opt.update(grads, state, params)
    assert value < 0.5 * first
