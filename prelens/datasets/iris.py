"""Fisher's Iris data (150 flowers, 4 measurements in cm, 3 species), shipped as CSV.

R. A. Fisher, "The use of multiple measurements in taxonomic problems", *Annals of Eugenics* 7 (1936),
from Edgar Anderson's measurements (public domain); ``data/iris.csv`` is scikit-learn's copy (R's
``iris``) with a header and species names. 50 rows per species, in file order.

>>> split = load_iris(test_fraction=0.2, rng=0)
>>> split.x_train.shape, split.x_test.shape, split.class_names
((120, 4), (30, 4), ('setosa', 'versicolor', 'virginica'))
"""

from __future__ import annotations

import csv
import functools
import io
from importlib import resources

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args
from prelens.datasets._split import Seed, Split, standardize, stratified_split

__all__ = ["IRIS_CLASSES", "IRIS_FEATURES", "iris_arrays", "load_iris"]

#: The species, in class-index order.
IRIS_CLASSES = ("setosa", "versicolor", "virginica")
#: The four columns of the inputs.
IRIS_FEATURES = ("sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm")


@functools.lru_cache(maxsize=1)
def _read() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    text = resources.files("prelens.datasets").joinpath("data", "iris.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    header, body = tuple(rows[0]), [r for r in rows[1:] if r]
    if header != (*IRIS_FEATURES, "species") or len(body) != 150:
        raise E.PrelensError("prelens/datasets/data/iris.csv is damaged: reinstall prelens")
    xs = np.array([[float(v) for v in r[:4]] for r in body])
    ys = np.array([IRIS_CLASSES.index(r[4]) for r in body], dtype=np.int64)
    xs.setflags(write=False)
    ys.setflags(write=False)
    return xs, ys


def iris_arrays() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """All 150 rows in file order: ``xs (150, 4)`` float64 and ``ys (150,)`` int64 in ``{0, 1, 2}``.

    >>> xs, ys = iris_arrays()
    >>> xs[0].tolist(), np.bincount(ys).tolist()
    ([5.1, 3.5, 1.4, 0.2], [50, 50, 50])
    """
    xs, ys = _read()
    return xs.copy(), ys.copy()


def load_iris(
    test_fraction: float = 0.2,
    rng: Seed = 0,
    *,
    standardize_features: bool = False,
    dtype: npt.DTypeLike = np.float64,
) -> Split:
    """Iris split into train and test parts, stratified by species and seeded.

    ``test_fraction`` of each species is held out, ``rng`` fixes the split; ``standardize_features``
    as :func:`~prelens.datasets.load_dataset`; ``dtype`` the inputs' float dtype (labels int64).

    >>> split = load_iris(0.2, rng=1, standardize_features=True)
    >>> np.bincount(split.y_test).tolist(), bool(abs(split.x_train.mean()) < 1e-12)
    ([10, 10, 10], True)
    """
    dt = _args.float_dtype("load_iris", "dtype", dtype)
    _args.flag("load_iris", "standardize_features", standardize_features)
    xs, ys = _read()
    train, test = stratified_split(ys, test_fraction, rng)
    x_train, x_test = xs[train].astype(dt), xs[test].astype(dt)
    if standardize_features:
        x_train, x_test = standardize(x_train, x_test)
    return Split("iris", x_train, ys[train], x_test, ys[test], IRIS_CLASSES, IRIS_FEATURES)
