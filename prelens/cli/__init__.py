"""The ``prelens`` command line: ``demo``, ``train mlp``, ``train transformer``, ``train mnist1d``, ``bench``,
``predict``, ``evaluate``, ``generate``, ``summary``.

Each subcommand lives in its own module with ``add_arguments(parser)`` and
``run(args) -> int``; this module only wires them together. Every command
checks all its arguments before it starts any work; a mistake is one line on
stderr and exit code 2 (a syntax error argparse finds raises ``SystemExit(2)``,
one the command finds is returned as 2), never a traceback. Ctrl-C outside
training (which keeps what it learned and goes on to report) ends with
"interrupted" and exit code 130; a write or an allocation the machine refuses (a full
disk, too little memory) is one line and exit code 1; output piped into a reader that stops
early (``| head``) ends quietly with exit code 1. ``prelens --version`` prints the version.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

import numpy as np

from prelens.cli._checks import Parser, fail
from prelens.cli._runtime import Formatter

#: (command, module, one-line help); ``train`` has one sub-command per model.
COMMANDS = [
    ("demo", "prelens.cli.demo", "train the faithful MLP on the toy set and a fast MLP on Iris"),
    ("bench", "prelens.cli.bench", "time lens training steps against hand-written numpy"),
    ("predict", "prelens.cli.predict", "run a saved model on new data (CSV or .npy)"),
    ("evaluate", "prelens.cli.evaluate", "loss, accuracy and confusion matrix of a saved model on labelled data"),
    ("generate", "prelens.cli.generate", "continue a prompt with a saved language model"),
    ("summary", "prelens.cli.summary", "show a saved model: its lens, metadata, stages (and string diagram)"),
]
TRAIN_MODELS = [
    ("mlp", "prelens.cli.train_mlp", "train a fast MLP on a shipped dataset"),
    ("transformer", "prelens.cli.train_transformer", "train a decoder-only transformer on a sequence task"),
    ("mnist1d", "prelens.cli.train_mnist1d", "train one of the MNIST-1D paper's models (logreg, mlp, cnn, gru)"),
]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (subcommand modules are imported here)."""
    from prelens._version import __version__

    parser = Parser(prog="prelens", description="Neural networks as composable pre-lenses.")
    parser.add_argument("--version", action="version", version=f"prelens {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module, help_ in COMMANDS:
        _add(sub, name, module, help_)
    train = sub.add_parser("train", help="train a model", description="Train a model built from lenses.")
    models = train.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name, module, help_ in TRAIN_MODELS:
        _add(models, name, module, help_)
    return parser


def _add(sub: argparse._SubParsersAction[Parser], name: str, module: str, help_: str) -> None:
    mod = importlib.import_module(module)
    p = sub.add_parser(name, help=help_, description=(mod.__doc__ or help_).strip(), formatter_class=Formatter)
    mod.add_arguments(p)
    p.set_defaults(run=mod.run, command_name=p.prog)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # fit stops a training whose loss or gradients overflow and says where: numpy's warnings would repeat it
    quiet = np.errstate(all="ignore") if args.command == "train" else contextlib.nullcontext()
    try:
        with quiet:
            code = int(args.run(args))
        sys.stdout.flush()  # a reader that stopped early (| head) is met here, not at exit
        return code
    except BrokenPipeError:  # nothing to tell a reader that has gone
        with contextlib.suppress(OSError, ValueError, AttributeError):  # (a captured stdout has no file number)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
    except (OSError, MemoryError) as err:  # the machine refused (a full disk, too little memory): one line
        return fail(err, args.command_name, code=1)
