"""Memory of a long-sequence LM training step: plain, and with each block rematerialised (:func:`prelens.nn.remat`).

:func:`remat_lm` is :func:`prelens.nn.decoder_lm` (post-LN, learned positions) with every block wrapped
in :func:`prelens.nn.remat`: the same :class:`~prelens.nn.LMParams`, the same outputs and gradients, and a
residue that holds each block's input (and a copy of its parameters) instead of its activations and
attention matrices; each block's forward pass runs again inside the backward one.
:func:`memory_rows` runs one forward and backward pass of ``lm >> token_cross_entropy`` each way under
``tracemalloc`` (numpy reports its buffers to it) and gives the peak bytes, the residue bytes that
:class:`prelens.tambara.Cost` reads (with and without remat) and the largest gradient difference.

>>> rows = memory_rows(seq_lens=(8,), batch=2, d_model=8, n_heads=2, d_ff=16, n_layers=2, vocab=11)
>>> [(r.seq_len, r.grad_diff < 1e-12, r.cost_plain > r.cost_remat) for r in rows]
[(8, True, True)]
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens.core._combinators import chain
from prelens.core._trace import vjp
from prelens.core._tree import tree_leaves
from prelens.nn._embedding import positional_embedding, token_embedding
from prelens.nn._linear import dense
from prelens.nn._losses import token_cross_entropy
from prelens.nn._transformer import LMParams, decoder_lm, encoder_block
from prelens.nn._transformer_wiring import remat, reparam
from prelens.tambara import Cost, to_tamb
from prelens_bench._timing import peak_bytes

__all__ = ["MemoryRow", "memory_rows", "memory_table", "remat_lm"]


def remat_lm(
    vocab: int, d_model: int, n_heads: int, d_ff: int, n_layers: int, max_len: int, *, dtype: Any = np.float64
) -> Any:
    """``decoder_lm(vocab, d_model, n_heads, d_ff, n_layers, max_len)`` (post-LN, learned positions), blocks remat'd.

    Takes and returns the same :class:`~prelens.nn.LMParams` as ``decoder_lm``.

    >>> lm = remat_lm(11, 8, 2, 16, 2, 6)
    >>> lm
    remat_lm(vocab=11, d_model=8, heads=2, d_ff=16, layers=2, max_len=6)
    >>> p = decoder_lm(11, 8, 2, 16, 2, 6).init(0)
    >>> lm.fwd(p, np.zeros((1, 6), int))[1].shape
    (1, 6, 11)
    """
    blocks = [remat(encoder_block(d_model, n_heads, d_ff, causal=True, dtype=dtype)) for _ in range(n_layers)]
    body = chain(
        token_embedding(vocab, d_model, dtype=dtype),
        positional_embedding(max_len, d_model, dtype=dtype),
        *blocks,
        dense(d_model, vocab, None, dtype=dtype),
    )
    sizes = f"vocab={vocab}, d_model={d_model}, heads={n_heads}, d_ff={d_ff}, layers={n_layers}, max_len={max_len}"
    name = f"remat_lm({sizes})"

    def p_to(p: LMParams) -> list[Any]:
        return [p.embedding, p.positions, *p.blocks, p.unembedding]

    def p_from(dp: list[Any]) -> LMParams:
        return LMParams(dp[0], dp[1], list(dp[2 : 2 + n_layers]), (), dp[-1])

    return reparam(body, name, p_to=p_to, p_from=p_from)


@dataclass(frozen=True)
class MemoryRow:
    """One sequence length: peak bytes of a step plain and remat'd, Cost's residue bytes, gradient difference.

    >>> MemoryRow(512, 100, 46, 90, 4, 30, 0.0).peak_remat / 100
    0.46
    """

    seq_len: int
    peak_plain: int
    peak_remat: int
    cost_plain: int  # Cost's residue bytes of the plain LM
    cost_remat: int  # ... of the remat'd one
    attention_bytes: int  # the attention matrices of one block: batch x heads x T x T floats
    grad_diff: float  # largest |plain - remat| over the gradient's leaves


def _peak(lm: Any, loss: Any, params: Any, ids: Any, labels: Any) -> tuple[int, Any]:
    """Peak bytes allocated (above what is live before) by one forward and backward pass, and the gradient."""
    out: list[Any] = []

    def step() -> None:
        _, back = vjp(lm >> loss, (labels, params), ids)  # (later, earlier): the loss's parameter first
        out.append(back(1.0)[0][1])

    gc.collect()
    return peak_bytes(step), out[0]


def memory_rows(
    seq_lens: tuple[int, ...] = (128, 256, 512),
    *,
    batch: int = 4,
    d_model: int = 64,
    n_heads: int = 4,
    d_ff: int = 256,
    n_layers: int = 2,
    vocab: int = 64,
) -> list[MemoryRow]:
    """Measure a float64 training step (forward + backward) of the LM at each sequence length, plain and remat'd.

    >>> [r.seq_len for r in memory_rows((4,), batch=1, d_model=4, n_heads=1, d_ff=4, n_layers=1, vocab=5)]
    [4]
    """
    rows = []
    loss = token_cross_entropy()
    for t in seq_lens:
        plain = decoder_lm(vocab, d_model, n_heads, d_ff, n_layers, t)
        rem = remat_lm(vocab, d_model, n_heads, d_ff, n_layers, t)
        params = plain.init(0)
        rng = np.random.default_rng(t)
        ids, labels = rng.integers(0, vocab, (batch, t)), rng.integers(0, vocab, (batch, t))
        peak_p, dp_p = _peak(plain, loss, params, ids, labels)
        peak_r, dp_r = _peak(rem, loss, params, ids, labels)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(tree_leaves(dp_p), tree_leaves(dp_r)))
        cost = Cost.of(to_tamb(rem), params, ids)
        attn = batch * n_heads * t * t * 8
        rows.append(MemoryRow(t, peak_p, peak_r, cost.residue_bytes_without_remat, cost.residue_bytes, attn, diff))
    return rows


def memory_table(rows: list[MemoryRow]) -> str:
    """The rows as a markdown table (MB = 10**6 bytes).

    >>> print(memory_table([MemoryRow(512, 2_000_000, 1_000_000, 1_500_000, 10_000, 800_000, 0.0)]))
    | T | ...
    |---:|...
    | 512 | 2.0 | 1.0 | 0.50 | 1.5 | 0.0 | 0.8 | 0.0e+00 |
    """

    def mb(n: int) -> str:
        return f"{n / 1e6:.1f}"

    lines = [
        "| T | peak plain (MB) | peak remat (MB) | remat / plain | Cost residue plain (MB) | Cost residue remat (MB) "
        "| one block's attention matrices (MB) | max grad diff |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.seq_len} | {mb(r.peak_plain)} | {mb(r.peak_remat)} | {r.peak_remat / r.peak_plain:.2f} "
            f"| {mb(r.cost_plain)} | {mb(r.cost_remat)} | {mb(r.attention_bytes)} | {r.grad_diff:.1e} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # python -m prelens_bench.memory
    print(memory_table(memory_rows()))
