"""A structural view of any lens: the stages of its composition, their shapes and parameters.

``summary(lens, input_shape)`` runs one forward pass on random data and walks
the composition (``>>``, ``@`` and ``chain`` are opened up; every other lens is
one stage), recording for each stage its output, its parameter shapes and its
parameter count. Nested compositions are shown as a tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import describe_tree
from ._lens import AnyLens
from ._tree import tree_leaves

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Stage:
    """One row of a summary: a lens at some depth of the composition tree."""

    depth: int
    name: str
    op: str  #: ``">>"``, ``"@"``, ``"chain"`` for composites, ``""`` for a stage
    output: str  #: the output, described: ``f64[16,8]``
    params: str  #: the parameter shapes, described (empty for composites)
    count: int  #: number of scalar parameters, composites included
    has_params: bool
    has_residue: bool


@dataclass(frozen=True)
class Summary:
    """The rows of :func:`summary`; its ``str`` (and ``repr``) is the table."""

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
            label = "  " * st.depth + (st.op if st.op else st.name)
            if st.op:
                label = "  " * st.depth + {">>": "sequential >>", "@": "parallel @", "chain": "chain"}[st.op]
            rows.append((label, st.output, st.params, f"{st.count:,}"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"{self.lens}", f"input: {self.input}"]
        for k, r in enumerate(rows):
            lines.append(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>{widths[3]}}")
            if k == 0:
                lines.append("-" * len(lines[-1]))
        lines.append(f"total parameters: {self.total_params:,}")
        return "\n".join(lines)

    __repr__ = __str__


def _example(spec: Any, rng: np.random.Generator, dtype: Any) -> Any:
    if isinstance(spec, tuple) and all(isinstance(d, int) for d in spec) and spec:
        return rng.standard_normal(spec).astype(dtype)
    if isinstance(spec, (tuple, list)):
        out = [_example(x, rng, dtype) for x in spec]
        return tuple(out) if isinstance(spec, tuple) else out
    return spec


def walk(lens: AnyLens, params: Any, s: Any) -> list[Stage]:
    """Run ``lens`` forward on ``(params, s)``, stage by stage, and record each stage.

    >>> from prelens.testing import linear_vec, tanh_vec
    >>> l = linear_vec(3, 2) >> tanh_vec
    >>> [(st.depth, st.name, st.output) for st in walk(l, l.init(0), np.ones(3))]
    [(0, 'linear_vec(3→2) >> tanh_vec', 'f64[2]'), (1, 'linear_vec(3→2)', 'f64[2]'), (1, 'tanh_vec', 'f64[2]')]
    """
    rows: list[Stage] = []
    _walk(lens, params, s, 0, rows)
    return rows


def _count(params: Any) -> int:
    return int(sum(np.size(x) for x in tree_leaves(params)))


def _walk(lens: AnyLens, p: Any, s: Any, depth: int, rows: list[Stage]) -> Any:
    if lens.op not in (">>", "@", "chain"):
        m, a = lens.fwd(p, s)
        has_params = bool(tree_leaves(p))
        rows.append(
            Stage(
                depth,
                lens.name,
                "",
                describe_tree(a),
                describe_tree(p) if has_params else "",
                _count(p),
                has_params,
                bool(tree_leaves(m)),
            )
        )
        return a
    at = len(rows)
    rows.append(Stage(depth, lens.name, lens.op, "", "", _count(p), bool(tree_leaves(p)), True))
    if lens.op == ">>":
        # flatten the left-nested chain f >> g >> h into siblings
        parts, ps = _flatten_seq(lens, p)
        for part, pp in zip(parts, ps):
            s = _walk(part, pp, s, depth + 1, rows)
        a = s
    elif lens.op == "chain":
        for part, pp in zip(lens.parts, p):
            s = _walk(part, pp, s, depth + 1, rows)
        a = s
    else:
        f, g = lens.parts
        a = (_walk(f, p[0], s[0], depth + 1, rows), _walk(g, p[1], s[1], depth + 1, rows))
    head = rows[at]
    rows[at] = Stage(head.depth, head.name, head.op, describe_tree(a), "", head.count, head.has_params, True)
    return a


def _flatten_seq(lens: AnyLens, p: Any) -> tuple[list[AnyLens], list[Any]]:
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
    dtype: Any = np.float64,
) -> Summary:
    """A table of the stages of ``lens`` with output shapes, parameter shapes and counts.

    ``input_shape`` is a shape tuple (random normal data of ``dtype`` is made),
    an example value (e.g. integer token ids), or a tuple/list tree of those.
    Parameters come from ``lens.init(rng)`` unless given. Display the result
    (or ``print`` it) to see the table.

    >>> from prelens.testing import linear_vec, tanh_vec
    >>> print(summary(linear_vec(3, 2) >> tanh_vec, (3,)))
    linear_vec(3→2) >> tanh_vec
    input: f64[3]
    stage              output  parameters  count
    --------------------------------------------
    sequential >>      f64[2]                  6
      linear_vec(3→2)  f64[2]  f64[2,3]        6
      tanh_vec         f64[2]                  0
    total parameters: 6
    """
    gen = np.random.default_rng(rng)
    s = _example(input_shape, gen, dtype)
    p = lens.init(gen) if params is None else params
    return Summary(repr(lens), describe_tree(s), tuple(walk(lens, p, s)))
