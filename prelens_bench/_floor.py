"""The matmul floor: a training step's forward and backward matrix products alone, into preallocated outputs.

Everything else a step does (activations, softmax, layer norm, the loss, the
update, allocation, Python) is left out, so no implementation that calls BLAS
for its products can be faster. The products are the ones the models need:

* MLP ``n_0 → … → n_L`` at batch ``B``: forward ``h_{i-1} W_i``; backward
  ``h_{i-1}ᵀ dz_i`` for every layer and ``dz_i W_iᵀ`` for all but the first
  (the input is data: nobody needs its delta);
* the language model, per block: the four projections (``Q, K, V``, ``W_O``),
  the scores ``Q Kᵀ`` and ``A V`` per head (batched), the two feed-forward
  products; then the unembedding. Each has its two backward products
  (the parameter's and the input's; ``dQ, dK`` and ``dA, dV`` for the two
  batched ones).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from prelens.nn._fastcheck import Array

if TYPE_CHECKING:
    from prelens_bench._problem import PeerCase

__all__ = ["matmul_floor", "tagged_products"]

Product = tuple[Array, Array, Array]  #: ``(a, b, out)``: ``out = a @ b``
SDPA = "scaled_dot_product_attention"


def matmul_floor(case: PeerCase, params: Any, seed: int = 0) -> Callable[[], None]:
    """A function that runs ``case``'s step's matrix products (and nothing else) into preallocated outputs.

    ``params`` gives the weight matrices (prelens's layout); the activations are
    random arrays of the right shapes.

    >>> from prelens_bench._problem import PeerCase, make_problem
    >>> case = PeerCase((4, 8, 3), "float64", 16)
    >>> matmul_floor(case, make_problem(case).params)()
    """
    products = [p for _, p in tagged_products(case, params, seed)]
    matmul = np.matmul

    def run() -> None:
        for a, b, out in products:
            matmul(a, b, out=out)

    return run


def tagged_products(case: PeerCase, params: Any, seed: int = 0) -> list[tuple[str, Product]]:
    """The products of ``case``'s step, each tagged with the lens that computes it in prelens.

    Tags: ``dense`` (the MLP's layers, the LM's unembedding), ``projections`` (the
    attention's ``W_Q``, ``W_K``, ``W_V``), ``linear`` (its ``W_O``),
    ``scaled_dot_product_attention`` (the scores and the weighted sum), ``feed_forward``.
    """
    from prelens_bench.lm import LMConfig

    rng = np.random.default_rng(seed)
    dt = np.dtype(case.dtype)

    def rand(*shape: int) -> Array:
        return rng.standard_normal(shape).astype(dt)

    def prod(a: Array, b: Array) -> Product:
        return a, b, np.empty((*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1]), dt)

    products: list[tuple[str, Product]] = []

    def dense(tag: str, x: Array, w: Array, input_delta: bool = True) -> None:
        """Forward ``x W``; backward ``xᵀ dy`` (and ``dy Wᵀ``)."""
        dy = rand(x.shape[0], w.shape[1])
        products.append((tag, prod(x, w)))
        products.append((tag, prod(x.T, dy)))
        if input_delta:
            products.append((tag, prod(dy, w.T)))

    if isinstance(case.model, LMConfig):
        c = case.model
        n, d, h = c.batch * c.seq_len, c.d_model, c.n_heads
        b, t, dk = c.batch, c.seq_len, d // h
        for bp in params.blocks:
            x = rand(n, d)
            ap, ff = bp.attention, bp.feed_forward
            for w in ap[:3]:  # prelens runs the three as one product with [W_Q | W_K | W_V]
                dense("projections", x, w)
            dense("linear", x, ap.W_O)
            q, k, v, do = (rand(b, h, t, dk) for _ in range(4))
            s = rand(b, h, t, t)
            # scores Q Kᵀ and the weighted sum A V, with their backward products
            # dQ = dS K, dK = dSᵀ Q, dA = dO Vᵀ, dV = Aᵀ dO
            pairs = ((q, k.swapaxes(-1, -2)), (s, k), (s.swapaxes(-1, -2), q), (s, v), (do, v.swapaxes(-1, -2)))
            products += [(SDPA, prod(a, b_)) for a, b_ in (*pairs, (s.swapaxes(-1, -2), do))]
            dense("feed_forward", x, ff.hidden.weight)
            dense("feed_forward", rand(n, c.d_ff), ff.output.weight)
        dense("dense", rand(n, d), params.unembedding.weight)
    else:
        x = rand(case.batch, case.model[0])
        for i, p in enumerate(params):
            dense("dense", x, p.weight, input_delta=i > 0)
            x = rand(case.batch, p.weight.shape[1])
    return products
