"""Run a saved model on new data: one output row per input row.

MODEL is a model file (written by "prelens train ... --save" or
prelens.save_model). INPUT is a .npy array or a .csv table of numbers (a first
row of names is skipped), one example per row, raw as the model takes it (a
model trained on standardised features carries its standardisation; a row may
hold an example of more axes flattened, a series of 40 for a model of 40×1).

What is written (--outputs): for a classifier, "label" (the predicted class
name; class indices in a .npy), "proba" (the class probabilities, a softmax of
the logits) or "raw" (the logits); for any other model, "raw". The result goes
to --output (.csv or .npy), or as CSV to the standard output.

Examples:
  prelens predict iris.prelens flowers.csv
  prelens predict iris.prelens flowers.csv --outputs proba --output proba.csv
  prelens predict reverse.prelens tokens.npy --output logits.npy
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.cli import _checks as C
from prelens.train import predict

OUTPUTS = ("auto", "label", "proba", "raw")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``prelens predict``."""
    parser.add_argument("model", metavar="MODEL", help="a model file (prelens train --save, prelens.save_model)")
    parser.add_argument("input", metavar="INPUT", help="the examples, one per row: a .csv table or a .npy array")
    parser.add_argument(
        "--output",
        metavar="PATH",
        default=None,
        help="write the results to this .csv or .npy file (a file there is replaced; default: print CSV)",
    )
    parser.add_argument(
        "--outputs",
        choices=OUTPUTS,
        default="auto",
        help="label, proba or raw; auto is label for a classifier, raw otherwise",
    )
    parser.add_argument("--batch-size", type=int, default=1024, help="rows run at once (bounds the memory)")


def run(args: argparse.Namespace) -> int:
    """Predict; 0 on success, 2 for a mistake in the arguments or the files."""
    try:
        C.readable_file("MODEL", args.model)
        C.readable_file("INPUT", args.input, (".csv", ".npy"))
        if args.output is not None:
            C.writable_file("--output", args.output, (".csv", ".npy"))
            if os.path.exists(args.output) and os.path.samefile(args.output, args.input):
                raise C.UsageError(f"--output {args.output!r} is INPUT: write the results to another file")
        C.at_least("prelens predict", "--batch-size", args.batch_size)
        model = C.load(args.model)
        names = C.classes(model)
        what = args.outputs if args.outputs != "auto" else ("label" if names else "raw")
        if what != "raw" and names is None:
            raise C.UsageError(f"--outputs {what} needs a classifier (a model file whose metadata names its classes)")
        x = read_input("INPUT", args.input, model)
        out = predict(model.lens, model.params, x, batch_size=args.batch_size)
        result, header = shape_result(out, what, names)
        if what == "label" and names is not None and not (args.output or "").lower().endswith(".npy"):
            result = np.array(names)[result]  # class names in a table, class indices in an array
        write(args.output, result, header)
    except C.MISTAKES as err:
        return C.fail(err, "prelens predict")
    if args.output is not None:
        print(f"wrote {len(result)} rows ({what}) to {args.output}")
    return 0


def read_input(flag: str, path: str, model: Any) -> npt.NDArray[Any]:
    """The examples in ``path`` (.npy or .csv) as the model takes them."""
    if os.path.splitext(path)[1].lower() == ".npy":
        x = C.read_npy(flag, path)
    else:
        rows = C.read_table(flag, path)
        x = C.numbers(flag, path, rows, " (predict reads inputs only; labelled data: prelens evaluate)")
    return C.as_model_input(flag, path, x, model)


def probabilities(logits: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Softmax over the last axis (shifted by the row maximum).

    >>> probabilities(np.array([[0.0, np.log(3.0)]]))
    array([[0.25, 0.75]])
    """
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    out: npt.NDArray[Any] = z / z.sum(axis=-1, keepdims=True)
    return out


def shape_result(out: Any, what: str, names: list[str] | None) -> tuple[npt.NDArray[Any], list[str]]:
    """The array to write for ``what`` and its CSV header."""
    if not isinstance(out, np.ndarray) or out.dtype.kind not in "biuf":
        raise C.UsageError(f"the model's output is {E.describe_tree(out)}, not an array of numbers")
    if what == "raw":
        width = out.shape[-1] if out.ndim >= 2 else 1
        return out, [f"output_{j}" for j in range(width)]
    if names is None or out.ndim != 2 or out.shape[1] != len(names):
        raise C.UsageError(f"the model's output {E.describe(out)} does not have one column per class")
    if what == "proba":
        return probabilities(out), list(names)
    return np.argmax(out, axis=1), ["label"]


def write(path: str | None, result: npt.NDArray[Any], header: list[str]) -> None:
    """``result`` to ``path`` (.npy as it is; .csv with a header), or as CSV to the standard output."""
    if path is not None and path.lower().endswith(".npy"):
        np.save(path, result, allow_pickle=False)
        return
    if result.ndim > 2:
        raise C.UsageError(f"outputs of shape {result.shape} do not fit a CSV table: write them to a .npy file")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in result.reshape(len(result), -1):
        writer.writerow([repr(float(v)) if isinstance(v, np.floating) else str(v) for v in row])
    if path is None:
        sys.stdout.write(buf.getvalue())
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(buf.getvalue())
