"""Directional derivatives by central differences, with a bound on their own error (docs/laws.md,
"The power of the kit").

``g(t) = <da, f(x + tδ)>`` is sampled at ``±h``, ``±2h``, ``±4h``: the Richardson combination
``R(h) = (4 D(h) − D(2h)) / 3`` of the central differences ``D`` is the estimate; ``|R(h) − R(2h)|``,
the jump of the second differences (a kink) and the rounding ``ε·(Σ|da|·|f| + Σ|x|·|∂g/∂x|) / h``
bound its error. Steps move by factors of ten until the bound is small.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

EPS = float.fromhex("0x1p-52")  #: float64 machine epsilon

#: How many times the rounding estimate the error bound allows (one that amplifies rounding more is caught
#: by the second opinion, :func:`noise_level`), and how many times a measured noise level.
ROUNDING_FACTOR = 2.0
NOISE_FACTOR = 4.0

#: The largest relative step tried (the probes reach four times as far).
MAX_STEP = 0.01

#: Probe: ``t -> (g(t), Σ|da|·|f(x + tδ)|)``, or None where ``f`` is not finite (out of its domain).
Probe = Callable[[float], "tuple[float, float] | None"]


@dataclass(frozen=True)
class Difference:
    """A directional derivative: the ``value`` and a bound on its ``error``."""

    value: float
    error: float
    rounding: float  #: the part of ``error`` due to rounding (it grows as the step shrinks)


def noise_level(probe: Probe, g0: float, step: float = 1e-8) -> float:
    """The rounding noise of ``g`` seen directly: the largest distance of ``g(k·step)``, ``k = 0, ±1 … ±4``,
    from the parabola fitted through them (for a forward pass whose sizes hide its rounding, one that
    adds ``1e6`` and takes it away again)."""
    ts, gs = [0.0], [g0]
    for k in (1, -1, 2, -2, 3, -3, 4, -4):
        got = probe(k * step)
        if got is None:
            return math.inf
        ts.append(k * step)
        gs.append(got[0])
    g = np.array(gs)
    if np.all(g == g0):  # no change at all: no noise to see (the caller knows what that means)
        return 0.0
    t = np.array(ts) / step
    basis = np.stack([np.ones_like(t), t, t * t], axis=1)
    coef = np.linalg.lstsq(basis, g, rcond=None)[0]
    return float(np.max(np.abs(g - basis @ coef)))


def _rung(probe: Probe, g0: float, size0: float, input_size: float, h: float, noise: float) -> Difference | None:
    g: dict[int, float] = {}
    size = size0
    for k in (1, -1, 2, -2, 4, -4):
        got = probe(k * h)
        if got is None or not math.isfinite(got[0]):
            return None
        g[k], size = got[0], max(size, got[1])
    d1, d2, d4 = ((g[k] - g[-k]) / (2 * k * h) for k in (1, 2, 4))
    r1, r2 = (4 * d1 - d2) / 3, (4 * d2 - d4) / 3
    s1 = (g[1] - 2 * g0 + g[-1]) / (h * h)
    s2 = (g[2] - 2 * g0 + g[-2]) / (4 * h * h)
    rounding = (ROUNDING_FACTOR * EPS * (size + input_size) + NOISE_FACTOR * noise) / h
    return Difference(r1, abs(r1 - r2) + h * abs(s1 - s2) + rounding, rounding)


def directional_derivative(
    probe: Probe,
    g0: float,
    size0: float,
    input_size: float,
    *,
    first_step: float,
    done: Callable[[Difference], bool],
    noise: float = 0.0,
) -> Difference | None:
    """The derivative of ``g`` at ``0`` along the probe, or None if no step gave finite values.

    ``g0``, ``size0``: ``g(0)`` and ``Σ|da|·|f(x)|``; ``input_size``: ``Σ|x|·|∂g/∂x|``
    (the scale of the rounding of the steps themselves); ``noise``: a rounding noise of
    ``g`` measured by :func:`noise_level`, if any. Steps ``first_step·10^k`` (at
    most five, none above ``MAX_STEP``) are tried until ``done`` accepts one; the one
    with the smallest error bound is returned.
    """
    k, best, seen = 0, None, set()
    for _ in range(5):
        seen.add(k)
        h = first_step * 10.0**k
        rung = _rung(probe, g0, size0, input_size, h, noise)
        if rung is None:  # stepped out of the domain: go closer
            k -= 1
        else:
            if best is None or rung.error < best.error:
                best = rung
            if done(rung):
                break
            k += 1 if 2 * rung.rounding > rung.error else -1  # rounding dominates: a larger step
        if k in seen or first_step * 10.0**k > MAX_STEP:
            break
    return best
