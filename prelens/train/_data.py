"""What fit does to its data before training: rows checked, floats cast, batches taken, dropout keyed.

The data may be arrays of any array-API library (numpy, PyTorch, JAX, ...): checks, casts and batches stay in the
data's library and on its device (a batch of another library's arrays is taken with the standard's ``take``).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import dtype_kind, dtype_name, has_dtype, is_array, namespace, to_numpy
from prelens.core._lens import AnyLens, PreLens
from prelens.core._tree import tree_leaves, tree_map, tree_paths
from prelens.nn._dropout import DropoutKey, with_dropout, without_dropout
from prelens.train._evaluate import all_finite, row_slice

Tree = Any

__all__ = ["cast", "has_dropout", "keyed", "model_dtype", "rows", "take"]


def model_dtype(params: Tree) -> np.dtype[Any] | None:
    """The one float dtype of the parameters' arrays as a numpy dtype (``torch.float32`` is ``float32``); ``None``
    if they have none, several, or one numpy lacks (``bfloat16``)."""
    kinds: set[np.dtype[Any] | None] = set()
    for x in tree_leaves(params):
        if is_array(x) and dtype_kind(x.dtype) == "f":
            try:
                kinds.add(np.dtype(dtype_name(x.dtype)))
            except TypeError:  # a dtype numpy lacks
                kinds.add(None)
    return kinds.pop() if len(kinds) == 1 else None


def _first_bad_row(a: Any, n: int) -> int:
    """The first of the ``n`` rows of ``a`` holding a NaN or an infinity (looked for on the host)."""
    host = a if isinstance(a, np.ndarray) else to_numpy(a)
    bad_rows = ~np.isfinite(host.reshape(n, -1)).all(axis=1)
    return int(np.argmax(bad_rows))


def cast(what: str, data: tuple[Any, Any], dtype: np.dtype[Any] | None) -> tuple[Any, Any]:
    """``data`` (fit's ``what``: ``"data"`` or ``"validation"``) with its float arrays of another float dtype cast to
    ``dtype`` (once); overflow refused."""
    if dtype is None:
        return data

    def leaf(a: Any) -> Any:
        if isinstance(a, np.ndarray):
            if a.dtype.kind == "f" and a.dtype != dtype:
                with np.errstate(over="ignore"):
                    return a.astype(dtype)
        elif is_array(a) and dtype_kind(a.dtype) == "f" and not has_dtype(a, dtype):
            xp = namespace(a)
            return xp.astype(a, getattr(xp, dtype.name))
        return a

    out = tree_map(leaf, data)
    for (path, a), before in zip(tree_paths(out), tree_leaves(data)):
        if a is not before and not all_finite(a):  # only a cast leaf: rows() found the data finite
            row = _first_bad_row(a, a.shape[0])
            raise E.NonFiniteError(
                f"fit: {what}{E.path_str(path)} overflows when cast to the model's {dtype}, first in row {row}; "
                "scale the data first"
            )
    return typing.cast(tuple[Any, Any], out)


def take(tree: Any, order: np.ndarray | None, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of every array in ``tree`` (through the permutation ``order``, a numpy array)."""
    if order is None:
        return tree_map(lambda a: a[lo:hi] if isinstance(a, np.ndarray) else row_slice(a, lo, hi), tree)
    idx = order[lo:hi]
    moved: dict[tuple[int, str], Any] = {}
    return tree_map(lambda a: a[idx] if isinstance(a, np.ndarray) else _take_rows(a, idx, moved), tree)


def _take_rows(a: Any, idx: np.ndarray, moved: dict[tuple[int, str], Any]) -> Any:
    """``xp.take(a, idx, axis=0)``, ``idx`` made an array of ``a``'s library once per library and device (for JAX
    without a device: JAX places it where ``a`` is, sharded or not)."""
    import array_api_compat as c

    xp = namespace(a)
    where = None if c.is_jax_array(a) else c.device(a)
    key = (id(xp), repr(where))
    if key not in moved:
        moved[key] = xp.asarray(idx) if where is None else xp.asarray(idx, device=where)
    return xp.take(a, moved[key], axis=0)


def rows(what: str, xs: Any, ys: Any) -> int:
    """The rows of fit's ``what`` (``"data"`` or ``"validation"``): one length, at least one, every float finite."""
    for leaf in tree_leaves((xs, ys)):
        if not is_array(leaf) or leaf.ndim == 0:
            raise E.bad_argument(
                "fit", what, E.describe_tree((xs, ys)), "(xs, targets) of arrays with a leading batch axis"
            )
    sides = [list(dict.fromkeys(int(a.shape[0]) for a in tree_leaves(side))) for side in (xs, ys)]
    lengths = set(sides[0] + sides[1])
    if len(lengths) != 1:
        got = ", ".join(f"{name} of {' and '.join(map(str, n))} rows" for name, n in zip(("xs", "targets"), sides) if n)
        raise E.ArgumentError(f"fit: {what} must be (xs, targets) of one length, got {got}")
    (n,) = lengths
    if n == 0:
        raise E.bad_argument("fit", what, "0 rows", "at least one row")
    for path, leaf in tree_paths((xs, ys)):
        if dtype_kind(leaf.dtype) in "fc" and not all_finite(leaf):
            raise E.NonFiniteError(
                f"fit: {what}{E.path_str(path)} holds NaN or infinity, first in row {_first_bad_row(leaf, n)}; "
                "clean or drop such rows first"
            )
    return n


def has_dropout(tree: Tree) -> bool:
    """Whether the parameters hold a :class:`DropoutKey` (a dropout site)."""
    if type(tree) is DropoutKey:
        return True
    children = tree.values() if isinstance(tree, dict) else tree if isinstance(tree, (list, tuple)) else ()
    return any(has_dropout(v) for v in children)


def keyed(model: AnyLens, key_params: Callable[[Tree, Any], Tree] = with_dropout) -> AnyLens:
    """``model`` taking ``(key, xs)``: runs on ``key_params(params, key)`` (``with_dropout``, or the compiled
    step's ``with_jax_keys``); its gradient via ``without_dropout``. The key is data: no delta."""
    m_fwd, m_bwd = model.fwd, model.bwd

    def fwd(p: Tree, kx: tuple[Any, Any]) -> tuple[Any, Any]:
        key, x = kx
        return m_fwd(key_params(p, key), x)

    def bwd(m: Any, da: Any) -> tuple[Tree, tuple[None, Any]]:
        dp, dx = m_bwd(m, da)
        return without_dropout(dp), (None, dx)

    return PreLens(fwd, bwd, f"{model!r} (dropout keyed)", model.init_fn)
