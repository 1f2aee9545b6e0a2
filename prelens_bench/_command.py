"""What ``prelens bench`` runs once its front end (``prelens/cli/bench.py``) has checked the flags.

The front end owns the flags and their checks (one line and exit code 2 for a mistake, before any
work); this module picks the benchmark the flags name, runs it and prints its report. A failed
gradient check is one message on stderr and exit code 1 (nothing more is timed); any other error
prelens raises on purpose propagates, for the front end to print as one line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from prelens import errors as E
from prelens.train import retain_freed_memory

__all__ = ["run_command"]


def run_command(args: argparse.Namespace, repeats: int | None) -> int:
    """Run the benchmark ``args`` name (checked already); 0, or 1 if a gradient check failed."""
    retain_freed_memory()
    try:
        if getattr(args, "scaling", False):
            return _scaling(args, repeats)
        if args.peers or args.profile:
            return _peers_or_profile(args, repeats)
        return _plain(args, repeats)
    except E.LawError as exc:
        print(f"prelens bench: the gradient check failed, nothing more was timed:\n{exc}", file=sys.stderr)
        return 1


def _plain(args: argparse.Namespace, repeats: int | None) -> int:
    from prelens_bench import CASES, run_benchmarks, run_lm_benchmark

    cases = [
        c
        for c in CASES
        if args.dtype in ("both", c.dtype) and args.case in ("all", "big" if c.sizes[0] == 784 else "small")
    ]
    dtypes = ("float64", "float32") if args.dtype == "both" else (args.dtype,)
    if args.case != "lm":
        chains = () if args.no_chain else (2, 4, 8, 16, 32, 64)
        print(run_benchmarks(quick=args.quick, cases=cases, repeats=repeats, chain_sizes=chains, seed=args.seed))
    if args.case in ("lm", "all"):
        print(f"\n{run_lm_benchmark(args.quick, repeats=repeats, dtypes=dtypes, seed=args.seed)}")
    return 0


def _peers_or_profile(args: argparse.Namespace, repeats: int | None) -> int:
    from prelens_bench import peers as P
    from prelens_bench import profile_step

    kinds = {"all": ("big", "small", "lm")}.get(args.case, (args.case,))
    cases = [c for c in P.PEER_CASES if args.dtype in ("both", c.dtype) and _kind(c) in kinds]
    if args.profile:
        for case in cases:
            print(f"{profile_step(case, repeats=repeats or (3 if args.quick else 30), seed=args.seed)}\n")
        return 0
    n = repeats or (3 if args.quick else 10)
    with _thread_count(getattr(args, "threads", None)):
        print(P.run_peers(cases, peers=P.DEFAULT_PEERS, repeats=n, seed=args.seed))
    return 0


def _scaling(args: argparse.Namespace, repeats: int | None) -> int:
    from prelens_bench import scaling as S

    with _thread_count(getattr(args, "threads", None)):
        report = S.run_scaling(
            getattr(args, "grid", "full"),
            sides=S.SCALING_SIDES,
            repeats=repeats or (3 if args.quick else 7),
            dtype="float64" if args.dtype == "float64" else "float32",
            seed=args.seed,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    md, png = report.write(getattr(args, "out", "prelens-scaling"))
    print(f"{report.table()}\n\nwrote {md} and {png}")
    return 0


def _kind(case: object) -> str:
    model = getattr(case, "model", None)
    if not isinstance(model, tuple):
        return "lm"
    return "big" if model[0] == 784 else "small"


@contextlib.contextmanager
def _thread_count(threads: str | None) -> Iterator[None]:
    """``--threads N``: BLAS limited to N (the peers read it), XLA told N before JAX starts; ``default``: untouched."""
    if threads is None or threads == "default":
        yield
        return
    n = int(threads)
    if "jax" not in sys.modules:  # XLA reads its flags once, when JAX starts
        flags = f"--xla_cpu_multi_thread_eigen={'true' if n > 1 else 'false'} intra_op_parallelism_threads={n}"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n, user_api="blas"):
        yield
