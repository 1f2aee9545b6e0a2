"""Show what a model file holds: its lens, its metadata, and prelens.summary's table of stages.

The table needs one example input: its shape and dtype come from the model
file's metadata (prelens train writes them), or from --input-shape (the full
shape, batch axis first, e.g. 1,4). --diagram PATH also draws the model's
string diagram (prelens.show.draw) into an image file (.png, .svg or .pdf;
needs matplotlib, which the "plot" extra installs).

Examples:
  prelens summary iris.prelens
  prelens summary reverse.prelens --depth 2 --diagram reverse.png
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from prelens.cli import _checks as C
from prelens.show._summary import summary

IMAGES = (".png", ".svg", ".pdf")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``prelens summary``."""
    parser.add_argument("model", metavar="MODEL", help="a model file (prelens train --save, prelens.save_model)")
    parser.add_argument(
        "--input-shape", default=None, metavar="SHAPE", help="an example input's shape, batch first (e.g. 1,4)"
    )
    parser.add_argument("--depth", type=int, default=None, help="open composites this deep only (default: all)")
    parser.add_argument(
        "--diagram",
        metavar="PATH",
        default=None,
        help="draw the string diagram into this image (replacing a file there)",
    )


def run(args: argparse.Namespace) -> int:
    """Print the summary (and draw the diagram); 0 on success, 2 for a mistake in the arguments or the files."""
    try:
        C.readable_file("MODEL", args.model)
        shape = C.shape_flag("--input-shape", args.input_shape)
        C.at_least("prelens summary", "--depth", args.depth, 0)
        if args.diagram is not None:
            C.writable_file("--diagram", args.diagram, IMAGES)
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise C.UsageError("--diagram needs matplotlib: pip install 'prelens[plot]'") from None
        model = C.load(args.model)
        example, dtype = example_input(model, shape)
        table = summary(model.lens, example, params=model.params, dtype=dtype, depth=args.depth)
        if args.diagram is not None:
            draw(model, example, dtype, args.depth, args.diagram)
    except C.MISTAKES as err:
        return C.fail(err, "prelens summary")
    print(f"model file {args.model}")
    for key, value in model.metadata.items():
        print(f"  {key}: {_short(value)}")
    print(table)
    if args.diagram is not None:
        print(f"string diagram drawn to {args.diagram}")
    return 0


def example_input(model: Any, shape: tuple[int, ...] | None) -> tuple[Any, np.dtype[Any]]:
    """An example input for the table: a shape (random floats) or, for token ids, zeros."""
    dtype = C.input_dtype(model)
    if shape is None:
        one = C.input_shape(model)
        if one is None:
            raise C.UsageError("the model file does not say what its input is: pass --input-shape, e.g. 1,4")
        shape = (1, *one)
    if dtype.kind in "iu":
        return np.zeros(shape, dtype=dtype), np.dtype(np.float64)
    return shape, dtype


def draw(model: Any, example: Any, dtype: np.dtype[Any], depth: int | None, path: str) -> None:
    """The string diagram of the model into the image ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from prelens.show._diagram import draw as draw_diagram

    ax = draw_diagram(model.lens, example, params=model.params, dtype=dtype, depth=depth)
    ax.figure.savefig(path, bbox_inches="tight", dpi=150)
    plt.close(ax.figure)


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
