"""The post's loss lens: squared distance, with the ground truth as its parameter.

Haskell::

    lossL :: PreLens D D ([V], [V]) ([V], [V]) [V] [V] [V] [V]

``L = ½ Σ_b Σ_i (s_bi − g_bi)²`` over the batch and the outputs, as in the repository's
``PreLens/NNet.hs`` (``sqDist``, with the ``½``; the post shows only ``lossL``), except that a
longer list is an error where ``zipWith`` drops its extra entries. Forward ``(g, s) -> ((g, s), L)``;
backward ``((g, s), da) -> (−ds, ds)`` with ``ds = da·(s − g)``. ``g`` (the ground truth, the
parameter) and ``s`` are lists of vectors, one per sample (or the rows of a 2-D array); the deltas
are lists of 1-D float64 arrays.

>>> m, loss = loss_l.fwd([[1.0], [-1.0]], [[0.5], [0.0]])
>>> loss
0.625
>>> dg, ds = loss_l.bwd(m, 1.0)
>>> ds, dg
([array([-0.5]), array([1.])], [array([0.5]), array([-1.])])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core._lens import PreLens
from prelens.faithful._network import own_vector
from prelens.nn._fastcheck import scalar_delta

Vec = npt.NDArray[np.float64]
Batch = list[Vec]
LossResidue = tuple[Batch, Batch]

_NAME = "loss_l"


def _batch(what: str, xs: Any) -> Batch:
    """A batch of vectors (a list of them, or the rows of a 2-D array: views, copied) as float64 arrays of its own."""
    if isinstance(xs, np.ndarray) and xs.ndim == 2:
        return [own_vector(_NAME, what, x) for x in xs]
    if not isinstance(xs, (list, tuple)):
        raise E.must_be(_NAME, what, "a list of vectors", E.describe(xs))
    return [own_vector(_NAME, f"{what} {i}", x) for i, x in enumerate(xs)]


def _loss_fwd(g: Sequence[Any], s: Sequence[Any]) -> tuple[LossResidue, float]:
    truth, out = _batch("ground truth", g), _batch("output", s)
    if len(out) != len(truth):
        raise E.list_length_error(_NAME, "output", len(truth), len(out))
    for i, (si, gi) in enumerate(zip(out, truth)):
        if si.shape != gi.shape:
            raise E.lens_shape_error(_NAME, f"output {i}", f"length {len(gi)} like its ground truth", E.describe(si))
    loss = 0.5 * sum(float(np.sum((si - gi) ** 2)) for si, gi in zip(out, truth))
    return (truth, out), loss


def _loss_bwd(m: LossResidue, da: float) -> tuple[Batch, Batch]:
    da = scalar_delta(_NAME, da)
    try:
        truth, out = m
        ok = (
            isinstance(truth, list)
            and isinstance(out, list)
            and len(truth) == len(out)
            and all(s.shape == g.shape and s.dtype == np.float64 and g.dtype == np.float64 for s, g in zip(out, truth))
        )
    except (TypeError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise E.bad_residue(_NAME, m)
    delta = [da * (si - gi) for si, gi in zip(out, truth)]  # ds = da·(s − g)
    return [-d for d in delta], delta  # dg = −ds


#: Squared distance to the ground truth (the parameter) of a batch of outputs; see the module doc.
loss_l: PreLens[float, float, LossResidue, LossResidue, Sequence[Any], Batch, Sequence[Any], Batch] = PreLens(
    _loss_fwd, _loss_bwd, _NAME, init_fn=None
)
