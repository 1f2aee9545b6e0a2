"""Checks for the exercises of notebook 05_laws (solutions: ``solutions/ex05_laws.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens
from prelens.faithful import Para, neuron_l
from prelens.nn import linear, tanh
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp

from ._kit import answered, call, exercise, expect


@exercise("5.1", "softplus, tested")
def softplus(lens: Any) -> str:
    """``a = log(1 + exp(w ⊙ s))``, with ``init_fn``, passing ``check_lens_laws`` at several widths."""
    lens = answered(lens)
    expect(isinstance(lens, PreLens), f"the answer should be a PreLens, got {type(lens).__name__}")
    expect(lens.init_fn is not None, "give the lens an init_fn, so that it can create its weights")
    rng = np.random.default_rng(10)
    for n in (1, 3, 6):
        w, s = rng.standard_normal(n), 2 * rng.standard_normal(n)
        _, a = lens.fwd(w, s)
        expect(
            np.shape(a) == (n,) and np.allclose(a, np.log1p(np.exp(w * s))),
            f"fwd(w, s) should be log(1 + exp(w s)) elementwise, {np.log1p(np.exp(w * s))}; got {a}",
        )
        check_lens_laws(lens, w, s)
    return "every single-lens law, and bwd the derivative of fwd"


@exercise("5.2", "the associator")
def reassoc(pair: Any) -> str:
    """``(p_iso, m_iso)`` turning ``(f >> g) >> h`` into ``f >> (g >> h)``: ``(unassoc, assoc)``."""
    pair = answered(pair)
    expect(isinstance(pair, tuple) and len(pair) == 2, "hand the check a pair (p_iso, m_iso)")
    p_iso, m_iso = answered(pair[0]), answered(pair[1])
    rng = np.random.default_rng(12)
    f, g, h = linear(3, 4), tanh, linear(4, 2)
    pf, pg, ph = f.init(rng), g.init(rng) if g.init_fn else (), h.init(rng)
    s = rng.standard_normal(3)
    left, right = (f >> g) >> h, f >> (g >> h)
    check_lens_equal("(f >> g) >> h ≅ f >> (g >> h)", left, right, (ph, (pg, pf)), s, p_iso=p_iso, m_iso=m_iso)
    return "p_iso = unassoc, m_iso = assoc: the associator, in both slots"


@exercise("5.3", "a neuron on a flat parameter vector", answer="function")
def flat_neuron(fn: Any) -> str:
    """``flat_neuron(n)``: ``neuron_l(n)`` reparameterised by ``θ = [bias, *weights]``."""
    rng = np.random.default_rng(14)
    for n in (1, 2, 5):
        lens = call(fn, n)
        expect(isinstance(lens, PreLens), f"flat_neuron({n}) should return a PreLens, got {type(lens).__name__}")
        theta, s = rng.standard_normal(n + 1), rng.standard_normal(n)
        m, a = lens.fwd(theta, s)
        _, want = neuron_l(n).fwd(Para(float(theta[0]), theta[1:]), s)
        expect(
            np.isclose(a, want),
            f"fwd(θ, s) should be the neuron's output with bias θ[0] and weights θ[1:], {want:.6f}; got {a!r}",
        )
        dtheta, _ = lens.bwd(m, 1.0)
        expect(
            isinstance(dtheta, np.ndarray) and dtheta.shape == (n + 1,),
            f"the parameter delta should be a flat vector of length {n + 1}, like θ; got {dtheta!r}",
        )
        check_vjp(lens, theta, s)
    return "dimap_p(θ ↦ Para(θ[0], θ[1:]), dp ↦ [dp.bias, *dp.weight], neuron_l(n))"
