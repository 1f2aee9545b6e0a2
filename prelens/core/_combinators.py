"""Combinators that build bigger lenses: fan-out, vectors, batches, chains, copy and add.

``vec_lens`` and ``batch_n`` accept a ``PreLens`` (and return one) or a
``TriLens`` (and return one built exactly as in the blog, from
:func:`tri_tensor`). ``branch`` is the pre-lens fan-out, ``branch_t`` the
blog's TriLens. Lists of the wrong length are an error, never truncated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

import numpy as np

from prelens.core import _args
from prelens.backend import _arrays as _backend
from prelens import errors as E
from prelens.core._registry import constructor
from prelens.core._iso import _second as second
from prelens.core._iso import _sym as sym
from prelens.core._lens import (
    AnyLens,
    PreLens,
    _witness_list,
    _WitnessList,
    as_pair,
    check_deltas,
    is_validated,
    unpack_error,
    witnessing,
)
from prelens.tambara._program import Program
from prelens.tambara._trilens import AnyTriLens, TriLens, _module, dimap_m, dimap_p, dimap_s, tri_tensor
from prelens.core._tree import numeric_sum, tree_sum


def _is_seq(xs: Any) -> bool:
    """Lists, and 1-D arrays (a vector of scalars is the blog's ``V = [D]``)."""
    return isinstance(xs, list) or (isinstance(xs, np.ndarray) and xs.ndim == 1)


def _check_len(lens: str, what: str, xs: Any, n: int) -> None:
    if not _is_seq(xs):
        raise E.must_be(lens, what, f"a list of length {n}", E.describe(xs))
    if len(xs) != n:
        raise E.list_length_error(lens, what, n, len(xs))


@constructor
def branch(n: int) -> AnyLens:
    """Fan-out: one input to a list of ``n`` copies; the backward pass sums pointwise.

    Haskell::

        branch :: VSpace ds => Int -> PreLens [s] [ds] () () () () s ds

    The Haskell ``branch :: Monoid s => Int -> TriLens [s] [s] () () () () s s``
    (``PreLens/TriLens.hs``; here :func:`branch_t`) concatenates the deltas with
    ``mconcat``; prelens sums them, see docs/faithful.md.

    >>> import numpy as np
    >>> b = branch(2)
    >>> b.fwd((), np.array([1.0]))
    ((), [array([1.]), array([1.])])
    >>> b.bwd((), [np.array([1.0]), np.array([2.0])])
    ((), array([3.]))
    """
    _check_n("branch", n)
    name = f"branch({n})"

    def fwd(p: tuple[()], s: Any) -> tuple[tuple[()], list[Any]]:
        return (), [s] * n

    def bwd(dm: tuple[()], da: list[Any]) -> tuple[tuple[()], Any]:
        _check_len(name, "output delta", da, n)
        return (), sum_trees(name, "output delta", da)

    return PreLens(fwd, bwd, name)


@constructor
def branch_t(n: int) -> AnyTriLens:
    """The blog's fan-out TriLens, built from dimaps (backward sums pointwise).

    Haskell::

        branch_t :: VSpace s => Int -> TriLens [s] [s] () () () () s s
        branch_t n = dimapM unLunit lunit . dimapP runit unRunit . dimapS (replicate n) accumulate

    The Haskell ``branch`` (``PreLens/TriLens.hs``) has ``mconcat``
    (concatenation) where this has the pointwise sum ``accumulate``.

    >>> from prelens import from_tamb
    >>> from_tamb(branch_t(3)).fwd((), 1.0)
    ((), [1.0, 1.0, 1.0])
    """
    _check_n("branch_t", n)
    name = f"branch_t({n})"

    def replicate(s: Any) -> list[Any]:
        return [s] * n

    def accumulate(ds: list[Any]) -> Any:
        _check_len(name, "output delta", ds, n)
        return sum_trees(name, "output delta", ds)

    def run(t: Any) -> Any:
        return dimap_m(
            lambda m1: ((), m1),
            lambda dm: dm[1],
            dimap_p(lambda p: p[0], lambda dp1: (dp1, ()), dimap_s(replicate, accumulate, t)),
        )

    return TriLens(run, name)


@overload
def vec_lens(n: int, lens: AnyLens) -> AnyLens: ...
@overload
def vec_lens(n: int, lens: AnyTriLens) -> AnyTriLens: ...
@constructor
def vec_lens(n: int, lens: AnyLens | AnyTriLens) -> AnyLens | AnyTriLens:
    """``n`` copies of ``lens`` in parallel; every slot becomes a list of length ``n``.

    Haskell::

        vecLens :: Int -> TriLens a da m dm p dp s ds -> TriLens [a] [da] [m] [dm] [p] [dp] [s] [ds]

    (and the same with ``PreLens`` for ``TriLens``).

    On a TriLens it is the blog's ``consLens``/``nilLens`` recursion in any Trimbara
    module; in the free module (:class:`~prelens.Program`, what ``from_tamb`` runs) the copies
    are one sub-program run on each element, so ``n`` costs a loop, not a nest.

    >>> from prelens import id_pre_lens
    >>> vec_lens(2, id_pre_lens).fwd([(), ()], [1, 2])
    ([(), ()], [1, 2])
    """
    _check_n("vec_lens", n, zero_ok=True)
    _args.lens_or_trilens("vec_lens", "lens", lens)
    if isinstance(lens, TriLens):
        return _vec_lens_t(n, lens)
    name = f"vec_lens({n}, {lens!r})"
    fwd1, bwd1, init1 = lens.fwd, lens.bwd, lens.init_fn
    checking = not is_validated(lens)  # until the first backward pass

    def fwd(ps: list[Any], ss: list[Any]) -> tuple[list[Any], list[Any]]:
        _check_len(name, "parameters", ps, n)
        _check_len(name, "input", ss, n)
        outs = [_run(lens, name, i, fwd1, p, s, "fwd") for i, (p, s) in enumerate(zip(ps, ss))]
        ms = [m for m, _ in outs]
        if checking and witnessing():
            return _witness_list(ms, (list(ps), list(ss))), [a for _, a in outs]
        return ms, [a for _, a in outs]

    def bwd(dms: list[Any], das: list[Any]) -> tuple[list[Any], list[Any]]:
        nonlocal checking
        _check_len(name, "residue delta", dms, n)
        _check_len(name, "output delta", das, n)
        given = dms.given if type(dms) is _WitnessList else None
        outs = [_run(lens, name, i, bwd1, dm, da, "bwd") for i, (dm, da) in enumerate(zip(dms, das))]
        if given is not None:
            for i, out in enumerate(outs):
                _check_copy(lens, name, i, out, given[0][i], given[1][i])
            checking = False
        return [dp for dp, _ in outs], [ds for _, ds in outs]

    init = None if init1 is None else (lambda rng: [init1(rng) for _ in range(n)])
    return PreLens(fwd, bwd, name, init, "", (lens,))


def _cons(x: tuple[Any, list[Any]]) -> list[Any]:
    return [x[0], *x[1]]


def _vec_lens_t(n: int, lens: AnyTriLens) -> AnyTriLens:
    name = f"vec_lens({n}, {lens!r})"

    def uncons(xs: list[Any]) -> tuple[Any, list[Any]]:
        if not _is_seq(xs) or len(xs) == 0:
            raise E.list_too_short(name, n, E.describe(xs))
        return xs[0], list(xs[1:])

    def nil(xs: list[Any]) -> list[Any]:
        if not _is_seq(xs) or len(xs) != 0:
            raise E.list_too_long(name, n, len(xs))
        return []

    def rest_empty(x: Any) -> Any:
        """``x = (y, rest)`` after ``n`` copies took their parts: ``y``, if nothing is left over."""
        y, rest = x  # built by the nest: always a pair
        if not _is_seq(rest) or len(rest) != 0:
            raise E.list_too_long(name, n, len(rest) if _is_seq(rest) else 1)
        return y

    def nil_lens(t: Any) -> Any:
        return dimap_m(
            lambda m1: ([], m1),
            lambda dm: rest_empty(sym(dm)),
            dimap_p(lambda p: rest_empty(p), lambda dp1: (dp1, []), dimap_s(nil, nil, t)),
        )

    def cons_lens(l1: AnyTriLens, l2: AnyTriLens) -> AnyTriLens:
        both = tri_tensor(l1, l2)

        def run(t: Any) -> Any:
            t = both(dimap_s(_cons, uncons, t))
            t = dimap_s(uncons, _cons, t)
            t = dimap_m(lambda m: (_cons(m[0]), m[1]), lambda dm: (uncons(dm[0]), dm[1]), t)
            return dimap_p(second(uncons), second(_cons), t)

        return TriLens(run)

    out: AnyTriLens = TriLens(nil_lens)
    for _ in range(n):
        out = cons_lens(lens, out)

    def run(t: Any) -> Any:
        return _vec_program(n, lens, name, t) if isinstance(t, Program) else out(t)

    return TriLens(run, name)


def _vec_program(n: int, lens: AnyTriLens, name: str, t: Program) -> Program:
    """``vec_lens`` on the free module: ``lens``'s steps taken once, acting on each element.

    The copies' residues gather at ``m@(0, *)`` (each ``(m_i, ())``) and their parameters at
    ``p@(1, *)`` (each ``((), p_i)``); the plumbing around strips those units, giving the
    residue ``([m_i], m1)`` and parameters ``(p1, [p_i])`` of the cons construction.
    """

    def n_long(what: str) -> Callable[[Any], Any]:
        def check(xs: Any) -> Any:
            if not _is_seq(xs) or len(xs) < n:
                raise E.list_too_short(name, n, E.describe(xs))
            if len(xs) > n:
                raise E.list_too_long(name, n, len(xs) - n)
            return xs

        check.__qualname__ = f"{what} of length {n}"
        return check

    units = [()] * n
    t = t.dimap_s(_same, n_long("output delta"))
    t = t.dimap_m(lambda m1: (units, m1), lambda dm: dm[1])
    t = t.dimap_p(lambda p: p[0], lambda dp1: (dp1, units))
    t = _module(lens(t.at(t.focus.each()))).at(t.focus)
    t = t.dimap_m(
        lambda m: ([mi for mi, _ in m[0]], m[1]),
        lambda dm: ([(dmi, ()) for dmi in n_long("residue delta")(dm[0])], dm[1]),
    )
    t = t.dimap_p(
        lambda p: (p[0], [((), pi) for pi in n_long("parameters")(p[1])]),
        lambda dp: (dp[0], [q for _, q in dp[1]]),
    )
    return t.dimap_s(n_long("input"), _same)


def _same(x: Any) -> Any:
    return x


@overload
def batch_n(n: int, lens: AnyLens) -> AnyLens: ...
@overload
def batch_n(n: int, lens: AnyTriLens) -> AnyTriLens: ...
@constructor
def batch_n(n: int, lens: AnyLens | AnyTriLens) -> AnyLens | AnyTriLens:
    """``n`` copies of ``lens`` sharing one parameter; parameter deltas are summed.

    Haskell::

        batchN :: VSpace dp => Int -> TriLens a da m dm p dp s ds
               -> TriLens [a] [da] [m] [dm] p dp [s] [ds]

    >>> from prelens import PreLens
    >>> add_p = PreLens(lambda p, s: ((), p + s), lambda dm, da: (da, da), name="add_p")
    >>> batch_n(3, add_p).bwd([(), (), ()], [1.0, 2.0, 3.0])
    (6.0, [1.0, 2.0, 3.0])
    """
    _check_n("batch_n", n)
    _args.lens_or_trilens("batch_n", "lens", lens)
    if isinstance(lens, TriLens):
        name = f"batch_n({n}, {lens!r})"
        vec = _vec_lens_t(n, lens)
        return TriLens(lambda t: dimap_p(second(lambda p: [p] * n), second(tree_sum), vec(t)), name)
    name = f"batch_n({n}, {lens!r})"
    fwd1, bwd1 = lens.fwd, lens.bwd
    checking = not is_validated(lens)  # until the first backward pass

    def fwd(p: Any, ss: list[Any]) -> tuple[list[Any], list[Any]]:
        _check_len(name, "input", ss, n)
        outs = [_run(lens, name, i, fwd1, p, s, "fwd") for i, s in enumerate(ss)]
        ms = [m for m, _ in outs]
        if checking and witnessing():
            return _witness_list(ms, (p, list(ss))), [a for _, a in outs]
        return ms, [a for _, a in outs]

    def bwd(dms: list[Any], das: list[Any]) -> tuple[Any, list[Any]]:
        nonlocal checking
        _check_len(name, "residue delta", dms, n)
        _check_len(name, "output delta", das, n)
        given = dms.given if type(dms) is _WitnessList else None
        outs = [_run(lens, name, i, bwd1, dm, da, "bwd") for i, (dm, da) in enumerate(zip(dms, das))]
        if given is not None:
            for i, out in enumerate(outs):
                _check_copy(lens, name, i, out, given[0], given[1][i])
            checking = False
        return sum_trees(name, "parameter deltas of the copies", [dp for dp, _ in outs]), [ds for _, ds in outs]

    return PreLens(fwd, bwd, name, lens.init_fn, "", (lens,))


@constructor
def chain(*lenses: AnyLens) -> AnyLens:
    """n-ary sequential composition; parameters and residues are lists in data-flow order.

    Haskell::

        chain :: PreLens b db m dm p dp s ds -> PreLens a da n dn q dq b db
              -> PreLens a da [m, n] [dm, dn] [p, q] [dp, dq] s ds      -- and so on, n-ary

    ``chain(f, g, h)`` equals ``f >> g >> h`` up to re-nesting: parameters
    ``[p_f, p_g, p_h]`` instead of ``(p_h, (p_g, p_f))``. It is the ergonomic
    form of the blog's ``makeMlp``.

    >>> inc = PreLens(lambda p, s: ((), s + p), lambda dm, da: (da, da), name="inc")
    >>> c = chain(inc, inc, inc)
    >>> c
    chain(inc, inc, inc)
    >>> c.fwd([1.0, 10.0, 100.0], 0.0)
    ([(), (), ()], 111.0)
    """
    if not lenses:
        raise E.chain_empty()
    for i, lens in enumerate(lenses):
        _args.lens("chain", f"part {i}", lens)
    n = len(lenses)
    name = f"chain({', '.join(map(repr, lenses))})"
    fwds = [lens.fwd for lens in lenses]
    bwds = [lens.bwd for lens in lenses]
    inits = [lens.init_fn for lens in lenses]
    checking = not all(is_validated(lens) for lens in lenses)  # until the first backward pass

    def fwd(ps: list[Any], s: Any) -> tuple[list[Any], Any]:
        if not isinstance(ps, list) or len(ps) != n:
            _check_len(name, "parameters", ps, n)
        ms = []
        ins: list[Any] | None = [] if checking and witnessing() else None
        for i, (f, p) in enumerate(zip(fwds, ps)):
            if ins is not None:
                ins.append(s)
            try:
                out = f(p, s)
                m, s = out
            except Exception as exc:
                origin = f"the output of {lenses[i - 1]!r}" if i else ""
                err = unpack_error(exc, lenses[i], locals(), "out", "fwd")
                raise E.in_part(err, name, repr(lenses[i]), "the forward pass", s, origin) from None
            ms.append(m)
        if ins is not None:
            return _witness_list(ms, (list(ps), ins)), s
        return ms, s

    def bwd(dms: list[Any], da: Any) -> tuple[list[Any], Any]:
        nonlocal checking
        if not isinstance(dms, list) or len(dms) != n:
            _check_len(name, "residue delta", dms, n)
        given = dms.given if type(dms) is _WitnessList else None
        dps: list[Any] = [None] * n
        for i in range(n - 1, -1, -1):
            try:
                out = bwds[i](dms[i], da)
                dp, da_next = out
                if given is not None:
                    check_deltas(lenses[i], out, given[0][i], given[1][i])
            except Exception as exc:
                err = unpack_error(exc, lenses[i], locals(), "out", "bwd")
                raise E.in_part(err, name, repr(lenses[i]), "the backward pass", da) from None
            dps[i], da = dp, da_next
        if given is not None:  # checked: witnesses are no longer needed
            checking = False
        return dps, da

    ready = [i for i in inits if i is not None]
    init = (lambda rng: [i(rng) for i in ready]) if len(ready) == len(inits) else None
    return PreLens(fwd, bwd, name, init, "chain", tuple(lenses))


def _run(lens: AnyLens, name: str, i: int, pass_: Any, x: Any, y: Any, what: str) -> tuple[Any, Any]:
    """One copy's forward (``what="fwd"``) or backward pass in ``vec_lens``/``batch_n``, as a pair."""
    try:
        out = pass_(x, y)
        return out if type(out) is tuple and len(out) == 2 else as_pair(lens, out, what)
    except Exception as exc:
        label = "the forward pass" if what == "fwd" else "the backward pass"
        raise E.in_part(exc, name, f"{lens!r} (copy {i})", label, y) from None


def _check_copy(lens: AnyLens, name: str, i: int, out: tuple[Any, Any], p: Any, s: Any) -> None:
    try:
        check_deltas(lens, out, p, s)
    except E.StructureError as exc:
        raise E.in_part(exc, name, f"{lens!r} (copy {i})", "the backward pass", out) from None


def _pair(lens: str, what: str, x: Any) -> tuple[Any, Any]:
    if type(x) is tuple and len(x) == 2:
        return x
    raise E.must_be(lens, what, "a pair of trees of one structure and shapes", E.describe_tree(x))


def sum_trees(lens: str, what: str, trees: Any) -> Any:
    """The leaf-wise sum of a non-empty list (or pair) of trees of one structure, shapes and a numeric dtype.

    The sum of arrays that do not share a shape would broadcast into a wrong
    answer; here it is an error naming ``lens`` and the tree path.

    >>> import numpy as np
    >>> sum_trees("branch(2)", "output delta", [np.ones(2), np.ones(2)])
    array([2., 2.])
    """
    first = trees[0]
    if type(first) is np.ndarray and first.dtype.kind == "f" and len(trees) == 2:  # the common case, fast
        second_ = trees[1]
        if type(second_) is np.ndarray and second_.shape == first.shape and second_.dtype == first.dtype:
            return first + second_
    elif len(trees) == 2 and _backend.is_array(first):  # another library's arrays
        second_ = trees[1]
        if _backend.is_array(second_) and tuple(second_.shape) == tuple(first.shape) and second_.dtype == first.dtype:
            return first + second_
    try:
        return numeric_sum(lens, list(trees), what)
    except TypeError:  # numeric leaves of kinds that do not add (a bool and a str array...)
        raise E.must_be(lens, what, "trees of numbers that add", E.describe_tree(trees)) from None


def _copy_fwd(p: tuple[()], s: Any) -> tuple[tuple[()], tuple[Any, Any]]:
    return (), (s, s)


def _copy_bwd(dm: tuple[()], da: tuple[Any, Any]) -> tuple[tuple[()], Any]:
    return (), sum_trees("copy_l", "output delta", _pair("copy_l", "output delta", da))


#: Copy the input into a pair; the backward pass adds the two deltas (the
#: diagonal ``s -> (s, s)``, the two-way tuple form of ``branch``).
copy_l: AnyLens = PreLens(_copy_fwd, _copy_bwd, "copy_l")


def _add_fwd(p: tuple[()], s: tuple[Any, Any]) -> tuple[tuple[()], Any]:
    return (), sum_trees("add_l", "input", _pair("add_l", "input", s))


def _add_bwd(dm: tuple[()], da: Any) -> tuple[tuple[()], tuple[Any, Any]]:
    return (), (da, da)


#: Add a pair of same-shaped inputs; the backward pass hands the delta to both.
add_l: AnyLens = PreLens(_add_fwd, _add_bwd, "add_l")


def _check_n(lens: str, n: int, zero_ok: bool = False) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < (0 if zero_ok else 1):
        raise E.int_below(lens, "n", n, 0 if zero_ok else 1)
