"""Checks for the exercises of notebook 01b_optics (solutions: ``solutions/ex01b_optics.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, backward, forward
from prelens.core import tree_allclose
from prelens.faithful import Para, neuron_l

from ._kit import NotAnswered, Wrong, answered, call, exercise, expect


def _sample_lenses() -> list[tuple[str, PreLens, Any, Any, Any]]:
    """(name, lens, p, s, da): lenses whose backward pass needs its residue."""
    rng = np.random.default_rng(3)
    square = PreLens(lambda p, s: ((p, s), p * s * s), lambda m, da: (da * m[1] ** 2, 2 * m[0] * m[1] * da), name="sq")
    return [
        ("neuron_l(3)", neuron_l(3), Para(0.2, rng.standard_normal(3)), rng.standard_normal(3), 0.7),
        ("p·s²", square, rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal(2)),
    ]


@exercise("1b.1", "the trace as a parametric lens", answer="function")
def to_plens(fn: Any) -> str:
    """``to_plens(lens)`` is a PLens with ``fwd(p, s) = output`` and ``bwd(p, s, da) = lens.bwd(residue, da)``."""
    for name, lens, p, s, da in _sample_lenses():
        pl = call(fn, lens)
        expect(
            callable(getattr(pl, "fwd", None)) and callable(getattr(pl, "bwd", None)),
            "to_plens should return a PLens(fwd, bwd)",
        )
        a = pl.fwd(p, s)
        want = forward(lens, p, s)
        expect(tree_allclose(a, want), f"on {name}: fwd(p, s) should be the output alone, {want!r}; got {a!r}")
        got = answered(pl.bwd(p, s, da))
        want_d = backward(lens, p, s, da)
        expect(tree_allclose(got, want_d), f"on {name}: bwd(p, s, da) should be {want_d!r}; got {got!r}")
    return "fwd' and bwd' of PreLens/PreLens.hs"


def _sigmoid(z: float) -> float:
    return float(1 / (1 + np.exp(-z)))


@exercise("1b.2", "two residues, one trace")
def sigmoid_pair(pair: Any) -> str:
    """``(keep_output, recompute)``: residues ``σ(z)`` and ``z``; the trace of both is ``σ'``."""
    pair = answered(pair)
    expect(isinstance(pair, tuple) and len(pair) == 2, "hand the check a pair (sigmoid_keep_output, sigmoid_recompute)")
    keep, recompute = answered(pair[0]), answered(pair[1])
    for name, lens in (("sigmoid_keep_output", keep), ("sigmoid_recompute", recompute)):
        expect(isinstance(lens, PreLens), f"{name} should be a PreLens (made with dimap_m), got {type(lens).__name__}")
    for z in np.linspace(-4, 4, 17):
        y = _sigmoid(z)
        for name, lens, want_m in (("sigmoid_keep_output", keep, y), ("sigmoid_recompute", recompute, z)):
            m, a = lens.fwd((), float(z))
            expect(np.isclose(a, y), f"{name}: the output at z = {z:.1f} should be σ(z) = {y:.6f}, got {a}")
            expect(np.isclose(m, want_m), f"{name}: at z = {z:.1f} the residue should be {want_m:.6f}, got {m!r}")
            _, dz = backward(lens, (), float(z), 1.0)
            expect(
                np.isclose(dz, y * (1 - y)),
                f"{name}: the trace at z = {z:.1f} should give σ'(z) = {y * (1 - y):.6f}, got {dz}",
            )
    return "the residue map slid from the end of the forward pass to the start of the backward pass"


@exercise("1b.3", "the Forget module (view)", answer="class")
def forget(cls: Any) -> str:
    """``Forget(run)``: ``dimap(f, g)`` pre-composes ``f``; ``alpha`` ignores the carried value."""
    cls = answered(cls)
    identity = cls(lambda a: a)
    if identity.alpha() is None or identity.dimap(lambda s: s, lambda d: d) is None:
        raise NotAnswered
    carried = identity.alpha().run(("carried", 2.5))
    expect(
        not isinstance(carried, tuple),
        f"alpha's run on (n, s) should give the forward result of s alone, not a pair: got {carried!r}",
    )

    def optic(fw: Any, bw: Any) -> Any:
        return lambda t: t.alpha().dimap(fw, lambda m_da: bw(*m_da))

    square = optic(lambda s: (s, s * s), lambda s, da: 2 * s * da)
    sine = optic(lambda x: (x, np.sin(x)), lambda x, da: np.cos(x) * da)
    view = square(sine(cls(lambda a: a))).run
    for s in np.linspace(-2, 2, 9):
        got = view(float(s))
        if not np.isclose(got, np.sin(s * s)):
            raise Wrong(f"square(sine(Forget(id))).run({s:.1f}) should be sin(s²) = {np.sin(s * s):.6f}, got {got!r}")
    return "view: the forward pass, read out of the same optic"
