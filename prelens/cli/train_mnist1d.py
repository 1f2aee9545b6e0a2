"""Train one of the MNIST-1D paper's four models and report its test accuracy beside the paper's.

MNIST-1D (Greydanus & Kobak): ten digits as series of 40 samples, 4,000 for
training and 1,000 for testing, generated once by the mnist1d package (the
"mnist1d" extra: pip install 'prelens[mnist1d]') and cached under
$PRELENS_CACHE, $XDG_CACHE_HOME/prelens or ~/.cache/prelens; nothing is downloaded.

--model picks the model (listed below). The paper's protocol is the default:
Adam with step size 1e-2, batches of 100, 8,000 steps. --backend jax compiles
each step into one XLA program (the "jax" extra); auto takes it where it pays.

--save PATH writes a model file for "prelens predict", "evaluate" and "summary",
or prelens.load_model. The paper's whole table: python -m prelens_bench.mnist1d.

Examples:
  prelens train mnist1d --model cnn --save cnn.prelens
  prelens train mnist1d --model mlp --steps 2000 --seed 1
  prelens train mnist1d --model gru --backend jax
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.cli import _checks as C
from prelens.cli._runtime import add_output_arguments, add_runtime_arguments
from prelens.datasets import Split, load_mnist1d
from prelens.io._train_metadata import save_classifier
from prelens.train import retain_freed_memory
from prelens.train._mnist1d import (
    BATCH_SIZE,
    LEARNING_RATE,
    MNIST1D_MODELS,
    PAPER_ACCURACY,
    STEPS,
    mnist1d_model,
    takes_channel,
    train_mnist1d,
)

__all__ = ["add_arguments", "run"]

COMMAND = "prelens train mnist1d"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``prelens train mnist1d``."""
    model = parser.add_argument_group("model")
    model.add_argument(
        "--model",
        choices=tuple(MNIST1D_MODELS),
        default="mlp",
        help="; ".join(f"{name}: {text}" for name, (text, _) in MNIST1D_MODELS.items()),
    )
    model.add_argument("--float32", action="store_true", help="train in float32 instead of float64")
    train = parser.add_argument_group("training (Adam)")
    train.add_argument("--steps", type=int, default=STEPS, help="optimiser steps (the paper: 8000)")
    train.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="series per step")
    train.add_argument("--lr", type=float, default=LEARNING_RATE, help="Adam's step size")
    train.add_argument("--seed", type=int, default=0, help="seeds the initial weights and the shuffling")
    add_runtime_arguments(train)  # --backend auto|numpy|jax, --blas-threads
    out = parser.add_argument_group("output")
    add_output_arguments(out, "cnn.prelens")


def check(args: argparse.Namespace) -> None:
    """Every flag's range, the backend's library, and that ``--save`` can be written, before any work."""
    C.counts(COMMAND, args, "--steps", "--batch-size")
    C.positive_real(COMMAND, "--lr", args.lr)
    C.at_least(COMMAND, "--seed", args.seed, 0)
    if args.backend == "jax" and importlib.util.find_spec("jax") is None:
        raise E.missing_extra(f"{COMMAND} --backend jax", "jax", "jax")
    C.writable(COMMAND, "--save", args.save)


def run(args: argparse.Namespace) -> int:
    """Train, print the test accuracy beside the paper's.

    0 on success; 1 if training diverged or the model could not be saved; 2 for bad arguments
    (found before any training), or when the dataset cannot be made (the ``mnist1d`` extra missing).
    """
    dtype = np.float32 if args.float32 else np.float64
    try:
        check(args)
        split = load_mnist1d(channel=takes_channel(args.model))
        model = mnist1d_model(args.model, dtype=dtype)
    except E.PrelensError as err:
        return C.fail(err, COMMAND)
    print(
        f"{split!r}; model {model!r}; Adam lr={args.lr:g}, batch {args.batch_size}, {args.steps} steps "
        f"(--backend {args.backend})"
    )
    retain_freed_memory()  # the steps reuse what the last one freed (no page faults)
    try:
        result = train_mnist1d(
            args.model,
            split,
            steps=args.steps,
            seed=args.seed,
            backend=args.backend,
            dtype=dtype,
            batch_size=args.batch_size,
            lr=args.lr,
            progress=False if args.no_progress else None,
            blas_threads=args.blas_threads,
        )
    except E.PrelensError as err:  # diverged (or refused mid-way)
        return C.fail(err, COMMAND, code=1)
    saved = _save(args, model, result, split, dtype)
    if result.steps < args.steps:  # Ctrl-C: fit handed back the steps so far
        print(f"interrupted after {result.steps} of {args.steps} steps: reporting the parameters so far")
    print(f"trained {result.steps} steps in {result.seconds:.1f} s")
    print(f"train accuracy {result.train_accuracy:.2%}")
    print(
        f"test accuracy  {result.test_accuracy:.2%} ({len(split.y_test)} series); "
        f"the paper: {PAPER_ACCURACY[args.model]:.0f}%"
    )
    return C.finish(saved, args.save, "prelens predict/evaluate/summary")


def _save(args: argparse.Namespace, model: Any, result: Any, split: Split, dtype: Any) -> bool | None:
    """Write the model file ``--save`` (see :func:`prelens.cli._checks.saved`)."""
    meta = {
        "model": repr(model),
        "dataset": "mnist1d",
        "architecture": args.model,
        "seed": args.seed,
        "steps": result.steps,
        "backend": args.backend,
    }
    shape = tuple(split.x_train.shape[1:])
    return C.saved(
        COMMAND, args.save, lambda: save_classifier(args.save, model, result.params, split, dtype, meta, shape=shape)
    )
