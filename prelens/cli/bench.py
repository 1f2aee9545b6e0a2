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
--scaling: how the language model's step time grows with sequence length, d_model,
batch and depth (one at a time) in prelens on numpy and on JAX, PyTorch eager and JAX
jit, and the memory along the sequence (Cost's residue, measured peak): writes
scaling.md and scaling.png into --out ("--grid tiny" for a smoke test).

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
import importlib.util
import os

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
    mode.add_argument(
        "--scaling",
        action="store_true",
        help="cost curves of the LM step (sequence, d_model, batch, depth) in prelens numpy and JAX, PyTorch, JAX; "
        "writes scaling.md and scaling.png into --out (float32 unless --dtype float64; extra: prelens[plot])",
    )
    parser.add_argument(
        "--grid", choices=("tiny", "full"), default=argparse.SUPPRESS, help="with --scaling: the points (full)"
    )
    parser.add_argument(
        "--out", default=argparse.SUPPRESS, help="with --scaling: the directory written into (prelens-scaling)"
    )
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
    """Check the flags, then run the benchmark (``prelens_bench``) and print the report.

    0 on success; 1 if the gradient check fails; 2 for bad arguments (found before any work).
    """
    repeats = getattr(args, "repeats", None)
    try:
        C.at_least(COMMAND, "--repeats", repeats)
        threads = args.threads
        if threads is not None and threads != "default":
            if not threads.isdigit() or int(threads) < 1:
                raise E.bad_argument(COMMAND, "--threads", threads, "a number of threads >= 1 or 'default'")
            if not (args.peers or args.scaling):
                raise E.flag_needs(COMMAND, "--threads", "--peers or --scaling")
        if args.no_chain and (args.peers or args.profile or args.scaling):
            raise E.flag_needs(COMMAND, "--no-chain", "the plain timings (no --peers, --profile or --scaling)")
        if args.case != "all" and args.scaling:
            raise E.flag_needs(COMMAND, "--case", "the plain timings, --peers or --profile (--scaling times the LM)")
        for flag in ("grid", "out"):
            if hasattr(args, flag) and not args.scaling:
                raise E.flag_needs(COMMAND, f"--{flag}", "--scaling")
        C.at_least(COMMAND, "--seed", args.seed, 0)
        if args.scaling and importlib.util.find_spec("matplotlib") is None:
            raise E.missing_extra(f"{COMMAND} --scaling", "matplotlib", "plot")  # before timing anything
        if args.scaling and (why := _unwritable_directory(getattr(args, "out", "prelens-scaling"))) is not None:
            raise E.unwritable_path(COMMAND, "--out", args.out, why)
        # The one import of the benchmark package from the library, here: the timing needs Unix's `resource`,
        # and `prelens --help` should not load the benchmarks.
        from prelens_bench._command import run_command

        return run_command(args, repeats)
    except E.PrelensError as err:
        return C.fail(err, COMMAND)


def _unwritable_directory(path: str) -> str | None:
    """Why the directory ``path`` (made if missing) could not take the report, or None if it could."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing} is not a directory"
    return None if os.access(existing, os.W_OK | os.X_OK) else f"the directory {existing} is not writable"
