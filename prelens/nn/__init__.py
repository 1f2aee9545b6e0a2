"""``prelens.nn``: the fast lenses, whole arrays with a leading batch axis (for training).

Dense layers, convolutions and pooling, activations, losses, attention and transformers. The twins written as
the compositions they are live in :mod:`prelens.nn.composed`; the post's one-neuron-at-a-time network is
:mod:`prelens.faithful`.

>>> import numpy as np
>>> net = mlp(3, [8, 2], "relu")
>>> net.fwd(net.init(0), np.ones((5, 3)))[1].shape
(5, 2)
"""

from typing import Any

from prelens import datasets as _datasets
from prelens._deprecated import moved as _moved
from prelens.nn import _embedding, _linear, composed
from prelens.nn._activations import ACTIVATIONS, Activation, gelu, pointwise, relu, sigmoid, softmax, tanh
from prelens.nn._attention import AttentionParams, cross_attention, multi_head_attention
from prelens.nn._conv import ConvParams, conv1d, conv2d
from prelens.nn._dot_attention import MASKED, scaled_dot_product_attention
from prelens.nn._dropout import DropoutKey, dropout, with_dropout, without_dropout
from prelens.nn._embedding import positional_embedding, sinusoidal_encoding, token_embedding
from prelens.nn._linear import DenseParams, bias, dense, linear
from prelens.nn._losses import mse, softmax_cross_entropy, squared_distance, token_cross_entropy
from prelens.nn._mlp import mlp
from prelens.nn._norm import LayerNormParams, layer_norm
from prelens.nn._normalize import normalize
from prelens.nn._pool import avg_pool, flatten, max_pool
from prelens.nn._recurrent import RecurrentParams, bidirectional, gru, lstm, rnn
from prelens.nn._residual import residual
from prelens.nn._transformer import (
    DecoderBlockParams,
    EncoderBlockParams,
    EncoderDecoderParams,
    FeedForwardParams,
    LMParams,
    decoder_block,
    decoder_lm,
    encoder_block,
    encoder_decoder,
    feed_forward,
    generate,
)
from prelens.nn._transformer_wiring import attention_weights, remat

__all__ = [
    "ACTIVATIONS",
    "MASKED",
    "Activation",
    "AttentionParams",
    "ConvParams",
    "DecoderBlockParams",
    "DenseParams",
    "DropoutKey",
    "EncoderBlockParams",
    "EncoderDecoderParams",
    "FeedForwardParams",
    "LMParams",
    "LayerNormParams",
    "RecurrentParams",
    "attention_weights",
    "avg_pool",
    "bias",
    "bidirectional",
    "conv1d",
    "conv2d",
    "cross_attention",
    "decoder_block",
    "decoder_lm",
    "dense",
    "dropout",
    "encoder_block",
    "encoder_decoder",
    "feed_forward",
    "flatten",
    "gelu",
    "generate",
    "gru",
    "layer_norm",
    "linear",
    "lstm",
    "max_pool",
    "mlp",
    "mse",
    "multi_head_attention",
    "normalize",
    "pointwise",
    "positional_embedding",
    "relu",
    "remat",
    "residual",
    "rnn",
    "scaled_dot_product_attention",
    "sigmoid",
    "sinusoidal_encoding",
    "softmax",
    "softmax_cross_entropy",
    "squared_distance",
    "tanh",
    "token_cross_entropy",
    "token_embedding",
    "with_dropout",
    "without_dropout",
]


#: The names of ``prelens.nn`` (0.3) that moved to ``prelens.nn.composed`` (the newer ones never lived here):
#: old -> new. The twins kept their 0.3 names with a suffix; the pieces they are built from, their own names.
_COMPOSED_IN_0_3 = {
    "feed_forward_composed": "feed_forward",
    "multi_head_attention_faithful": "multi_head_attention",
    "residual_composed": "residual",
    **{
        name: name
        for name in (
            "FaithfulAttentionParams",
            "HeadParams",
            "attention_head",
            "attention_scores",
            "causal_mask",
            "concat_heads",
            "merge_heads",
            "split_heads",
            "stack_heads",
            "unstack_heads",
            "weighted_sum",
        )
    },
}

#: Old names of ``prelens.nn`` (0.3) that still work for one release, with a warning naming the new one:
#: old -> (new dotted name, the object). ``prelens.faithful`` adds the faithful level's names, which lived
#: here until 0.4 (this package sits below it and does not import it).
_MOVED: dict[str, tuple[str, Any]] = {
    **{old: (f"prelens.nn.composed.{new}", getattr(composed, new)) for old, new in _COMPOSED_IN_0_3.items()},
    "sinusoidal_table": (
        "prelens.nn.sinusoidal_encoding(d_model, max_len), whose forward pass adds this table",
        _embedding.sinusoidal_table,
    ),
    "init_weight": ("prelens.nn.dense(n_in, n_out, init=scheme, dtype=dtype).init(rng).weight", _linear.init_weight),
    "TOY_XS": ("prelens.datasets.TOY_XS", _datasets.TOY_XS),
    "TOY_YS": ("prelens.datasets.TOY_YS", _datasets.TOY_YS),
    "rematerialize": ("prelens.nn.remat", remat),
}
#: Names renamed in 0.2.0 (they meant something else in ``prelens`` or ``prelens.train``), removed in 0.3.1.
_GONE = {
    old: f"prelens.nn.{old} was renamed prelens.nn.{new} in prelens 0.2.0 (the old name meant something else "
    f"elsewhere in prelens) and removed in 0.3.1; it is prelens.faithful.{new} since 0.4.0"
    for old, new in (("predict", "predict_faithful"), ("train", "train_faithful"))
}
__getattr__ = _moved("prelens.nn", _MOVED, _GONE)
