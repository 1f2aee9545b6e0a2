"""The core's paths that the fifth wave touched, timed on two source trees, interleaved.

    python tools/time_core_paths.py OLD_TREE NEW_TREE [--rounds 9] [--reps 2000]

Each round runs one worker process per tree (alternating, so load from other processes hits both
alike), with one BLAS thread; a worker prints the median time of: a TriLens-route step (the vjp of
``from_tamb(make_mlp(4, [8, 3]))``: the program's pair reads), ``tree_add`` of two nested trees
(``numeric_sum``), ``batch_n(8, ...)``'s backward pass (its sum of parameter deltas), and a dense
layer's checked call and pullback on ``array_api_strict`` arrays (the walk another library's
arrays take: ``_array_misfit``, ``_like_misfit``). The report is the median over rounds of each
tree's medians, and the ratio new/old. Rerun on a quiet machine before reading much into a few
percent (``tools/bench_checks.py`` times the MLP training step the same way).
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
import array_api_strict as xp
from prelens import batch_n, from_tamb, tree_add, vjp
from prelens.faithful import init_mlp, make_mlp
from prelens.nn import dense

reps = int(sys.argv[1])


def median_us(run, n):
    for _ in range(min(n, 50)):
        run()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


out = {}
tri, p = from_tamb(make_mlp(4, [8, 3])), init_mlp(4, [8, 3], 0)
x, da = np.ones(4), [1.0, 1.0, 1.0]
out["TriLens-route vjp, mlp 4-8-3"] = median_us(lambda: vjp(tri, p, x)[1](da), max(reps // 10, 20))
a = (np.ones(3), [np.ones((2, 2)), 1.5], {"w": np.ones(4)})
out["tree_add of a nested tree"] = median_us(lambda: tree_add(a, a), reps)
shared = batch_n(8, dense(3, 2))
ps, ss = shared.init(0), [np.ones((4, 3))] * 8
ms, outs = shared.fwd(ps, ss)
out["batch_n(8, dense(3, 2)).bwd"] = median_us(lambda: shared.bwd(ms, outs), reps)
layer = dense(3, 2)
w = tuple(xp.asarray(t) for t in layer.init(0))
xs = xp.asarray(np.ones((4, 3)))
m, y = layer.fwd(w, xs)
out["dense(3, 2) fwd + bwd, array_api_strict"] = median_us(lambda: layer.bwd(*layer.fwd(w, xs)[:1], y), reps)
print(json.dumps(out))
"""


def run(tree: str, reps: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    cmd = [sys.executable, "-P", "-c", WORKER, str(reps)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(res.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--reps", type=int, default=2000)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for which in order:
            runs[which].append(run(getattr(args, which), args.reps))
    for label in runs["old"][0]:
        old = statistics.median(d[label] for d in runs["old"])
        new = statistics.median(d[label] for d in runs["new"])
        print(f"{label:45s} old {old:9.1f} us   new {new:9.1f} us   new/old {new / old:.3f}")


if __name__ == "__main__":
    main()
