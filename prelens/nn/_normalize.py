"""Fixed input standardisation as a lens: ``x ↦ (x − mean) / std`` with statistics taken from training data.

The statistics (see :func:`prelens.datasets.standardize`) are constants of the lens, not parameters:
they travel with the model, so a saved model takes raw inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import constant_like
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array, dtype_suffix, float_dtype, real_vector

__all__ = ["normalize"]


@constructor
def normalize(
    mean: npt.ArrayLike, std: npt.ArrayLike, *, dtype: npt.DTypeLike = np.float64
) -> PreLens[Array, Array, tuple[int, ...], tuple[int, ...], tuple[()], tuple[()], Array, Any]:
    """Standardise inputs ``(..., n)`` with fixed statistics: ``x ↦ (x − mean) / std``.

    ``mean`` and ``std`` are vectors of ``n`` finite numbers (``std > 0``),
    kept in ``dtype``. Parameter-free; residue: the input's shape (to check the
    delta); backward ``ds = da / std``. An output delta of ``None`` (a next
    layer built with ``input_delta=False``, for which the input is data) gives
    ``ds = None``. It equals ``linear(n, n) >> bias(n)`` with the fixed
    parameters ``W = diag(1/std)``, ``b = −mean/std``. It is torchvision's
    ``Normalize``; put it first in a model so that the model takes raw inputs.

    >>> norm = normalize([1.0, 10.0], [2.0, 5.0])
    >>> norm
    normalize(2)
    >>> m, y = norm.fwd((), np.array([[3.0, 0.0]]))
    >>> y, norm.bwd(m, np.ones((1, 2)))[1]
    (array([[ 1., -2.]]), array([[0.5, 0.2]]))
    """
    mu = real_vector("normalize", "mean", mean)
    sigma = real_vector("normalize", "std", std, len(mu))
    if len(mu) == 0:
        raise E.lens_shape_error("normalize", "mean", "a vector of at least 1 number", E.describe(mu))
    dt = float_dtype("normalize", dtype)
    with np.errstate(over="ignore", under="ignore"):  # checked as kept: a float32 overflow or 0 is refused
        shift, scale = mu.astype(dt), sigma.astype(dt)
    kept = "" if dt == np.float64 else f" as {dt.name}"
    if not np.isfinite(shift).all():
        raise E.bad_argument("normalize", "mean", _shown(mu), f"finite numbers{kept}")
    if not (np.isfinite(scale).all() and (scale > 0).all()):
        raise E.bad_argument("normalize", "std", _shown(sigma), f"finite numbers > 0{kept}")
    n = len(mu)
    name = f"normalize({n}{dtype_suffix(dt)})"
    shift.flags.writeable = False
    scale.flags.writeable = False
    # the residue is the input's shape; a delta of None (the next lens takes the output as data) passes
    expects = Expects(input=Arr(dt, ..., n), delta=Like(lambda shape: (dt, shape), or_none=True))

    def fwd(p: tuple[()], x: Array) -> tuple[tuple[int, ...], Array]:
        y = x - constant_like(shift, x)  # the statistics moved to x's library (numpy: as they are)
        y /= constant_like(scale, x)  # y is ours (a JAX array is rebound, not written)
        return tuple(x.shape), y

    def bwd(shape: tuple[int, ...], da: Array | None) -> tuple[tuple[()], Array | None]:
        return (), (None if da is None else da / constant_like(scale, da))

    return PreLens(fwd, bwd, name, expects=expects)


def _shown(v: Array) -> Any:
    """A short vector as its values, a long one as its description (for error messages)."""
    return v.tolist() if v.size <= 8 else E.describe(v)
