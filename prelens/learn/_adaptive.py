"""Adagrad, RMSprop, Adam and AdamW as reparameterisation lenses whose state travels with the parameters.

The paper's equations (with ``g = −p'``, the gradient when the learning-rate lens
is ``α = 1``; products and roots are per coordinate). Each keeps its step size
``lr`` (a number or a schedule) inside: dividing by a root mean square makes the
update blind to the scale of ``p'``, so ``α`` only picks the direction.

===========  ===================  =================================================================
lens         state                put
===========  ===================  =================================================================
``adagrad``  ``s`` (sum of g²)    ``s' = s + g²``;  ``p ↦ p − lr·g / (√s' + ε)``
``rmsprop``  ``v`` (mean of g²)   ``v' = ρv + (1−ρ)g²``;  ``p ↦ p − lr·g / (√v' + ε)``
``adam``     ``(t, m, v)``        ``m' = β₁m + (1−β₁)g``, ``v' = β₂v + (1−β₂)g²``,
                                  ``m̂ = m'/(1−β₁ᵗ⁺¹)``, ``v̂ = v'/(1−β₂ᵗ⁺¹)``;  ``p ↦ p − lr·m̂/(√v̂ + ε)``
``adamw``    ``(t, m, v)``        as ``adam``, and ``p ↦ p − lr·(m̂/(√v̂ + ε) + λ·p)``
===========  ===================  =================================================================

The states are the :mod:`prelens.optim` twins' (``AdagradState``, ``RMSpropState``,
``AdamState``), and so are the updates: the tests check each lens equal to its twin.

>>> import numpy as np
>>> from prelens import vjp
>>> opt = adagrad(0.1)
>>> _, pullback = vjp(opt, (), (np.ones(2), opt.init_state(np.ones(2))))
>>> pullback(np.array([-3.0, 4.0]))[1][0]
array([0.9, 1.1])
"""

from __future__ import annotations

from typing import Any

from prelens.core._tree import tree_map, tree_zip_map
from prelens.learn._objects import (
    AdagradState,
    AdamState,
    RMSpropState,
    _check_adam,
    _check_decay,
    _check_positive,
    _check_unit,
    _zeros_like,
    check_lr,
)
from prelens.learn._optimizer import OptimizerLens, like, optimizer_lens, root
from prelens.learn._xp import as_step, cast, power_gap

Tree = Any

__all__ = ["adagrad", "adam", "adamw", "rmsprop"]


def adagrad(lr: Any, eps: float = 1e-10) -> OptimizerLens:
    """Adagrad as a lens: ``s' = s + g²``, ``p ↦ p − lr·g / (√s' + ε)``; state ``AdagradState(s)``.

    Haskell::

        adagrad :: Double -> Double -> OptimizerLens AdagradState

    Equals ``prelens.optim.adagrad(lr, eps)`` under ``α = 1``.

    >>> adagrad(0.01)
    adagrad(0.01)
    """
    check_lr("adagrad", lr)
    _check_positive("adagrad", "eps", eps)

    def put(p: Tree, state: AdagradState, dp: Tree, lr_t: Any, lr_before: Any) -> tuple[Tree, AdagradState]:
        s = tree_zip_map(lambda a, d: like(a, a + d * d), state.sum_sq, dp)
        new = tree_zip_map(lambda x, d, a: like(x, x + cast(lr_t, x) * d / (root(a) + eps)), p, dp, s)
        return new, AdagradState(s)

    name = f"adagrad({lr!r}{'' if eps == 1e-10 else f', eps={eps!r}'})"
    return optimizer_lens(name, lr, AdagradState, lambda p: AdagradState(tree_map(_zeros_like, p)), put)


def rmsprop(lr: Any, rho: float = 0.9, eps: float = 1e-8) -> OptimizerLens:
    """RMSprop as a lens: ``v' = ρv + (1−ρ)g²``, ``p ↦ p − lr·g / (√v' + ε)``; state ``RMSpropState(v)``.

    Haskell::

        rmsprop :: Double -> Double -> Double -> OptimizerLens RMSpropState

    Equals ``prelens.optim.rmsprop(lr, rho, eps)`` under ``α = 1``.

    >>> rmsprop(0.001, rho=0.99)
    rmsprop(0.001, rho=0.99)
    """
    check_lr("rmsprop", lr)
    _check_unit("rmsprop", "rho", rho)
    _check_positive("rmsprop", "eps", eps)

    def put(p: Tree, state: RMSpropState, dp: Tree, lr_t: Any, lr_before: Any) -> tuple[Tree, RMSpropState]:
        v = tree_zip_map(lambda a, d: like(a, rho * a + (1.0 - rho) * d * d), state.mean_sq, dp)
        new = tree_zip_map(lambda x, d, a: like(x, x + cast(lr_t, x) * d / (root(a) + eps)), p, dp, v)
        return new, RMSpropState(v)

    extra = ("" if rho == 0.9 else f", rho={rho!r}") + ("" if eps == 1e-8 else f", eps={eps!r}")
    return optimizer_lens(
        f"rmsprop({lr!r}{extra})", lr, RMSpropState, lambda p: RMSpropState(tree_map(_zeros_like, p)), put
    )


def _adam(fn: str, lr: Any, b1: float, b2: float, eps: float, wd: float, extra: str) -> OptimizerLens:
    def put(p: Tree, state: AdamState, dp: Tree, lr_t: Any, lr_before: Any) -> tuple[Tree, AdamState]:
        t = as_step(state.step) + 1  # an int, or an integer array (traced under jax.jit)
        c1, c2 = power_gap(b1, t), power_gap(b2, t)  # 1 − β₁ᵗ, 1 − β₂ᵗ
        m = tree_zip_map(lambda a, d: like(a, b1 * a - (1.0 - b1) * d), state.mu, dp)  # g = −p'
        v = tree_zip_map(lambda a, d: like(a, b2 * a + (1.0 - b2) * d * d), state.nu, dp)

        def step(x: Any, a: Any, b: Any) -> Any:
            return like(x, x - cast(lr_t, x) * ((a / cast(c1, x)) / (root(b / cast(c2, x)) + eps) + wd * x))

        return tree_zip_map(step, p, m, v), AdamState(t, m, v)

    def zeros(p: Tree) -> AdamState:
        return AdamState(0, tree_map(_zeros_like, p), tree_map(_zeros_like, p))

    return optimizer_lens(f"{fn}({lr!r}{extra})", lr, AdamState, zeros, put)


def _adam_extra(b1: float, b2: float, eps: float) -> str:
    return (
        ("" if b1 == 0.9 else f", b1={b1!r}")
        + ("" if b2 == 0.999 else f", b2={b2!r}")
        + ("" if eps == 1e-8 else f", eps={eps!r}")
    )


def adam(lr: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> OptimizerLens:
    """Adam as a lens; state ``AdamState(t, m, v)`` (the step count and both moments travel with ``p``).

    Haskell::

        adam :: Double -> Double -> Double -> Double -> OptimizerLens AdamState

    ``m' = β₁m + (1−β₁)g``, ``v' = β₂v + (1−β₂)g²``, ``p ↦ p − lr·m̂/(√v̂ + ε)``
    with the bias corrections ``m̂ = m'/(1−β₁ᵗ⁺¹)``, ``v̂ = v'/(1−β₂ᵗ⁺¹)``. Equals
    ``prelens.optim.adam(lr, b1, b2, eps)`` under ``α = 1``.

    >>> import numpy as np
    >>> from prelens import vjp
    >>> opt = adam(0.1)
    >>> _, pullback = vjp(opt, (), (np.ones(1), opt.init_state(np.ones(1))))
    >>> pullback(np.array([-3.0]))[1][0]
    array([0.9])
    """
    _check_adam("adam", lr, b1, b2, eps)
    return _adam("adam", lr, b1, b2, eps, 0.0, _adam_extra(b1, b2, eps))


def adamw(lr: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01) -> OptimizerLens:
    """AdamW as a lens: Adam's update plus the decoupled decay ``p ↦ p − lr·λ·p``; state ``AdamState``.

    Haskell::

        adamw :: Double -> Double -> Double -> Double -> Double -> OptimizerLens AdamState

    ``λ = weight_decay``. The decay acts on the update, not on the loss, so it
    is not divided by ``√v̂`` (compare :func:`l2`, the penalty in the loss).
    Equals ``prelens.optim.adamw(...)`` under ``α = 1``.

    >>> adamw(0.001, weight_decay=0.1)
    adamw(0.001, weight_decay=0.1)
    """
    _check_adam("adamw", lr, b1, b2, eps)
    _check_decay("adamw", weight_decay)
    extra = _adam_extra(b1, b2, eps) + ("" if weight_decay == 0.01 else f", weight_decay={weight_decay!r}")
    return _adam("adamw", lr, b1, b2, eps, weight_decay, extra)
