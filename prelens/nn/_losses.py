"""Loss lenses on whole arrays: the post's squared distance, mean squared error, cross-entropy.

As in the post's ``lossL``, the target is the loss lens's *parameter* and the
network's output its input; the output is a scalar (a numpy scalar of the
input's dtype; on another array library a 0-d array of that library) and
training seeds ``da = 1``. Compose a model with a loss as
``model >> loss``: the parameters are then ``(target, model_params)`` (the later
lens first), and an optimiser is given only the model's half of the deltas.

Sum or mean, decided once for all three:

============================  =======================================  ====================
lens                          loss ``L``                               ``ds``
============================  =======================================  ====================
``squared_distance``          ``½ Σ (s − g)²``, summed over every      ``da (s − g)``
                              axis (the post's; batch included)
``mse``                       ``Σ (s − g)² / K``, ``K`` = number of    ``2 da (s − g) / K``
                              entries (mean over batch and outputs)
``softmax_cross_entropy``     ``Σ_r (logsumexp(s_r) − s_r[y_r]) / R``  ``da (softmax − 1ᵧ) / R``
                              over the ``R`` rows (mean over batch)
============================  =======================================  ====================

So ``mse = (2 / K) · squared_distance`` exactly: the twin tests compare the
post's sum; the other two are the conventional means (PyTorch's and Keras's
defaults), whose step sizes do not change with the batch size.

Every loss runs on the arrays of any array-API library (numpy, PyTorch, JAX,
``array_api_strict``): the input and the parameter (ground truth, or integer
labels) must then both be arrays of that library, and every array the loss
returns is one too. Checks that need values (labels in range) run only on
values that are known, so a JAX ``jit`` traces the losses.

>>> import numpy as np
>>> g, s = np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]])
>>> float(squared_distance.fwd(g, s)[1]), float(mse.fwd(g, s)[1])
(0.5, 0.5)
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import (
    copy,
    device,
    dtype_kind,
    is_array,
    is_concrete,
    namespace,
    namespace_name,
    same_library,
)
from prelens.core._lens import PreLens
from prelens.nn._fastcheck import Array, residue_error, scalar_delta, shape_str
from prelens.nn._rows import row_max, row_sum

__all__ = ["mse", "softmax_cross_entropy", "squared_distance"]

Scalar = Any  #: a numpy float scalar of the input's dtype (``np.float64`` or ``np.float32``), or a 0-d array
PairResidue = tuple[Array, Array]


def _check_pair(lens: str, g: Any, s: Any) -> NoReturn:
    """Output ``s`` a float array; ground truth ``g`` of its library, shape and dtype."""
    if not is_array(s) or dtype_kind(s.dtype) != "f":
        desc = E.describe(s)
        if is_array(s):
            raise E.lens_dtype_error(lens, "input", "a float array", desc)
        raise E.must_be(lens, "input", "a numpy float array", desc)
    shape = tuple(s.shape)
    if isinstance(s, np.ndarray):
        if not isinstance(g, np.ndarray):
            raise E.must_be(lens, "ground truth", f"a numpy array {shape_str(s.dtype, shape)}", E.describe(g))
    elif not same_library(g, s):
        want = f"{shape_str(s.dtype, shape)} ({_lib(s)}, the input's library)"
        raise E.must_be(lens, "ground truth", f"an array {want}", E.describe(g))
    if g.dtype != s.dtype:
        raise E.lens_dtype_error(lens, "ground truth", shape_str(s.dtype, shape), E.describe(g))
    raise E.lens_shape_error(lens, "ground truth", f"the input's shape {shape}", E.describe(g))


def _lib(x: Any) -> str:
    return namespace_name(namespace(x))


def _pair_fits(g: Any, s: Any) -> bool:
    """Another library's input ``s`` (a float array) and ground truth ``g`` of its library, dtype and shape."""
    return (
        is_array(s)
        and dtype_kind(s.dtype) == "f"
        and same_library(g, s)
        and g.dtype == s.dtype
        and tuple(g.shape) == tuple(s.shape)
    )


def _factor(da: Any, like: Any) -> Any:
    """A loss's checked output delta as a factor for the arrays of ``like``'s library (keeping their dtype).

    A number stays a Python float (weakly typed in every library); a 0-d array,
    perhaps traced, becomes ``like``'s dtype.
    """
    if is_array(da) and same_library(da, like):
        return namespace(like).astype(da, like.dtype)
    return float(da)


def _count(shape: tuple[int, ...]) -> int:
    """The number of entries of an array of ``shape``, at least 1 (the divisor of a mean)."""
    return max(math.prod(shape), 1)


# --------------------------------------------------------- squared distance


def _sq_fwd(g: Array, s: Array) -> tuple[PairResidue, Scalar]:
    if (
        not isinstance(s, np.ndarray)
        or not isinstance(g, np.ndarray)
        or g.shape != s.shape
        or (g.dtype != s.dtype or s.dtype.kind != "f")
    ):
        if isinstance(s, np.ndarray) or not _pair_fits(g, s):
            _check_pair("squared_distance", g, s)
        d = s - g  # another library's arrays
        return (copy(g), copy(s)), 0.5 * namespace(s).sum(d * d)
    d = np.subtract(s, g)
    return (g.copy(), s.copy()), 0.5 * np.vdot(d, d)  # a residue never aliases the caller's arrays


def _pair_residue(lens: str, m: Any) -> PairResidue:
    """The residue ``(g, s)`` of the squared losses: two float arrays of one shape and dtype."""
    try:
        g, s = m
        if isinstance(s, np.ndarray):
            ok = s.dtype.kind == "f" and g.dtype == s.dtype and g.shape == s.shape
        else:
            ok = _pair_fits(g, s)
    except (TypeError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise residue_error(lens, m)
    return g, s


def _sq_bwd(m: PairResidue, da: Any) -> tuple[Array, Array]:
    if type(da) is not float:
        da = scalar_delta("squared_distance", da)
    g, s = _pair_residue("squared_distance", m)
    if not isinstance(s, np.ndarray):
        ds = (s - g) * _factor(da, s)
        return -ds, ds
    ds = np.subtract(s, g)
    ds *= da
    return np.negative(ds), ds  # (dg, ds) = (−ds, da·(s − g))


#: The post's loss: ``L = ½ Σ (s − g)²`` over every axis (batch and outputs), with the
#: ground truth ``g`` as the parameter.
#: Haskell: ``lossL :: PreLens D D ([V], [V]) ([V], [V]) [V] [V] [V] [V]``; here
#: ``PreLens D D (A, A) (A, A) A A A A`` with ``g`` and ``s`` of one shape, e.g. ``(batch, n)``.
#: Forward ``(g, s) -> ((g, s), L)``; backward ``((g, s), da) -> (−ds, ds)``, ``ds = da (s − g)``.
squared_distance: PreLens[Scalar, Scalar, PairResidue, PairResidue, Array, Array, Array, Array] = PreLens(
    _sq_fwd, _sq_bwd, "squared_distance", init_fn=None
)


# ---------------------------------------------------------------------- mse


def _mse_fwd(g: Array, s: Array) -> tuple[Array, Scalar]:
    if (
        not isinstance(s, np.ndarray)
        or not isinstance(g, np.ndarray)
        or g.shape != s.shape
        or (g.dtype != s.dtype or s.dtype.kind != "f")
    ):
        if isinstance(s, np.ndarray) or not _pair_fits(g, s):
            _check_pair("mse", g, s)
        d = s - g  # another library's arrays
        return d, namespace(s).sum(d * d) / _count(tuple(d.shape))
    d = np.subtract(s, g) if s.ndim else np.subtract(s, g, out=np.empty_like(s))  # 0-d: an array, not a scalar
    return d, np.vdot(d, d) / max(d.size, 1)  # the residue is d = s − g, made here: it aliases nothing


def _mse_bwd(m: Array, da: Any) -> tuple[Array, Array]:
    if type(da) is not float:  # training seeds 1.0
        da = scalar_delta("mse", da)
    if type(m) is np.ndarray and m.dtype.kind == "f":
        ds = np.multiply(m, 2.0 / max(m.size, 1) * float(da))  # a Python float keeps the dtype
        return np.negative(ds), ds
    if isinstance(m, np.ndarray) or not is_array(m) or dtype_kind(m.dtype) != "f":
        raise residue_error("mse", m)
    ds = m * (2.0 / _count(tuple(m.shape)) * _factor(da, m))
    return -ds, ds


#: Mean squared error ``L = Σ (s − g)² / K`` over all ``K`` entries, ground truth ``g`` as the
#: parameter. Haskell: ``PreLens D D A A A A A A``: the residue is the difference ``d = s − g``
#: (all that backward needs, made by the forward pass). Backward gives ``ds = 2 da d / K`` and
#: ``dg = −ds``; it is ``squared_distance`` scaled by ``2 / K``.
mse: PreLens[Scalar, Scalar, Array, Array, Array, Array, Array, Array] = PreLens(
    _mse_fwd, _mse_bwd, "mse", init_fn=None
)


# ------------------------------------------------------- softmax cross-entropy

_CE = "softmax_cross_entropy"


def _check_labels(y: Any, s: Any) -> NoReturn:
    if not is_array(s) or dtype_kind(s.dtype) != "f" or s.ndim == 0:
        desc = E.describe(s)
        if is_array(s):
            raise E.lens_dtype_error(_CE, "logits", "a float array (..., classes)", desc)
        raise E.must_be(_CE, "logits", "a numpy float array", desc)
    want = f"i64[{','.join(map(str, s.shape[:-1]))}]"
    if isinstance(s, np.ndarray):
        if not isinstance(y, np.ndarray):
            raise E.must_be(_CE, "labels", f"an integer array {want}", E.describe(y))
    elif not same_library(y, s):
        raise E.must_be(_CE, "labels", f"an integer array {want} ({_lib(s)}, the logits' library)", E.describe(y))
    if dtype_kind(y.dtype) not in "iu":
        raise E.lens_dtype_error(_CE, "labels", f"integer class indices {want}", E.describe(y))
    if tuple(y.shape) != tuple(s.shape[:-1]):
        raise E.lens_shape_error(_CE, "labels", f"{want} (the logits' shape without the last axis)", E.describe(y))
    raise E.lens_dtype_error(_CE, "logits", "a float array (..., classes)", E.describe(s))


def _labels_fit(y: Any, s: Any) -> bool:
    """Another library's logits ``s`` (float, at least 1-D) and labels ``y`` (integers of its library, ``s``'s shape
    without the last axis)."""
    return (
        is_array(s)
        and dtype_kind(s.dtype) == "f"
        and s.ndim >= 1
        and same_library(y, s)
        and dtype_kind(y.dtype) in "iu"
        and tuple(y.shape) == tuple(s.shape[:-1])
    )


def _one_hot(y: Any, n: int, like: Any) -> Any:
    """``y[..., None] == arange(n)``: a boolean array ``(*y.shape, n)`` in ``like``'s library and device."""
    xp = namespace(like)
    classes = xp.arange(n, device=device(like))
    if y.dtype != classes.dtype:  # labels of any integer dtype (uint8, int32): compared as the default integers
        y = xp.astype(y, classes.dtype)
    return xp.expand_dims(y, axis=-1) == classes


def _ce_any(y: Any, s: Any) -> tuple[PairResidue, Scalar]:
    """The cross-entropy of another library's logits and labels: numpy's passes in the standard's functions.

    The row's logit of its label is picked with a one-hot mask (the standard
    has no integer-indexed writes, and PyTorch gathers only with int64). The
    labels' range is checked when their values are known; under a JAX ``jit``
    they are not, and a label out of range then picks nothing.
    """
    if not _labels_fit(y, s):
        _check_labels(y, s)
    xp = namespace(s)
    n, rows = s.shape[-1], math.prod(y.shape)
    if rows and is_concrete(y):
        lo, hi = int(xp.min(y)), int(xp.max(y))
        if lo < 0 or hi >= n:
            raise E.out_of_range(_CE, "labels", f"[0, {n}) (one per class)", lo if lo < 0 else hi)
    shifted = s - xp.max(s, axis=-1, keepdims=True)  # log-sum-exp shift: no overflow
    probs = xp.exp(shifted)
    total = xp.sum(probs, axis=-1, keepdims=True)
    picked = xp.sum(xp.where(_one_hot(y, n, s), shifted, 0.0), axis=-1)
    loss = xp.sum(xp.log(total[..., 0]) - picked) / max(rows, 1)
    return (probs / total, copy(y)), loss


def _ce_fwd(y: Array, s: Array) -> tuple[PairResidue, Scalar]:
    if (
        not isinstance(s, np.ndarray)
        or not isinstance(y, np.ndarray)
        or y.shape != s.shape[:-1]
        or y.dtype.kind not in "iu"
        or s.dtype.kind != "f"
    ):
        if isinstance(s, np.ndarray) or not is_array(s):
            _check_labels(y, s)
        return _ce_any(y, s)  # another library's arrays
    n = s.shape[-1]
    if y.size:
        lo, hi = y.min(), y.max()
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise E.out_of_range(_CE, "labels", f"[0, {n}) (one per class)", bad)
    shifted = np.subtract(s, row_max(s)[..., None])  # log-sum-exp shift: no overflow
    probs = np.exp(shifted)
    total = row_sum(probs)
    picked = np.take_along_axis(shifted, y[..., None], axis=-1)[..., 0]
    loss = (np.log(total) - picked).sum() / max(y.size, 1)
    probs /= total[..., None]
    return (probs, y.copy()), loss  # probs is ours; the labels are the caller's


def _ce_bwd(m: PairResidue, da: Any) -> tuple[Array, Array]:
    if type(da) is not float:
        da = scalar_delta(_CE, da)
    try:
        probs, y = m
        if not isinstance(probs, np.ndarray):  # another library's arrays: no look at the values (they may be traced)
            ok = _labels_fit(y, probs)
        else:
            ok = probs.dtype.kind == "f" and y.dtype.kind in "iu" and probs.shape[:-1] == y.shape
            ok = ok and (y.size == 0 or (0 <= y.min() and y.max() < probs.shape[-1]))
    except (TypeError, ValueError, AttributeError, IndexError):
        ok = False
    if not ok:
        raise residue_error(_CE, m)
    if not isinstance(probs, np.ndarray):
        ds = probs - namespace(probs).astype(_one_hot(y, probs.shape[-1], probs), probs.dtype)
        ds = ds * (_factor(da, probs) / max(math.prod(y.shape), 1))
        return namespace(y).zeros_like(y), ds
    ds = probs.copy()
    rows = ds.reshape(-1, ds.shape[-1])
    rows[np.arange(rows.shape[0]), y.ravel()] -= 1
    ds *= da / max(y.size, 1)
    return np.zeros_like(y), ds  # the labels are data: their delta is zero


#: Softmax cross-entropy with integer labels ``y`` (the parameter) on logits ``s`` of shape
#: ``(..., classes)``: ``L = mean over rows of (logsumexp(s) − s[y])``, computed with the
#: log-sum-exp shift, so logits of ±1e4 give a finite loss and gradient.
#: Haskell: ``PreLens D D (A, Y) (A, Y) Y Y A A``. Residue ``(softmax(s), y)``; backward
#: ``ds = da (softmax(s) − onehot(y)) / R`` over the ``R`` rows, and a zero delta for the labels
#: (they are data: never hand them to an optimiser). Labels outside ``[0, classes)`` are an error
#: (where their values are known: not inside a JAX ``jit``, where such a label picks no logit).
softmax_cross_entropy: PreLens[Scalar, Scalar, PairResidue, PairResidue, Array, Array, Array, Array] = PreLens(
    _ce_fwd, _ce_bwd, _CE, init_fn=None
)
