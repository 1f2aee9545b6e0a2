"""Convolutions as lenses: ``conv1d`` and ``conv2d`` (channels last), and ``patches``, the piece of their twins.

A convolution is im2col and one matrix product: the forward pass gathers every receptive field into
a row of a patch matrix ``P (N·L_out, k·c_in)`` (numpy: one strided view of the padded input, copied
once) and computes ``P W + b``; the backward pass computes ``dW = Pᵀ dY`` and ``dP = dY Wᵀ`` (two BLAS
products) and adds ``dP`` back into the padded input, one slice per kernel offset (col2im). Groups
split the channels: a batched product over ``(groups, ·, ·)``. Other array libraries run the same
formulas, col2im built without writes into arrays (zero-interleaving, padding, adds), so it traces
under ``jax.jit``.

>>> import numpy as np
>>> conv = conv1d(1, 4, 3, padding=1)
>>> conv
conv1d(1→4, kernel=3, padding=1)
>>> m, y = conv.fwd(conv.init(0), np.ones((2, 10, 1)))
>>> y.shape
(2, 10, 4)
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import copy, device, namespace
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like
from prelens.core._combinators import chain, vec_lens
from prelens.core._iso import iso_lens
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import dtype_suffix
from prelens.nn._linear import _check_scheme, bias, init_weight, linear
from prelens.nn._transformer_wiring import reparam
from prelens.show._summary import register_opening

__all__ = ["ConvParams", "conv1d", "conv1d_composed", "conv2d", "conv2d_composed", "patches"]

#: An array of any array-API library (numpy's on the fast path).
Array = Any
Ints = tuple[int, ...]


class ConvParams(NamedTuple):
    """The parameters of :func:`conv1d` and :func:`conv2d`: ``weight (*kernel, c_in // groups, c_out)``, ``bias``.

    A named tuple; its deltas have the same type. From PyTorch: ``ConvParams(w.permute(2, 1, 0), b)`` for
    ``Conv1d``, ``ConvParams(w.permute(2, 3, 1, 0), b)`` for ``Conv2d``.

    >>> ConvParams(np.zeros((3, 2, 4)), np.zeros(4)).weight.shape
    (3, 2, 4)
    """

    weight: Array
    bias: Array


# ------------------------------------------------------------------ arguments


def _ints(fn: str, what: str, value: Any, dims: int, least: int) -> Ints:
    """``value`` (an int, or for 2-D a pair of ints) as a tuple of ``dims`` ints ``>= least``."""
    if dims > 1 and isinstance(value, (tuple, list)) and len(value) == dims:
        return tuple(A.count(fn, f"{what}[{i}]", v, least) for i, v in enumerate(value))
    if dims > 1 and not isinstance(value, (int, np.integer)):
        raise E.bad_argument(fn, what, value, f"an int >= {least} or a pair of them")
    return (A.count(fn, what, value, least),) * dims


def _show(t: Ints) -> str:
    return str(t[0]) if len(t) == 1 else f"({', '.join(map(str, t))})"


#: The batch and spatial axes of an input of 1 or 2 spatial dimensions, as errors show them (channels last:
#: ``conv2d(1, 8, 3)`` expects ``f64[N,H,W,1]``, which a PyTorch user's ``(N, C, H, W)`` batch is told).
LAYOUT = {1: ("N", "L"), 2: ("N", "H", "W")}


class Geometry(NamedTuple):
    """Where the windows of a convolution or pooling lie: per spatial axis, kernel, stride, padding, dilation."""

    kernel: Ints
    stride: Ints
    padding: Ints
    dilation: Ints

    @property
    def dims(self) -> int:
        return len(self.kernel)

    @property
    def size(self) -> int:
        """The number of kernel offsets ``K = prod(kernel)``."""
        return math.prod(self.kernel)

    def padded(self, sizes: Sequence[int]) -> Ints:
        return tuple(m + 2 * p for m, p in zip(sizes, self.padding))

    def interior(self, sizes: Sequence[int]) -> tuple[Any, ...]:
        """Where an input ``(N, *sizes, C)`` lies in its padded copy."""
        return (slice(None), *(slice(p, p + m) for m, p in zip(sizes, self.padding)), ...)

    def describe(self, stride_default: Ints | None = None) -> str:
        """``kernel=3, stride=2``: the kernel, and the other arguments that differ from their defaults."""
        parts = [f"kernel={_show(self.kernel)}"]
        if self.stride != (stride_default or (1,) * self.dims):
            parts.append(f"stride={_show(self.stride)}")
        if any(self.padding):
            parts.append(f"padding={_show(self.padding)}")
        if any(d != 1 for d in self.dilation):
            parts.append(f"dilation={_show(self.dilation)}")
        return ", ".join(parts)

    def out_sizes(self, lens: str, x: Array) -> Ints:
        """The output's spatial sizes for an input ``x``; a :class:`ShapeError` when a window does not fit."""
        sizes = tuple(x.shape[1 : 1 + self.dims])
        out = tuple(
            (n + 2 * p - d * (k - 1) - 1) // s + 1
            for n, k, s, p, d in zip(sizes, self.kernel, self.stride, self.padding, self.dilation)
        )
        if any(o < 1 for o in out):
            span = tuple(d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilation))
            expected = (
                f"spatial sizes of at least {_show(span)} after padding {_show(self.padding)} "
                f"(kernel {_show(self.kernel)}, dilation {_show(self.dilation)})"
            )
            raise E.lens_shape_error(lens, "input", expected, E.describe(x))
        return out

    def offsets(self) -> list[Ints]:
        """Every kernel offset, row-major (the order of the ``K`` axis of the patches)."""
        return list(itertools.product(*(range(k) for k in self.kernel)))

    def window_slices(self, offset: Ints, out: Ints) -> tuple[slice, ...]:
        """The slices of the padded spatial axes that kernel offset ``offset`` reads for every output position."""
        return tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(offset, self.dilation, self.stride, out)
        )


def geometry(fn: str, dims: int, kernel: Any, stride: Any, padding: Any, dilation: Any) -> Geometry:
    """The checked :class:`Geometry` of a constructor's arguments (``stride=None``: the kernel)."""
    k = _ints(fn, "kernel", kernel, dims, 1)
    s = k if stride is None else _ints(fn, "stride", stride, dims, 1)
    return Geometry(k, s, _ints(fn, "padding", padding, dims, 0), _ints(fn, "dilation", dilation, dims, 1))


# ------------------------------------------------------------------ padding and windows


def _block(x: Array, axis: int, width: int, value: float) -> Array:
    """A constant block shaped as ``x`` but ``width`` long on ``axis``."""
    shape = (*x.shape[:axis], width, *x.shape[axis + 1 :])
    return namespace(x).full(shape, value, dtype=x.dtype, device=device(x))


def pad(x: Array, geo: Geometry, value: float) -> Array:
    """``x (N, *S, C)`` padded on its spatial axes with ``value`` (``x`` itself without padding); numpy
    writes into one new array, other libraries concatenate constant blocks (no writes)."""
    if not any(geo.padding):
        return x
    if type(x) is np.ndarray:
        n, *sizes, c = x.shape
        out = np.full((n, *geo.padded(sizes), c), value, x.dtype)
        out[geo.interior(sizes)] = x
        return out
    for axis, p in enumerate(geo.padding, start=1):
        if p:
            block = _block(x, axis, p, value)
            x = namespace(x).concat([block, x, block], axis=axis)
    return x


def windows_numpy(xpad: Array, geo: Geometry, out: Ints, groups: int) -> Array:
    """The strided view ``(N, *out, groups, *kernel, C // groups)`` of every window of ``xpad (N, *Sp, C)``."""
    n, c = xpad.shape[0], xpad.shape[-1]
    st = xpad.strides
    between = tuple(a * s for a, s in zip(st[1:-1], geo.stride))  # from one window to the next
    within = tuple(a * d for a, d in zip(st[1:-1], geo.dilation))  # from one kernel offset to the next
    shape = (n, *out, groups, *geo.kernel, c // groups)
    strides = (st[0], *between, st[-1] * (c // groups), *within, st[-1])
    return np.lib.stride_tricks.as_strided(xpad, shape, strides, writeable=False)


def stack_windows(xpad: Array, geo: Geometry, out: Ints) -> Array:
    """``(N, *out, K, C)``: the ``K`` kernel offsets' strided slices of ``xpad`` stacked (any array library)."""
    xp = namespace(xpad)
    pieces = [xpad[(slice(None), *geo.window_slices(o, out), slice(None))] for o in geo.offsets()]
    return xp.stack(pieces, axis=-2)


def col2im(
    piece: Callable[[int, Ints], Array], geo: Geometry, x_shape: Ints, out: Ints, like: Array, groups: int = 1
) -> Array:
    """The input delta: each kernel offset's delta ``piece(i, offset)`` added where that offset reads the padded
    input (numpy: pieces ``(N, *out, groups, C // groups)`` added in place; others: ``(N, *out, C)``, no writes)."""
    n, *sizes, c = x_shape
    padded = geo.padded(sizes)
    if type(like) is np.ndarray:
        total: Array = np.zeros((n, *padded, c), like.dtype)
        view = total.reshape(n, *padded, groups, c // groups)
        for i, o in enumerate(geo.offsets()):
            view[(slice(None), *geo.window_slices(o, out))] += piece(i, o)
    else:
        total = None
        for i, o in enumerate(geo.offsets()):
            spread = _spread(piece(i, o), geo, o, padded)
            total = spread if total is None else total + spread
    return total if not any(geo.padding) else total[geo.interior(sizes)]


def _spread(piece: Array, geo: Geometry, offset: Ints, padded: Ints) -> Array:
    """``piece (N, *out, C)`` placed where kernel offset ``offset`` reads it in the padded input, zeros
    elsewhere: zero-interleaved by the stride and padded, built without writes (traceable)."""
    xp = namespace(piece)
    for axis, (o, d, s, total) in enumerate(zip(offset, geo.dilation, geo.stride, padded), start=1):
        n = piece.shape[axis]
        if s > 1 and n > 1:
            interleaved = xp.stack([piece] + [xp.zeros_like(piece)] * (s - 1), axis=axis + 1)
            piece = xp.reshape(interleaved, (*piece.shape[:axis], n * s, *piece.shape[axis + 1 :]))
            piece = piece[(slice(None),) * axis + (slice(0, (n - 1) * s + 1), ...)]
        before, after = o * d, total - o * d - piece.shape[axis]
        parts = [_block(piece, axis, before, 0.0)] if before else []
        parts += [piece] + ([_block(piece, axis, after, 0.0)] if after else [])
        piece = xp.concat(parts, axis=axis)
    return piece


# ------------------------------------------------------------------ the convolution


def _conv(
    fn: str, dims: int, c_in: Any, c_out: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, groups: Any,
    dtype: npt.DTypeLike, init: Any, composed: bool = False,
) -> AnyLens:  # fmt: skip
    """The convolution ``fn``, or with ``composed`` its twin (built after the same checks)."""
    c_in, c_out = A.count(fn, "c_in", c_in), A.count(fn, "c_out", c_out)
    geo = geometry(fn, dims, kernel, stride, padding, dilation)
    g = A.count(fn, "groups", groups)
    if c_in % g or c_out % g:
        raise E.bad_argument(fn, "groups", g, f"a divisor of c_in={c_in} and of c_out={c_out}")
    dt = A.float_dtype(fn, "dtype", dtype)
    scheme = None if init is None else _check_scheme(fn, init)
    cg, og, kk = c_in // g, c_out // g, geo.size
    kc = kk * cg
    name = f"{fn}({c_in}→{c_out}, {geo.describe()}{f', groups={g}' if g > 1 else ''}{dtype_suffix(dt)})"
    w_shape = (*geo.kernel, cg, c_out)
    expects = Expects(
        params=ConvParams(Arr(dt, *w_shape), Arr(dt, c_out)),
        input=Arr(dt, *LAYOUT[dims], c_in),
        delta=Like(lambda m: (m[1], (m[2][0], *m[3], c_out))),  # (pm, wk, x_shape, out): wk has the dtype
    )

    def fwd(p: ConvParams, x: Array) -> tuple[tuple[Array, Array, Ints, Ints], Array]:
        w, b = p
        out = geo.out_sizes(name, x)
        n = x.shape[0]
        m = n * math.prod(out)
        if type(x) is np.ndarray:  # numpy: one strided view, one copy, one BLAS product
            win = windows_numpy(pad(x, geo, 0.0), geo, out, g)
            pm = np.array(win).reshape(m, g, kc)
            if g == 1:
                wk = w.reshape(kc, c_out).copy()
                y = np.dot(pm.reshape(m, kc), wk)
            else:
                wk = np.array(w.reshape(kk, cg, g, og).transpose(2, 0, 1, 3)).reshape(g, kc, og)  # our copy
                y = np.matmul(pm.transpose(1, 0, 2), wk).transpose(1, 0, 2).reshape(m, c_out)
            y += b
            return (pm, wk, tuple(x.shape), out), y.reshape(n, *out, c_out)
        xp = namespace(x)
        stacked = stack_windows(pad(x, geo, 0.0), geo, out)  # (N, *out, K, C)
        pm = xp.permute_dims(xp.reshape(stacked, (m, kk, g, cg)), (2, 0, 1, 3))
        pm = xp.reshape(pm, (g, m, kc))
        wk = xp.reshape(xp.permute_dims(xp.reshape(w, (kk, cg, g, og)), (2, 0, 1, 3)), (g, kc, og))
        wk = copy(wk)  # may be a view of the caller's weight (torch); JAX arrays are not copied
        y = xp.reshape(xp.permute_dims(xp.matmul(pm, wk), (1, 0, 2)), (m, c_out)) + b
        return (pm, wk, tuple(x.shape), out), xp.reshape(y, (n, *out, c_out))

    def bwd(res: tuple[Array, Array, Ints, Ints], dy: Array) -> tuple[ConvParams, Array]:
        pm, wk, x_shape, out = res
        n = x_shape[0]
        m = n * math.prod(out)
        if type(dy) is np.ndarray:
            dyf = dy.reshape(m, c_out)
            db = dyf.sum(axis=0)
            if g == 1:
                dw = np.dot(pm.reshape(m, kc).T, dyf).reshape(w_shape)
                dp = np.dot(dyf, wk.T)
            else:
                dyg = dyf.reshape(m, g, og).transpose(1, 0, 2)
                dw = np.matmul(pm.transpose(1, 2, 0), dyg).reshape(g, kk, cg, og).transpose(1, 2, 0, 3)
                dw = dw.reshape(w_shape)
                dp = np.matmul(dyg, wk.transpose(0, 2, 1)).transpose(1, 0, 2)
            dwin = dp.reshape(n, *out, g, *geo.kernel, cg)
            lead = (slice(None),) * (2 + dims)  # (N, *out, groups)
            return ConvParams(dw, db), col2im(lambda i, o: dwin[(*lead, *o)], geo, x_shape, out, dwin, g)
        xp = namespace(dy)
        dyf = xp.reshape(dy, (m, c_out))
        db = xp.sum(dyf, axis=0)
        dyg = xp.permute_dims(xp.reshape(dyf, (m, g, og)), (1, 0, 2))
        dw = xp.reshape(xp.matmul(xp.permute_dims(pm, (0, 2, 1)), dyg), (g, kk, cg, og))
        dw = xp.reshape(xp.permute_dims(dw, (1, 2, 0, 3)), w_shape)
        dp = xp.reshape(xp.matmul(dyg, xp.permute_dims(wk, (0, 2, 1))), (g, n, *out, kk, cg))
        dp = xp.reshape(xp.permute_dims(dp, (1, *range(2, 2 + dims), 2 + dims, 0, 3 + dims)), (n, *out, kk, c_in))
        return ConvParams(dw, db), col2im(lambda i, o: dp[..., i, :], geo, x_shape, out, dp)

    def init_params(rng: np.random.Generator) -> ConvParams:
        # PyTorch's default (init=None): weight and bias uniform on ±1/√fan_in, fan_in = K·c_in/groups;
        # else dense's scheme for the patch matrix's (fan_in, c_out) product, bias zero
        if scheme is None:
            bound = 1.0 / math.sqrt(kc)
            return ConvParams(*(rng.uniform(-bound, bound, s).astype(dt) for s in (w_shape, c_out)))
        return ConvParams(init_weight(scheme, kc, c_out, dt, rng).reshape(w_shape), np.zeros(c_out, dt))

    fast = PreLens(fwd, bwd, name, init_params, expects=expects)
    return _twin(fast, fn, geo, c_in, c_out, g, dt) if composed else fast


@constructor
def conv1d(
    c_in: int,
    c_out: int,
    kernel: int,
    *,
    stride: int = 1,
    padding: int = 0,
    dilation: int = 1,
    groups: int = 1,
    dtype: npt.DTypeLike = np.float64,
    init: str | None = None,
) -> AnyLens:
    """1-D convolution (PyTorch's ``Conv1d``, channels last): ``(N, L, c_in) -> (N, L_out, c_out)``.

    ``L_out = floor((L + 2·padding - dilation·(kernel - 1) - 1) / stride) + 1``; zero padding on both
    ends. Parameters :class:`ConvParams`: ``weight (kernel, c_in // groups, c_out)`` (PyTorch's
    ``w.permute(2, 1, 0)``), ``bias (c_out,)``. ``groups`` splits the channels into that many
    independent convolutions (it must divide ``c_in`` and ``c_out``). ``init=None`` draws as PyTorch
    does (uniform on ``±1/√(kernel·c_in/groups)``, bias too); ``"he"``, ``"glorot"``, ``"lecun"`` as
    :func:`dense` does (bias zero). Residue: the patch matrix and the weight rearranged. Twin:
    :func:`prelens.nn.composed.conv1d`.

    >>> conv = conv1d(25, 25, 3, stride=2, padding=1)
    >>> conv
    conv1d(25→25, kernel=3, stride=2, padding=1)
    >>> conv.fwd(conv.init(0), np.zeros((100, 19, 25)))[1].shape
    (100, 10, 25)
    """
    return _conv("conv1d", 1, c_in, c_out, kernel, stride, padding, dilation, groups, dtype, init)


@constructor
def conv2d(
    c_in: int,
    c_out: int,
    kernel: int | tuple[int, int],
    *,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    dtype: npt.DTypeLike = np.float64,
    init: str | None = None,
) -> AnyLens:
    """2-D convolution (PyTorch's ``Conv2d``, channels last): ``(N, H, W, c_in) -> (N, H_out, W_out, c_out)``.

    ``kernel``, ``stride``, ``padding`` and ``dilation`` are an int or a pair ``(along H, along W)``;
    output sizes as :func:`conv1d` on each axis. Parameters :class:`ConvParams`: ``weight (kh, kw,
    c_in // groups, c_out)`` (PyTorch's ``w.permute(2, 3, 1, 0)``), ``bias (c_out,)``. Twin:
    :func:`prelens.nn.composed.conv2d`.

    >>> conv = conv2d(3, 8, (3, 5), padding=(1, 2), groups=1)
    >>> conv
    conv2d(3→8, kernel=(3, 5), padding=(1, 2))
    >>> conv.fwd(conv.init(0), np.zeros((2, 7, 9, 3)))[1].shape
    (2, 7, 9, 8)
    """
    return _conv("conv2d", 2, c_in, c_out, kernel, stride, padding, dilation, groups, dtype, init)


# ------------------------------------------------------------------ the twins' pieces


def _gather_table(geo: Geometry, padded: Ints, out: Ints) -> npt.NDArray[np.int64]:
    """For each output position and kernel offset, the flat index of the padded input it reads: ``(prod(out)·K,)``."""
    grids = np.meshgrid(*(np.arange(n) for n in out), indexing="ij")
    cols = []
    for o in geo.offsets():
        pos = [g * s + oo * d for g, s, oo, d in zip(grids, geo.stride, o, geo.dilation)]
        cols.append(np.ravel_multi_index(tuple(pos), padded).ravel())
    return np.stack(cols, axis=-1).ravel().astype(np.int64)


def patches(
    kernel: int | tuple[int, int],
    *,
    stride: int | tuple[int, int] | None = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    pad_value: float = 0.0,
) -> AnyLens:
    """Every receptive field: ``(N, *S, C) -> (N, *S_out, K, C)``, ``K`` the kernel's size (im2col as a lens).

    ``kernel`` an int: 1-D windows over axis ``-2`` of ``(N, L, C)``; a pair: 2-D windows over axes
    ``(-3, -2)`` of ``(N, H, W, C)``. The input is padded with ``pad_value`` (``-inf`` for max pooling);
    ``stride=None`` means the kernel. A gather through an index table; the backward pass is its
    transpose (a one-hot matrix product, so overlapping windows add up). Parameter-free.

    >>> import numpy as np
    >>> from prelens.nn import composed
    >>> lens = composed.patches(2)
    >>> lens.fwd((), np.arange(4.0).reshape(1, 4, 1))[1][0, :, :, 0]
    array([[0., 1.],
           [1., 2.],
           [2., 3.]])
    """
    dims = 2 if isinstance(kernel, (tuple, list)) else 1
    geo = geometry("patches", dims, kernel, stride, padding, dilation)
    minus_inf = isinstance(pad_value, (float, np.floating)) and pad_value == -math.inf  # max pooling's padding
    value = -math.inf if minus_inf else A.real("patches", "pad_value", pad_value)
    shown = f", pad_value={value:g}" if value != 0.0 else ""
    name = f"patches({geo.describe()}{shown})"
    kk = geo.size

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[Array, Ints], Array]:
        xp = namespace(x)
        out = geo.out_sizes(name, x)
        n, *sizes, c = x.shape
        padded = geo.padded(sizes)
        flat = xp.reshape(pad(x, geo, value), (n, math.prod(padded), c))
        table = _gather_table(geo, padded, out)
        idx = table if type(x) is np.ndarray else xp.asarray(table, device=device(x))
        y = xp.take(flat, idx, axis=1)
        return (idx, tuple(x.shape)), xp.reshape(y, (n, *out, kk, c))

    def bwd(res: tuple[Array, Ints], dy: Array) -> tuple[tuple[()], Array]:
        idx, x_shape = res
        if len(x_shape) != dims + 2:  # an empty batch would reshape to any shape: say so, not guess
            raise E.StructureError(f"{name}: its residue holds no input shape of {dims + 2} axes: {x_shape!r}")
        xp = namespace(dy)
        n, *sizes, c = x_shape
        padded = geo.padded(sizes)
        rows = xp.arange(math.prod(padded), dtype=idx.dtype, device=device(dy))
        one_hot = xp.astype(rows[:, None] == idx[None, :], dy.dtype)  # (padded, J)
        dflat = xp.matmul(one_hot, xp.reshape(dy, (n, idx.shape[0], c)))
        dx = xp.reshape(dflat, (n, *padded, c))
        return (), (dx[geo.interior(sizes)] if any(geo.padding) else dx)

    def like(res: tuple[Array, Ints]) -> tuple[None, Ints]:  # (N, *out, K, C), any float dtype
        n, *_, c = res[1]
        return None, (n, *geo.out_sizes(name, Shaped(res[1])), kk, c)

    expects = Expects(params=(), input=Arr(None, *LAYOUT[dims], "C"), delta=Like(like))
    return PreLens(fwd, bwd, name, expects=expects)


def geometry_patches(geo: Geometry, pad_value: float = 0.0) -> AnyLens:
    """:func:`patches` over the windows of ``geo`` (a twin's first lens)."""
    args: list[Any] = [t[0] if geo.dims == 1 else t for t in geo]  # an int in 1-D, a pair in 2-D
    k, s, p, d = args
    return patches(k, stride=s, padding=p, dilation=d, pad_value=pad_value)


class Shaped(NamedTuple):
    """Stands for an array of ``shape`` where only its shape is read (:meth:`Geometry.out_sizes`)."""

    shape: Ints


def _twin(fast: AnyLens, fn: str, geo: Geometry, c_in: int, c_out: int, g: int, dt: np.dtype[Any]) -> AnyLens:
    """The convolution ``fast`` as the composition it is (its name, parameters and init)."""
    cg, og, kk = c_in // g, c_out // g, geo.size

    def split(pm: Array) -> list[Array]:  # (..., K, C) -> g arrays (..., K·cg)
        xp = namespace(pm)
        return [xp.reshape(pm[..., i * cg : (i + 1) * cg], (*pm.shape[:-2], kk * cg)) for i in range(g)]

    def unsplit(ds: list[Array]) -> Array:
        xp = namespace(ds[0])
        return xp.concat([xp.reshape(d, (*d.shape[:-1], kk, cg)) for d in ds], axis=-1)

    def join(ys: list[Array]) -> Array:
        return namespace(ys[0]).concat(list(ys), axis=-1)

    def unjoin(dy: Array) -> list[Array]:
        return [dy[..., i * og : (i + 1) * og] for i in range(g)]

    body = chain(
        geometry_patches(geo),
        iso_lens(f"split_groups({g})", split, unsplit),
        vec_lens(g, linear(kk * cg, og, dtype=dt)),
        iso_lens(f"join_groups({g})", join, unjoin),
        bias(c_out, dtype=dt),
    )  # fmt: skip

    def p_to(p: ConvParams) -> list[Any]:  # the groups' weights side by side, as the groups' outputs
        w, b = p
        return [(), (), unjoin(namespace(w).reshape(w, (kk * cg, c_out))), (), b]

    def p_from(dp: list[Any]) -> ConvParams:
        return ConvParams(namespace(dp[4]).reshape(join(dp[2]), (*geo.kernel, cg, c_out)), dp[4])

    twin = reparam(body, fast.name.replace(fn, f"{fn}_composed", 1), p_to=p_to, p_from=p_from)
    return register_opening(dataclasses.replace(twin, init_fn=fast.init_fn), p_to)  # the fast lens's init


def conv1d_composed(
    c_in: int,
    c_out: int,
    kernel: int,
    *,
    stride: int = 1,
    padding: int = 0,
    dilation: int = 1,
    groups: int = 1,
    dtype: npt.DTypeLike = np.float64,
    init: str | None = None,
) -> AnyLens:
    """:func:`~prelens.nn.conv1d` as the composition it is (``prelens.nn.composed.conv1d``).

    ``chain(patches, split_groups, vec_lens(groups, linear), join_groups, bias)``; parameters :class:`ConvParams`.

    >>> from prelens.nn import composed
    >>> composed.conv1d(4, 6, 3, groups=2)
    conv1d_composed(4→6, kernel=3, groups=2)
    """
    return _conv("conv1d", 1, c_in, c_out, kernel, stride, padding, dilation, groups, dtype, init, composed=True)


def conv2d_composed(
    c_in: int,
    c_out: int,
    kernel: int | tuple[int, int],
    *,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    dtype: npt.DTypeLike = np.float64,
    init: str | None = None,
) -> AnyLens:
    """:func:`~prelens.nn.conv2d` as the composition it is (``prelens.nn.composed.conv2d``): see
    :func:`conv1d_composed`.

    >>> from prelens.nn import composed
    >>> composed.conv2d(3, 4, 2)
    conv2d_composed(3→4, kernel=(2, 2))
    """
    return _conv("conv2d", 2, c_in, c_out, kernel, stride, padding, dilation, groups, dtype, init, composed=True)


def composed_constructor(fn: Any, public: str) -> Any:
    """Register ``fn`` under ``prelens.nn.composed.<public>`` (the name users import it by)."""
    fn.__module__, fn.__qualname__ = "prelens.nn.composed", public
    return constructor(fn)


conv1d_composed = composed_constructor(conv1d_composed, "conv1d")
conv2d_composed = composed_constructor(conv2d_composed, "conv2d")
patches = composed_constructor(patches, "patches")
