"""The teaching notebooks run from top to bottom without errors, and every picture in them is readable.

The notebooks are discovered (``notebooks/*.ipynb``), so a new one is tested as soon as it is
added; the ones the docs and the lesson plan refer to must be among them.

Each notebook is executed afresh with nbclient in a ``python3`` kernel of *this* interpreter
(ipykernel's own kernel spec, never one found on the machine), with the notebooks directory as its
working directory and matplotlib's inline backend forced, so the test runs headless, from any
working directory and under pytest-xdist. The notebooks on disk are never written to.

Before the notebook's first cell, the kernel runs :data:`FIGURE_RULES`, which inspects every figure
just before it is rendered and refuses it (an error output in the cell that shows it) if a plot lacks a title or axis labels,
if an image or filled contour lacks a colour bar, or if a text (title, label, tick label) of one
plot runs into another plot or its texts. String diagrams (axes switched off) are drawn by
``prelens.diagram``, which tests its own text extents.
"""

import re
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import RESOURCES, get_kernel_dict
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import default

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
#: Notebooks that docs/tutorial.md, docs/lecture.md and the other notebooks refer to by name.
KNOWN = [
    "01_prelenses",
    "01b_optics",
    "02_tambara",
    "03_mlp",
    "04_attention",
    "05_laws",
    "06_transformer",
    "08_learning_as_optics",
    "09_convolution_and_recurrence",
]
CELL_TIMEOUT = 180  # seconds; the slowest cell (training a transformer) takes a few
INLINE = "module://matplotlib_inline.backend_inline"
BIBLIOGRAPHY = "../docs/bibliography.md"

#: Run in the kernel before the notebook: every figure is checked as it is rendered.
FIGURE_RULES = r'''
import matplotlib.contour as _contour
from matplotlib.backend_bases import FigureCanvasBase as _Canvas


def _figure_problems(fig):
    """What makes a figure hard to read: missing titles, labels, colour bars; texts running into other plots."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    plots = [ax for ax in fig.axes if ax.axison and ax.get_visible() and not hasattr(ax, "_colorbar")]
    suptitle = fig._suptitle.get_text() if fig._suptitle is not None else ""
    supx = fig._supxlabel.get_text() if fig._supxlabel is not None else ""
    supy = fig._supylabel.get_text() if fig._supylabel is not None else ""
    # one colour bar may serve several heatmaps drawn on the same scale (a row of attention heads)
    shared = {_scale(ax._colorbar.mappable) for ax in fig.axes if hasattr(ax, "_colorbar")}
    problems = []
    for ax in plots:
        name = repr(ax.get_title() or suptitle or "a plot")
        if not (ax.get_title() or ax.get_title("left") or ax.get_title("right") or suptitle):
            problems.append(f"{name} has no title")
        if not (ax.get_xlabel() or supx):
            problems.append(f"{name} has no x-axis label")
        if not (ax.get_ylabel() or supy):
            problems.append(f"{name} has no y-axis label")
        mapped = list(ax.images) + [c for c in ax.collections if isinstance(c, _contour.ContourSet) and c.filled]
        if any(getattr(m, "colorbar", None) is None and _scale(m) not in shared for m in mapped):
            problems.append(f"{name} shows a heatmap without a colour bar")

    def shown(axis, lim):
        """The tick labels drawn: those whose ticks lie within the axis's view limits."""
        lo, hi = min(lim), max(lim)
        slack = 1e-9 * max(abs(lo), abs(hi), 1.0)
        return [t for x, t in zip(axis.get_majorticklocs(), axis.get_majorticklabels()) if lo - slack <= x <= hi + slack]

    def texts(ax):
        found = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        found += shown(ax.xaxis, ax.get_xlim()) + shown(ax.yaxis, ax.get_ylim())
        return [t for t in found if t.get_visible() and t.get_text().strip()]

    owners = [ax for ax in fig.axes if ax.axison and ax.get_visible()]
    boxes = {id(ax): [(t.get_text(), t.get_window_extent(renderer)) for t in texts(ax)] for ax in owners}
    areas = {id(ax): ax.get_window_extent(renderer) for ax in owners}
    for i, a in enumerate(owners):
        for b in owners[i + 1 :]:
            for text, box in boxes[id(a)]:
                hit = next((t for t, other in boxes[id(b)] if box.overlaps(other)), None)
                if hit is not None:
                    problems.append(f"{text!r} and {hit!r} of two plots run into each other")
            for (text, box), other in [(tb, b) for tb in boxes[id(a)]] + [(tb, a) for tb in boxes[id(b)]]:
                if box.overlaps(areas[id(other)]):
                    problems.append(f"{text!r} runs into another plot")
    return sorted(set(problems))


def _scale(mappable):
    """What a colour bar tells about a heatmap: its colour map and the values at its two ends."""
    return mappable.get_cmap().name, mappable.norm.vmin, mappable.norm.vmax


_print_figure = _Canvas.print_figure


def _checked_print_figure(self, *args, **kwargs):
    problems = _figure_problems(self.figure)
    if problems:
        raise AssertionError("unreadable figure: " + "; ".join(problems))
    return _print_figure(self, *args, **kwargs)


_Canvas.print_figure = _checked_print_figure
'''


class ThisPythonSpecs(KernelSpecManager):
    """Every kernel name resolves to ipykernel's kernel run by ``sys.executable``."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())


class ThisPythonKernel(AsyncKernelManager):
    """A kernel manager that finds its kernel through :class:`ThisPythonSpecs`."""

    @default("kernel_spec_manager")
    def _kernel_spec_manager_default(self) -> KernelSpecManager:
        return ThisPythonSpecs()


def read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def outputs(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def images(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {}) for out in outputs(nb))


def markdown(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown"]


def errors(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """Error outputs: a failed cell, or a figure the rules refused (IPython shows a display's error as one)."""
    return [out for out in outputs(nb) if out.output_type == "error"]


def execute(nb: nbformat.NotebookNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``nb`` in a fresh kernel (in place), the figure rules first."""
    monkeypatch.setenv("MPLBACKEND", INLINE)  # inherited by the kernel: never a GUI backend
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # no shared profile between workers
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # connection files
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "hypothesis"))  # not in notebooks/
    nb.cells.insert(0, nbformat.v4.new_code_cell(FIGURE_RULES))
    client = NotebookClient(
        nb,
        kernel_name="python3",
        kernel_manager_class=ThisPythonKernel,  # nbclient owns the kernel: it shuts it down and closes its sockets
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        record_timing=False,
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails


def test_the_known_notebooks_are_there():
    assert set(KNOWN) <= set(NAMES), f"missing: {sorted(set(KNOWN) - set(NAMES))}"


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_executed(name):
    """Committed with outputs, so it reads well on GitHub: every code cell ran once, in order."""
    nb = read(name)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert not errors(nb)
    assert images(nb) >= 1


@pytest.mark.parametrize("name", NAMES)
def test_notebook_cites_the_bibliography(name):
    """Every notebook ends its reading with a "References" section that links the bibliography."""
    sections = [text for text in markdown(read(name)) if re.search(r"^## References\b", text, re.M)]
    assert sections, f"{name} has no '## References' section"
    assert BIBLIOGRAPHY in sections[-1], f"{name}'s references do not link {BIBLIOGRAPHY}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_links_are_relative_and_exist(name):
    """Every relative link of a markdown cell points at a file of the repository."""
    for text in markdown(read(name)):
        for target in re.findall(r"\]\((?!https?:)([^)#\s]+)", text):
            assert (NOTEBOOKS / target).resolve().is_file() or target == BIBLIOGRAPHY, f"{name}: broken link {target}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, tmp_path, monkeypatch):
    nb = read(name)
    execute(nb, tmp_path, monkeypatch)
    assert not errors(nb), f"{name}: " + "; ".join(f"{out.ename}: {out.evalue}" for out in errors(nb))
    assert images(nb) >= 1, f"{name} shows no picture"


def test_the_figure_rules_can_fail(tmp_path, monkeypatch):
    """The rules catch a plot without labels, a heatmap without a colour bar, and overlapping texts."""
    plots = {
        "no labels": "fig, ax = plt.subplots(); ax.plot([1, 2]); ax.set_title('t'); plt.show()",
        "no colour bar": (
            "fig, ax = plt.subplots(); ax.imshow(np.eye(3)); ax.set_title('t'); ax.set_xlabel('x'); ax.set_ylabel('y'); plt.show()"
        ),
        "overlap": (
            "fig, axes = plt.subplots(2, 1, figsize=(3, 2))\n"
            "for ax in axes:\n"
            "    ax.plot([1, 2]); ax.set_title('a long title over the plot'); ax.set_xlabel('x label'); ax.set_ylabel('y')\n"
            "plt.show()"
        ),
    }
    setup = "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np"
    cells = [nbformat.v4.new_code_cell(setup)] + [nbformat.v4.new_code_cell(source) for source in plots.values()]
    nb = nbformat.v4.new_notebook(cells=cells)
    execute(nb, tmp_path, monkeypatch)  # a refused figure is an error output; the cells after it still run
    for what, cell in zip(plots, nb.cells[-len(plots) :]):
        refused = [out for out in cell.outputs if out.output_type == "error" and "unreadable figure" in out.evalue]
        assert refused, f"the rules let a plot with {what} through"


# ------------------------------------------------------------------ the lesson plan
LECTURE = NOTEBOOKS.parent / "docs" / "lecture.md"
#: A row of the plan: "| 0:05–0:20 | what | material | question |".
PLAN_ROW = re.compile(r"^\| (\d):(\d\d)–(\d):(\d\d) \| (.*?) \| (.*?) \|", re.M)
#: "`01_prelenses`: "The linear part" to "The backward pass"": a notebook and the sections it names.
SECTIONS = re.compile(r"`(\d\w*)`:? \(?((?:\"[^\"]+\"(?:,| to| and)? ?)+)")


def sections(name: str) -> dict[str, str]:
    """Heading -> the code of the cells under it, up to the next heading of any level."""
    found: dict[str, str] = {}
    heading = ""
    for cell in read(name).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip()
                    found.setdefault(heading, "")
        else:
            found[heading] = found.get(heading, "") + cell.source + "\n"
    return found


def titles(quoted: str) -> list[str]:
    """The section titles in quotes, their line breaks made spaces."""
    return [" ".join(title.split()) for title in re.findall(r'"([^"]+)"', quoted)]


def plan() -> list[tuple[int, int, str, str]]:
    """(start, end in minutes, what, material) of each row of the lesson plan."""
    rows = PLAN_ROW.findall(LECTURE.read_text())
    return [(60 * int(h0) + int(m0), 60 * int(h1) + int(m1), what, where) for h0, m0, h1, m1, what, where in rows]


def test_the_lesson_plan_fills_90_minutes_without_gaps():
    rows = plan()
    assert rows[0][0] == 0 and rows[-1][1] == 90
    assert all(end == start for (_, end, _, _), (start, _, _, _) in pairwise(rows))


def test_the_lesson_plan_names_sections_that_exist_and_run_what_it_says():
    """Every notebook section the plan (and its homework) names is there, and a ``check_*`` the
    plan's step says it runs is run in the sections that step names."""
    text = LECTURE.read_text()
    for name, quoted in SECTIONS.findall(text):
        headings = sections(name)
        for title in titles(quoted):
            assert any(h.startswith(title) for h in headings), f"{name} has no section {title!r}"
    for _, _, what, where in plan():
        code = "".join(
            body
            for name, quoted in SECTIONS.findall(where)
            for heading, body in sections(name).items()
            if any(heading.startswith(t) for t in titles(quoted))
        )
        for check in re.findall(r"`(check_\w+)`", what):
            assert f"{check}(" in code, f"the plan's step {what[:40]!r} runs {check}, which {where!r} never calls"


def test_the_lesson_plan_says_which_notebooks_to_open_before_class():
    before = re.search(r"\*\*Before class\.\*\*(.*?)\n\n", LECTURE.read_text(), re.S).group(1)
    used = {name for _, _, _, where in plan() for name, _ in SECTIONS.findall(where)}
    assert used and all(f"`{name}`" in before for name in used), f"open before class: {sorted(used)}"
