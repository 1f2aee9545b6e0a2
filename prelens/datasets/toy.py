"""The four-point toy set of Milewski's Haskell code, taken from micrograd.

The Haskell repository's ``PreLens/Main.hs`` trains ``makeMlp 3 [4, 4, 1]`` on it ("taken from Andrej
Karpathy's micrograd tutorial"); the post shows no data. Both arrays are read-only.

>>> from prelens.datasets import TOY_XS, TOY_YS
>>> TOY_XS.shape, TOY_YS.ravel().tolist()
((4, 3), [1.0, -1.0, -1.0, 1.0])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["TOY_XS", "TOY_YS", "load_toy"]


def _frozen(rows: list[list[float]]) -> npt.NDArray[np.float64]:
    arr = np.array(rows, dtype=np.float64)
    arr.setflags(write=False)
    return arr


#: The inputs, shape ``(4, 3)``: one sample per row.
TOY_XS: npt.NDArray[np.float64] = _frozen([[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]])

#: The targets ``[1, -1, -1, 1]``, shape ``(4, 1)``: one 1-vector per sample (a one-output network).
TOY_YS: npt.NDArray[np.float64] = _frozen([[1.0], [-1.0], [-1.0], [1.0]])


def load_toy() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Writable copies ``(xs (4, 3), ys (4, 1))`` of the toy set.

    >>> xs, ys = load_toy()
    >>> xs[0].tolist(), ys[0].tolist()
    ([2.0, 3.0, -1.0], [1.0])
    """
    return TOY_XS.copy(), TOY_YS.copy()
