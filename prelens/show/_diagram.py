"""String diagrams of lenses, both passes, drawn with matplotlib (the ``notebooks`` extra).

The picture of the post's section "Pre-Lenses", for any lens: the **forward pass** above, left to
right, ``>>`` side by side and ``@`` stacked; the **backward pass** below, its mirror image. Each stage
is a box in each half: its parameters ``p`` enter the forward box from above, its ``dp`` leaves the
backward box below, its residue ``m`` turns from the one into the other (the trace: ``dm = m``). Wires
are labelled with the *types* of what flows on them (``f64[2]``, ``float``), never with values.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens
from prelens.core._tree import tree_leaves
from prelens.show._summary import StageNode, example_run, run_stages, type_of

# Geometry, in data units (one unit is about 0.45 inch at the default figure size).
BOX_W, BOX_H = 2.0, 0.9  #: a stage's box
ROW = 2.0  #: height of one row of stages (box, parameter wire and its label)
MID = 1.6  #: the band between the two halves, where the residue wires turn back
CH0, CH_STEP = 0.1, 0.2  #: offsets of the residue wires to the right of a box
MARGIN = 2.1  #: room left and right of the stages for the outer wires and their labels
PARAM_WIRE = 0.32  #: length of a parameter wire above a box
WIRE_LABEL = 1.3  #: room for the type label of a wire between two stages
INCH = 0.45  #: inches per data unit of a figure that ``draw`` makes itself
MAX_INCHES = (16.0, 12.0)  #: the largest figure ``draw`` makes; bigger diagrams are scaled down

FWD_FACE, BWD_FACE = "#f4f1e8", "#e7eef6"
DATA, DELTA, PARAM, RESIDUE = "black", "#4a4a4a", "tab:blue", "tab:red"
MAX_FONT, MIN_FONT = 8.0, 3.5  #: box labels shrink (and wrap) between these sizes to fit their box

#: Styles of the wire labels (sizes in points at ``INCH`` inches per unit; smaller drawings scale them down).
_ABOVE = {"ha": "center", "va": "bottom", "fontsize": 6.5, "color": PARAM}
_BELOW = {"ha": "center", "va": "top", "fontsize": 6.5, "color": PARAM}
_LEFT = {"ha": "left", "va": "bottom", "fontsize": 6.5, "color": DATA}
_RIGHT = {"ha": "right", "va": "bottom", "fontsize": 6.5, "color": DATA}
_RESIDUE = {"ha": "left", "va": "center", "fontsize": 6.5, "color": RESIDUE}
_PLATE = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.9}  # under a residue label
_CAPTION = {"ha": "left", "fontsize": 8, "style": "italic", "color": "dimgray"}


# ------------------------------------------------------------------ the tree of stages


@dataclass(eq=False)
class _Node(StageNode):
    """A stage placed on the grid: its column and row, and its size in columns and rows."""

    ds: Any = None  #: the deltas of the backward pass (when ``draw`` is given ``da``)
    da: Any = None
    col: int = 0
    row: float = 0.0

    @cached_property
    def size(self) -> tuple[int, int]:
        """Width in columns and height in rows."""
        if not self.children:
            return 1, 1
        widths, heights = zip(*(c.size for c in self.children))
        return (max(widths), sum(heights)) if self.op == "@" else (sum(widths), max(heights))

    def leaves(self) -> list[_Node]:
        return [self] if not self.children else [x for c in self.children for x in c.leaves()]


def _place(node: _Node, col: int, row: float) -> None:
    """Give every leaf its column and row: ``>>`` side by side (centred), ``@`` stacked (left-aligned).

    Left alignment keeps every box on one grid of columns, so a residue wire, which runs down
    the gap to the right of its box, never crosses a box.
    """
    node.col, node.row = col, row
    _, h = node.size
    for child in node.children:
        cw, ch = child.size
        if node.op == "@":
            _place(child, col, row)
            row += ch
        else:
            _place(child, col, row + (h - ch) / 2)
            col += cw


def _wires(node: _Node) -> tuple[int, int]:
    """How many outer input and output wires ``node`` has (its ports as :func:`_draw_node` makes them)."""
    if not node.children:
        return 1, 1
    ends = [_wires(child) for child in node.children]
    if node.op == "@":
        return sum(i for i, _ in ends), sum(o for _, o in ends)
    return ends[0][0], ends[-1][1]


def _backward(node: _Node, da: Any) -> Any:
    """Run the backward pass stage by stage from ``da``, recording each stage's ``da`` and ``ds``; the ``ds``."""
    node.da = da
    if not node.children:
        node.ds = node.lens.bwd(node.m, da)[1]  # the trace: the stage's own residue
    elif node.op == "@":
        node.ds = tuple(_backward(child, da[i]) for i, child in enumerate(node.children))
    else:
        for child in reversed(node.children):
            da = _backward(child, da)
        node.ds = da
    return node.ds


# ------------------------------------------------------------------ drawing


@dataclass
class _Port:
    x: float
    y: float
    value: Any
    delta: Any  #: what flows back on the mirrored wire: the value itself unless the backward pass was run


class _Picture:
    """Collects the primitives of both halves; the backward half is the forward one mirrored."""

    def __init__(self, ax: Any, height: float, backward: bool, lead: float | None) -> None:
        self.ax = ax
        self.mirror = -2 * height - MID  # y of the backward twin of y is mirror - y
        self.backward = backward
        self.lead = lead  # how far before the next box a wire turns (None: half the gap)
        self.boxes: list[tuple[Any, Any, str]] = []  # (patch, text, name) of every box, for fitting
        self.labels: list[tuple[Any, str, float, float]] = []  # (text, short, max width, max height)

    def wire(self, xs: list[float], ys: list[float], *, arrow: int | None = None) -> None:
        """A data wire of the forward half and its mirrored delta wire; ``arrow``: mark that segment's direction."""
        halves = [(ys, DATA, False)] + ([([self.mirror - y for y in ys], DELTA, True)] if self.backward else [])
        for yh, color, back in halves:
            self.ax.plot(xs, yh, color=color, lw=1.1, solid_capstyle="butt", zorder=2)
            if arrow is not None:  # a delta flows back: its arrow points the other way
                k, rightwards = arrow, (xs[arrow + 1] > xs[arrow]) != back
                mid = [(xs[k] + xs[k + 1]) / 2], [(yh[k] + yh[k + 1]) / 2]
                self.ax.plot(*mid, marker=">" if rightwards else "<", color=color, ms=4.5, zorder=3)

    def box(self, cx: float, cy: float, name: str) -> None:
        from matplotlib.patches import FancyBboxPatch

        halves = [(cy, FWD_FACE, "fwd")] + ([(self.mirror - cy, BWD_FACE, "bwd")] if self.backward else [])
        k = len(self.boxes) // (2 if self.backward else 1)
        for y, face, half in halves:
            patch = FancyBboxPatch(
                (cx - BOX_W / 2, y - BOX_H / 2),
                BOX_W,
                BOX_H,
                boxstyle="round,pad=0,rounding_size=0.08",
                facecolor=face,
                edgecolor="black",
                lw=1.0,
                zorder=4,
            )
            patch.set_gid(f"{half}-box-{k}")  # gids let tests (and users) find the parts of the picture
            self.ax.add_patch(patch)
            text = self.ax.text(cx, y, name, ha="center", va="center", fontsize=MAX_FONT, zorder=5)
            text.set_gid(f"{half}-label-{k}")
            self.boxes.append((patch, text, name))

    def label(
        self, x: float, y: float, full: str, short: str, room: tuple[float, float], style: dict[str, Any]
    ) -> None:
        """A wire label: ``full`` if it fits in ``room`` (width, height in data units), else ``short``."""
        text = self.ax.text(x, y, full, zorder=6, **style)
        self.labels.append((text, short, *room))


Ports = _Port | list["Ports"]  # one port, or the ports of a parallel composite, grouped by its parts


def _flat(ports: Ports) -> list[_Port]:
    return [ports] if isinstance(ports, _Port) else [p for group in ports for p in _flat(group)]


def _connect(pic: _Picture, outs: Ports, ins: Ports, gap: float) -> None:
    """Wires from a stage's outputs to the next stage's inputs, turning in the gap before it: the parts of an
    ``@`` part by part when both sides have as many, else one wire fans out to many or many meet at one."""
    if isinstance(outs, list) and isinstance(ins, list) and len(outs) == len(ins) and len(outs) > 1:
        for o, i in zip(outs, ins):
            _connect(pic, o, i, gap)
        return
    flat_out, flat_in = _flat(outs), _flat(ins)
    one_to_one = len(flat_out) == len(flat_in)
    pairs = list(zip(flat_out, flat_in)) if one_to_one else list(itertools.product(flat_out, flat_in))
    lead = gap / 2 if pic.lead is None else pic.lead
    for o, i in pairs:
        turn = i.x - lead
        pic.wire([o.x, turn, turn, i.x], [o.y, o.y, i.y, i.y])
        if pic.lead is not None and (one_to_one or len(flat_out) == 1):  # the type on the wire, before the next box
            room = (lead - 0.08, 0.4)
            kind, dkind = type_of(o.value), type_of(o.delta if one_to_one else i.delta)
            pic.label(turn + 0.04, i.y + 0.06, kind, _short(kind), room, {**_LEFT, "gid": "wire-type"})
            if pic.backward:
                style = {**_LEFT, "color": DELTA, "gid": "wire-type"}
                pic.label(turn + 0.04, pic.mirror - i.y + 0.06, dkind, _short(dkind), room, style)


def _short(kind: str) -> str:
    """A type label cut short: its first few characters and an ellipsis."""
    return kind if len(kind) <= 6 else kind[:5] + "…"


def _draw_node(pic: _Picture, node: _Node, gap: float) -> tuple[Ports, Ports]:
    """Draw ``node``'s boxes and inner wires; its input and output ports."""
    if not node.children:
        cx, cy = _centre(node, gap)
        pic.box(cx, cy, node.name)
        ds, da = (node.s, node.a) if node.ds is None and node.da is None else (node.ds, node.da)
        return _Port(cx - BOX_W / 2, cy, node.s, ds), _Port(cx + BOX_W / 2, cy, node.a, da)
    ports = [_draw_node(pic, child, gap) for child in node.children]
    if node.op == "@":
        return [i for i, _ in ports], [o for _, o in ports]
    for (_, outs), (ins, _) in itertools.pairwise(ports):
        _connect(pic, outs, ins, gap)
    return ports[0][0], ports[-1][1]


def _centre(leaf: _Node, gap: float) -> tuple[float, float]:
    return leaf.col * (BOX_W + gap) + gap / 2 + BOX_W / 2, -(leaf.row + 0.5) * ROW


def _residue_columns(leaves: list[_Node]) -> dict[int, list[_Node]]:
    """The boxes with a residue, by column, top to bottom: their residue wires nest, the highest outermost."""
    columns: dict[int, list[_Node]] = {}
    for leaf in sorted(leaves, key=lambda leaf: leaf.row):
        if tree_leaves(leaf.m):
            columns.setdefault(leaf.col, []).append(leaf)
    return columns


def _stage_wires(pic: _Picture, leaves: list[_Node], columns: dict[int, list[_Node]], gap: float) -> None:
    """Parameter wires (``p`` in above, ``dp`` out below) and residue wires (``m`` turning back)."""
    from matplotlib import patheffects
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    p_room = BOX_W + gap - 0.15  # width a parameter label may take
    halo: list[Any] = [patheffects.withStroke(linewidth=3.2, foreground="white")]  # a wire crossing it is cut
    k_of = {id(leaf): k for col in columns.values() for k, leaf in enumerate(col)}  # 0: the outermost wire
    for idx, leaf in enumerate(leaves):  # in the order their boxes were drawn
        cx, cy = _centre(leaf, gap)
        top = cy + BOX_H / 2
        kind = type_of(leaf.p)
        halves = [("p", 1.0, 0.0, _ABOVE)] + ([("dp", -1.0, pic.mirror, _BELOW)] if pic.backward else [])
        for w, sign, base, style in halves if tree_leaves(leaf.p) else []:  # dp: the mirror image below
            ys = [base + sign * v for v in (top + PARAM_WIRE, top, top + PARAM_WIRE / 2, top + PARAM_WIRE + 0.05)]
            pic.ax.plot([cx, cx], ys[:2], color=PARAM, lw=1.4, zorder=2, gid=f"{w}-wire-{idx}")
            pic.ax.plot([cx], [ys[2]], marker="v", color=PARAM, ms=4, zorder=3)
            pic.label(cx, ys[3], f"{w}: {kind}", w, (p_room, 0.4), style)
        if id(leaf) not in k_of:
            continue
        n, k = len(columns[leaf.col]), k_of[id(leaf)]
        right, d = cx + BOX_W / 2, CH0 + CH_STEP * (n - 1 - k)
        y0 = cy - BOX_H / 4
        y1 = pic.mirror - cy + BOX_H / 4 if pic.backward else y0 - 0.45
        r = min(0.07, d / 2)
        verts = [(right, y0), (right + d - r, y0), (right + d, y0), (right + d, y0 - r), (right + d, y1 + r)]
        codes = [Path.MOVETO, Path.LINETO, Path.CURVE3, Path.CURVE3, Path.LINETO]
        if pic.backward:
            verts += [(right + d, y1), (right + d - r, y1), (right, y1)]
            codes += [Path.CURVE3, Path.CURVE3, Path.LINETO]
        wire = PathPatch(Path(verts, codes), fill=False, edgecolor=RESIDUE, lw=1.3, zorder=3)
        wire.set_path_effects(halo)
        wire.set_gid(f"residue-{idx}")
        pic.ax.add_patch(wire)
        pic.ax.plot([right + d], [y0 - 0.3 if pic.backward else y1], marker="v", color=RESIDUE, ms=4, zorder=3)
        room = (BOX_W + gap - d - 0.3, 0.3)
        if not pic.backward:
            pic.label(right + d + 0.08, y1 + 0.05, f"m: {type_of(leaf.m)}", "m", room, _RESIDUE)
        else:
            y = pic.mirror / 2 + (k - (n - 1) / 2) * 0.3  # labels of one column one above the other
            pic.label(right + d + 0.06, y, f"m: {type_of(leaf.m)}", "m", room, {**_RESIDUE, "bbox": _PLATE})


def _outer_wires(
    pic: _Picture, ins: Ports, outs: Ports, left: float, right: float, names: dict[str, Any] | None = None
) -> None:
    """The lens's own input and output wires, with their types: ``s``/``ds`` left, ``a``/``da`` right
    (``names``: as :func:`draw`'s)."""
    width = MARGIN - 0.2

    def name(kind: str, k: int) -> str:
        given = (names or {}).get(kind, kind)
        return given if isinstance(given, str) else str(given[k])

    for ports, edge, kinds, style in ((ins, left, ("s", "ds"), _LEFT), (outs, right, ("a", "da"), _RIGHT)):
        for k, port in enumerate(_flat(ports)):
            pic.wire(sorted([edge, port.x]), [port.y, port.y], arrow=0)
            v, d = name(kinds[0], k), name(kinds[1], k)
            pic.label(edge, port.y + 0.08, f"{v}: {type_of(port.value)}", v, (width, 0.4), style)
            if pic.backward:
                y, back = pic.mirror - port.y + 0.08, {**style, "color": DELTA}
                pic.label(edge, y, f"{d}: {type_of(port.delta)}", d, (width, 0.4), back)


def _pixels(ax: Any, width: float, height: float) -> tuple[float, float]:
    """Data units to display pixels (the axes use an equal aspect ratio)."""
    (x0, y0), (x1, y1) = ax.transData.transform([(0.0, 0.0), (width, height)])
    return abs(x1 - x0), abs(y1 - y0)


def _splits(name: str, lines: int) -> str:
    """``name`` on ``lines`` lines, broken after ``(``, ``,``, ``_``, spaces or arrows, longest line shortest."""
    cuts = [i for i in range(1, len(name)) if name[i - 1] in "(,_ →>@" or name[i] in "(["]
    bounds = ([0, *chosen, len(name)] for chosen in itertools.combinations(cuts, lines - 1))
    layouts = ([name[a:b].strip() for a, b in itertools.pairwise(ends)] for ends in bounds)
    best = min((parts for parts in layouts if all(parts)), key=lambda parts: max(map(len, parts)), default=[name])
    return "\n".join(best)


def _fit_box_labels(pic: _Picture, renderer: Any) -> None:
    """Every box label inside its box, wrapped on up to 3 lines if that helps, all at the median of their
    largest fitting sizes except a name that needs a smaller one."""
    avail_w, avail_h = _pixels(pic.ax, BOX_W - 0.2, BOX_H - 0.14)
    text = pic.boxes[0][1]
    options = {name: _layouts(text, name, avail_w, avail_h, renderer) for _, _, name in pic.boxes}
    best = sorted(max(size for size, _ in opts) for opts in options.values())
    common = best[len(best) // 2]
    for _, text, name in pic.boxes:
        # The fewest lines that fit within 15% of the common size; else the name's own best layout.
        fitting = [(min(size, common), layout) for size, layout in options[name] if size >= 0.85 * common]
        size, layout = fitting[0] if fitting else max(options[name])
        text.set_text(layout)
        text.set_fontsize(0.96 * size)


def _layouts(text: Any, name: str, avail_w: float, avail_h: float, renderer: Any) -> list[tuple[float, str]]:
    """``(largest font size that fits, layout)`` for ``name`` on 1, 2 and 3 lines (fewest lines first); a
    name that fits at no readable size is cut short with an ellipsis."""

    def largest(layout: str) -> float:
        text.set_text(layout)
        text.set_fontsize(10.0)
        box = text.get_window_extent(renderer)
        width, height = max(float(box.width), 1e-9), max(float(box.height), 1e-9)
        return min(MAX_FONT, 10.0 * avail_w / width, 10.0 * avail_h / height)

    found = [(largest(name), name)]
    for lines in (2, 3):
        layout = _splits(name, lines)
        if layout.count("\n") == lines - 1:
            found.append((largest(layout), layout))
    cut = name
    while max(size for size, _ in found) < MIN_FONT and len(cut) > 4:
        cut = cut[: max(4, int(len(cut) * 0.8))]
        layout = cut.rstrip("_(, ") + "…"
        found.append((largest(layout), layout))
    return found


def _fit_labels(pic: _Picture, renderer: Any, scale: float) -> None:
    """Wire labels scaled with the drawing; each keeps its type if it fits its room, else its short name."""
    for text, short, width, height in pic.labels:
        text.set_fontsize(max(2.5, float(text.get_fontsize()) * scale))
        w, h = _pixels(pic.ax, width, height)
        box = text.get_window_extent(renderer)
        if box.width > w or box.height > h:
            text.set_text(short)


def draw(
    lens: AnyLens,
    input_shape: Any,
    *,
    params: Any = None,
    ax: Any = None,
    rng: np.random.Generator | int | None = 0,
    dtype: Any = None,
    depth: int | None = None,
    backward: bool = True,
    da: Any = None,
    names: dict[str, Any] | None = None,
    wire_types: bool = True,
) -> Any:
    """Draw the string diagram of ``lens``, forward pass above and backward pass below; returns the ``Axes``.

    The picture is the module docstring's; labels give types, never values (``wire_types=False``: none on the wires
    between stages). ``backward=False`` draws the forward half alone. A delta wire carries its forward twin's type,
    unless ``da`` is given: the backward pass is then run stage by stage from it and each delta wire gets the type
    that flows on it. ``names`` renames the outer wires (``{"ds": "new (params, state)"}``, or a list, one per
    wire, top to bottom). ``input_shape``, ``dtype`` and ``depth`` are as for :func:`prelens.summary`.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from prelens.nn import linear, tanh
    >>> ax = draw(linear(3, 2) >> tanh, (3,))
    >>> len(ax.patches)  # two boxes in each pass, and one residue wire for each stage
    6
    >>> sorted(t.get_text() for t in ax.texts if t.get_text().startswith(("p:", "dp:")))
    ['dp: f64[3,2]', 'p: f64[3,2]']
    """
    import matplotlib.pyplot as plt

    _args.flag("draw", "backward", backward)
    if ax is not None and not callable(getattr(ax, "add_patch", None)):
        raise E.bad_argument("draw", "ax", ax, "a matplotlib Axes or None")
    s, p = example_run("draw", lens, input_shape, params, rng, dtype, depth)
    if names is not None and not (isinstance(names, dict) and set(names) <= {"s", "ds", "a", "da"}):
        raise E.bad_argument("draw", "names", names, "a dict from 's', 'ds', 'a', 'da' to names, or None")
    _args.flag("draw", "wire_types", wire_types)
    root = run_stages(lens, p, s, depth, _Node)
    for key, given in (names or {}).items():
        n = _wires(root)[key in ("a", "da")]
        if not (isinstance(given, str) or (isinstance(given, (list, tuple)) and len(given) == n)):
            expected = f"a string or a list of {n} names (one per wire, top to bottom)"
            raise E.bad_argument("draw", f"names[{key!r}]", given, expected)
    if da is not None:
        _backward(root, da)
    _place(root, 0, 0.0)
    leaves = root.leaves()
    columns = _residue_columns(leaves)
    stacked = max(map(len, columns.values()), default=1)
    gap = max(0.8, 2 * (CH0 + CH_STEP * (stacked - 1)) + 0.45)
    lead = None
    if wire_types and len(leaves) > 1:  # room for a type label on each wire between two stages
        lead, gap = WIRE_LABEL, gap / 2 + WIRE_LABEL  # the wire turns past the residues, then carries its type
    cols, rows = root.size
    width, height = cols * (BOX_W + gap), rows * ROW
    bottom = -2 * height - MID if backward else -height
    if ax is None:
        w_in, h_in = (width + 2 * MARGIN) * INCH, (-bottom + 1.3) * INCH
        shrink = min(1.0, MAX_INCHES[0] / w_in, MAX_INCHES[1] / h_in)
        fig, ax = plt.subplots(figsize=(max(4.0, w_in * shrink), max(2.0, h_in * shrink)))
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93)
    pic = _Picture(ax, height, backward, lead)
    ins, outs = _draw_node(pic, root, gap)
    _outer_wires(pic, ins, outs, -MARGIN, width + MARGIN, names)
    _stage_wires(pic, leaves, columns, gap)
    captions = [ax.text(-MARGIN, 0.55, "forward   fwd(p, s) → (m, a)", va="bottom", **_CAPTION)]
    if backward:
        trace = "backward   bwd(m, da) → (dp, ds)   (the trace: dm = m)"
        captions.append(ax.text(-MARGIN, bottom - 0.55, trace, va="top", **_CAPTION))
    ax.set_xlim(-MARGIN - 0.1, width + MARGIN + 0.1)
    ax.set_ylim(bottom - 1.0, 1.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(repr(lens), fontsize=9)
    ax.apply_aspect()
    # Text is sized for INCH inches per unit; in a smaller drawing (a given ax) it shrinks with it.
    scale = min(1.0, _pixels(ax, 1.0, 1.0)[0] / (INCH * ax.figure.dpi))
    for caption in captions:
        caption.set_fontsize(max(3.0, 8 * scale))
    get = getattr(ax.figure.canvas, "get_renderer", None)
    renderer = get() if get is not None else ax.figure._get_renderer()
    _fit_box_labels(pic, renderer)
    _fit_labels(pic, renderer, scale)
    return ax
