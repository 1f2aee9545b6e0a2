"""``check_vjp``: is ``bwd`` the reverse derivative of ``fwd``? Central differences in float64."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _errors as E
from .._lens import AnyLens
from .._trace import vjp
from .._tree import structure_mismatch, tree_paths, tree_zip_map
from ._random import axpy, inner, is_float_leaf, random_like


def check_vjp(
    lens: AnyLens,
    p: Any,
    s: Any,
    *,
    da: Any = None,
    rng: np.random.Generator | int | None = 0,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> None:
    """Check ``bwd`` against central finite differences along a random direction.

    Haskell::

        check_vjp :: PreLens a da m dm p dp s ds -> p -> s -> IO ()

    With ``(dp, ds) = bwd(m, da)`` and a random direction ``δ = (δp, δs)``:
    ``<da, (f(x + εδ) - f(x - εδ)) / 2ε>`` must equal ``<dp, δp> + <ds, δs>``
    (the defining property ``<da, J δ> = <Jᵀ da, δ>``). Only float leaves are
    perturbed; integer leaves (ids, labels) are inputs, not variables. On
    failure each leaf is checked alone and the first wrong one is named.
    Raises :class:`LawError`. Use float64: float32 is too coarse for this.

    >>> from prelens import PreLens
    >>> cube = PreLens(lambda p, s: (s, s ** 3), lambda s, da: ((), 3 * s ** 2 * da), name="cube")
    >>> check_vjp(cube, (), np.array([0.5, -2.0]))
    >>> wrong = PreLens(cube.fwd, lambda s, da: ((), 2 * s ** 2 * da), name="wrong")
    >>> check_vjp(wrong, (), np.array([0.5, -2.0]))
    Traceback (most recent call last):
    ...
    prelens._errors.LawError: check_vjp: wrong: bwd is not the reverse derivative of fwd: ...
    """
    gen = np.random.default_rng(rng)
    for path, leaf in tree_paths((p, s)):
        if is_float_leaf(leaf) and np.asarray(leaf).dtype != np.float64:
            raise E.vjp_needs_float64(
                repr(lens), E.describe(np.asarray(leaf)), f"{'p' if path.startswith('[0]') else 's'}{path[3:]}"
            )
    a, pullback = vjp(lens, p, s)
    if da is None:
        da = random_like(a, gen)
    try:
        dp, ds = pullback(da)
    except E.StructureError as exc:  # a bwd whose deltas do not fit (caught on its first call)
        raise E.vjp_bwd_misfit(repr(lens), exc) from exc
    for what, primal, delta in (("parameter delta", p, dp), ("input delta", s, ds)):
        found = structure_mismatch(primal, delta, shapes=True)
        if found:
            raise E.vjp_delta_structure(repr(lens), what, "parameters" if what[0] == "p" else "input", found)
    direction = random_like((p, s), gen)
    lhs, rhs = _both_sides(lens, p, s, da, (dp, ds), direction, eps)
    if not _close(lhs, rhs, rtol, atol):
        raise E.vjp_violation(
            repr(lens), lhs, rhs, _first_wrong_leaf(lens, p, s, da, (dp, ds), direction, eps, rtol, atol)
        )


def _both_sides(lens: AnyLens, p: Any, s: Any, da: Any, grads: Any, direction: Any, eps: float) -> tuple[float, float]:
    plus = axpy(eps, direction, (p, s))
    minus = axpy(-eps, direction, (p, s))
    a_plus = lens.fwd(*plus)[1]
    a_minus = lens.fwd(*minus)[1]
    lhs = (inner(a_plus, da) - inner(a_minus, da)) / (2 * eps)
    return lhs, inner(direction, grads)


def _close(lhs: float, rhs: float, rtol: float, atol: float) -> bool:
    return bool(np.isfinite(lhs) and np.isfinite(rhs)) and abs(lhs - rhs) <= atol + rtol * max(abs(lhs), abs(rhs))


def _first_wrong_leaf(
    lens: AnyLens, p: Any, s: Any, da: Any, grads: Any, direction: Any, eps: float, rtol: float, atol: float
) -> str | None:
    paths = [path for path, leaf in tree_paths((p, s)) if is_float_leaf(leaf)]
    for target in paths:
        only = _mask_to(direction, target)
        lhs, rhs = _both_sides(lens, p, s, da, grads, only, eps)
        if not _close(lhs, rhs, rtol, atol):
            return ("p" if target.startswith("[0]") else "s") + target[3:] or None
    return None


def _mask_to(direction: Any, target: str) -> Any:
    paths = iter(path for path, _ in tree_paths(direction))
    return tree_zip_map(lambda d: d if next(paths) == target else d * 0, direction)
