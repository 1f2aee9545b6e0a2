"""fit's callbacks (early stopping, the best checkpoint, the learning-rate log) and exact resuming.

The issue's bar: a small image classifier trained with dropout, AdamW, warm-up + cosine and early
stopping, resumed from a checkpoint mid-run bit for bit, and evaluated with predict_proba and
confusion_matrix (:func:`test_an_image_classifier_with_the_whole_kit`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prelens import PreLens, PrelensError, chain, learn
from prelens import learn as optim
from prelens.core import tree_leaves
from prelens.datasets import load_dataset, load_iris
from prelens.errors import ArgumentError, CheckpointError
from prelens.io import load_checkpoint, load_metadata, save_checkpoint
from prelens.nn import dense, dropout, mlp, softmax_cross_entropy
from prelens.train import (
    CheckpointBest,
    EarlyStopping,
    History,
    LearningRateLogger,
    accuracy,
    confusion_matrix,
    fit,
    predict_proba,
)

IRIS = load_iris(rng=1, standardize_features=True)
DATA = (IRIS.x_train, IRIS.y_train)
VALID = (IRIS.x_test, IRIS.y_test)
NET = chain(dense(4, 32, "relu"), dropout(0.3), dense(32, 3, None))
SCHED = optim.warmup_cosine(0.03, warmup=8, total=120, final=0.001)


def same(a: Any, b: Any) -> bool:
    """Bit-identical trees (every leaf ``np.array_equal``)."""
    la, lb = tree_leaves(a), tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb))


def history_of(h: History) -> dict[str, Any]:
    d = h.as_dict()
    del d["seconds"]  # wall time: the one thing a resumed run cannot repeat
    return d


def kit(opt: Any) -> dict[str, Any]:
    """Everything that must travel in the checkpoint: dropout keys, schedule, metrics, callbacks."""
    return {
        "rng": 7,
        "progress": False,
        "validation": VALID,
        "metrics": {"accuracy": accuracy},
        "train_metrics": True,
        "penalty": learn.l2(1e-4),
        "callbacks": [EarlyStopping("val_loss", patience=50), LearningRateLogger(opt)],
    }


# ------------------------------------------------------------------ resuming


@pytest.mark.parametrize("form", ["optim", "learn"])
def test_half_a_run_saved_and_resumed_in_a_fresh_call_is_the_whole_run(form: str, tmp_path: Path):
    opt = optim.adamw(SCHED) if form == "optim" else learn.adamw(SCHED)
    path = tmp_path / "half.npz"
    whole = fit(NET, softmax_cross_entropy, DATA, 6, 16, opt, **kit(opt))
    half = fit(NET, softmax_cross_entropy, DATA, 3, 16, opt, checkpoint_path=path, **kit(opt))
    assert half.history.epochs == 3 and load_metadata(path)["fit"]["batch"] == 0
    rest = fit(NET, softmax_cross_entropy, DATA, 6, 16, opt, resume=path, **kit(opt))
    assert same(rest.params, whole.params) and same(rest.opt_state, whole.opt_state)
    assert history_of(rest.history) == history_of(whole.history)
    assert rest.history.epochs == 6 and len(rest.history.seconds) == 6 and rest.history.steps == 48
    assert rest.history.metrics["lr"] == [SCHED(8 * e - 1) for e in range(1, 7)]
    assert not same(half.params, whole.params)


class Interrupt:
    """A parameter-free identity lens that raises ``KeyboardInterrupt`` on its ``k``-th training call.

    The 120 Iris rows make batches of 16 (seven) and 8: seven calls an epoch are counted.
    """

    def __init__(self, k: int | None) -> None:
        self.k, self.calls = k, 0

    def lens(self) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
        def fwd(p: tuple[()], x: np.ndarray) -> tuple[tuple[()], np.ndarray]:
            if len(x) == 16:  # a training batch (evaluation runs on whole sets)
                self.calls += 1
                if self.calls == self.k:
                    raise KeyboardInterrupt
            return (), x

        return PreLens(fwd, lambda m, da: ((), da), "interrupt", lambda g: ())


def test_a_run_stopped_by_ctrl_c_mid_epoch_resumes_bit_for_bit(tmp_path: Path):
    path = tmp_path / "stop.npz"
    opt = optim.adam(SCHED)
    whole = fit(Interrupt(None).lens() >> NET, softmax_cross_entropy, DATA, 4, 16, opt, **kit(opt))
    stopped = fit(Interrupt(12).lens() >> NET, softmax_cross_entropy, DATA, 4, 16, opt, checkpoint_path=path,
                  **kit(opt))  # fmt: skip
    assert stopped.history.interrupted and stopped.history.steps == 12 and stopped.history.epochs == 1
    position = load_metadata(path)["fit"]
    assert (position["batch"], position["batches"]) == (4, 8)  # epoch 2 was half done
    rest = fit(Interrupt(None).lens() >> NET, softmax_cross_entropy, DATA, 4, 16, opt, resume=path, **kit(opt))
    assert same(rest.params, whole.params) and history_of(rest.history) == history_of(whole.history)


@pytest.mark.parametrize("bits", [np.random.Philox, np.random.MT19937, np.random.SFC64])
def test_resuming_continues_any_of_numpys_generators(bits: Any, tmp_path: Path):
    path = tmp_path / "c.npz"
    kw: dict[str, Any] = {"progress": False}
    whole = fit(NET, softmax_cross_entropy, DATA, 4, 16, optim.adam(0.01), rng=np.random.Generator(bits(5)), **kw)
    fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.01), rng=np.random.Generator(bits(5)),
        checkpoint_path=path, **kw)  # fmt: skip
    assert load_metadata(path)["fit"]["rng"]["bit_generator"] == bits.__name__
    rest = fit(NET, softmax_cross_entropy, DATA, 4, 16, optim.adam(0.01), resume=path, **kw)
    assert same(rest.params, whole.params) and rest.history.loss == whole.history.loss


def test_resuming_with_more_epochs_continues_the_history(tmp_path: Path):
    path = tmp_path / "c.npz"
    first = fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.01), rng=0, progress=False, checkpoint_path=path)
    more = fit(NET, softmax_cross_entropy, DATA, 5, 16, optim.adam(0.01), progress=False, resume=path,
               checkpoint_path=path)  # fmt: skip
    assert more.history.epochs == 5 and more.history.loss[:2] == first.history.loss
    assert load_metadata(path)["epoch"] == 5
    done = fit(NET, softmax_cross_entropy, DATA, 3, 16, optim.adam(0.01), progress=False, resume=path)
    assert done.history.epochs == 5 and same(done.params, more.params)  # nothing left to do


def test_resume_refusals(tmp_path: Path):
    plain = tmp_path / "plain.npz"
    save_checkpoint(plain, {"params": NET.init(0), "opt_state": optim.adam(0.1).init(NET.init(0))})
    with pytest.raises(CheckpointError, match=r"cannot resume from it: it holds no training position"):
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), progress=False, resume=plain)
    path = tmp_path / "c.npz"
    fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.1), rng=0, progress=False, checkpoint_path=path)
    with pytest.raises(ArgumentError, match=r"^fit: params must be None with resume= \(the checkpoint holds it\)"):
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), params=NET.init(0), resume=path)
    with pytest.raises(CheckpointError, match=r"does not fit the model"):
        fit(mlp(4, [5, 3]), softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), progress=False, resume=path)
    with pytest.raises(CheckpointError, match=r"does not fit the model"):  # another optimiser's state
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.sgd(0.1), progress=False, resume=path)
    with pytest.raises(CheckpointError, match=r"no such file"):
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), progress=False, resume=tmp_path / "none.npz")
    with pytest.raises(ArgumentError, match=r"^fit: resume must be a checkpoint's path"):
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), progress=False, resume=3)
    # a damaged or hostile training position
    tree, meta = load_checkpoint(path), load_metadata(path)
    for key, value, why in [
        ("rng", {"bit_generator": "os.system", "state": {}}, "shuffling generator is damaged"),
        ("rng", {**meta["fit"]["rng"], "state": {"state": "x", "inc": 1}}, "shuffling generator is damaged"),
        ("batch", -1, "training position"),
        ("batch", 9, "training position"),
        ("loss_sum", "nan", "loss_sum"),
        ("version", 2, "format 2"),
    ]:
        hostile = tmp_path / "hostile.npz"
        save_checkpoint(hostile, tree, metadata={**meta, "fit": {**meta["fit"], key: value}})
        with pytest.raises(CheckpointError, match=why):
            fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), progress=False, resume=hostile)
    save_checkpoint(hostile, tree, metadata={**meta, "history": {"loss": "x"}})
    with pytest.raises(CheckpointError, match=r"the history's loss is not a list of numbers"):
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.1), progress=False, resume=hostile)


def test_a_checkpoint_of_another_model_or_optimiser_of_the_same_shapes_is_refused(tmp_path: Path):
    """The parameters and state fit, but the run would not be the one resumed: tanh for relu, AdamW for Adam."""
    path = tmp_path / "c.npz"
    fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), rng=0, progress=False, checkpoint_path=path)
    tanh_net = chain(dense(4, 32, "tanh"), dropout(0.3), dense(32, 3, None))
    for model, opt, what, written in [
        (tanh_net, optim.adam(0.01), "model", r"dense\(4→32, relu\)"),
        (NET, optim.adamw(0.01), "optimizer", r"adam\(0\.01\)"),
        (NET, optim.adam(0.02), "optimizer", r"adam\(0\.01\)"),
    ]:
        with pytest.raises(
            CheckpointError, match=rf"cannot resume from it: it was written by a run of another {what}, .*{written}"
        ):
            fit(model, softmax_cross_entropy, DATA, 2, 16, opt, progress=False, resume=path)
    # the optimiser's lens is the same optimiser
    assert (
        fit(NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.01).lens, progress=False, resume=path).history.epochs
        == 2
    )
    # a schedule written as a function is known by its name, not by where it sits in memory (another process)
    fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.sgd(lambda t: 0.1), rng=0, progress=False, checkpoint_path=path)
    assert (
        fit(
            NET, softmax_cross_entropy, DATA, 2, 16, optim.sgd(lambda t: 0.1), progress=False, resume=path
        ).history.epochs
        == 2
    )


def test_resuming_with_restore_best_needs_the_best_parameters_in_the_checkpoint(tmp_path: Path):
    path = tmp_path / "c.npz"
    kw: dict[str, Any] = {"rng": 0, "progress": False}
    worst = EarlyStopping("loss", patience=10, mode="max", restore_best=False)  # loss falls: epoch 1 stays "best"
    fit(NET, softmax_cross_entropy, DATA, 3, 16, optim.adam(0.01), callbacks=[worst], checkpoint_path=path, **kw)
    restoring = EarlyStopping("loss", patience=10, mode="max")
    with pytest.raises(CheckpointError, match=r"it holds no best parameters for EarlyStopping\(monitor='loss'"):
        fit(NET, softmax_cross_entropy, DATA, 5, 16, optim.adam(0.01), callbacks=[restoring], resume=path, **kw)
    # a run that kept them resumes and hands back epoch 1
    fit(NET, softmax_cross_entropy, DATA, 3, 16, optim.adam(0.01), callbacks=[restoring], checkpoint_path=path, **kw)
    out = fit(NET, softmax_cross_entropy, DATA, 5, 16, optim.adam(0.01), callbacks=[restoring], resume=path, **kw)
    one = fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), **kw)
    assert out.history.epochs == 5 and out.history.best_epoch == 1 and same(out.params, one.params)


def test_resuming_mid_epoch_needs_the_same_batches(tmp_path: Path):
    path = tmp_path / "stop.npz"
    fit(Interrupt(3).lens() >> NET, softmax_cross_entropy, DATA, 2, 16, optim.adam(0.01), rng=0, progress=False,
        checkpoint_path=path)  # fmt: skip
    with pytest.raises(CheckpointError, match=r"stopped after batch 2 of 8 of an epoch, and this run has 4 batches"):
        fit(Interrupt(None).lens() >> NET, softmax_cross_entropy, DATA, 2, 32, optim.adam(0.01), resume=path)


# ------------------------------------------------------------------ callbacks


def test_early_stopping_reads_the_history_alone():
    h = History(loss=[1.0] * 6, metrics={"val_loss": [1.0, 0.8, 0.79, 0.81, 0.7, 0.75]})
    assert EarlyStopping(patience=2).best_epoch(h) == 5
    assert EarlyStopping(patience=2, min_delta=0.05).best_epoch(h) == 5  # 0.79 is not 0.05 better than 0.8
    assert EarlyStopping(patience=3, min_delta=0.15).best_epoch(h) == 2
    assert EarlyStopping(patience=5, min_delta=0.15).on_epoch_end(6, h, None, ()) is False
    assert EarlyStopping(patience=4, min_delta=0.15).on_epoch_end(6, h, None, ()) is True
    acc = History(loss=[1.0] * 3, metrics={"val_accuracy": [0.5, math.nan, 0.6]})
    assert EarlyStopping("val_accuracy", mode="max").best_epoch(acc) == 3
    assert EarlyStopping("val_accuracy", mode="min").best_epoch(acc) == 1
    assert EarlyStopping("val_accuracy").best_epoch(History(loss=[1.0], metrics={"val_accuracy": [math.nan]})) is None


def test_early_stopping_stops_and_hands_back_the_best_epoch(tmp_path: Path):
    best_file = tmp_path / "best.npz"
    opt = optim.adam(0.05)
    cbs = [EarlyStopping("val_loss", patience=2, min_delta=0.001), CheckpointBest(best_file, "val_loss")]
    out = fit(NET, softmax_cross_entropy, DATA, 60, 16, opt, rng=0, progress=False, validation=VALID, callbacks=cbs)
    h = out.history
    best = cbs[0].best_epoch(h)
    assert h.epochs < 60 and h.epochs - best == 2 and h.best_epoch == best
    assert h.stopped == (
        f"early stopping: val_loss did not improve for 2 epochs (the best was epoch {best}; handed back the "
        f"parameters of epoch {best})"
    )
    again = fit(NET, softmax_cross_entropy, DATA, best, 16, opt, rng=0, progress=False)  # the same run, cut there
    assert same(out.params, again.params) and same(out.opt_state, again.opt_state)
    saved = load_checkpoint(best_file, like={"params": again.params, "opt_state": again.opt_state})
    assert same(saved["params"], again.params) and load_metadata(best_file)["epoch"] == best
    kept = fit(NET, softmax_cross_entropy, DATA, 60, 16, opt, rng=0, progress=False, validation=VALID,
               callbacks=[EarlyStopping("val_loss", patience=2, min_delta=0.001, restore_best=False)])  # fmt: skip
    last = fit(NET, softmax_cross_entropy, DATA, h.epochs, 16, opt, rng=0, progress=False)
    assert same(kept.params, last.params) and kept.history.best_epoch is None


def test_an_early_stopped_run_stays_stopped_when_resumed(tmp_path: Path):
    path = tmp_path / "c.npz"
    kw: dict[str, Any] = {"rng": 0, "progress": False, "validation": VALID}
    stop = [EarlyStopping("val_loss", patience=2, min_delta=0.001)]
    out = fit(NET, softmax_cross_entropy, DATA, 60, 16, optim.adam(0.05), callbacks=stop, checkpoint_path=path, **kw)
    again = fit(NET, softmax_cross_entropy, DATA, 60, 16, optim.adam(0.05), callbacks=stop, resume=path, **kw)
    assert same(again.params, out.params) and history_of(again.history) == history_of(out.history)


class StopAt:
    """A user's callback: stop after epoch ``k``; a Ctrl-C the first time it is asked about ``interrupt_at``."""

    def __init__(self, k: int, interrupt_at: int | None = None) -> None:
        self.k, self.interrupt_at, self.asked = k, interrupt_at, []

    def on_epoch_end(self, epoch: int, history: History, params: Any, opt_state: Any) -> bool:
        self.asked.append(epoch)
        if epoch == self.interrupt_at:
            self.interrupt_at = None
            raise KeyboardInterrupt
        return epoch >= self.k

    def __repr__(self) -> str:
        return f"StopAt({self.k})"


def test_callbacks_cut_short_by_ctrl_c_are_asked_again_on_resume(tmp_path: Path):
    path = tmp_path / "c.npz"
    whole = fit(NET, softmax_cross_entropy, DATA, 6, 16, optim.adam(0.01), rng=0, progress=False, callbacks=[StopAt(3)])
    assert whole.history.epochs == 3 and whole.history.stopped == "stopped by the callback StopAt(3) after epoch 3"
    cut = StopAt(3, interrupt_at=3)
    out = fit(NET, softmax_cross_entropy, DATA, 6, 16, optim.adam(0.01), rng=0, progress=False, callbacks=[cut],
              checkpoint_path=path)  # fmt: skip
    assert out.history.interrupted and out.history.epochs == 3 and load_metadata(path)["fit"]["callbacks_done"] == 2
    again = StopAt(3)
    rest = fit(
        NET, softmax_cross_entropy, DATA, 6, 16, optim.adam(0.01), progress=False, callbacks=[again], resume=path
    )
    assert again.asked == [3] and same(rest.params, whole.params)
    assert history_of(rest.history) == history_of(whole.history)


def test_callbacks_see_read_only_parameters():
    class Meddler:
        def on_epoch_end(self, epoch: int, history: History, params: Any, opt_state: Any) -> bool:
            params[0].weight[0, 0] = 1.0
            return False

    with pytest.raises(ValueError, match="read-only") as info:
        fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), rng=0, progress=False, callbacks=[Meddler()])
    assert info.value.history.epochs == 1 and info.value.params[0].weight.flags.writeable  # type: ignore[attr-defined]


def test_the_learning_rate_log_follows_the_schedule():
    opt = learn.adam(SCHED) >> learn.clip_by_global_norm(1.0)
    out = fit(NET, softmax_cross_entropy, DATA, 3, 40, opt, rng=0, progress=False, callbacks=[LearningRateLogger(opt)])
    assert out.history.metrics["lr"] == [SCHED(2), SCHED(5), SCHED(8)]
    flat = fit(NET, softmax_cross_entropy, DATA, 2, 40, optim.sgd(0.1), rng=0, progress=False,
               callbacks=[LearningRateLogger(optim.clip_by_global_norm(optim.sgd(0.1), 1.0))])  # fmt: skip
    assert flat.history.metrics["lr"] == [0.1, 0.1]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: EarlyStopping(patience=0), r"^EarlyStopping: patience must be an int >= 1, got 0"),
        (lambda: EarlyStopping(mode="auto"), r"^EarlyStopping: mode must be 'min' or 'max', got 'auto'"),
        (lambda: EarlyStopping(min_delta=-1.0), r"^EarlyStopping: min_delta must be a finite number >= 0"),
        (lambda: EarlyStopping(monitor=""), r"^EarlyStopping: monitor must be the name of a series fit records"),
        (lambda: EarlyStopping(restore_best="no"), r"^EarlyStopping: restore_best must be True or False"),
        (lambda: CheckpointBest("/no/such/dir/best.npz"), r"^CheckpointBest: path cannot be written to"),
        (lambda: CheckpointBest(3), r"^CheckpointBest: path must be a file path"),
        (lambda: LearningRateLogger(object()), r"^LearningRateLogger: optimizer must be an optimiser with an lr"),
    ],
)
def test_callback_argument_errors(make: Any, match: str):
    with pytest.raises(PrelensError, match=match):
        make()


class KerasStyle:
    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        pass


@pytest.mark.parametrize(
    ("callbacks", "match"),
    [
        (
            [EarlyStopping("val_accuracy")],
            r"^fit: EarlyStopping monitors 'val_accuracy', which this fit does not "
            r"record; it records 'loss', 'val_loss'$",
        ),
        ([CheckpointBest("b.npz", "lr")], r"^fit: CheckpointBest monitors 'lr'"),
        ([EarlyStopping(), EarlyStopping("loss")], r"^fit: callbacks must be at most one callback that restores"),
        (EarlyStopping(), r"^fit: callbacks must be a list of callbacks"),
        ([EarlyStopping], r"^fit: callbacks must be a list of callbacks"),
        ([print], r"^fit: callbacks must be a list of callbacks"),
        (  # Keras's signature: it would fail after the first epoch's work
            [KerasStyle()],
            r"^fit: callbacks must be callbacks whose on_epoch_end takes \(epoch, history, params, opt_state\), "
            r"got 'KerasStyle\.on_epoch_end\(epoch, logs=None\)'$",
        ),
        (
            [LearningRateLogger(optim.sgd(0.5))],  # it would log 0.5 while adam(0.01) trains
            r"^fit: LearningRateLogger logs the lr of SGD\(lr=0\.5\), not the lr of the optimizer trained, "
            r"Adam\(lr=0\.01, ",
        ),
    ],
)
def test_fit_checks_its_callbacks_before_training(callbacks: Any, match: str):
    with pytest.raises(ArgumentError, match=match):
        fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), validation=VALID, callbacks=callbacks)


def f1_score(y_true: Any, y_pred: Any) -> float:  # scikit-learn's signature
    return 0.0


def test_a_metric_named_loss_is_refused_it_would_overwrite_val_loss():
    with pytest.raises(ArgumentError, match=r"^fit: metrics must be named other than 'loss' .*, got 'loss'$"):
        fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), validation=VALID, metrics={"loss": accuracy})


def test_fit_checks_its_metrics_take_model_params_xs_targets_before_training():
    """Not after the first epoch's work, when the metric is first called."""
    with pytest.raises(
        ArgumentError,
        match=r"^fit: metrics must be \{name: metric\(model, params, xs, targets\)\}, got 'f1: f1_score\(y_true, y_pred\)'$",
    ):
        fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), validation=VALID, metrics={"f1": f1_score})
    fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), validation=VALID, progress=False,
        metrics={"acc": accuracy, "any": lambda *args: 0.5, "kw": lambda model, params, xs, ys, **kw: 0.5})  # fmt: skip


def test_checkpoint_best_and_checkpoint_path_on_one_file_is_refused(tmp_path: Path):
    """Each would overwrite the other's file: the best parameters would be lost without a word."""
    path = tmp_path / "c.npz"
    with pytest.raises(ArgumentError, match=r"^fit: CheckpointBest writes to checkpoint_path .*c\.npz"):
        fit(NET, softmax_cross_entropy, DATA, 1, 16, optim.adam(0.01), validation=VALID, checkpoint_path=path,
            callbacks=[CheckpointBest(str(tmp_path / "." / "c.npz"))])  # fmt: skip
    assert not path.exists()


# ------------------------------------------------------------------ the bar


def test_an_image_classifier_with_the_whole_kit(tmp_path: Path):
    """8×8 digit images: dropout, AdamW, warm-up + cosine, early stopping, a resume mid-run, evaluation."""
    glyphs = load_dataset("glyphs", 0.2, rng=0)
    net = chain(dense(64, 64, "relu"), dropout(0.2), dense(64, 10, None))
    epochs, batch = 40, 32
    opt = optim.adamw(optim.warmup_cosine(0.01, warmup=25, total=epochs * 25), weight_decay=0.01)

    def train(n: int, **kw: Any) -> Any:
        return fit(net, softmax_cross_entropy, (glyphs.x_train, glyphs.y_train), n, batch, opt, rng=0, progress=False,
                   validation=(glyphs.x_test, glyphs.y_test), metrics={"accuracy": accuracy},
                   callbacks=[EarlyStopping("val_loss", patience=3)], **kw)  # fmt: skip

    whole = train(epochs)
    h = whole.history
    assert h.stopped is not None and h.stopped.startswith("early stopping") and h.best_epoch is not None
    path = tmp_path / "glyphs.npz"
    train(5, checkpoint_path=path)
    resumed = train(epochs, resume=path)
    assert same(resumed.params, whole.params) and history_of(resumed.history) == history_of(h)
    probs = predict_proba(net, resumed.params, glyphs.x_test)
    assert probs.shape == (200, 10) and np.allclose(probs.sum(axis=1), 1.0)
    cm = confusion_matrix(net, resumed.params, glyphs.x_test, glyphs.y_test)
    assert cm.shape == (10, 10) and cm.sum() == 200
    acc = accuracy(net, resumed.params, glyphs.x_test, glyphs.y_test)
    assert cm.trace() / cm.sum() == acc >= 0.85
    assert (probs.argmax(axis=1) == glyphs.y_test).mean() == acc
