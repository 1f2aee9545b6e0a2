"""``prelens.train``: the trace step, the training loop, and evaluation.

* :func:`value_and_grad`, :func:`step`: one step on ``model >> loss``, the
  loss taking the ground truth as its parameter (as the post's ``lossL``).
* :func:`fit`: shuffled mini-batches, a progress line, a :class:`History`,
  and no lost work (non-finite values, Ctrl-C, checkpoints).
* :func:`predict`, :func:`accuracy`, :func:`evaluate`.

>>> import numpy as np
>>> from prelens.nn import mlp, softmax_cross_entropy
>>> from prelens.datasets import load_iris
>>> from prelens.optim import adam
>>> iris = load_iris(rng=1, standardize_features=True)
>>> model = mlp(4, [16, 3], last_activation=None)
>>> params, _, history = fit(model, softmax_cross_entropy, (iris.x_train, iris.y_train),
...                          epochs=60, batch_size=16, optimizer=adam(0.02), rng=0, progress=False)
>>> accuracy(model, params, iris.x_test, iris.y_test) >= 0.9
True
"""

from ._evaluate import accuracy, evaluate, predict
from ._fit import FitResult, History, Metric, fit
from ._progress import Progress
from ._step import step, value_and_grad

__all__ = [
    "FitResult",
    "History",
    "Metric",
    "Progress",
    "accuracy",
    "evaluate",
    "fit",
    "predict",
    "step",
    "value_and_grad",
]
