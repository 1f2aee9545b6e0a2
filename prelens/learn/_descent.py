"""Gradient descent, momentum and Nesterov momentum as reparameterisation lenses.

The paper's equations, with ``p'`` the parameter delta that reaches the optimiser
(``p' = −α·∇L`` under :func:`~prelens.learn.learning_rate` ``α``) and ``g = −p'``
(the gradient when ``α = 1``); ``lr`` is the optimiser's own step size (1 gives the
paper's lenses exactly, the step then living in ``α``):

=====================  =====================  =========================================
lens                   get                    put
=====================  =====================  =========================================
``gradient_descent``   ``(p, ()) ↦ p``        ``((p, ()), p') ↦ (p + lr·p', ())``
``momentum``           ``(p, v) ↦ p``         ``v' = β·v + g``,  ``p ↦ p − lr·v'``
``nesterov``           ``(p, v) ↦ p − lr·β·v``  as ``momentum``
=====================  =====================  =========================================

Nesterov momentum differs from momentum in its *forward* pass only: the model is
run at the look-ahead point where the momentum is about to carry the parameters
(Sutskever et al., 2013). Its twin, ``prelens.optim.momentum(nesterov=True)``,
keeps the look-ahead point itself as its parameters, so the twin's parameters are
this lens's ``get`` (the tests check it). The velocity ``v`` is kept in
gradient units, as the twins keep it (the paper's ``s = −lr·v``).

>>> import numpy as np
>>> from prelens import vjp
>>> opt = gradient_descent(1.0)
>>> _, pullback = vjp(opt, (), (np.array([1.0, 2.0]), ()))
>>> pullback(np.array([-0.1, 0.5]))
((), (array([0.9, 2.5]), ()))
"""

from __future__ import annotations

from typing import Any

from prelens.core._tree import tree_map, tree_zip_map
from prelens.learn._objects import MomentumState, _check_unit, _zeros_like, check_lr
from prelens.learn._optimizer import OptimizerLens, like, optimizer_lens
from prelens.learn._xp import cast

Tree = Any

__all__ = ["gradient_descent", "momentum", "nesterov"]


def _label(fn: str, lr: Any, extra: str = "") -> str:
    return f"{fn}({lr!r}{extra})"


def gradient_descent(lr: Any) -> OptimizerLens:
    """The paper's gradient update as a lens: ``get (p, ()) = p``, ``put ((p, ()), p') = (p + lr·p', ())``.

    Haskell::

        gradient_descent :: Double -> OptimizerLens ()

    With ``lr = 1`` it is the paper's lens exactly (the step size then lives in
    the learning-rate lens); with ``α = 1`` it equals ``prelens.optim.sgd(lr)``.
    ``lr`` may be a schedule (the state is then ``ScheduledState(step, ())``).

    >>> gradient_descent(0.1), gradient_descent(0.1).init_state([1.0])
    (gradient_descent(0.1), ())
    """
    check_lr("gradient_descent", lr)

    def put(p: Tree, state: tuple[()], dp: Tree, lr_t: Any, lr_before: Any) -> tuple[Tree, tuple[()]]:
        return tree_zip_map(lambda x, d: like(x, x + cast(lr_t, x) * d), p, dp), ()

    return optimizer_lens(_label("gradient_descent", lr), lr, tuple, lambda p: (), put)


def _velocity(beta: float) -> Any:
    def put_v(v: Tree, dp: Tree) -> Tree:
        return tree_zip_map(lambda u, d: like(u, beta * u - d), v, dp)  # v' = β·v + g,  g = −p'

    return put_v


def momentum(lr: Any, beta: float = 0.9) -> OptimizerLens:
    """Momentum as a lens: the state is the velocity ``v``; ``v' = β·v + g``, ``p ↦ p − lr·v'``.

    Haskell::

        momentum :: Double -> Double -> OptimizerLens MomentumState

    ``g = −p'``. Equals ``prelens.optim.momentum(lr, beta)`` under ``α = 1``.

    >>> import numpy as np
    >>> from prelens import vjp
    >>> opt = momentum(1.0, beta=0.5)
    >>> _, pullback = vjp(opt, (), (np.zeros(1), opt.init_state(np.zeros(1))))
    >>> pullback(np.array([-1.0]))
    ((), (array([-1.]), MomentumState(velocity=array([1.]))))
    """
    check_lr("momentum", lr)
    _check_unit("momentum", "beta", beta)
    put_v = _velocity(beta)

    def put(p: Tree, state: MomentumState, dp: Tree, lr_t: Any, lr_before: Any) -> tuple[Tree, MomentumState]:
        v = put_v(state.velocity, dp)
        return tree_zip_map(lambda x, u: like(x, x - cast(lr_t, x) * u), p, v), MomentumState(v)

    label = _label("momentum", lr, f", beta={beta!r}")
    return optimizer_lens(label, lr, MomentumState, lambda p: MomentumState(tree_map(_zeros_like, p)), put)


def nesterov(lr: Any, beta: float = 0.9) -> OptimizerLens:
    """Nesterov momentum as a lens: momentum's update, the model run at the look-ahead ``p − lr·β·v``.

    Haskell::

        nesterov :: Double -> Double -> OptimizerLens MomentumState

    The carried ``p`` is the point before the look-ahead; ``forward(opt, (), (p,
    state))`` is what the model sees, and equals the parameters of
    ``prelens.optim.momentum(lr, beta, nesterov=True)`` step for step (under a
    schedule, ``get`` uses the step size of the update that made the velocity, and
    the update moves ``p`` by ``−lr_before·β·v − lr·g``, which is ``−lr·v'`` at a
    constant step size).

    >>> import numpy as np
    >>> from prelens import forward
    >>> opt = nesterov(0.5, beta=0.5)
    >>> forward(opt, (), (np.zeros(1), opt.init_state(np.zeros(1))._replace(velocity=np.ones(1))))
    array([-0.25])
    """
    check_lr("nesterov", lr)
    _check_unit("nesterov", "beta", beta)
    put_v = _velocity(beta)

    def get(p: Tree, state: MomentumState, lr_t: Any) -> Tree:
        return tree_zip_map(lambda x, u: like(x, x - cast(lr_t, x) * beta * u), p, state.velocity)

    def put(p: Tree, state: MomentumState, dp: Tree, lr_t: Any, lr_before: Any) -> tuple[Tree, MomentumState]:
        v = put_v(state.velocity, dp)
        # p − lr·v' at a constant step size; under a schedule the old momentum moves at the old step size
        change = (lr_t - lr_before) * beta

        def step(x: Any, u: Any, w: Any) -> Any:
            return like(x, x - cast(lr_t, x) * u + cast(change, x) * w)

        return tree_zip_map(step, p, v, state.velocity), MomentumState(v)

    label = _label("nesterov", lr, f", beta={beta!r}")
    return optimizer_lens(label, lr, MomentumState, lambda p: MomentumState(tree_map(_zeros_like, p)), put, get)
