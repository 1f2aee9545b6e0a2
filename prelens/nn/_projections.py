"""The projections of the fast attention in one lens: ``x -> ((Q, K), V)``, heads on an axis.

:func:`~prelens.nn.multi_head_attention` starts with four stages::

    copy_l, copy_l @ id,                          # x -> ((x, x), x)
    (linear @ linear) @ linear,                   # ((x W_Q, x W_K), x W_V)
    (split_heads @ split_heads) @ split_heads     # each (..., h, T, d_k)

(``id @ copy_l, unassoc_l`` for cross-attention: ``(x, c) -> ((x, c), c)``, keys
and values from ``c``). :func:`projections` is that composite in one Python call
per pass, as :func:`~prelens.nn.feed_forward` is ``dense ≫ relu ≫ dense``: the
three weight matrices side by side make one product ``x [W_Q | W_K | W_V]``
forward and one ``dY [W_Q | W_K | W_V]ᵀ`` backward (where the composite sums the
three input deltas that ``copy_l`` fans in), ``Q``, ``K`` and ``V`` are views of
that product with the heads on an axis, and the residue keeps one copy of the
input and the side-by-side weights. Tests prove it equal to the composite.

On arrays of another library the same products run through the array API
standard (``concat``, ``reshape``, ``permute_dims``): no views written into,
the three deltas joined with ``concat`` instead.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, namespace
from prelens.core._check import ANY, Arr, Expects
from prelens.core._lens import AnyLens, PreLens
from prelens.nn._dot_attention import swap_heads_axes
from prelens.nn._fastcheck import Array, is_float_array, residue_error, shape_str
from prelens.nn._linear import init_weight

__all__ = ["projections"]

#: The residue: the input rows ``(N, d)`` (and the context's rows for cross-attention, else
#: None), the weights side by side ``(d, 3d)``, and the input's (and context's) shape.
ProjectionResidue = tuple[Array, Array | None, Array, tuple[int, ...], tuple[int, ...]]


class QKV(NamedTuple):
    """The pattern of the parameters (a plain tuple fits it): its fields name a misfit weight."""

    W_Q: Any
    W_K: Any
    W_V: Any


def _heads(y: Array, lead: tuple[int, ...], t: int, parts: int, h: int, dk: int) -> list[Array]:
    """The ``parts`` column blocks of ``y (N, parts·h·d_k)`` as views ``(*lead, h, t, d_k)``."""
    if not isinstance(y, np.ndarray):
        xp = namespace(y)
        y5 = xp.reshape(y, (*lead, t, parts, h, dk))
        order = swap_heads_axes(len(lead))  # (*lead, t, h, d_k) -> (*lead, h, t, d_k)
        return [xp.permute_dims(y5[..., i, :, :], order) for i in range(parts)]
    y5 = y.reshape(*lead, t, parts, h, dk)
    return [y5[..., i, :, :].swapaxes(-2, -3) for i in range(parts)]


def _rows(delta: Array, rows: int) -> Array:
    """A delta ``(*lead, h, t, d_k)`` (another library's) as rows ``(N, h·d_k)``, heads merged."""
    xp = namespace(delta)
    merged = xp.permute_dims(delta, swap_heads_axes(delta.ndim - 3))
    out: Array = xp.reshape(merged, (rows, delta.shape[-3] * delta.shape[-1]))
    return out


def _is_shape(shape: Any, d: int) -> bool:
    """A shape ``(..., T, d)`` as the forward pass records it: a tuple of at least two ints >= 0."""
    return type(shape) is tuple and len(shape) >= 2 and all(type(n) is int and n >= 0 for n in shape) and shape[-1] == d


def projections(d: int, h: int, dt: np.dtype[Any], *, cross: bool = False) -> AnyLens:
    """``x -> ((Q, K), V)`` (or ``(x, c) -> ((Q, K), V)`` with keys and values from ``c``), heads on an axis.

    Parameters ``(W_Q, W_K, W_V)``, each ``(d, d)``; input ``x (..., T, d)``
    (cross: ``(x (..., T, d), c (..., S, d))`` with the same leading axes);
    output ``Q (..., h, T, d/h)``, ``K`` and ``V (..., h, S, d/h)``, views of the
    product (outputs may alias what the lens made). Private to the fast attention
    lenses; tested equal to the composite it fuses.

    >>> lens = projections(4, 2, np.dtype(np.float64))
    >>> w = np.eye(4)
    >>> m, ((q, k), v) = lens.fwd((w, w, w), np.arange(8.0).reshape(1, 2, 4))
    >>> q.shape, q[0, 1].tolist()
    ((1, 2, 2, 2), [[2.0, 3.0], [6.0, 7.0]])
    """
    dk = d // h
    name = f"projections({d}, heads={h}{', cross' if cross else ''})"
    w, x_rows = Arr(dt, d, d), Arr(dt, ..., None, d)
    expects = Expects(
        params=QKV(w, w, w),
        input=(x_rows, x_rows) if cross else x_rows,
        residue=(Arr(dt, None, d), ANY, Arr(dt, d, 3 * d), ANY, ANY),  # (x rows, context rows, W, shapes)
    )

    def fwd(p: tuple[Array, Array, Array], s: Any) -> tuple[ProjectionResidue, tuple[tuple[Array, Array], Array]]:
        w_q, w_k, w_v = p
        if cross:
            x, c = s
            if x.shape[:-2] != c.shape[:-2]:
                raise E.lens_shape_error(name, "context", f"the leading axes of x {x.shape[:-2]}", E.describe(c))
            if not isinstance(x, np.ndarray):
                return _generic_fwd((w_q, w_k, w_v), x, c)
            w = np.concatenate((w_q, w_k, w_v), axis=1)  # the lens's own: the residue needs no other copy
            x2, c2 = x.reshape(-1, d).copy(), c.reshape(-1, d).copy()
            (q,) = _heads(x2 @ w[:, :d], x.shape[:-2], x.shape[-2], 1, h, dk)
            k, v = _heads(c2 @ w[:, d:], c.shape[:-2], c.shape[-2], 2, h, dk)
            return (x2, c2, w, x.shape, c.shape), ((q, k), v)
        x = s
        if not isinstance(x, np.ndarray):
            return _generic_fwd((w_q, w_k, w_v), x, None)
        w = np.concatenate((w_q, w_k, w_v), axis=1)
        x2 = x.reshape(-1, d).copy()  # the caller's x: the residue keeps a copy
        q, k, v = _heads(x2 @ w, x.shape[:-2], x.shape[-2], 3, h, dk)
        return (x2, None, w, x.shape, x.shape), ((q, k), v)

    def _generic_fwd(
        ws: tuple[Array, Array, Array], x: Array, c: Array | None
    ) -> tuple[ProjectionResidue, tuple[tuple[Array, Array], Array]]:
        """The forward pass on another library's arrays (``c`` None: self-attention)."""
        xp = namespace(x)
        w = xp.concat(ws, axis=1)
        x2 = copy(xp.reshape(x, (-1, d)))  # the caller's x (and c): the residue keeps copies
        lead, t = tuple(x.shape[:-2]), x.shape[-2]
        if c is None:
            q, k, v = _heads(x2 @ w, lead, t, 3, h, dk)
            return (x2, None, w, tuple(x.shape), tuple(x.shape)), ((q, k), v)
        c2 = copy(xp.reshape(c, (-1, d)))
        (q,) = _heads(x2 @ w[:, :d], lead, t, 1, h, dk)
        k, v = _heads(c2 @ w[:, d:], lead, c.shape[-2], 2, h, dk)
        return (x2, c2, w, tuple(x.shape), tuple(c.shape)), ((q, k), v)

    def _generic_bwd(m: ProjectionResidue, dq: Array, dk_: Array, dv: Array) -> tuple[tuple[Array, Array, Array], Any]:
        """The backward pass on another library's arrays: the deltas joined with ``concat``."""
        x2, c2, w, x_shape, c_shape = m
        xp = namespace(w)
        if c2 is None:
            dy = xp.concat([_rows(delta, x2.shape[0]) for delta in (dq, dk_, dv)], axis=1)
            dw = x2.T @ dy
            dx = dy @ w.T  # the three input deltas summed by the product itself
            return (dw[:, :d], dw[:, d : 2 * d], dw[:, 2 * d :]), xp.reshape(dx, x_shape)
        dqy = _rows(dq, x2.shape[0])
        dkv = xp.concat([_rows(delta, c2.shape[0]) for delta in (dk_, dv)], axis=1)
        dw_kv = c2.T @ dkv
        dx = xp.reshape(dqy @ w[:, :d].T, x_shape)
        dc = xp.reshape(dkv @ w[:, d:].T, c_shape)
        return (x2.T @ dqy, dw_kv[:, :d], dw_kv[:, d:]), (dx, dc)

    def bwd(m: ProjectionResidue, da: Any) -> tuple[tuple[Array, Array, Array], Any]:
        x2, c2, w, x_shape, c_shape = m
        ok = _is_shape(x_shape, d) and _is_shape(c_shape, d) and x_shape[:-2] == c_shape[:-2]
        ok = ok and x2.shape[0] == math.prod(x_shape[:-1]) and (c2 is None) != cross
        if not (ok and (c2 is None or (is_float_array(c2, dt) and c2.shape == (math.prod(c_shape[:-1]), d)))):
            raise residue_error(name, m)
        want_q = (*x_shape[:-2], h, x_shape[-2], dk)
        want_kv = (*c_shape[:-2], h, c_shape[-2], dk)
        try:
            (dq, dk_), dv = da
            numpy = isinstance(w, np.ndarray)
            ok = all(
                is_float_array(a, dt) and isinstance(a, np.ndarray) == numpy and a.shape == want
                for a, want in ((dq, want_q), (dk_, want_kv), (dv, want_kv))
            )
        except (TypeError, ValueError):
            ok = False
        if not ok:
            expected = f"((dQ {shape_str(dt, want_q)}, dK {shape_str(dt, want_kv)}), dV {shape_str(dt, want_kv)})"
            raise E.must_be(name, "output delta", expected, E.describe_tree(da))
        if not numpy:
            return _generic_bwd(m, dq, dk_, dv)
        if not cross:
            dy = np.empty((x2.shape[0], 3 * d), dt)  # the three deltas side by side, heads merged
            for view, delta in zip(_heads(dy, x_shape[:-2], x_shape[-2], 3, h, dk), (dq, dk_, dv)):
                view[...] = delta
            dw = x2.T @ dy
            dx = dy @ w.T  # the three input deltas summed by the product itself
            return (dw[:, :d], dw[:, d : 2 * d], dw[:, 2 * d :]), dx.reshape(x_shape)
        assert c2 is not None
        dqy = np.empty((x2.shape[0], d), dt)
        dkv = np.empty((c2.shape[0], 2 * d), dt)
        (view,) = _heads(dqy, x_shape[:-2], x_shape[-2], 1, h, dk)
        view[...] = dq
        for view, delta in zip(_heads(dkv, c_shape[:-2], c_shape[-2], 2, h, dk), (dk_, dv)):
            view[...] = delta
        dw_kv = c2.T @ dkv
        dx = (dqy @ w[:, :d].T).reshape(x_shape)
        dc = (dkv @ w[:, d:].T).reshape(c_shape)
        return (x2.T @ dqy, dw_kv[:, :d], dw_kv[:, d:]), (dx, dc)

    def init(rng: np.random.Generator) -> tuple[Array, Array, Array]:
        # the three linears' draws, in their order: the same parameters from the same seed
        w_q = init_weight("glorot", d, d, dt, rng)
        w_k = init_weight("glorot", d, d, dt, rng)
        return w_q, w_k, init_weight("glorot", d, d, dt, rng)

    return PreLens(fwd, bwd, name, init, expects=expects)
