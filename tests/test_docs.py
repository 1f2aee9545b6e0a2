"""Every code block of the README and docs/ runs: ``pycon`` blocks as doctests, ``python`` blocks as scripts."""

import doctest
import importlib
import json
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(page: Path, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(page.read_text()) if kind == lang]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    namespace: dict = {"__name__": "__docs__"}
    for body in blocks(page, "python"):
        exec(compile(body, str(page), "exec"), namespace)
    text = "\n".join(blocks(page, "pycon"))
    if text:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(text, namespace, page.name, str(page), 0)
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE  # error messages are checked too
        runner = doctest.DocTestRunner(optionflags=flags)
        runner.run(test)
        assert runner.failures == 0, f"{runner.failures} doctest failures in {page.name} (see output above)"


def test_every_page_has_code():
    prose = {"index.md", "dependencies.md", "bibliography.md"}  # pages with nothing to run
    # ``python jax`` blocks need the jax/torch extras: tests_peers/test_docs_jax.py runs them.
    assert all(blocks(p, "python") or blocks(p, "pycon") or jax_blocks(p) or p.name in prose for p in PAGES)


def jax_blocks(page: Path) -> list[str]:
    """The ``python jax`` blocks of a page: code that needs the jax (and torch) extras."""
    return re.findall(r"^```python jax\n(.*?)^```", page.read_text(), re.S | re.M)


@pytest.mark.parametrize("script", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_examples_run(script):
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = next(
        line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("python3 -m venv")
    )
    assert "pytest" in command and command in readme


#: A dotted name the prose or a notebook gives: ``prelens.nn.remat``, ``prelens_bench.mnist1d``.
DOTTED = re.compile(r"\bprelens(?:_bench)?(?:\.\w+)+")
#: ``from prelens.nn import a, b`` (also in parentheses over several lines), in code of a page or a notebook.
FROM_IMPORT = re.compile(r"from (prelens[\w.]*) import (\([^)]*\)|[\w, ]+)")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def resolve(dotted: str) -> object:
    """The object a dotted name names: its longest importable module, then attributes."""
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for k, name in enumerate(parts[1:], 2):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[:k]))  # a module not imported by its package
    return obj


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "api.md"] + NOTEBOOKS, ids=lambda p: p.name)
def test_dotted_names_exist_and_are_current(page):
    """Every ``prelens.…`` name of a page or notebook, and every name its code imports from prelens, exists
    and is not a deprecated alias (docs/api.md lists those on purpose; tests/test_api_docs.py checks it)."""
    text = page.read_text().replace("\\n", "\n")  # a notebook's lines are JSON strings
    imported = [f"{m}.{n}" for m, names in FROM_IMPORT.findall(text) for n in re.findall(r"(\w+)(?: as \w+)?", names)]
    for name in sorted(set(DOTTED.findall(text)) | set(imported)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            try:
                resolve(name)
            except (AttributeError, ImportError, DeprecationWarning) as exc:
                pytest.fail(f"{page.name}: {name}: {exc}")


def shell_commands() -> list[tuple[str, str]]:
    """(page, command) for every ``prelens ...`` line of a ``bash`` or ``console`` block (also after ``&&``)."""
    found = []
    for page in PAGES:
        for kind, body in FENCE.findall(page.read_text()):
            for part in body.replace("&&", "\n").splitlines() if kind in ("bash", "console") else []:
                line = re.sub(r"^(\w+=\S+ )*(\.venv/bin/)?(python3? -m )?", "", part.split("#")[0].strip())
                if line.startswith("prelens "):
                    found.append((page.name, line))
    return found


@pytest.mark.parametrize(("page", "command"), shell_commands())
def test_shell_commands_parse(page, command, capsys):
    """The commands the pages show are ones the CLI accepts (they are run by hand, with small settings)."""
    from prelens.cli import build_parser

    try:
        build_parser().parse_args(shlex.split(command)[1:])
    except SystemExit:
        pytest.fail(f"{page}: {command}: {capsys.readouterr().err.strip()}")


def test_every_page_is_linked_from_the_readme_and_the_index():
    """A newcomer finds every page of docs/ from README.md ("Where to read on") and from docs/index.md."""
    readme, index = (ROOT / "README.md").read_text(), (ROOT / "docs" / "index.md").read_text()
    pages = [p.name for p in PAGES if p.parent.name == "docs"]
    assert [p for p in pages if f"(docs/{p}" not in readme] == []
    assert [p for p in pages if p != "index.md" and f"({p}" not in index] == []


def deprecated_only() -> set[str]:
    """Names that exist only as deprecated aliases: the old names of docs/api.md's table that no public
    module of prelens exports under the same name (``load``, ``rematerialize``, ``make_mlp_l``, ...)."""
    import pkgutil

    import prelens

    api = (ROOT / "docs" / "api.md").read_text()
    table = api[api.index("<!-- deprecated names") : api.index("<!-- end of deprecated names")]
    old = {name.rsplit(".", 1)[-1] for name in re.findall(r"^\| `([\w.]+)` \|", table, re.M)}
    modules = ["prelens", *(m.name for m in pkgutil.walk_packages(prelens.__path__, "prelens.") if "._" not in m.name)]
    public = {name for m in modules for name in getattr(importlib.import_module(m), "__all__", [])}
    return old - public


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.name not in ("api.md", "performance.md")] + NOTEBOOKS, ids=lambda p: p.name
)
def test_prose_names_no_deprecated_alias(page):
    """The prose names the current API: no `load`, `rematerialize` or `make_mlp_l` (a notebook may reuse
    such a name for a variable of its own, e.g. ``sym_l = iso_lens(...)``)."""
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text())["cells"]
        prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    else:
        prose = code = page.read_text()
    local = set(re.findall(r"^\s*(\w+)\s*=", code, re.M)) | set(re.findall(r"def (\w+)", code))
    named = [n for n in sorted(deprecated_only() - local) if re.search(rf"`(?:prelens[\w.]*\.)?{n}\b", prose)]
    assert named == [], f"{page.name} names deprecated aliases: {named}"
