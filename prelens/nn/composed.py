"""``prelens.nn.composed``: the twins built by composition, and the pieces they are built from.

Each fast lens of :mod:`prelens.nn` that is fused for speed has a twin here written as the
composition it is, tested equal to it (same parameters, same outputs, same deltas):

* :func:`feed_forward` — ``chain(dense(d→d_ff), relu, dense(d_ff→d))``, twin of
  :func:`prelens.nn.feed_forward`;
* :func:`residual` — ``copy_l >> (id_pre_lens @ f) >> add_l``, twin of :func:`prelens.nn.residual`;
* :func:`multi_head_attention` — ``branch`` to ``h`` heads (:func:`attention_head`) side by side,
  :func:`concat_heads`, then ``W_O``; parameters :class:`FaithfulAttentionParams`; twin of
  :func:`prelens.nn.multi_head_attention` (:func:`stack_heads` and :func:`unstack_heads` map
  between the two parameter layouts).

The pieces of one head: :func:`attention_scores`, :func:`causal_mask`, :func:`weighted_sum`,
:func:`split_heads`, :func:`merge_heads` (heads on an array axis) and :class:`HeadParams`.

>>> import numpy as np
>>> from prelens import nn
>>> from prelens.nn import composed
>>> twin, fast = composed.feed_forward(4, 8), nn.feed_forward(4, 8)
>>> p, x = fast.init(0), np.ones((2, 3, 4))
>>> bool(np.allclose(twin.fwd(p, x)[1], fast.fwd(p, x)[1]))
True
"""

from prelens.nn._attention import (
    FaithfulAttentionParams,
    HeadParams,
    attention_head,
    attention_scores,
    causal_mask,
    concat_heads,
    merge_heads,
    split_heads,
    stack_heads,
    unstack_heads,
    weighted_sum,
)
from prelens.nn._attention import multi_head_attention_faithful as multi_head_attention
from prelens.nn._residual import residual_composed as residual
from prelens.nn._transformer import feed_forward_composed as feed_forward

__all__ = [
    "FaithfulAttentionParams",
    "HeadParams",
    "attention_head",
    "attention_scores",
    "causal_mask",
    "concat_heads",
    "feed_forward",
    "merge_heads",
    "multi_head_attention",
    "residual",
    "split_heads",
    "stack_heads",
    "unstack_heads",
    "weighted_sum",
]
