"""fit's training kit: either form of optimiser, the L2 penalty, dropout, metrics on both data sets,
data of another float dtype, and the history's plot."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from prelens import NonFiniteError, chain, forward, learn
from prelens import learn as optim
from prelens.core import tree_allclose, tree_leaves
from prelens.datasets import load_iris
from prelens.errors import ArgumentError, DTypeError, MissingExtraError, ShapeError, StructureError
from prelens.nn import (
    DropoutKey,
    decoder_lm,
    dense,
    dropout,
    encoder_decoder,
    mlp,
    mse,
    softmax_cross_entropy,
    token_cross_entropy,
    with_dropout,
)
from prelens.train import History, accuracy, evaluate, fit, step, value_and_grad

IRIS = load_iris(rng=1, standardize_features=True)
DATA = (IRIS.x_train, IRIS.y_train)
VALID = (IRIS.x_test, IRIS.y_test)
MODEL = mlp(4, [16, 3], last_activation=None)
SCHED = optim.warmup_cosine(0.05, warmup=4, total=40, final=0.001)

#: (name, plain optimiser, its optimiser lens): fit must take the same steps with either.
PAIRS = [
    ("sgd", lambda: optim.sgd(0.05), lambda: learn.sgd(0.05).lens),
    ("momentum", lambda: optim.momentum(0.05, 0.8), lambda: learn.momentum(0.05, 0.8).lens),
    ("adagrad", lambda: optim.adagrad(0.05), lambda: learn.adagrad(0.05).lens),
    ("rmsprop", lambda: optim.rmsprop(0.005), lambda: learn.rmsprop(0.005).lens),
    ("adam", lambda: optim.adam(0.01), lambda: learn.adam(0.01).lens),
    (
        "adamw, warm-up + cosine",
        lambda: optim.adamw(SCHED, weight_decay=0.1),
        lambda: learn.adamw(SCHED, weight_decay=0.1).lens,
    ),
    (
        "clipped adam",
        lambda: optim.clip_by_global_norm(optim.adam(0.01), 0.5),
        lambda: learn.adam(0.01) >> learn.clip_by_global_norm(0.5),
    ),
]


def leaves_equal(a: Any, b: Any) -> bool:
    la, lb = tree_leaves(a), tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb))


def history_without_seconds(h: History) -> dict[str, Any]:
    d = h.as_dict()
    del d["seconds"]  # wall time
    return d


# ------------------------------------------------------------------ the two forms of optimiser


@pytest.mark.parametrize(("name", "plain", "lens"), PAIRS, ids=[p[0] for p in PAIRS])
def test_fit_takes_the_same_steps_with_an_optimiser_or_its_lens(name: str, plain: Any, lens: Any):
    kw: dict[str, Any] = {"rng": 0, "progress": False, "validation": VALID, "penalty": learn.l2(1e-3)}
    a = fit(MODEL, softmax_cross_entropy, DATA, 3, 16, plain(), **kw)
    b = fit(MODEL, softmax_cross_entropy, DATA, 3, 16, lens(), **kw)
    assert a.params[0].weight.dtype == np.float64 and a.history.steps == b.history.steps == 24
    assert tree_allclose(a.params, b.params, rtol=1e-12, atol=1e-12)
    assert tree_allclose(a.opt_state, b.opt_state, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.history.loss, b.history.loss, rtol=1e-12)
    np.testing.assert_allclose(a.history.metrics["val_loss"], b.history.metrics["val_loss"], rtol=1e-12)
    assert not tree_allclose(a.params, MODEL.init(0))  # it trained


def test_nesterov_lens_carries_the_look_ahead_point():
    a = fit(MODEL, softmax_cross_entropy, DATA, 3, 16, optim.momentum(0.05, nesterov=True), rng=0, progress=False)
    opt = learn.momentum(0.05, nesterov=True).lens
    b = fit(MODEL, softmax_cross_entropy, DATA, 3, 16, opt, rng=0, progress=False)
    seen = forward(opt, (), (b.params, b.opt_state))  # what the model sees: the carried parameters
    assert tree_allclose(a.params, seen, rtol=1e-12, atol=1e-12)
    assert tree_allclose(a.params, b.params, rtol=1e-12, atol=1e-12)


def test_fit_with_a_lens_is_learner_step_over_the_shuffled_batches():
    """The lens form is nothing but learner_step of learner(model, loss, opt), batch after batch."""
    opt = learn.adam(0.01).lens
    out = fit(MODEL, softmax_cross_entropy, DATA, 2, 32, opt, rng=5, progress=False)
    gen = np.random.default_rng(5)
    params = MODEL.init(gen)
    state = learn.init_state(opt, params)
    lens = learn.learner(MODEL, softmax_cross_entropy, opt)
    for _ in range(2):
        order = gen.permutation(len(DATA[0]))
        for lo in range(0, len(order), 32):
            idx = order[lo : lo + 32]
            params, state, _ = learn.learner_step(lens, params, state, (DATA[0][idx], DATA[1][idx]))
    assert leaves_equal(out.params, params) and leaves_equal(out.opt_state, state)


def test_an_optimiser_lens_that_is_not_one_is_refused():
    with pytest.raises(StructureError, match=r"^fit: optimizer must be an optimiser of prelens\.learn or its lens"):
        fit(MODEL, softmax_cross_entropy, DATA, 1, 16, learn.learning_rate(0.1), progress=False)


# ------------------------------------------------------------------ L2 as a loss term


def test_the_penalty_is_half_lambda_norm_squared_added_to_the_loss():
    lam = 0.01
    out = fit(MODEL, softmax_cross_entropy, DATA, 2, len(DATA[0]), optim.sgd(0.1), rng=0, progress=False,
              shuffle=False, penalty=learn.l2(lam))  # fmt: skip
    params = MODEL.init(np.random.default_rng(0))
    norms = []
    for _ in range(2):  # full batch: one step per epoch, gradient = loss's + λ·p
        value, grads = value_and_grad(MODEL, softmax_cross_entropy, params, DATA)
        norm = sum(float(np.vdot(x, x)) for x in tree_leaves(params))
        norms.append(value + 0.5 * lam * norm)
        params = [type(p)(*(x - 0.1 * (g + lam * x) for x, g in zip(p, d))) for p, d in zip(params, grads)]
    np.testing.assert_allclose(out.history.loss, norms, rtol=1e-12)
    assert tree_allclose(out.params, params, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ dropout

NET = chain(dense(4, 32, "relu"), dropout(0.4), dense(32, 3, None))


def test_value_and_grad_with_a_key_runs_in_training_mode_and_maps_the_gradient_back():
    params = NET.init(0)
    batch = (DATA[0][:8], DATA[1][:8])
    off, g_off = value_and_grad(NET, softmax_cross_entropy, params, batch)
    on, g_on = value_and_grad(NET, softmax_cross_entropy, params, batch, key=3)
    again, _ = value_and_grad(NET, softmax_cross_entropy, params, batch, key=3)
    assert on == again != off
    assert g_on[1] == DropoutKey(()) and g_off[1] == DropoutKey(())
    keyed = with_dropout(params, 3)
    assert on == float(forward(NET >> softmax_cross_entropy, (batch[1], keyed), batch[0]))
    new, _, before = step(NET, softmax_cross_entropy, params, batch, optim.sgd(0.1), (), key=3)
    assert before == on and new[1] == DropoutKey(())


def test_fit_with_dropout_draws_a_key_per_step_and_evaluates_without_it():
    out = fit(NET, softmax_cross_entropy, DATA, 3, 16, optim.adam(0.01), rng=2, progress=False,
              validation=VALID, train_metrics=True, metrics={"accuracy": accuracy})  # fmt: skip
    # by hand: the permutation, then one key per batch, from the same generator
    gen = np.random.default_rng(2)
    params = NET.init(gen)
    opt = optim.adam(0.01)
    state = opt.init(params)
    n = len(DATA[0])
    for _ in range(3):
        order = gen.permutation(n)
        keys = gen.integers(0, 2**63, size=8)
        for b, lo in enumerate(range(0, n, 16)):
            idx = order[lo : lo + 16]
            params, state, _ = step(NET, softmax_cross_entropy, params, (DATA[0][idx], DATA[1][idx]), opt, state,
                                    key=int(keys[b]))  # fmt: skip
    assert leaves_equal(out.params, params) and out.params[1] == DropoutKey(())
    # metrics in evaluation mode: the lens is the identity there
    h = out.history.metrics
    assert h["val_loss"][-1] == evaluate(NET, softmax_cross_entropy, params, *VALID)
    assert h["train_loss"][-1] == evaluate(NET, softmax_cross_entropy, params, *DATA)
    assert h["train_accuracy"][-1] == accuracy(NET, params, *DATA)
    # with dropout on, the running training loss is noisier (higher) than the evaluated one
    assert out.history.loss[-1] > h["train_loss"][-1]


def test_fit_with_dropout_takes_the_same_steps_with_an_optimiser_lens():
    a = fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adamw(SCHED), rng=4, progress=False,
            penalty=learn.l2(1e-4))  # fmt: skip
    b = fit(NET, softmax_cross_entropy, DATA, 2, 16, learn.adamw(SCHED).lens, rng=4, progress=False,
            penalty=learn.l2(1e-4))  # fmt: skip
    assert tree_allclose(a.params, b.params, rtol=1e-12, atol=1e-12)


def test_a_language_model_with_dropout_trains_in_fit():
    lm = decoder_lm(6, 16, 2, 32, 1, 5, dropout=0.1)
    assert repr(lm).endswith("dropout=0.1)")
    params = lm.init(0)
    assert isinstance(params.blocks[0][1][0], DropoutKey)
    ids = np.random.default_rng(0).integers(0, 6, (64, 5))
    out = fit(lm, token_cross_entropy(), (ids[:, :-1], ids[:, 1:]), 2, 16, optim.adam(0.01), rng=0, progress=False)
    assert out.history.loss[-1] < out.history.loss[0]
    x = ids[:2, :-1]
    assert np.array_equal(forward(lm, out.params, x), forward(lm, out.params, x))  # evaluation: no noise
    assert not np.array_equal(forward(lm, with_dropout(out.params, 1), x), forward(lm, out.params, x))
    ed = encoder_decoder(5, 6, 8, 2, 16, 1, 4, dropout=0.2)
    ed_params = ed.init(0)
    assert repr(ed).endswith("dropout=0.2)") and isinstance(ed_params.decoder[0][1][2], DropoutKey)
    pair = (ids[:2, :3] % 5, ids[:2, :2])
    assert np.array_equal(forward(ed, ed_params, pair), forward(ed, ed_params, pair))
    assert not np.array_equal(forward(ed, with_dropout(ed_params, 2), pair), forward(ed, ed_params, pair))


# ------------------------------------------------------------------ metrics


def test_metrics_without_anything_to_measure_them_on_are_an_error():
    with pytest.raises(ArgumentError, match=r"^fit: metrics has nothing to be measured on: give validation="):
        fit(MODEL, softmax_cross_entropy, DATA, 1, 16, optim.sgd(0.1), metrics={"accuracy": accuracy}, progress=False)


@pytest.mark.parametrize(("value", "got"), [(np.ones(2), r"f64\[2\]"), (None, "None"), ("0.5", "str")])
def test_a_metric_that_gives_no_number_is_named(value: Any, got: str):
    with pytest.raises(
        StructureError, match=rf"^fit: the value of the metric 'odd' must be a number \(a float\), got {got}"
    ):
        fit(MODEL, softmax_cross_entropy, DATA, 1, 16, optim.sgd(0.1), progress=False, train_metrics=True,
            metrics={"odd": lambda model, params, xs, ys: value})  # fmt: skip


def test_train_metrics_are_measured_on_the_training_data_after_each_epoch():
    out = fit(MODEL, softmax_cross_entropy, DATA, 3, 16, optim.adam(0.01), rng=0, progress=False,
              metrics={"accuracy": accuracy}, train_metrics=True)  # fmt: skip
    assert list(out.history.metrics) == ["train_loss", "train_accuracy"]
    assert out.history.metrics["train_accuracy"][-1] == accuracy(MODEL, out.params, *DATA)
    assert len(out.history.metrics["train_loss"]) == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metrics": ["accuracy"]}, r"^fit: metrics must be a mapping \{name: metric\} or None"),
        ({"metrics": {"acc": 3}, "validation": VALID}, r"^fit: metrics must be \{name: metric"),
        ({"train_metrics": "yes"}, r"^fit: train_metrics must be True or False"),
        ({"validation": (VALID[0], VALID[1][:3])}, r"^fit: validation must be \(xs, targets\) of one length"),
        ({"penalty": 0.1}, r"^fit: penalty must be a PreLens"),
    ],
)
def test_metric_and_penalty_argument_errors(kwargs: dict[str, Any], match: str):
    with pytest.raises((ArgumentError, StructureError), match=match):
        fit(MODEL, softmax_cross_entropy, DATA, 1, 16, optim.sgd(0.1), progress=False, **kwargs)


def test_validation_data_holding_nan_is_refused_before_the_first_step():
    bad = VALID[0].copy()
    bad[4, 1] = np.nan
    with pytest.raises(NonFiniteError, match=r"^fit: validation\[0\] holds NaN or infinity, first in row 4"):
        fit(MODEL, softmax_cross_entropy, DATA, 1, 16, optim.sgd(0.1), validation=(bad, VALID[1]), progress=False)


@pytest.mark.parametrize(
    ("validation", "error", "match"),
    [
        ((VALID[0][:, :3], VALID[1]), ShapeError, r"^dense\(4→16, tanh\): input: expected f64\[\.\.\.,4\]"),
        ((VALID[0], VALID[1][:, None]), ShapeError, r"^softmax_cross_entropy: labels: expected int"),
        ((VALID[0], VALID[1] * 1.0), DTypeError, r"^softmax_cross_entropy: labels: expected int"),
    ],
)
def test_validation_data_that_does_not_fit_the_model_is_refused_before_the_first_step(
    validation: Any, error: type, match: str
):
    """Not after a whole epoch of training: the model and loss run on its first rows before the first step."""
    with pytest.raises(error, match=match) as caught:
        fit(MODEL, softmax_cross_entropy, DATA, 1, 16, optim.sgd(0.1), validation=validation, progress=False)
    assert "fit: validation=(xs, targets) does not fit the model and loss" in "".join(caught.value.__notes__)
    assert not hasattr(caught.value, "history")  # no training was done, no state to hand back


def test_data_of_another_library_than_the_parameters_needs_a_backend():
    """Without ``backend=`` fit trains in the parameters' library and moves nothing: refused before the first step
    (the step failed with a message about tree structures), naming the backend that would train on it."""
    xps = pytest.importorskip("array_api_strict")
    strict = (xps.asarray(DATA[0]), xps.asarray(DATA[1]))
    for data, validation, where in [
        (strict, None, r"data\[0\]"),
        (DATA, (xps.asarray(VALID[0]), VALID[1]), r"validation\[0\]"),
    ]:
        with pytest.raises(ArgumentError, match=rf"^fit: {where} is array_api_strict's and the parameters are "
                           r"numpy's: pass backend='array_api_strict' to train there \(the parameters move once\), "
                           r"or give numpy arrays$"):  # fmt: skip
            fit(MODEL, softmax_cross_entropy, data, 1, 16, optim.sgd(0.1), validation=validation, progress=False)
    moved = fit(MODEL, softmax_cross_entropy, DATA, 1, 16, optim.sgd(0.1), rng=0, progress=False,
                backend="array_api_strict", validation=(xps.asarray(VALID[0]), xps.asarray(VALID[1])))  # fmt: skip
    assert moved.history.epochs == 1  # the validation's first row is tried where every epoch evaluates it


# ------------------------------------------------------------------ data of another float dtype


def test_float64_data_is_cast_once_to_a_float32_model():
    model = mlp(4, [8, 3], last_activation=None, dtype=np.float32)
    cast = (DATA[0].astype(np.float32), DATA[1])
    a = fit(model, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.01), rng=0, progress=False, validation=VALID)
    b = fit(model, softmax_cross_entropy, cast, 2, 16, optim.adam(0.01), rng=0, progress=False,
            validation=(VALID[0].astype(np.float32), VALID[1]))  # fmt: skip
    assert all(x.dtype == np.float32 for x in tree_leaves(a.params))
    assert leaves_equal(a.params, b.params) and a.history.metrics == b.history.metrics
    # float targets are cast too (mse), and float32 data goes into a float64 model as float64
    reg = mlp(4, [4, 1], dtype=np.float32)
    ys = DATA[0][:, :1] * 0.5
    assert fit(reg, mse, (DATA[0], ys), 1, 16, optim.sgd(0.1), rng=0, progress=False).history.epochs == 1
    wide = fit(MODEL, softmax_cross_entropy, cast, 1, 16, optim.sgd(0.1), rng=0, progress=False)
    assert wide.params[0].weight.dtype == np.float64


def test_data_that_overflows_the_cast_and_integer_or_nan_data_are_refused():
    model = mlp(4, [8, 3], last_activation=None, dtype=np.float32)
    huge = DATA[0].copy()
    huge[7, 2] = 1e300
    with pytest.raises(
        NonFiniteError, match=r"^fit: data\[0\] overflows when cast to the model's float32, first in row 7"
    ):
        fit(model, softmax_cross_entropy, (huge, DATA[1]), 1, 16, optim.sgd(0.1), progress=False)
    with pytest.raises(DTypeError, match=r"input: expected f32\[\.\.\.,4\], got i64\[16,4\]"):  # not cast
        fit(model, softmax_cross_entropy, (DATA[0].astype(int), DATA[1]), 1, 16, optim.sgd(0.1), progress=False)
    nan = DATA[0].copy()
    nan[3, 0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^fit: data\[0\] holds NaN or infinity, first in row 3"):
        fit(model, softmax_cross_entropy, (nan, DATA[1]), 1, 16, optim.sgd(0.1), progress=False)


# ------------------------------------------------------------------ History.plot


def test_history_plot_labels_its_axes_and_names_its_series():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = History(loss=[1.0, 0.6], metrics={"val_loss": [1.2, 0.8], "val_accuracy": [0.5, 0.7]})
    ax = h.plot()
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("epoch", "loss", "training history")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["loss", "val_loss"]
    assert list(ax.lines[0].get_xdata()) == [1, 2]
    _, mine = plt.subplots()
    assert h.plot("val_accuracy", ax=mine) is mine and mine.get_ylabel() == "val_accuracy"
    plt.close("all")
    with pytest.raises(StructureError, match=r"^History\.plot: name must be one of \('loss', 'val_loss', 'val_acc"):
        h.plot("accuracy")
    with pytest.raises(ArgumentError, match=r"^History\.plot: history must be at least one epoch to plot"):
        History().plot()


def test_history_plot_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(MissingExtraError, match=r"^History\.plot needs matplotlib, which is not installed: "
                       r"pip install 'prelens\[plot\]'$") as info:  # fmt: skip
        History(loss=[1.0]).plot()
    assert isinstance(info.value, ImportError)


def test_history_log_pads_earlier_epochs_and_keeps_one_value_per_epoch():
    h = History(loss=[1.0, 0.5, 0.4])
    h.log("lr", 0.1)
    h.log("lr", 0.2)
    lr = h.metrics["lr"]
    assert len(lr) == 3 and np.isnan(lr[0]) and np.isnan(lr[1]) and lr[2] == 0.2
    with pytest.raises(ArgumentError, match=r"History\.log: name must be a non-empty string other than 'loss'"):
        h.log("loss", 1.0)
    with pytest.raises(StructureError, match=r"^History\.log: value must be a number \(a float\), got str$"):
        h.log("lr", "0.1")
    h.log("lr", np.float32(0.5))
    assert lr[2] == 0.5 and type(lr[2]) is float


def test_a_model_without_dropout_sites_draws_no_keys():
    """Without dropout, fit draws from the generator exactly what it drew before: init and one permutation an epoch."""
    gen = np.random.default_rng(0)
    fit(MODEL, softmax_cross_entropy, DATA, 2, 16, optim.sgd(0.01), rng=gen, progress=False)
    ref = np.random.default_rng(0)
    MODEL.init(ref)
    ref.permutation(len(DATA[0]))
    ref.permutation(len(DATA[0]))
    assert gen.bit_generator.state == ref.bit_generator.state
