"""Checks for the exercises of notebook 01_prelenses (solutions: ``solutions/ex01_prelenses.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, vjp
from prelens.core import tree_leaves
from prelens.testing import check_vjp

from ._kit import Wrong, answered, exercise, expect


def _lens(x: Any) -> PreLens:
    x = answered(x)
    expect(isinstance(x, PreLens), f"the answer should be a PreLens, got {type(x).__name__}")
    return x


@exercise("1.1", "the scale lens")
def scale(lens: Any) -> str:
    """``a = p·s`` for a number ``p`` and a vector ``s``; ``dp`` a number, ``ds`` a vector."""
    lens = _lens(lens)
    rng = np.random.default_rng(11)
    for n in (1, 3, 5):
        p, s = float(rng.standard_normal()), rng.standard_normal(n)
        _, a = lens.fwd(p, s)
        expect(np.shape(a) == (n,) and np.allclose(a, p * s), f"fwd({p:.3f}, s) should be p·s = {p * s}, got {a}")
        _, pullback = vjp(lens, p, s)
        da = rng.standard_normal(n)
        dp, ds = pullback(da)
        expect(np.ndim(dp) == 0, f"dp should be one number, like the parameter p; got shape {np.shape(dp)}")
        expect(np.allclose(dp, da @ s), f"dp should be Σ daᵢ sᵢ = {da @ s:.6f}, got {float(dp):.6f}")
        expect(np.shape(ds) == (n,) and np.allclose(ds, p * da), f"ds should be p·da = {p * da}, got {ds}")
        check_vjp(lens, p, s)
    return "dp = Σ daᵢ sᵢ sums over the entries the one parameter touched"


@exercise("1.2", "tanh keeping its output")
def activ_out(lens: Any) -> str:
    """``tanh`` whose residue is its output ``y = tanh z``; the same trace as ``activ``."""
    lens = _lens(lens)
    for z in np.linspace(-2.5, 2.5, 11):
        m, y = lens.fwd((), float(z))
        expect(np.isclose(y, np.tanh(z)), f"fwd((), {z:.2f}) should be tanh(z) = {np.tanh(z):.6f}, got {y}")
        expect(np.isclose(m, y), f"the residue should be the output y = {y:.6f}, got {m!r}")
        dp, dz = lens.bwd(m, 1.0)
        want = 1 - np.tanh(z) ** 2
        expect(dp == (), f"tanh has no parameters: dp should be (), got {dp!r}")
        expect(np.isclose(dz, want), f"at z = {z:.2f}, bwd(y, 1) should be 1 − y² = {want:.6f}, got {dz}")
    check_vjp(lens, (), 0.3)
    return "the same derivative, and bwd no longer calls tanh"


@exercise("1.3", "the mean, keeping only what bwd needs")
def mean_l(lens: Any) -> str:
    """``a = mean(s)``, no parameters, a residue smaller than the input."""
    lens = _lens(lens)
    rng = np.random.default_rng(13)
    for n in (2, 5, 40):
        s = rng.standard_normal(n)
        m, a = lens.fwd((), s)
        expect(np.isclose(a, s.mean()), f"fwd((), s) should be the mean {s.mean():.6f}, got {a}")
        kept = sum(np.size(leaf) for leaf in tree_leaves(m))
        if kept >= n:
            raise Wrong(
                f"the residue holds {kept} numbers for an input of {n}: bwd needs only the length n, "
                "since ∂a/∂sᵢ = 1/n whatever s is"
            )
        dp, ds = lens.bwd(m, 2.0)
        expect(dp == (), f"the mean has no parameters: dp should be (), got {dp!r}")
        expect(np.shape(ds) == (n,), f"ds should have the input's shape ({n},), got {np.shape(ds)}")
        expect(np.allclose(ds, 2.0 / n), f"bwd(m, da = 2) should give ds = da/n = {2 / n:.4f} everywhere, got {ds}")
        check_vjp(lens, (), s)
    return "a residue of one number, whatever the length of the input"
