"""The training loop: shuffled mini-batches, metrics per epoch, and no lost work.

``fit`` never loses what it has learned:

* a non-finite loss or gradient stops training with
  :class:`~prelens.NonFiniteError` (a ``TrainingNonFiniteError``) naming the
  epoch, the batch and the first non-finite leaf by its tree path; the last
  good parameters, optimiser state and history ride on the error as
  ``.params``, ``.opt_state`` and ``.history``; nothing the caller holds is
  ever overwritten (the optimisers are pure);
* Ctrl-C (``KeyboardInterrupt``) ends training early and *returns* the
  parameters after the last completed step, with ``history.interrupted``
  set;
* with ``checkpoint_path``, the parameters and optimiser state are saved
  atomically every ``checkpoint_every`` epochs, at the end, and when training
  stops early.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TextIO

import numpy as np

from .. import _args
from .. import _errors as E
from .._lens import AnyLens
from .._tree import tree_first_nonfinite, tree_leaves, tree_map, tree_paths
from ..optim import Optimizer
from ._evaluate import evaluate
from ._progress import Progress
from ._step import value_and_grad_of

Tree = Any
#: A metric: ``metric(model, params, xs, targets) -> float``, e.g. :func:`accuracy`.
Metric = Callable[[AnyLens, Tree, Any, Any], float]

__all__ = ["FitResult", "History", "fit"]


@dataclass
class History:
    """What happened during :func:`fit`; every list has one entry per completed epoch.

    ``loss``: the mean of the batch losses of each epoch. ``metrics``:
    ``"val_loss"`` and ``"val_<name>"`` for each metric, on the validation data.
    ``seconds``: wall time of each epoch. ``steps``: optimiser steps taken in all.
    ``interrupted``: training was stopped by ``KeyboardInterrupt``;
    ``stopped``: why training ended early (``None`` if it ran to the end).

    >>> h = History(loss=[0.5, float("nan")], steps=8)
    >>> h.epochs, h.as_dict()["loss"]
    (2, [0.5, None])
    """

    loss: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    steps: int = 0
    interrupted: bool = False
    stopped: str | None = None

    @property
    def epochs(self) -> int:
        """The number of completed epochs."""
        return len(self.loss)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (non-finite numbers become ``None``)."""
        return {
            "loss": [_finite_or_none(x) for x in self.loss],
            "metrics": {k: [_finite_or_none(x) for x in v] for k, v in self.metrics.items()},
            "seconds": list(self.seconds),
            "steps": self.steps,
            "interrupted": self.interrupted,
            "stopped": self.stopped,
        }


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
    optimizer: Optimizer[Any],
    rng: np.random.Generator | int | None = None,
    *,
    params: Tree = None,
    opt_state: Any = None,
    validation: tuple[Any, Any] | None = None,
    metrics: Mapping[str, Metric] | None = None,
    shuffle: bool = True,
    progress: bool | None = None,
    stream: TextIO | None = None,
    checkpoint_every: int | None = None,
    checkpoint_path: str | None = None,
) -> FitResult:
    """Train ``model >> loss`` on ``data = (xs, targets)`` with mini-batches.

    Haskell::

        fit :: Lens -> Loss -> (X, Y) -> Int -> Int -> Optimizer s -> Gen -> (Params, s, History)

    Shapes: ``xs`` and ``targets`` share their leading (batch) axis of length
    ``n``; ``targets`` is what ``loss`` takes as its parameter (integer labels
    ``(n,)`` for ``softmax_cross_entropy``, ``(n, k)`` floats for ``mse``).
    Each epoch visits every row once, in batches of ``batch_size`` (the last
    one smaller), reshuffled with ``rng`` unless ``shuffle=False``.

    ``params`` defaults to ``model.init(rng)``; ``opt_state`` to
    ``optimizer.init(params)`` (pass both to resume). With ``validation =
    (xs, targets)`` the history records ``val_loss`` and, for each
    ``metrics`` entry ``name: f``, ``val_<name>`` = ``f(model, params, xs, targets)``
    after every epoch (e.g. ``metrics={"accuracy": accuracy}``).

    ``progress``: ``None`` shows a status line only when ``stream`` (default
    ``sys.stdout``) is a terminal; ``True`` always (a line per epoch on
    non-terminals); ``False`` never. ``checkpoint_path``: save
    ``{"params": ..., "opt_state": ...}`` there (see :mod:`prelens.checkpoint`;
    the history goes in its metadata) every ``checkpoint_every`` epochs (if
    given), at the end, and when training stops early.

    Returns :class:`FitResult` ``(params, opt_state, history)``. On Ctrl-C it
    returns what was learned so far with ``history.interrupted = True``.
    Raises :class:`~prelens.NonFiniteError` for data holding NaN or infinity
    (before the first step, naming the row), and on a non-finite loss or
    gradient, with the last good state attached (``err.params``,
    ``err.opt_state``, ``err.history``).

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.optim import sgd
    >>> xs = np.random.default_rng(0).standard_normal((32, 2))
    >>> ys = xs @ np.array([[2.0], [-1.0]])
    >>> params, _, history = fit(linear(2, 1), mse, (xs, ys), 20, 8, sgd(0.1), rng=0, progress=False)
    >>> params.round(2).ravel().tolist(), history.epochs, history.loss[-1] < 1e-3
    ([2.0, -1.0], 20, True)
    """
    _check_args(epochs, batch_size, checkpoint_every, checkpoint_path)
    _args.lens("fit", "model", model)
    _args.lens("fit", "loss", loss)
    _args.optimizer("fit", optimizer)
    shuffle = _args.flag("fit", "shuffle", shuffle)
    if progress is not None:
        progress = _args.flag("fit", "progress", progress)
    xs, ys = _args.batch("fit", data, "data")
    n = _rows(xs, ys)
    gen = _args.seed("fit", rng)
    if params is None:
        params = model.init(gen)
    if opt_state is None:
        opt_state = optimizer.init(params)
    out = sys.stdout if stream is None else _args.text_stream("fit", "stream", stream)
    live = _isatty(out)
    n_batches = max(1, math.ceil(n / batch_size))
    bar = Progress(epochs, n_batches, out, live=live, enabled=progress if progress is not None else live)
    history = History()
    run = _Run(model, loss, optimizer, history, checkpoint_path, params, opt_state)
    try:
        for epoch in range(1, epochs + 1):
            started = time.perf_counter()
            order = gen.permutation(n) if shuffle else None
            total = 0.0
            for b in range(n_batches):
                lo, hi = b * batch_size, min(n, (b + 1) * batch_size)
                batch = (_take(xs, order, lo, hi), _take(ys, order, lo, hi))
                where = f"epoch {epoch}/{epochs}, batch {b + 1}/{n_batches}"
                value = run.step(batch, where)
                total += value
                bar.batch_end(epoch, b + 1, value, hi - lo)
            scores = _validate(model, loss, run.params, validation, metrics)
            history.loss.append(total / n_batches)
            for name, value in scores.items():
                history.metrics.setdefault(name, []).append(value)
            history.seconds.append(time.perf_counter() - started)
            bar.epoch_end(epoch, history.loss[-1], scores)
            if checkpoint_every and epoch % checkpoint_every == 0 and epoch < epochs:
                run.checkpoint()
    except KeyboardInterrupt:
        history.interrupted = True
        history.stopped = f"interrupted after {history.steps} steps ({history.epochs} complete epochs)"
        bar.close(f"training {history.stopped}")
        run.checkpoint()
        return FitResult(run.params, run.opt_state, history)
    except E.TrainingNonFiniteError as err:
        history.stopped = str(err)
        bar.close()
        run.checkpoint()
        raise
    bar.close()
    if checkpoint_path is not None:
        run.checkpoint()
    return FitResult(run.params, run.opt_state, history)


class _Run:
    """The state of one run: the current and previous parameters, and how to step and save."""

    def __init__(
        self,
        model: AnyLens,
        loss: AnyLens,
        optimizer: Optimizer[Any],
        history: History,
        checkpoint_path: str | None,
        params: Tree,
        opt_state: Any,
    ) -> None:
        self.trained = model >> loss  # composed once for the whole run
        self.optimizer, self.history = optimizer, history
        self.checkpoint_path = checkpoint_path
        self.state = (params, opt_state)  # replaced as a whole: never half-updated
        self.previous = self.state
        self.initial = self.state

    @property
    def params(self) -> Tree:
        return self.state[0]

    @property
    def opt_state(self) -> Any:
        return self.state[1]

    def step(self, batch: tuple[Any, Any], where: str) -> float:
        params, opt_state = self.state
        value, grads = value_and_grad_of(self.trained, params, batch)
        if not math.isfinite(value) or not _all_finite(grads):
            raise self._non_finite(value, grads, where)
        new = self.optimizer.update(grads, opt_state, params)
        self.previous, self.state = self.state, new
        self.history.steps += 1
        return value

    def _non_finite(self, value: float, grads: Tree, where: str) -> E.TrainingNonFiniteError:
        params = self.params
        bad_param = tree_first_nonfinite(params)
        bad_grad = tree_first_nonfinite(grads)
        if bad_param is not None:
            what, detail = "the parameters", f"first non-finite leaf: params{_leaf(bad_param)}"
        elif not math.isfinite(value):
            what, detail = "the loss", f"loss = {value}"
            if bad_grad is not None:
                detail += f"; first non-finite gradient leaf: grads{_leaf(bad_grad)}"
        else:
            what, detail = "the gradient", f"first non-finite leaf: grads{_leaf(bad_grad or '')}"
        # The last good state: the current one unless the parameters themselves went bad.
        for candidate in (self.state, self.previous, self.initial):
            if tree_first_nonfinite(candidate[0]) is None:
                self.state = candidate
                break
        return E.training_non_finite(what, where, detail, self.params, self.opt_state, self.history)

    def checkpoint(self) -> None:
        """Save the current state; a failure is a warning (training state stays in memory)."""
        if self.checkpoint_path is None:
            return
        from ..checkpoint import save

        meta = {"history": self.history.as_dict(), "epoch": self.history.epochs}
        try:
            save(self.checkpoint_path, {"params": self.params, "opt_state": self.opt_state}, metadata=meta)
        except E.CheckpointError as err:
            warnings.warn(f"fit: checkpoint not saved: {err}", RuntimeWarning, stacklevel=3)


def _validate(
    model: AnyLens,
    loss: AnyLens,
    params: Tree,
    validation: tuple[Any, Any] | None,
    metrics: Mapping[str, Metric] | None,
) -> dict[str, float]:
    if validation is None:
        return {}
    xs, ys = validation
    scores = {"val_loss": evaluate(model, loss, params, xs, ys)}
    for name, metric in (metrics or {}).items():
        scores[f"val_{name}"] = float(metric(model, params, xs, ys))
    return scores


def _all_finite(tree: Tree) -> bool:
    """True when every float leaf is finite.

    One BLAS dot product per array leaf (NaN and ±inf propagate into ``x·x``);
    only when that overflows or is non-finite does the exact, allocating check run.
    """
    for leaf in tree_leaves(tree):
        if isinstance(leaf, np.ndarray):
            kind = leaf.dtype.kind
            if kind == "f":
                flat = leaf.ravel()
                with np.errstate(over="ignore", invalid="ignore"):
                    suspicious = not np.isfinite(np.dot(flat, flat))
            else:
                suspicious = kind == "c" and not np.isfinite(leaf.sum())
            if suspicious:
                return tree_first_nonfinite(tree) is None  # x·x can overflow on finite values
        elif isinstance(leaf, (float, np.floating)) and not math.isfinite(leaf):
            return False
    return True


def _leaf(path: str) -> str:
    return "" if path == "<root>" else path


def _take(tree: Any, order: np.ndarray | None, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of every array in ``tree`` (through the permutation ``order``)."""
    if order is None:
        return tree_map(lambda a: a[lo:hi], tree)
    idx = order[lo:hi]
    return tree_map(lambda a: a[idx], tree)


def _rows(xs: Any, ys: Any) -> int:
    for leaf in tree_leaves((xs, ys)):
        if not isinstance(leaf, np.ndarray) or leaf.ndim == 0:
            raise E.bad_argument(
                "fit", "data", E.describe_tree((xs, ys)), "(xs, targets) of arrays with a leading batch axis"
            )
    lengths = {len(a) for a in tree_leaves((xs, ys))}
    if len(lengths) != 1:
        raise E.bad_argument("fit", "data", f"leading lengths {sorted(lengths)}", "(xs, targets) of one length")
    (n,) = lengths
    if n == 0:
        raise E.bad_argument("fit", "data", "0 rows", "at least one row")
    for path, leaf in tree_paths((xs, ys)):
        if leaf.dtype.kind in "fc" and not np.isfinite(leaf).all():
            bad_rows = ~np.isfinite(leaf.reshape(n, -1)).all(axis=1)
            raise E.data_non_finite("fit", E.path_str(path), int(np.argmax(bad_rows)))
    return n


def _check_args(epochs: int, batch_size: int, every: int | None, path: str | None) -> None:
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 0:
        raise E.bad_argument("fit", "epochs", epochs, "an int >= 0")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise E.bad_argument("fit", "batch_size", batch_size, "an int >= 1")
    if every is not None and (not isinstance(every, int) or isinstance(every, bool) or every < 1):
        raise E.bad_argument("fit", "checkpoint_every", every, "an int >= 1 or None")
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise E.bad_argument("fit", "checkpoint_path", path, "a file path (str or os.PathLike) or None")
    if every is not None and path is None:
        raise E.bad_argument("fit", "checkpoint_path", path, "a file path when checkpoint_every is given")


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None
