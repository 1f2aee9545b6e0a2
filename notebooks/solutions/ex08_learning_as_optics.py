"""Solutions to the exercises of notebook 08_learning_as_optics."""

from typing import Any

import numpy as np

from prelens import PreLens
from prelens.learn import OptimizerLens
from prelens.train import History


# 8.1 forward: the loss passes through; backward: ignore the delta (there is none) and make −α
def my_rate(alpha: float) -> PreLens:
    return PreLens(lambda p, loss: ((), loss), lambda m, da: ((), -alpha), name=f"my_rate({alpha})")


# 8.2 get: (p, ()) ↦ p; put: ((p, ()), p') ↦ (p − lr·sign(g), ()) with g = −p', so p + lr·sign(p')
def sign_descent(lr: float) -> PreLens:
    def fwd(unit: tuple[()], ps: tuple[Any, Any]) -> tuple[Any, Any]:
        params, state = ps
        return (params, state), params

    def bwd(m: tuple[Any, Any], delta: Any) -> tuple[tuple[()], tuple[Any, Any]]:
        params, state = m
        return (), (params + lr * np.sign(delta), state)

    return OptimizerLens(fwd, bwd, f"sign_descent({lr})", init_state=lambda p: ())


# 8.3 a callback is any object with on_epoch_end(epoch, history, params, opt_state) -> bool
class StopWhenAccurate:
    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def on_epoch_end(self, epoch: int, history: History, params: Any, opt_state: Any) -> bool:
        return history.metrics["val_accuracy"][-1] >= self.threshold


class _TrainingAccuracy(StopWhenAccurate):
    """The mistake: the accuracy on the training data, under a name fit does not record."""

    def on_epoch_end(self, epoch: int, history: History, params: Any, opt_state: Any) -> bool:
        return history.metrics["accuracy"][-1] >= self.threshold


# the check calls the answer by the name of the exercise
stop_when_accurate = StopWhenAccurate

#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # +α: the delta of the loss with the wrong sign (gradient ascent)
    "my_rate": lambda alpha: PreLens(lambda p, loss: ((), loss), lambda m, da: ((), alpha), name="plus"),
    # g = p' taken for the gradient: the step goes uphill
    "sign_descent": lambda lr: OptimizerLens(
        lambda u, ps: (ps, ps[0]), lambda m, d: ((), (m[0] - lr * np.sign(d), m[1])), "uphill", init_state=lambda p: ()
    ),
    # reads "accuracy" (not recorded) instead of "val_accuracy"
    "stop_when_accurate": _TrainingAccuracy,
}
