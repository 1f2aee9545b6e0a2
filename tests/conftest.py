"""Hypothesis profiles, and a session's cache directory for MNIST-1D.

``ci`` (the default) runs enough examples to mean something and is derandomized, so a run
on a fresh clone explores exactly the cases every earlier run explored: a failure in CI is
a regression, never a new draw. ``thorough`` draws fresh random cases, many more of them:
run it before a release (``HYPOTHESIS_PROFILE=thorough python -m pytest tests/fuzz``).
"""

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
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


@pytest.fixture(scope="session")
def mnist1d_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``$PRELENS_CACHE`` pointed at one temporary directory for the session: MNIST-1D is generated there
    once (a few seconds), never in the user's cache."""
    path = tmp_path_factory.mktemp("prelens-cache")
    before = os.environ.get("PRELENS_CACHE")
    os.environ["PRELENS_CACHE"] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop("PRELENS_CACHE", None)
        else:
            os.environ["PRELENS_CACHE"] = before
