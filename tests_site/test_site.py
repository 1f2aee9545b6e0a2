"""The docs site builds without a warning, and a browser renders it: the lecture, a notebook, a diagram.

Not part of the README's test command: ``.ci/run`` runs these after installing the ``docs``
extra and Debian's ``chromium`` (see README, "The docs site"). Nothing here skips: without
chromium or Sphinx the tests fail, since CI installs both.

The site is built into a temporary directory by the ``site`` fixture (``sphinx-build -W
--keep-going``, warnings are errors), or taken from ``PRELENS_SITE`` when that names a site
already built with the same command (``.ci/run`` builds it once, as a step of its own).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1280, 2000

#: The pages the browser opens, the text each must contain, and the diagram among them.
LECTURE = "docs/lecture.html"
NOTEBOOK = "notebooks/01_prelenses.html"
DIAGRAM_PAGE = "docs/conventions.html"
DIAGRAM = "conventions.png"  # docs/img/conventions.png, near the top of docs/conventions.md


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("PRELENS_SITE")
    if given:
        path = Path(given).resolve()
        assert (path / "docs" / "index.html").is_file(), f"PRELENS_SITE={given} holds no built site"
        return path
    out = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-c", "docs", ".", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout}\n{done.stderr}"
    return out


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Debian's chromium is not on PATH: `apt-get install -y chromium` (.ci/run installs it)")


def browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run([chromium(), *flags, *args], capture_output=True, text=True, timeout=300)


def screenshot(site: Path, page: str, tmp_path: Path) -> Path:
    png = tmp_path / (page.replace("/", "_") + ".png")
    url = (site / page).as_uri()
    done = browser(tmp_path, f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", url)
    assert done.returncode == 0 and png.is_file(), f"no screenshot of {page}:\n{done.stderr[-3000:]}"
    return png


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG signature and IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def rgb(path: Path) -> np.ndarray:
    """The pixels as 0xRRGGBB integers (matplotlib reads the PNG: the notebooks extra has it)."""
    import matplotlib.image

    a = np.round(matplotlib.image.imread(str(path))[..., :3] * 255).astype(np.uint32)
    return (a[..., 0] << 16) | (a[..., 1] << 8) | a[..., 2]


def check_screenshot(png: Path) -> np.ndarray:
    assert png_size(png) == (WIDTH, HEIGHT), f"{png.name}: {png_size(png)}"
    assert png.stat().st_size > 20_000, f"{png.name}: {png.stat().st_size} bytes, a blank page?"
    pixels = rgb(png)
    colours = np.unique(pixels).size
    assert colours > 100, f"{png.name}: {colours} distinct colours, a blank page?"
    top = np.unique(pixels, return_counts=True)[1].max() / pixels.size
    assert top < 0.97, f"{png.name}: one colour covers {top:.1%} of the screenshot"
    return pixels


def dom(site: Path, page: str, tmp_path: Path) -> str:
    done = browser(tmp_path, "--dump-dom", (site / page).as_uri())
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_site_has_every_page_and_notebook(site: Path) -> None:
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert pages and notebooks
    assert {p.stem for p in (site / "docs").glob("*.html")} >= pages
    assert {p.stem for p in (site / "notebooks").glob("*.html")} >= notebooks
    assert "docs/index.html" in (site / "index.html").read_text()  # the site's root sends you there


def test_diagram_page_references_the_copied_image(site: Path) -> None:
    html = (site / DIAGRAM_PAGE).read_text()
    sources = re.findall(r'<img[^>]*src="([^"]+)"', html)
    assert any(src.endswith("/" + DIAGRAM) for src in sources), sources
    for src in sources:
        copied = (site / DIAGRAM_PAGE).parent / src
        assert copied.is_file(), f"{DIAGRAM_PAGE} shows {src}, which was not copied"
    copied = (site / DIAGRAM_PAGE).parent / next(s for s in sources if s.endswith("/" + DIAGRAM))
    assert copied.read_bytes() == (ROOT / "docs" / "img" / DIAGRAM).read_bytes()


def test_notebook_page_shows_committed_outputs(site: Path) -> None:
    html = (site / NOTEBOOK).read_text()
    assert html.count('class="cell_output') >= 5, "the notebook's outputs are missing"
    images = re.findall(r'<img[^>]*src="([^"]+\.png)"', html)
    assert images, "no figure among the notebook's outputs"
    assert all(((site / NOTEBOOK).parent / src).is_file() for src in images)


@pytest.mark.parametrize(
    ("page", "heading"),
    [(LECTURE, "A 90-minute class"), (NOTEBOOK, "Pre-lenses"), (DIAGRAM_PAGE, "orderings")],
)
def test_browser_opens_page(site: Path, tmp_path: Path, page: str, heading: str) -> None:
    text = dom(site, page, tmp_path)
    title = re.search(r"<title>(.*?)</title>", text, re.S)
    assert title and heading.lower() in title.group(1).lower(), f"{page}: title {title and title.group(1)!r}"
    check_screenshot(screenshot(site, page, tmp_path))


def test_browser_draws_the_diagram(site: Path, tmp_path: Path) -> None:
    """The diagram's own fill colour (its boxes) covers a visible patch of the rendered page.

    The control is the notebook page, whose code cells are drawn in a near colour (#faf3e8 in
    alabaster): there the same test finds (almost) nothing, so a hit means the picture is drawn.
    """
    diagram = rgb(ROOT / "docs" / "img" / DIAGRAM)
    values, counts = np.unique(diagram, return_counts=True)
    fill = next(int(v) for v in values[np.argsort(-counts)] if v != 0xFFFFFF)  # the most common non-white

    def patch(pixels: np.ndarray) -> int:
        near = np.ones(pixels.shape, bool)
        for shift in (16, 8, 0):
            near &= np.abs(((pixels >> shift) & 0xFF).astype(int) - ((fill >> shift) & 0xFF)) <= 1
        return int(near.sum())

    drawn = patch(check_screenshot(screenshot(site, DIAGRAM_PAGE, tmp_path)))
    control = patch(check_screenshot(screenshot(site, NOTEBOOK, tmp_path)))
    assert control < 100, f"the notebook page has {control} pixels of #{fill:06x}: pick another colour"
    assert drawn >= 1000, f"the diagram's fill #{fill:06x} covers {drawn} pixels of {DIAGRAM_PAGE}: not drawn?"
