"""Pooling and flattening as lenses: ``max_pool``, ``avg_pool`` (1-D or 2-D, channels last) and ``flatten``.

The pools share the convolutions' windows (:mod:`prelens.nn._conv`): their backward passes add one slice
per kernel offset into the (padded) input delta, with writes on numpy and with pads and adds elsewhere
(so they trace under ``jax.jit``).

>>> import numpy as np
>>> pool = max_pool(2)
>>> pool
max_pool(kernel=2)
>>> pool.fwd((), np.array([[[1.0], [3.0], [2.0], [0.0]]]))[1][..., 0]
array([[3., 2.]])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import device, namespace
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._conv import (
    LAYOUT,
    Geometry,
    Ints,
    Shaped,
    col2im,
    composed_constructor,
    geometry,
    geometry_patches,
    pad,
    stack_windows,
    windows_numpy,
)
from prelens.nn._fastcheck import dtype_token
from prelens.nn._rows import reshape
from prelens.nn._transformer_wiring import reparam

__all__ = ["avg_pool", "avg_pool_composed", "flatten", "max_pool", "max_pool_composed", "window_max", "window_mean"]

Array = Any


def _pool_geometry(fn: str, kernel: Any, stride: Any, padding: Any) -> Geometry:
    dims = 2 if isinstance(kernel, (tuple, list)) else 1
    geo = geometry(fn, dims, kernel, stride, padding, 1)
    if any(2 * p > k for p, k in zip(geo.padding, geo.kernel)):
        raise E.bad_argument(fn, "padding", padding, f"at most half the kernel {kernel!r} (as PyTorch)")
    return geo


def _expects(name: str, geo: Geometry) -> Expects:
    """A pool's patterns; its residue ends ``(x_shape, out, token)``: the delta is ``(N, *out, C)``, of the input's
    dtype (``token``'s), or None (the delta of data: a next layer built with ``input_delta=False``)."""

    def like(m: Any) -> tuple[Any, Ints]:
        x_shape, out, token = m[-3:]
        if len(x_shape) != geo.dims + 2 or tuple(out) != geo.out_sizes(name, Shaped(x_shape)):
            raise ValueError("a residue whose shapes disagree")  # reported as a residue this lens did not make
        return token, (x_shape[0], *out, x_shape[-1])

    return Expects(params=(), input=Arr(None, *LAYOUT[geo.dims], "C"), delta=Like(like, or_none=True))


@constructor
def max_pool(
    kernel: int | tuple[int, int], *, stride: int | tuple[int, int] | None = None, padding: int | tuple[int, int] = 0
) -> AnyLens:
    """Max pooling (PyTorch's ``MaxPool1d``/``MaxPool2d``, channels last): the largest value of each window.

    ``(N, L, C) -> (N, L_out, C)`` for an int ``kernel``, ``(N, H, W, C) -> (N, H_out, W_out, C)`` for a
    pair; ``stride=None`` is the kernel; ``padding`` (at most half the kernel) pads with ``-inf``. Residue:
    the offset of each window's maximum (the first on ties, as PyTorch), where the backward pass sends the
    delta. Parameter-free. Twin: :func:`prelens.nn.composed.max_pool`.

    >>> pool = max_pool((2, 2))
    >>> pool.fwd((), np.arange(16.0).reshape(1, 4, 4, 1))[1][0, :, :, 0]
    array([[ 5.,  7.],
           [13., 15.]])
    """
    geo = _pool_geometry("max_pool", kernel, stride, padding)
    name = f"max_pool({geo.describe(geo.kernel)})"
    kk = geo.size

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[Array, Ints, Ints, Array], Array]:
        out = geo.out_sizes(name, x)
        if type(x) is np.ndarray:  # every window, (N, *out, K, C), as a fresh array
            win = np.array(windows_numpy(pad(x, geo, -np.inf), geo, out, 1)).reshape(x.shape[0], *out, kk, x.shape[-1])
            idx = win.argmax(axis=-2)
            y = np.take_along_axis(win, idx[..., None, :], axis=-2)[..., 0, :]
            return (idx, tuple(x.shape), out, dtype_token(x)), y
        xp = namespace(x)
        win = stack_windows(pad(x, geo, -math.inf), geo, out)
        return (xp.argmax(win, axis=-2), tuple(x.shape), out, dtype_token(x)), xp.max(win, axis=-2)

    def bwd(res: tuple[Array, Ints, Ints, Array], dy: Array | None) -> tuple[tuple[()], Array | None]:
        idx, x_shape, out, _ = res
        if dy is None:  # the delta of data
            return (), None
        if type(dy) is np.ndarray:  # numpy's pieces have a groups axis
            return (), col2im(lambda i, o: np.where(idx == i, dy, 0.0)[..., None, :], geo, x_shape, out, dy)
        xp = namespace(dy)
        zero = xp.zeros_like(dy)
        return (), col2im(lambda i, o: xp.where(idx == i, dy, zero), geo, x_shape, out, dy)

    return PreLens(fwd, bwd, name, expects=_expects(name, geo))


@constructor
def avg_pool(
    kernel: int | tuple[int, int], *, stride: int | tuple[int, int] | None = None, padding: int | tuple[int, int] = 0
) -> AnyLens:
    """Average pooling (PyTorch's ``AvgPool1d``/``AvgPool2d``, channels last): the mean of each window.

    Shapes, ``stride`` and ``padding`` as :func:`max_pool`; the padding counts as zeros in the mean
    (PyTorch's ``count_include_pad=True``). The backward pass spreads each output delta evenly over its
    window. Parameter-free. Twin: :func:`prelens.nn.composed.avg_pool`.

    >>> avg_pool(2).fwd((), np.array([[[1.0], [3.0], [2.0], [0.0]]]))[1][..., 0]
    array([[2., 1.]])
    """
    geo = _pool_geometry("avg_pool", kernel, stride, padding)
    name = f"avg_pool({geo.describe(geo.kernel)})"
    kk = geo.size

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[Ints, Ints, Array], Array]:
        out = geo.out_sizes(name, x)
        if type(x) is np.ndarray:
            win = windows_numpy(pad(x, geo, 0.0), geo, out, 1)  # (N, *out, 1, *k, C)
            y = win.sum(axis=tuple(range(1 + geo.dims, 2 + 2 * geo.dims)))
            y /= kk
            return (tuple(x.shape), out, dtype_token(x)), y
        xp = namespace(x)
        win = stack_windows(pad(x, geo, 0.0), geo, out)
        return (tuple(x.shape), out, dtype_token(x)), xp.sum(win, axis=-2) / kk

    def bwd(res: tuple[Ints, Ints, Array], dy: Array | None) -> tuple[tuple[()], Array | None]:
        x_shape, out, _ = res
        if dy is None:  # the delta of data
            return (), None
        share = dy / kk
        if type(dy) is np.ndarray:  # numpy's pieces have a groups axis
            share = share[..., None, :]
        return (), col2im(lambda i, o: share, geo, x_shape, out, dy)

    return PreLens(fwd, bwd, name, expects=_expects(name, geo))


@constructor
def flatten() -> AnyLens:
    """``(N, d1, d2, ...) -> (N, d1·d2·...)``: PyTorch's ``nn.Flatten()`` (``start_dim=1``); parameter-free.

    Channels last, a flattened ``(N, L, C)`` orders its features (position, channel), PyTorch's
    ``(N, C, L)`` (channel, position): the weight of a linear layer after it is PyTorch's with its rows
    permuted.

    >>> flatten().fwd((), np.zeros((2, 5, 3)))[1].shape
    (2, 15)
    """

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[Ints, Array], Array]:
        shape = tuple(x.shape)  # not -1: an empty batch has no size to divide
        return (shape, dtype_token(x)), reshape(x, (shape[0], math.prod(shape[1:])))

    def bwd(m: tuple[Ints, Array], dy: Array | None) -> tuple[tuple[()], Array | None]:
        return (), None if dy is None else reshape(dy, m[0])  # None: the delta of data

    like = Like(lambda m: (m[1], (m[0][0], math.prod(m[0][1:]))), or_none=True)  # the input's dtype
    return PreLens(fwd, bwd, "flatten", expects=Expects(params=(), input=Arr(None, ..., None, None), delta=like))


# ------------------------------------------------------------------ the twins and their pieces


def window_max() -> AnyLens:
    """The maximum over axis ``-2``: ``(..., K, C) -> (..., C)``; residue the position of each maximum
    (the first on ties), through which the backward pass routes the delta (a one-hot product).
    Parameter-free; after :func:`patches`, the twin of :func:`~prelens.nn.max_pool`.

    >>> import numpy as np
    >>> from prelens.nn import composed
    >>> composed.window_max().fwd((), np.array([[1.0, 4.0], [3.0, 4.0]]))[1]
    array([3., 4.])
    """

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[Array, int], Array]:
        xp = namespace(x)
        return (xp.argmax(x, axis=-2), x.shape[-2]), xp.max(x, axis=-2)

    def bwd(res: tuple[Array, int], dy: Array) -> tuple[tuple[()], Array]:
        idx, k = res
        xp = namespace(dy)
        offsets = xp.reshape(xp.arange(k, dtype=idx.dtype, device=device(dy)), (k, 1))
        one_hot = xp.astype(idx[..., None, :] == offsets, dy.dtype)
        return (), one_hot * dy[..., None, :]

    like = Like(lambda m: (None, tuple(m[0].shape)))
    return PreLens(fwd, bwd, "window_max", expects=Expects(params=(), input=Arr(None, ..., None, None), delta=like))


def window_mean() -> AnyLens:
    """The mean over axis ``-2``: ``(..., K, C) -> (..., C)``; the backward pass spreads the delta
    evenly. Parameter-free; after :func:`patches`, the twin of :func:`~prelens.nn.avg_pool`.

    >>> import numpy as np
    >>> from prelens.nn import composed
    >>> composed.window_mean().fwd((), np.array([[1.0, 4.0], [3.0, 0.0]]))[1]
    array([2., 2.])
    """

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        return tuple(x.shape), namespace(x).mean(x, axis=-2)

    def bwd(shape: tuple[int, ...], dy: Array) -> tuple[tuple[()], Array]:
        xp = namespace(dy)
        return (), xp.broadcast_to(dy[..., None, :] / shape[-2], shape) * 1.0

    like = Like(lambda m: (None, (*m[:-2], m[-1])))  # (..., K, C) -> (..., C)
    return PreLens(fwd, bwd, "window_mean", expects=Expects(params=(), input=Arr(None, ..., None, None), delta=like))


def _pool_twin(fn: str, kernel: Any, stride: Any, padding: Any, reduce: AnyLens, value: float) -> AnyLens:
    geo = _pool_geometry(fn, kernel, stride, padding)
    name = f"{fn}_composed({geo.describe(geo.kernel)})"
    return reparam(
        geometry_patches(geo, value) >> reduce, name, p_to=lambda p: ((), ()), p_from=lambda dp: ()
    )  # parameter-free


def max_pool_composed(
    kernel: int | tuple[int, int], *, stride: int | tuple[int, int] | None = None, padding: int | tuple[int, int] = 0
) -> AnyLens:
    """:func:`~prelens.nn.max_pool` as the composition it is (``prelens.nn.composed.max_pool``):
    ``patches(..., pad_value=-inf) >> window_max()``.

    >>> from prelens.nn import composed
    >>> composed.max_pool(3, stride=2, padding=1)
    max_pool_composed(kernel=3, stride=2, padding=1)
    """
    return _pool_twin("max_pool", kernel, stride, padding, window_max(), -math.inf)


def avg_pool_composed(
    kernel: int | tuple[int, int], *, stride: int | tuple[int, int] | None = None, padding: int | tuple[int, int] = 0
) -> AnyLens:
    """:func:`~prelens.nn.avg_pool` as the composition it is (``prelens.nn.composed.avg_pool``):
    ``patches(..., pad_value=0) >> window_mean()``.

    >>> from prelens.nn import composed
    >>> composed.avg_pool((2, 2))
    avg_pool_composed(kernel=(2, 2))
    """
    return _pool_twin("avg_pool", kernel, stride, padding, window_mean(), 0.0)


max_pool_composed = composed_constructor(max_pool_composed, "max_pool")
avg_pool_composed = composed_constructor(avg_pool_composed, "avg_pool")
window_max = composed_constructor(window_max, "window_max")
window_mean = composed_constructor(window_mean, "window_mean")
