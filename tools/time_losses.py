"""Time the loss lenses (forward + backward) of this checkout against another, in one process, interleaved.

Usage::

    OPENBLAS_NUM_THREADS=1 python tools/time_losses.py /work/main [--rounds 101] [--calls 100]

The other checkout's package is copied as ``prelens_old`` (every ``prelens`` name in it renamed), so
both import side by side.
Each round times ``calls`` forward-and-backward passes of each loss with each version, the order
alternating between rounds; the script prints the median over rounds of the time per call, the
ratio this/other, and the ratio of the rounds at the 10th percentile (the least disturbed by other
load). Times are CPU times of the process. Run it on a quiet machine (under load they are only
indicative).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def cases(nn: Any) -> dict[str, Callable[[], Any]]:
    """One forward-and-backward pass of each loss, on inputs made from one seed."""
    rng = np.random.default_rng(0)
    logits, labels = rng.standard_normal((64, 10)), rng.integers(0, 10, 64)
    target, pred = rng.standard_normal((64, 10)), rng.standard_normal((64, 10))
    tokens, ids = rng.standard_normal((8, 32, 64)), rng.integers(-1, 64, (8, 32))
    ce, tce = nn.softmax_cross_entropy, nn.token_cross_entropy()

    def run(lens: Any, p: Any, s: Any) -> Callable[[], Any]:
        return lambda: lens.bwd(lens.fwd(p, s)[0], 1.0)

    return {
        "softmax_cross_entropy (64, 10)": run(ce, labels, logits),
        "token_cross_entropy (8, 32, 64)": run(tce, ids, tokens),
        "mse (64, 10)": run(nn.mse, target, pred),
        "squared_distance (64, 10)": run(nn.squared_distance, target, pred),
    }


def import_other(checkout: Path) -> Any:
    """The other checkout's ``prelens.nn``, imported as ``prelens_old.nn``."""
    work = Path(tempfile.mkdtemp(prefix="prelens-old-"))
    shutil.copytree(checkout / "prelens", work / "prelens_old")
    for path in (work / "prelens_old").rglob("*.py"):
        path.write_text(re.sub(r"\bprelens\b", "prelens_old", path.read_text(encoding="utf-8")), encoding="utf-8")
    sys.path.insert(0, str(work))
    import prelens_old.nn as nn  # type: ignore[import-not-found]

    return nn


def per_call_us(f: Callable[[], Any], calls: int) -> float:
    """The CPU time of one call of ``f``, averaged over ``calls`` (this process's: other load counts less)."""
    t = time.process_time()
    for _ in range(calls):
        f()
    return 1e6 * (time.process_time() - t) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="a checkout of the other version (holding prelens/)")
    parser.add_argument("--rounds", type=int, default=101)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    old_nn = import_other(args.other)
    import prelens.nn as new_nn

    this, other = cases(new_nn), cases(old_nn)
    for name in this:
        a, b = this[name], other[name]
        a(), b()  # warm: first-call checks
        times: dict[str, list[float]] = {"this": [], "other": []}
        for r in range(args.rounds):
            pair = [("this", a), ("other", b)]
            for which, f in pair if r % 2 == 0 else pair[::-1]:
                times[which].append(per_call_us(f, args.calls))
        t, o = statistics.median(times["this"]), statistics.median(times["other"])
        tenth = len(times["this"]) // 10
        best = sorted(times["this"])[tenth] / sorted(times["other"])[tenth]
        print(f"{name:34} this {t:8.1f} us  other {o:8.1f} us  this/other {t / o:.3f} (fast rounds: {best:.3f})")


if __name__ == "__main__":
    main()
