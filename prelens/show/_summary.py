"""A structural view of any lens: the stages of its composition, their shapes and parameters.

One forward pass on random data, stage by stage: ``>>``, ``@``, ``chain`` and the library's named
models (``mlp``, ``decoder_lm``, ...: compositions seen through a re-packing of their parameters) are
opened up into a tree; every other lens is one stage.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from prelens import errors as E
from prelens.backend import _arrays as _backend
from prelens.backend._loop import rebuild
from prelens.core import _args
from prelens.core._lens import AnyLens, as_lens
from prelens.core._tree import tree_leaves


@dataclass(frozen=True)
class Stage:
    """One row of a summary: a lens at some depth of the composition tree.

    >>> from prelens.nn import linear, tanh
    >>> summary(linear(3, 2) >> tanh, (3,)).stages[1]
    Stage(depth=1, name='linear(3→2)', op='', output='f64[2]', params='f64[3,2]', count=6,
          has_params=True, has_residue=True, opened=False)
    """

    depth: int
    name: str
    op: str  #: ``">>"``, ``"@"``, ``"chain"`` for composites, ``""`` for a stage
    output: str  #: the output, described: ``f64[16,8]``
    params: str  #: the parameter shapes, described (empty for composites)
    count: int  #: number of scalar parameters, composites included
    has_params: bool
    has_residue: bool
    opened: bool = False  #: a named lens opened up into the composition it is built from


#: Named lenses that :func:`summary` may open: the lens -> its parameters as its one part takes them.
_OPENINGS: weakref.WeakKeyDictionary[AnyLens, Callable[[Any], Any]] = weakref.WeakKeyDictionary()
_COMPOSITES = (">>", "@", "chain")
_OP_WORDS = {">>": "sequential >>", "@": "parallel @", "chain": "chain"}


def register_opening(lens: AnyLens, p_to: Callable[[Any], Any]) -> AnyLens:
    """Let :func:`summary` and :func:`~prelens.show.draw` open ``lens`` up; returns ``lens``.

    ``lens`` must run its one part ``lens.parts[0]`` on the parameters
    ``p_to(p)`` (as :meth:`~prelens.PreLens.dimap_p` builds it).
    """
    _OPENINGS[lens] = p_to
    return lens


@dataclass(frozen=True)
class Summary:
    """The rows of :func:`summary`; its ``str`` (and ``repr``) is the table.

    >>> from prelens.nn import linear, tanh
    >>> s = summary(linear(3, 2) >> tanh, (3,))
    >>> s.total_params, [st.name for st in s.stages]
    (6, ['linear(3→2) >> tanh', 'linear(3→2)', 'tanh'])
    """

    lens: str
    input: str
    stages: tuple[Stage, ...]

    @property
    def total_params(self) -> int:
        """The number of scalar parameters of the whole lens."""
        return self.stages[0].count if self.stages else 0

    def __str__(self) -> str:
        rows = [("stage", "output", "parameters", "count")]
        for st in self.stages:
            anonymous = st.op and not st.opened and (st.op != "chain" or st.name.startswith("chain("))
            label = "  " * st.depth + (_OP_WORDS[st.op] if anonymous else st.name)
            rows.append((label, st.output, st.params, f"{st.count:,}"))
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        head, *body = [f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {n:>{w[3]}}" for a, b, c, n in rows]
        total = f"total parameters: {self.total_params:,}"
        return "\n".join([self.lens, f"input: {self.input}", head, "-" * len(head), *body, total])

    __repr__ = __str__


def _example(fn: str, spec: Any, rng: np.random.Generator, dtype: np.dtype[Any]) -> Any:
    """Random data for a shape tuple; a tuple or list tree of shapes; any other value as it is."""
    if isinstance(spec, tuple) and spec and all(isinstance(d, (int, np.integer)) for d in spec):
        for d in spec:
            _args.count(fn, "every size in input_shape", d, least=0)
        return rng.standard_normal(spec).astype(dtype)
    if isinstance(spec, (tuple, list)):
        return rebuild(spec, [_example(fn, x, rng, dtype) for x in spec])  # a named tuple keeps its type
    return spec


@dataclass(eq=False)
class StageNode:
    """A stage of one run (:func:`run_stages`): a lens, the values it saw, its parts if opened (``op`` as
    :class:`Stage`'s; a named lens opened up is a ``">>"`` of its one part)."""

    name: str
    op: str = ""
    children: list[Any] = field(default_factory=list)  #: nodes of the class the run was given
    p: Any = None
    s: Any = None
    m: Any = None
    a: Any = None
    opened: bool = False
    lens: Any = None  #: the lens of a stage run whole


N = TypeVar("N", bound=StageNode)


def run_stages(lens: AnyLens, p: Any, s: Any, limit: int | None, node: type[N] = StageNode, depth: int = 0) -> N:  # type: ignore[assignment]
    """Run ``lens`` forward on ``(p, s)`` stage by stage: the tree of its stages (what :func:`summary`
    lists and :func:`~prelens.show.draw` draws). Composites nested deeper than ``limit`` run whole."""
    opening = _OPENINGS.get(lens)
    if (lens.op not in _COMPOSITES and opening is None) or (limit is not None and depth >= limit):
        m, a = lens.fwd(p, s)
        return node(lens.name, p=p, s=s, m=m, a=a, lens=lens)
    body, p_body = (lens, p) if opening is None else (lens.parts[0], opening(p))
    out = node(lens.name, body.op if body.op in _COMPOSITES else ">>", p=p, s=s, opened=opening is not None)
    if body.op == "@":
        out.children = [run_stages(part, p_body[i], s[i], limit, node, depth + 1) for i, part in enumerate(body.parts)]
        out.a = tuple(child.a for child in out.children)
    else:  # a sequence: >>, chain, or the one part of a named primitive opened up
        parts, ps = (list(body.parts), list(p_body)) if body.op == "chain" else _flatten_seq(body, p_body)
        for part, pp in zip(parts, ps):
            out.children.append(run_stages(part, pp, s, limit, node, depth + 1))
            s = out.children[-1].a
        out.a = s
    return out


def _count(params: Any) -> int:
    """How many numbers the leaves hold (arrays of any library, or numbers)."""
    return sum(math.prod(x.shape) if _backend.is_array(x) else int(np.size(x)) for x in tree_leaves(params))


def _like_params(example: Any, params: Any) -> Any:
    """The example's numpy arrays in the library (and on the device) of ``params``' arrays, if another."""
    other = [x for x in tree_leaves(params) if _backend.is_array(x) and not isinstance(x, np.ndarray)]
    if not other:
        return example
    xp, where = _backend.namespace(other[0]), _backend.device(other[0])
    return _backend.tree_map_arrays(
        lambda a: _backend.to_backend(a, xp, device=where) if isinstance(a, np.ndarray) else a, example
    )


def _flatten_seq(lens: AnyLens, p: Any) -> tuple[list[AnyLens], list[Any]]:
    """The parts of a left-nested ``f >> g >> h`` as siblings, with their parameters."""
    if lens.op != ">>":
        return [lens], [p]
    f, g = lens.parts
    p_g, p_f = p
    fs, pfs = _flatten_seq(f, p_f)
    return [*fs, g], [*pfs, p_g]


def summary(
    lens: AnyLens,
    input_shape: Any,
    *,
    params: Any = None,
    rng: np.random.Generator | int | None = 0,
    dtype: Any = None,
    depth: int | None = None,
) -> Summary:
    """A table of the stages of ``lens`` with output shapes, parameter shapes and counts.

    ``input_shape`` is a shape tuple (random normal data of ``dtype``; by default the parameters' float
    dtype, float64 if they have none), an example value (token ids), or
    a tuple/list tree of those. Parameters come from ``lens.init(rng)`` unless given (of any array-API
    library: the data is then made in theirs). Composites deeper than ``depth`` are one stage.

    >>> from prelens.nn import linear, tanh
    >>> print(summary(linear(3, 2) >> tanh, (3,)))
    linear(3→2) >> tanh
    input: f64[3]
    stage          output  parameters  count
    ----------------------------------------
    sequential >>  f64[2]                  6
      linear(3→2)  f64[2]  f64[3,2]        6
      tanh         f64[2]                  0
    total parameters: 6
    """
    s, p = example_run("summary", lens, input_shape, params, rng, dtype, depth)
    rows: list[Stage] = []
    todo: list[tuple[StageNode, int]] = [(run_stages(lens, p, s, depth), 0)]
    while todo:
        node, d = todo.pop()
        has_params, a = bool(tree_leaves(node.p)), _shown(node.a)
        if node.children:
            rows.append(Stage(d, node.name, node.op, a, "", _count(node.p), has_params, True, node.opened))
            todo.extend((child, d + 1) for child in reversed(node.children))
        else:
            shapes = _shown(node.p) if has_params else ""
            rows.append(Stage(d, node.name, "", a, shapes, _count(node.p), has_params, bool(tree_leaves(node.m))))
    return Summary(repr(lens), _shown(s), tuple(rows))


def _shown(x: Any) -> str:
    """A summary's cell: the type of ``x`` (:func:`type_of`), cut to 160 characters."""
    return E.short_name(type_of(x), 160)


def type_of(x: Any, depth: int = 0) -> str:
    """The type of a value as a wire label: ``f64[3,2]``, ``float``, ``(f64[2], ())``, ``[float × 4]``.

    >>> type_of((np.zeros((3, 2)), 0.5, ()))
    '(f64[3,2], float, ())'
    >>> type_of([1.0, 2.0, 3.0])
    '[float × 3]'
    """
    if isinstance(x, np.generic):
        return E.dtype_name(x.dtype)
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # an array of any library: f64[3,2], f32[4] (torch)
        return E.describe(x)
    if x is None:
        return "None"
    if isinstance(x, (bool, int, float, complex, str, bytes)):
        return type(x).__name__
    if depth > 4 and isinstance(x, (tuple, list, dict)):
        return "…"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        inner = ", ".join(f"{k}={type_of(v, depth + 1)}" for k, v in zip(x._fields, x))
        return f"{type(x).__name__}({inner})"
    if isinstance(x, tuple):
        return "(" + ", ".join(type_of(v, depth + 1) for v in x) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, list):
        kinds = [type_of(v, depth + 1) for v in x]
        if kinds and all(k == kinds[0] for k in kinds):
            return f"[{kinds[0]} × {len(kinds)}]"
        return "[" + ", ".join(kinds[:3]) + (", …" if len(kinds) > 3 else "") + "]"
    if isinstance(x, dict):
        items = [f"{k}: {type_of(v, depth + 1)}" for k, v in list(x.items())[:3]]
        return "{" + ", ".join(items) + (", …" if len(x) > 3 else "") + "}"
    return type(x).__name__


def example_run(
    fn: str, lens: AnyLens, input_shape: Any, params: Any, rng: Any, dtype: Any, depth: int | None
) -> tuple[Any, Any]:
    """The input and parameters that :func:`summary` and ``draw`` (named ``fn``) run ``lens`` on."""
    as_lens(fn, "lens", lens)
    if depth is not None:
        _args.count(fn, "depth", depth, least=0)
    gen = _args.seed(fn, rng)
    p = lens.init(gen) if params is None else params
    if dtype is None:  # the parameters' floats: a float32 model is shown float32 data
        floats = (_backend.dtype_name(a.dtype) for a in tree_leaves(p) if _backend.is_float(a))
        dtype = next(floats, "float64")
    example = _example(fn, input_shape, gen, _args.float_dtype(fn, "dtype", dtype))
    return (example, p) if params is None else (_like_params(example, params), params)
