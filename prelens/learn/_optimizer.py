"""Optimisers as lenses: the type, the common wiring, and the initial state.

In Cruttwell, Gavranović, Ghani, Wilson and Zanasi's *Categorical Foundations of
Gradient-Based Learning* (ESOP 2022) an optimiser is a *reparameterisation*: a
lens on the parameter wire of a parametric lens::

    U : (S × P, S × P) → (P, P')        get : (s, p) ↦ p            (what the model sees)
                                        put : ((s, p), p') ↦ (s', p'')  (the update)

Its forward pass hands the model the parameters (Nesterov hands it a
look-ahead point instead); its backward pass receives the parameter delta
``p'`` that the backward pass of ``model ▷ loss ▷ α`` produced and returns the
*new* parameters and state. Here the input is ``(params, state)`` (parameters
first, as the user holds them), the lens's own parameters are ``()``, and its
backward pass returns ``((), (new_params, new_state))``: a value of the input's
type, as the lens's backward type on that wire is ``S × P`` itself.

The delta that arrives is ``p' = −α·∇L`` when the learning-rate lens
:func:`~prelens.learn.learning_rate` is ``α``; every optimiser lens here reads
``g = −p'`` as its gradient, so with ``α = 1`` it is exactly its
:mod:`prelens.optim` twin (same hyperparameters, same state, same update),
which the tests check to 1e-12 over many steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, is_array, is_concrete, namespace
from prelens.core._lens import PreLens
from prelens.core._tree import check_structure, tree_map, tree_paths
from prelens.learn._objects import ScheduledState, _check_params, _is_real_leaf, lr_at, scheduled_state
from prelens.learn._xp import as_step, before

Tree = Any
#: ``put(params, state, delta, lr, lr_before) -> (new_params, new_state)``: the update at step
#: size ``lr`` (``lr_before``: the step size of the update before, which made the state). A step
#: size is a float, or a 0-d array when a schedule is read at a traced step (under ``jax.jit``).
Put = Callable[[Tree, Any, Tree, Any, Any], tuple[Tree, Any]]
#: ``get(params, state, lr) -> what the model sees`` (``lr``: the step size of the last update).
Get = Callable[[Tree, Any, Any], Tree]

__all__ = ["OptimizerLens", "init_state"]


@dataclass(frozen=True, eq=False, repr=False)
class OptimizerLens(PreLens[Any, Any, Any, Any, Any, Any, Any, Any]):
    """A :class:`~prelens.PreLens` on the parameter wire that also knows the initial state.

    Haskell (a synonym used in the signatures of the optimiser lenses)::

        type OptimizerLens s = PreLens P P' (P, s) (P, s) () () (P, s) (P, s)

    ``fwd((), (params, state)) -> (residue, params_seen)``,
    ``bwd(residue, delta) -> ((), (new_params, new_state))``, and
    ``init_state(params) -> state`` (the state its :mod:`prelens.optim` twin's
    ``init`` makes). Composed with ``>>`` (say with
    :func:`~prelens.learn.clip_by_global_norm`) it is a plain ``PreLens``;
    :func:`init_state` still finds the state through the composite.

    >>> import numpy as np
    >>> from prelens import forward
    >>> from prelens.learn import momentum
    >>> opt = momentum(0.1)
    >>> state = opt.init_state(np.zeros(2))
    >>> state, forward(opt, (), (np.ones(2), state))
    (MomentumState(velocity=array([0., 0.])), array([1., 1.]))
    """

    init_state: Callable[[Tree], Any] | None = None
    #: The step size it was made with: a number or a schedule (read by ``LearningRateLogger``).
    lr: Any = None


def init_state(optimizer: PreLens[Any, Any, Any, Any, Any, Any, Any, Any], params: Tree) -> Any:
    """The initial state of an optimiser lens (or of a composite ``opt >> ...``) for ``params``.

    Haskell::

        init_state :: OptimizerLens s -> Params -> s

    >>> import numpy as np
    >>> from prelens.learn import adam, clip_by_global_norm
    >>> init_state(adam(0.1) >> clip_by_global_norm(1.0), [np.zeros(2)]).step
    0
    """
    found = find_optimizer(optimizer)
    if found is None or found.init_state is None:
        expected = "an optimiser lens (prelens.learn.adam(...), ...) or a composite opt >> ... of one"
        raise E.must_be("init_state", "optimizer", expected, E.describe(optimizer))
    return found.init_state(params)


def find_optimizer(lens: Any) -> OptimizerLens | None:
    """The optimiser lens that makes ``lens``'s state: itself, or the first part of ``opt >> ...``."""
    while isinstance(lens, PreLens) and not isinstance(lens, OptimizerLens):
        if lens.op != ">>" or not lens.parts:
            return None
        lens = lens.parts[0]  # the first part takes (params, state): its state is the composite's
    return lens if isinstance(lens, OptimizerLens) else None


def optimizer_lens(
    name: str,
    lr: Any,
    state_type: type,
    init_inner: Callable[[Tree], Any],
    put: Put,
    get: Get | None = None,
) -> OptimizerLens:
    """An :class:`OptimizerLens` named ``name`` from its update ``put`` (and ``get``, the identity by default).

    ``lr`` is a number or a schedule; with a schedule the state is
    ``ScheduledState(step, inner)`` and ``put`` gets the schedule's values at
    ``step`` and at the step before (the one the state came from), ``get`` the latter.
    ``state_type`` is the type of the inner state (``tuple`` for ``()``); its tree
    fields must have the parameters' structure and shapes. The step count may be
    a 0-d integer array of the parameters' library (traced under ``jax.jit``):
    the count after it is then one too.
    """
    scheduled = not isinstance(lr, (int, float))

    def state_for(params: Tree) -> Any:
        _check_params(name, params)
        inner = init_inner(params)
        return ScheduledState(0, inner) if scheduled else inner

    def split(params: Tree, state: Any) -> tuple[Any, Any]:
        """``(step, inner state)``, checked against ``params``."""
        _check_params(name, params)
        t, inner = scheduled_state(name, state) if scheduled else (0, state)
        return t, _check_inner(name, state_type, params, inner)

    def rate(t: Any) -> Any:
        return lr_at(name, lr, t) if scheduled else float(lr)

    def fwd(p: tuple[()], s: tuple[Tree, Any]) -> tuple[tuple[Tree, Any], Tree]:
        if type(p) is not tuple or p != ():
            raise E.must_be(name, "parameters", "() (the parameters it updates come in its input)", E.describe_tree(p))
        params, state = _pair(name, "input", s)
        t, inner = split(params, state)
        seen = params if get is None else get(params, inner, rate(before(t)))
        return (_copy(params), _copy(state)), seen

    def bwd(m: tuple[Tree, Any], delta: Tree) -> tuple[tuple[()], tuple[Tree, Any]]:
        params, state = _pair(name, "residue", m)
        t, inner = split(params, state)
        check_structure(params, delta, what=f"{name}: the parameter delta", shapes=True)
        _check_real(name, "the parameter delta", delta)
        new_params, new_inner = put(params, inner, delta, rate(t), rate(before(t)))
        return (), (new_params, ScheduledState(t + 1, new_inner) if scheduled else new_inner)

    return OptimizerLens(fwd, bwd, name, init_state=state_for, lr=lr)


def _pair(name: str, what: str, x: Any) -> tuple[Any, Any]:
    if type(x) is tuple and len(x) == 2:
        return x[0], x[1]
    raise E.must_be(name, what, "a pair (params, state)", E.describe_tree(x))


def _check_inner(name: str, state_type: type, params: Tree, inner: Any) -> Any:
    """The inner state as ``state_type`` (``()`` for ``tuple``; a plain tuple of its fields is taken
    for the named tuple, as lenses take plain tuples for their parameters), trees shaped like ``params``."""
    if state_type is tuple:
        if type(inner) is not tuple or inner != ():
            raise E.optim_bad_state(name, "()", inner)
        return inner
    kind = state_type.__name__
    article = "an" if kind[0] in "AEIOU" else "a"
    fields: tuple[str, ...] = getattr(state_type, "_fields", ())
    if type(inner) is tuple and len(inner) == len(fields):
        inner = state_type(*inner)
    if not isinstance(inner, tuple) or type(inner) is not state_type:
        raise E.optim_bad_state(name, f"{article} {kind}", inner)
    values: tuple[Any, ...] = tuple(inner)
    for field, tree in zip(fields, values):
        if field == "step":
            if isinstance(tree, bool) or as_step(tree) is None:
                raise E.optim_bad_state(name, f"{article} {kind} with an int step >= 0", inner)
        else:
            check_structure(params, tree, what=f"{name}: the state's {field}", shapes=True)
            _check_real(name, f"the state's {field}", tree)
    return inner


def _check_real(name: str, what: str, tree: Tree) -> None:
    """Every leaf a real number or an array of them (a delta or a state: ints and floats)."""
    for path, x in tree_paths(tree):
        if not _is_real_leaf(x):
            raise E.optim_delta_dtype(name, what, path, E.describe(x))


def _copy(tree: Tree) -> Tree:
    """A copy of every array of ``tree`` (a residue never aliases its caller's values; JAX's are immutable)."""
    return tree_map(lambda x: x.copy() if isinstance(x, np.ndarray) else copy(x) if is_array(x) else x, tree)


def like(p: Any, x: Any) -> Any:
    """``x`` as a value of ``p``'s kind: an array of its dtype, a numpy scalar of its type, or a float.

    For another library's array ``p``, ``x`` (an array of that library) in ``p``'s
    dtype; a number ``p`` under a trace stays the traced 0-d array it became.
    """
    if isinstance(p, np.ndarray):
        return np.asarray(x, dtype=p.dtype)
    if isinstance(p, np.generic):
        return p.dtype.type(x)
    if is_array(p):
        return x if not is_array(x) or x.dtype == p.dtype else namespace(x).astype(x, p.dtype)
    if is_array(x) and not is_concrete(x):
        return x
    return float(x)


def root(x: Any) -> Any:
    """``√x`` of a running sum or mean of squares, clamped at 0 first.

    On a state that an optimiser reaches (never negative) the clamp changes
    nothing; it makes the update defined on every state, as a lens's backward
    map must be (the law kit runs it on random residues).
    """
    if isinstance(x, np.ndarray) or not is_array(x):
        return np.sqrt(np.maximum(x, 0.0))
    xp = namespace(x)
    return xp.sqrt(xp.maximum(x, xp.zeros_like(x)))
