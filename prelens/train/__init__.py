"""``prelens.train``: the trace step, the training loop, and evaluation.

* :func:`value_and_grad`, :func:`step` (the one step, either form of optimiser): ``model >> loss``, the loss taking
  the ground truth as its parameter (as the post's ``lossL``).
* :func:`fit`: shuffled mini-batches, a progress line, a :class:`History`, no lost work (non-finite values, Ctrl-C,
  checkpoints), metrics, callbacks (:class:`EarlyStopping`, :class:`CheckpointBest`, :class:`LearningRateLogger`),
  and exact resuming from a checkpoint.
* :func:`compile_step`: a whole step (forward, backward, optimiser) as one XLA program on JAX, data-parallel over a
  ``jax.sharding.Mesh``; ``fit(..., backend="jax")`` trains with it.
* :func:`predict`, :func:`accuracy`, :func:`evaluate`; for classifiers :func:`predict_proba` and
  :func:`confusion_matrix`.
* the runtime: :func:`blas_threads` (chosen by :func:`choose_blas_threads` from the problem's sizes) and
  :func:`retain_freed_memory` (docs/performance.md).

>>> import numpy as np
>>> from prelens.nn import mlp, softmax_cross_entropy
>>> from prelens.datasets import load_iris
>>> from prelens.learn import adam
>>> iris = load_iris(rng=1, standardize_features=True)
>>> model = mlp(4, [16, 3], last_activation=None)
>>> params, _, history = fit(model, softmax_cross_entropy, (iris.x_train, iris.y_train),
...                          epochs=60, batch_size=16, optimizer=adam(0.02), rng=0, progress=False)
>>> accuracy(model, params, iris.x_test, iris.y_test) >= 0.9
True
"""

from prelens.train._callbacks import Callback, CheckpointBest, EarlyStopping, LearningRateLogger
from prelens.train._compiled import CompiledStep, compile_step
from prelens.train._evaluate import accuracy, confusion_matrix, evaluate, predict, predict_proba
from prelens.train._fit import FitResult, Metric, fit
from prelens.train._history import History
from prelens.train._progress import Progress
from prelens.train._runtime import blas_threads, choose_blas_threads, retain_freed_memory
from prelens.train._step import step, value_and_grad

__all__ = [
    "Callback",
    "CheckpointBest",
    "CompiledStep",
    "EarlyStopping",
    "FitResult",
    "History",
    "LearningRateLogger",
    "Metric",
    "Progress",
    "accuracy",
    "blas_threads",
    "choose_blas_threads",
    "compile_step",
    "confusion_matrix",
    "evaluate",
    "fit",
    "predict",
    "predict_proba",
    "retain_freed_memory",
    "step",
    "value_and_grad",
]
