"""``scan_t``: the TriLens form of :func:`prelens.core.scan` (``mapAccumL`` in profunctor form).

Built as the post builds ``vecLens`` (the ``consLens``/``nilLens`` recursion), with the
state threaded: a scan over ``x : xs`` runs the cell on the left half ``(h, x)`` (through
``PLeft``), hands its state ``h'`` to the scan of the rest on the right half (through
``PRight``), and conses the cell's ``y`` onto the rest's ``ys``::

    (h, x:xs) -> ((h, x), xs) -[cell @ id]-> ((h', y), xs) -> (y, (h', xs))
              -[id @ scan xs]-> (y, (h_T, ys)) -> (h_T, y:ys)

and one parameter is shared by every step, as in ``batchN`` (the deltas summed).
"""

from __future__ import annotations

from typing import Any

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import add_trees
from prelens.core._iso import lunit, runit, second, unlunit, unrunit
from prelens.core._lens import id_pre_lens  # noqa: F401  (doctests)
from prelens.core._scan import scan
from prelens.tambara._trilens import (
    AnyTriLens,
    TriLens,
    _same,
    as_trilens,
    dimap_m,
    dimap_p,
    dimap_s,
    from_tamb,
    on_half,
    to_tamb,
)


def scan_t(tri: AnyTriLens, *, n: int | None = None, axis: int = 0) -> AnyTriLens:
    """The TriLens of ``scan``: ``from_tamb(scan_t(to_tamb(cell))) == scan(cell)``.

    With ``n`` (a fixed length, like ``vec_lens(n, ...)``), it is built from ``tri`` by the post's
    cons recursion on a *list* of ``n`` steps (its calls nest ``n`` deep: up to some 250 steps). Without
    ``n``, any length and arrays along ``axis``: :func:`~prelens.core.scan` of ``from_tamb(tri)``.

    >>> from prelens import PreLens
    >>> add = PreLens(lambda p, hx: ((), (hx[0] + hx[1],) * 2), lambda m, d: ((), (d[0] + d[1],) * 2), name="add")
    >>> from_tamb(scan_t(to_tamb(add), n=3)).fwd((), (0, [1, 2, 3]))[1]
    (6, [1, 3, 6])
    """
    tri = as_trilens("scan_t", "tri", tri)
    if n is None:
        return to_tamb(scan(from_tamb(tri), axis=axis))
    n = _args.count("scan_t", "n", n)
    name = f"scan_t({tri!r}, n={n})"
    nest: AnyTriLens = TriLens(_nil(name))
    for _ in range(n):
        nest = _cons(tri, nest)

    def checked_delta(d: Any) -> Any:  # the output delta (dh_T, a list of n steps' deltas)
        match d:
            case (_, list(dys)) if len(dys) == n:
                return d
        raise E.StructureError(f"{name}: the output delta must be (dh, a list of {n} steps), got {E.describe_tree(d)}")

    def run(t: Any) -> Any:
        t = nest(dimap_s(_same, checked_delta, t))
        add = second(lambda dps: add_trees(dps, name, "parameter delta"))
        return dimap_p(second(lambda p: [p] * n), add, t)

    return TriLens(run, name)


def _nil(name: str) -> Any:
    def checked(s: Any) -> Any:
        match s:
            case (_, []):
                return s
        raise E.StructureError(f"{name}: the sequence is longer than n: {E.describe_tree(s)}")

    def run(t: Any) -> Any:
        t = dimap_s(checked, _same, t)
        t = dimap_m(lambda m1: ([], m1), lambda dm: dm[1], t)
        return dimap_p(lambda p: p[0], lambda dp1: (dp1, []), t)

    return run


def _cons(cell: AnyTriLens, rest: AnyTriLens) -> AnyTriLens:
    def run(t: Any) -> Any:
        # t: the continuation, taking (h_T, ys)
        t = dimap_s(lambda v: (v[1][0], [v[0], *v[1][1]]), lambda d: (d[1][0], (d[0], list(d[1][1:]))), t)
        # input (y, (h_T, ys_rest)); make room for the two halves' residues and parameters
        t = dimap_p(runit, unrunit, dimap_m(unlunit, lunit, t))
        t = on_half(rest, 1, t)
        # residue ((), (m_rest, m1)), parameters (p1, ((), p_rest)), input (y, (h', xs_rest))
        t = dimap_s(lambda v: (v[0][1], (v[0][0], v[1])), lambda d: ((d[1][0], d[0]), d[1][1]), t)
        t = on_half(cell, 0, t)
        # residue ((m, ()), (m_rest, m1)), parameters ((p1, p), ((), p_rest)), input ((h, x), xs_rest)
        t = dimap_s(_uncons_input, lambda d: (d[0][0], [d[0][1], *d[1]]), t)
        t = dimap_m(lambda m: ([m[0][0], *m[1][0]], m[1][1]), lambda dm: ((dm[0][0], ()), (list(dm[0][1:]), dm[1])), t)
        return dimap_p(
            lambda p: ((p[0], p[1][0]), ((), list(p[1][1:]))), lambda dp: (dp[0][0], [dp[0][1], *dp[1][1]]), t
        )

    return TriLens(run)


def _uncons_input(s: Any) -> Any:
    match s:
        case (h, [x, *xs]):
            return (h, x), xs
    raise E.StructureError(f"scan_t: the input must be (h0, a list of n steps), got {E.describe_tree(s)}")
