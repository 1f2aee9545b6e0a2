"""The optimiser: one object, two views — ``init``/``update`` on parameter trees, and a lens.

The two views are described in docs/api.md (``prelens.learn``); the lens is :func:`optimizer_lens`. Trees
are tuples, lists, named tuples, dicts, ``()``/``None`` with float arrays of any array-API library or
numbers at the leaves.

>>> import numpy as np
>>> from prelens.learn import sgd
>>> opt = sgd(0.1)
>>> params = (np.array([1.0, 2.0]), [0.5])
>>> opt.update((np.array([1.0, 1.0]), [2.0]), opt.init(params), params)
((array([0.9, 1.9]), [0.3]), ())
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import (
    copy,
    dtype_kind,
    dtype_name,
    is_array,
    is_concrete,
    is_real,
    is_real_scalar,
    namespace,
    shape,
)
from prelens.backend._arrays import zeros_like as _zeros
from prelens.core import _args
from prelens.core._lens import AnyLens, PreLens
from prelens.core._tree import check_structure, tree_map, tree_paths
from prelens.learn._xp import as_step, known, traced_value, wide_float

Tree = Any
StateT = TypeVar("StateT")
#: A learning rate: a number, or a schedule (a function of the number of steps taken).
LR = float | Callable[[int], float]


class MomentumState(NamedTuple):
    """The velocity of :func:`~prelens.learn.momentum`, a tree like the parameters.

    >>> from prelens.learn import momentum
    >>> momentum(0.1).init(np.zeros(2))
    MomentumState(velocity=array([0., 0.]))
    """

    velocity: Tree


class AdamState(NamedTuple):
    """Adam's steps taken and its two moment estimates (trees like the parameters).

    >>> from prelens.learn import adam
    >>> adam(0.1).init(np.zeros(2))
    AdamState(step=0, mu=array([0., 0.]), nu=array([0., 0.]))
    """

    step: int
    mu: Tree
    nu: Tree


class AdagradState(NamedTuple):
    """Adagrad's sum of the squared gradients so far (a tree like the parameters).

    >>> from prelens.learn import adagrad
    >>> adagrad(0.1).init(np.zeros(2))
    AdagradState(sum_sq=array([0., 0.]))
    """

    sum_sq: Tree


class RMSpropState(NamedTuple):
    """RMSprop's running mean of the squared gradients (a tree like the parameters).

    >>> from prelens.learn import rmsprop
    >>> rmsprop(0.1).init(np.zeros(2))
    RMSpropState(mean_sq=array([0., 0.]))
    """

    mean_sq: Tree


class ScheduledState(NamedTuple):
    """The steps taken and the optimiser's own state, when its ``lr`` is a schedule (read at ``step``).

    >>> from prelens.learn import sgd, warmup_cosine
    >>> sgd(warmup_cosine(0.1, 2, 10)).init(np.zeros(2))
    ScheduledState(step=0, state=())
    """

    step: int
    state: Any


# ---------------------------------------------------------------- the optimiser


class Optimizer(Generic[StateT]):
    """What every optimiser offers: ``init``, a pure ``update``, and the same update as a lens.

    >>> from prelens.learn import adam
    >>> opt = adam(0.1)
    >>> new_params, state = opt.update(np.ones(2), opt.init(np.zeros(2)), np.zeros(2))
    >>> new_params, state.step, opt.lens
    (array([-0.1, -0.1]), 1, adam(0.1))
    """

    name: ClassVar[str] = "optimizer"

    def init(self, params: Tree) -> StateT:
        """The initial state for ``params`` (never aliases them)."""
        raise NotImplementedError

    def update(self, grads: Tree, state: StateT, params: Tree) -> tuple[Tree, StateT]:
        """``(new_params, new_state)`` after one step along ``grads``."""
        raise NotImplementedError

    @cached_property
    def lens(self) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
        """The update as a reparameterisation lens on the parameter wire (see the module's docstring)."""
        return optimizer_lens(self)

    def __getstate__(self) -> dict[str, Any]:
        """What pickling keeps: the hyperparameters, not the cached lens (closures; made again when asked for)."""
        return {k: v for k, v in vars(self).items() if k != "lens"}

    def __rshift__(self, other: Any) -> Any:
        """``opt >> lens`` is ``opt.lens >> lens`` (say ``adam(1e-3) >> clip_by_global_norm(1.0)``)."""
        return self.lens >> (other.lens if isinstance(other, Optimizer) else other)

    def __matmul__(self, other: Any) -> Any:
        """``opt @ lens`` is ``opt.lens @ lens``."""
        return self.lens @ (other.lens if isinstance(other, Optimizer) else other)


@dataclass(frozen=True)
class Rule(Optimizer[Any]):
    """An optimiser with a step size ``lr`` (a number or a schedule) and a state of type ``state_type``.

    Its state is a ``state_type`` whose fields start as zeros shaped like the parameters, but a field named
    ``step``, which starts at 0. A rule defines ``_leaf(p, g, lr, *state)`` (one leaf's new value and state
    fields), or overrides ``_step(grads, state, params, lr)`` for a whole-tree update (SGD's numpy path; Adam,
    whose ``step`` field is not a tree); ``lr`` is a number (a 0-d array under a trace).
    """

    lr: LR
    state_type: ClassVar[type] = tuple
    #: How each hyperparameter is checked, in order: ``"unit"`` in [0, 1), ``"positive"`` > 0,
    #: ``"decay"`` >= 0, ``"flag"`` a bool (``lr`` always, first).
    checks: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        python_numbers(self)
        if _is_number(self.lr) and not isinstance(self.lr, bool):
            check_number(self.name, "lr", self.lr)
        elif not callable(self.lr) or isinstance(self.lr, type) or refuses_call(self.lr, 1):  # a function of the step
            what = refuses_call(self.lr, 1) if callable(self.lr) else None
            raise E.bad_argument(
                self.name, "lr", what or self.lr, "a finite number > 0 or a schedule (a function of the step)"
            )
        for field, kind in self.checks.items():
            check_number(self.name, field, getattr(self, field), kind)

    def init(self, params: Tree) -> Any:
        """The initial state for ``params`` (never aliases them)."""
        check_params(self.name, params)
        fields = getattr(self.state_type, "_fields", ())
        state = self.state_type(*(0 if f == "step" else tree_map(zeros_like, params) for f in fields))
        return state if _is_number(self.lr) else ScheduledState(0, state)

    def update(self, grads: Tree, state: Any, params: Tree) -> tuple[Tree, Any]:
        """One step along ``grads``; returns ``(new_params, new_state)``."""
        lr, name = self.lr, self.name
        if isinstance(lr, (int, float)):
            return self._step(grads, of_type(name, self.state_type, state), params, float(lr))
        t, inner = scheduled_state(name, state)
        new_params, new_inner = self._step(grads, of_type(name, self.state_type, inner), params, lr_at(name, lr, t))
        return new_params, ScheduledState(t + 1, new_inner)

    def _step(self, grads: Tree, state: Any, params: Tree, lr: Any) -> tuple[Tree, Any]:
        """Every leaf's :meth:`_leaf`, with the state's fields beside the gradient (one walk)."""
        leaf = self._leaf
        step = lambda p, g, *s: leaf(p, as_leaf(g, p), lr, *s)
        new, *out = map_leaves(self.name, step, params, (grads, *state), getattr(self.state_type, "_fields", ()))
        return new, self.state_type(*out)

    def _leaf(self, p: Any, g: Any, lr: Any, *state: Any) -> tuple[Any, ...]:
        """``(new_p, *new_state)`` of one leaf: the optimiser's formula."""
        raise NotImplementedError

    def label(self) -> str:
        """The call that makes it, non-default hyperparameters only: ``adam(0.1, b1=0.5)``."""
        extra = "".join(
            f", {f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)[1:]
            if getattr(self, f.name) != f.default
        )
        return f"{self.name}({self.lr!r}{extra})"


# ----------------------------------------------------------- schedules and steps


def _is_number(lr: Any) -> bool:
    return isinstance(lr, (int, float))


def scheduled_state(opt: str, state: Any) -> tuple[Any, Any]:
    """``(step, inner state)`` of a :class:`ScheduledState`; the step an int, or a 0-d integer array kept as it is."""
    step = as_step(state.step) if type(state) is ScheduledState else None
    if step is None:
        raise _bad_state(opt, "a ScheduledState with an int step >= 0 (lr is a schedule)", state)
    return step, state.state


def lr_at(opt: str, schedule: Callable[[int], float], step: Any) -> Any:
    """The schedule's value at ``step``: a finite number >= 0 (a traced 0-d float array at a traced step)."""
    n = known(step)
    if n is not None:
        return _checked_lr(opt, n, schedule(n))
    value = traced_value(schedule, step, lambda n: lr_at(opt, schedule, n))
    if is_concrete(value) or not (is_array(value) and is_real_scalar(value)):
        return _checked_lr(opt, step, value)
    xp = namespace(value)
    return xp.astype(value, wide_float(xp))


def _checked_lr(opt: str, step: Any, value: Any) -> float:
    """A finite number >= 0 (a concrete 0-d array: a schedule written with array operations, at a known step)."""
    if (is_real(value) or (is_real_scalar(value) and is_concrete(value))) and 0.0 <= float(value) < math.inf:
        return float(value)
    raise E.ArgumentError(
        f"{opt}: the lr schedule gave {value!r} at step {step}; a schedule must give a finite number >= 0"
    )


# ------------------------------------------------------------------- checks


def refuses_call(fn: Callable[..., Any], n: int) -> str | None:
    """``fn`` and its signature (``f1(y_true, y_pred)``) when it cannot take ``n`` positional arguments (a schedule
    takes one; ``fit``'s callbacks and metrics four, after an epoch's work); ``None`` when it can, or its signature
    cannot be read, so that the mistake is named when it is made."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (a builtin): the call will tell
        return None
    try:
        sig.bind(*range(n))
    except TypeError:
        bare = [p.replace(annotation=p.empty) for p in sig.parameters.values()]
        bare_sig = sig.replace(parameters=bare, return_annotation=sig.empty)
        return f"{str(getattr(fn, '__qualname__', E.describe(fn))).rsplit('<locals>.', 1)[-1]}{bare_sig}"
    return None


def python_numbers(hyper: Any) -> None:
    """The numpy scalars among a frozen dataclass's fields (``np.float32(0.1)``) made Python numbers, as the
    schedules take them (a ``bool`` stays one: it is never a number here)."""
    for field in dataclasses.fields(hyper):
        value = getattr(hyper, field.name)
        if isinstance(value, (np.integer, np.floating)):
            object.__setattr__(hyper, field.name, value.item())


def check_number(opt: str, name: str, value: Any, kind: str = "positive") -> None:
    """``value`` must be a number (not a bool) within the bounds of ``kind`` (see :attr:`Rule.checks`)."""
    if kind == "flag":
        _args.flag(opt, name, value)
    elif kind != "unit":
        _args.real(opt, name, value, low=0.0, low_open=kind == "positive")
    elif not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < 1.0):
        raise E.bad_argument(opt, name, value, "a number in [0, 1)")


def check_params(opt: str, params: Tree) -> None:
    """Every leaf a float array (float32/float64, any library; float16 is too coarse for the moments) or a number."""
    for path, x in tree_paths(params):
        if not (is_real_leaf(x, floats_only=True) or (isinstance(x, int) and not isinstance(x, bool))):
            raise E.DTypeError(
                f"{opt}: cannot update the parameter at {E.path_str(path)}: expected floats, got {E.describe(x)} "
                "(float32 or float64 arrays, or numbers)"
            )


def is_real_leaf(x: Any, floats_only: bool = False) -> bool:
    """A real number or an array of them, of any library (of floats only, float32 or float64, for parameters)."""
    if isinstance(x, np.ndarray):
        return x.dtype.char in "fdg" if floats_only else x.dtype.kind in "iuf"
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, np.floating)) or (not floats_only and isinstance(x, (int, np.integer))):
        return True
    return is_array(x) and (
        dtype_name(x.dtype) in ("float32", "float64") if floats_only else dtype_kind(x.dtype) in "iuf"
    )


def check_real(name: str, what: str, tree: Tree) -> None:
    """Every leaf a real number or an array of them (a delta or a state)."""
    for path, x in tree_paths(tree):
        if not is_real_leaf(x):
            raise E.DTypeError(f"{name}: {what} at {E.path_str(path)}: expected real numbers, got {E.describe(x)}")


def check_like(name: str, what: str, params: Tree, tree: Tree) -> None:
    """``tree`` (grads, a delta, a state's field) shaped like ``params``, with real leaves."""
    check_structure(params, tree, what=f"{name}: {what}", shapes=True)
    check_real(name, what, tree)


def of_type(opt: str, cls: type, state: Any) -> Any:
    """``state`` if it is a ``cls`` (``()`` for a plain tuple), else the error naming the optimiser."""
    if type(state) is not cls or (cls is tuple and state != ()):
        raise _bad_state(opt, _kind(cls), state)
    return state


def _kind(cls: type) -> str:
    return "()" if cls is tuple else f"{'an' if cls.__name__[0] in 'AEIOU' else 'a'} {cls.__name__}"


def _bad_state(opt: str, expected: str, got: Any) -> E.StructureError:
    return E.StructureError(
        f"{opt}: the optimiser state must be {expected} (from {opt}.init), got {E.describe_tree(got)}"
    )


# ------------------------------------------------------------------- leaves


def zeros_like(x: Any) -> Any:
    """A state leaf of zeros in the parameter's library, dtype and device (0.0 for a Python int)."""
    return 0.0 if type(x) is int else _zeros(x)


def sqrt(x: Any) -> Any:
    """``√x`` of a sum or mean of squares (any library, or a number), clamped at 0 (the law kit's random residues)."""
    if isinstance(x, np.ndarray) or not is_array(x):
        return np.sqrt(np.maximum(x, 0.0))
    xp = namespace(x)
    return xp.sqrt(xp.maximum(x, xp.zeros_like(x)))


def as_leaf(g: Any, p: Any) -> Any:
    """The delta ``g`` in the dtype of the parameter ``p`` (numbers as they are)."""
    if not is_array(g) or not is_array(p) or g.dtype == p.dtype:
        return g
    return namespace(g).astype(g, p.dtype)


def like(p: Any, x: Any) -> Any:
    """``x`` as a value of ``p``'s kind: an array of its dtype, a numpy scalar of its type, or a float
    (a number ``p`` under a trace stays the traced 0-d array it became)."""
    if isinstance(p, np.ndarray):
        return np.asarray(x, dtype=p.dtype)
    if isinstance(p, np.generic):
        return p.dtype.type(x)
    if is_array(p):
        return as_leaf(x, p)
    if is_array(x) and not is_concrete(x):
        return x
    return float(x)


# --------------------------------------------------------------------- walk


class Mismatch(Exception):
    """Raised inside a walk; turned into an error naming the tree and path outside it."""


def map_leaves(
    opt: str, f: Callable[..., tuple[Any, ...]], params: Tree, others: tuple[Tree, ...], fields: tuple[str, ...]
) -> tuple[Tree, ...]:
    """``f(p, *leaves_of_others)`` leaf-wise, one output tree per value it returns (one pass, checked on failure).

    ``others``: the grads, then the state's trees, named by ``fields`` only in an error (nothing built per step)."""
    try:
        return walk(f, len(others), params, list(others))
    except (Mismatch, TypeError, ValueError):
        raise diagnose(opt, params, others, fields) from None


#: The node classes seen so far: tuple, list and named tuples (so the check is one set lookup per node).
NODES: set[type] = {tuple, list}


def is_node(cls: type) -> bool:
    """A tuple, a list or a named tuple class: the nodes a walk rebuilds."""
    if cls in NODES:
        return True
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        NODES.add(cls)
        return True
    return False


def walk(f: Callable[..., tuple[Any, ...]], n_out: int, p: Tree, others: list[Tree]) -> tuple[Tree, ...]:
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
    if is_node(cls):
        n = len(p)
        for o in others:
            if type(o) is not cls or len(o) != n:
                raise Mismatch
        if n == 0:
            return tuple(cls() for _ in range(n_out))
        cols = [walk(f, n_out, c, rest) for c, *rest in zip(p, *others)]
        if cls is tuple:
            return tuple(zip(*cols))
        if cls is list:
            return tuple(map(list, zip(*cols)))
        return tuple(cls(*out) for out in zip(*cols))
    if isinstance(p, dict):
        keys = list(p)
        if any(not isinstance(o, dict) or list(o) != keys for o in others):
            raise Mismatch
        cols = [walk(f, n_out, p[k], [o[k] for o in others]) for k in keys]
        return tuple(dict(zip(keys, out)) for out in zip(*cols)) if keys else tuple({} for _ in range(n_out))
    if p is None:
        if any(o is not None for o in others):
            raise Mismatch
        return (None,) * n_out
    if isinstance(p, (tuple, list)):
        raise Mismatch  # a tuple subclass that is not a named tuple: not a node we rebuild
    for o in others:
        _check_leaf(p, o)
    return f(p, *others)


def _check_leaf(p: Any, o: Any) -> None:
    """A leaf of grads or state: real, of the parameter's shape; the parameter a float (array) or a number."""
    if not (is_real_leaf(p, floats_only=True) or (isinstance(p, (int, np.integer)) and not isinstance(p, bool))):
        raise Mismatch
    if not is_real_leaf(o) or shape(o) != shape(p):
        raise Mismatch


def diagnose(opt: str, params: Tree, others: tuple[Tree, ...], fields: tuple[str, ...]) -> E.PrelensError:
    """The error for an update that failed: the first bad leaf or structure, named by its tree path."""
    check_params(opt, params)
    for name, other in zip(("grads", *(f"the state's {f}" for f in fields)), others):
        check_like(opt, name, params, other)
    return E.StructureError(
        f"{opt}: parameters, grads and state do not share a structure the optimisers rebuild "
        "(tuples, lists, named tuples, dicts and None as nodes)"
    )


# --------------------------------------------------------------------- lens


@dataclass(frozen=True, eq=False, repr=False)
class OptimizerLens(PreLens[Any, Any, Any, Any, Any, Any, Any, Any]):
    """The lens view of an optimiser: a :class:`~prelens.PreLens` on the parameter wire that knows the state.

    ``fwd((), (params, state)) -> (residue, params)``, ``bwd(residue, p') -> ((),
    (new_params, new_state))``; ``init_state(params)`` is the optimiser's ``init``
    and ``lr`` its step size (read by ``LearningRateLogger``).

    >>> from prelens import forward
    >>> from prelens.learn import momentum
    >>> opt = momentum(0.1)
    >>> state = opt.init(np.zeros(2))
    >>> state, forward(opt.lens, (), (np.ones(2), state))
    (MomentumState(velocity=array([0., 0.])), array([1., 1.]))
    """

    init_state: Callable[[Tree], Any] | None = None
    lr: Any = None


def optimizer_lens(opt: Optimizer[Any]) -> OptimizerLens:
    """``opt`` as a lens: ``get (p, s) = p``, ``put ((p, s), p') = update(−p', s, p)``, checked on both passes (the
    state of a :class:`Rule` against its ``state_type``; another optimiser's is its own ``update``'s to check)."""
    rule = opt if isinstance(opt, Rule) else None
    name = repr(opt) if rule is None else rule.label()
    scheduled = rule is not None and not _is_number(rule.lr)
    state_type: type = getattr(opt, "state_type", tuple)

    def checked(params: Tree, state: Any) -> Any:
        check_params(name, params)
        if rule is None:
            return state
        if not scheduled:
            return _check_inner(name, state_type, params, state)
        t, inner = scheduled_state(name, state)
        return ScheduledState(t, _check_inner(name, state_type, params, inner))

    def fwd(p: tuple[()], s: tuple[Tree, Any]) -> tuple[tuple[Tree, Any], Tree]:
        no_params(name, p, "() (the parameters it updates come in its input)")
        params, state = _pair(name, "input", s)
        return (own_copy(params), own_copy(checked(params, state))), params

    def bwd(m: tuple[Tree, Any], delta: Tree) -> tuple[tuple[()], tuple[Tree, Any]]:
        params, state = _pair(name, "residue", m)
        state = checked(params, state)
        check_like(name, "the parameter delta", params, delta)
        return (), opt.update(tree_map(lambda d: -d, delta), state, params)

    return OptimizerLens(fwd, bwd, name, init_state=opt.init, lr=getattr(opt, "lr", None))


def _pair(name: str, what: str, x: Any) -> tuple[Any, Any]:
    if type(x) is tuple and len(x) == 2:
        return x[0], x[1]
    raise E.must_be(name, what, "a pair (params, state)", E.describe_tree(x))


def _check_inner(name: str, state_type: Any, params: Tree, inner: Any) -> Any:
    """The state as ``state_type`` (a plain tuple of its fields is taken), trees shaped like ``params``."""
    fields: tuple[str, ...] = getattr(state_type, "_fields", ())
    if type(inner) is tuple and len(inner) == len(fields):
        inner = state_type(*inner)
    inner = of_type(name, state_type, inner)
    for field, tree in zip(fields, inner):
        if field == "step":
            if isinstance(tree, bool) or as_step(tree) is None:
                raise _bad_state(name, f"{_kind(state_type)} with an int step >= 0", inner)
        else:
            check_like(name, f"the state's {field}", params, tree)
    return inner


def own_copy(tree: Tree) -> Tree:
    """A copy of every array of ``tree`` (a residue never aliases its caller's values)."""
    return tree_map(lambda x: x.copy() if isinstance(x, np.ndarray) else copy(x) if is_array(x) else x, tree)


def no_params(name: str, p: Any, expected: str = "()") -> None:
    """The parameters of a lens that has none of its own must be ``()``."""
    if type(p) is not tuple or p != ():
        raise E.must_be(name, "parameters", expected, E.describe_tree(p))


def pass_through(name: str, check: Callable[[str, Any], None], back: Callable[[Any], Any]) -> AnyLens:
    """A lens without parameters or residue: forward ``x ↦ x`` (``check(name, x)`` first), backward ``back``."""

    def fwd(p: tuple[()], x: Any) -> tuple[tuple[()], Any]:
        no_params(name, p)
        check(name, x)
        return (), x

    def bwd(m: tuple[()], delta: Any) -> tuple[tuple[()], Any]:
        if type(m) is not tuple or m != ():
            raise E.bad_residue(name, m)
        return (), back(delta)

    return PreLens(fwd, bwd, name)


def init_state(optimizer: Any, params: Tree) -> Any:
    """The initial state of an optimiser, its lens, or a composite ``opt >> ...`` of one, for ``params``.

    >>> from prelens.learn import adam, clip_by_global_norm
    >>> init_state(adam(0.1) >> clip_by_global_norm(1.0), [np.zeros(2)]).step
    0
    """
    if isinstance(optimizer, Optimizer):
        return optimizer.init(params)
    found = find_optimizer(optimizer)
    if found is None or found.init_state is None:
        expected = "an optimiser lens (prelens.learn.adam(...).lens, ...) or a composite opt >> ... of one"
        raise E.must_be("init_state", "optimizer", expected, E.describe(optimizer))
    return found.init_state(params)


def find_optimizer(lens: Any) -> OptimizerLens | None:
    """The optimiser lens that makes ``lens``'s state: itself, or the first part of ``opt >> ...``."""
    while isinstance(lens, PreLens) and not isinstance(lens, OptimizerLens):
        if lens.op != ">>" or not lens.parts:
            return None
        lens = lens.parts[0]
    return lens if isinstance(lens, OptimizerLens) else None
