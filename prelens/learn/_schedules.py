"""Learning-rate schedules: pure functions of the step, for any optimiser's ``lr``.

A schedule maps the number of updates already taken, ``t = 0, 1, 2, ...``, to the step size of the
next update; with one as its ``lr`` an optimiser's state is ``ScheduledState(step, state)`` (a resumed
run continues the schedule). Any function ``int -> float`` is a schedule; the ones here (their formulas
in docs/api.md) are frozen values that print as the call that made them.

At a traced step (``jax.jit``) they compute branch-free with array operations, a 0-d array of the
widest float (see :mod:`prelens.learn._xp`); a known step takes the Python path (numpy's numbers).

>>> sched = warmup_cosine(0.1, warmup=2, total=6)
>>> [round(sched(t), 4) for t in range(8)]
[0.05, 0.1, 0.1, 0.0854, 0.05, 0.0146, 0.0, 0.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import dtype_kind, is_array, is_concrete, namespace
from prelens.core import _args
from prelens.learn._xp import wide_float


class Schedule:
    """The base of the schedules here (checks and ``repr``), called with the step ``t`` (an int ``>= 0``).

    Each writes its formula once, :meth:`value`, against a namespace: Python's numbers at a known step,
    the array library's branch-free operations at a traced one.

    >>> isinstance(constant(0.1), Schedule), constant(0.1)(7)
    (True, 0.1)
    """

    #: The function that makes it (its ``repr`` and its errors name it).
    fn: ClassVar[str] = "schedule"

    def __call__(self, step: int) -> float:
        """The step size of update number ``step + 1`` (a traced 0-d float array at a traced step)."""
        t: Any = step
        if type(t) is not int and is_array(t) and not is_concrete(t):
            if t.ndim != 0 or dtype_kind(t.dtype) not in "iu":
                raise E.bad_argument(self.fn, "step", t, "an int >= 0")
            xp = namespace(t)
            out: float = self.value(xp, t, xp.astype(t, wide_float(xp)))
            return out
        try:
            ok = not isinstance(step, (bool, np.bool_)) and int(step) == step and step >= 0
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise E.bad_argument(self.fn, "step", step, "an int >= 0")
        return float(self.value(_PY, int(step), float(int(step))))

    def value(self, xp: Any, t: Any, tf: Any) -> Any:
        """The value at step ``t`` (``tf``: it as a float), with ``xp``'s ``cos``, ``where`` and ``full_like``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{self.fn}({fields})"


#: Python's numbers as a namespace for :meth:`Schedule.value` (``where`` picks, never computes both).
_PY = SimpleNamespace(cos=math.cos, where=lambda cond, a, b: a if cond else b, full_like=lambda x, v: v)


@dataclass(frozen=True, repr=False)
class _Constant(Schedule):
    fn: ClassVar[str] = "constant"
    lr: float

    def value(self, xp: Any, t: Any, tf: Any) -> Any:
        return self.lr


@dataclass(frozen=True, repr=False)
class _StepDecay(Schedule):
    fn: ClassVar[str] = "step_decay"
    lr: float
    every: int
    factor: float

    def value(self, xp: Any, t: Any, tf: Any) -> Any:
        return self.lr * self.factor ** (tf // self.every)


@dataclass(frozen=True, repr=False)
class _ExponentialDecay(Schedule):
    fn: ClassVar[str] = "exponential_decay"
    lr: float
    rate: float
    every: int

    def value(self, xp: Any, t: Any, tf: Any) -> Any:
        return self.lr * self.rate ** (tf / self.every)


@dataclass(frozen=True, repr=False)
class _WarmupCosine(Schedule):
    fn: ClassVar[str] = "warmup_cosine"
    peak: float
    warmup: int
    total: int
    final: float

    def value(self, xp: Any, t: Any, tf: Any) -> Any:
        frac = (tf - self.warmup) / max(1, self.total - self.warmup)  # total = warmup: never picked
        down = self.final + (self.peak - self.final) * 0.5 * (1.0 + xp.cos(math.pi * frac))
        out = xp.where(t >= self.total, xp.full_like(tf, self.final), down)
        if self.warmup == 0:
            return out
        return xp.where(t < self.warmup, self.peak * (tf + 1) / self.warmup, out)


@dataclass(frozen=True, repr=False)
class _OneCycle(Schedule):
    fn: ClassVar[str] = "one_cycle"
    peak: float
    total: int
    warmup_fraction: float
    div: float
    final_div: float

    def value(self, xp: Any, t: Any, tf: Any) -> Any:
        start = self.peak / self.div
        end = start / self.final_div
        up = max(1, round(self.warmup_fraction * self.total))
        rise = start + (self.peak - start) * 0.5 * (1.0 - xp.cos(math.pi * tf / up))
        frac = (tf - up) / max(1, self.total - up)
        fall = end + (self.peak - end) * 0.5 * (1.0 + xp.cos(math.pi * frac))
        return xp.where(t < up, rise, xp.where(t >= self.total, xp.full_like(tf, end), fall))


def _rate(fn: str, what: str, value: Any) -> float:
    return _args.real(fn, what, value, low=0.0, low_open=True)


def constant(lr: float) -> Schedule:
    """The constant schedule ``t -> lr`` (what a plain number means).

    >>> constant(0.01)
    constant(lr=0.01)
    """
    return _Constant(_rate("constant", "lr", lr))


def step_decay(lr: float, every: int, factor: float = 0.1) -> Schedule:
    """``lr · factor ** (t // every)``: the step size times ``factor`` (in ``(0, 1]``) every ``every`` steps.

    >>> s = step_decay(1.0, every=10, factor=0.5)
    >>> s(0), s(9), s(10), s(25)
    (1.0, 1.0, 0.5, 0.25)
    """
    fn = "step_decay"
    return _StepDecay(_rate(fn, "lr", lr), _args.count(fn, "every", every), _unit(fn, "factor", factor))


def exponential_decay(lr: float, rate: float, every: int = 1) -> Schedule:
    """``lr · rate ** (t / every)``: a smooth decay by ``rate`` (in ``(0, 1]``) every ``every`` steps.

    >>> s = exponential_decay(1.0, rate=0.5, every=2)
    >>> s(0), s(1), s(2), s(4)
    (1.0, 0.7071067811865476, 0.5, 0.25)
    """
    fn = "exponential_decay"
    return _ExponentialDecay(_rate(fn, "lr", lr), _unit(fn, "rate", rate), _args.count(fn, "every", every))


def warmup_cosine(peak: float, warmup: int, total: int, final: float = 0.0) -> Schedule:
    """A linear warm-up to ``peak`` over ``warmup`` steps, then a half cosine down to ``final``.

    The formula is in docs/api.md (the first update is not wasted on a zero step);
    ``0 <= warmup <= total``, ``0 <= final <= peak``.

    >>> s = warmup_cosine(1.0, warmup=4, total=12)
    >>> [s(t) for t in (0, 3, 4, 8, 12, 99)]
    [0.25, 1.0, 1.0, 0.5, 0.0, 0.0]
    """
    fn = "warmup_cosine"
    top = _rate(fn, "peak", peak)
    n = _args.count(fn, "total", total)
    w = _args.count(fn, "warmup", warmup, least=0)
    if w > n:
        raise E.bad_argument(fn, "warmup", warmup, f"an int in [0, total={n}]")
    low = _args.real(fn, "final", final, low=0.0)
    if low > top:
        raise E.bad_argument(fn, "final", final, f"a number in [0, peak={top:g}]")
    return _WarmupCosine(top, w, n, low)


def one_cycle(
    peak: float, total: int, warmup_fraction: float = 0.3, div: float = 25.0, final_div: float = 1e4
) -> Schedule:
    """Smith's one-cycle policy: up from ``peak / div`` to ``peak``, then down far below the start.

    Half-cosine ramps, up over ``round(warmup_fraction · total)`` steps, down to ``peak / (div · final_div)``
    at ``t = total``; PyTorch's ``OneCycleLR`` defaults. ``0 < warmup_fraction < 1``, ``div, final_div >= 1``.
    ``OneCycleLR(max_lr=peak, total_steps=total)`` differs by a step: it rises over one step fewer (its peak at
    ``warmup_fraction · total − 1``) and falls along the same values one step earlier, to the floor at its last
    step, ``total − 1`` (here a run of ``total`` steps ends at ``t = total − 1``, one step short of the floor).

    >>> s = one_cycle(1.0, total=10)
    >>> round(s(0), 4), s(3), round(s(10), 8)
    (0.04, 1.0, 4e-06)
    """
    fn = "one_cycle"
    top = _rate(fn, "peak", peak)
    n = _args.count(fn, "total", total)
    frac = _args.real(fn, "warmup_fraction", warmup_fraction, low=0.0, low_open=True, high=1.0)
    d = _args.real(fn, "div", div, low=1.0)
    fd = _args.real(fn, "final_div", final_div, low=1.0)
    return _OneCycle(top, n, frac, d, fd)


def _unit(fn: str, what: str, value: Any) -> float:
    x = _args.real(fn, what, value, low=0.0, low_open=True)
    if x > 1.0:
        raise E.bad_argument(fn, what, value, "a number in (0, 1]")
    return x
