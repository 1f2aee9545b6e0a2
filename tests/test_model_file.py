"""Model files: every constructor recorded, lenses described and rebuilt, files saved and loaded, hostile files refused.

* every public lens constructor of ``prelens`` and ``prelens.nn`` records its calls (or
  takes functions, which no file can hold), and the zoo below uses every one of them;
* each lens of the zoo survives describe -> JSON -> rebuild (same lens), and save_model ->
  load_model (same parameters, bit-identical outputs), also in a fresh process;
* lenses that cannot be described are refused at save, naming the part and how to register it;
* hostile files (huge, deep, unknown names, lying sizes, wrong parameters, other versions,
  flipped bytes) end in ModelFileError, with little memory and work.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import prelens
from prelens import (
    PreLens,
    StructureError,
    add_l,
    batch_n,
    branch,
    chain,
    copy_l,
    faithful,
    forward,
    from_tamb,
    id_pre_lens,
    load_model,
    nn,
    save_model,
    scan,
    to_tamb,
    tri_compose,
    tri_tensor,
    vec_lens,
)
from prelens.core import _registry as C
from prelens.core import tree_leaves
from prelens.errors import ArgumentError, CheckpointError, ModelFileError
from prelens.faithful._branch import branch_t
from prelens.io import LoadedModel, load_metadata, register_constructor, save_checkpoint
from prelens.io import _describe as D

from ._model_files import craft

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((5, 4))
IDS = RNG.integers(0, 7, (2, 6))


def rows(*shape: int, dtype: Any = np.float64) -> Callable[[], Any]:
    return lambda: np.random.default_rng(1).standard_normal(shape).astype(dtype)


def ids(vocab: int, *shape: int) -> Callable[[], Any]:
    return lambda: np.random.default_rng(1).integers(0, vocab, shape)


def faithful_params(m_in: int, sizes: list[int]) -> Callable[[Any], Any]:
    return lambda lens: faithful.init_mlp(m_in, sizes, np.random.default_rng(0))


#: (name, the lens, an input to compare outputs on or None, parameters when the lens has no init)
ZOO: list[tuple[str, Callable[[], Any], Callable[[], Any] | None, Callable[[Any], Any] | None]] = [
    # the core: composition, products, names, combinators
    ("pre_compose", lambda: nn.linear(4, 3) >> nn.bias(3), rows(5, 4), None),
    ("prod_lens", lambda: nn.dense(4, 2) @ nn.layer_norm(3), lambda: (rows(5, 4)(), rows(5, 3)()), None),
    (
        "named chain",
        lambda: chain(nn.dense(4, 4), nn.residual(nn.dense(4, 4, "relu"))).named("block"),
        rows(2, 4),
        None,
    ),
    ("vec_lens", lambda: vec_lens(2, nn.dense(4, 2)), lambda: [X4, X4 + 1], None),
    ("batch_n", lambda: batch_n(3, nn.dense(4, 2, None)), lambda: [X4, X4 * 2, X4 - 1], None),
    ("branch", lambda: branch(2) >> vec_lens(2, nn.dense(4, 1)), rows(3, 4), None),
    ("values", lambda: copy_l >> (nn.tanh @ id_pre_lens) >> add_l, rows(3, 4), None),
    # fast layers and models
    (
        "mlp f32",
        lambda: nn.mlp(4, [8, 3], "relu", last_activation=None, dtype=np.float32),
        rows(5, 4, dtype=np.float32),
        None,
    ),
    ("dense options", lambda: nn.dense(4, 2, "sigmoid", init="he", input_delta=False), rows(5, 4), None),
    ("normalize", lambda: nn.normalize(np.arange(4.0), np.full(4, 2.0)) >> nn.mlp(4, [3]), rows(5, 4), None),
    ("remat", lambda: prelens.nn.remat(nn.mlp(4, [4, 4])), rows(2, 4), None),
    ("dropout", lambda: nn.dense(4, 4) >> nn.dropout(0.25), rows(3, 4), None),
    ("attention", lambda: nn.multi_head_attention(8, 2, causal=True), rows(2, 5, 8), None),
    ("cross attention", lambda: nn.cross_attention(8, 2), lambda: (rows(2, 5, 8)(), rows(2, 3, 8)()), None),
    ("attention head", lambda: nn.composed.attention_head(8, 4, causal=True), rows(2, 5, 8), None),
    ("faithful attention", lambda: nn.composed.multi_head_attention(8, 2), rows(2, 5, 8), None),
    ("attention pieces", lambda: chain(nn.composed.split_heads(2), nn.composed.merge_heads(2)), rows(2, 3, 4), None),
    (
        "more pieces",
        lambda: (
            nn.composed.attention_scores(4),
            nn.composed.causal_mask(),
            nn.composed.weighted_sum(),
            nn.composed.concat_heads(2),
        ),
        None,
        None,
    ),
    ("fused attention", lambda: nn.scaled_dot_product_attention(4, causal=True), None, None),
    ("embeddings", lambda: nn.token_embedding(7, 4) >> nn.positional_embedding(6, 4), ids(7, 2, 6), None),
    ("sinusoidal", lambda: nn.sinusoidal_encoding(4, max_len=10), rows(2, 6, 4), None),
    (
        "feed forward",
        lambda: nn.feed_forward(4, 8) >> nn.composed.feed_forward(4, 8, dtype=np.float64),
        rows(2, 3, 4),
        None,
    ),
    ("residual composed", lambda: nn.composed.residual(nn.feed_forward(4, 8)), rows(2, 3, 4), None),
    ("encoder block", lambda: nn.encoder_block(8, 2, 16, causal=True, norm="pre"), rows(2, 5, 8), None),
    ("decoder block", lambda: nn.decoder_block(8, 2, 16), lambda: (rows(2, 5, 8)(), rows(2, 3, 8)()), None),
    ("decoder lm", lambda: nn.decoder_lm(7, 8, 2, 16, 1, 6, positional="sinusoidal"), ids(7, 2, 6), None),
    ("encoder decoder", lambda: nn.encoder_decoder(7, 9, 8, 2, 16, 1, 6), lambda: (IDS, IDS[:, :4]), None),
    ("token loss", lambda: nn.token_cross_entropy(ignore_index=0), None, None),
    (
        "convolution",
        lambda: chain(
            nn.conv1d(1, 4, 3, stride=2, padding=1),
            nn.relu,
            nn.max_pool(2),
            nn.conv1d(4, 4, 3, groups=2, init="he"),
            nn.avg_pool(2, padding=1),
            nn.flatten(),
            nn.dense(8, 3, None),
        ),
        rows(2, 20, 1),
        None,
    ),
    (
        "conv2d",
        lambda: (
            nn.conv2d(2, 3, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), dtype=np.float32)
            >> nn.max_pool((2, 2), stride=1)
        ),
        rows(2, 8, 8, 2, dtype=np.float32),
        None,
    ),
    (
        "composed convolution",
        lambda: chain(nn.composed.conv1d(2, 4, 3, groups=2), nn.composed.max_pool(2), nn.composed.avg_pool(2)),
        rows(2, 12, 2),
        None,
    ),
    (
        "convolution pieces",
        lambda: (
            nn.composed.conv2d(2, 2, 2),
            nn.composed.patches((2, 2), stride=1, pad_value=-1.5),
            nn.composed.window_max(),
            nn.composed.window_mean(),
        ),
        None,
        None,
    ),
    # recurrence
    ("bidirectional gru", lambda: nn.bidirectional(nn.gru(1, 3)) >> nn.linear(6, 2), rows(2, 5, 1), None),
    ("rnn and lstm", lambda: nn.rnn(2, 3, nonlinearity="relu") >> nn.lstm(3, 2, dtype=np.float64), rows(2, 4, 2), None),
    (
        "scan of cells",
        lambda: (
            scan(nn.composed.gru_cell(2, 3), axis=1),
            scan(nn.composed.rnn_cell(2, 3)),
            scan(nn.composed.lstm_cell(2, 3)),
        ),
        None,
        None,
    ),
    # the faithful level and the profunctor encoding
    (
        "faithful pre-lenses",
        lambda: faithful._network.make_mlp_l(3, [2, 1]),
        lambda: [0.5, -1.0, 2.0],
        faithful_params(3, [2, 1]),
    ),
    (
        "faithful pieces",
        lambda: (
            faithful.linear_l(3),
            faithful._network.affine_l(3),
            faithful.neuron_l(3),
            faithful._network.layer_l(3, 2),
        ),
        None,
        None,
    ),
    ("make_mlp", lambda: from_tamb(faithful.make_mlp(3, [4, 1])), lambda: [0.5, -1.0, 2.0], faithful_params(3, [4, 1])),
    (
        "trilens pieces",
        lambda: (faithful.linear_t(3), faithful.affine_t(3), faithful.neuron_t(3), faithful.layer(3, 2), branch_t(2)),
        None,
        None,
    ),
    (
        "trilens composites",
        lambda: (
            tri_compose(to_tamb(nn.dense(2, 2)), to_tamb(nn.dense(2, 2))),
            tri_tensor(to_tamb(nn.tanh), faithful.bias_t),
            vec_lens(2, faithful.make_mlp(2, [1])),
            batch_n(2, faithful.make_mlp(2, [1])),
        ),
        None,
        None,
    ),
    ("batch loss", lambda: faithful._train.batch_loss_l(faithful.make_mlp(3, [2, 1]), 4), None, None),
]


def _lenses(made: Any) -> list[Any]:
    return list(made) if isinstance(made, tuple) else [made]


def _calls(node: Any) -> set[str]:
    """Every constructor name a description uses."""
    if isinstance(node, dict):
        found = {node["call"]} if isinstance(node.get("call"), str) else set()
        return found.union(*(_calls(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_calls(v) for v in node))
    return set()


#: Public functions that make lenses from the caller's functions (no file can hold code).
TAKES_FUNCTIONS = {"prelens.iso_lens", "prelens.nn.pointwise"}


def _lens_makers() -> dict[str, Any]:
    out = {}
    for module in (prelens, nn):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                ret = str(inspect.signature(obj).return_annotation)
                if any(t in ret for t in ("Lens", "Activation")):
                    out[f"{module.__name__}.{name}"] = obj
    return out


# ------------------------------------------------------------------ recording


def test_every_public_lens_constructor_records_its_calls():
    unregistered = sorted(
        name
        for name, fn in _lens_makers().items()
        if name not in TAKES_FUNCTIONS and not (hasattr(fn, "__prelens_constructor__") and C.registered(name) is fn)
    )
    assert unregistered == [], (
        "decorate these with prelens.core._registry.constructor (or list them in TAKES_FUNCTIONS)"
    )
    for name in TAKES_FUNCTIONS:
        assert name in _lens_makers() and C.registered(name) is None


def test_registered_names_are_the_public_names():
    """``prelens.nn.mlp`` is registered as ``prelens.nn.mlp``: the name a user imports it by.

    A constructor whose public name moved in 0.4 (``prelens.nn.feed_forward_composed``, now
    ``prelens.nn.composed.feed_forward``) keeps its 0.3 registered name, so files keep loading:
    that name is still there for one release, deprecated (in the module's ``_MOVED`` table)."""
    import importlib
    import warnings

    for name, fn in C._CONSTRUCTORS.items():
        if not name.startswith("prelens."):
            continue
        if name == "prelens.PreLens.named":
            assert PreLens.named is fn
            continue
        module_name, attr = name.rsplit(".", 1)
        module = importlib.import_module(module_name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(module, attr) is fn, name
        if caught:
            assert attr in module._MOVED and module._MOVED[attr][1] is fn, name


def test_the_zoo_uses_every_registered_constructor():
    used: set[str] = set()
    for _, make, _, _ in ZOO:
        for lens in _lenses(make()):
            used |= _calls(D.describe(lens))
    own = {n for n in C._CONSTRUCTORS if n.startswith("prelens.")}
    assert own - used == set(), "add a lens made by these to ZOO"


def test_a_description_is_plain_json():
    lens = nn.mlp(4, [8, 3], "relu", dtype=np.float32) >> nn.softmax
    desc = D.describe(lens)
    assert desc == {
        "call": "prelens.pre_compose",
        "args": [
            {"call": "prelens.nn.mlp", "args": [4, [8, 3], "relu"], "kwargs": {"dtype": {"dtype": "float32"}}},
            {"value": "prelens.nn.softmax"},
        ],
    }
    assert json.loads(json.dumps(desc)) == desc


def test_arguments_are_recorded_as_given_not_as_later_changed():
    sizes = [8, 3]
    lens = nn.mlp(4, sizes)
    sizes.append(5)
    assert D.describe(lens)["args"] == [4, [8, 3]]
    mean = np.array([1.0, 2.0])
    norm = nn.normalize(mean, [1.0, 1.0])
    mean[0] = 100.0  # the lens copied its statistics: so must its record
    assert D.describe(norm)["args"][0] == {"array": [1.0, 2.0], "dtype": "float64", "shape": [2]}


def test_arrays_tuples_dicts_and_numpy_scalars_in_arguments():
    @register_constructor(name="tests.kinds")
    def kinds(a: Any, t: Any, d: Any, x: Any, b: Any, dt: Any) -> Any:
        return PreLens(lambda p, s: ((), s), lambda m, da: ((), da), name=f"kinds({a.shape}, {t}, {d}, {x}, {b}, {dt})")

    lens = kinds(
        np.arange(6, dtype=np.int32).reshape(2, 3),
        (1, "a"),
        {"k": [1.5]},
        np.float32(0.5),
        np.bool_(True),
        np.dtype("int64"),
    )
    desc = json.loads(json.dumps(D.describe(lens)))
    assert desc["args"][0] == {"array": [0, 1, 2, 3, 4, 5], "dtype": "int32", "shape": [2, 3]}
    again = D.rebuild(desc)
    assert repr(again) == repr(lens)


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize(("name", "make", "inputs", "params_of"), ZOO, ids=[z[0] for z in ZOO])
def test_zoo_round_trip(tmp_path: Path, name: str, make: Any, inputs: Any, params_of: Any):
    for k, lens in enumerate(_lenses(make())):
        text = json.dumps(D.describe(lens))
        assert repr(D.rebuild(json.loads(text))) == repr(lens)
        params = params_of(lens) if params_of else (lens.init(3) if getattr(lens, "init_fn", None) else ())
        path = tmp_path / f"{k}.prelens"
        save_model(path, lens, params, metadata={"zoo": name})
        loaded = load_model(path)
        assert isinstance(loaded, LoadedModel)
        assert repr(loaded.lens) == repr(lens) and loaded.metadata == {"zoo": name}
        assert prelens.core._tree.structure_mismatch(params, loaded.params, shapes=True) is None
        assert all(np.array_equal(a, b) for a, b in zip(tree_leaves(params), tree_leaves(loaded.params)))
        if inputs is not None:
            x = inputs()
            assert _same(forward(loaded.lens, loaded.params, x), forward(lens, params, x))


def _same(a: Any, b: Any) -> bool:
    la, lb = tree_leaves(a), tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb))


@pytest.mark.parametrize(
    "value",
    [getattr(prelens, n) for n in prelens.__all__ if isinstance(getattr(prelens, n), (PreLens, prelens.TriLens))]
    + [getattr(nn, n) for n in nn.__all__ if isinstance(getattr(nn, n), (PreLens, prelens.TriLens))]
    + [getattr(faithful, n) for n in faithful.__all__ if isinstance(getattr(faithful, n), (PreLens, prelens.TriLens))],
    ids=repr,
)
def test_public_lens_values_are_described_by_name(value: Any):
    desc = D.describe(value)
    assert set(desc) == {"value"}
    assert D.rebuild(desc) is value


@pytest.mark.parametrize("name", ["bias_l", "activ_l", "bias_t", "activ_t", "loss_l"])
def test_faithful_values_load_under_their_0_3_names(name: str):
    """0.3 files name the faithful lens values ``prelens.nn.bias_l``; 0.4 writes ``prelens.faithful.bias_l``."""
    value = getattr(faithful, name)
    assert D.describe(value) == {"value": f"prelens.faithful.{name}"}
    assert D.rebuild({"value": f"prelens.nn.{name}"}) is value


def test_reloaded_in_a_fresh_process_gives_identical_outputs(tmp_path: Path):
    model = nn.decoder_lm(7, 8, 2, 16, 1, 6)
    params = model.init(5)
    path, x_path, out_path = tmp_path / "lm.prelens", tmp_path / "x.npy", tmp_path / "y.npy"
    save_model(path, model, params, metadata={"note": "fresh"})
    x = np.random.default_rng(2).integers(0, 7, (3, 6))
    np.save(x_path, x)
    script = (
        "import sys, numpy as np, prelens\n"
        "lens, params, meta = prelens.load_model(sys.argv[1])\n"
        "assert meta == {'note': 'fresh'}\n"
        "np.save(sys.argv[3], prelens.forward(lens, params, np.load(sys.argv[2])))\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", script, str(path), str(x_path), str(out_path)], check=True, env=env)
    assert np.array_equal(np.load(out_path), forward(model, params, x))


def test_a_model_file_is_a_checkpoint_and_a_plain_npz(tmp_path: Path):
    path = tmp_path / "m.prelens"
    save_model(path, nn.dense(3, 2), nn.dense(3, 2).init(0), metadata={"a": [1, 2]})
    with np.load(path, allow_pickle=False) as archive:
        assert set(archive.files) == {"__prelens__", ".weight", ".bias"}
    meta = load_metadata(path)
    assert meta["metadata"] == {"a": [1, 2]}
    assert meta["prelens-model"]["format"] == "prelens-model" and meta["prelens-model"]["version"] == 1
    assert json.loads(meta["prelens-model"]["lens"]) == {"call": "prelens.nn.dense", "args": [3, 2]}


# ------------------------------------------------------------------ refused at save


def _own() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    return PreLens(lambda p, s: ((), 2 * s), lambda m, da: ((), 2 * da), name="double")


HOW = r"build this part in a function decorated with @prelens\.io\.register_constructor"


@pytest.mark.parametrize(
    ("make", "where", "what"),
    [
        (_own, r"at lens:", r"the lens double was not made by a registered constructor"),
        (lambda: nn.dense(3, 2) >> _own(), r"at lens\.args\[1\]:", r"the lens double"),
        (lambda: chain(nn.dense(3, 3), nn.residual(_own())), r"at lens\.args\[1\]\.args\[0\]:", r"the lens double"),
        (
            lambda: nn.dense(3, 2, nn.pointwise("softplus", np.exp, lambda z, da: da)),
            r"at lens\.args\[2\]:",
            r"the lens softplus",
        ),
        (lambda: nn.dense(3, 2).dimap_s(lambda s: s, lambda ds: ds), r"at lens:", r"the lens dimap_s"),
        (
            lambda: prelens.core.parameter_free("sq", lambda s: (s, s * s), lambda s, da: 2 * s * da),
            r"at lens:",
            "the lens sq",
        ),
    ],
)
def test_an_undescribable_lens_is_refused_at_save_naming_the_part(tmp_path: Path, make: Any, where: str, what: str):
    path = tmp_path / "m.prelens"
    with pytest.raises(ArgumentError, match=rf"^save_model: cannot describe .*{where} {what}.*{HOW}"):
        save_model(path, make(), ())
    assert not path.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("arg", "what"),
    [
        (lambda x: x, r"an argument that is a function \(a model file holds data, not code\)"),
        (float("nan"), r"the number nan \(JSON holds finite numbers only\)"),
        (np.array([1.0, np.inf]), r"an array with NaN or infinite entries"),
        (np.array(["a"]), r"an array of dtype <U1"),
        ({1: 2}, r"a dict whose keys are not all strings"),
        (object(), r"an argument that is object"),
    ],
)
def test_an_argument_that_is_not_data_is_refused_at_save(tmp_path: Path, arg: Any, what: str):
    @register_constructor(name="tests.takes")
    def takes(x: Any) -> Any:
        return PreLens(lambda p, s: ((), s), lambda m, da: ((), da), name="takes")

    with pytest.raises(ArgumentError, match=rf"at lens\.args\[0\]: {what}"):
        save_model(tmp_path / "m.prelens", takes(arg), ())


def test_a_long_left_nested_sequence_is_refused_with_advice(tmp_path: Path):
    lens = nn.dense(2, 2)
    for _ in range(C.MAX_DEPTH + 1):
        lens = lens >> nn.tanh
    with pytest.raises(ArgumentError, match=r"lenses nested more than 100 deep \(join long sequences with chain\)"):
        save_model(tmp_path / "m.prelens", lens, lens.init(0))
    flat = chain(nn.dense(2, 2), *[nn.tanh] * (C.MAX_DEPTH + 1))
    save_model(tmp_path / "m.prelens", flat, flat.init(0))
    assert repr(load_model(tmp_path / "m.prelens").lens) == repr(flat)


@pytest.mark.parametrize(
    ("params", "found"),
    [
        (nn.dense(3, 3).init(0), r"at \.weight: expected shape \(3, 2\), got shape \(3, 3\)"),
        ([np.zeros((3, 2)), np.zeros(2)], r"at <root>: expected DenseParams, got list of 2"),
        (nn.dense(3, 2, dtype=np.float32).init(0), r"at \.weight: expected f64\[3,2\], got f32\[3,2\]"),
    ],
)
def test_parameters_that_do_not_fit_the_lens_are_refused_at_save(tmp_path: Path, params: Any, found: str):
    with pytest.raises(StructureError, match=rf"^save_model: the parameters do not fit dense\(3→2, tanh\).*: {found}$"):
        save_model(tmp_path / "m.prelens", nn.dense(3, 2), params)
    assert os.listdir(tmp_path) == []


def test_bad_metadata_and_paths_are_refused_before_writing(tmp_path: Path):
    lens = nn.dense(3, 2)
    with pytest.raises(ArgumentError, match=r"^save_model: metadata must be a mapping with string keys"):
        save_model(tmp_path / "m.prelens", lens, lens.init(0), metadata=[("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"^save_model: metadata must be JSON-serialisable"):
        save_model(tmp_path / "m.prelens", lens, lens.init(0), metadata={"f": len})
    save_model(tmp_path / "ok.prelens", lens, lens.init(0), metadata={"accuracy": np.float32(0.75)})
    assert load_model(tmp_path / "ok.prelens").metadata == {"accuracy": 0.75}
    os.remove(tmp_path / "ok.prelens")
    with pytest.raises(ArgumentError, match=r"^save_model: path must be a file path"):
        save_model(None, lens, lens.init(0))  # type: ignore[arg-type]
    with pytest.raises(StructureError, match=r"save_model: lens must be a PreLens or a TriLens"):
        save_model(tmp_path / "m.prelens", "mlp", ())
    with pytest.raises(CheckpointError, match=rf"^cannot write checkpoint {tmp_path}: it is a directory"):
        save_model(tmp_path, lens, lens.init(0))
    assert os.listdir(tmp_path) == []


def test_a_failed_save_leaves_the_old_file(tmp_path: Path):
    path = tmp_path / "m.prelens"
    save_model(path, nn.dense(3, 2), nn.dense(3, 2).init(0))
    before = path.read_bytes()
    with pytest.raises(ArgumentError):
        save_model(path, _own(), ())
    assert path.read_bytes() == before


# ------------------------------------------------------------------ the registry


@register_constructor
def scaled(c: float, n: int = 2) -> Any:
    """A user's constructor, registered under its default name ``tests.test_model_file.scaled``."""
    return nn.dense(n, n, None) >> nn.normalize([0.0] * n, [c] * n)


def test_a_registered_constructor_round_trips_and_an_unregistered_name_is_refused(tmp_path: Path):
    name = "tests.test_model_file.scaled"
    assert C.registered(name) is scaled
    path = tmp_path / "m.prelens"
    lens = chain(scaled(2.0, n=3), nn.tanh)
    assert D.describe(lens)["args"][0] == {"call": name, "args": [2.0], "kwargs": {"n": 3}}
    save_model(path, lens, lens.init(0))
    assert repr(load_model(path).lens) == repr(lens)
    saved = C._CONSTRUCTORS.pop(name)
    try:
        with pytest.raises(
            ModelFileError, match=rf"at lens\.args\[0\] of the description: unknown constructor '{name}'"
        ):
            load_model(path)
    finally:
        C._CONSTRUCTORS[name] = saved


def test_a_dtype_given_as_a_python_or_numpy_type_round_trips(tmp_path: Path):
    for dtype in (float, np.float32, np.dtype("float32"), "float32"):
        lens = nn.dense(3, 2, dtype=dtype)
        save_model(tmp_path / "m.prelens", lens, lens.init(0))
        assert repr(load_model(tmp_path / "m.prelens").lens) == repr(lens)


def test_register_constructor_checks_its_name():
    def f() -> Any:
        return nn.tanh

    for bad in ["prelens.nn.mlp", "prelens", "a..b", "1up", "", "x" * 201]:
        with pytest.raises(ArgumentError, match=r"^register_constructor: name must be"):
            register_constructor(f, name=bad)
    with pytest.raises(ArgumentError, match=r"^register_constructor: name must be"):
        register_constructor(name="not ok")  # checked before the function comes
    register_constructor(f, name="tests.same")
    register_constructor(f, name="tests.same")  # the same function again (a module reloaded): fine
    with pytest.raises(ArgumentError, match=r"already registered for .*\.f; pass another name="):
        register_constructor(lambda: nn.tanh, name="tests.same")


def test_registering_keeps_the_function_usable():
    @register_constructor(name="tests.usable")
    def usable(n: int) -> Any:
        """Docs stay."""
        return nn.dense(n, n)

    assert usable.__doc__ == "Docs stay." and usable.__name__ == "usable"
    assert repr(usable(2)) == "dense(2→2, tanh)"
    assert D.describe(usable(2)) == {"call": "tests.usable", "args": [2]}


# ------------------------------------------------------------------ versions and foreign files


def test_a_newer_format_is_refused_with_advice_to_upgrade(tmp_path: Path):
    path = craft(tmp_path / "m.prelens", {"value": "prelens.copy_l"}, header={"version": 2, "prelens": "0.9.1"})
    with pytest.raises(
        ModelFileError,
        match=r"model format version 2, and this prelens reads version 1 \(written by prelens 0\.9\.1; upgrade",
    ):
        load_model(path)


@pytest.mark.parametrize("version", [0, -1, "1", 1.0, True, None, [1]])
def test_an_unknown_format_version_is_refused(tmp_path: Path, version: Any):
    path = craft(tmp_path / "m.prelens", {"value": "prelens.copy_l"}, header={"version": version})
    with pytest.raises(
        ModelFileError, match=r"model format version .*, and this prelens reads version 1 \(no prelens wrote"
    ):
        load_model(path)


def test_a_parameters_only_checkpoint_gets_advice(tmp_path: Path):
    path = tmp_path / "params.npz"
    save_checkpoint(path, nn.dense(3, 2).init(0), metadata={"dataset": "iris"})
    with pytest.raises(ModelFileError, match=r"holds parameters only .* prelens\.io\.load_checkpoint\(path, like="):
        load_model(path)


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ({"format": "other"}, r"the model header is not a prelens model description"),
        ({"lens": 3}, r"the model header has no description of its lens"),
        ({"lens": "{not json"}, r"the description is not strict JSON"),
        ({"lens": '{"value": NaN}'}, r"the description is not strict JSON"),
    ],
)
def test_malformed_headers_are_refused(tmp_path: Path, header: dict[str, Any], match: str):
    path = craft(tmp_path / "m.prelens", {"value": "prelens.copy_l"}, header=header)
    with pytest.raises(ModelFileError, match=match):
        load_model(path)


def test_missing_garbage_and_directory_paths(tmp_path: Path):
    with pytest.raises(ModelFileError, match=r"cannot be read: no such file$"):
        load_model(tmp_path / "none.prelens")
    (tmp_path / "junk.prelens").write_bytes(b"not a zip at all")
    with pytest.raises(ModelFileError, match=r"junk\.prelens: cannot be read: "):
        load_model(tmp_path / "junk.prelens")
    with pytest.raises(ModelFileError):
        load_model(tmp_path)
    with pytest.raises(ArgumentError, match=r"^load_model: path must be a file path"):
        load_model(3)  # type: ignore[arg-type]


# ------------------------------------------------------------------ hostile descriptions


def refused(path: str, match: str, *, trace: bool = False) -> int:
    """``load_model(path)`` must raise ModelFileError matching ``match``; the peak memory traced (with ``trace``)."""
    if trace:
        tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match=match):
            load_model(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1] if trace else 0
        if trace:
            tracemalloc.stop()
    return peak


DENSE = {"call": "prelens.nn.dense", "args": [3, 2]}


@pytest.mark.parametrize(
    ("description", "match"),
    [
        ({"call": "os.system", "args": ["echo hi"]}, r"at lens of the description: unknown constructor 'os\.system'"),
        ({"call": "builtins.eval", "args": ["1"]}, r"unknown constructor 'builtins\.eval'"),
        ({"call": "prelens.nn._mlp.mlp"}, r"unknown constructor 'prelens\.nn\._mlp\.mlp'"),
        ({"value": "prelens.nn.dense"}, r"unknown lens value 'prelens\.nn\.dense' \(not a public lens of prelens\)"),
        ({"value": "os.environ"}, r"unknown lens value 'os\.environ'"),
        ([1, 2], r"a lens must be described by an object, got a list"),
        ({"call": "prelens.nn.dense", "args": {"n_in": 3}}, r"args must be a list and kwargs an object"),
        ({"call": "prelens.nn.dense", "args": [3, 2], "code": "x"}, r'a lens must be \{"call"'),
        ({"call": "prelens.nn.dense", "args": [3, 2], "kwargs": {"__class__": 1}}, r"refused its arguments: TypeError"),
        (
            {"call": "prelens.nn.dense", "args": [3, 2], "kwargs": {"a b": 1}},
            r"keyword 'a b' is not a Python identifier",
        ),
        (
            {"call": "prelens.nn.dense", "args": [3, -2]},
            r"at lens of the description: prelens\.nn\.dense refused its arguments: dense: n_out",
        ),
        (
            {"call": "prelens.nn.dense", "args": [3, 2, "swish"]},
            r"prelens\.nn\.dense refused its arguments: dense\(3→2\): activation",
        ),
        (
            {"call": "prelens.nn.dense", "args": [3, {"object": 1}]},
            r"at lens\.args\[1\] of the description: an object argument needs one of the tags",
        ),
        (
            {"call": "prelens.nn.dense", "args": [3, 2], "kwargs": {"dtype": {"dtype": "object"}}},
            r"unknown dtype 'object'",
        ),
        (
            {"call": "prelens.nn.dense", "args": [3, 2], "kwargs": {"dtype": {"dtype": "float32", "x": 1}}},
            r"a dtype argument has one key",
        ),
        (
            {"call": "prelens.nn.mlp", "args": [3, [10**7]]},
            r"at lens\.args\[1\]\[0\] of the description: the size 10000000 is more than",
        ),
        ({"call": "prelens.nn.dense", "args": [3, 2.5]}, r"refused its arguments"),
        (
            {"call": "prelens.nn.dense", "args": [{"array": [1, 2], "dtype": "int64", "shape": [3]}, 2]},
            r"an array of shape \[3\] needs 3 numbers",
        ),
        (
            {"call": "prelens.nn.dense", "args": [{"array": [1, 2], "dtype": "object", "shape": [2]}, 2]},
            r"unknown array dtype 'object'",
        ),
        (
            {"call": "prelens.nn.dense", "args": [{"array": [True], "dtype": "float64", "shape": [1]}, 2]},
            r"holds other values",
        ),
        (
            {"call": "prelens.nn.dense", "args": [{"array": [], "dtype": "int8", "shape": [-1]}, 2]},
            r"a short list of sizes",
        ),
        (
            {"call": "prelens.nn.dense", "args": [{"array": [300], "dtype": "int8", "shape": [1]}, 2]},
            r"do not fit int8",
        ),
        (
            {"call": "prelens.nn.mlp", "args": [3, {"tuple": [{"call": "os.system"}]}]},
            r"unknown constructor 'os\.system'",
        ),
    ],
)
def test_hostile_descriptions_are_refused_by_name_and_place(tmp_path: Path, description: Any, match: str):
    path = craft(tmp_path / "m.prelens", description, nn.dense(3, 2).init(0))
    refused(path, match)


def test_nothing_named_in_a_file_is_imported(tmp_path: Path):
    name = "tests_never_imported_module"
    path = craft(tmp_path / "m.prelens", {"call": f"{name}.make"})
    refused(path, rf"unknown constructor '{name}\.make'")
    assert name not in sys.modules


@pytest.mark.parametrize("levels", [C.MAX_DEPTH + 5, 5000, 100_000])
def test_deeply_nested_descriptions_are_refused(tmp_path: Path, levels: int):
    text = '{"call": "prelens.chain", "args": [' * levels + '{"value": "prelens.copy_l"}' + "]}" * levels
    if len(text) > 1_000_000:
        text = "[" * levels + "]" * levels  # as deep, within the size limit
    path = craft(tmp_path / "m.prelens", text=text)
    refused(path, r"nested (more than 100 deep|too deeply)|lenses nested more than 100 deep|must be described")


def test_a_huge_description_is_refused_before_parsing(tmp_path: Path):
    text = json.dumps({"call": "prelens.chain", "args": [{"value": "prelens.copy_l"}] * 40_000})
    assert len(text) > 1_000_000
    path = craft(tmp_path / "m.prelens", text=text)
    refused(path, r"the description has [\d,]+ characters \(at most 1,000,000\)")


def test_too_many_values_are_refused(tmp_path: Path):
    text = json.dumps({"call": "prelens.chain", "args": [[0] * 150_000, [0] * 150_000]})
    path = craft(tmp_path / "m.prelens", text=text)
    refused(path, r"more than 200000 values in the description")


def test_a_description_larger_than_its_parameters_is_refused_before_allocating(tmp_path: Path):
    """A tiny file describing a 60000×60000 layer: the init's draws are refused before numpy allocates."""
    path = craft(tmp_path / "m.prelens", {"call": "prelens.nn.dense", "args": [60_000, 60_000]}, nn.dense(3, 2).init(0))
    peak = refused(
        path, r"the description needs more random numbers drawn by init than the 8 stored parameter numbers", trace=True
    )
    assert peak < 50_000_000


def test_a_description_that_builds_too_much_is_refused(tmp_path: Path):
    """The faithful network builds one lens per neuron: a huge one is stopped by the budget of constructor calls."""
    path = craft(tmp_path / "m.prelens", {"call": "prelens.nn.make_mlp", "args": [3, [60_000, 60_000]]})
    refused(path, r"the description needs more constructor calls than the 0 stored parameter numbers justify")


def test_stored_parameters_that_do_not_fit_the_description_are_refused(tmp_path: Path):
    path = craft(tmp_path / "m.prelens", DENSE, nn.dense(3, 3).init(0))
    refused(path, r"the stored parameters do not fit the lens it describes: at \.weight: expected shape \(3, 2\)")
    path = craft(tmp_path / "m2.prelens", DENSE, nn.dense(3, 2, dtype=np.float32).init(0))
    refused(path, r"do not fit the lens it describes: at \.weight: expected f64\[3,2\], got f32\[3,2\]")


def test_flipped_bytes_never_load_wrong_data(tmp_path: Path):
    good = tmp_path / "good.prelens"
    model = nn.mlp(4, [6, 3])
    params = model.init(0)
    save_model(good, model, params, metadata={"classes": ["a", "b", "c"]})
    data = bytearray(good.read_bytes())
    rng = np.random.default_rng(7)
    loaded = 0
    for k in range(60):
        bad = bytearray(data)
        for i in rng.integers(0, len(bad), 1 + k % 3):
            bad[i] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"bad{k}.prelens"
        path.write_bytes(bytes(bad))
        try:
            lens, got, meta = load_model(path)
        except ModelFileError:
            continue
        loaded += 1
        assert repr(lens) == repr(model) and meta == {"classes": ["a", "b", "c"]}
        assert all(np.array_equal(a, b) for a, b in zip(tree_leaves(got), tree_leaves(params)))
    assert loaded < 60  # most flips are caught (by the archive's CRCs and the header checks)


def test_a_0_4_0_file_naming_rematerialize_loads_as_remat(tmp_path: Path):
    """0.4.0 registered checkpointing as ``prelens.nn.rematerialize``; the name is now ``remat``.

    The registry holds only the new name (files written now say ``remat``); the lookup maps the old one."""
    lens = nn.remat(nn.dense(4, 3))
    params = lens.init(1)
    desc = D.describe(lens)
    assert desc["call"] == "prelens.nn.remat"
    old = {**desc, "call": "prelens.nn.rematerialize"}
    path = craft(tmp_path / "old.prelens", old, params, header={"prelens": "0.4.0"})
    loaded = load_model(path)
    assert repr(loaded.lens) == repr(lens)
    assert D.describe(loaded.lens) == desc  # saved again, it names remat
    assert _same(forward(loaded.lens, loaded.params, X4), forward(lens, params, X4))
    dp, ds = loaded.lens.bwd(loaded.lens.fwd(loaded.params, X4)[0], np.ones((5, 3)))
    dp0, ds0 = lens.bwd(lens.fwd(params, X4)[0], np.ones((5, 3)))
    assert _same((dp, ds), (dp0, ds0))
    assert C.registered("prelens.nn.rematerialize") is C.registered("prelens.nn.remat") is nn.remat
    assert "prelens.nn.rematerialize" not in C._CONSTRUCTORS


def test_the_attention_twin_is_named_as_the_other_twins(tmp_path: Path):
    """It prints as ``multi_head_attention_composed`` (as ``feed_forward_composed``), not as the deprecated
    ``multi_head_attention_faithful`` (the faithful level is ``prelens.faithful``); files still name its
    registered 0.3 name, so they keep loading."""
    lens = nn.composed.multi_head_attention(4, 2, causal=True)
    assert repr(lens) == "multi_head_attention_composed(4, heads=2, causal)"
    assert D.describe(lens)["call"] == "prelens.nn.multi_head_attention_faithful"
    path = tmp_path / "twin.prelens"
    save_model(path, lens, lens.init(0))
    assert repr(load_model(path).lens) == repr(lens)
