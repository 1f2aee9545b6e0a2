"""The one checker: what a lens expects, declared beside it (:class:`Expects`, trees of :class:`Arr`), enforced here.

* **Every call** of a lens built from its own passes (every lens of :mod:`prelens.nn`) runs one predicate,
  compiled once from the patterns (:func:`quick_test`: a few attribute compares per numpy array), on ``(p, s)``
  before ``fwd`` and, where declared, on the residue and the delta (:class:`Like`) before ``bwd``; only a failed
  predicate calls the diagnosis that builds the error. The trace turns every check off (:data:`TRUSTED`) when it
  reruns a model on the skeleton of a run it checked in full (:func:`exact_test`).
* **The first call** under the trace: ``bwd``'s ``(dp, ds)`` must have the structure and shapes of the ``(p, s)``
  its forward pass was given. A composite (``>>``, ``@``, ...) is checked through its parts.
* **A failing pass** (an exception from numpy, say) is diagnosed against the patterns: the error names the lens,
  what it expected and what it got, never a bare traceback.

>>> import numpy as np
>>> e = Expects(params=Arr(np.float64, 3, 2), input=Arr(np.float64, ..., 3))
>>> misfit(e.input, np.zeros((5, 4)), "input")
ShapeError('input: expected f64[...,3], got f64[5,4]')
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import dtype_kind, is_array, namespace, namespace_name, same_library, shape
from prelens.core._tree import _items


class _Token:
    """A pattern compared by identity, shown by its name."""

    def __init__(self, name: str) -> None:
        self._shown = name

    def __repr__(self) -> str:
        return self._shown


#: The pattern every value fits (a lens that declares nothing about a slot).
ANY: Any = _Token("ANY")
#: The pattern of an output delta that has the structure and shapes of the lens's output.
LIKE_OUTPUT: Any = _Token("LIKE_OUTPUT")


@dataclass(frozen=True)
class Same:
    """A name for a dtype or a run of axes that is the same wherever it stands in one lens's declaration.

    In :class:`Arr`'s dtype slot it is any dtype of ``kind`` (``"f"`` float, ``"iu"`` integer); in its first axis
    slot any number of leading axes, like ``...``. Within one lens's parameters and input (or its residue) a name
    stands for one value, and arrays sharing any name are of one library (``data=True``: a numpy array fits too,
    data the lens moves to that library itself). The input binds the names first, so a misfit is reported in the
    parameters. Names are scoped to one lens: a composite leaves such patterns to the part that declared them.

    >>> T, B = Same("T"), Same("B")
    >>> e = Expects(params=Arr(T, B), input=Arr(T, B), params_name="ground truth")
    >>> inputs_misfit(e, np.zeros((2, 3), np.float32), np.zeros((2, 3)))
    DTypeError('ground truth: expected f64[2,3] (dtype and shape of the input), got f32[2,3]')
    >>> inputs_misfit(e, np.zeros((3, 2)), np.zeros((2, 3)))
    ShapeError('ground truth: expected f64[2,3] (dtype and shape of the input), got f64[3,2]')
    """

    name: str
    kind: str = "f"
    data: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"Same: a name must be an identifier, got {self.name!r}")

    def __repr__(self) -> str:
        return self.name


class _Binds(dict[str, tuple[Any, tuple[int, ...], str]]):
    """What the :class:`Same` names of one lens's declaration stand for in one call: name -> (the array that bound
    it, its leading axes there, where)."""

    what = ""


@dataclass(frozen=True, init=False)
class Arr:
    """An array pattern: ``Arr(np.float64, ..., 784)`` is any float64 array whose last axis is 784.

    ``dtype`` is a numpy dtype (arrays of other libraries match by the dtype's name),
    ``None`` for any float dtype, or a :class:`Same`. Each axis is an ``int``, ``None``
    (any length), a ``str`` (any length, shown by that name), or ``...`` or a :class:`Same`
    (first only: any number of leading axes).

    >>> Arr(np.float32, ..., 10), Arr(None, 3), Arr(None, ...), Arr(Same("I", "iu"), Same("B"), "classes")
    (f32[...,10], float[3], a float array, int[...,classes])
    """

    dtype: np.dtype[Any] | Same | None
    axes: tuple[Any, ...]

    def __init__(self, dtype: Any, *axes: Any) -> None:
        object.__setattr__(self, "dtype", dtype if dtype is None or isinstance(dtype, Same) else np.dtype(dtype))
        object.__setattr__(self, "axes", axes)

    def __repr__(self) -> str:
        kind = _kind_str(self.dtype)
        axes = ",".join(_axis_str(a) for a in self.axes)
        return "a float array" if kind == "float" and axes == "..." else f"{kind}[{axes}]"


def _kind_str(dt: Any) -> str:
    """A pattern's dtype as messages show it: ``f64``; ``float`` or ``int`` for any of that kind."""
    if isinstance(dt, Same):
        return {"f": "float", "iu": "int"}.get(dt.kind, f"{dt.kind!r}-kind")
    return "float" if dt is None else E.dtype_name(dt)


def _axis_str(a: Any) -> str:
    return "..." if a is ... or isinstance(a, Same) else "*" if a is None else str(a)


@dataclass(frozen=True)
class Like:
    """An output delta with the library, dtype and shape that ``of(m)`` reads from the residue ``m``.

    ``of(m)`` returns ``(t, shape)``: ``da`` must be an array of ``shape`` (ints, maybe after a leading ``...``),
    of ``t``'s library and dtype when ``t`` is an array, of the dtype ``t`` when it is a numpy dtype, of any float
    dtype when it is None. A dense layer's residue ``(x, W, z)`` holds ``z``, shaped as its output:
    ``Like(lambda m: (m[2], m[2].shape))``. ``or_none``: ``da = None`` passes too (the delta of an output the next
    lens takes as data). A lens whose output is a tree declares a tree of them (tuples and lists), and an error
    names the path, ``output delta[0][1]``; a residue ``of`` cannot read is reported as one this lens did not make.

    >>> Like(lambda m: (m, m.shape))
    Like
    >>> e = Expects(delta=(Like(lambda m: (m, m.shape)), Like(lambda m: (np.dtype(np.float64), (2,)))))
    >>> backward_misfit("cell", e, np.zeros(3), (np.zeros(3), np.zeros(2, dtype=object)))
    DTypeError('cell: output delta[1]: expected f64[2], got O64[2]')
    """

    of: Callable[[Any], tuple[Any, Any]]
    or_none: bool = False

    def __repr__(self) -> str:
        return "Like"


@dataclass(frozen=True)
class Expects:
    """What a lens expects: patterns (trees of :class:`Arr`, :data:`ANY`) for its parameters, input, delta and residue.

    ``delta`` is the pattern of the output delta ``da``; :data:`LIKE_OUTPUT` asks that
    ``da`` have the structure and shapes of the lens's output (checked on the first
    backward pass of the trace), :class:`Like` that it fit what the residue says (checked
    on every call). ``residue`` is the pattern of the residue ``bwd`` reads.

    ``params_name`` and ``input_name`` are what errors call the parameters and the
    input (a loss's parameter is its ground truth, or labels):

    >>> Expects(params=Arr(np.float64, 3, 2), input=Arr(np.float64, ..., 3), delta=LIKE_OUTPUT)
    Expects(params=f64[3,2], input=f64[...,3], delta=LIKE_OUTPUT, residue=ANY)
    >>> e = Expects(params=Arr(np.int64, 2), input=Arr(None, 2, 3), params_name="labels", input_name="logits")
    >>> inputs_misfit(e, np.zeros(2), np.zeros((2, 3)))
    DTypeError('labels: expected i64[2], got f64[2]')
    """

    params: Any = ANY
    input: Any = ANY
    delta: Any = ANY
    residue: Any = ANY
    params_name: str = field(default="parameters", repr=False)
    input_name: str = field(default="input", repr=False)


NOTHING = Expects()


def misfit(pattern: Any, x: Any, what: str, binds: _Binds | None = None) -> E.PrelensError | None:
    """The error for the first place where ``x`` does not fit ``pattern`` (``what`` names ``x``), or None.

    ``binds``: what the :class:`Same` names stand for so far (bound here where they are new);
    without it (a composite's derived pattern) an array pattern with names fits anything: the part
    that declared it checks it on its own call, with its ties and its names for what it is given.
    """
    if binds is not None:
        binds.what = what
    found = _first_misfit(pattern, x, "", binds)
    if found is None:
        return None
    path, expected, got, cls = found
    where = what if not path else f"{what} at {path}"
    return cls(f"{where}: expected {expected}, got {got}")


def inputs_misfit(expects: Expects, p: Any, s: Any, ties: bool = True) -> E.PrelensError | None:
    """The error for parameters ``p`` or an input ``s`` that do not fit ``expects``, or None.

    The parameters are walked first, unless :class:`Same` ties them to the input (``ties``: a
    leaf's declaration): then the input binds the names and a misfit is the parameters'.
    """
    pn, sn = expects.params_name, expects.input_name
    if ties and _has_same((expects.params, expects.input)):
        binds = _Binds()
        found = misfit(expects.input, s, sn, binds) or misfit(expects.params, p, pn, binds)
    else:
        found = misfit(expects.params, p, pn) or misfit(expects.input, s, sn)
    return found or (_library_misfit(expects, p, s) if ties else None)


def _library_misfit(expects: Expects, p: Any, s: Any) -> E.PrelensError | None:
    """The arrays a leaf lens declares are of one library, its input's (numpy data excepted): a numpy weight met by a
    torch input handed its product to torch through numpy's ``@``, a torch weight failed inside torch."""
    first: tuple[str, Any] | None = None
    for what, pattern, x in ((expects.input_name, expects.input, s), (expects.params_name, expects.params, p)):
        for path, pat, a in _declared_arrays(pattern, x, ""):
            if type(a) is np.ndarray and any(isinstance(t, Same) and t.data for t in (pat.dtype, *pat.axes[:1])):
                continue  # numpy data the lens moves itself
            if first is None:
                first = (what, a)
            elif not same_library(a, first[1]):
                lib, where = namespace_name(namespace(first[1])), what if not path else f"{what} at {path}"
                return E.StructureError(
                    f"{where}: expected an array {pat!r} ({lib}, the library of the {first[0]}), got {_of_library(a)}"
                )
    return None


def _of_library(x: Any) -> str:
    """``x`` described with its library, numpy's too (an error about libraries names both)."""
    return E.describe(x) + " (numpy)" * (type(x) is np.ndarray)


def _declared_arrays(pattern: Any, x: Any, path: str) -> Iterator[tuple[str, Arr, Any]]:
    """``(path, pattern, array)`` for each array of ``x`` (a tree fitting ``pattern``) that an :class:`Arr` declares."""
    if isinstance(pattern, Arr):
        if _is_array(x):
            yield path, pattern, x
    elif isinstance(pattern, (tuple, list)) and isinstance(x, (tuple, list)):
        fields = getattr(pattern, "_fields", ())
        for i, (kid, v) in enumerate(zip(pattern, x)):
            yield from _declared_arrays(kid, v, path + (f".{fields[i]}" if fields else f"[{i}]"))


def _has_same(pattern: Any) -> bool:
    if isinstance(pattern, Arr):
        return isinstance(pattern.dtype, Same) or any(isinstance(a, Same) for a in pattern.axes)
    return isinstance(pattern, (tuple, list)) and any(_has_same(kid) for kid in pattern)


def _first_misfit(
    pattern: Any, x: Any, path: str, binds: _Binds | None = None
) -> tuple[str, str, str, type[E.PrelensError]] | None:
    if isinstance(pattern, Arr):
        return _array_misfit(pattern, x, path, binds)
    if not isinstance(pattern, (tuple, list)):
        return None  # ANY, LIKE_OUTPUT, a Like or a constant: nothing to compare
    if not _node_fits(pattern, x):
        return path, _node(pattern), E.describe_tree(x), E.StructureError
    fields = getattr(pattern, "_fields", ())  # inline, not _items: this walk runs on every call of other libraries
    segments = [f".{f}" for f in fields] if fields else [f"[{i}]" for i in range(len(pattern))]
    for seg, p, v in zip(segments, pattern, x):
        found = _first_misfit(p, v, path + seg, binds)
        if found is not None:
            return found
    return None


def _node_fits(pattern: tuple[Any, ...] | list[Any], x: Any) -> bool:
    """``x`` is a node of ``pattern``'s kind and length: a list for a list, the named tuple or a plain tuple for a
    named tuple (lenses accept both), a tuple or a list (not a named tuple) for a tuple, as the passes unpack it."""
    if isinstance(pattern, list):
        fits = isinstance(x, list)
    elif hasattr(pattern, "_fields"):
        fits = type(x) is type(pattern) or type(x) is tuple
    else:
        fits = isinstance(x, (tuple, list)) and not hasattr(x, "_fields")
    return fits and len(x) == len(pattern)


def _node(pattern: Any) -> str:
    if hasattr(pattern, "_fields"):
        return f"{type(pattern).__name__}({', '.join(f'{k}={v!r}' for k, v in zip(pattern._fields, pattern))})"
    return E.describe(pattern)


def _array_misfit(
    pattern: Arr, x: Any, path: str, binds: _Binds | None = None
) -> tuple[str, str, str, type[E.PrelensError]] | None:
    """Where ``x`` does not fit the array ``pattern``; each :class:`Same` name is bound at its first array, then
    compared."""
    dt, axes = pattern.dtype, pattern.axes
    tie = axes[0] if axes and isinstance(axes[0], Same) else None
    named = [s for s in (dt, tie) if isinstance(s, Same)] if tie is not None or isinstance(dt, Same) else []
    if binds is None:
        if named:
            return None  # a part's pattern in a composite's: that part checks it
        binds = _NO_NAMES
    bound = {s.name: binds[s.name] for s in named if s.name in binds} if named else {}  # its names bound so far
    if not _is_array(x):
        shown = _bound_repr(pattern, bound)
        return path, shown if shown.startswith("a ") else f"an array {shown}", E.describe(x), E.StructureError
    got = tuple(x.shape)
    lead = axes[:1] == (...,) or tie is not None
    fixed = axes[1:] if lead else axes
    k = len(got) - len(fixed)  # the leading axes' count: any (>= 0) with ``lead``, else none
    run = got[:k] if lead and k >= 0 else ()
    fits = (k >= 0 if lead else k == 0) and _axes_fit(fixed, got[k:])
    for s in named:  # arrays that share a name are of one library (numpy too, where they are data)
        first = bound[s.name][0] if s.name in bound else None
        if first is not None and not same_library(x, first) and not (s.data and type(x) is np.ndarray):
            lib = ("numpy or " if s.data else "") + namespace_name(namespace(first))
            return path, f"an array {_bound_repr(pattern, bound, lib)}", _of_library(x), E.StructureError
    if not isinstance(dt, Same):
        dtype_ok = _is_float_name(_dtype_name(x.dtype)) if dt is None else _dtype_name(x.dtype) == _dtype_name(dt)
    elif dt.name in bound:
        dtype_ok = _dtype_name(x.dtype) == _dtype_name(bound[dt.name][0].dtype)
    else:
        dtype_ok = dtype_kind(x.dtype) in dt.kind
    if not dtype_ok:
        return path, _bound_repr(pattern, bound), E.describe(x), E.DTypeError
    if not fits or (tie is not None and tie.name in bound and run != bound[tie.name][1]):
        return path, _bound_repr(pattern, bound), E.describe(x), E.ShapeError
    for s in named:
        binds.setdefault(s.name, (x, run, binds.what + (f" at {path}" if path else "")))
    return None


#: The binds of a pattern without :class:`Same` names (never written).
_NO_NAMES = _Binds()


def _bound_repr(pattern: Arr, bound: dict[str, tuple[Any, tuple[int, ...], str]], lib: str = "") -> str:
    """``pattern`` with its ``bound`` :class:`Same` names replaced by what they stand for, and where they were bound."""
    if not bound:
        return repr(pattern)
    dt, axes = pattern.dtype, pattern.axes
    kind = E.dtype_name(bound[dt.name][0].dtype) if isinstance(dt, Same) and dt.name in bound else _kind_str(dt)
    shown = [_axis_str(a) for a in axes]
    if axes and isinstance(axes[0], Same) and axes[0].name in bound:
        shown = [str(n) for n in bound[axes[0].name][1]] + shown[1:]
    tied = ["the library"] if lib else []
    tied += [  # the dtype's name is bound first
        "dtype" if isinstance(dt, Same) and name == dt.name else "shape" if len(run) == x.ndim else "leading axes"
        for name, (x, run, _) in bound.items()
    ]
    said = " and ".join([", ".join(tied[:-1]), tied[-1]] if len(tied) > 1 else tied)
    wheres = " and the ".join(sorted({w for _, _, w in bound.values()}))
    return f"{kind}[{','.join(shown)}] ({lib + ', ' if lib else ''}{said} of the {wheres})"


#: Types known to be arrays, and dtypes' short names: another library's arrays take the generic
#: walk on every call, which these keep to a few dictionary reads per array.
_ARRAY_TYPES: set[type] = {np.ndarray}
_DTYPE_NAMES: dict[tuple[type, Any], str] = {}


def _is_array(x: Any) -> bool:
    if type(x) in _ARRAY_TYPES:
        return True
    if not is_array(x):
        return False
    if len(_ARRAY_TYPES) < 64:
        _ARRAY_TYPES.add(type(x))
    return True


def _is_float_name(name: str) -> bool:
    """A short dtype name (:func:`_dtype_name`) of a float: ``f…`` or ``bf16``."""
    return name[0] == "f" or name == "bf16"


def _dtype_name(dtype: Any) -> str:
    key = (type(dtype), dtype)  # the type first: dtypes of two libraries are never compared
    try:
        return _DTYPE_NAMES[key]
    except KeyError:
        name = E.dtype_name(dtype)
        if len(_DTYPE_NAMES) < 256:
            _DTYPE_NAMES[key] = name
        return name
    except TypeError:  # an unhashable dtype
        return E.dtype_name(dtype)


def _axes_fit(axes: tuple[Any, ...], got: tuple[int, ...]) -> bool:
    return all(a is None or type(a) is str or a == n for a, n in zip(axes, got))


# ------------------------------------------------------------ compiled patterns: the per-call predicates

_ND = np.ndarray


def quick_test(*patterns: Any) -> Callable[..., bool] | None:
    """One function ``test(x0, x1, ...)``, True when numpy values fit ``patterns`` (None: all are ANY).

    Compiled once into a single expression: a few attribute compares per array
    (``type(x) is ndarray and x.dtype is f64 and x.shape == (3, 2)``), no call
    per node. False may still fit (another library's array, a dtype of another
    byte order): the caller then walks the pattern (:func:`misfit`), which decides.

    >>> quick_test(Arr(np.float64, ..., 3))(np.zeros((5, 3)))
    True
    """
    consts: dict[str, Any] = {"ND": _ND}
    parts = [_expression(pat, f"x{i}", consts) for i, pat in enumerate(patterns)]
    if all(part is None for part in parts):
        return None
    return _function(len(parts), [part for part in parts if part is not None], consts)


def _function(n: int, tests: list[str], consts: dict[str, Any]) -> Callable[..., bool]:
    """``test(x0, ..., x<n-1>)``, True when every one of ``tests`` (Python source over ``x0`` ...) holds: compiled
    from source built here from patterns or skeletons, never from user text."""
    exec(f"def test({', '.join(f'x{i}' for i in range(n))}):\n    return {' and '.join(tests)}\n", consts)
    test: Callable[..., bool] = consts["test"]
    return test


def _item(part: str, var: str, i: int) -> str:
    """``part``, a test of ``var``'s item ``i`` that starts with ``type(<var>_<i>)``, binding the item there: read
    once."""
    return part.replace(f"type({var}_{i})", f"type({var}_{i} := {var}[{i}])", 1)


def _expression(pattern: Any, var: str, consts: dict[str, Any]) -> str | None:
    """Python source testing ``var`` against ``pattern`` (numpy only), or None when anything fits."""
    if isinstance(pattern, Arr):
        return _array_expression(pattern, var, consts)
    if not isinstance(pattern, (tuple, list)):
        return None  # ANY, LIKE_OUTPUT, a Like or a constant: anything fits
    if isinstance(pattern, list):
        node = f"type({var}) is list"
    elif hasattr(pattern, "_fields"):
        kind = _const(consts, type(pattern))
        node = f"(type({var}) is {kind} or type({var}) is tuple)"
    else:
        node = f"(type({var}) is tuple or type({var}) is list)"
    tests = [f"{node} and len({var}) == {len(pattern)}"]
    for i, kid in enumerate(pattern):
        part = _expression(kid, f"{var}_{i}", consts)
        if part is not None:
            tests.append(_item(part, var, i))
    return "(" + " and ".join(tests) + ")"


def _array_expression(pattern: Arr, var: str, consts: dict[str, Any]) -> str:
    dt, axes = pattern.dtype, pattern.axes
    tied = axes[0] if axes[:1] != () and isinstance(axes[0], Same) else None
    lead = axes[:1] == (...,) or tied is not None
    fixed = axes[1:] if lead else axes
    if isinstance(dt, Same):  # bound at the first array of the name (its dtype), compared by identity after
        kind = _tie(consts, f"D_{dt.name}", f"{var}.dtype", f"{var}.dtype.kind in {dt.kind!r}")
    else:
        kind = f"{var}.dtype.kind == 'f'" if dt is None else f"{var}.dtype is {_const(consts, dt)}"
    k = len(fixed)
    if any(type(a) is not int for a in fixed):  # axes of any length: the others compared one by one
        sizes = [f"{var}.shape[{i - k}] == {a!r}" for i, a in enumerate(fixed) if type(a) is int]
        shape = " and ".join([f"{var}.ndim {'>=' if lead else '=='} {k}", *sizes])
    elif not lead:
        shape = f"{var}.shape == {tuple(fixed)!r}"
    elif k == 0:
        shape = "True"
    elif k == 1:
        shape = f"{var}.ndim > 0 and {var}.shape[-1] == {fixed[0]!r}"
    else:
        shape = f"{var}.ndim >= {k} and {var}.shape[-{k}:] == {tuple(fixed)!r}"
    if tied is not None:  # the leading axes: bound at the first array of the name, compared after
        run = f"{var}.shape[: {var}.ndim - {k}]" if k else f"{var}.shape"
        shape += " and " + _tie(consts, f"A_{tied.name}", run, "True")
    return f"(type({var}) is ND and {kind} and {shape})"


def _tie(consts: dict[str, Any], name: str, value: str, first: str) -> str:
    """Source binding the :class:`Same` ``name`` to ``value`` at its first use (where ``first`` must hold), and
    comparing ``value`` with it after (dtypes: ``is``; a False is decided by the walk)."""
    seen: set[str] = consts.setdefault("@ties", set())
    if name in seen:
        op = "is" if name.startswith("D_") else "=="
        return f"{value} {op} {name}"
    seen.add(name)
    return f"({first} and (({name} := {value}) is not None))"


def exact_test(*values: Any) -> Callable[..., bool] | None:
    """One function ``test(x0, x1, ...)``, True when its arguments have the skeleton of ``values``: the same
    containers (type and length) and numpy arrays of the same dtype and shape, scalars of the same type, at
    every place. None when a value holds anything else (another library's array, a dict): no exact test.

    >>> same = exact_test((np.zeros((2, 3)), 1.0))
    >>> same((np.ones((2, 3)), 2.0)), same((np.ones((3, 2)), 2.0)), same([np.ones((2, 3)), 2.0])
    (True, False, False)
    """
    consts: dict[str, Any] = {"ND": _ND}
    parts = [_exact_expression(v, f"x{i}", consts, 0) for i, v in enumerate(values)]
    if any(part is None for part in parts) or len(consts) > _EXACT_NODES:
        return None
    try:
        return _function(len(parts), [str(part) for part in parts], consts)
    except (SyntaxError, MemoryError, RecursionError):  # a speed-up never fails a run: no test, then
        return None


#: The most places an exact test compares (past it, it would cost what the per-call tests it replaces do),
#: and the deepest nesting it follows (Python's parser refuses about 200 nested parentheses).
_EXACT_NODES = 512
_EXACT_DEPTH = 64


def _exact_expression(value: Any, var: str, consts: dict[str, Any], depth: int) -> str | None:
    kind = type(value)  # every expression starts with ``type(var)``: the parent binds the item there
    if kind is _ND:
        dtype = _const(consts, value.dtype)
        return f"(type({var}) is ND and {var}.dtype is {dtype} and {var}.shape == {value.shape!r})"
    if value is None or kind in (float, int, bool, str) or isinstance(value, np.generic):
        return f"type({var}) is {_const(consts, kind)}"
    if not isinstance(value, (tuple, list)) or len(consts) > _EXACT_NODES or depth >= _EXACT_DEPTH:
        return None
    tests = [f"type({var}) is {_const(consts, kind)} and len({var}) == {len(value)}"]
    for i, kid in enumerate(value):
        part = _exact_expression(kid, f"{var}_{i}", consts, depth + 1)
        if part is None:
            return None
        tests.append(_item(part, var, i))
    return "(" + " and ".join(tests) + ")"


def _const(consts: dict[str, Any], value: Any) -> str:
    name = f"c{len(consts)}"
    consts[name] = value
    return name


def _like_misfit(like: Like, m: Any, da: Any, what: str) -> E.PrelensError | None:
    """The error for an output delta ``da`` (``what``) that does not fit ``like`` for the residue ``m``, or None;
    raises when ``of`` cannot read ``m``."""
    if da is None and like.or_none:
        return None
    t, want = like.of(m)
    if not (isinstance(want, tuple) and all(type(n) is int for n in (want[1:] if want[:1] == (...,) else want))):
        raise TypeError("not a shape")
    of_array = t is not None and not isinstance(t, np.dtype)  # then of its library too
    cls: type[E.PrelensError] = E.StructureError
    if _is_array(da) and (not of_array or same_library(da, t)):
        if t is None:
            dtype_ok = _is_float_name(_dtype_name(da.dtype))
        else:
            dtype_ok = da.dtype == t.dtype if of_array else _dtype_name(da.dtype) == _dtype_name(t)
        shape_ok = _shape_fits(want, tuple(da.shape))
        if shape_ok and dtype_ok:
            return None
        cls = E.DTypeError if shape_ok else E.ShapeError
    shape = ",".join("..." if n is ... else str(n) for n in want)
    if t is None:
        expected = f"a float array of shape ({shape}{',' if len(want) == 1 else ''})"
    else:
        expected = f"{E.dtype_name(t.dtype if of_array else t)}[{shape}]"
    if of_array and type(t) is not _ND:
        expected += f" ({namespace_name(namespace(t))})"
    if cls is E.StructureError and t is not None:
        expected = "an array " + expected
    return cls(f"{what}: expected {expected}, got {E.describe_tree(da)}")


def _shape_fits(want: tuple[Any, ...], got: tuple[int, ...]) -> bool:
    """``got`` is the shape ``want``, whose first entry may be ``...`` (any leading axes)."""
    if want[:1] != (...,):
        return got == want
    return len(got) >= len(want) - 1 and got[len(got) - len(want) + 1 :] == want[1:]


def _has_like(pattern: Any) -> bool:
    """``pattern`` is a :class:`Like` or a tree (tuples, lists) with one among its leaves."""
    if isinstance(pattern, Like):
        return True
    return isinstance(pattern, (tuple, list)) and any(_has_like(kid) for kid in pattern)


def _delta_misfit(pattern: Any, m: Any, da: Any, what: str) -> E.PrelensError | None:
    """The error for the first place where ``da`` does not fit the delta ``pattern`` (a tree of
    :class:`Like` and other patterns) for the residue ``m``, or None; raises when a ``Like``
    cannot read ``m``."""
    if isinstance(pattern, Like):
        return _like_misfit(pattern, m, da, what)
    if not _has_like(pattern):
        return misfit(pattern, da, what)
    if not _node_fits(pattern, da):
        return E.StructureError(f"{what}: expected a {E.describe(pattern)}, got {E.describe_tree(da)}")
    for i, (kid, d) in enumerate(zip(pattern, da)):
        err = _delta_misfit(kid, m, d, f"{what}[{i}]")
        if err is not None:
            return err
    return None


def _backward_test(expects: Expects) -> Callable[[Any, Any], bool] | None:
    """The per-call test of a ``bwd``'s residue ``m`` and delta ``da`` (None: nothing declared to test)."""
    delta = expects.delta
    if not _has_like(delta):
        return quick_test(expects.residue, delta)
    quick = quick_test(expects.residue)

    def test(m: Any, da: Any) -> bool:
        if quick is not None and not quick(m):
            return False
        try:
            return _numpy_like(delta, m, da) or _delta_misfit(delta, m, da, "") is None
        except Exception:  # a residue that a ``Like`` cannot read: the diagnosis says so
            return False

    return test


def _numpy_like(pattern: Any, m: Any, da: Any) -> bool:
    """True when ``da`` is a numpy array (or a tuple of them) of the shapes and dtypes the ``Like`` leaves of
    ``pattern`` read from ``m``; False leaves the decision to the walk (another library, a ``...`` shape, a misfit)."""
    if type(pattern) is Like:
        t, want = pattern.of(m)
        if type(da) is not _ND or da.shape != want:
            return False
        dt = t.dtype if type(t) is _ND else t
        return da.dtype is dt or (dt is None and da.dtype.kind == "f")
    if type(pattern) is tuple and type(da) is tuple and len(da) == len(pattern):
        return all(_numpy_like(p, m, d) for p, d in zip(pattern, da))
    return False


def backward_misfit(name: str, expects: Expects, m: Any, da: Any, ties: bool = True) -> E.PrelensError | None:
    """The error (naming the lens ``name``) for a residue or an output delta that does not fit ``expects``, or None.

    ``ties``: the :class:`Same` names of the residue's pattern tie its parts (a leaf's declaration).
    """
    if _first_misfit(expects.residue, m, "", _Binds() if ties else None) is not None:
        return E.bad_residue(name, m)
    try:
        return _named(name, _delta_misfit(expects.delta, m, da, "output delta"))
    except Exception:
        return E.bad_residue(name, m)


def _named(name: str, err: E.PrelensError | None) -> E.PrelensError | None:
    """``err`` (if any) with its message prefixed by the lens's ``name``."""
    return None if err is None else type(err)(f"{name}: {err}")


# ------------------------------------------------------------ the guard


@dataclass
class _Seen:
    """What a lens's forward passes under the trace were given, until its first backward pass is checked."""

    checked: bool = False  # the first backward pass after a recorded forward pass (leaves); the first pass (composites)
    given: list[tuple[Any, Any, Any]] = field(default_factory=list)  # distinct (p, s, a) skeletons
    truncated: bool = False


#: Up to this many distinct ``(p, s, a)`` shapes are kept per lens until its first backward pass.
_KEPT = 64


class _Flag(threading.local):
    on = False  # off in every thread until set


#: Set (per thread) while the trace runs a forward pass whose residue a backward pass may read, and its pullback.
_RECORDING = _Flag()


@contextmanager
def recording() -> Iterator[None]:
    """Let the lenses run in this block record what their forward passes were given (the trace's ``vjp``)."""
    before = _RECORDING.on
    _RECORDING.on = True
    try:
        yield
    finally:
        _RECORDING.on = before


Pass = Callable[[Any, Any], Any]

#: Set (per thread) while the trace reruns a model on the skeleton of a run it checked in full: every part
#: then meets the containers, dtypes and shapes it was checked on (scalars: their types), and calls its pass
#: unchecked.
TRUSTED = _Flag()


def trusting(on: bool, run: Pass, x: Any, y: Any) -> Any:
    """``run(x, y)`` with the parts' checks skipped (``on``) or run (the trace's choice, see ``TRUSTED``)."""
    before = TRUSTED.on
    TRUSTED.on = on
    try:
        return run(x, y)
    finally:
        TRUSTED.on = before


def guard(owner: Callable[[], Any], fwd: Pass, bwd: Pass, expects: Expects, *, leaf: bool) -> tuple[Pass, Pass]:
    """``fwd`` and ``bwd`` with the per-call and first-call checks and the diagnosis of failures (see the module doc).

    ``owner()`` is the lens they belong to (read only for its name, and to say where an error arose).
    A composite (not a ``leaf``) leaves its inputs and deltas to its parts: it tests and records nothing.
    """
    seen = _Seen()
    test_in = test_back = None
    if leaf:  # compiled once, here; a composite's patterns are its parts'
        test_in = quick_test(expects.params, expects.input)  # False: the walk decides (inputs_misfit)
        test_back = _backward_test(expects)

    def name() -> str:
        return str(owner().name)

    def checked_fwd(p: Any, s: Any) -> Any:
        if TRUSTED.on:
            return fwd(p, s)
        try:
            if test_in is not None and not test_in(p, s):
                err = _named(name(), inputs_misfit(expects, p, s))
                if err is not None:
                    raise err
            try:
                out = fwd(p, s)
            except E.PrelensError:
                raise  # a part's own, diagnosed where it arose (with its cause)
            except Exception as exc:
                raise diagnosed(name(), expects, "forward", exc, p, s, ties=leaf) from exc
            if not seen.checked:
                out = _pair(name, out, "fwd", "(m, a) (residue, output)")
                if not leaf:
                    seen.checked = True
                elif _RECORDING.on:
                    _remember(seen, p, s, out[1])
        except E.PrelensError as err:
            raise _from(owner(), err) from err.__cause__
        return out

    def checked_bwd(m: Any, da: Any) -> Any:
        if TRUSTED.on:
            return bwd(m, da)
        try:
            if test_back is not None and not test_back(m, da):
                err = backward_misfit(name(), expects, m, da, leaf)
                if err is not None:
                    raise err
            try:
                out = bwd(m, da)
            except E.PrelensError:
                raise  # a part's own, diagnosed where it arose (with its cause)
            except Exception as exc:
                raise diagnosed(name(), expects, "backward", exc, m, da, ties=leaf) from exc
            if not seen.checked:
                out = _pair(name, out, "bwd", "(dp, ds)")
                if seen.given and _RECORDING.on:  # a pullback of the trace: checked against
                    # the forward passes it recorded (a bare bwd may answer a bare fwd that was not recorded)
                    _check_deltas(name(), expects, seen, da, out)
                    seen.checked, seen.given = True, []
        except E.PrelensError as err:
            raise _from(owner(), err) from err.__cause__
        return out

    checked_fwd.__prelens_checked__ = True  # type: ignore[attr-defined]
    checked_fwd.__wrapped__, checked_bwd.__wrapped__ = fwd, bwd  # type: ignore[attr-defined]
    return checked_fwd, checked_bwd


def _from(lens: Any, err: Exception) -> Exception:
    """``err`` marked as raised by ``lens`` (the trace says where in a model that lens sits)."""
    if not hasattr(err, "_prelens_lens"):
        E.mark(err, _prelens_lens=lens)
    return err


def _pair(name: Callable[[], str], out: Any, which: str, layout: str) -> tuple[Any, Any]:
    if type(out) is tuple and len(out) == 2:  # the common case first: no attribute lookup, no name built
        return out
    if isinstance(out, (tuple, list)) and len(out) == 2 and not hasattr(out, "_fields"):
        return out[0], out[1]
    raise E.StructureError(f"{name()}: {which} must return a pair {layout}, got {E.describe_tree(out)}")


def _remember(seen: _Seen, p: Any, s: Any, a: Any) -> None:
    entry = (_skeleton(p), _skeleton(s), _skeleton(a))
    if entry in seen.given:
        return
    if len(seen.given) >= _KEPT:  # a lens used in many places: too many shapes to keep
        seen.truncated = True
        return
    seen.given.append(entry)


def _check_deltas(name: str, expects: Expects, seen: _Seen, da: Any, out: tuple[Any, Any]) -> None:
    """``(dp, ds)`` must fit the ``(p, s)`` of a forward pass (and ``da`` its output, if so declared)."""
    dp, ds = _skeleton(out[0]), _skeleton(out[1])
    first_error = None
    for p, s, a in reversed(seen.given):  # backward passes run in reverse: the last forward pass first
        found = _skeleton_misfit(p, dp, "", data_ok=False)
        which = "dp"
        if found is None:
            found, which = _skeleton_misfit(s, ds, "", data_ok=True), "ds"
        if found is None and expects.delta is LIKE_OUTPUT:
            found, which = _skeleton_misfit(a, _skeleton(da), "", data_ok=False), "da"
        if found is None:
            return
        first_error = first_error or (which, found)
    if seen.truncated:  # its forward pass may have had shapes not kept here: nothing certain to report
        return
    which, (path, expected, got) = first_error  # type: ignore[misc]
    if which == "da":
        cls = E.ShapeError if expected.endswith("]") and got.endswith("]") else E.StructureError
        raise cls(f"{name}: output delta at {E.path_str(path)}: expected {expected}, got {got}")
    of = "parameters p" if which == "dp" else "input s"
    raise E.StructureError(
        f"{name}: bwd returned a {which} that does not fit the {of} of its forward pass: "
        f"{E.at_path(path, expected, got)} (a {which} has the structure and shapes of the {of})"
    )


def diagnosed(
    name: str, expects: Expects, which: str, exc: Exception, p: Any, s: Any, ties: bool = False
) -> E.PrelensError:
    """The error to raise for ``exc``, met in the ``which`` pass of the lens ``name``.

    ``(p, s)`` are what the pass was given: ``(params, input)`` forward, ``(residue, output delta)`` backward.
    ``ties``: ``expects`` is a leaf's own (its :class:`Same` names tie), not a composite's derived one.
    """
    if isinstance(exc, E.PrelensError):
        return exc
    if isinstance(exc, RecursionError):
        return E.too_deep(name)
    if which == "forward":
        found = _named(name, inputs_misfit(expects, p, s, ties))
        given = f"the input {E.describe_tree(s)}"
    else:
        found = backward_misfit(name, expects, p, s, ties)
        given = f"the residue {E.describe_tree(p)} and the output delta {E.describe_tree(s)}"
    if found is not None:
        return found
    cls = E.NonFiniteError if isinstance(exc, (ArithmeticError, Warning)) else E.StructureError
    return cls(f"{name}: the {which} pass failed on {given}: {type(exc).__name__}: {exc}")


# ------------------------------------------------------------ skeletons: structure and shapes only


@dataclass(frozen=True, slots=True)
class _Leaf:
    """A numeric leaf in a skeleton: its shape (what deltas are compared by) and how to show it."""

    shape: tuple[int, ...]
    shown: str = field(compare=False)


_NUMBERS = (int, float, complex, np.generic)


def _skeleton(x: Any) -> Any:
    """``x`` with each numeric leaf replaced by its shape (no array is kept alive)."""
    if isinstance(x, (tuple, list)):
        kids = [_skeleton(v) for v in x]
        if hasattr(x, "_fields"):
            return type(x)(*kids)
        return kids if isinstance(x, list) else tuple(kids)
    if isinstance(x, dict):
        return {k: _skeleton(v) for k, v in x.items()}
    if is_array(x) and dtype_kind(x.dtype) in "biufc":
        return _Leaf(shape(x), E.describe(x))
    if isinstance(x, _NUMBERS) and not isinstance(x, (bool, np.bool_)):
        return _Leaf((), E.describe(x))
    return x  # a symbol (algebra tests) or None: compared as a value


def _skeleton_misfit(primal: Any, delta: Any, path: str, data_ok: bool) -> tuple[str, str, str] | None:
    """``(path, expected, got)`` where the skeleton ``delta`` does not fit the skeleton ``primal``."""
    if delta is None and data_ok:
        return None  # the delta of an input that is data (input_delta=False)
    if _is_empty(primal):
        return None if _is_empty(delta) else (path, _show(primal), _show(delta))
    if isinstance(primal, _Leaf):
        return None if isinstance(delta, _Leaf) and delta == primal else (path, _show(primal), _show(delta))
    if isinstance(primal, list) and isinstance(delta, _Leaf):  # a faithful vector as a list, its delta an array
        numbers = all(isinstance(v, _Leaf) and v.shape == () for v in primal)
        return None if numbers and delta.shape == (len(primal),) else (path, _show(primal), _show(delta))
    if isinstance(primal, dict):
        if not isinstance(delta, dict) or list(delta) != list(primal):
            return path, f"dict with keys {list(primal)}", _show(delta)
    elif isinstance(primal, (tuple, list)):
        if not _same_node(primal, delta):
            return path, _show(primal), _show(delta)
    else:
        return None  # a symbol: nothing to compare
    for (seg, v), (_, d) in zip(_items(primal), _items(delta)):
        found = _skeleton_misfit(v, d, path + seg, data_ok)
        if found is not None:
            return found
    return None


def _is_empty(x: Any) -> bool:
    return x is None or (type(x) in (tuple, list, dict) and len(x) == 0)


def _same_node(primal: tuple[Any, ...] | list[Any], delta: Any) -> bool:
    """Lists fit lists, tuples tuples of their length; a named tuple fits a plain tuple, not another named tuple."""
    if isinstance(primal, list):
        return isinstance(delta, list) and len(delta) == len(primal)
    if not isinstance(delta, tuple) or len(delta) != len(primal):
        return False
    return not (hasattr(primal, "_fields") and hasattr(delta, "_fields")) or type(primal) is type(delta)


def _show(skeleton: Any) -> str:
    return skeleton.shown if isinstance(skeleton, _Leaf) else E.describe(skeleton)
