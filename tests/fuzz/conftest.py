"""The fuzz suite's summary: how many bad-input cases ran, and how many escaped."""

from __future__ import annotations

from typing import Any

from ._harness import STATS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not STATS["cases"]:
        return
    terminalreporter.write_sep("-", "prelens fuzz")
    terminalreporter.write_line(
        f"prelens fuzz: {STATS['cases']} bad-input cases tried: {STATS['rejected']} rejected with a "
        f"PrelensError, {STATS['accepted']} accepted with a correct result, {STATS['escaped']} escaped"
    )
