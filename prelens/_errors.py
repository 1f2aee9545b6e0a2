"""Every error prelens raises, and every message template, in one place.

All errors derive from :class:`PrelensError`, so ``except PrelensError`` catches
anything the library reports on purpose. Each concrete error also derives from
the builtin exception a Python user would expect (``ValueError``, ``TypeError``,
``AssertionError``), so existing ``except`` clauses keep working.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class PrelensError(Exception):
    """Base class of every error raised on purpose by prelens."""


class StructureError(PrelensError, ValueError):
    """A tree (parameters, residues, inputs, deltas) has the wrong structure."""


class ShapeError(PrelensError, ValueError):
    """An array has the wrong shape for the lens it is given to."""


class DTypeError(PrelensError, TypeError):
    """An array has the wrong dtype for the lens it is given to."""


class LawError(PrelensError, AssertionError):
    """A categorical law or a gradient check failed."""


class NonFiniteError(PrelensError, FloatingPointError):
    """A loss, a gradient or a parameter became NaN or infinite."""


class CheckpointError(PrelensError, OSError):
    """A checkpoint file is missing, corrupt, or belongs to another model."""


def describe(x: Any) -> str:
    """A short description of a value for error messages: ``f64[3,4]``, ``tuple of 2``."""
    if isinstance(x, np.ndarray):
        return f"{dtype_name(x.dtype)}[{','.join(map(str, x.shape))}]"
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return f"{type(x).__name__} {x!r}"
    if x is None:
        return "None"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return f"{type(x).__name__}"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {len(x)}"
    if isinstance(x, dict):
        return f"dict with keys {sorted(map(str, x))}"
    return type(x).__name__


def dtype_name(dtype: Any) -> str:
    """``float64 -> f64``, ``int32 -> i32``: the short names used in reprs."""
    dt = np.dtype(dtype)
    return f"{dt.kind}{dt.itemsize * 8}"


def path_str(path: str) -> str:
    """A tree path as shown in messages; the root is ``<root>``."""
    return path or "<root>"


# ---------------------------------------------------------------- templates


def structure_mismatch(what: str, path: str, expected: str, got: str) -> StructureError:
    return StructureError(f"{what}: at {path_str(path)}: expected {expected}, got {got}")


def lens_structure_error(lens: str, what: str, detail: str) -> StructureError:
    return StructureError(f"{lens}: {what} {detail}")


def lens_shape_error(lens: str, what: str, expected: str, got: str) -> ShapeError:
    return ShapeError(f"{lens}: {what}: expected {expected}, got {got}")


def lens_dtype_error(lens: str, what: str, expected: str, got: str) -> DTypeError:
    return DTypeError(f"{lens}: {what}: expected {expected}, got {got}")


def lens_value_error(lens: str, what: str) -> PrelensError:
    return StructureError(f"{lens}: {what}")


def list_length_error(lens: str, what: str, expected: int, got: int) -> StructureError:
    return StructureError(f"{lens}: {what} must be a list of length {expected}, got length {got}")


def no_init_error(lens: str, part: str) -> PrelensError:
    where = "this lens was" if part == lens else f"its part {part} was"
    return PrelensError(
        f"{lens}: cannot create parameters: {where} built without an initializer; "
        "pass the parameters explicitly or build it with init_fn=..."
    )


def law_violation(law: str, where: str, path: str, left: Any, right: Any) -> LawError:
    return LawError(
        f"law '{law}' fails: {where} differ at {path_str(path)}:\n"
        f"  left:  {_short(left)}\n  right: {_short(right)}"
    )


def vjp_violation(lens: str, lhs: float, rhs: float, leaf: str | None) -> LawError:
    where = f"; the first wrong leaf is {leaf}" if leaf else ""
    return LawError(
        f"check_vjp: {lens}: bwd is not the reverse derivative of fwd: "
        f"<da, J·δ> by central differences = {lhs:.10g}, "
        f"<bwd(da), δ> = {rhs:.10g}{where}"
    )


def non_finite(what: str, path: str) -> NonFiniteError:
    return NonFiniteError(f"{what}: non-finite value at {path_str(path)}")


def _short(x: Any) -> str:
    if isinstance(x, np.ndarray):
        with np.printoptions(precision=6, threshold=8, edgeitems=2):
            return f"{describe(x)} {x!s}".replace("\n", " ")
    return repr(x)
