"""What the commands share: checks of their arguments before any work, one-line errors, model and data files.

A user's mistake ends the command as :mod:`prelens.cli` says (one line on stderr, exit code 2); the
messages come from :mod:`prelens.errors`, or are a :class:`UsageError`. The metadata of the model files
``prelens train`` writes is read and written by :mod:`prelens.io._train_metadata`.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args
from prelens.io import LoadedModel, load_model
from prelens.io._checkpoint import unwritable_reason
from prelens.io._train_metadata import classes as classes  # the commands read the metadata through here
from prelens.io._train_metadata import holdable
from prelens.io._train_metadata import input_dtype as input_dtype
from prelens.io._train_metadata import input_shape as input_shape

#: The losses a model file may name in its metadata (``--loss`` names them too).
LOSSES = ("softmax_cross_entropy", "mse", "squared_distance", "token_cross_entropy")


class UsageError(Exception):
    """A user's mistake on the command line: printed as one line, exit status 2."""


#: What a command catches around its work and prints with :func:`fail`.
MISTAKES = (UsageError, E.PrelensError)


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


def fail(err: BaseException | str, command: str, code: int = 2) -> int:
    """Print a refused argument (or any error prelens raised on purpose) as one line; returns ``code`` (2: a
    usage error, 1: a run that failed, a diverged training say)."""
    text = one_line(str(err))
    if not text.startswith(command):
        text = f"{command}: {text}"
    print(text, file=sys.stderr)
    return code


def at_least(command: str, flag: str, value: Any, least: int = 1) -> int | None:
    """``value`` if it is an int ``>= least`` (or None: not given), else an ``ArgumentError`` naming the flag."""
    return None if value is None else _args.count(command, flag, value, least)


def counts(command: str, args: argparse.Namespace, *flags: str) -> None:
    """:func:`at_least` 1 for each flag's value (``--batch-size``'s is ``args.batch_size``)."""
    for flag in flags:
        at_least(command, flag, getattr(args, flag[2:].replace("-", "_")))


def positive_real(command: str, flag: str, value: Any) -> float:
    """``value`` if it is a finite number ``> 0`` (a learning rate, say)."""
    return _args.real(command, flag, value, low=0.0, low_open=True)


def non_negative_real(command: str, flag: str, value: Any, high: float | None = None) -> float | None:
    """``value`` if it is a finite number ``>= 0`` (and ``< high``, when given), or None (not given)."""
    return None if value is None else _args.real(command, flag, value, low=0.0, high=high)


def writable(command: str, flag: str, path: str | None) -> None:
    """Refuse, before any work, a file path that :func:`prelens.io.save_checkpoint` could not write."""
    if path is not None and (why := unwritable_reason(path)) is not None:
        raise E.unwritable_path(command, flag, path, why)


def saved(command: str, path: str | None, save: Callable[[], Any]) -> bool | None:
    """``save()`` if ``--save`` names a ``path``: True if saved, None if not asked, False (one line) if it failed."""
    if path is None:
        return None
    try:
        save()
    except E.PrelensError as err:
        fail(err, command)
        return False
    return True


def stopped(err: BaseException, command: str, path: str | None, save: Callable[[Any, Any], bool | None]) -> int:
    """A training that stopped on an error (it diverged, say): the reason as one line, and the last good parameters
    that ride on the error (``err.params``, ``err.history``) saved with ``save(params, history)`` if ``--save`` names
    a ``path``; returns 1."""
    fail(err, command, code=1)  # (fit's notes, for a Python caller, are not in str(err))
    history = getattr(err, "history", None)
    if path is not None and history is not None and save(getattr(err, "params", None), history):
        print(f"saved the parameters of the last good step ({history.steps}) to {path}")
    return 1


def finish(saved: bool | None, path: str | None, readers: str) -> int:
    """A training command's last line and exit code: 0, or 1 when ``--save`` failed."""
    if saved:
        print(f"saved the model to {path} ({readers}, prelens.load_model)")
    return 0 if saved is not False else 1


def readable_file(flag: str, path: str, suffixes: tuple[str, ...] | None = None) -> str:
    """``path`` if it is an existing, readable file (with one of ``suffixes``, if given)."""
    if suffixes is not None and os.path.splitext(path)[1].lower() not in suffixes:
        raise UsageError(f"{flag} {path!r}: expected a {' or '.join(suffixes)} file")
    if not os.path.exists(path):
        raise UsageError(f"{flag} {path!r}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"{flag} {path!r}: not a file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{flag} {path!r}: not readable")
    return path


def writable_file(flag: str, path: str, suffixes: tuple[str, ...]) -> str:
    """``path`` if a file with one of ``suffixes`` can be written there (its directory exists and is writable)."""
    if os.path.splitext(path)[1].lower() not in suffixes:
        raise UsageError(f"{flag} {path!r}: the name must end in {' or '.join(suffixes)}")
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path!r}: is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"{flag} {path!r}: the directory {directory} does not exist")
    if not os.access(directory, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{flag} {path!r}: cannot write there")
    return path


def shape_flag(flag: str, text: str | None) -> tuple[int, ...] | None:
    """``"1,4"`` -> ``(1, 4)``: a shape given on the command line."""
    if text is None:
        return None
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        raise UsageError(f"{flag} must be sizes separated by commas, e.g. 1,4; got {text!r}") from None
    if not shape or any(d < 1 for d in shape):
        raise UsageError(f"{flag} must be sizes >= 1 separated by commas, e.g. 1,4; got {text!r}")
    if not holdable(shape):
        raise UsageError(f"{flag} {text!r}: more axes (at most 64) or numbers than an array can hold")
    return shape


def load(path: str) -> LoadedModel:
    """The model file at ``path`` (checked by :func:`readable_file`; a damaged or foreign one is a UsageError)."""
    try:
        return load_model(path)
    except E.PrelensError as err:
        raise UsageError(str(err)) from None


def loss_lens(name: str) -> Any:
    """The loss lens named ``name`` (one of :data:`LOSSES`)."""
    from prelens import nn

    if name not in LOSSES:
        raise UsageError(f"unknown loss {name!r}: one of {', '.join(LOSSES)}")
    return nn.token_cross_entropy() if name == "token_cross_entropy" else getattr(nn, name)


def read_table(flag: str, path: str) -> list[list[str]]:
    """The rows of a CSV file as strings, without its header (a first row with a cell that is not a number)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # (Excel's "CSV UTF-8" starts with a BOM)
            rows = [row for row in csv.reader(f) if row and any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UsageError(f"{flag} {path!r}: cannot be read as CSV ({err})") from None
    if not rows:
        raise UsageError(f"{flag} {path!r}: no rows")
    skip = 1 if _is_header(rows) else 0
    rows = rows[skip:]
    if not rows:
        raise UsageError(f"{flag} {path!r}: a header and no rows")
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise UsageError(f"{flag} {path!r}: line {i + 1 + skip} has {len(row)} columns, the first row {width}")
    return [[cell.strip() for cell in row] for row in rows]


def _is_header(rows: list[list[str]]) -> bool:
    """The first row names the columns: it has a word where the next row has a number (or is all words).

    >>> _is_header([["x", "label"], ["1.5", "cat"]]), _is_header([["1.5", "cat"], ["2", "dog"]])
    (True, False)
    """
    first = [is_number(cell) for cell in rows[0]]
    second = rows[1] if len(rows) > 1 else []
    return not all(first) and (not any(first) or any(not a and is_number(b) for a, b in zip(first, second)))


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def numbers(flag: str, path: str, rows: list[list[str]], hint: str = "") -> npt.NDArray[np.float64]:
    """A table of number cells as floats (a cell that is not a finite number is named, a word with ``hint``;
    :func:`as_model_input` casts them to the model's dtype)."""
    out = np.empty((len(rows), len(rows[0]) if rows else 0), dtype=np.float64)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            try:
                out[i, j] = float(cell)
            except ValueError:
                raise UsageError(
                    f"{flag} {path!r}: row {i + 1}, column {j + 1}: {cell!r} is not a number{hint}"
                ) from None
    if not np.isfinite(out).all():
        i, j = np.argwhere(~np.isfinite(out))[0]
        raise UsageError(f"{flag} {path!r}: row {i + 1}, column {j + 1} is not a finite number")
    return out


def read_npy(flag: str, path: str) -> npt.NDArray[Any]:
    """A ``.npy`` array (never with pickled objects)."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise UsageError(f"{flag} {path!r}: not a readable .npy array ({' '.join(str(err).split())})") from None
    if not isinstance(arr, np.ndarray):
        raise UsageError(f"{flag} {path!r}: not a single .npy array")
    return arr


def read_npz(flag: str, path: str, keys: tuple[str, ...]) -> dict[str, npt.NDArray[Any]]:
    """Named arrays of a ``.npz`` archive (never with pickled objects)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in keys if k not in archive.files]
            if missing:
                have = ", ".join(archive.files) or "nothing"
                raise UsageError(f"{flag} {path!r}: needs arrays named {', '.join(keys)}; it holds {have}")
            return {k: archive[k] for k in keys}
    except UsageError:
        raise
    except Exception as err:  # zipfile and numpy raise many kinds on damaged bytes
        raise UsageError(f"{flag} {path!r}: not a readable .npz archive ({type(err).__name__})") from None


def as_model_input(flag: str, path: str, x: npt.NDArray[Any], model: LoadedModel) -> npt.NDArray[Any]:
    """``x`` checked against the model's example shape and cast to the dtype the model takes.

    A table's row may hold an example flattened (a series of 40 numbers for a model that takes 40×1).
    """
    dt = input_dtype(model)
    if x.dtype.kind not in "biuf":
        raise UsageError(f"{flag} {path!r}: expected numbers, got an array of {x.dtype}")
    if dt.kind in "iu" and x.dtype.kind == "f":
        if not (np.isfinite(x).all() and (x == np.round(x)).all()):
            raise UsageError(f"{flag} {path!r}: the model takes integers (token ids), the file has fractions")
    elif x.dtype.kind == "f" and not np.isfinite(x).all():
        raise UsageError(f"{flag} {path!r}: NaN or infinite values")
    shape = input_shape(model)
    if shape is not None and x.ndim == 2 and len(shape) > 1 and x.shape[1] == np.prod(shape):
        x = x.reshape(len(x), *shape)
    if shape is not None and (x.ndim != len(shape) + 1 or x.shape[1:] != shape):
        example = "×".join(map(str, shape))
        got = "×".join(map(str, x.shape)) or "one number"
        raise UsageError(f"{flag} {path!r}: the model takes rows of shape {example}, the file holds {got}")
    if x.ndim == 0 or len(x) == 0:
        raise UsageError(f"{flag} {path!r}: no rows")
    limits: Any = np.iinfo(dt) if dt.kind in "iu" else np.finfo(dt)  # the cast would make inf, or wrap around
    if x.size and not limits.min <= x.min() <= x.max() <= limits.max:
        raise UsageError(f"{flag} {path!r}: a value outside the range of the model's {dt.name}")
    return x.astype(dt, copy=False)
