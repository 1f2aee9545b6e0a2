"""Every test, doctest and notebook of a run reads and writes MNIST-1D in one temporary cache.

``$PRELENS_CACHE`` points at it for the whole session (a notebook's kernel inherits it), so the
data is generated once per run (a few seconds) and the user's own cache is never touched.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def mnist1d_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's cache directory (``$PRELENS_CACHE``), restored after the run."""
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
