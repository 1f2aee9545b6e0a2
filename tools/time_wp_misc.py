"""Time the hot paths the wp-misc diet touched, this checkout against another, alternating processes.

Usage::

    python tools/time_wp_misc.py /work/main [--rounds 7]

Cases: a faithful training step (``faithful/_train``), a numpy recurrent forward pass through
``backend._loop.scan_loop`` (its traced test now asks ``is_concrete``), ``dtype_kind`` of a
PyTorch dtype (its table now in ``prelens.errors``; skipped without torch), and ``check_vjp`` of a
small dense lens (the law kit). Each round runs every case once in a fresh process per checkout,
the order alternating; each process reports the median of many calls. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import time, numpy as np
def median_us(f, n):
    f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    ts.sort(); return 1e6 * ts[len(ts) // 2]
"""

CASES = {
    "faithful train_step": """
from prelens import faithful
from prelens.datasets import TOY_XS, TOY_YS
net, ps = faithful.make_mlp(3, [4, 4, 1]), faithful.init_mlp(3, [4, 4, 1], np.random.default_rng(0))
print(median_us(lambda: faithful.train_step(net, ps, TOY_XS, TOY_YS, 0.1), 200))
""",
    "rnn forward (scan_loop, numpy)": """
from prelens.nn import rnn
lens = rnn(4, 8); p = lens.init(0); xs = np.random.default_rng(0).standard_normal((2, 16, 4))
print(median_us(lambda: lens.fwd(p, xs), 500))
""",
    "dtype_kind(torch.float32)": """
try:
    import torch
except ImportError:
    print(1.0); raise SystemExit
from prelens.backend._arrays import dtype_kind
print(median_us(lambda: [dtype_kind(torch.float32) for _ in range(100)], 2000))
""",
    "check_vjp(dense(3, 2))": """
from prelens.nn import dense
from prelens.testing import check_vjp
lens = dense(3, 2); p = lens.init(0); x = np.random.default_rng(0).standard_normal((4, 3))
print(median_us(lambda: check_vjp(lens, p, x), 30))
""",
}


def run(checkout: Path, code: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", SETUP + code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="a checkout of the other version")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for name, code in CASES.items():
        this: list[float] = []
        other: list[float] = []
        for r in range(args.rounds):
            pair = [(ROOT, this), (args.other, other)]
            for checkout, times in pair if r % 2 == 0 else pair[::-1]:
                times.append(run(checkout, code))
        a, b = statistics.median(this), statistics.median(other)
        print(f"{name:36} this {a:9.1f} us  other {b:9.1f} us  this/other {a / b:.3f}")


if __name__ == "__main__":
    main()
