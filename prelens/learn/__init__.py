"""``prelens.learn``: learning as optics — the whole training step as one lens.

After Cruttwell, Gavranović, Ghani, Wilson and Zanasi, *Categorical Foundations of
Gradient-Based Learning* (ESOP 2022). Every piece of a training step is a lens:

* the **model**, a parametric lens ``P × X → Y`` (any lens of :mod:`prelens.nn`);
* the **loss**, a lens parametrised by the targets (``prelens.nn.mse``, ...);
* the **learning rate** :func:`learning_rate` ``α``, whose backward pass turns
  the loss into its delta ``−α``;
* the **optimiser**, a reparameterisation lens on the parameter wire whose
  state travels with the parameters: :func:`gradient_descent`, :func:`momentum`,
  :func:`nesterov`, :func:`adagrad`, :func:`rmsprop`, :func:`adam`, :func:`adamw`
  (each equal to its :mod:`prelens.optim` twin), to which
  :func:`clip_by_global_norm` composes with ``>>``;
* a **regulariser** in the loss, :func:`l2`, tied to the model's parameters by
  :func:`penalised`.

:func:`learner` composes them (``reparameterise(model >> loss, id_pre_lens @
optimizer) >> learning_rate(α)``); one :func:`~prelens.vjp` of it and one
pullback is one training step, and :func:`learner_step` runs it.

>>> import numpy as np
>>> from prelens.nn import mlp, mse
>>> model = mlp(2, [8, 1], last_activation=None)
>>> opt = adam(0.05)
>>> step = learner(model, mse, opt)
>>> params, state = model.init(0), opt.init_state(model.init(0))
>>> xs = np.random.default_rng(0).standard_normal((64, 2))
>>> ys = xs[:, :1] * xs[:, 1:]
>>> losses = []
>>> for _ in range(200):
...     params, state, loss = learner_step(step, params, state, (xs, ys))
...     losses.append(loss)
>>> losses[-1] < 0.2 * losses[0]
True
"""

from prelens.learn._adaptive import adagrad, adam, adamw, rmsprop
from prelens.learn._clip import clip_by_global_norm
from prelens.learn._descent import gradient_descent, momentum, nesterov
from prelens.learn._optimizer import OptimizerLens, init_state
from prelens.learn._penalty import l2, penalised
from prelens.learn._rate import learning_rate
from prelens.learn._reparam import learner, learner_step, parameters_as_input, reparameterise

__all__ = [
    "OptimizerLens",
    "adagrad",
    "adam",
    "adamw",
    "clip_by_global_norm",
    "gradient_descent",
    "init_state",
    "l2",
    "learner",
    "learner_step",
    "learning_rate",
    "momentum",
    "nesterov",
    "parameters_as_input",
    "penalised",
    "reparameterise",
    "rmsprop",
]
