"""The notebooks' exercises: every check accepts its solution, rejects a plausible mistake, and is asked for.

Convention (see the end of ``notebooks/01_prelenses.ipynb``): the notebook ``NN_name.ipynb`` ends
with a ``## Exercises`` section whose cells call the checks of ``notebooks/exercises/exNN_name.py``
(``import exercises.exNN_name as check`` … ``check.answer(answer)``); the solutions are
``notebooks/solutions/exNN_name.py``, one attribute per check under the check's name, and
``MISTAKES``, one wrong answer per check.

Here every check runs on its solution (it must say ✓ and return ``True``), on its mistake (``✗``,
``False``) and on the placeholders the notebook's cells hold (``...``, or a function or class whose
bodies are ``...``: ``None``, "not answered yet"); and the committed notebook
must call every check of its module, with its placeholder still in place (the solutions stay out
of the notebooks).
"""

import importlib
import re
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))  # the packages ``exercises`` and ``solutions`` live there

NAMES = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def module_name(notebook: str) -> str:
    return f"ex{notebook}"


def checks(notebook: str) -> dict[str, object]:
    """The checks of a notebook's exercise module: its public functions made by ``@exercise``."""
    module = importlib.import_module(f"exercises.{module_name(notebook)}")
    return {
        name: f
        for name, f in vars(module).items()
        if hasattr(f, "label") and getattr(f, "__module__", None) == module.__name__ and not name.startswith("_")
    }


def cases() -> list[tuple[str, str]]:
    found = []
    for notebook in NAMES:
        if (NOTEBOOKS / "exercises" / f"{module_name(notebook)}.py").is_file():
            found += [(notebook, name) for name in checks(notebook)]
    return found


CASES = cases()


@pytest.mark.parametrize("notebook", NAMES)
def test_every_notebook_has_two_or_three_exercises(notebook):
    for folder in ("exercises", "solutions"):
        path = NOTEBOOKS / folder / f"{module_name(notebook)}.py"
        assert path.is_file(), f"{notebook} has no {folder} module {path.relative_to(NOTEBOOKS.parent)}"
    assert 2 <= len(checks(notebook)) <= 3, f"{notebook}: {sorted(checks(notebook))}"


@pytest.mark.parametrize("notebook", NAMES)
def test_the_notebook_asks_every_exercise_and_gives_no_answer(notebook):
    nb = nbformat.read(NOTEBOOKS / f"{notebook}.ipynb", as_version=4)
    headings = [
        i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and re.search(r"^## Exercises\b", c.source, re.M)
    ]
    assert headings, f"{notebook} has no '## Exercises' section"
    code = [c for c in nb.cells[headings[-1] :] if c.cell_type == "code"]
    assert any(f"import exercises.{module_name(notebook)} as check" in c.source for c in code)
    for name in checks(notebook):
        calls = [c for c in code if re.search(rf"\bcheck\.{name}\(", c.source)]
        assert calls, f"{notebook} never calls check.{name}"
        printed = "".join(out.get("text", "") for c in calls for out in c.outputs)
        assert "not answered yet" in printed, (
            f"{notebook}: the committed output of check.{name} is not the placeholder's"
        )


@pytest.mark.parametrize(("notebook", "name"), CASES)
def test_the_solution_passes(notebook, name, capsys):
    check = checks(notebook)[name]
    solution = getattr(importlib.import_module(f"solutions.{module_name(notebook)}"), name)
    result = check(solution)
    printed = capsys.readouterr().out
    assert result is True and printed.startswith("✓"), printed


@pytest.mark.parametrize(("notebook", "name"), CASES)
def test_the_mistake_fails(notebook, name, capsys):
    check = checks(notebook)[name]
    mistakes = importlib.import_module(f"solutions.{module_name(notebook)}").MISTAKES
    assert set(mistakes) == set(checks(notebook)), f"MISTAKES must give one wrong answer per check of {notebook}"
    result = check(mistakes[name])
    printed = capsys.readouterr().out
    assert result is False and printed.startswith("✗"), printed


def _stub_function(*args, **kwargs):
    """A function whose body is ``...``: the placeholder of a "function" exercise."""


class _StubClass:
    """A class whose methods are all ``...``: the placeholder of a "class" exercise."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return _stub_function


#: What the notebook's cell holds before the student answers, by the kind of answer the check takes.
PLACEHOLDERS = {"value": [...], "function": [..., _stub_function], "class": [..., _StubClass]}


@pytest.mark.parametrize(("notebook", "name"), CASES)
def test_the_placeholder_is_not_an_answer(notebook, name, capsys):
    check = checks(notebook)[name]
    for placeholder in PLACEHOLDERS[getattr(check, "answer", "value")]:
        assert check(placeholder) is None, placeholder
        assert "not answered yet" in capsys.readouterr().out
