"""A lens as a JSON description and back: what a model file stores instead of code (docs/model-files.md tables
the format). :func:`describe` writes it for lenses of registered constructors and public lens values, refusing any
other lens by name; :func:`rebuild` calls the registered constructors again, by name only (an unknown name is
refused, never imported).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

import prelens.core
import prelens.nn
import prelens.tambara
from prelens import errors as E
from prelens.core._lens import PreLens
from prelens.core._registry import (
    BUDGET,
    MAX_DEPTH,
    MAX_NODES,
    OverBudget,
    call_of,
    first_found,
    public_name,
    registered,
)
from prelens.tambara._trilens import TriLens

_DTYPES = frozenset(
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128".split()
)

# ---------------------------------------------------------------- public values


#: The packages whose public lens values (in ``__all__``) a model file names; a package above io
#: adds itself with :func:`register_lens_values` (``prelens.faithful`` does).
_VALUE_MODULES: list[ModuleType] = [prelens.core, prelens.tambara, prelens.nn]


def register_lens_values(module: ModuleType) -> None:
    """Let model files name the public lens values of ``module`` (by ``module.__name__`` and the name)."""
    if module not in _VALUE_MODULES:
        _VALUE_MODULES.append(module)
        _value_names.cache_clear()


@functools.cache
def _value_names() -> dict[int, tuple[str, Any]]:
    """``id -> (name, lens)`` of the public lens values of the modules in ``_VALUE_MODULES``."""
    out: dict[int, tuple[str, Any]] = {}
    for module in _VALUE_MODULES:
        for n in module.__all__:
            value = getattr(module, n)
            if isinstance(value, (PreLens, TriLens)):
                out.setdefault(id(value), (public_name(module.__name__, n), value))
    return out


# ---------------------------------------------------------------- describe


class DescriptionError(Exception):
    """What :func:`describe` cannot describe, or what is malformed for :func:`rebuild`, and where."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(where, what)
        self.where, self.what = where, what


def describe(lens: Any) -> dict[str, Any]:
    """The JSON description of ``lens``; :class:`DescriptionError` names the first part that has none.

    >>> from prelens.nn import mlp
    >>> describe(mlp(4, [8, 3], "relu"))
    {'call': 'prelens.nn.mlp', 'args': [4, [8, 3], 'relu']}
    """
    return _lens_node(lens, "lens", 0)


def _lens_node(lens: Any, where: str, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise DescriptionError(where, f"lenses nested more than {MAX_DEPTH} deep (join long sequences with chain)")
    found = _value_names().get(id(lens))
    if found is not None and found[1] is lens:  # a public lens value (``prelens.nn.relu``), by name
        return {"value": found[0]}
    call = call_of(lens)
    if call is None:
        raise DescriptionError(
            where, f"the lens {E.short_name(repr(lens), 80)} was not made by a registered constructor"
        )
    node: dict[str, Any] = {"call": call.name}
    if call.args:
        node["args"] = [_value(a, f"{where}.args[{i}]", depth + 1) for i, a in enumerate(call.args)]
    if call.kwargs:
        node["kwargs"] = {k: _value(v, f"{where}.kwargs.{k}", depth + 1) for k, v in call.kwargs.items()}
    return node


def _value(x: Any, where: str, depth: int) -> Any:
    if isinstance(x, (PreLens, TriLens)):
        return _lens_node(x, where, depth)
    if depth > MAX_DEPTH:
        raise DescriptionError(where, f"arguments nested more than {MAX_DEPTH} deep")
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            raise DescriptionError(where, f"the number {float(x)} (JSON holds finite numbers only)")
        return float(x)
    if type(x) is list:
        return [_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(x)]
    if type(x) is tuple:
        return {"tuple": [_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(x)]}
    if type(x) is dict:
        if not all(isinstance(k, str) for k in x):
            raise DescriptionError(where, "a dict whose keys are not all strings")
        return {"dict": {k: _value(v, f"{where}[{k!r}]", depth + 1) for k, v in x.items()}}
    if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, (np.generic, float, int, bool, complex))):
        dt = np.dtype(x)
        if dt.name not in _DTYPES:
            raise DescriptionError(where, f"the dtype {dt} (numbers and booleans only)")
        return {"dtype": dt.name}
    if isinstance(x, np.ndarray):
        if x.dtype.name not in _DTYPES or x.dtype.kind == "c":
            raise DescriptionError(where, f"an array of dtype {x.dtype} (real numbers and booleans only)")
        if x.dtype.kind == "f" and not np.isfinite(x).all():
            raise DescriptionError(where, "an array with NaN or infinite entries (JSON holds finite numbers only)")
        return {"array": x.ravel().tolist(), "dtype": x.dtype.name, "shape": list(x.shape)}
    kind = "a function" if callable(x) else E.describe(x)
    raise DescriptionError(where, f"an argument that is {kind} (a model file holds data, not code)")


# ---------------------------------------------------------------- rebuild


_VALUE_TAGS = ("array", "tuple", "dict", "dtype", "call", "value")


def rebuild(node: Any) -> Any:
    """The lens a description describes, built by the registered constructors (see :func:`describe`).

    Raises :class:`DescriptionError` naming the place in the description. Run it inside :func:`budget` when the
    description comes from a file.

    >>> from prelens.nn import mlp
    >>> rebuild(describe(mlp(4, [8, 3]) >> mlp(3, [2])))
    mlp(4→8→3, tanh) >> mlp(3→2, tanh)
    """
    return _rebuild_lens(node, "lens", 0, [0])


def _count(counter: list[int], where: str) -> None:
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise DescriptionError(where, f"more than {MAX_NODES} values in the description")


def _rebuild_lens(node: Any, where: str, depth: int, counter: list[int]) -> Any:
    _count(counter, where)
    if depth > MAX_DEPTH:
        raise DescriptionError(where, f"lenses nested more than {MAX_DEPTH} deep")
    if not isinstance(node, dict):
        raise DescriptionError(where, f"a lens must be described by an object, got {_json_kind(node)}")
    if "value" in node:
        if set(node) != {"value"} or not isinstance(node["value"], str):
            raise DescriptionError(where, 'a lens value must be {"value": "<public name>"}')
        value = first_found(dict(_value_names().values()), node["value"])  # or its 0.3 name
        if value is None:
            unknown = E.short_name(node["value"], 80)
            raise DescriptionError(where, f"unknown lens value {unknown!r} (not a public lens of prelens)")
        return value
    if "call" not in node or not set(node) <= {"call", "args", "kwargs"} or not isinstance(node["call"], str):
        layout = '{"call": "<constructor>", "args": [...], "kwargs": {...}} or {"value": ...}'
        raise DescriptionError(where, f"a lens must be {layout}")
    name = node["call"]
    fn = registered(name)
    if fn is None:
        raise DescriptionError(
            where,
            f"unknown constructor {E.short_name(name, 80)!r}: not one of prelens's, and no function was "
            "registered under that name in this process (import the module that registers it first; "
            "see prelens.io.register_constructor)",
        )
    raw_args, raw_kwargs = node.get("args", []), node.get("kwargs", {})
    if not isinstance(raw_args, list) or not isinstance(raw_kwargs, dict):
        raise DescriptionError(where, "args must be a list and kwargs an object")
    b = BUDGET.get()  # while loading, prelens's own ints (sizes and counts) are bounded by the file's parameters
    limit = b.size if b is not None and name.startswith("prelens.") else None
    args = [_rebuild_value(a, f"{where}.args[{i}]", depth + 1, counter, limit) for i, a in enumerate(raw_args)]
    kwargs = {}
    for k, v in raw_kwargs.items():
        if not k.isidentifier():
            raise DescriptionError(where, f"keyword {E.short_name(k, 40)!r} is not a Python identifier")
        kwargs[k] = _rebuild_value(v, f"{where}.kwargs.{k}", depth + 1, counter, limit)
    try:
        out = fn(*args, **kwargs)
    except OverBudget:
        raise
    except RecursionError:
        raise DescriptionError(where, f"{name} nested too deeply") from None
    except Exception as err:  # an untrusted description may give a constructor any nonsense
        kind = "" if isinstance(err, E.PrelensError) else f"{type(err).__name__}: "
        raise DescriptionError(where, f"{name} refused its arguments: {kind}{E.short_name(str(err), 300)}") from None
    if not isinstance(out, (PreLens, TriLens)):
        raise DescriptionError(where, f"{name} returned {E.describe(out)}, not a lens")
    return out


def _rebuild_value(x: Any, where: str, depth: int, counter: list[int], limit: int | None) -> Any:
    _count(counter, where)
    if depth > MAX_DEPTH:
        raise DescriptionError(where, f"arguments nested more than {MAX_DEPTH} deep")
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        if limit is not None and abs(x) > limit:
            raise DescriptionError(
                where, f"the size {x} is more than this file's parameters justify ({limit:,} at most)"
            )
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise DescriptionError(where, "a non-finite number")
        return x
    if isinstance(x, list):
        return [_rebuild_value(v, f"{where}[{i}]", depth + 1, counter, limit) for i, v in enumerate(x)]
    if not isinstance(x, dict):
        raise DescriptionError(where, f"an argument cannot be {_json_kind(x)}")
    tag = next((t for t in _VALUE_TAGS if t in x), None)
    if tag is None:
        raise DescriptionError(where, f"an object argument needs one of the tags {list(_VALUE_TAGS)}")
    if tag in ("call", "value"):
        return _rebuild_lens(x, where, depth, counter)
    if tag == "array":
        return _rebuild_array(x, where, counter)
    if set(x) != {tag}:
        raise DescriptionError(where, f"a {tag} argument has one key, got {sorted(x)}")
    body = x[tag]
    if tag == "tuple":
        if not isinstance(body, list):
            raise DescriptionError(where, "a tuple must hold a list")
        return tuple(_rebuild_value(v, f"{where}[{i}]", depth + 1, counter, limit) for i, v in enumerate(body))
    if tag == "dict":
        if not isinstance(body, dict):
            raise DescriptionError(where, "a dict must hold an object")
        return {k: _rebuild_value(v, f"{where}[{k!r}]", depth + 1, counter, limit) for k, v in body.items()}
    if not isinstance(body, str) or body not in _DTYPES:
        raise DescriptionError(where, f"unknown dtype {E.short_name(str(body), 40)!r}")
    return np.dtype(body)


def _rebuild_array(x: dict[str, Any], where: str, counter: list[int]) -> Any:
    if set(x) != {"array", "dtype", "shape"}:
        raise DescriptionError(where, 'an array is {"array": [...], "dtype": ..., "shape": [...]}')
    data, dtype, shape = x["array"], x["dtype"], x["shape"]
    if not isinstance(dtype, str) or dtype not in _DTYPES or dtype.startswith("complex"):
        raise DescriptionError(where, f"unknown array dtype {E.short_name(str(dtype), 40)!r}")
    if not isinstance(shape, list) or len(shape) > 32 or not all(type(d) is int and d >= 0 for d in shape):
        raise DescriptionError(where, "an array's shape must be a short list of sizes")
    if not isinstance(data, list) or math.prod(shape) != len(data):
        raise DescriptionError(where, f"an array of shape {shape} needs {math.prod(shape)} numbers")
    counter[0] += len(data)
    _count(counter, where)
    kind = np.dtype(dtype).kind
    allowed = (bool,) if kind == "b" else (int,) if kind in "iu" else (int, float)
    if not all(type(v) in allowed for v in data) or (kind == "f" and not all(math.isfinite(v) for v in data)):
        raise DescriptionError(where, f"an array of dtype {dtype} holds other values")
    try:
        return np.array(data, dtype=dtype).reshape(shape)
    except (OverflowError, ValueError):
        raise DescriptionError(where, f"an array's values do not fit {dtype}") from None


_JSON_KINDS = {dict: "an object", list: "a list", str: "a string", type(None): "null"}


def _json_kind(x: Any) -> str:
    return _JSON_KINDS.get(type(x)) or f"the {type(x).__name__} {x!r}"[:60]  # JSON gives these exact types


# ---------------------------------------------------------------- bounded init


class BudgetedGenerator(np.random.Generator):
    """A generator that refuses to draw more numbers than the loading budget allows."""


def _budgeted(method: str, size_at: int) -> Callable[..., Any]:
    """``Generator.<method>``, charging the loading budget for its ``size`` (positional argument ``size_at``)."""
    draw = getattr(np.random.Generator, method)

    def budgeted(self: np.random.Generator, *args: Any, **kwargs: Any) -> Any:
        b = BUDGET.get()
        if b is not None:
            size = kwargs.get("size", args[size_at] if len(args) > size_at else None)
            b.draws -= 1 if size is None else math.prod(np.atleast_1d(np.asarray(size, dtype=np.int64)).tolist())
            if b.draws < 0:
                raise OverBudget("random numbers drawn by init")
        return draw(self, *args, **kwargs)

    return budgeted


for _method, _size_at in (("standard_normal", 0), ("random", 0), ("normal", 2), ("uniform", 2), ("integers", 2)):
    setattr(BudgetedGenerator, _method, _budgeted(_method, _size_at))
