"""Checks for the exercises of notebook 06_transformer (solutions: ``solutions/ex06_transformer.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, forward
from prelens.core import tree_leaves
from prelens.nn import decoder_lm, encoder_block, encoder_decoder
from prelens.testing import check_lens_equal

from ._kit import call, exercise, expect


@exercise("6.1", "the pre-LN causal block", answer="function")
def pre_ln_block(fn: Any) -> str:
    """``pre_ln_block(d, h, f)`` equals ``encoder_block(d, h, f, causal=True, norm="pre")``."""
    rng = np.random.default_rng(15)
    for d, h, f in [(8, 2, 16), (12, 3, 8)]:
        lens = call(fn, d, h, f)
        expect(isinstance(lens, PreLens), f"pre_ln_block should return a PreLens, got {type(lens).__name__}")
        ref = encoder_block(d, h, f, causal=True, norm="pre")
        check_lens_equal(
            f"pre_ln_block({d}, {h}, {f}) = encoder_block(..., causal=True, norm='pre')",
            ref,
            lens,
            ref.init(rng),
            rng.standard_normal((2, 5, d)),
            p_iso=lambda p: [(p.attention, p.norm1), (p.feed_forward, p.norm2)],
        )
    return "x + MHA(LN(x)), then x + FFN(LN(x))"


def _greedy(model: PreLens, params: Any, source: Any, start: int, steps: int) -> Any:
    target = np.full((len(source), 1), start)
    for _ in range(steps):
        logits = forward(model, params, (source, target))
        target = np.concatenate([target, logits[:, -1].argmax(axis=-1)[:, None]], axis=1)
    return target[:, 1:]


@exercise("6.2", "greedy decoding", answer="function")
def greedy(fn: Any) -> str:
    """``greedy(model, params, source, start, steps)``: the ``steps`` tokens written after ``start``."""
    rng = np.random.default_rng(16)
    for batch, s_len, steps in [(3, 5, 4), (1, 7, 6)]:
        model = encoder_decoder(9, 9, 8, 2, 16, 1, 12, positional="sinusoidal")
        params = model.init(rng)
        source = rng.integers(0, 9, (batch, s_len))
        got = np.asarray(call(fn, model, params, source, 8, steps))
        want = _greedy(model, params, source, 8, steps)
        expect(
            got.shape == want.shape,
            f"for {batch} sources and {steps} steps the result should have shape "
            f"{want.shape} (the start token not included), got {got.shape}",
        )
        expect(
            np.array_equal(got, want),
            f"the tokens differ from greedy decoding: got {got.tolist()}, want "
            f"{want.tolist()}; at each step take the argmax at the last position",
        )
    return "one forward pass per token written, each reading the whole memory again"


@exercise("6.3", "the memory of the residue", answer="function")
def residue_floats(fn: Any) -> str:
    """``residue_floats(model, params, inputs)``: floats in the residue of one forward pass."""
    lm = decoder_lm(10, 16, 2, 32, 2, 9)
    params = lm.init(0)
    counts = []
    for batch in (1, 4):
        ids = np.random.default_rng(batch).integers(0, 10, (batch, 9))
        m, _ = lm.fwd(params, ids)
        want = sum(np.size(leaf) for leaf in tree_leaves(m) if np.asarray(leaf).dtype.kind == "f")
        got = call(fn, lm, params, ids)
        expect(
            got == want,
            f"for a batch of {batch}, the residue holds {want:,} floats; got {got!r} "
            "(run the forward pass and count the float entries of its residue's leaves)",
        )
        counts.append(want)
    n_params = sum(np.size(leaf) for leaf in tree_leaves(params))
    return (
        f"this small LM keeps {counts[0]:,} floats for one sequence and {counts[1]:,} for four, "
        f"against {n_params:,} parameters: the residue grows with the batch, the parameters do not"
    )
