"""What the optimisers need on any array library, and under ``jax.jit``: step counts and step-size scalars.

Off numpy, and under ``jax.jit`` (where every leaf of the state is traced), a step count
(``AdamState.step``, ``ScheduledState.step``) is a 0-d integer array of the parameters' library
(:func:`as_step`, :func:`known`). Scalars that depend on the step (Adam's bias corrections, a
schedule's value) are Python floats whenever the step is known, exactly as numpy computes them;
traced, they are 0-d arrays of the widest float (:func:`wide_float`), which :func:`cast` turns into
each leaf's dtype before they meet it (float32 stays float32, as numpy keeps it).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens.backend._arrays import dtype_kind, dtype_name, is_array, is_concrete, namespace


def wide_float(xp: Any) -> Any:
    """The widest real float dtype ``xp`` offers now (the inspection API: JAX's 64-bit switch honoured).

    >>> wide_float(np)
    dtype('float64')
    """
    if xp is np:
        return np.dtype(np.float64)
    info = getattr(xp, "__array_namespace_info__", None)
    if info is None:
        return xp.float64
    found = info().dtypes(kind="real floating")
    return found["float64"] if "float64" in found else found["float32"]


def as_step(x: Any) -> Any:
    """``x`` as a step count (an int ``>= 0``; another library's 0-d integer array as it is, checked when
    concrete), or None if it is not one.

    >>> as_step(3), as_step(np.int64(2)), as_step(np.asarray(7)), as_step(-1), as_step(1.5), as_step(True)
    (3, 2, 7, None, None, None)
    """
    if isinstance(x, (bool, np.bool_)):
        return None
    if not isinstance(x, (int, np.integer)):
        if not is_array(x) or x.ndim != 0 or dtype_kind(x.dtype) not in "iu":
            return None
        if not isinstance(x, np.ndarray):  # another library's (a tracer under jax.jit) stays as it is
            return None if is_concrete(x) and int(x) < 0 else x
    return int(x) if x >= 0 else None


def known(t: Any) -> int | None:
    """The value of a step count when it is known (an int, or a concrete array), else None (traced).

    >>> known(3)
    3
    """
    if isinstance(t, int):
        return t
    return int(t) if is_concrete(t) else None


def power_gap(b: float, t: Any) -> Any:
    """``1 − bᵗ`` for a step ``t >= 1``: numpy's float when ``t`` is known; traced, ``−expm1(t·log b)`` in the
    widest float (its digits kept where ``1 − bᵗ`` is small, even in float32).

    >>> power_gap(0.9, 1), power_gap(0.5, 2)
    (0.09999999999999998, 0.75)
    """
    n = known(t)
    if n is not None:
        return 1.0 - b**n
    xp = namespace(t)
    tf = xp.astype(t, wide_float(xp))
    if b == 0.0:
        return xp.ones_like(tf)
    return -xp.expm1(tf * math.log(b))


def cast(c: Any, like: Any) -> Any:
    """The scalar ``c`` ready to meet the array ``like``: a Python float as it is, a 0-d array in ``like``'s dtype.

    >>> cast(0.5, np.ones(2, np.float32))
    0.5
    """
    if type(c) is float or not is_array(c) or not is_array(like) or c.dtype == like.dtype:
        return c
    return namespace(c).astype(c, like.dtype)


def total_squares(leaves: Any) -> tuple[float, Any]:
    """``Σ x²`` over ``leaves``: a float for numpy's and numbers, and another library's summed on its device
    in its widest float (a 0-d array, None if there is none; no value read back).

    >>> total_squares([np.array([3.0]), 4.0])
    (25.0, None)
    """
    total, arrays = 0.0, None
    for x in leaves:
        if not isinstance(x, np.ndarray) and is_array(x):
            xp = namespace(x)
            a = xp.astype(x, wide_float(xp))
            arrays = xp.sum(a * a) if arrays is None else arrays + xp.sum(a * a)
        else:
            a = np.asarray(x, dtype=np.float64)
            total += float(np.vdot(a, a))
    return total, arrays


def traced_value(schedule: Callable[[Any], Any], t: Any, at_step: Callable[[int], float]) -> Any:
    """A schedule's value at a traced step ``t``: traced into the program where it is written with array
    operations, else (``if t < 100``, ``math.cos(t)``) called back on the host as ``at_step(int(t))``
    (``jax.pure_callback``, a 0-d array of the widest float)."""
    jax = sys.modules["jax"]  # only JAX traces: a traced step is a JAX tracer
    untraceable = (
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerIntegerConversionError,
        jax.errors.TracerArrayConversionError,
    )
    try:
        return schedule(t)
    except untraceable:
        pass
    dtype = np.dtype(dtype_name(wide_float(namespace(t))))

    def on_host(step: Any) -> Any:
        return np.asarray(at_step(int(step)), dtype=dtype)

    return jax.pure_callback(on_host, jax.ShapeDtypeStruct((), dtype), t)
