"""Solutions to the exercises of notebook 06_transformer."""

from typing import Any

import numpy as np

from prelens import PreLens, chain, forward
from prelens.core import tree_leaves
from prelens.nn import feed_forward, layer_norm, multi_head_attention, residual


# 6.1 pre-LN: the norm goes inside each residual connection, in front of the sub-layer
def pre_ln_block(d_model: int, n_heads: int, d_ff: int) -> PreLens:
    return chain(
        residual(layer_norm(d_model) >> multi_head_attention(d_model, n_heads, causal=True)),
        residual(layer_norm(d_model) >> feed_forward(d_model, d_ff)),
    )


# 6.2 greedy decoding: run the model on the target written so far, append the argmax at the last position
def greedy(model: PreLens, params: Any, source: Any, start: int, steps: int) -> np.ndarray:
    target = np.full((len(source), 1), start)
    for _ in range(steps):
        logits = forward(model, params, (source, target))
        target = np.concatenate([target, logits[:, -1].argmax(axis=-1)[:, None]], axis=1)
    return target[:, 1:]


# 6.3 the residue of one forward pass, counted in floats
def residue_floats(model: PreLens, params: Any, inputs: Any) -> int:
    m, _ = model.fwd(params, inputs)
    return sum(np.size(leaf) for leaf in tree_leaves(m) if np.asarray(leaf).dtype.kind == "f")


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # post-LN arrangement instead of pre-LN
    "pre_ln_block": lambda d, h, f: chain(
        residual(multi_head_attention(d, h, causal=True)), layer_norm(d), residual(feed_forward(d, f)), layer_norm(d)
    ),
    # the argmax of the first position, every time
    "greedy": lambda model, params, source, start, steps: _first_position(model, params, source, start, steps),
    # counts the parameters, not the residue
    "residue_floats": lambda model, params, inputs: sum(np.size(leaf) for leaf in tree_leaves(params)),
}


def _first_position(model: PreLens, params: Any, source: Any, start: int, steps: int) -> np.ndarray:
    target = np.full((len(source), 1), start)
    for _ in range(steps):
        logits = forward(model, params, (source, target))
        target = np.concatenate([target, logits[:, 0].argmax(axis=-1)[:, None]], axis=1)
    return target[:, 1:]
