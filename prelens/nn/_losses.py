"""Loss lenses on whole arrays: the post's squared distance, mean squared error, cross-entropies.

As in the post's ``lossL``, the target is the loss lens's *parameter* and the network's output its input;
the output is a scalar (a numpy scalar of the input's dtype; elsewhere a 0-d array of the input's library)
and training seeds ``da = 1``. ``model >> loss`` has parameters ``(target, model_params)``.

``squared_distance`` sums over every axis (the post's); ``mse`` and the cross-entropies are means (PyTorch's and
Keras's defaults: their step sizes do not change with the batch size); ``mse = (2 / K) · squared_distance``
exactly, over the ``K`` entries. Each constant below states its formula.

The input and the parameter must be arrays of one library (:func:`token_cross_entropy` also takes numpy
labels: they are data, moved to the logits' library). The one check that needs values (labels in range)
runs only on values that are known, so a JAX ``jit`` traces the losses.

>>> import numpy as np
>>> g, s = np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]])
>>> float(squared_distance.fwd(g, s)[1]), float(mse.fwd(g, s)[1])
(0.5, 0.5)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import (
    constant_like,
    copy,
    device,
    dtype_kind,
    is_array,
    is_concrete,
    namespace,
    same_library,
)
from prelens.core._check import Arr, Expects, Same
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array, out_of_range, scalar_delta
from prelens.nn._rows import row_max, row_sum

__all__ = ["mse", "softmax_cross_entropy", "squared_distance", "token_cross_entropy"]

Scalar = Any  #: a numpy float scalar of the input's dtype (``np.float64`` or ``np.float32``), or a 0-d array
PairResidue = tuple[Array, Array]

#: The ground truth is an array like the input (library, dtype, shape); labels are integers of the
#: logits' library (or numpy, for the token loss) and shape without the last axis.
T, B, INT = Same("T"), Same("B"), Same("I", "iu")
_LIKE_INPUT = Arr(T, B)
_LOGITS, _LABELS, _DATA_LABELS = Arr(T, B, "classes"), Arr(INT, B), Arr(INT, Same("B", data=True))


def _factor(lens: str, da: Any, like: Any) -> Any:
    """The output delta of the loss ``lens`` (a real number or 0-d array, else an error) as a factor for
    ``like``'s arrays: a number stays a Python float (weakly typed in every library); a 0-d array, perhaps
    traced, becomes ``like``'s dtype."""
    if type(da) is float:  # training's seed
        return da
    da = scalar_delta(lens, da)
    if is_array(da) and same_library(da, like):
        return namespace(like).astype(da, like.dtype)
    return float(da)


def _count(shape: tuple[int, ...]) -> int:
    """The number of entries of an array of ``shape``, at least 1 (the divisor of a mean)."""
    return max(math.prod(shape), 1)


def _total(x: Any) -> Any:
    """``Σ x`` over every axis: numpy's method (``np.sum`` costs a wrapper call more), else the namespace's sum."""
    return x.sum() if type(x) is np.ndarray else namespace(x).sum(x)


def _sum_squares(d: Any) -> Any:
    """``Σ d²`` over every axis: numpy's ``vdot`` (one BLAS call, no temporary), else the namespace's sum."""
    if isinstance(d, (np.ndarray, np.generic)):
        return np.vdot(d, d)  # type: ignore[arg-type]
    return namespace(d).sum(d * d)


def _sq_fwd(g: Array, s: Array) -> tuple[PairResidue, Scalar]:
    return (copy(g), copy(s)), 0.5 * _sum_squares(s - g)  # a residue never aliases the caller's arrays


def _sq_bwd(m: PairResidue, da: Any) -> tuple[Array, Array]:
    g, s = m
    ds = (s - g) * _factor("squared_distance", da, s)
    return -ds, ds  # (dg, ds) = (−ds, da·(s − g))


#: The post's loss: ``L = ½ Σ (s − g)²`` over every axis (batch and outputs), with the ground truth ``g``
#: (of the shape of ``s``) as the parameter. Haskell: ``lossL :: PreLens D D ([V], [V]) ([V], [V]) [V] [V] [V] [V]``.
#: Forward ``(g, s) -> ((g, s), L)``; backward ``((g, s), da) -> (−ds, ds)``, ``ds = da (s − g)``.
squared_distance: PreLens[Scalar, Scalar, PairResidue, PairResidue, Array, Array, Array, Array] = PreLens(
    _sq_fwd,
    _sq_bwd,
    "squared_distance",
    init_fn=None,
    expects=Expects(
        params=_LIKE_INPUT, input=_LIKE_INPUT, residue=(_LIKE_INPUT, _LIKE_INPUT), params_name="ground truth"
    ),
)


def _mse_fwd(g: Array, s: Array) -> tuple[Array, Scalar]:
    d = s - g  # the residue, made here: it aliases nothing
    if isinstance(d, np.generic):  # numpy's 0-d difference is a scalar: the residue is an array
        d = np.asarray(d)
    return d, _sum_squares(d) / _count(tuple(d.shape))


def _mse_bwd(m: Array, da: Any) -> tuple[Array, Array]:
    ds = m * (2.0 / _count(tuple(m.shape)) * _factor("mse", da, m))
    return -ds, ds


#: Mean squared error ``L = Σ (s − g)² / K`` over all ``K`` entries, ground truth ``g`` as the
#: parameter: ``PreLens D D A A A A A A``, the residue the difference ``d = s − g``. Backward gives
#: ``ds = 2 da d / K`` and ``dg = −ds``.
mse: PreLens[Scalar, Scalar, Array, Array, Array, Array, Array, Array] = PreLens(
    _mse_fwd,
    _mse_bwd,
    "mse",
    init_fn=None,
    expects=Expects(params=_LIKE_INPUT, input=_LIKE_INPUT, residue=Arr(None, ...), params_name="ground truth"),
)


_CE = "softmax_cross_entropy"


def _one_hot(y: Any, n: int, like: Any) -> Any:
    """``y[..., None] == arange(n)``: a boolean array ``(*y.shape, n)`` in ``like``'s library and device."""
    xp = namespace(like)
    classes = xp.arange(n, device=device(like))
    if y.dtype != classes.dtype:  # labels of any integer dtype (uint8, int32): compared as the default integers
        y = xp.astype(y, classes.dtype)
    return xp.expand_dims(y, axis=-1) == classes


def _pick(z: Any, y: Any) -> Any:
    """``z[..., y]`` row by row: numpy indexes; the standard has no integer-indexed gather that every library
    shares (PyTorch gathers only with int64), so the others sum a one-hot mask (exactly the picked value)."""
    if isinstance(z, np.ndarray):
        return np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    return namespace(z).sum(namespace(z).where(_one_hot(y, z.shape[-1], z), z, 0.0), axis=-1)


def _check_range(lens: str, y: Any, n: int, allowed: str) -> None:
    """Labels ``y`` must lie in ``[0, n)`` (``allowed`` says so in the error), where their values are known."""
    if math.prod(y.shape) == 0 or not is_concrete(y):  # under a JAX ``jit``: not known
        return
    lo, hi = (y.min(), y.max()) if type(y) is np.ndarray else (namespace(y).min(y), namespace(y).max(y))
    if lo < 0 or hi >= n:  # numpy: the methods (``np.min`` costs a wrapper call more)
        raise out_of_range(lens, "labels", y, n, allowed)


def _softmax_rows(s: Any, y: Any) -> tuple[Any, Any]:
    """``softmax(s)`` row by row and each row's ``logsumexp(s) − s[y]``, with the log-sum-exp shift (no overflow)."""
    xp = namespace(s)
    shifted = s - row_max(s)[..., None]
    picked = _pick(shifted, y)
    probs = np.exp(shifted, out=shifted) if type(shifted) is np.ndarray else xp.exp(shifted)  # numpy: a buffer less
    total = row_sum(probs)
    probs /= total[..., None]  # ours: divided in place (a JAX array is rebound)
    return probs, xp.log(total) - picked


def _logits_delta(probs: Any, y: Any, scale: Any) -> Any:
    """``(softmax − onehot(y)) · scale``, in a fresh array (numpy: one indexed write into a copy)."""
    if isinstance(probs, np.ndarray):
        ds = probs.copy()
        rows = ds.reshape(-1, ds.shape[-1])
        rows[np.arange(rows.shape[0]), y.ravel()] -= 1
    else:
        ds = probs - namespace(probs).astype(_one_hot(y, probs.shape[-1], probs), probs.dtype)
    ds *= scale  # ours: scaled in place (a JAX array is rebound)
    return ds


def _ce_fwd(y: Array, s: Array) -> tuple[PairResidue, Scalar]:
    _check_range(_CE, y, s.shape[-1], f"[0, {s.shape[-1]}) (one per class)")
    probs, per_row = _softmax_rows(s, y)
    return (probs, copy(y)), _total(per_row) / _count(tuple(y.shape))  # the residue keeps a copy of the labels


def _ce_bwd(m: PairResidue, da: Any) -> tuple[Array, Array]:
    probs, y = m
    ds = _logits_delta(probs, y, _factor(_CE, da, probs) / _count(tuple(y.shape)))
    return namespace(y).zeros_like(y), ds  # the labels are data: their delta is zero


#: Softmax cross-entropy with integer labels ``y`` (the parameter) on logits ``s (..., classes)``:
#: ``L = mean over rows of (logsumexp(s) − s[y])``, computed stably. Residue ``(softmax(s), y)``; backward
#: ``ds = da (softmax(s) − onehot(y)) / R`` over the ``R`` rows, a zero delta for the labels. Labels outside
#: ``[0, classes)`` are an error (where their values are known: not inside a JAX ``jit``).
softmax_cross_entropy: PreLens[Scalar, Scalar, PairResidue, PairResidue, Array, Array, Array, Array] = PreLens(
    _ce_fwd,
    _ce_bwd,
    _CE,
    init_fn=None,
    expects=Expects(
        params=_LABELS, input=_LOGITS, residue=(_LOGITS, _LABELS), params_name="labels", input_name="logits"
    ),
)


#: The residue of :func:`token_cross_entropy`: softmax of the logits, the labels (``0`` where
#: ignored, in the logits' library) and each position's weight ``1 / #counted`` (``0`` where
#: ignored), in the logits' dtype.
CrossEntropyResidue = tuple[Array, Array, Array]


@constructor
def token_cross_entropy(*, ignore_index: int = -1) -> AnyLens:
    """Softmax cross-entropy of next-token logits, averaged over the positions that count.

    Input: logits ``(..., T, vocab)``; parameter (the ground truth, as in the post's loss lens): integer
    labels ``(..., T)``, ``ignore_index`` where a position does not count (a prompt, say). Output: a scalar
    of the logits' dtype, ``L = Σ_counted (logsumexp(s) − s[y]) / #counted`` (``0`` if nothing counts).
    Backward ``ds = da (softmax(s) − onehot(y)) / #counted`` on counted positions, ``0`` elsewhere; the
    labels' delta is an array of integer zeros (they are data).

    >>> ce = token_cross_entropy()
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1]]]))
    >>> float(ce.fwd(np.array([[-1, 0]]), logits)[1].round(6))
    0.105361
    """
    if not isinstance(ignore_index, (int, np.integer)) or isinstance(ignore_index, bool):
        raise E.bad_argument("token_cross_entropy", "ignore_index", ignore_index, "an int")
    ignore = int(ignore_index)
    name = "token_cross_entropy" + ("" if ignore == -1 else f"(ignore_index={ignore})")

    def fwd(labels: Array, s: Array) -> tuple[CrossEntropyResidue, Scalar]:
        xp = namespace(s)
        if not same_library(labels, s):  # numpy labels (declared data): moved to the logits' library
            labels = constant_like(labels, s)
        if ignore < 0 and dtype_kind(labels.dtype) == "u":  # unsigned labels never equal a negative index
            counted = xp.ones(tuple(labels.shape), dtype=xp.bool, device=device(s))
        else:
            counted = labels != ignore
        safe = xp.where(counted, labels, xp.zeros_like(labels))
        _check_range(name, safe, s.shape[-1], f"[0, {s.shape[-1]}) or equal ignore_index={ignore}")
        probs, per_row = _softmax_rows(s, safe)
        weight = xp.astype(counted, s.dtype)
        count = _total(weight)  # at least 1 (nothing counted: a loss of 0); a numpy number: the builtin, 2 µs less
        count = xp.maximum(count, xp.ones_like(count)) if is_array(count) else max(count, 1.0)
        loss = _total(per_row * weight) / count
        weight /= count
        return (probs, safe, weight), loss

    def bwd(m: CrossEntropyResidue, da: Any) -> tuple[Array, Array]:
        probs, labels, weight = m
        ds = _logits_delta(probs, labels, (weight * _factor(name, da, probs))[..., None])
        return namespace(labels).zeros_like(labels), ds  # the labels are data: their delta is zero

    logits = Arr(T, B, "vocab")
    residue = (logits, _LABELS, Arr(T, B))
    expects = Expects(params=_DATA_LABELS, input=logits, residue=residue, params_name="labels", input_name="logits")
    return PreLens(fwd, bwd, name, None, expects=expects)
