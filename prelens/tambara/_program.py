"""The term-algebra Trimbara module: a TriLens run on a :class:`Program` writes its steps down as data.

The steps are then run with two loops as a pre-lens (:func:`~prelens.tambara.run_program`, what
:func:`~prelens.from_tamb` does) or folded over other values (:mod:`prelens.tambara._meanings`);
see docs/tambara.md. A program never nests: each step acts at a focus path into the nested pairs
and lists of the three slots (``PLeft``/``PRight`` append ``0``/``1``, ``vec_lens`` appends
:data:`EACH`, so its ``n`` copies are one sub-program run on each element).

Steps and their meaning (``x@P`` is the part of ``x`` at path ``P``)::

    dimap_s f g   forward  s@P := f(s@P)              backward  ds@P := g(ds@P)
    dimap_p f g   forward  p@P := f(p@P)              backward  dp@P := g(dp@P)
    dimap_m f g   forward  m@P := f(m@P)  (leaving)   backward  dm@P := g(dm@P)  (entering)
    alpha         forward  s@P = (n, s') moves n into m@P = (n, m)
                  backward dm@P = (dn, dm') moves dn into ds@P = (dn, ds)
    beta          forward  p@P = (p', p1) moves p1 into s@P = (p1, s)
                  backward ds@P = (dp1, ds') moves dp1 into dp@P = (dp, dp1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from prelens import errors as E
from prelens.core._iso import halves

Fn = Callable[[Any], Any]
Path = tuple[Any, ...]

#: A path segment: every element of a list (``vec_lens``'s copies).
EACH: Final = "*"

DIMAP_S, DIMAP_P, DIMAP_M, ALPHA, BETA = "dimap_s", "dimap_p", "dimap_m", "alpha", "beta"


@dataclass(frozen=True)
class Focus:
    """Where a step acts: one path into each of the residue, parameter and input slots.

    >>> Focus().half(0)
    Focus(m=(0,), p=(0,), s=(0,))
    """

    m: Path = ()
    p: Path = ()
    s: Path = ()

    def half(self, i: int) -> Focus:
        """The left (0) or right (1) halves of the pairs at this focus: ``PLeft``'s or ``PRight``'s."""
        return Focus((*self.m, i), (*self.p, i), (*self.s, i))

    def each(self) -> Focus:
        """The elements of ``vec_lens``'s lists: residues at ``m@(0, *)``, parameters at ``p@(1, *)``."""
        return Focus((*self.m, 0, EACH), (*self.p, 1, EACH), (*self.s, EACH))


@dataclass(frozen=True)
class Step:
    """One step of a program: ``kind`` (``"dimap_s"`` … ``"beta"``), where, and the maps of a dimap."""

    kind: str
    at: Focus
    f: Fn | None = None
    g: Fn | None = None

    def __repr__(self) -> str:
        paths = (self.at.m, self.at.p, self.at.s)
        where = " @" + "/".join(".".join(map(str, p)) or "·" for p in paths) if any(paths) else ""
        label = "" if self.f is None else f" {_fn_name(self.f)}"
        return f"{self.kind}{label}{where}"


def _fn_name(f: Fn) -> str:
    """A function's own name (``<lambda>``, ``_assoc``), or a map object's ``repr`` (``fwd(linear_l(3))``)."""
    if hasattr(f, "__code__"):
        return str(f.__qualname__).replace(".<locals>", "")
    return repr(f)


@dataclass(frozen=True, eq=False, repr=False)
class Program:
    """A term algebra of the Trimbara operations: the steps a TriLens took, held as data.

    A Trimbara module up to :func:`~prelens.testing.module_equal`. Each method returns a new
    program one step longer, sharing the old one (one object per step); :meth:`steps` lists them.

    >>> from prelens import to_tamb, id_pre_lens
    >>> prog = to_tamb(id_pre_lens)(Program())
    >>> prog
    Program(alpha, dimap_s fwd(id_pre_lens), beta)
    """

    previous: Program | None = None
    step: Step | None = None
    focus: Focus = Focus()
    length: int = 0

    def _then(self, step: Step) -> Program:
        return type(self)(self, step, self.focus, self.length + 1)

    # -- the Trimbara interface: every method records one step at the current focus

    def dimap_s(self, f: Fn, g: Fn) -> Program:
        return self._then(Step(DIMAP_S, self.focus, f, g))

    def dimap_p(self, f: Fn, g: Fn) -> Program:
        return self._then(Step(DIMAP_P, self.focus, f, g))

    def dimap_m(self, f: Fn, g: Fn) -> Program:
        return self._then(Step(DIMAP_M, self.focus, f, g))

    def alpha(self) -> Program:
        return self._then(Step(ALPHA, self.focus))

    def beta(self) -> Program:
        return self._then(Step(BETA, self.focus))

    # -- focus: where the next steps act

    def at(self, focus: Focus) -> Program:
        """The same program, its next steps acting at ``focus``."""
        return type(self)(self.previous, self.step, focus, self.length)

    def steps(self) -> list[Step]:
        """The steps in the order they were taken (found by a loop: programs never recurse)."""
        out: list[Step] = []
        node: Program | None = self
        while node is not None and node.step is not None:
            out.append(node.step)
            node = node.previous
        out.reverse()
        return out

    def __repr__(self) -> str:
        shown = self.steps()
        more = f", … {len(shown) - 12} more" if len(shown) > 12 else ""
        return f"Program({', '.join(repr(s) for s in shown[:12])}{more})"

    def __len__(self) -> int:
        return self.length


def compile_passes(steps: list[Step]) -> tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]:
    """The forward and backward passes of ``steps``, each two loops over the steps.

    The last step taken is the outermost: the forward pass walks the steps backwards changing
    ``(p, s)``, reaches the identity at the core (``m = ()``, ``a = s``), then walks forwards
    building ``m``; the backward pass likewise with ``dm`` in and ``(dp, ds)`` out.
    """
    inward, m_side = steps[::-1], (DIMAP_M, ALPHA)
    fwd = _two_loops(
        [_op(st, st.f, forward=True) for st in inward if st.kind != DIMAP_M],
        [_op(st, st.f, forward=True, on_m=True) for st in steps if st.kind in m_side],
    )
    bwd = _two_loops(
        [_op(st, st.g, forward=False, on_m=True) for st in inward if st.kind in m_side],
        [_op(st, st.g, forward=False) for st in steps if st.kind != DIMAP_M],
    )
    return fwd, bwd


#: One step of a pass on the pair it carries, ``(p, s)``/``(m, a)`` forward and ``(dm, da)``/``(dp, ds)``
#: backward; what ``alpha`` and ``beta`` take on the way in is parked for the way out.
Op = Callable[[Any, Any, list[Any]], tuple[Any, Any]]


def _two_loops(inward: list[Op], outward: list[Op]) -> Callable[[Any, Any], Any]:
    """Both passes' shape: change ``(x, y)`` step by step inwards, then build ``x`` anew from ``()`` outwards."""

    def run(x: Any, y: Any) -> tuple[Any, Any]:
        parked: list[Any] = []
        for op in inward:
            x, y = op(x, y, parked)
        x = ()
        for op in outward:
            x, y = op(x, y, parked)
        return x, y

    return run


def _op(st: Step, h: Any, forward: bool, on_m: bool = False) -> Op:
    """Step ``st`` (its map ``h``) as an :data:`Op` on ``(p, s)``/``(dp, ds)``, or, ``on_m``, on the residue side."""
    at = st.at
    if st.kind == DIMAP_S:
        return lambda x, y, parked: (x, update(y, at.s, h))
    if st.kind in (DIMAP_P, DIMAP_M):
        path = at.p if st.kind == DIMAP_P else at.m
        return lambda x, y, parked: (update(x, path, h), y)
    if st.kind == ALPHA and forward != on_m:  # the extra residue is taken from s forwards, from dm backwards
        if on_m:
            return lambda x, y, parked: (_park(parked, *take(x, at.m, 0, "residue", "(m1, m)")), y)
        return lambda x, y, parked: (x, _park(parked, *take(y, at.s, 0, "input", "(m1, s)")))
    if st.kind == ALPHA:  # ... and put into m forwards, into ds backwards
        if on_m:
            return lambda x, y, parked: (put(x, at.m, parked.pop(), 0), y)
        return lambda x, y, parked: (x, put(y, at.s, parked.pop(), 0))
    if forward:  # beta: p = (p', p1) gives p1 to s, as (p1, s)

        def beta(p: Any, s: Any, parked: list[Any]) -> tuple[Any, Any]:
            p, p1 = take(p, at.p, 1, "parameters", "(p, p1)")
            return p, put(s, at.s, p1, 0)

        return beta

    def beta_back(dp: Any, ds: Any, parked: list[Any]) -> tuple[Any, Any]:  # ds = (dp1, ds') gives dp1 to dp
        ds, dp1 = take(ds, at.s, 0, "input delta", "(dp1, ds)")
        return put(dp, at.p, dp1, 1), ds

    return beta_back


def _park(parked: list[Any], kept: Any, taken: Any) -> Any:
    parked.append(taken)
    return kept


# ------------------------------------------------------------ values at a path


def _elements(x: Any) -> Any:
    """The elements under an :data:`EACH`: a list's (or tuple's), or a 1-D array's rows."""
    if isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim >= 1):
        return x
    raise E.must_be("program", "a value under vec_lens", "a list", E.describe(x))


def update(x: Any, path: Path, f: Fn) -> Any:
    """``x`` with ``f`` applied to its part at ``path``.

    >>> update((1, [2, 3]), (1, EACH), lambda v: v * 10)
    (1, [20, 30])
    """
    if not path:
        return f(x)
    head, rest = path[0], path[1:]
    if head == EACH:
        return [update(e, rest, f) for e in _elements(x)]
    a, b = halves("program", "value", "(left, right)", x)
    return (update(a, rest, f), b) if head == 0 else (a, update(b, rest, f))


def take(x: Any, path: Path, side: int, what: str, layout: str) -> tuple[Any, Any]:
    """Split the pair at ``path``: ``x`` with the pair replaced by its other half, and the half ``side``.

    Under :data:`EACH` the halves taken come back as a list, one per element.

    >>> take(((1, 2), 3), (0,), 0, "x", "(a, b)")
    ((2, 3), 1)
    """
    if not path:
        pair = halves("program", what, layout, x)
        return pair[1 - side], pair[side]
    head, rest = path[0], path[1:]
    if head == EACH:
        split = [take(e, rest, side, what, layout) for e in _elements(x)]
        return [kept for kept, _ in split], [taken for _, taken in split]
    a, b = halves("program", "value", "(left, right)", x)
    kept, taken = take(a if head == 0 else b, rest, side, what, layout)
    return ((kept, b) if head == 0 else (a, kept)), taken


def put(x: Any, path: Path, v: Any, side: int) -> Any:
    """``x`` with its part ``y`` at ``path`` paired with ``v``: ``(v, y)`` for side 0, ``(y, v)`` for side 1.

    Under :data:`EACH` ``v`` is a list, one per element.

    >>> put((1, [2, 3]), (1, EACH), ["a", "b"], 0)
    (1, [('a', 2), ('b', 3)])
    """
    if not path:
        return (v, x) if side == 0 else (x, v)
    head, rest = path[0], path[1:]
    if head == EACH:
        xs, vs = _elements(x), _elements(v)
        if len(xs) != len(vs):
            raise E.list_length_error("program", "a list under vec_lens", len(vs), len(xs))
        return [put(e, rest, ve, side) for e, ve in zip(xs, vs)]
    a, b = halves("program", "value", "(left, right)", x)
    return (put(a, rest, v, side), b) if head == 0 else (a, put(b, rest, v, side))
