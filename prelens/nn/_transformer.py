"""Transformer blocks and models, composed from the attention, norm, residual and dense lenses.

Every model keeps its composition's residue, so :func:`~prelens.nn.attention_weights` reads every
attention matrix from it. Every lens here runs on the arrays of any array-API library (and under
``jax.jit``); :func:`generate` moves the ids to the model's library and samples with numpy.

>>> from prelens.nn import attention_weights
>>> lm = decoder_lm(vocab_size=10, d_model=8, n_heads=2, d_ff=16, n_layers=2, max_len=6)
>>> p = lm.init(0)
>>> m, logits = lm.fwd(p, np.array([[1, 2, 3]]))
>>> logits.shape, sorted(attention_weights(lm, m))
((1, 3, 10), ['block0.self', 'block1.self'])
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import constant_like, copy, is_array, to_numpy, zeros_like
from prelens.core import _args as A
from prelens.core._check import ANY, Arr, Expects, Like
from prelens.core._combinators import chain, copy_l
from prelens.core._iso import sym_l, unassoc_l
from prelens.core._lens import AnyLens, PreLens, as_lens, id_pre_lens
from prelens.core._registry import constructor
from prelens.core._trace import forward
from prelens.core._tree import tree_leaves
from prelens.nn._activations import relu
from prelens.nn._attention import AttentionParams, check_heads, cross_attention, multi_head_attention
from prelens.nn._dropout import keyed_params, then_dropout
from prelens.nn._embedding import positional_embedding, sinusoidal_encoding, token_embedding
from prelens.nn._fastcheck import Array, check_size, dtype_suffix, float_dtype
from prelens.nn._linear import DenseParams, dense
from prelens.nn._norm import LayerNormParams, check_eps, layer_norm
from prelens.nn._residual import residual
from prelens.nn._rows import column_sum, matmul, reshape
from prelens.nn._transformer_wiring import probes_of, reparam, with_probes

__all__ = [
    "DecoderBlockParams",
    "EncoderBlockParams",
    "EncoderDecoderParams",
    "FeedForwardParams",
    "LMParams",
    "decoder_block",
    "decoder_lm",
    "encoder_block",
    "encoder_decoder",
    "feed_forward",
    "feed_forward_composed",
    "generate",
]

Norm = Literal["post", "pre"]
Positional = Literal["learned", "sinusoidal"]


class FeedForwardParams(NamedTuple):
    """The two dense layers of :func:`feed_forward`: ``hidden (d_model→d_ff)``, ``output (d_ff→d_model)``.

    >>> p = feed_forward(4, 16).init(0)
    >>> p.hidden.weight.shape, p.output.weight.shape
    ((4, 16), (16, 4))
    """

    hidden: DenseParams
    output: DenseParams


class EncoderBlockParams(NamedTuple):
    """Parameters of :func:`encoder_block` (``norm1`` goes with attention, ``norm2`` with the FFN).

    >>> encoder_block(8, 2, 16).init(0)._fields
    ('attention', 'norm1', 'feed_forward', 'norm2')
    """

    attention: AttentionParams
    norm1: LayerNormParams
    feed_forward: FeedForwardParams
    norm2: LayerNormParams


class DecoderBlockParams(NamedTuple):
    """Parameters of :func:`decoder_block`: one attention, cross-attention and FFN, each with its norm.

    >>> p = decoder_block(8, 2, 16).init(0)
    >>> p._fields[:3], p.cross_attention.W_Q.shape
    (('self_attention', 'norm1', 'cross_attention'), (8, 8))
    """

    self_attention: AttentionParams
    norm1: LayerNormParams
    cross_attention: AttentionParams
    norm2: LayerNormParams
    feed_forward: FeedForwardParams
    norm3: LayerNormParams


class LMParams(NamedTuple):
    """Parameters of :func:`decoder_lm`.

    ``embedding (vocab, d_model)``; ``positions (max_len, d_model)`` (``()``
    with sinusoidal positions); one :class:`EncoderBlockParams` per block;
    ``norm``, the final layer norm (``()`` for post-LN models, which end
    normalised); ``unembedding``, the final ``dense(d_model→vocab)``.

    >>> p = decoder_lm(16, 8, 2, 32, 1, 10, positional="sinusoidal").init(0)
    >>> p.embedding.shape, p.positions, len(p.blocks), p.unembedding.weight.shape
    ((16, 8), (), 1, (8, 16))
    """

    embedding: Array
    positions: Array | tuple[()]
    blocks: list[EncoderBlockParams]
    norm: LayerNormParams | tuple[()]
    unembedding: DenseParams


class EncoderDecoderParams(NamedTuple):
    """Parameters of :func:`encoder_decoder` (``*_norm`` are ``()`` for post-LN models).

    >>> p = encoder_decoder(5, 7, 8, 2, 16, 1, 6).init(0)
    >>> p.source_embedding.shape, p.target_embedding.shape, len(p.decoder), p.decoder_norm
    ((5, 8), (7, 8), 1, ())
    """

    source_embedding: Array
    source_positions: Array | tuple[()]
    target_embedding: Array
    target_positions: Array | tuple[()]
    encoder: list[EncoderBlockParams]
    encoder_norm: LayerNormParams | tuple[()]
    decoder: list[DecoderBlockParams]
    decoder_norm: LayerNormParams | tuple[()]
    unembedding: DenseParams


# ---------------------------------------------------------------------- pieces


@constructor
def feed_forward_composed(d_model: int, d_ff: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The feed-forward network as the composition it is: ``chain(dense(d→d_ff), relu, dense(d_ff→d))``.

    Shapes ``(..., d_model) -> (..., d_model)``; parameters
    :class:`FeedForwardParams`. The readable twin of :func:`feed_forward`
    (property tests check them equal).

    >>> feed_forward_composed(4, 16)
    feed_forward_composed(4→16→4)
    """
    d = check_size("feed_forward_composed", "d_model", d_model)
    f = check_size("feed_forward_composed", "d_ff", d_ff)
    dt = float_dtype("feed_forward_composed", dtype)
    body = chain(dense(d, f, None, dtype=dt, init="he"), relu, dense(f, d, None, dtype=dt))
    return reparam(
        body,
        f"feed_forward_composed({d}→{f}→{d}{dtype_suffix(dt)})",
        p_to=lambda p: [p.hidden, (), p.output],
        p_from=lambda dp: FeedForwardParams(dp[0], dp[2]),
    )


#: The residue of :func:`feed_forward`: the input rows ``x (N, d)``, the hidden activations
#: ``h = relu(x W₁ + b₁) (N, d_ff)``, the two weight matrices, and the input's shape.
FeedForwardResidue = tuple[Array, Array, Array, Array, tuple[int, ...]]


@constructor
def feed_forward(d_model: int, d_ff: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """Position-wise feed-forward network ``(..., d_model) -> (..., d_model)``: dense ≫ ReLU ≫ dense, fused.

    ``y = relu(x W₁ + b₁) W₂ + b₂`` on every position; parameters
    :class:`FeedForwardParams` (``hidden``: ``d_model→d_ff`` with He
    initialisation, ``output``: ``d_ff→d_model``). The same lens as
    :func:`feed_forward_composed` (tested equal to it) in one Python call per
    pass; the ReLU's derivative is read off the stored activations ``h``.

    >>> ffn = feed_forward(4, 16)
    >>> ffn, ffn.init(0).hidden.weight.shape
    (feed_forward(4→16→4), (4, 16))
    >>> ffn.fwd(ffn.init(0), np.ones((2, 3, 4)))[1].shape
    (2, 3, 4)
    """
    d = check_size("feed_forward", "d_model", d_model)
    f = check_size("feed_forward", "d_ff", d_ff)
    dt = float_dtype("feed_forward", dtype)
    name = f"feed_forward({d}→{f}→{d}{dtype_suffix(dt)})"
    hidden, output = dense(d, f, None, dtype=dt, init="he"), dense(f, d, None, dtype=dt)
    rows_d, rows_f, w1, w2 = Arr(dt, None, d), Arr(dt, None, f), Arr(dt, d, f), Arr(dt, f, d)
    expects = Expects(
        params=FeedForwardParams(DenseParams(w1, Arr(dt, f)), DenseParams(w2, Arr(dt, d))),  # type: ignore[arg-type]
        input=Arr(dt, ..., d),
        residue=(rows_d, rows_f, w1, w2, ANY),  # (x rows, h, W1, W2, the input's shape)
        delta=Like(lambda m: (dt, m[4])),
    )

    def fwd(p: FeedForwardParams, x: Array) -> tuple[FeedForwardResidue, Array]:
        (w1, b1), (w2, b2) = p
        shape = tuple(x.shape)
        x2 = copy(reshape(x, (-1, d)))  # the residue keeps copies of the caller's x, W1 and W2
        h = matmul(x2, w1)
        h += b1  # h and y are ours (a JAX array is rebound, not written)
        h = relu.apply(h)
        y = matmul(h, w2)
        y += b2
        return (x2, h, copy(w1), copy(w2), shape), reshape(y, shape)

    def bwd(m: FeedForwardResidue, da: Array) -> tuple[FeedForwardParams, Array]:
        x2, h, w1, w2, shape = m
        da2 = reshape(da, (-1, d))
        d_output = DenseParams(matmul(h.T, da2), column_sum(da2))
        dh = matmul(da2, w2.T)
        # the ReLU's derivative read off h (h > 0 where x W1 + b1 > 0), applied in place on numpy (dh is
        # ours): one (B·T, d_ff) buffer less at the backward pass's peak (the remat'd LM step: 0.598 -> 0.593)
        if type(dh) is np.ndarray:
            dh *= h > 0
        else:
            dh = relu.grad(h, dh)
        d_hidden = DenseParams(matmul(x2.T, dh), column_sum(dh))
        return FeedForwardParams(d_hidden, d_output), reshape(matmul(dh, w1.T), shape)

    def init(rng: np.random.Generator) -> FeedForwardParams:
        return FeedForwardParams(hidden.init(rng), output.init(rng))

    return PreLens(fwd, bwd, name, init, "", (hidden, relu, output), expects)


# ---------------------------------------------------------------------- blocks


def _block_args(
    fn: str, d_model: int, n_heads: int, d_ff: int, norm: str, eps: float, dtype: npt.DTypeLike, dropout: float
) -> tuple[int, int, np.dtype[Any], Norm, float]:
    """``(d_model, d_ff, dtype, norm, dropout)`` of a block or a model, checked (and ``eps``) for ``fn``."""
    d, _ = check_heads(fn, d_model, n_heads)
    f = check_size(fn, "d_ff", d_ff)
    dt = float_dtype(fn, dtype)
    if not isinstance(norm, str) or norm not in ("post", "pre"):
        raise E.not_one_of(fn, "norm", ("post", "pre"), norm)
    check_eps(fn, eps)
    rate = A.real(fn, "dropout", dropout, low=0.0, high=1.0)
    return d, f, dt, "post" if norm == "post" else "pre", rate


def _flags(norm: str, rate: float, eps: float, *, causal: bool = False, sinusoidal: bool = False) -> str:
    """The options of a block or a model that differ from the defaults, as its name shows them."""
    flags = (
        (", causal" if causal else "") + (", pre-LN" if norm == "pre" else "") + (", sinusoidal" if sinusoidal else "")
    )
    return flags + ("" if eps == 1e-5 else f", eps={eps:g}") + (f", dropout={rate:g}" if rate else "")


def _named(lens: AnyLens, prefix: str) -> AnyLens:
    """``lens`` with its attention probes renamed under ``prefix`` (``"block0"``, ``"self"`` -> ``"block0.self"``)."""
    return with_probes(lens, {f"{prefix}.{k}" if k else prefix: g for k, g in probes_of(lens).items()})


def _block(body: AnyLens, name: str, rate: float, fields: tuple[str, ...], p_to: Any, p_from: Any) -> AnyLens:
    """A block: :func:`reparam` of its body, its probes kept; with dropout the parameters are
    ``(P, keys)``, a key for each sub-layer of ``fields`` (see ``keyed_params``)."""
    if rate:
        p_to, p_from = keyed_params(p_to, p_from, fields)
    return with_probes(reparam(body, name, p_to=p_to, p_from=p_from), probes_of(body))


@constructor
def encoder_block(
    d_model: int,
    n_heads: int,
    d_ff: int,
    *,
    causal: bool = False,
    norm: Norm = "post",
    eps: float = 1e-5,
    dtype: npt.DTypeLike = np.float64,
    dropout: float = 0.0,
) -> AnyLens:
    """One encoder block ``(B, T, d_model) -> (B, T, d_model)``; parameters :class:`EncoderBlockParams`.

    The residue is the chain's list of stage residues. ``norm="post"`` (the paper)::

        chain(residual(multi_head_attention), layer_norm, residual(feed_forward), layer_norm)

    ``norm="pre"``::

        chain(residual(layer_norm >> multi_head_attention), residual(layer_norm >> feed_forward))

    ``causal=True`` masks the future (the block of :func:`decoder_lm`). The
    attention weights are probed as ``"self"``. With ``dropout=r > 0`` each
    sub-layer's output passes through :func:`dropout` ``(r)`` before the residual
    sum (``residual(mha >> dropout(r))``, as in the paper), and the parameters
    are ``(EncoderBlockParams, (DropoutKey, DropoutKey))``: evaluation until a
    trainer keys them with :func:`with_dropout`.

    >>> blk = encoder_block(8, 2, 16)
    >>> blk
    encoder_block(8, heads=2, d_ff=16)
    >>> blk.fwd(blk.init(0), np.ones((2, 3, 8)))[1].shape
    (2, 3, 8)
    """
    fn = "encoder_block"
    d, f, dt, norm_, rate = _block_args(fn, d_model, n_heads, d_ff, norm, eps, dtype, dropout)
    causal = A.flag(fn, "causal", causal)
    mha = then_dropout(_named(multi_head_attention(d, n_heads, causal=causal, dtype=dt), "self"), rate)
    ffn = then_dropout(feed_forward(d, f, dtype=dt), rate)
    ln1, ln2 = layer_norm(d, eps=eps, dtype=dt), layer_norm(d, eps=eps, dtype=dt)
    if norm_ == "post":
        body = chain(residual(mha), ln1, residual(ffn), ln2)
        p_to = lambda p: [p.attention, p.norm1, p.feed_forward, p.norm2]
        p_from = lambda dp: EncoderBlockParams(*dp)
    else:
        body = chain(residual(ln1 >> mha), residual(ln2 >> ffn))
        p_to = lambda p: [(p.attention, p.norm1), (p.feed_forward, p.norm2)]
        p_from = lambda dp: EncoderBlockParams(*dp[0], *dp[1])
    name = f"{fn}({d}, heads={n_heads}, d_ff={f}{_flags(norm_, rate, eps, causal=causal)}{dtype_suffix(dt)})"
    return _block(body, name, rate, ("attention", "feed_forward"), p_to, p_from)


def _drop_second() -> AnyLens:
    """``(y, c) -> y``; the backward pass gives ``c`` a zero delta (residue: ``c``, for its shape)."""

    def fwd(p: tuple[()], yc: tuple[Any, Array]) -> tuple[Array, Any]:
        return yc[1], yc[0]

    def bwd(c: Array, dy: Any) -> tuple[tuple[()], tuple[Any, Array]]:
        return (), (dy, zeros_like(c))

    return PreLens(fwd, bwd, "drop_memory", expects=Expects(params=(), input=(ANY, ANY), residue=Arr(None, ...)))


@constructor
def decoder_block(
    d_model: int,
    n_heads: int,
    d_ff: int,
    *,
    norm: Norm = "post",
    eps: float = 1e-5,
    dtype: npt.DTypeLike = np.float64,
    dropout: float = 0.0,
) -> AnyLens:
    """One decoder block ``(y (B, T, d), memory (B, S, d)) -> (y' (B, T, d), memory)``.

    Causal self-attention on ``y``, cross-attention from ``y`` to ``memory``
    (the encoder's output), feed-forward; each a residual sub-layer with its
    layer norm (post-LN as in the paper, or ``norm="pre"``). The memory is
    passed on unchanged, so blocks chain; its delta sums the deltas of every
    block's cross-attention. Post-LN::

        chain((residual(causal_mha) >> layer_norm) @ id,
              id @ copy_l, unassoc_l,                            # ((y, memory), memory)
              (residual(cross_attention, context=True) >> layer_norm) @ id,
              (residual(feed_forward) >> layer_norm) @ id)

    Parameters :class:`DecoderBlockParams`; attention probes ``"self"`` and ``"cross"``.
    With ``dropout=r > 0`` each sub-layer's output passes through :func:`dropout`
    before its residual sum, and the parameters are ``(DecoderBlockParams, keys)``
    with three :class:`DropoutKey` (self-attention, cross-attention, feed-forward).

    >>> blk = decoder_block(8, 2, 16)
    >>> y, mem = blk.fwd(blk.init(0), (np.ones((2, 3, 8)), np.ones((2, 5, 8))))[1]
    >>> y.shape, mem.shape
    ((2, 3, 8), (2, 5, 8))
    """
    fn = "decoder_block"
    d, f, dt, norm_, rate = _block_args(fn, d_model, n_heads, d_ff, norm, eps, dtype, dropout)
    mha = then_dropout(_named(multi_head_attention(d, n_heads, causal=True, dtype=dt), "self"), rate)
    cross = then_dropout(_named(cross_attention(d, n_heads, dtype=dt), "cross"), rate)
    ffn = then_dropout(feed_forward(d, f, dtype=dt), rate)
    ln1, ln2, ln3 = (layer_norm(d, eps=eps, dtype=dt) for _ in range(3))
    post = norm_ == "post"
    if post:
        sub1, sub2, sub3 = residual(mha) >> ln1, residual(cross, context=True) >> ln2, residual(ffn) >> ln3
    else:
        sub1, sub3 = residual(ln1 >> mha), residual(ln3 >> ffn)
        sub2 = residual((ln2 @ id_pre_lens) >> cross, context=True)

    def p_to(p: DecoderBlockParams) -> list[Any]:
        # a sub-layer's parameters: (sub-layer, norm) pre-LN (norm2 with ln2 @ id's unit), (norm, sub-layer) post-LN
        subs = [(p.self_attention, p.norm1), (p.cross_attention, p.norm2 if post else (p.norm2, ()))]
        s1, s2, s3 = (s[::-1] if post else s for s in [*subs, (p.feed_forward, p.norm3)])
        return [(s1, ()), ((), ()), (), (s2, ()), (s3, ())]

    def p_from(dp: list[Any]) -> DecoderBlockParams:
        (a1, n1), (a2, n2), (a3, n3) = (s[::-1] if post else s for s in (dp[0][0], dp[3][0], dp[4][0]))
        return DecoderBlockParams(a1, n1, a2, n2 if post else n2[0], a3, n3)

    # each sub-layer on y beside the memory; (y, memory) -> ((y, memory), memory) before the cross-attention
    body = chain(sub1 @ id_pre_lens, id_pre_lens @ copy_l, unassoc_l, sub2 @ id_pre_lens, sub3 @ id_pre_lens)
    name = f"{fn}({d}, heads={n_heads}, d_ff={f}{_flags(norm_, rate, eps)}{dtype_suffix(dt)})"
    return _block(body, name, rate, ("self_attention", "cross_attention", "feed_forward"), p_to, p_from)


# ---------------------------------------------------------------------- models


def _model_args(fn: str, n_layers: int, max_len: int, positional: str) -> tuple[int, int]:
    """``(n_layers, max_len)`` of a model, checked for ``fn``, and its ``positional``."""
    n = check_size(fn, "n_layers", n_layers)
    t = check_size(fn, "max_len", max_len)
    if not isinstance(positional, str) or positional not in ("learned", "sinusoidal"):
        raise E.not_one_of(fn, "positional", ("learned", "sinusoidal"), positional)
    return n, t


def _embed(vocab: int, d: int, max_len: int, positional: str, dt: np.dtype[Any]) -> tuple[AnyLens, AnyLens]:
    """``token_embedding`` and ``positional_embedding`` (or the sinusoidal table)."""
    pos = positional_embedding(max_len, d, dtype=dt) if positional == "learned" else sinusoidal_encoding(d, max_len)
    return token_embedding(vocab, d, dtype=dt), pos


@constructor
def decoder_lm(
    vocab_size: int,
    d_model: int,
    n_heads: int,
    d_ff: int,
    n_layers: int,
    max_len: int,
    *,
    norm: Norm = "post",
    positional: Positional = "learned",
    eps: float = 1e-5,
    dtype: npt.DTypeLike = np.float64,
    dropout: float = 0.0,
) -> AnyLens:
    """A decoder-only language model: token ids ``(B, T)`` -> next-token logits ``(B, T, vocab)``.

    Built as::

        chain(token_embedding(vocab, d), positional_embedding(max_len, d),   # or sinusoidal_encoding
              encoder_block(..., causal=True) × n_layers,
              [layer_norm(d),]                                             # pre-LN only
              dense(d→vocab))

    Parameters :class:`LMParams`; residue: the chain's list, in data-flow
    order. Position ``t``'s logits depend on ids ``0..t`` only. Compose with
    :func:`token_cross_entropy` for the loss. Attention probes
    ``"block0.self"``, ``"block1.self"``, ... ``dropout=r > 0`` is passed to every
    block (each block's parameters in ``blocks`` are then ``(EncoderBlockParams,
    keys)``; see :func:`encoder_block`).

    >>> lm = decoder_lm(16, 8, 2, 32, 1, 10)
    >>> lm
    decoder_lm(vocab=16, d_model=8, heads=2, d_ff=32, layers=1, max_len=10)
    >>> p = lm.init(0)
    >>> p.embedding.shape, p.positions.shape, len(p.blocks), p.norm
    ((16, 8), (10, 8), 1, ())
    """
    fn = "decoder_lm"
    v = check_size(fn, "vocab_size", vocab_size)
    d, f, dt, norm_, rate = _block_args(fn, d_model, n_heads, d_ff, norm, eps, dtype, dropout)
    n, t = _model_args(fn, n_layers, max_len, positional)
    pre = norm_ == "pre"
    blocks = [
        _named(encoder_block(d, n_heads, f, causal=True, norm=norm_, eps=eps, dtype=dt, dropout=rate), f"block{i}")
        for i in range(n)
    ]
    body = chain(
        *_embed(v, d, t, positional, dt),
        *blocks,
        *([layer_norm(d, eps=eps, dtype=dt)] if pre else []),
        dense(d, v, None, dtype=dt),
    )
    flags = _flags(norm_, rate, eps, sinusoidal=positional == "sinusoidal")
    name = f"{fn}(vocab={v}, d_model={d}, heads={n_heads}, d_ff={f}, layers={n}, max_len={t}{flags}{dtype_suffix(dt)})"
    p_to = lambda p: [p.embedding, p.positions, *p.blocks, *([p.norm] if pre else []), p.unembedding]
    p_from = lambda dp: LMParams(dp[0], dp[1], list(dp[2 : 2 + n]), dp[2 + n] if pre else (), dp[-1])
    return with_probes(reparam(body, name, p_to=p_to, p_from=p_from), probes_of(body))


@constructor
def encoder_decoder(
    source_vocab: int,
    target_vocab: int,
    d_model: int,
    n_heads: int,
    d_ff: int,
    n_layers: int,
    max_len: int,
    *,
    norm: Norm = "post",
    positional: Positional = "learned",
    eps: float = 1e-5,
    dtype: npt.DTypeLike = np.float64,
    dropout: float = 0.0,
) -> AnyLens:
    """The encoder-decoder transformer: ``(source ids (B, S), target ids (B, T)) -> logits (B, T, target_vocab)``.

    Built as::

        chain((embed_src >> pos_src) @ (embed_tgt >> pos_tgt),   # (x, y)
              chain(encoder_block × n_layers, [layer_norm]) @ id,  # (memory, y)
              sym_l,                                           # (y, memory)
              decoder_block × n_layers,                        # (y, memory)
              drop_memory, [layer_norm,] dense(d→target_vocab))

    Parameters :class:`EncoderDecoderParams`; attention probes
    ``"encoder0.self"``, ``"decoder0.self"``, ``"decoder0.cross"``, ...
    ``dropout=r > 0`` is passed to every encoder and decoder block (their
    parameters then carry their :class:`DropoutKey` s, as the blocks' do).

    >>> from prelens.nn import attention_weights
    >>> ed = encoder_decoder(5, 7, 8, 2, 16, 1, 6)
    >>> m, logits = ed.fwd(ed.init(0), (np.array([[1, 2, 3, 4]]), np.array([[0, 6]])))
    >>> logits.shape, sorted(attention_weights(ed, m))
    ((1, 2, 7), ['decoder0.cross', 'decoder0.self', 'encoder0.self'])
    """
    fn = "encoder_decoder"
    vs = check_size(fn, "source_vocab", source_vocab)
    vt = check_size(fn, "target_vocab", target_vocab)
    d, f, dt, norm_, rate = _block_args(fn, d_model, n_heads, d_ff, norm, eps, dtype, dropout)
    n, t = _model_args(fn, n_layers, max_len, positional)
    pre = norm_ == "pre"
    kw: dict[str, Any] = {"norm": norm_, "eps": eps, "dtype": dt, "dropout": rate}
    enc = [_named(encoder_block(d, n_heads, f, **kw), f"encoder{i}") for i in range(n)]
    dec = [_named(decoder_block(d, n_heads, f, **kw), f"decoder{i}") for i in range(n)]
    (src, src_pos), (tgt, tgt_pos) = _embed(vs, d, t, positional, dt), _embed(vt, d, t, positional, dt)
    body = chain(
        (src >> src_pos) @ (tgt >> tgt_pos),
        chain(*enc, *([layer_norm(d, eps=eps, dtype=dt)] if pre else [])) @ id_pre_lens,
        sym_l,
        *dec,
        _drop_second(),
        *([layer_norm(d, eps=eps, dtype=dt)] if pre else []),
        dense(d, vt, None, dtype=dt),
    )
    flags = f"{_flags(norm_, rate, eps, sinusoidal=positional == 'sinusoidal')}{dtype_suffix(dt)}"
    name = f"{fn}(vocab={vs}→{vt}, d_model={d}, heads={n_heads}, d_ff={f}, layers={n}, max_len={t}{flags})"

    def p_to(p: EncoderDecoderParams) -> list[Any]:
        embed = ((p.source_positions, p.source_embedding), (p.target_positions, p.target_embedding))
        return [
            embed,
            ([*p.encoder, *([p.encoder_norm] if pre else [])], ()),
            (),
            *p.decoder,
            (),
            *([p.decoder_norm] if pre else []),
            p.unembedding,
        ]

    def p_from(dp: list[Any]) -> EncoderDecoderParams:
        ((sp, se), (tp, te)), encs = dp[0], dp[1][0]
        enc_norm, dec_norm = (encs[n], dp[4 + n]) if pre else ((), ())
        return EncoderDecoderParams(se, sp, te, tp, list(encs[:n]), enc_norm, list(dp[3 : 3 + n]), dec_norm, dp[-1])

    return with_probes(reparam(body, name, p_to=p_to, p_from=p_from), probes_of(body))


# ------------------------------------------------------------------ generation


def generate(
    lm: AnyLens,
    params: Any,
    prompt: npt.ArrayLike,
    steps: int,
    *,
    max_len: int | None = None,
    temperature: float = 0.0,
    rng: np.random.Generator | int | None = None,
) -> Array:
    """Extend ``prompt (B, T0)`` by ``steps`` tokens with a language model ``ids -> logits``.

    Each step runs ``lm.fwd`` on the last ``max_len`` tokens (all of them if
    ``None``) and picks the next token from the last position's logits:
    greedily with ``temperature=0``, else by sampling ``softmax(logits / temperature)``.
    Returns ``(B, T0 + steps)`` numpy ids (the prompt may be another library's). The longest window is
    tried first, on one row: a model that takes fewer positions fails before the first step, not after
    the steps that fit.

    >>> lm = decoder_lm(5, 8, 2, 16, 1, 8)
    >>> generate(lm, lm.init(0), np.array([[1, 2]]), 3).shape
    (1, 5)
    """
    as_lens("generate", "lm", lm)
    # float ids are an error, never truncated; another library's ids are read as numpy's (the sampling is numpy's)
    ids = A.int_array("generate", "prompt", prompt).copy()  # any library's ids, brought home
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.shape[1] == 0:
        expected = "token ids (batch, time) with at least one token"
        raise E.lens_shape_error("generate", "prompt", expected, E.describe(ids))
    t0, n_steps = ids.shape[1], A.count("generate", "steps", steps, least=0)
    window = t0 + n_steps if max_len is None else A.count("generate", "max_len", max_len)  # None: every token
    temp = A.real("generate", "temperature", temperature, low=0.0)
    gen = A.seed("generate", rng)
    # a model of another library (a leaf not numpy's): the ids go to it, the logits come back
    like = next((a for a in tree_leaves(params) if is_array(a) and not isinstance(a, np.ndarray)), None)
    longest = min(window, t0 + n_steps - 1)  # the longest window a step runs the model on
    if n_steps == 0:  # nothing to generate: still check the model, its parameters and the prompt
        _last_logits(lm, params, ids[:, -window:], 0, like)
    elif longest > t0:  # checked before the first step, on one row: a model that refuses it fails now
        try:
            _last_logits(lm, params, np.zeros((1, longest), np.int64), 0, like)
        except E.ShapeError as err:
            said = f"{t0} prompt tokens and {n_steps} steps give the model windows of up to {longest} tokens"
            raise type(err)(f"generate: {said} (max_len={max_len}), checked before the first step: {err}") from err
    for k in range(n_steps):
        logits = _last_logits(lm, params, ids[:, -window:], k, like)
        nxt = logits.argmax(axis=-1)  # greedy; sampling keeps it in rows where z overflows (the largest logits win)
        if temp:
            with np.errstate(over="ignore"):
                z = logits / temp
            for i, row in enumerate(z):
                if np.isfinite(row).all():
                    pr = np.exp(row - row.max())
                    nxt[i] = gen.choice(len(pr), p=pr / pr.sum())
        ids = np.concatenate([ids, nxt[:, None].astype(np.int64)], axis=1)
    return ids


def _last_logits(lm: AnyLens, params: Any, window: Array, step: int, like: Any) -> Array:
    """The logits ``(B, vocab)`` that ``lm`` gives the last position of ``window``, checked, as numpy's."""
    logits = forward(lm, params, window if like is None else constant_like(window, like))
    logits = to_numpy(logits) if is_array(logits) else logits  # the sampling is numpy's
    b, t = window.shape
    ok = isinstance(logits, np.ndarray) and logits.dtype.kind == "f" and logits.ndim == 3
    if not ok or logits.shape[:2] != (b, t) or logits.shape[2] == 0:
        expected = f"logits f[{b},{t},vocab] (batch, time, vocabulary) for ids i64[{b},{t}]"
        raise E.must_be("generate", f"the output of {E.short_name(lm.name)}", expected, E.describe_tree(logits))
    last: Array = logits[:, -1].astype(np.float64)
    if not np.isfinite(last).all():
        raise E.non_finite(f"generate: the logits of step {step}", "")
    return last
