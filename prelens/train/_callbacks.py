"""Callbacks: what :func:`~prelens.train.fit` asks after every epoch (stop? save? log?), see :class:`Callback`.

The three here are frozen values whose every decision is a function of the history alone, so a resumed run decides
exactly as an uninterrupted one.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import PreLens
from prelens.io._checkpoint import save_checkpoint, writable_path
from prelens.learn._optimizer import ScheduledState, find_optimizer, lr_at
from prelens.train._history import History

Tree = Any

__all__ = ["Callback", "CheckpointBest", "EarlyStopping", "LearningRateLogger"]


class Callback(Protocol):
    """The protocol of :func:`fit`'s ``callbacks``: ``on_epoch_end(epoch, history, params, opt_state) -> bool``.

    ``epoch`` counts from 1 (and continues in a resumed run); ``history`` already holds the epoch; ``params`` and
    ``opt_state`` are read-only. ``True`` stops training after this epoch. A resumed run asks its callbacks again
    about the last recorded epoch when a stop cut them short, so an answer should depend on the history and the
    arguments only.

    >>> class StopBelow:
    ...     def on_epoch_end(self, epoch, history, params, opt_state):
    ...         return history.loss[-1] < 0.1
    >>> StopBelow().on_epoch_end(1, History(loss=[0.05]), None, ())
    True
    """

    def on_epoch_end(self, epoch: int, history: History, params: Tree, opt_state: Any) -> bool:
        """``True`` to stop training after ``epoch``."""
        ...


class _Monitor:
    """A monitored series of the history and what "better" means (a base of frozen dataclasses that declare the
    three fields, each in its own argument order)."""

    monitor: str
    mode: str
    min_delta: float

    def _check(self, who: str) -> None:
        if not isinstance(self.monitor, str) or not self.monitor:
            raise E.bad_argument(who, "monitor", self.monitor, "the name of a series fit records, e.g. 'val_loss'")
        if not isinstance(self.mode, str) or self.mode not in ("min", "max"):
            raise E.not_one_of(who, "mode", ("min", "max"), self.mode)
        _args.real(who, "min_delta", self.min_delta, low=0.0)

    def series(self, history: History) -> list[float]:
        """The monitored values, one per epoch (``nan`` where none was recorded)."""
        values = history.loss if self.monitor == "loss" else history.metrics.get(self.monitor, [])
        return list(values) + [math.nan] * (history.epochs - len(values))

    def best_epoch(self, history: History) -> int | None:
        """The epoch (from 1) of the best value so far, better than every earlier best by more than ``min_delta``
        (``None`` while no epoch has a finite value)."""
        best: int | None = None
        top = math.nan
        sign = 1.0 if self.mode == "min" else -1.0
        for epoch, value in enumerate(self.series(history), 1):
            if math.isfinite(value) and (best is None or sign * value < sign * top - self.min_delta):
                best, top = epoch, value
        return best


@dataclass(frozen=True)
class EarlyStopping(_Monitor):
    """Stop when ``monitor`` has not improved for ``patience`` epochs; hand back the best parameters.

    An epoch improves when its value beats the best so far by more than ``min_delta`` (``mode="min"``: lower is
    better; ``"max"``: higher). Training stops after ``patience`` epochs in a row without improvement. With
    ``restore_best`` ``fit`` returns the parameters and optimiser state of the best epoch (when training ends, stopped
    or not) and records it in ``history.best_epoch``. ``monitor`` must be a series ``fit`` records (checked up front).

    >>> stop = EarlyStopping("val_loss", patience=2)
    >>> h = History(loss=[1.0] * 4, metrics={"val_loss": [0.9, 0.5, 0.6, 0.55]})
    >>> stop.best_epoch(h), stop.on_epoch_end(4, h, None, ())
    (2, True)
    """

    monitor: str = "val_loss"
    patience: int = 5
    min_delta: float = 0.0
    mode: str = "min"
    restore_best: bool = True

    def __post_init__(self) -> None:
        self._check("EarlyStopping")
        _args.count("EarlyStopping", "patience", self.patience)
        _args.flag("EarlyStopping", "restore_best", self.restore_best)

    def on_epoch_end(self, epoch: int, history: History, params: Tree, opt_state: Any) -> bool:
        """``True`` once ``patience`` epochs have passed since the best one."""
        best = self.best_epoch(history)
        return history.epochs - (best or 0) >= self.patience

    def reason(self, history: History) -> str:
        """Why it stopped, for ``history.stopped``."""
        best = self.best_epoch(history)
        said = "no epoch gave a finite value" if best is None else f"the best was epoch {best}"
        back = f"; handed back the parameters of epoch {best}" if self.restore_best and best is not None else ""
        return f"early stopping: {self.monitor} did not improve for {self.patience} epochs ({said}{back})"


@dataclass(frozen=True)
class CheckpointBest(_Monitor):
    """Save the parameters to ``path`` after every epoch that reaches a new best ``monitor``.

    The file is a checkpoint like ``fit``'s own: ``{"params": ..., "opt_state": ...}``, with the epoch, the monitored
    value and the history in its metadata (:func:`prelens.io.load_metadata`). It is written atomically; a failed
    write is a warning, and training goes on.

    >>> import os, tempfile
    >>> best = CheckpointBest(os.path.join(tempfile.mkdtemp(), "best.npz"), monitor="loss")
    >>> best.on_epoch_end(1, History(loss=[0.3]), [1.0], ())
    False
    >>> from prelens.io import load_checkpoint, load_metadata
    >>> load_checkpoint(best.path)["params"], load_metadata(best.path)["epoch"]
    ([1.0], 1)
    """

    path: str = "best.npz"
    monitor: str = "val_loss"
    mode: str = "min"
    min_delta: float = 0.0

    def __post_init__(self) -> None:
        writable_path("CheckpointBest", "path", self.path)
        self._check("CheckpointBest")

    def on_epoch_end(self, epoch: int, history: History, params: Tree, opt_state: Any) -> bool:
        """Save when ``epoch`` is the best so far; never stops training."""
        if self.best_epoch(history) != history.epochs:
            return False
        value = self.series(history)[-1]
        meta = {"epoch": epoch, "monitor": self.monitor, "value": value, "history": history.as_dict()}
        try:
            save_checkpoint(self.path, {"params": params, "opt_state": opt_state}, metadata=meta)
        except E.CheckpointError as err:
            warnings.warn(checkpoint_not_saved("CheckpointBest", str(err)), RuntimeWarning, stacklevel=2)
        return False


@dataclass(frozen=True, eq=False)
class LearningRateLogger:
    """Record the step size of ``optimizer``'s last update of each epoch as the history's ``"lr"``.

    ``optimizer`` is the one given to ``fit`` (an optimiser of :mod:`prelens.learn`, ``clip_by_global_norm`` of one,
    or an optimiser lens, ``opt.lens``). Under a schedule the value is the schedule's at the last step taken (its
    state's ``step`` minus one); otherwise the constant ``lr``.

    >>> from prelens.learn import ScheduledState, adamw, warmup_cosine
    >>> log = LearningRateLogger(adamw(warmup_cosine(0.1, warmup=2, total=10)))
    >>> h = History(loss=[1.0])
    >>> log.on_epoch_end(1, h, None, ScheduledState(2, ()))
    False
    >>> h.metrics["lr"]
    [0.1]
    """

    optimizer: Any

    def __post_init__(self) -> None:
        if _lr_of(self.optimizer) is None:
            expected = "an optimiser with an lr (prelens.learn.adam(0.01), or its lens)"
            raise E.must_be("LearningRateLogger", "optimizer", expected, E.describe(self.optimizer))

    def on_epoch_end(self, epoch: int, history: History, params: Tree, opt_state: Any) -> bool:
        """Log ``"lr"``; never stops training."""
        history.log("lr", self.rate(opt_state))
        return False

    def follows(self, optimizer: Any) -> bool:
        """Whether it logs the ``lr`` of ``optimizer`` (the one ``fit`` trains with)."""
        return bool(_lr_of(optimizer) == _lr_of(self.optimizer))

    def rate(self, opt_state: Any) -> float:
        """The step size of the last update that made ``opt_state`` (of the first, before any)."""
        lr = _lr_of(self.optimizer)
        if isinstance(lr, (int, float)):
            return float(lr)
        step = opt_state.step if isinstance(opt_state, ScheduledState) else 0
        return float(lr_at("LearningRateLogger", lr, max(int(step) - 1, 0)))


def checkpoint_not_saved(fn: str, why: str) -> str:
    """The warning (or note) for a checkpoint that could not be written: training goes on."""
    return f"{fn}: checkpoint not saved: {why}"


def _lr_of(optimizer: Any) -> Any:
    """The ``lr`` (a number or a schedule) of a plain optimiser, a clipped one, or an optimiser lens."""
    if isinstance(optimizer, PreLens):
        optimizer = find_optimizer(optimizer)
    lr = getattr(optimizer, "lr", None)
    return None if isinstance(lr, bool) or not (isinstance(lr, (int, float)) or callable(lr)) else lr
