"""Hypothesis strategies for bad inputs: wrong shapes, ranks, dtypes, values, types and tree structures.

``mutate(data, x, what)`` draws one corruption of the good value ``x`` (an
array, a number, or a tree of them) and returns ``(bad, description)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

#: Things that are not arrays at all.
NOT_ARRAYS: list[Any] = [None, "x", "", {}, {"a": 1}, [], (), 3, -1, 2.5, True, 1j, object(), b"\x00"]

#: Dtypes to cast a good array to.
DTYPES = ["int64", "int32", "uint8", "bool", "complex128", "object", "str", "float16", "float32", "float64"]

#: Values to plant in a float array (non-finite) or an integer array (out of range).
FLOAT_PLANTS = [np.nan, np.inf, -np.inf]
INT_PLANTS = [-1, 10**6, -(10**9)]


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _nodes(x: Any, path: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    """Paths (tuples of child indices) of every node of a tree of tuples and lists, root first."""
    out = [path]
    if isinstance(x, (tuple, list)):
        for i, c in enumerate(x):
            out.extend(_nodes(c, (*path, i)))
    return out


def _get(x: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        x = x[i]
    return x


def _put(x: Any, path: tuple[int, ...], value: Any) -> Any:
    if not path:
        return value
    i, rest = path[0], path[1:]
    children = list(x)
    children[i] = _put(children[i], rest, value)
    if _is_namedtuple(x):
        return type(x)(*children)
    return tuple(children) if isinstance(x, tuple) else children


def bad_array(data: st.DataObject, x: np.ndarray) -> tuple[Any, str]:
    """One corruption of the array ``x``."""
    kind = data.draw(st.sampled_from(["dtype", "shape", "value", "type"]), label="array mutation")
    if kind == "dtype":
        dt = data.draw(st.sampled_from([d for d in DTYPES if np.dtype(d) != x.dtype]), label="dtype")
        if dt == "str":
            return x.astype(str), "strings"
        with np.errstate(all="ignore"):
            return x.astype(dt), f"dtype {dt}"
    if kind == "shape":
        options = ["scalar", "flat", "extra_axis", "swap", "grow_last", "empty_lead"]
        if x.ndim >= 1 and x.shape[-1] > 1:
            options.append("shrink_last")
        if x.ndim >= 1:
            options.append("drop_axis")
        how = data.draw(st.sampled_from(options), label="shape mutation")
        if how == "scalar":
            return (x.reshape(-1)[:1].reshape(()) if x.size else np.zeros((), x.dtype)), "0-d"
        if how == "flat":
            return x.reshape(-1), "flattened"
        if how == "extra_axis":
            return x[None], "extra leading axis"
        if how == "swap":
            return (np.swapaxes(x, -1, -2).copy() if x.ndim >= 2 else x.reshape(-1, 1)), "axes swapped"
        if how == "grow_last":
            pad = x[..., :1] if x.ndim and x.shape[-1] else np.zeros((*x.shape[:-1], 1) if x.ndim else (1,), x.dtype)
            return (np.concatenate([x, pad], axis=-1) if x.ndim else np.stack([x, x])), "last axis + 1"
        if how == "shrink_last":
            return x[..., :-1].copy(), "last axis - 1"
        if how == "drop_axis":
            return (x[0].copy() if len(x) else np.zeros(x.shape[1:], x.dtype)), "leading axis dropped"
        return x[:0].copy() if x.ndim else x.reshape(1)[:0], "empty leading axis"
    if kind == "value":
        y = x.copy()
        if y.size == 0:
            return y, "unchanged (empty)"
        i = data.draw(st.integers(0, y.size - 1), label="index")
        if y.dtype.kind in "fc":
            v = data.draw(st.sampled_from(FLOAT_PLANTS), label="plant")
        elif y.dtype.kind in "iu":
            v = data.draw(st.sampled_from(INT_PLANTS), label="plant")
            if y.dtype.kind == "u" and v < 0:
                v = np.iinfo(y.dtype).max
            v = np.array(v).astype(y.dtype) if np.can_cast(np.min_scalar_type(v), y.dtype) else y.flat[i]
        else:
            return y, "unchanged"
        y.flat[i] = v
        return y, f"{v} planted"
    replacement = data.draw(
        st.sampled_from([*NOT_ARRAYS, "list", "tuple", "nested_list", "npscalar"]), label="replacement"
    )
    if replacement == "list":
        return list(x) if x.ndim else [x], "a list of its rows"
    if replacement == "tuple":
        return (x,), "a 1-tuple holding it"
    if replacement == "nested_list":
        return x.tolist(), "nested lists"
    if replacement == "npscalar":
        return x.dtype.type(0) if x.dtype.kind != "O" else 0, "a numpy scalar"
    return replacement, f"replaced by {replacement!r}"


def bad_node(data: st.DataObject, x: Any) -> tuple[Any, str]:
    """One corruption of a tuple/list/named tuple node: its structure."""
    options = ["swap_kind", "none", "dict", "child", "nest"]
    if len(x):
        options += ["drop", "extra"]
    if _is_namedtuple(x):
        options.append("plain")
    how = data.draw(st.sampled_from(options), label="node mutation")
    if how == "swap_kind":
        return (list(x) if isinstance(x, tuple) else tuple(x)), "list/tuple swapped"
    if how == "none":
        return None, "node replaced by None"
    if how == "dict":
        return {str(i): c for i, c in enumerate(x)}, "node replaced by a dict"
    if how == "child":
        return (x[0] if len(x) else ()), "node replaced by its first child"
    if how == "nest":
        return (x,), "node wrapped in a 1-tuple"
    if how == "drop":
        rest = list(x)[:-1]
        return (tuple(rest) if isinstance(x, tuple) else rest), "last child missing"
    if how == "extra":
        more = [*x, x[0]]
        return (tuple(more) if isinstance(x, tuple) else more), "extra child"
    return tuple(x), "named tuple as a plain tuple"


def mutate(data: st.DataObject, x: Any, what: str) -> tuple[Any, str]:
    """One corruption somewhere in the tree ``x``; the description names ``what`` and the path."""
    path = data.draw(st.sampled_from(_nodes(x)), label=f"{what} path")
    node = _get(x, path)
    if isinstance(node, np.ndarray):
        bad, how = bad_array(data, node)
    elif isinstance(node, (tuple, list)):
        bad, how = bad_node(data, node)
    elif isinstance(node, (int, float, np.number)):
        bad, how = bad_array(data, np.asarray(node))
        if isinstance(bad, np.ndarray) and bad.shape == () and data.draw(st.booleans(), label="as scalar"):
            bad = bad[()]
    else:
        bad = data.draw(st.sampled_from(NOT_ARRAYS), label="replacement")
        how = f"replaced by {bad!r}"
    where = "".join(f"[{i}]" for i in path) or "<root>"
    return _put(x, path, bad), f"{what}{where}: {how}"
