"""Attention, every step a lens: projections, scores, mask, softmax, weighted sum, heads.

One head, as the seeds describe it, is a pipeline of small lenses on ``x (B, T, d_model)``::

    x ─copy─> (x, x, x) ─W_Q ⊗ W_K ⊗ W_V─> (Q, K, V)
      ─scores ⊗ id─> (Q Kᵀ/√d_k, V) ─mask ⊗ id─> ─softmax ⊗ id─> (A, V) ─weighted_sum─> A V

(``⊗`` is ``@``). Two layouts of multi-head attention, tested equal, mapped by :func:`stack_heads` and
:func:`unstack_heads`: the faithful one (:func:`multi_head_attention_faithful`: ``branch`` to ``h`` heads,
:func:`concat_heads`, ``W_O``), and the fast one (:func:`multi_head_attention`, :func:`cross_attention`: the
pipeline once on wide projections, the heads on an array axis). The forward passes test only what a
declared pattern cannot say (two arrays of one dtype and leading axes, a width divisible by the heads).

>>> mha = multi_head_attention(8, 2, causal=True)
>>> mha
multi_head_attention(8, heads=2, causal)
>>> m, y = mha.fwd(mha.init(0), np.ones((3, 5, 8)))
>>> y.shape
(3, 5, 8)
"""

from __future__ import annotations

import math
from itertools import accumulate, pairwise
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import copy, dtype_kind, dtype_name, is_concrete, namespace, same_library
from prelens.core import _args as A
from prelens.core._check import ANY, Arr, Expects, Like, misfit
from prelens.core._combinators import branch, chain, copy_l, vec_lens
from prelens.core._iso import unassoc_l
from prelens.core._lens import AnyLens, PreLens, id_pre_lens
from prelens.core._registry import constructor
from prelens.nn._activations import softmax
from prelens.nn._dot_attention import _scaled_dot_product_attention, keep_like, masked_like
from prelens.nn._fastcheck import check_size, dtype_suffix, float_dtype
from prelens.nn._linear import _linear, linear
from prelens.nn._projections import heads_shape, merge_heads_of, projections, split_heads_of
from prelens.nn._transformer_wiring import probes_of, reparam, with_probes

#: An array of any array-API library (numpy's on the fast path).
Array = Any

__all__ = [
    "AttentionParams",
    "FaithfulAttentionParams",
    "HeadParams",
    "attention_head",
    "attention_scores",
    "causal_mask",
    "concat_heads",
    "cross_attention",
    "merge_heads",
    "multi_head_attention",
    "multi_head_attention_faithful",
    "split_heads",
    "stack_heads",
    "unstack_heads",
    "weighted_sum",
]


class AttentionParams(NamedTuple):
    """Parameters of the fast multi-head attention: four ``(d_model, d_model)`` matrices.

    Head ``i`` uses columns ``i·d_k : (i+1)·d_k`` of ``W_Q``, ``W_K`` and ``W_V``
    (``d_k = d_model / heads``); ``W_O`` maps the concatenated heads back. Deltas have the same type.

    >>> ap = multi_head_attention(4, 2).init(0)
    >>> type(ap).__name__, [w.shape for w in ap]
    ('AttentionParams', [(4, 4), (4, 4), (4, 4), (4, 4)])
    """

    W_Q: Array
    W_K: Array
    W_V: Array
    W_O: Array


class HeadParams(NamedTuple):
    """Parameters of one head: ``W_Q``, ``W_K``, ``W_V`` of shape ``(d_model, d_k)``.

    >>> hp = attention_head(4, 2).init(0)
    >>> hp._fields, hp.W_Q.shape
    (('W_Q', 'W_K', 'W_V'), (4, 2))
    """

    W_Q: Array
    W_K: Array
    W_V: Array


class FaithfulAttentionParams(NamedTuple):
    """Parameters of the faithful multi-head attention: a list of heads and ``W_O (d_model, d_model)``.

    >>> fp = multi_head_attention_faithful(4, 2).init(0)
    >>> len(fp.heads), fp.heads[0].W_Q.shape, fp.W_O.shape
    (2, (4, 2), (4, 4))
    """

    heads: list[HeadParams]
    W_O: Array


# ----------------------------------------------------------------- the pieces


def _product_shape(x: Array, y: Array, transposed: bool) -> tuple[int, ...] | None:
    """The shape of ``x @ yᵀ`` (``transposed``) or ``x @ y``, for arrays of one library and dtype with
    the same leading axes whose inner widths agree; None for arrays that do not fit so."""
    inner, outer = (-1, -2) if transposed else (-2, -1)
    fits = same_library(y, x) and x.dtype == y.dtype and x.shape[:-2] == y.shape[:-2]
    return (*x.shape[:-1], y.shape[outer]) if fits and x.shape[-1] == y.shape[inner] else None


def _product(name: str, transposed: bool, scale: float, xy: Any, operands: str, copy_input: bool) -> AnyLens:
    """The lens ``(x, y) -> scale · x @ yᵀ`` (``transposed``) or ``x @ y``, residue ``(x, y)`` (copies, but with
    ``copy_input=False``: inside an attention lens, which made them)."""

    def fwd(p: tuple[()], s: tuple[Array, Array]) -> tuple[tuple[Array, Array], Array]:
        x, y = s
        if _product_shape(x, y, transposed) is None:  # their patterns are declared; not whether they fit
            expected = f"{operands} of one float dtype and the same leading axes"
            raise E.lens_shape_error(name, "input", expected, E.describe_tree(s))
        out = x @ (y.mT if transposed else y)
        if scale != 1.0:
            out *= scale  # ours (a JAX array is rebound, not written)
        return ((copy(x), copy(y)) if copy_input else (x, y)), out  # never the caller's arrays

    def bwd(m: tuple[Array, Array], d: Array) -> tuple[tuple[()], tuple[Array, Array]]:
        x, y = m
        dx, dy = (d @ y, d.mT @ x) if transposed else (d @ y.mT, x.mT @ d)
        if scale != 1.0:
            dx *= scale
            dy *= scale
        return (), (dx, dy)

    def delta(m: tuple[Array, Array]) -> tuple[Array, tuple[int, ...]]:  # like x, shaped as the product
        shape = _product_shape(*m, transposed)
        if shape is None:
            raise ValueError("a residue whose arrays do not fit")  # reported as a residue this lens did not make
        return m[0], shape

    return PreLens(fwd, bwd, name, expects=Expects(params=(), input=xy, residue=xy, delta=Like(delta)))


@constructor
def attention_scores(d_k: int) -> AnyLens:
    """Scaled dot products of queries and keys: ``(Q, K) -> Q Kᵀ / √d_k``.

    Shapes: ``Q (..., T_q, d_k)``, ``K (..., T_k, d_k)`` (same leading axes,
    e.g. ``(B, heads)``) ``-> (..., T_q, T_k)``. Parameter-free; residue
    ``(Q, K)``; backward ``dQ = dS K / √d_k``, ``dK = dSᵀ Q / √d_k``.

    >>> s = attention_scores(4)
    >>> s.fwd((), (np.ones((1, 2, 4)), np.ones((1, 3, 4))))[1]
    array([[[2., 2., 2.],
            [2., 2., 2.]]])
    """
    return _attention_scores(d_k)


def _attention_scores(d_k: int, copy_input: bool = True) -> AnyLens:
    """:func:`attention_scores`; ``copy_input=False`` inside an attention lens (see :func:`_product`)."""
    dk = check_size("attention_scores", "d_k", d_k)
    qk = (Arr(None, ..., None, dk), Arr(None, ..., None, dk))
    operands = f"Q (..., T_q, {dk}) and K (..., T_k, {dk})"
    # the scale a Python float: it never up-casts float32
    return _product(f"attention_scores(d_k={dk})", True, 1.0 / math.sqrt(dk), qk, operands, copy_input)


@constructor
def weighted_sum() -> AnyLens:
    """Each query's output is the attention-weighted sum of the values: ``(A, V) -> A V``.

    Shapes: ``A (..., T_q, T_k)``, ``V (..., T_k, d_v) -> (..., T_q, d_v)``.
    Parameter-free; residue ``(A, V)``; backward ``dA = dO Vᵀ``, ``dV = Aᵀ dO``.

    >>> weighted_sum().fwd((), (np.array([[0.25, 0.75]]), np.array([[4.0], [8.0]])))[1]
    array([[7.]])
    """
    return _weighted_sum()


def _weighted_sum(copy_input: bool = True) -> AnyLens:
    """:func:`weighted_sum`; ``copy_input=False`` inside an attention lens (see :func:`_product`)."""
    av = (Arr(None, ..., None, None), Arr(None, ..., None, None))
    return _product("weighted_sum", False, 1.0, av, "A (..., T_q, T_k) and V (..., T_k, d_v)", copy_input)


def _kept(keep: Array) -> tuple[None, tuple[Any, ...]]:
    """:func:`causal_mask`'s output delta from its residue ``keep``, the causal pattern (values checked if known)."""
    tq, tk = keep.shape
    xp = namespace(keep)
    ref = keep_like(keep, tq, tk)  # numpy: the very array the forward pass kept, so no values to compare
    if dtype_kind(keep.dtype) != "b" or (keep is not ref and is_concrete(keep) and not bool(xp.all(keep == ref))):
        raise ValueError("not the causal pattern")  # reported as a residue this lens did not make
    return None, (..., tq, tk)


@constructor
def causal_mask() -> AnyLens:
    """Hide the future: scores ``(..., T_q, T_k)`` with entry ``[i, j]`` replaced by
    :data:`~prelens.nn.MASKED` ``= −10³⁰`` wherever ``j > i + (T_k − T_q)`` (key ``j`` lies after query ``i``).

    After :data:`~prelens.nn.softmax` those weights are exactly ``0``; a row with every key masked
    gets uniform weights, never NaN. The dtype is kept. Parameter-free; residue: the boolean ``keep``
    matrix ``(T_q, T_k)``; backward zeroes the delta at masked entries.

    >>> m, s = causal_mask().fwd((), np.zeros((2, 2)))
    >>> float(s[0, 1]), m
    (-1e+30, array([[ True, False],
           [ True,  True]]))
    """

    def fwd(p: tuple[()], s: Array) -> tuple[Array, Array]:
        keep = keep_like(s, *s.shape[-2:])
        return keep, namespace(s).where(keep, s, masked_like(s))

    def bwd(keep: Array, da: Array) -> tuple[tuple[()], Array]:
        return (), namespace(da).where(keep, da, 0.0)

    expects = Expects(params=(), input=Arr(None, ..., None, None), delta=Like(_kept))
    return PreLens(fwd, bwd, "causal_mask", expects=expects)


@constructor
def split_heads(n_heads: int) -> AnyLens:
    """Put the heads on an axis: ``(..., T, h·d_k) -> (..., h, T, d_k)`` (head ``i`` gets
    features ``i·d_k : (i+1)·d_k``). Parameter-free; residue: the input's shape; the
    backward pass is :func:`merge_heads`'s forward pass.

    >>> split_heads(2).fwd((), np.arange(4.0).reshape(1, 1, 4))[1]
    array([[[[0., 1.]],
    <BLANKLINE>
            [[2., 3.]]]])
    """
    h = check_size("split_heads", "n_heads", n_heads)
    name = f"split_heads({h})"

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        if x.shape[-1] % h:  # the rest of x's pattern is declared
            raise E.lens_shape_error(name, "input", f"(..., T, d) with d divisible by {h}", E.describe(x))
        return tuple(x.shape), split_heads_of(h, x)

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[tuple[()], Array]:
        return (), merge_heads_of(h, da)

    def delta(shape: tuple[int, ...]) -> tuple[None, tuple[int, ...]]:  # from the input's (..., T, d)
        if shape[-1] % h:
            raise ValueError("not the shape of an input")  # reported as a residue this lens did not make
        return None, heads_shape(shape, h)

    return PreLens(fwd, bwd, name, expects=Expects(params=(), input=Arr(None, ..., None, None), delta=Like(delta)))


@constructor
def merge_heads(n_heads: int) -> AnyLens:
    """Concatenate the heads along the features: ``(..., h, T, d_k) -> (..., T, h·d_k)``.

    The inverse of :func:`split_heads`; parameter-free, residue: the input's shape.

    >>> merge_heads(2).fwd((), np.arange(4.0).reshape(1, 2, 1, 2))[1]
    array([[[0., 1., 2., 3.]]])
    """
    h = check_size("merge_heads", "n_heads", n_heads)

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        return tuple(x.shape), merge_heads_of(h, x)

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[tuple[()], Array]:
        return (), split_heads_of(h, da)

    # the residue is the input's shape (..., h, T, d_k): the delta is (..., T, h d_k)
    delta = Like(lambda shape: (None, (*shape[:-3], shape[-2], h * shape[-1])))
    expects = Expects(params=(), input=Arr(None, ..., h, None, None), delta=delta)
    return PreLens(fwd, bwd, f"merge_heads({h})", expects=expects)


@constructor
def concat_heads(n_heads: int) -> AnyLens:
    """The faithful concatenation: a list of ``h`` head outputs ``(..., T, d_i)`` -> ``(..., T, Σ d_i)``.

    Parameter-free; residue: the output's shape and the offsets where each
    head's features start (after the first); the backward pass cuts the delta there.

    >>> concat_heads(2).fwd((), [np.zeros((1, 2)), np.ones((1, 1))])
    (((1, 3), (2,)), array([[0., 0., 1.]]))
    """
    h = check_size("concat_heads", "n_heads", n_heads)
    name = f"concat_heads({h})"

    def fwd(p: tuple[()], xs: list[Array]) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], Array]:
        first = xs[0]
        if not all(same_library(x, first) and x.dtype == first.dtype and x.shape[:-1] == first.shape[:-1] for x in xs):
            expected = f"{h} float arrays (..., T, d_i) of one dtype and the same leading axes"
            raise E.lens_shape_error(name, "input", expected, E.describe_tree(xs))
        y = namespace(first).concat(xs, axis=-1)
        return (tuple(y.shape), tuple(accumulate(x.shape[-1] for x in xs[:-1]))), y

    def bwd(m: tuple[tuple[int, ...], tuple[int, ...]], da: Array) -> tuple[tuple[()], list[Array]]:
        shape, offsets = m
        return (), [da[..., lo:hi] for lo, hi in pairwise((0, *offsets, shape[-1]))]

    def delta(m: Any) -> tuple[None, tuple[int, ...]]:  # the output's shape, if the offsets lie in it
        shape, offsets = m
        bounds = [0, *offsets, shape[-1]]
        if len(offsets) != h - 1 or any(type(o) is not int for o in offsets) or bounds != sorted(bounds):
            raise ValueError("not the offsets of the heads")  # reported as a residue this lens did not make
        return None, shape

    expects = Expects(params=(), input=[Arr(None, ..., None)] * h, delta=Like(delta))
    return PreLens(fwd, bwd, name, expects=expects)


# -------------------------------------------------------------- one head, many


def check_heads(fn: str, d_model: int, n_heads: int) -> tuple[int, int]:
    """``(d_model, n_heads)``, checked for the constructor ``fn``: sizes, and the heads divide ``d_model``."""
    d = check_size(fn, "d_model", d_model)
    h = check_size(fn, "n_heads", n_heads)
    if d % h:
        raise E.StructureError(f"{fn}: d_model must be divisible by the number of heads: d_model={d}, n_heads={h}")
    return d, h


def _label(kind: str, sizes: str, causal: bool, dt: np.dtype[Any], cross: bool = False) -> str:
    flags = (", causal" if causal else "") + (", cross" if cross else "")
    return f"{kind}({sizes}{flags}{dtype_suffix(dt)})"


@constructor
def attention_head(
    d_model: int, d_k: int, *, causal: bool = False, cross: bool = False, dtype: npt.DTypeLike = np.float64
) -> AnyLens:
    """One head of attention: projections ≫ scores ≫ (mask) ≫ softmax ≫ weighted sum.

    ``x (B, T, d_model) -> (B, T, d_k)``; ``cross=True``: ``(x (B, T, d_model), context (B, S, d_model))``,
    keys and values from ``context``. Parameters :class:`HeadParams`. Built as (the residue is the
    chain's list of stage residues)::

        chain(copy_l, copy_l @ id,                         # x -> ((x, x), x)
              (linear @ linear) @ linear,                  # ((Q, K), V)
              attention_scores(d_k) @ id, [causal_mask() @ id,]
              softmax @ id, weighted_sum())

    >>> head = attention_head(4, 2)
    >>> head, head.fwd(head.init(0), np.ones((1, 3, 4)))[1].shape
    (attention_head(4→2), (1, 3, 2))
    """
    d = check_size("attention_head", "d_model", d_model)
    dk = check_size("attention_head", "d_k", d_k)
    dt = float_dtype("attention_head", dtype)
    causal, cross = A.flag("attention_head", "causal", causal), A.flag("attention_head", "cross", cross)
    name = _label("attention_head", f"{d}→{dk}", causal, dt, cross)
    # x -> ((x, x), x) (self-attention) or (x, c) -> ((x, c), c) (cross-attention)
    wiring = [id_pre_lens @ copy_l, unassoc_l] if cross else [copy_l, copy_l @ id_pre_lens]
    proj = (linear(d, dk, dtype=dt) @ linear(d, dk, dtype=dt)) @ linear(d, dk, dtype=dt)
    # Q, K, V and A are arrays this lens made: the scores and the weighted sum keep them without a copy
    attend = [
        _attention_scores(dk, copy_input=False) @ id_pre_lens,
        *([causal_mask() @ id_pre_lens] if causal else []),
        softmax @ id_pre_lens,
        _weighted_sum(copy_input=False),
    ]
    before, after = [s.init(0) for s in wiring], [s.init(0) for s in attend]  # the stages' unit parameters
    at = len(wiring)  # where the projections sit in the chain (the softmax: two stages before its end)

    def p_to(hp: HeadParams) -> list[Any]:
        return [*before, ((hp.W_Q, hp.W_K), hp.W_V), *after]

    def p_from(dps: list[Any]) -> HeadParams:
        (dq, dk_), dv = dps[at]
        return HeadParams(dq, dk_, dv)

    head = reparam(chain(*wiring, proj, *attend), name, p_to=p_to, p_from=p_from)
    return with_probes(head, {"": lambda m: namespace(m[-2][0]).expand_dims(m[-2][0], axis=-3)})


@constructor
def multi_head_attention_faithful(
    d_model: int,
    n_heads: int,
    *,
    causal: bool = False,
    cross: bool = False,
    dtype: npt.DTypeLike = np.float64,
) -> AnyLens:
    """Multi-head attention as the structure says: ``branch`` to ``h`` heads in parallel, concatenate, ``W_O``.

    ``chain(branch(h), vec_lens(h, attention_head(d_model, d_k)), concat_heads(h), linear(d_model, d_model))``
    with ``d_k = d_model / h`` (not divisible: an error). Shapes as :func:`multi_head_attention` (with
    ``cross=True``, :func:`cross_attention`). Parameters :class:`FaithfulAttentionParams`.

    >>> mha = multi_head_attention_faithful(4, 2)
    >>> mha  # named as the other twins are, feed_forward_composed, ...
    multi_head_attention_composed(4, heads=2)
    >>> [w.shape for w in mha.init(0).heads[0]]
    [(4, 2), (4, 2), (4, 2)]
    """
    kind = "multi_head_attention_composed"
    d, h = check_heads(kind, d_model, n_heads)
    dt = float_dtype(kind, dtype)
    causal, cross = A.flag(kind, "causal", causal), A.flag(kind, "cross", cross)
    head = attention_head(d, d // h, causal=causal, cross=cross, dtype=dt)
    body = chain(branch(h), vec_lens(h, head), concat_heads(h), linear(d, d, dtype=dt))
    p_to = lambda fp: [(), list(fp.heads), (), fp.W_O]
    p_from = lambda dps: FaithfulAttentionParams(list(dps[1]), dps[3])
    mha = reparam(body, _label(kind, f"{d}, heads={h}", causal, dt, cross), p_to=p_to, p_from=p_from)
    weights = probes_of(head)[""]  # one head's (..., 1, T_q, T_k)

    def heads_weights(m: list[Any]) -> Array:  # the heads' side by side on that axis
        ws = [weights(hm) for hm in m[1]]
        return namespace(ws[0]).concat(ws, axis=-3)

    return with_probes(mha, {"": heads_weights})


def _fast(kind: str, d_model: int, n_heads: int, causal: bool, cross: bool, dtype: npt.DTypeLike) -> AnyLens:
    d, h = check_heads(kind, d_model, n_heads)
    dt = float_dtype(kind, dtype)
    causal = A.flag(kind, "causal", causal)
    body = chain(
        # the wiring, three linears side by side and three split_heads, fused (tested equal)
        projections(d, h, dt, cross=cross),
        # scores, mask, softmax and weighted sum fused (tested equal); Q, K, V are the projections' arrays
        _scaled_dot_product_attention(d // h, causal=causal, copy_input=False),
        merge_heads(h),
        _linear(d, d, dtype=dt, copy_input=False),  # its input is the attention's own array
    )

    def p_to(ap: AttentionParams) -> list[Any]:
        return [(ap.W_Q, ap.W_K, ap.W_V), (), (), ap.W_O]

    def p_from(dps: list[Any]) -> AttentionParams:
        (dq, dk, dv), do = dps[0], dps[-1]
        return AttentionParams(dq, dk, dv, do)

    mha = reparam(body, _label(kind, f"{d}, heads={h}", causal, dt), p_to=p_to, p_from=p_from)
    return with_probes(mha, {"": lambda m: m[1][3]})  # the fused stage's residue (Q, K, V, A)


@constructor
def multi_head_attention(
    d_model: int, n_heads: int, *, causal: bool = False, dtype: npt.DTypeLike = np.float64
) -> AnyLens:
    """Fast multi-head self-attention, heads on an array axis: ``(B, T, d_model) -> (B, T, d_model)``.

    Built as (the residue is the chain's list of stage residues)::

        chain(copy_l, copy_l @ id,                         # x -> ((x, x), x)
              (linear @ linear) @ linear,                  # ((Q, K), V), each (B, T, d_model)
              (split_heads @ split_heads) @ split_heads,   # each (B, h, T, d_k)
              scaled_dot_product_attention(d_k, causal),   # A V, (B, h, T, d_k)
              merge_heads(h), linear)                      # (B, T, d_model) -> W_O

    with the first four stages fused into one lens (one product with ``[W_Q | W_K | W_V]`` each
    way), tested equal. Parameters :class:`AttentionParams`, each ``(d_model, d_model)``;
    ``d_k = d_model / n_heads`` (not divisible: an error). Equal to
    :func:`multi_head_attention_faithful` through :func:`stack_heads`. ``causal=True`` masks the future.

    >>> mha = multi_head_attention(6, 4)
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: multi_head_attention: d_model must be divisible by the number of heads: ...
    """
    return _fast("multi_head_attention", d_model, n_heads, causal, False, dtype)


@constructor
def cross_attention(d_model: int, n_heads: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """Fast multi-head cross-attention: ``(x (B, T, d), context (B, S, d)) -> (B, T, d)``.

    Queries from ``x``, keys and values from ``context`` (an encoder's output, say): the pipeline of
    :func:`multi_head_attention` behind the wiring ``(x, c) -> ((x, c), c)``. Parameters
    :class:`AttentionParams`; attention weights ``(B, h, T, S)``.

    >>> ca = cross_attention(4, 2)
    >>> ca.fwd(ca.init(0), (np.ones((2, 3, 4)), np.ones((2, 7, 4))))[1].shape
    (2, 3, 4)
    """
    return _fast("cross_attention", d_model, n_heads, False, True, dtype)


# ------------------------------------------------------- the two layouts' iso


_MATRIX: Any = Arr(None, None, None)  # a float matrix


def _fits(fn: str, pattern: Any, x: Any) -> None:
    """Nothing if the parameters ``x`` fit ``pattern``; else the core's error for them, naming ``fn``."""
    err = misfit(pattern, x, "parameters")
    if err is not None:
        raise type(err)(f"{fn}: {err}")


def stack_heads(fp: FaithfulAttentionParams) -> AttentionParams:
    """The faithful layout to the fast one: head matrices side by side, ``(d, d_k)·h -> (d, d)``.

    Linear, so it maps parameter deltas the same way. Heads ``(d, d_k)`` of one dtype, ``W_O (h·d_k, d)``.

    >>> fp = multi_head_attention_faithful(4, 2).init(0)
    >>> ap = stack_heads(fp)
    >>> ap.W_Q.shape, bool(np.all(ap.W_Q[:, 2:] == fp.heads[1].W_Q))
    ((4, 4), True)
    """
    fn = "stack_heads"
    heads = fp[0] if isinstance(fp, tuple) and len(fp) == 2 else None
    if not (isinstance(heads, (list, tuple)) and heads):
        expected = "FaithfulAttentionParams(heads, W_O) with at least one head"
        raise E.must_be(fn, "parameters", expected, E.describe_tree(fp))
    n = len(heads)
    _fits(fn, FaithfulAttentionParams((HeadParams(_MATRIX, ANY, ANY), *[ANY] * (n - 1)), ANY), fp)  # type: ignore[arg-type]
    w_q = heads[0][0]
    (d, dk), dt = w_q.shape, dtype_name(w_q.dtype)  # every matrix as the first head's W_Q
    w: Any = Arr(dt, d, dk)
    _fits(fn, FaithfulAttentionParams((HeadParams(w, w, w),) * n, Arr(dt, n * dk, d)), fp)  # type: ignore[arg-type]
    xp = namespace(w_q)
    q, k, v = (xp.concat([hp[i] for hp in heads], axis=-1) for i in range(3))
    return AttentionParams(q, k, v, fp[1])


def unstack_heads(ap: AttentionParams, n_heads: int) -> FaithfulAttentionParams:
    """The fast layout to the faithful one (the inverse of :func:`stack_heads`).

    Shapes: ``(d, d)`` matrices (one dtype) to ``h`` heads of ``(d, d / h)`` and ``W_O (d, d)``.

    >>> ap = multi_head_attention(4, 2).init(0)
    >>> stack_heads(unstack_heads(ap, 2)).W_V.shape
    (4, 4)
    """
    fn = "unstack_heads"
    _fits(fn, AttentionParams(_MATRIX, ANY, ANY, ANY), ap)
    d = ap[0].shape[0]
    w: Any = Arr(dtype_name(ap[0].dtype), d, d)
    _fits(fn, AttentionParams(w, w, w, w), ap)
    dk = d // check_heads(fn, d, n_heads)[1]
    heads = [HeadParams(*(copy(m[:, i * dk : (i + 1) * dk]) for m in ap[:3])) for i in range(n_heads)]
    return FaithfulAttentionParams(heads, ap[3])
