"""Reductions over the last axis, row by row, done the fast way numpy allows (any library's arrays too).

The fast lenses reduce short rows over and over (softmax over 32 keys, layer
norm over 64 features, cross-entropy over 64 classes). numpy's ``max`` and
``sum`` along a short contiguous last axis run a slow loop per row; here:

* :func:`row_sum` is a matrix-vector product with a vector of ones (BLAS):
  3-6x faster than ``x.sum(axis=-1)`` on ``(2048, 32)``; :func:`column_sum`
  (a bias's gradient) is the same on the other side, 3x faster than ``x.sum(axis=0)``;
* :func:`row_max` finds each row's position with ``argmax`` (vectorised) and
  gathers it: 2-4x faster than ``x.max(axis=-1)``, with the same result (a NaN
  in a row is its maximum, as for ``max``).

>>> import numpy as np
>>> x = np.array([[1.0, 5.0, 2.0], [-1.0, -3.0, -2.0]])
>>> row_max(x), row_sum(x)
(array([ 5., -1.]), array([ 8., -6.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens.backend._arrays import namespace
from prelens.nn._fastcheck import Array

__all__ = ["column_sum", "matmul", "ones", "reshape", "row_max", "row_sum"]

_ONES: dict[tuple[int, np.dtype[Any]], Array] = {}


def ones(n: int, dtype: np.dtype[Any]) -> Array:
    """A read-only vector of ``n`` ones of ``dtype`` (made once, then shared).

    >>> ones(3, np.dtype(np.float32))
    array([1., 1., 1.], dtype=float32)
    """
    key = (n, dtype)
    v = _ONES.get(key)
    if v is None:
        v = np.ones(n, dtype)
        v.flags.writeable = False
        if len(_ONES) < 256:  # a few shapes in any program: keep them; never grow without bound
            _ONES[key] = v
    return v


def row_sum(x: Array) -> Array:
    """``x.sum(axis=-1)`` of a float array, as one BLAS matrix-vector product (numpy).

    >>> row_sum(np.ones((2, 3, 4), np.float32)).shape
    (2, 3)
    """
    if type(x) is not np.ndarray:
        return namespace(x).sum(x, axis=-1)  # type: ignore[no-any-return]
    return np.matmul(x, ones(x.shape[-1], x.dtype))  # type: ignore[no-any-return]


def row_max(x: Array) -> Array:
    """``x.max(axis=-1)`` of a float array with a non-empty last axis (NaN in a row: NaN).

    >>> row_max(np.array([[0.0, np.nan, 1.0]]))
    array([nan])
    """
    if type(x) is not np.ndarray:
        return namespace(x).max(x, axis=-1)  # type: ignore[no-any-return]
    n = x.shape[-1]
    at = x.argmax(axis=-1)
    if x.flags.c_contiguous:
        flat = at.ravel()
        flat += np.arange(0, flat.size * n, n, dtype=flat.dtype)
        return np.take(x, flat).reshape(at.shape)  # type: ignore[no-any-return]
    return np.take_along_axis(x, at[..., None], axis=-1)[..., 0]


def column_sum(x: Array) -> Array:
    """``x.sum(axis=0)`` of a 2-D float array, as one BLAS vector-matrix product.

    >>> column_sum(np.arange(6.0).reshape(3, 2))
    array([6., 9.])
    """
    if type(x) is not np.ndarray:
        return namespace(x).sum(x, axis=0)  # type: ignore[no-any-return]
    return np.dot(ones(x.shape[0], x.dtype), x)  # type: ignore[no-any-return]


def reshape(x: Array, shape: tuple[int, ...]) -> Array:
    """``x`` in another shape, for an array of any library (numpy: the method, without a call more).

    >>> reshape(np.arange(6), (2, 3)).shape
    (2, 3)
    """
    if type(x) is np.ndarray:
        return x.reshape(shape)
    return namespace(x).reshape(x, shape)  # type: ignore[no-any-return]


def matmul(a: Array, b: Array) -> Array:
    """``a @ b`` for arrays of any library; numpy's ``dot`` on 1-D and 2-D ones (less call overhead).

    >>> matmul(np.ones((2, 3)), np.ones((3, 4))).shape
    (2, 4)
    """
    if type(a) is np.ndarray and a.ndim <= 2:
        return np.dot(a, b)  # type: ignore[no-any-return]
    return a @ b
