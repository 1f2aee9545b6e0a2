"""``prelens.nn``: the networks.

Two levels, one algebra. The *faithful* level is the blog's network, one
neuron at a time on 1-D arrays (for teaching and for checking the algebra).
The *fast* level is the same mathematics as whole-array lenses with a leading
batch axis (for training). Every fast lens is tested equal to a faithful twin.
"""

from typing import Any

# The faithful level (docs/faithful.md): the blog's network, one neuron at a time.
from prelens.faithful._network import (
    TOY_XS,
    TOY_YS,
    Para,
    activ_l,
    activ_t,
    affine_l,
    affine_t,
    batch_loss_l,
    bias_l,
    bias_t,
    init_mlp,
    init_para,
    layer,
    layer_l,
    linear_l,
    linear_t,
    loss_l,
    make_mlp,
    make_mlp_l,
    mk_para,
    neuron_l,
    neuron_t,
    predict_faithful,
    train_faithful,
    train_step,
    un_para,
)

# The fast level: whole arrays with a leading batch axis, each tested equal to its faithful twin.
from prelens.nn._activations import ACTIVATIONS, Activation, gelu, pointwise, relu, sigmoid, softmax, tanh
from prelens.nn._convert import dense_from_paras, dense_to_paras, mlp_from_paras, mlp_to_paras
from prelens.nn._linear import DenseParams, bias, dense, init_weight, linear
from prelens.nn._losses import mse, softmax_cross_entropy, squared_distance
from prelens.nn._mlp import mlp

# Attention and transformers, on the fast level.
from prelens.nn._attention import (
    MASKED,
    AttentionParams,
    FaithfulAttentionParams,
    HeadParams,
    attention_head,
    attention_scores,
    causal_mask,
    concat_heads,
    cross_attention,
    merge_heads,
    multi_head_attention,
    multi_head_attention_faithful,
    split_heads,
    stack_heads,
    unstack_heads,
    weighted_sum,
)
from prelens.nn._dot_attention import scaled_dot_product_attention
from prelens.nn._dropout import DropoutKey, dropout, with_dropout, without_dropout
from prelens.nn._embedding import positional_embedding, sinusoidal_encoding, sinusoidal_table, token_embedding
from prelens.nn._norm import LayerNormParams, layer_norm
from prelens.nn._normalize import normalize
from prelens.nn._residual import residual, residual_composed
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
    feed_forward_composed,
    generate,
    token_cross_entropy,
)
from prelens.nn._transformer_wiring import attention_weights, rematerialize

__all__ = [
    "ACTIVATIONS",
    "MASKED",
    "TOY_XS",
    "TOY_YS",
    "Activation",
    "AttentionParams",
    "DecoderBlockParams",
    "DenseParams",
    "DropoutKey",
    "EncoderBlockParams",
    "EncoderDecoderParams",
    "FaithfulAttentionParams",
    "FeedForwardParams",
    "HeadParams",
    "LMParams",
    "LayerNormParams",
    "Para",
    "activ_l",
    "activ_t",
    "affine_l",
    "affine_t",
    "attention_head",
    "attention_scores",
    "attention_weights",
    "batch_loss_l",
    "bias",
    "bias_l",
    "bias_t",
    "causal_mask",
    "concat_heads",
    "cross_attention",
    "decoder_block",
    "decoder_lm",
    "dense",
    "dense_from_paras",
    "dense_to_paras",
    "dropout",
    "encoder_block",
    "encoder_decoder",
    "feed_forward",
    "feed_forward_composed",
    "gelu",
    "generate",
    "init_mlp",
    "init_para",
    "init_weight",
    "layer",
    "layer_l",
    "layer_norm",
    "linear",
    "linear_l",
    "linear_t",
    "loss_l",
    "make_mlp",
    "make_mlp_l",
    "merge_heads",
    "mk_para",
    "mlp",
    "mlp_from_paras",
    "mlp_to_paras",
    "mse",
    "multi_head_attention",
    "multi_head_attention_faithful",
    "neuron_l",
    "neuron_t",
    "normalize",
    "pointwise",
    "positional_embedding",
    "predict_faithful",
    "relu",
    "rematerialize",
    "residual",
    "residual_composed",
    "scaled_dot_product_attention",
    "sigmoid",
    "sinusoidal_encoding",
    "sinusoidal_table",
    "softmax",
    "softmax_cross_entropy",
    "split_heads",
    "squared_distance",
    "stack_heads",
    "tanh",
    "token_cross_entropy",
    "token_embedding",
    "train_faithful",
    "train_step",
    "un_para",
    "unstack_heads",
    "weighted_sum",
    "with_dropout",
    "without_dropout",
]


#: Names renamed in 0.2.0 (they meant something else in ``prelens`` or ``prelens.train``): old -> new.
#: They warned under their old names until 0.3.1, which removed them.
_RENAMED = {"predict": "predict_faithful", "train": "train_faithful"}


def __getattr__(name: str) -> Any:
    """An old name of a renamed faithful function is an ``AttributeError`` that gives the new name."""
    if name in _RENAMED:
        from prelens.errors import renamed_text

        raise AttributeError(renamed_text(f"prelens.nn.{name}", f"prelens.nn.{_RENAMED[name]}"))
    raise AttributeError(f"module 'prelens.nn' has no attribute {name!r}")
