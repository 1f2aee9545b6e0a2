"""Sphinx configuration of the docs site: the pages of docs/ and the executed notebooks of notebooks/.

Build from the repository root (the source directory is the root, so that the notebooks' links
to ``../docs/*.md`` and the pages' names resolve as they do on GitHub; this file is the config)::

    sphinx-build -W --keep-going -c docs . build/site

The notebooks are rendered from their committed outputs (``nb_execution_mode = "off"``):
tests/test_notebooks.py executes them in CI. Why Sphinx with MyST-NB: docs/dependencies.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

project = "prelens"
author = "the prelens authors"
copyright = "the prelens authors"
release = next(
    line.split("=", 1)[1].strip().strip("\"'")
    for line in (ROOT / "prelens" / "_version.py").read_text().splitlines()
    if line.startswith("__version__")
)
version = release

extensions = ["myst_nb"]  # MyST-NB registers myst_parser itself (Markdown pages and notebooks)

# The sources: the pages of docs/ and the top-level notebooks, nothing else of the repository.
root_doc = "docs/index"
include_patterns = ["docs/*.md", "notebooks/*.ipynb"]
# Directories the walk need not enter (".*": .venv, .git, .ci and the caches at the top).
exclude_patterns = [
    ".*",
    "build",
    "prelens",
    "tests",
    "tests_peers",
    "tests_site",
    "examples",
    "tools",
    "**/.ipynb_checkpoints",
]

# MyST: GitHub's heading slugs, so links such as ``concepts.md#the-one-type`` resolve.
myst_heading_anchors = 4

# MyST-NB: show the committed outputs; never run a notebook here.
nb_execution_mode = "off"

html_theme = "alabaster"
html_title = f"prelens {release}"
html_static_path: list[str] = []
html_theme_options = {"description": "Neural networks as pre-lenses", "page_width": "1100px"}

# The pages keep their GitHub form (docs/index.md lists the pages in prose): the site's table of
# contents is added here, hidden, to the root page as it is read, so the sources need no
# Sphinx-only block that GitHub would show as code.
PAGES = [
    "concepts",
    "tutorial",
    "laws",
    "faithful",
    "tambara",
    "learning",
    "model-files",
    "backends",
    "gotchas",
    "api",
    "architecture",
    "dependencies",
    "performance",
    "lecture",
    "conventions",
    "exercises",
    "bibliography",
]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
TOCTREE = (
    "\n\n```{toctree}\n:hidden:\n:caption: Pages\n\n"
    + "\n".join(PAGES)
    + "\n```\n\n```{toctree}\n:hidden:\n:caption: Notebooks\n\n"
    + "\n".join(f"../notebooks/{n}" for n in NOTEBOOKS)
    + "\n```\n"
)


def _add_toctree(app: Any, docname: str, source: list[str]) -> None:
    if docname == root_doc:
        source[0] += TOCTREE


def _redirect_root(app: Any, exception: Exception | None) -> None:
    """build/site/index.html sends the browser to docs/index.html (the root page's place)."""
    if exception is None and app.builder.format == "html":
        page = '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=docs/index.html">'
        (Path(app.outdir) / "index.html").write_text(page + '<a href="docs/index.html">prelens docs</a>\n')


def setup(app: Any) -> None:
    app.connect("source-read", _add_toctree)
    app.connect("build-finished", _redirect_root)
