"""Checks for the exercises of notebook 08_learning_as_optics (solutions: ``solutions/ex08_learning_as_optics.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, vjp
from prelens.core import tree_allclose
from prelens.datasets import load_iris
from prelens.learn import adam, learner, learner_step, learning_rate, sgd
from prelens.nn import linear, mlp, mse, softmax_cross_entropy
from prelens.train import History, accuracy, fit

from ._kit import NotAnswered, Wrong, answered, call, exercise, expect


def _regression() -> tuple[Any, Any, Any]:
    """A small regression: a linear model, its starting weights, and a batch ``(xs, ys)``."""
    rng = np.random.default_rng(8)
    xs = rng.standard_normal((16, 3))
    return linear(3, 1), rng.standard_normal((3, 1)), (xs, xs @ np.array([[1.0], [-2.0], [0.5]]))


@exercise("8.1", "the learning-rate lens by hand", answer="function")
def my_rate(fn: Any) -> str:
    """``my_rate(alpha)``: forward ``L ↦ L``, backward ``() ↦ −α``; in a learner it equals ``learning_rate``."""
    for alpha in (0.5, 0.05):
        lens = call(fn, alpha)
        expect(isinstance(lens, PreLens), f"my_rate({alpha}) should return a PreLens, got {type(lens).__name__}")
        loss, pullback = vjp(lens, (), 2.5)
        expect(float(loss) == 2.5, f"the forward pass should hand the loss on unchanged: 2.5 came out as {loss!r}")
        _, delta = answered(pullback(()))
        expect(
            np.isclose(float(delta), -alpha),
            f"the backward pass of my_rate({alpha}) should make the loss's delta −α = {-alpha}, got {delta!r}"
            + (": with +α every step climbs the loss" if np.isclose(float(delta), alpha) else ""),
        )
        model, w, batch = _regression()
        mine, ref = (learner(model, mse, sgd(1.0).lens, rate=r) for r in (lens, learning_rate(alpha)))
        p_mine = p_ref = w
        for _ in range(5):
            p_mine, _, _ = learner_step(mine, p_mine, (), batch)
            p_ref, _, _ = learner_step(ref, p_ref, (), batch)
        expect(
            tree_allclose(p_mine, p_ref, rtol=1e-12, atol=1e-12),
            f"five steps with my_rate({alpha}) should take the same parameters as learning_rate({alpha})",
        )
    return "the loss's delta is made here, and only here: every other backward pass is the chain rule"


def _sign_descent(params: Any, lr: float, steps: int) -> Any:
    _, _, (xs, ys) = _regression()
    p = params
    for _ in range(steps):
        g = xs.T @ (2.0 * (xs @ p - ys) / ys.size)  # the gradient of mse for the linear model
        p = p - lr * np.sign(g)
    return p


@exercise("8.2", "an optimiser as get and put", answer="function")
def sign_descent(fn: Any) -> str:
    """``sign_descent(lr)``: a reparameterisation lens with state ``()`` whose put is ``p ↦ p − lr·sign(g)``."""
    for lr in (0.1, 0.01):
        opt = call(fn, lr)
        expect(isinstance(opt, PreLens), f"sign_descent({lr}) should return a PreLens, got {type(opt).__name__}")
        model, w, batch = _regression()
        step = learner(model, mse, opt)
        p, state, _ = learner_step(step, w, (), batch)
        expect(state == (), f"the state should stay () (sign descent keeps none), got {state!r}")
        if np.allclose(p, 2 * w - _sign_descent(w, lr, 1)):
            raise Wrong("the parameters climb the loss: the delta p' that reaches put is −α·∇L, so g = −p'")
        for _ in range(5):
            p, state, _ = learner_step(step, p, (), batch)
        want = _sign_descent(w, lr, 6)
        expect(
            np.allclose(p, want, rtol=1e-12, atol=1e-12),
            f"six steps of sign_descent({lr}) should move each weight by ±{lr} against its gradient: "
            f"want {want.ravel().round(4).tolist()}, got {np.asarray(p).ravel().round(4).tolist()}",
        )
    return "get hands the parameters to the model; put turns the delta into the next parameters"


_IRIS = load_iris(rng=1, standardize_features=True)


@exercise("8.3", "a callback of your own", answer="class")
def stop_when_accurate(cls: Any) -> str:
    """``StopWhenAccurate(threshold)``: stops after the first epoch whose ``val_accuracy`` is at least ``threshold``."""
    cls = answered(cls)
    probe = History(loss=[1.0, 0.5], metrics={"val_loss": [1.0, 0.5], "val_accuracy": [0.5, 0.95]})
    try:
        answer = cls(0.9).on_epoch_end(2, probe, None, ())
    except KeyError as err:
        raise Wrong(
            f"history.metrics has no {err}: the accuracy on the validation data is recorded as 'val_accuracy'"
        ) from None
    if answer is None:
        raise NotAnswered
    expect(answer is True, f"on_epoch_end should return True when val_accuracy is 0.95 >= 0.9, got {answer!r}")
    model = mlp(4, [8, 3], last_activation=None)
    kw: dict[str, Any] = {"rng": 0, "progress": False, "validation": (_IRIS.x_test, _IRIS.y_test)}
    kw["metrics"] = {"accuracy": accuracy}
    data = (_IRIS.x_train, _IRIS.y_train)
    free = fit(model, softmax_cross_entropy, data, 20, 16, adam(0.01), **kw).history.metrics["val_accuracy"]
    for threshold in (0.8, 0.9):
        first = next(i for i, a in enumerate(free, 1) if a >= threshold)
        history = fit(model, softmax_cross_entropy, data, 20, 16, adam(0.01), callbacks=[cls(threshold)], **kw).history
        expect(
            history.epochs == first,
            f"with threshold {threshold} training should stop after epoch {first}, the first whose val_accuracy "
            f"reaches it, but it ran {history.epochs} epochs (val_accuracy: {[round(a, 3) for a in free[:first]]})",
        )
    return f"stopped after epoch {first} (val_accuracy {free[first - 1]:.3f})"
