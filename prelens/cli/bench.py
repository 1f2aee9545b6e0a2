"""Time lens-built training steps against the same steps in hand-written numpy, in one run.

1. Forward, backward (da = 1) and a plain SGD update of a tanh MLP with mean
   squared error, on 784-256-128-10 (batch 128) and 4-8-8-3 (batch 16), in
   float64 and float32. The report gives median µs per step, the ratio, minor
   page faults per step and peak memory; then one forward and backward pass
   through chains of n identity lenses, n = 2 ... 64.
2. Forward and backward of the decoder-only language model (vocab 64,
   sequence 32, d_model 64, 4 heads, FFN 256, 2 blocks, batch 16).

--peers: one SGD step of the same models (both MLPs and the language model, float64
and float32) in prelens, by hand in numpy, in PyTorch eager, in JAX under jit, in
prelens on JAX compiled by compile_step, and the matrix products alone (the matmul
floor), with the ratios; PyTorch and JAX come with the optional extra:
pip install 'prelens[peers]'.
--profile: where prelens's step spends its time, lens by lens (matrix products
against everything else).

The sides of each comparison start from the same weights, their gradients
are checked equal before any timing, and they run interleaved in one process.
The machine is noisy: compare ratios, not times,
and set OPENBLAS_NUM_THREADS=1 for steadier numbers, e.g.
"OPENBLAS_NUM_THREADS=1 python -m prelens bench --peers" (or "... bench --quick"
for a smoke test). Freed memory is kept for reuse (prelens.train.retain_freed_memory),
so that no side pays page faults that depend on what ran before it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from prelens import errors as E
from prelens.cli import _checks as C

COMMAND = "prelens bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``prelens bench``."""
    parser.add_argument("--quick", action="store_true", help="a few repeats only (a smoke test, not a measurement)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=argparse.SUPPRESS,
        help="timed blocks per implementation (30 by default, 3 with --quick)",
    )
    parser.add_argument(
        "--dtype", choices=("float64", "float32", "both"), default="both", help="which precision to time"
    )
    parser.add_argument(
        "--case",
        choices=("big", "small", "lm", "all"),
        default="all",
        help="big: 784-256-128-10 at batch 128; small: 4-8-8-3 at batch 16; lm: the decoder-only language model",
    )
    parser.add_argument("--no-chain", action="store_true", help="skip the chain-length timings")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--peers",
        action="store_true",
        help="prelens against numpy by hand, PyTorch eager, JAX jit, prelens on JAX compiled and the matmul floor "
        "(extra: prelens[peers])",
    )
    mode.add_argument("--profile", action="store_true", help="prelens's step lens by lens: matmuls against the rest")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the batch")
    parser.add_argument(
        "--threads",
        default=None,
        metavar="N",
        help="with --peers: every side on N threads (numpy's BLAS via threadpoolctl, torch.set_num_threads, XLA's "
        "CPU threads via XLA_FLAGS, set before JAX starts), or 'default' for each library's own settings; "
        "without it the sides get the BLAS threads numpy has now",
    )


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print the report; 1 if the gradient check fails, 2 for bad arguments."""
    repeats = getattr(args, "repeats", None)
    try:
        if repeats is not None:
            C.at_least(COMMAND, "--repeats", repeats)
        threads = getattr(args, "threads", None)
        if threads is not None and threads != "default":
            if not threads.isdigit() or int(threads) < 1:
                raise E.bad_argument(COMMAND, "--threads", threads, "a number of threads >= 1 or 'default'")
            if not args.peers:
                raise E.flag_needs(COMMAND, "--threads", "--peers")
        C.at_least(COMMAND, "--seed", args.seed, 0)
    except E.PrelensError as err:
        return C.fail(err, COMMAND)
    from prelens.bench import CASES, run_benchmarks, run_lm_benchmark  # here: the timing needs Unix's `resource`
    from prelens.train import retain_freed_memory

    retain_freed_memory()
    if args.peers or args.profile:
        return _peers_or_profile(args, repeats)
    cases = [
        c
        for c in CASES
        if args.dtype in ("both", c.dtype) and args.case in ("all", "big" if c.sizes[0] == 784 else "small")
    ]
    dtypes = ("float64", "float32") if args.dtype == "both" else (args.dtype,)
    try:
        if args.case != "lm":
            chains = () if args.no_chain else (2, 4, 8, 16, 32, 64)
            print(run_benchmarks(quick=args.quick, cases=cases, repeats=repeats, chain_sizes=chains, seed=args.seed))
        if args.case in ("lm", "all"):
            print(f"\n{run_lm_benchmark(args.quick, repeats=repeats, dtypes=dtypes, seed=args.seed)}")
    except E.LawError as exc:
        print(f"prelens bench: the gradient check failed, nothing more was timed:\n{exc}", file=sys.stderr)
        return 1
    return 0


def _peers_or_profile(args: argparse.Namespace, repeats: int | None) -> int:
    from prelens.bench import peers as P
    from prelens.bench import profile_step

    kinds = {"all": ("big", "small", "lm")}.get(args.case, (args.case,))
    cases = [c for c in P.PEER_CASES if args.dtype in ("both", c.dtype) and _kind(c) in kinds]
    if args.profile:
        for case in cases:
            print(f"{profile_step(case, repeats=repeats or (3 if args.quick else 30), seed=args.seed)}\n")
        return 0
    try:
        n = repeats or (3 if args.quick else 10)
        with _thread_count(getattr(args, "threads", None)):
            print(P.run_peers(cases, peers=P.DEFAULT_PEERS, repeats=n, seed=args.seed))
    except E.LawError as exc:
        print(f"prelens bench: the gradient check failed, nothing more was timed:\n{exc}", file=sys.stderr)
        return 1
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
