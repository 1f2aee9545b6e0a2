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

from ..nn._fastcheck import Array

if TYPE_CHECKING:
    from .peers import PeerCase

__all__ = ["matmul_floor"]

Product = tuple[Array, Array, Array]  #: ``(a, b, out)``: ``out = a @ b``


def matmul_floor(case: PeerCase, params: Any, seed: int = 0) -> Callable[[], None]:
    """A function that runs ``case``'s step's matrix products (and nothing else) into preallocated outputs.

    Haskell::

        matmul_floor :: PeerCase -> Params -> IO ()

    ``params`` gives the weight matrices (prelens's layout); the activations are
    random arrays of the right shapes.

    >>> from prelens.bench.peers import PeerCase, make_problem
    >>> case = PeerCase((4, 8, 3), "float64", 16)
    >>> matmul_floor(case, make_problem(case).params)()
    """
    from .lm import LMConfig

    rng = np.random.default_rng(seed)
    dt = np.dtype(case.dtype)

    def rand(*shape: int) -> Array:
        return rng.standard_normal(shape).astype(dt)

    def prod(a: Array, b: Array) -> Product:
        return a, b, np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]), dt)

    products: list[Product] = []

    def dense(x: Array, w: Array, input_delta: bool = True) -> None:
        """Forward ``x W``; backward ``xᵀ dy`` (and ``dy Wᵀ``)."""
        dy = rand(x.shape[0], w.shape[1])
        products.append(prod(x, w))
        products.append(prod(x.T, dy))
        if input_delta:
            products.append(prod(dy, w.T))

    if isinstance(case.model, LMConfig):
        c = case.model
        n, d, h = c.batch * c.seq_len, c.d_model, c.n_heads
        b, t, dk = c.batch, c.seq_len, d // h
        for bp in params.blocks:
            x = rand(n, d)
            ap, ff = bp.attention, bp.feed_forward
            for w in ap:
                dense(x, w)
            q, k, v, s, do = rand(b, h, t, dk), rand(b, h, t, dk), rand(b, h, t, dk), rand(b, h, t, t), rand(b, h, t, dk)
            products += [prod(q, k.swapaxes(-1, -2)), prod(s, v)]  # forward: scores, weighted sum
            products += [prod(s, k), prod(s.swapaxes(-1, -2), q)]  # dQ = dS K, dK = dSᵀ Q
            products += [prod(do, v.swapaxes(-1, -2)), prod(s.swapaxes(-1, -2), do)]  # dA = dO Vᵀ, dV = Aᵀ dO
            dense(x, ff.hidden.weight)
            dense(rand(n, c.d_ff), ff.output.weight)
        dense(rand(n, d), params.unembedding.weight)
    else:
        x = rand(case.batch, case.model[0])
        for i, p in enumerate(params):
            dense(x, p.weight, input_delta=i > 0)
            x = rand(case.batch, p.weight.shape[1])

    matmul = np.matmul

    def run() -> None:
        for a, b_, out in products:
            matmul(a, b_, out=out)

    return run
