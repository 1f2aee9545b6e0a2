"""``check_pure``: a lens's passes write into nothing, and ``bwd`` reads its residue and nothing else.

Three promises of the pre-lens type that no law about values can see, checked
by running the passes in the orders a training loop (or a careless caller) may:

- ``fwd`` and ``bwd`` never write into their arguments (``p``, ``s``; the residue
  ``m`` and the output delta ``da``);
- ``bwd`` needs nothing but its residue: after two forward passes, the two
  backward passes give what each gives alone, in either order (a ``bwd`` that reads
  the last input from a closure, or keeps a tape, fails);
- the residue never aliases the caller's ``p`` or ``s``: writing into them between
  the forward and the backward pass changes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens
from prelens.core._trace import as_pre_lens as _as_prelens
from prelens.testing._random import first_change, first_difference, perturbed, random_like, scramble_in_place, snapshot

Rng = np.random.Generator | int | None


def slot_path(path: str) -> str:
    """A path into the pair ``(p, s)`` written from the slot: ``[0][1].weight -> p[1].weight``, ``[1] -> s``."""
    return ("p" if path.startswith("[0]") else "s") + path[3:]


def check_pure(lens: AnyLens, p: Any, s: Any, *, da: Any = None, rng: Rng = 0, fn: str = "check_pure") -> None:
    """Check that ``fwd`` and ``bwd`` mutate nothing, ``bwd`` reads only its residue, and the
    residue does not alias the caller's parameters or input.

    Haskell (the type says it; Python must test it)::

        check_pure :: PreLens a da m dm p dp s ds -> p -> s -> IO ()

    The passes run on copies of ``p`` and ``s`` (the caller's values are never
    touched): once alone; at a second point (every float entry moved by up to
    25%) alone; and both forward passes first, then both backward passes in
    reverse order and in the same order, with the copies overwritten in place
    between the passes. Every backward result must equal the one of its pass run
    alone. Raises :class:`LawError` naming the pass and the tree path (``p…``,
    ``s…``, ``m…``, ``da…``). :func:`check_vjp` and :func:`check_lens_laws` run it.

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
    try:
        _check(fn, pl, name, p, s, da, gen)
    except E.LawError:
        raise
    except Exception as exc:  # a pass that fails on a valid call breaks the law too
        raise E.law_raised(f"{fn}: purity of {E.short_name(name)}", "a pass run on copies", exc) from exc


def _check(fn: str, pl: Any, name: str, p: Any, s: Any, da: Any, gen: np.random.Generator) -> None:
    x1 = (p, s)

    # 1. alone, on copies: nothing written
    work = snapshot(x1)
    m1, a1 = pl.fwd(*work)
    changed = first_change(x1, work)
    if changed is not None:
        raise E.pure_mutated(fn, name, "fwd", *_slot_what(changed))
    da1 = da if da is not None else random_like(a1, gen)
    m_before, da_before = snapshot(m1), snapshot(da1)
    r1 = pl.bwd(m1, da1)
    for what, prefix, before, after in (("residue m", "m", m_before, m1), ("output delta da", "da", da_before, da1)):
        changed = first_change(before, after)
        if changed is not None:
            raise E.pure_mutated(fn, name, "bwd", what, prefix + changed)

    # 2. a second point, alone
    x2 = perturbed(x1, gen)
    da2 = da if da is not None else random_like(a1, gen)
    try:
        m2, _ = pl.fwd(*snapshot(x2))
    except Exception:  # the lens does not take the moved point: the same point, another delta
        x2 = snapshot(x1)
        m2, _ = pl.fwd(*snapshot(x2))
    r2 = pl.bwd(m2, da2)

    # 3. both forward passes, then both backward passes, with the inputs overwritten in between
    for order in ("reverse", "same"):
        w1, w2 = snapshot(x1), snapshot(x2)
        ma, mb = pl.fwd(*w1)[0], pl.fwd(*w2)[0]
        scramble_in_place(w1)
        scramble_in_place(w2)
        if order == "reverse":
            rb = pl.bwd(mb, da2)
            ra = pl.bwd(ma, da1)
        else:
            ra = pl.bwd(ma, da1)
            rb = pl.bwd(mb, da2)
        for got, want in ((ra, r1), (rb, r2)):
            where = first_difference(want, got)
            if where is not None:
                _diagnose(fn, pl, name, x1, x2, da1, da2, r1, r2, order)
                raise E.pure_not_residue_only(fn, name, order, _result_path(where))  # seen once, not again


def _slot_what(path: str) -> tuple[str, str]:
    where = slot_path(path)
    return ("parameters p" if where.startswith("p") else "input s"), where


def _result_path(path: str) -> str:
    return ("dp" if path.startswith("[0]") else "ds") + path[3:]


def _diagnose(fn: str, pl: Any, name: str, x1: Any, x2: Any, da1: Any, da2: Any, r1: Any, r2: Any, order: str) -> None:
    """Tell an aliasing residue from a ``bwd`` that reads outside its residue, and raise."""
    for path in scramble_in_place(snapshot(x1)):  # which leaf, overwritten alone, changes the result
        w = snapshot(x1)
        m = pl.fwd(*w)[0]
        scramble_in_place(w, only=path)
        where = first_difference(r1, pl.bwd(m, da1))
        if where is not None:
            what, at = _slot_what(path)
            raise E.pure_residue_aliases(fn, name, what, at, _result_path(where))
    w1, w2 = snapshot(x1), snapshot(x2)
    ma, mb = pl.fwd(*w1)[0], pl.fwd(*w2)[0]
    pairs = ((mb, da2, r2), (ma, da1, r1)) if order == "reverse" else ((ma, da1, r1), (mb, da2, r2))
    for m_, da_, want in pairs:
        where = first_difference(want, pl.bwd(m_, da_))
        if where is not None:
            raise E.pure_not_residue_only(fn, name, order, _result_path(where))
