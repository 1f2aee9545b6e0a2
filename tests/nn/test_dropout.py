"""Dropout: the identity without a key, inverted dropout with one; lawful and differentiable in both modes.

The randomness is the parameter: ``DropoutKey(())`` evaluates, ``with_dropout`` keys
every site for one step, ``without_dropout`` maps a gradient back. The same key
gives the same mask; different steps and sites give independent ones. Inside the
transformer blocks the option keeps the block's function in evaluation and its
attention probes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import chain, vjp
from prelens.core import tree_map
from prelens.errors import ArgumentError, DTypeError, ShapeError, StructureError
from prelens.nn import (
    DropoutKey,
    attention_weights,
    decoder_block,
    dense,
    dropout,
    encoder_block,
    with_dropout,
    without_dropout,
)
from prelens.testing import check_lens_laws, check_vjp, seeds


@given(rate=st.sampled_from([0.0, 0.1, 0.5, 0.9]), seed=seeds(), rows=st.integers(0, 200))
@settings(max_examples=20)
def test_both_modes_obey_the_laws_and_are_reverse_derivatives(rate: float, seed: int, rows: int) -> None:
    rng = np.random.default_rng(seed)
    drop = dropout(rate)
    x = rng.standard_normal((rows, 16))
    check_lens_laws(drop, drop.init(rng), x, rng=rng)  # evaluation
    check_lens_laws(drop, with_dropout(drop.init(rng), int(rng.integers(2**63))), x, rng=rng)  # training
    check_vjp(drop, with_dropout(drop.init(rng), 3), x, rng=rng)


def test_evaluation_is_the_identity() -> None:
    drop = dropout(0.5)
    x = np.arange(6.0).reshape(2, 3)
    m, y = drop.fwd(drop.init(0), x)
    assert m == () and y is x
    assert drop.bwd(m, x) == (DropoutKey(()), x)


def test_training_drops_the_rate_and_keeps_the_mean() -> None:
    drop = dropout(0.3)
    x = np.ones((400, 500))
    m, y = drop.fwd(with_dropout(drop.init(0), 1), x)
    assert abs((y == 0).mean() - 0.3) < 0.005
    assert np.allclose(y[y != 0], 1 / 0.7)
    assert abs(y.mean() - 1.0) < 0.01  # inverted dropout: the expected output is the input
    dp, dx = drop.bwd(m, np.full_like(x, 2.0))
    assert np.array_equal(dx, 2.0 * y) and np.array_equal(dp.key, np.zeros(2, np.uint64))


def test_finite_differences_in_training_mode() -> None:
    """The masked, scaled map is linear in x: central differences agree with bwd at every entry."""
    drop = dropout(0.4)
    p = with_dropout(drop.init(0), 9)
    rng = np.random.default_rng(0)
    x, da = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    _, pullback = vjp(drop, p, x)
    _, dx = pullback(da)
    eps = 1e-6
    numeric = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        numeric[idx] = np.vdot(da, drop.fwd(p, x + e)[1] - drop.fwd(p, x - e)[1]) / (2 * eps)
    assert np.allclose(dx, numeric, rtol=1e-8, atol=1e-10)


def test_keys_are_explicit_deterministic_and_independent() -> None:
    model = chain(dense(20, 50, "relu"), dropout(0.5), dense(50, 50, "relu"), dropout(0.5), dense(50, 2, None))
    params = model.init(0)
    assert params[1] == DropoutKey(()) and params[3] == DropoutKey(())
    x = np.random.default_rng(0).standard_normal((64, 20))
    out = {k: model.fwd(with_dropout(params, k), x)[1] for k in (1, 2)}
    assert np.array_equal(out[1], model.fwd(with_dropout(params, 1), x)[1])  # same key, same masks
    assert not np.allclose(out[1], out[2])  # another step, other masks
    keyed = with_dropout(params, 1)
    assert keyed[1].key.tolist() == [1, 0] and keyed[3].key.tolist() == [1, 1]  # one stream per site
    assert np.array_equal(model.fwd(params, x)[1], model.fwd(without_dropout(keyed), x)[1])
    masks = [dropout(0.5).fwd(DropoutKey(np.array([1, i], np.uint64)), np.ones(10_000))[1] > 0 for i in (0, 1)]
    assert abs(np.mean(masks[0] == masks[1]) - 0.5) < 0.03  # the sites' masks are unrelated


def test_a_trainer_maps_the_gradient_back_to_the_parameters_structure() -> None:
    body = chain(dense(4, 8), dropout(0.2), dense(8, 3))
    params = body.init(0)
    x = np.ones((2, 4))
    _, pullback = vjp(body, with_dropout(params, 5), x)
    grads, _ = pullback(np.ones((2, 3)))
    assert isinstance(grads[1].key, np.ndarray)
    back = without_dropout(grads)
    assert back[1] == DropoutKey(()) and tree_map(np.shape, back) == tree_map(np.shape, params)


def test_float32_stays_float32() -> None:
    drop = dropout(0.5)
    x = np.ones((3, 4), np.float32)
    m, y = drop.fwd(with_dropout(drop.init(0), 2), x)
    assert y.dtype == np.float32 and m[0].dtype == np.float32  # the residue: (mask, zeros like the key)
    assert drop.bwd(m, np.ones((3, 4), np.float32))[1].dtype == np.float32


def test_clear_errors() -> None:
    drop = dropout(0.5)
    with pytest.raises(ArgumentError, match=r"^dropout: rate must be a finite number >= 0 and < 1, got 1\.0$"):
        dropout(1.0)
    with pytest.raises(StructureError, match=r"^dropout\(0\.5\): parameters must be DropoutKey\(\(\)\) \(evaluation\)"):
        drop.fwd((), np.ones(3))
    with pytest.raises(StructureError, match=r"^dropout\(0\.5\): parameters must be"):
        drop.fwd(DropoutKey(np.array([1, 2])), np.ones(3))  # a key is two uint64 words
    with pytest.raises(DTypeError, match=r"^dropout\(0\.5\): input: expected a float array, got i64\[3\]$"):
        drop.fwd(DropoutKey(()), np.arange(3))
    m, _ = drop.fwd(with_dropout(drop.init(0), 0), np.ones(3))
    with pytest.raises(ShapeError, match=r"^dropout\(0\.5\): output delta: expected f64\[3\], got f64\[4\]$"):
        drop.bwd(m, np.ones(4))
    with pytest.raises(ArgumentError, match=r"^with_dropout: key must be an int in \[0, 2\*\*64\), got -1$"):
        with_dropout(drop.init(0), -1)


# ---------------------------------------------------------------- in the transformer blocks


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_block_with_dropout(norm: str) -> None:
    rng = np.random.default_rng(1)
    plain, dropped = encoder_block(16, 4, 32, norm=norm), encoder_block(16, 4, 32, norm=norm, dropout=0.1)
    assert repr(dropped).endswith("dropout=0.1)")
    params = dropped.init(0)
    assert params[1] == (DropoutKey(()), DropoutKey(()))
    x = rng.standard_normal((4, 10, 16))
    m, y = dropped.fwd(params, x)
    assert np.array_equal(y, plain.fwd(params[0], x)[1])  # evaluation: the block without dropout
    assert sorted(attention_weights(dropped, m)) == ["self"]
    keyed = with_dropout(params, 4)
    assert not np.allclose(dropped.fwd(keyed, x)[1], y)
    check_vjp(dropped, keyed, x[:2, :5], rng=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_block_with_dropout(norm: str) -> None:
    rng = np.random.default_rng(2)
    plain, dropped = decoder_block(8, 2, 16, norm=norm), decoder_block(8, 2, 16, norm=norm, dropout=0.2)
    params = dropped.init(0)
    s = (rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 4, 8)))
    m, (y, _) = dropped.fwd(params, s)
    assert np.array_equal(y, plain.fwd(params[0], s)[1][0])
    assert sorted(attention_weights(dropped, m)) == ["cross", "self"]
    check_vjp(dropped, with_dropout(params, 1), s, rng=0)
    check_lens_laws(dropped, with_dropout(params, 1), s, rng=0, vjp=False)


def test_blocks_refuse_a_bad_rate() -> None:
    with pytest.raises(ArgumentError, match=r"^encoder_block: dropout must be a finite number >= 0 and < 1"):
        encoder_block(8, 2, 16, dropout=-0.1)
    assert encoder_block(8, 2, 16, dropout=0.0).init(0)._fields[0] == "attention"  # no dropout: no keys


def test_a_training_loop_threads_the_keys() -> None:
    """The trainer's contract: key the parameters for each step, map the gradient back, evaluate unkeyed."""
    from prelens.datasets import load_iris
    from prelens.learn import adamw, warmup_cosine
    from prelens.nn import softmax_cross_entropy
    from prelens.train import accuracy, value_and_grad

    iris = load_iris(rng=1, standardize_features=True)
    model = chain(dense(4, 64, "relu"), dropout(0.3), dense(64, 3, None))
    opt = adamw(warmup_cosine(0.02, warmup=10, total=300), weight_decay=1e-3)
    params = model.init(0)
    state = opt.init(params)
    step_keys = np.random.default_rng(0).integers(2**63, size=300)
    for t in range(300):
        rows = slice(t % 4 * 30, (t % 4 + 1) * 30)
        batch = (iris.x_train[rows], iris.y_train[rows])
        _, grads = value_and_grad(model, softmax_cross_entropy, with_dropout(params, int(step_keys[t])), batch)
        params, state = opt.update(without_dropout(grads), state, params)
    assert params[1] == DropoutKey(())  # the parameters held between steps evaluate without noise
    assert accuracy(model, params, iris.x_test, iris.y_test) >= 0.9


def test_a_numpy_rate_is_shown_as_a_number() -> None:
    assert repr(dropout(np.float64(0.5))) == repr(dropout(0.5)) == "dropout(0.5)" and repr(dropout(0)) == "dropout(0)"


def test_the_delta_keeps_the_input_dtype_and_none_passes_through() -> None:
    """A float64 delta on a float32 input is refused (no silent float64 gradient); ``None`` (the delta of data:
    a next layer built with ``input_delta=False``) passes through in both modes."""
    drop = dropout(0.5)
    x = np.ones((3, 4), np.float32)
    m, _ = drop.fwd(with_dropout(drop.init(0), 2), x)
    with pytest.raises(DTypeError, match=r"^dropout\(0\.5\): output delta: expected f32\[3,4\], got f64\[3,4\]$"):
        drop.bwd(m, np.ones((3, 4)))
    with pytest.raises(
        StructureError, match=r"^dropout\(0\.5\): output delta: expected an array f32\[3,4\], got \[\[float"
    ):
        drop.bwd(m, [[1.0] * 4] * 3)
    net = chain(dropout(0.2), dense(4, 3, input_delta=False))
    for params in (net.init(0), with_dropout(net.init(0), 1)):
        y, pullback = vjp(net, params, np.ones((5, 4)))
        assert pullback(np.ones_like(y))[1] is None
