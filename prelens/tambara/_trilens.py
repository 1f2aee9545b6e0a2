"""The profunctor (triple Tambara) encoding of pre-lenses.

A *TriProfunctor* ``t m dm p dp s ds`` can be re-mapped in three pairs of
slots; a *Trimbara* module can also thread an extra residue (``alpha``) and an
extra parameter (``beta``). ``PreLens`` is one. A *TriLens* is a function from
Trimbara modules to Trimbara modules, running against the data flow::

    type TriLens a da m dm p dp s ds = forall t. Trimbara t =>
        t m1 dm1 p1 dp1 a da -> t (m, m1) (dm, dm1) (p1, p) (dp1, dp) s ds

TriLenses compose by plain function composition, modulo associators.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, Protocol, Self, runtime_checkable

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import add_trees, copies
from prelens.core._iso import assoc, first, lunit, runit, second, skip_left, skip_right, sym, unassoc, unlunit, unrunit
from prelens.core._lens import DA, DM, DP, DS, A, AnyLens, M, P, PreLens, S, as_lens, id_pre_lens  # noqa: F401  (doctests)
from prelens.core._registry import constructor
from prelens.core._trace import as_pre_lens
from prelens.tambara._program import Fn, Program, compile_passes


@runtime_checkable
class TriProfunctor(Protocol):
    """Haskell's ``class TriProFunctor t``: re-map the ``s``, ``p`` and ``m`` slots.

    ``dimap_s(f, g)`` and ``dimap_p(f, g)`` are contravariant in the value and
    covariant in the delta; ``dimap_m(f, g)`` is covariant in ``m`` and
    contravariant in ``dm``.

    >>> from prelens import id_pre_lens
    >>> isinstance(id_pre_lens, TriProfunctor), isinstance(42, TriProfunctor)
    (True, False)
    """

    def dimap_s(self, f: Fn, g: Fn) -> Self: ...

    def dimap_p(self, f: Fn, g: Fn) -> Self: ...

    def dimap_m(self, f: Fn, g: Fn) -> Self: ...


@runtime_checkable
class Trimbara(TriProfunctor, Protocol):
    """Haskell's ``class TriProFunctor t => Trimbara t``.

    ``alpha :: t m dm p dp s ds -> t (m1, m) (dm1, dm) p dp (m1, s) (dm1, ds)``
    ``beta  :: t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds``

    ``PreLens`` is one, and so is a :class:`PLeft` or :class:`PRight` of one:

    >>> from prelens import id_pre_lens
    >>> isinstance(id_pre_lens, Trimbara), isinstance(PLeft(id_pre_lens), Trimbara)
    (True, True)
    """

    def alpha(self) -> Self: ...

    def beta(self) -> Self: ...


def dimap_s(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapS f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_s``).

    Haskell::

        dimapS :: TriProFunctor t => (s' -> s) -> (ds -> ds') -> t m dm p dp s ds -> t m dm p dp s' ds'

    >>> dimap_s(lambda s: s * 10, lambda ds: ds, id_pre_lens).fwd((), 2)
    ((), 20)
    """
    return _check_dimap("dimap_s", f, g, t).dimap_s(f, g)


def dimap_p(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapP f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_p``).

    Haskell::

        dimapP :: TriProFunctor t => (p' -> p) -> (dp -> dp') -> t m dm p dp s ds -> t m dm p' dp' s ds

    >>> dimap_p(lambda q: (), lambda dp: "dq", id_pre_lens).bwd((), 1)
    ('dq', 1)
    """
    return _check_dimap("dimap_p", f, g, t).dimap_p(f, g)


def dimap_m(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapM f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_m``).

    Haskell::

        dimapM :: TriProFunctor t => (m -> m') -> (dm' -> dm) -> t m dm p dp s ds -> t m' dm' p dp s ds

    >>> dimap_m(lambda m: "m", lambda dm: (), id_pre_lens).fwd((), 1)
    ('m', 1)
    """
    return _check_dimap("dimap_m", f, g, t).dimap_m(f, g)


def _check_dimap(fn: str, f: Any, g: Any, t: Any) -> Any:
    if not isinstance(t, _OWN_MODULES):  # the plumbing of every TriLens passes here: the common case first
        as_module(fn, "t", t)
    _args.function(fn, "f", f)
    _args.function(fn, "g", g)
    return t


_MODULE_METHODS = ("dimap_s", "dimap_p", "dimap_m", "alpha", "beta")


def as_module(fn: str, what: str, t: Any) -> Any:
    """``t`` if it is a Trimbara module (a PreLens, a ``Program``, ``PLeft``/``PRight`` of one ...)."""
    if isinstance(t, _OWN_MODULES) or all(callable(getattr(t, m, None)) for m in _MODULE_METHODS):
        return t
    hint = " (a TriLens is a function of one: apply it, or use from_tamb(...))" if isinstance(t, TriLens) else ""
    raise E.must_be(fn, what, f"a Trimbara module such as a PreLens{hint}", E.describe(t))


def as_trilens(fn: str, what: str, tri: Any) -> AnyTriLens:
    """``tri`` if it is a :class:`TriLens`, else an error naming ``fn`` and ``what``."""
    if isinstance(tri, TriLens):
        return tri
    hint = " (a PreLens becomes one with to_tamb(...))" if isinstance(tri, PreLens) else ""
    raise E.must_be(fn, what, f"a TriLens{hint}", E.describe(tri))


def alpha(t: Any) -> Any:
    """``alpha t`` for any Trimbara module ``t`` (see ``PreLens.alpha``): thread an extra residue ``m1``.

    Haskell::

        alpha :: Trimbara t => t m dm p dp s ds -> t (m1, m) (dm1, dm) p dp (m1, s) (dm1, ds)

    >>> alpha(id_pre_lens).fwd((), ("m1", 1))
    (('m1', ()), 1)
    """
    return as_module("alpha", "t", t).alpha()


def beta(t: Any) -> Any:
    """``beta t`` for any Trimbara module ``t`` (see ``PreLens.beta``): move an input ``p1`` into the parameters.

    Haskell::

        beta :: Trimbara t => t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds

    >>> beta(id_pre_lens).fwd(((), "p1"), 1)
    ((), ('p1', 1))
    """
    return as_module("beta", "t", t).beta()


@dataclass(frozen=True, eq=False, repr=False)
class TriLens(Generic[A, DA, M, DM, P, DP, S, DS]):
    """A pre-lens in profunctor form: a function on Trimbara modules (the module docstring gives its type).

    Call it on a Trimbara module; ``>>`` is :func:`tri_compose` and ``@`` is :func:`tri_tensor`.

    >>> from prelens import id_pre_lens
    >>> to_tamb(id_pre_lens) >> to_tamb(id_pre_lens)
    to_tamb(id_pre_lens) >> to_tamb(id_pre_lens)
    """

    run: Callable[[Any], Any]
    name: str = "trilens"

    def __post_init__(self) -> None:
        _args.function("TriLens", "run", self.run)
        _args.name("TriLens", "name", self.name)

    def __call__(self, t: Any) -> Any:
        return self.run(t)

    def __repr__(self) -> str:
        return self.name

    def __rshift__(self, other: TriLens[Any, Any, Any, Any, Any, Any, Any, Any]) -> AnyTriLens:
        return tri_compose(self, other)

    def __matmul__(self, other: TriLens[Any, Any, Any, Any, Any, Any, Any, Any]) -> AnyTriLens:
        return tri_tensor(self, other)


AnyTriLens = TriLens[Any, Any, Any, Any, Any, Any, Any, Any]


def _paren(name: str) -> str:
    return f"({name})" if " " in name else name


@constructor
def to_tamb(lens: AnyLens) -> AnyTriLens:
    """A pre-lens as a TriLens: lift its passes between the two Tambara structure maps.

    Haskell::

        toTamb :: PreLens a da m dm p dp s ds -> TriLens a da m dm p dp s ds
        toTamb (PreLens fw bw) = beta . dimapS fw bw . alpha

    >>> to_tamb(id_pre_lens)(id_pre_lens).fwd(((), ()), 1)
    (((), ()), 1)
    """
    as_lens("to_tamb", "lens", lens)
    fw_, bw_ = LensPass(lens), LensPass(lens, backward=True)
    return TriLens(lambda t: beta(dimap_s(fw_, bw_, alpha(t))), f"to_tamb({lens!r})")


@dataclass(frozen=True, eq=False)
class LensPass:
    """``uncurry fw`` (or, ``backward``, ``uncurry bw``): the map that ``to_tamb`` dimaps with.

    It keeps its lens, so an interpretation can tell a lens's own box from the plumbing.

    >>> LensPass(id_pre_lens)(((), 3)), LensPass(id_pre_lens, backward=True)
    (((), 3), bwd(id_pre_lens))
    """

    lens: AnyLens
    backward: bool = False

    def __call__(self, pair: Any) -> Any:
        return (self.lens.bwd if self.backward else self.lens.fwd)(pair[0], pair[1])

    def __repr__(self) -> str:
        return f"{'bwd' if self.backward else 'fwd'}({self.lens!r})"


@constructor
def from_tamb(tri: AnyTriLens) -> AnyLens:
    """A TriLens as a pre-lens: apply it to the identity pre-lens and strip the units.

    Haskell::

        fromTamb :: TriLens a da m dm p dp s ds -> PreLens a da m dm p dp s ds
        fromTamb f = dimapM runit unRunit $ dimapP unLunit lunit $ f idPreLens

    >>> from_tamb(to_tamb(id_pre_lens)).fwd((), 7)
    ((), 7)
    """
    as_trilens("from_tamb", "tri", tri)
    return run_program(interpret(tri, Program()), f"from_tamb({tri!r})")


def run_program(program: Program, name: str = "program") -> AnyLens:
    """A program (the steps a TriLens took) run as a pre-lens: two loops over its steps per pass,
    so any size fits Python's stack. A value of the wrong structure is reported naming the whole.

    >>> run_program(Program().dimap_s(lambda s: s + 1, lambda ds: 2 * ds)).bwd((), 5)
    ((), 10)
    """
    fwd, bwd = compile_passes(program.steps())
    return PreLens(_naming_the_whole(fwd, name, "forward"), _naming_the_whole(bwd, name, "backward"), name, None)


def interpret(tri: AnyTriLens, unit: Any) -> Any:
    """Run ``tri`` in the Trimbara module whose identity is ``unit``, and strip the units (the post's
    ``fromTamb`` for any module). ``interpret(tri, id_pre_lens)`` is the post's own definition, run as
    nested closures (for teaching sizes); ``from_tamb(tri)`` runs ``interpret(tri, Program())`` with loops.

    >>> interpret(to_tamb(id_pre_lens), id_pre_lens).fwd((), 1)
    ((), 1)
    >>> interpret(to_tamb(id_pre_lens), Program())
    Program(alpha, dimap_s fwd(id_pre_lens), beta, dimap_p unlunit, dimap_m runit)
    """
    as_trilens("interpret", "tri", tri)
    as_module("interpret", "unit", unit)
    try:  # tri_compose is function composition: a TriLens nested hundreds deep nests its calls as deep
        out = dimap_m(runit, unrunit, dimap_p(unlunit, lunit, _module(tri(unit))))
    except RecursionError:
        raise E.too_deep(repr(tri)) from None
    if not isinstance(out, PreLens):
        return out
    fwd, bwd = (_depth_guarded(run, f"interpret({E.short_name(repr(tri))}, {unit!r})") for run in (out.fwd, out.bwd))
    return replace(out, fwd=fwd, bwd=bwd)


def _depth_guarded(run: Callable[[Any, Any], Any], name: str) -> Callable[[Any, Any], Any]:
    """``run``, a pass of the post's nest of closures (unchecked, as it was), raising
    :class:`~prelens.errors.DepthError` if too deep for the stack."""

    def guarded(x: Any, y: Any) -> Any:
        try:
            return run(x, y)
        except RecursionError:
            raise E.too_deep(name) from None

    guarded.__prelens_checked__ = True  # type: ignore[attr-defined]
    return guarded


def _module(t: Any) -> Any:
    """What a TriLens returned, unwrapped if it came back inside a ``PLeft`` or ``PRight``."""
    while type(t) in (PLeft, PRight):
        t = t.t
    return t


def _naming_the_whole(run: Callable[[Any, Any], Any], name: str, which: str) -> Callable[[Any, Any], Any]:
    """``run`` with a foreign structural error raised inside it reported as one of ``name``'s."""

    def named(x: Any, y: Any) -> Any:
        try:
            return run(x, y)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            if isinstance(exc, E.PrelensError) and not getattr(exc, "_prelens_where", False):
                raise  # a lens inside named itself
            given = "(parameters, input)" if which == "forward" else "(residue, output delta)"
            expected = (
                "the parameters and the input have the structure it expects"
                if which == "forward"
                else "the residue is the one its forward pass returned and the delta has the output's structure"
            )
            raise E.StructureError(
                f"{E.short_name(name)}: the {which} pass failed on {given} = {E.describe_tree((x, y))} "
                f"({type(exc).__name__}: {exc}); a TriLens runs as a program of dimaps, so check that {expected}"
            ) from exc

    return named


@constructor
def tri_compose(f: AnyTriLens, g: AnyTriLens) -> AnyTriLens:
    """Sequential composition of TriLenses: ``f`` runs first (as in ``f >> g``).

    Haskell::

        triCompose :: TriLens b db m dm p dp s ds -> TriLens a da n dn q dq b db
                   -> TriLens a da (m, n) (dm, dn) (q, p) (dq, dp) s ds
        triCompose f g = dimapP unAssoc assoc . dimapM unAssoc assoc . f . g

    >>> l = from_tamb(tri_compose(to_tamb(id_pre_lens), to_tamb(id_pre_lens)))
    >>> l.fwd(((), ()), 1)
    (((), ()), 1)
    """

    as_trilens("tri_compose", "f", f)
    as_trilens("tri_compose", "g", g)

    def run(t: Any) -> Any:
        return dimap_p(unassoc, assoc, dimap_m(unassoc, assoc, f(g(t))))

    return TriLens(run, f"{f!r} >> {_paren(repr(g))}")


# ------------------------------------------------------- parallel composition


@dataclass(frozen=True, eq=False)
class _Half:
    """A module of pairs seen through one half: its dimaps act on that half (``on``, ``first`` or ``second``)."""

    t: Any
    on: ClassVar[Any]  # first or second: a staticmethod

    def __post_init__(self) -> None:
        if type(self.t) not in _OWN_MODULES:  # the plumbing's own modules: the common case
            as_module(type(self).__name__, "t", self.t)

    def dimap_s(self, f: Fn, g: Fn) -> Self:
        return type(self)(self.t.dimap_s(self.on(f), self.on(g)))

    def dimap_p(self, f: Fn, g: Fn) -> Self:
        return type(self)(self.t.dimap_p(self.on(f), self.on(g)))

    def dimap_m(self, f: Fn, g: Fn) -> Self:
        return type(self)(self.t.dimap_m(self.on(f), self.on(g)))


@dataclass(frozen=True, eq=False)
class PLeft(_Half):
    """A module of pairs seen through its left components (Haskell's ``PLeft``), in ``m dm p dp s ds``.

    >>> from prelens import id_pre_lens
    >>> PLeft(id_pre_lens).dimap_s(lambda s: s + 1, lambda ds: ds).t.fwd((), (1, "x"))
    ((), (2, 'x'))
    """

    on = staticmethod(first)

    def alpha(self) -> PLeft:
        return PLeft(self.t.alpha().dimap_m(unassoc, assoc).dimap_s(assoc, unassoc))

    def beta(self) -> PLeft:
        return PLeft(self.t.dimap_s(unassoc, assoc).beta().dimap_p(skip_left, skip_left))


@dataclass(frozen=True, eq=False)
class PRight(_Half):
    """A module of pairs seen through its right components (Haskell's ``PRight``), in ``m' dm' p' dp' s' ds'``.

    >>> from prelens import id_pre_lens
    >>> PRight(id_pre_lens).dimap_s(lambda s: s * 2, lambda ds: ds).t.fwd((), (1, "x"))
    ((), (1, 'xx'))
    """

    on = staticmethod(second)

    def alpha(self) -> PRight:
        return PRight(self.t.alpha().dimap_m(skip_right, skip_right).dimap_s(skip_right, skip_right))

    def beta(self) -> PRight:
        return PRight(self.t.dimap_s(skip_right, skip_right).beta().dimap_p(unassoc, assoc))


@constructor
def tri_tensor(l1: AnyTriLens, l2: AnyTriLens) -> AnyTriLens:
    """Parallel composition of TriLenses (Haskell's ``prodLensT``), as ``l1 @ l2``.

    Haskell::

        prodLensT :: TriLens a da m dm p dp s ds -> TriLens a' da' m' dm' p' dp' s' ds'
                  -> TriLens (a, a') (da, da') (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')

    >>> l = from_tamb(tri_tensor(to_tamb(id_pre_lens), to_tamb(id_pre_lens)))
    >>> l.fwd(((), ()), (1, 2))
    (((), ()), (1, 2))
    """

    as_trilens("tri_tensor", "l1", l1)
    as_trilens("tri_tensor", "l2", l2)

    def run(t: Any) -> Any:
        t = on_half(l2, 1, on_half(l1, 0, dimap_p(runit, unrunit, dimap_m(unlunit, lunit, t))))
        t = dimap_p(second(unlunit), second(lunit), dimap_m(first(runit), first(unrunit), t))
        return dimap_p(unassoc, assoc, dimap_m(unassoc, assoc, t))

    return TriLens(run, f"{_paren(repr(l1))} @ {_paren(repr(l2))}")


def on_half(tri: AnyTriLens, i: int, t: Any) -> Any:
    """``tri`` run on the left (``i = 0``, through ``PLeft``) or right (``1``, ``PRight``) halves of ``t``'s pairs.

    A :class:`Program` focuses on the half instead of wrapping it: its steps stay one per step taken.

    >>> on_half(to_tamb(id_pre_lens), 1, Program()).steps()[0]
    alpha @1/1/1
    """
    if isinstance(t, Program):
        return _module(tri(t.at(t.focus.half(i)))).at(t.focus)
    return tri((PLeft, PRight)[i](t)).t


_OWN_MODULES = (PreLens, PLeft, PRight, Program)


# ------------------------------------------------ the TriLens in the core's generic functions


@as_pre_lens.register
def _(tri: TriLens, fn: str) -> AnyLens:  # type: ignore[type-arg]
    return from_tamb(tri)


def _cons(x: tuple[Any, list[Any]]) -> list[Any]:
    return [x[0], *x[1]]


def _is_seq(xs: Any) -> bool:
    """Lists, and 1-D arrays (a vector of scalars is the post's ``V = [D]``)."""
    return isinstance(xs, list) or (isinstance(xs, np.ndarray) and xs.ndim == 1)


def _n_long(name: str, n: int, what: str) -> Fn:
    def check(xs: Any) -> Any:
        if not _is_seq(xs) or len(xs) != n:
            raise E.list_length_error(name, what, n, len(xs) if _is_seq(xs) else E.describe_tree(xs))
        return xs

    check.__qualname__ = f"{what} of length {n}"
    return check


@copies.register
def _(lens: TriLens, n: int, shared: bool) -> AnyTriLens:  # type: ignore[type-arg]
    """The post's ``vecLens`` (the ``consLens``/``nilLens`` recursion) and ``batchN`` on TriLenses."""
    name = f"{'batch_n' if shared else 'vec_lens'}({n}, {lens!r})"
    vec = _vec_lens_t(n, lens, name)
    if not shared:
        return vec
    add = second(lambda dps: add_trees(dps, name, "parameter delta"))
    return TriLens(lambda t: dimap_p(second(lambda p: [p] * n), add, vec(t)), name)


def _vec_lens_t(n: int, lens: AnyTriLens, name: str) -> AnyTriLens:
    def uncons(xs: list[Any]) -> tuple[Any, list[Any]]:
        if not _is_seq(xs) or len(xs) == 0:
            raise E.StructureError(f"{name}: list is shorter than {n}: got {E.describe(xs)}")
        return xs[0], list(xs[1:])

    def nil(xs: Any) -> list[Any]:
        """What is left after ``n`` copies took their parts: ``[]``, or an error."""
        if not _is_seq(xs) or len(xs) != 0:
            raise E.StructureError(f"{name}: list is longer than {n}: {len(xs) if _is_seq(xs) else 1} left over")
        return []

    def rest_empty(x: Any) -> Any:
        """``x = (y, rest)``, built by the nest: ``y``, if nothing is left in ``rest``."""
        nil(x[1])
        return x[0]

    def nil_lens(t: Any) -> Any:
        t = dimap_s(nil, nil, t)
        t = dimap_p(rest_empty, lambda dp1: (dp1, []), t)
        return dimap_m(lambda m1: ([], m1), lambda dm: rest_empty(sym(dm)), t)

    def cons_lens(l1: AnyTriLens, l2: AnyTriLens) -> AnyTriLens:
        both = tri_tensor(l1, l2)

        def run(t: Any) -> Any:
            t = both(dimap_s(_cons, uncons, t))
            t = dimap_s(uncons, _cons, t)
            t = dimap_m(lambda m: (_cons(m[0]), m[1]), lambda dm: (uncons(dm[0]), dm[1]), t)
            return dimap_p(second(uncons), second(_cons), t)

        return TriLens(run)

    nest: AnyTriLens = TriLens(nil_lens)
    for _ in range(n):
        nest = cons_lens(lens, nest)

    def run(t: Any) -> Any:
        return _vec_program(n, lens, name, t) if isinstance(t, Program) else nest(t)

    return TriLens(run, name)


def _vec_program(n: int, lens: AnyTriLens, name: str, t: Program) -> Program:
    """``vec_lens`` on a :class:`Program`: ``lens``'s steps taken once, acting on each element.

    The copies' residues gather at ``m@(0, *)`` as ``(m_i, ())``, their parameters at ``p@(1, *)``
    as ``((), p_i)``; stripping those units gives the cons construction's ``([m_i], m1)`` and ``(p1, [p_i])``.
    """
    units = [()] * n
    t = t.dimap_s(_same, _n_long(name, n, "output delta"))
    t = t.dimap_m(lambda m1: (units, m1), lambda dm: dm[1])
    t = t.dimap_p(lambda p: p[0], lambda dp1: (dp1, units))
    t = _module(lens(t.at(t.focus.each()))).at(t.focus)
    t = t.dimap_m(
        lambda m: ([mi for mi, _ in m[0]], m[1]),
        lambda dm: ([(dmi, ()) for dmi in _n_long(name, n, "residue delta")(dm[0])], dm[1]),
    )
    t = t.dimap_p(
        lambda p: (p[0], [((), pi) for pi in _n_long(name, n, "parameters")(p[1])]),
        lambda dp: (dp[0], [q for _, q in dp[1]]),
    )
    return t.dimap_s(_n_long(name, n, "input"), _same)


def _same(x: Any) -> Any:
    return x


def as_lens_or_trilens(fn: str, what: str, value: Any) -> Any:
    """``value`` if it is a PreLens or a TriLens, else an error naming ``fn`` and ``what``."""
    if isinstance(value, (PreLens, TriLens)):
        return value
    raise E.must_be(fn, what, "a PreLens or a TriLens", E.describe(value))
