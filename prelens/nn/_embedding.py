"""Embeddings: token ids to vectors, and the position of each token added in.

* :func:`token_embedding` — a trainable table ``E`` of shape ``(vocab, d_model)``;
  integer ids ``(..., T)`` in, rows ``E[ids]`` of shape ``(..., T, d_model)`` out.
  The backward pass scatter-adds the output delta into the rows that were read
  (repeated ids accumulate).
* :func:`positional_embedding` — a trainable table ``P`` of shape
  ``(max_len, d_model)``; ``x -> x + P[:T]`` on ``(..., T, d_model)``.
* :func:`sinusoidal_encoding` — the same with the fixed table of "Attention Is
  All You Need": ``PE[t, 2i] = sin(t / 10000^(2i/d))``, ``PE[t, 2i+1] = cos(...)``;
  parameter-free.

>>> import numpy as np
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

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _args as A
from .. import _errors as E
from .._construction import constructor
from .._lens import AnyLens, PreLens
from ._fastcheck import (
    Array,
    check_float_delta,
    check_size,
    dtype_suffix,
    float_dtype,
    input_error,
    param_error,
    residue_error,
    shape_residue,
    shape_str,
)

__all__ = ["positional_embedding", "sinusoidal_encoding", "sinusoidal_table", "token_embedding"]


@constructor
def token_embedding(vocab_size: int, d_model: int, *, dtype: npt.DTypeLike = np.float64, std: float = 1.0) -> AnyLens:
    """The lookup table ``E``: integer ids ``(..., T)`` -> vectors ``(..., T, d_model)``.

    Haskell (``Ids`` an integer array)::

        token_embedding :: Int -> Int -> PreLens A A Ids Ids A A Ids Ids

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
    prelens._errors.StructureError: token_embedding(4, 2): token ids must lie in [0, 4), got 7 at index (0, 1)
    """
    v = check_size("token_embedding", "vocab_size", vocab_size)
    d = check_size("token_embedding", "d_model", d_model)
    dt = float_dtype("token_embedding", dtype)
    name = f"token_embedding({v}, {d}{dtype_suffix(dt)})"
    table_desc = f"{E.dtype_name(dt)}[{v},{d}]"
    cols = np.arange(d)
    std_ = A.real("token_embedding", "std", std, low=0.0)

    def fwd(table: Array, ids: Array) -> tuple[Array, Array]:
        if not isinstance(table, np.ndarray) or table.shape != (v, d) or table.dtype != dt:
            raise param_error(name, "table", table, table_desc, dt)
        _check_ids(name, ids, v)
        return ids.copy(), table[ids]  # a residue never aliases the caller's arrays

    def bwd(ids: Array, da: Array) -> tuple[Array, Array]:
        if (
            not isinstance(ids, np.ndarray)
            or ids.dtype.kind not in "iu"
            or (ids.size and (ids.min() < 0 or ids.max() >= v))
        ):
            raise residue_error(name, ids)
        if not isinstance(da, np.ndarray) or da.dtype != dt or da.shape != (*ids.shape, d):
            raise input_error(name, "output delta", da, shape_str(dt, (*ids.shape, d)), dt)
        d_table = np.zeros((v, d), dtype=da.dtype)
        # A flat scatter-add: on (64 x 64) tables it is ~5x faster than np.add.at on rows
        # and, unlike a one-hot matmul, it does not grow with the vocabulary.
        flat = np.multiply(ids.reshape(-1, 1), d)
        np.add.at(d_table.reshape(-1), (flat + cols).reshape(-1), da.reshape(-1))
        return d_table, np.zeros(ids.shape, ids.dtype)

    def init(rng: np.random.Generator) -> Array:
        return (rng.standard_normal((v, d)) * std_).astype(dt)

    return PreLens(fwd, bwd, name, init)


def _check_ids(name: str, ids: Any, vocab: int) -> None:
    if not isinstance(ids, np.ndarray) or ids.dtype.kind not in "iu":
        if isinstance(ids, np.ndarray):
            raise E.lens_dtype_error(name, "token ids", "an integer array", E.describe(ids))
        raise E.must_be(name, "token ids", "an integer numpy array", E.describe(ids))
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        bad = np.flatnonzero((ids < 0) | (ids >= vocab))[0]
        where = np.unravel_index(bad, ids.shape)
        raise E.out_of_range(name, "token ids", f"[0, {vocab})", ids.flat[bad], str(tuple(int(i) for i in where)))


@constructor
def positional_embedding(max_len: int, d_model: int, *, dtype: npt.DTypeLike = np.float64, std: float = 0.1) -> AnyLens:
    """A learned position vector added to each token: ``(..., T, d) -> (..., T, d)``, ``x + P[:T]``.

    Haskell::

        positional_embedding :: Int -> Int -> PreLens A A Shape Shape A A A A

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
    prelens._errors.ShapeError: positional_embedding(4, 2): input: expected at most 4 positions ..., got f64[1,5,2]
    """
    n = check_size("positional_embedding", "max_len", max_len)
    d = check_size("positional_embedding", "d_model", d_model)
    dt = float_dtype("positional_embedding", dtype)
    name = f"positional_embedding({n}, {d}{dtype_suffix(dt)})"
    table_desc = f"{E.dtype_name(dt)}[{n},{d}]"
    std_ = A.real("positional_embedding", "std", std, low=0.0)

    def fwd(table: Array, x: Array) -> tuple[tuple[int, ...], Array]:
        if not isinstance(table, np.ndarray) or table.shape != (n, d) or table.dtype != dt:
            raise param_error(name, "table", table, table_desc, dt)
        _check_positions(name, x, n, d, dt)
        return x.shape, np.add(x, table[: x.shape[-2]])

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[Array, Array]:
        shape = shape_residue(name, shape, 2)
        if shape[-1] != d or not 0 <= shape[-2] <= n:
            raise residue_error(name, shape)
        t = shape[-2]
        if not isinstance(da, np.ndarray) or da.dtype != dt or da.shape != shape:
            raise input_error(name, "output delta", da, shape_str(dt, shape), dt)
        d_table = np.zeros((n, d), dtype=da.dtype)
        np.sum(da.reshape(-1, t, d), axis=0, out=d_table[:t])
        return d_table, da

    def init(rng: np.random.Generator) -> Array:
        return (rng.standard_normal((n, d)) * std_).astype(dt)

    return PreLens(fwd, bwd, name, init)


def _check_positions(name: str, x: Any, max_len: int, d: int, dt: np.dtype[Any]) -> None:
    if not isinstance(x, np.ndarray) or x.dtype != dt or x.ndim < 2 or x.shape[-1] != d or x.shape[-2] > max_len:
        expected = f"at most {max_len} positions ({E.dtype_name(dt)}[...,T,{d}] with T <= {max_len})"
        raise input_error(name, "input", x, expected, dt)


def sinusoidal_table(length: int, d_model: int, dtype: npt.DTypeLike = np.float64) -> Array:
    """The fixed positional table ``(length, d_model)`` of Vaswani et al. (2017).

    Haskell::

        sinusoidal_table :: Int -> Int -> DType -> A

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

    Haskell::

        sinusoidal_encoding :: Int -> Int -> PreLens A A Shape Shape () () A A

    Parameter-free; residue: the input's shape (to check the delta); backward ``dx = da``. The table (see
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
    tables: dict[np.dtype[Any], Array] = {}

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        dt = x.dtype if isinstance(x, np.ndarray) and x.dtype.kind == "f" else np.dtype(np.float64)
        _check_positions(name, x, n, d, dt)
        table = tables.get(dt)
        if table is None:
            table = tables[dt] = sinusoidal_table(n, d, dt)
            table.flags.writeable = False
        return x.shape, np.add(x, table[: x.shape[-2]])

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[tuple[()], Array]:
        check_float_delta(name, da, shape_residue(name, shape, 2))
        return (), da

    return PreLens(fwd, bwd, name)
