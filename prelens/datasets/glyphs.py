"""Seeded 8×8 images of the ten digits: a small image set for classifiers, made on the spot.

The size of scikit-learn's ``digits`` (not shipped), generated from a seed: nothing is downloaded.

>>> xs, ys = make_glyphs(4, noise=0.0, rng=0)
>>> xs.shape, ys.tolist()
((4, 64), [0, 1, 2, 3])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.datasets._split import Seed
from prelens.datasets.synthetic import Points, _check

__all__ = ["GLYPHS", "make_glyphs"]

_BITMAPS = {
    0: (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    1: ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    2: (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    3: ("####.", "....#", "....#", ".###.", "....#", "....#", "####."),
    4: ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    5: ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    6: ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    7: ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    8: (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    9: (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."),
}

#: The ten 5×7 bitmaps (rows top to bottom, 1 = ink), one per digit, as a read-only ``(10, 7, 5)`` array.
GLYPHS: npt.NDArray[np.float64] = np.array(
    [[[c == "#" for c in row] for row in _BITMAPS[d]] for d in range(10)], dtype=np.float64
)
GLYPHS.flags.writeable = False


def make_glyphs(n: int = 1000, noise: float = 0.25, rng: Seed = 0) -> Points:
    """``n`` noisy 8×8 images of the digits: ``(xs (n, 64), ys (n,))``, classes in turn ``0, 1, …, 9, 0, …``.

    ``xs[i].reshape(8, 8)`` is the picture: the digit's bitmap in :data:`GLYPHS` at a random offset (0–3
    columns, 0–1 rows), ink of strength in ``[0.6, 1]``, plus Gaussian noise of deviation ``noise``.

    >>> xs, ys = make_glyphs(20, rng=1)
    >>> xs.shape, xs.dtype, sorted(set(ys.tolist())) == list(range(10))
    ((20, 64), dtype('float64'), True)
    """
    gen = _check("make_glyphs", n, noise, 1, rng)
    ys = np.arange(n, dtype=np.int64) % 10
    images = np.zeros((n, 8, 8))
    rows = gen.integers(0, 2, size=n)
    cols = gen.integers(0, 4, size=n)
    ink = gen.uniform(0.6, 1.0, size=n)
    for i in range(n):
        images[i, rows[i] : rows[i] + 7, cols[i] : cols[i] + 5] = ink[i] * GLYPHS[ys[i]]
    with np.errstate(over="ignore", invalid="ignore"):
        images += noise * gen.standard_normal(images.shape)
    xs = images.reshape(n, 64)
    if not np.isfinite(xs).all():  # a noise too large for float64
        raise E.bad_argument("make_glyphs", "noise", noise, "a number small enough for finite pixels")
    return xs, ys
