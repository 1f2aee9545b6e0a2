"""Evaluation: the model's outputs, classification accuracy, the loss on a data set."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import host, is_array, namespace, to_numpy
from prelens.core._lens import AnyLens
from prelens.core._trace import forward

Tree = Any

__all__ = ["accuracy", "evaluate", "predict"]


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
    if batch_size is None:
        return forward(model, params, xs)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise E.bad_argument("predict", "batch_size", batch_size, "an int >= 1 or None")
    if not is_array(xs) or xs.ndim == 0:
        raise E.bad_argument("predict", "xs", E.describe_tree(xs), "an array with a leading batch axis")
    n = xs.shape[0]
    parts: list[Any] = [
        forward(model, params, row_slice(xs, i, min(n, i + batch_size))) for i in range(0, n, batch_size)
    ]
    if not parts:
        return forward(model, params, xs)
    if type(parts[0]) is np.ndarray:
        return np.concatenate(parts)
    return namespace(parts[0]).concat(parts, axis=0)


def row_slice(a: Any, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of an array of any library (a stop past the end is cut to it, as numpy does)."""
    return a[lo:hi] if isinstance(a, np.ndarray) else a[lo : min(hi, a.shape[0]), ...]


def _classes(values: npt.NDArray[Any], like_outputs: bool) -> npt.NDArray[Any]:
    """Class indices from scores ``(n, k)`` (argmax), or from one column / 1-D (positive = 1)."""
    if values.ndim >= 2 and values.shape[-1] > 1:
        return np.asarray(np.argmax(values, axis=-1))
    flat = values.reshape(len(values), -1)[:, 0] if values.ndim >= 2 else values
    if like_outputs or flat.dtype.kind == "f":
        return (flat > 0).astype(np.int64)
    return np.asarray(flat)


def labels_array(labels: Any) -> npt.NDArray[Any] | None:
    """``labels`` (an array of any library, a list or a tuple) as a numpy array; ``None`` for anything else."""
    if isinstance(labels, (np.ndarray, list, tuple)):
        return np.asarray(labels)
    return to_numpy(labels) if is_array(labels) else None


def accuracy(model: AnyLens, params: Tree, xs: Any, labels: Any, batch_size: int | None = None) -> float:
    """The fraction of rows of ``xs`` that ``model`` classifies as ``labels`` say.

    Outputs of shape ``(n, k)`` with ``k > 1`` are scores (logits or probabilities): the prediction is the argmax. A
    single output column (or 1-D outputs) is a binary score: class 1 when positive (a tanh output against ±1
    targets, or a logit). ``labels`` are class indices ``(n,)``, one-hot or score rows ``(n, k)`` (argmax), or ±1 /
    0-1 values. Outputs and labels of another array library are compared on the host (one copy of the outputs): the
    answer is a Python float either way.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    >>> accuracy(linear(2, 2), np.eye(2), xs, np.array([0, 1, 0]))
    0.6666666666666666
    """
    outputs = np.asarray(host(predict(model, params, xs, batch_size)))
    truth = labels_array(labels)
    if truth is None or truth.ndim == 0 or truth.dtype.kind not in "biuf" or outputs.ndim == 0:
        raise E.bad_argument("accuracy", "labels", E.describe_tree(labels), "an array of labels, one per row of xs")
    if len(outputs) != len(truth):
        said = E.describe(labels if is_array(labels) else truth)
        raise E.bad_argument("accuracy", "labels", said, f"one label per row of xs ({len(outputs)})")
    if len(truth) == 0:
        return float("nan")
    return float(np.mean(_classes(outputs, True) == _classes(truth, False)))


def evaluate(model: AnyLens, loss: AnyLens, params: Tree, xs: Any, targets: Any) -> float:
    """The loss of ``model`` on the whole of ``(xs, targets)``: ``forward(model >> loss, (targets, params), xs)``.

    Arrays of any array-API library are evaluated in that library; the loss is returned as a Python float.

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> evaluate(linear(2, 1), mse, np.zeros((2, 1)), np.ones((3, 2)), np.ones((3, 1)))
    1.0
    """
    return float(forward(model >> loss, (targets, params), xs))
