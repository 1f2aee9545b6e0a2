"""What fit does to its data before training: rows checked, floats cast, batches taken, dropout keyed."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _errors as E
from .._lens import AnyLens, PreLens
from .._tree import tree_leaves, tree_map, tree_paths
from ..nn._dropout import DropoutKey, with_dropout, without_dropout

Tree = Any

__all__ = ["cast", "has_dropout", "keyed", "model_dtype", "rows", "take"]


def model_dtype(params: Tree) -> np.dtype[Any] | None:
    """The one float dtype of the parameters' arrays (``None`` if they have none, or several)."""
    kinds = {x.dtype for x in tree_leaves(params) if isinstance(x, np.ndarray) and x.dtype.kind == "f"}
    return kinds.pop() if len(kinds) == 1 else None


def cast(fn: str, data: tuple[Any, Any], dtype: np.dtype[Any] | None) -> tuple[Any, Any]:
    """``data`` with its float arrays of another float dtype cast to ``dtype`` (once); overflow refused."""
    if dtype is None:
        return data
    changed = False

    def leaf(a: Any) -> Any:
        nonlocal changed
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.dtype != dtype:
            changed = True
            with np.errstate(over="ignore"):
                return a.astype(dtype)
        return a

    out = tree_map(leaf, data)
    if changed:
        for path, a in tree_paths(out):
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                bad_rows = ~np.isfinite(a.reshape(len(a), -1)).all(axis=1)
                raise E.data_cast_overflow(fn, f"data{E.path_str(path)}", int(np.argmax(bad_rows)), str(dtype))
    result: tuple[Any, Any] = out
    return result


def take(tree: Any, order: np.ndarray | None, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of every array in ``tree`` (through the permutation ``order``)."""
    if order is None:
        return tree_map(lambda a: a[lo:hi], tree)
    idx = order[lo:hi]
    return tree_map(lambda a: a[idx], tree)


def rows(fn: str, xs: Any, ys: Any) -> int:
    what = "validation" if "validation" in fn else "data"
    for leaf in tree_leaves((xs, ys)):
        if not isinstance(leaf, np.ndarray) or leaf.ndim == 0:
            raise E.bad_argument(
                "fit", what, E.describe_tree((xs, ys)), "(xs, targets) of arrays with a leading batch axis"
            )
    lengths = {len(a) for a in tree_leaves((xs, ys))}
    if len(lengths) != 1:
        raise E.bad_argument("fit", what, f"leading lengths {sorted(lengths)}", "(xs, targets) of one length")
    (n,) = lengths
    if n == 0:
        raise E.bad_argument("fit", what, "0 rows", "at least one row")
    for path, leaf in tree_paths((xs, ys)):
        if leaf.dtype.kind in "fc" and not np.isfinite(leaf).all():
            bad_rows = ~np.isfinite(leaf.reshape(n, -1)).all(axis=1)
            raise E.data_non_finite(fn, E.path_str(path), int(np.argmax(bad_rows)))
    return n


def has_dropout(tree: Tree) -> bool:
    """Whether the parameters hold a :class:`DropoutKey` (a dropout site)."""
    if type(tree) is DropoutKey:
        return True
    if isinstance(tree, dict):
        return any(has_dropout(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return any(has_dropout(v) for v in tree)
    return False


def keyed(model: AnyLens) -> AnyLens:
    """``model`` taking ``(key, xs)``: runs on ``with_dropout(params, key)``; its gradient via ``without_dropout``."""
    m_fwd, m_bwd = model.fwd, model.bwd

    def fwd(p: Tree, kx: tuple[int, Any]) -> tuple[Any, Any]:
        key, x = kx
        out: tuple[Any, Any] = m_fwd(with_dropout(p, key), x)
        return out

    def bwd(m: Any, da: Any) -> tuple[Tree, tuple[int, Any]]:
        dp, dx = m_bwd(m, da)
        return without_dropout(dp), (0, dx)

    return PreLens(fwd, bwd, f"{model!r} (dropout keyed)", model.init_fn)
