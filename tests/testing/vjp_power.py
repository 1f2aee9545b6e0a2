"""The power of ``check_vjp``: false alarms on correct lenses at large scales, misses on subtly wrong ones.

The lenses of issue 13: correct ones whose outputs are offset by 1e4 or 1e6, or whose data
are scaled by 1e3 or 1e6 (the library's ``squared_distance``, ``softmax_cross_entropy``);
wrong ones whose ``bwd`` is off by 1% in one coordinate of 100, or by a relative 1e-5
everywhere. ``tests/testing/test_vjp_power.py`` runs a fixed set of seeds of each (fast);
run this file to measure the rates over many seeds (the table in ``docs/laws.md``)::

    OPENBLAS_NUM_THREADS=1 python tests/testing/vjp_power.py [seeds]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens import LawError, PreLens
from prelens.nn import softmax_cross_entropy, squared_distance
from prelens.testing import check_vjp

Case = Callable[[int], tuple[Any, Any, Any, dict[str, Any]]]  # seed -> (lens, p, s, check_vjp kwargs)


def offset_layer(offset: float, n_in: int = 8, n_out: int = 4) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """``tanh(s W) + offset`` on ``s (3, n_in)``; a correct ``bwd``."""

    def fwd(w: np.ndarray, s: np.ndarray) -> tuple[Any, np.ndarray]:
        y = np.tanh(s @ w)
        return (s.copy(), w.copy(), y.copy()), y + offset

    def bwd(m: Any, da: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s, w, y = m
        dz = da * (1 - y * y)
        return s.T @ dz, dz @ w.T

    return PreLens(fwd, bwd, f"offset_layer({offset:g})")


def wave(
    n: int = 100, coordinate: int | None = None, factor: float = 1.0
) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """``c ⊙ sin(s)`` on vectors of ``n``, parameters ``c``. ``bwd`` multiplies both deltas by
    ``factor`` (``1 + 1e-5``: a relative error everywhere), or, with ``coordinate``, only that
    coordinate of ``ds`` (``1.01``: a 1% error in one coordinate)."""

    def fwd(c: np.ndarray, s: np.ndarray) -> tuple[Any, np.ndarray]:
        return (c.copy(), s.copy()), c * np.sin(s)

    def bwd(m: Any, da: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, s = m
        dc, ds = da * np.sin(s), da * c * np.cos(s)
        if coordinate is None:
            return dc * factor, ds * factor
        ds[coordinate] *= factor
        return dc, ds

    return PreLens(fwd, bwd, "wave")


def _offset(offset: float) -> Case:
    def case(seed: int) -> tuple[Any, Any, Any, dict[str, Any]]:
        rng = np.random.default_rng(seed)
        return offset_layer(offset), rng.standard_normal((8, 4)) / 3, rng.standard_normal((3, 8)), {"rng": seed}

    return case


def _squared_distance(scale: float) -> Case:
    def case(seed: int) -> tuple[Any, Any, Any, dict[str, Any]]:
        rng = np.random.default_rng(seed)
        g, s = scale * rng.standard_normal((4, 3)), scale * rng.standard_normal((4, 3))
        return squared_distance, g, s, {"rng": seed}

    return case


def _cross_entropy(scale: float) -> Case:
    def case(seed: int) -> tuple[Any, Any, Any, dict[str, Any]]:
        rng = np.random.default_rng(seed)
        return softmax_cross_entropy, rng.integers(0, 5, 4), scale * rng.standard_normal((4, 5)), {"rng": seed}

    return case


def _wave(scale: float = 1.0, *, one_coordinate: bool = False, factor: float = 1.0) -> Case:
    def case(seed: int) -> tuple[Any, Any, Any, dict[str, Any]]:
        rng = np.random.default_rng(seed)
        c, s = scale * rng.standard_normal(100), rng.standard_normal(100)
        lens = wave(coordinate=int(rng.integers(100)) if one_coordinate else None, factor=factor)
        return lens, c, s, {"rng": seed}

    return case


#: Correct lenses: every rejection is a false alarm.
CORRECT: dict[str, Case] = {
    "output offset 1e4": _offset(1e4),
    "output offset 1e6": _offset(1e6),
    "squared_distance, data x1000": _squared_distance(1e3),
    "squared_distance, data x1e6": _squared_distance(1e6),
    "softmax_cross_entropy, logits x1000": _cross_entropy(1e3),
    "wave, parameters x1e6": _wave(1e6),
}

#: Wrong lenses: every acceptance is a miss.
WRONG: dict[str, Case] = {
    "1% error in one coordinate of 100": _wave(one_coordinate=True, factor=1.01),
    "1e-5 relative error": _wave(factor=1 + 1e-5),
    "1e-5 relative error, output offset 1e6": lambda seed: _offset_wrong(seed, 1e-5),
}

#: Smaller errors still, to show where the power ends (measured, not asserted).
LIMITS: dict[str, Case] = {
    "0.01% error in one coordinate of 100": _wave(one_coordinate=True, factor=1.0001),
    "1e-7 relative error": _wave(factor=1 + 1e-7),
    "1e-7 relative error, output offset 1e6": lambda seed: _offset_wrong(seed, 1e-7),
}


def _offset_wrong(seed: int, error: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    lens, w, s, kw = _offset(1e6)(seed)
    wrong = PreLens(lens.fwd, lambda m, da: tuple(x * (1 + error) for x in lens.bwd(m, da)), "offset_wrong")
    return wrong, w, s, kw


def rejected(case: Case, seed: int, check: Callable[..., None] = check_vjp) -> bool:
    """Whether ``check`` rejects the lens of ``case`` drawn with ``seed``."""
    lens, p, s, kw = case(seed)
    try:
        check(lens, p, s, **kw)
    except LawError:
        return True
    return False


def main(n: int = 1000) -> None:
    print(f"check_vjp over seeds 0..{n - 1}")
    for title, cases, bad in (("false alarms", CORRECT, True), ("misses", WRONG, False), ("misses", LIMITS, False)):
        for name, case in cases.items():
            start = time.perf_counter()
            count = sum(rejected(case, seed) == bad for seed in range(n))
            ms = (time.perf_counter() - start) / n * 1e3
            print(f"{title:>13}  {name:40s} {count:5d} / {n}   ({ms:.1f} ms a check)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
