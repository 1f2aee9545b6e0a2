"""Gradient clipping by global norm, as a lens on the parameter wire.

Composed after an optimiser lens, ``adam(1e-3) >> clip_by_global_norm(1.0)``, it
hands the parameters through unchanged and rescales the delta on its way back
to the optimiser, so the composite is again an optimiser (the reparameterisations
compose). Its twin is ``prelens.optim.clip_by_global_norm(optimizer, max_norm)``.
"""

from __future__ import annotations

from typing import Any

from prelens import errors as E
from prelens.core._lens import PreLens
from prelens.core._tree import tree_map
from prelens.learn._objects import _check_params, _check_positive, clip_scale, scale_tree

__all__ = ["clip_by_global_norm"]


def clip_by_global_norm(max_norm: float) -> PreLens[Any, Any, tuple[()], tuple[()], tuple[()], tuple[()], Any, Any]:
    """The lens ``p ↦ p`` whose backward pass clips the delta: ``p' ↦ p' · min(1, max_norm / ‖p'‖)``.

    Haskell::

        clip_by_global_norm :: Double -> PreLens P P' () () () () P P'

    ``‖p'‖`` is the norm of all leaves together. It clips the delta that reaches
    the optimiser, ``−α·∇L`` (the gradient itself under ``α = 1``).

    >>> import numpy as np
    >>> from prelens import vjp
    >>> _, pullback = vjp(clip_by_global_norm(1.0), (), np.zeros(2))
    >>> pullback(np.array([3.0, -4.0]))
    ((), array([ 0.6, -0.8]))
    """
    _check_positive("clip_by_global_norm", "max_norm", max_norm)
    name = f"clip_by_global_norm({max_norm!r})"

    def fwd(p: tuple[()], params: Any) -> tuple[tuple[()], Any]:
        if type(p) is not tuple or p != ():
            raise E.must_be(name, "parameters", "()", E.describe_tree(p))
        _check_params(name, params)
        return (), params

    def bwd(m: tuple[()], delta: Any) -> tuple[tuple[()], Any]:
        if type(m) is not tuple or m != ():
            raise E.bad_residue(name, m)
        scale = clip_scale(name, delta, max_norm)
        if type(scale) is not float:  # another library's arrays: a 0-d array, no branch on its value
            return (), scale_tree(delta, scale)
        return (), delta if scale == 1.0 else tree_map(lambda d: d * scale, delta)

    return PreLens(fwd, bwd, name)
