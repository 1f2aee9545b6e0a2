"""Checks of the arguments of prelens's public functions (sizes, numbers, flags, seeds, lenses).

Each returns the argument (normalised where that is natural) or raises an error
built from a template in :mod:`prelens._errors`, naming the function and the
argument.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _errors as E


def seed(fn: str, rng: Any) -> np.random.Generator:
    """``numpy.random.default_rng(rng)``, or an error naming ``fn`` for a seed numpy does not take.

    >>> seed("init", 0).integers(10) == np.random.default_rng(0).integers(10)
    np.True_
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, np.bool_, float, complex, str, bytes)):
        raise E.bad_argument(fn, "rng", rng, "a numpy.random.Generator, an int seed >= 0 or None")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise E.bad_argument(fn, "rng", rng, "a numpy.random.Generator, an int seed >= 0 or None") from None


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
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    x = float(value) if ok else math.nan
    if ok and math.isfinite(x):
        ok = (low is None or (x > low if low_open else x >= low)) and (high is None or x < high)
    else:
        ok = False
    if ok:
        return x
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        bounds.append(f"< {high:g}")
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


def lens(fn: str, what: str, value: Any) -> Any:
    """``value`` if it is a :class:`~prelens.PreLens` (a TriLens gets a hint: ``from_tamb``)."""
    from ._lens import PreLens
    from ._tambara import TriLens

    if isinstance(value, PreLens):
        return value
    if isinstance(value, TriLens):
        raise E.must_be(fn, what, "a PreLens (a TriLens becomes one with from_tamb(...))", repr(value))
    raise E.must_be(fn, what, "a PreLens", E.describe(value))


def trilens(fn: str, what: str, value: Any) -> Any:
    """``value`` if it is a :class:`~prelens.TriLens` (a PreLens gets a hint: ``to_tamb``)."""
    from ._lens import PreLens
    from ._tambara import TriLens

    if isinstance(value, TriLens):
        return value
    if isinstance(value, PreLens):
        raise E.must_be(fn, what, "a TriLens (a PreLens becomes one with to_tamb(...))", repr(value))
    raise E.must_be(fn, what, "a TriLens", E.describe(value))


def lens_or_trilens(fn: str, what: str, value: Any) -> Any:
    """``value`` if it is a PreLens or a TriLens."""
    from ._lens import PreLens
    from ._tambara import TriLens

    if isinstance(value, (PreLens, TriLens)):
        return value
    raise E.must_be(fn, what, "a PreLens or a TriLens", E.describe(value))
