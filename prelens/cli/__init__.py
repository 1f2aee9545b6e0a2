"""The ``prelens`` command line: ``demo``, ``train mlp``, ``train transformer``, ``bench``.

Each subcommand lives in its own module with ``add_arguments(parser)`` and
``run(args) -> int``; this module only wires them together.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

#: (command, module, one-line help); ``train`` has one sub-command per model.
COMMANDS = [
    ("demo", "prelens.cli.demo", "train the faithful MLP on the toy set and a fast MLP on Iris"),
    ("bench", "prelens.cli.bench", "time lens training steps against hand-written numpy"),
]
TRAIN_MODELS = [
    ("mlp", "prelens.cli.train_mlp", "train a fast MLP on a shipped dataset"),
    ("transformer", "prelens.cli.train_transformer", "train a decoder-only transformer on a sequence task"),
]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (subcommand modules are imported here)."""
    parser = argparse.ArgumentParser(prog="prelens", description="Neural networks as composable pre-lenses.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module, help_ in COMMANDS:
        _add(sub, name, module, help_)
    train = sub.add_parser("train", help="train a model", description="Train a model built from lenses.")
    models = train.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name, module, help_ in TRAIN_MODELS:
        _add(models, name, module, help_)
    return parser


def _add(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, module: str, help_: str) -> None:
    mod = importlib.import_module(module)
    p = sub.add_parser(
        name,
        help=help_,
        description=(mod.__doc__ or help_).strip(),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    mod.add_arguments(p)
    p.set_defaults(run=mod.run)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen command; returns the exit code."""
    args = build_parser().parse_args(argv)
    return int(args.run(args))
