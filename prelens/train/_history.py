"""What happened during :func:`~prelens.train.fit`: one entry per epoch, and a picture of it."""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from prelens import errors as E

__all__ = ["History", "number"]


@dataclass
class History:
    """What happened during :func:`fit`; every list has one entry per completed epoch.

    ``loss``: the mean of the batch losses of each epoch (the objective minimised: the loss plus the ``penalty``,
    with dropout on). ``metrics``: ``"val_loss"`` and ``"val_<name>"`` for each metric on the validation data,
    ``"train_loss"`` and ``"train_<name>"`` on the training data (``train_metrics=True``), and what callbacks log
    (``"lr"``). ``seconds``: wall time of each epoch. ``steps``: optimiser steps taken in all. ``interrupted``:
    training was stopped by ``KeyboardInterrupt``; ``stopped``: why training ended early (``None`` if it ran to the
    end); ``best_epoch``: the epoch whose parameters ``fit`` handed back (``EarlyStopping(restore_best=True)``),
    else ``None``. A run resumed from a checkpoint continues the history it holds.

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
    best_epoch: int | None = None

    @property
    def epochs(self) -> int:
        """The number of completed epochs."""
        return len(self.loss)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (non-finite numbers become ``None``)."""
        return {
            **asdict(self),
            "loss": [_finite_or_none(x) for x in self.loss],
            "metrics": {k: [_finite_or_none(x) for x in v] for k, v in self.metrics.items()},
        }

    def log(self, name: str, value: float) -> None:
        """Record ``value`` under ``name`` for the latest epoch (what a callback uses to add a series).

        Logging the same name twice for one epoch keeps the last value, so a callback asked again about an epoch (as
        a resumed run does) logs nothing twice. Epochs before the first logged one read ``nan``.

        >>> h = History(loss=[1.0, 0.5])
        >>> h.log("lr", 0.1)
        >>> h.log("lr", 0.2)
        >>> h.metrics
        {'lr': [nan, 0.2]}
        """
        if not isinstance(name, str) or not name or name == "loss":
            raise E.bad_argument("History.log", "name", name, "a non-empty string other than 'loss'")
        if self.epochs == 0:
            raise E.bad_argument("History.log", "name", name, "logged after an epoch (the history holds none yet)")
        series = self.metrics.setdefault(name, [])
        series.extend([math.nan] * (self.epochs - len(series)))
        series[self.epochs - 1] = number("History.log: value", value)

    def plot(self, *names: str, ax: Any = None) -> Any:
        """Draw series of the history against the epoch (matplotlib, the ``plot`` extra); returns the ``Axes``.

        ``names`` default to the losses recorded (``loss``, ``train_loss``, ``val_loss``); give others by name
        (``"val_accuracy"``, ``"lr"``). The axes get a title, axis labels and a legend. ``ax`` draws into an
        ``Axes`` of yours (default: a new figure). Raises ``ImportError`` (a ``PrelensError``) naming the extra when
        matplotlib is not installed.

        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> ax = History(loss=[1.0, 0.5, 0.25], metrics={"val_loss": [1.1, 0.7, 0.5]}).plot()
        >>> ax.get_xlabel(), [t.get_text() for t in ax.get_legend().get_texts()]
        ('epoch', ['loss', 'val_loss'])
        """
        series = {"loss": self.loss, **self.metrics}
        chosen = list(names) if names else [n for n in ("loss", "train_loss", "val_loss") if n in series]
        for name in chosen:
            if not isinstance(name, str) or name not in series:
                raise E.not_one_of("History.plot", "name", tuple(series), name)
        if not chosen or self.epochs == 0:
            raise E.bad_argument("History.plot", "history", f"{self.epochs} epochs", "at least one epoch to plot")
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise E.missing_extra("History.plot", "matplotlib", "plot") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        elif not hasattr(ax, "plot"):
            raise E.bad_argument("History.plot", "ax", ax, "a matplotlib Axes or None")
        epochs = list(range(1, self.epochs + 1))
        for name in chosen:
            ax.plot(epochs, series[name], marker="." if self.epochs <= 30 else None, label=name)
        losses = all(n.endswith("loss") for n in chosen)
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss" if losses else ", ".join(chosen) if len(chosen) <= 2 else "value")
        ax.set_title("training history")
        ax.legend()
        return ax


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def history_from_dict(d: Any) -> History | str:
    """The :class:`History` that :meth:`History.as_dict` wrote (read back from a checkpoint), or why not."""
    if not isinstance(d, dict):
        return "the history is not a mapping"
    loss = _numbers(d.get("loss"))
    if loss is None:
        return "the history's loss is not a list of numbers"
    metrics_in = d.get("metrics", {})
    if not isinstance(metrics_in, dict):
        return "the history's metrics are not a mapping"
    metrics: dict[str, list[float]] = {}
    for name, values in metrics_in.items():
        series = _numbers(values)
        if not isinstance(name, str) or series is None or len(series) > len(loss):
            return f"the history's metric {str(name)[:40]!r} is not a list of numbers, one per epoch"
        metrics[name] = series
    seconds = _numbers(d.get("seconds", []))
    steps, best, stopped = d.get("steps", 0), d.get("best_epoch"), d.get("stopped")
    damaged = count(steps) is None or (best is not None and count(best) is None) or not isinstance(stopped, str | None)
    if seconds is None or damaged:
        return "the history's seconds, steps, best_epoch or stopped are damaged"
    return History(loss, metrics, seconds, steps, bool(d.get("interrupted", False)), stopped, best)


def _numbers(values: Any) -> list[float] | None:
    """A list of numbers (``None`` read as NaN), or ``None`` if ``values`` is not one."""
    if not isinstance(values, list) or any(
        v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))) for v in values
    ):
        return None
    return [math.nan if v is None else float(v) for v in values]


def count(x: Any) -> int | None:
    """``x`` if it is an int >= 0, else ``None``."""
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else None


def number(what: str, value: Any) -> float:
    """``value`` as a float (a number, a numpy scalar, a 0-d array of any library), or an error naming ``what``."""
    if not isinstance(value, (str, bytes)):
        with contextlib.suppress(TypeError, ValueError):
            return float(value)
    raise E.StructureError(f"{what} must be a number (a float), got {E.describe(value)}")
