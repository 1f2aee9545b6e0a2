"""The one type: a pre-lens, with sequential (``>>``) and parallel (``@``) composition.

Haskell::

    data PreLens a da m dm p dp s ds =
      PreLens ((p, s) -> (m, a)) ((dm, da) -> (dp, ds))

``fwd(p, s) -> (m, a)`` turns parameters and input into a residue and an output;
``bwd(dm, da) -> (dp, ds)`` turns the residue and an output delta into a
parameter delta and an input delta. The type keeps ``dm`` apart from ``m``, but
running a lens traces over the residue (:mod:`prelens._trace`, the post's
``ExLens``, a coend): the trace sets ``dm = m`` and hands ``bwd`` the residue
itself. ``bwd`` never sees ``p`` or ``s``: all it needs travels in the residue.
``bwd`` is nonlinear in the residue; ``da ↦ bwd(m, da)``, for the ``m`` of one
forward pass, is the vector-Jacobian product. The learning rate lives in the
optimiser only.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic

import numpy as np
from typing_extensions import TypeVar

from prelens.core import _args
from prelens.backend import _arrays as _backend
from prelens import errors as E
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

Fwd = Callable[[P, S], tuple[M, A]]
Bwd = Callable[[DM, DA], tuple[DP, DS]]
Init = Callable[[np.random.Generator], P]


def _no_params(rng: np.random.Generator) -> tuple[()]:
    return ()


@dataclass(frozen=True, eq=False, repr=False)
class PreLens(Generic[A, DA, M, DM, P, DP, S, DS]):
    """A pre-lens ``s -> a`` with parameters ``p`` and residue ``m``.

    Haskell: ``PreLens a da m dm p dp s ds``; ``fwd :: (p, s) -> (m, a)``,
    ``bwd :: (dm, da) -> (dp, ds)``. Run by the trace, ``bwd`` gets the residue
    ``m`` of ``fwd`` itself as its ``dm``.

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
    # The default makes the unit parameter ``()``, which is a ``P`` only when the lens has no
    # parameters; a TypeVar's default value cannot be typed, hence the one ignore.
    init_fn: Callable[[np.random.Generator], P] | None = field(default=_no_params)  # type: ignore[assignment]
    op: str = ""
    parts: tuple[PreLens[Any, Any, Any, Any, Any, Any, Any, Any], ...] = ()

    def __post_init__(self) -> None:
        if not callable(self.fwd) or not callable(self.bwd):
            bad = "fwd" if not callable(self.fwd) else "bwd"
            raise E.must_be("PreLens", bad, "a function", E.describe(getattr(self, bad)))
        if not isinstance(self.name, str):
            raise E.must_be("PreLens", "name", "a string", E.describe(self.name))
        if self.init_fn is not None and not callable(self.init_fn):
            raise E.must_be(
                "PreLens", "init_fn", "a function of a numpy.random.Generator, or None", E.describe(self.init_fn)
            )

    def __repr__(self) -> str:
        return self.name

    def init(self, rng: np.random.Generator | int | None = None) -> P:
        """Create parameters with ``rng`` (a ``numpy.random.Generator`` or a seed).

        >>> (id_pre_lens >> id_pre_lens).init(0)
        ((), ())
        """
        if self.init_fn is None:
            raise E.no_init_error(self.name, _first_without_init(self).name)
        gen = rng if isinstance(rng, np.random.Generator) else _args.seed(f"{E.short_name(self.name)}.init", rng)
        try:
            return self.init_fn(gen)
        except RecursionError as exc:
            raise depth_error(exc, self) from None

    @constructor
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

        A *reparameterisation*: a 2-cell of the bicategory of pre-lenses (docs/concepts.md).

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

        Covariant in ``m``, contravariant in ``dm`` (the flipped pair): the residue-side
        (coPara) counterpart of the reparameterisation :meth:`dimap_p`.
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
        fwd, bwd, name = self.fwd, self.bwd, f"alpha({self.name})"

        def fwd_(p: P, ns: tuple[Any, S]) -> tuple[tuple[Any, M], A]:
            if not _is_pair(ns):
                raise _plumbing(E.not_a_pair(name, "input", "(m1, s)", ns))
            out = fwd(p, ns[1])
            m, a = out if type(out) is tuple and len(out) == 2 else as_pair(self, out, "fwd")
            return (ns[0], m), a

        def bwd_(dm: tuple[Any, DM], da: DA) -> tuple[DP, tuple[Any, DS]]:
            if not _is_pair(dm):
                raise _plumbing(E.not_a_pair(name, "residue", "(m1, m)", dm))
            out = bwd(dm[1], da)
            dp, ds = out if type(out) is tuple and len(out) == 2 else as_pair(self, out, "bwd")
            return dp, (dm[0], ds)

        return PreLens(fwd_, bwd_, name, self.init_fn, "", (self,))

    def beta(self) -> PreLens[A, DA, M, DM, tuple[P, Any], tuple[DP, Any], Any, Any]:
        """Move the first half ``p1`` of a paired input ``(p1, s)`` into the parameters.

        Haskell: ``beta :: t m dm p dp (p1, s) (dp1, ds) -> t m dm (p, p1) (dp, dp1) s ds``

        >>> id_pre_lens.beta().fwd(((), "r"), 1)
        ((), ('r', 1))
        """
        fwd, bwd, name = self.fwd, self.bwd, f"beta({self.name})"

        # The input type S of ``self`` is a pair here; Python's generics cannot
        # say so, hence the ``Any`` views of the two passes.
        fwd_any: Callable[[P, Any], tuple[M, A]] = fwd
        bwd_any: Callable[[DM, DA], tuple[DP, Any]] = bwd

        def fwd_(p: tuple[P, Any], s: Any) -> tuple[M, A]:
            if not _is_pair(p):
                raise _plumbing(E.not_a_pair(name, "parameters", "(p, p1)", p))
            out = fwd_any(p[0], (p[1], s))
            return out if type(out) is tuple and len(out) == 2 else as_pair(self, out, "fwd")

        def bwd_(dm: DM, da: DA) -> tuple[tuple[DP, Any], Any]:
            out = bwd_any(dm, da)
            dp, dr_ds = out if type(out) is tuple and len(out) == 2 else as_pair(self, out, "bwd")
            if not _is_pair(dr_ds):
                what = f"the input delta of {E.short_name(self.name)}"
                raise _plumbing(E.not_a_pair(name, what, "(dp1, ds)", dr_ds))
            return (dp, dr_ds[0]), dr_ds[1]

        return PreLens(fwd_, bwd_, name, None, "", (self,))


AnyLens = PreLens[Any, Any, Any, Any, Any, Any, Any, Any]


# ------------------------------------------------ first-call checks of bwd's deltas
#
# A user's ``bwd`` that returns deltas of the wrong structure is caught the first
# time it runs, named, with the tree path of the first misfit. The check needs the
# ``p`` and ``s`` that the forward pass was given, which ``bwd`` never sees, so:
#
# * a composite (``>>``, ``@``, ``chain``, ``vec_lens``, ``batch_n``) whose parts
#   have not all been checked returns its residue as a :class:`_Witness` (a tuple
#   or list equal to the plain residue, which also carries what each part was
#   given); its ``bwd`` then checks each part's ``(dp, ds)`` right after the part
#   returns them, so the innermost lens that misbehaves is the one named. After
#   its first checked backward pass a composite returns plain residues again, and
#   so does a forward pass inside :func:`forward_only` (``forward``, ``predict``,
#   ``evaluate``, ``generate``: no backward pass will read that residue);
# * :func:`~prelens.vjp` and :func:`~prelens.backward` check a lens that is not
#   such a composite the first time they run it;
# * a lens whose deltas have fitted once joins :data:`_VALIDATED` and is never
#   checked again. The fast path pays one flag test per composite call.


#: Lenses whose ``bwd`` has returned deltas that fit their ``p`` and ``s`` (checked once).
_VALIDATED: weakref.WeakSet[AnyLens] = weakref.WeakSet()

#: ``forward_only`` is set (per thread) while a pass runs whose residue no backward pass will read.
_MODE = threading.local()


def witnessing() -> bool:
    """True unless inside :func:`forward_only`: only a residue that ``bwd`` may read needs a witness."""
    return not getattr(_MODE, "forward_only", False)


@contextmanager
def forward_only() -> Iterator[None]:
    """Run forward passes whose residues are dropped (``forward``, ``predict``, ``evaluate``, ``generate``).

    Composites then return plain residues even before their first backward pass:
    the first-call witness exists to check a backward pass, and none will run.
    """
    before = getattr(_MODE, "forward_only", False)
    _MODE.forward_only = True
    try:
        yield
    finally:
        _MODE.forward_only = before


class _Witness(tuple[Any, ...]):
    """A composite's residue on its first calls: the plain tuple, plus ``given`` (what the parts got)."""

    given: tuple[Any, ...]


class _WitnessList(list[Any]):
    """The list form of :class:`_Witness` (residues of ``chain``, ``vec_lens``, ``batch_n``)."""

    __slots__ = ("given",)
    given: tuple[Any, ...]


def _witness(m: tuple[Any, ...], given: tuple[Any, ...]) -> _Witness:
    w = _Witness(m)
    w.given = given
    return w


def _witness_list(ms: list[Any], given: tuple[Any, ...]) -> _WitnessList:
    w = _WitnessList(ms)
    w.given = given
    return w


def is_validated(lens: AnyLens) -> bool:
    """True once ``lens``'s ``bwd`` has been seen to return deltas that fit its ``p`` and ``s``."""
    return lens in _VALIDATED


def _plumbing(err: E.StructureError) -> E.StructureError:
    """Mark ``err`` as raised by the structure maps: ``from_tamb`` reports it as the whole lens's error."""
    E.mark(err, _prelens_plumbing=True)
    return err


def _is_pair(x: Any) -> bool:
    """A tuple or list of two: what the structure maps take apart (a 2-row array or a dict is not one)."""
    return (type(x) is tuple or isinstance(x, (tuple, list))) and len(x) == 2


def as_pair(lens: AnyLens, out: Any, what: str) -> tuple[Any, Any]:
    """``out`` (what ``lens.fwd`` or ``lens.bwd`` returned) as a pair, or the error naming ``lens``.

    ``what`` is ``"fwd"`` or ``"bwd"``. Lists of two are accepted as pairs.
    """
    if isinstance(out, (tuple, list)) and len(out) == 2 and not hasattr(out, "_fields"):
        return out[0], out[1]
    if what == "fwd":
        return_error = E.fwd_not_a_pair(lens.name, out)
    else:
        return_error = E.bwd_not_a_pair(lens.name, out)
    raise return_error


def unpack_error(exc: Exception, lens: AnyLens, scope: dict[str, Any], var: str, what: str) -> Exception:
    """The error for ``exc``, met in a composite while running a part's pass.

    A ``TypeError``/``ValueError`` raised in the composite's own frame (not inside
    the part) after ``var`` was bound can only come from unpacking what the part
    returned: it becomes :func:`as_pair`'s error naming the part. The fast path
    pays nothing for this: Python unpacks, and only a failure is examined.
    """
    tb = exc.__traceback__
    if isinstance(exc, (TypeError, ValueError)) and tb is not None and tb.tb_next is None and var in scope:
        try:
            as_pair(lens, scope[var], what)
        except E.StructureError as err:
            return err
    return exc


def check_deltas(lens: AnyLens, out: tuple[Any, Any], p: Any, s: Any) -> None:
    """Raise :class:`~prelens.StructureError` unless ``out = (dp, ds)`` fits ``(p, s)``.

    A delta fits when it has the tree structure of its primal (tuple, list, named
    tuple type, dict keys) and, at every numeric leaf, its shape. ``ds = None`` is
    the delta of an input that is data (``input_delta=False``); a 1-D array may be
    the delta of a flat list of numbers (the faithful lenses take lists). Leaves
    that are not numbers (symbols in algebra tests) are not compared.
    On success ``lens`` joins the validated set.
    """
    if lens in _VALIDATED:
        return
    dp, ds = out
    found = _misfit(p, dp, "", data_ok=False)
    if found is not None:
        raise E.bwd_delta_mismatch(lens.name, "dp", *found)
    found = _misfit(s, ds, "", data_ok=True)
    if found is not None:
        raise E.bwd_delta_mismatch(lens.name, "ds", *found)
    _VALIDATED.add(lens)


_NUMBERS = (int, float, complex, np.generic)


def _is_empty(x: Any) -> bool:
    return x is None or (type(x) in (tuple, list, dict) and len(x) == 0)


def _is_numeric(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "biufc"
    return isinstance(x, _NUMBERS) or (_backend.is_array(x) and _backend.dtype_kind(x.dtype) in "biufc")


def _same_node(primal: tuple[Any, ...] | list[Any], delta: Any) -> bool:
    """Lists fit lists; tuples fit tuples of their length. A plain tuple and a named tuple fit
    each other (lenses accept plain tuples for their named parameters); two named tuple types do not."""
    if isinstance(primal, list):
        return isinstance(delta, list) and len(delta) == len(primal)
    if not isinstance(delta, tuple) or len(delta) != len(primal):
        return False
    named_p, named_d = hasattr(primal, "_fields"), hasattr(delta, "_fields")
    return not (named_p and named_d) or type(primal) is type(delta)


def _misfit(primal: Any, delta: Any, path: str, data_ok: bool) -> tuple[str, str, str] | None:
    """``(path, expected, got)`` of the first place where ``delta`` does not fit ``primal``."""
    if delta is None and data_ok:
        return None
    if _is_empty(primal):
        return None if _is_empty(delta) else (path, E.describe(primal), E.describe_tree(delta))
    if isinstance(primal, (tuple, list, dict)):
        if isinstance(delta, np.ndarray) and isinstance(primal, (tuple, list)) and not hasattr(primal, "_fields"):
            try:  # the faithful lenses take vectors as lists of floats and return arrays
                shape = np.shape(primal)
            except ValueError:
                shape = None
            if shape == delta.shape and all(isinstance(x, _NUMBERS) for x in np.ravel(np.asarray(primal, object))):
                return None
            return path, E.describe(primal), E.describe(delta)
        if isinstance(primal, dict):
            if not isinstance(delta, dict) or list(delta) != list(primal):
                got = f"dict with keys {list(delta)}" if isinstance(delta, dict) else E.describe(delta)
                return path, f"dict with keys {list(primal)}", got
            items = [(f"[{k!r}]", primal[k], delta[k]) for k in primal]
        else:
            if not _same_node(primal, delta):
                return path, E.describe(primal), E.describe(delta)
            segs = [f".{f}" for f in primal._fields] if hasattr(primal, "_fields") else None
            items = [(segs[i] if segs else f"[{i}]", x, d) for i, (x, d) in enumerate(zip(primal, delta))]
        for seg, x, d in items:
            found = _misfit(x, d, path + seg, data_ok)
            if found is not None:
                return found
        return None
    if not _is_numeric(primal):
        return None  # a symbol, not a number: nothing to compare
    if not _is_numeric(delta) or _backend.shape(delta) != _backend.shape(primal):
        return path, E.describe(primal), E.describe_tree(delta)
    return None


def depth_error(exc: RecursionError, lens: AnyLens) -> Exception:
    """A :class:`RecursionError` met while running ``lens``, as one clear error (once)."""
    if isinstance(exc, E.PrelensError):
        return exc
    return E.too_deep(lens.name, sys.getrecursionlimit())


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


@constructor
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
    f, g = _args.lens(">>", "the first lens", f), _args.lens(">>", "the second lens", g)
    f_fwd, f_bwd, g_fwd, g_bwd = f.fwd, f.bwd, g.fwd, g.bwd
    name = f"{_wrap(f, '>>', 'left')} >> {_wrap(g, '>>', 'right')}"
    checking = not (is_validated(f) and is_validated(g))  # until the first backward pass

    def fwd(p: tuple[Q, P], s: S) -> tuple[tuple[M, N], A]:
        try:
            p_g, p_f = p
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "parameters", "(p_g, p_f), the later lens first", p) from None
        try:
            out_f = f_fwd(p_f, s)
            m_f, b = out_f
        except Exception as exc:
            raise E.in_part(
                unpack_error(exc, f, locals(), "out_f", "fwd"), name, f.name, "the forward pass", s
            ) from None
        try:
            out_g = g_fwd(p_g, b)
            m_g, a = out_g
        except Exception as exc:
            err = unpack_error(exc, g, locals(), "out_g", "fwd")
            raise E.in_part(err, name, g.name, "the forward pass", b, f"the output of {f.name}") from None
        if checking and witnessing():
            return _witness((m_f, m_g), (p_f, s, p_g, b)), a
        return (m_f, m_g), a

    def bwd(dm: tuple[DM, DN], da: DA) -> tuple[tuple[DQ, DP], DS]:
        nonlocal checking
        try:
            dm_f, dm_g = dm
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "residue deltas", "(dm_f, dm_g)", dm) from None
        given = dm.given if type(dm) is _Witness else None
        try:
            out_g = g_bwd(dm_g, da)
            dp_g, db = out_g
            if given is not None:
                check_deltas(g, out_g, given[2], given[3])
        except Exception as exc:
            raise E.in_part(
                unpack_error(exc, g, locals(), "out_g", "bwd"), name, g.name, "the backward pass", da
            ) from None
        try:
            out_f = f_bwd(dm_f, db)
            dp_f, ds = out_f
            if given is not None:
                check_deltas(f, out_f, given[0], given[1])
        except Exception as exc:
            err = unpack_error(exc, f, locals(), "out_f", "bwd")
            raise E.in_part(err, name, f.name, "the backward pass", db, f"the delta from {g.name}") from None
        if given is not None:  # checked: witnesses are no longer needed
            checking = False
        return (dp_g, dp_f), ds

    f_init, g_init = f.init_fn, g.init_fn
    init = None
    if f_init is not None and g_init is not None:

        def init(rng: np.random.Generator) -> tuple[Q, P]:
            p_f = f_init(rng)  # data-flow order, so seeds do not depend on nesting
            return g_init(rng), p_f

    return PreLens(fwd, bwd, name, init, ">>", (f, g))


@constructor
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

    Haskell::

        prodLens :: PreLens a da m dm p dp s ds -> PreLens a' da' m' dm' p' dp' s' ds'
                 -> PreLens (a, a') (da, da') (m, m') (dm, dm') (p, p') (dp, dp') (s, s') (ds, ds')

    >>> neg = PreLens(lambda p, s: ((), -s), lambda dm, da: ((), -da), name="neg")
    >>> prod_lens(neg, id_pre_lens).fwd(((), ()), (1.0, 2.0))
    (((), ()), (-1.0, 2.0))
    """
    f, g = _args.lens("@", "the left lens", f), _args.lens("@", "the right lens", g)
    f_fwd, f_bwd, g_fwd, g_bwd = f.fwd, f.bwd, g.fwd, g.bwd

    name = f"{_wrap(f, '@', 'left')} @ {_wrap(g, '@', 'right')}"
    checking = not (is_validated(f) and is_validated(g))  # until the first backward pass

    def fwd(p: tuple[P, P2], s: tuple[S, S2]) -> tuple[tuple[M, M2], tuple[A, A2]]:
        try:
            p1, p2 = p
            s1, s2 = s
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "parameters and inputs", "(left, right)", (p, s)) from None
        try:
            out1 = f_fwd(p1, s1)
            m1, a1 = out1
        except Exception as exc:
            raise E.in_part(
                unpack_error(exc, f, locals(), "out1", "fwd"), name, f.name, "the forward pass", s1
            ) from None
        try:
            out2 = g_fwd(p2, s2)
            m2, a2 = out2
        except Exception as exc:
            raise E.in_part(
                unpack_error(exc, g, locals(), "out2", "fwd"), name, g.name, "the forward pass", s2
            ) from None
        if checking and witnessing():
            return _witness((m1, m2), (p1, s1, p2, s2)), (a1, a2)
        return (m1, m2), (a1, a2)

    def bwd(dm: tuple[DM, DM2], da: tuple[DA, DA2]) -> tuple[tuple[DP, DP2], tuple[DS, DS2]]:
        nonlocal checking
        try:
            dm1, dm2 = dm
            da1, da2 = da
        except (TypeError, ValueError):
            raise E.not_a_pair(name, "residue and output deltas", "(left, right)", (dm, da)) from None
        given = dm.given if type(dm) is _Witness else None
        try:
            out1 = f_bwd(dm1, da1)
            dp1, ds1 = out1
            if given is not None:
                check_deltas(f, out1, given[0], given[1])
        except Exception as exc:
            raise E.in_part(
                unpack_error(exc, f, locals(), "out1", "bwd"), name, f.name, "the backward pass", da1
            ) from None
        try:
            out2 = g_bwd(dm2, da2)
            dp2, ds2 = out2
            if given is not None:
                check_deltas(g, out2, given[2], given[3])
        except Exception as exc:
            raise E.in_part(
                unpack_error(exc, g, locals(), "out2", "bwd"), name, g.name, "the backward pass", da2
            ) from None
        if given is not None:  # checked: witnesses are no longer needed
            checking = False
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

    Haskell::

        parameter_free :: String -> (s -> (m, a)) -> (m -> da -> ds) -> PreLens a da m m () () s ds

    >>> sq = parameter_free("square", lambda s: (s, s * s), lambda s, da: 2 * s * da)
    >>> sq.fwd((), 3.0), sq.bwd(3.0, 1.0)
    ((3.0, 9.0), ((), 6.0))
    """

    _args.name("parameter_free", "name", name)
    _args.function("parameter_free", "fwd", fwd)
    _args.function("parameter_free", "bwd", bwd)

    def fwd_(p: tuple[()], s: Any) -> tuple[Any, Any]:
        return fwd(s)

    def bwd_(dm: Any, da: Any) -> tuple[tuple[()], Any]:
        return (), bwd(dm, da)

    return PreLens(fwd_, bwd_, name)
