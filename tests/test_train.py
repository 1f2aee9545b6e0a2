"""Training: the step, the fit loop, evaluation, and never losing work."""

from __future__ import annotations

import copy
import io
import json
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from prelens import NonFiniteError, PreLens, PrelensError
from prelens.core import tree_allclose
from prelens.datasets import load_iris
from prelens.errors import ArgumentError, CheckpointError, TrainingNonFiniteError
from prelens.io import load_checkpoint, load_metadata
from prelens.learn import adam, momentum, sgd
from prelens.nn import dense, linear, mlp, mse, softmax_cross_entropy
from prelens.train import Progress, accuracy, confusion_matrix, evaluate, fit, predict, step, value_and_grad


class Affine(NamedTuple):
    weight: np.ndarray
    bias: np.ndarray


def affine_lens(on_call: Any = None) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """``x W + b`` built from PreLens directly; ``on_call(k, p, a) -> a`` can sabotage call ``k``."""
    calls = [0]

    def fwd(p: Affine, x: np.ndarray) -> tuple[Any, np.ndarray]:
        calls[0] += 1
        a = x @ p.weight + p.bias
        if on_call is not None:
            a = on_call(calls[0], p, a)
        return (x, p.weight), a

    def bwd(m: tuple[np.ndarray, np.ndarray], da: np.ndarray) -> tuple[Affine, np.ndarray]:
        x, w = m
        return Affine(x.T @ da, da.sum(axis=0)), da @ w.T

    def init(rng: np.random.Generator) -> Affine:
        return Affine(rng.standard_normal((3, 2)), np.zeros(2))

    return PreLens(fwd, bwd, "affine", init)


def half_squares() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """The post's loss: ground truth as the parameter, ½ Σ (s − g)²."""
    return PreLens(lambda g, s: (s - g, 0.5 * float(np.sum((s - g) ** 2))), lambda d, da: (-da * d, da * d), "half_sq")


RNG = np.random.default_rng(0)
XS = RNG.standard_normal((12, 3))
YS = XS @ np.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]]) + np.array([0.1, -0.2])


def frozen(tree: Any) -> Any:
    return copy.deepcopy(tree)


# -------------------------------------------------------------------- step


def test_value_and_grad_is_the_analytic_gradient():
    lens, params = affine_lens(), affine_lens().init(0)
    value, grads = value_and_grad(lens, half_squares(), params, (XS, YS))
    residual = XS @ params.weight + params.bias - YS
    assert value == pytest.approx(0.5 * np.sum(residual**2))
    assert isinstance(grads, Affine)
    np.testing.assert_allclose(grads.weight, XS.T @ residual)
    np.testing.assert_allclose(grads.bias, residual.sum(axis=0))


def test_step_is_forward_trace_update_and_pure():
    lens, params = affine_lens(), affine_lens().init(0)
    opt = momentum(0.01)
    state = opt.init(params)
    before = frozen((params, state))
    new, new_state, value = step(lens, half_squares(), params, (XS, YS), opt, state)
    assert tree_allclose((params, state), before, rtol=0)
    _, grads = value_and_grad(lens, half_squares(), params, (XS, YS))
    want, want_state = opt.update(grads, state, params)
    assert tree_allclose(new, want) and tree_allclose(new_state, want_state)
    assert value == value_and_grad(lens, half_squares(), params, (XS, YS))[0]
    assert value_and_grad(lens, half_squares(), new, (XS, YS))[0] < value


def test_step_takes_an_optimiser_lens_as_one_learner_step_and_fit_takes_the_same_steps():
    """``step`` is the one step: with an optimiser lens it is one pullback of ``learner``; fit runs it."""
    from prelens import learn

    model, opt = mlp(3, [4, 2], last_activation=None), learn.adam(0.05)
    params = model.init(0)
    state = learn.init_state(opt, params)
    batch = (XS, (YS[:, 0] > 0).astype(np.int64))
    new, new_state, value = step(model, softmax_cross_entropy, params, batch, opt, state)
    want = learn.learner_step(learn.learner(model, softmax_cross_entropy, opt), params, state, batch)
    assert tree_allclose((new, new_state, value), want, rtol=0)
    out = fit(model, softmax_cross_entropy, batch, 1, len(XS), opt, rng=0, progress=False, shuffle=False)
    assert tree_allclose(out.params, new, rtol=0) and out.history.loss == [value]


def test_step_with_the_real_lenses_keeps_float32():
    model = mlp(3, [5, 2], last_activation=None, dtype=np.float32)
    params = model.init(0)
    opt = adam(0.01)
    xs, labels = XS.astype(np.float32), (YS[:, 0] > 0).astype(np.int64)
    new, _, value = step(model, softmax_cross_entropy, params, (xs, labels), opt, opt.init(params))
    assert all(p.weight.dtype == np.float32 for p in new)
    assert np.isfinite(value)


# --------------------------------------------------------------------- fit


def test_fit_learns_and_records_a_history():
    lens = affine_lens()
    result = fit(lens, half_squares(), (XS, YS), 40, 4, sgd(0.1), rng=0, progress=False)
    params, state, history = result
    assert result.history is history and state == ()
    assert history.epochs == 40 and len(history.seconds) == 40
    assert history.steps == 40 * 3 and not history.interrupted and history.stopped is None
    assert history.loss[-1] < 1e-3 * history.loss[0]
    np.testing.assert_allclose(params.bias, [0.1, -0.2], atol=1e-2)


def test_fit_is_reproducible_and_never_touches_the_callers_params():
    lens = affine_lens()
    start = lens.init(1)
    before = frozen(start)
    a = fit(lens, half_squares(), (XS, YS), 3, 5, adam(0.1), rng=7, params=start, progress=False)
    b = fit(lens, half_squares(), (XS, YS), 3, 5, adam(0.1), rng=7, params=start, progress=False)
    c = fit(lens, half_squares(), (XS, YS), 3, 5, adam(0.1), rng=8, params=start, progress=False)
    assert tree_allclose(start, before, rtol=0)
    assert tree_allclose(a.params, b.params, rtol=0)
    assert not tree_allclose(a.params, c.params)  # the shuffling depends on rng


def recorder(seen: list[np.ndarray]) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """A parameter-free identity lens that records every input batch it sees."""

    def fwd(p: tuple[()], x: np.ndarray) -> tuple[tuple[()], np.ndarray]:
        seen.append(x.copy())
        return (), x

    return PreLens(fwd, lambda m, da: ((), da), "recorder")


def test_fit_visits_every_row_once_per_epoch_with_a_short_last_batch():
    seen: list[np.ndarray] = []
    fit(recorder(seen) >> affine_lens(), half_squares(), (XS, YS), 2, 5, sgd(0.01), rng=0, progress=False)
    assert [len(x) for x in seen] == [5, 5, 2, 5, 5, 2]
    for epoch in (seen[:3], seen[3:]):
        rows = np.concatenate(epoch)
        assert sorted(map(tuple, rows)) == sorted(map(tuple, XS))
    assert not np.array_equal(np.concatenate(seen[:3]), XS)  # shuffled
    assert not np.array_equal(np.concatenate(seen[:3]), np.concatenate(seen[3:]))  # reshuffled each epoch


def test_fit_without_shuffling_takes_rows_in_order():
    seen: list[np.ndarray] = []
    fit(recorder(seen) >> affine_lens(), half_squares(), (XS, YS), 1, 5, sgd(0.01), 0, shuffle=False, progress=False)
    np.testing.assert_array_equal(np.concatenate(seen), XS)


def test_fit_validation_metrics():
    iris = load_iris(rng=0, standardize_features=True)
    model = mlp(4, [8, 3], last_activation=None, input_delta=False)
    _, _, history = fit(
        model,
        softmax_cross_entropy,
        (iris.x_train, iris.y_train),
        5,
        16,
        adam(0.02),
        rng=0,
        validation=(iris.x_test, iris.y_test),
        metrics={"accuracy": accuracy},
        progress=False,
    )
    assert set(history.metrics) == {"val_loss", "val_accuracy"}
    assert len(history.metrics["val_accuracy"]) == 5
    assert history.metrics["val_loss"][-1] < history.metrics["val_loss"][0]
    assert all(0.0 <= a <= 1.0 for a in history.metrics["val_accuracy"])


def test_fit_trains_a_real_mlp_on_iris():
    iris = load_iris(rng=1, standardize_features=True)
    model = mlp(4, [16, 3], last_activation=None, input_delta=False)
    params, _, _ = fit(
        model, softmax_cross_entropy, (iris.x_train, iris.y_train), 60, 16, adam(0.01), 0, progress=False
    )
    assert accuracy(model, params, iris.x_test, iris.y_test) >= 0.9
    assert accuracy(model, params, iris.x_train, iris.y_train) >= 0.95


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epochs": -1}, r"fit: epochs must be an int >= 0, got -1"),
        ({"batch_size": 0}, r"fit: batch_size must be an int >= 1, got 0"),
        ({"checkpoint_every": 2}, r"fit: checkpoint_path must be a file path when checkpoint_every is given"),
        (
            {"data": (XS, YS[:5])},
            r"^fit: data must be \(xs, targets\) of one length, got xs of 12 rows, targets of 5 rows$",
        ),
        ({"data": ((XS, XS[:3]), YS)}, r"^fit: data must be .* got xs of 12 and 3 rows, targets of 12 rows$"),
        (
            {"checkpoint_path": "/nonexistent/dir/c.npz"},
            r"fit: checkpoint_path cannot be written to '/nonexistent/dir/c\.npz': the directory /nonexistent/dir does "
            r"not exist",
        ),
        ({"checkpoint_path": "."}, r"fit: checkpoint_path cannot be written to '\.': it is a directory"),
    ],
)
def test_fit_argument_errors(kwargs: dict[str, Any], match: str):
    args: dict[str, Any] = {"data": (XS, YS), "epochs": 1, "batch_size": 4, "progress": False}
    args.update(kwargs)
    with pytest.raises(ArgumentError, match=match):
        fit(affine_lens(), half_squares(), optimizer=sgd(0.1), **args)


def test_checkpoint_every_takes_numpys_ints_as_epochs_and_batch_size_do(tmp_path: Path):
    out = fit(affine_lens(), half_squares(), (XS, YS), np.int64(2), np.int64(4), sgd(0.1), 0, progress=False,
              checkpoint_every=np.int64(1), checkpoint_path=tmp_path / "c.npz")  # fmt: skip
    assert out.history.epochs == 2 and load_metadata(tmp_path / "c.npz")["epoch"] == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"params": "cut"}, "StructureError", r"^fit: params do not fit mlp\(3→4→2.*: params: expected list of 2, got"),
        (
            {"params": "float32"},
            "DTypeError",
            r"^fit: params do not fit .*: params at \[0\]\.weight: expected f64\[3,4\], got f32",
        ),
        ({"opt_state": "sgd's"}, "StructureError", r"^fit: opt_state: at <root>: expected AdamState, got tuple of 0$"),
        (
            {"opt_state": "reversed"},
            "StructureError",
            r"^fit: opt_state: at \.mu\[0\]\.weight: expected shape \(3, 4\)",
        ),
    ],
)
def test_params_and_opt_state_that_do_not_fit_are_refused_before_training_naming_them(
    kwargs: dict[str, Any], error: str, match: str, tmp_path: Path
):
    """Not at the first step, and not blamed on validation= (whose first row runs before training)."""
    net = mlp(3, [4, 2], last_activation=None)
    good = net.init(0)
    given = {
        "cut": good[:1],
        "float32": [type(d)(d.weight.astype(np.float32), d.bias.astype(np.float32)) for d in good],
        "sgd's": (),
        "reversed": adam(0.1).init(good[::-1]),
    }
    labels = (XS[:, 0] > 0).astype(int)
    path = tmp_path / "c.npz"
    with pytest.raises(PrelensError, match=match) as info:
        fit(net, softmax_cross_entropy, (XS, labels), 1, 4, adam(0.1), 0, validation=(XS, labels), progress=False,
            checkpoint_path=path, **{k: given[v] for k, v in kwargs.items()})  # fmt: skip
    assert type(info.value).__name__ == error and not hasattr(info.value, "__notes__") and not path.exists()


def test_a_stream_that_cannot_be_written_is_refused_before_training(tmp_path: Path):
    """Not at the first progress line, after an epoch of work."""
    closed = io.StringIO()
    closed.close()
    (tmp_path / "log.txt").write_text("")
    with open(tmp_path / "log.txt") as read_only:
        for stream, why in [(closed, "closed"), (read_only, "not writable")]:
            with pytest.raises(PrelensError, match=rf"^fit: stream must be an open, writable text stream.*\({why}\)$"):
                fit(affine_lens(), half_squares(), (XS, YS), 1, 4, sgd(0.1), stream=stream, progress=True)


# ------------------------------------------------------- never lose work


def nan_on_call(k: int) -> Any:
    """Sabotage the forward pass of call ``k``: its output (hence the loss) becomes NaN."""
    seen: dict[int, Any] = {}

    def on_call(call: int, p: Affine, a: np.ndarray) -> np.ndarray:
        seen[call] = p
        if call == k:
            a = a.copy()
            a[0, 0] = np.nan
        return a

    return on_call, seen


def test_nan_loss_stops_with_the_step_and_the_last_good_params():
    on_call, seen = nan_on_call(7)  # 3 batches per epoch: call 7 is epoch 3, batch 1
    lens = affine_lens(on_call)
    start = lens.init(0)
    before = frozen(start)
    with pytest.raises(
        NonFiniteError,
        match=r"the loss became non-finite at epoch 3/5, batch 1/3 \(loss = nan; first non-finite gradient leaf: grads\.weight\)",
    ) as info:
        fit(lens, half_squares(), (XS, YS), 5, 4, sgd(0.01), rng=0, params=start, progress=False)
    err = info.value
    assert isinstance(err, TrainingNonFiniteError)
    assert any("attached as .params, .opt_state and .history" in note for note in err.__notes__)  # shown, not in str
    assert tree_allclose(err.params, seen[7], rtol=0)  # the params the failing step started from
    assert err.history.steps == 6 and err.history.epochs == 2 and len(err.history.loss) == 2
    assert "non-finite" in err.history.stopped
    assert tree_allclose(start, before, rtol=0)  # the caller's params were never overwritten


@pytest.mark.parametrize(("where", "row"), [(0, 5), (1, 11)])
def test_non_finite_data_is_refused_before_the_first_step(where: int, row: int):
    data = [XS.copy(), YS.copy()]
    data[where][row, -1] = np.inf if where else np.nan
    with pytest.raises(NonFiniteError, match=rf"fit: data\[{where}\] holds NaN or infinity, first in row {row}"):
        fit(affine_lens(), half_squares(), (data[0], data[1]), 5, 4, sgd(0.01), rng=0, progress=False)
    with pytest.raises(NonFiniteError, match=rf"^fit: validation\[{where}\] holds NaN or infinity, first in row {row}"):
        fit(affine_lens(), half_squares(), (XS, YS), 5, 4, sgd(0.01), validation=(data[0], data[1]), progress=False)


def test_validation_that_overflows_the_models_dtype_is_named_as_validation():
    model = linear(3, 2, dtype=np.float32)
    huge = XS * 1e39
    with pytest.raises(NonFiniteError, match=r"^fit: validation\[0\] overflows when cast to the model's float32"):
        fit(model, mse, (XS, YS), 1, 4, sgd(0.01), validation=(huge, YS), progress=False)
    with pytest.raises(NonFiniteError, match=r"^fit: data\[0\] overflows when cast to the model's float32"):
        fit(model, mse, (huge, YS), 1, 4, sgd(0.01), progress=False)


def test_nan_gradient_is_named_by_its_tree_path():
    model = affine_lens()

    def bwd_with_nan(m: Any, da: Any) -> Any:
        dp, ds = model.bwd(m, da)
        calls.append(1)
        if len(calls) == 4:
            dp = Affine(dp.weight, np.array([0.0, np.inf]))
        return dp, ds

    calls: list[int] = []
    sabotaged = PreLens(model.fwd, bwd_with_nan, "affine", model.init_fn)
    with pytest.raises(
        NonFiniteError,
        match=r"the gradient became non-finite at epoch 2/2, batch 1/3 \(first non-finite leaf: grads\.bias\)",
    ) as info:
        fit(sabotaged, half_squares(), (XS, YS), 2, 4, adam(0.01), rng=0, progress=False)
    assert np.all(np.isfinite(info.value.params.weight)) and info.value.history.steps == 3
    assert info.value.opt_state.step == 3


def test_parameters_that_overflow_are_not_handed_back():
    # Finite gradients, but a step so large that the new float32 parameters overflow to ±inf.
    model = linear(3, 2, dtype=np.float32)
    xs, ys = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    start = model.init(0)
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(
            NonFiniteError,
            match=r"the parameters became non-finite at epoch 1/3, batch 1/1 \(first non-finite leaf: params\)",
        ) as info:
            fit(model, mse, (xs, ys), 3, 4, sgd(1e39), rng=0, params=start, progress=False)
    assert tree_allclose(info.value.params, start, rtol=0)  # the last finite parameters
    assert info.value.history.steps == 0  # the step whose update overflowed is not counted


def test_huge_but_finite_gradients_are_not_mistaken_for_non_finite():
    # |g|² overflows float32 (the quick check), yet every entry is finite: training goes on.
    huge = PreLens(
        lambda w, x: ((), x + w.sum()),
        lambda m, da: (np.full(3, 1e30, np.float32), da),
        "huge",
        lambda rng: np.zeros(3, np.float32),
    )
    xs = np.zeros((4, 2), np.float32)
    out = fit(huge, mse, (xs, xs), 2, 4, sgd(1e-32), rng=0, progress=False)
    assert out.history.steps == 2 and np.all(np.isfinite(out.params))


def test_keyboard_interrupt_returns_the_work_so_far(tmp_path: Path):
    def interrupt(call: int, p: Affine, a: np.ndarray) -> np.ndarray:
        if call == 7:
            raise KeyboardInterrupt
        return a

    path = str(tmp_path / "ck.npz")
    out = fit(
        affine_lens(interrupt), half_squares(), (XS, YS), 10, 4, adam(0.01), rng=3, progress=False, checkpoint_path=path
    )
    assert out.history.interrupted and out.history.steps == 6 and out.history.epochs == 2
    assert "interrupted after 6 steps (2 complete epochs)" in out.history.stopped
    # exactly what two uninterrupted epochs give
    two = fit(affine_lens(), half_squares(), (XS, YS), 2, 4, adam(0.01), rng=3, progress=False)
    assert tree_allclose(out.params, two.params, rtol=0) and out.opt_state.step == 6
    assert out.history.loss == two.history.loss
    # and it was saved on the way out
    saved = load_checkpoint(path, like={"params": two.params, "opt_state": two.opt_state})
    assert tree_allclose(saved["params"], two.params, rtol=0)
    assert load_metadata(path)["history"]["interrupted"] is True


def test_periodic_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import prelens.io as ck
    import prelens.train._run as run

    saves: list[int] = []
    real = ck.save_checkpoint

    def counting_save(path: Any, tree: Any, *, metadata: Any = None) -> None:
        saves.append(metadata["epoch"])
        real(path, tree, metadata=metadata)

    monkeypatch.setattr(run, "save_checkpoint", counting_save)
    path = tmp_path / "run.npz"
    params, state, history = fit(
        affine_lens(), half_squares(), (XS, YS), 5, 4, adam(0.01), 0, progress=False,
        checkpoint_every=2, checkpoint_path=str(path),
    )  # fmt: skip
    assert saves == [2, 4, 5]
    saved = load_checkpoint(path, like={"params": params, "opt_state": state})
    assert tree_allclose(saved["params"], params, rtol=0) and saved["opt_state"].step == 15
    assert load_metadata(path)["history"]["loss"] == history.loss


def test_a_failing_checkpoint_warns_and_training_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import prelens.train._run as run

    def broken(*args: Any, **kwargs: Any) -> None:
        raise CheckpointError("disk full")

    monkeypatch.setattr(run, "save_checkpoint", broken)
    with pytest.warns(RuntimeWarning, match=r"fit: checkpoint not saved: disk full"):
        out = fit(
            affine_lens(), half_squares(), (XS, YS), 3, 4, sgd(0.01), 0, progress=False,
            checkpoint_every=1, checkpoint_path=str(tmp_path / "x.npz"),
        )  # fmt: skip
    assert out.history.epochs == 3


# ---------------------------------------------------------------- progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_off_when_not_a_terminal_and_on_request():
    quiet = io.StringIO()
    fit(affine_lens(), half_squares(), (XS, YS), 2, 4, sgd(0.01), 0, stream=quiet)
    assert quiet.getvalue() == ""
    term = FakeTerminal()
    fit(affine_lens(), half_squares(), (XS, YS), 2, 4, sgd(0.01), 0, stream=term, progress=False)
    assert term.getvalue() == ""


def test_progress_on_a_terminal_redraws_one_line():
    term = FakeTerminal()
    iris = load_iris(rng=0)
    model = dense(4, 3, None)
    fit(model, softmax_cross_entropy, (iris.x_train, iris.y_train), 3, 40, sgd(0.01), 0, stream=term,
        validation=(iris.x_test, iris.y_test))  # fmt: skip
    text = term.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    last = text.rstrip("\n").split("\r")[-1]
    assert last.startswith("epoch 3/3 [############] 3/3  loss ")
    assert "samples/s  eta 0:00  val_loss " in last


def test_forced_progress_on_a_file_prints_a_line_per_epoch():
    log = io.StringIO()
    fit(affine_lens(), half_squares(), (XS, YS), 3, 4, sgd(0.01), 0, stream=log, progress=True)
    lines = log.getvalue().splitlines()
    assert [line.split("  ")[0] for line in lines] == ["epoch 1/3", "epoch 2/3", "epoch 3/3"]
    assert "\r" not in log.getvalue()


def test_progress_full_batch_bar_counts_steps():
    term = FakeTerminal()
    bar = Progress(4, 1, term, label="step", interval=0.0)
    for k in range(1, 5):
        bar.epoch_end(k, 0.5, {})
    bar.close("done")
    frames = term.getvalue().split("\r")[1:]
    assert [f.split("  ")[0] for f in frames] == [
        "step 1/4 [###---------]",
        "step 2/4 [######------]",
        "step 3/4 [#########---]",
        "step 4/4 [############]",
    ]
    assert "loss 0.5000" in frames[-1] and "eta 0:00" in frames[-1]
    assert term.getvalue().endswith("\ndone\n")


# -------------------------------------------------------------- evaluation


def test_predict_in_chunks_equals_all_at_once():
    model = mlp(3, [4, 2])
    params = model.init(0)
    np.testing.assert_allclose(predict(model, params, XS, batch_size=5), predict(model, params, XS), rtol=1e-12)
    with pytest.raises(ArgumentError, match=r"predict: batch_size must be an int >= 1 or None, got 0"):
        predict(model, params, XS, batch_size=0)
    labels = np.arange(12) % 2
    chunk = np.int64(5)  # numpy's ints, as fit takes them (a size computed with numpy)
    np.testing.assert_allclose(predict(model, params, XS, batch_size=chunk), predict(model, params, XS), rtol=1e-12)
    assert accuracy(model, params, XS, labels, batch_size=chunk) == accuracy(model, params, XS, labels)
    assert (confusion_matrix(model, params, XS, labels, batch_size=chunk) ==
            confusion_matrix(model, params, XS, labels)).all()  # fmt: skip


def test_accuracy_reads_scores_one_hot_and_binary_outputs():
    ident = linear(2, 2)
    xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [5.0, 1.0]])
    w = np.eye(2)
    assert accuracy(ident, w, xs, np.array([0, 1, 1, 1])) == 0.75
    assert accuracy(ident, w, xs, np.eye(2)[[0, 1, 1, 1]]) == 0.75  # one-hot labels
    col = linear(2, 1)
    w1 = np.array([[1.0], [-1.0]])  # score x0 - x1: positive means class 1
    assert accuracy(col, w1, xs, np.array([[1.0], [-1.0], [-1.0], [-1.0]])) == 0.75  # ±1 targets
    assert accuracy(col, w1, xs, np.array([1, 0, 0, 1])) == 1.0  # 0/1 labels
    with pytest.raises(ArgumentError, match=r"accuracy: labels must be one label per row of xs \(4\)"):
        accuracy(ident, w, xs, np.array([0, 1]))


def test_accuracy_and_the_confusion_matrix_read_labels_one_way_and_refuse_what_is_no_class():
    """Float class indices (labels read from a CSV) were read as binary, int ±1 labels never matched class 0, and a
    label no score column has counted as a miss: silent wrong answers."""
    ident, w = linear(2, 3), np.eye(2, 3)
    xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [5.0, 1.0]])  # argmax: 0, 1, 1, 0
    assert accuracy(ident, w, xs, np.array([0.0, 2.0, 1.0, 0.0])) == 0.75  # binary reading: 1.0
    assert confusion_matrix(ident, w, xs, np.array([0.0, 2.0, 1.0, 0.0]), n_classes=3).trace() == 3
    for bad, got in [
        (np.array([0, 1, 1, 3]), "3"),
        (np.array([0.0, 1.5, 1.0, 0.0]), "1.5"),
        (np.array([0, -1, 1, 0]), "-1"),
    ]:
        with pytest.raises(
            PrelensError,
            match=rf"^accuracy: labels must lie in \[0, 3\) \(class indices, one per score column\), got {got}$",
        ):
            accuracy(ident, w, xs, bad)
    col, w1 = linear(2, 1), np.array([[1.0], [-1.0]])  # score x0 - x1: positive means class 1
    assert accuracy(col, w1, xs, np.array([1, -1, -1, 1])) == 1.0  # ±1 labels as ints
    assert confusion_matrix(col, w1, xs, np.array([1, -1, -1, 1])).trace() == 4


def test_evaluate_is_the_loss_of_the_composite():
    lens, params = affine_lens(), affine_lens().init(0)
    assert evaluate(lens, half_squares(), params, XS, YS) == value_and_grad(lens, half_squares(), params, (XS, YS))[0]
    assert evaluate(linear(3, 2), mse, np.zeros((3, 2)), XS, YS) == pytest.approx(np.mean(YS**2))


def test_history_as_dict_is_json_ready():
    _, _, history = fit(affine_lens(), half_squares(), (XS, YS), 2, 6, sgd(0.01), 0, progress=False)
    d = history.as_dict()
    assert d["loss"] == history.loss and d["steps"] == 4 and d["interrupted"] is False
    history.loss.append(float("nan"))
    assert history.as_dict()["loss"][-1] is None
    assert json.loads(json.dumps(history.as_dict(), allow_nan=False))["loss"][-1] is None


# ------------------------------------------- whatever ends fit, the work is kept (issue 13)


def sigint_inside_zip_member_close(monkeypatch: pytest.MonkeyPatch, on_call: int = 1) -> list[int]:
    """Deliver a real SIGINT while a ZIP member is being closed (call ``on_call``): inside a checkpoint write.

    ``signal.raise_signal`` runs the Python handler before it returns, so without deferral the
    ``KeyboardInterrupt`` lands between the member's data and its closing: the spot where
    zipfile used to refuse to close the archive (``ValueError``) and the work was lost.
    """
    import signal
    import zipfile

    real = zipfile._ZipWriteFile.close
    calls: list[int] = []

    def close(self: Any) -> None:
        calls.append(1)
        if len(calls) == on_call:
            signal.raise_signal(signal.SIGINT)
        real(self)

    monkeypatch.setattr(zipfile._ZipWriteFile, "close", close)
    return calls


def test_ctrl_c_during_a_periodic_checkpoint_returns_the_work_and_a_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "run.npz"
    calls = sigint_inside_zip_member_close(monkeypatch)
    out = fit(
        affine_lens(), half_squares(), (XS, YS), 5, 4, adam(0.01), 0, progress=False,
        checkpoint_every=1, checkpoint_path=str(path),
    )  # fmt: skip
    assert calls  # the signal really arrived inside a write
    assert out.history.interrupted and out.history.epochs == 1 and out.history.steps == 3
    one = fit(affine_lens(), half_squares(), (XS, YS), 1, 4, adam(0.01), 0, progress=False)
    assert tree_allclose(out.params, one.params, rtol=0) and out.opt_state.step == 3
    saved = load_checkpoint(path, like={"params": one.params, "opt_state": one.opt_state})
    assert tree_allclose(saved["params"], one.params, rtol=0)
    assert load_metadata(path)["history"]["interrupted"] is True
    assert sorted(os.listdir(tmp_path)) == ["run.npz"]  # no temporary file left


def test_a_second_ctrl_c_during_the_last_checkpoint_still_returns_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def interrupt(call: int, p: Affine, a: np.ndarray) -> np.ndarray:
        if call == 5:
            sigint_inside_zip_member_close(monkeypatch)  # the next save (on the way out) is hit too
            raise KeyboardInterrupt
        return a

    path = tmp_path / "ck.npz"
    out = fit(affine_lens(interrupt), half_squares(), (XS, YS), 4, 4, sgd(0.01), 0, progress=False,
              checkpoint_path=str(path))  # fmt: skip
    assert out.history.interrupted and out.history.steps == 4
    saved = load_checkpoint(path, like={"params": out.params, "opt_state": ()})
    assert tree_allclose(saved["params"], out.params, rtol=0)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # not printed: it is acted on
def test_a_ctrl_c_that_a_finalizer_drops_still_stops_training():
    """Python raises KeyboardInterrupt wherever the main thread is; raised inside a ``__del__`` or a weakref callback
    (a lens's registry entry dying) it is printed and dropped. fit notes the signal and stops at the next batch."""
    import signal

    class Dropper:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)  # the handler runs here, inside __del__: its exception is dropped

    def interrupt(call: int, p: Affine, a: np.ndarray) -> np.ndarray:
        if call == 5:
            Dropper()
        return a

    hook = sys.unraisablehook
    out = fit(affine_lens(interrupt), half_squares(), (XS, YS), 50, 4, sgd(0.01), 0, progress=False)
    assert out.history.interrupted and out.history.steps == 5  # the step of call 5 finished; the next did not start
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's own handler again
    assert sys.unraisablehook is hook  # and its hook for dropped exceptions (pytest's, here)


class Failing:
    """An optimiser (sgd underneath) whose update raises ``RuntimeError`` on call ``k``."""

    def __init__(self, k: int) -> None:
        self.inner, self.k, self.calls = sgd(0.01), k, 0
        self.seen: list[Any] = []

    def init(self, params: Any) -> Any:
        return self.inner.init(params)

    def update(self, grads: Any, state: Any, params: Any) -> Any:
        self.calls += 1
        self.seen.append(params)
        if self.calls == self.k:
            raise RuntimeError("the optimiser broke")
        return self.inner.update(grads, state, params)


def test_any_exception_carries_the_last_good_state_and_saves_it(tmp_path: Path):
    path = tmp_path / "ck.npz"
    opt = Failing(5)
    with pytest.raises(RuntimeError, match="the optimiser broke") as info:
        fit(affine_lens(), half_squares(), (XS, YS), 4, 4, opt, 0, progress=False, checkpoint_path=str(path))
    err = info.value
    assert tree_allclose(err.params, opt.seen[4], rtol=0)  # what the failing step started from
    assert err.opt_state == () and err.history.steps == 4 and err.history.epochs == 1
    assert "RuntimeError: the optimiser broke" in err.history.stopped
    assert any("epoch 2/4, batch 2/3" in note and "ck.npz" in note for note in err.__notes__)
    assert tree_allclose(
        load_checkpoint(path, like={"params": err.params, "opt_state": ()})["params"], opt.seen[4], rtol=0
    )
    assert load_metadata(path)["history"]["steps"] == 4


def test_an_exception_from_the_users_lens_carries_the_state_too():
    def broken(call: int, p: Affine, a: np.ndarray) -> np.ndarray:
        if call == 3:
            raise RuntimeError("my lens")
        return a

    with pytest.raises(PrelensError, match="RuntimeError: my lens") as info:  # named in its composite
        fit(affine_lens(broken), half_squares(), (XS, YS), 4, 4, adam(0.01), 0, progress=False)
    err: Any = info.value
    assert err.history.steps == 2 and err.opt_state.step == 2
    assert "RuntimeError: my lens" in err.history.stopped


def test_epochs_zero_hands_back_a_copy_never_the_callers_object():
    start = affine_lens().init(0)
    state = adam(0.1).init(start)
    out = fit(affine_lens(), half_squares(), (XS, YS), 0, 4, adam(0.1), 0, params=start, opt_state=state,
              progress=False)  # fmt: skip
    assert out.params is not start and not np.shares_memory(out.params.weight, start.weight)
    assert tree_allclose(out.params, start, rtol=0) and out.history.steps == 0
    assert not np.shares_memory(out.opt_state.mu.weight, state.mu.weight)


def test_non_finite_starting_parameters_are_refused_before_the_first_step():
    start = affine_lens().init(0)
    start.weight[1, 0] = np.inf
    with pytest.raises(NonFiniteError, match=r"^fit: params: non-finite value at \.weight$"):
        fit(affine_lens(), half_squares(), (XS, YS), 2, 4, sgd(0.1), 0, params=start, progress=False)


def test_a_non_finite_loss_at_step_one_hands_back_a_copy():
    on_call, _ = nan_on_call(1)
    start = affine_lens().init(0)
    with pytest.raises(NonFiniteError) as info:
        fit(affine_lens(on_call), half_squares(), (XS, YS), 2, 4, sgd(0.1), 0, params=start, progress=False)
    got = info.value.params
    assert got is not start and not np.shares_memory(got.weight, start.weight)
    assert tree_allclose(got, start, rtol=0) and info.value.history.steps == 0


def test_the_error_that_stops_training_pickles_with_the_state_it_carries():
    """A sweep in a process pool gets the error back from its worker (pickled), the last good state with it."""
    import pickle

    on_call, _ = nan_on_call(5)
    with pytest.raises(TrainingNonFiniteError) as info:
        fit(affine_lens(on_call), half_squares(), (XS, YS), 3, 4, momentum(0.1), 0, progress=False)
    err = info.value
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is TrainingNonFiniteError and str(again) == str(err) and again.__notes__ == err.__notes__
    assert tree_allclose(again.params, err.params, rtol=0) and tree_allclose(again.opt_state, err.opt_state, rtol=0)
    assert again.history == err.history and again.history.steps == 4


def test_parameters_that_overflow_after_good_steps_give_back_the_last_finite_ones():
    """Two good steps, then one whose update overflows: the parameters after step 2 come back."""
    calls: list[Any] = []

    def bwd(m: Any, da: Any) -> Any:
        calls.append(1)
        scale = np.float32(1e30) if len(calls) == 3 else np.float32(1.0)
        return np.full(3, scale, np.float32), da

    grow = PreLens(lambda w, x: ((), x + w.sum()), bwd, "grow", lambda rng: np.zeros(3, np.float32))
    xs = np.zeros((4, 2), np.float32)
    with np.errstate(over="ignore"):
        with pytest.raises(
            NonFiniteError,
            match=r"the parameters became non-finite at epoch 3/5, batch 1/1 \(first non-finite leaf: params\)",
        ) as info:
            fit(grow, mse, (xs, xs), 5, 4, sgd(1e10), rng=0, progress=False)
    err = info.value
    np.testing.assert_allclose(err.params, np.full(3, -2e10, np.float32))  # after the two good steps
    assert err.history.steps == 2 and err.history.epochs == 2


def test_history_loss_is_the_mean_of_the_batch_losses():
    seen: list[float] = []

    def fwd(g: Any, s: Any) -> Any:
        value = 0.5 * float(np.sum((s - g) ** 2))
        seen.append(value)
        return s - g, value

    recording = PreLens(fwd, lambda d, da: (-da * d, da * d), "half_sq")
    _, _, history = fit(affine_lens(), recording, (XS, YS), 3, 5, sgd(0.01), 0, progress=False)
    assert len(seen) == 9  # batches of 5, 5 and 2
    expected = [float(np.mean(seen[3 * e : 3 * e + 3])) for e in range(3)]
    assert history.loss == pytest.approx(expected, rel=1e-15)
    assert expected[0] != pytest.approx(sum(seen[:3]) / 12)  # the mean of batches, not of rows


def test_a_real_sigint_during_fit_with_checkpoints_returns_the_work(tmp_path: Path):
    """A real Ctrl-C (SIGINT from outside) at a random moment of a run that checkpoints every epoch."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "run.py"
    script.write_text(
        "import sys, numpy as np\n"
        "from prelens.nn import linear, mse\n"
        "from prelens.optim import adam\n"
        "from prelens.train import fit\n"
        "xs = np.random.default_rng(0).standard_normal((64, 8)); ys = xs @ np.ones((8, 2))\n"
        "print('ready', flush=True)\n"
        "out = fit(linear(8, 2), mse, (xs, ys), 10**6, 64, adam(0.01), 0, progress=False,\n"
        f"          checkpoint_every=1, checkpoint_path={str(tmp_path / 'ck.npz')!r})\n"
        "print('returned', out.history.interrupted, out.history.steps, flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    for _ in range(600):  # until the first checkpoint is on disk: training is under way
        if (tmp_path / "ck.npz").exists():
            break
        time.sleep(0.05)
    time.sleep(0.1)  # some more epochs, each ending in a checkpoint write
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()  # a child that missed the signal must not train on after the test
    assert proc.returncode == 0, err
    _, interrupted, steps = out.split()
    assert interrupted == "True" and int(steps) > 0
    assert load_metadata(tmp_path / "ck.npz")["history"]["steps"] == int(steps)


def test_fit_with_checkpoints_runs_in_another_thread(tmp_path: Path):
    """Signals are the main thread's: elsewhere fit and its checkpoints just run."""
    import threading

    results: list[Any] = []
    path = tmp_path / "t.npz"

    def work() -> None:
        try:
            results.append(fit(affine_lens(), half_squares(), (XS, YS), 3, 4, sgd(0.01), 0, progress=False,
                               checkpoint_every=1, checkpoint_path=str(path)))  # fmt: skip
        except BaseException as err:
            results.append(err)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert isinstance(results[0], tuple) and results[0].history.epochs == 3
    assert load_metadata(path)["epoch"] == 3


def test_backend_auto_without_jax_trains_on_numpy_exactly(monkeypatch: pytest.MonkeyPatch):
    from prelens.train import _plan

    monkeypatch.setattr(_plan, "jax_importable", lambda: False)  # as on a machine without JAX
    monkeypatch.setattr(_plan, "AUTO_JAX_MIN_WORK", 0)  # even a run big enough for JAX
    rng = np.random.default_rng(3)
    xs, ys = rng.standard_normal((40, 3)), rng.standard_normal((40, 2))
    model = mlp(3, [5, 2])
    out = io.StringIO()
    auto = fit(model, mse, (xs, ys), 3, 8, adam(0.01), rng=0, backend="auto", progress=True, stream=out)
    plain = fit(model, mse, (xs, ys), 3, 8, adam(0.01), rng=0, progress=False)
    forced = fit(model, mse, (xs, ys), 3, 8, adam(0.01), rng=0, backend="numpy", progress=False)
    assert out.getvalue().startswith("epoch 1/3  [numpy (backend=auto)]  loss ")
    assert auto.history.loss == plain.history.loss == forced.history.loss
    assert tree_allclose(auto.params, plain.params, rtol=0, atol=0)
    assert tree_allclose(forced.params, plain.params, rtol=0, atol=0)


def test_progress_tag_follows_the_epoch():
    out = io.StringIO()
    Progress(2, 3, out, live=False, tag="numpy").epoch_end(1, 0.5, {})
    assert out.getvalue() == "epoch 1/2  [numpy]  loss 0.5000\n"
    with pytest.raises(PrelensError, match="tag"):
        Progress(2, 3, out, tag=3)  # type: ignore[arg-type]


def test_a_step_with_a_dropout_key_reuses_the_step_it_composed() -> None:
    # with key= every call composed (and checked in full) a new step lens: about twice a step's time in a loop
    from prelens import chain
    from prelens.nn import dropout, relu
    from prelens.train import _step

    model, opt = chain(dense(3, 4, relu), dropout(0.5), dense(4, 1, None)), sgd(0.1)
    params, batch = model.init(0), (np.ones((2, 3)), np.zeros((2, 1)))
    state = opt.init(params)
    _step._MADE.clear()
    for key in range(3):
        params, state, _ = step(model, mse, params, batch, opt, state, key=key)
    assert len(_step._MADE) == 1
