"""The classification datasets by name, as train/test splits (what the CLI trains on)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from prelens import errors as E
from prelens.core import _args
from prelens.datasets._split import Floats, Seed, Split, standardize, stratified_split
from prelens.datasets.glyphs import make_glyphs
from prelens.datasets.iris import IRIS_CLASSES, IRIS_FEATURES, iris_arrays
from prelens.datasets.synthetic import Points, make_moons, make_spirals

_XY = ("x", "y")
_PIXELS = tuple(f"pixel ({r}, {c})" for r in range(8) for c in range(8))

#: name -> (description, point generator taking (n or None, rng), class names or None (arm k))
_SOURCES: dict[str, tuple[str, Callable[[int | None, np.random.Generator], Points], tuple[str, ...]]] = {
    "iris": ("Fisher's Iris: 150 flowers, 4 features, 3 species", lambda n, g: iris_arrays(), IRIS_CLASSES),
    "moons": ("two interleaved half circles in 2-D (200 points)", lambda n, g: make_moons(n or 200, rng=g), ()),
    "spirals": ("three spiral arms in 2-D (300 points)", lambda n, g: make_spirals(n or 300, rng=g), ()),
    "glyphs": (
        "the ten digits as noisy 8x8 images (1000 of them, 64 pixels each)",
        lambda n, g: make_glyphs(n or 1000, rng=g),
        tuple(str(d) for d in range(10)),
    ),
}

#: Dataset names with one-line descriptions.
DATASETS: dict[str, str] = {name: src[0] for name, src in _SOURCES.items()}


def load_dataset(
    name: str,
    test_fraction: float = 0.2,
    rng: Seed = 0,
    *,
    n: int | None = None,
    standardize_features: bool = False,
) -> Split:
    """A named dataset (``iris``, ``moons``, ``spirals``, ``glyphs``) as a stratified, seeded split.

    ``rng`` seeds both the generated points (moons, spirals, glyphs; ``n`` of
    them, the default if None; ignored for iris) and the split. With
    ``standardize_features=True`` every column is scaled to mean 0 and
    standard deviation 1 with the training rows' statistics.

    >>> load_dataset("moons", 0.25, rng=0)
    Split(moons: 150 train + 50 test, 2 features, 2 classes)
    """
    if not isinstance(name, str) or name not in _SOURCES:
        raise E.bad_argument("load_dataset", "name", name, f"one of {sorted(_SOURCES)}")
    _args.flag("load_dataset", "standardize_features", standardize_features)
    gen = _args.seed("load_dataset", rng)
    _, make, classes = _SOURCES[name]
    xs, ys = make(n, gen)
    train, test = stratified_split(ys, test_fraction, gen)
    x_train: Floats = xs[train]
    x_test: Floats = xs[test]
    if standardize_features:
        x_train, x_test = standardize(x_train, x_test)
    class_names = classes or tuple(f"class {k}" for k in range(int(ys.max()) + 1))
    features = IRIS_FEATURES if name == "iris" else _PIXELS if name == "glyphs" else _XY
    return Split(name, x_train, ys[train], x_test, ys[test], class_names, features)
