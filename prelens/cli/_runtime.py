"""The flags the ``prelens train`` commands share: ``--backend``, ``--blas-threads``, ``--save``, ``--no-progress``."""

from __future__ import annotations

import argparse
from typing import Any


class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The commands' help: the description's line breaks kept, the defaults shown (unless None or False, or the
    help says it)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def threads_flag(value: str) -> int | str:
    """``--blas-threads``: ``auto`` or a number of threads >= 1.

    >>> threads_flag("auto"), threads_flag("2")
    ('auto', 2)
    """
    if value == "auto":
        return value
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected auto or a number of threads >= 1, got {value!r}")


#: ``--backend``'s choices: ``auto`` (the compiled JAX step where JAX is installed and supports the model).
BACKENDS = ("auto", "numpy", "jax")


def add_runtime_arguments(group: Any) -> None:
    """Add ``--backend`` and ``--blas-threads`` to a parser or an argument group."""
    group.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="what the training steps run on: auto takes the compiled JAX step where JAX is installed and the "
        "model suits it (no dropout), numpy otherwise (the progress line says which); numpy or jax force one",
    )
    group.add_argument(
        "--blas-threads",
        type=threads_flag,
        default="auto",
        metavar="N",
        help="BLAS threads for training: auto chooses from the model's and the batch's sizes (1 unless the "
        "matrix products are large; PRELENS_BLAS_THREADS or OPENBLAS_NUM_THREADS override auto), or a number",
    )


def add_output_arguments(out: Any, example: str, holds: str = "lens and parameters", piped: bool = True) -> None:
    """Add ``--save PATH`` and ``--no-progress`` to a training command's output group."""
    out.add_argument(
        "--save",
        metavar="PATH",
        default=None,
        help=f"write the trained model ({holds}) to this model file, e.g. {example} (a file there is replaced)",
    )
    hidden = " (hidden anyway when piped)" if piped else ""
    out.add_argument("--no-progress", action="store_true", help=f"hide the progress line{hidden}")
