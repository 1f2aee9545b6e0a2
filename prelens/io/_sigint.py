"""Ctrl-C held back while a few lines must run to the end (a file write, a bookkeeping step)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["deferred_sigint"]


@contextlib.contextmanager
def deferred_sigint(*, absorb: bool = False) -> Iterator[None]:
    """Record a SIGINT that arrives inside the block and act on it (once) when the block ends.

    With the usual handler the ``KeyboardInterrupt`` is raised *after* the block, never in the middle of it;
    ``absorb=True`` drops the signal instead (for code already stopping because of an earlier one). Outside the main
    thread (Python runs handlers there only), or when SIGINT is ignored or its handler was not installed from
    Python, the block just runs.
    """
    previous = None
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous == signal.SIG_IGN:
        yield
        return
    received: list[FrameType | None] = []
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received and not absorb:
            if callable(previous):
                previous(signal.SIGINT, received[-1])  # usually raises KeyboardInterrupt, here, after the block
            else:
                signal.raise_signal(signal.SIGINT)  # SIG_DFL: what SIGINT would have done, end the process
