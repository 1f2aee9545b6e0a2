"""Ctrl-C held back while a few lines must run to the end (a file write, a bookkeeping step)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

__all__ = ["deferred_sigint", "noted_sigint"]


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


@contextlib.contextmanager
def noted_sigint() -> Iterator[Callable[[], None]]:
    """Within it, a SIGINT is also noted where nothing can drop it; the function it gives raises the
    ``KeyboardInterrupt`` again if one came and was lost.

    Python raises ``KeyboardInterrupt`` wherever the main thread is, and one raised inside a weakref callback
    or a ``__del__`` is printed ("Exception ignored in ...") and dropped: a training loop that frees objects
    would then go on. Within the block such a dropped interrupt is not printed either (it is acted on). Only
    with Python's own SIGINT handler, in the main thread; elsewhere the function does nothing.
    """
    noted: list[bool] = []

    def lost() -> None:
        if noted:
            noted.clear()
            raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    if not in_main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield lambda: None
        return

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(True)
        signal.default_int_handler(signum, frame)

    printed = sys.unraisablehook

    def unprinted(dropped: Any) -> None:
        if not (noted and dropped.exc_type is KeyboardInterrupt):
            printed(dropped)

    signal.signal(signal.SIGINT, note)
    sys.unraisablehook = unprinted
    try:
        yield lost
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = printed
