"""The code that needs JAX or PyTorch: the ``python jax`` blocks of the README and docs, and the doctests
of the modules that compile with JAX.

The main suite runs every other block and doctest (``tests/test_docs.py``, ``--doctest-modules``);
these need the ``peers`` extra, so they run here. Nothing is skipped.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import prelens.train._compiled
from tests.test_docs import PAGES, jax_blocks

JAX_PAGES = [p for p in PAGES if jax_blocks(p)]


def test_some_pages_have_jax_blocks() -> None:
    assert {p.name for p in JAX_PAGES} >= {"README.md", "backends.md"}


@pytest.mark.parametrize("page", JAX_PAGES, ids=lambda p: p.name)
def test_jax_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for body in jax_blocks(page):
        exec(compile(body, str(page), "exec"), namespace)


@pytest.mark.parametrize("module", [prelens.train._compiled], ids=lambda m: m.__name__)
def test_doctests_of_jax_modules(module: object) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    failures, tried = doctest.testmod(module, optionflags=flags)  # type: ignore[arg-type]
    assert tried > 0 and failures == 0
