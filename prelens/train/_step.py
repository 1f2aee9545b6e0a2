"""One training step: forward, the trace with ``da = 1``, and an optimiser update.

The trained lens is ``model >> loss``, its parameters ``(targets, model_params)`` (the loss takes the ground truth as
its parameter: docs/api.md); the optimiser takes ``d_params`` of the pullback of ``da = 1``. With an optimiser lens
the step is one lens, ``learner(model, loss, optimizer)``. :func:`step_of` composes either form once; :func:`step`,
``fit`` and :func:`~prelens.train.compile_step` all run it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prelens import errors as E
from prelens.backend._arrays import autograd_off
from prelens.core import _args
from prelens.core._lens import AnyLens, PreLens, as_lens
from prelens.core._trace import vjp as _vjp
from prelens.learn._optimizer import find_optimizer
from prelens.learn._penalty import penalised
from prelens.learn._reparam import learner, run_learner
from prelens.nn._dropout import with_dropout, without_dropout
from prelens.train._data import keyed

Tree = Any
Batch = tuple[Any, Any]
#: ``check(loss, grads)``: called between the gradient and the update (``fit`` stops on non-finite values there).
Check = Callable[[float, Tree], None]
#: ``core(params, state, xs, targets, check=None) -> (new_params, new_state, loss)``, made by :func:`step_of`.
Core = Callable[..., tuple[Tree, Any, Any]]

vjp: Callable[..., tuple[Any, Callable[[Any], Any]]] = _vjp  # core's signature, spelled for mypy

__all__ = ["optimizer_form", "step", "step_of", "value_and_grad"]


def value_and_grad(
    model: AnyLens, loss: AnyLens, params: Tree, batch: Batch, *, key: int | None = None
) -> tuple[float, Tree]:
    """The loss of ``model`` on ``batch = (xs, targets)`` and its gradient in ``params``.

    ``xs`` has a leading batch axis, ``targets`` is what ``loss`` takes as its parameter (e.g. integer labels for
    ``softmax_cross_entropy``). The gradient is a tree shaped like ``params``. With ``key`` (an int in
    ``[0, 2**64)``) a model with dropout runs in training mode on ``with_dropout(params, key)``, and its gradient
    comes back through ``without_dropout`` (shaped like ``params``); without it, dropout is off.

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
    xs, targets = _args.batch("value_and_grad", batch)
    trained = _made((model, loss), lambda: model >> loss)
    with autograd_off():  # prelens's own gradients: tensors that require grad build no graph
        value, grads = _value_and_grad(trained, params if key is None else with_dropout(params, key), xs, targets)
        return float(value), grads if key is None else without_dropout(grads)


def _value_and_grad(trained: AnyLens, params: Tree, xs: Any, targets: Any) -> tuple[Any, Tree]:
    """The loss of ``trained = model >> loss`` (unconverted: a tracer under JAX) and its gradient in ``params``."""
    value, pullback = vjp(trained, (targets, params), xs)
    (_, grads), _ = pullback(1.0)  # da = 1: the plain gradient of the loss
    return value, grads


def step(
    model: AnyLens, loss: AnyLens, params: Tree, batch: Batch, optimizer: Any, state: Any, *, key: int | None = None
) -> tuple[Tree, Any, float]:
    """One optimiser step on ``batch = (xs, targets)``: ``(new_params, new_state, loss_value)``.

    ``optimizer``: an optimiser of :mod:`prelens.learn` (``state`` from its ``init``), or its lens ``opt.lens``
    (``state`` from :func:`prelens.learn.init_state`; the step is one pullback of
    ``learner(model, loss, optimizer)``). ``loss_value`` is the loss at ``params`` (before the update). Pure: the
    arguments are not modified. ``key``: dropout on for this step (see :func:`value_and_grad`). ``fit`` takes this
    very step for each batch.

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.learn import sgd
    >>> model = linear(2, 1)
    >>> opt = sgd(0.1)
    >>> params = model.init(0)
    >>> batch = (np.ones((4, 2)), np.zeros((4, 1)))
    >>> new, state, before = step(model, mse, params, batch, opt, opt.init(params))
    >>> value_and_grad(model, mse, new, batch)[0] < before
    True
    """
    lens_form = optimizer_form("step", optimizer)
    model = as_lens("step", "model", model)
    loss = as_lens("step", "loss", loss)
    xs, targets = _args.batch("step", batch)
    dropout = key is not None
    if key is not None:  # the key is checked here, before any lens runs
        with_dropout((), key)
        xs = (key, xs)
    make = lambda: step_of(keyed(model) if dropout else model, loss, optimizer, lens_form)
    core = _made((model, loss, optimizer, dropout), make)  # keyed by the model, not a new keyed lens per call
    with autograd_off():  # as in value_and_grad
        new_params, new_state, value = core(params, state, xs, targets)
        return new_params, new_state, float(value)


#: The last few lenses and steps :func:`value_and_grad` and :func:`step` composed, by the identity of their parts:
#: a loop calling either reruns one lens, whose checked skeletons the trace keeps (its parts' tests then off).
_MADE: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}


def _made(parts: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    key = tuple(map(id, parts))
    found = _MADE.get(key)
    if found is None:
        if len(_MADE) >= 8:
            _MADE.pop(next(iter(_MADE)))
        found = _MADE[key] = (parts, make())  # the parts are kept, so that their ids stay theirs
    return found[1]


def step_of(model: AnyLens, loss: AnyLens, optimizer: Any, lens_form: bool, penalty: AnyLens | None = None) -> Core:
    """The step of ``model >> loss`` (plus ``penalty``) and ``optimizer``, composed once, as a :data:`Core`; the
    loss unconverted (a JAX tracer under ``jax.jit``)."""
    if lens_form:
        step_lens = learner(model, loss, optimizer, penalty=penalty)
        return lambda params, state, xs, targets, check=None: run_learner(step_lens, params, state, xs, targets)
    trained = model >> loss if penalty is None else penalised(model, loss, penalty)

    def by_gradient(
        params: Tree, state: Any, xs: Any, targets: Any, check: Check | None = None
    ) -> tuple[Tree, Any, Any]:
        value, grads = _value_and_grad(trained, params, xs, targets)
        if check is not None:
            check(value, grads)
        new_params, new_state = optimizer.update(grads, state, params)
        return new_params, new_state, value

    return by_gradient


def optimizer_form(fn: str, optimizer: Any) -> bool:
    """``True`` for an optimiser lens (or a composite ``opt >> ...`` of one), ``False`` for a plain optimiser.

    Anything else is an error naming ``fn``.

    >>> from prelens.learn import sgd
    >>> optimizer_form("fit", sgd(0.1))
    False
    """
    if isinstance(optimizer, PreLens):
        if find_optimizer(optimizer) is None:
            expected = "an optimiser of prelens.learn or its lens (or opt >> ... of one)"
            raise E.must_be(fn, "optimizer", expected, repr(optimizer))
        return True
    _args.optimizer(fn, optimizer)
    return False
