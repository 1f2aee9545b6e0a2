"""Checks for the exercises of notebook 02_tambara (solutions: ``solutions/ex02_tambara.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens import PreLens, TriLens, first, forward, from_tamb, id_pre_lens, to_tamb
from prelens.core import tree_allclose
from prelens.faithful import Para, bias_l, neuron_l, neuron_t
from prelens.testing import check_lens_equal

from ._kit import NotAnswered, answered, call, exercise, expect


def _tagged(t: str) -> PreLens:
    return PreLens(lambda p, s: (f"m_{t}", f"{s} {p}"), lambda dm, da: (f"dp_{t}", f"{da} {dm}"), name=t)


@dataclass(frozen=True)
class _Fwd:
    """The forward-only Trimbara module of the notebook."""

    run: Callable[[Any, Any], Any]

    def dimap_s(self, f: Any, g: Any) -> _Fwd:
        return _Fwd(lambda p, s: self.run(p, f(s)))

    def dimap_p(self, f: Any, g: Any) -> _Fwd:
        return _Fwd(lambda p, s: self.run(f(p), s))

    def dimap_m(self, f: Any, g: Any) -> _Fwd:
        return _Fwd(lambda p, s: first(f)(self.run(p, s)))

    def alpha(self) -> _Fwd:
        def run(p: Any, ns: Any) -> Any:
            m, a = self.run(p, ns[1])
            return (ns[0], m), a

        return _Fwd(run)

    def beta(self) -> _Fwd:
        return _Fwd(lambda pr, s: self.run(pr[0], (pr[1], s)))


@exercise("2.1", "toTamb by hand", answer="function")
def my_to_tamb(fn: Any) -> str:
    """``my_to_tamb(lens)`` behaves as ``to_tamb(lens)`` in the PreLens module and in ``Fwd``."""
    f, g = _tagged("f"), _tagged("g")
    tri = call(fn, f)
    expect(isinstance(tri, TriLens), f"my_to_tamb should return a TriLens, got {type(tri).__name__}")
    got, want = tri(g).fwd(("p_g", "p_f"), "s"), to_tamb(f)(g).fwd(("p_g", "p_f"), "s")
    expect(got == want, f"my_to_tamb(f)(g).fwd(('p_g', 'p_f'), 's') should be {want!r} (f in front of g), got {got!r}")
    m, _ = tri(g).fwd(("p_g", "p_f"), "s")
    got, want = tri(g).bwd(m, "da"), (f >> g).bwd(m, "da")
    expect(got == want, f"the backward pass should be {want!r}, got {got!r}")
    got, want = tri(_Fwd(g.fwd)).run(("p_g", "p_f"), "s"), (f >> g).fwd(("p_g", "p_f"), "s")
    expect(got == want, f"in the Fwd module it should give {want!r}, got {got!r}: use only the module's operations")
    rng = np.random.default_rng(2)
    para, s = Para(0.3, rng.standard_normal(3)), rng.standard_normal(3)
    by_tri = from_tamb(call(fn, neuron_l(3)))
    check_lens_equal("from_tamb(my_to_tamb(neuron_l(3))) = neuron_l(3)", neuron_l(3), by_tri, para, s)
    return "beta . dimap_s(fw, bw) . alpha"


@exercise("2.2", "biasL from add_l")
def bias_from_add(lens: Any) -> str:
    """``dimap_p(unlunit, lunit, beta(add_l))`` equals ``bias_l``."""
    lens = answered(lens)
    expect(isinstance(lens, PreLens), f"the answer should be a PreLens, got {type(lens).__name__}")
    for b, s in [(0.25, 1.0), (-1.5, 0.3), (2.0, -4.0)]:
        _, a = lens.fwd(b, s)
        expect(
            np.isclose(a, b + s),
            f"fwd({b}, {s}) should be b + s = {b + s}, got {a!r}: the parameter must be b itself, not ((), b)",
        )
        check_lens_equal("bias_from_add = bias_l", bias_l, lens, b, s)
    return "beta made x a parameter; the unitors removed the ()"


@exercise("2.3", "a TriLens run in the forward-only module", answer="function")
def forward_only(fn: Any) -> str:
    """``forward_only(tri, p, s)`` gives ``forward(from_tamb(tri), p, s)`` from the Fwd module alone."""

    def no_backward(t: str) -> PreLens:
        def bwd(dm: Any, da: Any) -> Any:
            raise AssertionError("a backward pass ran")

        return PreLens(lambda p, s: (f"m_{t}", f"{s} {p}"), bwd, name=t)

    f, g = no_backward("f"), no_backward("g")
    cases = [
        ("to_tamb(f) >> to_tamb(g)", to_tamb(f) >> to_tamb(g), ("p_g", "p_f"), "s"),
        ("to_tamb(f) @ to_tamb(g)", to_tamb(f) @ to_tamb(g), ("p_f", "p_g"), ("s", "t")),
        ("to_tamb(id_pre_lens)", to_tamb(id_pre_lens), (), "s"),
    ]
    rng = np.random.default_rng(4)
    para, x = Para(0.1, rng.standard_normal(2)), rng.standard_normal(2)
    cases.append(("neuron_t(2)", neuron_t(2), para, x))
    for name, tri, p, s in cases:
        got = fn(tri, p, s) if callable(fn) else answered(fn)
        if got is None:
            raise NotAnswered
        want = forward(from_tamb(tri), p, s)
        expect(
            tree_allclose(got, want) if not isinstance(want, str | tuple) else got == want,
            f"forward_only({name}, p, s) should be {want!r}, got {got!r}",
        )
    return "the forward pass, with no backward pass anywhere"
