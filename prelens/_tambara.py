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
from ._lens import DA, DM, DP, DS, A, AnyLens, M, P, PreLens, S, as_pair, id_pre_lens

Fn = Callable[[Any], Any]


@runtime_checkable
class TriProfunctor(Protocol):
    """Haskell's ``class TriProFunctor t``: re-map the ``s``, ``p`` and ``m`` slots.

    ``dimap_s(f, g)`` and ``dimap_p(f, g)`` are contravariant in the value and
    covariant in the delta; ``dimap_m(f, g)`` is covariant in ``m`` and
    contravariant in ``dm``.
    """

    def dimap_s(self, f: Fn, g: Fn) -> Self: ...

    def dimap_p(self, f: Fn, g: Fn) -> Self: ...

    def dimap_m(self, f: Fn, g: Fn) -> Self: ...


@runtime_checkable
class Trimbara(TriProfunctor, Protocol):
    """Haskell's ``class TriProFunctor t => Trimbara t``.

    ``alpha :: t m dm p dp s ds -> t (m1, m) (dm1, dm) p dp (m1, s) (dm1, ds)``
    ``beta  :: t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds``
    """

    def alpha(self) -> Self: ...

    def beta(self) -> Self: ...


def dimap_s(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapS f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_s``).

    >>> dimap_s(lambda s: s * 10, lambda ds: ds, id_pre_lens).fwd((), 2)
    ((), 20)
    """
    _check_dimap("dimap_s", f, g, t)
    return t.dimap_s(f, g)


def dimap_p(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapP f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_p``).

    >>> dimap_p(lambda q: (), lambda dp: "dq", id_pre_lens).bwd((), 1)
    ('dq', 1)
    """
    _check_dimap("dimap_p", f, g, t)
    return t.dimap_p(f, g)


def dimap_m(f: Fn, g: Fn, t: Any) -> Any:
    """``dimapM f g t`` for any TriProfunctor ``t`` (see ``PreLens.dimap_m``).

    >>> dimap_m(lambda m: "m", lambda dm: (), id_pre_lens).fwd((), 1)
    ('m', 1)
    """
    _check_dimap("dimap_m", f, g, t)
    return t.dimap_m(f, g)


def _check_dimap(fn: str, f: Any, g: Any, t: Any) -> None:
    if type(t) is not PreLens:  # the plumbing of every TriLens passes here: the common case first
        _args.trimbara(fn, "t", t)
    _args.function(fn, "f", f)
    _args.function(fn, "g", g)


def alpha(t: Any) -> Any:
    """``alpha t`` for any Trimbara module ``t`` (see ``PreLens.alpha``).

    >>> alpha(id_pre_lens).fwd((), ("m1", 1))
    (('m1', ()), 1)
    """
    if not isinstance(t, PreLens):
        return _args.trimbara("alpha", "t", t).alpha()
    lens = _passes_checked(t).alpha()
    fwd, bwd, name = lens.fwd, lens.bwd, lens.name

    def fwd_(p: Any, ns: Any) -> Any:
        if not _is_pair(ns):
            raise _plumbing(E.not_a_pair(name, "input", "(m1, s)", ns))
        return fwd(p, ns)

    def bwd_(dm: Any, da: Any) -> Any:
        if not _is_pair(dm):
            raise _plumbing(E.not_a_pair(name, "residue", "(m1, m)", dm))
        return bwd(dm, da)

    return PreLens(fwd_, bwd_, name, lens.init_fn, lens.op, lens.parts)


def beta(t: Any) -> Any:
    """``beta t`` for any Trimbara module ``t`` (see ``PreLens.beta``).

    >>> beta(id_pre_lens).fwd(((), "p1"), 1)
    ((), ('p1', 1))
    """
    if not isinstance(t, PreLens):
        return _args.trimbara("beta", "t", t).beta()
    lens = _passes_checked(t, ds_pair=f"beta({t.name})").beta()
    fwd, name = lens.fwd, lens.name

    def fwd_(p: Any, s: Any) -> Any:
        if not _is_pair(p):
            raise _plumbing(E.not_a_pair(name, "parameters", "(p, p1)", p))
        return fwd(p, s)

    return PreLens(fwd_, lens.bwd, name, lens.init_fn, lens.op, lens.parts)


# ``alpha`` and ``beta`` of a PreLens run its methods with the pairs they take apart checked:
# a value that is not a pair (a tuple or list of two) is an error naming the lens, never
# unpacked (a 2-row array or a 2-key dict would unpack silently) or indexed (``ds[0]`` of an
# array would pick a row). The checks cost a type test per pass.


def _plumbing(err: E.StructureError) -> E.StructureError:
    """Mark ``err`` as raised by the structure maps: ``from_tamb`` reports it as the whole lens's error."""
    err._prelens_plumbing = True  # type: ignore[attr-defined]
    return err


def _is_pair(x: Any) -> bool:
    return (type(x) is tuple or isinstance(x, (tuple, list))) and len(x) == 2


def _passes_checked(t: AnyLens, ds_pair: str = "") -> AnyLens:
    """``t`` (same name, initializer and parts) whose passes return pairs, or an error naming it.

    With ``ds_pair`` (the name of the lens built on it), its input delta must be a pair too.
    """
    fwd, bwd = t.fwd, t.bwd

    def fwd_(p: Any, s: Any) -> Any:
        out = fwd(p, s)
        return out if type(out) is tuple and len(out) == 2 else as_pair(t, out, "fwd")

    def bwd_(dm: Any, da: Any) -> Any:
        out = bwd(dm, da)
        if type(out) is not tuple or len(out) != 2:
            out = as_pair(t, out, "bwd")
        if ds_pair and not _is_pair(out[1]):
            raise _plumbing(E.not_a_pair(ds_pair, f"the input delta of {E.short_name(t.name)}", "(dp1, ds)", out[1]))
        return out

    return PreLens(fwd_, bwd_, t.name, t.init_fn, t.op, t.parts)


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

    Haskell: ``toTamb (PreLens fw bw) = beta . dimapS fw bw . alpha``

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

    Haskell: ``fromTamb f = dimapM runit unRunit $ dimapP unLunit lunit $ f idPreLens``

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
    Trimbara module in ``m dm p dp s ds``.
    """

    t: Any

    def __post_init__(self) -> None:
        if type(self.t) is not PreLens:
            _args.trimbara("PLeft", "t", self.t)

    def dimap_s(self, f: Fn, g: Fn) -> PLeft:
        return PLeft(dimap_s(first(f), first(g), self.t))

    def dimap_p(self, f: Fn, g: Fn) -> PLeft:
        return PLeft(dimap_p(first(f), first(g), self.t))

    def dimap_m(self, f: Fn, g: Fn) -> PLeft:
        return PLeft(dimap_m(first(f), first(g), self.t))

    def alpha(self) -> PLeft:
        return PLeft(dimap_s(assoc, unassoc, dimap_m(unassoc, assoc, alpha(self.t))))

    def beta(self) -> PLeft:
        return PLeft(dimap_p(skip_left, skip_left, beta(dimap_s(unassoc, assoc, self.t))))


@dataclass(frozen=True, eq=False)
class PRight:
    """A module of pairs seen through its right components (Haskell's ``PRight``)."""

    t: Any

    def __post_init__(self) -> None:
        if type(self.t) is not PreLens:
            _args.trimbara("PRight", "t", self.t)

    def dimap_s(self, f: Fn, g: Fn) -> PRight:
        return PRight(dimap_s(second(f), second(g), self.t))

    def dimap_p(self, f: Fn, g: Fn) -> PRight:
        return PRight(dimap_p(second(f), second(g), self.t))

    def dimap_m(self, f: Fn, g: Fn) -> PRight:
        return PRight(dimap_m(second(f), second(g), self.t))

    def alpha(self) -> PRight:
        return PRight(dimap_s(skip_right, skip_right, dimap_m(skip_right, skip_right, alpha(self.t))))

    def beta(self) -> PRight:
        return PRight(dimap_p(unassoc, assoc, beta(dimap_s(skip_right, skip_right, self.t))))


def tri_tensor(l1: AnyTriLens, l2: AnyTriLens) -> AnyTriLens:
    """Parallel composition of TriLenses (Haskell's ``prodLensT``), as ``l1 @ l2``.

    Runs ``l1`` on the left halves through :class:`PLeft` and ``l2`` on the
    right halves through :class:`PRight`, then re-associates::

        TriLens (a, a') (da, da') (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')

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
