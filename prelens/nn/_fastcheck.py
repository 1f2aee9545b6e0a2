"""What the fast lenses share: the array alias, constructor-argument checks, and error builders."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import device, dtype_kind, is_array, is_real, namespace, to_numpy
from prelens.core import _args as A

#: A numpy array (the fast lenses keep float64 or float32 end to end).
Array = npt.NDArray[Any]


def float_dtype(fn: str, dtype: npt.DTypeLike) -> np.dtype[Any]:
    """``dtype`` as a numpy float dtype, or a :class:`~prelens.DTypeError` naming ``fn``.

    >>> float_dtype("dense", "float32")
    dtype('float32')
    """
    return A.float_dtype(fn, "dtype", dtype)


def check_size(fn: str, what: str, n: object) -> int:
    """``n`` if it is a positive int (a layer width), else an error naming ``fn``.

    >>> check_size("linear", "n_in", 3)
    3
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise E.not_positive_int(fn, what, n)
    return int(n)


def dtype_suffix(dt: np.dtype[Any]) -> str:
    """``""`` for float64 (the default), ``", f32"`` otherwise: the tail of a fast lens's ``repr``.

    >>> dtype_suffix(np.dtype(np.float32))
    ', f32'
    """
    return "" if dt == np.float64 else f", {E.dtype_name(dt)}"


def dtype_token(x: Any) -> Any:
    """An empty array of ``x``'s library, dtype and device: kept in the residue of a lens that keeps no array of
    its output's dtype, so that its declared delta (a ``Like``) asks for that dtype without keeping ``x``.

    >>> dtype_token(np.ones((2, 3), np.float32))
    array([], dtype=float32)
    """
    if type(x) is np.ndarray:
        return np.empty(0, x.dtype)
    return namespace(x).empty((0,), dtype=x.dtype, device=device(x))


def out_of_range(lens: str, what: str, ids: Any, n: int, allowed: str) -> E.StructureError:
    """The error for integer ``ids`` (of any library, concrete) of which some lie outside ``[0, n)``: it names the
    first such id and where it is, ``labels must lie in [0, 4), got 9 at index (1, 0)``.

    >>> out_of_range("emb", "token ids", np.array([[0, 1], [9, -3]]), 4, "[0, 4)")
    StructureError('emb: token ids must lie in [0, 4), got 9 at index (1, 0)')
    """
    host = to_numpy(ids)
    bad = np.flatnonzero((host < 0) | (host >= n))[0]
    return E.out_of_range(
        lens, what, allowed, int(host.flat[bad]), str(tuple(map(int, np.unravel_index(bad, host.shape))))
    )


def scalar_delta(lens: str, da: Any) -> Any:
    """The output delta of a loss (a scalar): a real number or a 0-d real array, else an error.

    >>> scalar_delta("mse", 1.0), scalar_delta("mse", np.float32(2.0))
    (1.0, np.float32(2.0))
    """
    if isinstance(da, (int, float, np.integer, np.floating)) and not isinstance(da, (bool, np.bool_)):
        return da
    if isinstance(da, np.ndarray) and da.shape == () and da.dtype.kind in "iuf":
        return da[()]
    if is_array(da) and da.shape == () and dtype_kind(da.dtype) in "iuf":  # another library's 0-d array
        return da
    raise E.must_be(lens, "output delta", "a real number (a loss's delta; training seeds 1.0)", E.describe(da))


def real_vector(lens: str, what: str, x: object, n: int | None = None) -> Array:
    """``x`` (a 1-D real array or a list of real numbers: the post's ``V = [D]``) as a float64 vector,
    of length ``n`` if given; anything else is an error naming ``lens``.

    >>> real_vector("linear_l(2)", "input", [1, 2.5])
    array([1. , 2.5])
    >>> real_vector("linear_l(2)", "input", [1, 2, 3], 2)
    Traceback (most recent call last):
    ...
    prelens.errors.ShapeError: linear_l(2): input: expected a vector of length 2, got f64[3]
    """
    length = "" if n is None else f"{n} "
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "iuf":
            raise E.lens_dtype_error(lens, what, f"a vector of {length}floats", E.describe(x))
        v = x.astype(np.float64, copy=False)
    elif isinstance(x, (list, tuple)) and all(is_real(e) for e in x):
        v = np.asarray(x, dtype=np.float64)
    else:
        raise E.must_be(lens, what, f"a vector of {length}floats (a 1-D array or a list)", E.describe_tree(x))
    if v.ndim != 1 or (n is not None and v.shape != (n,)):
        raise E.lens_shape_error(lens, what, "a vector" if n is None else f"a vector of length {n}", E.describe(v))
    return v
