"""``prelens.learn``: the optimisers, their schedules and clipping, and the training step as one lens.

Each optimiser is one object with two views, the pure ``init``/``update`` and ``opt.lens`` (Cruttwell
et al.'s reparameterisation lens); every ``lr`` is a number or a schedule; :func:`learner` makes a whole
training step one lens. docs/learning.md tells the story, docs/api.md lists every name.

>>> import numpy as np
>>> from prelens.nn import mlp, mse
>>> model = mlp(2, [8, 1], last_activation=None)
>>> opt = adam(0.05)
>>> step = learner(model, mse, opt)
>>> params, state = model.init(0), opt.init(model.init(0))
>>> xs = np.random.default_rng(0).standard_normal((64, 2))
>>> ys = xs[:, :1] * xs[:, 1:]
>>> losses = []
>>> for _ in range(200):
...     params, state, loss = learner_step(step, params, state, (xs, ys))
...     losses.append(loss)
>>> losses[-1] < 0.2 * losses[0]
True
"""

from prelens._deprecated import moved
from prelens.learn._optimizer import (
    AdagradState,
    AdamState,
    MomentumState,
    Optimizer,
    OptimizerLens,
    RMSpropState,
    ScheduledState,
    init_state,
)
from prelens.learn._penalty import l2, penalised
from prelens.learn._rate import learning_rate
from prelens.learn._reparam import learner, learner_step, parameters_as_input, reparameterise
from prelens.learn._rules import (
    SGD,
    Adagrad,
    Adam,
    AdamW,
    ClipByGlobalNorm,
    Momentum,
    RMSprop,
    adagrad,
    adam,
    adamw,
    clip_by_global_norm,
    momentum,
    rmsprop,
    sgd,
)
from prelens.learn._schedules import Schedule, constant, exponential_decay, one_cycle, step_decay, warmup_cosine

__all__ = [
    "AdagradState",
    "AdamState",
    "MomentumState",
    "Optimizer",
    "RMSpropState",
    "Schedule",
    "ScheduledState",
    "adagrad",
    "adam",
    "adamw",
    "clip_by_global_norm",
    "constant",
    "exponential_decay",
    "init_state",
    "l2",
    "learner",
    "learner_step",
    "learning_rate",
    "momentum",
    "one_cycle",
    "penalised",
    "reparameterise",
    "rmsprop",
    "sgd",
    "step_decay",
    "warmup_cosine",
]

#: The classes of the optimisers (their constructors are the functions above), importable but not listed.
_CLASSES = (SGD, Adagrad, Adam, AdamW, ClipByGlobalNorm, Momentum, RMSprop, OptimizerLens, parameters_as_input)


__getattr__ = moved(
    "prelens.learn",
    {
        "gradient_descent": ("prelens.learn.sgd(lr).lens", lambda lr: sgd(lr).lens),
        "nesterov": (
            "prelens.learn.momentum(lr, beta, nesterov=True).lens",
            lambda lr, beta=0.9: momentum(lr, beta, nesterov=True).lens,
        ),
    },
)
