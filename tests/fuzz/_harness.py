"""The fuzzing harness: run one bad-input case and classify its outcome.

Every case ends in one of three ways:

* **rejected**: it raised one of prelens's own errors (:class:`prelens.PrelensError`)
  that prelens raised on purpose, i.e. not a foreign exception merely wrapped by a
  composite on its way out (``in_part`` marks those);
* **accepted**: it returned, and the result passed the case's checks (finite when
  the input was finite, deltas that fit ``(p, s)``, equal to a reference where
  there is one);
* **escaped**: anything else. The test fails at once, naming the case.

:data:`STATS` counts the cases of the whole session; ``conftest.py`` prints the
counts in pytest's terminal summary.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens import PrelensError
from prelens.core import tree_paths
from prelens.core._check import _skeleton, _skeleton_misfit

#: Session-wide counts: ``cases``, ``rejected``, ``accepted``, ``escaped``.
STATS: Counter[str] = Counter()


class Escape(AssertionError):
    """A bad input got past prelens's checks: a bare exception, a silent NaN, a wrong answer."""


def is_finite_tree(tree: Any) -> bool:
    """True when every numeric leaf of ``tree`` is finite (non-numeric leaves are ignored)."""
    for _, leaf in tree_paths(tree):
        if isinstance(leaf, (bool, np.bool_)):
            continue
        if isinstance(leaf, (int, float, complex, np.number)):
            if not np.isfinite(leaf):
                return False
        elif isinstance(leaf, np.ndarray) and leaf.dtype.kind in "fc":
            if not np.isfinite(leaf).all():
                return False
    return True


def attempt(
    label: str,
    thunk: Callable[[], Any],
    *,
    inputs: Any = (),
    check: Callable[[Any], None] | None = None,
) -> tuple[str, Any]:
    """Run ``thunk`` (one bad-input case) and classify it; raise :class:`Escape` if it escaped.

    ``inputs`` are the values the case fed in: when all of them are finite, a
    result with NaN or infinity is an escape (a silent NaN). ``check(result)``
    raises ``AssertionError`` when an accepted result is wrong.
    Returns ``("rejected", error)`` or ``("accepted", result)``.
    """
    STATS["cases"] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN and inf inputs warn on their way through
        try:
            with np.errstate(all="ignore"):
                result = thunk()
        except PrelensError as exc:
            if getattr(exc, "_prelens_foreign", False):
                STATS["escaped"] += 1
                raise Escape(f"{label}: a foreign error was only wrapped: {exc!r}") from exc
            STATS["rejected"] += 1
            return "rejected", exc
        except Exception as exc:
            STATS["escaped"] += 1
            raise Escape(f"{label}: escaped as {type(exc).__name__}: {exc}") from exc
    if is_finite_tree(inputs) and not is_finite_tree(result):
        STATS["escaped"] += 1
        raise Escape(f"{label}: finite input gave a non-finite result")
    if check is not None:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                check(result)
        except AssertionError as exc:
            STATS["escaped"] += 1
            raise Escape(f"{label}: accepted with a wrong result: {exc}") from exc
    STATS["accepted"] += 1
    return "accepted", result


def deltas_fit(p: Any, s: Any) -> Callable[[Any], None]:
    """A check for ``bwd``'s result: a pair ``(dp, ds)`` that fits ``(p, s)`` leaf for leaf."""

    def check(out: Any) -> None:
        assert isinstance(out, tuple) and len(out) == 2, f"bwd returned {type(out).__name__}, not (dp, ds)"
        dp, ds = out
        found = _skeleton_misfit(_skeleton(p), _skeleton(dp), "", data_ok=False) or _skeleton_misfit(
            _skeleton(s), _skeleton(ds), "", data_ok=True
        )
        assert found is None, f"the deltas do not fit (p, s): {found}"

    return check


def close_to(expected: Any, rtol: float = 1e-6, atol: float = 1e-9) -> Callable[[Any], None]:
    """A check: the result equals ``expected`` (arrays compared with tolerances, NaN equal to NaN)."""

    def check(got: Any) -> None:
        if isinstance(expected, (tuple, list)) and not isinstance(expected, np.ndarray):  # a nest: part by part
            assert type(got) is type(expected) and len(got) == len(expected), f"got {got!r}, expected {expected!r}"
            for g, e in zip(got, expected):
                close_to(e, rtol, atol)(g)
            return
        try:
            e = np.asarray(expected)
            numeric = e.dtype.kind in "biufc"
        except ValueError:  # a ragged nest
            numeric = False
        if not numeric:  # not numbers (a lens that passes anything through): the same thing back
            assert got is expected or repr(got) == repr(expected), f"got {got!r}, expected {expected!r}"
            return
        g = np.asarray(got)
        if g.dtype.kind == "f":  # a lens computes in its input's precision
            rtol_ = max(rtol, 20 * float(np.finfo(g.dtype).eps))
            atol_ = max(atol, 20 * float(np.finfo(g.dtype).eps))
        else:
            rtol_, atol_ = rtol, atol
        np.testing.assert_allclose(g, np.asarray(expected), rtol=rtol_, atol=atol_, equal_nan=True)
        if isinstance(expected, np.ndarray):
            assert isinstance(got, np.ndarray) and got.shape == expected.shape, "shape differs"
            assert got.dtype == expected.dtype, f"dtype {got.dtype}, expected {expected.dtype}"

    return check
