"""Checks for the exercises of notebook 03_mlp (solutions: ``solutions/ex03_mlp.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens.core import tree_allclose, tree_leaves
from prelens.datasets import TOY_XS, TOY_YS
from prelens.faithful import Para, dense_to_paras, init_mlp, make_mlp, train_step
from prelens.nn import DenseParams, mlp

from ._kit import Wrong, call, exercise, expect


@exercise("3.1", "the post's training step by hand", answer="function")
def step_by_hand(fn: Any) -> str:
    """``step_by_hand(net, params, xs, ys, rate)`` equals ``train_step(...)[0]``."""
    rng = np.random.default_rng(5)
    for sizes, rate in (([4, 4, 1], 0.5), ([3, 1], 0.1)):
        net, params = make_mlp(3, sizes), init_mlp(3, sizes, rng)
        new = call(fn, net, params, TOY_XS, TOY_YS, rate)
        want, _ = train_step(net, params, TOY_XS, TOY_YS, rate)
        if not tree_allclose(new, want, rtol=1e-9, atol=1e-12):
            raise Wrong(
                f"on make_mlp(3, {sizes}) with rate {rate} the new parameters differ from train_step's "
                f"(first neuron: got {new[0][0] if isinstance(new, list) and new and new[0] else new!r}, "
                f"want {want[0][0]!r}); the step is θ − rate·dθ, with dθ the gradient of the batch loss"
            )
    return "θ ← θ − rate·dθ, with dθ from one forward and one backward pass over the batch"


@exercise("3.2", "counting parameters", answer="function")
def n_params(fn: Any) -> str:
    """``n_params(n_in, sizes)`` equals the number of leaves' entries of ``mlp(n_in, sizes).init()``."""
    for n_in, sizes in [(3, [4, 4, 1]), (784, [256, 128, 10]), (2, [16, 16, 2]), (5, [1])]:
        got = call(fn, n_in, sizes)
        want = sum(np.size(leaf) for leaf in tree_leaves(mlp(n_in, sizes).init(0)))
        expect(
            got == want,
            f"n_params({n_in}, {sizes}) should be {want}, got {got!r}: a layer of n neurons "
            "with m inputs has m·n weights and n biases",
        )
    return f"the post's makeMlp 3 [4, 4, 1] has {call(fn, 3, [4, 4, 1])} parameters"


@exercise("3.3", "from a weight matrix to neurons", answer="function")
def to_paras(fn: Any) -> str:
    """``to_paras(DenseParams(W, b))`` equals ``dense_to_paras``: neuron ``j`` gets column ``j`` of ``W``."""
    rng = np.random.default_rng(6)
    for m, n in [(3, 4), (2, 1), (5, 3)]:
        p = DenseParams(rng.standard_normal((m, n)), rng.standard_normal(n))
        got, want = call(fn, p), dense_to_paras(p)
        expect(isinstance(got, list) and len(got) == n, f"for {n} neurons, return a list of {n} Para, got {got!r}")
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            expect(isinstance(g, Para), f"entry {j} should be a Para(bias, weight), got {type(g).__name__}")
            expect(np.isclose(g.bias, w.bias), f"neuron {j}'s bias should be b[{j}] = {w.bias:.4f}, got {g.bias!r}")
            expect(
                np.shape(g.weight) == (m,) and np.allclose(g.weight, w.weight),
                f"neuron {j}'s weights should be column {j} of W, {w.weight}; got {g.weight}",
            )
    return "neuron j's weights are column j of W"
