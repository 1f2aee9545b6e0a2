"""Combinators that build bigger lenses: fan-out, vectors, batches, chains, copy and add.

``vec_lens`` and ``batch_n`` take a ``PreLens`` or any encoding that registers its form with
:func:`copies` (the TriLens does, in :mod:`prelens.tambara`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._check import LIKE_OUTPUT, Expects
from prelens.core._lens import AnyLens, Init, Passes, PreLens, as_lens, built_of
from prelens.core._registry import constructor
from prelens.core._tree import numeric_sum


def add_trees(trees: Any, fn: str = "tree_sum", what: str = "tree") -> Any:
    """The leaf-wise sum of a non-empty list (or pair) of trees of one structure and shape (never broadcast); a
    misfit names ``fn`` and calls the trees ``what`` 0, 1, ...

    >>> add_trees([np.ones(2), np.ones(2)])
    array([2., 2.])
    """
    if len(trees) == 2:
        a, b = trees
        if not isinstance(a, (tuple, list, dict)) and np.shape(a) == np.shape(b):
            return a + b  # two arrays or numbers of one shape: the common case
    return numeric_sum(fn, list(trees), what)


@constructor
def branch(n: int) -> AnyLens:
    """Fan-out: one input to a list of ``n`` copies; the backward pass sums pointwise.

    Haskell: ``branch :: Monoid s => Int -> TriLens [s] [s] () () () () s s`` (it concatenates the deltas
    with ``mconcat``; prelens sums them, see docs/faithful.md).

    >>> b = branch(2)
    >>> b.fwd((), np.array([1.0]))
    ((), [array([1.]), array([1.])])
    >>> b.bwd((), [np.array([1.0]), np.array([2.0])])
    ((), array([3.]))
    """
    n = _args.count("branch", "n", n)

    def fwd(p: tuple[()], s: Any) -> tuple[tuple[()], list[Any]]:
        return (), [s] * n

    def bwd(dm: tuple[()], da: list[Any]) -> tuple[tuple[()], Any]:
        if not isinstance(da, (list, tuple)) or len(da) != n:  # a sum of fewer deltas would be silently wrong
            raise E.must_be(f"branch({n})", "its output delta", f"a list of {n} deltas", E.describe_tree(da))
        return (), add_trees(da, f"branch({n})", "delta")

    return PreLens(fwd, bwd, f"branch({n})", expects=Expects(params=(), delta=LIKE_OUTPUT))


@functools.singledispatch
def copies(lens: Any, n: int, shared: bool) -> Any:
    """``n`` copies of ``lens`` in parallel: ``vec_lens`` (own parameters) or ``batch_n`` (``shared``).

    Other encodings of lenses register their own form here.
    """
    fn = "batch_n" if shared else "vec_lens"
    raise E.must_be(fn, "lens", "a PreLens or a TriLens", E.describe(lens))


@constructor
def vec_lens(n: int, lens: Any) -> Any:
    """``n`` copies of ``lens`` in parallel; every slot becomes a list of length ``n``.

    Haskell (``PreLens/TriLens.hs``)::

        vecLens :: Int -> TriLens a da m dm p dp s ds -> TriLens [a] [da] [m] [dm] [p] [dp] [s] [ds]

    >>> from prelens import id_pre_lens
    >>> vec_lens(2, id_pre_lens).fwd([(), ()], [1, 2])
    ([(), ()], [1, 2])
    """
    return copies(lens, _args.count("vec_lens", "n", n, least=0), False)


@constructor
def batch_n(n: int, lens: Any) -> Any:
    """``n`` copies of ``lens`` sharing one parameter; parameter deltas are summed.

    Haskell (``PreLens/TriLens.hs``)::

        batchN :: VSpace dp => Int -> TriLens a da m dm p dp s ds
               -> TriLens [a] [da] [m] [dm] p dp [s] [ds]

    >>> add_p = PreLens(lambda p, s: ((), p + s), lambda dm, da: (da, da), name="add_p")
    >>> batch_n(3, add_p).bwd([(), (), ()], [1.0, 2.0, 3.0])
    (6.0, [1.0, 2.0, 3.0])
    """
    return copies(lens, _args.count("batch_n", "n", n), True)


@copies.register
def _(lens: PreLens, n: int, shared: bool) -> AnyLens:  # type: ignore[type-arg]
    fwd1, bwd1, e = lens.fwd, lens.bwd, lens.expects

    def fwd(ps: Any, ss: list[Any]) -> tuple[list[Any], list[Any]]:
        outs = [fwd1(ps, s) for s in ss] if shared else [fwd1(p, s) for p, s in zip(ps, ss, strict=True)]
        return [m for m, _ in outs], [a for _, a in outs]

    def bwd(dms: list[Any], das: list[Any]) -> tuple[Any, list[Any]]:
        outs = [bwd1(dm, da) for dm, da in zip(dms, das, strict=True)]
        dps = [dp for dp, _ in outs]
        return (add_trees(dps, name, "parameter delta") if shared else dps), [ds for _, ds in outs]

    if shared:
        name, init, params = f"batch_n({n}, {lens!r})", lens.init_fn, e.params
    else:
        name, params = f"vec_lens({n}, {lens!r})", [e.params] * n
        init = None if lens.init_fn is None else _list_init([lens.init_fn] * n)
    return PreLens(fwd, bwd, name, init, "", (lens,), Expects(params, [e.input] * n, [e.delta] * n))


def _list_init(inits: list[Init]) -> Init:
    def init(rng: np.random.Generator) -> list[Any]:
        return [i(rng) for i in inits]

    return init


@constructor
def chain(*lenses: AnyLens) -> AnyLens:
    """n-ary sequential composition; parameters and residues are lists in data-flow order.

    ``chain(f, g, h)`` equals ``f >> g >> h`` up to re-nesting (parameters ``[p_f, p_g, p_h]``
    instead of ``(p_h, (p_g, p_f))``), and runs as a loop: any length fits the stack.

    >>> inc = PreLens(lambda p, s: ((), s + p), lambda dm, da: (da, da), name="inc")
    >>> c = chain(inc, inc, inc)
    >>> c
    chain(inc, inc, inc)
    >>> c.fwd([1.0, 10.0, 100.0], 0.0)
    ([(), (), ()], 111.0)
    """
    if not lenses:
        raise E.ArgumentError("chain: needs at least one lens")
    parts = tuple(as_lens("chain", f"part {i}", lens) for i, lens in enumerate(lenses))
    inits = [lens.init_fn for lens in parts]
    init = _list_init(inits) if all(i is not None for i in inits) else None  # type: ignore[arg-type]
    expects = Expects([lens.expects.params for lens in parts], parts[0].expects.input, parts[-1].expects.delta)
    return built_of(_chained, parts, f"chain({', '.join(map(repr, parts))})", init, "chain", expects)


def _chained(*passes: Passes) -> Passes:
    """The passes of ``chain`` from those of its parts."""
    fwds = [f for f, _ in passes]
    bwds = [b for _, b in reversed(passes)]

    def fwd(ps: list[Any], s: Any) -> tuple[list[Any], Any]:
        ms = []
        for f, p in zip(fwds, ps, strict=True):
            m, s = f(p, s)
            ms.append(m)
        return ms, s

    def bwd(dms: list[Any], da: Any) -> tuple[list[Any], Any]:
        dps = []
        for b, dm in zip(bwds, reversed(dms), strict=True):
            dp, da = b(dm, da)
            dps.append(dp)
        dps.reverse()
        return dps, da

    return fwd, bwd


def _copy_fwd(p: tuple[()], s: Any) -> tuple[tuple[()], tuple[Any, Any]]:
    return (), (s, s)


def _copy_bwd(dm: tuple[()], da: tuple[Any, Any]) -> tuple[tuple[()], Any]:
    match da:
        case (d1, d2):
            return (), add_trees([d1, d2], "copy_l", "delta")
    raise E.not_a_pair("copy_l", "its output delta", "(da1, da2)", da)


#: Copy the input into a pair; the backward pass adds the two deltas (the
#: diagonal ``s -> (s, s)``, the two-way tuple form of ``branch``).
copy_l: AnyLens = PreLens(_copy_fwd, _copy_bwd, "copy_l", expects=Expects(params=(), delta=LIKE_OUTPUT))


def _add_fwd(p: tuple[()], s: tuple[Any, Any]) -> tuple[tuple[()], Any]:
    match s:
        case (s1, s2):
            # checked each time: arrays of two shapes would broadcast
            return (), numeric_sum("add_l", [s1, s2], "input")
    raise E.not_a_pair("add_l", "its input", "(s1, s2)", s)


def _add_bwd(dm: tuple[()], da: Any) -> tuple[tuple[()], tuple[Any, Any]]:
    return (), (da, da)


#: Add a pair of same-shaped inputs; the backward pass hands the delta to both.
add_l: AnyLens = PreLens(_add_fwd, _add_bwd, "add_l", expects=Expects(params=()))


#: Each lens :func:`prelens.nn.remat` made, and the lens it re-runs (here, below ``tambara``, whose ``Cost`` reads it).
REMAT_OF: weakref.WeakKeyDictionary[Any, AnyLens] = weakref.WeakKeyDictionary()
_FULL_RESIDUES = contextvars.ContextVar("prelens_remat_full_residues", default=False)


@contextlib.contextmanager
def full_residues() -> Iterator[None]:
    """Within it every :func:`prelens.nn.remat` lens keeps its whole residue (for :class:`prelens.tambara.Cost`).

    >>> with full_residues():
    ...     keeps_full_residues()
    True
    """
    token = _FULL_RESIDUES.set(True)
    try:
        yield
    finally:
        _FULL_RESIDUES.reset(token)


def keeps_full_residues() -> bool:
    """Whether a :func:`full_residues` block is running (a remat lens then keeps its whole residue)."""
    return _FULL_RESIDUES.get()
