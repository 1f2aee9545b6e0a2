"""Class probabilities and the confusion matrix of a classifier that outputs logits."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import dtype_kind, is_array, is_concrete, namespace, to_backend, to_numpy
from prelens.core import _args
from prelens.core._lens import AnyLens
from prelens.train._evaluate import _classes, labels_array, predict

Tree = Any

__all__ = ["confusion_matrix", "predict_proba"]


def predict_proba(model: AnyLens, params: Tree, xs: Any, batch_size: int | None = None) -> Any:
    """Class probabilities ``(n, k)`` from a model that outputs logits.

    Outputs ``(n, k)`` with ``k > 1`` (as trained with ``softmax_cross_entropy``) become ``softmax`` rows; a single
    logit per row, ``(n, 1)`` or ``(n,)``, becomes ``(n, 2)`` columns ``[1 − σ(z), σ(z)]`` (class 1 when the logit
    is positive, as :func:`accuracy` reads it). Rows sum to 1; the dtype, library and device are the outputs'
    (numpy, PyTorch, JAX, ...). A model that ends in its own softmax already gives probabilities: use
    :func:`predict`.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> predict_proba(linear(2, 2), np.eye(2), np.array([[0.0, np.log(3.0)]])).round(3)
    array([[0.25, 0.75]])
    """
    z = _logits("predict_proba", predict(model, params, xs, batch_size))
    xp = namespace(z)
    if z.ndim >= 2 and z.shape[-1] > 1:
        e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)
    flat = z[..., 0] if z.ndim >= 2 else z
    positive = xp.exp(-xp.logaddexp(xp.zeros_like(flat), -flat))  # σ(z), stable for large |z|
    return xp.stack([1.0 - positive, positive], axis=-1)


def confusion_matrix(
    model: AnyLens, params: Tree, xs: Any, labels: Any, *, n_classes: int | None = None, batch_size: int | None = None
) -> npt.NDArray[np.int64]:
    """Counts ``C[i, j]`` of rows of class ``i`` (per ``labels``) that ``model`` puts in class ``j``.

    Rows are the true classes, columns the predicted ones (scikit-learn's layout), so the diagonal counts the right
    answers and ``C.trace() / C.sum()`` is :func:`accuracy`. Predictions and ``labels`` are read as :func:`accuracy`
    reads them (argmax of ``(n, k)`` scores; the sign of a single score; labels as indices, one-hot rows, or ±1 /
    0-1 values). ``n_classes`` defaults to the number of output columns (2 for a single one).

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    >>> confusion_matrix(linear(2, 2), np.eye(2), xs, np.array([0, 1, 0]))
    array([[1, 1],
           [0, 1]])
    """
    outputs = predict(model, params, xs, batch_size)
    other = is_array(outputs) and not isinstance(outputs, np.ndarray)  # another library's: counted on the host
    out = to_numpy(_logits("confusion_matrix", outputs)) if other else np.asarray(outputs)
    if not other:
        _logits("confusion_matrix", out)
    truth = labels_array(labels)
    if truth is None or truth.ndim == 0 or truth.dtype.kind not in "biuf":
        raise E.bad_argument("confusion_matrix", "labels", E.describe_tree(labels), "an array of labels, one per row")
    if len(truth) != len(out):
        said = E.describe(labels if is_array(labels) else truth)
        raise E.bad_argument("confusion_matrix", "labels", said, f"one label per row of xs ({len(out)})")
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
    if not other:
        return counts
    result: npt.NDArray[np.int64] = to_backend(counts, namespace(outputs), device=_device(outputs))
    return result


def _device(x: Any) -> Any:
    import array_api_compat

    return array_api_compat.device(x)


def _logits(fn: str, out: Any) -> Any:
    """The model's outputs as a float array (of any library) with a leading batch axis, finite."""
    if isinstance(out, np.ndarray):
        z = np.asarray(out)
        if z.dtype.kind != "f" or z.ndim == 0:
            raise E.must_be(fn, "the model's output", "a float array (n, k) or (n,) of scores", E.describe_tree(out))
        if not np.isfinite(z).all():
            raise E.non_finite(f"{fn}: the model's output", "")
        return z
    if not is_array(out) or dtype_kind(out.dtype) != "f" or out.ndim == 0:
        raise E.must_be(fn, "the model's output", "a float array (n, k) or (n,) of scores", E.describe_tree(out))
    if is_concrete(out):
        xp = namespace(out)
        if not bool(xp.all(xp.isfinite(out))):
            raise E.non_finite(f"{fn}: the model's output", "")
    return out
