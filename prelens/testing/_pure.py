"""Two promises of the pre-lens type that no law about values can see, each its own verdict: purity
(:func:`check_pure`: nothing written, ``bwd`` reads only its residue) and a residue of its own
(:func:`check_no_alias`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens
from prelens.core._trace import as_pre_lens as _as_prelens
from prelens.core._tree import tree_paths
from prelens.testing._random import first_difference, perturbed, random_like, scramble_in_place, snapshot

Rng = np.random.Generator | int | None


class AliasWarning(UserWarning):
    """:func:`~prelens.testing.check_lens_laws`'s verdict that a residue aliases the caller's ``p`` or ``s``
    (:func:`check_no_alias`); ``filterwarnings = ["error::prelens.testing.AliasWarning"]`` makes it an error.

    >>> issubclass(AliasWarning, UserWarning)
    True
    """


def slot_path(path: str) -> str:
    """A path into the pair ``(p, s)`` written from the slot: ``[0][1].weight -> p[1].weight``, ``[1] -> s``."""
    return ("p" if path.startswith("[0]") else "s") + path[3:]


def slot_what(path: str) -> tuple[str, str]:
    where = slot_path(path)
    return ("parameters p" if where.startswith("p") else "input s"), where


def result_path(path: str) -> str:
    return ("dp" if path.startswith("[0]") else "ds") + path[3:]


def law_raised(law: str, where: str, exc: BaseException) -> E.LawError:
    return E.LawError(f"law '{law}' fails: {where} raised {type(exc).__name__}: {exc}")


def pure_mutated(fn: str, lens: str, which: str, what: str, path: str) -> E.LawError:
    """``fwd`` or ``bwd`` wrote into an argument: ``fwd mutated its input s at path s[1]``."""
    return E.LawError(
        f"{fn}: {lens}: {which} mutated its {what} at path {path} "
        "(a lens never writes into its arguments: compute into fresh arrays)"
    )


def fwd_on_copies(fn: str, name: str, fwd: Callable[..., Any], x: Any) -> Any:
    """``fwd(p, s)`` run on copies of ``x = (p, s)``: one that writes into them is named, the caller's data kept."""
    work = snapshot(x)
    out = fwd(*work)
    changed = first_difference(x, work, rtol=None)
    if changed is not None:
        raise pure_mutated(fn, name, "fwd", *slot_what(changed))
    return out


def run_law(law: str, where: str, thunk: Callable[[], Any]) -> Any:
    """``thunk()``, one side of a law; a crash is a failed law (a structure the law does not expect)."""
    try:
        return thunk()
    except E.LawError:
        raise
    except Exception as exc:
        raise law_raised(law, where, exc) from exc


def check_pure(lens: AnyLens, p: Any, s: Any, *, da: Any = None, rng: Rng = 0, fn: str = "check_pure") -> None:
    """Check that ``fwd`` and ``bwd`` mutate nothing and that ``bwd`` reads only its residue.

    The passes run on copies of ``p`` and ``s``: alone; alone at a second point (float entries moved by
    up to 25%); then both forward passes and both backward passes, in reverse and in the same order,
    each backward result equal to its pass run alone. Raises :class:`LawError` naming the pass and the
    path (``p…``, ``s…``, ``m…``, ``da…``; ``fn`` names the caller). Aliasing: :func:`check_no_alias`.

    >>> from prelens import PreLens
    >>> double = PreLens(lambda p, s: ((), 2 * s), lambda m, da: ((), 2 * da), name="double")
    >>> check_pure(double, (), np.ones(3))
    >>> def doubling_in_place(p, s):
    ...     s *= 2
    ...     return (), s
    >>> check_pure(PreLens(doubling_in_place, double.bwd, name="in_place"), (), np.ones(3))
    Traceback (most recent call last):
    ...
    prelens.errors.LawError: check_pure: in_place: fwd mutated its input s at path s ...
    """
    fn = _args.name("check_pure", "fn", fn)
    gen = _args.seed(fn, rng)
    pl = _as_prelens(lens, fn)
    name = repr(pl)
    run_law(
        f"{fn}: purity of {E.short_name(name)}", "a pass run on copies", lambda: _check(fn, pl, name, (p, s), da, gen)
    )


def _check(fn: str, pl: Any, name: str, x1: Any, da: Any, gen: np.random.Generator) -> None:
    # 1. alone, on copies: nothing written
    m1, a1 = fwd_on_copies(fn, name, pl.fwd, x1)
    da1 = da if da is not None else random_like(a1, gen)
    m_before, da_before = snapshot(m1), snapshot(da1)
    r1 = pl.bwd(m1, da1)
    for what, prefix, before, after in (("residue m", "m", m_before, m1), ("output delta da", "da", da_before, da1)):
        changed = first_difference(before, after, rtol=None)
        if changed is not None:
            raise pure_mutated(fn, name, "bwd", what, prefix + changed)

    # 2. a second point, alone
    x2 = perturbed(x1, gen)
    da2 = da if da is not None else random_like(a1, gen)
    try:
        m2, _ = pl.fwd(*snapshot(x2))
    except Exception:  # the lens does not take the moved point: the same point, another delta
        x2 = snapshot(x1)
        m2, _ = pl.fwd(*snapshot(x2))
    r2 = pl.bwd(m2, da2)

    # 3. both forward passes, then both backward passes
    for order, runs in (("reverse", (1, 0)), ("same", (0, 1))):
        ms, das = (pl.fwd(*snapshot(x1))[0], pl.fwd(*snapshot(x2))[0]), (da1, da2)
        got = {k: pl.bwd(ms[k], das[k]) for k in runs}
        for k, want in enumerate((r1, r2)):
            where = first_difference(want, got[k])
            if where is not None:
                raise E.LawError(
                    f"{fn}: {name}: bwd uses something besides its residue: after two forward passes, the backward "
                    f"passes run in {order} order gave another {result_path(where)} than each run alone (everything "
                    "bwd needs must travel in the residue, not in a closure, an attribute or a global)"
                )


def check_no_alias(lens: AnyLens, p: Any, s: Any, *, da: Any = None, rng: Rng = 0) -> None:
    """Check that the residue is the lens's own: writing into ``p`` or ``s`` after ``fwd`` changes nothing.

    Behaviour is judged, not memory (an array kept only for its shape is no alias): the passes run on
    copies, each array leaf overwritten in place between them (docs/laws.md, "Three verdicts"). Raises
    :class:`LawError` naming the caller's leaf, the residue leaf that holds it and the delta that changed.

    >>> from prelens import PreLens
    >>> lens = PreLens(lambda W, s: ((W, s), W @ s), lambda m, da: (np.outer(da, m[1]), m[0].T @ da), name="post")
    >>> check_no_alias(lens, np.eye(2), np.ones(2))
    Traceback (most recent call last):
    ...
    prelens.errors.LawError: check_no_alias: post: the residue at m[0] aliases the caller's parameters p at path p: ...
    """
    gen = _args.seed("check_no_alias", rng)
    pl = _as_prelens(lens, "check_no_alias")
    name = repr(pl)
    law = f"check_no_alias: aliasing of {E.short_name(name)}"
    run_law(law, "a pass run on copies", lambda: _check_alias(pl, name, (p, s), da, gen))


def _check_alias(pl: Any, name: str, x: Any, da: Any, gen: np.random.Generator) -> None:
    m, a = pl.fwd(*snapshot(x))
    da = da if da is not None else random_like(a, gen)
    want = snapshot(pl.bwd(m, da))

    def changed(only: str | None) -> tuple[Any, Any, str | None]:
        w = snapshot(x)
        m = pl.fwd(*w)[0]
        written = scramble_in_place(w, only=only)
        where = first_difference(want, pl.bwd(m, da)) if written else None
        return w, m, where

    if changed(None)[2] is None:
        return
    for path, _ in tree_paths(x):  # which leaf, overwritten alone, changes the result
        w, m, where = changed(path)
        if where is not None:
            leaf = dict(tree_paths(w))[path]
            holder = next((f"m{q}" for q, y in tree_paths(m) if _shares(y, leaf)), None)
            raise _residue_aliases(name, holder, *slot_what(path), result_path(where))
    raise _residue_aliases(name, None, "parameters p and input s", "p and s", "deltas")


def _shares(x: Any, y: Any) -> bool:
    return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and np.shares_memory(x, y)


def _residue_aliases(lens: str, holder: str | None, what: str, path: str, where: str) -> E.LawError:
    at = f" at {holder}" if holder else ""
    return E.LawError(
        f"check_no_alias: {lens}: the residue{at} aliases the caller's {what} at path {path}: writing into it "
        f"between the forward and the backward pass changed bwd's {where} "
        "(a residue keeps its own copy of what it needs from p and s)"
    )
