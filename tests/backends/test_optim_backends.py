"""Every optimiser and optimiser lens on ``array_api_strict`` equals numpy, five steps running.

The cases and the check live in ``optim_cases.py`` (``tests_peers`` runs the same
ones on PyTorch and JAX, and compiled with ``jax.jit``).
"""

from __future__ import annotations

import pytest

from .optim_cases import CASES, check_optimizer_on


@pytest.mark.parametrize("name", list(CASES))
def test_optimizer_on_array_api_strict(name: str) -> None:
    check_optimizer_on("array_api_strict", name)
