"""Three short trainings, end to end: the post's network on micrograd's toy set and on Iris, then a fast MLP.

1. The faithful network of Milewski's post (``make_mlp(3, [4, 4, 1])``, one
   pre-lens per neuron) fitted to the four toy points with the post's
   gradient-descent step.
2. The same kind of network at Iris size (``make_mlp(4, [16, 3])``: 4 inputs, 16
   hidden neurons, 3 outputs) trained the post's way, each mini-batch through
   ``from_tamb(batch_n(n, mlp))``, with the cost of one pass read off the TriLens itself
   (:class:`~prelens.tambara.Cost`).
3. A fast MLP (``mlp(4, [16, 3])``, whole-array lenses) trained with Adam on a
   seeded 80/20 split of Fisher's Iris data, then 5-fold cross-validated
   (every flower held out once), which measures held-out accuracy with far
   less luck of the split than 30 test flowers can (one flower is 3.3%).

The features go in raw (centimetres) by default: 5-fold cross-validation
with seeds 0, 1 and 2 gave 145/150 right on raw features and 142-144/150 on
standardized ones (``--standardize``), which stretch the noisy sepal width
as far as the telling petal measures.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.cli import _checks as C
from prelens.datasets import TOY_XS, TOY_YS, iris_arrays, load_iris, standardize, stratified_folds
from prelens.faithful import init_mlp, make_mlp, predict_faithful, train_step
from prelens.learn import adam
from prelens.nn import mlp, softmax_cross_entropy
from prelens.tambara._meanings import Cost
from prelens.train import Progress, accuracy, evaluate, fit
from prelens.train._plan import isatty


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``prelens demo``."""
    parser.add_argument("--seed", type=int, default=0, help="seeds every random choice (init, split, shuffling)")
    parser.add_argument("--toy-steps", type=int, default=100, help="gradient steps of the faithful network")
    parser.add_argument("--toy-rate", type=float, default=0.1, help="learning rate of the faithful network")
    parser.add_argument("--hidden", type=int, default=16, help="hidden width of the Iris MLP")
    parser.add_argument("--epochs", type=int, default=100, help="epochs of the Iris MLP")
    parser.add_argument("--batch-size", type=int, default=16, help="mini-batch size of the Iris MLP")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate for the Iris MLP")
    parser.add_argument("--standardize", action="store_true", help="standardize the Iris features (train statistics)")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds on Iris (0: none; 2 to 150)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress lines (hidden anyway when piped)")


COMMAND = "prelens demo"


def check(args: argparse.Namespace) -> None:
    """Every flag's range, before any work (an ``ArgumentError`` if not)."""
    C.at_least(COMMAND, "--seed", args.seed, 0)
    C.counts(COMMAND, args, "--toy-steps", "--hidden", "--epochs", "--batch-size")
    C.positive_real(COMMAND, "--toy-rate", args.toy_rate)
    C.positive_real(COMMAND, "--lr", args.lr)
    if args.folds != 0 and not 2 <= args.folds <= 150:  # each flower in a fold
        raise E.bad_argument(COMMAND, "--folds", args.folds, "0 (skip) or an int from 2 to 150 (the Iris flowers)")


def run(args: argparse.Namespace) -> int:
    """Run the three parts and print their results; 0, or 2 for a bad flag (found before any work)."""
    try:
        check(args)
    except E.PrelensError as err:
        return C.fail(err, COMMAND)
    show = False if args.no_progress else isatty(sys.stdout)
    started = time.perf_counter()
    _toy(args, show)
    _iris_faithful(args)
    _iris(args, show)
    print(f"\ndemo finished in {time.perf_counter() - started:.1f} s")
    return 0


def _toy(args: argparse.Namespace, show: bool) -> None:
    print("1. The post's network, neuron by neuron: make_mlp(3, [4, 4, 1]) on micrograd's toy set")
    net = make_mlp(3, [4, 4, 1])
    params = init_mlp(3, [4, 4, 1], np.random.default_rng(args.seed))
    bar = Progress(args.toy_steps, 1, sys.stdout, enabled=show, label="step")
    loss = float("nan")
    for k in range(1, args.toy_steps + 1):
        params, loss = train_step(net, params, TOY_XS, TOY_YS, args.toy_rate)
        bar.batch_end(k, 1, loss, len(TOY_XS))
        bar.epoch_end(k, loss, {})
    bar.close()
    outputs = [round(float(o[0]), 3) for o in predict_faithful(net, params, TOY_XS)]
    print(f"   loss after {args.toy_steps} steps (before the last update): {loss:.5f}")
    print(f"   targets {TOY_YS.ravel().tolist()}  ->  outputs {outputs}")


def _iris_faithful(args: argparse.Namespace) -> None:
    sizes, epochs, batch, rate = [16, 3], 20, 20, 0.02
    print(f"\n2. The post's network at Iris size, the post's way: make_mlp(4, {sizes}) through the TriLens")
    iris = load_iris(0.2, args.seed, standardize_features=True)
    net, gen = make_mlp(4, sizes), np.random.default_rng(args.seed)
    params = init_mlp(4, sizes, gen)
    targets = np.where(np.arange(3) == iris.y_train[:, None], 1.0, -1.0)  # tanh outputs: +1 for the class, -1 else
    t0 = time.perf_counter()
    for _ in range(epochs):
        order = gen.permutation(len(targets))
        for lo in range(0, len(order), batch):
            rows = order[lo : lo + batch]
            params, _ = train_step(net, params, iris.x_train[rows], targets[rows], rate)
    seconds = time.perf_counter() - t0
    guesses = np.argmax(predict_faithful(net, params, iris.x_test), axis=1)
    cost = Cost.of(net, params, iris.x_test[0])
    fwd, bwd = cost.total
    print(
        f"   {epochs} epochs of batches of {batch}, each step from_tamb(batch_n({batch}, mlp)) >> loss_l, "
        f"rate {rate}: {seconds:.1f} s"
    )
    print(
        f"   held-out accuracy {np.mean(guesses == iris.y_test):.2%} on the {len(iris.y_test)} test flowers "
        "(standardized features, squared loss on ±1 targets)"
    )
    print(
        f"   one flower costs {fwd} multiply-adds forward, {bwd} backward, and holds {cost.residue_bytes} bytes "
        "of residue between them (prelens.tambara.Cost)"
    )


def _iris(args: argparse.Namespace, show: bool) -> None:
    print(f"\n3. A fast MLP: mlp(4, [{args.hidden}, 3]) on Iris, softmax cross-entropy, Adam")
    iris = load_iris(0.2, args.seed, standardize_features=args.standardize)
    model = mlp(4, [args.hidden, 3], "tanh", last_activation=None, input_delta=False)
    t0 = time.perf_counter()
    params, _, history = _fit(
        args,
        model,
        (iris.x_train, iris.y_train),
        args.seed,
        validation=(iris.x_test, iris.y_test),
        metrics={"accuracy": accuracy},
        progress=show,
        stream=sys.stdout,
    )
    seconds = time.perf_counter() - t0
    train_loss = evaluate(model, softmax_cross_entropy, params, iris.x_train, iris.y_train)
    test_acc = accuracy(model, params, iris.x_test, iris.y_test)
    print(f"   {iris!r}, trained {history.epochs} epochs in {seconds:.2f} s")
    print(f"   final train loss {train_loss:.4f}")
    print(f"   held-out accuracy {test_acc:.2%} on this split's {len(iris.y_test)} test flowers")
    if args.folds >= 2:
        correct = _cross_validate(args, model)
        print(
            f"   {args.folds}-fold cross-validated accuracy {correct / 150:.2%} "
            f"({correct}/150 flowers right, each by a model that never saw it)"
        )


def _cross_validate(args: argparse.Namespace, model: Any) -> int:
    """Flowers classified right by the model trained without them, over all folds."""
    xs, ys = iris_arrays()
    correct = 0
    gen = np.random.default_rng(args.seed)
    for fold in stratified_folds(ys, args.folds, gen):
        train = np.setdiff1d(np.arange(len(ys)), fold)
        x_train, x_test = standardize(xs[train], xs[fold]) if args.standardize else (xs[train], xs[fold])
        params, _, _ = _fit(args, model, (x_train, ys[train]), gen, progress=False)
        correct += round(accuracy(model, params, x_test, ys[fold]) * len(fold))
    return correct


def _fit(args: argparse.Namespace, model: Any, data: Any, rng: Any, **options: Any) -> Any:
    """fit's ``(params, state, history)``: the Iris MLP trained on ``data`` as the flags say (a split or a fold)."""
    params, state, history = fit(
        model, softmax_cross_entropy, data, args.epochs, args.batch_size, adam(args.lr), rng, **options
    )
    if history.interrupted:  # fit stopped on Ctrl-C: the demo has nothing to keep, and ends
        raise KeyboardInterrupt
    return params, state, history
