"""Every public constructor, fed bad arguments: sizes, dtypes, names, flags, lenses and seeds.

A constructor either builds something usable (its ``repr`` works, and for a lens
its ``init`` makes parameters) or raises one of prelens's own errors. The same
machinery (:class:`Ctor`, :func:`run_case`) fuzzes the public functions that take
data in ``test_fuzz_functions.py``.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prelens
import prelens.io
import prelens.learn
import prelens.tambara
import prelens.train
from prelens import datasets, faithful, learn, nn

from ._bad import mutate
from ._harness import attempt
from .test_fuzz_lenses import examples

#: Where the CheckpointBest case writes (a fresh directory).
_TMP_BEST = os.path.join(tempfile.mkdtemp(prefix="prelens-fuzz-"), "best.npz")

_MNIST1D_CACHE: list[str] = []


def _load_mnist1d(**kw: Any) -> Any:
    """``load_mnist1d`` reading a cache of the right shapes in a fresh directory (never the user's, never generated)."""
    if not _MNIST1D_CACHE:
        where = tempfile.mkdtemp(prefix="prelens-fuzz-cache-")
        rng = np.random.default_rng(0)
        np.savez(
            os.path.join(where, datasets.mnist1d.MNIST1D_FILE),
            x_train=rng.standard_normal((4000, 40)),
            y_train=rng.integers(0, 10, 4000),
            x_test=rng.standard_normal((1000, 40)),
            y_test=rng.integers(0, 10, 1000),
            t=np.linspace(0.0, 1.0, 40),
        )
        _MNIST1D_CACHE.append(where)
    before = os.environ.get("PRELENS_CACHE")
    os.environ["PRELENS_CACHE"] = _MNIST1D_CACHE[0]
    try:
        return datasets.load_mnist1d(**kw)
    finally:
        if before is None:
            os.environ.pop("PRELENS_CACHE", None)
        else:
            os.environ["PRELENS_CACHE"] = before


#: Bad values for any argument (kept small: no size here allocates much memory).
GENERAL: list[Any] = [
    None,
    "x",
    "",
    -1,
    0,
    1.5,
    2.0,
    True,
    False,
    1j,
    [],
    (),
    {},
    [2],
    np.int64(-3),
    np.float32(2),
    object(),
]
#: Bad values for a dtype argument.
DTYPES: list[Any] = ["int32", "bool", "complex128", "object", "nonsense", int, float, str, np.float16, "U3", 3]
#: Bad values for an activation argument.
ACTIVATIONS: list[Any] = ["swish", "softmax", nn.softmax, nn.dense(2, 2), 3, "", "TANH", np.tanh]
#: Bad values for a lens argument.
LENSES: list[Any] = [None, 3, "lens", np.tanh, faithful.make_mlp(2, [2]), [nn.tanh], (nn.tanh,), lambda p, s: s]
#: Bad values for a kernel, stride or dilation (an int or a pair).
KERNELS: list[Any] = [0, -1, (0, 1), (1, 2, 3), "2", 2.0, (2.0, 1), [2, 2], np.int64(0)]
#: Bad values for a seed.
SEEDS: list[Any] = [-1, "seed", 1.5, [1.5], object(), {}]


@dataclass(frozen=True)
class Ctor:
    """A constructor, good keyword arguments, and extra bad values per argument."""

    name: str
    make: Callable[..., Any]
    good: dict[str, Any]
    bad: dict[str, list[Any]] = field(default_factory=dict)
    #: arguments that only take the values in ``bad`` (the general pool makes no sense there:
    #: ``None >> lens`` is Python's own operator on None, ``chain(*None)`` Python's unpacking)
    only_bad: tuple[str, ...] = ()
    #: arguments that are data (arrays, trees): also corrupted with :func:`._bad.mutate`
    trees: tuple[str, ...] = ()
    #: ``check(result, kwargs)`` raises ``AssertionError`` when an accepted result is wrong
    check: Callable[[Any, dict[str, Any]], None] | None = None
    #: the public names this entry fuzzes (``make`` itself when empty); see ``test_fuzz_coverage.py``
    covers: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return self.name

    @property
    def targets(self) -> tuple[Any, ...]:
        return self.covers or (self.make,)


def _dt(*names: str) -> dict[str, list[Any]]:
    return {n: DTYPES for n in names}


class _NoWrite:
    write = "not callable"


def _progress(stream: Any, **kwargs: Any) -> str:
    """A :class:`~prelens.train.Progress` on ``stream`` (``"text"``, ``"binary"``, ``"no write"``: made here),
    run through two epochs of batches; what it wrote (``""`` when the stream is not a ``StringIO``)."""
    made = {"text": io.StringIO, "binary": io.BytesIO, "no write": _NoWrite}
    out = made[stream]() if isinstance(stream, str) and stream in made else stream
    p = prelens.train.Progress(stream=out, **kwargs)
    for epoch in (1, 2):
        for batch in (1, 2, 3):
            p.batch_end(epoch, batch, 0.5, 4)
        p.epoch_end(epoch, 0.25, {"val_accuracy": 0.75})
    p.close("done")
    return out.getvalue() if isinstance(out, io.StringIO) else ""


def _fuzz_made(n: Any = 2) -> Any:
    """A constructor for the ``register_constructor`` entry: a dense layer of width ``n``."""
    return nn.dense(2, n)


CTORS: list[Ctor] = [
    Ctor(
        "linear",
        nn.linear,
        {"n_in": 3, "n_out": 2, "dtype": np.float64, "init": "glorot", "input_delta": True},
        {**_dt("dtype"), "init": ["xavier", None, 1]},
    ),
    Ctor("bias", nn.bias, {"n": 3, "dtype": np.float64}, _dt("dtype")),
    Ctor(
        "dense",
        nn.dense,
        {"n_in": 3, "n_out": 2, "activation": "tanh", "dtype": np.float64, "init": None},
        {**_dt("dtype"), "activation": ACTIVATIONS, "init": ["xavier", 1]},
    ),
    Ctor(
        "mlp",
        nn.mlp,
        {"n_in": 3, "sizes": [4, 2], "activation": "relu", "last_activation": None, "dtype": "float32"},
        {
            "sizes": [[], [0], [2, -1], "42", [2.0], (3, None), np.array([2, 3])],
            "activation": ACTIVATIONS,
            "last_activation": ACTIVATIONS,
            **_dt("dtype"),
        },
    ),
    Ctor(
        "pointwise",
        nn.pointwise,
        {"name": "softplus", "apply": np.tanh, "grad": lambda z, da: da, "init_scheme": "glorot"},
        {"apply": [None, 3], "grad": [None, "g"], "init_scheme": ["xavier"]},
    ),
    Ctor(
        "token_embedding",
        nn.token_embedding,
        {"vocab_size": 5, "d_model": 3, "dtype": np.float64, "std": 1.0},
        {**_dt("dtype"), "std": ["big", None, np.nan, -1.0]},
    ),
    Ctor(
        "positional_embedding",
        nn.positional_embedding,
        {"max_len": 6, "d_model": 3, "std": 0.1},
        {"std": ["big", None, np.inf]},
    ),
    Ctor("sinusoidal_encoding", nn.sinusoidal_encoding, {"d_model": 4, "max_len": 16}),
    Ctor(
        "sinusoidal_table",
        nn._embedding.sinusoidal_table,
        {"length": 3, "d_model": 4, "dtype": np.float64},
        _dt("dtype"),
    ),
    Ctor(
        "layer_norm",
        nn.layer_norm,
        {"d": 4, "eps": 1e-5, "dtype": np.float64},
        {**_dt("dtype"), "eps": [0.0, -1e-5, np.nan, "small", None, np.inf]},
    ),
    Ctor(
        "normalize",
        nn.normalize,
        {"mean": [0.0, 1.0], "std": [1.0, 2.0], "dtype": np.float64},
        {
            **_dt("dtype"),
            "mean": [[np.nan, 0.0], [0.0], [[0.0, 1.0]], np.ones((2, 2)), ["a", "b"], [True, False], np.zeros(0)],
            "std": [[0.0, 1.0], [-1.0, 1.0], [np.inf, 1.0], [1.0], [1.0, 2.0, 3.0], np.ones(2, dtype=np.int64)],
        },
        check=lambda out, kw: _normalize_ok(out, kw),
    ),
    Ctor("attention_scores", nn.composed.attention_scores, {"d_k": 2}),
    Ctor("scaled_dot_product_attention", nn.scaled_dot_product_attention, {"d_k": 2, "causal": True}),
    Ctor("split_heads", nn.composed.split_heads, {"n_heads": 2}),
    Ctor("merge_heads", nn.composed.merge_heads, {"n_heads": 2}),
    Ctor("concat_heads", nn.composed.concat_heads, {"n_heads": 2}),
    Ctor(
        "attention_head",
        nn.composed.attention_head,
        {"d_model": 4, "d_k": 2, "causal": True, "cross": False, "dtype": np.float64},
        _dt("dtype"),
    ),
    Ctor(
        "multi_head_attention",
        nn.multi_head_attention,
        {"d_model": 4, "n_heads": 2, "causal": False, "dtype": np.float64},
        {"n_heads": [3, 5], **_dt("dtype")},
    ),
    Ctor(
        "multi_head_attention_faithful",
        nn.composed.multi_head_attention,
        {"d_model": 4, "n_heads": 2},
        {"n_heads": [3]},
    ),
    Ctor("cross_attention", nn.cross_attention, {"d_model": 4, "n_heads": 2}, {"n_heads": [3]}),
    Ctor("residual", nn.residual, {"f": nn.dense(3, 3), "context": False}, {"f": LENSES}),
    Ctor("residual_composed", nn.composed.residual, {"f": nn.dense(3, 3), "context": False}, {"f": LENSES}),
    Ctor("feed_forward", nn.feed_forward, {"d_model": 4, "d_ff": 8, "dtype": np.float64}, _dt("dtype")),
    Ctor("feed_forward_composed", nn.composed.feed_forward, {"d_model": 4, "d_ff": 8}),
    Ctor(
        "encoder_block",
        nn.encoder_block,
        {"d_model": 4, "n_heads": 2, "d_ff": 8, "norm": "pre", "eps": 1e-5},
        {"norm": ["mid", None, 1], "n_heads": [3], "eps": [0.0, "e"]},
    ),
    Ctor("decoder_block", nn.decoder_block, {"d_model": 4, "n_heads": 2, "d_ff": 8, "norm": "post"}, {"norm": ["PRE"]}),
    Ctor(
        "decoder_lm",
        nn.decoder_lm,
        {"vocab_size": 7, "d_model": 4, "n_heads": 2, "d_ff": 8, "n_layers": 1, "max_len": 6, "positional": "learned"},
        {"positional": ["rotary", None], "n_heads": [3]},
    ),
    Ctor(
        "encoder_decoder",
        nn.encoder_decoder,
        {"source_vocab": 5, "target_vocab": 7, "d_model": 4, "n_heads": 2, "d_ff": 8, "n_layers": 1, "max_len": 6},
    ),
    Ctor("token_cross_entropy", nn.token_cross_entropy, {"ignore_index": -1}),
    Ctor(
        "init_weight",
        nn._linear.init_weight,
        {"scheme": "he", "n_in": 3, "n_out": 2, "dtype": np.float64, "rng": np.random.default_rng(0)},
        {"scheme": ["xavier", None], "rng": SEEDS, **_dt("dtype")},
    ),
    Ctor("linear_l", faithful.linear_l, {"n": 3}),
    Ctor("neuron_l", faithful.neuron_l, {"m_in": 3}),
    Ctor("layer_l", faithful._network.layer_l, {"m_in": 3, "n_out": 2}),
    Ctor("make_mlp_l", faithful._network.make_mlp_l, {"m_in": 3, "sizes": [2, 1]}, {"sizes": [[], [0], "ab", [1.5]]}),
    Ctor("make_mlp", faithful.make_mlp, {"m_in": 3, "sizes": [2, 1]}, {"sizes": [[], [0], "ab", [1.5]]}),
    Ctor("layer", faithful.layer, {"m_in": 3, "n_out": 2}),
    Ctor("init_para", faithful.init_para, {"m_in": 3, "rng": np.random.default_rng(0)}, {"rng": SEEDS}),
    Ctor(
        "init_mlp",
        faithful.init_mlp,
        {"m_in": 3, "sizes": [2, 1], "rng": np.random.default_rng(0)},
        {"rng": SEEDS, "sizes": [[], [0]]},
    ),
    Ctor(
        "mk_para",
        faithful.mk_para,
        {"bw": (0.5, [1.0, 2.0])},
        {"bw": [(0.5,), ("b", [1.0]), (0.5, "w"), (0.5, [[1.0]])]},
    ),
    Ctor("batch_loss_l", faithful._train.batch_loss_l, {"mlp": faithful.make_mlp(3, [2, 1]), "n": 2}, {"mlp": LENSES}),
    # the core
    Ctor("branch", prelens.branch, {"n": 2}),
    Ctor("branch_t", prelens.faithful._branch.branch_t, {"n": 2}),
    Ctor("vec_lens", prelens.vec_lens, {"n": 2, "lens": nn.tanh}, {"lens": LENSES}),
    Ctor("batch_n", prelens.batch_n, {"n": 2, "lens": nn.tanh}, {"lens": LENSES}),
    Ctor(
        "chain",
        lambda lenses: prelens.chain(*lenses),
        {"lenses": [nn.tanh, nn.relu]},
        {"lenses": [[], [None], [nn.tanh, 3], [faithful.make_mlp(2, [2])], "ab"]},
        ("lenses",),
        covers=(prelens.chain,),
    ),
    Ctor("pre_compose", prelens.pre_compose, {"f": nn.tanh, "g": nn.relu}, {"f": LENSES, "g": LENSES}),
    Ctor("prod_lens", prelens.prod_lens, {"f": nn.tanh, "g": nn.relu}, {"f": LENSES, "g": LENSES}),
    Ctor(
        ">>",
        lambda f, g: f >> g,
        {"f": nn.tanh, "g": nn.relu},
        {"f": [nn.dense(2, 2)], "g": LENSES},
        ("f",),
        covers=(prelens.pre_compose,),
    ),
    Ctor(
        "@",
        lambda f, g: f @ g,
        {"f": nn.tanh, "g": nn.relu},
        {"f": [nn.dense(2, 2)], "g": LENSES},
        ("f",),
        covers=(prelens.prod_lens,),
    ),
    Ctor("to_tamb", prelens.to_tamb, {"lens": nn.tanh}, {"lens": LENSES}),
    # convolution, pooling and recurrence (issue 24)
    *[
        Ctor(
            f"{where} conv1d",
            make,
            {
                "c_in": 2,
                "c_out": 4,
                "kernel": 3,
                "stride": 2,
                "padding": 1,
                "dilation": 1,
                "groups": 2,
                "dtype": "float32",
            },
            {
                **_dt("dtype"),
                "kernel": KERNELS,
                "stride": KERNELS,
                "padding": [-1, (1,), (1, 1), 2.0],
                "dilation": KERNELS,
                "groups": [3, 4, 8, -2],
                "init": ["xavier", 1, "GLOROT"],
            },
            covers=(make,),
        )
        for where, make in (("nn", nn.conv1d), ("composed", nn.composed.conv1d))
    ],
    *[
        Ctor(
            f"{where} conv2d",
            make,
            {"c_in": 2, "c_out": 2, "kernel": (2, 3), "stride": 1, "padding": (1, 0), "dilation": (1, 2), "init": "he"},
            {
                "kernel": [*KERNELS, (2,), (2, 0), (2, 2, 2), (2, -1), (1.5, 2)],
                "stride": [(1, 0), (1,), (1, 2, 3)],
                "padding": [(-1, 0), (1,), (0, 0, 0)],
                "dilation": [(0, 1), (1,), "11"],
                "init": ["xavier", 1],
            },
            covers=(make,),
        )
        for where, make in (("nn", nn.conv2d), ("composed", nn.composed.conv2d))
    ],
    *[
        Ctor(
            f"{where} {name}",
            make,
            {"kernel": 2, "stride": None, "padding": 1},
            {"kernel": [*KERNELS, (2, 2, 2), (2, 0)], "stride": [*KERNELS, (1, 0)], "padding": [2, -1, (1,), (0, 2)]},
            covers=(make,),
        )
        for where, name, make in (
            ("nn", "max_pool", nn.max_pool),
            ("nn", "avg_pool", nn.avg_pool),
            ("composed", "max_pool", nn.composed.max_pool),
            ("composed", "avg_pool", nn.composed.avg_pool),
        )
    ],
    Ctor(
        "patches",
        nn.composed.patches,
        {"kernel": (2, 2), "stride": None, "padding": 1, "dilation": 1, "pad_value": -np.inf},
        {
            "kernel": KERNELS,
            "stride": KERNELS,
            "padding": [-1, (1,)],
            "dilation": KERNELS,
            "pad_value": ["x", None, 1j],
        },
    ),
    *[
        Ctor(
            name,
            make,
            {"n_in": 2, "n_hidden": 3, "dtype": np.float32},
            {**_dt("dtype"), "n_in": [0, -1, 2.5, "2"], "n_hidden": [0, -1, 2.5, "3"]},
        )
        for name, make in (
            ("gru", nn.gru),
            ("lstm", nn.lstm),
            ("gru_cell", nn.composed.gru_cell),
            ("lstm_cell", nn.composed.lstm_cell),
        )
    ],
    *[
        Ctor(
            name,
            make,
            {"n_in": 2, "n_hidden": 3, "nonlinearity": "relu", "dtype": np.float64},
            {**_dt("dtype"), "nonlinearity": ["sigmoid", "RELU", None, nn.tanh, np.tanh]},
        )
        for name, make in (("rnn", nn.rnn), ("rnn_cell", nn.composed.rnn_cell))
    ],
    Ctor(
        "bidirectional",
        nn.bidirectional,
        {"layer": nn.gru(1, 2)},
        {"layer": [*LENSES, nn.tanh, nn.composed.gru_cell(1, 2), prelens.id_pre_lens]},
    ),
    Ctor(
        "scan",
        prelens.scan,
        {"cell": nn.composed.gru_cell(2, 3), "axis": 1},
        {"cell": [*LENSES, nn.tanh, nn.gru(2, 3)], "axis": [-4, 3, 1.0, "1", None]},
    ),
    Ctor(
        "scan_t",
        prelens.tambara.scan_t,
        {"tri": prelens.to_tamb(nn.composed.gru_cell(2, 3)), "n": None, "axis": 0},
        {
            "tri": [None, 3, nn.composed.gru_cell(2, 3), faithful.activ_t, "t"],
            "n": [0, -1, 1.5, "2", 10**6],
            "axis": [1.0, "0", None],
        },
    ),
    Ctor("from_tamb", prelens.from_tamb, {"tri": faithful.make_mlp(2, [2])}, {"tri": [None, 3, nn.tanh, "t"]}),
    Ctor(
        "tri_compose",
        prelens.tri_compose,
        {"f": faithful.activ_t, "g": faithful.activ_t},
        {"f": [None, nn.tanh, 3], "g": [None, nn.tanh]},
    ),
    Ctor(
        "tri_tensor",
        prelens.tri_tensor,
        {"l1": faithful.activ_t, "l2": faithful.activ_t},
        {"l1": [None, nn.tanh], "l2": [3]},
    ),
    Ctor(
        "iso_lens",
        prelens.iso_lens,
        {"name": "swap", "to": prelens.sym, "back": prelens.sym},
        {"to": [None, 3], "back": ["b"]},
    ),
    Ctor(
        "parameter_free",
        prelens.core.parameter_free,
        {"name": "sq", "fwd": lambda s: (s, s * s), "bwd": lambda s, da: 2 * s * da},
        {"fwd": [None], "bwd": [1]},
    ),
    Ctor(
        "PreLens",
        prelens.PreLens,
        {"fwd": lambda p, s: ((), s), "bwd": lambda m, da: ((), da), "name": "id"},
        {"fwd": [None, 3], "bwd": ["b"], "name": [None, 3], "init_fn": [3, "i"]},
    ),
    Ctor(
        "init",
        lambda lens, rng: lens.init(rng),
        {"lens": nn.dense(3, 2), "rng": 0},
        {"lens": [nn.tanh, nn.mse], "rng": SEEDS},
        ("lens",),
        covers=(prelens.PreLens,),
    ),
    # optimisers
    Ctor("sgd", prelens.learn.sgd, {"lr": 0.1}, {"lr": [np.nan, np.inf, -0.1, "0.1"]}),
    Ctor(
        "momentum",
        prelens.learn.momentum,
        {"lr": 0.1, "beta": 0.9, "nesterov": False},
        {"beta": [1.0, -0.1, np.nan, "b"]},
    ),
    Ctor(
        "adam",
        prelens.learn.adam,
        {"lr": 0.1, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
        {"b1": [1.0, np.nan], "eps": [0.0, -1.0, np.nan]},
    ),
    Ctor("SGD", prelens.learn.SGD, {"lr": 0.1}, {"lr": [np.nan, -0.1, "0.1", True]}),
    Ctor(
        "Momentum",
        prelens.learn.Momentum,
        {"lr": 0.1, "beta": 0.9, "nesterov": True},
        {"beta": [1.0, np.nan, False], "nesterov": ["no", 1, None, np.bool_(True)]},
    ),
    Ctor(
        "Adam",
        prelens.learn.Adam,
        {"lr": 0.1, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
        {"b2": [1.0, -0.5, np.inf], "eps": [np.inf, "e"], "lr": [0, True]},
    ),
    # optimisers, schedules, dropout and the optimiser lenses of issue 14
    Ctor("adagrad", prelens.learn.adagrad, {"lr": 0.1, "eps": 1e-10}, {"eps": [0.0, -1.0, np.nan, np.inf]}),
    Ctor("Adagrad", prelens.learn.Adagrad, {"lr": 0.1, "eps": 1e-10}, {"lr": [np.nan, 0, True, prelens.learn.Adam]}),
    Ctor("rmsprop", prelens.learn.rmsprop, {"lr": 0.1, "rho": 0.9, "eps": 1e-8}, {"rho": [1.0, -0.1, np.nan]}),
    Ctor("RMSprop", prelens.learn.RMSprop, {"lr": 0.1, "rho": 0.9, "eps": 1e-8}, {"eps": [0.0, np.inf]}),
    *[
        Ctor(
            name,
            make,
            {"lr": 0.1, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.01},
            {"weight_decay": [-0.1, np.nan, np.inf, "wd"], "b1": [1.0, np.nan]},
        )
        for name, make in (("adamw", prelens.learn.adamw), ("AdamW", prelens.learn.AdamW))
    ],
    *[
        Ctor(
            name,
            make,
            {"optimizer": prelens.learn.adam(0.1), "max_norm": 1.0},
            {"optimizer": [prelens.learn.Adam, nn.tanh, np.tanh, "adam"], "max_norm": [0.0, -1.0, np.nan, np.inf]},
        )
        for name, make in (
            ("clip_by_global_norm", prelens.learn.clip_by_global_norm),
            ("ClipByGlobalNorm", prelens.learn.ClipByGlobalNorm),
        )
    ],
    Ctor(
        "constant", lambda lr, t: prelens.learn.constant(lr)(t), {"lr": 0.1, "t": 3}, covers=(prelens.learn.constant,)
    ),
    Ctor(
        "step_decay",
        lambda lr, every, factor, t: prelens.learn.step_decay(lr, every, factor)(t),
        {"lr": 0.1, "every": 3, "factor": 0.5, "t": 7},
        {"factor": [1.5, 0.0, np.nan], "t": [np.int64(3), -2, 1e30]},
        covers=(prelens.learn.step_decay,),
    ),
    Ctor(
        "exponential_decay",
        lambda lr, rate, every, t: prelens.learn.exponential_decay(lr, rate, every)(t),
        {"lr": 0.1, "rate": 0.5, "every": 2, "t": 7},
        {"rate": [1.5, 0.0, -0.5], "t": [np.int64(3), -2, 1e30]},
        covers=(prelens.learn.exponential_decay,),
    ),
    Ctor(
        "warmup_cosine",
        lambda peak, warmup, total, final, t: prelens.learn.warmup_cosine(peak, warmup, total, final)(t),
        {"peak": 0.1, "warmup": 2, "total": 10, "final": 0.01, "t": 5},
        {"warmup": [11, -1, 2.0], "final": [0.2, -0.1, np.nan], "t": [np.int64(3), -2, 10**30]},
        covers=(prelens.learn.warmup_cosine,),
    ),
    Ctor(
        "one_cycle",
        lambda peak, total, warmup_fraction, div, final_div, t: prelens.learn.one_cycle(
            peak, total, warmup_fraction, div, final_div
        )(t),
        {"peak": 0.1, "total": 10, "warmup_fraction": 0.3, "div": 25.0, "final_div": 1e4, "t": 5},
        {"warmup_fraction": [0.0, 1.0, np.nan], "div": [0.5, np.inf], "final_div": [0.0, -1.0]},
        covers=(prelens.learn.one_cycle,),
    ),
    Ctor("dropout", nn.dropout, {"rate": 0.1}, {"rate": [1.0, -0.1, np.nan, np.inf, "0.1", np.float32(0.5)]}),
    Ctor(
        "encoder_block dropout",
        nn.encoder_block,
        {"d_model": 8, "n_heads": 2, "d_ff": 16, "dropout": 0.1, "norm": "pre"},
        {"dropout": [1.0, -0.1, np.nan, "0.1"]},
        covers=(nn.encoder_block,),
    ),
    Ctor("learning_rate", learn.learning_rate, {"alpha": 0.1}, {"alpha": [0.0, -1.0, np.nan, np.inf, "a"]}),
    *[
        Ctor(name, make, {"lr": 0.1, **extra}, {"lr": [0.0, -1.0, np.nan, "lr", prelens.learn.Adam]})
        for name, make, extra in (
            ("momentum lens", learn.momentum, {"beta": 0.9}),
            ("adagrad lens", learn.adagrad, {"eps": 1e-10}),
            ("rmsprop lens", learn.rmsprop, {"rho": 0.9, "eps": 1e-8}),
            ("adam lens", learn.adam, {"b1": 0.9, "b2": 0.999, "eps": 1e-8}),
            ("adamw lens", learn.adamw, {"b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.01}),
        )
    ],
    Ctor("clip_by_global_norm lens", learn.clip_by_global_norm, {"max_norm": 1.0}, {"max_norm": [0.0, np.nan]}),
    Ctor("l2", learn.l2, {"lam": 0.1}, {"lam": [-0.1, np.nan, np.inf, "l"]}),
    Ctor(
        "OptimizerLens",
        learn.OptimizerLens,
        {"fwd": lambda p, s: ((), s[0]), "bwd": lambda m, da: ((), da), "name": "opt", "init_state": lambda p: ()},
        {"fwd": [None, 3], "bwd": ["b"], "name": [None, 3]},
    ),
    Ctor(
        "penalised",
        learn.penalised,
        {"model": nn.dense(3, 2), "loss": nn.mse, "penalty": learn.l2(0.1)},
        {"model": LENSES, "loss": LENSES, "penalty": LENSES},
    ),
    Ctor("parameters_as_input", learn.parameters_as_input, {"lens": nn.dense(3, 2)}, {"lens": LENSES}),
    Ctor(
        "reparameterise",
        learn.reparameterise,
        {"lens": nn.dense(3, 2), "optimizer": learn.adam(0.1)},
        {"lens": LENSES, "optimizer": [*LENSES, nn.dense(2, 2), prelens.learn.adam(0.1)]},
    ),
    Ctor(
        "learner",
        learn.learner,
        {"model": nn.dense(3, 2), "loss": nn.mse, "optimizer": learn.adam(0.1), "rate": None, "penalty": None},
        {
            "model": LENSES,
            "loss": LENSES,
            "optimizer": [*LENSES, nn.dense(2, 2), prelens.learn.sgd(0.1)],
            "rate": LENSES,
            "penalty": LENSES,
        },
    ),
    # fit's callbacks (issue 14): made, then asked about a small history
    Ctor(
        "EarlyStopping",
        lambda monitor, patience, min_delta, mode, restore_best: prelens.train.EarlyStopping(
            monitor, patience, min_delta, mode, restore_best
        ).on_epoch_end(4, _HISTORY, None, ()),
        {"monitor": "val_loss", "patience": 2, "min_delta": 0.01, "mode": "min", "restore_best": True},
        {"patience": [0, -1, 2.0], "min_delta": [-0.1, np.nan, np.inf], "mode": ["auto", "MIN", np.array(["min"])]},
        check=lambda out, kw: _stop_ok(out, kw),
        covers=(prelens.train.EarlyStopping,),
    ),
    Ctor(
        "CheckpointBest",
        lambda path, monitor, mode, min_delta: prelens.train.CheckpointBest(
            path, monitor, mode, min_delta
        ).on_epoch_end(4, _HISTORY, [np.zeros(2)], ()),
        {"path": _TMP_BEST, "monitor": "val_loss", "mode": "max", "min_delta": 0.0},
        {"path": ["/no/such/dir/b.npz", ".", 3, b"b.npz"], "monitor": ["", 3], "mode": ["auto"], "min_delta": [-1.0]},
        check=lambda out, kw: _never_stops(out),
        covers=(prelens.train.CheckpointBest,),
    ),
    Ctor(
        "LearningRateLogger",
        lambda optimizer: prelens.train.LearningRateLogger(optimizer).on_epoch_end(4, _history(), None, ()),
        {"optimizer": prelens.learn.adam(0.1)},
        {"optimizer": [prelens.learn.Adam, learn.learning_rate(0.1), nn.dense(2, 2), lambda t: 0.1, "adam"]},
        check=lambda out, kw: _never_stops(out),
        covers=(prelens.train.LearningRateLogger,),
    ),
    Ctor(
        "decoder_lm dropout",
        nn.decoder_lm,
        {"vocab_size": 5, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1, "max_len": 4, "dropout": 0.1},
        {"dropout": [1.0, -0.1, np.nan, "0.1"]},
        covers=(nn.decoder_lm,),
    ),
    Ctor(
        "encoder_decoder dropout",
        nn.encoder_decoder,
        dict(source_vocab=5, target_vocab=6, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=4, dropout=0.1),
        {"dropout": [1.0, -0.1, np.nan, "0.1"]},
        covers=(nn.encoder_decoder,),
    ),
    # the Tambara structure maps and the TriLens machinery
    Ctor(
        "alpha", prelens.alpha, {"t": nn.tanh}, {"t": [*LENSES, faithful.activ_t, prelens.PLeft(prelens.id_pre_lens)]}
    ),
    Ctor("beta", prelens.beta, {"t": prelens.add_l}, {"t": [*LENSES, faithful.bias_t, prelens.PRight(prelens.add_l)]}),
    *[
        Ctor(
            name,
            fn,
            {"f": prelens.sym, "g": prelens.sym, "t": prelens.add_l},
            {"f": [None, 3, "f"], "g": [None, nn.tanh], "t": [*LENSES, faithful.activ_t]},
        )
        for name, fn in (("dimap_s", prelens.dimap_s), ("dimap_p", prelens.dimap_p), ("dimap_m", prelens.dimap_m))
    ],
    Ctor("PLeft", prelens.PLeft, {"t": prelens.id_pre_lens}, {"t": [*LENSES, faithful.activ_t]}),
    Ctor("PRight", prelens.PRight, {"t": prelens.id_pre_lens}, {"t": [*LENSES, faithful.activ_t]}),
    Ctor("TriLens", prelens.TriLens, {"run": lambda t: t, "name": "id_t"}, {"run": [None, 3, "r"], "name": [None, 3]}),
    Ctor("remat", prelens.nn.remat, {"lens": nn.dense(3, 2)}, {"lens": [*LENSES, nn.tanh, prelens.id_pre_lens]}),
    # the faithful pieces that take sizes
    Ctor("linear_t", faithful.linear_t, {"n": 3}),
    Ctor("affine_t", faithful.affine_t, {"n": 3}),
    Ctor("affine_l", faithful._network.affine_l, {"n": 3}),
    Ctor("neuron_t", faithful.neuron_t, {"m_in": 3}),
    # datasets
    Ctor(
        "load_dataset",
        datasets.load_dataset,
        {"name": "moons", "test_fraction": 0.25, "rng": 0, "n": 20, "standardize_features": True},
        {
            "name": ["mnist", "IRIS", ["iris"], None],
            "test_fraction": [1.0, -0.1, np.nan, "0.2", True],
            "rng": SEEDS,
            "n": [1, 0, 2.5, "n", True, 3],
            "standardize_features": ["yes", 1, None],
        },
        check=lambda out, kw: _split_ok(out),
    ),
    Ctor(
        "load_iris",
        datasets.load_iris,
        {"test_fraction": 0.2, "rng": 1, "standardize_features": False, "dtype": np.float32},
        {"test_fraction": [1.0, np.nan, "x"], "rng": SEEDS, "standardize_features": ["no"], "dtype": DTYPES},
        check=lambda out, kw: _split_ok(out),
    ),
    Ctor(
        "make_moons",
        datasets.make_moons,
        {"n": 10, "noise": 0.1, "rng": 0},
        {"n": [1, 2.0, True], "noise": [-0.1, np.nan, np.inf, "x"], "rng": SEEDS},
        check=lambda out, kw: _points_ok(out, kw["n"], 2),
    ),
    Ctor(
        "make_spirals",
        datasets.make_spirals,
        {"n": 12, "classes": 3, "noise": 0.2, "turns": 1.0, "rng": 0},
        {"classes": [1, 2.0, True, 20], "turns": [0, -1.0, np.nan, np.inf], "noise": [np.inf], "rng": SEEDS},
        check=lambda out, kw: _points_ok(out, kw["n"], kw["classes"]),
    ),
    Ctor(
        "make_glyphs",
        datasets.make_glyphs,
        {"n": 12, "noise": 0.25, "rng": 0},
        {"n": [0, 2.0, True], "noise": [-0.1, np.nan, np.inf, 1e308, "x"], "rng": SEEDS},
        check=lambda out, kw: _glyphs_ok(out, kw["n"]),
    ),
    Ctor(
        "load_mnist1d",
        _load_mnist1d,
        {"channel": False, "regenerate": False},
        # regenerate=True would run the generator (seconds a call): only values that must be refused
        {"regenerate": [None, "yes", "no", 1, 0, 1.0, [], np.bool_(False)]},
        only_bad=("regenerate",),
        check=lambda out, kw: _mnist1d_ok(out, kw["channel"]),
        covers=(datasets.load_mnist1d,),
    ),
    Ctor("load_text", datasets.load_text, {"name": "sonnets"}, {"name": ["SONNETS", ["sonnets"], {}]}),
    Ctor(
        "make_sequences",
        datasets.make_sequences,
        {"task": datasets.SequenceTask("copy", 3, 4), "n": 2, "rng": 0},
        {"task": ["copy", "nope", ["copy"], datasets.SequenceTask("sort", 2, 2)], "n": [True, 2.0], "rng": SEEDS},
        check=lambda out, kw: _sequences_ok(out, kw),
    ),
    Ctor(
        "SequenceTask",
        datasets.SequenceTask,
        {"name": "reverse", "length": 3, "n_symbols": 5},
        {"name": ["REVERSE", ["copy"], {}], "length": [True, 2.0], "n_symbols": [np.int64(3), 0]},
    ),
    Ctor("CharVocab", datasets.CharVocab, {"chars": "abc"}, {"chars": ["aab", ["a", "b"], b"ab", 3]}),
    Ctor(
        "CharVocab.from_text",
        datasets.CharVocab.from_text,
        {"text": "hello"},
        {"text": [["h", "i"], b"hi", 3, None]},
        covers=(datasets.CharVocab,),
    ),
    # the training loop's status display
    Ctor(
        "Progress",
        _progress,
        {
            "epochs": 2,
            "batches": 3,
            "stream": "text",
            "live": False,
            "enabled": True,
            "interval": 0.0,
            "label": "epoch",
        },
        {
            "epochs": [0, 2.0, np.int64(2), True, np.nan, -5],
            "batches": [0, 3.0, np.int64(3), False],
            "stream": ["no write", sys.stdout.write, [], "text", io.BytesIO(), io.StringIO],
            "live": [1, "yes", np.bool_(True), None],
            "enabled": [0, "no", np.bool_(False)],
            "interval": [-0.1, np.nan, np.inf, "0.1", True, np.float32(0.5)],
            "label": [None, 3, b"epoch", "", "step"],
        },
        check=lambda out, kw: _progress_ok(out, kw),
        covers=(prelens.train.Progress,),
    ),
    # model files
    Ctor(
        "register_constructor",
        lambda fn, name: prelens.io.register_constructor(fn, name=name),
        {"fn": _fuzz_made, "name": "fuzz.made"},
        {
            "fn": [None, 3, "f", nn.dense(2, 2), _fuzz_made],
            "name": ["prelens.nn.mlp", "prelens", "a..b", "1abc", "has space", "x" * 300, b"fuzz.made", "f.<locals>"],
        },
        check=lambda out, kw: _registered_ok(out, kw),
        covers=(prelens.io.register_constructor,),
    ),
    # checkpoints
    Ctor(
        "register_namedtuple",
        prelens.io.register_namedtuple,
        {"cls": faithful.Para},
        {"cls": [tuple, int, faithful.Para(0.0, np.ones(1)), "Para", type("Plain", (tuple,), {}), prelens.PreLens]},
    ),
]


def _normalize_ok(out: Any, kw: dict[str, Any]) -> None:
    x = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    dt = np.dtype(kw["dtype"])
    y = prelens.forward(out, (), x.astype(dt))
    expected = (x - np.asarray(kw["mean"], float)) / np.asarray(kw["std"], float)
    assert y.dtype == dt and np.allclose(y, expected, rtol=1e-6), f"normalize gave {y}, expected {expected}"


def _registered_ok(out: Any, kw: dict[str, Any]) -> None:
    """A registered constructor is the function, recording: a lens it makes is described by ``name``."""
    from prelens.io._describe import describe

    if kw["fn"] is None:  # register_constructor(name=...) is a decorator: apply it
        out = out(_fuzz_made)
    lens = out(3)
    assert describe(lens) == {"call": kw["name"], "args": [3]}, describe(lens)


def _mnist1d_ok(out: Any, channel: Any) -> None:
    assert isinstance(out, datasets.Split)
    tail = (40, 1) if channel else (40,)
    assert out.x_train.shape == (4000, *tail) and out.x_test.shape == (1000, *tail), f"{out.x_train.shape}"
    assert out.x_train.dtype == np.float64 and out.y_train.dtype == np.int64 and out.y_test.shape == (1000,)


def _glyphs_ok(out: Any, n: int) -> None:
    xs, ys = out
    assert xs.shape == (n, 64) and xs.dtype == np.float64 and np.isfinite(xs).all(), f"images {xs.dtype}{xs.shape}"
    assert ys.shape == (n,) and ys.dtype == np.int64 and set(ys.tolist()) <= set(range(10))


def _history() -> Any:
    """Four epochs of a run whose validation loss was best at epoch 2."""
    return prelens.train.History(loss=[1.0, 0.9, 0.8, 0.7], metrics={"val_loss": [1.0, 0.5, 0.6, 0.7]})


_HISTORY = _history()


def _stop_ok(out: Any, kw: dict[str, Any]) -> None:
    assert out is (kw["patience"] <= 2), f"stop after 2 epochs without improvement with patience {kw['patience']}"


def _never_stops(out: Any) -> None:
    assert out is False, f"only EarlyStopping stops training, got {out!r}"


def _split_ok(out: Any) -> None:
    assert isinstance(out, datasets.Split)
    for x in (out.x_train, out.x_test):
        assert x.dtype.kind == "f" and x.ndim == 2 and np.isfinite(x).all(), f"features {x.dtype}{x.shape}"
    for y in (out.y_train, out.y_test):
        assert y.dtype == np.int64 and y.ndim == 1
    assert len(out.x_train) == len(out.y_train) and len(out.x_test) == len(out.y_test)


def _points_ok(out: Any, n: int, classes: int) -> None:
    xs, ys = out
    assert xs.shape == (n, 2) and xs.dtype == np.float64 and np.isfinite(xs).all(), f"points {xs.dtype}{xs.shape}"
    assert ys.shape == (n,) and ys.dtype == np.int64 and set(ys.tolist()) <= set(range(classes))


def _sequences_ok(out: Any, kw: dict[str, Any]) -> None:
    task = kw["task"] if isinstance(kw["task"], datasets.SequenceTask) else datasets.SequenceTask(kw["task"])
    inputs, labels = out
    assert inputs.shape == labels.shape == (kw["n"], task.seq_len), f"shapes {inputs.shape}, {labels.shape}"
    assert inputs.dtype == labels.dtype == np.int64
    assert inputs.min() >= 0 and inputs.max() < task.vocab_size and labels.max() < task.vocab_size


def _progress_ok(out: Any, kw: dict[str, Any]) -> None:
    assert isinstance(out, str)
    if kw["stream"] != "text":
        return
    if not kw["enabled"]:
        assert out == "", f"disabled, but wrote {out!r}"
        return
    assert out.endswith("done\n"), f"the note is missing: {out!r}"
    last = f"{kw['label']} 2/{kw['epochs']}"
    assert last in out, f"{last!r} is not in {out!r}"


def _usable(made: Any) -> None:
    """What a constructor returned must work: its repr, and for a lens its init (when it has one)."""
    repr(made)
    if isinstance(made, prelens.PreLens) and made.init_fn is not None:
        made.init(0)


def run_case(ctor: Ctor, data: st.DataObject) -> None:
    """One case: one or two arguments of ``ctor`` replaced by bad values (or, for data, corrupted)."""
    kwargs = dict(ctor.good)
    names = data.draw(st.lists(st.sampled_from(sorted(kwargs)), min_size=1, max_size=2, unique=True), label="args")
    shown = []
    for name in names:
        pool = ctor.bad.get(name, []) + ([] if name in ctor.only_bad else GENERAL)
        if name in ctor.trees and data.draw(st.booleans(), label=f"corrupt {name}"):
            kwargs[name], how = mutate(data, kwargs[name], name)
            shown.append(how)
        else:
            kwargs[name] = data.draw(st.sampled_from(pool), label=name)
            shown.append(f"{name}={kwargs[name]!r}")

    def thunk() -> Any:
        made = ctor.make(**kwargs)
        _usable(made)
        return made

    check = None if ctor.check is None else (lambda out: ctor.check(out, kwargs))  # type: ignore[misc]
    attempt(f"{ctor.name}({', '.join(shown)})", thunk, inputs=tuple(kwargs.values()), check=check)


@pytest.mark.parametrize("ctor", [pytest.param(c, id=c.name) for c in CTORS])
@settings(max_examples=examples(50))
@given(data=st.data())
def test_constructor_of_bad_arguments(ctor: Ctor, data: st.DataObject) -> None:
    run_case(ctor, data)
