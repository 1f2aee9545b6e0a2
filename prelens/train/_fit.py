"""The training loop: :func:`fit` checks and plans the run (:mod:`prelens.train._plan`), then :func:`_train` and
:func:`_epoch` run it on a :class:`~prelens.train._run.Run`, which holds the last good state and saves it
(:mod:`prelens.train._resume` reads it back, so ``resume=`` takes the very steps an uninterrupted run would).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TextIO

import numpy as np

from prelens.backend._arrays import to_backend
from prelens.core._lens import AnyLens
from prelens.core._tree import tree_leaves
from prelens.io._sigint import deferred_sigint, noted_sigint
from prelens.train._data import take
from prelens.train._evaluate import evaluate
from prelens.train._history import History, number
from prelens.train._plan import Metric, Plan, check_args, plan, start
from prelens.train._run import Run
from prelens.train._runtime import blas_threads as _blas_threads

Tree = Any

__all__ = ["FitResult", "History", "Metric", "fit"]


class FitResult(NamedTuple):
    """What :func:`fit` returns: unpack as ``params, opt_state, history = fit(...)``.

    >>> import numpy as np
    >>> params, opt_state, history = FitResult(np.zeros(2), (), History(loss=[1.0]))
    >>> params.shape, opt_state, history.epochs
    ((2,), (), 1)
    """

    params: Tree
    opt_state: Any
    history: History


def fit(
    model: AnyLens,
    loss: AnyLens,
    data: tuple[Any, Any],
    epochs: int,
    batch_size: int,
    optimizer: Any,
    rng: np.random.Generator | int | None = None,
    *,
    params: Tree = None,
    opt_state: Any = None,
    validation: tuple[Any, Any] | None = None,
    metrics: Mapping[str, Metric] | None = None,
    train_metrics: bool = False,
    penalty: AnyLens | None = None,
    callbacks: Sequence[Any] | None = (),
    shuffle: bool = True,
    progress: bool | None = None,
    stream: TextIO | None = None,
    checkpoint_every: int | None = None,
    checkpoint_path: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    backend: Any = None,
    mesh: Any = None,
    blas_threads: int | str | None = "auto",
) -> FitResult:
    """Train ``model >> loss`` on ``data = (xs, targets)`` with mini-batches.

    Shapes: ``xs`` and ``targets`` share their leading (batch) axis of length ``n``; ``targets`` is what ``loss``
    takes as its parameter (integer labels ``(n,)`` for ``softmax_cross_entropy``, ``(n, k)`` floats for ``mse``).
    Each epoch visits every row once, in batches of ``batch_size`` (the last one smaller), reshuffled with ``rng``
    unless ``shuffle=False``. Float data is cast to the parameters' dtype once, before training.

    ``optimizer``: an optimiser of :mod:`prelens.learn`, or its lens ``opt.lens``; each batch is one :func:`step`.
    ``penalty`` (``prelens.learn.l2(1e-4)``) is added to the loss minimised and to ``history.loss``, not to
    ``val_loss`` and ``train_loss``. ``params`` defaults to ``model.init(rng)``, ``opt_state`` to the optimiser's
    initial state. ``metrics`` (``{"accuracy": accuracy}``) are recorded after every epoch as ``val_<name>`` on
    ``validation = (xs, targets)`` (with ``val_loss``; its first row is run through the model and loss before
    training, so that a misfit is an error then) and, with ``train_metrics=True``, as ``train_<name>`` on the
    training data (with ``train_loss``); ``metrics`` with neither is an error. ``callbacks``: objects with
    ``on_epoch_end(epoch, history, params, opt_state) -> bool`` (``True`` stops; see :class:`Callback`).

    ``progress``: ``None`` shows a status line only when ``stream`` (default ``sys.stdout``) is a terminal; ``True``
    always; ``False`` never. ``checkpoint_path``: save the parameters, optimiser state, history and position of
    training there every ``checkpoint_every`` epochs (if given), at the end, and when training stops early.
    ``resume``: such a checkpoint; training continues from it up to ``epochs`` epochs in all, bit for bit as the
    uninterrupted run (a run a callback stopped stays stopped).

    ``backend``: train on another array library (``"jax"``, ``"torch"``, ``"array_api_strict"``): the parameters,
    optimiser state and data are moved there once and the result stays there; on ``"jax"`` each step is one
    compiled program (:func:`compile_step`), data-parallel over ``mesh`` (a :class:`jax.sharding.Mesh`). By default
    the parameters' own library (data of another is refused, before training). ``backend="auto"``: the compiled
    JAX step when JAX is installed and the run suits it (numpy parameters and data in float32/float64, no dropout,
    no mesh, the step traces on JAX, and the run is large enough to repay compiling), numpy otherwise; the progress
    line says which, and the result (and the state callbacks are shown and an error carries) is numpy either way,
    equal to numpy's run to about 1e-12 in float64 (docs/performance.md).
    ``blas_threads``: on numpy, the BLAS threads for the run (see :func:`blas_threads`; ``None`` leaves BLAS alone).

    Returns :class:`FitResult` ``(params, opt_state, history)`` (copies: never the objects passed in). On Ctrl-C it
    returns what was learned so far with ``history.interrupted = True``. Raises :class:`~prelens.NonFiniteError` for
    data or parameters holding NaN or infinity (before the first step, naming the row or leaf), and on a non-finite
    loss, gradient or update. That error, and any other exception that stops training, carries the last good state
    (``err.params``, ``err.opt_state``, ``err.history``); with ``checkpoint_path`` that state is also saved.

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.learn import sgd
    >>> xs = np.random.default_rng(0).standard_normal((32, 2))
    >>> ys = xs @ np.array([[2.0], [-1.0]])
    >>> params, _, history = fit(linear(2, 1), mse, (xs, ys), 20, 8, sgd(0.1), rng=0, progress=False)
    >>> params.round(2).ravel().tolist(), history.epochs, history.loss[-1] < 1e-3
    ([2.0, -1.0], 20, True)
    """
    checked = check_args(**locals())  # every argument, before any work: a mistake is one clear error
    the_plan, at = plan(checked, start(checked))  # where training starts; the data, the step strategy
    run = Run(the_plan, at)
    with _threads(the_plan, run.position.params):
        return _train(run)


def _train(run: Run) -> FitResult:
    """The epochs, and whatever ends them: the last epoch, a callback, Ctrl-C, an error (the last good state kept)."""
    a = run.plan.args
    with noted_sigint() as lost:  # a Ctrl-C that a finalizer dropped still stops at the next batch
        try:
            stopped = run.early_stopped
            if not stopped and run.history.epochs > run.callbacks_done:
                stopped = run.ask_callbacks(run.history.epochs)  # a stop cut them short: ask them again
            for epoch in range(run.history.epochs + 1, a.epochs + 1):
                if stopped:
                    break
                _epoch(run, epoch, lost)
                stopped = run.ask_callbacks(epoch)
                if a.checkpoint_every and epoch % a.checkpoint_every == 0 and epoch < a.epochs and not stopped:
                    run.checkpoint(warn=True)
            run.plan.bar.close(run.history.stopped or "")
            if a.checkpoint_path is not None:
                run.checkpoint(warn=True)
        except KeyboardInterrupt:
            with deferred_sigint(absorb=True):  # already stopping: a second Ctrl-C must not lose the result
                return FitResult(*run.interrupted())
        except BaseException as err:
            with deferred_sigint(absorb=True):
                run.failed(err)
            raise
    return FitResult(*run.result(finished=True))


def _epoch(run: Run, epoch: int, lost: Callable[[], None]) -> None:
    """One epoch: its batches (from where a resumed run stopped), then its scores, recorded whole; ``lost()``
    raises a Ctrl-C that came and was dropped (:func:`~prelens.io._sigint.noted_sigint`)."""
    p, a = run.plan, run.plan.args
    started = time.perf_counter()
    order = run.gen.permutation(a.n) if a.shuffle else None
    keys = run.gen.integers(0, 2**63, size=p.n_batches) if p.dropout else None
    xs, ys = p.data
    for b in range(run.position.batch, p.n_batches):
        lost()
        lo, hi = b * a.batch_size, min(a.n, (b + 1) * a.batch_size)
        inputs = take(xs, order, lo, hi)
        batch = ((int(keys[b]), inputs) if keys is not None else inputs, take(ys, order, lo, hi))
        run.where = f"epoch {epoch}/{a.epochs}, batch {b + 1}/{p.n_batches}"
        value = run.step(batch)
        p.bar.batch_end(epoch, b + 1, value, hi - lo)
    run.where = f"the end of epoch {epoch}/{a.epochs}"
    scores = _scores(p, run.position.params)
    lost()
    run.epoch_done(run.position.total / p.n_batches, scores, time.perf_counter() - started)
    p.bar.epoch_end(epoch, run.history.loss[-1], scores)


def _scores(p: Plan, params: Tree) -> dict[str, float]:
    """The epoch's metrics in evaluation mode: on the training data (``train_metrics``), then the validation data."""
    a = p.args
    scores: dict[str, float] = {}
    if p.to_host:  # backend="auto" on JAX: eager JAX would compile every operation of the model anew
        params = to_backend(params, "numpy")
    sets = [("train", p.data)] if a.train_metrics else []
    if p.validation is not None:
        sets.append(("val", p.validation))
    for prefix, (xs, ys) in sets:
        scores[f"{prefix}_loss"] = evaluate(a.model, a.loss, params, xs, ys)
        for name, metric in a.metrics.items():
            scores[f"{prefix}_{name}"] = number(
                f"fit: the value of the metric {name!r}", metric(a.model, params, xs, ys)
            )
    return scores


def _threads(p: Plan, params: Tree) -> contextlib.AbstractContextManager[Any]:
    """On numpy, the BLAS threads the run takes (``blas_threads``), restored after it."""
    a, leaves = p.args, tree_leaves(p.data[0])
    on_numpy = (a.xp is None or a.xp is np) and bool(leaves) and isinstance(leaves[0], np.ndarray)
    if a.blas_threads is None or not on_numpy:
        return contextlib.nullcontext()
    return _blas_threads(a.blas_threads, params=params, batch=take(p.data[0], None, 0, a.batch_size))
