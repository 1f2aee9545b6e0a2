"""Train/test splits: the :class:`Split` record, a stratified split and standardisation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import is_real
from prelens.core import _args

Floats = npt.NDArray[np.floating]
Labels = npt.NDArray[np.int64]
Seed = np.random.Generator | int | None


@dataclass(frozen=True, repr=False)
class Split:
    """A classification dataset split into a training and a held-out test part.

    Shapes: ``x_train (n_train, n_features)``, ``y_train (n_train,)`` (int64
    class indices), ``x_test (n_test, n_features)``, ``y_test (n_test,)``.
    ``class_names[k]`` names class ``k``; ``feature_names[j]`` column ``j``.

    >>> from prelens.datasets import load_iris
    >>> load_iris(test_fraction=0.2, rng=0)
    Split(iris: 120 train + 30 test, 4 features, 3 classes)
    """

    name: str
    x_train: Floats
    y_train: Labels
    x_test: Floats
    y_test: Labels
    class_names: tuple[str, ...]
    feature_names: tuple[str, ...]

    @property
    def n_classes(self) -> int:
        """The number of classes."""
        return len(self.class_names)

    @property
    def n_features(self) -> int:
        """The number of input features (columns of ``x_train``)."""
        return int(self.x_train.shape[1])

    def __repr__(self) -> str:
        return (
            f"Split({self.name}: {len(self.y_train)} train + {len(self.y_test)} test, "
            f"{self.n_features} features, {self.n_classes} classes)"
        )


def stratified_split(
    labels: npt.ArrayLike, test_fraction: float, rng: Seed = None
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Indices ``(train, test)`` holding out ``test_fraction`` of every class.

    ``labels (n,)``; the two index arrays together hold each of ``0 .. n-1`` once.

    Each class gives ``round(test_fraction · n_class)`` random rows to the test part; both come back
    shuffled. ``rng`` is a ``numpy.random.Generator`` or a seed.

    >>> train, test = stratified_split([0, 0, 0, 0, 1, 1, 1, 1], 0.25, rng=0)
    >>> len(train), len(test), sorted(np.array([0, 0, 0, 0, 1, 1, 1, 1])[test].tolist())
    (6, 2, [0, 1])
    """
    if not (is_real(test_fraction) and 0.0 <= test_fraction < 1.0):
        raise E.bad_argument("stratified_split", "test_fraction", test_fraction, "a number in [0, 1)")
    ys = _labels("stratified_split", labels)
    if ys.ndim != 1:
        raise E.bad_argument("stratified_split", "labels", E.describe(ys), "a 1-D array of class labels")
    gen = _args.seed("stratified_split", rng)
    classes = [gen.permutation(np.flatnonzero(ys == cls)) for cls in np.unique(ys)]
    cuts = [round(test_fraction * len(rows)) for rows in classes]
    empty = [np.empty(0, dtype=np.intp)]  # no labels: no classes
    train = np.concatenate([rows[k:] for rows, k in zip(classes, cuts)] or empty)
    test = np.concatenate([rows[:k] for rows, k in zip(classes, cuts)] or empty)
    if len(ys) and not len(train):
        raise E.ArgumentError(f"stratified_split: test_fraction={test_fraction!r} leaves no rows to train on")
    return gen.permutation(train), gen.permutation(test)


def stratified_folds(labels: npt.ArrayLike, k: int, rng: Seed = None) -> list[npt.NDArray[np.intp]]:
    """``k`` disjoint index arrays covering every row, each with every class in proportion.

    For ``k``-fold cross-validation. Each class's rows are shuffled with ``rng`` and dealt to the folds
    in turn, so fold sizes differ by at most one per class.

    >>> folds = stratified_folds([0] * 6 + [1] * 4, 2, rng=0)
    >>> [sorted(np.array([0] * 6 + [1] * 4)[f].tolist()) for f in folds]
    [[0, 0, 0, 1, 1], [0, 0, 0, 1, 1]]
    """
    _args.count("stratified_folds", "k", k, 2)
    ys = _labels("stratified_folds", labels)
    if ys.ndim != 1 or len(ys) < k:
        raise E.bad_argument("stratified_folds", "labels", E.describe(ys), f"a 1-D array of at least {k} labels")
    gen = _args.seed("stratified_folds", rng)
    folds: list[list[npt.NDArray[np.intp]]] = [[] for _ in range(k)]
    start = 0
    for cls in np.unique(ys):
        rows = gen.permutation(np.flatnonzero(ys == cls))
        for i in range(k):
            folds[(start + i) % k].append(rows[i::k])
        start += len(rows) % k  # the next class fills the folds this one left short first
    return [gen.permutation(np.concatenate(f)) for f in folds]


def _labels(fn: str, labels: Any) -> npt.NDArray[Any]:
    """Class labels as an array: ints, bools, strings or finite floats (NaN equals no class; objects do not sort)."""
    try:
        ys = np.asarray(labels)
    except ValueError:  # a ragged nest
        raise E.bad_argument(fn, "labels", E.describe_tree(labels), "a 1-D array of class labels") from None
    if ys.dtype.kind not in "biufUS" or (ys.dtype.kind == "f" and not np.isfinite(ys).all()):
        raise E.bad_argument(fn, "labels", E.describe(ys), "class labels: ints, strings or finite numbers")
    return ys


def _table(fn: str, what: str, x: Any, columns: int | None) -> None:
    """``x`` must be a float array ``(rows, columns)`` with at least one row (statistics of no rows are NaN)."""
    if not isinstance(x, np.ndarray):
        raise E.must_be(fn, what, "a numpy float array (rows, features)", E.describe_tree(x))
    if x.dtype.kind != "f":
        raise E.lens_dtype_error(fn, what, "a float array (rows, features)", E.describe(x))
    if x.ndim != 2 or (columns is None and len(x) == 0) or (columns is not None and x.shape[1] != columns):
        expected = "a float array (rows, features) with at least one row" if columns is None else f"(rows, {columns})"
        raise E.lens_shape_error(fn, what, expected, E.describe(x))


def standardize(train: Floats, *others: Floats) -> tuple[Floats, ...]:
    """Shift and scale every column to mean 0 and standard deviation 1 *on* ``train``.

    ``train``'s statistics (no test information leaks) apply to ``others`` too; constant columns are only
    shifted. Returns new arrays ``(train, *others)`` of shapes ``(n, n_features)``.

    >>> a, b = standardize(np.array([[1.0], [3.0]]), np.array([[5.0]]))
    >>> a.ravel().tolist(), b.ravel().tolist()
    ([-1.0, 1.0], [3.0])
    """
    _table("standardize", "train", train, None)
    for i, other in enumerate(others):
        _table("standardize", f"array {i + 1}", other, train.shape[1])
    mean = train.mean(axis=0)
    scale = train.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0).astype(train.dtype)
    return tuple((x - mean) / scale for x in (train, *others))
