"""The MNIST-1D paper's four models and its training protocol, built from prelens lenses (channels last).

Greydanus & Kobak, "Scaling down deep learning with MNIST-1D" (ICML 2024): the models of the repository's
``notebooks/models.py`` and the protocol of its ``notebooks/train.py`` (docs/mnist1d.md tables them). ``prelens
train mnist1d`` trains one model; ``prelens_bench.mnist1d``, which re-exports these names (their documented home),
runs the paper's whole table. Needs the ``mnist1d`` extra.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import chain
from prelens.core._lens import AnyLens
from prelens.datasets import Split, load_mnist1d
from prelens.learn import adam
from prelens.nn import bidirectional, conv1d, dense, flatten, gru, relu, residual, softmax_cross_entropy
from prelens.train._evaluate import accuracy
from prelens.train._fit import fit

__all__ = [
    "BATCH_SIZE",
    "LEARNING_RATE",
    "MNIST1D_MODELS",
    "PAPER_ACCURACY",
    "STEPS",
    "Mnist1dResult",
    "mnist1d_model",
    "model_name",
    "takes_channel",
    "train_mnist1d",
]

#: The test accuracy (%) the paper reports for each model (Greydanus & Kobak, table 1).
PAPER_ACCURACY: dict[str, float] = {"logreg": 32.0, "mlp": 68.0, "cnn": 94.0, "gru": 91.0}

#: The protocol of the paper's ``train.py``.
STEPS, BATCH_SIZE, LEARNING_RATE = 8000, 100, 1e-2


def _logreg(dtype: npt.DTypeLike) -> AnyLens:
    return dense(40, 10, None, dtype=dtype)


def _mlp(dtype: npt.DTypeLike) -> AnyLens:
    return chain(
        dense(40, 100, relu, dtype=dtype),
        residual(dense(100, 100, relu, dtype=dtype)),
        dense(100, 10, None, dtype=dtype),
    )


def _cnn(dtype: npt.DTypeLike) -> AnyLens:
    convs = [conv1d(c_in, 25, k, stride=2, padding=1, dtype=dtype) for c_in, k in ((1, 5), (25, 3), (25, 3))]
    return chain(*(part for conv in convs for part in (conv, relu)), flatten(), dense(125, 10, None, dtype=dtype))


def _gru(dtype: npt.DTypeLike) -> AnyLens:
    return chain(bidirectional(gru(1, 6, dtype=dtype)), flatten(), dense(2 * 6 * 40, 10, None, dtype=dtype))


#: The paper's four models by name: (one-line description, builder taking the dtype).
MNIST1D_MODELS: dict[str, tuple[str, Callable[[npt.DTypeLike], AnyLens]]] = {
    "logreg": ("logistic regression: dense 40→10", _logreg),
    "mlp": ("MLP 40-100-100-10, ReLU, the second layer residual", _mlp),
    "cnn": ("CNN: 3 conv1d (25 channels, stride 2) with ReLU, flatten, dense 125→10", _cnn),
    "gru": ("bidirectional GRU, hidden 6, flattened over 40 steps, dense 480→10", _gru),
}


def model_name(fn: str, name: Any) -> str:
    """``name`` if it names one of the paper's models, else an error from ``fn``."""
    if not isinstance(name, str) or name not in MNIST1D_MODELS:
        raise E.not_one_of(fn, "model", tuple(MNIST1D_MODELS), name)
    return name


def mnist1d_model(name: str, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The paper's model ``name`` (``"logreg"``, ``"mlp"``, ``"cnn"``, ``"gru"``) as a lens giving 10 logits.

    Input ``(N, 40)`` for ``logreg`` and ``mlp``, ``(N, 40, 1)`` for ``cnn`` and ``gru``
    (:func:`takes_channel`); output ``(N, 10)``.

    >>> mnist1d_model("mlp")
    chain(dense(40→100, relu), residual(dense(100→100, relu)), dense(100→10))
    """
    return MNIST1D_MODELS[model_name("mnist1d_model", name)][1](dtype)


def takes_channel(name: str) -> bool:
    """Whether model ``name`` takes series with a channel axis, ``(N, 40, 1)`` (the CNN and the GRU).

    >>> takes_channel("cnn"), takes_channel("mlp")
    (True, False)
    """
    return model_name("takes_channel", name) in ("cnn", "gru")


@dataclass(frozen=True)
class Mnist1dResult:
    """One training run: the model's name, seed, backend, steps taken, final parameters, accuracies (fractions)
    and wall-clock seconds.

    >>> Mnist1dResult("cnn", 0, "numpy", 8000, None, 1.0, 0.94, 60.0).test_accuracy
    0.94
    """

    model: str
    seed: int
    backend: str
    steps: int
    params: Any
    train_accuracy: float
    test_accuracy: float
    seconds: float


def train_mnist1d(
    name: str,
    split: Split | None = None,
    *,
    steps: int = STEPS,
    seed: int = 0,
    backend: str = "numpy",
    dtype: npt.DTypeLike = np.float64,
    batch_size: int = BATCH_SIZE,
    lr: float = LEARNING_RATE,
    progress: bool | None = False,
    blas_threads: int | str | None = "auto",
) -> Mnist1dResult:
    """Train the paper's model ``name`` on MNIST-1D with its protocol; the test accuracy at the end.

    Adam(``lr``), ``steps`` steps of ``batch_size`` rows (the training set reshuffled every epoch
    with ``seed``, which also draws the initial weights; a last part-epoch takes a random subset,
    so exactly ``steps`` steps run), softmax cross-entropy. ``split``: :func:`load_mnist1d` by
    default; its series are given the channel axis, or lose it, as the model takes them.
    ``backend``: ``"numpy"``, ``"jax"`` (each step one compiled XLA program,
    ``fit(..., backend="jax")``) or ``"auto"`` (``fit``'s choice: JAX where compiling pays); the
    parameters returned are numpy arrays either way.
    ``progress`` and ``blas_threads``: as :func:`~prelens.train.fit`'s.

    >>> r = train_mnist1d("logreg", steps=40)
    >>> r.test_accuracy > 0.2
    True
    """
    fn = "train_mnist1d"
    channel = takes_channel(model_name(fn, name))
    steps = _args.count(fn, "steps", steps)
    seed = _args.count(fn, "seed", seed, 0)
    batch_size = _args.count(fn, "batch_size", batch_size)
    lr = _args.real(fn, "lr", lr, low=0.0, low_open=True)
    if backend not in ("numpy", "jax", "auto"):
        raise E.not_one_of(fn, "backend", ("numpy", "jax", "auto"), backend)
    model = mnist1d_model(name, dtype=dtype)
    data = split if split is not None else load_mnist1d(channel=channel)
    x_train, y_train, x_test = data.x_train.astype(dtype), data.y_train, data.x_test.astype(dtype)
    if (channel, x_train.ndim) in ((True, 2), (False, 3)):  # add the channel axis the model takes, or drop it
        x_train, x_test = (x[..., None] if channel else x[..., 0] for x in (x_train, x_test))
    gen = np.random.default_rng(seed)
    params = model.init(gen)
    opt, opt_state, done = adam(lr), None, 0
    epochs, rest = divmod(steps, math.ceil(len(y_train) / batch_size))
    kwargs: dict[str, Any] = {"progress": progress, "backend": backend, "blas_threads": blas_threads}
    started = time.perf_counter()
    if epochs:
        params, opt_state, history = fit(
            model, softmax_cross_entropy, (x_train, y_train), epochs, batch_size, opt, gen, params=params, **kwargs
        )
        done += history.steps
    if rest:  # the last part-epoch: `rest` batches of a random subset
        rows = gen.permutation(len(y_train))[: rest * batch_size]
        part = (x_train[rows], y_train[rows])
        params, opt_state, history = fit(
            model, softmax_cross_entropy, part, 1, batch_size, opt, gen, params=params, opt_state=opt_state, **kwargs
        )
        done += history.steps
    seconds = time.perf_counter() - started
    if backend == "jax":  # ("auto" hands numpy back)
        from prelens.backend import to_backend

        params = to_backend(params, "numpy")
    accuracies = accuracy(model, params, x_train, y_train), accuracy(model, params, x_test, data.y_test)
    return Mnist1dResult(name, seed, backend, done, params, *accuracies, seconds)
