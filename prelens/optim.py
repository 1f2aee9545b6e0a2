"""Optimisers: SGD, SGD with momentum, Adam, as pure functions on parameter trees.

The backward pass of a lens is the plain vector-Jacobian product; the step
size and every other descent rule live here only. An optimiser is a pair of
pure functions::

    state = opt.init(params)
    new_params, new_state = opt.update(grads, state, params)

``params`` and ``grads`` are trees of one structure (tuples, lists, named
tuples such as ``Para``, dicts, with ``()``/``None`` as empty nodes), with
float arrays or Python floats at the leaves. ``update`` never writes into
its arguments: it returns fresh arrays (allocating only the arrays it
returns) and keeps each parameter's dtype, so float32 stays float32.

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

from . import _args
from . import _errors as E
from ._tree import check_structure, tree_map, tree_paths

Tree = Any
StateT = TypeVar("StateT")

__all__ = [
    "SGD",
    "Adam",
    "AdamState",
    "Momentum",
    "MomentumState",
    "Optimizer",
    "adam",
    "momentum",
    "sgd",
]


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


# ------------------------------------------------------------------ SGD


@dataclass(frozen=True)
class SGD:
    """Plain gradient descent: ``p ← p − lr·g``. The state is ``()``.

    >>> import numpy as np
    >>> SGD(0.5).update(np.array([2.0]), (), np.array([1.0]))
    (array([0.]), ())
    """

    lr: float

    def __post_init__(self) -> None:
        _check_positive("sgd", "lr", self.lr)

    def init(self, params: Tree) -> tuple[()]:
        """SGD keeps no state."""
        _check_params("sgd", params)
        return ()

    def update(self, grads: Tree, state: tuple[()], params: Tree) -> tuple[Tree, tuple[()]]:
        """One step ``p − lr·g`` on every leaf; returns ``(new_params, ())``."""
        _check_state("sgd", state, tuple, "()")
        neg_lr = -self.lr

        def leaf(p: Any, g: Any) -> Any:
            if type(p) is np.ndarray:
                if type(g) is np.ndarray and g.dtype == p.dtype and g.ndim:
                    new = g * neg_lr  # a Python float keeps the dtype (0-d would give a scalar)
                else:
                    new = np.multiply(g, neg_lr, out=np.empty_like(p))
                new += p
                return new
            return _scalar_like(p, p + neg_lr * g)

        try:
            new_params = _walk_pair(leaf, params, grads)
        except (_Mismatch, TypeError, ValueError):
            raise _diagnose("sgd", params, (grads,), ("grads",)) from None
        return new_params, ()


def sgd(lr: float) -> SGD:
    """Stochastic gradient descent with learning rate ``lr`` (``p ← p − lr·g``).

    Haskell::

        sgd :: Double -> Optimizer ()

    >>> sgd(0.1)
    SGD(lr=0.1)
    """
    return SGD(lr)


# ------------------------------------------------------------- momentum


@dataclass(frozen=True)
class Momentum:
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

    lr: float
    beta: float = 0.9
    nesterov: bool = False

    def __post_init__(self) -> None:
        _check_positive("momentum", "lr", self.lr)
        _check_unit("momentum", "beta", self.beta)
        _args.flag("momentum", "nesterov", self.nesterov)

    def init(self, params: Tree) -> MomentumState:
        """Zero velocity shaped like ``params``."""
        _check_params("momentum", params)
        return MomentumState(tree_map(_zeros_like, params))

    def update(self, grads: Tree, state: MomentumState, params: Tree) -> tuple[Tree, MomentumState]:
        """One momentum step; returns ``(new_params, MomentumState(new_velocity))``."""
        _check_state("momentum", state, MomentumState, "a MomentumState")
        lr, beta, nesterov = self.lr, self.beta, self.nesterov

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
            v_s = beta * v + g
            step = g + beta * v_s if nesterov else v_s
            return _scalar_like(p, p - lr * step), _scalar_like(p, v_s)

        new_params, velocity = _map_leaves(
            "momentum", leaf, params, (grads, state.velocity), ("grads", "momentum velocity")
        )
        return new_params, MomentumState(velocity)


def momentum(lr: float, beta: float = 0.9, nesterov: bool = False) -> Momentum:
    """SGD with momentum ``beta`` (``nesterov=True`` for Nesterov's look-ahead form).

    Haskell::

        momentum :: Double -> Double -> Bool -> Optimizer MomentumState

    >>> momentum(0.1, beta=0.8)
    Momentum(lr=0.1, beta=0.8, nesterov=False)
    """
    return Momentum(lr, beta, nesterov)


# ----------------------------------------------------------------- Adam


@dataclass(frozen=True)
class Adam:
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

    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        _check_positive("adam", "lr", self.lr)
        _check_unit("adam", "b1", self.b1)
        _check_unit("adam", "b2", self.b2)
        _check_positive("adam", "eps", self.eps)

    def init(self, params: Tree) -> AdamState:
        """Step count 0 and zero moments shaped like ``params``."""
        _check_params("adam", params)
        return AdamState(0, tree_map(_zeros_like, params), tree_map(_zeros_like, params))

    def update(self, grads: Tree, state: AdamState, params: Tree) -> tuple[Tree, AdamState]:
        """One Adam step; returns ``(new_params, AdamState(step + 1, mu, nu))``."""
        _check_state("adam", state, AdamState, "an AdamState")
        if not isinstance(state.step, (int, np.integer)) or isinstance(state.step, bool) or state.step < 0:
            raise E.optim_bad_state("adam", "an AdamState with an int step >= 0", state)
        b1, b2 = self.b1, self.b2
        t = int(state.step) + 1
        root_c2 = math.sqrt(1.0 - b2**t)
        lr_t = self.lr * root_c2 / (1.0 - b1**t)
        eps_t = self.eps * root_c2

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
                new += p
                return new, mu, nu
            mu_s = b1 * m + (1.0 - b1) * g
            nu_s = b2 * v + (1.0 - b2) * g * g
            new_s = p - lr_t * mu_s / (math.sqrt(nu_s) + eps_t)
            return _scalar_like(p, new_s), _scalar_like(p, mu_s), _scalar_like(p, nu_s)

        new_params, mu, nu = _map_leaves(
            "adam", leaf, params, (grads, state.mu, state.nu), ("grads", "adam mu", "adam nu")
        )
        return new_params, AdamState(t, mu, nu)


def adam(lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Adam:
    """Adam with step size ``lr`` and moment decay rates ``b1``, ``b2``.

    Haskell::

        adam :: Double -> Double -> Double -> Double -> Optimizer AdamState

    ``lr``, ``b1``, ``b2``, ``eps``.

    >>> adam(1e-3)
    Adam(lr=0.001, b1=0.9, b2=0.999, eps=1e-08)
    """
    return Adam(lr, b1, b2, eps)


# -------------------------------------------------------------- helpers


def _check_positive(opt: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise E.bad_argument(opt, name, value, "a finite number > 0")


def _check_unit(opt: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < 1.0):
        raise E.bad_argument(opt, name, value, "a number in [0, 1)")


def _check_state(opt: str, state: Any, cls: type, expected: str) -> None:
    """The state must be what ``opt.init`` made (``()`` for SGD, a named tuple otherwise)."""
    if type(state) is not cls or (cls is tuple and state != ()):
        raise E.optim_bad_state(opt, expected, state)


def _check_params(opt: str, params: Tree) -> None:
    """Every leaf must be a float array or a Python/numpy float (or int) scalar."""
    for path, x in tree_paths(params):
        if isinstance(x, np.ndarray):
            if x.dtype.char not in "fdg":  # float16 is too coarse for the moments (eps underflows)
                raise E.optim_leaf_dtype(opt, path, E.describe(x))
        elif not isinstance(x, (int, float, np.floating)) or isinstance(x, bool):
            raise E.optim_leaf_dtype(opt, path, E.describe(x))


def _zeros_like(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if isinstance(x, np.generic):
        return type(x)(0)
    return 0.0


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
    """A real number or an array of them (of floats only, for parameters)."""
    if isinstance(x, np.ndarray):
        return x.dtype.char in "fdg" if floats_only else x.dtype.kind in "iuf"
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (float, np.floating)) or (not floats_only and isinstance(x, (int, np.integer)))


def _check_leaf(p: Any, o: Any) -> None:
    """A leaf of grads or state must be a real number or array of the parameter's shape;
    the parameter a float (array) or a number."""
    if not (_is_real_leaf(p, floats_only=True) or (isinstance(p, (int, np.integer)) and not isinstance(p, bool))):
        raise _Mismatch
    if not _is_real_leaf(o) or np.shape(o) != np.shape(p):
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
