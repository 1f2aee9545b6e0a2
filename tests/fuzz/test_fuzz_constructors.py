"""Every public constructor, fed bad arguments: sizes, dtypes, names, flags, lenses and seeds.

A constructor either builds something usable (its ``repr`` works, and for a lens
its ``init`` makes parameters) or raises one of prelens's own errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prelens
import prelens.optim
from prelens import nn

from ._harness import attempt
from .test_fuzz_lenses import examples

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
LENSES: list[Any] = [None, 3, "lens", np.tanh, nn.make_mlp(2, [2]), [nn.tanh], (nn.tanh,), lambda p, s: s]
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

    def __repr__(self) -> str:
        return self.name


def _dt(*names: str) -> dict[str, list[Any]]:
    return {n: DTYPES for n in names}


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
    Ctor("sinusoidal_table", nn.sinusoidal_table, {"length": 3, "d_model": 4, "dtype": np.float64}, _dt("dtype")),
    Ctor(
        "layer_norm",
        nn.layer_norm,
        {"d": 4, "eps": 1e-5, "dtype": np.float64},
        {**_dt("dtype"), "eps": [0.0, -1e-5, np.nan, "small", None, np.inf]},
    ),
    Ctor("attention_scores", nn.attention_scores, {"d_k": 2}),
    Ctor("split_heads", nn.split_heads, {"n_heads": 2}),
    Ctor("merge_heads", nn.merge_heads, {"n_heads": 2}),
    Ctor("concat_heads", nn.concat_heads, {"n_heads": 2}),
    Ctor(
        "attention_head",
        nn.attention_head,
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
        nn.multi_head_attention_faithful,
        {"d_model": 4, "n_heads": 2},
        {"n_heads": [3]},
    ),
    Ctor("cross_attention", nn.cross_attention, {"d_model": 4, "n_heads": 2}, {"n_heads": [3]}),
    Ctor("residual", nn.residual, {"f": nn.dense(3, 3), "context": False}, {"f": LENSES}),
    Ctor("feed_forward", nn.feed_forward, {"d_model": 4, "d_ff": 8, "dtype": np.float64}, _dt("dtype")),
    Ctor("feed_forward_composed", nn.feed_forward_composed, {"d_model": 4, "d_ff": 8}),
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
        nn.init_weight,
        {"scheme": "he", "n_in": 3, "n_out": 2, "dtype": np.float64, "rng": np.random.default_rng(0)},
        {"scheme": ["xavier", None], "rng": SEEDS, **_dt("dtype")},
    ),
    Ctor("linear_l", nn.linear_l, {"n": 3}),
    Ctor("neuron_l", nn.neuron_l, {"m_in": 3}),
    Ctor("layer_l", nn.layer_l, {"m_in": 3, "n_out": 2}),
    Ctor("make_mlp_l", nn.make_mlp_l, {"m_in": 3, "sizes": [2, 1]}, {"sizes": [[], [0], "ab", [1.5]]}),
    Ctor("make_mlp", nn.make_mlp, {"m_in": 3, "sizes": [2, 1]}, {"sizes": [[], [0], "ab", [1.5]]}),
    Ctor("layer", nn.layer, {"m_in": 3, "n_out": 2}),
    Ctor("init_para", nn.init_para, {"m_in": 3, "rng": np.random.default_rng(0)}, {"rng": SEEDS}),
    Ctor(
        "init_mlp",
        nn.init_mlp,
        {"m_in": 3, "sizes": [2, 1], "rng": np.random.default_rng(0)},
        {"rng": SEEDS, "sizes": [[], [0]]},
    ),
    Ctor("mk_para", nn.mk_para, {"bw": (0.5, [1.0, 2.0])}, {"bw": [(0.5,), ("b", [1.0]), (0.5, "w"), (0.5, [[1.0]])]}),
    Ctor("batch_loss_l", nn.batch_loss_l, {"mlp": nn.make_mlp(3, [2, 1]), "n": 2}, {"mlp": LENSES}),
    # the core
    Ctor("branch", prelens.branch, {"n": 2}),
    Ctor("branch_t", prelens.branch_t, {"n": 2}),
    Ctor("vec_lens", prelens.vec_lens, {"n": 2, "lens": nn.tanh}, {"lens": LENSES}),
    Ctor("batch_n", prelens.batch_n, {"n": 2, "lens": nn.tanh}, {"lens": LENSES}),
    Ctor(
        "chain",
        lambda lenses: prelens.chain(*lenses),
        {"lenses": [nn.tanh, nn.relu]},
        {"lenses": [[], [None], [nn.tanh, 3], [nn.make_mlp(2, [2])], "ab"]},
        ("lenses",),
    ),
    Ctor("pre_compose", prelens.pre_compose, {"f": nn.tanh, "g": nn.relu}, {"f": LENSES, "g": LENSES}),
    Ctor("prod_lens", prelens.prod_lens, {"f": nn.tanh, "g": nn.relu}, {"f": LENSES, "g": LENSES}),
    Ctor(">>", lambda f, g: f >> g, {"f": nn.tanh, "g": nn.relu}, {"f": [nn.dense(2, 2)], "g": LENSES}, ("f",)),
    Ctor("@", lambda f, g: f @ g, {"f": nn.tanh, "g": nn.relu}, {"f": [nn.dense(2, 2)], "g": LENSES}, ("f",)),
    Ctor("to_tamb", prelens.to_tamb, {"lens": nn.tanh}, {"lens": LENSES}),
    Ctor("from_tamb", prelens.from_tamb, {"tri": nn.make_mlp(2, [2])}, {"tri": [None, 3, nn.tanh, "t"]}),
    Ctor(
        "tri_compose",
        prelens.tri_compose,
        {"f": nn.activ_t, "g": nn.activ_t},
        {"f": [None, nn.tanh, 3], "g": [None, nn.tanh]},
    ),
    Ctor("tri_tensor", prelens.tri_tensor, {"l1": nn.activ_t, "l2": nn.activ_t}, {"l1": [None, nn.tanh], "l2": [3]}),
    Ctor(
        "iso_lens",
        prelens.iso_lens,
        {"name": "swap", "to": prelens.sym, "back": prelens.sym},
        {"to": [None, 3], "back": ["b"]},
    ),
    Ctor(
        "parameter_free",
        prelens.parameter_free,
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
    ),
    # optimisers
    Ctor("sgd", prelens.optim.sgd, {"lr": 0.1}, {"lr": [np.nan, np.inf, -0.1, "0.1"]}),
    Ctor(
        "momentum",
        prelens.optim.momentum,
        {"lr": 0.1, "beta": 0.9, "nesterov": False},
        {"beta": [1.0, -0.1, np.nan, "b"]},
    ),
    Ctor(
        "adam",
        prelens.optim.adam,
        {"lr": 0.1, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
        {"b1": [1.0, np.nan], "eps": [0.0, -1.0, np.nan]},
    ),
]


def _usable(made: Any) -> None:
    """What a constructor returned must work: its repr, and for a lens its init (when it has one)."""
    repr(made)
    if isinstance(made, prelens.PreLens) and made.init_fn is not None:
        made.init(0)


@pytest.mark.parametrize("ctor", [pytest.param(c, id=c.name) for c in CTORS])
@settings(max_examples=examples(50))
@given(data=st.data())
def test_constructor_of_bad_arguments(ctor: Ctor, data: st.DataObject) -> None:
    kwargs = dict(ctor.good)
    names = data.draw(st.lists(st.sampled_from(sorted(kwargs)), min_size=1, max_size=2, unique=True), label="args")
    for name in names:
        pool = ctor.bad.get(name, []) + ([] if name in ctor.only_bad else GENERAL)
        kwargs[name] = data.draw(st.sampled_from(pool), label=name)
    shown = ", ".join(f"{n}={kwargs[n]!r}" for n in names)

    def thunk() -> Any:
        made = ctor.make(**kwargs)
        _usable(made)
        return made

    attempt(f"{ctor.name}({shown})", thunk)
