"""Train a fast MLP classifier on a shipped dataset and report held-out accuracy.

The model is ``mlp(n_features, [*hidden, n_classes])`` with logits on the last
layer, trained with softmax cross-entropy on a seeded, stratified train/test
split (features standardised on the training rows), for example
``prelens train mlp --dataset iris --hidden 16 --epochs 200 --lr 0.05 --optimizer adam --seed 0 --save params.npz``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

from .. import _errors as E
from ..checkpoint import save
from ..datasets import DATASETS, load_dataset
from ..nn import ACTIVATIONS, mlp, softmax_cross_entropy
from ..optim import Optimizer, adam, momentum, sgd
from ..train import accuracy, evaluate, fit

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
        help="points to generate for moons/spirals; None means 200 for moons, 300 for spirals",
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
    train.add_argument("--momentum", type=float, default=0.9, help="momentum coefficient (--optimizer momentum)")
    train.add_argument("--seed", type=int, default=0, help="seeds the data, the split, the init and the shuffling")
    out = parser.add_argument_group("output")
    out.add_argument("--save", metavar="PATH", default=None, help="save the trained parameters to this .npz file")
    out.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        metavar="N",
        help="save parameters and optimiser state every N epochs to PATH.checkpoint.npz (needs --save PATH)",
    )
    out.add_argument("--no-progress", action="store_true", help="hide the progress line (hidden anyway when piped)")


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

    >>> checkpoint_path("runs/params.npz")
    'runs/params.checkpoint.npz'
    """
    stem, suffix = os.path.splitext(save)
    return f"{stem}.checkpoint{suffix or '.npz'}"


def run(args: argparse.Namespace) -> int:
    """Train, print the final loss and held-out accuracy; 0 on success, 1 if training diverged."""
    if args.checkpoint_every is not None and args.save is None:
        print("prelens train mlp: --checkpoint-every needs --save PATH", file=sys.stderr)
        return 2
    try:
        split = load_dataset(
            args.dataset, args.test_fraction, args.seed, n=args.samples, standardize_features=not args.raw_features
        )
        dtype = np.float32 if args.float32 else np.float64
        sizes = [*args.hidden, split.n_classes]
        model = mlp(split.n_features, sizes, args.activation, last_activation=None, dtype=dtype, input_delta=False)
        opt = make_optimizer(args.optimizer, args.lr, args.momentum)
    except E.PrelensError as err:
        print(f"prelens train mlp: {err}", file=sys.stderr)
        return 2
    x_train, x_test = split.x_train.astype(dtype), split.x_test.astype(dtype)
    print(f"{split!r}; model {model!r}; {args.optimizer} lr={args.lr}")
    started = time.perf_counter()
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
            metrics={"accuracy": accuracy},
            progress=False if args.no_progress else None,
            checkpoint_every=args.checkpoint_every,
            checkpoint_path=checkpoint_path(args.save) if args.checkpoint_every else None,
        )
    except E.TrainingNonFiniteError as err:
        print(f"prelens train mlp: {err}", file=sys.stderr)
        _save(args, err.params, split, model, err.history.epochs)
        return 1
    except E.PrelensError as err:
        print(f"prelens train mlp: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
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
    _save(args, params, split, model, history.epochs)
    return 0


def _save(args: argparse.Namespace, params: Any, split: Any, model: Any, epochs: int) -> None:
    if args.save is None:
        return
    meta = {
        "model": repr(model),
        "dataset": args.dataset,
        "classes": list(split.class_names),
        "hidden": list(args.hidden),
        "activation": args.activation,
        "seed": args.seed,
        "test_fraction": args.test_fraction,
        "standardized": not args.raw_features,
        "epochs": epochs,
    }
    try:
        save(args.save, params, metadata=meta)
    except E.CheckpointError as err:
        print(f"prelens train mlp: {err}", file=sys.stderr)
        return
    print(f"saved parameters to {args.save}")
