"""Train a fast MLP classifier on a shipped dataset and report held-out accuracy.

The model is ``mlp(n_features, [*hidden, n_classes])`` with logits on the last
layer, trained with softmax cross-entropy on a seeded, stratified train/test
split (features standardised on the training rows), for example
``prelens train mlp --dataset iris --hidden 16 --epochs 200 --lr 0.05 --optimizer adam --seed 0 --save iris.prelens``.
--save writes a model file (the lens, its standardisation of the features, and the trained
parameters) for ``prelens predict``, ``evaluate`` and ``summary``, or ``prelens.load_model``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.cli import _checks as C
from prelens.cli._runtime import add_output_arguments, add_runtime_arguments
from prelens.datasets import DATASETS, load_dataset, standardize
from prelens.io._train_metadata import save_classifier
from prelens.learn import Optimizer, adam, momentum, sgd
from prelens.nn import ACTIVATIONS, mlp, softmax_cross_entropy
from prelens.train import accuracy, evaluate, fit, retain_freed_memory

OPTIMIZERS = ("sgd", "momentum", "adam")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``prelens train mlp``."""
    data = parser.add_argument_group("data")
    data.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        default="iris",
        help="; ".join(f"{name}: {text}" for name, text in DATASETS.items()),
    )
    data.add_argument("--test-fraction", type=float, default=0.2, help="fraction of each class held out for testing")
    data.add_argument(
        "--samples",
        type=int,
        default=None,
        help="points to generate for moons, spirals or glyphs; None means 200, 300 or 1000",
    )
    data.add_argument("--raw-features", action="store_true", help="do not standardise the features")
    model = parser.add_argument_group("model")
    model.add_argument(
        "--hidden", type=int, nargs="*", default=[16], metavar="WIDTH", help="hidden layer widths, e.g. --hidden 32 16"
    )
    model.add_argument("--activation", choices=sorted(ACTIVATIONS), default="tanh", help="activation of hidden layers")
    model.add_argument("--float32", action="store_true", help="train in float32 instead of float64")
    train = parser.add_argument_group("training")
    train.add_argument("--epochs", type=int, default=200, help="passes over the training data")
    train.add_argument("--batch-size", type=int, default=16, help="rows per optimiser step")
    train.add_argument("--optimizer", choices=OPTIMIZERS, default="adam", help="the descent rule")
    train.add_argument("--lr", type=float, default=0.01, help="learning rate (step size)")
    train.add_argument(
        "--momentum", type=float, default=None, help="momentum coefficient (--optimizer momentum; default: 0.9)"
    )
    train.add_argument("--seed", type=int, default=0, help="seeds the data, the split, the init and the shuffling")
    add_runtime_arguments(train)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        metavar="N",
        help="save parameters and optimiser state every N epochs to PATH.checkpoint.npz (needs --save PATH)",
    )
    add_output_arguments(out, "iris.prelens")


def make_optimizer(name: str, lr: float, beta: float = 0.9) -> Optimizer[Any]:
    """The optimiser named on the command line.

    >>> make_optimizer("momentum", 0.1, 0.8)
    Momentum(lr=0.1, beta=0.8, nesterov=False)
    """
    if name == "sgd":
        return sgd(lr)
    if name == "momentum":
        return momentum(lr, beta)
    if name == "adam":
        return adam(lr)
    raise E.bad_argument("train mlp", "--optimizer", name, f"one of {list(OPTIMIZERS)}")


def checkpoint_path(save: str) -> str:
    """Where ``--checkpoint-every`` writes, next to the ``--save`` file.

    >>> checkpoint_path("runs/iris.prelens")
    'runs/iris.checkpoint.npz'
    """
    stem, _ = os.path.splitext(save)
    return f"{stem}.checkpoint.npz"


COMMAND = "prelens train mlp"


def check(args: argparse.Namespace) -> None:
    """Every flag's range, and that ``--save`` can be written, before any work (an ``ArgumentError`` if not)."""
    C.non_negative_real(COMMAND, "--test-fraction", args.test_fraction, high=1.0)
    for width in args.hidden:
        C.at_least(COMMAND, "--hidden", width)
    C.counts(COMMAND, args, "--samples", "--epochs", "--batch-size", "--checkpoint-every")
    C.positive_real(COMMAND, "--lr", args.lr)
    C.non_negative_real(COMMAND, "--momentum", args.momentum, high=1.0)
    if args.momentum is not None and args.optimizer != "momentum":
        raise E.flag_needs(COMMAND, "--momentum", "--optimizer momentum")
    C.at_least(COMMAND, "--seed", args.seed, 0)
    if args.samples is not None and args.dataset == "iris":
        raise E.flag_needs(COMMAND, "--samples", "--dataset moons, spirals or glyphs")
    if args.checkpoint_every is not None and args.save is None:
        raise E.flag_needs(COMMAND, "--checkpoint-every", "--save PATH")
    C.writable(COMMAND, "--save", args.save)
    if args.checkpoint_every is not None:
        C.writable(COMMAND, "--checkpoint-every", checkpoint_path(args.save))


def run(args: argparse.Namespace) -> int:
    """Train, print the final loss and held-out accuracy.

    0 on success; 1 if training diverged or the parameters could not be saved; 2 for bad arguments
    (found before any training).
    """
    try:
        check(args)
        raw = load_dataset(args.dataset, args.test_fraction, args.seed, n=args.samples)  # (refuses an empty train)
        split = raw
        if not args.raw_features:  # standardised on the training rows (the model file keeps raw's statistics)
            x_train, x_test = standardize(raw.x_train, raw.x_test)
            split = dataclasses.replace(raw, x_train=x_train, x_test=x_test)
        dtype = np.float32 if args.float32 else np.float64
        sizes = [*args.hidden, split.n_classes]
        model = mlp(split.n_features, sizes, args.activation, last_activation=None, dtype=dtype, input_delta=False)
        opt = make_optimizer(args.optimizer, args.lr, 0.9 if args.momentum is None else args.momentum)
    except C.MISTAKES as err:
        return C.fail(err, COMMAND)
    x_train, x_test = split.x_train.astype(dtype), split.x_test.astype(dtype)
    print(f"{split!r}; model {model!r}; {args.optimizer} lr={args.lr}")
    started = time.perf_counter()
    retain_freed_memory()  # the steps reuse what the last one freed (no page faults)
    try:
        params, _, history = fit(
            model,
            softmax_cross_entropy,
            (x_train, split.y_train),
            args.epochs,
            args.batch_size,
            opt,
            args.seed,
            validation=(x_test, split.y_test) if len(split.y_test) else None,
            metrics={"accuracy": accuracy} if len(split.y_test) else None,
            progress=False if args.no_progress else None,
            blas_threads=args.blas_threads,
            backend=args.backend,
            checkpoint_every=args.checkpoint_every,
            checkpoint_path=checkpoint_path(args.save) if args.checkpoint_every else None,
        )
    except E.PrelensError as err:  # diverged (or refused mid-way): keep the last good parameters
        return C.stopped(err, COMMAND, args.save, lambda params, last: _save(args, params, raw, model, dtype, last))
    seconds = time.perf_counter() - started
    saved = _save(args, params, raw, model, dtype, history)  # first: a Ctrl-C while reporting loses nothing
    if history.interrupted:
        print(f"interrupted after {history.epochs} epochs: reporting the parameters so far")
    train_loss = evaluate(model, softmax_cross_entropy, params, x_train, split.y_train)
    train_acc = accuracy(model, params, x_train, split.y_train)
    print(f"trained {history.epochs} epochs ({history.steps} steps) in {seconds:.2f} s")
    print(f"final train loss {train_loss:.4g}   train accuracy {train_acc:.2%}")
    if len(split.y_test):
        test_loss = evaluate(model, softmax_cross_entropy, params, x_test, split.y_test)
        test_acc = accuracy(model, params, x_test, split.y_test)
        print(f"held-out loss    {test_loss:.4g}   held-out accuracy {test_acc:.2%} ({len(split.y_test)} rows)")
    return C.finish(saved, args.save, "prelens predict/evaluate/summary")


def _save(args: argparse.Namespace, params: Any, raw: Any, model: Any, dtype: Any, history: Any) -> bool | None:
    """Write the model file ``--save`` (see :func:`prelens.cli._checks.saved`); ``raw``: the split, not standardised."""
    meta = {
        "model": repr(model),
        "dataset": args.dataset,
        "classes": list(raw.class_names),
        "hidden": list(args.hidden),
        "activation": args.activation,
        "seed": args.seed,
        "test_fraction": args.test_fraction,
        "standardized": not args.raw_features,
        "epochs": history.epochs,
    }
    stats = None if args.raw_features else raw.x_train  # the statistics of the standardisation
    return C.saved(COMMAND, args.save, lambda: save_classifier(args.save, model, params, raw, dtype, meta, stats))
