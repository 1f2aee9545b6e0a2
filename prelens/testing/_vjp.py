"""``check_vjp``: is ``bwd`` the reverse derivative of ``fwd``? Central differences in float64
(:mod:`prelens.testing._fd`); measured power: ``docs/laws.md``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens
from prelens.core._trace import as_pre_lens as _as_prelens
from prelens.core._trace import vjp
from prelens.core._tree import structure_mismatch, tree_leaves, tree_map, tree_paths
from prelens.testing._fd import EPS, Difference, directional_derivative, noise_level
from prelens.testing._pure import fwd_on_copies, result_path, slot_path
from prelens.testing._random import is_float_leaf, random_like

#: Directions along a single leaf are added when the tree has at most this many float leaves
#: (each costs six forward passes): a wrong small leaf (a bias beside a large weight) then
#: stands alone instead of drowning in the sum.
LEAF_DIRECTIONS_UP_TO = 8


def check_vjp(
    lens: AnyLens,
    p: Any,
    s: Any,
    *,
    da: Any = None,
    rng: np.random.Generator | int | None = 0,
    eps: float = 1e-4,
    rtol: float = 1e-9,
    atol: float = 0.0,
    directions: int = 3,
) -> None:
    """Check that ``bwd`` is the reverse derivative of ``fwd``, by central finite differences.

    With ``(dp, ds) = bwd(m, da)``, along random directions ``δ = (δp, δs)`` (each leaf scaled to its
    own size, ``eps`` the first relative step): ``<da, J δ>`` by central differences, with their own
    error bound (:mod:`prelens.testing._fd`), must equal ``<dp, δp> + <ds, δs>`` within that bound plus
    ``rtol·Σ|dp·δp| + rtol·Σ|ds·δs| + atol``. ``directions`` random directions, and one per float leaf
    when there are at most eight; only float leaves are perturbed (integer leaves are data).

    Also checked: ``dp`` and ``ds`` have the structure, shapes and float dtypes of ``p`` and ``s``, and
    the first forward pass writes into neither. Purity is :func:`check_pure`'s verdict and aliasing
    :func:`check_no_alias`'s. Raises :class:`LawError` naming the first wrong leaf. Float64 only: the leaves of
    ``p``, ``s`` and of the output.

    >>> from prelens import PreLens
    >>> cube = PreLens(lambda p, s: (s, s ** 3), lambda s, da: ((), 3 * s ** 2 * da), name="cube")
    >>> check_vjp(cube, (), np.array([0.5, -2.0]))
    >>> wrong = PreLens(cube.fwd, lambda s, da: ((), 2 * s ** 2 * da), name="wrong")
    >>> check_vjp(wrong, (), np.array([0.5, -2.0]))
    Traceback (most recent call last):
    ...
    prelens.errors.LawError: check_vjp: wrong: bwd is not the reverse derivative of fwd: ...
    """
    gen = _args.seed("check_vjp", rng)
    _args.real("check_vjp", "eps", eps, low=0.0, low_open=True, high=0.01)
    _args.real("check_vjp", "rtol", rtol, low=0.0)
    _args.real("check_vjp", "atol", atol, low=0.0)
    _args.count("check_vjp", "directions", directions)
    pl = _as_prelens(lens, "check_vjp")
    name = repr(lens)
    for path, leaf in tree_paths((p, s)):
        if is_float_leaf(leaf) and np.asarray(leaf).dtype != np.float64:
            got, where = E.describe(np.asarray(leaf)), slot_path(path)
            raise E.LawError(
                f"check_vjp: {name}: needs float64 leaves, got {got} at {where}: finite differences are taken in "
                "float64, so check the lens built in float64 (dtype=np.float64)"
            )
    a, pullback = fwd_on_copies("check_vjp", name, lambda *x: vjp(pl, *x), (p, s))
    for path, leaf in tree_paths(a):  # differences of a float32 output resolve ~1e-3 of a derivative, not 1e-9
        if is_float_leaf(leaf) and np.asarray(leaf).dtype != np.float64:
            raise E.LawError(
                f"check_vjp: {name}: fwd's output at a{path} has dtype {E.dtype_name(np.asarray(leaf).dtype)} for "
                "float64 parameters and input: finite differences need the forward pass in float64 throughout"
            )
    pulled: Callable[[Any], tuple[Any, Any]] = lambda d: (d, _pull(name, pullback, (p, s), d))
    fixed = None if da is None else pulled(da)  # the deltas' structure and dtypes are checked first
    side = _Side(pl, (p, s), a, eps, rtol, atol)
    plan: list[int | None] = [None] * directions
    if 1 < len(side.floats) <= LEAF_DIRECTIONS_UP_TO:
        plan += side.floats
    for only in plan:
        # the given da, or a fresh one per direction (a small coordinate of one is not hidden in all)
        da_k, grads = fixed if fixed is not None else pulled(random_like(a, gen))
        direction = side.direction(gen, only)
        verdict = side.compare(direction, da_k, grads)
        if verdict is not None:
            diff, rhs = verdict
            wrong = side.name_of(only) if only is not None else _first_wrong_leaf(side, gen, da_k, grads)
            if diff is None:
                along = f" along {wrong}" if wrong else ""
                raise E.LawError(
                    f"check_vjp: {name}: fwd gave non-finite outputs at every step of the finite differences{along}: "
                    "check at a point where the lens is finite"
                )
            at = f"; the first wrong leaf is {wrong}" if wrong else ""
            raise E.LawError(
                f"check_vjp: {name}: bwd is not the reverse derivative of fwd: <da, J·δ> by central differences = "
                f"{diff.value:.10g} (± {diff.error:.2g}), <bwd(da), δ> = {rhs:.10g}{at}"
            )


def _pull(name: str, pullback: Any, x: Any, da: Any) -> Any:
    """``pullback(da)``, its deltas checked against the structure, shapes and dtypes of ``x = (p, s)``."""
    try:
        grads = pullback(da)
    except E.StructureError as exc:  # a bwd whose deltas do not fit (caught on its first call)
        raise E.LawError(f"check_vjp: {name}: bwd's deltas do not fit the parameters and input: {exc}") from exc
    for what, of, primal, delta in (("parameter", "parameters", x[0], grads[0]), ("input", "input", x[1], grads[1])):
        found = structure_mismatch(primal, delta, shapes=True)
        if found:
            raise E.LawError(f"check_vjp: {name}: bwd's {what} delta does not have the structure of the {of}: {found}")
    for (path, primal), (_, delta) in zip(tree_paths(x), tree_paths(grads)):
        if not is_float_leaf(primal):
            continue
        want, got = np.asarray(primal).dtype, np.asarray(delta).dtype
        if got != want:
            what = "parameter" if path.startswith("[0]") else "input"
            raise E.LawError(
                f"check_vjp: {name}: bwd's {what} delta at {result_path(path)} has dtype {E.dtype_name(got)}, "
                f"expected {E.dtype_name(want)} (a delta has the dtype of its primal)"
            )
    return grads


class _Side:
    """Both sides of ``<da, J δ> = <Jᵀ da, δ>`` at one point ``x = (p, s)``, for any direction ``δ``
    (a float64 array per float leaf of ``x``; the trees are flattened once)."""

    def __init__(self, lens: Any, x: Any, a: Any, eps: float, rtol: float, atol: float) -> None:
        self.lens, self.x, self.a, self.eps, self.rtol, self.atol = lens, x, a, eps, rtol, atol
        pairs = list(tree_paths(x))
        self.paths = [path for path, _ in pairs]
        self.leaves = [leaf for _, leaf in pairs]
        self.floats = [i for i, leaf in enumerate(self.leaves) if is_float_leaf(leaf)]
        self.values = {i: np.asarray(self.leaves[i], dtype=np.float64) for i in self.floats}
        self.out_mask = [is_float_leaf(leaf) for leaf in tree_leaves(a)]
        squares = sum(float(np.sum(v * v)) for v in self.values.values())
        count = sum(v.size for v in self.values.values())
        whole = float(np.sqrt(squares / count)) if count and squares > 0 else 1.0
        rms = {i: float(np.sqrt(np.mean(v * v))) if v.size else 0.0 for i, v in self.values.items()}
        #: each leaf's root-mean-square size (a leaf of zeros, such as a fresh bias: the whole tree's)
        self.scales = {i: r if r > 0 and np.isfinite(r) else whole for i, r in rms.items()}

    def name_of(self, i: int) -> str:
        return slot_path(self.paths[i])

    def direction(self, gen: np.random.Generator, only: int | None = None) -> dict[int, np.ndarray]:
        """Standard normal, each leaf scaled to its size; with ``only``, that leaf alone."""
        return {
            i: gen.standard_normal(v.shape) * self.scales[i] * (1.0 if only is None or i == only else 0.0)
            for i, v in self.values.items()
        }

    def _measure(self, out: Any, das: list[np.ndarray]) -> tuple[float, float]:
        """``(<out, da>, Σ|out|·|da|)`` over the float leaves of an output."""
        value = size = 0.0
        floats = (leaf for leaf, f in zip(tree_leaves(out), self.out_mask) if f)
        for leaf, d in zip(floats, das):
            o = np.asarray(leaf, dtype=np.float64)
            value += float(np.vdot(o, d))
            size += float(np.vdot(np.abs(o), np.abs(d)))
        return value, size

    def _point(self, t: float, direction: dict[int, np.ndarray]) -> Any:
        moved = list(self.leaves)
        for i in self.floats:
            x = self.leaves[i]
            if isinstance(x, float):
                moved[i] = float(x + t * direction[i])
            else:
                moved[i] = (self.values[i] + t * direction[i]).astype(np.asarray(x).dtype)
        it = iter(moved)
        return tree_map(lambda _: next(it), self.x)

    def compare(self, direction: dict[int, np.ndarray], da: Any, grads: Any) -> tuple[Difference | None, float] | None:
        """None when the sides agree along ``direction`` for the output delta ``da`` (whose
        pullback is ``grads``), else ``(finite difference, <grads, δ>)``."""
        das = [np.asarray(d, dtype=np.float64) for d, f in zip(tree_leaves(da), self.out_mask) if f]
        grad_leaves = tree_leaves(grads)
        g = {i: np.asarray(grad_leaves[i], dtype=np.float64) for i in self.floats}
        rhs = sum(float(np.vdot(direction[i], g[i])) for i in self.floats)
        mag = sum(float(np.vdot(np.abs(direction[i]), np.abs(g[i]))) for i in self.floats)
        input_size = sum(float(np.vdot(np.abs(self.values[i]), np.abs(g[i]))) for i in self.floats)
        g0, size0 = self._measure(self.a, das)
        floor = self.rtol * mag + self.atol

        def probe(t: float) -> tuple[float, float] | None:
            with np.errstate(all="ignore"):
                try:
                    out = self.lens.fwd(*self._point(t, direction))[1]
                except (ArithmeticError, ValueError):  # left the lens's domain (a log of a negative, ...)
                    return None
                value, size = self._measure(out, das)
            return (value, size) if np.isfinite(value) and np.isfinite(size) else None

        def settled(d: Difference) -> bool:
            return abs(d.value - rhs) <= floor + self.rtol * abs(d.value) or d.error <= floor

        def agree(d: Difference) -> bool:
            return abs(d.value - rhs) <= d.error + floor + self.rtol * abs(d.value)

        diff = directional_derivative(probe, g0, size0, input_size, first_step=self.eps, done=settled)
        if diff is not None and np.isfinite(rhs) and not agree(diff):
            # A second opinion before crying wolf: the forward pass's own rounding noise (cancellation inside
            # it hides from the sizes), then the steps again. A pass that does not change at all over those
            # steps is below its resolution (log(1 + 1e-247) is 0): differences under ε·Σ|da| are not
            # reported; one that does change is resolved (values all 1e-20 keep their sixteen digits).
            noise = noise_level(probe, g0)
            if noise == 0.0:
                noise = EPS * sum(float(np.sum(np.abs(d))) for d in das)
            if math.isfinite(noise) and noise > 0:
                again = directional_derivative(
                    probe, g0, size0, input_size, first_step=self.eps, done=settled, noise=noise
                )
                diff = again if again is not None else diff
        if diff is None or not np.isfinite(rhs):
            return diff, rhs
        return None if agree(diff) else (diff, rhs)


def _first_wrong_leaf(side: _Side, gen: np.random.Generator, da: Any, grads: Any) -> str | None:
    for i in side.floats:
        if side.compare(side.direction(gen, only=i), da, grads) is not None:
            return side.name_of(i)
    return None
