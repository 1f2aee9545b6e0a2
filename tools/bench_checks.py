"""The cost of the per-call checks: an MLP train step on two source trees, interleaved.

    python tools/bench_checks.py OLD_TREE NEW_TREE [--rounds 9] [--reps 2000]

Each round runs one worker process per tree (alternating, so load from other
processes hits both alike), with one BLAS/OpenMP thread; a worker times
``step_of(model, mse, sgd)`` (forward, the trace with ``da = 1``, the update) for a
tiny 4-8-8-3 MLP on a batch of 16 and a 784-256-128-10 MLP on a batch of 64, and
prints the median per step. The report is the median over rounds of each tree's
medians, and the ratio new/old. Also the per-call predicate of ``dense``'s
declared ``Expects`` alone (new tree only: its check on one call's ``(p, x)``).
Numbers on a loaded machine are noisy: rerun on a quiet one before reading much
into a few percent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r"""
import json, statistics, sys, time
import numpy as np
from prelens import nn
from prelens.learn import sgd
from prelens.train._step import step_of

reps = int(sys.argv[1])
out = {}
for label, sizes, batch in (("mlp 4-8-8-3, batch 16", (4, [8, 8, 3]), 16),
                            ("mlp 784-256-128-10, batch 64", (784, [256, 128, 10]), 64)):
    model = nn.mlp(sizes[0], sizes[1])
    opt = sgd(0.01)
    params = model.init(0)
    state = opt.init(params)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, sizes[0]))
    ys = rng.standard_normal((batch, sizes[1][-1]))
    core = step_of(model, nn.mse, opt, False)
    n = reps if sizes[0] < 100 else max(reps // 20, 20)
    for _ in range(min(n, 50)):
        core(params, state, xs, ys)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        core(params, state, xs, ys)
        times.append(time.perf_counter() - t0)
    out[label] = statistics.median(times) * 1e6
try:
    from prelens.core._check import quick_test
    layer = nn.dense(784, 256)
    e = layer.expects
    fits = quick_test(e.params, e.input)
    p, x = layer.init(0), np.zeros((64, 784))
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        for _ in range(1000):
            fits(p, x)
        times.append((time.perf_counter() - t0) / 1000)
    out["dense's (p, x) predicate alone"] = statistics.median(times) * 1e6
except ImportError:
    pass
print(json.dumps(out))
"""


def run(tree: str, reps: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    cmd = [sys.executable, "-P", "-c", WORKER, str(reps)]  # -P: the tree on PYTHONPATH, not the working directory
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(res.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--reps", type=int, default=2000)
    args = ap.parse_args()
    got: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for which in ("old", "new"):
            got[which].append(run(getattr(args, which), args.reps))
    labels = sorted({k for r in got["old"] + got["new"] for k in r})
    for label in labels:
        med = {
            w: statistics.median(r[label] for r in got[w] if label in r) if any(label in r for r in got[w]) else None
            for w in ("old", "new")
        }
        old, new = med["old"], med["new"]
        ratio = f"  new/old {new / old:.3f}" if old and new else ""
        show = lambda v: "   -   " if v is None else f"{v:9.2f} us"
        print(f"{label:34s} old {show(old)}  new {show(new)}{ratio}")


if __name__ == "__main__":
    main()
