"""String diagrams of lenses, drawn with matplotlib (the ``notebooks`` extra).

Data flows left to right; ``>>`` places stages side by side, ``@`` stacks
them; parameters enter each stage from above and residues leave below, as in
the pictures of the blog. ``draw(lens, input_shape)`` returns the matplotlib
``Axes``, so notebooks show it inline.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._lens import AnyLens
from ._summary import Stage, example_run, walk

BOX_W, BOX_H, GAP, ROW = 1.8, 0.9, 0.7, 1.9
LABEL = 22  #: characters of a box's name (or a wire's parameter shapes) on one line


@dataclass
class _Node:
    stage: Stage
    children: list[_Node] = field(default_factory=list)

    def size(self) -> tuple[float, float]:
        if not self.children:
            return BOX_W + GAP, ROW
        sizes = [c.size() for c in self.children]
        if self.stage.op == "@":
            return max(w for w, _ in sizes), sum(h for _, h in sizes)
        return sum(w for w, _ in sizes), max(h for _, h in sizes)


def _build(stages: list[Stage]) -> _Node:
    root = _Node(stages[0])
    stack = [root]
    for st in stages[1:]:
        while stack[-1].stage.depth >= st.depth:
            stack.pop()
        node = _Node(st)
        stack[-1].children.append(node)
        stack.append(node)
    return root


def _draw(ax: Any, node: _Node, x: float, y: float) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Draw ``node`` with its top-left corner at ``(x, y)``; return its input and output ports."""
    w, h = node.size()
    if not node.children:
        cx, cy = x + GAP / 2, y - h / 2
        ax.add_patch(_box(cx, cy))
        name = node.stage.name
        fits = len(name) <= LABEL
        label = name if fits else "\n".join(textwrap.wrap(name, LABEL, max_lines=3, placeholder="…"))
        ax.text(cx + BOX_W / 2, cy, label, ha="center", va="center", fontsize=8 if fits else 6)
        if node.stage.has_params:
            params = node.stage.params if len(node.stage.params) <= LABEL else f"{node.stage.count:,} params"
            ax.plot([cx + BOX_W / 2] * 2, [cy + BOX_H / 2, cy + BOX_H / 2 + 0.4], color="tab:blue", lw=1.5)
            ax.text(cx + BOX_W / 2 + 0.05, cy + BOX_H / 2 + 0.3, params, fontsize=6, color="tab:blue")
        if node.stage.has_residue:
            ax.plot([cx + BOX_W / 2] * 2, [cy - BOX_H / 2, cy - BOX_H / 2 - 0.4], color="tab:red", lw=1.5, ls="--")
        return [(cx, cy)], [(cx + BOX_W, cy)]
    ins: list[tuple[float, float]] = []
    outs: list[tuple[float, float]] = []
    if node.stage.op == "@":
        top = y
        for child in node.children:
            cw, ch = child.size()
            i, o = _draw(ax, child, x + (w - cw) / 2, top)
            ins += i
            outs += o
            top -= ch
        return ins, outs
    left = x
    for k, child in enumerate(node.children):
        cw, ch = child.size()
        i, o = _draw(ax, child, left, y - (h - ch) / 2)
        if k == 0:
            ins = i
        else:
            _connect(ax, outs, i)
        outs = o
        left += cw
    return ins, outs


def _connect(ax: Any, outs: list[tuple[float, float]], ins: list[tuple[float, float]]) -> None:
    if len(outs) == len(ins):
        pairs = list(zip(outs, ins))
    else:  # a bundle of wires meets a single port (or the reverse)
        pairs = [(o, i) for o in outs for i in ins]
    for (x0, y0), (x1, y1) in pairs:
        ax.plot([x0, (x0 + x1) / 2, (x0 + x1) / 2, x1], [y0, y0, y1, y1], color="black", lw=1)


def _box(cx: float, cy: float) -> Any:
    from matplotlib.patches import FancyBboxPatch

    return FancyBboxPatch(
        (cx, cy - BOX_H / 2),
        BOX_W,
        BOX_H,
        boxstyle="round,pad=0.02",
        facecolor="#f4f1e8",
        edgecolor="black",
        lw=1,
    )


def draw(
    lens: AnyLens,
    input_shape: Any,
    *,
    params: Any = None,
    ax: Any = None,
    rng: np.random.Generator | int | None = 0,
    dtype: Any = np.float64,
    depth: int | None = None,
) -> Any:
    """Draw the string diagram of ``lens``; returns the matplotlib ``Axes``.

    Haskell::

        draw :: PreLens a da m dm p dp s ds -> Shape -> IO Axes

    Parameters (blue) enter from above, residues (red, dashed) leave below,
    inputs come in on the left and outputs leave on the right. ``input_shape``
    is as for :func:`prelens.summary` (one forward pass finds which stages have
    parameters and residues); composites nested deeper than ``depth`` are
    drawn as one box (``None``: open everything).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from prelens.testing import linear_vec, tanh_vec
    >>> ax = draw(linear_vec(3, 2) >> tanh_vec, (3,))
    >>> len(ax.patches)
    2
    """
    import matplotlib.pyplot as plt

    s, p = example_run("draw", lens, input_shape, params, rng, dtype, depth)
    root = _build(walk(lens, p, s, depth))
    w, h = root.size()
    if ax is None:
        _, ax = plt.subplots(figsize=(max(3.0, 1.3 * w), max(1.5, 1.1 * h)))
    ins, outs = _draw(ax, root, 0.0, 0.0)
    for x, y in ins:
        ax.plot([x - GAP / 2, x], [y, y], color="black", lw=1)
    for x, y in outs:
        ax.plot([x, x + GAP / 2], [y, y], color="black", lw=1)
    ax.set_xlim(-0.2, w + 0.2)
    ax.set_ylim(-h - 0.1, 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(repr(lens), fontsize=9)
    return ax
