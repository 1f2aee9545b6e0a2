"""Time the LM training step (``prelens bench lm``'s, forward and backward) of this checkout against another's.

Usage::

    python tools/time_lm_step.py /work/main [--rounds 15] [--steps 20] [--seq 32] [--threads 1]

For each dtype, one worker process per checkout, each importing its own ``prelens`` and building the step of
:mod:`prelens_bench.lm` (vocab 64, d_model 64, 4 heads, FFN 256, 2 blocks, batch 16; ``--seq`` the
sequence length) from the same seed (a worker that ran float64 steps times float32 ones differently: the
allocator's history changes their page faults). Rounds alternate which worker runs
first; in each round a worker reports the median of ``--steps`` steps, in wall-clock time and in
the process's CPU time (with one BLAS thread, the CPU time moves less when other programs load the
machine). The script checks that the
two give the same loss, then prints, per dtype, the median over rounds of each and the ratio
this/other. Run it on a quiet machine: under load the ratios move by several percent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import json, sys, time
import numpy as np
try:
    from prelens_bench.lm import LMConfig, _lens_step
except ImportError:  # a checkout from before the benchmarks left the package
    from prelens.bench.lm import LMConfig, _lens_step
cfg = LMConfig(seq_len=int(sys.argv[1]))
steps = {}
for dt in sys.argv[2].split(","):
    rng = np.random.default_rng(0)
    lm, step = _lens_step(cfg, np.dtype(dt))
    params = lm.init(rng)
    ids = rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq_len))
    labels = rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq_len))
    steps[dt] = (step, params, ids, labels)
    step(params, ids, labels)
print(json.dumps({dt: float(s(p, i, l)[0]) for dt, (s, p, i, l) in steps.items()}), flush=True)
for line in sys.stdin:
    dt, n = line.split()
    step, params, ids, labels = steps[dt]
    ts, cs = [], []
    for _ in range(int(n)):
        t, c = time.perf_counter(), time.process_time()
        step(params, ids, labels)
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    print(json.dumps([sorted(ts)[len(ts) // 2], sorted(cs)[len(cs) // 2]]), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="a checkout of the other version (holding prelens/)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--dtypes", default="float64,float32", help="comma-separated; a pair of workers each")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both (0: numpy's default)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(args.threads)
    times: dict[tuple[str, str], list[list[float]]] = {}
    for dt in args.dtypes.split(","):  # fresh workers per dtype: one dtype's allocations skew the other's page faults
        workers = {}
        for tag, root in (("this", ROOT), ("other", args.other.resolve())):
            workers[tag] = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(args.seq), dt],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=dict(env, PYTHONPATH=str(root)),
                cwd=root,
            )
        losses = {tag: json.loads(w.stdout.readline())[dt] for tag, w in workers.items()}  # type: ignore[union-attr]
        if abs(losses["this"] - losses["other"]) > 1e-5 * abs(losses["other"]):
            raise SystemExit(f"the losses differ in {dt}: {losses}")
        for r in range(args.rounds):
            for tag in ("this", "other") if r % 2 == 0 else ("other", "this"):
                w = workers[tag]
                w.stdin.write(f"{dt} {args.steps}\n")  # type: ignore[union-attr]
                w.stdin.flush()  # type: ignore[union-attr]
                times.setdefault((tag, dt), []).append(json.loads(w.stdout.readline()))  # type: ignore[union-attr]
        for w in workers.values():
            w.stdin.close()  # type: ignore[union-attr]
            w.wait()
    print(f"LM step, seq {args.seq}, {args.rounds} rounds x {args.steps} steps, {args.threads or 'default'} thread(s)")
    print(f"{'dtype':8} {'clock':6} {'this ms':>9} {'other ms':>9} {'this/other':>11}")
    for dt in args.dtypes.split(","):
        for i, clock in enumerate(("wall", "cpu")):
            this = statistics.median(t[i] for t in times[("this", dt)])
            other = statistics.median(t[i] for t in times[("other", dt)])
            print(f"{dt:8} {clock:6} {this * 1e3:9.2f} {other * 1e3:9.2f} {this / other:11.3f}")


if __name__ == "__main__":
    main()
