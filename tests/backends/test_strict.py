"""The fast level on ``array_api_strict``, the standard's reference: every case equals numpy's.

``array_api_strict`` has only what the standard names (no ``.reshape`` method,
no ``out=``, no silent numpy fallbacks), so a lens that passes here runs on
any conforming library. PyTorch and JAX run the same cases in ``tests_peers``.
"""

from __future__ import annotations

import pytest

from .harness import Case, all_cases, check_case

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_array_api_strict(case: Case) -> None:
    check_case(case, "array_api_strict")
