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


def describe_tree(x: Any, limit: int = 160) -> str:
    """A compact picture of a tree of values: ``(f64[32,4], [f64[4], ()])``."""
    text = _describe_tree(x, depth=0)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_tree(x: Any, depth: int) -> str:
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        if depth > 4:
            return "(…)"
        inner = ", ".join(_describe_tree(c, depth + 1) for c in x)
        return f"({inner}{',' if len(x) == 1 else ''})"
    if isinstance(x, list):
        if depth > 4:
            return "[…]"
        head = ", ".join(_describe_tree(c, depth + 1) for c in x[:3])
        return f"[{head}{', …' if len(x) > 3 else ''}] (length {len(x)})" if len(x) > 3 else f"[{head}]"
    return describe(x)


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


def in_part(exc: Exception, composite: str, part: str, what: str, value: Any, origin: str = "") -> Exception:
    """The error ``exc`` raised inside ``part`` of ``composite``, with where and on what.

    Only the innermost composite adds its context (the one that knows both
    neighbours); errors that are not prelens's own become :class:`StructureError`.
    """
    if getattr(exc, "_prelens_where", False):
        return exc
    cls = type(exc) if isinstance(exc, PrelensError) else StructureError
    detail = str(exc) if isinstance(exc, PrelensError) else f"{type(exc).__name__}: {exc}"
    where = f"in {composite}: {what} of {part} failed on {describe_tree(value)}"
    if origin:
        where += f" ({origin})"
    new: Exception
    try:
        new = cls(f"{detail}\n  {where}")
    except TypeError:  # an error class with a richer constructor: keep it, add a note
        exc.add_note(where)
        new = exc
    new._prelens_where = True  # type: ignore[attr-defined]
    if new is not exc:
        new.__cause__ = exc
    return new


def not_a_pair(lens: str, what: str, layout: str, got: Any) -> StructureError:
    err = StructureError(f"{lens}: {what} must be a pair {layout}, got {describe_tree(got)}")
    err._prelens_where = True  # type: ignore[attr-defined]
    return err


def law_violation(law: str, where: str, path: str, left: Any, right: Any) -> LawError:
    return LawError(
        f"law '{law}' fails: {where} differ at {path_str(path)}:\n  left:  {_short(left)}\n  right: {_short(right)}"
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


# ------------------------------------------------- training, optimisers, checkpoints


class ArgumentError(PrelensError, ValueError):
    """A function was given an invalid setting (a learning rate, a fraction, a size)."""


def bad_argument(where: str, name: str, value: Any, expected: str) -> ArgumentError:
    return ArgumentError(f"{where}: {name} must be {expected}, got {value!r}")


def optim_leaf_dtype(opt: str, path: str, got: str) -> DTypeError:
    return DTypeError(f"{opt}: cannot update the parameter at {path_str(path)}: expected floats, got {got}")


class TrainingNonFiniteError(NonFiniteError):
    """Training met a non-finite loss or gradient; the last good state rides along.

    ``params`` and ``opt_state`` are the last finite parameters and optimiser
    state, ``history`` the training history up to the failing step.
    """

    def __init__(self, message: str, params: Any, opt_state: Any, history: Any) -> None:
        super().__init__(message)
        self.params = params
        self.opt_state = opt_state
        self.history = history


def training_non_finite(
    what: str, where: str, detail: str, params: Any, opt_state: Any, history: Any
) -> TrainingNonFiniteError:
    return TrainingNonFiniteError(
        f"training stopped: {what} became non-finite at {where} ({detail}); "
        "the last good parameters, optimiser state and history are attached to this error "
        "as .params, .opt_state and .history",
        params,
        opt_state,
        history,
    )


def checkpoint_unreadable(path: str, detail: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {path}: cannot be read: {detail}")


def checkpoint_mismatch(path: str, detail: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {path} does not fit the model: {detail}")


def checkpoint_unsupported(where: str, detail: str) -> CheckpointError:
    return CheckpointError(f"cannot save a checkpoint: at {path_str(where)}: {detail}")


def checkpoint_write_failed(path: str, detail: str) -> CheckpointError:
    return CheckpointError(f"cannot write checkpoint {path}: {detail}; the file there (if any) is unchanged")


def checkpoint_unknown_namedtuple(path: str, where: str, name: str) -> CheckpointError:
    return CheckpointError(
        f"checkpoint {path}: at {path_str(where)}: named tuple {name} is not registered; "
        "pass like=<a tree of the model's parameters> or prelens.checkpoint.register_namedtuple(cls)"
    )
