"""The one type: a pre-lens, with sequential (``>>``) and parallel (``@``) composition.

Haskell::

    data PreLens a da m dm p dp s ds =
      PreLens ((p, s) -> (m, a)) ((dm, da) -> (dp, ds))

``fwd(p, s) -> (m, a)`` turns parameters and input into a residue and an output;
``bwd(dm, da) -> (dp, ds)`` turns a residue delta and an output delta into a
parameter delta and an input delta. ``bwd`` never sees ``p`` or ``s``: all it
needs travels in the residue. ``bwd`` is the plain vector-Jacobian product; the
learning rate lives in the optimiser only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic

import numpy as np
from typing_extensions import TypeVar

from . import _errors as E

A = TypeVar("A")
DA = TypeVar("DA")
M = TypeVar("M")
DM = TypeVar("DM")
P = TypeVar("P")
DP = TypeVar("DP")
S = TypeVar("S")
DS = TypeVar("DS")
B = TypeVar("B")
DB = TypeVar("DB")
N = TypeVar("N")
DN = TypeVar("DN")
Q = TypeVar("Q")
DQ = TypeVar("DQ")
A2 = TypeVar("A2")
DA2 = TypeVar("DA2")
M2 = TypeVar("M2")
DM2 = TypeVar("DM2")
P2 = TypeVar("P2")
DP2 = TypeVar("DP2")
S2 = TypeVar("S2")
DS2 = TypeVar("DS2")

Fwd = Callable[[P, S], tuple[M, A]]
Bwd = Callable[[DM, DA], tuple[DP, DS]]
Init = Callable[[np.random.Generator], P]


def _no_params(rng: np.random.Generator) -> tuple[()]:
    return ()


@dataclass(frozen=True, eq=False, repr=False)
class PreLens(Generic[A, DA, M, DM, P, DP, S, DS]):
    """A pre-lens ``s -> a`` with parameters ``p`` and residue ``m``.

    Haskell: ``PreLens a da m dm p dp s ds``; ``fwd :: (p, s) -> (m, a)``,
    ``bwd :: (dm, da) -> (dp, ds)``.

    ``name`` is what ``repr`` shows; ``init_fn(rng)`` creates parameters (the
    default creates ``()``, right for parameter-free lenses). ``op`` and
    ``parts`` record how a composite was built (for ``repr`` and summaries).

    >>> double = PreLens(lambda p, s: ((), 2 * s), lambda dm, da: ((), 2 * da), name="double")
    >>> double.fwd((), 3.0)
    ((), 6.0)
    >>> double >> double
    double >> double
    """

    fwd: Callable[[P, S], tuple[M, A]]
    bwd: Callable[[DM, DA], tuple[DP, DS]]
    name: str = "lens"
    init_fn: Callable[[np.random.Generator], P] | None = field(default=_no_params)  # type: ignore[assignment]
    op: str = ""
    parts: tuple[PreLens[Any, Any, Any, Any, Any, Any, Any, Any], ...] = ()

    def __repr__(self) -> str:
        return self.name

    def init(self, rng: np.random.Generator | int | None = None) -> P:
        """Create parameters with ``rng`` (a ``numpy.random.Generator`` or a seed).

        >>> (id_pre_lens >> id_pre_lens).init(0)
        ((), ())
        """
        if self.init_fn is None:
            raise E.no_init_error(self.name, _first_without_init(self).name)
        return self.init_fn(np.random.default_rng(rng))

    def named(self, name: str) -> PreLens[A, DA, M, DM, P, DP, S, DS]:
        """The same lens shown under another name (its parts are kept for summaries).

        >>> id_pre_lens.named("wire")
        wire
        """
        return replace(self, name=name, op="", parts=self.parts or (self,))

    def __rshift__(
        self, other: PreLens[B, DB, N, DN, Q, DQ, A, DA]
    ) -> PreLens[B, DB, tuple[M, N], tuple[DM, DN], tuple[Q, P], tuple[DQ, DP], S, DS]:
        return pre_compose(self, other)

    def __matmul__(
        self, other: PreLens[A2, DA2, M2, DM2, P2, DP2, S2, DS2]
    ) -> PreLens[
        tuple[A, A2],
        tuple[DA, DA2],
        tuple[M, M2],
        tuple[DM, DM2],
        tuple[P, P2],
        tuple[DP, DP2],
        tuple[S, S2],
        tuple[DS, DS2],
    ]:
        return prod_lens(self, other)

    # -- TriProfunctor instance (Haskell: ``instance TriProFunctor PreLens``) --

    def dimap_s(self, f: Callable[[S2], S], g: Callable[[DS], DS2]) -> PreLens[A, DA, M, DM, P, DP, S2, DS2]:
        """Pre-compose the input with ``f: s' -> s``, post-compose its delta with ``g: ds -> ds'``.

        Haskell: ``dimapS :: (s' -> s) -> (ds -> ds') -> t m dm p dp s ds -> t m dm p dp s' ds'``

        >>> id_pre_lens.dimap_s(lambda s: s + 1, lambda ds: 2 * ds).fwd((), 1)
        ((), 2)
        """
        fwd, bwd = self.fwd, self.bwd

        def fwd_(p: P, s: S2) -> tuple[M, A]:
            return fwd(p, f(s))

        def bwd_(dm: DM, da: DA) -> tuple[DP, DS2]:
            dp, ds = bwd(dm, da)
            return dp, g(ds)

        return PreLens(fwd_, bwd_, f"dimap_s({self.name})", self.init_fn, "", (self,))

    def dimap_p(self, f: Callable[[P2], P], g: Callable[[DP], DP2]) -> PreLens[A, DA, M, DM, P2, DP2, S, DS]:
        """Pre-compose the parameters with ``f: p' -> p``, post-compose their delta with ``g``.

        Haskell: ``dimapP :: (p' -> p) -> (dp -> dp') -> t m dm p dp s ds -> t m dm p' dp' s ds``

        The result has no initializer (``p'`` cannot be made from ``p``).

        >>> id_pre_lens.dimap_p(lambda q: (), lambda dp: "d").bwd((), 5)
        ('d', 5)
        """
        fwd, bwd = self.fwd, self.bwd

        def fwd_(p: P2, s: S) -> tuple[M, A]:
            return fwd(f(p), s)

        def bwd_(dm: DM, da: DA) -> tuple[DP2, DS]:
            dp, ds = bwd(dm, da)
            return g(dp), ds

        return PreLens(fwd_, bwd_, f"dimap_p({self.name})", None, "", (self,))

    def dimap_m(self, f: Callable[[M], M2], g: Callable[[DM2], DM]) -> PreLens[A, DA, M2, DM2, P, DP, S, DS]:
        """Post-compose the residue with ``f: m -> m'``, pre-compose its delta with ``g: dm' -> dm``.

        Covariant in ``m``, contravariant in ``dm`` (the flipped pair).
        Haskell: ``dimapM :: (m -> m') -> (dm' -> dm) -> t m dm p dp s ds -> t m' dm' p dp s ds``

        >>> id_pre_lens.dimap_m(lambda m: "m", lambda dm: ()).fwd((), 5)
        ('m', 5)
        """
        fwd, bwd = self.fwd, self.bwd

        def fwd_(p: P, s: S) -> tuple[M2, A]:
            m, a = fwd(p, s)
            return f(m), a

        def bwd_(dm: DM2, da: DA) -> tuple[DP, DS]:
            return bwd(g(dm), da)

        return PreLens(fwd_, bwd_, f"dimap_m({self.name})", self.init_fn, "", (self,))

    # -- Trimbara instance (Haskell: ``instance Trimbara PreLens``) --

    def alpha(self) -> PreLens[A, DA, tuple[Any, M], tuple[Any, DM], P, DP, tuple[Any, S], tuple[Any, DS]]:
        """Thread an extra residue ``m1`` from the input to the residue.

        Haskell: ``alpha :: t m dm p dp s ds -> t (m1, m) (dm1, dm) p dp (m1, s) (dm1, ds)``

        >>> id_pre_lens.alpha().fwd((), ("n", 1))
        (('n', ()), 1)
        """
        fwd, bwd = self.fwd, self.bwd

        def fwd_(p: P, ns: tuple[Any, S]) -> tuple[tuple[Any, M], A]:
            n, s = ns
            m, a = fwd(p, s)
            return (n, m), a

        def bwd_(dm: tuple[Any, DM], da: DA) -> tuple[DP, tuple[Any, DS]]:
            dn, dm_ = dm
            dp, ds = bwd(dm_, da)
            return dp, (dn, ds)

        return PreLens(fwd_, bwd_, f"alpha({self.name})", self.init_fn, "", (self,))

    def beta(self) -> PreLens[A, DA, M, DM, tuple[P, Any], tuple[DP, Any], Any, Any]:
        """Move the first half ``p1`` of a paired input ``(p1, s)`` into the parameters.

        Haskell: ``beta :: t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds``

        >>> id_pre_lens.beta().fwd(((), "r"), 1)
        ((), ('r', 1))
        """
        fwd, bwd = self.fwd, self.bwd

        # The input type S of ``self`` is a pair here; Python's generics cannot
        # say so, hence the ``Any`` views of the two passes.
        fwd_any: Callable[[P, Any], tuple[M, A]] = fwd
        bwd_any: Callable[[DM, DA], tuple[DP, Any]] = bwd

        def fwd_(p: tuple[P, Any], s: Any) -> tuple[M, A]:
            p_, r = p
            return fwd_any(p_, (r, s))

        def bwd_(dm: DM, da: DA) -> tuple[tuple[DP, Any], Any]:
            dp, dr_ds = bwd_any(dm, da)
            return (dp, dr_ds[0]), dr_ds[1]

        return PreLens(fwd_, bwd_, f"beta({self.name})", None, "", (self,))


AnyLens = PreLens[Any, Any, Any, Any, Any, Any, Any, Any]


def _first_without_init(lens: AnyLens) -> AnyLens:
    """The innermost part of ``lens`` that cannot create its parameters."""
    for part in lens.parts:
        if part.init_fn is None and part is not lens:
            return _first_without_init(part)
    return lens


def _wrap(lens: AnyLens, op: str, side: str) -> str:
    """``repr`` of an operand, parenthesised where Python's precedence needs it.

    ``@`` binds tighter than ``>>``; both associate to the left.
    """
    if lens.op not in (">>", "@") or (op == ">>" and lens.op == "@"):
        return lens.name
    if side == "left" and lens.op == op:
        return lens.name
    return f"({lens.name})"


def pre_compose(
    f: PreLens[B, DB, M, DM, P, DP, S, DS], g: PreLens[A, DA, N, DN, Q, DQ, B, DB]
) -> PreLens[A, DA, tuple[M, N], tuple[DM, DN], tuple[Q, P], tuple[DQ, DP], S, DS]:
    """Sequential composition: ``f`` runs first, then ``g``. The same as ``f >> g``.

    Haskell::

        preCompose :: PreLens a' da' m dm p dp s ds -> PreLens a da n dn q dq a' da'
                   -> PreLens a da (m, n) (dm, dn) (q, p) (dq, dp) s ds

    Residues are ``(m_f, m_g)`` in data-flow order; parameters are
    ``(p_g, p_f)``, the later lens first.

    >>> inc = PreLens(lambda p, s: ((), s + p), lambda dm, da: (da, da), name="inc")
    >>> pre_compose(inc, inc).fwd((10.0, 1.0), 0.0)
    (((), ()), 11.0)
    """
    f_fwd, f_bwd, g_fwd, g_bwd = f.fwd, f.bwd, g.fwd, g.bwd
    name = f"{_wrap(f, '>>', 'left')} >> {_wrap(g, '>>', 'right')}"

    def fwd(p: tuple[Q, P], s: S) -> tuple[tuple[M, N], A]:
        try:
            p_g, p_f = p
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "parameters", "(p_g, p_f), the later lens first", p) from None
        try:
            m_f, b = f_fwd(p_f, s)
        except Exception as exc:
            raise E.in_part(exc, name, f.name, "the forward pass", s) from None
        try:
            m_g, a = g_fwd(p_g, b)
        except Exception as exc:
            raise E.in_part(exc, name, g.name, "the forward pass", b, f"the output of {f.name}") from None
        return (m_f, m_g), a

    def bwd(dm: tuple[DM, DN], da: DA) -> tuple[tuple[DQ, DP], DS]:
        try:
            dm_f, dm_g = dm
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "residue deltas", "(dm_f, dm_g)", dm) from None
        try:
            dp_g, db = g_bwd(dm_g, da)
        except Exception as exc:
            raise E.in_part(exc, name, g.name, "the backward pass", da) from None
        try:
            dp_f, ds = f_bwd(dm_f, db)
        except Exception as exc:
            raise E.in_part(exc, name, f.name, "the backward pass", db, f"the delta from {g.name}") from None
        return (dp_g, dp_f), ds

    f_init, g_init = f.init_fn, g.init_fn
    init = None
    if f_init is not None and g_init is not None:

        def init(rng: np.random.Generator) -> tuple[Q, P]:
            p_f = f_init(rng)  # data-flow order, so seeds do not depend on nesting
            return g_init(rng), p_f

    return PreLens(fwd, bwd, name, init, ">>", (f, g))


def prod_lens(
    f: PreLens[A, DA, M, DM, P, DP, S, DS], g: PreLens[A2, DA2, M2, DM2, P2, DP2, S2, DS2]
) -> PreLens[
    tuple[A, A2],
    tuple[DA, DA2],
    tuple[M, M2],
    tuple[DM, DM2],
    tuple[P, P2],
    tuple[DP, DP2],
    tuple[S, S2],
    tuple[DS, DS2],
]:
    """Parallel composition (the monoidal product): the same as ``f @ g``.

    Every slot is paired ``(left, right)``. ``@`` is this product, not matmul.

    Haskell: ``prodLens :: PreLens a da m dm p dp s ds -> PreLens a' da' m' dm' p' dp' s' ds'
    -> PreLens (a, a') (da, da') (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')``

    >>> neg = PreLens(lambda p, s: ((), -s), lambda dm, da: ((), -da), name="neg")
    >>> prod_lens(neg, id_pre_lens).fwd(((), ()), (1.0, 2.0))
    (((), ()), (-1.0, 2.0))
    """
    f_fwd, f_bwd, g_fwd, g_bwd = f.fwd, f.bwd, g.fwd, g.bwd

    name = f"{_wrap(f, '@', 'left')} @ {_wrap(g, '@', 'right')}"

    def fwd(p: tuple[P, P2], s: tuple[S, S2]) -> tuple[tuple[M, M2], tuple[A, A2]]:
        try:
            p1, p2 = p
            s1, s2 = s
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "parameters and inputs", "(left, right)", (p, s)) from None
        try:
            m1, a1 = f_fwd(p1, s1)
        except Exception as exc:
            raise E.in_part(exc, name, f.name, "the forward pass", s1) from None
        try:
            m2, a2 = g_fwd(p2, s2)
        except Exception as exc:
            raise E.in_part(exc, name, g.name, "the forward pass", s2) from None
        return (m1, m2), (a1, a2)

    def bwd(dm: tuple[DM, DM2], da: tuple[DA, DA2]) -> tuple[tuple[DP, DP2], tuple[DS, DS2]]:
        try:
            dm1, dm2 = dm
            da1, da2 = da
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "residue and output deltas", "(left, right)", (dm, da)) from None
        try:
            dp1, ds1 = f_bwd(dm1, da1)
        except Exception as exc:
            raise E.in_part(exc, name, f.name, "the backward pass", da1) from None
        try:
            dp2, ds2 = g_bwd(dm2, da2)
        except Exception as exc:
            raise E.in_part(exc, name, g.name, "the backward pass", da2) from None
        return (dp1, dp2), (ds1, ds2)

    f_init, g_init = f.init_fn, g.init_fn
    init = None
    if f_init is not None and g_init is not None:

        def init(rng: np.random.Generator) -> tuple[P, P2]:
            return f_init(rng), g_init(rng)

    return PreLens(fwd, bwd, name, init, "@", (f, g))


def _identity_fwd(p: tuple[()], s: Any) -> tuple[tuple[()], Any]:
    return (), s


def _identity_bwd(dm: tuple[()], da: Any) -> tuple[tuple[()], Any]:
    return (), da


#: The identity pre-lens (Haskell: ``idPreLens :: PreLens a da () () () () a da``).
id_pre_lens: PreLens[Any, Any, tuple[()], tuple[()], tuple[()], tuple[()], Any, Any] = PreLens(
    _identity_fwd, _identity_bwd, "id_pre_lens"
)


def parameter_free(name: str, fwd: Callable[[Any], tuple[Any, Any]], bwd: Callable[[Any, Any], Any]) -> AnyLens:
    """A lens with parameters ``()`` from ``fwd(s) -> (m, a)`` and ``bwd(dm, da) -> ds``.

    >>> sq = parameter_free("square", lambda s: (s, s * s), lambda s, da: 2 * s * da)
    >>> sq.fwd((), 3.0), sq.bwd(3.0, 1.0)
    ((3.0, 9.0), ((), 6.0))
    """

    def fwd_(p: tuple[()], s: Any) -> tuple[Any, Any]:
        return fwd(s)

    def bwd_(dm: Any, da: Any) -> tuple[tuple[()], Any]:
        return (), bwd(dm, da)

    return PreLens(fwd_, bwd_, name)
