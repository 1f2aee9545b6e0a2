"""The machinery the exercise checks share: a decorator and two ways for an answer to fall short."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from prelens import PrelensError


class Wrong(Exception):
    """The answer is not right; the message says why, in a sentence a student can act on."""


class NotAnswered(Exception):
    """The cell still holds its placeholder (``...``, or a function whose body is ``...``)."""


def answered(x: Any) -> Any:
    """``x``, unless it is still the placeholder."""
    if x is None or x is Ellipsis:
        raise NotAnswered
    return x


def call(fn: Any, *args: Any) -> Any:
    """Call the student's function; a stub whose body is ``...`` returns ``None``: not answered."""
    return answered(answered(fn)(*args))


def expect(condition: bool, reason: str) -> None:
    """Raise :class:`Wrong` with ``reason`` unless ``condition`` holds."""
    if not condition:
        raise Wrong(reason)


def exercise(
    label: str, title: str, answer: str = "value"
) -> Callable[[Callable[[Any], str | None]], Callable[[Any], bool | None]]:
    """Turn ``test(answer)`` (raises :class:`Wrong`, or returns a note) into the check a student calls.

    The check returns ``True`` (right), ``False`` (wrong) or ``None`` (not answered yet), and
    prints one line saying which. ``answer`` says what the student hands in, and so what the
    placeholder looks like: ``"value"`` (a lens or a tuple; the placeholder is ``...``),
    ``"function"`` (a function whose body is ``...``, returning ``None``) or ``"class"``.
    """
    if answer not in ("value", "function", "class"):
        raise ValueError(f"exercise {label}: answer must be 'value', 'function' or 'class', got {answer!r}")

    def wrap(test: Callable[[Any], str | None]) -> Callable[[Any], bool | None]:
        head = f"Exercise {label} ({title})"

        @functools.wraps(test)
        def check(answer: Any = Ellipsis) -> bool | None:
            try:
                note = test(answer)
            except NotAnswered:
                print(f"{head}: not answered yet. Replace the ... above with your answer and run the cell again.")
                return None
            except Wrong as err:
                print(f"✗ {head}: {err}")
                return False
            except PrelensError as err:
                print(f"✗ {head}: prelens refused your answer: {type(err).__name__}: {err}")
                return False
            except Exception as err:  # the student's own code failed: say so, never crash the notebook
                print(f"✗ {head}: your answer raised {type(err).__name__}: {err}")
                return False
            print(f"✓ {head}" + (f": {note}" if note else ""))
            return True

        check.label = label  # type: ignore[attr-defined]
        check.title = title  # type: ignore[attr-defined]
        check.answer = answer  # type: ignore[attr-defined]
        return check

    return wrap
