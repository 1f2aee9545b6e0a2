"""Two more readings of a TriLens (docs/tambara.md, "More than one meaning"): its shapes, and its cost.

Both are programs read abstractly: the plumbing runs on placeholder arrays that hold no data,
and each lens's own box (the ``fwd``/``bwd`` pair ``to_tamb`` dimaps with) is replaced by its
:class:`Rule` (set with :func:`register_rule`), or, with none, run once on the placeholders
with its cost unknown. :class:`Shapes` reads shapes and dtypes, :class:`Cost` multiply-adds and
the bytes of residue held between the passes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import REMAT_OF, full_residues
from prelens.core._lens import AnyLens, as_lens
from prelens.core._tree import tree_leaves, tree_map
from prelens.tambara._program import DIMAP_S, Program, Step, compile_passes
from prelens.tambara._trilens import AnyTriLens, LensPass, as_trilens, interpret

Pass = Callable[[Any, Any], tuple[Any, Any]]


def placeholder(shape: int | Sequence[int] = (), dtype: Any = np.float64) -> Any:
    """A value of ``shape`` (as numpy's: an int, a tuple or a list) and ``dtype`` that holds no data: a scalar, or
    one zero broadcast to ``shape``.

    >>> x = placeholder((1000, 1000))
    >>> x.shape, x.nbytes, x.strides
    ((1000, 1000), 8000000, (0, 0))
    """
    dims: Any = (shape,) if _is_size(shape) else tuple(shape) if isinstance(shape, list) else shape
    if not isinstance(dims, tuple) or not all(_is_size(d) for d in dims):
        raise E.must_be("placeholder", "shape", "a size or a tuple of sizes (ints >= 0)", E.describe(shape))
    dt = _args.float_dtype("placeholder", "dtype", dtype)
    if dims == ():
        return 0.0 if dt == np.float64 else dt.type(0)
    return np.broadcast_to(np.zeros((), dt), tuple(int(d) for d in dims))


def _is_size(d: Any) -> bool:
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool) and bool(d >= 0)


def like(tree: Any) -> Any:
    """``tree`` with every array and number replaced by a :func:`placeholder` of its shape and dtype.

    >>> like((np.ones((2, 3)), 1.5))[0].strides
    (0, 0)
    """
    return tree_map(_like_leaf, tree)


def _like_leaf(x: Any) -> Any:
    kind = x.dtype.kind if isinstance(x, (np.ndarray, np.generic)) else "f" if isinstance(x, float) else "?"
    if kind in "iu" and isinstance(x, np.ndarray):  # token ids: index 0 everywhere, no data held
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):  # a size kept in a residue
        return x
    if kind != "f":
        raise E.must_be("Shapes", "every leaf", "a float, an array of floats or of integer ids", E.describe(x))
    return placeholder(np.shape(x), np.asarray(x).dtype)


@dataclass(frozen=True)
class Rule:
    """What a lens's box does, without doing it: ``forward(p, s) -> (m, a)`` and ``backward(dm, da) -> (dp, ds)``
    make :func:`placeholder` values of the right shapes; ``madds(p, s) -> (forward, backward)`` counts the
    multiply-adds of each pass (an elementwise operation counts as one).

    >>> r = Rule(lambda p, s: ((), s), lambda dm, da: ((), da), lambda p, s: (0, 0))
    >>> r.madds((), 1.0)
    (0, 0)
    """

    forward: Pass
    backward: Pass
    madds: Callable[[Any, Any], tuple[int, int]]

    def __post_init__(self) -> None:
        for what in ("forward", "backward", "madds"):
            _args.function("Rule", what, getattr(self, what))


#: The rule of each lens that has one (a lens is a frozen value: its rule is fixed with it).
_RULES: weakref.WeakKeyDictionary[AnyLens, Rule] = weakref.WeakKeyDictionary()


def register_rule(lens: AnyLens, rule: Rule) -> AnyLens:
    """Give ``lens`` a :class:`Rule`, so that :class:`Shapes` and :class:`Cost` read its box abstractly; returns it.

    >>> from prelens import PreLens, to_tamb
    >>> double = PreLens(lambda p, s: ((), 2 * s), lambda dm, da: ((), 2 * da), name="double")
    >>> register_rule(double, Rule(lambda p, s: ((), s), lambda dm, da: ((), da), lambda p, s: (3, 3)))
    double
    >>> Cost.of(to_tamb(double), (), placeholder((3,))).total
    (3, 3)
    """
    as_lens("register_rule", "lens", lens)
    if not isinstance(rule, Rule):
        raise E.must_be("register_rule", "rule", "a prelens.tambara.Rule", E.describe(rule))
    _RULES[lens] = rule
    return lens


@dataclass(frozen=True)
class BoxCost:
    """One run of one lens's box: its name, multiply-adds of each pass (``None``: no rule), residue bytes."""

    lens: str
    forward: int | None
    backward: int | None
    residue_bytes: int
    without_remat: int | None = None  # the residue bytes were every remat lens in it plain (None: no remat)


@dataclass(frozen=True)
class Reading:
    """What an abstract run of a program found: placeholder trees of the four results, and each box run."""

    residue: Any
    output: Any
    param_delta: Any
    input_delta: Any
    boxes: tuple[BoxCost, ...] = field(repr=False)


def _nbytes(tree: Any) -> int:
    return int(sum(np.asarray(x).dtype.itemsize * int(np.size(x)) for x in tree_leaves(tree)))


def read(program: Program, p: Any, s: Any) -> Reading:
    """Run ``program`` on placeholders of ``(p, s)`` (each box by its :class:`Rule`, or with none the lens
    itself), then back on placeholders of its residue and output."""
    boxes: list[BoxCost] = []

    def abstract(step: Step) -> Step:
        f, g = step.f, step.g
        if step.kind != DIMAP_S or not isinstance(f, LensPass) or f.backward or not isinstance(g, LensPass):
            return step
        lens = f.lens
        rule = _RULES.get(lens)

        def fwd(ps: Any) -> Any:
            p_, s_ = ps
            m, a = _returned(lens, "forward", rule.forward(p_, s_)) if rule else like(lens.fwd(p_, s_))
            madds = _returned(lens, "madds", rule.madds(p_, s_)) if rule else (None, None)
            plain = None
            if rule is None and len(REMAT_OF):  # a remat lens exists: this box may hold one
                with full_residues():
                    plain = _nbytes(like(lens.fwd(p_, s_))[0])
            boxes.append(BoxCost(lens.name, madds[0], madds[1], _nbytes(m), plain))
            return m, a

        def bwd(dm_da: Any) -> Any:
            dm, da = dm_da
            return _returned(lens, "backward", rule.backward(dm, da)) if rule else like(lens.bwd(dm, da))

        return Step(step.kind, step.at, fwd, bwd)

    fwd, bwd = compile_passes([abstract(st) for st in program.steps()])
    m, a = fwd(like(p), like(s))
    dp, ds = bwd(like(m), like(a))
    return Reading(m, a, dp, ds, tuple(boxes))


#: What each function of a :class:`Rule` returns: a pair.
_RETURNS = {"forward": "(m, a)", "backward": "(dp, ds)", "madds": "of ints (the forward and backward multiply-adds)"}


def _returned(lens: AnyLens, what: str, out: Any) -> Any:
    """``out``, what ``lens``'s rule's function ``what`` returned, if it is the pair it must be; else an error."""
    if isinstance(out, tuple) and len(out) == 2 and (what != "madds" or all(_is_size(n) for n in out)):
        return out
    raise E.must_be(f"{lens.name}'s Rule", f"what {what} returns", f"a pair {_RETURNS[what]}", E.describe_tree(out))


@dataclass(frozen=True, eq=False, repr=False)
class Shapes(Program):
    """The Trimbara module of shapes: a TriLens run on it reads as the shapes and dtypes it makes.

    A :class:`~prelens.tambara.Program` read abstractly: :meth:`of` reads the shapes for given parameters
    and input (real values or :func:`placeholder` ones: only their shapes matter).

    >>> from prelens.faithful import make_mlp, init_mlp
    >>> sh = Shapes.of(make_mlp(4, [16, 3]), init_mlp(4, [16, 3], 0), placeholder((4,)))
    >>> sh["output"], sh["input delta"]
    ('[f64, f64, f64]', 'f64[4]')
    """

    @staticmethod
    def of(tri: AnyTriLens, p: Any, s: Any) -> dict[str, str]:
        """The shapes of ``tri``'s output, residue and deltas on ``(p, s)``, each as prelens describes a tree."""
        r = read(interpret(as_trilens("Shapes.of", "tri", tri), Shapes()), p, s)
        slots = (r.output, r.residue, r.param_delta, r.input_delta)
        return dict(zip(("output", "residue", "parameter delta", "input delta"), map(shape_of, slots)))


class _Shown:
    """A leaf shown as its dtype and shape: ``f64[4]``, or ``f64`` for a scalar."""

    def __init__(self, x: Any) -> None:
        arr = np.asarray(x)
        self.text = E.dtype_name(arr.dtype) + (f"[{','.join(map(str, arr.shape))}]" if arr.shape else "")

    def __repr__(self) -> str:
        return self.text


def shape_of(tree: Any) -> str:
    """``tree`` written with every leaf as its dtype and shape.

    >>> shape_of(((), [np.zeros(3), 1.0]))
    '((), [f64[3], f64])'
    """
    return repr(tree_map(_Shown, tree))


@dataclass(frozen=True)
class CostTable:
    """The cost of one forward and backward pass, per kind of box: ``rows`` of (lens, runs, fwd, bwd, bytes).

    >>> t = CostTable((("linear_l(2)", 3, 6, 12, 96), ("activ_l", 3, 3, 6, 24)))
    >>> t.total, t.residue_bytes
    ((9, 18), 120)
    """

    rows: tuple[tuple[str, int, int | None, int | None, int], ...]
    #: Bytes of residue were every :func:`~prelens.nn.remat` lens plain (``None``: as :attr:`residue_bytes`).
    without_remat: int | None = None

    @property
    def residue_bytes_without_remat(self) -> int:
        """Bytes of residue the same program would hold without :func:`~prelens.nn.remat` (checkpointing).

        >>> CostTable((("f", 1, 0, 0, 16),), without_remat=4096).residue_bytes_without_remat
        4096
        """
        return self.residue_bytes if self.without_remat is None else self.without_remat

    @property
    def total(self) -> tuple[int | None, int | None]:
        """Multiply-adds of the forward and the backward pass (``None`` if some box has no rule)."""
        return _known_sum([r[2] for r in self.rows]), _known_sum([r[3] for r in self.rows])

    @property
    def residue_bytes(self) -> int:
        """Bytes of residue held between the passes."""
        return sum(r[4] for r in self.rows)

    def __iter__(self) -> Iterator[tuple[str, int, int | None, int | None, int]]:
        return iter(self.rows)

    def __str__(self) -> str:
        rows: list[tuple[Any, ...]] = [("box", "runs", "fwd madds", "bwd madds", "residue bytes"), *self.rows]
        rows.append(("total", sum(r[1] for r in self.rows), *self.total, self.residue_bytes))
        if self.residue_bytes_without_remat != self.residue_bytes:
            rows.append(("without remat", "", "", "", self.residue_bytes_without_remat))
        cells = [["?" if c is None else str(c) for c in row] for row in rows]  # ?: a count not known
        widths = [max(len(row[i]) for row in cells) for i in range(5)]
        return "\n".join(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
            for row in cells
        )


def _known_sum(xs: list[int | None]) -> int | None:
    return None if None in xs else sum(x for x in xs if x is not None)


@dataclass(frozen=True, eq=False, repr=False)
class Cost(Program):
    """The Trimbara module of costs: a TriLens run on it reads as the arithmetic and memory of backprop.

    A :class:`~prelens.tambara.Program` read abstractly: :meth:`of` gives a :class:`CostTable`, per kind of
    box how often it ran, the multiply-adds of its passes, and the bytes of residue it held.

    >>> from prelens.faithful import make_mlp, init_mlp
    >>> table = Cost.of(make_mlp(4, [16, 3]), init_mlp(4, [16, 3], 0), placeholder((4,)))
    >>> print(table)
    box          runs  fwd madds  bwd madds  residue bytes
    linear_l(4)    16         64        128           1024
    bias_l         19         19          0              0
    activ_l        19         19         38            152
    linear_l(16)    3         48         96            768
    total          57        150        262           1944
    """

    @staticmethod
    def of(tri: AnyTriLens, p: Any, s: Any) -> CostTable:
        """The :class:`CostTable` of one forward and backward pass of ``tri`` on ``(p, s)``."""
        r = read(interpret(as_trilens("Cost.of", "tri", tri), Cost()), p, s)
        rows: dict[str, list[Any]] = {}
        for box in r.boxes:
            row = rows.setdefault(box.lens, [box.lens, 0, 0, 0, 0])
            row[1] += 1
            row[2] = None if box.forward is None or row[2] is None else row[2] + box.forward
            row[3] = None if box.backward is None or row[3] is None else row[3] + box.backward
            row[4] += box.residue_bytes
        plain = sum(b.residue_bytes if b.without_remat is None else b.without_remat for b in r.boxes)
        table = tuple((r_[0], r_[1], r_[2], r_[3], r_[4]) for r_ in rows.values())
        return CostTable(table, None if plain == sum(b.residue_bytes for b in r.boxes) else plain)
