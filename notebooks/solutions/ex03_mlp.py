"""Solutions to the exercises of notebook 03_mlp."""

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from prelens import batch_n, from_tamb, vjp
from prelens.core import tree_add, tree_scale
from prelens.faithful import Para, loss_l
from prelens.nn import DenseParams


# 3.1 the post's step: batch, cap with the loss, one vjp, da = 1, step against the gradient
def step_by_hand(net: Any, params: Any, xs: Any, ys: Any, rate: float) -> Any:
    batched = from_tamb(batch_n(len(xs), net)) >> loss_l  # parameters (ground truth, θ)
    _, pullback = vjp(batched, ([np.asarray(y) for y in ys], params), [np.asarray(x) for x in xs])
    (_, d_params), _ = pullback(1.0)
    return tree_add(params, tree_scale(-rate, d_params))


# 3.2 a layer of n neurons with m inputs: m·n weights and n biases
def n_params(n_in: int, sizes: Sequence[int]) -> int:
    widths = [n_in, *sizes]
    return sum(m * n + n for m, n in pairwise(widths))


# 3.3 neuron j: bias b[j], weights the column W[:, j]
def to_paras(p: DenseParams) -> list[Para]:
    w, b = p
    return [Para(float(b[j]), w[:, j].copy()) for j in range(w.shape[1])]


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # a step up the gradient
    "step_by_hand": lambda net, params, xs, ys, rate: step_by_hand(net, params, xs, ys, -rate),
    # forgets the biases
    "n_params": lambda n_in, sizes: sum(m * n for m, n in zip([n_in, *sizes], sizes)),
    # rows instead of columns (works only when W is square)
    "to_paras": lambda p: [Para(float(p.bias[j]), p.weight[j, :].copy()) for j in range(p.weight.shape[1])],
}
