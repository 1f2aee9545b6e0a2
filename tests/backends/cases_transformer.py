"""Backend cases: embeddings, positions, ``normalize``, ``layer_norm``, ``dropout``, feed-forward, blocks, models.

Each lens in float64 and float32 and on several leading-axis shapes; dropout
in evaluation (no key) and training (a key: the mask numpy draws, moved to the
library); the whole blocks (post- and pre-LN, causal, the decoder block with
its memory), the encoder-decoder, and a small language model with its loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens
from prelens.nn import (
    decoder_block,
    decoder_lm,
    dropout,
    encoder_block,
    encoder_decoder,
    feed_forward,
    layer_norm,
    normalize,
    positional_embedding,
    remat,
    sinusoidal_encoding,
    token_cross_entropy,
    token_embedding,
    with_dropout,
)
from prelens.nn.composed import feed_forward as feed_forward_composed

from .harness import Case

#: numpy's loss is a numpy scalar, which the harness does not count as an array; another
#: library's is a 0-d array. The loss cases end in this adapter so that both are compared.
_as_array: Any = PreLens(
    lambda p, s: ((), np.asarray(s) if isinstance(s, np.generic) else s), lambda m, da: ((), da), "as_array"
)


def _compared(loss: Any) -> Any:
    return loss >> _as_array


F64, F32 = np.float64, np.float32


def _name(dtype: type) -> str:
    return np.dtype(dtype).name


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> Any:
    return rng.standard_normal(shape).astype(dtype)


def _token_embedding(dtype: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = token_embedding(7, 5, dtype=dtype)
        ids = rng.integers(0, 7, lead)  # short vocabulary: ids repeat, their deltas add up
        return lens, lens.init(rng), ids, _normal(rng, (*lead, 5), dtype)

    return Case(f"token_embedding({_name(dtype)}, ids {lead})", make, tags=("ids",))


def _positional(dtype: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = positional_embedding(9, 6, dtype=dtype)  # T < max_len: the table's tail gets zeros
        return lens, lens.init(rng), _normal(rng, (*lead, 6), dtype), _normal(rng, (*lead, 6), dtype)

    return Case(f"positional_embedding({_name(dtype)}, {lead})", make)


def _sinusoidal(dtype: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = sinusoidal_encoding(6, max_len=16)
        return lens, (), _normal(rng, (*lead, 6), dtype), _normal(rng, (*lead, 6), dtype)

    return Case(f"sinusoidal_encoding({_name(dtype)}, {lead})", make)


def _normalize(dtype: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = normalize(rng.standard_normal(4) * 3, rng.uniform(0.5, 2.0, 4), dtype=dtype)
        return lens, (), _normal(rng, (*lead, 4), dtype), _normal(rng, (*lead, 4), dtype)

    return Case(f"normalize({_name(dtype)}, {lead})", make)


def _layer_norm(dtype: type, lead: tuple[int, ...], eps: float = 1e-5) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = layer_norm(8, eps=eps, dtype=dtype)
        p = lens.init(rng)
        p = type(p)(p.gain + _normal(rng, (8,), dtype), p.bias + _normal(rng, (8,), dtype))  # not 1 and 0
        x = _normal(rng, (*lead, 8), dtype) * 2 + 1
        return lens, p, x, _normal(rng, (*lead, 8), dtype)

    return Case(f"layer_norm({_name(dtype)}, {lead}, eps={eps:g})", make)


def _dropout(dtype: type, lead: tuple[int, ...], train: bool, rate: float = 0.3) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = dropout(rate)
        p = with_dropout(lens.init(rng), int(rng.integers(2**63))) if train else lens.init(rng)
        return lens, p, _normal(rng, lead, dtype), _normal(rng, lead, dtype)

    mode = "train" if train else "eval"
    return Case(f"dropout({rate}, {mode}, {_name(dtype)}, {lead})", make)


def _feed_forward(dtype: type, lead: tuple[int, ...], composed: bool = False) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = (feed_forward_composed if composed else feed_forward)(6, 12, dtype=dtype)
        return lens, lens.init(rng), _normal(rng, (*lead, 6), dtype), _normal(rng, (*lead, 6), dtype)

    kind = "feed_forward_composed" if composed else "feed_forward"
    return Case(f"{kind}({_name(dtype)}, {lead})", make)


def _encoder_block(dtype: type, norm: str, causal: bool, rate: float = 0.0) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = encoder_block(8, 2, 16, causal=causal, norm=norm, dtype=dtype, dropout=rate)  # type: ignore[arg-type]
        p = lens.init(rng)
        if rate:
            p = with_dropout(p, 11)
        return lens, p, _normal(rng, (3, 5, 8), dtype), _normal(rng, (3, 5, 8), dtype)

    flags = f"{norm}-LN" + (", causal" if causal else "") + (f", dropout {rate}" if rate else "")
    return Case(f"encoder_block({_name(dtype)}, {flags})", make)


def _decoder_block(dtype: type, norm: str) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = decoder_block(8, 2, 16, norm=norm, dtype=dtype)  # type: ignore[arg-type]
        y, memory = _normal(rng, (2, 4, 8), dtype), _normal(rng, (2, 6, 8), dtype)
        return lens, lens.init(rng), (y, memory), (_normal(rng, (2, 4, 8), dtype), _normal(rng, (2, 6, 8), dtype))

    return Case(f"decoder_block({_name(dtype)}, {norm}-LN)", make)


def _encoder_decoder(dtype: type) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = encoder_decoder(6, 7, 8, 2, 16, 1, 8, norm="pre", dtype=dtype)
        ids = (rng.integers(0, 6, (2, 5)), rng.integers(0, 7, (2, 4)))
        return lens, lens.init(rng), ids, _normal(rng, (2, 4, 7), dtype)

    return Case(f"encoder_decoder({_name(dtype)}, pre-LN)", make, tags=("ids",))


def _cross_entropy(dtype: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lens = _compared(token_cross_entropy())
        labels = rng.integers(0, 9, lead)
        labels[..., 0] = -1  # ignored positions
        return lens, ((), labels), _normal(rng, (*lead, 9), dtype) * 3, np.asarray(0.7, dtype)

    return Case(f"token_cross_entropy({_name(dtype)}, {lead})", make, tags=("labels",))


def _lm_loss(dtype: type, positional: str = "learned", norm: str = "post") -> Case:
    def make(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        lm = decoder_lm(11, 8, 2, 16, 2, 12, norm=norm, positional=positional, dtype=dtype)  # type: ignore[arg-type]
        lens = lm >> _compared(token_cross_entropy())
        ids = rng.integers(0, 11, (3, 7))
        labels = np.roll(ids, -1, axis=1)
        labels[:, -1] = -1
        return lens, (((), labels), lm.init(rng)), ids, np.asarray(1.0, dtype)

    return Case(f"decoder_lm >> token_cross_entropy({_name(dtype)}, {positional}, {norm}-LN)", make, tags=("ids",))


def _rematerialized(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
    lens = remat(layer_norm(8))
    return lens, lens.init(rng), _normal(rng, (4, 8), F64), _normal(rng, (4, 8), F64)


def _lm_logits(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
    lens = decoder_lm(10, 8, 2, 16, 1, 6, positional="sinusoidal", dtype=F32)
    return lens, lens.init(rng), rng.integers(0, 10, (2, 6)), _normal(rng, (2, 6, 10), F32)


CASES = [
    *[_token_embedding(dt, lead) for dt in (F64, F32) for lead in ((2, 6), (13,), (2, 3, 4))],
    *[_positional(dt, lead) for dt in (F64, F32) for lead in ((2, 5), (7,), (2, 3, 9))],
    *[_sinusoidal(dt, lead) for dt in (F64, F32) for lead in ((2, 5), (16,))],
    *[_normalize(dt, lead) for dt in (F64, F32) for lead in ((5,), (2, 3))],
    *[_layer_norm(dt, lead) for dt in (F64, F32) for lead in ((5,), (2, 3), (2, 3, 4))],
    _layer_norm(F64, (4,), eps=1e-2),
    *[_dropout(dt, lead, train) for dt in (F64, F32) for lead in ((6, 5), (2, 3, 4)) for train in (False, True)],
    _dropout(F64, (40,), True, rate=0.9),
    *[_feed_forward(dt, lead) for dt in (F64, F32) for lead in ((5,), (2, 3), (2, 2, 3))],
    _feed_forward(F64, (2, 3), composed=True),
    _feed_forward(F32, (4,), composed=True),
    Case("remat(layer_norm)", _rematerialized),
    *[_cross_entropy(dt, lead) for dt in (F64, F32) for lead in ((2, 5), (7,))],
    *[_encoder_block(dt, norm, causal) for dt in (F64, F32) for norm, causal in (("post", False), ("pre", True))],
    _encoder_block(F64, "post", True, rate=0.2),
    *[_decoder_block(dt, norm) for dt in (F64, F32) for norm in ("post", "pre")],
    _encoder_decoder(F64),
    _encoder_decoder(F32),
    _lm_loss(F64),
    _lm_loss(F32, "sinusoidal", "pre"),
    Case("decoder_lm(f32, sinusoidal) logits", _lm_logits, tags=("ids",)),
]
