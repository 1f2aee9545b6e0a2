"""The trace step and the training loop on the post's data (micrograd's toy set)."""

import numpy as np
import pytest

from prelens import NonFiniteError, PreLens, ShapeError, StructureError, vjp
from prelens.core import tree_leaves
from prelens.datasets import TOY_XS, TOY_YS
from prelens.faithful import init_mlp, make_mlp, predict_faithful, train_faithful, train_step
from prelens.faithful._network import make_mlp_l
from prelens.faithful._train import batch_loss_l

SIZES = [4, 4, 1]
SEED = 0  # numpy.random.default_rng(0), LeCun-normal weights, zero biases (init_mlp)


def fresh(seed=SEED):
    return make_mlp(3, SIZES), init_mlp(3, SIZES, np.random.default_rng(seed))


def test_the_toy_set_is_micrographs():
    assert TOY_XS.tolist() == [[2, 3, -1], [3, -1, 0.5], [0.5, 1, 1], [1, 1, -1]]
    assert TOY_YS.ravel().tolist() == [1, -1, -1, 1]
    with pytest.raises(ValueError, match="read-only"):
        TOY_XS[0, 0] = 5.0


def test_training_on_the_toy_set_converges_within_20_steps():
    mlp, params = fresh()
    params, losses = train_faithful(mlp, params, TOY_XS, TOY_YS, rate=0.5, steps=20)
    first_below = next(k for k, loss in enumerate(losses) if loss < 0.01)
    assert first_below < 20 and losses[-1] < 0.01
    outputs = [out[0] for out in predict_faithful(mlp, params, TOY_XS)]
    assert np.array_equal(np.sign(outputs), TOY_YS.ravel())


def test_the_step_is_theta_minus_rate_times_the_plain_gradient():
    """The rate enters only in the update: dθ does not depend on it."""
    mlp, params = fresh()
    _, pullback = vjp(batch_loss_l(mlp, 4), (list(TOY_YS), params), list(TOY_XS))
    grad = tree_leaves(pullback(1.0)[0][1])
    for rate in (0.5, 0.01):
        new, _ = train_step(mlp, params, TOY_XS, TOY_YS, rate)
        for theta, d, theta_new in zip(tree_leaves(params), grad, tree_leaves(new)):
            np.testing.assert_allclose(theta_new, theta - rate * d, rtol=1e-13, atol=1e-15)


def test_train_step_is_pure_and_reports_the_loss_before_the_update():
    mlp, params = fresh()
    before = [np.copy(x) for x in tree_leaves(params)]
    new, loss = train_step(mlp, params, TOY_XS, TOY_YS, 0.5)
    assert all(np.array_equal(a, b) for a, b in zip(before, tree_leaves(params)))
    outputs = [out[0] for out in predict_faithful(mlp, params, TOY_XS)]
    assert loss == pytest.approx(0.5 * np.sum((np.array(outputs) - TOY_YS.ravel()) ** 2), rel=1e-12)
    assert not all(np.array_equal(a, b) for a, b in zip(before, tree_leaves(new)))


def test_train_is_repeated_train_step():
    mlp, params = fresh(3)
    trained, losses = train_faithful(mlp, params, TOY_XS, TOY_YS, rate=0.5, steps=3)
    stepped, stepped_losses = params, []
    for _ in range(3):
        stepped, loss = train_step(mlp, stepped, TOY_XS, TOY_YS, 0.5)
        stepped_losses.append(loss)
    assert losses == stepped_losses
    assert all(np.array_equal(a, b) for a, b in zip(tree_leaves(trained), tree_leaves(stepped)))


def test_the_prelens_mlp_trains_identically():
    mlp, params = fresh()
    _, losses_t = train_faithful(mlp, params, TOY_XS, TOY_YS, rate=0.5, steps=5)
    _, losses_l = train_faithful(make_mlp_l(3, SIZES), params, TOY_XS, TOY_YS, rate=0.5, steps=5)
    np.testing.assert_allclose(losses_t, losses_l, rtol=1e-12)


def test_train_step_names_bad_batches():
    mlp, params = fresh()
    with pytest.raises(StructureError, match=r"train_step: targets must be a list of length 4, got length 3"):
        train_step(mlp, params, TOY_XS, TOY_YS[:3], 0.5)
    with pytest.raises(ShapeError, match=r"train_step: inputs: expected a 2-D array \(batch, features\), got f64\[3\]"):
        train_step(mlp, params, TOY_XS[0], TOY_YS, 0.5)


def test_an_empty_batch_array_is_named_by_the_command():
    # an empty list was named ("a non-empty list of vectors"); an empty 2-D array fell through to
    # "batch_n: n must be an int >= 1, got 0", naming neither the command nor its argument
    mlp, params = fresh()
    empty = r"expected a 2-D array \(batch, features\) with at least one row, got f64\[0,3\]"
    with pytest.raises(ShapeError, match=r"^train_step: inputs: " + empty):
        train_step(mlp, params, np.zeros((0, 3)), np.zeros((0, 1)), 0.5)
    with pytest.raises(ShapeError, match=r"^train_faithful: inputs: " + empty):
        train_faithful(mlp, params, np.zeros((0, 3)), np.zeros((0, 1)), 0.5, 2)
    with pytest.raises(ShapeError, match=r"^predict_faithful: inputs: " + empty):
        predict_faithful(mlp, params, np.zeros((0, 3)))


def test_a_non_finite_loss_stops_training():
    mlp, params = fresh()
    with pytest.raises(NonFiniteError, match="train_step: loss"):
        train_step(mlp, params, TOY_XS, np.full((4, 1), np.nan), 0.5)


def test_a_non_finite_loss_is_found_before_the_backward_pass():
    backward_calls = []

    def bwd(m, da):
        backward_calls.append(1)
        return 0.0, np.zeros(3)

    net = PreLens(lambda p, s: ((), np.array([np.nan])), bwd, name="nan_net")
    with pytest.raises(NonFiniteError, match="train_step: loss"):
        train_step(net, 0.0, TOY_XS, TOY_YS, 0.5)
    assert backward_calls == []
