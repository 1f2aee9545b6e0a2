"""The metadata of the model files that ``prelens train`` writes, and what the other commands read from it.

The keys (``kind``, ``loss``, ``input``, ``classes``/``features`` or ``vocabulary``/``context``) are tabled in
docs/model-files.md. The readers take what :func:`prelens.io.load_model` returns and fall back quietly (None, or the
parameters' dtype) when the metadata does not say.
"""

from __future__ import annotations

import math
import sys
from typing import Any, cast

import numpy as np

from prelens.core._tree import tree_leaves
from prelens.io._model_file import LoadedModel, save_model
from prelens.nn import normalize

__all__ = ["classes", "holdable", "input_dtype", "input_shape", "save_classifier", "save_language_model"]


def input_dtype(model: LoadedModel) -> np.dtype[Any]:
    """The dtype the model takes: from its metadata, else its first float parameter, else float64."""
    spec = model.metadata.get("input")
    name = spec.get("dtype") if isinstance(spec, dict) else None
    if name in _INPUT_DTYPES:
        return np.dtype(name)
    for leaf in tree_leaves(model.params):
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
            return cast(np.dtype[Any], leaf.dtype)
    return np.dtype(np.float64)


#: The input dtypes a model file's metadata may name (any other name is ignored).
_INPUT_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")


def input_shape(model: LoadedModel) -> tuple[int, ...] | None:
    """One example's shape (no batch axis), from the metadata, if the file says it."""
    spec = model.metadata.get("input")
    shape = spec.get("shape") if isinstance(spec, dict) else None
    if isinstance(shape, list) and all(type(d) is int and d >= 1 for d in shape) and holdable((1, *shape)):
        return tuple(shape)
    return None


def holdable(shape: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` can be made: at most 64 axes, and its bytes countable (numpy's limits)."""
    return len(shape) <= 64 and math.prod(shape) <= sys.maxsize // 16


def classes(model: LoadedModel) -> list[str] | None:
    """The class names of a classifier, if the metadata gives them."""
    names = model.metadata.get("classes")
    if isinstance(names, list) and names and all(isinstance(c, str) for c in names):
        return names
    return None


def save_classifier(
    path: str,
    model: Any,
    params: Any,
    split: Any,
    dtype: Any,
    meta: dict[str, Any],
    raw_train: Any = None,
    *,
    shape: tuple[int, ...] | None = None,
) -> Any:
    """Write the classifier ``model`` trained on ``split`` as a model file; returns the lens written.

    ``raw_train`` (the training rows before standardisation, if the model was trained on standardised features):
    their statistics go in front of the model as :func:`prelens.nn.normalize`, computed as
    :func:`prelens.datasets.standardize` computes them, so that the file's lens takes the features as they are.
    ``shape``: one example's shape, if not ``(n_features,)`` (a series with a channel axis, ``(40, 1)``).
    """
    lens, saved = model, params
    if raw_train is not None:
        scale = raw_train.std(axis=0)
        lens = normalize(raw_train.mean(axis=0), np.where(scale > 0, scale, 1.0), dtype=dtype) >> model
        saved = (params, ())
    info = {
        **meta,
        "kind": "classifier",
        "loss": "softmax_cross_entropy",
        "classes": list(split.class_names),
        "features": list(split.feature_names),
        "input": {"shape": [int(d) for d in shape or (split.n_features,)], "dtype": np.dtype(dtype).name},
    }
    save_model(path, lens, saved, metadata=info)
    return lens


def save_language_model(
    path: str, model: Any, params: Any, vocabulary: dict[str, Any], context: int, meta: dict[str, Any]
) -> None:
    """Write a language model with the vocabulary it reads (``{"chars": ...}`` or a sequence task)."""
    info = {
        **meta,
        "kind": "language_model",
        "loss": "token_cross_entropy",
        "vocabulary": vocabulary,
        "context": int(context),
        "input": {"shape": [int(context)], "dtype": "int64"},
    }
    save_model(path, model, params, metadata=info)
