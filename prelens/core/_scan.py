"""``scan``: a cell lens unrolled over a sequence, the state threaded forward and its delta backward.

Haskell's ``mapAccumL :: (h -> x -> (h, y)) -> h -> [x] -> (h, [y])`` as a pre-lens: ``T`` copies of the cell
chained by their state, one parameter shared by all (its deltas summed, as ``batch_n``'s), run as two loops,
never nested calls (stack depth constant in ``T``). Its laws: docs/laws.md ("Recurrence").
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import is_array, namespace, tree_map_arrays
from prelens.backend._loop import is_traced, scan_leaves, scan_loop, stack
from prelens.backend._loop import unstack as unstack_steps
from prelens.core._check import ANY, Expects
from prelens.core._iso import halves
from prelens.core._lens import AnyLens, PreLens, as_lens
from prelens.core._registry import constructor
from prelens.core._tree import tree_sum


def steps_of(fn: str, xs: Any, axis: int) -> list[Any]:
    """The steps of a sequence: a list or tuple as it is, an array (or a tree of arrays) cut along ``axis``.

    >>> import numpy as np
    >>> [x.tolist() for x in steps_of("scan", np.arange(6).reshape(2, 3), 1)]
    [[0, 3], [1, 4], [2, 5]]
    """
    if isinstance(xs, (list, tuple)):
        return list(xs)
    if not is_array(xs):
        raise E.must_be(fn, "its sequence xs", "an array or a list of steps", E.describe(xs))
    return unstack(fn, xs, axis)


def unstack(fn: str, tree: Any, axis: int) -> list[Any]:
    """A tree of arrays stacked along ``axis`` cut into its steps (checked: every array has as many).

    >>> import numpy as np
    >>> unstack("scan", (np.zeros((2, 3)), np.ones(2)), 0)[1]
    (array([0., 0., 0.]), array(1.))
    """
    return unstack_steps(tree, axis, _steps_in(fn, tree, axis))


def _steps_in(fn: str, tree: Any, axis: int) -> int:
    """How many steps every array of ``tree`` holds along ``axis`` (an error naming ``fn`` if they differ)."""
    if is_array(tree):
        return int(tree.shape[_axis(fn, tree, axis)])
    if isinstance(tree, (tuple, list)) and len(tree) > 0:
        counts = {_steps_in(fn, kid, axis) for kid in tree}
        if len(counts) > 1:
            raise E.StructureError(f"{fn}: the arrays of a sequence have different numbers of steps")
        return counts.pop()
    raise E.must_be(fn, "a stacked sequence", "arrays (or a tree of arrays) with a time axis", E.describe(tree))


def stack_like(steps: list[Any], like: Any, axis: int) -> Any:
    """``steps`` as a sequence of the kind ``like`` is: a list if it is a list or tuple, else stacked.

    >>> import numpy as np
    >>> stack_like([np.zeros(2), np.ones(2)], np.zeros((2, 2)), -1)
    array([[0., 1.],
           [0., 1.]])
    """
    if isinstance(like, (list, tuple)):
        return list(steps)
    return stack(steps, axis)


@constructor
def scan(cell: AnyLens, *, axis: int = 0) -> AnyLens:
    """``mapAccumL`` as a lens: ``cell`` (``(h, x) -> (h', y)``) unrolled over the steps of ``xs``.

    Parameters ``p`` (shared by every step: their deltas are summed); input ``(h0, xs)``; output
    ``(h_T, ys)``; residue the cell's residues. ``xs`` is an array whose ``axis`` is time, or a list
    of (at least one) steps; ``ys`` and ``dxs`` are stacked the same way.

    >>> import numpy as np
    >>> add = PreLens(lambda p, hx: ((), (hx[0] + hx[1], hx[0] + hx[1])),
    ...               lambda m, d: ((), (d[0] + d[1], d[0] + d[1])), name="add")
    >>> running = scan(add)
    >>> running
    scan(add)
    >>> m, (total, partial) = running.fwd((), (0.0, np.array([1.0, 2.0, 3.0])))
    >>> total, partial
    (np.float64(6.0), array([1., 3., 6.]))
    >>> running.bwd(m, (0.0, np.array([1.0, 1.0, 1.0])))
    ((), (np.float64(3.0), array([3., 2., 1.])))
    """
    cell = as_lens("scan", "cell", cell)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise E.bad_argument("scan", "axis", axis, "an int")
    axis = int(axis)
    fwd1, bwd1 = cell.fwd, cell.bwd
    name = f"scan({cell!r}{'' if axis == 0 else f', axis={axis}'})"

    def fwd(p: Any, s: Any) -> tuple[Any, tuple[Any, Any]]:
        h, xs = halves(name, "its input", "(h0, xs)", s)
        if is_array(xs) and is_traced((h, xs)):
            traced = _scan_traced(fwd1, p, h, xs, name, axis)
            if traced is not None:
                return traced
        steps = steps_of(name, xs, axis)
        if not steps:
            raise E.StructureError(f"{name}: its sequence xs has no steps (a scan needs at least one)")
        ms, ys = [], []
        for x in steps:
            m, (h, y) = fwd1(p, (h, x))
            ms.append(m)
            ys.append(y)
        return ms, (h, stack_like(ys, xs, axis))

    def bwd(ms: Any, da: Any) -> tuple[Any, tuple[Any, Any]]:
        dh, dys = halves(name, "its output delta", "(dh_T, dys)", da)
        if isinstance(ms, Stacked):
            traced = _scan_back_traced(bwd1, ms, dh, dys, name, axis)
            if traced is not None:
                return traced
            ms = (
                unstack(name, ms.residues, 0)
                if scan_leaves(ms.residues)
                else [ms.residues] * len(steps_of(name, dys, axis))
            )
        dy_steps = dys if isinstance(dys, list) else unstack(name, dys, axis)
        if len(dy_steps) != len(ms):
            raise E.list_length_error(name, "output delta's sequence dys", len(ms), len(dy_steps))
        dps, dxs = [], [None] * len(ms)
        for t in range(len(ms) - 1, -1, -1):
            dp, (dh, dxs[t]) = bwd1(ms[t], (dh, dy_steps[t]))
            dps.append(dp)
        return (dps[0] if len(dps) == 1 else tree_sum(dps)), (dh, dxs if isinstance(dys, list) else stack(dxs, axis))

    e = cell.expects
    h_pattern = e.input[0] if isinstance(e.input, tuple) and len(e.input) == 2 else ANY
    expects = Expects(params=e.params, input=(h_pattern, ANY), delta=ANY)
    return PreLens(fwd, bwd, name, cell.init_fn, "scan", (cell,), expects)


# ------------------------------------------------------------------ under JAX tracing: one jax.lax.scan


class Stacked(NamedTuple):
    """The residue of a scan traced by JAX: the cell's residues stacked along a new first axis."""

    residues: Any


class _Unscannable(Exception):
    """A step whose residue, output or deltas are not all arrays (``jax.lax.scan`` stacks only arrays)."""


def _all_arrays(tree: Any) -> bool:
    return all(is_array(leaf) for leaf in scan_leaves(tree))


def _axis(fn: str, x: Any, axis: int) -> int:
    """``axis`` of the array ``x`` counted from 0, or an error naming ``fn`` if ``x`` has no such axis."""
    nd = len(x.shape)
    if not -nd <= axis < nd:
        raise E.StructureError(f"{fn}: a sequence has no axis {axis}: got {E.describe(x)}")
    return axis % nd


def _time_first(name: str, x: Any, axis: int) -> Any:
    ax = _axis(name, x, axis)
    return x if ax == 0 else namespace(x).permute_dims(x, (ax, *(i for i in range(len(x.shape)) if i != ax)))


def _time_to(name: str, tree: Any, axis: int) -> Any:
    """A tree stacked along axis 0 with its time axis moved to ``axis`` (``stack(steps, axis)``'s layout)."""

    def move(x: Any) -> Any:
        nd = len(x.shape)
        if not -nd <= axis < nd:
            raise E.StructureError(f"{name}: cannot stack steps of {nd - 1} axes along axis {axis}")
        ax = axis % nd
        return x if ax == 0 else namespace(x).permute_dims(x, (*range(1, ax + 1), 0, *range(ax + 1, nd)))

    return tree_map_arrays(move, tree)


def _scan_traced(fwd1: Any, p: Any, h: Any, xs: Any, name: str, axis: int) -> tuple[Any, Any] | None:
    """The forward pass as one ``jax.lax.scan`` (the cell traced once), or ``None`` if the cell's
    residue or output is not all arrays (the caller then unrolls the steps)."""
    xt = _time_first(name, xs, axis)
    if xt.shape[0] == 0:
        raise E.StructureError(f"{name}: its sequence xs has no steps (a scan needs at least one)")

    def one(h: Any, x: Any) -> tuple[Any, Any]:
        m, (h, y) = fwd1(p, (h, x))
        if not _all_arrays((m, y)):
            raise _Unscannable
        return h, (y, m)

    try:
        h, (ys, ms) = scan_loop(one, h, xt)
    except _Unscannable:
        return None
    return Stacked(ms), (h, _time_to(name, ys, axis))


def _scan_back_traced(bwd1: Any, ms: Stacked, dh: Any, dys: Any, name: str, axis: int) -> tuple[Any, Any] | None:
    """The backward pass of :func:`_scan_traced` as one reversed ``jax.lax.scan``, or ``None``."""
    dyt = _time_first(name, dys, axis) if is_array(dys) else dys
    steps = len(dys) if isinstance(dys, list) else int(dyt.shape[0]) if is_array(dyt) else E.describe(dys)
    # the residues' steps, or without arrays among them, the delta's
    n = next((int(leaf.shape[0]) for leaf in scan_leaves(ms.residues)), steps if isinstance(steps, int) else 0)
    if steps != n:
        raise E.list_length_error(name, "output delta's sequence dys", n, steps)
    if isinstance(dys, list):
        dyt = stack(dys, 0)

    def back(dh: Any, md: Any) -> tuple[Any, Any]:
        m, dy = md
        dp, (dh, dx) = bwd1(m, (dh, dy))
        if not _all_arrays((dp, dx)):
            raise _Unscannable
        return dh, (dp, dx)

    try:
        dh, (dps, dxs) = scan_loop(back, dh, (ms.residues, dyt), reverse=True)
    except _Unscannable:
        return None
    dp = tree_map_arrays(lambda x: namespace(x).sum(x, axis=0), dps)  # the steps' parameter deltas added up
    return dp, (dh, unstack(name, dxs, 0) if isinstance(dys, list) else _time_to(name, dxs, axis))
