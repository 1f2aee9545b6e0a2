"""Optimisers, checkpoints and the training loop, fed bad input.

* ``opt.init`` and ``opt.update`` with corrupted parameters, gradients and states;
* ``load_checkpoint`` of corrupted files (flipped, cut, inserted bytes; random
  bytes; a valid archive with a damaged header) and of good files against the
  wrong model;
* ``fit``, ``step``, ``evaluate``, ``predict`` and ``accuracy`` with bad data
  and arguments.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens.core import tree_paths
from prelens.errors import CheckpointError
from prelens.io import load_checkpoint, load_metadata, save_checkpoint
from prelens.learn import (
    AdagradState,
    Adam,
    AdamState,
    Momentum,
    MomentumState,
    RMSpropState,
    ScheduledState,
    adagrad,
    adam,
    adamw,
    clip_by_global_norm,
    l2,
    learning_rate,
    momentum,
    rmsprop,
    sgd,
    warmup_cosine,
)
from prelens.learn import adam as adam_lens
from prelens.nn import mlp, softmax_cross_entropy
from prelens.train import EarlyStopping, accuracy, evaluate, fit, predict, step

from ._bad import NOT_ARRAYS, mutate
from ._harness import attempt
from .test_fuzz_lenses import examples

#: The public names fuzzed here (see ``test_fuzz_coverage.py``): the optimisers' ``init`` and
#: ``update`` with their states corrupted, the checkpoint files, the training loop and evaluation.
COVERS = (
    Adam,
    AdamState,
    Momentum,
    MomentumState,
    load_checkpoint,
    load_metadata,
    save_checkpoint,
    fit,
    evaluate,
    predict,
    accuracy,
    step,
    *(AdagradState, RMSpropState, ScheduledState),  # issue 14: their optimisers' update is fuzzed below
)

OPTIMIZERS = {
    "sgd": lambda: sgd(0.1),
    "momentum": lambda: momentum(0.1, nesterov=True),
    "adam": lambda: adam(0.01),
    "adagrad": lambda: adagrad(0.1),
    "rmsprop": lambda: rmsprop(0.01),
    "adamw": lambda: adamw(0.01),
    "scheduled adam": lambda: adam(warmup_cosine(0.01, 2, 10)),
    "clipped momentum": lambda: clip_by_global_norm(momentum(0.1), 1.0),
}


def _params() -> Any:
    return mlp(3, [4, 2]).init(0)


# ---------------------------------------------------------------- optimisers


def _fits_params(params: Any) -> Any:
    def check(out: Any) -> None:
        assert isinstance(out, tuple) and len(out) == 2, "update must return (params, state)"
        new = out[0]
        for (path, x), (_, y) in zip(tree_paths(params), tree_paths(new)):
            assert type(x) is type(y) and np.shape(x) == np.shape(y), f"the new parameters differ at {path}"
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype, f"the dtype changed at {path}"

    return check


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@settings(max_examples=examples(40))
@given(data=st.data())
def test_optimizer_of_bad_input(name: str, data: st.DataObject) -> None:
    opt = OPTIMIZERS[name]()
    params = _params()
    grads = mlp(3, [4, 2]).init(1)
    state = opt.init(params)
    target = data.draw(st.sampled_from(["params", "grads", "state", "init"]), label="target")
    if target == "init":
        bad, how = mutate(data, params, "params")
        attempt(f"{name}.init: {how}", lambda: opt.init(bad), inputs=bad)
        return
    if target == "params":
        params, how = mutate(data, params, "params")
    elif target == "grads":
        grads, how = mutate(data, grads, "grads")
    else:
        state, how = mutate(data, state, "state")
    check = _fits_params(params) if target != "params" else None
    attempt(
        f"{name}.update: {how}", lambda: opt.update(grads, state, params), inputs=(params, grads, state), check=check
    )


# --------------------------------------------------------------- checkpoints


@pytest.fixture(scope="module")
def good_file() -> Iterator[tuple[str, bytes, Any]]:
    tree = {"params": _params(), "opt_state": adam(0.1).init(_params()), "step": 3, "name": "run"}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "good.npz")
        save_checkpoint(path, tree, metadata={"epoch": 2})
        with open(path, "rb") as f:
            yield path, f.read(), tree


def _corrupt(data: st.DataObject, raw: bytes) -> tuple[bytes, str]:
    how = data.draw(st.sampled_from(["flip", "cut", "insert", "zero", "random", "empty", "prefix"]), label="how")
    b = bytearray(raw)
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 8), label="flips")):
            i = data.draw(st.integers(0, len(b) - 1), label="at")
            b[i] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    elif how == "cut":
        b = b[: data.draw(st.integers(0, len(b) - 1), label="keep")]
    elif how == "insert":
        i = data.draw(st.integers(0, len(b)), label="at")
        b[i:i] = data.draw(st.binary(min_size=1, max_size=16), label="bytes")
    elif how == "zero":
        i = data.draw(st.integers(0, len(b) - 1), label="at")
        n = data.draw(st.integers(1, 64), label="n")
        b[i : i + n] = bytes(len(b[i : i + n]))
    elif how == "random":
        b = bytearray(data.draw(st.binary(max_size=512), label="bytes"))
    elif how == "empty":
        b = bytearray()
    else:
        b = bytearray(b"\x93NUMPY") + b  # looks like a .npy header
    return bytes(b), how


@settings(max_examples=examples(120))
@given(data=st.data())
def test_load_of_corrupt_bytes(good_file: tuple[str, bytes, Any], data: st.DataObject) -> None:
    _, raw, tree = good_file
    bad, how = _corrupt(data, raw)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bad.npz")
        with open(path, "wb") as f:
            f.write(bad)
        like = tree if data.draw(st.booleans(), label="like") else None
        outcome, result = attempt(f"load of a file with bytes {how}", lambda: load_checkpoint(path, like=like))
        if outcome == "rejected":
            assert isinstance(result, CheckpointError), f"load raised {type(result).__name__}, not CheckpointError"
        attempt(f"load_metadata of a file with bytes {how}", lambda: load_metadata(path))


#: What a hostile header may claim at one node of the tree description.
HOSTILE_VALUES: list[Any] = [
    [10**13], [2**62, 2**62], [-1], [1.5], list(range(70)), "f8", None, {}, 10**30, "<f8", "|O", "V8", "(3,)f8",
    "<U5", ">f8", "i1", "x" * 100, "__prelens__", "[0].weight", 0, -5, [[[]]],
]  # fmt: skip


def _nodes_of(spec: Any) -> list[dict[str, Any]]:
    """Every node dict of a tree description, without recursion."""
    out, stack = [], [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out.append(node)
            stack.extend(node.get("children", []) if isinstance(node.get("children"), list) else [])
    return out


def _rewrite_header(raw: bytes, text: str) -> bytes:
    """The archive ``raw`` with its ``__prelens__`` member replaced by the JSON ``text``."""
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        content = {n: z.read(n) for n in z.namelist()}
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array(text))
    content["__prelens__.npy"] = buf.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, member in content.items():
            z.writestr(name, member)
    return out.getvalue()


@settings(max_examples=examples(80))
@given(data=st.data())
def test_load_of_a_hostile_tree_description(good_file: tuple[str, bytes, Any], data: st.DataObject) -> None:
    """A well-formed archive whose JSON description lies: shapes, dtypes, keys, kinds, nesting.

    Every case is refused with a CheckpointError or loads correctly, and never takes more than a
    few MiB of memory (the file is a few KiB; a lie about sizes must not be believed).
    """
    import json
    import tracemalloc

    path, raw, tree = good_file
    with np.load(path) as archive:
        header = json.loads(str(archive["__prelens__"][()]))
    nodes = _nodes_of(header["tree"])
    nests: list[str] = []  # deep values are spliced in as text (json itself would recurse)
    for _ in range(data.draw(st.integers(1, 3), label="lies")):
        node = data.draw(st.sampled_from(nodes), label="node")
        field = data.draw(st.sampled_from(sorted({*node, "kind", "shape", "dtype", "key"})), label="field")
        how = data.draw(st.sampled_from(["value", "nest", "drop"]), label="how")
        if how == "drop":
            node.pop(field, None)
        elif how == "nest":
            depth = data.draw(st.sampled_from([99, 101, 300, 3000]), label="depth")
            if field == "children":
                nests.append("[" + '{"kind": "list", "children": [' * depth + "]}" * depth + "]")
            else:
                nests.append("[" * depth + "]" * depth)
            node[field] = f"@nest{len(nests) - 1}@"
        else:
            node[field] = data.draw(st.sampled_from(HOSTILE_VALUES), label="value")
    text = json.dumps(header)
    for i, nest in enumerate(nests):
        text = text.replace(f'"@nest{i}@"', nest)
    like = tree if data.draw(st.booleans(), label="like") else None
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.npz")
        with open(bad, "wb") as f:
            f.write(_rewrite_header(raw, text))
        tracemalloc.start()
        try:
            outcome, result = attempt("load of a hostile description", lambda: load_checkpoint(bad, like=like))
            attempt("load_metadata of a hostile description", lambda: load_metadata(bad))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        if outcome == "rejected":
            assert isinstance(result, CheckpointError), f"load raised {type(result).__name__}, not CheckpointError"
        assert peak < 16 * 2**20, f"load took {peak / 2**20:.0f} MiB for a file of {len(raw)} bytes"


@settings(max_examples=examples(60))
@given(data=st.data())
def test_load_against_the_wrong_model(good_file: tuple[str, bytes, Any], data: st.DataObject) -> None:
    path, _, tree = good_file
    like, how = mutate(data, tree["params"], "like")
    outcome, result = attempt(f"load with like: {how}", lambda: load_checkpoint(path, like={**tree, "params": like}))
    if outcome == "rejected":
        assert isinstance(result, CheckpointError)


@settings(max_examples=examples(40))
@given(data=st.data())
def test_save_of_bad_trees_and_paths(data: st.DataObject) -> None:
    tree, how = mutate(data, {"params": _params(), "step": 1}, "tree")
    with tempfile.TemporaryDirectory() as d:
        where = data.draw(st.sampled_from(["ok", "missing dir", "is a dir", "bad type"]), label="path")
        path: Any = {
            "ok": os.path.join(d, "c.npz"),
            "missing dir": os.path.join(d, "no", "such", "c.npz"),
            "is a dir": d,
            "bad type": 3,
        }[where]
        meta = data.draw(st.sampled_from([None, {"a": 1}, {"a": np.nan}, {"a": object()}, "m", [1]]), label="meta")
        attempt(f"save: {how}, path {where}, metadata {meta!r}", lambda: save_checkpoint(path, tree, metadata=meta))


# ------------------------------------------------------------------ training


#: fit's arguments of issue 14, with bad values beyond the general pool.
FIT_EXTRAS: dict[str, list[Any]] = {
    "validation": [(np.ones((3, 3)), np.zeros(2, int)), (np.full((2, 3), np.nan), np.zeros(2, int)), (np.ones(3),)],
    "metrics": [{"accuracy": accuracy}, {"acc": 3}, {3: accuracy}, ["accuracy"]],
    "train_metrics": ["yes", 1, None],
    "penalty": [l2(0.1), learning_rate(0.1), mlp(3, [2])],
    "callbacks": [[EarlyStopping()], [EarlyStopping("loss"), EarlyStopping("loss")], [EarlyStopping], [print]],
    "resume": ["/no/such/dir/c.npz", ".", 3, b"c.npz"],
}


def _task() -> tuple[Any, Any, Any, Any]:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((12, 3))
    return mlp(3, [4, 2], last_activation=None), softmax_cross_entropy, xs, rng.integers(0, 2, 12)


@settings(max_examples=examples(40))
@given(data=st.data())
def test_fit_and_evaluation_of_bad_input(data: st.DataObject) -> None:
    model, loss, xs, ys = _task()
    kwargs: dict[str, Any] = {"epochs": 2, "batch_size": 4, "optimizer": sgd(0.1), "rng": 0, "progress": False}
    target = data.draw(
        st.sampled_from(
            ["xs", "ys", "data", "epochs", "batch_size", "optimizer", "rng", "params", "shuffle", *FIT_EXTRAS]
        ),
        label="target",
    )
    data_ = (xs, ys)
    if target == "xs":
        xs, how = mutate(data, xs, "xs")
        data_ = (xs, ys)
    elif target == "ys":
        ys, how = mutate(data, ys, "ys")
        data_ = (xs, ys)
    elif target == "data":
        data_, how = mutate(data, data_, "data")
    elif target == "params":
        kwargs["params"], how = mutate(data, model.init(0), "params")
    elif target in FIT_EXTRAS:
        kwargs[target] = data.draw(st.sampled_from([*NOT_ARRAYS, *FIT_EXTRAS[target]]), label=target)
        how = f"{target}={kwargs[target]!r}"
    else:
        extra = [Adam, adam_lens(0.1) @ adam_lens(0.1), learning_rate(0.1)] if target == "optimizer" else []
        kwargs[target] = data.draw(
            st.sampled_from([*NOT_ARRAYS, *extra, -2, 0, np.nan, 10**9 if target == "batch_size" else -5]), label=target
        )
        how = f"{target}={kwargs[target]!r}"
    inputs = (data_, kwargs.get("params", ()))
    attempt(f"fit: {how}", lambda: fit(model, loss, data_, **kwargs), inputs=inputs)
    params = model.init(0)
    fn = data.draw(st.sampled_from(["evaluate", "predict", "accuracy", "step"]), label="function")
    run = {
        "evaluate": lambda: evaluate(model, loss, params, xs, ys),
        "predict": lambda: predict(
            model, params, xs, batch_size=data.draw(st.sampled_from([None, 5, 0, "b", -1]), label="bs")
        ),
        "accuracy": lambda: accuracy(model, params, xs, ys),
        "step": lambda: step(model, loss, params, (xs, ys), sgd(0.1), ()),
    }[fn]
    attempt(f"{fn}: {how}", run, inputs=(xs, ys))


# ------------------------------------------------------------------ resuming from a hostile checkpoint

#: Values a hostile file may hold in place of a field of fit's training position.
HOSTILE_POSITION: list[Any] = [None, -1, 10**30, 1.5, "x", [], {}, [1, 2], {"uint64": [1]}, True, {"a": {"b": 1}}]


@pytest.fixture(scope="module")
def fit_checkpoint() -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """A checkpoint fit wrote mid-run (its tree and metadata, to be rewritten with hostile fields)."""
    model, loss, xs, ys = _task()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.npz")
        fit(model, loss, (xs, ys), 2, 4, adam(0.01), rng=0, progress=False, checkpoint_path=path)
        yield d, load_checkpoint(path), load_metadata(path)


@settings(max_examples=examples(40))
@given(data=st.data())
def test_resume_from_a_hostile_training_position(fit_checkpoint: tuple[str, Any, dict[str, Any]], data: st.DataObject):
    directory, tree, meta = fit_checkpoint
    position = dict(meta["fit"])
    key = data.draw(st.sampled_from([*sorted(position), "rng.state", "rng.bit_generator", "history"]), label="field")
    value = data.draw(st.sampled_from(HOSTILE_POSITION), label="value")
    hostile = {**meta}
    if key == "history":
        hostile["history"] = {**meta["history"], data.draw(st.sampled_from(sorted(meta["history"]))): value}
    elif key.startswith("rng."):
        position["rng"] = {**position["rng"], key[4:]: value}
    else:
        position[key] = value
    hostile.setdefault("fit", position)
    hostile["fit"] = position
    path = os.path.join(directory, "hostile.npz")
    save_checkpoint(path, tree, metadata=hostile)
    model, loss, xs, ys = _task()
    attempt(
        f"fit(resume=...) with {key} = {value!r}",
        lambda: fit(model, loss, (xs, ys), 3, 4, adam(0.01), progress=False, resume=path),
        inputs=(xs, ys),
    )
