"""Attention, every step a lens: projections, scores, mask, softmax, weighted sum, heads.

One head of attention, as the seeds describe it, is a pipeline of small lenses
on a batch of sequences ``x (B, T, d_model)`` (batch axis leading)::

    x ─copy─> (x, x, x) ─W_Q ⊗ W_K ⊗ W_V─> (Q, K, V)
      ─scores ⊗ id─> (Q Kᵀ/√d_k, V) ─mask ⊗ id─> ─softmax ⊗ id─> (A, V) ─weighted_sum─> A V

(``⊗`` is the parallel product ``@`` of lenses, not matmul). For
cross-attention the queries come from one sequence and the keys and values
from another: the input is a pair ``(x, context)``.

Two layouts of multi-head attention, tested equal by property tests:

* :func:`multi_head_attention_faithful` — the structure is the point:
  :func:`~prelens.branch` to ``h`` copies, ``h`` heads side by side with
  :func:`~prelens.vec_lens`, :func:`concat_heads`, then the output projection
  ``W_O``. Parameters :class:`FaithfulAttentionParams`.
* :func:`multi_head_attention` / :func:`cross_attention` — the fast path: the
  same pipeline once, on wide projections ``(d_model, d_model)`` with the
  heads on an array axis (:func:`split_heads`, :func:`merge_heads`).
  Parameters :class:`AttentionParams`; :func:`stack_heads` and
  :func:`unstack_heads` are the isomorphism between the two layouts.

After a forward pass, :func:`~prelens.nn.attention_weights` reads the
attention matrices ``(B, heads, T_q, T_k)`` out of the residue.

Every lens here also runs on the arrays of another array-API library
(PyTorch, JAX, ``array_api_strict``), through the standard's functions only
and without a branch on values (so ``jax.jit`` traces it); on numpy it runs
as it always has.

>>> import numpy as np
>>> mha = multi_head_attention(8, 2, causal=True)
>>> mha
multi_head_attention(8, heads=2, causal)
>>> m, y = mha.fwd(mha.init(0), np.ones((3, 5, 8)))
>>> y.shape
(3, 5, 8)
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import copy, dtype_kind, is_array, is_concrete, is_float, namespace, namespace_name
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like
from prelens.core._combinators import branch, chain, copy_l, vec_lens
from prelens.core._iso import unassoc_l
from prelens.core._lens import AnyLens, PreLens, id_pre_lens
from prelens.core._registry import constructor
from prelens.nn._activations import softmax
from prelens.nn._dot_attention import (
    MASKED,
    _scaled_dot_product_attention,
    float_like,
    keep_like,
    masked_like,
    numpy_dtype,
    output_delta_error,
    swap_heads_axes,
    swap_last,
)
from prelens.nn._fastcheck import (
    Array,
    check_float_delta,
    check_size,
    dtype_suffix,
    float_dtype,
    residue_error,
    shape_str,
)
from prelens.nn._linear import _linear, linear
from prelens.nn._projections import projections
from prelens.nn._transformer_wiring import reparam, with_probes

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

    Head ``i`` uses columns ``i·d_k : (i+1)·d_k`` of ``W_Q``, ``W_K`` and
    ``W_V`` (``d_k = d_model / heads``); ``W_O`` maps the concatenated heads
    back to ``d_model``. Deltas have the same type.

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
    """:func:`attention_scores`; ``copy_input=False`` inside an attention lens, which made ``Q``
    and ``K`` itself: its residue keeps them without a copy, as no caller holds them."""
    dk = check_size("attention_scores", "d_k", d_k)
    name = f"attention_scores(d_k={dk})"
    scale = 1.0 / math.sqrt(dk)  # a Python float: it never up-casts float32

    def fwd(p: tuple[()], qk: tuple[Array, Array]) -> tuple[tuple[Array, Array], Array]:
        q, k = _pair(name, qk)
        if q.shape[-1] != dk or k.shape[-1] != dk or q.shape[:-2] != k.shape[:-2] or q.dtype != k.dtype:
            raise E.lens_shape_error(
                name,
                "input (Q, K)",
                f"Q (..., T_q, {dk}) and K (..., T_k, {dk}) of one float dtype",
                f"({E.describe(q)}, {E.describe(k)})",
            )
        s = q @ swap_last(k)
        s *= scale  # s is ours (a JAX array is rebound, not written)
        return ((copy(q), copy(k)) if copy_input else (q, k)), s  # never the caller's arrays

    def bwd(m: tuple[Array, Array], ds: Array) -> tuple[tuple[()], tuple[Array, Array]]:
        q, k = _pair_residue(name, m)
        if q.shape[-1] != dk or k.shape[-1] != dk or q.shape[:-2] != k.shape[:-2]:
            raise residue_error(name, m)
        out_shape = (*q.shape[:-1], k.shape[-2])
        if not (float_like(ds, q) and ds.shape == out_shape):
            raise output_delta_error(name, ds, q, out_shape)
        dq = ds @ k
        dq *= scale
        dk_ = swap_last(ds) @ q
        dk_ *= scale
        return (), (dq, dk_)

    return PreLens(fwd, bwd, name)


def _same_library(a: Array, b: Any) -> bool:
    """``b`` is an array of ``a``'s library: both numpy, or both another's."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray)
    return is_array(b) and not isinstance(b, np.ndarray)


def _pair(name: str, x: Any) -> tuple[Array, Array]:
    if (
        isinstance(x, tuple)
        and len(x) == 2
        and is_array(x[0])
        and _same_library(x[0], x[1])
        and x[0].ndim >= 2
        and x[0].ndim == x[1].ndim
        and is_float(x[0])
    ):
        return x[0], x[1]
    raise E.must_be(name, "input", "a pair of float arrays (..., T, d)", _desc(x))


def _pair_residue(name: str, m: Any) -> tuple[Array, Array]:
    """The residue ``(Q, K)`` or ``(A, V)``: two float arrays of one dtype, ndim >= 2."""
    try:
        x, y = m
        ok = is_float(x) and x.dtype == y.dtype and x.ndim >= 2 and x.ndim == y.ndim
    except (TypeError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise residue_error(name, m)
    return x, y


def _desc(x: Any) -> str:
    if isinstance(x, tuple):
        return "(" + ", ".join(map(E.describe, x)) + ")"
    return E.describe(x)


@constructor
def causal_mask() -> AnyLens:
    """Hide the future: scores ``(..., T_q, T_k)`` with entry ``[i, j]`` replaced by
    :data:`MASKED` ``= −10³⁰`` wherever ``j > i + (T_k − T_q)`` (key ``j`` lies after query ``i``).

    After :data:`~prelens.nn.softmax` those weights are exactly ``0``, so a
    future position never influences a past one. The value is finite, so a
    row with every key masked gives uniform weights, never NaN. The dtype is
    kept. Parameter-free; residue: the boolean ``keep`` matrix; backward
    zeroes the delta at masked entries.

    >>> m, s = causal_mask().fwd((), np.zeros((2, 2)))
    >>> float(s[0, 1]), m
    (-1e+30, array([[ True, False],
           [ True,  True]]))
    """
    name = "causal_mask"
    keeps: dict[tuple[int, int], Array] = {}

    def fwd(p: tuple[()], s: Array) -> tuple[Array, Array]:
        if not is_float(s) or s.ndim < 2:
            raise E.must_be(name, "input", "float scores (..., T_q, T_k)", _desc(s))
        tq, tk = s.shape[-2:]
        if not isinstance(s, np.ndarray):  # another library: its own mask, made each pass
            keep_ = keep_like(s, tq, tk)
            return keep_, namespace(s).where(keep_, s, masked_like(s))
        keep = keeps.get((tq, tk))
        if keep is None:
            keep = keeps[tq, tk] = np.tri(tq, tk, tk - tq, dtype=bool)
            keep.flags.writeable = False
        return keep, np.where(keep, s, MASKED if s.dtype.itemsize >= 4 else np.finfo(s.dtype).min)

    def bwd(keep: Array, da: Array) -> tuple[tuple[()], Array]:
        if is_array(keep) and not isinstance(keep, np.ndarray):
            return _generic_mask_bwd(keep, da)
        if not (isinstance(keep, np.ndarray) and keep is keeps.get(keep.shape)):  # not fwd's mask: is it one?
            if not (isinstance(keep, np.ndarray) and keep.dtype == bool and keep.ndim == 2):
                raise residue_error(name, keep)
            tq, tk = keep.shape
            if not np.array_equal(keep, np.tri(tq, tk, tk - tq, dtype=bool)):
                raise residue_error(name, keep)
        if not isinstance(da, np.ndarray) or da.dtype.kind != "f" or da.ndim < 2 or da.shape[-2:] != keep.shape:
            if isinstance(da, np.ndarray) and da.dtype.kind == "f":
                raise E.lens_shape_error(
                    name, "output delta", f"a float array (..., {keep.shape[0]}, {keep.shape[1]})", E.describe(da)
                )
            raise E.must_be(name, "output delta", "a numpy float array (..., T_q, T_k)", E.describe_tree(da))
        return (), np.where(keep, da, da.dtype.type(0))

    return PreLens(fwd, bwd, name)


def _generic_mask_bwd(keep: Array, da: Any) -> tuple[tuple[()], Array]:
    """:func:`causal_mask`'s backward pass on another library's arrays (the residue's values
    are checked only where they are concrete: not under ``jax.jit``)."""
    name = "causal_mask"
    xp = namespace(keep)
    ok = dtype_kind(keep.dtype) == "b" and keep.ndim == 2
    if ok and is_concrete(keep):
        ok = bool(xp.all(keep == keep_like(keep, *keep.shape)))
    if not ok:
        raise residue_error(name, keep)
    tq, tk = keep.shape
    if not (is_float(da) and _same_library(keep, da) and da.ndim >= 2 and da.shape[-2:] == keep.shape):
        if is_float(da) and _same_library(keep, da):
            raise E.lens_shape_error(name, "output delta", f"a float array (..., {tq}, {tk})", E.describe(da))
        lib = namespace_name(xp)
        raise E.must_be(name, "output delta", f"a {lib} float array (..., T_q, T_k)", E.describe_tree(da))
    return (), xp.where(keep, da, 0.0)


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
    """:func:`weighted_sum`; ``copy_input=False`` inside an attention lens, which made ``A`` and
    ``V`` itself: its residue keeps them without a copy, as no caller holds them."""
    name = "weighted_sum"

    def fwd(p: tuple[()], av: tuple[Array, Array]) -> tuple[tuple[Array, Array], Array]:
        a, v = _pair(name, av)
        if a.shape[-1] != v.shape[-2] or a.shape[:-2] != v.shape[:-2] or a.dtype != v.dtype:
            raise E.lens_shape_error(
                name, "input (A, V)", "A (..., T_q, T_k) and V (..., T_k, d_v) of one dtype", _desc(av)
            )
        return ((copy(a), copy(v)) if copy_input else (a, v)), a @ v  # never the caller's arrays

    def bwd(m: tuple[Array, Array], do: Array) -> tuple[tuple[()], tuple[Array, Array]]:
        a, v = _pair_residue(name, m)
        if a.shape[-1] != v.shape[-2] or a.shape[:-2] != v.shape[:-2]:
            raise residue_error(name, m)
        out_shape = (*a.shape[:-1], v.shape[-1])
        if not (float_like(do, a) and do.shape == out_shape):
            raise output_delta_error(name, do, a, out_shape)
        return (), (do @ swap_last(v), swap_last(a) @ do)

    return PreLens(fwd, bwd, name)


@constructor
def split_heads(n_heads: int) -> AnyLens:
    """Put the heads on an axis: ``(..., T, h·d_k) -> (..., h, T, d_k)`` (head ``i`` gets
    features ``i·d_k : (i+1)·d_k``). Parameter-free; residue: the input's shape (so that
    the backward pass can check the delta); the backward pass is :func:`merge_heads`'s
    forward pass.

    >>> split_heads(2).fwd((), np.arange(4.0).reshape(1, 1, 4))[1]
    array([[[[0., 1.]],
    <BLANKLINE>
            [[2., 3.]]]])
    """
    h = check_size("split_heads", "n_heads", n_heads)
    name = f"split_heads({h})"

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        y = _split(name, h, x, "input")
        return tuple(x.shape), y

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[tuple[()], Array]:
        return (), _merge(name, h, da, "output delta")

    # the residue is the input's shape (..., T, d): the delta is (..., h, T, d / h)
    delta = Like(lambda shape: (None, (*shape[:-2], h, shape[-2], shape[-1] // h)))
    return PreLens(fwd, bwd, name, expects=Expects(input=Arr(None, ..., None, None), delta=delta))


@constructor
def merge_heads(n_heads: int) -> AnyLens:
    """Concatenate the heads along the features: ``(..., h, T, d_k) -> (..., T, h·d_k)``.

    The inverse of :func:`split_heads`; parameter-free, residue: the input's shape.

    >>> merge_heads(2).fwd((), np.arange(4.0).reshape(1, 2, 1, 2))[1]
    array([[[0., 1., 2., 3.]]])
    """
    h = check_size("merge_heads", "n_heads", n_heads)
    name = f"merge_heads({h})"

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        y = _merge(name, h, x, "input")
        return tuple(x.shape), y

    def bwd(shape: tuple[int, ...], da: Array) -> tuple[tuple[()], Array]:
        return (), _split(name, h, da, "output delta")

    # the residue is the input's shape (..., h, T, d_k): the delta is (..., T, h d_k)
    delta = Like(lambda shape: (None, (*shape[:-3], shape[-2], h * shape[-1])))
    return PreLens(fwd, bwd, name, expects=Expects(input=Arr(None, ..., h, None, None), delta=delta))


def _split(name: str, h: int, x: Array, what: str) -> Array:
    if x.shape[-1] % h:  # the rest of x's pattern is declared
        raise E.lens_shape_error(name, what, f"(..., T, d) with d divisible by {h}", E.describe(x))
    *lead, t, d = x.shape
    if not isinstance(x, np.ndarray):
        xp = namespace(x)
        return xp.permute_dims(xp.reshape(x, (*lead, t, h, d // h)), swap_heads_axes(len(lead)))
    # a view (no copy): the matmuls that follow read each head's (T, d_k) block in place, as fast
    return x.reshape(*lead, t, h, d // h).swapaxes(-2, -3)


def _merge(name: str, h: int, x: Array, what: str) -> Array:
    *lead, _, t, dk = x.shape
    if not isinstance(x, np.ndarray):
        xp = namespace(x)
        return xp.reshape(xp.permute_dims(x, swap_heads_axes(len(lead))), (*lead, t, h * dk))
    return x.swapaxes(-3, -2).reshape(*lead, t, h * dk)


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
        if not isinstance(xs, list):
            raise E.must_be(name, "input", f"a list of {h} float arrays (..., T, d_i)", E.describe(xs))
        if len(xs) != h:
            raise E.list_length_error(name, "input", h, len(xs))
        first = xs[0]
        for x in xs:
            if (
                not is_float(x)
                or not _same_library(first, x)
                or x.ndim == 0
                or x.dtype != first.dtype
                or x.shape[:-1] != first.shape[:-1]
            ):
                raise E.must_be(
                    name,
                    "input",
                    f"a list of {h} float arrays (..., T, d_i) of one dtype and the same leading axes",
                    E.describe_tree(xs),
                )
        offsets = tuple(np.cumsum([x.shape[-1] for x in xs[:-1]]).tolist())
        if not isinstance(first, np.ndarray):
            y = namespace(first).concat(xs, axis=-1)
            return (tuple(y.shape), offsets), y
        y = np.concatenate(xs, axis=-1)
        return (y.shape, offsets), y

    def bwd(m: tuple[tuple[int, ...], tuple[int, ...]], da: Array) -> tuple[tuple[()], list[Array]]:
        try:
            shape, offsets = m
            shape_ok = (
                all(type(n) is int for n in (*shape, *offsets))
                and len(shape) >= 1
                and len(offsets) == h - 1
                and list(offsets) == sorted(offsets)
                and all(0 <= o <= shape[-1] for o in offsets)
            )
        except (TypeError, ValueError):
            shape_ok = False
        if not shape_ok:
            raise residue_error(name, m)
        check_float_delta(name, da, shape)
        if not isinstance(da, np.ndarray):
            bounds = (0, *offsets, shape[-1])
            return (), [da[..., lo:hi] for lo, hi in pairwise(bounds)]
        return (), np.split(da, list(offsets), axis=-1)

    return PreLens(fwd, bwd, name)


# -------------------------------------------------------------- one head, many


def check_heads(fn: str, d_model: int, n_heads: int) -> tuple[int, int]:
    """``(d_model, n_heads)``, checked for the constructor ``fn``: sizes, and the heads divide ``d_model``.

    >>> check_heads("decoder_lm", 6, 4)
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: decoder_lm: d_model must be divisible by the number of heads: d_model=6, n_heads=4
    """
    d = check_size(fn, "d_model", d_model)
    h = check_size(fn, "n_heads", n_heads)
    if d % h:
        raise E.heads_not_divisible(fn, d, h)
    return d, h


def _wiring(cross: bool) -> list[AnyLens]:
    """``x -> ((x, x), x)`` (self-attention) or ``(x, c) -> ((x, c), c)`` (cross-attention)."""
    if cross:
        return [id_pre_lens @ copy_l, unassoc_l]
    return [copy_l, copy_l @ id_pre_lens]


def _attend(d_k: int, causal: bool) -> list[AnyLens]:
    """``((Q, K), V) -> A V``: scores, mask, softmax, weighted sum (heads on any leading axes).

    Only inside an attention lens, after its projections: ``Q``, ``K``, ``V`` and ``A`` are
    arrays it made, so the scores and the weighted sum keep them without a copy."""
    stages = [_attention_scores(d_k, copy_input=False) @ id_pre_lens]
    if causal:
        stages.append(causal_mask() @ id_pre_lens)
    return [*stages, softmax @ id_pre_lens, _weighted_sum(copy_input=False)]


_UNITS2 = ((), ())


def _wiring_params(cross: bool) -> list[Any]:
    """The (unit) parameters of :func:`_wiring`'s two stages."""
    return [_UNITS2, ()] if cross else [(), _UNITS2]


def _attend_params(causal: bool) -> list[Any]:
    """The (unit) parameters of :func:`_attend`'s stages."""
    return [*([_UNITS2] * (3 if causal else 2)), ()]


def _softmax_index(causal: bool) -> int:
    """Where the softmax sits in the stage list built from ``_wiring + projections + _attend``."""
    return 3 + (2 if causal else 1)


def _label(kind: str, d: int, h: int, causal: bool, dt: np.dtype[Any], cross: bool = False) -> str:
    flags = (", causal" if causal else "") + (", cross" if cross else "")
    return f"{kind}({d}, heads={h}{flags}{dtype_suffix(dt)})"


@constructor
def attention_head(
    d_model: int, d_k: int, *, causal: bool = False, cross: bool = False, dtype: npt.DTypeLike = np.float64
) -> AnyLens:
    """One head of attention: projections ≫ scores ≫ (mask) ≫ softmax ≫ weighted sum.

    ``[m]`` is the chain's list of stage residues.

    Self-attention: ``x (B, T, d_model) -> (B, T, d_k)``, with the queries, keys
    and values all projected from a copy of ``x``. ``cross=True``: input
    ``(x (B, T, d_model), context (B, S, d_model))``, queries from ``x``, keys
    and values from ``context``. Parameters :class:`HeadParams` (three
    ``(d_model, d_k)`` matrices). Built as::

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
    name = f"attention_head({d}→{dk}{', causal' if causal else ''}{', cross' if cross else ''}{dtype_suffix(dt)})"
    proj = (linear(d, dk, dtype=dt) @ linear(d, dk, dtype=dt)) @ linear(d, dk, dtype=dt)
    body = chain(*_wiring(cross), proj, *_attend(dk, causal))
    before, after = _wiring_params(cross), _attend_params(causal)

    def p_to(hp: HeadParams) -> list[Any]:
        return [*before, ((hp.W_Q, hp.W_K), hp.W_V), *after]

    def p_from(dps: list[Any]) -> HeadParams:
        (dq, dk_), dv = dps[2]
        return HeadParams(dq, dk_, dv)

    head = reparam(body, name, p_to=p_to, p_from=p_from)
    index = _softmax_index(causal)
    return with_probes(head, {"": lambda m: _one_head(m[index][0])})


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
    with ``d_k = d_model / h``. Shapes as :func:`multi_head_attention` (or,
    with ``cross=True``, as :func:`cross_attention`). Parameters
    :class:`FaithfulAttentionParams`; :func:`stack_heads` turns them into the
    fast layout. ``d_model`` not divisible by ``n_heads`` is an error.

    >>> mha = multi_head_attention_faithful(4, 2)
    >>> mha
    multi_head_attention_faithful(4, heads=2)
    >>> [w.shape for w in mha.init(0).heads[0]]
    [(4, 2), (4, 2), (4, 2)]
    """
    kind = "multi_head_attention_faithful"
    d, h = check_heads(kind, d_model, n_heads)
    dt = float_dtype(kind, dtype)
    causal, cross = A.flag(kind, "causal", causal), A.flag(kind, "cross", cross)
    name = _label(kind, d, h, causal, dt, cross)
    head = attention_head(d, d // h, causal=causal, cross=cross, dtype=dt)
    body = chain(branch(h), vec_lens(h, head), concat_heads(h), linear(d, d, dtype=dt))

    def p_to(fp: FaithfulAttentionParams) -> list[Any]:
        return [(), list(fp.heads), (), fp.W_O]

    def p_from(dps: list[Any]) -> FaithfulAttentionParams:
        return FaithfulAttentionParams(list(dps[1]), dps[3])

    mha = reparam(body, name, p_to=p_to, p_from=p_from)
    index = _softmax_index(causal)
    return with_probes(mha, {"": lambda m: _heads_axis([hm[index][0] for hm in m[1]])})


def _one_head(a: Array) -> Array:
    """One head's weights ``(..., T_q, T_k)`` with a heads axis of 1: ``(..., 1, T_q, T_k)``."""
    if isinstance(a, np.ndarray):
        return np.expand_dims(a, -3)
    out: Array = namespace(a).expand_dims(a, axis=-3)
    return out


def _heads_axis(heads: list[Array]) -> Array:
    """The heads' weights ``(..., T_q, T_k)`` stacked on a heads axis: ``(..., h, T_q, T_k)``."""
    if isinstance(heads[0], np.ndarray):
        return np.stack(heads, axis=-3)
    out: Array = namespace(heads[0]).stack(heads, axis=-3)
    return out


def _fast(kind: str, d_model: int, n_heads: int, causal: bool, cross: bool, dtype: npt.DTypeLike) -> AnyLens:
    d, h = check_heads(kind, d_model, n_heads)
    dt = float_dtype(kind, dtype)
    causal = A.flag(kind, "causal", causal)
    name = _label(kind, d, h, causal, dt)

    body = chain(
        # _wiring's two stages, three linears side by side and three split_heads, fused (tested equal)
        projections(d, h, dt, cross=cross),
        # _attend's stages fused (tested equal); Q, K, V are the projections' arrays: kept without a copy
        _scaled_dot_product_attention(d // h, causal=causal, copy_input=False),
        merge_heads(h),
        _linear(d, d, dtype=dt, copy_input=False),  # its input is the attention's own array
    )

    def p_to(ap: AttentionParams) -> list[Any]:
        return [(ap.W_Q, ap.W_K, ap.W_V), (), (), ap.W_O]

    def p_from(dps: list[Any]) -> AttentionParams:
        dq, dk, dv = dps[0]
        return AttentionParams(dq, dk, dv, dps[-1])

    mha = reparam(body, name, p_to=p_to, p_from=p_from)
    return with_probes(mha, {"": lambda m: m[1][3]})  # the fused stage's residue (Q, K, V, A)


@constructor
def multi_head_attention(
    d_model: int, n_heads: int, *, causal: bool = False, dtype: npt.DTypeLike = np.float64
) -> AnyLens:
    """Fast multi-head self-attention, heads on an array axis: ``(B, T, d_model) -> (B, T, d_model)``.

    ``[m]`` is the chain's list of stage residues.

    Built as::

        chain(copy_l, copy_l @ id,                         # x -> ((x, x), x)
              (linear @ linear) @ linear,                  # ((Q, K), V), each (B, T, d_model)
              (split_heads @ split_heads) @ split_heads,   # each (B, h, T, d_k)
              scaled_dot_product_attention(d_k, causal),   # A V, (B, h, T, d_k)
              merge_heads(h), linear)                      # (B, T, d_model) -> W_O

    where :func:`scaled_dot_product_attention` is the pipeline
    ``attention_scores(d_k) @ id >> [causal_mask() @ id >>] softmax @ id >> weighted_sum()``
    fused into one lens, and the first four stages run as one lens too (one product
    with ``[W_Q | W_K | W_V]`` each way): both tested equal to what they fuse.

    Parameters :class:`AttentionParams` ``(W_Q, W_K, W_V, W_O)``, each
    ``(d_model, d_model)``; ``d_k = d_model / n_heads`` (not divisible: an
    error). Equal to :func:`multi_head_attention_faithful` through
    :func:`stack_heads`. ``causal=True`` masks the future.

    >>> mha = multi_head_attention(6, 4)
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: multi_head_attention: d_model must be divisible by the number of heads: ...
    """
    return _fast("multi_head_attention", d_model, n_heads, causal, False, dtype)


@constructor
def cross_attention(d_model: int, n_heads: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """Fast multi-head cross-attention: ``(x (B, T, d), context (B, S, d)) -> (B, T, d)``.

    Queries are projected from ``x``, keys and values from ``context`` (an
    encoder's output, say): the pipeline of :func:`multi_head_attention`
    behind the wiring ``(x, c) -> (x, (c, c)) -> ((x, c), c)``. Parameters
    :class:`AttentionParams`; attention weights ``(B, h, T, S)``.

    >>> ca = cross_attention(4, 2)
    >>> ca.fwd(ca.init(0), (np.ones((2, 3, 4)), np.ones((2, 7, 4))))[1].shape
    (2, 3, 4)
    """
    return _fast("cross_attention", d_model, n_heads, False, True, dtype)


# ------------------------------------------------------- the two layouts' iso


def stack_heads(fp: FaithfulAttentionParams) -> AttentionParams:
    """The faithful layout to the fast one: head matrices side by side, ``(d, d_k)·h -> (d, d)``.

    Linear, so it maps parameter deltas the same way.

    >>> fp = multi_head_attention_faithful(4, 2).init(0)
    >>> ap = stack_heads(fp)
    >>> ap.W_Q.shape, bool(np.all(ap.W_Q[:, 2:] == fp.heads[1].W_Q))
    ((4, 4), True)
    """
    heads, w_o = _faithful_layout(fp)
    join = np.concatenate if isinstance(w_o, np.ndarray) else namespace(w_o).concat
    return AttentionParams(
        join([hp.W_Q for hp in heads], axis=-1),
        join([hp.W_K for hp in heads], axis=-1),
        join([hp.W_V for hp in heads], axis=-1),
        w_o,
    )


def _matrix(fn: str, what: str, x: Any, shape: tuple[int, ...] | None, dt: Any) -> Array:
    """``x`` if it is a 2-D float array (of ``shape`` and dtype ``dt`` when given), else the error."""
    if not is_array(x):
        raise E.must_be(fn, what, "a numpy float array (a matrix)", E.describe_tree(x))
    if not is_float(x) or (dt is not None and x.dtype != dt):
        expected = "a float array" if dt is None else f"a {E.dtype_name(dt)} array like W_Q"
        raise E.lens_dtype_error(fn, what, expected, E.describe(x))
    if x.ndim != 2 or (shape is not None and x.shape != shape):
        expected = "a matrix" if shape is None else shape_str(numpy_dtype(x.dtype), shape)
        raise E.lens_shape_error(fn, what, expected, E.describe(x))
    matrix: Array = x
    return matrix


def _faithful_layout(fp: Any) -> tuple[list[HeadParams], Array]:
    """The heads and ``W_O`` of faithful parameters, checked: heads of one shape ``(d, d_k)``, ``W_O (h·d_k, d)``."""
    fn = "stack_heads"
    if not (isinstance(fp, tuple) and len(fp) == 2):
        raise E.must_be(fn, "parameters", "FaithfulAttentionParams(heads, W_O)", E.describe_tree(fp))
    heads_, w_o = fp
    if not (isinstance(heads_, (list, tuple)) and len(heads_) > 0):
        raise E.must_be(fn, "heads", "a non-empty list of HeadParams(W_Q, W_K, W_V)", E.describe_tree(heads_))
    heads: list[HeadParams] = []
    shape, dt = None, None
    for i, hp in enumerate(heads_):
        if not (isinstance(hp, tuple) and len(hp) == 3):
            raise E.must_be(fn, f"head {i}", "HeadParams(W_Q, W_K, W_V)", E.describe_tree(hp))
        for name, w in zip(HeadParams._fields, hp):
            w = _matrix(fn, f"head {i}'s {name}", w, shape, dt)
            shape, dt = w.shape, w.dtype
        heads.append(HeadParams(*hp))
    assert shape is not None
    d, dk = shape
    return heads, _matrix(fn, "W_O", w_o, (len(heads) * dk, d), dt)


def unstack_heads(ap: AttentionParams, n_heads: int) -> FaithfulAttentionParams:
    """The fast layout to the faithful one (the inverse of :func:`stack_heads`).

    Shapes: ``(d, d)`` matrices to ``h`` heads of ``(d, d / h)`` and ``W_O (d, d)``.

    >>> ap = multi_head_attention(4, 2).init(0)
    >>> stack_heads(unstack_heads(ap, 2)).W_V.shape
    (4, 4)
    """
    fn = "unstack_heads"
    if not (isinstance(ap, tuple) and len(ap) == 4):
        raise E.must_be(fn, "parameters", "AttentionParams(W_Q, W_K, W_V, W_O)", E.describe_tree(ap))
    w_q = _matrix(fn, "W_Q", ap[0], None, None)
    d = w_q.shape[0]
    ws = [_matrix(fn, name, w, (d, d), w_q.dtype) for name, w in zip(AttentionParams._fields, ap)]
    check_heads(fn, d, n_heads)
    if isinstance(ws[0], np.ndarray):
        parts = [np.split(w, n_heads, axis=-1) for w in ws[:3]]
    else:
        dk = d // n_heads
        parts = [[w[:, i * dk : (i + 1) * dk] for i in range(n_heads)] for w in ws[:3]]
    return FaithfulAttentionParams([HeadParams(copy(q), copy(k), copy(v)) for q, k, v in zip(*parts)], ws[3])
