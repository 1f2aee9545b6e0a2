"""Loss lenses on whole arrays: the post's squared distance, mean squared error, cross-entropy.

As in the post's ``lossL``, the target is the loss lens's *parameter* and the
network's output its input; the output is a scalar (a numpy scalar of the
input's dtype) and training seeds ``da = 1``. Compose a model with a loss as
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

>>> import numpy as np
>>> g, s = np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]])
>>> float(squared_distance.fwd(g, s)[1]), float(mse.fwd(g, s)[1])
(0.5, 0.5)
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

from .. import _errors as E
from .._lens import PreLens
from ._fastcheck import Array, residue_error, scalar_delta, shape_str
from ._rows import row_max, row_sum

__all__ = ["mse", "softmax_cross_entropy", "squared_distance"]

Scalar = Any  #: a numpy float scalar of the input's dtype (``np.float64`` or ``np.float32``)
PairResidue = tuple[Array, Array]


def _check_pair(lens: str, g: object, s: object) -> NoReturn:
    """Output ``s`` a float array; ground truth ``g`` of its shape and dtype."""
    if not isinstance(s, np.ndarray) or s.dtype.kind != "f":
        desc = E.describe(s)
        if isinstance(s, np.ndarray):
            raise E.lens_dtype_error(lens, "input", "a float array", desc)
        raise E.must_be(lens, "input", "a numpy float array", desc)
    if not isinstance(g, np.ndarray):
        raise E.must_be(lens, "ground truth", f"a numpy array {shape_str(s.dtype, s.shape)}", E.describe(g))
    if g.dtype != s.dtype:
        raise E.lens_dtype_error(lens, "ground truth", shape_str(s.dtype, s.shape), E.describe(g))
    raise E.lens_shape_error(lens, "ground truth", f"the input's shape {s.shape}", E.describe(g))


# --------------------------------------------------------- squared distance


def _sq_fwd(g: Array, s: Array) -> tuple[PairResidue, Scalar]:
    if (
        not isinstance(s, np.ndarray)
        or not isinstance(g, np.ndarray)
        or g.shape != s.shape
        or (g.dtype != s.dtype or s.dtype.kind != "f")
    ):
        _check_pair("squared_distance", g, s)
    d = np.subtract(s, g)
    return (g.copy(), s.copy()), 0.5 * np.vdot(d, d)  # a residue never aliases the caller's arrays


def _pair_residue(lens: str, m: Any) -> PairResidue:
    """The residue ``(g, s)`` of the squared losses: two float arrays of one shape and dtype."""
    try:
        g, s = m
        ok = s.dtype.kind == "f" and g.dtype == s.dtype and g.shape == s.shape
    except (TypeError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise residue_error(lens, m)
    return g, s


def _sq_bwd(m: PairResidue, da: Any) -> tuple[Array, Array]:
    if type(da) is not float:
        da = scalar_delta("squared_distance", da)
    g, s = _pair_residue("squared_distance", m)
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


def _mse_fwd(g: Array, s: Array) -> tuple[PairResidue, Scalar]:
    if (
        not isinstance(s, np.ndarray)
        or not isinstance(g, np.ndarray)
        or g.shape != s.shape
        or (g.dtype != s.dtype or s.dtype.kind != "f")
    ):
        _check_pair("mse", g, s)
    d = np.subtract(s, g)
    return (g.copy(), s.copy()), np.vdot(d, d) / max(d.size, 1)


def _mse_bwd(m: PairResidue, da: Any) -> tuple[Array, Array]:
    if type(da) is not float:  # training seeds 1.0
        da = scalar_delta("mse", da)
    g, s = _pair_residue("mse", m)
    ds = np.subtract(s, g)
    ds *= 2.0 / max(ds.size, 1) * da  # one pass; an in-place product keeps the dtype
    return np.negative(ds), ds


#: Mean squared error ``L = Σ (s − g)² / K`` over all ``K`` entries, ground truth ``g`` as the
#: parameter. Haskell: ``PreLens D D (A, A) (A, A) A A A A``. Backward gives
#: ``ds = 2 da (s − g) / K`` and ``dg = −ds``; it is ``squared_distance`` scaled by ``2 / K``.
mse: PreLens[Scalar, Scalar, PairResidue, PairResidue, Array, Array, Array, Array] = PreLens(
    _mse_fwd, _mse_bwd, "mse", init_fn=None
)


# ------------------------------------------------------- softmax cross-entropy

_CE = "softmax_cross_entropy"


def _check_labels(y: object, s: object) -> NoReturn:
    if not isinstance(s, np.ndarray) or s.dtype.kind != "f" or s.ndim == 0:
        desc = E.describe(s)
        if isinstance(s, np.ndarray):
            raise E.lens_dtype_error(_CE, "logits", "a float array (..., classes)", desc)
        raise E.must_be(_CE, "logits", "a numpy float array", desc)
    want = f"i64[{','.join(map(str, s.shape[:-1]))}]"
    if not isinstance(y, np.ndarray):
        raise E.must_be(_CE, "labels", f"an integer array {want}", E.describe(y))
    if y.dtype.kind not in "iu":
        raise E.lens_dtype_error(_CE, "labels", f"integer class indices {want}", E.describe(y))
    if y.shape != s.shape[:-1]:
        raise E.lens_shape_error(_CE, "labels", f"{want} (the logits' shape without the last axis)", E.describe(y))
    raise E.lens_dtype_error(_CE, "logits", "a float array (..., classes)", E.describe(s))


def _ce_fwd(y: Array, s: Array) -> tuple[PairResidue, Scalar]:
    if (
        not isinstance(s, np.ndarray)
        or not isinstance(y, np.ndarray)
        or y.shape != s.shape[:-1]
        or y.dtype.kind not in "iu"
        or s.dtype.kind != "f"
    ):
        _check_labels(y, s)
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
        ok = probs.dtype.kind == "f" and y.dtype.kind in "iu" and probs.shape[:-1] == y.shape
        ok = ok and (y.size == 0 or (0 <= y.min() and y.max() < probs.shape[-1]))
    except (TypeError, ValueError, AttributeError, IndexError):
        ok = False
    if not ok:
        raise residue_error(_CE, m)
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
#: (they are data: never hand them to an optimiser). Labels outside ``[0, classes)`` are an error.
softmax_cross_entropy: PreLens[Scalar, Scalar, PairResidue, PairResidue, Array, Array, Array, Array] = PreLens(
    _ce_fwd, _ce_bwd, _CE, init_fn=None
)
