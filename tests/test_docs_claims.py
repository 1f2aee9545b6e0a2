"""Claims the prose may not make: a property test "proves" nothing, and pictures are readable when projected."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PROOF = re.compile(r"\b(prove|proven|proves|proved|proving|proof|proofs)\b", re.I)

#: Sentences that may say "proof" and friends, each with its reason. A property test is never one:
#: it samples, so the docs say "tested".
ALLOWED = {
    "are tests on many random cases, not proofs": "says that the tests are not proofs",
    "evidence, not a proof": "says that the twin tests are not a proof",
    "evidence by testing, not a proof": "says that the random-network check is not a proof",
    "The theorem is proved in those papers": "a theorem of Fong–Spivak–Tuyéras and Cruttwell et al., not a test",
    "showed the first theorem": "a published theorem",
    "proved the first statement of this kind": "a published theorem (Fong–Spivak–Tuyéras)",
    "it does not prove it": "says that a law check is not a proof",
    "it does not prove:": "says that a law check is not a proof",
}


def texts() -> list[tuple[str, str]]:
    """(where, text) of every page and of every markdown cell of the notebooks."""
    found = [(p.name, p.read_text()) for p in PAGES]
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        found += [
            (f"{nb.name}[{i}]", "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"
        ]
    return found


@pytest.mark.parametrize(("where", "text"), texts(), ids=lambda x: x if len(x) < 40 else "")
def test_no_property_test_is_called_a_proof(where, text):
    for line in text.replace("\n", " ").split(". "):
        if PROOF.search(line) and not any(ok in line for ok in ALLOWED):
            pytest.fail(f"{where}: a proof word outside the allow-list (say 'tested'): {line.strip()[:200]!r}")


def test_the_allow_list_is_used():
    """Every allowed phrase still occurs, so the list never keeps a stale exception."""
    everything = " ".join(text.replace("\n", " ") for _, text in texts())
    assert [ok for ok in ALLOWED if ok not in everything] == []


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_figures_are_drawn_at_150_dpi_or_more(nb):
    """Figures projected in a room need 150 dpi: each notebook that plots sets ``figure.dpi``."""
    code = " ".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
    if "matplotlib" not in code:
        return
    dpis = [int(d) for d in re.findall(r'figure\.dpi"\]\s*=\s*(\d+)', code)]
    assert dpis and min(dpis) >= 150, f"{nb.name} sets figure.dpi to {dpis or 'the default'}"


#: What ``check_vjp`` does not judge: aliasing is ``check_no_alias``'s verdict, purity ``check_pure``'s.
NOT_VJP = re.compile(r"\b(alias\w*|memory|pure|purity|mutat\w*|writes? into)\b", re.I)


@pytest.mark.parametrize(("where", "text"), texts(), ids=lambda x: x if len(x) < 40 else "")
def test_check_vjp_is_not_said_to_judge_aliasing_or_purity(where, text):
    for sentence in re.split(r"(?<=[.;:])\s", text.replace("\n", " ")):
        if (
            "check_vjp" in sentence
            and NOT_VJP.search(sentence)
            and not re.search(r"check_(no_alias|pure|lens_laws)", sentence)
        ):
            pytest.fail(
                f"{where}: check_vjp judges the derivative only (say check_no_alias or check_pure): {sentence[:200]!r}"
            )
