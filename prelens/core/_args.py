"""Checks of the arguments of prelens's public functions: each returns the argument (normalised
where natural) or raises an error from :mod:`prelens.errors` naming the function and the argument."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import is_array, to_numpy


def seed(fn: str, rng: Any) -> np.random.Generator:
    """``numpy.random.default_rng(rng)``, or an error naming ``fn`` for a seed numpy does not take.

    >>> seed("init", 0).integers(10) == np.random.default_rng(0).integers(10)
    np.True_
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if not isinstance(rng, (bool, np.bool_, float, complex, str, bytes)):
        try:
            return np.random.default_rng(rng)
        except (TypeError, ValueError):
            pass
    raise E.bad_argument(fn, "rng", rng, "a numpy.random.Generator, an int seed >= 0 or None")


def flag(fn: str, what: str, value: Any) -> bool:
    """``value`` if it is a bool (a truthy string such as ``"no"`` would silently mean True).

    >>> flag("dense", "input_delta", False)
    False
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise E.bad_argument(fn, what, value, "True or False")


def real(
    fn: str, what: str, value: Any, *, low: float | None = None, low_open: bool = False, high: float | None = None
) -> float:
    """``value`` as a finite float within ``[low, high)`` (``(low, high)`` with ``low_open``).

    >>> real("layer_norm", "eps", 1e-5, low=0.0, low_open=True)
    1e-05
    """
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        x = float(value)
        if math.isfinite(x) and (low is None or (x > low if low_open else x >= low)) and (high is None or x < high):
            return x
    bounds = [f"{'>' if low_open else '>='} {low:g}"] if low is not None else []
    bounds += [f"< {high:g}"] if high is not None else []
    raise E.bad_argument(fn, what, value, "a finite number" + (f" {' and '.join(bounds)}" if bounds else ""))


def function(fn: str, what: str, value: Any) -> Callable[..., Any]:
    """``value`` if it can be called.

    >>> function("pointwise", "apply", abs) is abs
    True
    """
    if callable(value):
        f: Callable[..., Any] = value
        return f
    raise E.must_be(fn, what, "a function", E.describe(value))


def name(fn: str, what: str, value: Any) -> str:
    """``value`` if it is a string."""
    if isinstance(value, str):
        return value
    raise E.must_be(fn, what, "a string", E.describe(value))


def count(fn: str, what: str, value: Any, least: int = 1) -> int:
    """``value`` as an int ``>= least`` (Python's or numpy's; a bool or a float such as ``2.0`` is not one).

    >>> count("generate", "steps", 3, least=0)
    3
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= least:
        return int(value)
    raise E.int_below(fn, what, value, least)


def float_dtype(fn: str, what: str, dtype: Any) -> np.dtype[Any]:
    """``dtype`` as a numpy float dtype (an int dtype would silently round the data).

    >>> float_dtype("load_iris", "dtype", "float32")
    dtype('float32')
    """
    try:
        dt: np.dtype[Any] = np.dtype(dtype)
    except TypeError:
        raise E.lens_dtype_error(fn, what, "a float dtype (float64 or float32)", repr(dtype)) from None
    if dt.kind != "f":
        raise E.lens_dtype_error(fn, what, "a float dtype (float64 or float32)", str(dt))
    return dt


def int_array(fn: str, what: str, value: Any, *, ndim: int | None = None) -> npt.NDArray[np.int64]:
    """``value`` (an integer array of any library, or nested lists of ints) as an int64 numpy array, of ``ndim`` axes
    if given.

    Floats (never truncated: ``1.7`` is no token id), bools, strings and ragged nests are errors.

    >>> int_array("decode", "ids", [[1, 2]], ndim=2)
    array([[1, 2]])
    """
    if isinstance(value, np.ndarray):
        arr = value
    elif is_array(value):  # a tensor's ids, brought home
        arr = to_numpy(value)
    elif isinstance(value, (list, tuple, int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        try:
            arr = np.asarray(value)
        except ValueError:  # a ragged nest
            raise E.must_be(fn, what, "an integer array (token ids)", E.describe_tree(value)) from None
        if arr.size == 0 and arr.dtype.kind == "f":  # [] and [[]] have no dtype of their own
            arr = arr.astype(np.int64)
    else:
        raise E.must_be(fn, what, "an integer array (token ids)", E.describe_tree(value))
    if arr.dtype.kind not in "iu":
        raise E.lens_dtype_error(fn, what, "an integer array (token ids)", E.describe(arr))
    if ndim is not None and arr.ndim != ndim:
        shape = ",".join(["..."] * ndim)
        raise E.lens_shape_error(fn, what, f"an integer array of {ndim} axes i64[{shape}]", E.describe(arr))
    return arr.astype(np.int64, copy=False)


def sequence(fn: str, what: str, value: Any, expected: str, *, non_empty: bool = False) -> list[Any]:
    """``value`` (a list or tuple) as a list; anything else (None, a dict, an array, a string) is an error.

    >>> sequence("mlp_to_paras", "params", ((1,),), "a list of DenseParams")
    [(1,)]
    """
    if isinstance(value, (list, tuple)) and not (non_empty and len(value) == 0):
        return list(value)
    raise E.must_be(fn, what, expected, E.describe_tree(value))


def optimizer(fn: str, value: Any) -> Any:
    """``value`` if it is an optimiser (with ``init`` and ``update``; a class such as ``SGD`` is not one)."""
    if not isinstance(value, type) and all(callable(getattr(value, m, None)) for m in ("init", "update")):
        return value
    raise E.must_be(
        fn, "optimizer", "an optimiser (with init and update), e.g. prelens.learn.sgd(0.1)", E.describe(value)
    )


def batch(fn: str, value: Any, what: str = "batch") -> tuple[Any, Any]:
    """``value`` if it is a pair ``(xs, targets)``, else an error naming ``fn``."""
    if isinstance(value, tuple) and len(value) == 2:
        return value
    raise E.bad_argument(fn, what, E.describe_tree(value), "a pair (xs, targets)")


def text_stream(fn: str, what: str, value: Any) -> Any:
    """``value`` if it is a text stream: an object with ``write`` (not a class, not a binary stream), open and
    writable where it says (a closed or read-only file is refused now, not at its first line)."""
    binary = isinstance(value, (io.BufferedIOBase, io.RawIOBase))
    if isinstance(value, type) or binary or not callable(getattr(value, "write", None)):
        raise E.must_be(fn, what, "a text stream (with write), e.g. sys.stdout", E.describe(value))
    try:
        why = "closed" if getattr(value, "closed", False) is True else None
        why = why or (None if getattr(value, "writable", lambda: True)() else "not writable")
    except (ValueError, OSError):
        why = "closed"
    if why is not None:
        raise E.must_be(fn, what, "an open, writable text stream, e.g. sys.stdout", f"{E.describe(value)} ({why})")
    return value
