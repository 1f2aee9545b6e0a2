"""Every optimiser, and every optimiser lens, run on numpy and on another array library from the same values.

:func:`check_optimizer_on` takes a backend name (``"array_api_strict"``, ``"torch"``,
``"jax"``) and the name of a case in :data:`CASES`; it runs five updates on numpy
and five on the backend, from the same parameters and gradients, and asserts that

* every array of the parameters and the state (the state ``init`` made
  included) belongs to the backend: nothing fell back to numpy;
* parameters and state equal numpy's to ``1e-12`` relative in float64
  (``1e-5`` in float32) after every step, and step counts equal numpy's;
* the backend's arguments were not written into.

:func:`check_optimizer_jit` (JAX) compiles ``update`` with ``jax.jit``, passing
params, grads and state as arguments (every state leaf traced, the step count
too), and asserts the compiled steps equal the eager ones. ``tests/backends/
test_optim_backends.py`` runs the cases on ``array_api_strict``;
``tests_peers`` can run them on PyTorch and JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import prelens
from prelens import learn as L
from prelens import learn as O
from prelens import vjp
from prelens.backend import _arrays as B
from prelens.nn import DenseParams

from .harness import assert_close, assert_in_library

Tree = Any
STEPS = 5


@dataclass(frozen=True)
class OptimCase:
    """An optimiser (``lens=False``: ``init``/``update``) or an optimiser lens, and the parameters it trains."""

    name: str
    make: Callable[[], Any]
    lens: bool = False
    dtype: type = np.float64
    #: A Python float among the parameters (it stays a number on every library).
    number_leaf: bool = False
    #: From step 2 on, the step count is an array of the backend (what a compiled step returns).
    array_step: bool = False


def _ragged(t: int) -> float:
    """A schedule that needs the step's value (a Python branch): under jit it runs on the host."""
    return 0.05 if t < 2 else 0.02


_PLAIN: dict[str, Callable[[], Any]] = {
    "sgd": lambda: O.sgd(0.1),
    "momentum": lambda: O.momentum(0.1, 0.8),
    "nesterov": lambda: O.momentum(0.05, 0.9, nesterov=True),
    "adam": lambda: O.adam(0.01),
    "adam(b=0.5,0.6)": lambda: O.adam(0.3, 0.5, 0.6, 1e-3),
    "adamw": lambda: O.adamw(0.01, weight_decay=0.1),
    "adagrad": lambda: O.adagrad(0.1),
    "rmsprop": lambda: O.rmsprop(0.01),
    "sgd(warmup_cosine)": lambda: O.sgd(O.warmup_cosine(0.1, 2, 3)),
    "adam(one_cycle)": lambda: O.adam(O.one_cycle(0.1, 3)),
    "momentum(step_decay)": lambda: O.momentum(O.step_decay(0.1, 2, 0.5)),
    "rmsprop(exponential_decay)": lambda: O.rmsprop(O.exponential_decay(0.1, 0.5, 2)),
    "adamw(lambda t)": lambda: O.adamw(lambda t: 0.01 / (t + 1)),
    "adagrad(python if)": lambda: O.adagrad(_ragged),
    "clip(adam, 1)": lambda: O.clip_by_global_norm(O.adam(0.1), 1.0),
    "clip(sgd, 1e3)": lambda: O.clip_by_global_norm(O.sgd(0.1), 1e3),
    "clip(adamw(warmup_cosine), 0.5)": lambda: O.clip_by_global_norm(O.adamw(O.warmup_cosine(0.1, 1, 3)), 0.5),
}

_LENSES: dict[str, Callable[[], Any]] = {
    "lens sgd": lambda: L.sgd(0.1).lens,
    "lens momentum": lambda: L.momentum(0.1, 0.8).lens,
    "lens nesterov": lambda: L.momentum(0.1, 0.7, nesterov=True).lens,
    "lens adagrad": lambda: L.adagrad(0.1).lens,
    "lens rmsprop": lambda: L.rmsprop(0.01).lens,
    "lens adam": lambda: L.adam(0.01).lens,
    "lens adamw": lambda: L.adamw(0.01, weight_decay=0.1).lens,
    "lens nesterov(warmup_cosine)": lambda: L.momentum(O.warmup_cosine(0.1, 2, 3), nesterov=True).lens,
    "lens adam(one_cycle)": lambda: L.adam(O.one_cycle(0.1, 3)).lens,
    "lens adam >> clip(1)": lambda: L.adam(0.05) >> L.clip_by_global_norm(1.0),
    "lens momentum >> clip(1e3)": lambda: L.momentum(0.1) >> L.clip_by_global_norm(1e3),
}

CASES: dict[str, OptimCase] = {
    **{n: OptimCase(n, f) for n, f in _PLAIN.items()},
    **{n: OptimCase(n, f, lens=True) for n, f in _LENSES.items()},
    "adam, f32": OptimCase("adam, f32", _PLAIN["adam"], dtype=np.float32),
    "momentum, f32": OptimCase("momentum, f32", _PLAIN["momentum"], dtype=np.float32),
    "clip(adam, 1), f32": OptimCase("clip(adam, 1), f32", _PLAIN["clip(adam, 1)"], dtype=np.float32),
    "lens adamw, f32": OptimCase("lens adamw, f32", _LENSES["lens adamw"], lens=True, dtype=np.float32),
    "rmsprop, a number leaf": OptimCase("rmsprop, a number leaf", _PLAIN["rmsprop"], number_leaf=True),
    "adam, array step": OptimCase("adam, array step", _PLAIN["adam"], array_step=True),
    "adam(one_cycle), array step": OptimCase("adam(one_cycle), array step", _PLAIN["adam(one_cycle)"], array_step=True),
    "lens adam(one_cycle), array step": OptimCase(
        "lens adam(one_cycle), array step", _LENSES["lens adam(one_cycle)"], lens=True, array_step=True
    ),
}


def params(case: OptimCase, rng: np.random.Generator) -> Tree:
    """A model's parameters at the sizes people train: two dense layers, a dict, a list (and a number)."""
    dt = case.dtype

    def arr(*shape: int) -> Any:
        return rng.standard_normal(shape).astype(dt)

    # keys in sorted order: jax.jit gives dicts back with their keys sorted
    tree: dict[str, Any] = {
        "empty": (),
        "layers": [DenseParams(arr(64, 128), arr(128)), DenseParams(arr(128, 10), arr(10))],
        "scale": arr(10),
    }
    if case.number_leaf:
        tree["temperature"] = 0.5
    return tree


def grads(p: Tree, rng: np.random.Generator, size: float) -> Tree:
    """Random gradients shaped like ``p`` (numbers where ``p`` has numbers)."""

    def leaf(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return np.asarray(size * rng.standard_normal(x.shape), dtype=x.dtype)
        return size * float(rng.standard_normal())

    return prelens.core.tree_map(leaf, p)


def _leaves(tree: Tree) -> list[Any]:
    return prelens.core.tree_leaves(tree)


def _numbers_equal(ref: Tree, got: Tree, what: str) -> None:
    """Leaves that are numbers on numpy (step counts, number parameters) equal the backend's."""
    for r, g in zip(_leaves(ref), _leaves(got)):
        if not B.is_array(r):
            g_value = B.to_numpy(g) if B.is_array(g) else g
            tol = 0 if isinstance(r, int) else 1e-12 * max(1.0, abs(r))
            assert abs(float(g_value) - float(r)) <= tol, f"{what}: a number leaf {g_value!r}, numpy has {r!r}"


def _to_array_step(state: Any, backend: str) -> Any:
    """``state`` with every step count made a 0-d integer array of ``backend``."""
    xp = B.resolve_backend("optim_cases", backend)
    if isinstance(state, O.ScheduledState):
        return O.ScheduledState(xp.asarray(state.step), _to_array_step(state.state, backend))
    if isinstance(state, O.AdamState):
        return state._replace(step=xp.asarray(state.step))
    return state


def _run(case: OptimCase, p: Tree, gs: list[Tree], to_step: Callable[[Any], Any] | None = None) -> list[Tree]:
    """``STEPS`` updates from ``p``; returns what each step gave (and the initial state)."""
    opt = case.make()
    out: list[Tree] = []
    if case.lens:
        state = L.init_state(opt, p)
        out.append(state)
        units = opt.init(0) if opt.init_fn is not None else ()
        for k, g in enumerate(gs):
            if to_step is not None and k == 2:
                state = to_step(state)
            delta = prelens.core.tree_map(lambda x: -x, g)  # the lens reads g = −p'
            seen, pullback = vjp(opt, units, (p, state))
            _, (p, state) = pullback(delta)
            out.append((seen, p, state))
        return out
    state = opt.init(p)
    out.append(state)
    for k, g in enumerate(gs):
        if to_step is not None and k == 2:
            state = to_step(state)
        p, state = opt.update(g, state, p)
        out.append((p, state))
    return out


def _inputs(case: OptimCase, seed: int) -> tuple[Tree, list[Tree]]:
    rng = np.random.default_rng(seed)
    p = params(case, rng)
    # large enough for the clipping cases to clip (global norm ~ 100), small enough to keep adam honest
    return p, [grads(p, rng, 1.0) for _ in range(STEPS)]


def check_optimizer_on(backend: str, name: str, seed: int = 0) -> None:
    """Run the case ``name`` on numpy and on ``backend``; assert they agree and stay in their libraries."""
    case = CASES[name]
    p, gs = _inputs(case, seed)
    ref = _run(case, p, gs)

    px, gsx = prelens.backend.to_backend((p, gs), backend)
    before = [B.to_numpy(x).copy() for x in _leaves((px, gsx)) if B.is_array(x)]
    got = _run(case, px, gsx, (lambda s: _to_array_step(s, backend)) if case.array_step else None)
    after = [B.to_numpy(x) for x in _leaves((px, gsx)) if B.is_array(x)]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b, err_msg=f"{name} on {backend}: its arguments were written into")

    lib = B.namespace_name(B.resolve_backend("optim_cases", backend))
    for k, (r, g) in enumerate(zip(ref, got)):
        what = f"{name} on {lib}, " + ("the initial state" if k == 0 else f"step {k}")
        assert_in_library(g, lib, what)
        g = B.tree_map_arrays(_count_as_int, g)  # a step count that is an array: compared as numpy's int
        assert prelens.core._tree.structure_mismatch(r, g) is None, (
            f"{what}: {prelens.core._tree.structure_mismatch(r, g)}"
        )
        assert_close(r, g, what)
        _numbers_equal(r, g, what)
    if case.array_step:  # the count stays an array of the backend once it is one
        steps = [s.step for s in _leaves_of_type(got[-1], (O.AdamState, O.ScheduledState))]
        assert steps and all(B.is_array(s) and int(s) == STEPS for s in steps), f"{name}: step counts {steps}"


def _count_as_int(a: Any) -> Any:
    return int(B.to_numpy(a)) if a.ndim == 0 and B.dtype_kind(a.dtype) in "iu" else a


def _leaves_of_type(tree: Tree, types: tuple[type, ...]) -> list[Any]:
    found: list[Any] = []

    def walk(x: Any) -> None:
        if isinstance(x, types):
            found.append(x)
        if isinstance(x, (tuple, list)):
            for c in x:
                walk(c)

    walk(tree)
    return found


def check_optimizer_jit(name: str, seed: int = 0) -> None:
    """The case ``name`` on JAX, ``update`` (or the lens's pullback) compiled by ``jax.jit``, equals eager JAX.

    Params, grads and state are the compiled function's arguments: every state
    leaf is traced, the step count (a Python int from ``init``) included, and
    comes back a JAX integer array. Each step is compared with the eager one.
    """
    import jax

    case = CASES[name]
    p, gs = _inputs(case, seed)
    px, gsx = prelens.backend.to_backend((p, gs), "jax")
    eager = _run(case, px, gsx)
    opt = case.make()
    compiled: list[Tree] = []
    if case.lens:
        units = opt.init(0) if opt.init_fn is not None else ()

        def lens_step(q: Tree, s: Any, g: Tree) -> Any:
            seen, pullback = vjp(opt, units, (q, s))
            _, (new_p, new_s) = pullback(prelens.core.tree_map(lambda x: -x, g))
            return seen, new_p, new_s

        step = jax.jit(lens_step)
        state = L.init_state(opt, px)
        compiled.append(state)
        q = px
        for g in gsx:
            seen, q, state = step(q, state, g)
            compiled.append((seen, q, state))
    else:
        update = jax.jit(lambda g, s, q: opt.update(g, s, q))
        state = opt.init(px)
        compiled.append(state)
        q = px
        for g in gsx:
            q, state = update(g, state, q)
            compiled.append((q, state))
    for k, (e, c) in enumerate(zip(eager, compiled)):
        what = f"{name} under jax.jit, " + ("the initial state" if k == 0 else f"step {k}")
        assert_in_library(c, "jax", what)
        assert prelens.core._tree.structure_mismatch(e, c) is None, (
            f"{what}: {prelens.core._tree.structure_mismatch(e, c)}"
        )
        for i, (x, y) in enumerate(zip(_leaves(e), _leaves(c))):
            # a number leaf (a step count, a float parameter) comes back from jit a 0-d JAX array
            x, y = (np.asarray(B.to_numpy(v) if B.is_array(v) else v) for v in (x, y))
            tol = 1e-12 if case.dtype == np.float64 else 1e-5
            err = float(np.max(np.abs(y - x), initial=0.0)) / max(1.0, float(np.max(np.abs(x), initial=0.0)))
            assert x.shape == y.shape and err <= tol, f"{what}, leaf {i}: differs from eager by {err:.2e}"
