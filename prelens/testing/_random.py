"""Random trees shaped like given ones (float leaves only; other leaves kept)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens.core._tree import structure_mismatch, tree_map, tree_paths


def is_float_leaf(x: Any) -> bool:
    """True for float arrays, numpy float scalars and Python floats."""
    return isinstance(x, float) or np.asarray(x).dtype.kind == "f"


def _map_floats(f: Any, tree: Any, other: Any = None) -> Any:
    """``f(x as an array)`` at every float leaf, in the leaf's type (Python float or its dtype); ``other(x)`` else."""

    def leaf(x: Any) -> Any:
        if not is_float_leaf(x):
            return x if other is None else other(x)
        arr = np.asarray(x)
        return float(f(arr)) if isinstance(x, float) else f(arr).astype(arr.dtype)

    return tree_map(leaf, tree)


def random_like(tree: Any, rng: np.random.Generator) -> Any:
    """A tree of standard-normal values with ``tree``'s structure, shapes and dtypes (other leaves kept).

    >>> random_like((1.0, [np.zeros(2)], np.arange(2)), np.random.default_rng(0))[2]
    array([0, 1])
    """
    return _map_floats(lambda a: rng.standard_normal(a.shape), tree)


def random_affine(rng: np.random.Generator) -> Any:
    """A random leaf-wise affine map ``x -> c·x + d``, ``c`` in ``[0.5, 1.5)``, ``d`` standard-normal
    (two of them rarely commute); non-float leaves are kept.

    >>> random_affine(np.random.default_rng(0))((np.zeros(2), np.arange(2)))
    (array([-0.13210486, -0.13210486]), array([0, 1]))
    """
    c, d = 0.5 + rng.random(), rng.standard_normal()

    def f(tree: Any) -> Any:
        return tree_map(lambda x: c * x + d if is_float_leaf(x) else x, tree)

    return f


def perturbed(tree: Any, rng: np.random.Generator) -> Any:
    """A copy of ``tree`` with every float entry multiplied by its own factor in ``[0.75, 1.25]``.

    Signs, zeros and the structure are kept, so the result is a valid input wherever ``tree`` is.
    """
    return _map_floats(lambda a: a * (1.0 + 0.25 * rng.uniform(-1.0, 1.0, a.shape)), tree, copy_leaf)


def copy_leaf(x: Any) -> Any:
    """A fresh copy of an array leaf (a writeable one, even when ``x`` is not); other leaves as they are."""
    return np.array(x, copy=True) if isinstance(x, np.ndarray) else x


def snapshot(tree: Any) -> Any:
    """A copy of ``tree`` that shares no array (and no list or dict) with it."""
    return tree_map(copy_leaf, tree)


def scramble_in_place(tree: Any, only: str | None = None) -> list[str]:
    """Overwrite every writeable array leaf of ``tree`` (or only the one at path ``only``) in place.

    Float and complex entries become ``-1.5·x + 0.25``, integers are rotated by
    one place (they stay in range: ids and labels remain valid), booleans are
    negated. Returns the paths written. Used to play a caller who reuses its
    buffers after the forward pass.
    """
    written = []
    for path, x in tree_paths(tree):
        if not isinstance(x, np.ndarray) or not x.flags.writeable or x.size == 0 or (only is not None and path != only):
            continue
        kind = x.dtype.kind
        if kind in "fc":
            x *= -1.5
            x += 0.25
        elif kind in "iu":
            x[...] = np.roll(x.reshape(-1), 1).reshape(x.shape)
        elif kind == "b":
            np.logical_not(x, out=x)
        else:
            continue
        written.append(path)
    return written


def first_difference(left: Any, right: Any, rtol: float | None = 1e-9) -> str | None:
    """The path of the first leaf (or node) where two results of the same computation differ, or None.

    Float leaves agree when ``|x − y| <= rtol·max(|x|, |y|)`` taken over the whole leaf (a summation
    order that differs by round-off passes; ``rtol=None``: exactly, dtypes too, asking "was it written?"); NaN
    equals NaN.
    """
    found = structure_mismatch(left, right, shapes=True)
    if found:  # ``at <path>: expected …``: the node where the structures differ
        path = found[len("at ") : found.index(": expected")] if found.startswith("at ") else ""
        return "" if path == "<root>" else path
    for (path, x), (_, y) in zip(tree_paths(left), tree_paths(right)):
        a, b = np.asarray(x), np.asarray(y)
        if rtol is not None and a.dtype.kind in "fc" and b.dtype.kind in "fc":
            if not np.array_equal(np.isnan(a), np.isnan(b)):
                return path
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.where((a == b) | np.isnan(a), 0.0, np.abs(a - b))
            if not np.all(diff <= rtol * max(_max_abs(a), _max_abs(b))):
                return path
        elif not _identical(x, y):
            return path
    return None


def _identical(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        a, b = np.asarray(x), np.asarray(y)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if x is y:
        return True
    try:
        same = x == y
        return bool(same) or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)
    except Exception:  # leaves that do not compare
        return False


def _max_abs(a: Any) -> float:
    finite = np.abs(np.asarray(a))[np.isfinite(a)]
    return float(finite.max()) if finite.size else 0.0
