"""Hypothesis profiles, and Python's default recursion limit for a block.

``ci`` (the default) runs enough examples to mean something and is derandomized, so a run
on a fresh clone explores exactly the cases every earlier run explored: a failure in CI is
a regression, never a new draw. ``thorough`` draws fresh random cases, many more of them:
run it before a release (``HYPOTHESIS_PROFILE=thorough python -m pytest tests/fuzz``).
"""

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@contextmanager
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit (1000 frames) inside the block: nothing may lean on a raised one."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
