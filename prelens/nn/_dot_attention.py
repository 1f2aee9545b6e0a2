"""Scaled dot-product attention in one lens: the fused form of scores ≫ (mask) ≫ softmax ≫ weighted sum.

The seeds' attention pipeline, after the projections, is four small lenses
(:mod:`prelens.nn._attention`)::

    ((Q, K), V) ─attention_scores ⊗ id─> (S, V) ─[causal_mask ⊗ id]─> ─softmax ⊗ id─> (A, V) ─weighted_sum─> A V

:func:`scaled_dot_product_attention` is that composite in one Python call per
pass, as :func:`~prelens.nn.feed_forward` is ``dense ≫ relu ≫ dense``: the
scores are an array it makes, so it masks them and turns them into weights in
place; the scale ``1/√d_k`` is applied to the smaller of the two factors; each
row's maximum and sum are the fast ones of :mod:`prelens.nn._rows`; and its
backward pass needs no mask (the weights of hidden keys are exactly 0, so are
their score deltas). Property tests prove it equal to the four lenses composed.

On arrays of another library (PyTorch, JAX, ``array_api_strict``) it runs the
array API standard only, and branch-free, so that ``jax.jit`` traces it: the
scores masked with ``where`` and shifted by each row's exact maximum (the path
numpy takes for huge or non-finite scores), rows of ``-inf`` lifted to
:data:`MASKED` by a ``where`` on "is any row's maximum not finite".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, device, dtype_name, is_array, is_float, namespace, namespace_name
from prelens.core import _args as A
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array, check_size, input_error, residue_error, shape_str
from prelens.nn._rows import row_max, row_sum

__all__ = ["MASKED", "scaled_dot_product_attention"]

#: The "minus infinity" of the mask: finite in float32 and float64 (so a row with every key
#: masked stays finite), far below any real score (so its ``exp`` underflows to exactly 0).
MASKED = -1e30

#: The residue: ``Q``, ``K``, ``V`` (copies) and the attention weights ``A``.
AttentionResidue = tuple[Array, Array, Array, Array]


def masked_value(dtype: np.dtype[Any]) -> Any:
    """What a hidden score becomes: :data:`MASKED`, or the lowest finite value of a narrower float
    (``dtype`` a numpy dtype; for an array of any library see :func:`masked_like`)."""
    return MASKED if dtype.itemsize >= 4 else np.finfo(dtype).min


def masked_like(x: Array) -> float:
    """:func:`masked_value` for the dtype of ``x``, an array of any library (a Python float).

    >>> masked_like(np.zeros(1, np.float32)), masked_like(np.zeros(1, np.float16))
    (-1e+30, -65504.0)
    """
    if isinstance(x, np.ndarray):
        return float(masked_value(x.dtype))
    info = namespace(x).finfo(x.dtype)
    return MASKED if info.bits >= 32 else float(info.min)


def keep_like(x: Array, tq: int, tk: int) -> Array:
    """:func:`causal_keep` as a boolean array of ``x``'s library and device (made with the
    standard's ``arange``, so that ``jax.jit`` folds it into a constant).

    >>> keep_like(np.zeros(1), 2, 3).astype(int)
    array([[1, 1, 0],
           [1, 1, 1]])
    """
    if isinstance(x, np.ndarray):
        return causal_keep(tq, tk)
    xp, dev = namespace(x), device(x)
    rows = xp.arange(tq, device=dev)[:, None]
    cols = xp.arange(tk, device=dev)[None, :]
    keep: Array = cols <= rows + (tk - tq)
    return keep


def float_like(x: Any, ref: Array) -> bool:
    """``x`` is an array of ``ref``'s library (numpy or not) and of its dtype."""
    if isinstance(ref, np.ndarray):
        return isinstance(x, np.ndarray) and x.dtype == ref.dtype
    return not isinstance(x, np.ndarray) and is_array(x) and x.dtype == ref.dtype


def output_delta_error(lens: str, da: Any, like: Array, shape: tuple[int, ...]) -> E.PrelensError:
    """The error for an output delta that is not an array of ``like``'s library and dtype, of ``shape``.

    >>> output_delta_error("weighted_sum", np.zeros(2), np.zeros(1), (2, 3))
    ShapeError('weighted_sum: output delta: expected f64[2,3], got f64[2]')
    """
    dt = numpy_dtype(like.dtype)
    expected = shape_str(dt, shape)
    if is_array(da) and isinstance(da, np.ndarray) != isinstance(like, np.ndarray):  # another library's
        lib = "numpy" if isinstance(like, np.ndarray) else namespace_name(namespace(like))
        return E.must_be(lens, "output delta", f"a {lib} array {expected}", E.describe(da))
    return input_error(lens, "output delta", da, expected, dt)


def numpy_dtype(dt: Any) -> np.dtype[Any]:
    """A numpy dtype named as the dtype ``dt`` of any library (for the error messages).

    >>> numpy_dtype(np.dtype(np.float32))
    dtype('float32')
    """
    return dt if isinstance(dt, np.dtype) else np.dtype(dtype_name(dt))


def swap_heads_axes(n_lead: int) -> tuple[int, ...]:
    """The order of axes that swaps the two after ``n_lead`` leading ones: ``(..., T, h, d) -> (..., h, T, d)``.

    >>> swap_heads_axes(1)
    (0, 2, 1, 3)
    """
    return (*range(n_lead), n_lead + 1, n_lead, n_lead + 2)


def swap_last(x: Array) -> Array:
    """``x`` with its last two axes swapped (numpy: ``swapaxes``, a view; others: ``.mT``)."""
    if isinstance(x, np.ndarray):
        return x.swapaxes(-1, -2)
    return x.mT


def causal_keep(tq: int, tk: int) -> Array:
    """``keep[i, j]``: key ``j`` is not after query ``i`` (the last ``T_q`` of ``T_k`` positions).

    >>> causal_keep(2, 3).astype(int)
    array([[1, 1, 0],
           [1, 1, 1]])
    """
    return np.tri(tq, tk, tk - tq, dtype=bool)


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
    """:func:`scaled_dot_product_attention`. ``copy_input=False`` is for the attention lenses, which
    made ``Q``, ``K`` and ``V`` themselves (``split_heads``'s outputs): the residue keeps them without a
    copy, as no caller holds them."""
    dk = check_size("scaled_dot_product_attention", "d_k", d_k)
    causal = A.flag("scaled_dot_product_attention", "causal", causal)
    name = f"scaled_dot_product_attention(d_k={dk}{', causal' if causal else ''})"
    scale = 1.0 / math.sqrt(dk)  # a Python float: it never up-casts float32
    masks: dict[tuple[int, int, np.dtype[Any]], tuple[Array, Array]] = {}

    def mask(tq: int, tk: int, dt: np.dtype[Any]) -> tuple[Array, Array]:
        """``(hide, keep)`` of one shape and dtype: ``hide`` is 0 where kept and MASKED where hidden,
        ``keep`` 1 where kept and 0 where hidden (both read-only, made once)."""
        key = (tq, tk, dt)
        found = masks.get(key)
        if found is None:
            kept = causal_keep(tq, tk)
            found = np.where(kept, dt.type(0), dt.type(masked_value(dt))), kept.astype(dt)
            for a in found:
                a.flags.writeable = False
            if len(masks) < 64:
                masks[key] = found
        return found

    def fwd(p: tuple[()], qkv: tuple[tuple[Array, Array], Array]) -> tuple[AttentionResidue, Array]:
        q, k, v = _inputs(name, dk, qkv)
        if not isinstance(q, np.ndarray):  # another library: the standard's functions, branch-free
            a = _generic_weights(q, k, causal, scale)
            kept_ = (copy(q), copy(k), copy(v)) if copy_input else (q, k, v)
            return (*kept_, a), a @ v
        qs = np.multiply(q, scale)  # scale Q, the smaller factor (T_q·d_k < T_q·T_k)
        s = qs @ _transposed(k)
        tq, tk = s.shape[-2:]
        # The softmax's shift, per row: not the row's maximum (a slow search over short rows) but
        # Cauchy-Schwarz's bound on it, |Q_i/√d_k|·max_j |K_j| over the keys row i sees (two passes
        # over Q and K, the small arrays; a running maximum under the mask, so that no row depends
        # on a later key even in its rounding). exp then never overflows; a bound so far above a
        # row's maximum that the row's sum underflows (below 1e-18), or scores beyond 1e13 (where
        # s + MASKED stops being MASKED exactly), or a row whose keys are all hidden, send the pass
        # to the exact maximum below.
        shift = row_sum(qs * qs)
        kk = row_sum(k * k)
        if causal and tq <= tk:
            shift *= np.maximum.accumulate(kk, axis=-1)[..., tk - tq :]
        else:
            shift *= row_max(kk)[..., None]
        np.sqrt(shift, out=shift)
        fast = s.dtype.itemsize >= 4 and not (causal and tq > tk) and bool(np.all(shift < 1e13))
        if fast:
            if causal:
                s += mask(tq, tk, s.dtype)[0]  # in place on the scores this lens made
            s -= shift[..., None]
            _exp(s, causal, tq, tk, mask)
            total = row_sum(s)
            fast = not total.size or total.min() >= 1e-18
        if not fast:
            s = _exact_scores(qs, k, causal, tq, tk)
            s -= row_max(s)[..., None]
            np.exp(s, out=s)
            total = row_sum(s)
        s /= total[..., None]
        kept = (q.copy(), k.copy(), v.copy()) if copy_input else (q, k, v)  # never the caller's arrays
        return (*kept, s), _weighted(s, v)

    def bwd(m: AttentionResidue, do: Array) -> tuple[tuple[()], tuple[tuple[Array, Array], Array]]:
        try:
            q, k, v, a = m
            ok = (
                all(x.dtype == a.dtype for x in (q, k, v))
                and is_float(a)
                and q.ndim == k.ndim == v.ndim == a.ndim >= 2
                and q.shape[-1] == dk == k.shape[-1]
                and a.shape == (*q.shape[:-1], k.shape[-2])
                and v.shape[:-1] == k.shape[:-1]
                and q.shape[:-2] == k.shape[:-2]
            )
        except (TypeError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise residue_error(name, m)
        out_shape = (*a.shape[:-1], v.shape[-1])
        if not (float_like(do, a) and do.shape == out_shape):
            raise output_delta_error(name, do, a, out_shape)
        if not isinstance(a, np.ndarray):
            return (), _generic_deltas(q, k, v, a, do, causal, scale)
        dv = a.swapaxes(-1, -2) @ do
        ds = do @ _transposed(v)  # dA; then, in place, dS = A ⊙ (dA − Σ_j dA ⊙ A)
        ds -= np.einsum("...ij,...ij->...i", ds, a)[..., None]  # the row sums, without a temporary
        ds *= a
        tq, tk = a.shape[-2:]
        if causal and tq > tk:  # rows with every key hidden have uniform weights, and no score delta
            ds *= mask(tq, tk, ds.dtype)[1]
        dq = ds @ k
        dq *= scale
        dk_ = ds.swapaxes(-1, -2) @ q
        dk_ *= scale
        return (), ((dq, dk_), dv)

    return PreLens(fwd, bwd, name)


def _generic_weights(q: Array, k: Array, causal: bool, scale: float) -> Array:
    """The attention weights on another library's arrays: the exact path, without a branch on values.

    As numpy's exact path: hidden scores replaced by the mask value, and, when some
    row's maximum is not finite (a row of ``-inf``), every score lifted to
    :data:`MASKED`; then each row shifted by its maximum, ``exp``, normalised.
    """
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


def _generic_deltas(
    q: Array, k: Array, v: Array, a: Array, do: Array, causal: bool, scale: float
) -> tuple[tuple[Array, Array], Array]:
    """``((dQ, dK), dV)`` on another library's arrays: the numpy backward pass, without ``out=``."""
    xp = namespace(a)
    da = do @ v.mT
    ds = (da - xp.sum(da * a, axis=-1, keepdims=True)) * a  # dS = A ⊙ (dA − Σ_j dA ⊙ A)
    tq, tk = a.shape[-2:]
    if causal and tq > tk:  # rows with every key hidden have uniform weights, and no score delta
        ds = ds * xp.astype(keep_like(ds, tq, tk), ds.dtype)
    return ((ds @ k) * scale, (ds.mT @ q) * scale), a.mT @ do


def _exp(s: Array, causal: bool, tq: int, tk: int, mask: Any) -> None:
    """``exp`` in place on shifted scores.

    float64 exp is up to 8x slower on arguments below -708 (where it underflows), and
    every hidden score is one: under a causal mask exp runs on arguments clamped at
    -700, and the hidden weights are then set to exactly 0 (a kept score 700 below its
    row's shift gets e^-700 ≈ 1e-304 instead of a smaller number: 0 to any use).
    """
    if causal and s.dtype == np.float64:
        np.maximum(s, -700.0, out=s)
        np.exp(s, out=s)
        s *= mask(tq, tk, s.dtype)[1]
    else:
        np.exp(s, out=s)


def _transposed(x: Array) -> Array:
    """``x`` with its last two axes swapped, for the second factor of a product: contiguous when
    there are leading axes (numpy's stacked ``matmul`` runs a transposed second factor at half
    speed: 44 µs on ``(16, 4, 32, 16)`` float32 keys, against 23 for the product and 11 for the copy).

    >>> _transposed(np.arange(6.0).reshape(1, 3, 2)).flags.c_contiguous
    True
    """
    return np.ascontiguousarray(x.swapaxes(-1, -2)) if x.ndim > 2 else x.swapaxes(-1, -2)


def _weighted(a: Array, v: Array) -> Array:
    """``A V``; with heads on an axis ``(..., h, T, d_v)``, written into a ``(..., T, h, d_v)`` array and
    returned as its view, so that merging the heads after it is a reshape, not a copy."""
    if a.ndim < 3:
        out: Array = a @ v
        return out
    *lead, h, tq, _ = a.shape
    merged = np.empty((*lead, tq, h, v.shape[-1]), a.dtype)
    view = merged.swapaxes(-2, -3)
    np.matmul(a, v, out=view)
    return view


def _exact_scores(qs: Array, k: Array, causal: bool, tq: int, tk: int) -> Array:
    """The scores with hidden ones replaced (not shifted) by the mask value, and rows of ``-inf`` lifted."""
    s = qs @ _transposed(k)
    if causal:
        np.copyto(s, s.dtype.type(masked_value(s.dtype)), where=~causal_keep(tq, tk))
    if not np.isfinite(row_max(s)).all():  # rows of -inf: weights as for MASKED (as softmax does)
        np.maximum(s, -1e30, out=s)
    return s


def _inputs(name: str, dk: int, qkv: Any) -> tuple[Array, Array, Array]:
    """``((Q, K), V)``, checked: float arrays of one dtype, ``d_k`` features for Q and K, matching axes."""
    try:
        qk, v = qkv
        q, k = qk
        if isinstance(q, np.ndarray):  # numpy: the checks inline (this lens runs per layer per step)
            same = isinstance(k, np.ndarray) and isinstance(v, np.ndarray) and q.dtype.kind == "f"
            same = same and q.dtype == k.dtype == v.dtype
        else:  # another library: float arrays of q's library and dtype
            same = is_float(q) and float_like(k, q) and float_like(v, q)
        ok = (
            isinstance(qk, tuple)  # as attention_scores takes (Q, K)
            and same
            and q.ndim == k.ndim == v.ndim >= 2
            and q.shape[-1] == dk == k.shape[-1]
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and k.shape[-2] == v.shape[-2] >= 1
        )
    except (TypeError, ValueError):
        ok = False
    if ok:
        return q, k, v
    raise E.lens_shape_error(
        name,
        "input ((Q, K), V)",
        f"Q (..., T_q, {dk}), K (..., T_k, {dk}), V (..., T_k, d_v) with T_k >= 1, of one float dtype "
        "and the same leading axes",
        E.describe_tree(qkv),
    )
