"""One training step: forward, the trace with ``da = 1``, and an optimiser update.

The trained lens is ``model >> loss``. As in the post's ``lossL``, the loss
lens takes the ground truth as its *parameter*, so the composite's parameters
are ``(targets, model_params)`` (the later lens first) and its input is the
batch of inputs. :func:`~prelens.vjp` runs the forward pass once and returns
a pullback; seeding it with ``da = 1`` gives ``((d_targets, d_params), d_xs)``,
of which the optimiser takes ``d_params`` only.
"""

from __future__ import annotations

from typing import Any

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens, PreLens, as_lens
from prelens.core._trace import vjp
from prelens.learn._optimizer import Optimizer, find_optimizer
from prelens.nn._dropout import with_dropout, without_dropout

Tree = Any
Batch = tuple[Any, Any]

__all__ = ["optimizer_form", "step", "value_and_grad"]


def value_and_grad(
    model: AnyLens, loss: AnyLens, params: Tree, batch: Batch, *, key: int | None = None
) -> tuple[float, Tree]:
    """The loss of ``model`` on ``batch = (xs, targets)`` and its gradient in ``params``.

    Haskell::

        value_and_grad :: Lens -> Loss -> Params -> (X, Y) -> (Double, Params)

    ``xs`` has a leading batch axis, ``targets`` is what ``loss`` takes as its
    parameter (e.g. integer labels for ``softmax_cross_entropy``). The gradient
    is a tree shaped like ``params``. With ``key`` (an int in ``[0, 2**64)``) a
    model with dropout runs in training mode on ``with_dropout(params, key)``,
    and its gradient comes back through ``without_dropout`` (shaped like
    ``params``); without it, dropout is off.

    >>> import numpy as np
    >>> from prelens import PreLens
    >>> scale = PreLens(lambda w, x: ((w, x), w * x), lambda m, da: ((da * m[1]).sum(), da * m[0]))
    >>> half_sq = PreLens(lambda g, s: (s - g, 0.5 * ((s - g) ** 2).sum()), lambda d, da: (-da * d, da * d))
    >>> loss, grad = value_and_grad(scale, half_sq, 2.0, (np.array([1.0, 2.0]), np.array([1.0, 1.0])))
    >>> loss, float(grad)
    (5.0, 7.0)
    """
    model = as_lens("value_and_grad", "model", model)
    loss = as_lens("value_and_grad", "loss", loss)
    batch = _args.batch("value_and_grad", batch)
    if key is None:
        return value_and_grad_of(model >> loss, params, batch)
    value, grads = value_and_grad_of(model >> loss, with_dropout(params, key), batch)
    return value, without_dropout(grads)


def value_and_grad_of(trained: AnyLens, params: Tree, batch: Batch) -> tuple[float, Tree]:
    """:func:`value_and_grad` of the composite ``trained = model >> loss``, built once by the caller."""
    xs, targets = batch
    value, pullback = vjp(trained, (targets, params), xs)
    (_, grads), _ = pullback(1.0)  # da = 1: the plain gradient of the loss
    return float(value), grads


def step(
    model: AnyLens,
    loss: AnyLens,
    params: Tree,
    batch: Batch,
    optimizer: Optimizer[Any],
    state: Any,
    *,
    key: int | None = None,
) -> tuple[Tree, Any, float]:
    """One optimiser step on ``batch = (xs, targets)``: ``(new_params, new_state, loss_value)``.

    Haskell::

        step :: Lens -> Loss -> Params -> (X, Y) -> Optimizer s -> s -> (Params, s, Double)

    ``loss_value`` is the loss at ``params`` (before the update). Pure: the
    arguments are not modified. ``key``: dropout on for this step (see
    :func:`value_and_grad`).

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.optim import sgd
    >>> model = linear(2, 1)
    >>> opt = sgd(0.1)
    >>> params = model.init(0)
    >>> batch = (np.ones((4, 2)), np.zeros((4, 1)))
    >>> new, state, before = step(model, mse, params, batch, opt, opt.init(params))
    >>> value_and_grad(model, mse, new, batch)[0] < before
    True
    """
    _args.optimizer("step", optimizer)
    value, grads = value_and_grad(model, loss, params, batch, key=key)
    new_params, new_state = optimizer.update(grads, state, params)
    return new_params, new_state, value


def optimizer_form(fn: str, optimizer: Any) -> bool:
    """``True`` for an optimiser lens (or a composite ``opt >> ...`` of one), ``False`` for a plain optimiser.

    Anything else is an error naming ``fn``.

    >>> from prelens.optim import sgd
    >>> optimizer_form("fit", sgd(0.1))
    False
    """
    if isinstance(optimizer, PreLens):
        if find_optimizer(optimizer) is None:
            expected = "a prelens.optim optimiser or an optimiser lens of prelens.learn (or opt >> ... of one)"
            raise E.must_be(fn, "optimizer", expected, repr(optimizer))
        return True
    _args.optimizer(fn, optimizer)
    return False
