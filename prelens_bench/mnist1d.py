"""The MNIST-1D paper's table reproduced with lenses: four models, one training protocol, accuracy over seeds.

Greydanus & Kobak, "Scaling down deep learning with MNIST-1D" (ICML 2024). The models and the
protocol (Adam with step size 1e-2, batches of 100, 8,000 steps, softmax cross-entropy) are the
library's, the ones ``prelens train mnist1d`` trains (``prelens.train._mnist1d``), re-exported
here: :func:`mnist1d_model`, :func:`takes_channel`, :func:`train_mnist1d`, :data:`PAPER_ACCURACY`
(the paper reports logistic regression 32%, MLP 68%, CNN 94%, GRU 91%).

The full table (3 seeds, numpy and JAX if installed): ``python -m prelens_bench.mnist1d``
(:func:`main`); one model: ``prelens train mnist1d --model cnn``. Needs the ``mnist1d`` extra.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from prelens import errors as E
from prelens.datasets import load_mnist1d
from prelens.train._mnist1d import (
    MNIST1D_MODELS,
    PAPER_ACCURACY,
    STEPS,
    Mnist1dResult,
    mnist1d_model,
    model_name,
    takes_channel,
    train_mnist1d,
)

__all__ = [
    "MNIST1D_MODELS",
    "PAPER_ACCURACY",
    "Mnist1dResult",
    "format_table",
    "mnist1d_model",
    "mnist1d_table",
    "takes_channel",
    "train_mnist1d",
]


def mnist1d_table(
    models: Sequence[str] = tuple(MNIST1D_MODELS),
    *,
    seeds: Sequence[int] = (0, 1, 2),
    steps: int = STEPS,
    backends: Sequence[str] = ("numpy",),
    report: Callable[[Mnist1dResult], None] | None = None,
) -> tuple[str, list[Mnist1dResult]]:
    """Train every model with every seed on every backend; a markdown table of test accuracy beside the paper's.

    Each cell is the mean ± the sample standard deviation over ``seeds`` of the test accuracy
    (in %) at the end of training, and the median seconds per run. ``report`` is called with
    each run's result as it ends (to print progress). Returns ``(table, results)``.

    >>> table, results = mnist1d_table(["logreg"], seeds=[0, 1], steps=400)
    >>> print(table)
    | model | paper | prelens, numpy (2 seeds, 400 steps) |
    |---|---|---|
    | logreg | 32% | ... ± ...% (... s) |
    """
    for name in models:
        model_name("mnist1d_table", name)
    results: list[Mnist1dResult] = []
    for backend in backends:
        for name in models:
            split = load_mnist1d(channel=takes_channel(name))
            for seed in seeds:
                r = train_mnist1d(name, split, steps=steps, seed=seed, backend=backend)
                results.append(r)
                if report is not None:
                    report(r)
    return format_table(results, models, backends, steps), results


def format_table(results: Sequence[Mnist1dResult], models: Sequence[str], backends: Sequence[str], steps: int) -> str:
    """The markdown table of :func:`mnist1d_table` from its results.

    >>> r = [Mnist1dResult("mlp", s, "numpy", 40, None, 0.9, a, 1.0) for s, a in ((0, 0.70), (1, 0.66))]
    >>> print(format_table(r, ["mlp"], ["numpy"], 40))
    | model | paper | prelens, numpy (2 seeds, 40 steps) |
    |---|---|---|
    | mlp | 68% | 68.0 ± 2.8% (1.0 s) |
    """
    head = ["model", "paper"]
    for b in backends:
        n = len({r.seed for r in results if r.backend == b})
        head.append(f"prelens, {b} ({n} seed{'' if n == 1 else 's'}, {steps} steps)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in models:
        row = [name, f"{PAPER_ACCURACY[name]:.0f}%"]
        for b in backends:
            accs = [100 * r.test_accuracy for r in results if r.model == name and r.backend == b]
            secs = [r.seconds for r in results if r.model == name and r.backend == b]
            if not accs:
                row.append("—")
                continue
            sd = f" ± {statistics.stdev(accs):.1f}" if len(accs) > 1 else ""
            row.append(f"{statistics.mean(accs):.1f}{sd}% ({statistics.median(secs):.1f} s)")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _backends(choice: str | None) -> tuple[str, ...]:
    """``numpy``, ``jax``, ``both``, or None: numpy, and JAX when it is installed."""
    if choice == "both":
        return ("numpy", "jax")
    if choice is None:
        import importlib.util

        return ("numpy", "jax") if importlib.util.find_spec("jax") is not None else ("numpy",)
    return (choice,)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m prelens_bench.mnist1d``: the table, printed as markdown; 0 on success, 2 for bad arguments."""
    import argparse
    import importlib.util
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m prelens_bench.mnist1d",
        description="Train the MNIST-1D paper's four models with its protocol (Adam 1e-2, batch 100, 8,000 "
        "steps) for several seeds and print their test accuracy beside the paper's, as a markdown table.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--models", nargs="+", choices=tuple(MNIST1D_MODELS), default=list(MNIST1D_MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="one training run per seed")
    parser.add_argument("--steps", type=int, default=STEPS, help="optimiser steps per run (the paper: 8000)")
    parser.add_argument(
        "--backend",
        choices=("numpy", "jax", "both"),
        default=None,
        help="numpy, jax (compiled steps) or both; by default both where JAX is installed, else numpy",
    )
    parser.add_argument("--quiet", action="store_true", help="print the table only, not a line per run")
    args = parser.parse_args(argv)
    if args.steps < 1 or any(s < 0 for s in args.seeds) or len(set(args.seeds)) != len(args.seeds):
        print(f"{parser.prog}: --steps must be >= 1 and --seeds distinct and >= 0", file=sys.stderr)
        return 2
    backends = _backends(args.backend)
    if "jax" in backends and importlib.util.find_spec("jax") is None:
        print(f"{parser.prog}: --backend {args.backend} needs jax: pip install 'prelens[jax]'", file=sys.stderr)
        return 2
    try:
        load_mnist1d()  # the dataset (or the missing extra) before any training
    except E.MissingExtraError as err:
        print(f"{parser.prog}: {err}", file=sys.stderr)
        return 2

    def report(r: Mnist1dResult) -> None:
        if not args.quiet:
            print(
                f"{r.model:6} seed {r.seed} {r.backend:5}: test {r.test_accuracy:.1%}, "
                f"train {r.train_accuracy:.1%}, {r.steps} steps in {r.seconds:.1f} s",
                flush=True,
            )

    table, _ = mnist1d_table(args.models, seeds=args.seeds, steps=args.steps, backends=backends, report=report)
    print(f"\n{table}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
