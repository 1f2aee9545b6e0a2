"""Draw docs/img/conventions.png, the picture of docs/conventions.md: python tools/draw_conventions.py."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch


def box(ax, x, y, w, h, text, face="#f4f1e8", ls="-", fs=11, va="center", ty=None):
    ax.add_patch(
        FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.08", fc=face, ec="black", ls=ls, lw=1.0)
    )
    ax.text(x + w / 2, y + h / 2 if ty is None else ty, text, ha="center", va=va, fontsize=fs)


def arrow(ax, x0, y0, x1, y1, color="black"):
    ax.annotate("", (x1, y1), (x0, y0), arrowprops={"arrowstyle": "->", "color": color, "lw": 1.3})


fig, axes = plt.subplots(1, 3, figsize=(15, 3.6))
for ax in axes:
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 6)
    ax.set_aspect("equal")
    ax.axis("off")
a = axes[0]
a.set_title("1. f >> g: data-flow order", fontsize=12)
box(a, 2.2, 2.2, 1.8, 1.2, "f")
box(a, 6.0, 2.2, 1.8, 1.2, "g")
arrow(a, 0.3, 2.8, 2.2, 2.8)
arrow(a, 4.0, 2.8, 6.0, 2.8)
arrow(a, 7.8, 2.8, 9.7, 2.8)
a.text(0.3, 3.0, "s", fontsize=11)
a.text(9.4, 3.0, "a", fontsize=11)
a.text(5.0, 1.2, "residues (m_f, m_g): data-flow order", ha="center", fontsize=10, color="tab:red")
a = axes[1]
a.set_title("2. parameters: the later lens first", fontsize=12)
box(a, 2.2, 1.6, 1.8, 1.2, "f")
box(a, 6.0, 1.6, 1.8, 1.2, "g")
arrow(a, 0.3, 2.2, 2.2, 2.2)
arrow(a, 4.0, 2.2, 6.0, 2.2)
arrow(a, 7.8, 2.2, 9.7, 2.2)
a.text(5.0, 5.2, "p = (p_g, p_f)", ha="center", fontsize=12, color="tab:blue")
arrow(a, 4.4, 5.0, 6.9, 2.8, "tab:blue")
arrow(a, 5.6, 5.0, 3.1, 2.8, "tab:blue")
a.text(5.0, 0.6, "preCompose: (q, p) for l1 then l2", ha="center", fontsize=10, color="dimgray")
a = axes[2]
a.set_title("3. TriLenses: F(G(t)), applied against the flow", fontsize=12)
box(a, 0.6, 0.6, 8.8, 4.6, "", face="#ffffff", ls="--")
a.text(1.0, 4.6, "F(G(t)) = to_tamb(f)(to_tamb(g)(t))", fontsize=10)
box(a, 4.0, 1.0, 5.0, 3.2, "", face="#fbfbfb", ls="--")
a.text(4.3, 3.7, "G(t)", fontsize=10)
box(a, 1.3, 1.9, 1.8, 1.2, "f")
box(a, 4.6, 1.9, 1.8, 1.2, "g")
box(a, 7.0, 1.9, 1.6, 1.2, "t", face="#e7eef6")
arrow(a, 3.1, 2.5, 4.6, 2.5)
arrow(a, 6.4, 2.5, 7.0, 2.5)
a.text(5.0, 0.0, "G is applied first; f still runs first", ha="center", fontsize=10, color="dimgray")
fig.savefig(
    __import__("pathlib").Path(__file__).resolve().parent.parent / "docs" / "img" / "conventions.png",
    dpi=150,
    bbox_inches="tight",
)
