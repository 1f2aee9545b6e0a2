"""``deferred_sigint``: Ctrl-C held back until a block is done (checkpoint writes, fit's bookkeeping)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from prelens.io._sigint import deferred_sigint


@pytest.fixture
def handler() -> Any:
    """A recording SIGINT handler for the test, the previous one restored afterwards."""
    calls: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    yield calls
    signal.signal(signal.SIGINT, previous)


def test_a_sigint_inside_the_block_reaches_the_handler_once_after_it(handler: list[int]):
    steps = []
    with deferred_sigint():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        steps.append("the block ran to its end")
        assert handler == []
    assert steps and handler == [signal.SIGINT]
    signal.raise_signal(signal.SIGINT)  # and the handler is back
    assert handler == [signal.SIGINT, signal.SIGINT]


def test_the_default_handler_raises_keyboard_interrupt_after_the_block():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    done = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_sigint():
            signal.raise_signal(signal.SIGINT)
            done.append(1)
    assert done == [1]


def test_absorb_drops_the_signal(handler: list[int]):
    with deferred_sigint(absorb=True):
        signal.raise_signal(signal.SIGINT)
    assert handler == []


def test_nested_blocks_hand_the_signal_outwards(handler: list[int]):
    with deferred_sigint(absorb=True):
        with deferred_sigint():
            signal.raise_signal(signal.SIGINT)
        assert handler == []  # the inner block passed it to the outer one, which absorbs it
    assert handler == []


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferred_sigint():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_the_block_just_runs():
    seen: list[Any] = []

    def work() -> None:
        with deferred_sigint():
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [signal.default_int_handler]
