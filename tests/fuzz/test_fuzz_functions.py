"""Every public function that takes data, fed bad data and bad arguments.

The tree toolkit, the structural isos, the trace, the conversions between the
faithful and the fast layouts, text generation, the faithful training loop and
the dataset helpers. Data arguments are corrupted with :func:`._bad.mutate`
(wrong shapes, ranks, dtypes, NaN/inf, empty batches, wrong tree structures),
the other arguments replaced by bad values; an accepted call must return the
right answer, checked against a reference written here.
"""

from __future__ import annotations

import importlib.util
import math
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prelens
import prelens.diagram
import prelens.io
import prelens.learn
import prelens.train
from prelens import datasets, faithful, learn, nn
from prelens.train import value_and_grad

from ._harness import close_to, deltas_fit
from .test_fuzz_constructors import DTYPES, LENSES, SEEDS, Ctor, run_case
from .test_fuzz_lenses import examples

# ------------------------------------------------------------------ references


def _leaves(x: Any) -> list[Any]:
    """The leaves of a tree, depth first: tuples (named or not) and lists by position, dicts by value."""
    if isinstance(x, (tuple, list)):
        return [leaf for c in x for leaf in _leaves(c)]
    if isinstance(x, dict):
        return [leaf for c in x.values() for leaf in _leaves(c)]
    return [] if x is None else [x]


def _is_number(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iufc"
    return isinstance(x, (int, float, complex, np.number)) and not isinstance(x, (bool, np.bool_))


def _same_structure(a: Any, b: Any, shapes: bool) -> bool:
    """The reference for ``structure_mismatch(a, b, shapes=shapes) is None``.

    Nodes: tuples (a named tuple fits only its own type), lists, dicts (keys in order) and None.
    """

    def kind(x: Any) -> str:
        for k, t in (("tuple", tuple), ("list", list), ("dict", dict)):
            if isinstance(x, t):
                return k
        return "none" if x is None else "leaf"

    ka = kind(a)
    if ka != kind(b):
        return False
    if ka == "tuple" and (hasattr(a, "_fields") or hasattr(b, "_fields")) and type(a) is not type(b):
        return False
    if ka in ("tuple", "list"):
        return len(a) == len(b) and all(_same_structure(x, y, shapes) for x, y in zip(a, b))
    if ka == "dict":
        return list(a) == list(b) and all(_same_structure(a[k], b[k], shapes) for k in a)
    return ka == "none" or not shapes or np.shape(a) == np.shape(b)


def _all_close(a: Any, b: Any, rtol: float, atol: float) -> bool:
    """The reference for ``tree_allclose``: one structure and shapes, numbers close, other leaves equal."""
    if not _same_structure(a, b, True):
        return False
    for x, y in zip(_leaves(a), _leaves(b)):
        if _is_number(x) and _is_number(y):
            if not np.allclose(x, y, rtol=rtol, atol=atol):
                return False
        elif x is not y:
            try:
                if not np.array_equal(np.asarray(x), np.asarray(y)):
                    return False
            except (TypeError, ValueError):
                return False
    return True


def _pair(x: Any) -> tuple[Any, Any]:
    assert isinstance(x, (tuple, list)) and len(x) == 2, f"not a pair: {x!r}"
    return x[0], x[1]


def _tree(k: float) -> Any:
    """A parameter-like tree with arrays of two dtypes, Python and numpy scalars, a named tuple, a dict and a unit."""
    return (
        np.arange(3.0) + k,
        [1.5 * k, np.full((2, 2), k, np.float32)],
        {"a": np.float64(k), "b": faithful.Para(0.5 * k, np.ones(2) * k)},
        (),
    )


T0, T1, T2 = _tree(1.0), _tree(2.0), _tree(-3.0)


def _leafwise(op: Callable[..., Any], *trees_of: str) -> Callable[[Any, dict[str, Any]], None]:
    """A check: the result's leaves are ``op`` of the arguments' leaves, with the first tree's structure and shapes."""

    def check(out: Any, kw: dict[str, Any]) -> None:
        args = [kw[name] for name in trees_of]
        assert _same_structure(args[0], out, True), "the result does not have the structure of the input"
        for got, *xs in zip(_leaves(out), *map(_leaves, args)):
            np.testing.assert_allclose(got, op(*xs), rtol=1e-6, equal_nan=True)

    return check


def _sum_check(out: Any, kw: dict[str, Any]) -> None:
    trees = kw["trees"]
    assert isinstance(trees, (list, tuple)) and trees
    assert _same_structure(trees[0], out, True)
    for got, *xs in zip(_leaves(out), *map(_leaves, trees)):
        np.testing.assert_allclose(got, sum(xs[1:], start=xs[0]), rtol=1e-6, equal_nan=True)


def _zeros_check(out: Any, kw: dict[str, Any]) -> None:
    assert _same_structure(kw["tree"], out, True)
    for got, x in zip(_leaves(out), _leaves(kw["tree"])):
        assert np.all(np.asarray(got) == 0) and type(got) is type(x), f"{got!r} is not a zero like {x!r}"
        if isinstance(x, np.ndarray):
            assert got.dtype == x.dtype


def _nonfinite_check(out: Any, kw: dict[str, Any]) -> None:
    def finite(x: Any) -> bool:
        a = np.asarray(x)
        return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())

    assert (out is None) == all(finite(x) for x in _leaves(kw["tree"])), f"tree_first_nonfinite gave {out!r}"


def _paras_check(out: Any, kw: dict[str, Any]) -> None:
    w, b = kw["p"]
    assert len(out) == w.shape[1]
    for j, q in enumerate(out):
        assert isinstance(q, faithful.Para) and type(q.bias) is float and np.array_equal(q.bias, b[j], equal_nan=True)
        assert q.weight.dtype == np.float64 and np.array_equal(q.weight, w[:, j], equal_nan=True)


def _dense_check(out: Any, kw: dict[str, Any]) -> None:
    paras = kw["paras"]
    assert isinstance(out, nn.DenseParams)
    np.testing.assert_allclose(out.weight, np.stack([np.asarray(q.weight, float) for q in paras], axis=1), rtol=1e-3)
    np.testing.assert_allclose(out.bias, [float(q.bias) for q in paras], rtol=1e-3)
    assert out.weight.dtype == out.bias.dtype == np.dtype(kw["dtype"])


def _stack_check(out: Any, kw: dict[str, Any]) -> None:
    heads, w_o = kw["fp"]
    for i, name in enumerate(("W_Q", "W_K", "W_V")):
        assert np.array_equal(out[i], np.concatenate([h[i] for h in heads], axis=-1), equal_nan=True), name
    assert out.W_O is w_o


def _unstack_check(out: Any, kw: dict[str, Any]) -> None:
    back = nn.composed.stack_heads(out)
    assert len(out.heads) == kw["n_heads"]
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(back, kw["ap"])), "stack(unstack(ap)) != ap"


def _generate_check(out: Any, kw: dict[str, Any]) -> None:
    prompt = np.array(kw["prompt"], ndmin=2)
    assert isinstance(out, np.ndarray) and out.dtype == np.int64, f"ids {type(out).__name__}"
    assert out.shape == (prompt.shape[0], prompt.shape[1] + kw["steps"]), f"shape {out.shape}"
    assert np.array_equal(out[:, : prompt.shape[1]], prompt), "the prompt changed"
    assert out.size == 0 or (out.min() >= 0 and out.max() < 7), "a token id outside the vocabulary"


def _train_check(out: Any, kw: dict[str, Any]) -> None:
    params, losses = out
    assert len(losses) == kw["steps"] and all(math.isfinite(x) for x in losses)
    assert _same_structure(kw["params"], params, True)


def _partition_check(out: Any, kw: dict[str, Any]) -> None:
    parts = list(out)
    everything = np.sort(np.concatenate(parts)) if parts else np.array([])
    assert np.array_equal(everything, np.arange(len(kw["labels"]))), "the parts do not cover every row once"


def _windows_check(out: Any, kw: dict[str, Any]) -> None:
    x, y = out
    ids = np.asarray(kw["ids"])
    assert x.shape == y.shape == (kw["n"], kw["block"]) and x.dtype == y.dtype == np.int64
    assert np.array_equal(x[:, 1:], y[:, :-1]), "labels are not the inputs shifted by one"
    assert set(x.ravel().tolist()) <= set(ids.tolist())


def _iso(fn: Callable[[Any], Any], good: Any, ref: Callable[[Any], Any]) -> Ctor:
    return Ctor(
        fn.__name__,
        fn,
        {"x": good},
        {"x": [np.ones((2, 3)), {"a": 1, "b": 2}, "ab", [good, good][:1]]},
        trees=("x",),
        check=lambda out, kw: close_to(ref(kw["x"]))(out),
    )


def _lunit(x: Any) -> Any:
    return _pair(x)[1]


def _runit(x: Any) -> Any:
    return _pair(x)[0]


def _assoc(x: Any) -> Any:
    ab, c = _pair(x)
    a, b = _pair(ab)
    return a, (b, c)


def _unassoc(x: Any) -> Any:
    a, bc = _pair(x)
    b, c = _pair(bc)
    return (a, b), c


def _skip_left(x: Any) -> Any:
    ab, c = _pair(x)
    a, b = _pair(ab)
    return (a, c), b


def _skip_right(x: Any) -> Any:
    a, bc = _pair(x)
    b, c = _pair(bc)
    return b, (a, c)


X3 = np.random.default_rng(0).standard_normal((2, 3))
D32 = nn.dense(3, 2)
MHA = nn.multi_head_attention(4, 2, causal=True)
LM = nn.decoder_lm(7, 4, 2, 8, 1, 6)
LM_P = LM.init(0)
TASK = datasets.SequenceTask("sort", 3, 4)
VOCAB = datasets.CharVocab("abc")
LABELS = np.array([0, 1, 2, 0, 1, 2, 0, 1, 1, 0])
MLP_L = faithful._network.make_mlp_l(3, [2, 1])
MLP_P = faithful.init_mlp(3, [2, 1], np.random.default_rng(0))
MODEL_DIR = tempfile.mkdtemp(prefix="prelens-fuzz-")
MODEL_FILE = os.path.join(MODEL_DIR, "good.prelens")
prelens.save_model(MODEL_FILE, D32, D32.init(0), metadata={"classes": ["a", "b"]})
PARAMS_ONLY = os.path.join(MODEL_DIR, "params.npz")
prelens.io.save_checkpoint(PARAMS_ONLY, D32.init(0))
_ANSWERS: dict[str, Callable[[Any], Any]] = {
    "copy": lambda x: x,
    "reverse": lambda x: x[:, ::-1],
    "sort": lambda x: np.sort(x, axis=1),
}
TEMPERATURES = [-1.0, np.nan, np.inf, "hot", 1e-300, 1e300, True]
STEPS = [2.9, -1, True, "2", np.int64(2), 0, None]
#: Batches that are no pair ``(xs, targets)``, or a pair of the wrong things.
BATCHES = [(X3, None), (None, X3), ([1, 2], np.zeros(2)), [X3, np.zeros((2, 2))], (X3,), (X3, X3, X3), "xy", X3]
OPT = prelens.learn.momentum(0.1)
#: Things that are not optimisers (an optimiser class for an instance among them), and
#: optimisers of another kind than the state.
OPTIMIZERS = [prelens.learn.adam(0.1), prelens.learn.sgd(0.1), np.tanh, nn.tanh, (OPT,), prelens.learn.SGD]
#: Bad input shapes for summary and draw: negative or fractional sizes, arrays, nests, not shapes.
SHAPES = [
    (-1, 3),
    (2, -3),
    (-2,),
    (0, 3),
    (2, np.int64(-1)),
    X3,
    (3,),
    [(2, 3)],
    "x",
    None,
    (2.5,),
    (2, 3.0),
    ((2, 3),),
]
DEPTHS = [-1, 0, 1, 1.5, "1", True, np.int64(-2), np.int64(1), None]


def _step_check(out: Any, kw: dict[str, Any]) -> None:
    """``(new_params, new_state, loss)``: parameters shaped like the old ones, the loss a float.

    (A NaN planted in the batch may give a NaN loss; finite input must give a finite one: the harness checks that.)
    """
    params, _, value = out
    assert _same_structure(kw["params"], params, True), "the new parameters do not fit the old ones"
    for old, new in zip(_leaves(kw["params"]), _leaves(params)):
        assert np.asarray(old).dtype == np.asarray(new).dtype, "a parameter's dtype changed"
    assert isinstance(value, float), f"loss {value!r}"


def _draw(**kwargs: Any) -> Any:
    """``draw`` on a figure of its own, closed afterwards (the Axes is returned)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        return prelens.diagram.draw(**kwargs)
    finally:
        plt.close("all")


FUNCS: list[Ctor] = [
    # the tree toolkit
    Ctor(
        "tree_map",
        prelens.core.tree_map,
        {"f": repr, "tree": T0},
        {"f": [None, 3, "f", np.ones(2)]},
        trees=("tree",),
        check=lambda out, kw: _equals(_leaves(out), [repr(x) for x in _leaves(kw["tree"])]),
    ),
    Ctor(
        "tree_zip_map",
        lambda f, tree, other: prelens.core.tree_zip_map(f, tree, other),
        {"f": lambda x, y: repr(y), "tree": T0, "other": T1},
        {"f": [None, 3]},
        trees=("tree", "other"),
        check=lambda out, kw: _equals(_leaves(out), [repr(y) for y in _leaves(kw["other"])]),
        covers=(prelens.core.tree_zip_map,),
    ),
    Ctor(
        "tree_leaves",
        prelens.core.tree_leaves,
        {"tree": T0},
        trees=("tree",),
        check=lambda out, kw: _identical(out, _leaves(kw["tree"])),
    ),
    Ctor(
        "tree_paths",
        lambda tree, path: list(prelens.core.tree_paths(tree, path)),
        {"tree": T0, "path": "p"},
        {"path": [None, 3, b"p"]},
        trees=("tree",),
        check=lambda out, kw: _identical([leaf for _, leaf in out], _leaves(kw["tree"])),
        covers=(prelens.core.tree_paths,),
    ),
    Ctor(
        "tree_shapes",
        prelens.core.tree_shapes,
        {"tree": T0},
        trees=("tree",),
        check=lambda out, kw: _same_leaf_count(out, kw["tree"]),
    ),
    Ctor(
        "to_backend",
        prelens.backend.to_backend,
        {"tree": T0, "backend": "numpy"},
        {"backend": [None, 3, "cupy", "JAX", b"numpy", np]},
        trees=("tree",),
        check=lambda out, kw: _same_leaf_count(out, kw["tree"]),
    ),
    Ctor("to_numpy", prelens.backend.to_numpy, {"x": np.ones((2, 3))}, {"x": [None, [1.0], 2.0, "a", (np.ones(2),)]}),
    Ctor(
        "tree_first_nonfinite",
        prelens.core._tree.tree_first_nonfinite,
        {"tree": T0},
        trees=("tree",),
        check=_nonfinite_check,
    ),
    Ctor(
        "tree_add",
        prelens.core.tree_add,
        {"a": T0, "b": T1},
        trees=("a", "b"),
        check=_leafwise(lambda x, y: x + y, "a", "b"),
    ),
    Ctor(
        "tree_sum",
        prelens.core.tree_sum,
        {"trees": [T0, T1, T2]},
        {"trees": [[], [T0]]},
        ("trees",),
        ("trees",),
        _sum_check,
    ),
    Ctor(
        "tree_scale",
        prelens.core.tree_scale,
        {"c": 0.5, "tree": T0},
        {"c": [None, "2", np.nan, np.ones(2), 1j, np.float32(2.0)]},
        trees=("tree",),
        check=lambda out, kw: _leafwise(lambda x: kw["c"] * x, "tree")(out, kw),
    ),
    Ctor("tree_zeros_like", prelens.core.tree_zeros_like, {"tree": T0}, trees=("tree",), check=_zeros_check),
    Ctor(
        "tree_allclose",
        prelens.core.tree_allclose,
        {"a": T0, "b": _tree(1.0 + 1e-12), "rtol": 1e-7, "atol": 0.0},
        {"rtol": [-1.0, np.nan, "x", True], "atol": [np.inf, -0.5]},
        trees=("a", "b"),
        check=lambda out, kw: _equals(out, _all_close(kw["a"], kw["b"], kw["rtol"], kw["atol"])),
    ),
    Ctor(
        "tree_first_difference",
        prelens.core.tree_first_difference,
        {"a": T0, "b": T1, "rtol": 1e-7, "atol": 0.0},
        {"rtol": [-1.0, "x"]},
        trees=("a", "b"),
        check=lambda out, kw: _equals(out is None, _all_close(kw["a"], kw["b"], kw["rtol"], kw["atol"])),
    ),
    Ctor(
        "structure_mismatch",
        prelens.core._tree.structure_mismatch,
        {"a": T0, "b": T1, "shapes": True, "path": ""},
        {"shapes": ["yes", 1, None], "path": [None, 3]},
        trees=("a", "b"),
        check=lambda out, kw: _equals(out is None, _same_structure(kw["a"], kw["b"], kw["shapes"])),
    ),
    Ctor(
        "check_structure",
        prelens.core._tree.check_structure,
        {"expected": T0, "got": T1, "what": "params", "shapes": False},
        {"what": [None, 3], "shapes": ["no", 0]},
        trees=("expected", "got"),
        check=lambda out, kw: _equals(True, _same_structure(kw["expected"], kw["got"], kw["shapes"])),
    ),
    # the structural isos and the bifunctor maps
    _iso(prelens.lunit, ((), X3), _lunit),
    _iso(prelens.unlunit, X3, lambda x: ((), x)),
    _iso(prelens.runit, (X3, ()), _runit),
    _iso(prelens.unrunit, X3, lambda x: (x, ())),
    _iso(prelens.assoc, ((X3, 1.0), [X3]), _assoc),
    _iso(prelens.unassoc, (X3, (1.0, [X3])), _unassoc),
    _iso(prelens.sym, (X3, 1.0), lambda x: _pair(x)[::-1]),
    _iso(prelens.core.skip_left, ((X3, 1.0), [X3]), _skip_left),
    _iso(prelens.core.skip_right, (X3, (1.0, [X3])), _skip_right),
    Ctor(
        "first",
        lambda f, x: prelens.first(f)(x),
        {"f": np.shape, "x": (X3, 1.0)},
        {"f": [None, 3, "f"]},
        trees=("x",),
        check=lambda out, kw: close_to((np.shape(_pair(kw["x"])[0]), _pair(kw["x"])[1]))(out),
        covers=(prelens.first,),
    ),
    Ctor(
        "second",
        lambda f, x: prelens.second(f)(x),
        {"f": np.shape, "x": (X3, 1.0)},
        {"f": [None, 3, "f"]},
        trees=("x",),
        check=lambda out, kw: close_to((_pair(kw["x"])[0], np.shape(_pair(kw["x"])[1])))(out),
        covers=(prelens.second,),
    ),
    # the trace
    Ctor(
        "forward",
        prelens.forward,
        {"lens": D32, "p": D32.init(0), "s": X3},
        {"lens": LENSES},
        trees=("p", "s"),
        check=lambda out, kw: _dense_out(out, kw) if kw["lens"] is D32 else None,
    ),
    Ctor(
        "backward",
        prelens.backward,
        {"lens": D32, "p": D32.init(0), "s": X3, "da": np.ones((2, 2))},
        {"lens": LENSES},
        trees=("p", "s", "da"),
        check=lambda out, kw: deltas_fit(kw["p"], kw["s"])(out) if kw["lens"] is D32 else None,
    ),
    Ctor(
        "vjp",
        lambda lens, p, s, da: prelens.vjp(lens, p, s)[1](da),
        {"lens": D32, "p": D32.init(0), "s": X3, "da": np.ones((2, 2))},
        {"lens": LENSES},
        trees=("p", "s", "da"),
        check=lambda out, kw: deltas_fit(kw["p"], kw["s"])(out) if kw["lens"] is D32 else None,
        covers=(prelens.vjp,),
    ),
    # the two levels' layouts
    Ctor("dense_to_paras", faithful.dense_to_paras, {"p": D32.init(0)}, trees=("p",), check=_paras_check),
    Ctor(
        "dense_from_paras",
        faithful.dense_from_paras,
        {"paras": MLP_P[0], "dtype": np.float32},
        {"dtype": DTYPES},
        trees=("paras",),
        check=_dense_check,
    ),
    Ctor(
        "mlp_to_paras",
        faithful.mlp_to_paras,
        {"params": nn.mlp(3, [4, 2]).init(0)},
        trees=("params",),
        check=lambda out, kw: _paras_check(out[-1], {"p": kw["params"][-1]}),
    ),
    Ctor(
        "mlp_from_paras",
        faithful.mlp_from_paras,
        {"layers": MLP_P, "dtype": np.float64},
        {"dtype": DTYPES},
        trees=("layers",),
        check=lambda out, kw: _dense_check(out[0], {"paras": kw["layers"][0], "dtype": kw["dtype"]}),
    ),
    Ctor(
        "un_para",
        faithful.un_para,
        {"p": faithful.Para(0.5, np.ones(3))},
        trees=("p",),
        check=lambda out, kw: _equals(out, (kw["p"].bias, kw["p"].weight), same=True),
    ),
    Ctor(
        "stack_heads",
        nn.composed.stack_heads,
        {"fp": nn.composed.multi_head_attention(4, 2).init(0)},
        trees=("fp",),
        check=_stack_check,
    ),
    Ctor(
        "unstack_heads",
        nn.composed.unstack_heads,
        {"ap": MHA.init(0), "n_heads": 2},
        {"n_heads": [3, 0, 2.0, "2", np.int64(4)]},
        trees=("ap",),
        check=_unstack_check,
    ),
    Ctor(
        "attention_weights",
        nn.attention_weights,
        {"model": MHA, "residue": MHA.fwd(MHA.init(0), np.ones((2, 3, 4)))[0]},
        {"model": [*LENSES, D32, nn.tanh, LM, nn.cross_attention(4, 2), nn.multi_head_attention(4, 2)]},
        trees=("residue",),
        check=lambda out, kw: _attention_check(out),
    ),
    Ctor(
        "generate",
        nn.generate,
        {
            "lm": LM,
            "params": LM_P,
            "prompt": np.array([[1, 2]]),
            "steps": 2,
            "max_len": 6,
            "temperature": 0.5,
            "rng": 0,
        },
        {
            "lm": [*LENSES, D32],
            "prompt": [np.array([[1.7, 2.0]]), [[1.0, 2.0]], [[1, 2]], [3, 4], np.array([[7, 1]]), "12", [[True]]],
            "steps": STEPS,
            "max_len": [0, 2.5, "x", 10, -1],
            "temperature": TEMPERATURES,
            "rng": SEEDS,
        },
        trees=("prompt", "params"),
        check=_generate_check,
    ),
    # model files
    Ctor(
        "save_model",
        prelens.save_model,
        {"path": os.path.join(MODEL_DIR, "saved.prelens"), "lens": D32, "params": D32.init(0), "metadata": {"a": 1}},
        {
            "path": [None, 3, MODEL_DIR, os.path.join(MODEL_DIR, "no", "dir", "m.prelens"), b"m.prelens"],
            "lens": [*LENSES, prelens.PreLens(lambda p, s: ((), s), lambda m, da: ((), da), name="own")],
            "metadata": [{1: 2}, {"f": len}, {"x": np.nan}, [("a", 1)], "meta", {"deep": [[[[]]]]}],
        },
        only_bad=("path",),
        trees=("params",),
        check=lambda out, kw: _saved_ok(kw),
    ),
    Ctor(
        "load_model",
        prelens.load_model,
        {"path": MODEL_FILE},
        {"path": [None, 3, MODEL_DIR, os.path.join(MODEL_DIR, "missing.prelens"), PARAMS_ONLY, b"x", ""]},
        only_bad=("path",),
        check=lambda out, kw: _equals(repr(out.lens), repr(D32)),
    ),
    # the faithful training loop
    Ctor(
        "train_faithful",
        faithful.train_faithful,
        {"mlp": MLP_L, "params": MLP_P, "xs": datasets.TOY_XS, "ys": datasets.TOY_YS, "rate": 0.1, "steps": 2},
        {"mlp": [*LENSES, faithful.make_mlp(3, [2, 1])], "rate": ["x", -0.1, np.nan, np.inf, 0], "steps": STEPS},
        trees=("params", "xs", "ys"),
        check=_train_check,
    ),
    Ctor(
        "train_step",
        faithful.train_step,
        {"mlp": MLP_L, "params": MLP_P, "xs": datasets.TOY_XS, "ys": datasets.TOY_YS, "rate": 0.1},
        {"mlp": LENSES, "rate": ["x", -0.1, np.nan]},
        trees=("params", "xs", "ys"),
        check=lambda out, kw: _train_check((out[0], [out[1]]), {**kw, "steps": 1}),
    ),
    Ctor(
        "predict_faithful",
        faithful.predict_faithful,
        {"mlp": faithful.make_mlp(3, [2, 1]), "params": MLP_P, "xs": datasets.TOY_XS},
        {"mlp": [*LENSES, MLP_L]},
        trees=("params", "xs"),
        check=lambda out, kw: _equals(len(out), len(kw["xs"])),
    ),
    Ctor(
        "value_and_grad",
        value_and_grad,
        {"model": D32, "loss": nn.mse, "params": D32.init(0), "batch": (X3, np.zeros((2, 2)))},
        {"model": [*LENSES, nn.tanh], "loss": [*LENSES, nn.softmax_cross_entropy, nn.tanh], "batch": BATCHES},
        trees=("params",),
        check=lambda out, kw: deltas_fit(kw["params"], kw["params"])((out[1], kw["params"])),
    ),
    Ctor(
        "value_and_grad batch",
        lambda xs, ys: value_and_grad(D32, nn.mse, D32.init(0), (xs, ys)),
        {"xs": X3, "ys": np.zeros((2, 2))},
        trees=("xs", "ys"),
        covers=(value_and_grad,),
    ),
    # datasets
    Ctor(
        "stratified_split",
        datasets.stratified_split,
        {"labels": LABELS, "test_fraction": 0.3, "rng": 0},
        {"labels": [["a", "b", "a"], [0.5, np.nan], [[0, 1]], [1, "a", None]], "rng": SEEDS},
        trees=("labels",),
        check=_partition_check,
    ),
    Ctor(
        "stratified_folds",
        datasets.stratified_folds,
        {"labels": LABELS, "k": 3, "rng": 0},
        {"k": [1, 3.0, True, 100], "rng": SEEDS},
        trees=("labels",),
        check=_partition_check,
    ),
    Ctor(
        "standardize",
        lambda train, other: datasets.standardize(train, other),
        {"train": X3, "other": X3[:1] + 1.0},
        trees=("train", "other"),
        check=lambda out, kw: _equals([o.shape for o in out], [kw["train"].shape, kw["other"].shape]),
        covers=(datasets.standardize,),
    ),
    Ctor(
        "text_windows",
        datasets.text_windows,
        {"ids": np.arange(12), "block": 4, "n": 3, "rng": 0},
        {"ids": [[1.5, 2.5, 3.5], "abcdef", [[1, 2, 3, 4, 5, 6]]], "block": [2.5, 0, True, 11], "n": [0, 2.0]},
        trees=("ids",),
        check=_windows_check,
    ),
    Ctor(
        "CharVocab.encode",
        lambda vocab, text: vocab.encode(text),
        {"vocab": VOCAB, "text": "cab"},
        {"vocab": [datasets.CharVocab("xy"), datasets.CharVocab("")], "text": ["abz", ["a", "b"], b"ab"]},
        ("vocab",),
        check=lambda out, kw: _equals(kw["vocab"].decode(out), kw["text"]),
        covers=(datasets.CharVocab,),
    ),
    Ctor(
        "CharVocab.decode",
        lambda vocab, ids: vocab.decode(ids),
        {"vocab": VOCAB, "ids": np.array([[0, 2], [1, 1]])},
        {"vocab": [datasets.CharVocab("")], "ids": [[0.0, 1.0], [3], [-1], "01", [[0], [1, 2]]]},
        ("vocab",),
        trees=("ids",),
        check=lambda out, kw: _equals(kw["vocab"].encode(out).tolist(), np.ravel(kw["ids"]).tolist()),
        covers=(datasets.CharVocab,),
    ),
    Ctor(
        "SequenceTask.answer",
        lambda task, x: task.answer(x),
        {"task": TASK, "x": np.array([[2, 0, 1], [3, 3, 0]])},
        {"task": [datasets.SequenceTask("copy", 2, 4)], "x": [[[1.0, 2.0, 0.0]], [[4, 0, 0]], [[1, 2]], "abc"]},
        ("task",),
        trees=("x",),
        check=lambda out, kw: _equals(out.tolist(), _ANSWERS[kw["task"].name](np.asarray(kw["x"])).tolist()),
        covers=(datasets.SequenceTask,),
    ),
    Ctor(
        "SequenceTask.prompts",
        lambda task, x: task.prompts(x),
        {"task": TASK, "x": np.array([[2, 0, 1]])},
        {"task": [datasets.SequenceTask("copy", 2, 4)], "x": [[[1.0, 2.0, 0.0]], [[-1, 0, 0]]]},
        ("task",),
        trees=("x",),
        check=lambda out, kw: _equals(out[:, 1:-1].tolist(), np.asarray(kw["x"]).tolist()),
        covers=(datasets.SequenceTask,),
    ),
    Ctor(
        "step",
        prelens.train.step,
        {
            "model": D32,
            "loss": nn.mse,
            "params": D32.init(0),
            "batch": (X3, np.zeros((2, 2))),
            "optimizer": OPT,
            "state": OPT.init(D32.init(0)),
        },
        {
            "model": [*LENSES, nn.tanh],
            "loss": [*LENSES, nn.softmax_cross_entropy],
            "batch": BATCHES,
            "optimizer": OPTIMIZERS,
            "state": [prelens.learn.adam(0.1).init(D32.init(0)), OPT.init(nn.dense(2, 3).init(0))],
        },
        trees=("params", "batch", "state"),
        check=_step_check,
    ),
    # the model summary and the diagram: lenses, shapes, dtypes, depths
    Ctor(
        "summary",
        prelens.summary,
        {"lens": D32, "input_shape": (2, 3), "params": D32.init(0), "rng": 0, "dtype": np.float64, "depth": None},
        {"lens": LENSES, "input_shape": SHAPES, "dtype": [np.float32, *DTYPES], "rng": SEEDS, "depth": DEPTHS},
        trees=("params",),
        check=lambda out, kw: _equals(isinstance(out, prelens.show.Summary) and len(out.stages) > 0, True),
    ),
]
# ------------------------------------------------------- the Trimbara modules


def _real_shapes(tri: Any, p: Any, s: Any) -> dict[str, str] | None:
    """The shapes a real run of ``tri`` makes, or None when the real run refuses ``(p, s)``."""
    try:
        lens = prelens.from_tamb(tri)
        m, a = lens.fwd(p, s)
        dp, ds = lens.bwd(m, a)
    except prelens.PrelensError:
        return None
    shown = {"output": a, "residue": m, "parameter delta": dp, "input delta": ds}
    return {k: prelens.tambara.shape_of(v) for k, v in shown.items()}


def _check_shapes(out: Any, kw: dict[str, Any]) -> None:
    real = _real_shapes(kw["tri"], kw["p"], kw["s"])
    if real is not None:  # shapes do not look at values: a NaN the real run refuses reads fine
        _equals(out, real)


_MLP_T = faithful.make_mlp(3, [2, 1])
_MLP_P = faithful.init_mlp(3, [2, 1], np.random.default_rng(0))
_UNITS = [None, 3, "unit", np.tanh, prelens.to_tamb(D32), [prelens.tambara.Program()]]

FUNCS += [
    Ctor(
        "interpret",
        prelens.tambara.interpret,
        {"tri": prelens.to_tamb(D32), "unit": prelens.tambara.Program()},
        {"tri": LENSES, "unit": _UNITS},
        check=lambda out, kw: _equals(isinstance(out, (prelens.tambara.Program, prelens.PreLens)), True),
    ),
    Ctor(
        "placeholder",
        prelens.tambara.placeholder,
        {"shape": (2, 3), "dtype": np.float64},
        {"shape": [(-1,), (2, -1), (1.5,), [2, 3], (True,), "x", None], "dtype": DTYPES},
        check=lambda out, kw: _equals((np.shape(out), np.asarray(out).dtype), (kw["shape"], np.dtype(kw["dtype"]))),
    ),
    Ctor(
        "shape_of",
        prelens.tambara.shape_of,
        {"tree": T0},
        trees=("tree",),
        check=lambda out, kw: _equals(isinstance(out, str), True),
    ),
    Ctor(
        "register_rule",
        lambda lens, rule: prelens.tambara.register_rule(lens, rule),
        {
            "lens": prelens.PreLens(lambda p, s: ((), s), lambda m, d: ((), d), "fuzzed"),
            "rule": prelens.tambara.Rule(lambda p, s: ((), s), lambda m, d: ((), d), lambda p, s: (0, 0)),
        },
        {"lens": LENSES, "rule": [None, 3, "rule", np.tanh, (np.tanh, np.tanh, np.tanh)]},
        covers=(prelens.tambara.register_rule, prelens.tambara.Rule),
    ),
    Ctor(
        "Shapes.of",
        prelens.tambara.Shapes.of,
        {"tri": _MLP_T, "p": _MLP_P, "s": np.ones(3)},
        {"tri": LENSES},
        trees=("p", "s"),
        check=_check_shapes,
        covers=(prelens.tambara.Shapes,),
    ),
    Ctor(
        "Cost.of",
        prelens.tambara.Cost.of,
        {"tri": _MLP_T, "p": _MLP_P, "s": np.ones(3)},
        {"tri": LENSES},
        trees=("p", "s"),
        check=lambda out, kw: _equals(str(out).splitlines()[-1].split()[0], "total"),
        covers=(prelens.tambara.Cost, prelens.tambara.CostTable),
    ),
]

# ----------------------------------------------- learning as optics, dropout keys, classifier metrics (issue 14)

_DROPPED = prelens.chain(nn.dense(3, 4), nn.dropout(0.5), nn.dense(4, 2))
_LEARN_OPT = learn.momentum(0.1)
_LEARNER = learn.learner(D32, nn.mse, _LEARN_OPT)


def _keys_check(out: Any, kw: dict[str, Any]) -> None:
    keys = [x for x in _leaves(out) if isinstance(x, np.ndarray) and x.dtype == np.uint64]
    assert all(k.shape == (2,) and int(k[0]) == int(kw["key"]) for k in keys), "a site got another key"


def _proba_check(out: Any, kw: dict[str, Any]) -> None:
    assert isinstance(out, np.ndarray) and out.dtype.kind == "f" and out.shape[-1] >= 2
    assert np.allclose(out.sum(axis=-1), 1.0, atol=1e-5) and (out >= 0).all()


def _confusion_check(out: Any, kw: dict[str, Any]) -> None:
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.ndim == 2 and out.shape[0] == out.shape[1]
    assert out.sum() == len(np.asarray(kw["labels"])) and (out >= 0).all()


FUNCS += [
    Ctor(
        "with_dropout",
        nn.with_dropout,
        {"params": _DROPPED.init(0), "key": 7},
        {"key": [-1, 2**64, 1.5, True, np.uint64(3), "k"]},
        trees=("params",),
        check=_keys_check,
    ),
    Ctor(
        "without_dropout",
        nn.without_dropout,
        {"tree": nn.with_dropout(_DROPPED.init(0), 1)},
        trees=("tree",),
        check=lambda out, kw: _equals([x for x in _leaves(out) if getattr(x, "dtype", None) == np.uint64], []),
    ),
    Ctor(
        "predict_proba",
        prelens.train.predict_proba,
        {"model": D32, "params": D32.init(0), "xs": X3, "batch_size": None},
        {"model": [*LENSES, nn.mse], "batch_size": [0, -1, 1.5, "2"]},
        trees=("params", "xs"),
        check=_proba_check,
    ),
    Ctor(
        "confusion_matrix",
        prelens.train.confusion_matrix,
        {"model": D32, "params": D32.init(0), "xs": X3, "labels": np.array([0, 1]), "n_classes": None},
        {"model": LENSES, "labels": [[0, 5], [[0, 1, 2]], "01", [0.5, 1.5]], "n_classes": [0, -1, 1.5, "2"]},
        trees=("params", "xs", "labels"),
        check=_confusion_check,
    ),
    Ctor(
        "init_state",
        learn.init_state,
        {"optimizer": learn.adam(0.1), "params": D32.init(0)},
        {"optimizer": [*LENSES, nn.tanh, prelens.learn.adam(0.1), learn.adam(0.1) @ prelens.id_pre_lens]},
        trees=("params",),
    ),
    Ctor(
        "learner_step",
        learn.learner_step,
        {
            "step": _LEARNER,
            "params": D32.init(0),
            "state": _LEARN_OPT.init(D32.init(0)),
            "batch": (X3, np.zeros((2, 2))),
        },
        {"step": [*LENSES, D32, nn.mse], "batch": BATCHES},
        trees=("params", "state", "batch"),
        check=lambda out, kw: _equals((len(out), type(out[2])), (3, float)),
    ),
]


def _with_blas_threads(threads: Any, params: Any, batch: Any) -> int:
    """Enter :func:`prelens.train.blas_threads` and return the number of threads it ran the block with."""
    with prelens.train.blas_threads(threads, params=params, batch=batch) as n:
        return n


def _threads_check(out: Any, kw: dict[str, Any]) -> None:
    assert isinstance(out, int) and out >= 1, f"{out!r} threads"
    assert kw.get("cpus") is None or out <= kw["cpus"]


FUNCS += [
    Ctor(
        "choose_blas_threads",
        prelens.train.choose_blas_threads,
        {"params": D32.init(0), "batch": X3, "cpus": 2},
        {"cpus": [0, -1, 1.5, "2", True], "batch": [None, 3, "x", {}, np.float64(1.0)]},
        trees=("params", "batch"),
        check=_threads_check,
    ),
    Ctor(
        "blas_threads",
        _with_blas_threads,
        {"threads": 1, "params": D32.init(0), "batch": X3},
        {"threads": [0, -1, 1.5, "two", True, "AUTO"]},
        trees=("params", "batch"),
        check=_threads_check,
        covers=(prelens.train.blas_threads,),
    ),
]

if importlib.util.find_spec("matplotlib") is not None:  # draw needs the notebooks extra
    FUNCS.append(
        Ctor(
            "diagram.draw",
            _draw,
            {"lens": D32, "input_shape": (2, 3), "params": D32.init(0), "rng": 0, "dtype": np.float64, "depth": 1},
            {"lens": LENSES, "input_shape": SHAPES, "dtype": [np.float32, *DTYPES], "rng": SEEDS, "depth": DEPTHS},
            trees=("params",),
            check=lambda out, kw: _equals(type(out).__name__, "Axes"),
            covers=(prelens.diagram.draw,),
        )
    )


def _identical(got: list[Any], expected: list[Any]) -> None:
    assert len(got) == len(expected) and all(g is e for g, e in zip(got, expected)), "leaves differ"


def _saved_ok(kw: dict[str, Any]) -> None:
    """What ``save_model`` accepted loads back as the same lens, parameters and metadata."""
    lens, params, metadata = prelens.load_model(kw["path"])
    assert repr(lens) == repr(kw["lens"]), f"saved {kw['lens']!r}, loaded {lens!r}"
    assert prelens.core._tree.structure_mismatch(kw["params"], params, shapes=True) is None
    pairs = zip(prelens.core.tree_leaves(params), prelens.core.tree_leaves(kw["params"]))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in pairs), "the parameters changed on the way"
    assert metadata == dict(kw["metadata"] or {})


def _same_leaf_count(out: Any, tree: Any) -> None:
    assert len(_leaves(out)) == len(_leaves(tree)), "the result has another number of leaves"


def _equals(got: Any, expected: Any, same: bool = False) -> None:
    if same:
        assert len(got) == len(expected) and all(g is e for g, e in zip(got, expected)), f"{got!r} != {expected!r}"
    else:
        assert got == expected, f"got {got!r}, expected {expected!r}"


def _dense_out(out: Any, kw: dict[str, Any]) -> None:
    w, b = kw["p"]
    close_to(np.tanh(kw["s"] @ w + b))(out)


def _attention_check(out: Any) -> None:
    """Attention weights by name: each a float array ``(batch, heads, T_query, T_key)``.

    Another attention model whose residue has the same layout (``cross_attention`` reading a
    ``multi_head_attention`` residue) may read its weights: that is a correct result.
    """
    assert isinstance(out, dict) and out
    for key, a in out.items():
        assert isinstance(a, np.ndarray), f"{key}: {type(a).__name__}"
        assert a.ndim == 4 and a.dtype.kind == "f", f"{key}: {a.dtype}{a.shape}, not float (B, H, T_q, T_k)"


@pytest.mark.parametrize("fn", [pytest.param(f, id=f.name) for f in FUNCS])
@settings(max_examples=examples(50))
@given(data=st.data())
def test_function_of_bad_data(fn: Ctor, data: st.DataObject) -> None:
    run_case(fn, data)
