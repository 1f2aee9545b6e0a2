"""Every lens's forward and backward pass, fed random bad input.

For each lens a good ``(p, s)`` is built (with a batch of 0, 1 or 3 rows: an
empty batch is one of the edge cases), then one part of it is corrupted:
parameters, input, output delta or residue, by wrong shapes, ranks, dtypes
(ints, bools, complex, object, strings), NaN/inf, wrong tree structures, or
values of the wrong type. The outcome must be a correct result or one of
prelens's own errors (see ``_harness.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prelens
from prelens import (
    PreLens,
    add_l,
    alpha,
    backward,
    batch_n,
    beta,
    branch,
    chain,
    copy_l,
    dimap_m,
    dimap_p,
    dimap_s,
    faithful,
    forward,
    from_tamb,
    id_pre_lens,
    iso_lens,
    learn,
    nn,
    pre_compose,
    prod_lens,
    to_tamb,
    tri_compose,
    tri_tensor,
    vec_lens,
    vjp,
)
from prelens.core import parameter_free, tree_paths
from prelens.core import tree_map as tree_map_
from prelens.core._iso import (
    assoc_l,
    lunit_l,
    runit_l,
    skip_left_l,
    skip_right_l,
    sym_l,
    unassoc_l,
    unlunit_l,
    unrunit_l,
)
from prelens.core._tree import structure_mismatch
from prelens.faithful._branch import branch_t

from ._bad import mutate
from ._harness import attempt, close_to, deltas_fit

Array = np.ndarray
AnyLens = PreLens[Any, Any, Any, Any, Any, Any, Any, Any]


def examples(n: int) -> int:
    """``n`` examples under the ``ci`` profile (60 by default), scaled with the active profile."""
    return max(3, round(n * settings.default.max_examples / 60))


# ----------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """A lens, a maker of good ``(p, s)`` for a batch of ``b`` rows, and optionally a reference forward pass."""

    name: str
    build: Callable[[], Any]
    good: Callable[[Any, np.random.Generator, int], tuple[Any, Any]]
    ref: Callable[[Any, Any], Any] | None = None
    heavy: bool = False
    #: For lenses whose residue cannot know the input's shape (``bias`` keeps ``()``, the
    #: wiring passes deltas through): the exact ``(dp, ds)`` for a given ``da``. An accepted
    #: backward pass must equal it (otherwise its deltas must fit ``(p, s)``).
    bwd_ref: Callable[[Any], Any] | None = None
    #: For losses (a scalar output, so a scalar delta): the ``(p, s)`` a residue stands for. A
    #: corrupted residue that is still self-consistent is then judged against itself.
    residue_primal: Callable[[Any], tuple[Any, Any]] | None = None
    #: For lenses that carry part of the residue into a delta (``alpha``): ``check(dm, p, s)``
    #: for ``bwd(dm, da)``'s result, replacing the deltas-fit check.
    bwd_check: Callable[[Any, Any, Any], Callable[[Any], None]] | None = None
    #: The public names this case fuzzes (constructors, or the lens itself when ``build``
    #: returns a public lens unchanged): ``test_fuzz_coverage.py`` checks every one is fuzzed.
    covers: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return self.name


def _init(lens: Any, rng: np.random.Generator) -> Any:
    return lens.init(rng)


def rows(*tail: int, dtype: Any = np.float64) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    """Good input: the lens's own parameters and a batch ``(b, *tail)`` of normal floats."""
    return lambda lens, rng, b: (_init(lens, rng), rng.standard_normal((b, *tail)).astype(dtype))


def ids(vocab: int, t: int) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, b: (_init(lens, rng), rng.integers(0, vocab, (b, t)))


def _sigmoid(z: Array) -> Array:
    return np.asarray(1.0 / (1.0 + np.exp(-z.astype(np.float64)))).astype(z.dtype)


def _gelu(z: Array) -> Array:
    return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))


def _softmax(z: Array) -> Array:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _act(name: str | None) -> Callable[[Array], Array]:
    return {
        "tanh": np.tanh,
        "relu": lambda z: np.maximum(z, 0),
        "sigmoid": _sigmoid,
        "gelu": _gelu,
        None: lambda z: z,
    }[name]


def _dense_ref(act: str | None) -> Callable[[Any, Any], Any]:
    return lambda p, x: _act(act)(x @ p[0] + p[1])


def _ce_ref(y: Array, s: Array) -> Any:
    top = s.max(axis=-1, keepdims=True)
    lse = (np.log(np.exp(s - top).sum(axis=-1, keepdims=True)) + top)[..., 0]
    picked = np.take_along_axis(s, y[..., None], axis=-1)[..., 0]
    return (lse - picked).sum() / max(y.size, 1)


def _ln_ref(p: Any, x: Array) -> Array:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * p[0] + p[1]


def _pair_rows(a: tuple[int, ...], b: tuple[int, ...]) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, n: (_init(lens, rng), (rng.standard_normal((n, *a)), rng.standard_normal((n, *b))))


def _qkv_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    """``((Q (b, 3, 2), K (b, 4, 2)), V (b, 4, 3))`` for ``scaled_dot_product_attention(2)``."""
    q, k, v = (rng.standard_normal((b, t, d)) for t, d in ((3, 2), (4, 2), (4, 3)))
    return (), ((q, k), v)


def _sdpa_ref(p: Any, qkv: Any) -> Array:
    """What the four lenses it fuses give: scores, causal mask, softmax (non-finite rows and all), weighted sum."""
    stages = [nn.composed.attention_scores(2) @ prelens.id_pre_lens, nn.composed.causal_mask() @ prelens.id_pre_lens]
    twin = prelens.chain(*stages, nn.softmax @ prelens.id_pre_lens, nn.composed.weighted_sum())
    with np.errstate(all="ignore"):
        return twin.fwd([((), ())] * 3 + [()], qkv)[1]


def _loss_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return rng.standard_normal((b, 3)), rng.standard_normal((b, 3))


def _ce_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return rng.integers(0, 4, b), rng.standard_normal((b, 4))


def _tce_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    labels = rng.integers(-1, 7, (b, 4))
    return labels, rng.standard_normal((b, 4, 7))


def _r(rng: np.random.Generator, b: int, *tail: int) -> Any:
    return rng.standard_normal((b, *tail))


def _f(rng: np.random.Generator) -> float:
    return float(rng.standard_normal())


def _floats(param: Callable[[np.random.Generator], Any]) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    """Good input of a faithful scalar lens: ``param(rng)`` and a float (a ``D``; the batch is one)."""
    return lambda lens, rng, b: (param(rng), _f(rng))


def _vecs(n: int) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, b: (rng.standard_normal(n), rng.standard_normal(n))


def _vec_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return _init(lens, rng), rng.standard_normal(3)


def _faithful_batch(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return _init(lens, rng), rng.standard_normal(3)


def _tamb_mlp_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return faithful.init_mlp(3, [2, 1], rng), rng.standard_normal(3)


def _loss_l_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return [rng.standard_normal(2) for _ in range(b)], [rng.standard_normal(2) for _ in range(b)]


def _batch_loss_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    theta = faithful.init_mlp(3, [2, 1], rng)
    return ([rng.standard_normal(1) for _ in range(2)], theta), [rng.standard_normal(3) for _ in range(2)]


def _concat_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return (), [rng.standard_normal((b, 3, 2)), rng.standard_normal((b, 3, 1))]


def _list_of(n: int, tail: tuple[int, ...]) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, b: (_init(lens, rng), [rng.standard_normal((b, *tail)) for _ in range(n)])


def _scalar_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return _init(lens, rng), float(rng.standard_normal())


def _mask_ref(p: Any, s: Array) -> Array:
    hidden = nn.MASKED if s.dtype.itemsize >= 4 else np.finfo(s.dtype).min  # -1e30 is -inf in float16
    return np.where(np.tri(*s.shape[-2:], s.shape[-1] - s.shape[-2], dtype=bool), s, hidden)


def _split_ref(h: int) -> Callable[[Any, Any], Any]:
    def ref(p: Any, x: Array) -> Array:
        *lead, t, d = x.shape
        return x.reshape(*lead, t, h, d // h).swapaxes(-2, -3)

    return ref


def _merge_ref(p: Any, x: Array) -> Array:
    *lead, h, t, dk = x.shape
    return x.swapaxes(-3, -2).reshape(*lead, t, h * dk)


def _keyed_rows(n: int) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    """Good input of dropout in training: a key for this step and a batch of rows."""
    return lambda lens, rng, b: (
        nn.with_dropout(_init(lens, rng), int(rng.integers(2**63))),
        rng.standard_normal((b, n)),
    )


def _opt_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    """Good input of an optimiser lens: ``()`` and ``(params, state)``, the state one step old."""
    params = nn.dense(3, 2).init(rng)
    state = learn.init_state(lens, params)
    _, (params, state) = lens.bwd(lens.fwd((), (params, state))[0], tree_map_(lambda x: -x, params))
    return (), (params, state)


def _learner_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    params = nn.dense(3, 2).init(rng)
    return ((), (rng.standard_normal((b, 2)), (params, learn.momentum(0.1).init(params)))), rng.standard_normal((b, 3))


def _clipped(da: Any, max_norm: float) -> Any:
    """The reference clip: ``da`` scaled to the global norm ``max_norm`` when it is longer."""
    norm = math.sqrt(sum(float(np.sum(np.square(np.asarray(x, dtype=np.float64)))) for _, x in tree_paths(da)))
    if not math.isfinite(norm) or norm <= max_norm:
        return da
    return tree_map_(lambda x: x * (max_norm / norm), da)


CASES: list[Case] = [
    # the fast layers
    Case("linear", lambda: nn.linear(3, 2), rows(3), lambda w, x: x @ w, covers=(nn.linear,)),
    Case(
        "linear f32",
        lambda: nn.linear(3, 2, dtype=np.float32),
        rows(3, dtype=np.float32),
        lambda w, x: x @ w,
        covers=(nn.linear,),
    ),
    Case("linear data", lambda: nn.linear(3, 2, input_delta=False), rows(3), lambda w, x: x @ w, covers=(nn.linear,)),
    Case(  # register_rule hands back the lens it gives a rule to: that lens, run as it is
        "linear with a rule",
        lambda: prelens.tambara.register_rule(
            nn.linear(3, 2),
            prelens.tambara.Rule(
                lambda w, x: ((w, x), x @ w), lambda m, d: (m[1].T @ d, d @ m[0].T), lambda w, x: (0, 0)
            ),
        ),
        rows(3),
        lambda w, x: x @ w,
        covers=(prelens.tambara.register_rule,),
    ),
    Case(
        "bias",
        lambda: nn.bias(3),
        rows(3),
        lambda b, x: x + b,
        bwd_ref=lambda da: (da.reshape(-1, 3).sum(axis=0), da),
        covers=(nn.bias,),
    ),
    Case("dense tanh", lambda: nn.dense(3, 2), rows(3), _dense_ref("tanh"), covers=(nn.dense,)),
    Case(
        "dense relu f32",
        lambda: nn.dense(3, 2, "relu", dtype=np.float32),
        rows(3, dtype=np.float32),
        covers=(nn.dense,),
    ),
    Case(
        "dense logits data",
        lambda: nn.dense(3, 2, None, input_delta=False),
        rows(3),
        _dense_ref(None),
        covers=(nn.dense,),
    ),
    Case("mlp", lambda: nn.mlp(3, [4, 2]), rows(3), covers=(nn.mlp,)),
    Case(
        "mlp relu f32",
        lambda: nn.mlp(3, [4, 2], "relu", last_activation=None, dtype="float32"),
        rows(3, dtype=np.float32),
        covers=(nn.mlp,),
    ),
    # activations and losses
    *[
        Case(a, lambda a=a: nn.ACTIVATIONS[a], rows(4), lambda p, s, a=a: _act(a)(s), covers=(nn.ACTIVATIONS[a],))
        for a in ("tanh", "relu", "sigmoid", "gelu")
    ],
    Case("softmax", lambda: nn.softmax, rows(4), lambda p, s: _softmax(s), covers=(nn.softmax,)),
    Case(
        "squared_distance",
        lambda: nn.squared_distance,
        _loss_good,
        lambda g, s: 0.5 * ((s - g) ** 2).sum(),
        residue_primal=lambda m: (m[0], m[1]),
        covers=(nn.squared_distance,),
    ),
    Case(
        "mse",
        lambda: nn.mse,
        _loss_good,
        lambda g, s: ((s - g) ** 2).sum() / max(s.size, 1),
        residue_primal=lambda m: (m, m),  # the difference s − g: the shape of both
        covers=(nn.mse,),
    ),
    Case(
        "softmax_cross_entropy",
        lambda: nn.softmax_cross_entropy,
        _ce_good,
        _ce_ref,
        residue_primal=lambda m: (m[1], m[0]),
        covers=(nn.softmax_cross_entropy,),
    ),
    Case(
        "token_cross_entropy",
        lambda: nn.token_cross_entropy(),
        _tce_good,
        residue_primal=lambda m: (m[1], m[0]),
        covers=(nn.token_cross_entropy,),
    ),
    # embeddings and norms
    Case(
        "token_embedding", lambda: nn.token_embedding(5, 3), ids(5, 4), lambda t, i: t[i], covers=(nn.token_embedding,)
    ),
    Case(
        "positional_embedding",
        lambda: nn.positional_embedding(6, 3),
        rows(4, 3),
        lambda t, x: x + t[: x.shape[-2]],
        covers=(nn.positional_embedding,),
    ),
    Case(
        "sinusoidal_encoding",
        lambda: nn.sinusoidal_encoding(4),
        rows(3, 4),
        lambda p, x: x + nn._embedding.sinusoidal_table(x.shape[-2], 4, x.dtype),
        covers=(nn.sinusoidal_encoding,),
    ),
    Case("layer_norm", lambda: nn.layer_norm(4), rows(4), _ln_ref, covers=(nn.layer_norm,)),
    Case(
        "normalize",
        lambda: nn.normalize([1.0, -2.0, 0.5, 3.0], [2.0, 0.5, 1.0, 4.0]),
        rows(4),
        lambda p, x: (x - np.array([1.0, -2.0, 0.5, 3.0])) / np.array([2.0, 0.5, 1.0, 4.0]),
        covers=(nn.normalize,),
    ),
    Case(
        "normalize f32",
        lambda: nn.normalize([1.0, -2.0], [2.0, 0.5], dtype=np.float32),
        rows(2, dtype=np.float32),
        covers=(nn.normalize,),
    ),
    Case(
        "layer_norm f32", lambda: nn.layer_norm(4, dtype=np.float32), rows(4, dtype=np.float32), covers=(nn.layer_norm,)
    ),
    # attention's pieces
    Case(
        "attention_scores",
        lambda: nn.composed.attention_scores(2),
        _pair_rows((3, 2), (4, 2)),
        lambda p, qk: qk[0] @ qk[1].swapaxes(-1, -2) / math.sqrt(2),
        covers=(nn.composed.attention_scores,),
    ),
    Case(
        "causal_mask",
        nn.composed.causal_mask,
        rows(3, 3),
        _mask_ref,
        bwd_ref=lambda da: ((), np.where(np.tri(3, 3, dtype=bool), da, 0.0).astype(da.dtype)),
        covers=(nn.composed.causal_mask,),
    ),
    Case(
        "weighted_sum",
        nn.composed.weighted_sum,
        _pair_rows((3, 4), (4, 2)),
        lambda p, av: av[0] @ av[1],
        covers=(nn.composed.weighted_sum,),
    ),
    Case(
        "scaled_dot_product_attention",
        lambda: nn.scaled_dot_product_attention(2, causal=True),
        _qkv_good,
        _sdpa_ref,
        covers=(nn.scaled_dot_product_attention,),
    ),
    Case(
        "split_heads", lambda: nn.composed.split_heads(2), rows(3, 4), _split_ref(2), covers=(nn.composed.split_heads,)
    ),
    Case(
        "merge_heads", lambda: nn.composed.merge_heads(2), rows(2, 3, 2), _merge_ref, covers=(nn.composed.merge_heads,)
    ),
    Case(
        "concat_heads",
        lambda: nn.composed.concat_heads(2),
        _concat_good,
        lambda p, xs: np.concatenate(xs, axis=-1),
        covers=(nn.composed.concat_heads,),
    ),
    # attention and transformers
    Case(
        "attention_head",
        lambda: nn.composed.attention_head(4, 2, causal=True),
        rows(3, 4),
        heavy=True,
        covers=(nn.composed.attention_head,),
    ),
    Case(
        "multi_head_attention",
        lambda: nn.multi_head_attention(4, 2, causal=True),
        rows(3, 4),
        heavy=True,
        covers=(nn.multi_head_attention,),
    ),
    Case(
        "multi_head_attention_faithful",
        lambda: nn.composed.multi_head_attention(4, 2),
        rows(3, 4),
        heavy=True,
        covers=(nn.composed.multi_head_attention,),
    ),
    Case(
        "cross_attention",
        lambda: nn.cross_attention(4, 2),
        _pair_rows((3, 4), (5, 4)),
        heavy=True,
        covers=(nn.cross_attention,),
    ),
    *[
        Case(
            make.__name__,
            lambda make=make: make(nn.dense(3, 3)),
            rows(3),
            lambda p, x: x + np.tanh(x @ p[0] + p[1]),
            covers=(make,),
        )
        for make in (nn.residual, nn.composed.residual)
    ],
    Case("feed_forward", lambda: nn.feed_forward(4, 8), rows(3, 4), covers=(nn.feed_forward,)),
    Case(
        "feed_forward_composed", lambda: nn.composed.feed_forward(4, 8), rows(3, 4), covers=(nn.composed.feed_forward,)
    ),
    Case(
        "encoder_block",
        lambda: nn.encoder_block(4, 2, 8, norm="pre"),
        rows(3, 4),
        heavy=True,
        covers=(nn.encoder_block,),
    ),
    Case(
        "decoder_block",
        lambda: nn.decoder_block(4, 2, 8),
        _pair_rows((3, 4), (5, 4)),
        heavy=True,
        covers=(nn.decoder_block,),
    ),
    Case("decoder_lm", lambda: nn.decoder_lm(7, 4, 2, 8, 1, 6), ids(7, 4), heavy=True, covers=(nn.decoder_lm,)),
    Case(
        "encoder_decoder",
        lambda: nn.encoder_decoder(5, 7, 4, 2, 8, 1, 6),
        lambda lens, rng, b: (lens.init(rng), (rng.integers(0, 5, (b, 4)), rng.integers(0, 7, (b, 3)))),
        heavy=True,
        covers=(nn.encoder_decoder,),
    ),
    # the faithful network
    Case("linear_l", lambda: faithful.linear_l(3), _vec_good, lambda p, s: float(p @ s), covers=(faithful.linear_l,)),
    Case("bias_l", lambda: faithful.bias_l, _scalar_good, lambda p, s: float(p) + float(s), covers=(faithful.bias_l,)),
    Case("activ_l", lambda: faithful.activ_l, _scalar_good, lambda p, s: math.tanh(s), covers=(faithful.activ_l,)),
    Case(
        "neuron_l",
        lambda: faithful.neuron_l(3),
        _vec_good,
        lambda p, s: math.tanh(float(p.bias) + float(np.asarray(p.weight, float) @ np.asarray(s, float))),
        covers=(faithful.neuron_l,),
    ),
    Case("layer_l", lambda: faithful._network.layer_l(3, 2), _vec_good, covers=(faithful._network.layer_l,)),
    Case(
        "make_mlp_l",
        lambda: faithful._network.make_mlp_l(3, [2, 1]),
        _faithful_batch,
        covers=(faithful._network.make_mlp_l,),
    ),
    Case("make_mlp (TriLens)", lambda: faithful.make_mlp(3, [2, 1]), _tamb_mlp_good, covers=(faithful.make_mlp,)),
    Case(
        "loss_l",
        lambda: faithful.loss_l,
        _loss_l_good,
        lambda g, s: 0.5 * sum(float(((x - y) ** 2).sum()) for x, y in zip(s, g)),
        residue_primal=lambda m: (m[0], m[1]),
        covers=(faithful.loss_l,),
    ),
    Case(
        "batch_loss_l",
        lambda: faithful._train.batch_loss_l(faithful.make_mlp(3, [2, 1]), 2),
        _batch_loss_good,
        covers=(faithful._train.batch_loss_l,),
    ),
    # the core combinators
    Case(
        "id_pre_lens", lambda: id_pre_lens, rows(3), lambda p, s: s, bwd_ref=lambda da: ((), da), covers=(id_pre_lens,)
    ),
    Case("copy_l", lambda: copy_l, rows(3), bwd_ref=lambda da: ((), da[0] + da[1]), covers=(copy_l,)),
    Case(
        "add_l",
        lambda: add_l,
        _pair_rows((3,), (3,)),
        lambda p, s: s[0] + s[1],
        bwd_ref=lambda da: ((), (da, da)),
        covers=(add_l,),
    ),
    Case("sym_l", lambda: sym_l, _pair_rows((3,), (2,)), bwd_ref=lambda da: ((), (da[1], da[0])), covers=(sym_l,)),
    Case(
        "assoc_l",
        lambda: assoc_l,
        lambda lens, rng, b: ((), ((rng.standard_normal((b, 2)), rng.standard_normal(b)), rng.standard_normal(3))),
        bwd_ref=lambda da: ((), ((da[0], da[1][0]), da[1][1])),
        covers=(assoc_l,),
    ),
    Case("branch", lambda: branch(2), rows(3), bwd_ref=lambda da: ((), da[0] + da[1]), covers=(branch,)),
    Case("vec_lens", lambda: vec_lens(2, nn.dense(3, 2)), _list_of(2, (3,)), covers=(vec_lens,)),
    Case(
        "batch_n",
        lambda: batch_n(2, nn.dense(3, 2)),
        lambda lens, rng, b: (lens.init(rng), [rng.standard_normal((b, 3)) for _ in range(2)]),
        covers=(batch_n,),
    ),
    Case("chain", lambda: chain(nn.dense(3, 4), nn.tanh, nn.dense(4, 2, None)), rows(3), covers=(chain,)),
    # recurrence
    Case("rnn", lambda: nn.rnn(2, 3, nonlinearity="relu"), rows(4, 2), covers=(nn.rnn,)),
    Case("gru", lambda: nn.gru(2, 3), rows(4, 2), covers=(nn.gru,)),
    Case("lstm", lambda: nn.lstm(2, 3), rows(4, 2), covers=(nn.lstm,)),
    Case("bidirectional", lambda: nn.bidirectional(nn.gru(1, 2)), rows(4, 1), covers=(nn.bidirectional,)),
    Case("rnn_cell", lambda: nn.composed.rnn_cell(2, 3), _pair_rows((3,), (2,)), covers=(nn.composed.rnn_cell,)),
    Case("gru_cell", lambda: nn.composed.gru_cell(2, 3), _pair_rows((3,), (2,)), covers=(nn.composed.gru_cell,)),
    Case(
        "lstm_cell",
        lambda: nn.composed.lstm_cell(2, 3),
        lambda lens, rng, b: (
            lens.init(rng),
            ((rng.standard_normal((b, 3)), rng.standard_normal((b, 3))), rng.standard_normal((b, 2))),
        ),
        covers=(nn.composed.lstm_cell,),
    ),
    Case(
        "scan",
        lambda: prelens.scan(nn.composed.gru_cell(2, 3), axis=1),
        _pair_rows((3,), (4, 2)),
        covers=(prelens.scan,),
    ),
    Case(
        "scan_t",
        lambda: prelens.tambara.scan_t(to_tamb(nn.composed.gru_cell(2, 3)), axis=1),
        lambda lens, rng, b: (nn.composed.gru_cell(2, 3).init(rng), (_r(rng, b, 3), _r(rng, b, 4, 2))),
        covers=(prelens.tambara.scan_t,),
    ),
    Case(
        "scan_t n=2",
        lambda: prelens.tambara.scan_t(to_tamb(nn.composed.rnn_cell(2, 3)), n=2),
        lambda lens, rng, b: (nn.composed.rnn_cell(2, 3).init(rng), (_r(rng, b, 3), [_r(rng, b, 2), _r(rng, b, 2)])),
        covers=(prelens.tambara.scan_t,),
    ),
    # convolution and pooling: each fast lens and its twin by composition
    *[
        Case(
            f"{where} conv1d",
            lambda make=make: make(2, 4, 3, stride=2, padding=1, groups=2),
            rows(5, 2),
            covers=(make,),
        )
        for where, make in (("nn", nn.conv1d), ("composed", nn.composed.conv1d))
    ],
    *[
        Case(
            f"{where} conv2d",
            lambda make=make: make(2, 3, (2, 3), padding=(1, 0), dilation=(1, 2)),
            rows(3, 5, 2),
            covers=(make,),
        )
        for where, make in (("nn", nn.conv2d), ("composed", nn.composed.conv2d))
    ],
    *[
        Case(f"{where} {name} {dims}", lambda make=make, k=k: make(k, padding=1), rows(*shape), covers=(make,))
        for where, name, make in (
            ("nn", "max_pool", nn.max_pool),
            ("nn", "avg_pool", nn.avg_pool),
            ("composed", "max_pool", nn.composed.max_pool),
            ("composed", "avg_pool", nn.composed.avg_pool),
        )
        for dims, k, shape in (("1d", 2, (5, 3)), ("2d", (2, 3), (4, 5, 2)))
    ],
    Case("patches", lambda: nn.composed.patches(3, stride=2, padding=1), rows(5, 2), covers=(nn.composed.patches,)),
    Case("patches 2d", lambda: nn.composed.patches((2, 2)), rows(3, 3, 2), covers=(nn.composed.patches,)),
    Case("window_max", lambda: nn.composed.window_max(), rows(4, 3), covers=(nn.composed.window_max,)),
    Case(
        "window_mean",
        lambda: nn.composed.window_mean(),
        rows(4, 3),
        lambda p, s: s.mean(axis=-2),
        covers=(nn.composed.window_mean,),
    ),
    Case(
        "flatten",
        lambda: nn.flatten(),
        rows(3, 2),
        lambda p, s: s.reshape(len(s), math.prod(s.shape[1:])),
        covers=(nn.flatten,),
    ),
    Case(">>", lambda: nn.dense(3, 2) >> nn.sigmoid, rows(3), covers=(pre_compose,)),
    Case("@", lambda: nn.dense(3, 2) @ nn.relu, _pair_rows((3,), (2,)), covers=(prod_lens,)),
    Case(
        "from_tamb(to_tamb)",
        lambda: from_tamb(to_tamb(nn.dense(3, 2))),
        lambda lens, rng, b: (nn.dense(3, 2).init(rng), rng.standard_normal((b, 3))),
        _dense_ref("tanh"),
        covers=(
            from_tamb,
            to_tamb,
        ),
    ),
    # the structural isos as lenses (assoc_l and sym_l above)
    Case(
        "lunit_l",
        lambda: lunit_l,
        lambda lens, rng, b: ((), ((), rng.standard_normal((b, 3)))),
        lambda p, s: s[1],
        bwd_ref=lambda da: ((), ((), da)),
        covers=(lunit_l,),
    ),
    Case(
        "unlunit_l",
        lambda: unlunit_l,
        rows(3),
        lambda p, s: ((), s),
        bwd_ref=lambda da: ((), da[1]),
        covers=(unlunit_l,),
    ),
    Case(
        "runit_l",
        lambda: runit_l,
        lambda lens, rng, b: ((), (rng.standard_normal((b, 3)), ())),
        lambda p, s: s[0],
        bwd_ref=lambda da: ((), (da, ())),
        covers=(runit_l,),
    ),
    Case(
        "unrunit_l",
        lambda: unrunit_l,
        rows(3),
        lambda p, s: (s, ()),
        bwd_ref=lambda da: ((), da[0]),
        covers=(unrunit_l,),
    ),
    Case(
        "unassoc_l",
        lambda: unassoc_l,
        lambda lens, rng, b: ((), (_r(rng, b, 2), (_r(rng, b), _r(rng, b, 3)))),
        lambda p, s: ((s[0], s[1][0]), s[1][1]),
        bwd_ref=lambda da: ((), (da[0][0], (da[0][1], da[1]))),
        covers=(unassoc_l,),
    ),
    Case(
        "skip_left_l",
        lambda: skip_left_l,
        lambda lens, rng, b: ((), ((_r(rng, b, 2), _r(rng, b)), _r(rng, b, 3))),
        lambda p, s: ((s[0][0], s[1]), s[0][1]),
        bwd_ref=lambda da: ((), ((da[0][0], da[1]), da[0][1])),
        covers=(skip_left_l,),
    ),
    Case(
        "skip_right_l",
        lambda: skip_right_l,
        lambda lens, rng, b: ((), (_r(rng, b, 2), (_r(rng, b), _r(rng, b, 3)))),
        lambda p, s: (s[1][0], (s[0], s[1][1])),
        bwd_ref=lambda da: ((), (da[1][0], (da[0], da[1][1]))),
        covers=(skip_right_l,),
    ),
    # lenses made by the Tambara structure maps and the lens-making helpers
    Case(
        "alpha",
        lambda: alpha(nn.dense(3, 2)),
        lambda lens, rng, b: (lens.init(rng), (_r(rng, b, 5), _r(rng, b, 3))),
        lambda p, s: _dense_ref("tanh")(p, s[1]),
        bwd_check=lambda dm, p, s: _alpha_fit(dm, p, s),
        covers=(alpha,),
    ),
    Case(
        "beta",
        lambda: beta(add_l),
        lambda lens, rng, b: (((), _r(rng, b, 3)), _r(rng, b, 3)),
        lambda p, s: p[1] + s,
        bwd_ref=lambda da: (((), da), da),  # add_l hands the delta to both summands, whatever it is
        covers=(beta,),
    ),
    Case(
        "dimap_s",
        lambda: dimap_s(prelens.sym, prelens.sym, nn.composed.weighted_sum()),
        lambda lens, rng, b: ((), (_r(rng, b, 4, 2), _r(rng, b, 3, 4))),
        lambda p, s: s[1] @ s[0],
        covers=(dimap_s, prelens.sym),
    ),
    Case(
        "dimap_p",
        lambda: dimap_p(prelens.unrunit, prelens.runit, id_pre_lens >> nn.dense(3, 2)),
        lambda lens, rng, b: (nn.dense(3, 2).init(rng), _r(rng, b, 3)),
        _dense_ref("tanh"),
        covers=(dimap_p, prelens.unrunit, prelens.runit),
    ),
    Case(
        "dimap_m",
        lambda: dimap_m(prelens.unlunit, prelens.lunit, nn.dense(3, 2)),
        rows(3),
        _dense_ref("tanh"),
        covers=(dimap_m, prelens.unlunit, prelens.lunit),
    ),
    Case(
        "iso_lens",
        lambda: iso_lens("negate", np.negative, np.negative),
        rows(3),
        lambda p, s: np.negative(s),
        bwd_ref=lambda da: ((), np.negative(da)),
        covers=(iso_lens,),
    ),
    Case(
        "parameter_free",
        lambda: parameter_free("tanh'", lambda s: nn.tanh.fwd((), s), lambda m, da: nn.tanh.bwd(m, da)[1]),
        rows(3),
        lambda p, s: np.tanh(s),
        covers=(parameter_free,),
    ),
    Case(
        "pointwise",
        lambda: nn.pointwise("softplus", lambda z: np.logaddexp(z, 0), lambda z, da: da / (1 + np.exp(-z))),
        rows(3),
        lambda p, s: np.logaddexp(s, 0),
        covers=(nn.pointwise,),
    ),
    Case(
        "remat",
        lambda: prelens.nn.remat(nn.dense(3, 2)),
        rows(3),
        _dense_ref("tanh"),
        covers=(prelens.nn.remat,),
    ),
    # TriLenses, run through from_tamb
    Case(
        "branch_t",
        lambda: branch_t(2),
        lambda lens, rng, b: ((), _r(rng, b, 3)),
        lambda p, s: [s, s],
        bwd_ref=lambda da: ((), da[0] + da[1]),
        covers=(branch_t,),
    ),
    Case(
        "tri_compose",
        lambda: tri_compose(to_tamb(nn.dense(3, 2)), to_tamb(nn.tanh)),
        lambda lens, rng, b: (((), nn.dense(3, 2).init(rng)), _r(rng, b, 3)),
        lambda p, s: np.tanh(_dense_ref("tanh")(p[1], s)),
        covers=(tri_compose,),
    ),
    Case(
        "tri_tensor",
        lambda: tri_tensor(to_tamb(nn.dense(3, 2)), to_tamb(nn.tanh)),
        lambda lens, rng, b: ((nn.dense(3, 2).init(rng), ()), (_r(rng, b, 3), _r(rng, b, 4))),
        lambda p, s: (_dense_ref("tanh")(p[0], s[0]), np.tanh(s[1])),
        covers=(tri_tensor,),
    ),
    # the faithful pieces: TriLenses (linear_t ... layer) and affine_l
    Case("linear_t", lambda: faithful.linear_t(3), _vecs(3), lambda p, s: float(p @ s), covers=(faithful.linear_t,)),
    Case("bias_t", lambda: faithful.bias_t, _floats(_f), lambda p, s: float(p) + float(s), covers=(faithful.bias_t,)),
    Case(
        "activ_t",
        lambda: faithful.activ_t,
        _floats(lambda rng: ()),
        lambda p, s: math.tanh(s),
        covers=(faithful.activ_t,),
    ),
    Case(
        "affine_t",
        lambda: faithful.affine_t(3),
        lambda lens, rng, b: ((_f(rng), rng.standard_normal(3)), rng.standard_normal(3)),
        lambda p, s: float(p[0]) + float(np.asarray(p[1], float) @ np.asarray(s, float)),
        covers=(faithful.affine_t,),
    ),
    Case(
        "neuron_t",
        lambda: faithful.neuron_t(3),
        lambda lens, rng, b: (faithful.init_para(3, rng), rng.standard_normal(3)),
        lambda p, s: math.tanh(float(p.bias) + float(np.asarray(p.weight, float) @ np.asarray(s, float))),
        covers=(faithful.neuron_t,),
    ),
    Case(
        "layer",
        lambda: faithful.layer(3, 2),
        lambda lens, rng, b: (faithful.init_mlp(3, [2], rng)[0], rng.standard_normal(3)),
        lambda p, s: [math.tanh(float(q.bias) + float(np.asarray(q.weight, float) @ np.asarray(s, float))) for q in p],
        covers=(faithful.layer,),
    ),
    Case(
        "affine_l",
        lambda: faithful._network.affine_l(3),
        _vec_good,
        lambda p, s: float(p[0]) + float(np.asarray(p[1], float) @ np.asarray(s, float)),
        covers=(faithful._network.affine_l,),
    ),  # learning as optics (issue 14): dropout, optimiser lenses, the learning rate, penalties, the learner
    Case(
        "dropout eval",
        lambda: nn.dropout(0.3),
        rows(3),
        lambda p, s: s,
        bwd_ref=lambda da: (nn.DropoutKey(()), da),
        covers=(nn.dropout,),
    ),
    Case(
        "dropout train",
        lambda: nn.dropout(0.3),
        _keyed_rows(3),
        # ``()`` is evaluation's residue: read as such, the key's delta is evaluation's
        bwd_check=lambda dm, p, s: _either(deltas_fit(p, s), deltas_fit(nn.DropoutKey(()), s)),
        covers=(nn.dropout,),
    ),
    *[
        Case(f"{name} lens", make, _opt_good, covers=(fn,))
        for name, make, fn in (
            ("sgd", lambda: learn.sgd(0.1).lens, learn.sgd),
            ("momentum", lambda: learn.momentum(0.1).lens, learn.momentum),
            ("nesterov", lambda: learn.momentum(learn.warmup_cosine(0.1, 2, 9), nesterov=True).lens, learn.momentum),
            ("adagrad", lambda: learn.adagrad(0.1).lens, learn.adagrad),
            ("rmsprop", lambda: learn.rmsprop(0.1).lens, learn.rmsprop),
            ("adam", lambda: learn.adam(0.1).lens, learn.adam),
            ("adamw", lambda: learn.adamw(learn.one_cycle(0.1, 5)).lens, learn.adamw),
        )
    ],
    Case(
        "learning_rate",
        lambda: learn.learning_rate(0.1),
        lambda lens, rng, b: ((), float(rng.standard_normal())),
        lambda p, s: s,
        covers=(learn.learning_rate,),
    ),
    Case(
        "clip_by_global_norm lens",
        lambda: learn.clip_by_global_norm(1.0),
        lambda lens, rng, b: ((), nn.dense(3, 2).init(rng)),
        lambda p, s: s,
        bwd_ref=lambda da: ((), _clipped(da, 1.0)),
        covers=(learn.clip_by_global_norm,),
    ),
    Case(
        "l2",
        lambda: learn.l2(0.1),
        lambda lens, rng, b: (nn.dense(3, 2).init(rng), float(rng.standard_normal())),
        lambda p, s: s + 0.05 * sum(float(np.sum(np.square(x))) for _, x in tree_paths(p)),
        residue_primal=lambda m: (m, 0.0),  # the residue is the parameters
        covers=(learn.l2,),
    ),
    Case(
        "penalised",
        lambda: learn.penalised(nn.dense(3, 2), nn.mse, learn.l2(0.1)),
        lambda lens, rng, b: ((rng.standard_normal((b, 2)), nn.dense(3, 2).init(rng)), rng.standard_normal((b, 3))),
        covers=(learn.penalised,),
    ),
    Case(
        "parameters_as_input",
        lambda: learn.parameters_as_input(nn.dense(3, 2)),
        lambda lens, rng, b: ((), (nn.dense(3, 2).init(rng), rng.standard_normal((b, 3)))),
        lambda p, s: np.tanh(s[1] @ s[0][0] + s[0][1]),
        covers=(learn.parameters_as_input,),
    ),
    Case(
        "reparameterise",
        lambda: learn.reparameterise(nn.dense(3, 2), learn.adam(0.1)),
        rows(3),
        covers=(learn.reparameterise,),
    ),
    Case(
        "learner",
        lambda: learn.learner(nn.dense(3, 2), nn.mse, learn.momentum(0.1), penalty=learn.l2(0.01)),
        _learner_good,
        covers=(learn.learner,),
    ),
]


def _alpha_fit(dm: Any, p: Any, s: Any) -> Callable[[Any], None]:
    """``alpha``'s deltas: ``(dp, (m1, ds))``, its residue's ``m1`` handed back as it is, ``(dp, ds)`` fitting."""

    def check(out: Any) -> None:
        assert isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], tuple) and len(out[1]) == 2
        # alpha keeps its own copy of m1 (the residue never aliases the caller's input): equal, not identical
        got, want = [x for _, x in tree_paths(out[1][0])], [x for _, x in tree_paths(dm[0])]
        same = len(got) == len(want) and all(_same_leaf(x, y) for x, y in zip(got, want))
        assert same, "alpha: the residue's m1 was not handed back as the delta of the input's m1"
        deltas_fit(p, s[1])((out[0], out[1][1]))

    return check


def _runner(lens: Any) -> Any:
    """The pre-lens to call ``fwd``/``bwd`` on (a TriLens runs through ``from_tamb``)."""
    return from_tamb(lens) if not isinstance(lens, PreLens) else lens


def _good_da(a: Any) -> Any:
    """A good output delta for the output ``a``: ones shaped like every leaf; ``1.0`` for a scalar."""
    if isinstance(a, np.ndarray):
        return np.ones_like(a)
    if isinstance(a, (float, np.floating)):
        return 1.0
    if isinstance(a, tuple):
        return tuple(_good_da(x) for x in a)
    if isinstance(a, list):
        return [_good_da(x) for x in a]
    return a


def _params_for(case: Case) -> list[Any]:
    return [pytest.param(c, id=c.name, marks=[]) for c in CASES if c.heavy == (case is not None)]


LIGHT = [pytest.param(c, id=c.name) for c in CASES if not c.heavy]
HEAVY = [pytest.param(c, id=c.name) for c in CASES if c.heavy]


def _forward_case(case: Case, data: st.DataObject) -> None:
    lens = case.build()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    b = data.draw(st.sampled_from([0, 1, 3]), label="batch")
    p, s = case.good(lens, rng, b)
    target = data.draw(st.sampled_from(["p", "s"] if not _is_unit(p) else ["s", "s", "p"]), label="target")
    if target == "p":
        p, how = mutate(data, p, "p")
    else:
        s, how = mutate(data, s, "s")
    how = f"{case.name}: {how} (batch {b})"
    via = data.draw(st.sampled_from(["fwd", "forward", "vjp"]), label="via")
    run = _runner(lens)

    def thunk() -> Any:
        if via == "fwd":
            return run.fwd(p, s)[1]
        if via == "forward":
            return forward(lens, p, s)
        return vjp(lens, p, s)[0]

    check = None
    if case.ref is not None:
        ref = case.ref

        def check(a: Any) -> None:
            try:
                want = ref(p, s)
            except Exception as exc:  # the lens took what its own mathematics cannot
                raise AssertionError(f"accepted, but the reference fails: {type(exc).__name__}: {exc}") from exc
            close_to(want, rtol=1e-5, atol=1e-6)(a)

    attempt(f"{how}, via {via}", thunk, inputs=(p, s), check=check)


def _backward_case(case: Case, data: st.DataObject) -> None:
    lens = case.build()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    b = data.draw(st.sampled_from([0, 1, 3]), label="batch")
    p, s = case.good(lens, rng, b)
    run = _runner(lens)
    m, a = run.fwd(p, s)
    da = _good_da(a)
    target = data.draw(st.sampled_from(["da", "da", "m"]), label="target")
    if target == "da":
        da, how = mutate(data, da, "da")
        dm = m
        primal = None
    else:
        dm, how, primal = _bad_residue(data, case, lens, rng, b, m)
    how = f"{case.name}: {how} (batch {b})"
    check = deltas_fit(p, s) if case.bwd_ref is None else _equals_bwd_ref(case.bwd_ref, da)
    if primal is not None and case.bwd_ref is None:  # a genuine residue of another batch
        check = _either(deltas_fit(p, s), deltas_fit(*primal))
    elif target == "m" and case.residue_primal is not None:  # a loss: the residue is all it knows
        check = _residue_fit(case.residue_primal, dm)
    if case.bwd_check is not None:
        check = case.bwd_check(dm, *(primal or (p, s)))
    attempt(how, lambda: run.bwd(dm, da), inputs=(dm, da), check=check)
    # the same through the trace (which checks a lens's deltas the first time it runs)
    if target == "da":
        attempt(f"{how}, via vjp", lambda: vjp(lens, p, s)[1](da), inputs=(p, s, da), check=check)
        attempt(f"{how}, via backward", lambda: backward(lens, p, s, da), inputs=(p, s, da), check=check)


def _same_leaf(x: Any, y: Any) -> bool:
    """Equal leaves: numbers within round-off (NaN equal to NaN), anything else by identity or ``==``."""
    if x is y:
        return True
    ax, ay = np.asarray(x), np.asarray(y)
    if ax.dtype.kind in "biufc" and ay.dtype.kind in "biufc":
        return ax.shape == ay.shape and bool(np.allclose(ax, ay, rtol=1e-12, equal_nan=True))
    return ax.shape == ay.shape and bool(np.all(ax == ay))


def _residue_fit(primal_of: Callable[[Any], tuple[Any, Any]], dm: Any) -> Callable[[Any], None]:
    def check(out: Any) -> None:
        try:
            p, s = primal_of(dm)
        except Exception as exc:
            raise AssertionError(f"accepted a residue that is not one: {type(exc).__name__}: {exc}") from exc
        deltas_fit(p, s)(out)

    return check


def _either(one: Callable[[Any], None], other: Callable[[Any], None]) -> Callable[[Any], None]:
    """Deltas that fit the residue's batch or the delta's batch (a residue may not record the batch)."""

    def check(out: Any) -> None:
        try:
            one(out)
        except AssertionError:
            other(out)

    return check


def _equals_bwd_ref(bwd_ref: Callable[[Any], Any], da: Any) -> Callable[[Any], None]:
    def check(out: Any) -> None:
        try:
            want = bwd_ref(da)
        except Exception as exc:
            raise AssertionError(f"accepted, but the reference fails: {type(exc).__name__}: {exc}") from exc
        found = structure_mismatch(out, want, shapes=True)
        assert found is None, f"(dp, ds) differs from the reference: {found}"
        for (path, x), (_, y) in zip(tree_paths(out), tree_paths(want)):
            assert _same_leaf(x, y), f"(dp, ds) differs from the reference at {path}"

    return check


def _bad_residue(
    data: st.DataObject, case: Case, lens: Any, rng: np.random.Generator, b: int, m: Any
) -> tuple[Any, str, tuple[Any, Any] | None]:
    """A residue that ``fwd`` did not make (corrupted), or one of a batch of another size (with its ``(p, s)``)."""
    if data.draw(st.booleans(), label="other batch"):
        p2, s2 = case.good(lens, rng, b + 2)
        return _runner(lens).fwd(p2, s2)[0], f"residue of a batch of {b + 2}", (p2, s2)
    bad, how = mutate(data, m, "m")
    return bad, how, None


def _is_unit(p: Any) -> bool:
    return isinstance(p, tuple) and len(p) == 0


@pytest.mark.parametrize("case", LIGHT)
@settings(max_examples=examples(60))
@given(data=st.data())
def test_forward_of_bad_input(case: Case, data: st.DataObject) -> None:
    _forward_case(case, data)


@pytest.mark.parametrize("case", LIGHT)
@settings(max_examples=examples(60))
@given(data=st.data())
def test_backward_of_bad_input(case: Case, data: st.DataObject) -> None:
    _backward_case(case, data)


@pytest.mark.parametrize("case", HEAVY)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_forward_of_bad_input_heavy(case: Case, data: st.DataObject) -> None:
    _forward_case(case, data)


@pytest.mark.parametrize("case", HEAVY)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_backward_of_bad_input_heavy(case: Case, data: st.DataObject) -> None:
    _backward_case(case, data)
