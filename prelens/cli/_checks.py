"""Checks every command runs on its arguments before doing any work, and one-line errors.

A user's mistake (a flag out of range, a ``--save`` path that cannot be
written, a bad value the library refuses) ends the command with one line on
stderr and exit code 2, as argparse's own errors do: no usage block, no
traceback. The messages come from :mod:`prelens.errors`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from prelens import errors as E
from prelens.core import _args
from prelens.io._checkpoint import unwritable_reason

__all__ = ["Parser", "at_least", "fail", "non_negative_real", "one_line", "positive_real", "writable"]


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit code 2), without the usage block.

    Sub-command parsers made by ``add_subparsers`` are of this class too.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` on one line and exit with code 2."""
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def one_line(text: str) -> str:
    """``text`` with its lines joined (an error's context lines become part of the one line)."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def fail(err: BaseException, command: str = "") -> int:
    """Print a refused argument (or any error prelens raised on purpose) as one line; returns 2."""
    text = one_line(str(err))
    if command and not text.startswith(command):
        text = f"{command}: {text}"
    print(text, file=sys.stderr)
    return 2


def at_least(command: str, flag: str, value: Any, least: int = 1) -> int:
    """``value`` if it is an int ``>= least``, else an ``ArgumentError`` naming the flag."""
    return _args.count(command, flag, value, least)


def positive_real(command: str, flag: str, value: Any) -> float:
    """``value`` if it is a finite number ``> 0`` (a learning rate, say)."""
    return _args.real(command, flag, value, low=0.0, low_open=True)


def non_negative_real(command: str, flag: str, value: Any, high: float | None = None) -> float:
    """``value`` if it is a finite number ``>= 0`` (and ``< high``, when given)."""
    return _args.real(command, flag, value, low=0.0, high=high)


def writable(command: str, flag: str, path: str | None) -> None:
    """Refuse, before any work, a file path that :func:`prelens.io.save_checkpoint` could not write."""
    if path is None:
        return
    why = unwritable_reason(path)
    if why is not None:
        raise E.unwritable_path(command, flag, path, why)
