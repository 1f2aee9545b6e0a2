"""The one type: a pre-lens, with sequential (``>>``) and parallel (``@``) composition.

Haskell::

    data PreLens a da m dm p dp s ds =
      PreLens ((p, s) -> (m, a)) ((dm, da) -> (dp, ds))

Running a lens traces over the residue (:mod:`prelens.core._trace`): ``bwd`` gets the ``m`` of
its own forward pass as its ``dm``, so all it needs travels in the residue. The passes are
formulas only; what a lens expects is declared (``Expects``) and enforced by :mod:`prelens.core._check`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic

import numpy as np
from typing_extensions import TypeVar

from prelens import errors as E
from prelens.backend._arrays import copy, tree_map_arrays
from prelens.core import _args
from prelens.core._check import ANY, NOTHING, Expects, guard
from prelens.core._registry import constructor

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


def _no_params(rng: np.random.Generator) -> tuple[()]:
    return ()


@dataclass(frozen=True, eq=False, repr=False)
class PreLens(Generic[A, DA, M, DM, P, DP, S, DS]):
    """A pre-lens ``s -> a`` with parameters ``p`` and residue ``m``: ``fwd(p, s) -> (m, a)``,
    ``bwd(dm, da) -> (dp, ds)`` (Haskell's ``PreLens a da m dm p dp s ds``).

    ``init_fn(rng)`` creates parameters (``None``: none can be made); ``expects`` declares what it
    takes (checked on the first call); ``op`` and ``parts`` record how a composite was built.

    >>> double = PreLens(lambda p, s: ((), 2 * s), lambda dm, da: ((), 2 * da), name="double")
    >>> double.fwd((), 3.0)
    ((), 6.0)
    >>> double >> double
    double >> double
    """

    fwd: Callable[[P, S], tuple[M, A]]
    bwd: Callable[[DM, DA], tuple[DP, DS]]
    name: str = "lens"
    # The default makes the unit parameter ``()``, which is a ``P`` only when the lens has no
    # parameters; a TypeVar's default value cannot be typed, hence the one ignore.
    init_fn: Callable[[np.random.Generator], P] | None = field(default=_no_params)  # type: ignore[assignment]
    op: str = ""
    parts: tuple[PreLens[Any, Any, Any, Any, Any, Any, Any, Any], ...] = ()
    expects: Expects = NOTHING
    #: Not an operand of numpy's operators: ``x @ lens`` is Python's TypeError, not numpy's matmul on a 0-d array.
    __array_ufunc__ = None

    def __post_init__(self) -> None:
        for slot in ("fwd", "bwd"):
            _args.function("PreLens", slot, getattr(self, slot))
        _args.name("PreLens", "name", self.name)
        if not isinstance(self.expects, Expects):
            raise E.must_be("PreLens", "expects", "an Expects(...)", E.describe(self.expects))
        if self.init_fn is not None:
            _args.function("PreLens", "init_fn", self.init_fn)
        if not getattr(self.fwd, "__prelens_checked__", False):
            # a fused lens shows its parts but owns its passes: it declares its residue, and is checked as a leaf
            leaf = not self.parts or self.expects.residue is not ANY
            fwd, bwd = guard(lambda: self, self.fwd, self.bwd, self.expects, leaf=leaf)
            object.__setattr__(self, "fwd", fwd)
            object.__setattr__(self, "bwd", bwd)

    def __repr__(self) -> str:
        return self.name

    def init(self, rng: np.random.Generator | int | None = None) -> P:
        """Create parameters with ``rng`` (a ``numpy.random.Generator`` or a seed).

        >>> (id_pre_lens >> id_pre_lens).init(0)
        ((), ())
        """
        if self.init_fn is None:
            raise E.PrelensError(f"{self.name}: cannot create parameters: {_without_init(self)}")
        gen = rng if isinstance(rng, np.random.Generator) else _args.seed(f"{E.short_name(self.name)}.init", rng)
        try:
            return self.init_fn(gen)
        except RecursionError:
            raise E.too_deep(self.name) from None

    @constructor
    def named(self, name: str) -> PreLens[A, DA, M, DM, P, DP, S, DS]:
        """The same lens shown under another name (its parts are kept for summaries).

        >>> id_pre_lens.named("wire")
        wire
        """
        return renamed(self, _args.name("named", "name", name), op="", parts=self.parts or (self,))

    def __rshift__(
        self, other: PreLens[B, DB, N, DN, Q, DQ, A, DA]
    ) -> PreLens[B, DB, tuple[M, N], tuple[DM, DN], tuple[Q, P], tuple[DQ, DP], S, DS]:
        return pre_compose(self, other)

    def __matmul__(
        self, other: PreLens[A2, DA2, M2, DM2, P2, DP2, S2, DS2]
    ) -> Prod[A, A2, DA, DA2, M, M2, DM, DM2, P, P2, DP, DP2, S, S2, DS, DS2]:
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

        return self._wrapped("dimap_s", fwd_, bwd_, self.init_fn)

    def dimap_p(self, f: Callable[[P2], P], g: Callable[[DP], DP2]) -> PreLens[A, DA, M, DM, P2, DP2, S, DS]:
        """Pre-compose the parameters with ``f: p' -> p``, post-compose their delta with ``g``.

        Haskell: ``dimapP :: (p' -> p) -> (dp -> dp') -> t m dm p dp s ds -> t m dm p' dp' s ds``

        A reparameterisation (docs/concepts.md); the result has no initializer.

        >>> id_pre_lens.dimap_p(lambda q: (), lambda dp: "d").bwd((), 5)
        ('d', 5)
        """
        fwd, bwd = self.fwd, self.bwd

        def fwd_(p: P2, s: S) -> tuple[M, A]:
            return fwd(f(p), s)

        def bwd_(dm: DM, da: DA) -> tuple[DP2, DS]:
            dp, ds = bwd(dm, da)
            return g(dp), ds

        return self._wrapped("dimap_p", fwd_, bwd_, None)

    def dimap_m(self, f: Callable[[M], M2], g: Callable[[DM2], DM]) -> PreLens[A, DA, M2, DM2, P, DP, S, DS]:
        """Post-compose the residue with ``f: m -> m'``, pre-compose its delta with ``g: dm' -> dm``.

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

        return self._wrapped("dimap_m", fwd_, bwd_, self.init_fn)

    # -- Trimbara instance (Haskell: ``instance Trimbara PreLens``) --

    def alpha(self) -> PreLens[A, DA, tuple[Any, M], tuple[Any, DM], P, DP, tuple[Any, S], tuple[Any, DS]]:
        """Thread an extra residue ``m1`` from the input to the residue.

        Haskell: ``alpha :: t m dm p dp s ds -> t (m1, m) (dm1, dm) p dp (m1, s) (dm1, ds)``

        >>> id_pre_lens.alpha().fwd((), ("n", 1))
        (('n', ()), 1)
        """
        fwd, bwd = self.fwd, self.bwd

        def fwd_(p: P, ns: tuple[Any, S]) -> tuple[tuple[Any, M], A]:
            match ns:
                case (n, s):
                    m, a = fwd(p, s)
                    return (tree_map_arrays(copy, n), m), a  # the residue's own n: bwd hands it back as dn
            raise E.not_a_pair(f"alpha({self.name})", "its input", "(m1, s)", ns)

        def bwd_(dm: tuple[Any, DM], da: DA) -> tuple[DP, tuple[Any, DS]]:
            match dm:
                case (dn, dm_):
                    dp, ds = bwd(dm_, da)
                    return dp, (dn, ds)
            raise E.not_a_pair(f"alpha({self.name})", "its residue", "(m1, m)", dm)

        return self._wrapped("alpha", fwd_, bwd_, self.init_fn)

    def beta(self) -> PreLens[A, DA, M, DM, tuple[P, Any], tuple[DP, Any], Any, Any]:
        """Move the first half ``p1`` of a paired input ``(p1, s)`` into the parameters.

        Haskell: ``beta :: t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds``

        >>> id_pre_lens.beta().fwd(((), "r"), 1)
        ((), ('r', 1))
        """
        # The input type S of ``self`` is a pair here; Python's generics cannot say so.
        fwd: Callable[[P, Any], tuple[M, A]] = self.fwd
        bwd: Callable[[DM, DA], tuple[DP, Any]] = self.bwd

        def fwd_(p: tuple[P, Any], s: Any) -> tuple[M, A]:
            match p:
                case (p_, p1):
                    return fwd(p_, (p1, s))
            raise E.not_a_pair(f"beta({self.name})", "its parameters", "(p, p1)", p)

        def bwd_(dm: DM, da: DA) -> tuple[tuple[DP, Any], Any]:
            match bwd(dm, da):
                case (dp, (dp1, ds)):
                    return (dp, dp1), ds
                case other:
                    raise E.not_a_pair(f"beta({self.name})", "the delta of its part", "(dp, (dp1, ds))", other)

        return self._wrapped("beta", fwd_, bwd_, None)

    def _wrapped(self, op: str, fwd: Callable[..., Any], bwd: Callable[..., Any], init: Any) -> AnyLens:
        """This lens seen through a structure map, named ``op(self)``: unchecked (its part checks itself),
        so a TriLens interpreted as nested closures nests no deeper than its steps."""
        fwd.__prelens_checked__ = True  # type: ignore[attr-defined]
        return PreLens(fwd, bwd, f"{op}({self.name})", init, "", (self,))


AnyLens = PreLens[Any, Any, Any, Any, Any, Any, Any, Any]

#: A lens's two passes, ``(fwd, bwd)``.
Passes = tuple[Callable[..., Any], Callable[..., Any]]
#: A lens's initializer, ``init_fn(rng) -> parameters``.
Init = Callable[[np.random.Generator], Any]
#: Where a composite keeps the function that makes its passes from its parts' (``>>``, ``@``, ``chain``).
_BUILD = "_prelens_build"


def built_of(
    build: Callable[..., Passes], parts: tuple[AnyLens, ...], name: str, init: Any, op: str, expects: Expects
) -> AnyLens:
    """The composite whose passes ``build(*passes of parts)`` makes from its parts' (checked) passes; it keeps
    ``build``, so that :func:`unguarded` can make them again from its parts' unguarded ones."""
    lens = PreLens(*build(*((q.fwd, q.bwd) for q in parts)), name, init, op, parts, expects)
    lens.__dict__[_BUILD] = build
    return lens


def renamed(lens: AnyLens, name: str, **changes: Any) -> AnyLens:
    """``lens`` under another name (and ``changes`` of its other fields but its passes), keeping how its passes
    are built from its parts while it keeps them."""
    new = replace(lens, name=name, **changes)
    if _BUILD in lens.__dict__ and new.parts is lens.parts:
        new.__dict__[_BUILD] = lens.__dict__[_BUILD]
    return new


#: How deep :func:`unguarded` follows builders (a deeper part keeps its parts' guards: the passes nest no deeper).
_UNGUARDED_DEPTH = 64


def unguarded(lens: AnyLens, depth: int = 0) -> Passes:
    """``lens``'s passes without its guard, and without its parts' where it is built by :func:`built_of`
    (nesting up to :data:`_UNGUARDED_DEPTH` deep): what the trace reruns on a skeleton it checked in full."""
    build = lens.__dict__.get(_BUILD)
    if build is None or depth >= _UNGUARDED_DEPTH:
        return getattr(lens.fwd, "__wrapped__", lens.fwd), getattr(lens.bwd, "__wrapped__", lens.bwd)
    return build(*(unguarded(q, depth + 1) for q in lens.parts))  # type: ignore[no-any-return]


def as_lens(fn: str, what: str, value: Any) -> AnyLens:
    """``value`` if it is a :class:`PreLens`, else an error naming ``fn`` and ``what``."""
    if isinstance(value, PreLens):
        return value
    hint = " (a TriLens becomes one with from_tamb(...))" if hasattr(value, "run") else ""
    raise E.must_be(fn, what, f"a PreLens{hint}", E.describe(value))


def _without_init(lens: AnyLens) -> str:
    """Why ``lens`` cannot create its parameters, naming the innermost part that cannot (``this lens``, ``its part
    <p>``): built without an initializer, or one whose parameter is data (a loss's ground truth)."""
    inner = lens
    while (part := next((q for q in inner.parts if q.init_fn is None), None)) is not None:
        inner = part
    which = "this lens" if inner is lens else f"its part {inner.name}"
    data = inner.expects.params_name
    if data != "parameters":
        return (
            f"{which} takes the {data} as its parameter (data, not made by init): pass the parameters explicitly, "
            f"with the {data} in their place"
        )
    return f"{which} was built without an initializer; pass the parameters explicitly or build it with init_fn=..."


def _wrap(lens: AnyLens, op: str, side: str) -> str:
    """``repr`` of an operand, parenthesised where Python's precedence needs it (``@`` binds tighter
    than ``>>``; both associate to the left)."""
    bare = lens.op not in (">>", "@") or (op == ">>" and lens.op == "@") or (side == "left" and lens.op == op)
    return lens.name if bare else f"({lens.name})"


def _pair_init(first: Init | None, second: Init | None, flip: bool) -> Init | None:
    """The initializer of a pair of parameters: ``first``'s drawn first (data flow); ``flip``: stored later-first."""
    if first is None or second is None:
        return None

    def init(rng: np.random.Generator) -> tuple[Any, Any]:
        a = first(rng)
        b = second(rng)
        return (b, a) if flip else (a, b)

    return init


@constructor
def pre_compose(
    f: PreLens[B, DB, M, DM, P, DP, S, DS], g: PreLens[A, DA, N, DN, Q, DQ, B, DB]
) -> PreLens[A, DA, tuple[M, N], tuple[DM, DN], tuple[Q, P], tuple[DQ, DP], S, DS]:
    """Sequential composition: ``f`` runs first, then ``g``. The same as ``f >> g``.

    Haskell::

        preCompose :: PreLens a' da' m dm p dp s ds -> PreLens a da n dn q dq a' da'
                   -> PreLens a da (m, n) (dm, dn) (q, p) (dq, dp) s ds

    Residues are ``(m_f, m_g)`` in data-flow order; parameters ``(p_g, p_f)``, the later lens first.

    >>> inc = PreLens(lambda p, s: ((), s + p), lambda dm, da: (da, da), name="inc")
    >>> pre_compose(inc, inc).fwd((10.0, 1.0), 0.0)
    (((), ()), 11.0)
    """
    f, g = as_lens(">>", "the first lens", f), as_lens(">>", "the second lens", g)
    name = f"{_wrap(f, '>>', 'left')} >> {_wrap(g, '>>', 'right')}"
    expects = Expects(params=(g.expects.params, f.expects.params), input=f.expects.input, delta=g.expects.delta)
    init = _pair_init(f.init_fn, g.init_fn, flip=True)
    return built_of(_sequential, (f, g), name, init, ">>", expects)


def _sequential(f: Passes, g: Passes) -> Passes:
    """The passes of ``f >> g`` from those of ``f`` and ``g``."""
    f_fwd, f_bwd = f
    g_fwd, g_bwd = g

    def fwd(p: tuple[Any, Any], s: Any) -> tuple[tuple[Any, Any], Any]:
        p_g, p_f = p
        m_f, b = f_fwd(p_f, s)
        m_g, a = g_fwd(p_g, b)
        return (m_f, m_g), a

    def bwd(dm: tuple[Any, Any], da: Any) -> tuple[tuple[Any, Any], Any]:
        dm_f, dm_g = dm
        dp_g, db = g_bwd(dm_g, da)
        dp_f, ds = f_bwd(dm_f, db)
        return (dp_g, dp_f), ds

    return fwd, bwd


#: The type of ``f @ g`` (:func:`prod_lens`): every slot paired ``(left, right)``.
Prod = PreLens[
    tuple[A, A2],
    tuple[DA, DA2],
    tuple[M, M2],
    tuple[DM, DM2],
    tuple[P, P2],
    tuple[DP, DP2],
    tuple[S, S2],
    tuple[DS, DS2],
]


@constructor
def prod_lens(
    f: PreLens[A, DA, M, DM, P, DP, S, DS], g: PreLens[A2, DA2, M2, DM2, P2, DP2, S2, DS2]
) -> Prod[A, A2, DA, DA2, M, M2, DM, DM2, P, P2, DP, DP2, S, S2, DS, DS2]:
    """Parallel composition (the monoidal product, not matmul): ``f @ g``, every slot paired ``(left, right)``.

    Haskell::

        prodLens :: PreLens a da m dm p dp s ds -> PreLens a' da' m' dm' p' dp' s' ds'
                 -> PreLens (a, a') (da, da') (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')

    >>> neg = PreLens(lambda p, s: ((), -s), lambda dm, da: ((), -da), name="neg")
    >>> prod_lens(neg, id_pre_lens).fwd(((), ()), (1.0, 2.0))
    (((), ()), (-1.0, 2.0))
    """
    f, g = as_lens("@", "the left lens", f), as_lens("@", "the right lens", g)
    name = f"{_wrap(f, '@', 'left')} @ {_wrap(g, '@', 'right')}"
    fe, ge = f.expects, g.expects
    expects = Expects(params=(fe.params, ge.params), input=(fe.input, ge.input), delta=(fe.delta, ge.delta))
    init = _pair_init(f.init_fn, g.init_fn, flip=False)
    return built_of(_parallel, (f, g), name, init, "@", expects)


def _parallel(f: Passes, g: Passes) -> Passes:
    """The passes of ``f @ g`` from those of ``f`` and ``g``."""
    f_fwd, f_bwd = f
    g_fwd, g_bwd = g

    def fwd(p: tuple[Any, Any], s: tuple[Any, Any]) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
        (p1, p2), (s1, s2) = p, s if type(s) is tuple else _pair(s)
        m1, a1 = f_fwd(p1, s1)
        m2, a2 = g_fwd(p2, s2)
        return (m1, m2), (a1, a2)

    def bwd(dm: tuple[Any, Any], da: tuple[Any, Any]) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
        (dm1, dm2), (da1, da2) = dm, da if type(da) is tuple else _pair(da)
        dp1, ds1 = f_bwd(dm1, da1)
        dp2, ds2 = g_bwd(dm2, da2)
        return (dp1, dp2), (ds1, ds2)

    return fwd, bwd


def _pair(s: Any) -> tuple[Any, Any]:
    """The halves of an input (or output delta) that is not a tuple: a list of two; an array (whose first axis is 2,
    a batch of two, say) raises the TypeError the guard diagnoses, never unpacked as a pair."""
    if not isinstance(s, (tuple, list)):
        raise TypeError("not a pair")
    s1, s2 = s
    return s1, s2


def _identity_fwd(p: tuple[()], s: Any) -> tuple[tuple[()], Any]:
    return (), s


def _identity_bwd(dm: tuple[()], da: Any) -> tuple[tuple[()], Any]:
    return (), da


#: The identity pre-lens (Haskell: ``idPreLens :: PreLens a da () () () () a da``).
id_pre_lens: PreLens[Any, Any, tuple[()], tuple[()], tuple[()], tuple[()], Any, Any] = PreLens(
    _identity_fwd, _identity_bwd, "id_pre_lens"
)


def parameter_free(name: str, fwd: Callable[[Any], tuple[Any, Any]], bwd: Callable[[Any, Any], Any]) -> AnyLens:
    """A lens with parameters ``()`` from ``fwd(s) -> (m, a)`` and ``bwd(m, da) -> ds``.

    >>> square = parameter_free("square", lambda s: (s, s * s), lambda s, da: 2 * s * da)
    >>> square.fwd((), 3.0), square.bwd(3.0, 1.0)
    ((3.0, 9.0), ((), 6.0))
    """
    _args.name("parameter_free", "name", name)
    _args.function("parameter_free", "fwd", fwd)
    _args.function("parameter_free", "bwd", bwd)

    def fwd_(p: tuple[()], s: Any) -> tuple[Any, Any]:
        return fwd(s)

    def bwd_(dm: Any, da: Any) -> tuple[tuple[()], Any]:
        return (), bwd(dm, da)

    return PreLens(fwd_, bwd_, name, expects=Expects(params=()))
