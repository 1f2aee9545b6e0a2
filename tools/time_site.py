"""Time the docs site's CI steps: a clean build (warnings as errors) and the browser tests.

Usage, from the repository root, with the ``docs`` extra and Debian's ``chromium`` installed::

    python tools/time_site.py [--runs N]

Prints the wall time of each step (best and median of N runs). No test asserts a time: these
numbers depend on the machine and its load, so rerun this on a quiet machine to quote them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    runs = parser.parse_args().runs
    build: list[float] = []
    tests: list[float] = []
    for _ in range(runs):
        out = Path(tempfile.mkdtemp(prefix="prelens-site-"))
        try:
            sphinx = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-c", "docs", ".", str(out)]
            build.append(timed(sphinx))
            env = {**os.environ, "PRELENS_SITE": str(out), "PYTHONPATH": str(ROOT)}
            tests.append(timed([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests_site"], env))
        finally:
            shutil.rmtree(out)
    for name, times in (("site build (sphinx-build -W)", build), ("tests_site (chromium)", tests)):
        print(f"{name}: best {min(times):.1f} s, median {statistics.median(times):.1f} s over {runs} run(s)")


if __name__ == "__main__":
    main()
