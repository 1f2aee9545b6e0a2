"""Class probabilities and the confusion matrix of a classifier that outputs logits."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _args
from .. import _errors as E
from .._lens import AnyLens
from ._evaluate import _classes, predict

Tree = Any

__all__ = ["confusion_matrix", "predict_proba"]


def predict_proba(model: AnyLens, params: Tree, xs: Any, batch_size: int | None = None) -> npt.NDArray[Any]:
    """Class probabilities ``(n, k)`` from a model that outputs logits.

    Haskell::

        predict_proba :: Lens -> Params -> X -> Maybe Int -> P

    Outputs ``(n, k)`` with ``k > 1`` (as trained with ``softmax_cross_entropy``)
    become ``softmax`` rows; a single logit per row, ``(n, 1)`` or ``(n,)``, becomes
    ``(n, 2)`` columns ``[1 − σ(z), σ(z)]`` (class 1 when the logit is positive, as
    :func:`accuracy` reads it). Rows sum to 1; the dtype is the outputs'. A model
    that ends in its own softmax already gives probabilities: use :func:`predict`.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> predict_proba(linear(2, 2), np.eye(2), np.array([[0.0, np.log(3.0)]])).round(3)
    array([[0.25, 0.75]])
    """
    out = predict(model, params, xs, batch_size)
    z = _logits("predict_proba", out)
    if z.ndim >= 2 and z.shape[-1] > 1:
        e: npt.NDArray[Any] = np.exp(z - z.max(axis=-1, keepdims=True))
        e /= e.sum(axis=-1, keepdims=True)
        return e
    flat = z[..., 0] if z.ndim >= 2 else z
    positive = np.exp(-np.logaddexp(0.0, -flat)).astype(z.dtype)  # σ(z), stable for large |z|
    return np.stack([1.0 - positive, positive], axis=-1)


def confusion_matrix(
    model: AnyLens, params: Tree, xs: Any, labels: Any, *, n_classes: int | None = None, batch_size: int | None = None
) -> npt.NDArray[np.int64]:
    """Counts ``C[i, j]`` of rows of class ``i`` (per ``labels``) that ``model`` puts in class ``j``.

    Haskell::

        confusion_matrix :: Lens -> Params -> X -> Labels -> Maybe Int -> Maybe Int -> Matrix Int

    Rows are the true classes, columns the predicted ones (scikit-learn's
    layout), so the diagonal counts the right answers and ``C.trace() / C.sum()``
    is :func:`accuracy`. Predictions and ``labels`` are read as :func:`accuracy`
    reads them (argmax of ``(n, k)`` scores; the sign of a single score; labels as
    indices, one-hot rows, or ±1 / 0-1 values). ``n_classes`` defaults to the
    number of output columns (2 for a single one).

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    >>> confusion_matrix(linear(2, 2), np.eye(2), xs, np.array([0, 1, 0]))
    array([[1, 1],
           [0, 1]])
    """
    out = np.asarray(predict(model, params, xs, batch_size))
    _logits("confusion_matrix", out)
    truth = np.asarray(labels) if isinstance(labels, (np.ndarray, list, tuple)) else None
    if truth is None or truth.ndim == 0 or truth.dtype.kind not in "biuf":
        raise E.bad_argument("confusion_matrix", "labels", E.describe_tree(labels), "an array of labels, one per row")
    if len(truth) != len(out):
        raise E.bad_argument("confusion_matrix", "labels", E.describe(truth), f"one label per row of xs ({len(out)})")
    width = out.shape[-1] if out.ndim >= 2 and out.shape[-1] > 1 else 2
    k = width if n_classes is None else _args.count("confusion_matrix", "n_classes", n_classes)
    predicted, true = _classes(out, True), _classes(truth, False)
    true = true.astype(np.int64)
    for what, cls in (("labels", true), ("predicted classes", predicted)):
        bad = cls[(cls < 0) | (cls >= k)]
        if bad.size:
            raise E.out_of_range("confusion_matrix", what, f"[0, {k}) (n_classes={k})", int(bad[0]))
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (true, predicted), 1)
    return counts


def _logits(fn: str, out: Any) -> npt.NDArray[Any]:
    """The model's outputs as a float array with a leading batch axis, finite."""
    z = np.asarray(out) if isinstance(out, np.ndarray) else None
    if z is None or z.dtype.kind != "f" or z.ndim == 0:
        raise E.must_be(fn, "the model's output", "a float array (n, k) or (n,) of scores", E.describe_tree(out))
    if not np.isfinite(z).all():
        raise E.non_finite(f"{fn}: the model's output", "")
    return z
