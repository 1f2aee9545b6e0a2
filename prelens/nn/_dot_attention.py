"""Scaled dot-product attention in one lens: the fused form of scores ≫ (mask) ≫ softmax ≫ weighted sum.

:func:`scaled_dot_product_attention` is :mod:`prelens.nn._attention`'s four small lenses after the
projections, ``((Q, K), V) -> A V``, in one Python call per pass (tested equal). Its backward pass is one
formula for every library (:func:`_deltas`), its forward pass the array API standard's, branch-free for
``jax.jit`` (:func:`_weights`). numpy has paths of its own, each measured to pay (docs/performance.md,
"which numpy path remains, and why"): the forward pass in place (:func:`_numpy_weights`), the backward
pass in chunks of :data:`CHUNK_BYTES`, and under a causal mask both in blocks of :data:`ROWS` query rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, device, namespace
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like, Same
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array, check_size
from prelens.nn._rows import row_max, row_sum

__all__ = ["MASKED", "scaled_dot_product_attention"]

#: The "minus infinity" of the mask: finite in float32 and float64 (so a row with every key
#: masked stays finite), far below any real score (so its ``exp`` underflows to exactly 0).
MASKED = -1e30

#: The residue: ``Q``, ``K``, ``V`` (copies) and the attention weights ``A``.
AttentionResidue = tuple[Array, Array, Array, Array]


def masked_value(dtype: np.dtype[Any]) -> Any:
    """What a hidden score of the numpy ``dtype`` becomes: :data:`MASKED`, or a narrower float's lowest value."""
    return MASKED if dtype.itemsize >= 4 else np.finfo(dtype).min


def masked_like(x: Array) -> float:
    """:func:`masked_value` for the dtype of ``x``, an array of any library (a Python float).

    >>> masked_like(np.zeros(1, np.float32)), masked_like(np.zeros(1, np.float16))
    (-1e+30, -65504.0)
    """
    info = namespace(x).finfo(x.dtype)
    return MASKED if info.bits >= 32 else float(info.min)


def keep_like(x: Array, tq: int, tk: int) -> Array:
    """``keep[i, j]``: key ``j`` is not after query ``i`` (the last ``T_q`` of ``T_k`` positions), on ``x``'s
    library and device (numpy: :func:`_mask`'s; others: ``arange``'s, which ``jax.jit`` folds to a constant).

    >>> keep_like(np.zeros(1), 2, 3).astype(int)
    array([[1, 1, 0],
           [1, 1, 1]])
    """
    if isinstance(x, np.ndarray):
        return _mask(tq, tk)
    xp, dev = namespace(x), device(x)
    keep: Array = xp.arange(tk, device=dev)[None, :] <= xp.arange(tq, device=dev)[:, None] + (tk - tq)
    return keep


@constructor
def scaled_dot_product_attention(d_k: int, *, causal: bool = False) -> AnyLens:
    """``((Q, K), V) -> softmax(mask(Q Kᵀ / √d_k)) V``, the attention pipeline fused into one lens.

    Equal to ``chain(attention_scores(d_k) @ id, [causal_mask() @ id,] softmax @ id, weighted_sum())``
    (tested), in one Python call per pass. Shapes: ``Q (..., T_q, d_k)``,
    ``K (..., T_k, d_k)``, ``V (..., T_k, d_v)`` with the same leading axes (batch,
    heads) and one float dtype ``-> (..., T_q, d_v)``. Parameter-free. Residue
    ``(Q, K, V, A)`` (copies of the inputs, and ``A``, the attention weights,
    rows summing to 1). With ``causal=True`` key ``j`` is hidden from query ``i``
    when ``j > i + (T_k − T_q)``: its score becomes :data:`MASKED` and its
    weight exactly 0. Backward: ``dA = dO Vᵀ``, ``dV = Aᵀ dO``,
    ``dS = A ⊙ (dA − Σ_j dA ⊙ A)``, ``dQ = dS K / √d_k``, ``dK = dSᵀ Q / √d_k``.

    >>> attend = scaled_dot_product_attention(2, causal=True)
    >>> attend
    scaled_dot_product_attention(d_k=2, causal)
    >>> q = k = np.ones((1, 2, 2))
    >>> v = np.array([[[1.0], [3.0]]])
    >>> attend.fwd((), ((q, k), v))[1]
    array([[[1.],
            [2.]]])
    """
    return _scaled_dot_product_attention(d_k, causal=causal)


def _scaled_dot_product_attention(d_k: int, *, causal: bool = False, copy_input: bool = True) -> AnyLens:
    """``copy_input=False``: for the attention lenses, whose residue keeps the ``Q``, ``K``, ``V`` they made."""
    dk = check_size("scaled_dot_product_attention", "d_k", d_k)
    causal = A.flag("scaled_dot_product_attention", "causal", causal)
    name = f"scaled_dot_product_attention(d_k={dk}{', causal' if causal else ''})"
    scale = 1.0 / math.sqrt(dk)  # a Python float: it never up-casts float32

    def fwd(p: tuple[()], qkv: tuple[tuple[Array, Array], Array]) -> tuple[AttentionResidue, Array]:
        qk, v = qkv
        if type(qkv) is not tuple or type(qk) is not tuple:  # what the pattern cannot say: tuples, T_k >= 1 keys
            raise E.must_be(name, "input", "((Q, K), V), tuples", E.describe_tree(qkv))
        q, k = qk
        if not (k.shape[-2] == v.shape[-2] >= 1):
            expected = "K (..., T_k, d_k) and V (..., T_k, d_v) with the same T_k >= 1 keys"
            raise E.lens_shape_error(name, "input", expected, f"K {E.describe(k)} and V {E.describe(v)}")
        if type(q) is np.ndarray and causal and q.size and _row_blocks(q.shape[-2], k.shape[-2]):
            a, out = _causal_attention(q, k, v, scale)
        elif type(q) is np.ndarray:
            a = _numpy_weights(q, k, causal, scale)
            out = np.matmul(a, v, out=_weighted_buffer(a, v))
        else:
            a = _weights(q, k, causal, scale)
            out = a @ v
        kept = (copy(q), copy(k), copy(v)) if copy_input else (q, k, v)  # never the caller's arrays
        return (*kept, a), out

    def bwd(m: AttentionResidue, do: Array) -> tuple[tuple[()], tuple[tuple[Array, Array], Array]]:
        q, k, v, a = m
        if type(a) is not np.ndarray:
            return (), _deltas(q, k, v, a, do, causal, scale)
        if a.ndim > 2 and a.nbytes > CHUNK_BYTES:
            return (), _chunked_deltas(q, k, v, a, do, causal, scale)
        return (), _numpy_deltas(q, k, v, a, do, causal, scale)

    f, b = Same("F"), Same("B")  # one float dtype (and library), the same leading axes
    qk, rows = Arr(f, b, None, dk), Arr(f, b, None, None)
    expects = Expects(params=(), input=((qk, qk), rows), residue=(qk, qk, rows, rows), delta=Like(_output_like))
    return PreLens(fwd, bwd, name, expects=expects)


#: The backward pass on numpy holds ``dS`` for at most this many bytes at a time (``(4, 4, 512, 512)`` float64: one
#: matrix of 16). Smaller would not lower a long-sequence LM step's peak, its feed-forward's (docs/performance.md).
CHUNK_BYTES = 1 << 21


def _output_like(m: AttentionResidue) -> tuple[Array, tuple[int, ...]]:
    """The output delta's template and shape, from a residue ``(Q, K, V, A)`` whose parts agree (or ValueError)."""
    q, k, v, a = m
    if not (a.shape == (*q.shape[:-1], k.shape[-2]) and v.shape[-2] == k.shape[-2]):  # the rest is declared
        raise ValueError("a residue whose parts disagree")
    return a, (*a.shape[:-1], v.shape[-1])


def _weights(q: Array, k: Array, causal: bool, scale: float) -> Array:
    """The attention weights, on arrays of any library: the array API standard's functions, branch-free (rows of
    ``-inf`` lifted to :data:`MASKED`, as numpy's exact path does)."""
    xp = namespace(q)
    s = (q * scale) @ k.mT
    if causal:
        s = xp.where(keep_like(s, *s.shape[-2:]), s, masked_like(s))
    top = xp.max(s, axis=-1, keepdims=True)
    finite = xp.all(xp.isfinite(top))
    s = xp.where(finite, s, xp.maximum(s, MASKED))
    top = xp.where(finite, top, xp.maximum(top, MASKED))  # the lifted rows' maxima, without a second pass
    e = xp.exp(s - top)
    weights: Array = e / xp.sum(e, axis=-1, keepdims=True)
    return weights


def _deltas(
    q: Array, k: Array, v: Array, a: Array, do: Array, causal: bool, scale: float
) -> tuple[tuple[Array, Array], Array]:
    """``((dQ, dK), dV)``, on arrays of any library; ``dS`` is made here and updated in place (a JAX array is
    rebound, not written): one ``T×T`` array at a time."""
    xp = namespace(a)
    ds = do @ _transposed(v)  # dA
    ds -= xp.vecdot(ds, a)[..., None]  # the row sums of dA ⊙ A, without a temporary (as fast as einsum)
    ds *= a
    tq, tk = a.shape[-2:]
    if causal and tq > tk:  # rows with every key hidden have uniform weights, and no score delta
        ds = xp.where(keep_like(ds, tq, tk), ds, xp.zeros_like(ds))
    dq = ds @ k
    dq *= scale
    dk_ = ds.mT @ q
    dk_ *= scale
    return (dq, dk_), a.mT @ do


def _chunked_deltas(
    q: Array, k: Array, v: Array, a: Array, do: Array, causal: bool, scale: float
) -> tuple[tuple[Array, Array], Array]:
    """:func:`_deltas` of numpy arrays in blocks over the leading axes (the first ones an index at a time
    while one index is over :data:`CHUNK_BYTES`): ``dS`` is then one block's, not the whole ``(..., T_q, T_k)``."""
    dq, dk_, dv = (np.empty(x.shape, x.dtype) for x in (q, k, v))
    cut = 1
    while cut < a.ndim - 2 and a[(0,) * cut].nbytes > CHUNK_BYTES:
        cut += 1
    step = max(1, CHUNK_BYTES // a[(0,) * cut].nbytes)
    for lead in np.ndindex(a.shape[: cut - 1]):
        for i in range(0, a.shape[cut - 1], step):
            at = (*lead, slice(i, i + step))
            (dq[at], dk_[at]), dv[at] = _numpy_deltas(q[at], k[at], v[at], a[at], do[at], causal, scale)
    return (dq, dk_), dv


# ---------------------------------------------------------------- numpy under a causal mask, in blocks of rows

#: Under a causal mask numpy's passes run in blocks of this many query rows once ``T_q`` is at least twice it,
#: each block against the keys it sees: the hidden triangle's work is skipped and a block stays in cache.
ROWS = 128
#: The bytes of scores :func:`_causal_attention` works on at a time: about a core's L2 cache.
BLOCK_BYTES = 1 << 20


def _row_blocks(tq: int, tk: int) -> list[tuple[int, int, int]]:
    """``(r0, r1, c)`` for each block of query rows ``r0:r1`` and the ``c`` keys they see (none when ``T_q`` is
    under ``2·ROWS``, or above ``T_k``, where a row may see no key)."""
    if tq < 2 * ROWS or tq > tk:
        return []
    return [(r0, min(r0 + ROWS, tq), min(r0 + ROWS, tq) + tk - tq) for r0 in range(0, tq, ROWS)]


def _causal_attention(q: Array, k: Array, v: Array, scale: float) -> tuple[Array, Array]:
    """``A`` and ``A V`` of numpy arrays under a causal mask, a block of rows (and a few first indices) at a time,
    the hidden rest of ``A``'s rows set to 0; the factors are made once for all blocks (a shift is a row's)."""
    d, tq, tk = q.shape[-1], q.shape[-2], k.shape[-2]
    a = np.empty((*q.shape[:-1], tk), q.dtype)
    out = _weighted_buffer(a, v)
    n = q.shape[0] if q.ndim > 2 else 1
    step = max(1, BLOCK_BYTES * n * tq // (ROWS * a.nbytes))  # first indices per block
    for i in range(0, n, step):
        at = slice(i, i + step) if q.ndim > 2 else slice(None)
        qa, ka, shift = _factors(q[at], k[at], True, scale)
        ai, oi = a[at], out[at]
        for r0, r1, c in _row_blocks(tq, tk):
            rows = ai[..., r0:r1, :]
            _weights_into(rows[..., :c], qa[..., r0:r1, :], ka[..., :c], shift[..., r0:r1], d, True)
            rows[..., c:] = 0
            np.matmul(rows[..., :c], v[at][..., :c, :], out=oi[..., r0:r1, :])
    return a, out


def _numpy_deltas(
    q: Array, k: Array, v: Array, a: Array, do: Array, causal: bool, scale: float
) -> tuple[tuple[Array, Array], Array]:
    """:func:`_deltas` of numpy arrays; under a causal mask in blocks of rows (:func:`_row_blocks`), each block's
    deltas those of the keys it sees, summed into ``dK`` and ``dV``."""
    blocks = _row_blocks(q.shape[-2], k.shape[-2]) if causal else []
    if not blocks:
        return _deltas(q, k, v, a, do, causal, scale)
    dq, dk_, dv = np.empty_like(q), np.zeros_like(k), np.zeros_like(v)
    for r0, r1, c in blocks:
        (dq[..., r0:r1, :], dk_c), dv_c = _deltas(
            q[..., r0:r1, :], k[..., :c, :], v[..., :c, :], a[..., r0:r1, :c], do[..., r0:r1, :], True, scale
        )
        dk_[..., :c, :] += dk_c
        dv[..., :c, :] += dv_c
    return (dq, dk_), dv


# ---------------------------------------------------------------- numpy's forward pass

#: Read-only masks, made once per shape and shared by every lens (see :func:`_mask`).
_MASKS: dict[tuple[int, int, np.dtype[Any] | None], Array] = {}


def _mask(tq: int, tk: int, dt: np.dtype[Any] | None = None) -> Array:
    """:func:`keep_like`'s boolean mask (``dt`` None: multiplied into float64 weights), or the ``hide`` mask of the
    float dtype ``dt``, 0 where kept and the mask value where hidden (added to float32 scores); read-only.

    >>> _mask(2, 2, np.dtype(np.float32))
    array([[ 0.e+00, -1.e+30],
           [ 0.e+00,  0.e+00]], dtype=float32)
    """
    key = (tq, tk, dt)
    found = _MASKS.get(key)
    if found is None:
        found = np.tri(tq, tk, tk - tq, dtype=bool)
        if dt is not None:
            found = np.where(found, dt.type(0), dt.type(masked_value(dt)))
        found.flags.writeable = False
        if len(_MASKS) < 16:  # a few sequence lengths in a program: keep them; never grow without bound
            _MASKS[key] = found
    return found


#: From this many keys on, numpy's forward pass subtracts the softmax's shift inside the scores' product
#: (docs/performance.md: on shorter rows the extra column of the product costs more than the pass it saves).
FOLD_KEYS = 128


def _numpy_weights(q: Array, k: Array, causal: bool, scale: float) -> Array:
    """:func:`_weights` of numpy arrays: the scores' product turned into the weights in place."""
    s = np.empty((*q.shape[:-1], k.shape[-2]), q.dtype)
    _weights_into(s, *_factors(q, k, causal, scale), q.shape[-1], causal)
    return s


def _factors(q: Array, k: Array, causal: bool, scale: float) -> tuple[Array, Array, Array]:
    """The factors of the scores' product, ``Q/√d_k`` and ``Kᵀ`` (from :data:`FOLD_KEYS` keys on with a ``−shift``
    column and a ones row, so that the product subtracts the shift), and the softmax's shift per row.

    The shift is Cauchy-Schwarz's bound on a row's maximum, ``|Q_i/√d_k|·max_j |K_j|`` over the keys row ``i``
    sees (a running maximum: no row depends on a later key, even in its rounding); ``exp`` never overflows."""
    d, tq, tk = q.shape[-1], q.shape[-2], k.shape[-2]
    fold = tk >= FOLD_KEYS
    qa, ka = np.empty((*q.shape[:-1], d + fold), q.dtype), np.empty((*k.shape[:-2], d + fold, tk), k.dtype)
    qs = qa[..., :d]
    np.multiply(q, scale, out=qs)  # scale Q, the smaller factor (T_q·d_k < T_q·T_k)
    ka[..., :d, :] = k.swapaxes(-1, -2)
    shift = row_sum(qs * qs)
    kk = row_sum(k * k)
    if causal and tq <= tk:
        shift *= np.maximum.accumulate(kk, axis=-1)[..., tk - tq :]
    else:
        shift *= row_max(kk)[..., None]
    np.sqrt(shift, out=shift)
    if fold:
        np.negative(shift, out=qa[..., d])
        ka[..., d, :] = 1
    return qa, ka, shift


def _weights_into(s: Array, qa: Array, ka: Array, shift: Array, d: int, causal: bool) -> None:
    """The weights of ``qa``'s rows against ``ka``'s columns (:func:`_factors`), written into ``s``. A row sum
    below 1e-18, scores beyond 1e13 (where ``s + MASKED`` is no longer ``MASKED``) or a wholly hidden row send
    the pass to the exact maximum."""
    tq, tk = s.shape[-2:]
    fast = s.dtype.itemsize >= 4 and not (causal and tq > tk) and bool(np.all(shift < 1e13))
    if fast:
        np.matmul(qa, ka, out=s)
        if qa.shape[-1] == d:  # else the product has subtracted the shift
            s -= shift[..., None]
        _exp(s, causal)
        total = row_sum(s)
        fast = not total.size or total.min() >= 1e-18
    if not fast:
        np.matmul(qa[..., :d], ka[..., :d, :], out=s)
        if causal:
            part, (a, b) = _hidden_part(s)
            np.copyto(part, s.dtype.type(masked_value(s.dtype)), where=~_mask(a, b))
        if not np.isfinite(row_max(s)).all():  # rows of -inf: weights as for MASKED (as softmax does)
            np.maximum(s, MASKED, out=s)
        s -= row_max(s)[..., None]
        np.exp(s, out=s)
        total = row_sum(s)
    s /= total[..., None]


def _exp(s: Array, causal: bool) -> None:
    """``exp`` in place on shifted scores, hidden ones (under a causal mask) to exactly 0: float32 adds the mask
    value first; float64 (whose exp is up to 8x slower where it underflows) clips to [-700, 700], then zeroes."""
    if not causal:
        np.exp(s, out=s)
        return
    part, (a, b) = _hidden_part(s)
    if s.dtype == np.float64:
        np.clip(s, -700.0, 700.0, out=s)
        np.exp(s, out=s)
        part *= _mask(a, b)  # a bool mask: as fast as a float one, 1/8 of its bytes
    else:
        part += _mask(a, b, s.dtype)
        np.exp(s, out=s)


def _hidden_part(s: Array) -> tuple[Array, tuple[int, int]]:
    """The part of causal scores ``s (..., T_q, T_k)`` that holds every hidden one (with ``T_q <= T_k`` the last
    ``T_q`` columns), and its mask's shape."""
    tq, tk = s.shape[-2:]
    return (s[..., tk - tq :], (tq, tq)) if tq <= tk else (s, (tq, tk))


def _transposed(x: Array) -> Array:
    """``x`` with its last two axes swapped, for the second factor of a product; on numpy contiguous when there
    are leading axes (a stacked ``matmul`` runs a transposed second factor at half speed, docs/performance.md).

    >>> _transposed(np.arange(6.0).reshape(1, 3, 2)).flags.c_contiguous
    True
    """
    if type(x) is not np.ndarray:
        return x.mT
    return np.ascontiguousarray(x.swapaxes(-1, -2)) if x.ndim > 2 else x.swapaxes(-1, -2)


def _weighted_buffer(a: Array, v: Array) -> Array:
    """An empty ``(..., T_q, d_v)`` array for ``A V``; with heads on an axis a view of ``(..., T_q, h, d_v)``,
    so that merging the heads after it is a reshape, not a copy."""
    if a.ndim < 3:
        return np.empty((*a.shape[:-1], v.shape[-1]), a.dtype)
    *lead, h, tq, _ = a.shape
    return np.empty((*lead, tq, h, v.shape[-1]), a.dtype).swapaxes(-2, -3)
