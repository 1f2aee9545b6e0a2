"""Deprecated: the optimisers moved to :mod:`prelens.learn` (``prelens.optim.X`` warns, gives ``prelens.learn.X``)."""

import prelens.learn as _learn
from prelens._deprecated import moved, now_in

_NAMES = (
    "SGD Adagrad AdagradState Adam AdamState AdamW ClipByGlobalNorm Momentum MomentumState Optimizer RMSprop "
    "RMSpropState Schedule ScheduledState adagrad adam adamw clip_by_global_norm constant exponential_decay "
    "momentum one_cycle rmsprop sgd step_decay warmup_cosine"
).split()

__getattr__ = moved("prelens.optim", now_in(_learn, _NAMES))
