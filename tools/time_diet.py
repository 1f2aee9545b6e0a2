"""Time the paths the issue-23 diets rewrote, this checkout against another, alternating processes.

Usage::

    git worktree add /tmp/prelens-before 0436a71      # the tree before the diet (or any checkout)
    python tools/time_diet.py /tmp/prelens-before [--rounds 7]

Each round runs every case once in a fresh process per checkout (the order alternates between
rounds) and each process reports the median of many calls; the script prints the median over
rounds and the ratio this/other. The cases: a faithful training step through ``from_tamb`` (the
Program's two passes), an update of momentum, Adam and RMSprop on a small tree, one of SGD on a schedule, and
``train.step`` with an optimiser lens (``learn.run_learner``), a recurrent forward pass through
``scan_loop``, ``dtype_kind`` of a PyTorch dtype (skipped without torch) and ``check_vjp`` of a small
dense lens. Run it on a quiet machine.
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
from prelens import faithful, learn, train
from prelens.nn import mlp, mse
from prelens.datasets import TOY_XS, TOY_YS
def median_us(f, n):
    f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    ts.sort(); return 1e6 * ts[len(ts) // 2]
"""

CASES = {
    "faithful train_step (from_tamb)": """
net, ps = faithful.make_mlp(3, [4, 4, 1]), faithful.init_mlp(3, [4, 4, 1], np.random.default_rng(0))
print(median_us(lambda: faithful.train_step(net, ps, TOY_XS, TOY_YS, 0.1), 200))
""",
    "momentum/adam/rmsprop update": """
p = [np.ones((64, 32)), np.ones(32), (np.ones((32, 8)), np.ones(8))]
opts = [learn.momentum(0.1), learn.adam(0.1), learn.rmsprop(0.1)]
states = [o.init(p) for o in opts]
print(median_us(lambda: [o.update(p, s, p) for o, s in zip(opts, states)], 2000))
""",
    "sgd update on a warmup_cosine schedule": """
p = [np.ones((8, 4)), np.ones(4)]
opt = learn.sgd(learn.warmup_cosine(0.1, 100, 10000))
state = opt.init(p)
print(median_us(lambda: opt.update(p, state, p), 5000))
""",
    "train.step with an optimiser lens": """
model, opt = mlp(8, [16, 1], last_activation=None), learn.adam(0.01)
params = model.init(0); state = learn.init_state(opt.lens, params)
xs = np.random.default_rng(0).standard_normal((32, 8)); ys = xs[:, :1]
print(median_us(lambda: train.step(model, mse, params, (xs, ys), opt.lens, state), 500))
""",
    "rnn forward (scan_loop, numpy)": """
from prelens.nn import rnn
lens = rnn(4, 8); p = lens.init(0); xs = np.random.default_rng(0).standard_normal((2, 16, 4))
print(median_us(lambda: lens.fwd(p, xs), 500))
""",
    "dtype_kind(torch.float32) x 100": """
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
