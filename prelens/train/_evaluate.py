"""Evaluation: the model's outputs, the loss on a data set, and for classifiers accuracy, class probabilities and
the confusion matrix."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import (
    constant_like,
    dtype_kind,
    host,
    is_array,
    is_concrete,
    namespace,
    to_backend,
    to_numpy,
    tree_map_arrays,
)
from prelens.core import _args
from prelens.core._lens import AnyLens
from prelens.core._trace import forward
from prelens.core._tree import tree_leaves
from prelens.nn._activations import softmax_any

Tree = Any

__all__ = ["accuracy", "all_finite", "confusion_matrix", "evaluate", "predict", "predict_proba"]


def predict(model: AnyLens, params: Tree, xs: Any, batch_size: int | None = None) -> Any:
    """The model's outputs on ``xs`` (leading batch axis), in chunks of ``batch_size`` rows.

    ``batch_size=None`` runs all rows at once; chunks bound the memory the residues take. Shapes:
    ``(n, ...) -> (n, ...)``. ``xs`` and ``params`` may be arrays of any array-API library (PyTorch, JAX, ...): the
    outputs are that library's arrays, the chunks joined with its ``concat``.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> model = linear(3, 2)
    >>> predict(model, model.init(0), np.ones((5, 3)), batch_size=2).shape
    (5, 2)
    """
    xs = _beside(params, xs)
    if batch_size is None:
        return forward(model, params, xs)
    if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size < 1:
        raise E.bad_argument("predict", "batch_size", batch_size, "an int >= 1 or None")
    batch_size = int(batch_size)
    if not is_array(xs) or xs.ndim == 0:
        raise E.bad_argument("predict", "xs", E.describe_tree(xs), "an array with a leading batch axis")
    n = xs.shape[0]
    parts: list[Any] = [forward(model, params, row_slice(xs, i, i + batch_size)) for i in range(0, n, batch_size)]
    if not parts:
        return forward(model, params, xs)
    return namespace(parts[0]).concat(parts, axis=0)


def _beside(params: Tree, data: Any) -> Any:
    """numpy ``data`` for ``params`` of another library, moved to it (and its device): a model trained on JAX or
    PyTorch is evaluated on numpy data (a lens refuses the two libraries mixed)."""
    like = next((a for a in tree_leaves(params) if is_array(a) and not isinstance(a, np.ndarray)), None)
    return (
        data
        if like is None
        else tree_map_arrays(lambda a: constant_like(a, like) if type(a) is np.ndarray else a, data)
    )


def row_slice(a: Any, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of an array of any library (a stop past the end is cut to it, as numpy does)."""
    return a[lo:hi] if isinstance(a, np.ndarray) else a[lo : min(hi, a.shape[0]), ...]


def _classes(
    values: npt.NDArray[Any], k: int | None = None, fn: str = "", why: str = "class indices, one per score column"
) -> npt.NDArray[Any]:
    """Class indices from rows ``(n, k)`` (argmax), or from one column / 1-D: against ``k`` score columns class
    indices (whole numbers in ``[0, k)``, else an error naming ``fn``), against one score (``k=None``) positive = 1
    (±1 and 0/1 labels alike)."""
    if values.ndim >= 2 and values.shape[-1] > 1:
        return np.asarray(np.argmax(values, axis=-1))
    flat = values.reshape(len(values), -1)[:, 0] if values.ndim >= 2 else values
    if k is None:
        return (flat > 0).astype(np.int64)
    bad = flat[(flat < 0) | (flat >= k) | (flat != np.floor(flat))]
    if bad.size:
        raise E.out_of_range(fn, "labels", f"[0, {k}) ({why})", bad[0].item())
    return flat.astype(np.int64)


def _score_columns(out: npt.NDArray[Any]) -> int | None:
    """``k`` for scores ``(n, k)`` with ``k > 1``; ``None`` for one score per row (a binary classifier)."""
    return int(out.shape[-1]) if out.ndim >= 2 and out.shape[-1] > 1 else None


def _truth(fn: str, labels: Any, outputs: npt.NDArray[Any], per_row: str) -> npt.NDArray[Any]:
    """``labels`` (an array of any library, a list or a tuple) as a numpy array, one label per row of ``outputs``."""
    truth = np.asarray(labels) if isinstance(labels, (np.ndarray, list, tuple)) else host(labels)
    if not isinstance(truth, np.ndarray) or truth.ndim == 0 or truth.dtype.kind not in "biuf" or outputs.ndim == 0:
        raise E.bad_argument(fn, "labels", E.describe_tree(labels), f"an array of labels, {per_row}")
    if len(outputs) != len(truth):
        said = E.describe(labels if is_array(labels) else truth)
        raise E.bad_argument(fn, "labels", said, f"one label per row of xs ({len(outputs)})")
    return truth


def all_finite(a: Any) -> bool:
    """Whether every number of ``a`` (an array of any library) is finite; a traced value is not looked at."""
    if isinstance(a, np.ndarray):
        return bool(np.isfinite(a).all())
    if not is_concrete(a):
        return True
    xp = namespace(a)
    return bool(xp.all(xp.isfinite(a)))


def accuracy(model: AnyLens, params: Tree, xs: Any, labels: Any, batch_size: int | None = None) -> float:
    """The fraction of rows of ``xs`` that ``model`` classifies as ``labels`` say.

    Outputs of shape ``(n, k)`` with ``k > 1`` are scores (logits or probabilities): the prediction is the argmax. A
    single output column (or 1-D outputs) is a binary score: class 1 when positive (a tanh output against ±1
    targets, or a logit). ``labels`` are class indices ``(n,)`` (whole numbers in ``[0, k)``, ints or floats; any
    other is an error), one-hot or score rows ``(n, k)`` (argmax), or against a single score ±1 / 0-1 values
    (positive is class 1). Outputs and labels of another array library are compared on the host (one copy of the
    outputs): the answer is a Python float either way.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    >>> accuracy(linear(2, 2), np.eye(2), xs, np.array([0, 1, 0]))
    0.6666666666666666
    """
    outputs = np.asarray(host(predict(model, params, xs, batch_size)))
    if outputs.dtype.kind in "fc" and not all_finite(outputs):
        raise E.non_finite("accuracy: the model's output", "")
    truth = _truth("accuracy", labels, outputs, "one per row of xs")
    if len(truth) == 0:
        return float("nan")
    return float(np.mean(_classes(outputs) == _classes(truth, _score_columns(outputs), "accuracy")))


def evaluate(model: AnyLens, loss: AnyLens, params: Tree, xs: Any, targets: Any) -> float:
    """The loss of ``model`` on the whole of ``(xs, targets)``: ``forward(model >> loss, (targets, params), xs)``.

    Arrays of any array-API library are evaluated in that library; the loss is returned as a Python float.

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> evaluate(linear(2, 1), mse, np.zeros((2, 1)), np.ones((3, 2)), np.ones((3, 1)))
    1.0
    """
    targets, xs = _beside(params, (targets, xs))
    return float(forward(model >> loss, (targets, params), xs))


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
    if z.ndim >= 2 and z.shape[-1] > 1:
        return softmax_any(z)
    xp = namespace(z)
    flat = z[..., 0] if z.ndim >= 2 else z
    positive = xp.exp(-xp.logaddexp(xp.zeros_like(flat), -flat))  # σ(z), stable for large |z|
    return xp.stack([1.0 - positive, positive], axis=-1)


def confusion_matrix(
    model: AnyLens, params: Tree, xs: Any, labels: Any, *, n_classes: int | None = None, batch_size: int | None = None
) -> npt.NDArray[np.int64]:
    """Counts ``C[i, j]`` of rows of class ``i`` (per ``labels``) that ``model`` puts in class ``j``.

    Rows are the true classes, columns the predicted ones (scikit-learn's layout), so the diagonal counts the right
    answers and ``C.trace() / C.sum()`` is :func:`accuracy`. Predictions and ``labels`` are read as :func:`accuracy`
    reads them. ``n_classes`` defaults to the number of output columns (2 for a single one).

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    >>> confusion_matrix(linear(2, 2), np.eye(2), xs, np.array([0, 1, 0]))
    array([[1, 1],
           [0, 1]])
    """
    outputs = predict(model, params, xs, batch_size)
    other = is_array(outputs) and not isinstance(outputs, np.ndarray)  # another library's: counted on the host
    out = to_numpy(_logits("confusion_matrix", outputs if other else np.asarray(outputs)))
    truth = _truth("confusion_matrix", labels, out, "one per row")
    columns = _score_columns(out)  # None: one binary score per row (two classes)
    k = (columns or 2) if n_classes is None else _args.count("confusion_matrix", "n_classes", n_classes)
    true = _classes(truth, k if columns else None, "confusion_matrix", f"n_classes={k}")
    predicted = _classes(out)
    for what, cls in (("labels", true), ("predicted classes", predicted)):
        bad = cls[(cls < 0) | (cls >= k)]
        if bad.size:
            raise E.out_of_range("confusion_matrix", what, f"[0, {k}) (n_classes={k})", int(bad[0]))
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (true, predicted), 1)
    if not other:
        return counts
    import array_api_compat

    return cast(npt.NDArray[np.int64], to_backend(counts, namespace(outputs), device=array_api_compat.device(outputs)))


def _logits(fn: str, out: Any) -> Any:
    """The model's outputs as a float array (of any library) with a leading batch axis, finite."""
    if not is_array(out) or dtype_kind(out.dtype) != "f" or out.ndim == 0:
        raise E.must_be(fn, "the model's output", "a float array (n, k) or (n,) of scores", E.describe_tree(out))
    if not all_finite(out):
        raise E.non_finite(f"{fn}: the model's output", "")
    return out
