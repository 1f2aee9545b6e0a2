"""Parameter and residue trees: nests of tuples (named tuples too), lists and dicts with arrays or
numbers at the leaves; ``()`` and ``None`` are empty trees. A place in a tree is named by its *path*,
e.g. ``[1][0].weight``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend import _arrays as _backend
from prelens.core import _args

Tree = Any


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _kind(x: Any) -> str:
    """``'tuple'``, ``'list'``, ``'dict'``, ``'none'`` or ``'leaf'``."""
    if isinstance(x, tuple):
        return "tuple"
    if isinstance(x, list):
        return "list"
    if isinstance(x, dict):
        return "dict"
    if x is None:
        return "none"
    return "leaf"


def _items(x: Any) -> list[tuple[str, Any]]:
    """Children of a node with their path segments."""
    if _is_namedtuple(x):
        return [(f".{f}", v) for f, v in zip(x._fields, x)]
    if isinstance(x, (tuple, list)):
        return [(f"[{i}]", v) for i, v in enumerate(x)]
    if isinstance(x, dict):
        return [(f"[{k!r}]", v) for k, v in x.items()]
    return []


def _rebuild(like: Any, children: list[Any]) -> Any:
    if _is_namedtuple(like):
        return type(like)(*children)
    if isinstance(like, tuple):
        return tuple(children)
    if isinstance(like, list):
        return children
    if isinstance(like, dict):
        return dict(zip(like.keys(), children))
    return like


def structure_mismatch(a: Tree, b: Tree, *, shapes: bool = False, path: str = "") -> str | None:
    """The first place where ``b`` does not have the structure of ``a``, or None.

    Returns ``"at <path>: expected <a's node>, got <b's node>"``. With
    ``shapes=True`` leaves must also agree in shape.

    >>> structure_mismatch((1.0, [2.0, 3.0]), (1.0, [2.0]))
    'at [1]: expected list of 2, got list of 1'
    >>> structure_mismatch((1.0, 2.0), (4.0, 5.0)) is None
    True
    """
    if type(shapes) is not bool or type(path) is not str:
        _args.flag("structure_mismatch", "shapes", shapes)
        _args.name("structure_mismatch", "path", path)
    return _mismatch(a, b, shapes, path)


def _mismatch(a: Tree, b: Tree, shapes: bool, path: str) -> str | None:
    ka, kb = _kind(a), _kind(b)
    named = _is_namedtuple(a) or _is_namedtuple(b)
    if ka != kb or (named and type(a) is not type(b)) or (ka in ("tuple", "list") and len(a) != len(b)):
        return E.at_path(path, E.describe(a), E.describe(b))
    if ka == "leaf":
        if shapes and _backend.shape(a) != _backend.shape(b):
            return E.at_path(path, f"shape {_backend.shape(a)}", f"shape {_backend.shape(b)}")
        return None
    if ka == "dict" and list(a.keys()) != list(b.keys()):
        return E.at_path(path, f"keys {list(a)}", f"keys {list(b)}")
    for (seg, ca), (_, cb) in zip(_items(a), _items(b)):
        found = _mismatch(ca, cb, shapes, path + seg)
        if found:
            return found
    return None


def check_structure(expected: Tree, got: Tree, *, what: str = "tree", shapes: bool = False) -> None:
    """Raise :class:`StructureError` naming ``what`` and the path of the first mismatch.

    >>> check_structure((0.0, 0.0), (1.0,), what="params of f >> g")
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: params of f >> g: at <root>: expected tuple of 2, got tuple of 1
    """
    _args.name("check_structure", "what", what)
    found = structure_mismatch(expected, got, shapes=_args.flag("check_structure", "shapes", shapes))
    if found:
        raise E.tree_mismatch(what, found)


def tree_zip_map(f: Callable[..., Any], tree: Tree, *others: Tree) -> Tree:
    """Apply ``f`` leaf-wise to ``tree`` and ``others`` (which must share its structure).

    >>> tree_zip_map(lambda x, y: x * y, (2.0, [3.0]), (10.0, [100.0]))
    (20.0, [300.0])
    """
    _args.function("tree_zip_map", "f", f)
    for other in others:
        check_structure(tree, other, what="tree_zip_map")
    return _zip_map(f, tree, others)


def _zip_map(f: Callable[..., Any], tree: Tree, others: tuple[Tree, ...]) -> Tree:
    kind = _kind(tree)
    if kind == "leaf":
        return f(tree, *others)
    if kind == "none":
        return None
    columns = zip(*([c for _, c in _items(t)] for t in (tree, *others)))
    return _rebuild(tree, [_zip_map(f, col[0], col[1:]) for col in columns])


def tree_map(f: Callable[[Any], Any], tree: Tree) -> Tree:
    """Apply ``f`` to every leaf, keeping the structure (Haskell: ``fmap``).

    >>> tree_map(lambda x: x + 1, ((), [1, 2]))
    ((), [2, 3])
    """
    return _zip_map(_args.function("tree_map", "f", f), tree, ())


def tree_leaves(tree: Tree) -> list[Any]:
    """The leaves in depth-first order (``()`` and ``None`` have none).

    >>> tree_leaves(((1, 2), [3], (), {"a": 4}))
    [1, 2, 3, 4]
    """
    return [leaf for _, leaf in tree_paths(tree)]


def tree_paths(tree: Tree, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` pairs in depth-first order; a path is a string such as ``[1][0].weight``.

    >>> list(tree_paths((1.0, [2.0])))
    [('[0]', 1.0), ('[1][0]', 2.0)]
    """
    if type(path) is not str:
        _args.name("tree_paths", "path", path)
    return _paths(tree, path)


def _paths(tree: Tree, path: str) -> Iterator[tuple[str, Any]]:
    if _kind(tree) == "leaf":
        yield path, tree
    else:
        for seg, child in _items(tree):
            yield from _paths(child, path + seg)


def tree_add(a: Tree, b: Tree) -> Tree:
    """Leaf-wise sum (the vector space of deltas).

    Both trees must have one structure and, leaf for leaf, one shape (arrays of
    different shapes would broadcast into a wrong answer), with numbers at the leaves.

    >>> tree_add((1.0, [np.array([2.0, 0.5])]), (1.0, [np.array([3.0, 0.5])]))
    (2.0, [array([5., 1.])])
    >>> tree_add(np.ones(2), np.ones(3))
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: tree_add: ... at <root>: expected shape (2,), got shape (3,)
    """
    return numeric_sum("tree_add", [a, b])


def _is_number_leaf(x: Any, kinds: str = "iufc") -> bool:
    """A leaf of the vector space of deltas: a number or a numeric array (bools do not add; ``kinds="biufc"``
    takes them too, for their zero is False)."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind in kinds
    if isinstance(x, (bool, np.bool_)):
        return "b" in kinds
    if isinstance(x, (int, float, complex, np.number)):
        return True
    return _backend.is_array(x) and _backend.dtype_kind(x.dtype) in kinds


def _check_numbers(fn: str, what: str, tree: Tree, kinds: str = "iufc") -> None:
    for path, leaf in _paths(tree, ""):
        if not _is_number_leaf(leaf, kinds):
            raise E.must_be(fn, f"{what} at {E.path_str(path)}", "a number or a numeric array", E.describe(leaf))


def numeric_sum(fn: str, trees: list[Tree], what: str = "tree") -> Tree:
    """The leaf-wise sum of ``trees`` (one structure and shapes, numeric leaves), or an error naming ``fn``.

    >>> numeric_sum("branch(2)", [np.ones(2), np.ones(3)], "delta")
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: branch(2): delta 1 does not have the structure and shapes of delta 0: ...shape (3,)
    """
    first = trees[0]
    if len(trees) == 2 and type(first) is np.ndarray is type(trees[1]) and first.shape == trees[1].shape:
        if first.dtype.kind in "iufc" and trees[1].dtype.kind in "iufc":  # two numpy arrays: what the walks say
            return first + trees[1]
    for i, tree in enumerate(trees[1:], start=1):
        found = _mismatch(first, tree, True, "")
        if found:
            raise E.tree_mismatch(f"{fn}: {what} {i} does not have the structure and shapes of {what} 0", found)
    for i, tree in enumerate(trees):
        _check_numbers(fn, f"{what} {i}", tree)
    if len(trees) == 2:  # the common case (tree_add, a residual block): one call per leaf
        return _zip_map(operator.add, first, (trees[1],))
    return _zip_map(lambda *xs: sum(xs[1:], start=xs[0]), first, tuple(trees[1:]))


def tree_sum(trees: list[Tree]) -> Tree:
    """Leaf-wise sum of a non-empty list of trees of one structure (``accumulate``).

    >>> tree_sum([(1.0, 2.0), (10.0, 20.0), (100.0, 200.0)])
    (111.0, 222.0)
    """
    if isinstance(trees, (list, tuple)) and not trees:
        raise E.StructureError("tree_sum: cannot sum an empty list of trees")
    return numeric_sum("tree_sum", _args.sequence("tree_sum", "trees", trees, "a non-empty list of trees"))


def tree_scale(c: float, tree: Tree) -> Tree:
    """Multiply every leaf by the number ``c`` (a numpy scalar as the Python number it holds: leaves keep their dtype).

    >>> tree_scale(2.0, (1.0, [3.0]))
    (2.0, [6.0])
    """
    if not _is_number_leaf(c) or isinstance(c, np.ndarray):
        raise E.must_be("tree_scale", "c", "a number", E.describe(c))
    if isinstance(c, np.generic):  # as a Python number: it keeps each leaf's dtype (np.float64 would up-cast float32)
        c = c.item()
    _check_numbers("tree_scale", "tree", tree)
    return _zip_map(lambda x: x * c, tree, ())


def tree_zeros_like(tree: Tree) -> Tree:
    """A tree of zeros of the same structure, shapes and dtypes.

    >>> tree_zeros_like((1.5, [np.ones(2)]))
    (0.0, [array([0., 0.])])
    """
    _check_numbers("tree_zeros_like", "the leaf", tree, "biufc")
    return _zip_map(_backend.zeros_like, tree, ())


def tree_allclose(a: Tree, b: Tree, *, rtol: float = 1e-7, atol: float = 0.0) -> bool:
    """True when the trees share a structure and all leaves are close as in ``np.allclose`` (NaN: never).

    >>> tree_allclose((1.0, [2.0]), (1.0, [2.0 + 1e-12]))
    True
    """
    _args.real("tree_allclose", "rtol", rtol, low=0.0)
    _args.real("tree_allclose", "atol", atol, low=0.0)
    return tree_first_difference(a, b, rtol=rtol, atol=atol) is None


def tree_first_difference(a: Tree, b: Tree, *, rtol: float = 1e-7, atol: float = 0.0) -> tuple[str, Any, Any] | None:
    """``(path, left, right)`` of the first leaf (or node) where the trees differ.

    Where the structures differ, ``path`` is the :func:`structure_mismatch`
    message and ``left``, ``right`` are the whole trees.

    >>> tree_first_difference((1.0, [2.0]), (1.0, [2.5]))
    ('[1][0]', 2.0, 2.5)
    """
    _args.real("tree_first_difference", "rtol", rtol, low=0.0)
    _args.real("tree_first_difference", "atol", atol, low=0.0)
    found = _mismatch(a, b, True, "")
    if found:
        return (found, a, b)
    for (path, x), (_, y) in zip(_paths(a, ""), _paths(b, "")):
        if not _leaves_close(x, y, rtol, atol):
            return path, x, y
    return None


def _leaves_close(x: Any, y: Any, rtol: float, atol: float) -> bool:
    """Numbers within the tolerances (NaN is close to nothing); any other leaves equal."""
    if _is_number_leaf(x) and _is_number_leaf(y):  # compared on the host, whatever their library
        x, y = _backend.host(x), _backend.host(y)
        return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=False))
    if x is y:
        return True
    try:
        return bool(np.array_equal(np.asarray(_backend.host(x)), np.asarray(_backend.host(y))))
    except (TypeError, ValueError):  # leaves that do not compare: different
        return False


def tree_first_nonfinite(tree: Tree) -> str | None:
    """The path of the first leaf holding NaN or infinity, or None.

    >>> tree_first_nonfinite((1.0, [np.array([0.0, np.nan])]))
    '[1][0]'
    """
    for path, x in tree_paths(tree):
        if not _backend.is_concrete(x):  # traced by JAX: no values to look at
            continue
        arr = np.asarray(_backend.host(x))
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            return E.path_str(path)
    return None


def tree_shapes(tree: Tree) -> Tree:
    """Each leaf replaced by its short description: ``f64[784,256]``, ``float 0.5``.

    >>> tree_shapes((np.zeros((2, 3), np.float32), [np.arange(4)]))
    ('f32[2,3]', ['i64[4]'])
    """
    return tree_map(E.describe, tree)
