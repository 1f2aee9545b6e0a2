"""Optimisers: SGD, momentum, Adagrad, RMSprop, Adam, AdamW, as pure functions on parameter trees.

The backward pass of a lens, at the residue of one forward pass, is the plain
vector-Jacobian product; the step size and every other descent rule live here
only. An optimiser is a pair of
pure functions::

    state = opt.init(params)
    new_params, new_state = opt.update(grads, state, params)

``params`` and ``grads`` are trees of one structure (tuples, lists, named
tuples such as ``Para``, dicts, with ``()``/``None`` as empty nodes), with
float arrays or Python floats at the leaves. ``update`` never writes into
its arguments: it returns fresh arrays (allocating only the arrays it
returns) and keeps each parameter's dtype, so float32 stays float32.

Every ``lr`` is a number or a schedule (a function of the step, see
:func:`warmup_cosine` and its siblings); with a schedule the state is
:class:`ScheduledState` ``(step, state)``. :func:`clip_by_global_norm` wraps any
optimiser. Each optimiser has a twin lens in :mod:`prelens.learn` (the same
update, written as a reparameterisation of the parameters), tested equal.

The parameters may be arrays of any array-API library (numpy, PyTorch, JAX,
``array_api_strict``): ``init`` makes the state in their library, dtype and
device, and ``update`` returns arrays of that library, written with the array
API only (numpy keeps its in-place fast path). ``update`` traces under
``jax.jit`` with the state as an argument: a step count (``AdamState.step``,
``ScheduledState.step``; a Python int from ``init``) is then traced and comes
back a 0-d JAX integer array, taken as a count from then on; the schedules and
the clipping compute without branching on values.

>>> import numpy as np
>>> opt = sgd(0.1)
>>> params = (np.array([1.0, 2.0]), [0.5])
>>> new, state = opt.update((np.array([1.0, 1.0]), [2.0]), opt.init(params), params)
>>> new
(array([0.9, 1.9]), [0.3])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import (
    dtype_kind,
    dtype_name,
    is_array,
    is_concrete,
    is_real_scalar,
    namespace,
    shape,
    zeros_like,
)
from prelens.core import _args
from prelens.core._tree import check_structure, tree_map, tree_paths
from prelens.learn._schedules import Schedule, constant, exponential_decay, one_cycle, step_decay, warmup_cosine
from prelens.learn._xp import as_step, cast, fit, known, power_gap, sum_squares, traced_value, wide_float

Tree = Any
StateT = TypeVar("StateT")

__all__ = [
    "SGD",
    "Adagrad",
    "AdagradState",
    "Adam",
    "AdamState",
    "AdamW",
    "ClipByGlobalNorm",
    "Momentum",
    "MomentumState",
    "Optimizer",
    "RMSprop",
    "RMSpropState",
    "Schedule",
    "ScheduledState",
    "adagrad",
    "adam",
    "adamw",
    "clip_by_global_norm",
    "constant",
    "exponential_decay",
    "momentum",
    "one_cycle",
    "rmsprop",
    "sgd",
    "step_decay",
    "warmup_cosine",
]

#: A learning rate: a number, or a schedule (a function of the number of steps taken).
LR = float | Callable[[int], float]


class Optimizer(Protocol[StateT]):
    """What every optimiser offers: ``init`` and a pure ``update``.

    ``init :: Params -> s`` and ``update :: Grads -> s -> Params -> (Params, s)``,
    with ``s`` the state type (``()`` for SGD, :class:`AdamState` for Adam):

    >>> opt: Optimizer[AdamState] = adam(0.1)
    >>> new_params, state = opt.update(np.ones(2), opt.init(np.zeros(2)), np.zeros(2))
    >>> new_params, state.step
    (array([-0.1, -0.1]), 1)
    """

    def init(self, params: Tree) -> StateT:
        """The initial optimiser state for ``params`` (never aliases them)."""
        ...

    def update(self, grads: Tree, state: StateT, params: Tree) -> tuple[Tree, StateT]:
        """``(new_params, new_state)`` after one descent step along ``grads``."""
        ...


class MomentumState(NamedTuple):
    """The velocity of :class:`Momentum`: one tree shaped like the parameters.

    >>> momentum(0.1).init((np.zeros(2),))
    MomentumState(velocity=(array([0., 0.]),))
    """

    velocity: Tree


class AdamState(NamedTuple):
    """Adam's state: the number of steps taken and the two moment estimates (trees like the params).

    >>> adam(0.1).init([1.0])
    AdamState(step=0, mu=[0.0], nu=[0.0])
    """

    step: int
    mu: Tree
    nu: Tree


class AdagradState(NamedTuple):
    """Adagrad's state: the sum of the squared gradients so far (a tree like the params).

    >>> adagrad(0.1).init([1.0])
    AdagradState(sum_sq=[0.0])
    """

    sum_sq: Tree


class RMSpropState(NamedTuple):
    """RMSprop's state: the running mean of the squared gradients (a tree like the params).

    >>> rmsprop(0.1).init([1.0])
    RMSpropState(mean_sq=[0.0])
    """

    mean_sq: Tree


class ScheduledState(NamedTuple):
    """The state of an optimiser whose ``lr`` is a schedule: the steps taken and its own state.

    The schedule is read at ``step``; the count travels with the state, so a run
    resumed from a checkpoint continues the schedule where it stopped.

    >>> sgd(warmup_cosine(0.1, 2, 10)).init(np.zeros(2))
    ScheduledState(step=0, state=())
    """

    step: int
    state: Any


class _WithSchedule:
    """``init`` and ``update`` for an optimiser whose ``lr`` may be a schedule.

    A subclass defines ``name``, ``_init(params)`` and ``_update(grads, state, params, lr)``
    (with ``lr`` a number); a schedule wraps the state in :class:`ScheduledState`.
    """

    name: str
    lr: LR

    def init(self, params: Tree) -> Any:
        """The initial state for ``params`` (never aliases them)."""
        state = self._init(params)
        return state if _is_number(self.lr) else ScheduledState(0, state)

    def update(self, grads: Tree, state: Any, params: Tree) -> tuple[Tree, Any]:
        """One step along ``grads``; returns ``(new_params, new_state)``."""
        lr = self.lr
        if isinstance(lr, (int, float)):
            return self._update(grads, state, params, float(lr))
        t, inner = scheduled_state(self.name, state)
        new_params, new_inner = self._update(grads, inner, params, lr_at(self.name, lr, t))
        return new_params, ScheduledState(t + 1, new_inner)

    def _init(self, params: Tree) -> Any:
        raise NotImplementedError

    def _update(self, grads: Tree, state: Any, params: Tree, lr: Any) -> tuple[Tree, Any]:
        raise NotImplementedError


def _is_number(lr: Any) -> bool:
    return isinstance(lr, (int, float))


def check_lr(opt: str, lr: Any) -> None:
    """``lr`` must be a finite number > 0 or a schedule (a function of the step; not a class)."""
    if _is_number(lr) and not isinstance(lr, bool):
        _check_positive(opt, "lr", lr)
    elif not callable(lr) or isinstance(lr, type):
        raise E.bad_argument(opt, "lr", lr, "a finite number > 0 or a schedule (a function of the step)")


def scheduled_state(opt: str, state: Any) -> tuple[Any, Any]:
    """``(step, inner state)`` of a :class:`ScheduledState`, checked.

    The step is an int, or a 0-d integer array of another library (traced under
    ``jax.jit``), kept as it is so that the step after it stays in that library.
    """
    if type(state) is ScheduledState and isinstance(state.step, (int, np.integer)) and state.step >= 0:
        return int(state.step), state.state
    step = as_step(state.step) if type(state) is ScheduledState else None
    if step is None:
        raise E.optim_bad_state(opt, "a ScheduledState with an int step >= 0 (lr is a schedule)", state)
    return step, state.state


def lr_at(opt: str, schedule: Callable[[int], float], step: Any) -> Any:
    """The schedule's value at ``step``: a finite number >= 0, or an error naming the step.

    ``step`` is an int or a 0-d integer array: a concrete one is read as its int;
    a traced one (under ``jax.jit``) gives a traced 0-d float array, in the widest
    float of its library, whose value cannot be checked while tracing.
    """
    if not isinstance(step, int):
        n = known(step)
        if n is None:
            return _traced_lr(opt, schedule, step)
        step = n
    return _checked_lr(opt, step, schedule(step))


def _checked_lr(opt: str, step: Any, value: Any) -> float:
    """A schedule's value as a float: a finite number >= 0 (or a concrete 0-d real array of one)."""
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        if not (_is_real_scalar_array(value) and is_concrete(value)):
            raise E.bad_schedule_value(opt, step, value)
        value = float(value)  # a schedule written with array operations (to be traced), run at a known step
    lr = float(value)
    if not (math.isfinite(lr) and lr >= 0.0):
        raise E.bad_schedule_value(opt, step, value)
    return lr


def _is_real_scalar_array(x: Any) -> bool:
    return is_array(x) and is_real_scalar(x)


def _traced_lr(opt: str, schedule: Callable[[int], float], step: Any) -> Any:
    """The schedule at a traced step: traced with it, or called back on the host (see ``traced_value``).

    A traced value is a 0-d array of the widest float; its value is checked only
    when it is known (a constant, or the host call back, which checks it there).
    """
    value = traced_value(schedule, step, lambda n: lr_at(opt, schedule, n))
    if not _is_real_scalar_array(value) or is_concrete(value):
        return _checked_lr(opt, step, value)
    xp = namespace(value)
    return xp.astype(value, wide_float(xp))


# ------------------------------------------------------------------ SGD


@dataclass(frozen=True)
class SGD(_WithSchedule):
    """Plain gradient descent: ``p ← p − lr·g``. The state is ``()`` (a :class:`ScheduledState` of it
    when ``lr`` is a schedule).

    >>> import numpy as np
    >>> SGD(0.5).update(np.array([2.0]), (), np.array([1.0]))
    (array([0.]), ())
    """

    lr: LR
    name = "sgd"

    def __post_init__(self) -> None:
        check_lr("sgd", self.lr)

    def _init(self, params: Tree) -> tuple[()]:
        _check_params("sgd", params)
        return ()

    def _update(self, grads: Tree, state: tuple[()], params: Tree, lr: Any) -> tuple[Tree, tuple[()]]:
        if state != () or type(state) is not tuple:
            _check_state("sgd", state, tuple, "()")
        try:
            new_params = _sgd_walk(params, grads, -lr, _steps(-lr))
        except (_Mismatch, TypeError, ValueError):
            raise _diagnose("sgd", params, (grads,), ("grads",)) from None
        return new_params, ()


def _sgd_leaf(p: Any, g: Any, neg_lr: Any) -> Any:
    """``p − lr·g`` for one leaf (``neg_lr = −lr``): a fresh array, or a scalar like ``p``."""
    if type(p) is np.ndarray:
        if type(g) is np.ndarray and g.dtype == p.dtype and g.ndim:
            new = g * neg_lr  # a Python float keeps the dtype (0-d would give a scalar)
        else:
            new = np.multiply(g, neg_lr, out=np.empty_like(p))
        new += p
        return new
    if _is_scalar(p):
        return _scalar_like(p, p + neg_lr * g)
    return _as_leaf(g, p) * cast(neg_lr, p) + p  # any other library: the array API, nothing written into


#: ``−lr`` as 0-d arrays by dtype, for each learning rate (see :func:`_sgd_walk`): a fixed rate
#: makes them once; a schedule, for its first 64 rates.
_STEPS: dict[float, dict[Any, np.ndarray]] = {}


def _steps(neg_lr: Any) -> dict[Any, np.ndarray]:
    """The step arrays of ``neg_lr`` by dtype (filled by :func:`_sgd_walk`; not kept for 0 or a traced rate)."""
    if type(neg_lr) is not float:
        return {}
    steps = _STEPS.get(neg_lr)
    if steps is None:
        steps = {}
        if neg_lr and len(_STEPS) < 64:
            _STEPS[neg_lr] = steps
    return steps


def _sgd_walk(p: Tree, g: Tree, neg_lr: Any, steps: dict[Any, np.ndarray]) -> Tree:
    """SGD's update over the tree: :func:`_walk_pair` with the step inlined for float array leaves
    (the hot path of a small model, whose step is mostly this walk). A node steps its float array
    children in its own loop, without a call each, by ``steps[dtype]``: ``−lr`` as a 0-d array of
    the leaf's dtype (numpy multiplies by it faster than by a Python float, with the same result).
    Every other leaf, and a tree that is one array, takes :func:`_walk_pair`."""
    cls = type(p)
    if cls is list or cls is tuple or cls in _NAMEDTUPLES:
        if type(g) is not cls or len(g) != len(p):
            raise _Mismatch
        children = []
        for c, d in zip(p, g):
            if type(c) is np.ndarray is type(d) and c.ndim:  # not 0-d: numpy would give a scalar
                dt = c.dtype
                if d.dtype is dt and d.shape == c.shape:
                    step = steps.get(dt)
                    if step is None and dt.char in "fdg":
                        step = steps[dt] = np.array(neg_lr, dt)
                    if step is not None:
                        new = d * step
                        new += c
                        children.append(new)
                        continue
            children.append(_sgd_walk(c, d, neg_lr, steps))
        if cls is list:
            return children
        return tuple.__new__(cls, children)  # a named tuple without its generated __new__
    return _walk_pair(lambda x, y: _sgd_leaf(x, y, neg_lr), p, g)


def sgd(lr: LR) -> SGD:
    """Stochastic gradient descent with learning rate ``lr`` (``p ← p − lr·g``).

    Haskell::

        sgd :: Double -> Optimizer ()

    ``lr`` is a number or a schedule (a function of the step).

    >>> sgd(0.1)
    SGD(lr=0.1)
    """
    return SGD(lr)


# ------------------------------------------------------------- momentum


@dataclass(frozen=True)
class Momentum(_WithSchedule):
    """Gradient descent with (heavy-ball or Nesterov) momentum.

    Per leaf, with velocity ``v`` (zeros at first)::

        v ← β·v + g
        p ← p − lr·v                  (heavy ball)
        p ← p − lr·(g + β·v)          (nesterov=True)

    >>> import numpy as np
    >>> opt = Momentum(1.0, beta=0.5)
    >>> p, s = opt.update(np.array([1.0]), opt.init(np.array([0.0])), np.array([0.0]))
    >>> opt.update(np.array([1.0]), s, p)[0]
    array([-2.5])
    """

    lr: LR
    beta: float = 0.9
    nesterov: bool = False
    name = "momentum"

    def __post_init__(self) -> None:
        check_lr("momentum", self.lr)
        _check_unit("momentum", "beta", self.beta)
        _args.flag("momentum", "nesterov", self.nesterov)

    def _init(self, params: Tree) -> MomentumState:
        _check_params("momentum", params)
        return MomentumState(tree_map(_zeros_like, params))

    def _update(self, grads: Tree, state: MomentumState, params: Tree, lr: Any) -> tuple[Tree, MomentumState]:
        _check_state("momentum", state, MomentumState, "a MomentumState")
        beta, nesterov = self.beta, self.nesterov

        def leaf(p: Any, g: Any, v: Any) -> tuple[Any, Any]:
            if isinstance(p, np.ndarray):
                v_new = np.multiply(v, beta, out=np.empty_like(p))
                v_new += g
                new = np.multiply(v_new, beta if nesterov else 1.0, out=np.empty_like(p))
                if nesterov:
                    new += g
                new *= -lr
                new += p
                return new, v_new
            if not _is_scalar(p):  # any other library: the same steps, as expressions
                v_new = v * beta + _as_leaf(g, p)
                step = v_new * beta + _as_leaf(g, p) if nesterov else v_new
                return step * -cast(lr, p) + p, fit(v_new, p)
            v_s = beta * v + g
            step = g + beta * v_s if nesterov else v_s
            return _scalar_like(p, p - lr * step), _scalar_like(p, v_s)

        new_params, velocity = _map_leaves(
            "momentum", leaf, params, (grads, state.velocity), ("grads", "momentum velocity")
        )
        return new_params, MomentumState(velocity)


def momentum(lr: LR, beta: float = 0.9, nesterov: bool = False) -> Momentum:
    """SGD with momentum ``beta`` (``nesterov=True`` for Nesterov's look-ahead form).

    Haskell::

        momentum :: Double -> Double -> Bool -> Optimizer MomentumState

    >>> momentum(0.1, beta=0.8)
    Momentum(lr=0.1, beta=0.8, nesterov=False)
    """
    return Momentum(lr, beta, nesterov)


# ----------------------------------------------------------------- Adam


@dataclass(frozen=True)
class Adam(_WithSchedule):
    """Adam (Kingma & Ba, 2015) with bias-corrected moment estimates.

    Per leaf, at step ``t = 1, 2, ...`` with ``m``, ``v`` zeros at first::

        m ← β1·m + (1 − β1)·g
        v ← β2·v + (1 − β2)·g²
        p ← p − lr · m̂ / (√v̂ + ε),   m̂ = m / (1 − β1ᵗ),  v̂ = v / (1 − β2ᵗ)

    (computed as ``p − lrₜ·m / (√v + ε̂)`` with ``lrₜ = lr·√(1 − β2ᵗ)/(1 − β1ᵗ)``
    and ``ε̂ = ε·√(1 − β2ᵗ)``, the same value with fewer array passes).

    >>> import numpy as np
    >>> opt = Adam(0.1)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.9])
    """

    lr: LR
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    name = "adam"

    def __post_init__(self) -> None:
        _check_adam("adam", self.lr, self.b1, self.b2, self.eps)

    def _init(self, params: Tree) -> AdamState:
        _check_params("adam", params)
        return AdamState(0, tree_map(_zeros_like, params), tree_map(_zeros_like, params))

    def _update(self, grads: Tree, state: AdamState, params: Tree, lr: Any) -> tuple[Tree, AdamState]:
        return _adam_update("adam", grads, state, params, lr, self.b1, self.b2, self.eps, 0.0)


def adam(lr: LR, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Adam:
    """Adam with step size ``lr`` and moment decay rates ``b1``, ``b2``.

    Haskell::

        adam :: Double -> Double -> Double -> Double -> Optimizer AdamState

    ``lr``, ``b1``, ``b2``, ``eps``.

    >>> adam(1e-3)
    Adam(lr=0.001, b1=0.9, b2=0.999, eps=1e-08)
    """
    return Adam(lr, b1, b2, eps)


def _check_adam(opt: str, lr: Any, b1: float, b2: float, eps: float) -> None:
    check_lr(opt, lr)
    _check_unit(opt, "b1", b1)
    _check_unit(opt, "b2", b2)
    _check_positive(opt, "eps", eps)


def _adam_update(
    opt: str, grads: Tree, state: AdamState, params: Tree, lr: Any, b1: float, b2: float, eps: float, wd: float
) -> tuple[Tree, AdamState]:
    """One Adam step at step size ``lr``, with decoupled weight decay ``wd`` (AdamW; 0 for Adam).

    ``lr`` is a float, or a 0-d array under a trace (a schedule's value); the
    step count an int or a 0-d integer array (see :mod:`prelens._optim_xp`).
    """
    _check_state(opt, state, AdamState, "an AdamState")
    if isinstance(state.step, (int, np.integer)) and not isinstance(state.step, bool) and state.step >= 0:
        t = int(state.step) + 1
        root_c2 = math.sqrt(1.0 - b2**t)
        lr_t = lr * root_c2 / (1.0 - b1**t)
        eps_t = eps * root_c2
    else:
        t, lr_t, eps_t = _adam_scalars(opt, state, lr, b1, b2, eps)
    keep = 1.0 - lr * wd  # decoupled decay: p ← p − lr·wd·p, besides the Adam step

    def leaf(p: Any, g: Any, m: Any, v: Any) -> tuple[Any, Any, Any]:
        if isinstance(p, np.ndarray):
            mu = np.multiply(m, b1, out=np.empty_like(p))
            new = np.multiply(g, 1.0 - b1, out=np.empty_like(p))  # scratch, becomes the new p
            mu += new
            nu = np.multiply(v, b2, out=np.empty_like(p))
            np.multiply(g, g, out=new)
            new *= 1.0 - b2
            nu += new
            np.sqrt(nu, out=new)
            new += eps_t
            np.divide(mu, new, out=new)
            new *= -lr_t
            new += p if keep == 1.0 else p * keep
            return new, mu, nu
        if not _is_scalar(p):  # any other library: the same steps, as expressions
            g = _as_leaf(g, p)
            mu = m * b1 + g * (1.0 - b1)
            nu = v * b2 + (g * g) * (1.0 - b2)
            new = mu / (namespace(p).sqrt(nu) + cast(eps_t, p)) * -cast(lr_t, p)
            kept = p if wd == 0.0 or (isinstance(keep, float) and keep == 1.0) else p * cast(keep, p)
            return new + kept, fit(mu, p), fit(nu, p)
        mu_s = b1 * m + (1.0 - b1) * g
        nu_s = b2 * v + (1.0 - b2) * g * g
        new_s = keep * p - lr_t * mu_s / (math.sqrt(nu_s) + eps_t)
        return _scalar_like(p, new_s), _scalar_like(p, mu_s), _scalar_like(p, nu_s)

    new_params, mu, nu = _map_leaves(
        opt, leaf, params, (grads, state.mu, state.nu), ("grads", f"{opt} mu", f"{opt} nu")
    )
    return new_params, AdamState(t, mu, nu)


def _adam_scalars(opt: str, state: AdamState, lr: Any, b1: float, b2: float, eps: float) -> tuple[Any, Any, Any]:
    """``(t, lr_t, eps_t)`` for a step count that is an array (another library's, perhaps traced).

    The count after it stays an array of its library; the scalars are Python
    floats while the count is known (numpy's numbers), 0-d arrays under a trace.
    """
    step = as_step(state.step)
    if step is None:
        raise E.optim_bad_state(opt, "an AdamState with an int step >= 0", state)
    t = step + 1
    c2 = power_gap(b2, t)
    if isinstance(c2, float):
        root_c2 = math.sqrt(c2)
    else:
        root_c2 = namespace(c2).sqrt(c2)
        lr = cast(lr, c2)
    return t, lr * root_c2 / power_gap(b1, t), eps * root_c2


@dataclass(frozen=True)
class AdamW(_WithSchedule):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019).

    Per leaf, Adam's step plus a shrinking of the parameter that does not pass
    through the moment estimates::

        p ← p − lr · (m̂ / (√v̂ + ε) + λ·p)

    with ``λ = weight_decay`` (an L2 term in the loss would instead be divided by
    ``√v̂`` like the gradient: see :func:`prelens.learn.l2`). The state is an
    :class:`AdamState`.

    >>> import numpy as np
    >>> opt = AdamW(0.1, weight_decay=0.5)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.85])
    """

    lr: LR
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01
    name = "adamw"

    def __post_init__(self) -> None:
        _check_adam("adamw", self.lr, self.b1, self.b2, self.eps)
        _check_decay("adamw", self.weight_decay)

    def _init(self, params: Tree) -> AdamState:
        _check_params("adamw", params)
        return AdamState(0, tree_map(_zeros_like, params), tree_map(_zeros_like, params))

    def _update(self, grads: Tree, state: AdamState, params: Tree, lr: Any) -> tuple[Tree, AdamState]:
        return _adam_update("adamw", grads, state, params, lr, self.b1, self.b2, self.eps, self.weight_decay)


def adamw(lr: LR, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01) -> AdamW:
    """AdamW: Adam with decoupled weight decay ``weight_decay`` (PyTorch's default 0.01).

    Haskell::

        adamw :: Double -> Double -> Double -> Double -> Double -> Optimizer AdamState

    ``lr``, ``b1``, ``b2``, ``eps``, ``weight_decay``; ``lr`` may be a schedule
    (the decay follows it, as in PyTorch).

    >>> adamw(1e-3, weight_decay=0.1)
    AdamW(lr=0.001, b1=0.9, b2=0.999, eps=1e-08, weight_decay=0.1)
    """
    return AdamW(lr, b1, b2, eps, weight_decay)


# -------------------------------------------------------------- Adagrad


@dataclass(frozen=True)
class Adagrad(_WithSchedule):
    """Adagrad (Duchi, Hazan & Singer, 2011): each coordinate's step shrinks with its gradients so far.

    Per leaf, with ``s`` zeros at first::

        s ← s + g²
        p ← p − lr · g / (√s + ε)

    >>> import numpy as np
    >>> opt = Adagrad(0.1)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.9])
    """

    lr: LR
    eps: float = 1e-10
    name = "adagrad"

    def __post_init__(self) -> None:
        check_lr("adagrad", self.lr)
        _check_positive("adagrad", "eps", self.eps)

    def _init(self, params: Tree) -> AdagradState:
        _check_params("adagrad", params)
        return AdagradState(tree_map(_zeros_like, params))

    def _update(self, grads: Tree, state: AdagradState, params: Tree, lr: Any) -> tuple[Tree, AdagradState]:
        _check_state("adagrad", state, AdagradState, "an AdagradState")
        eps = self.eps

        def leaf(p: Any, g: Any, s: Any) -> tuple[Any, Any]:
            if isinstance(p, np.ndarray):
                new = np.multiply(g, g, out=np.empty_like(p))  # scratch, becomes the new p
                s_new = np.add(s, new, out=np.empty_like(p))
                np.sqrt(s_new, out=new)
                new += eps
                np.divide(g, new, out=new)
                new *= -lr
                new += p
                return new, s_new
            if not _is_scalar(p):  # any other library: the same steps, as expressions
                g = _as_leaf(g, p)
                s_new = s + g * g
                return g / (namespace(p).sqrt(s_new) + eps) * -cast(lr, p) + p, fit(s_new, p)
            s_s = s + g * g
            return _scalar_like(p, p - lr * g / (math.sqrt(s_s) + eps)), _scalar_like(p, s_s)

        new_params, sum_sq = _map_leaves("adagrad", leaf, params, (grads, state.sum_sq), ("grads", "adagrad sum_sq"))
        return new_params, AdagradState(sum_sq)


def adagrad(lr: LR, eps: float = 1e-10) -> Adagrad:
    """Adagrad with step size ``lr`` (PyTorch's ``eps`` by default).

    Haskell::

        adagrad :: Double -> Double -> Optimizer AdagradState

    >>> adagrad(0.01)
    Adagrad(lr=0.01, eps=1e-10)
    """
    return Adagrad(lr, eps)


# -------------------------------------------------------------- RMSprop


@dataclass(frozen=True)
class RMSprop(_WithSchedule):
    """RMSprop (Hinton's lecture 6e, 2012): divide by a running root mean square of the gradients.

    Per leaf, with ``v`` zeros at first::

        v ← ρ·v + (1 − ρ)·g²
        p ← p − lr · g / (√v + ε)

    (without momentum or centring; Keras's default ``ρ = 0.9``).

    >>> import numpy as np
    >>> opt = RMSprop(0.1, rho=0.75)
    >>> opt.update(np.array([3.0]), opt.init(np.array([1.0])), np.array([1.0]))[0]
    array([0.8])
    """

    lr: LR
    rho: float = 0.9
    eps: float = 1e-8
    name = "rmsprop"

    def __post_init__(self) -> None:
        check_lr("rmsprop", self.lr)
        _check_unit("rmsprop", "rho", self.rho)
        _check_positive("rmsprop", "eps", self.eps)

    def _init(self, params: Tree) -> RMSpropState:
        _check_params("rmsprop", params)
        return RMSpropState(tree_map(_zeros_like, params))

    def _update(self, grads: Tree, state: RMSpropState, params: Tree, lr: Any) -> tuple[Tree, RMSpropState]:
        _check_state("rmsprop", state, RMSpropState, "an RMSpropState")
        rho, eps = self.rho, self.eps

        def leaf(p: Any, g: Any, v: Any) -> tuple[Any, Any]:
            if isinstance(p, np.ndarray):
                v_new = np.multiply(v, rho, out=np.empty_like(p))
                new = np.multiply(g, g, out=np.empty_like(p))  # scratch, becomes the new p
                new *= 1.0 - rho
                v_new += new
                np.sqrt(v_new, out=new)
                new += eps
                np.divide(g, new, out=new)
                new *= -lr
                new += p
                return new, v_new
            if not _is_scalar(p):  # any other library: the same steps, as expressions
                g = _as_leaf(g, p)
                v_new = v * rho + (g * g) * (1.0 - rho)
                return g / (namespace(p).sqrt(v_new) + eps) * -cast(lr, p) + p, fit(v_new, p)
            v_s = rho * v + (1.0 - rho) * g * g
            return _scalar_like(p, p - lr * g / (math.sqrt(v_s) + eps)), _scalar_like(p, v_s)

        new_params, mean_sq = _map_leaves("rmsprop", leaf, params, (grads, state.mean_sq), ("grads", "rmsprop mean_sq"))
        return new_params, RMSpropState(mean_sq)


def rmsprop(lr: LR, rho: float = 0.9, eps: float = 1e-8) -> RMSprop:
    """RMSprop with step size ``lr`` and decay ``rho`` of the mean square.

    Haskell::

        rmsprop :: Double -> Double -> Double -> Optimizer RMSpropState

    >>> rmsprop(1e-3)
    RMSprop(lr=0.001, rho=0.9, eps=1e-08)
    """
    return RMSprop(lr, rho, eps)


# ------------------------------------------------------ gradient clipping


@dataclass(frozen=True)
class ClipByGlobalNorm:
    """``optimizer`` fed gradients rescaled so that their global norm is at most ``max_norm``.

    With ``‖g‖ = √(Σ over every leaf of Σ g²)``: ``g ← g · min(1, max_norm / ‖g‖)``,
    then ``optimizer.update``. The state is ``optimizer``'s. A non-finite norm
    leaves the gradients as they are (the trainer's non-finite check names them).

    >>> import numpy as np
    >>> opt = ClipByGlobalNorm(sgd(1.0), 1.0)
    >>> opt.update(np.array([3.0, 4.0]), (), np.zeros(2))[0]
    array([-0.6, -0.8])
    """

    optimizer: Optimizer[Any]
    max_norm: float

    def __post_init__(self) -> None:
        _args.optimizer("clip_by_global_norm", self.optimizer)
        _check_positive("clip_by_global_norm", "max_norm", self.max_norm)

    def init(self, params: Tree) -> Any:
        """The wrapped optimiser's initial state."""
        return self.optimizer.init(params)

    def update(self, grads: Tree, state: Any, params: Tree) -> tuple[Tree, Any]:
        """Clip ``grads`` to the global norm ``max_norm``, then one step of the wrapped optimiser."""
        scale = clip_scale("clip_by_global_norm", grads, self.max_norm)
        if type(scale) is not float:  # another library's arrays: scaled always, by exactly 1 when short enough
            grads = scale_tree(grads, scale)
        elif scale != 1.0:
            grads = tree_map(lambda g: g * scale if isinstance(g, np.ndarray) else type(g)(g * scale), grads)
        return self.optimizer.update(grads, state, params)


def clip_by_global_norm(optimizer: Optimizer[StateT], max_norm: float) -> ClipByGlobalNorm:
    """``optimizer`` with its gradients clipped to the global norm ``max_norm`` first.

    Haskell::

        clip_by_global_norm :: Optimizer s -> Double -> Optimizer s

    >>> clip_by_global_norm(sgd(0.1), 1.0)
    ClipByGlobalNorm(optimizer=SGD(lr=0.1), max_norm=1.0)
    """
    return ClipByGlobalNorm(optimizer, max_norm)


def global_norm(fn: str, tree: Tree) -> Any:
    """``√(Σ x²)`` over every real leaf of ``tree`` (accumulated in float64).

    A float for numpy arrays and numbers; with another library's arrays, a 0-d
    array of that library (its widest float), never read back to the host.
    """
    total = 0.0
    arrays: Any = None  # the sum over other libraries' arrays, kept on their device
    for path, x in tree_paths(tree):
        if not _is_real_leaf(x):
            raise E.optim_delta_dtype(fn, "grads", path, E.describe(x))
        if not isinstance(x, np.ndarray) and is_array(x):
            arrays = sum_squares(x) if arrays is None else arrays + sum_squares(x)
            continue
        a = np.asarray(x, dtype=np.float64)
        total += float(np.vdot(a, a))
    if arrays is None:
        return math.sqrt(total)
    return namespace(arrays).sqrt(arrays + total)


def clip_scale(fn: str, tree: Tree, max_norm: float) -> Any:
    """The factor ``min(1, max_norm / ‖tree‖)`` (1 for a norm that is not finite).

    A float for numpy; a 0-d array, computed without a branch, for another
    library's arrays (so that it traces under ``jax.jit``).
    """
    norm = global_norm(fn, tree)
    if isinstance(norm, float):
        return max_norm / norm if math.isfinite(norm) and norm > max_norm else 1.0
    xp = namespace(norm)
    capped = max_norm / xp.maximum(norm, xp.full_like(norm, max_norm))  # exactly 1 when the norm is short enough
    return xp.where(xp.isfinite(norm), capped, xp.ones_like(norm))


def scale_tree(tree: Tree, scale: Any) -> Tree:
    """Every leaf of ``tree`` times the 0-d array ``scale`` (in each leaf's dtype; numbers stay numbers when known)."""

    def leaf(g: Any) -> Any:
        if is_array(g):
            return g * cast(scale, g)
        return type(g)(g * scale) if is_concrete(scale) else g * scale

    return tree_map(leaf, tree)


# -------------------------------------------------------------- helpers


def _check_positive(opt: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise E.bad_argument(opt, name, value, "a finite number > 0")


def _check_decay(opt: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0):
        raise E.bad_argument(opt, "weight_decay", value, "a finite number >= 0")


def _check_unit(opt: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < 1.0):
        raise E.bad_argument(opt, name, value, "a number in [0, 1)")


def _check_state(opt: str, state: Any, cls: type, expected: str) -> None:
    """The state must be what ``opt.init`` made (``()`` for SGD, a named tuple otherwise)."""
    if type(state) is not cls or (cls is tuple and state != ()):
        raise E.optim_bad_state(opt, expected, state)


def _check_params(opt: str, params: Tree) -> None:
    """Every leaf must be a float array (of any library) or a Python/numpy float (or int) scalar."""
    for path, x in tree_paths(params):
        if isinstance(x, np.ndarray):
            if x.dtype.char not in "fdg":  # float16 is too coarse for the moments (eps underflows)
                raise E.optim_leaf_dtype(opt, path, E.describe(x))
        elif not isinstance(x, (int, float, np.floating)) or isinstance(x, bool):
            if not _is_real_leaf(x, floats_only=True):  # another library's float array passes
                raise E.optim_leaf_dtype(opt, path, E.describe(x))


#: Leaves that are numbers, not arrays: updated by Python arithmetic and kept numbers.
_SCALARS = (int, float, np.generic)


def _is_scalar(x: Any) -> bool:
    return isinstance(x, _SCALARS)


def _zeros_like(x: Any) -> Any:
    """A state leaf of zeros: :func:`zeros_like` (the parameter's library, dtype and device), 0.0 for a Python int."""
    return 0.0 if type(x) is int else zeros_like(x)


def _as_leaf(g: Any, p: Any) -> Any:
    """The delta ``g`` (an array, or a number) as an array in the dtype of the parameter array ``p``."""
    if not is_array(g):
        return g
    return g if g.dtype == p.dtype else namespace(g).astype(g, p.dtype)


def _scalar_like(p: Any, x: Any) -> Any:
    """Keep Python-float parameters Python floats (and numpy scalars numpy scalars)."""
    if isinstance(p, np.generic):
        return p.dtype.type(x)
    return float(x)


class _Mismatch(Exception):
    """Raised inside the walk; turned into a StructureError with a path outside it."""


LeafFn = Callable[..., tuple[Any, ...]]


def _map_leaves(
    opt: str, f: LeafFn, params: Tree, others: tuple[Tree, ...], names: tuple[str, ...]
) -> tuple[Tree, ...]:
    """Apply ``f(p, *leaves_of_others)`` leaf-wise; return one tree per output of ``f``.

    ``f`` returns ``len(others)`` values: the new parameter and one per state
    tree (``others`` is the grads followed by the state trees). A lean walk for
    the hot loop: one pass, no separate structure check; on a mismatch the full
    check runs to name the offending tree and path.
    """
    try:
        return _walk(f, len(others), params, list(others))
    except (_Mismatch, TypeError, ValueError):
        raise _diagnose(opt, params, others, names) from None


def _walk_pair(f: Callable[[Any, Any], Any], p: Tree, g: Tree) -> Tree:
    """``f`` leaf-wise on ``p`` and ``g`` (one output tree): :func:`_walk` for SGD, without its transposes."""
    cls = type(p)
    if cls is np.ndarray:
        if type(g) is not np.ndarray or g.shape != p.shape or p.dtype.char not in "fdg" or g.dtype.kind not in "iuf":
            _check_leaf(p, g)
        return f(p, g)
    if cls is list or cls is tuple or cls in _NAMEDTUPLES or _is_namedtuple_type(cls):
        if type(g) is not cls or len(g) != len(p):
            raise _Mismatch
        children = [_walk_pair(f, c, d) for c, d in zip(p, g)]
        if cls is list:
            return children
        return tuple(children) if cls is tuple else cls(*children)
    (out,) = _walk_other(lambda x, y: (f(x, y),), 1, p, [g])
    return out


def _walk(f: LeafFn, n_out: int, p: Tree, others: list[Tree]) -> tuple[Tree, ...]:
    cls = type(p)
    if cls is np.ndarray:  # the hot path first: exact types, no generic checks
        for o in others:
            if (
                type(o) is not np.ndarray
                or o.shape != p.shape
                or p.dtype.char not in "fdg"
                or o.dtype.kind not in "iuf"
            ):
                _check_leaf(p, o)
        return f(p, *others)
    if cls is tuple or cls is list or cls in _NAMEDTUPLES or _is_namedtuple_type(cls):
        n = len(p)
        for o in others:
            if type(o) is not cls or len(o) != n:
                raise _Mismatch
        if n == 0:
            return tuple(cls() for _ in range(n_out))
        # zip(p, *others) yields (child, *its partners); the star collects the partners in a list
        cols = [_walk(f, n_out, c, rest) for c, *rest in zip(p, *others)]
        if cls is tuple:
            return tuple(zip(*cols))
        if cls is list:
            return tuple(map(list, zip(*cols)))
        return tuple(cls(*out) for out in zip(*cols))  # a named tuple
    return _walk_other(f, n_out, p, others)


#: Named tuple classes seen so far (so the check is one set lookup per node).
_NAMEDTUPLES: set[type] = set()


def _is_namedtuple_type(cls: type) -> bool:
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        _NAMEDTUPLES.add(cls)
        return True
    return False


def _walk_other(f: LeafFn, n_out: int, p: Tree, others: list[Tree]) -> tuple[Tree, ...]:
    """Dicts, ``None`` and scalar leaves (the less common nodes)."""
    if isinstance(p, dict):
        keys = list(p)
        for o in others:
            if not isinstance(o, dict) or list(o) != keys:
                raise _Mismatch
        if not keys:
            return tuple({} for _ in range(n_out))
        cols = [_walk(f, n_out, p[k], [o[k] for o in others]) for k in keys]
        return tuple(dict(zip(keys, out)) for out in zip(*cols))
    if p is None:
        for o in others:
            if o is not None:
                raise _Mismatch
        return (None,) * n_out
    if isinstance(p, (tuple, list)):
        raise _Mismatch  # a tuple subclass that is not a named tuple: not a tree node we rebuild
    for o in others:
        _check_leaf(p, o)
    return f(p, *others)


def _is_real_leaf(x: Any, floats_only: bool = False) -> bool:
    """A real number or an array of them, of any library (of floats only, float32 or float64, for parameters)."""
    if isinstance(x, np.ndarray):
        return x.dtype.char in "fdg" if floats_only else x.dtype.kind in "iuf"
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, np.floating)) or (not floats_only and isinstance(x, (int, np.integer))):
        return True
    if not is_array(x):
        return False
    return dtype_name(x.dtype) in ("float32", "float64") if floats_only else dtype_kind(x.dtype) in "iuf"


def _check_leaf(p: Any, o: Any) -> None:
    """A leaf of grads or state must be a real number or array of the parameter's shape;
    the parameter a float (array) or a number."""
    if not (_is_real_leaf(p, floats_only=True) or (isinstance(p, (int, np.integer)) and not isinstance(p, bool))):
        raise _Mismatch
    if not _is_real_leaf(o) or shape(o) != shape(p):
        raise _Mismatch


def _diagnose(opt: str, params: Tree, others: tuple[Tree, ...], names: tuple[str, ...]) -> E.PrelensError:
    """The error for an update that failed: the first bad leaf or structure, named by its tree path."""
    _check_params(opt, params)
    for name, other in zip(names, others):
        check_structure(params, other, what=f"{opt}: {name}", shapes=True)
        for path, leaf in tree_paths(other):
            if not _is_real_leaf(leaf):
                return E.optim_delta_dtype(opt, name, path, E.describe(leaf))
    return E.optim_mismatch(opt)
