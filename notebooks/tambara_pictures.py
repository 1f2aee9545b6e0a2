"""Pictures of ``alpha``, ``beta`` and ``to_tamb`` for notebook 2, drawn by hand with matplotlib.

Each draws on a given ``Axes``: a module value ``t`` as one box in both passes (forward above,
backward below), data black, deltas grey, parameters blue, residues red, every wire named.
"""

from matplotlib.patches import FancyBboxPatch, Rectangle

DATA, DELTA, PARAM, RESIDUE = "black", "#4a4a4a", "tab:blue", "tab:red"


def box(ax, x, y, text, face="#f4f1e8", w=1.6, h=0.9):
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.08",
            facecolor=face,
            edgecolor="black",
            lw=1.0,
            zorder=4,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=10, zorder=5)


def wire(ax, xs, ys, color, arrow=None, at=0):
    """A wire through the points; ``arrow`` ('>', '<', 'v', '^') in the middle of segment ``at``."""
    ax.plot(xs, ys, color=color, lw=1.4, zorder=2, solid_capstyle="butt")
    if arrow:
        ax.plot([(xs[at] + xs[at + 1]) / 2], [(ys[at] + ys[at + 1]) / 2], marker=arrow, color=color, ms=5, zorder=3)


def lab(ax, x, y, text, color, ha="left", va="bottom"):
    ax.text(
        x,
        y,
        text,
        color=color,
        fontsize=9,
        ha=ha,
        va=va,
        zorder=6,
        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
    )


def panel(ax, x0, x1, title):
    ax.set_xlim(-0.2, 10.2)
    ax.set_ylim(-0.3, 9.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.add_patch(Rectangle((x0, 0.9), x1 - x0, 7.2, fill=False, ls="--", ec="gray", lw=1.0, zorder=1))
    ax.set_title(title, fontsize=11)
    ax.text(0.0, 7.2, "forward", fontsize=8, style="italic", color="dimgray")
    ax.text(0.0, 3.2, "backward", fontsize=8, style="italic", color="dimgray")


def draw_alpha(ax):
    panel(ax, 1.8, 8.2, "alpha(t): an extra residue m1 rides past t")
    box(ax, 5, 6, "t")
    box(ax, 5, 2, "t", face="#e7eef6")
    wire(ax, [0, 2.6], [6, 6], DATA, ">")
    lab(ax, 0.1, 6.1, "(m1, s)", DATA)
    wire(ax, [2.6, 4.2], [6, 6], DATA)
    lab(ax, 3.0, 6.1, "s", DATA)
    wire(ax, [2.6, 2.6, 7.2], [6, 4.9, 4.9], RESIDUE)
    lab(ax, 3.6, 4.95, "m1", RESIDUE)
    wire(ax, [5, 5], [8.6, 6.45], PARAM, "v")
    lab(ax, 5.15, 7.2, "p", PARAM)
    wire(ax, [5.8, 10], [6, 6], DATA, ">")
    lab(ax, 9.9, 6.1, "a", DATA, ha="right")
    wire(ax, [5.8, 6.6, 6.6, 7.2], [5.75, 5.75, 4.9, 4.9], RESIDUE)
    lab(ax, 6.7, 5.3, "m", RESIDUE)
    wire(ax, [7.2, 7.2], [4.9, 3.1], RESIDUE, "v")
    lab(ax, 7.3, 4.3, "(m1, m)", RESIDUE)
    lab(ax, 7.3, 3.35, "(dm1, dm)", RESIDUE)
    wire(ax, [7.2, 6.6, 6.6, 5.8], [3.1, 3.1, 2.25, 2.25], RESIDUE)
    lab(ax, 6.7, 2.5, "dm", RESIDUE)
    wire(ax, [7.2, 2.6, 2.6], [3.1, 3.1, 2.0], RESIDUE)
    lab(ax, 3.6, 3.15, "dm1", RESIDUE)
    wire(ax, [10, 5.8], [2, 2], DELTA, "<")
    lab(ax, 9.9, 2.1, "da", DELTA, ha="right")
    wire(ax, [4.2, 2.6], [2, 2], DELTA)
    lab(ax, 3.0, 2.1, "ds", DELTA)
    wire(ax, [2.6, 0], [2, 2], DELTA, "<")
    lab(ax, 0.1, 2.1, "(dm1, ds)", DELTA)
    wire(ax, [5, 5], [1.55, -0.2], PARAM, "v")
    lab(ax, 5.15, 0.2, "dp", PARAM)


def draw_beta(ax):
    panel(ax, 1.8, 8.2, "beta(t): part of t's input becomes a parameter")
    box(ax, 5, 6, "t")
    box(ax, 5, 2, "t", face="#e7eef6")
    wire(ax, [0, 4.2], [6, 6], DATA, ">")
    lab(ax, 0.1, 6.1, "s", DATA)
    wire(ax, [5, 5], [8.6, 6.45], PARAM, "v")
    lab(ax, 5.15, 8.2, "(p, p1)", PARAM)
    wire(ax, [5, 3.2, 3.2, 4.2], [7.4, 7.4, 6.25, 6.25], PARAM)
    lab(ax, 3.3, 7.45, "p1", PARAM)
    lab(ax, 5.15, 6.9, "p", PARAM)
    lab(ax, 2.0, 5.2, "t's input: (p1, s)", "dimgray")
    wire(ax, [5.8, 10], [6, 6], DATA, ">")
    lab(ax, 9.9, 6.1, "a", DATA, ha="right")
    wire(ax, [5.8, 6.6, 6.6, 5.8], [5.75, 5.75, 2.25, 2.25], RESIDUE, "v", at=1)
    lab(ax, 6.7, 4.0, "m", RESIDUE)
    wire(ax, [10, 5.8], [2, 2], DELTA, "<")
    lab(ax, 9.9, 2.1, "da", DELTA, ha="right")
    wire(ax, [4.2, 0], [2, 2], DELTA, "<")
    lab(ax, 0.1, 2.1, "ds", DELTA)
    wire(ax, [4.2, 3.2, 3.2, 5.0], [1.75, 1.75, 0.6, 0.6], PARAM)
    lab(ax, 2.3, 1.0, "dp1", PARAM)
    lab(ax, 2.0, 2.7, "t's input delta: (dp1, ds)", "dimgray")
    wire(ax, [5, 5], [1.55, -0.2], PARAM, "v")
    lab(ax, 5.15, 1.0, "dp", PARAM)
    lab(ax, 5.15, -0.2, "(dp, dp1)", PARAM)


def draw_to_tamb(ax):
    panel(ax, 1.5, 8.7, "to_tamb(l)(t) = beta(dimap_s(fw, bw, alpha(t)))")
    box(ax, 3.4, 6, "fw", face="#ececec")
    box(ax, 6.6, 6, "t")
    box(ax, 3.4, 2, "bw", face="#ececec")
    box(ax, 6.6, 2, "t", face="#e7eef6")
    wire(ax, [0, 2.6], [6, 6], DATA, ">")
    lab(ax, 0.1, 6.1, "s", DATA)
    wire(ax, [5, 5], [8.9, 7.6], PARAM, "v")
    lab(ax, 5.15, 8.2, "(p1, p)", PARAM)
    wire(ax, [3.4, 6.6], [7.6, 7.6], PARAM)
    wire(ax, [3.4, 3.4], [7.6, 6.45], PARAM, "v")
    lab(ax, 3.55, 6.8, "p", PARAM)
    wire(ax, [6.6, 6.6], [7.6, 6.45], PARAM, "v")
    lab(ax, 6.75, 6.8, "p1", PARAM)
    wire(ax, [4.2, 5.8], [6, 6], DATA, ">")
    lab(ax, 4.6, 6.1, "a", DATA)
    wire(ax, [4.2, 4.6, 4.6, 8.1], [5.75, 5.75, 4.9, 4.9], RESIDUE)
    lab(ax, 4.7, 5.0, "m", RESIDUE)
    wire(ax, [7.4, 8.1, 8.1], [5.75, 5.75, 3.1], RESIDUE, "v", at=1)
    lab(ax, 7.5, 5.3, "m1", RESIDUE)
    lab(ax, 8.2, 4.3, "(m, m1)", RESIDUE)
    lab(ax, 8.2, 3.35, "(dm, dm1)", RESIDUE)
    wire(ax, [7.4, 10], [6, 6], DATA, ">")
    lab(ax, 9.9, 6.1, "b", DATA, ha="right")
    wire(ax, [8.1, 7.4], [2.25, 2.25], RESIDUE)
    wire(ax, [8.1, 8.1], [3.1, 2.25], RESIDUE)
    lab(ax, 7.5, 2.3, "dm1", RESIDUE)
    wire(ax, [8.1, 4.6, 4.6, 4.2], [3.1, 3.1, 2.25, 2.25], RESIDUE)
    lab(ax, 4.7, 3.15, "dm", RESIDUE)
    wire(ax, [10, 7.4], [2, 2], DELTA, "<")
    lab(ax, 9.9, 2.1, "db", DELTA, ha="right")
    wire(ax, [5.8, 4.2], [2, 2], DELTA, "<")
    lab(ax, 4.6, 1.6, "da", DELTA, va="top")
    wire(ax, [2.6, 0], [2, 2], DELTA, "<")
    lab(ax, 0.1, 2.1, "ds", DELTA)
    wire(ax, [3.4, 3.4, 6.6, 6.6], [1.55, 0.6, 0.6, 1.55], PARAM)
    lab(ax, 3.55, 0.9, "dp", PARAM)
    lab(ax, 6.75, 0.9, "dp1", PARAM)
    wire(ax, [5.0, 5.0], [0.6, -0.2], PARAM, "v")
    lab(ax, 5.15, -0.25, "(dp1, dp)", PARAM)
