"""Ctrl-C held back while a few lines must run to the end (a file write, a bookkeeping step).

``with deferred_sigint():`` records a SIGINT that arrives inside the block
instead of acting on it, and acts on it (once) when the block ends: with the
usual handler, the ``KeyboardInterrupt`` is raised *after* the block, never in
the middle of it. ``deferred_sigint(absorb=True)`` drops such a signal instead
(for code that is already stopping because of an earlier one).

Python runs signal handlers in the main thread only, so a ``KeyboardInterrupt``
never lands in another thread: there the block just runs (nothing to defer).
The same holds when SIGINT is ignored or its handler was not installed from
Python.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["deferred_sigint"]


def deferred_sigint(*, absorb: bool = False) -> _Deferred:
    """A context manager that holds SIGINT back until the block is done (see the module docstring)."""
    return _Deferred(absorb)


class _Deferred:
    """The state of one ``with deferred_sigint():`` block."""

    def __init__(self, absorb: bool) -> None:
        self.absorb = absorb
        self.previous: Any = None
        self.installed = False
        self.received: list[FrameType | None] = []

    def __enter__(self) -> _Deferred:
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            previous = signal.getsignal(signal.SIGINT)
        except (ValueError, OSError):  # pragma: no cover - no signal support
            return self
        if previous is None or previous == signal.SIG_IGN:
            return self
        self.previous = previous
        signal.signal(signal.SIGINT, self._record)
        self.installed = True
        return self

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(frame)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self.installed:
            return
        signal.signal(signal.SIGINT, self.previous)
        self.installed = False
        if self.received and not self.absorb:
            frame = self.received[-1]
            self.received.clear()
            if self.previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)  # what SIGINT would have done: end the process
            else:
                self.previous(signal.SIGINT, frame)  # usually raises KeyboardInterrupt, here, after the block
