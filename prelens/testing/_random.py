"""Random trees shaped like given ones (float leaves only; other leaves kept)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tree import tree_map, tree_paths, tree_zip_map


def is_float_leaf(x: Any) -> bool:
    """True for float arrays, numpy float scalars and Python floats."""
    return isinstance(x, float) or np.asarray(x).dtype.kind == "f"


def random_like(tree: Any, rng: np.random.Generator) -> Any:
    """A tree of standard-normal values with ``tree``'s structure, shapes and dtypes.

    Haskell::

        random_like :: t -> Gen -> t

    Non-float leaves (integer ids, labels) are kept as they are.

    >>> random_like((1.0, [np.zeros(2)], np.arange(2)), np.random.default_rng(0))[2]
    array([0, 1])
    """

    def draw(x: Any) -> Any:
        if not is_float_leaf(x):
            return x
        if isinstance(x, float):
            return float(rng.standard_normal())
        arr = np.asarray(x)
        return rng.standard_normal(arr.shape).astype(arr.dtype)

    return tree_map(draw, tree)


def random_affine(rng: np.random.Generator) -> Any:
    """A random leaf-wise affine map ``x -> c·x + d`` (two of them rarely commute).

    ``c`` is drawn from ``[0.5, 1.5)`` and ``d`` standard-normal; non-float
    leaves are kept.

    Haskell::

        random_affine :: Gen -> (t -> t)

    >>> f = random_affine(np.random.default_rng(0))
    >>> f((np.zeros(2), np.arange(2)))
    (array([-0.13210486, -0.13210486]), array([0, 1]))
    """
    c, d = 0.5 + rng.random(), rng.standard_normal()

    def f(tree: Any) -> Any:
        return tree_map(lambda x: c * x + d if is_float_leaf(x) else x, tree)

    return f


def inner(a: Any, b: Any) -> float:
    """Sum of the dot products of corresponding float leaves of ``a`` (primal) and ``b``."""
    total = 0.0
    for (_, x), (_, y) in zip(tree_paths(a), tree_paths(b)):
        if is_float_leaf(x):
            total += float(np.vdot(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)))
    return total


def axpy(alpha: float, direction: Any, tree: Any) -> Any:
    """``tree + alpha·direction`` on float leaves; other leaves kept."""
    return tree_zip_map(lambda x, d: x + alpha * d if is_float_leaf(x) else x, tree, direction)
