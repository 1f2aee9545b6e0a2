"""Layer normalisation: ``y = g ⊙ (x − μ) / √(σ² + ε) + b`` over the last axis (``σ²`` the biased variance).

numpy runs the fast path (BLAS row sums, in-place updates); the arrays of any other array-API
library run the same formulas through the standard's functions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import copy, namespace
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array, check_size, dtype_suffix, float_dtype
from prelens.nn._rows import ones, reshape, row_sum

__all__ = ["LayerNormParams", "layer_norm"]


class LayerNormParams(NamedTuple):
    """The learned affine map after normalising: ``gain`` and ``bias``, each of shape ``(d,)``.

    >>> layer_norm(3).init(0)
    LayerNormParams(gain=array([1., 1., 1.]), bias=array([0., 0., 0.]))
    """

    gain: Array
    bias: Array


#: The residue of :func:`layer_norm`: the normalised input ``x̂``, ``1/√(σ² + ε)`` per row, the gain.
LayerNormResidue = tuple[Array, Array, Array]


@constructor
def layer_norm(d: int, *, eps: float = 1e-5, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """Layer norm over the last axis: ``(..., d) -> (..., d)``, parameters :class:`LayerNormParams`.

    Initialised to ``gain = 1``, ``bias = 0``. Residue ``(x̂, r, gain)`` with
    ``r = 1/√(σ² + ε)`` per row; backward (``ĝ = da ⊙ gain``)::

        dgain = Σ da ⊙ x̂,   dbias = Σ da   (summed over the leading axes)
        dx    = r ⊙ (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂))

    ``eps`` keeps a constant row finite: its output is ``bias`` and its
    gradient finite.

    >>> ln = layer_norm(4)
    >>> ln
    layer_norm(4)
    >>> m, y = ln.fwd(ln.init(0), np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]]))
    >>> y.round(4)
    array([[-1.3416, -0.4472,  0.4472,  1.3416],
           [ 0.    ,  0.    ,  0.    ,  0.    ]])
    """
    n = check_size("layer_norm", "d", d)
    dt = float_dtype("layer_norm", dtype)
    eps_ = check_eps("layer_norm", eps)
    name = f"layer_norm({n}{'' if eps_ == 1e-5 else f', eps={eps_:g}'}{dtype_suffix(dt)})"
    vec, rows = Arr(dt, n), Arr(dt, ..., n)
    expects = Expects(
        params=LayerNormParams(vec, vec),  # type: ignore[arg-type]  # a pattern of LayerNormParams
        input=rows,
        residue=(rows, Arr(dt, ..., 1), vec),
        delta=Like(lambda m: (m[0], m[0].shape)),  # x̂ is shaped as the output
    )
    inv_n = 1.0 / n  # Python floats never up-cast float32

    def fwd(p: LayerNormParams, x: Array) -> tuple[LayerNormResidue, Array]:
        gain, bias = p
        if type(x) is not np.ndarray:  # another library's arrays: the same formulas, without out= or BLAS tricks
            xp = namespace(x)
            xhat = x - xp.sum(x, axis=-1, keepdims=True) * inv_n
            r = 1.0 / xp.sqrt(xp.sum(xhat * xhat, axis=-1, keepdims=True) * inv_n + eps_)
            xhat = xhat * r
            return (xhat, r, copy(gain)), xhat * gain + bias
        mean = row_sum(x)  # one BLAS matrix-vector product: faster than a sum over a short axis
        mean *= inv_n
        xhat = np.subtract(x, mean[..., None])
        r = np.einsum("...i,...i->...", xhat, xhat)[..., None]  # Σ (x − μ)², no temporary
        r *= inv_n
        r += eps_
        np.sqrt(r, out=r)
        np.reciprocal(r, out=r)
        xhat *= r
        y = np.multiply(xhat, gain)
        y += bias
        return (xhat, r, gain.copy()), y  # xhat and r are ours; the gain is the caller's

    def bwd(m: LayerNormResidue, da: Array) -> tuple[LayerNormParams, Array]:
        xhat, r, gain = m
        if type(da) is not np.ndarray:  # another library's arrays, as in fwd
            xp = namespace(da)
            da2 = reshape(da, (-1, n))
            g = da * gain
            mean_g = xp.sum(g, axis=-1, keepdims=True) * inv_n
            mean_gx = xp.sum(g * xhat, axis=-1, keepdims=True) * inv_n
            dp = LayerNormParams(xp.sum(da2 * reshape(xhat, (-1, n)), axis=0), xp.sum(da2, axis=0))
            return dp, (g - mean_g - xhat * mean_gx) * r
        da2 = da.reshape(-1, n)
        dgain = np.einsum("ij,ij->j", da2, xhat.reshape(-1, n))
        dbias = np.dot(ones(da2.shape[0], da.dtype), da2)  # column sums as one BLAS product
        g = np.multiply(da, gain)
        mean_g = row_sum(g)
        mean_g *= inv_n
        mean_gx = np.einsum("...i,...i->...", g, xhat)[..., None]
        mean_gx *= inv_n
        g -= mean_g[..., None]
        g -= xhat * mean_gx
        g *= r
        return LayerNormParams(dgain, dbias), g

    return PreLens(fwd, bwd, name, lambda rng: LayerNormParams(np.ones(n, dt), np.zeros(n, dt)), expects=expects)


def check_eps(fn: str, eps: Any) -> float:
    """``eps`` as a Python float (which never up-casts float32), checked positive for the constructor ``fn``."""
    if not (isinstance(eps, (int, float, np.integer, np.floating)) and not isinstance(eps, bool) and 0 < eps < np.inf):
        raise E.StructureError(f"{fn}: eps must be positive, got {eps!r}")
    return float(eps)
