"""Checks for the exercises of notebook 07_many_meanings (solutions: ``solutions/ex07_many_meanings.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, PrelensError, batch_n, from_tamb, to_tamb
from prelens.faithful import init_mlp, make_mlp, neuron_t
from prelens.tambara import Cost, Rule, Shapes, register_rule, shape_of
from prelens.testing import check_lens_equal

from ._kit import Wrong, answered, call, exercise, expect


@exercise("7.1", "backprop's memory by hand", answer="function")
def residue_bytes(fn: Any) -> str:
    """``residue_bytes(n_in, sizes)`` equals ``Cost.of(make_mlp(n_in, sizes), …).residue_bytes``."""
    rng = np.random.default_rng(7)
    for n_in, sizes in [(3, [4, 4, 1]), (4, [16, 3]), (2, [1]), (5, [7, 2, 3])]:
        got = call(fn, n_in, sizes)
        want = Cost.of(make_mlp(n_in, sizes), init_mlp(n_in, sizes, rng), np.zeros(n_in)).residue_bytes
        expect(
            got == want,
            f"residue_bytes({n_in}, {sizes}) should be {want}, got {got!r}: count, for each neuron with m inputs, "
            "what linear_l, bias_l and activ_l keep for the backward pass (8 bytes per float64)",
        )
    return f"make_mlp(3, [4, 4, 1]) holds {call(fn, 3, [4, 4, 1])} bytes of residue per input"


def _scale() -> PreLens:
    """A fresh copy of the notebook's ``scale_l``: ``a = p·s``, residue ``(p, s)``."""
    return PreLens(
        lambda p, s: ((p, np.array(s, dtype=float)), p * np.asarray(s, dtype=float)),
        lambda m, da: (float(np.dot(da, m[1])), m[0] * np.asarray(da)),
        name="scale_l",
    )


@exercise("7.2", "a Rule for a lens of your own")
def scale_rule(rule: Any) -> str:
    """Registered on ``scale_l``, the rule gives the shapes of a real run and the multiply-adds ``(n, 2n)``."""
    rule = answered(rule)
    expect(
        isinstance(rule, Rule),
        f"the answer should be a prelens.tambara.Rule(forward, backward, madds), got {type(rule).__name__}",
    )
    for n in (3, 10, 1):
        lens = _scale()
        register_rule(lens, rule)
        tri, p, s = to_tamb(lens), 1.5, np.linspace(-1.0, 1.0, n)
        m, a = _scale().fwd(p, s)
        dp, ds = _scale().bwd(m, np.ones(n))
        want = {
            "output": shape_of(a),
            "residue": shape_of(m),
            "parameter delta": shape_of(dp),
            "input delta": shape_of(ds),
        }
        got = Shapes.of(tri, p, s)
        for key, w in want.items():
            expect(got[key] == w, f"on an input of {n} floats, the {key} should read {w}, got {got[key]}")
        table = Cost.of(tri, p, s)
        expect(
            table.total == (n, 2 * n),
            f"on an input of {n} floats the multiply-adds should be (forward, backward) = ({n}, {2 * n}), got "
            f"{table.total}: the backward pass computes two deltas, dp = Σ da·s and ds = p·da",
        )
        expect(
            table.residue_bytes == 8 * (n + 1),
            f"on an input of {n} floats the residue should hold {8 * (n + 1)} bytes (p and s), "
            f"got {table.residue_bytes}",
        )
        big = Cost.of(batch_n(4, tri), p, [s] * 4)
        expect(big.total == (4 * n, 8 * n), f"batch_n(4, ·) should cost four times one input, got {big.total}")
    return "Cost and Shapes now read scale_l without running it"


@exercise("7.3", "the post's fromTamb, as nested closures", answer="function")
def closure_from_tamb(fn: Any) -> str:
    """``closure_from_tamb(tri)`` runs ``tri`` on ``id_pre_lens`` and equals ``from_tamb(tri)``."""
    rng = np.random.default_rng(9)
    cases = [
        ("neuron_t(3)", neuron_t(3), init_mlp(3, [1], rng)[0][0], rng.standard_normal(3)),
        ("make_mlp(3, [4, 1])", make_mlp(3, [4, 1]), init_mlp(3, [4, 1], rng), rng.standard_normal(3)),
        ("make_mlp(2, [3, 2])", make_mlp(2, [3, 2]), init_mlp(2, [3, 2], rng), rng.standard_normal(2)),
        (
            "batch_n(3, make_mlp(2, [2, 1]))",
            batch_n(3, make_mlp(2, [2, 1])),
            init_mlp(2, [2, 1], rng),
            list(rng.standard_normal((3, 2))),
        ),
    ]
    for name, tri, p, s in cases:
        got = call(fn, tri)
        expect(isinstance(got, PreLens), f"closure_from_tamb({name}) should return a PreLens, got {type(got).__name__}")
        expect(
            not got.name.startswith("from_tamb("),
            "run the TriLens on id_pre_lens yourself, not through from_tamb (which runs the free module)",
        )
        try:
            check_lens_equal(f"closure_from_tamb({name}) = from_tamb({name})", from_tamb(tri), got, p, s)
        except PrelensError as err:
            first = str(err).splitlines()[0]
            raise Wrong(
                f"on {name} it differs from from_tamb: {first}. tri(id_pre_lens) has parameters ((), p) and "
                "residue (m, ()): strip the units with dimap_p(unlunit, lunit, ·) and dimap_m(runit, unrunit, ·)"
            ) from None
    return "the post's own fromTamb: the same pre-lens, built as closures nested as deep as the network"
