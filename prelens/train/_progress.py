"""A one-line training status (own code: no runtime dependency), redrawn in place on a terminal at most
``1 / interval`` times a second (elsewhere, one plain line per finished epoch)::

    epoch 12/200 [###---------] 5/20  loss 0.4312  8.1k samples/s  eta 0:41  val_accuracy 0.9667
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO

from prelens.core import _args

__all__ = ["Progress"]

_BAR = 12


class Progress:
    """Status display for ``epochs`` epochs of ``batches`` batches each.

    ``live=True`` redraws one line in place (for terminals); ``live=False`` prints a line per epoch.
    ``enabled=False`` turns every call into a no-op. ``label`` names the outer unit in the line (``"epoch"``, or
    ``"step"`` for full-batch training). ``tag`` (if given) follows the epoch in every line: what the steps run on,
    e.g. ``"compiled JAX step (backend=auto)"``.

    >>> import io
    >>> out = io.StringIO()
    >>> p = Progress(2, 3, out, live=False)
    >>> p.epoch_end(1, 0.5, {"val_accuracy": 0.75})
    >>> out.getvalue()
    'epoch 1/2  loss 0.5000  val_accuracy 0.7500\\n'
    """

    def __init__(self, epochs: int, batches: int, stream: TextIO, *, live: bool = True, enabled: bool = True,
                 interval: float = 0.1, label: str = "epoch", tag: str = "") -> None:  # fmt: skip
        fn = "Progress"
        self.epochs, self.batches = _args.count(fn, "epochs", epochs, 0), _args.count(fn, "batches", batches)
        self.label = _args.name(fn, "label", label)
        tag = _args.name(fn, "tag", tag)
        self.tag = f"[{tag}]" if tag else ""
        self.stream = _args.text_stream(fn, "stream", stream)
        self.live, self.enabled = _args.flag(fn, "live", live), _args.flag(fn, "enabled", enabled)
        self.interval = _args.real(fn, "interval", interval, low=0.0)
        self._start, self._last_draw, self._samples, self._drawn = time.perf_counter(), -float("inf"), 0, False
        self._metrics: dict[str, float] = {}
        self._loss_sum, self._loss_count = 0.0, 0

    def batch_end(self, epoch: int, batch: int, loss: float, samples: int) -> None:
        """Record a finished batch (1-based ``epoch`` and ``batch``) of ``samples`` rows.

        The line shows the running mean of the epoch's batch losses so far.
        """
        if not self.enabled:
            return
        self._samples += samples
        self._loss_sum += loss
        self._loss_count += 1
        if not self.live:
            return
        now = time.perf_counter()
        if now - self._last_draw >= self.interval:
            self._last_draw = now
            running = self._loss_sum / self._loss_count
            self._draw(self._line(epoch, batch, running, now, (epoch - 1) * self.batches + batch))

    def epoch_end(self, epoch: int, loss: float, metrics: dict[str, float]) -> None:
        """Record a finished epoch with its mean loss and its metrics."""
        if not self.enabled:
            return
        self._metrics = dict(metrics)
        self._loss_sum, self._loss_count = 0.0, 0
        if not self.live:
            head = [f"{self.label} {epoch}/{self.epochs}", *([self.tag] if self.tag else [])]
            self.stream.write("  ".join([*head, f"loss {loss:.4f}", *_fmt_metrics(metrics)]) + "\n")
            self.stream.flush()
            return
        now = time.perf_counter()
        if now - self._last_draw >= self.interval or epoch == self.epochs:
            self._last_draw = now
            self._draw(self._line(epoch, self.batches, loss, now, epoch * self.batches))

    def close(self, note: str = "") -> None:
        """End the status line (and print ``note``, e.g. why training stopped)."""
        if not self.enabled:
            return
        if self.live and self._drawn:
            self.stream.write("\n")
        if note:
            self.stream.write(note + "\n")
        self.stream.flush()
        self._drawn = False

    def _line(self, epoch: int, batch: int, loss: float, now: float, done: int) -> str:
        elapsed = max(now - self._start, 1e-9)
        total = self.epochs * self.batches
        eta = elapsed * (total - done) / done if done else 0.0
        by_batch = self.batches > 1  # the bar shows the epoch's batches; in full-batch training, the epochs
        filled = round(_BAR * batch / self.batches) if by_batch else round(_BAR * epoch / max(self.epochs, 1))
        head = f"{self.label} {epoch}/{self.epochs} [{'#' * filled}{'-' * (_BAR - filled)}]"
        head += f" {batch}/{self.batches}" if by_batch else ""
        parts = [  # most important first: a narrow terminal cuts the end of the line
            head,
            *([self.tag] if self.tag else []),
            f"loss {loss:.4f}",
            f"{_si(self._samples / elapsed)} samples/s",
            f"eta {_clock(eta)}",
            *_fmt_metrics(self._metrics),
        ]
        return "  ".join(parts)

    def _draw(self, line: str) -> None:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self.stream.write("\r" + line[:width] + "\x1b[K")
        self.stream.flush()
        self._drawn = True


def _fmt_metrics(metrics: dict[str, float]) -> list[str]:
    return [f"{name} {value:.4f}" for name, value in metrics.items()]


def _si(x: float) -> str:
    """``8123.4 -> '8.1k'``: a rate in three significant characters or so."""
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.1f}{unit}"
    return f"{x:.0f}"


def _clock(seconds: float) -> str:
    """``75 -> '1:15'``, ``3725 -> '1:02:05'``."""
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
