"""A loop over the steps of a sequence: ``jax.lax.scan`` under JAX tracing (one traced step, a program
that does not grow with ``T``), a Python loop over views otherwise. ``jax`` is imported only when a
traced JAX array arrives. Trees are tuples, lists, named tuples and ``None``, with arrays as leaves.

>>> import numpy as np
>>> def running(total, x):
...     total = total + x
...     return total, (total, 2 * x)
>>> total, (partial, doubled) = scan_loop(running, np.zeros(2), np.arange(6.0).reshape(3, 2))
>>> total, partial[:, 0], doubled[:, 1]
(array([6., 9.]), array([0., 2., 6.]), array([ 2.,  6., 10.]))
>>> scan_loop(running, np.zeros(1), np.ones((1, 3)), axis=1, reverse=True)[1][0]
array([[3., 2., 1.]])
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens.backend._arrays import is_array, is_concrete, namespace

Step = Callable[[Any, Any], tuple[Any, Any]]


class Steps(list):  # type: ignore[type-arg]
    """The per-step values of a Python loop kept as a list, not stacked (see ``keep`` of :func:`scan_loop`).

    A later :func:`scan_loop` takes it where its ``xs`` has a sequence: its items are the steps.
    A tree map may turn it into a plain list (a list is a tree node): :func:`as_steps` turns it back.
    """


def as_steps(kept: Any) -> Any:
    """What ``keep`` returned, ready for a later loop's ``xs``: a list as :class:`Steps`, stacked arrays as they are."""
    return Steps(kept) if isinstance(kept, list) else kept


def scan_loop(
    step: Step,
    carry: Any,
    xs: Any,
    *,
    axis: int = 0,
    reverse: bool = False,
    keep: tuple[int, ...] = (),
) -> tuple[Any, Any]:
    """``(carry, ys)``: ``step`` run over the steps of ``xs`` along ``axis``, ``carry`` threaded through.

    ``xs`` is a tree of arrays of one length along ``axis`` (at least one step); step ``t`` gets
    ``carry`` and the ``t``-th slices and returns the next carry and a tree ``y`` (one structure every
    step), stacked along ``axis`` in the order of ``t``; ``reverse=True`` runs from the last step. A
    carry that changes its type from step to step is traced step by step (the program grows with ``T``).
    ``keep``: positions of ``y`` the Python loop returns as :class:`Steps`, unstacked (a residue only a
    later loop reads).

    >>> import numpy as np
    >>> scan_loop(lambda c, x: (c * x, c), np.ones(1), np.array([[2.0], [3.0]]))
    (array([6.]), array([[1.],
           [2.]]))
    """
    if is_traced((xs, carry)) and (out := _jax_scan(step, carry, xs, axis, reverse)) is not None:
        return out
    return _python_loop(step, carry, xs, axis, reverse, keep)


def _python_loop(step: Step, carry: Any, xs: Any, axis: int, reverse: bool, keep: tuple[int, ...]) -> tuple[Any, Any]:
    n = _length(xs, axis)
    if not n:
        raise ValueError("scan_loop: xs has no steps (a loop needs at least one)")
    steps = unstack(xs, axis, n)
    ys: list[Any] = [None] * n
    for t in range(n - 1, -1, -1) if reverse else range(n):
        carry, ys[t] = step(carry, steps[t])
    if not keep:
        return carry, stack(ys, axis)
    kids = [Steps(y[i] for y in ys) if i in keep else stack([y[i] for y in ys], axis) for i in range(len(ys[0]))]
    return carry, rebuild(ys[0], kids)


def _jax_scan(step: Step, carry: Any, xs: Any, axis: int, reverse: bool) -> tuple[Any, Any] | None:
    """``jax.lax.scan``'s ``(carry, ys)``; ``None`` when the step changes its carry's type (a Python
    number or another dtype in, an array out): the Python loop then traces every step instead."""
    import jax
    import jax.numpy as jnp

    xs = _stack_steps(xs, axis)
    if axis != 0:
        xs = jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, axis, 0), xs)
    try:
        carry, ys = jax.lax.scan(step, carry, xs, reverse=reverse)
    except TypeError as exc:
        if "carry" not in str(exc):
            raise
        return None
    if axis != 0:
        ys = jax.tree_util.tree_map(lambda y: jnp.moveaxis(y, 0, axis), ys)
    return carry, ys


def is_traced(tree: Any) -> bool:
    """True when an array of ``tree`` (tuples, lists, ``None``, arrays) is being traced by JAX.

    >>> is_traced((np.zeros(2), None, [np.ones(1)]))
    False
    """
    return "jax" in sys.modules and not all(is_concrete(x) for x in scan_leaves(tree))  # numpy users: one dict lookup


def scan_leaves(tree: Any) -> list[Any]:
    """The arrays of a tree of tuples and lists (``None`` and :class:`Steps` have none)."""
    if tree is None or isinstance(tree, Steps):
        return []
    if isinstance(tree, (tuple, list)):
        return [leaf for kid in tree for leaf in scan_leaves(kid)]
    return [tree]


def _length(tree: Any, axis: int) -> int | None:
    """The number of steps of ``xs`` (its first array's length along ``axis``, or its first Steps' length)."""
    if isinstance(tree, Steps):
        return len(tree)
    if isinstance(tree, (tuple, list)):
        return next((n for kid in tree if (n := _length(kid, axis)) is not None), None)
    return None if tree is None else int(tree.shape[axis])


def _stack_steps(tree: Any, axis: int) -> Any:
    """``tree`` with every :class:`Steps` in it stacked along ``axis`` (for ``jax.lax.scan``)."""
    if isinstance(tree, Steps):
        return stack(list(tree), axis)
    if isinstance(tree, (tuple, list)):
        return rebuild(tree, [_stack_steps(kid, axis) for kid in tree])
    return tree


def rebuild(like: Any, kids: Any) -> Any:
    """A node of ``like``'s type (a tuple, a named tuple, a list) holding ``kids``."""
    return type(like)(*kids) if hasattr(like, "_fields") else type(like)(kids)


def unstack(tree: Any, axis: int, n: int) -> list[Any]:
    """The ``n`` steps of ``tree`` along ``axis``: a list of trees of views, built node by node.

    >>> unstack((np.zeros((2, 3)), np.ones(2)), 0, 2)[1]
    (array([0., 0., 0.]), array(1.))
    """
    if tree is None:
        return [None] * n
    if isinstance(tree, Steps):
        if len(tree) != n:
            raise ValueError(f"scan_loop: a sequence of {len(tree)} steps beside one of {n}")
        return list(tree)
    if isinstance(tree, (tuple, list)):
        steps = zip(*(unstack(kid, axis, n) for kid in tree))  # inline, not rebuild: once per step
        return [type(tree)(*step) for step in steps] if hasattr(tree, "_fields") else [type(tree)(s) for s in steps]
    if type(tree) is np.ndarray and tree.ndim > 1:  # numpy's own iteration: the views at C speed (0-d: arrays)
        return list(np.moveaxis(tree, axis, 0))
    lead = (slice(None),) * (axis % len(tree.shape))
    return [tree[(*lead, t, ...)] for t in range(n)]


def stack(steps: list[Any], axis: int) -> Any:
    """The steps (trees of one structure) stacked leaf by leaf along ``axis`` (Python numbers by numpy).

    >>> stack([(np.zeros(2), 1.0), (np.ones(2), 2.0)], -1)
    (array([[0., 1.],
           [0., 1.]]), array([1., 2.]))
    """
    first = steps[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        return rebuild(first, [stack([s[i] for s in steps], axis) for i in range(len(first))])
    if type(first) is np.ndarray and 0 <= axis < first.ndim:
        # np.stack's layout from one concatenate (np.stack adds an axis to every step first: slower)
        shape = first.shape
        return np.concatenate(steps, axis=axis).reshape((*shape[:axis], len(steps), *shape[axis:]))
    return (namespace(first) if is_array(first) else np).stack(steps, axis=axis)
