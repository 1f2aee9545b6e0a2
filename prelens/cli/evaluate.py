"""Measure a saved model on labelled data: the loss, the accuracy and, for a classifier, the confusion matrix.

MODEL is a model file. DATA is a .csv table whose label column (--label-column,
the last by default) holds class names or class indices and whose other
columns are the features, raw (a first row of names is skipped); or a .npz
archive with arrays "x" (inputs) and "y" (labels), as a language model needs:
token ids and next-token labels, -1 where a position does not count.

The loss is the one the model file names (prelens train writes it), or --loss.
The accuracy compares the argmax of the outputs with the labels (positions
labelled -1 do not count).

Examples:
  prelens evaluate iris.prelens iris_test.csv
  prelens evaluate reverse.prelens held_out.npz
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens.cli import _checks as C
from prelens.train import evaluate, predict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``prelens evaluate``."""
    parser.add_argument("model", metavar="MODEL", help="a model file (prelens train --save, prelens.save_model)")
    parser.add_argument("data", metavar="DATA", help="labelled examples: a .csv table or a .npz with arrays x and y")
    parser.add_argument(
        "--label-column", type=int, default=-1, help="which CSV column holds the labels (0 is the first, -1 the last)"
    )
    parser.add_argument(
        "--loss", choices=C.LOSSES, default=None, help="the loss to report (default: the one the model file names)"
    )
    parser.add_argument("--batch-size", type=int, default=1024, help="rows run at once (bounds the memory)")


def run(args: argparse.Namespace) -> int:
    """Evaluate and print the report; 0 on success, 2 for a mistake in the arguments or the files."""
    try:
        C.readable_file("MODEL", args.model)
        C.readable_file("DATA", args.data, (".csv", ".npz"))
        C.at_least("prelens evaluate", "--batch-size", args.batch_size)
        model = C.load(args.model)
        names = C.classes(model)
        x, y = read_data(args.data, args.label_column, model, names)
        loss_name = args.loss or model.metadata.get("loss")
        loss = C.loss_lens(loss_name) if isinstance(loss_name, str) else None
        report = measure(model, x, y, loss, args.batch_size)
    except C.MISTAKES as err:
        return C.fail(err, "prelens evaluate")
    print(f"model {model.lens!r} ({args.model})")
    print(f"data {args.data}: {len(x)} examples")
    if loss is not None:
        print(f"loss ({loss_name}): {report['loss']:.6g}")
    if "accuracy" in report:
        right, counted = report["right"], report["counted"]
        print(f"accuracy: {report['accuracy']:.2%} ({right} of {counted} {report['unit']})")
    if "confusion" in report:
        print(confusion_table(report["confusion"], names))
    return 0


def read_data(path: str, label_column: int, model: Any, names: list[str] | None) -> tuple[Any, Any]:
    """``(x, y)`` from a .npz (arrays x and y) or a .csv (features and one label column)."""
    if os.path.splitext(path)[1].lower() == ".npz":
        arrays = C.read_npz("DATA", path, ("x", "y"))
        x = C.as_model_input("DATA", path, arrays["x"], model)
        y = arrays["y"]
        if y.dtype.kind not in "biuf" or y.ndim == 0 or len(y) != len(x):
            raise C.UsageError(f"DATA {path!r}: y must hold one label (row) of numbers per example of x")
        return x, y
    rows = C.read_table("DATA", path)
    width = len(rows[0])
    if not -width <= label_column < width or width < 2:
        raise C.UsageError(f"--label-column {label_column}: DATA {path!r} has {width} columns")
    col = label_column % width
    labels = [row[col] for row in rows]
    features = [row[:col] + row[col + 1 :] for row in rows]
    x = C.as_model_input("DATA", path, C.numbers("DATA", path, features), model)
    return x, class_indices(path, labels, names)


def class_indices(path: str, labels: list[str], names: list[str] | None) -> npt.NDArray[np.int64]:
    """Labels given as class names (of ``names``) or as class indices (``2`` or ``2.0``, as np.savetxt writes), as
    indices."""
    index = {name: i for i, name in enumerate(names or [])}
    out = np.empty(len(labels), dtype=np.int64)
    for i, label in enumerate(labels):
        if label in index:
            out[i] = index[label]
            continue
        value = float(label) if C.is_number(label) else None
        if value is None or not value.is_integer():
            known = f" (the classes are {', '.join(names)})" if names else ""
            raise C.UsageError(f"DATA {path!r}: row {i + 1}: unknown label {label!r}{known}")
        if not 0 <= value < (2**63 if names is None else len(names)):  # (an int64 holds it)
            raise C.UsageError(f"DATA {path!r}: row {i + 1}: class index {value:g} out of range")
        out[i] = value
    return out


def measure(model: Any, x: Any, y: Any, loss: Any, batch_size: int) -> dict[str, Any]:
    """The loss, accuracy and (for one label per example) confusion matrix of ``model`` on ``(x, y)``."""
    report: dict[str, Any] = {}
    if loss is not None:
        report["loss"] = evaluate(model.lens, loss, model.params, x, y)
    out = predict(model.lens, model.params, x, batch_size=batch_size)
    if not isinstance(out, np.ndarray) or y.dtype.kind not in "iu" or out.ndim != y.ndim + 1:
        return report
    guess = np.argmax(out, axis=-1)
    counted = y >= 0
    right = int((guess[counted] == y[counted]).sum())
    total = int(counted.sum())
    unit = "examples" if y.ndim == 1 else "counted positions"
    report.update(accuracy=right / max(total, 1), right=right, counted=total, unit=unit)
    if y.ndim == 1:
        k = out.shape[-1]
        if (y < k).all():
            report["confusion"] = np.bincount(y * k + guess, minlength=k * k).reshape(k, k)
    return report


def confusion_table(matrix: npt.NDArray[np.int64], names: list[str] | None) -> str:
    """The confusion matrix as text: one row per true class, one column per predicted class.

    >>> print(confusion_table(np.array([[2, 0], [1, 3]]), ["cat", "dog"]))
    confusion matrix (rows: true class, columns: predicted class)
          cat dog
      cat   2   0
      dog   1   3
    """
    k = len(matrix)
    labels = names if names is not None and len(names) == k else [str(i) for i in range(k)]
    width = max(max(len(s) for s in labels), len(str(int(matrix.max()) if matrix.size else 0)))
    lines = ["confusion matrix (rows: true class, columns: predicted class)"]
    lines.append(" " * (width + 3) + " ".join(f"{s:>{width}}" for s in labels))
    for name, row in zip(labels, matrix):
        lines.append(f"  {name:>{width}} " + " ".join(f"{int(v):>{width}}" for v in row))
    return "\n".join(lines)
