"""Reparameterisation, and the whole training step as one lens (docs/learning.md draws and unfolds both).

``reparameterise(f, U) = beta((U @ id_pre_lens) >> parameters_as_input(f))``, units dropped; ``learner`` is
``reparameterise(model >> loss, id_pre_lens @ U) >> learning_rate(α)``, one vjp and one pullback of ``()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens, PreLens, as_lens, id_pre_lens
from prelens.core._trace import vjp
from prelens.core._tree import tree_leaves
from prelens.learn._optimizer import Optimizer, find_optimizer, init_state, no_params
from prelens.learn._penalty import penalised
from prelens.learn._rate import learning_rate

Tree = Any


def parameters_as_input(lens: AnyLens) -> AnyLens:
    """``lens`` with its parameters moved into its input: parameters ``()``, input ``(p, s)``.

    The inverse of :func:`~prelens.beta`; its backward pass returns ``((), (dp, ds))``.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> f = parameters_as_input(linear(2, 1))
    >>> f, f.fwd((), (np.ones((2, 1)), np.ones((1, 2))))[1]
    (parameters_as_input(linear(2→1)), array([[2.]]))
    """
    f = as_lens("parameters_as_input", "lens", lens)
    name = f"parameters_as_input({f!r})"
    f_fwd, f_bwd = f.fwd, f.bwd

    def fwd(p: tuple[()], ps: tuple[Any, Any]) -> tuple[Any, Any]:
        no_params(name, p, "() (the parameters come in the input)")
        if not (isinstance(ps, tuple) and len(ps) == 2):
            raise E.must_be(name, "input", "a pair (parameters, input)", E.describe_tree(ps))
        out: tuple[Any, Any] = f_fwd(ps[0], ps[1])
        return out

    def bwd(m: Any, da: Any) -> tuple[tuple[()], tuple[Any, Any]]:
        dp, ds = f_bwd(m, da)
        return (), (dp, ds)

    return PreLens(fwd, bwd, name, None, "", (f,))


def reparameterise(lens: AnyLens, optimizer: AnyLens) -> AnyLens:
    """``lens`` whose parameters are made, and updated, by the lens ``optimizer`` on its parameter wire.

    The result has ``optimizer``'s parameters ``q`` (say ``(params, state)``); its backward pass returns
    the optimiser's result as their "delta" (for an optimiser lens: the new ``(params, state)``). It has
    an ``init`` when ``lens`` has one and ``optimizer`` is an optimiser lens (see the module's docstring).

    >>> import numpy as np
    >>> from prelens import vjp
    >>> from prelens.nn import linear
    >>> from prelens.learn import sgd
    >>> f = reparameterise(linear(1, 1), sgd(0.5))
    >>> y, pullback = vjp(f, (np.ones((1, 1)), ()), np.array([[2.0]]))
    >>> y, pullback(np.array([[1.0]]))[0]
    (array([[2.]]), (array([[2.]]), ()))
    """
    f = as_lens("reparameterise", "lens", lens)
    u = as_lens("reparameterise", "optimizer", optimizer.lens if isinstance(optimizer, Optimizer) else optimizer)
    units = None if u.init_fn is None else u.init(0)  # an optimiser has no parameters of its own: units only
    if units is None or tree_leaves(units):
        expected = "a lens without parameters of its own (its input is what it updates)"
        raise E.must_be("reparameterise", "optimizer", expected, repr(u))
    body = ((u @ id_pre_lens) >> parameters_as_input(f)).beta()
    out = body.dimap_p(lambda q: (((), (units, ())), q), lambda d: d[1])
    f_init = f.init_fn

    def init(rng: np.random.Generator) -> tuple[Any, Any]:
        params = f_init(rng)  # type: ignore[misc]  # only when it is not None
        return params, init_state(u, params)

    has_init = f_init is not None and find_optimizer(u) is not None
    return PreLens(out.fwd, out.bwd, f"reparameterise({f!r}, {u!r})", init if has_init else None, "", (u, f))


def learner(
    model: AnyLens,
    loss: AnyLens,
    optimizer: Any,
    *,
    rate: AnyLens | float | None = None,
    penalty: AnyLens | None = None,
) -> AnyLens:
    """The supervised learning step as one lens: ``reparameterise(model >> loss, id @ optimizer) >> rate``.

    Parameters ``((), (targets, (params, state)))``, input the batch ``xs``, output the loss; ``pullback(())``
    of its vjp is one step, its parameter part the new ``(params, state)``. ``optimizer``: an optimiser or its
    lens; ``rate``: a learning-rate lens, or a number ``α`` for ``learning_rate(α)`` (default 1.0); ``penalty``
    (e.g. :func:`l2`) is added to the loss through :func:`penalised`.

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.learn import sgd
    >>> step = learner(linear(1, 1), mse, sgd(0.25))
    >>> learner_step(step, np.ones((1, 1)), (), (np.array([[1.0]]), np.array([[3.0]])))
    (array([[2.]]), (), 4.0)
    """
    model = as_lens("learner", "model", model)
    loss = as_lens("learner", "loss", loss)
    optimizer = optimizer.lens if isinstance(optimizer, Optimizer) else optimizer
    if not isinstance(optimizer, PreLens):
        raise E.must_be("learner", "optimizer", "an optimiser of prelens.learn or its lens", E.describe(optimizer))
    if rate is None or (isinstance(rate, (int, float, np.integer, np.floating)) and not isinstance(rate, bool)):
        rate = learning_rate(1.0 if rate is None else rate)  # a number α: learning_rate(α)
    if not isinstance(rate, PreLens):
        raise E.must_be(
            "learner", "rate", "a learning-rate lens or a number (learning_rate(0.1), 0.1)", E.describe(rate)
        )
    trained = model >> loss if penalty is None else penalised(model, loss, as_lens("learner", "penalty", penalty))
    return reparameterise(trained, id_pre_lens @ optimizer) >> rate


def learner_step(step: AnyLens, params: Tree, state: Any, batch: tuple[Any, Any]) -> tuple[Tree, Any, float]:
    """One training step of a :func:`learner` lens: ``(new_params, new_state, loss)``.

    ``batch = (xs, targets)``; ``loss`` is the loss at ``params`` (before the update).

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.learn import momentum
    >>> step = learner(linear(1, 1), mse, momentum(0.1))
    >>> p, s, loss = learner_step(step, np.zeros((1, 1)), momentum(0.1).init(np.zeros((1, 1))),
    ...                           (np.ones((1, 1)), np.ones((1, 1))))
    >>> p, loss
    (array([[0.2]]), 1.0)
    """
    step = as_lens("learner_step", "step", step)
    xs, targets = _args.batch("learner_step", batch)
    new_params, new_state, value = run_learner(step, params, state, xs, targets)
    return new_params, new_state, float(value)


def run_learner(step: AnyLens, params: Tree, state: Any, xs: Any, targets: Any) -> tuple[Tree, Any, Any]:
    """The step itself, the loss as the lens gave it (a tracer under ``jax.jit``): one vjp, one pullback.

    :func:`learner_step` checks its arguments and runs it; so does :func:`prelens.train.step`
    for an optimiser lens, on ``learner(model, loss, opt)``.
    """
    value, pullback = vjp(step, ((), (targets, (params, state))), xs)
    (_, (_, new)), _ = pullback(())
    if not (isinstance(new, tuple) and len(new) == 2):
        expected = "a learner lens (its backward pass returns (params, state))"
        raise E.must_be("learner_step", "step", expected, repr(step))
    return new[0], new[1], value
