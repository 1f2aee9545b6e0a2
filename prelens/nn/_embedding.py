"""Embeddings: token ids to vectors (:func:`token_embedding`), and positions added in (learned:
:func:`positional_embedding`; fixed: :func:`sinusoidal_encoding`).

On the arrays of any array-API library: :func:`token_embedding` returns the table's (numpy ids move to
it), the positional encodings the input's. Ids out of range are refused wherever their values are known
(under ``jax.jit`` by the first call, outside the compiled program).

>>> emb = token_embedding(5, 3)
>>> table = np.arange(15.0).reshape(5, 3)
>>> m, x = emb.fwd(table, np.array([[4, 0, 4]]))
>>> x
array([[[12., 13., 14.],
        [ 0.,  1.,  2.],
        [12., 13., 14.]]])
>>> emb.bwd(m, np.ones((1, 3, 3)))[0]
array([[1., 1., 1.],
       [0., 0., 0.],
       [0., 0., 0.],
       [0., 0., 0.],
       [2., 2., 2.]])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import (
    constant_like,
    copy,
    device,
    dtype_kind,
    dtype_name,
    is_array,
    is_concrete,
    namespace,
    namespace_name,
    scatter_add_rows,
    take_rows,
)
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array, check_size, dtype_suffix, dtype_token, float_dtype, out_of_range
from prelens.nn._rows import reshape

__all__ = ["positional_embedding", "sinusoidal_encoding", "sinusoidal_table", "token_embedding"]


def _table(
    fn: str, rows: str, n_rows: Any, d_model: Any, dtype: Any, std: Any
) -> tuple[int, int, np.dtype[Any], str, Callable[[np.random.Generator], Array]]:
    """A table lens's checked sizes and dtype, its name, and its initializer (entries drawn ``N(0, std²)``)."""
    n, d = check_size(fn, rows, n_rows), check_size(fn, "d_model", d_model)
    dt = float_dtype(fn, dtype)
    std_ = A.real(fn, "std", std, low=0.0)

    def init(rng: np.random.Generator) -> Array:
        return (rng.standard_normal((n, d)) * std_).astype(dt)

    return n, d, dt, f"{fn}({n}, {d}{dtype_suffix(dt)})", init


@constructor
def token_embedding(vocab_size: int, d_model: int, *, dtype: npt.DTypeLike = np.float64, std: float = 1.0) -> AnyLens:
    """The lookup table ``E``: integer ids ``(..., T)`` -> vectors ``(..., T, d_model)``.

    Parameters: ``E`` of shape ``(vocab_size, d_model)``, drawn ``N(0, std²)``.
    Residue: the ids. Backward: ``dE[v] = Σ_{positions with id v} da[position]``
    (a scatter-add: repeated ids accumulate); the delta of the integer ids is
    an array of integer zeros of their shape (ids are data, not variables).
    Ids must be integers in ``[0, vocab_size)``: float ids are a
    :class:`~prelens.DTypeError`, ids out of range a
    :class:`~prelens.StructureError` naming the lens.

    >>> emb = token_embedding(4, 2)
    >>> emb, emb.init(0).shape
    (token_embedding(4, 2), (4, 2))
    >>> emb.fwd(emb.init(0), np.array([[1, 7]]))
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: token_embedding(4, 2): token ids must lie in [0, 4), got 7 at index (0, 1)
    """
    v, d, dt, name, init = _table("token_embedding", "vocab_size", vocab_size, d_model, dtype, std)
    # the ids are checked in the passes: their values must lie in [0, vocab_size)
    expects = Expects(params=Arr(dt, v, d), delta=Like(lambda ids: (dt, (*ids.shape, d))))

    def fwd(table: Array, ids: Array) -> tuple[Array, Array]:
        given, ids = ids, _token_ids(name, ids, v, table)  # numpy ids are moved to the table's library
        rows = take_rows(table, reshape(ids, (-1,)))
        return (copy(ids) if ids is given else ids), reshape(rows, (*ids.shape, d))

    def bwd(ids: Array, da: Array) -> tuple[Array, Array]:
        if not is_array(ids) or dtype_kind(ids.dtype) not in "iu" or _any_out_of_range(ids, v):
            raise E.bad_residue(name, ids)
        return scatter_add_rows(v, reshape(ids, (-1,)), reshape(da, (-1, d))), namespace(ids).zeros_like(ids)

    return PreLens(fwd, bwd, name, init, expects=expects)


def _any_out_of_range(ids: Any, vocab: int) -> bool:
    """True when a concrete integer array of any library holds an id outside ``[0, vocab)`` (traced: not known)."""
    if not is_concrete(ids) or math.prod(ids.shape) == 0:
        return False
    return bool(namespace(ids).any((ids < 0) | (ids >= vocab)))


def _token_ids(name: str, ids: Any, vocab: int, table: Any) -> Any:
    """The ids, checked: integers in ``[0, vocab)`` of the table's library (numpy ids are moved to it)."""
    if not is_array(ids):
        raise E.must_be(name, "token ids", "an integer numpy array", E.describe(ids))
    if dtype_kind(ids.dtype) not in "iu":
        raise E.lens_dtype_error(name, "token ids", "an integer array", E.describe(ids))
    if not isinstance(ids, np.ndarray) and namespace(ids) is not namespace(table):
        want = f"an integer array of the table's library ({namespace_name(namespace(table))})"
        raise E.must_be(name, "token ids", want, E.describe(ids))
    if _any_out_of_range(ids, vocab):  # names the first bad id
        raise out_of_range(name, "token ids", ids, vocab, f"[0, {vocab})")
    return constant_like(ids, table)


@constructor
def positional_embedding(max_len: int, d_model: int, *, dtype: npt.DTypeLike = np.float64, std: float = 0.1) -> AnyLens:
    """A learned position vector added to each token: ``(..., T, d) -> (..., T, d)``, ``x + P[:T]``.

    Parameters: ``P`` of shape ``(max_len, d_model)``, drawn ``N(0, std²)``.
    Residue: the input's shape ``(..., T, d_model)``. Backward: ``dP[:T] = da`` summed over the leading axes,
    ``dP[T:] = 0``; ``dx = da``. A sequence longer than ``max_len`` is a
    :class:`~prelens.ShapeError` naming the lens.

    >>> pos = positional_embedding(4, 2)
    >>> m, y = pos.fwd(np.ones((4, 2)), np.zeros((1, 3, 2)))
    >>> y.shape, pos.bwd(m, np.ones((1, 3, 2)))[0][:, 0]
    ((1, 3, 2), array([1., 1., 1., 0.]))
    >>> pos.fwd(np.ones((4, 2)), np.zeros((1, 5, 2)))
    Traceback (most recent call last):
    ...
    prelens.errors.ShapeError: positional_embedding(4, 2): input: expected at most 4 positions ..., got f64[1,5,2]
    """
    n, d, dt, name, init = _table("positional_embedding", "max_len", max_len, d_model, dtype, std)
    # the residue is the input's shape (..., T, d); the input's T <= max_len is checked in fwd
    expects = Expects(params=Arr(dt, n, d), input=Arr(dt, ..., None, d), delta=Like(lambda shape: (dt, shape)))

    def fwd(table: Array, x: Array) -> tuple[tuple[int, ...], Array]:
        _check_positions(name, x, n, d, dt)
        return tuple(x.shape), x + table[: x.shape[-2], :]

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[Array, Array]:
        xp, t = namespace(da), shape[-2]  # the rows past T get zeros
        used = xp.sum(reshape(da, (math.prod(shape[:-2]), t, d)), axis=0)  # not -1: T may be 0
        return xp.concat((used, xp.zeros((n - t, d), dtype=da.dtype, device=device(da))), axis=0), da

    return PreLens(fwd, bwd, name, init, expects=expects)


def _check_positions(name: str, x: Any, max_len: int, d: int, dt: np.dtype[Any]) -> None:
    """At most ``max_len`` positions (the rest of the input's pattern is declared and checked before)."""
    if x.shape[-2] > max_len:
        expected = f"at most {max_len} positions ({E.dtype_name(dt)}[...,T,{d}] with T <= {max_len})"
        raise E.lens_shape_error(name, "input", expected, E.describe(x))


def sinusoidal_table(length: int, d_model: int, dtype: npt.DTypeLike = np.float64) -> Array:
    """The fixed positional table ``(length, d_model)`` of Vaswani et al. (2017).

    ``PE[t, 2i] = sin(t ω_i)`` and ``PE[t, 2i+1] = cos(t ω_i)`` with
    ``ω_i = 10000^(−2i/d_model)``; computed in float64, then cast.

    >>> sinusoidal_table(3, 4).round(4)
    array([[ 0.    ,  1.    ,  0.    ,  1.    ],
           [ 0.8415,  0.5403,  0.01  ,  1.    ],
           [ 0.9093, -0.4161,  0.02  ,  0.9998]])
    """
    length = check_size("sinusoidal_table", "length", length)
    d_model = check_size("sinusoidal_table", "d_model", d_model)
    dtype = float_dtype("sinusoidal_table", dtype)
    pos = np.arange(length, dtype=np.float64)[:, None]
    omega = np.exp(-math.log(10000.0) * np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    table = np.empty((length, d_model), dtype=np.float64)
    table[:, 0::2] = np.sin(pos * omega)
    table[:, 1::2] = np.cos(pos * omega[: d_model // 2])
    return table.astype(dtype)


@constructor
def sinusoidal_encoding(d_model: int, max_len: int = 4096) -> AnyLens:
    """The fixed sinusoidal positions added in: ``(..., T, d) -> (..., T, d)``, ``x + PE[:T]``.

    Parameter-free; residue: the input's shape and dtype (to check the delta); backward ``dx = da`` (``None``, the
    delta of data, passes through). The table (see
    :func:`sinusoidal_table`) is built once per dtype for ``max_len``
    positions; longer sequences are a :class:`~prelens.ShapeError`. Keeps the
    input's float dtype.

    >>> enc = sinusoidal_encoding(4)
    >>> enc, enc.fwd((), np.zeros((1, 2, 4)))[1].round(3)
    (sinusoidal_encoding(4), array([[[0.   , 1.   , 0.   , 1.   ],
            [0.841, 0.54 , 0.01 , 1.   ]]]))
    """
    d = check_size("sinusoidal_encoding", "d_model", d_model)
    n = check_size("sinusoidal_encoding", "max_len", max_len)
    name = f"sinusoidal_encoding({d})"

    @functools.cache
    def table_of(dt: np.dtype[Any]) -> Array:
        table = sinusoidal_table(n, d, dt)
        table.flags.writeable = False  # one table for every call
        return table

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[tuple[int, ...], Array], Array]:
        """``x + PE[:T]``: numpy's table, its first ``T`` rows moved to ``x``'s library and device."""
        try:
            dt = np.dtype(dtype_name(x.dtype))
        except TypeError:  # a float numpy does not know (bfloat16): named by its own library
            raise E.lens_dtype_error(name, "input", "float32 or float64", E.describe(x)) from None
        _check_positions(name, x, n, d, dt)
        return (tuple(x.shape), dtype_token(x)), x + constant_like(table_of(dt)[: x.shape[-2]], x)

    def bwd(m: tuple[tuple[int, ...], Array], da: Array | None) -> tuple[tuple[()], Array | None]:
        return (), da

    # the residue is the input's shape and dtype: the delta is an array of that shape and dtype (or None)
    expects = Expects(input=Arr(None, ..., None, d), delta=Like(lambda m: (m[1], m[0]), or_none=True))
    return PreLens(fwd, bwd, name, expects=expects)
