"""Seeded 2-D toy problems for pictures: two interleaved moons, and spirals.

Both return ``(xs, ys)``: ``xs`` float64 of shape ``(n, 2)``, ``ys`` int64
class indices of shape ``(n,)``, rows in random order. The same ``rng`` seed
gives the same points.

>>> xs, ys = make_moons(6, rng=0)
>>> xs.shape, sorted(ys.tolist())
((6, 2), [0, 0, 0, 1, 1, 1])
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import is_real
from prelens.core import _args
from prelens.datasets._split import Seed

__all__ = ["make_moons", "make_spirals"]

Points = tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]


def _check(fn: str, n: int, noise: float, least: int, rng: Seed) -> np.random.Generator:
    """Check ``n`` and ``noise``; the generator ``rng`` seeds."""
    _args.count(fn, "n", n, least)
    if not (is_real(noise) and math.isfinite(noise) and noise >= 0):
        raise E.bad_argument(fn, "noise", noise, "a number >= 0")
    return _args.seed(fn, rng)


def _shuffled(xs: npt.NDArray[np.float64], ys: npt.NDArray[np.int64], gen: np.random.Generator) -> Points:
    order = gen.permutation(len(ys))
    return xs[order], ys[order]


def make_moons(n: int = 200, noise: float = 0.1, rng: Seed = 0) -> Points:
    """Two interleaving half circles: class 0 the upper, class 1 the lower, shifted one.

    ``xs (n, 2)``, ``ys (n,)``: ``n // 2`` points in class 0 on ``(cos t, sin t)``, the rest on
    ``(1 − cos t, ½ − sin t)``, ``t`` evenly in ``[0, π]``, plus Gaussian noise of deviation ``noise``.

    >>> xs, ys = make_moons(100, noise=0.0, rng=0)
    >>> bool(np.all(xs[ys == 0, 1] >= 0)), bool(np.all(xs[ys == 1, 1] <= 0.5))
    (True, True)
    """
    gen = _check("make_moons", n, noise, 2, rng)
    n0 = n // 2
    t0, t1 = np.linspace(0.0, np.pi, n0), np.linspace(0.0, np.pi, n - n0)
    upper = np.column_stack([np.cos(t0), np.sin(t0)])
    lower = np.column_stack([1.0 - np.cos(t1), 0.5 - np.sin(t1)])
    with np.errstate(over="ignore"):
        xs = np.concatenate([upper, lower]) + noise * gen.standard_normal((n, 2))
    if not np.isfinite(xs).all():  # a noise too large for float64
        raise E.bad_argument("make_moons", "noise", noise, "a number small enough for finite points")
    ys = np.concatenate([np.zeros(n0, np.int64), np.ones(n - n0, np.int64)])
    return _shuffled(xs, ys, gen)


def make_spirals(n: int = 300, classes: int = 3, noise: float = 0.2, turns: float = 1.0, rng: Seed = 0) -> Points:
    """``classes`` interleaved spiral arms around the origin, one class per arm.

    ``xs (n, 2)``, ``ys (n,)``: arm ``k`` holds ``n // classes`` points (the first ``n % classes`` arms one
    more) at radius ``r`` evenly in ``[0, 1]``, angle ``2π (k / classes + turns · r)`` plus Gaussian noise
    of deviation ``noise`` radians.

    >>> xs, ys = make_spirals(90, classes=3, rng=0)
    >>> np.bincount(ys).tolist(), bool(np.all(np.hypot(xs[:, 0], xs[:, 1]) <= 1.0))
    ([30, 30, 30], True)
    """
    gen = _check("make_spirals", n, noise, classes if isinstance(classes, int) else 1, rng)
    _args.count("make_spirals", "classes", classes, 2)
    if not (is_real(turns) and math.isfinite(turns) and turns > 0):
        raise E.bad_argument("make_spirals", "turns", turns, "a number > 0")
    counts = [n // classes + (1 if k < n % classes else 0) for k in range(classes)]
    parts = []
    for k, m in enumerate(counts):
        r = np.linspace(0.0, 1.0, m)
        with np.errstate(over="ignore", invalid="ignore"):
            angle = 2.0 * np.pi * (k / classes + turns * r) + noise * gen.standard_normal(m)
            parts.append(np.column_stack([r * np.cos(angle), r * np.sin(angle)]))
    xs = np.concatenate(parts)
    if not np.isfinite(xs).all():  # an angle beyond float64
        raise E.ArgumentError(f"make_spirals: noise={noise!r} and turns={turns!r} are too large for finite points")
    ys = np.concatenate([np.full(m, k, np.int64) for k, m in enumerate(counts)])
    return _shuffled(xs, ys, gen)
