"""What the fast (whole-array) lenses share: the array alias, dtypes, and cheap input checks.

The checks in a hot ``fwd`` are a few attribute compares inline; only when one
fails is a helper here called to work out *what* is wrong and build the error
from the templates in :mod:`prelens._errors`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _errors as E

#: A numpy array (the fast lenses keep float64 or float32 end to end).
Array = npt.NDArray[Any]


def float_dtype(fn: str, dtype: npt.DTypeLike) -> np.dtype[Any]:
    """``dtype`` as a numpy float dtype, or a :class:`~prelens.DTypeError` naming ``fn``.

    >>> float_dtype("dense", "float32")
    dtype('float32')
    """
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise E.lens_dtype_error(fn, "dtype", "a float dtype (float64 or float32)", str(dt))
    return dt


def check_size(fn: str, what: str, n: object) -> int:
    """``n`` if it is a positive int (a layer width), else an error naming ``fn``.

    >>> check_size("linear", "n_in", 3)
    3
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise E.lens_value_error(fn, f"{what} must be a positive int, got {n!r}")
    return int(n)


def dtype_suffix(dt: np.dtype[Any]) -> str:
    """``""`` for float64 (the default), ``", f32"`` otherwise: the tail of a fast lens's ``repr``.

    >>> dtype_suffix(np.dtype(np.float32))
    ', f32'
    """
    return "" if dt == np.float64 else f", {E.dtype_name(dt)}"


def features(dt: np.dtype[Any], n: int) -> str:
    """The expected shape of an input with ``n`` features and any leading axes: ``f64[...,784]``.

    >>> features(np.dtype(np.float64), 784)
    'f64[...,784]'
    """
    return f"{E.dtype_name(dt)}[...,{n}]"


def shape_str(dt: np.dtype[Any], shape: tuple[int, ...]) -> str:
    """A shape as the error messages show it: ``f64[128,10]``.

    >>> shape_str(np.dtype(np.float32), (128, 10))
    'f32[128,10]'
    """
    return f"{E.dtype_name(dt)}[{','.join(map(str, shape))}]"


def input_error(lens: str, what: str, x: object, expected: str, dt: np.dtype[Any]) -> E.PrelensError:
    """The error for an input ``x`` that failed a fast lens's inline check.

    Not an array: :class:`~prelens.StructureError`; wrong dtype:
    :class:`~prelens.DTypeError`; wrong shape: :class:`~prelens.ShapeError`.
    Each names the lens, the expected and the received value.

    >>> input_error("dense(784→256, tanh)", "input", np.zeros((2, 100)), "f64[...,784]", np.dtype("f8"))
    ShapeError('dense(784→256, tanh): input: expected f64[...,784], got f64[2,100]')
    """
    if not isinstance(x, np.ndarray):
        return E.lens_structure_error(lens, what, f"must be a numpy array {expected}, got {E.describe(x)}")
    if x.dtype != dt:
        return E.lens_dtype_error(lens, what, expected, E.describe(x))
    return E.lens_shape_error(lens, what, expected, E.describe(x))


def param_error(lens: str, what: str, p: object, expected: str, dt: np.dtype[Any]) -> E.PrelensError:
    """The error for a parameter array of the wrong kind, dtype or shape.

    >>> param_error("bias(3)", "bias", np.zeros(2), "f64[3]", np.dtype("f8"))
    ShapeError('bias(3): bias: expected f64[3], got f64[2]')
    """
    return input_error(lens, what, p, expected, dt)


def float_input_error(lens: str, x: object) -> E.PrelensError:
    """The error for a non-float input to a parameter-free array lens (activations).

    >>> float_input_error("tanh", np.arange(3))
    DTypeError('tanh: input: expected a float array, got i64[3]')
    """
    if not isinstance(x, np.ndarray):
        return E.lens_structure_error(lens, "input", f"must be a numpy float array, got {E.describe(x)}")
    return E.lens_dtype_error(lens, "input", "a float array", E.describe(x))
