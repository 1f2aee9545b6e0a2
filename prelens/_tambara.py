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
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, runtime_checkable

from . import _args
from . import _errors as E
from ._iso import _assoc as assoc
from ._iso import _first as first
from ._iso import _lunit as lunit
from ._iso import _runit as runit
from ._iso import _second as second
from ._iso import _skip_left as skip_left
from ._iso import _skip_right as skip_right
from ._iso import _unassoc as unassoc
from ._iso import _unlunit as unlunit
from ._iso import _unrunit as unrunit
from ._lens import DA, DM, DP, DS, A, AnyLens, M, P, PreLens, S, id_pre_lens

Fn = Callable[[Any], Any]


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
    _check_dimap("dimap_s", f, g, t)
    return t.dimap_s(f, g)


def dimap_p(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapP f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_p``).

    Haskell::

        dimapP :: TriProFunctor t => (p' -> p) -> (dp -> dp') -> t m dm p dp s ds -> t m dm p' dp' s ds

    >>> dimap_p(lambda q: (), lambda dp: "dq", id_pre_lens).bwd((), 1)
    ('dq', 1)
    """
    _check_dimap("dimap_p", f, g, t)
    return t.dimap_p(f, g)


def dimap_m(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapM f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_m``).

    Haskell::

        dimapM :: TriProFunctor t => (m -> m') -> (dm' -> dm) -> t m dm p dp s ds -> t m' dm' p dp s ds

    Covariant in ``m``, contravariant in ``dm``.

    >>> dimap_m(lambda m: "m", lambda dm: (), id_pre_lens).fwd((), 1)
    ('m', 1)
    """
    _check_dimap("dimap_m", f, g, t)
    return t.dimap_m(f, g)


def _check_dimap(fn: str, f: Any, g: Any, t: Any) -> None:
    if type(t) not in (PreLens, PLeft, PRight):  # the plumbing of every TriLens passes here: the common case first
        _args.trimbara(fn, "t", t)
    _args.function(fn, "f", f)
    _args.function(fn, "g", g)


def alpha(t: Any) -> Any:
    """``alpha t`` for any Trimbara module ``t`` (see ``PreLens.alpha``): thread an extra residue ``m1``.

    Haskell::

        alpha :: Trimbara t => t m dm p dp s ds -> t (m1, m) (dm1, dm) p dp (m1, s) (dm1, ds)

    >>> alpha(id_pre_lens).fwd((), ("m1", 1))
    (('m1', ()), 1)
    """
    return _args.trimbara("alpha", "t", t).alpha()


def beta(t: Any) -> Any:
    """``beta t`` for any Trimbara module ``t`` (see ``PreLens.beta``): move an input ``p1`` into the parameters.

    Haskell::

        beta :: Trimbara t => t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds

    >>> beta(id_pre_lens).fwd(((), "p1"), 1)
    ((), ('p1', 1))
    """
    return _args.trimbara("beta", "t", t).beta()


@dataclass(frozen=True, eq=False, repr=False)
class TriLens(Generic[A, DA, M, DM, P, DP, S, DS]):
    """A pre-lens in profunctor form: a function on Trimbara modules.

    Haskell: ``type TriLens a da m dm p dp s ds = forall t. Trimbara t =>
    t m1 dm1 p1 dp1 a da -> t (m, m1) (dm, dm1) (p1, p) (dp1, dp) s ds``.

    Call it on a Trimbara module; ``>>`` is :func:`tri_compose` and ``@`` is
    :func:`tri_tensor`.

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


def to_tamb(lens: AnyLens) -> AnyTriLens:
    """A pre-lens as a TriLens: lift its passes between the two Tambara structure maps.

    Haskell::

        toTamb :: PreLens a da m dm p dp s ds -> TriLens a da m dm p dp s ds
        toTamb (PreLens fw bw) = beta . dimapS fw bw . alpha

    >>> to_tamb(id_pre_lens)(id_pre_lens).fwd(((), ()), 1)
    (((), ()), 1)
    """
    _args.lens("to_tamb", "lens", lens)
    fw, bw = lens.fwd, lens.bwd

    def fw_(ps: Any) -> Any:
        return fw(ps[0], ps[1])

    def bw_(dm_da: Any) -> Any:
        return bw(dm_da[0], dm_da[1])

    return TriLens(lambda t: beta(dimap_s(fw_, bw_, alpha(t))), f"to_tamb({lens!r})")


def from_tamb(tri: AnyTriLens) -> AnyLens:
    """A TriLens as a pre-lens: apply it to the identity pre-lens and strip the units.

    Haskell::

        fromTamb :: TriLens a da m dm p dp s ds -> PreLens a da m dm p dp s ds
        fromTamb f = dimapM runit unRunit $ dimapP unLunit lunit $ f idPreLens

    >>> from_tamb(to_tamb(id_pre_lens)).fwd((), 7)
    ((), 7)
    """
    _args.trilens("from_tamb", "tri", tri)
    lens: AnyLens = dimap_m(runit, unrunit, dimap_p(unlunit, lunit, tri(id_pre_lens)))
    name = f"from_tamb({tri!r})"
    # The passes run through the nest of dimaps the TriLens built; a value of the wrong
    # structure fails somewhere inside it, where no lens can be named: name the whole.
    fwd_ = _naming_the_whole(lens.fwd, name, "forward")
    bwd_ = _naming_the_whole(lens.bwd, name, "backward")
    return PreLens(fwd_, bwd_, name, lens.init_fn, "", (lens,))


def _naming_the_whole(run: Callable[[Any, Any], Any], name: str, which: str) -> Callable[[Any, Any], Any]:
    """``run`` with a foreign structural error raised inside it reported as one of ``name``'s."""

    def named(x: Any, y: Any) -> Any:
        try:
            return run(x, y)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            if isinstance(exc, E.PrelensError) and not getattr(exc, "_prelens_plumbing", False):
                raise
            raise E.tamb_pass_failed(name, which, (x, y), exc) from exc

    return named


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

    _args.trilens("tri_compose", "f", f)
    _args.trilens("tri_compose", "g", g)

    def run(t: Any) -> Any:
        return dimap_p(unassoc, assoc, dimap_m(unassoc, assoc, f(g(t))))

    return TriLens(run, f"{f!r} >> {_paren(repr(g))}")


# ------------------------------------------------------- parallel composition


@dataclass(frozen=True, eq=False)
class PLeft:
    """A module of pairs seen through its left components (Haskell's ``PLeft``).

    Wraps ``t (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')`` and is a
    Trimbara module in ``m dm p dp s ds``: its dimaps act on the left halves.

    >>> from prelens import id_pre_lens
    >>> PLeft(id_pre_lens).dimap_s(lambda s: s + 1, lambda ds: ds).t.fwd((), (1, "x"))
    ((), (2, 'x'))
    """

    t: Any

    def __post_init__(self) -> None:
        if type(self.t) not in (PreLens, PLeft, PRight):  # the plumbing's own modules: the common case
            _args.trimbara("PLeft", "t", self.t)

    def dimap_s(self, f: Fn, g: Fn) -> PLeft:
        return PLeft(self.t.dimap_s(first(f), first(g)))

    def dimap_p(self, f: Fn, g: Fn) -> PLeft:
        return PLeft(self.t.dimap_p(first(f), first(g)))

    def dimap_m(self, f: Fn, g: Fn) -> PLeft:
        return PLeft(self.t.dimap_m(first(f), first(g)))

    def alpha(self) -> PLeft:
        return PLeft(self.t.alpha().dimap_m(unassoc, assoc).dimap_s(assoc, unassoc))

    def beta(self) -> PLeft:
        return PLeft(self.t.dimap_s(unassoc, assoc).beta().dimap_p(skip_left, skip_left))


@dataclass(frozen=True, eq=False)
class PRight:
    """A module of pairs seen through its right components (Haskell's ``PRight``).

    Wraps ``t (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')`` and is a
    Trimbara module in ``m' dm' p' dp' s' ds'``: its dimaps act on the right halves.

    >>> from prelens import id_pre_lens
    >>> PRight(id_pre_lens).dimap_s(lambda s: s * 2, lambda ds: ds).t.fwd((), (1, "x"))
    ((), (1, 'xx'))
    """

    t: Any

    def __post_init__(self) -> None:
        if type(self.t) not in (PreLens, PLeft, PRight):  # the plumbing's own modules: the common case
            _args.trimbara("PRight", "t", self.t)

    def dimap_s(self, f: Fn, g: Fn) -> PRight:
        return PRight(self.t.dimap_s(second(f), second(g)))

    def dimap_p(self, f: Fn, g: Fn) -> PRight:
        return PRight(self.t.dimap_p(second(f), second(g)))

    def dimap_m(self, f: Fn, g: Fn) -> PRight:
        return PRight(self.t.dimap_m(second(f), second(g)))

    def alpha(self) -> PRight:
        return PRight(self.t.alpha().dimap_m(skip_right, skip_right).dimap_s(skip_right, skip_right))

    def beta(self) -> PRight:
        return PRight(self.t.dimap_s(skip_right, skip_right).beta().dimap_p(unassoc, assoc))


def tri_tensor(l1: AnyTriLens, l2: AnyTriLens) -> AnyTriLens:
    """Parallel composition of TriLenses (Haskell's ``prodLensT``), as ``l1 @ l2``.

    Haskell::

        prodLensT :: TriLens a da m dm p dp s ds -> TriLens a' da' m' dm' p' dp' s' ds'
                  -> TriLens (a, a') (da, da') (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')

    Runs ``l1`` on the left halves through :class:`PLeft` and ``l2`` on the
    right halves through :class:`PRight`, then re-associates.

    >>> l = from_tamb(tri_tensor(to_tamb(id_pre_lens), to_tamb(id_pre_lens)))
    >>> l.fwd(((), ()), (1, 2))
    (((), ()), (1, 2))
    """

    _args.trilens("tri_tensor", "l1", l1)
    _args.trilens("tri_tensor", "l2", l2)

    def run(t: Any) -> Any:
        t = dimap_p(runit, unrunit, dimap_m(unlunit, lunit, t))
        t = l1(PLeft(t)).t
        t = l2(PRight(t)).t
        t = dimap_p(second(unlunit), second(lunit), dimap_m(first(runit), first(unrunit), t))
        return dimap_p(unassoc, assoc, dimap_m(unassoc, assoc, t))

    return TriLens(run, f"{_paren(repr(l1))} @ {_paren(repr(l2))}")
