"""The optimisers, each update written once against the array namespace, and gradient clipping.

The formulas are the table in docs/learning.md (``g`` the gradient, ``−p'`` in the lens view).
Nesterov's form keeps the look-ahead point as its parameters (as PyTorch does).
Adam computes ``p − lrₜ·m / (√v + ε̂)`` with ``lrₜ = lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ)`` and
``ε̂ = ε·√(1 − β₂ᵗ)``: the same value in fewer array passes. SGD alone keeps a
numpy path (its update is most of a small model's step; ``bench --peers`` measures it).

>>> import numpy as np
>>> opt = momentum(1.0, beta=0.5)
>>> p, s = opt.update(np.array([1.0]), opt.init(np.array([0.0])), np.array([0.0]))
>>> opt.update(np.array([1.0]), s, p)[0]
array([-2.5])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from prelens.backend._arrays import is_array, is_concrete, namespace
from prelens.core import _args
from prelens.core._lens import PreLens
from prelens.core._tree import tree_leaves, tree_map
from prelens.learn._optimizer import (
    NODES,
    AdagradState,
    AdamState,
    Mismatch,
    MomentumState,
    Optimizer,
    RMSpropState,
    Rule,
    _bad_state,
    as_leaf,
    check_number,
    check_params,
    check_real,
    diagnose,
    is_node,
    like,
    map_leaves,
    pass_through,
    python_numbers,
    sqrt,
    walk,
)
from prelens.learn._xp import as_step, cast, power_gap, total_squares

Tree = Any


@dataclass(frozen=True)
class SGD(Rule):
    """``sgd(lr)``: stochastic gradient descent ``p ← p − lr·g`` (``lr`` a number or a schedule); the state is ``()``.

    >>> sgd(0.5), sgd(0.5).update(np.array([2.0]), (), np.array([1.0]))
    (SGD(lr=0.5), (array([0.]), ()))
    """

    name: ClassVar[str] = "sgd"

    def _step(self, grads: Tree, state: Any, params: Tree, lr: Any) -> tuple[Tree, Any]:
        neg_lr = -lr
        try:
            return _sgd_walk(params, grads, neg_lr, _steps(neg_lr)), ()
        except (Mismatch, TypeError, ValueError):
            raise diagnose(self.name, params, (grads,), ()) from None


#: ``−lr`` as 0-d arrays by dtype, for each learning rate: numpy multiplies by them faster than by a float.
_STEPS: dict[float, dict[Any, np.ndarray]] = {}


def _steps(neg_lr: Any) -> dict[Any, np.ndarray]:
    if type(neg_lr) is not float:
        return {}
    steps = _STEPS.get(neg_lr)
    if steps is None:
        steps = {}
        if neg_lr and len(_STEPS) < 64:
            _STEPS[neg_lr] = steps
    return steps


def _sgd_walk(p: Tree, g: Tree, neg_lr: Any, steps: dict[Any, np.ndarray]) -> Tree:
    """SGD's numpy fast path: a node steps its float array children inline (``g·(−lr) + p``, the same
    numbers as the last line's leaf formula); every other leaf and node takes :func:`walk`."""
    cls = type(p)
    # A node seen before is one set lookup, without a call (the small model's step is mostly this walk).
    if (cls in NODES or (cls is not np.ndarray and is_node(cls))) and type(g) is cls and len(g) == len(p):
        children = []
        for c, d in zip(p, g):
            if type(c) is np.ndarray is type(d) and c.ndim and d.dtype is c.dtype and d.shape == c.shape:
                step = steps.get(c.dtype)
                if step is None and c.dtype.char in "fdg":
                    step = steps[c.dtype] = np.array(neg_lr, c.dtype)
                if step is not None:
                    new = d * step
                    new += c
                    children.append(new)
                    continue
            children.append(_sgd_walk(c, d, neg_lr, steps))
        return children if cls is list else tuple.__new__(cls, children)
    return walk(lambda x, d: (like(x, as_leaf(d, x) * cast(neg_lr, x) + x),), 1, p, [g])[0]


@dataclass(frozen=True)
class Momentum(Rule):
    """``momentum(lr, beta=0.9, nesterov=False)``: SGD with heavy-ball (or Nesterov's look-ahead) momentum.

    >>> momentum(0.1, beta=0.8)
    Momentum(lr=0.1, beta=0.8, nesterov=False)
    """

    beta: float = 0.9
    nesterov: bool = False
    name: ClassVar[str] = "momentum"
    state_type: ClassVar[type] = MomentumState

    checks: ClassVar[dict[str, str]] = {"beta": "unit", "nesterov": "flag"}

    def _leaf(self, p: Any, g: Any, lr: Any, v: Any) -> tuple[Any, Any]:
        v_new = v * self.beta + g
        step = v_new * self.beta + g if self.nesterov else v_new
        return like(p, step * -cast(lr, p) + p), like(p, v_new)


@dataclass(frozen=True)
class Adagrad(Rule):
    """``adagrad(lr, eps=1e-10)``: Adagrad (Duchi, Hazan & Singer, 2011), PyTorch's ``eps``.

    >>> opt = adagrad(0.1)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.9])
    """

    eps: float = 1e-10
    name: ClassVar[str] = "adagrad"
    state_type: ClassVar[type] = AdagradState

    checks: ClassVar[dict[str, str]] = {"eps": "positive"}

    def _leaf(self, p: Any, g: Any, lr: Any, s: Any) -> tuple[Any, Any]:
        s_new = s + g * g
        return like(p, g / (sqrt(s_new) + self.eps) * -cast(lr, p) + p), like(p, s_new)


@dataclass(frozen=True)
class RMSprop(Rule):
    """``rmsprop(lr, rho=0.9, eps=1e-8)``: RMSprop (Hinton, 2012), Keras's ``ρ = 0.9``.

    >>> opt = rmsprop(0.1, rho=0.75)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.8])
    """

    rho: float = 0.9
    eps: float = 1e-8
    name: ClassVar[str] = "rmsprop"
    state_type: ClassVar[type] = RMSpropState

    checks: ClassVar[dict[str, str]] = {"rho": "unit", "eps": "positive"}

    def _leaf(self, p: Any, g: Any, lr: Any, v: Any) -> tuple[Any, Any]:
        v_new = v * self.rho + (g * g) * (1.0 - self.rho)
        return like(p, g / (sqrt(v_new) + self.eps) * -cast(lr, p) + p), like(p, v_new)


@dataclass(frozen=True)
class Adam(Rule):
    """``adam(lr, b1=0.9, b2=0.999, eps=1e-8)``: Adam (Kingma & Ba, 2015), ``b1``, ``b2`` the moments' decays.

    >>> adam(1e-3)
    Adam(lr=0.001, b1=0.9, b2=0.999, eps=1e-08)
    >>> opt = adam(0.1)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.9])
    """

    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    name: ClassVar[str] = "adam"
    state_type: ClassVar[type] = AdamState

    checks: ClassVar[dict[str, str]] = {"b1": "unit", "b2": "unit", "eps": "positive"}

    def _step(self, grads: Tree, state: Any, params: Tree, lr: Any) -> tuple[Tree, Any]:
        b1, b2, wd = self.b1, self.b2, getattr(self, "weight_decay", 0.0)
        step = as_step(state.step)
        if step is None:
            raise _bad_state(self.name, "an AdamState with an int step >= 0", state)
        t = step + 1
        c1, c2 = power_gap(b1, t), power_gap(b2, t)
        if isinstance(c2, float):  # the step count known: floats; traced: 0-d arrays
            lr_t, eps_t = lr * math.sqrt(c2) / c1, self.eps * math.sqrt(c2)
        else:
            root_c2 = namespace(c2).sqrt(c2)
            lr_t, eps_t = cast(lr, c2) * root_c2 / c1, self.eps * root_c2
        keep = 1.0 - lr * wd  # decoupled decay: p ← p − lr·wd·p, besides the Adam step

        def leaf(p: Any, g: Any, m: Any, v: Any) -> tuple[Any, Any, Any]:
            g = as_leaf(g, p)
            mu = m * b1 + g * (1.0 - b1)
            nu = v * b2 + (g * g) * (1.0 - b2)
            kept = p if wd == 0.0 or (isinstance(keep, float) and keep == 1.0) else p * cast(keep, p)
            return like(p, mu / (sqrt(nu) + cast(eps_t, p)) * -cast(lr_t, p) + kept), like(p, mu), like(p, nu)

        new, mu, nu = map_leaves(self.name, leaf, params, (grads, state.mu, state.nu), ("mu", "nu"))
        return new, AdamState(t, mu, nu)


@dataclass(frozen=True)
class AdamW(Adam):
    """``adamw(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01)``: Adam with decoupled weight decay
    (Loshchilov & Hutter, 2019; PyTorch's ``λ = 0.01``; under a schedule the decay follows ``lr``).

    >>> opt = adamw(0.1, weight_decay=0.5)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.85])
    """

    weight_decay: float = 0.01
    name: ClassVar[str] = "adamw"

    checks: ClassVar[dict[str, str]] = {**Adam.checks, "weight_decay": "decay"}


#: Each optimiser's constructor is its class (``adam(0.1)`` is an ``Adam``): one object, two spellings.
sgd, momentum, adagrad, rmsprop, adam, adamw = SGD, Momentum, Adagrad, RMSprop, Adam, AdamW


# ------------------------------------------------------------------- clipping


@dataclass(frozen=True)
class ClipByGlobalNorm(Optimizer[Any]):
    """``optimizer`` fed gradients scaled by ``min(1, max_norm / ‖g‖)`` (``‖g‖`` over every leaf;
    a norm that is not finite leaves them as they are). Its state is ``optimizer``'s.

    >>> opt = ClipByGlobalNorm(sgd(1.0), 1.0)
    >>> opt.update(np.array([3.0, 4.0]), (), np.zeros(2))[0]
    array([-0.6, -0.8])
    """

    optimizer: Optimizer[Any]
    max_norm: float

    def __post_init__(self) -> None:
        python_numbers(self)
        _args.optimizer("clip_by_global_norm", self.optimizer)
        check_number("clip_by_global_norm", "max_norm", self.max_norm)

    @property
    def lr(self) -> Any:
        """The wrapped optimiser's step size."""
        return getattr(self.optimizer, "lr", None)

    def init(self, params: Tree) -> Any:
        """The wrapped optimiser's initial state."""
        return self.optimizer.init(params)

    def update(self, grads: Tree, state: Any, params: Tree) -> tuple[Tree, Any]:
        """Clip ``grads`` to the global norm ``max_norm``, then one step of the wrapped optimiser."""
        return self.optimizer.update(clip(grads, self.max_norm), state, params)

    @property
    def lens(self) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
        """``optimizer.lens >> clip_by_global_norm(max_norm)``."""
        lens = getattr(self.optimizer, "lens", None)
        if not isinstance(lens, PreLens):
            raise TypeError(f"{self.optimizer!r} has no lens view")
        clipped: PreLens[Any, Any, Any, Any, Any, Any, Any, Any] = lens >> clip_by_global_norm(self.max_norm)
        return clipped


def clip_by_global_norm(optimizer: Any = None, max_norm: Any = None) -> Any:
    """``clip_by_global_norm(optimizer, max_norm)``: ``optimizer`` with its gradients clipped first;
    ``clip_by_global_norm(max_norm)``: the same clipping as a lens ``p ↦ p`` whose backward pass
    clips the delta, to compose after an optimiser: ``adam(1e-3) >> clip_by_global_norm(1.0)``.

    >>> from prelens import vjp
    >>> clip_by_global_norm(sgd(0.1), 1.0)
    ClipByGlobalNorm(optimizer=SGD(lr=0.1), max_norm=1.0)
    >>> vjp(clip_by_global_norm(1.0), (), np.zeros(2))[1](np.array([3.0, -4.0]))
    ((), array([ 0.6, -0.8]))
    """
    if max_norm is None:  # one argument: the lens
        optimizer, max_norm = None, optimizer
    if optimizer is not None:
        return ClipByGlobalNorm(optimizer, max_norm)
    max_norm = _args.real("clip_by_global_norm", "max_norm", max_norm, low=0.0, low_open=True)
    name = f"clip_by_global_norm({max_norm!r})"
    return pass_through(name, check_params, lambda delta: clip(delta, max_norm, name))


def clip(tree: Tree, max_norm: float, fn: str = "clip_by_global_norm") -> Tree:
    """``tree · min(1, max_norm / ‖tree‖)``: numbers for numpy, a branch-free 0-d array for another library."""
    check_real(fn, "grads", tree)
    total, arrays = total_squares(tree_leaves(tree))
    if arrays is None:
        norm = math.sqrt(total)
        if not (math.isfinite(norm) and norm > max_norm):
            return tree
        scale = max_norm / norm
        return tree_map(lambda g: g * scale if isinstance(g, np.ndarray) else type(g)(g * scale), tree)
    xp = namespace(arrays)
    norm = xp.sqrt(arrays + total)
    capped = max_norm / xp.maximum(norm, xp.full_like(norm, max_norm))  # exactly 1 when short enough
    s = xp.where(xp.isfinite(norm), capped, xp.ones_like(norm))
    return tree_map(lambda g: g * cast(s, g) if is_array(g) else type(g)(g * s) if is_concrete(s) else g * s, tree)
