"""Files written by prelens 0.3.2 load with this prelens and give what 0.3.2 gave.

The files, and what 0.3.2 computed from them, are in ``tests/data/v0_3_2`` (see its README;
``make.py`` there wrote them). Only public names are used here, so that the test holds while
classes move between private modules: a file names a class by its public name, and 0.3.2's
names (``prelens.optim.AdamState``, ``prelens.nn._faithful.Para``) are mapped to today's.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import prelens.faithful
from prelens import forward, nn
from prelens.io import load_checkpoint, load_metadata, load_model
from prelens.train import fit

DATA = Path(__file__).parent / "data" / "v0_3_2"
EXPECTED: dict[str, Any] = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
MODELS = ("mlp", "decoder_lm", "make_mlp", "composite")


def _leaves(tree: Any) -> list[Any]:
    """Leaves in order, as ``make.py`` lists them."""
    if isinstance(tree, dict):
        return [x for k in tree for x in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in _leaves(v)]
    return [] if tree is None else [tree]


def _named_tuples(tree: Any) -> list[str]:
    """``Name(field,field)`` for every named tuple, in order, as ``make.py`` lists them."""
    if isinstance(tree, dict):
        return [x for k in tree for x in _named_tuples(tree[k])]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return [f"{type(tree).__name__}({','.join(tree._fields)})", *[x for v in tree for x in _named_tuples(v)]]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in _named_tuples(v)]
    return []


def _stored(name: str, prefix: str) -> list[np.ndarray]:
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as z:
        return [z[f"{prefix}{i}"] for i in range(sum(k.startswith(prefix) for k in z.files))]


def _same_leaves(tree: Any, expected: list[np.ndarray]) -> None:
    got = _leaves(tree)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert isinstance(a, np.ndarray) or np.ndim(b) == 0
        np.testing.assert_array_equal(np.asarray(a), b, strict=isinstance(a, np.ndarray))


def _input(name: str) -> Any:
    xs = _stored(f"{name}.expected", "x")
    if name == "make_mlp":
        return [float(x) for x in xs]  # the post's network reads a list of floats
    if name == "composite":
        return tuple(xs)  # (a, a2) for the product @
    (x,) = xs
    return x


@pytest.mark.parametrize("name", MODELS)
def test_model_file_of_0_3_2(name: str) -> None:
    lens, params, metadata = load_model(DATA / f"{name}.prelens")
    want = EXPECTED[name]
    assert repr(lens) == want["repr"]
    assert metadata == want["metadata"]
    assert _named_tuples(params) == want["named_tuples"]
    _same_leaves(params, _stored(f"{name}.expected", "leaf"))
    y = forward(lens, params, _input(name))
    _same_leaves(y, _stored(f"{name}.expected", "y"))


def test_faithful_parameters_are_the_public_class() -> None:
    """0.3.2 stored ``prelens.nn._faithful.Para``: it loads as ``prelens.faithful.Para``."""
    _, params, _ = load_model(DATA / "make_mlp.prelens")
    assert all(type(p) is prelens.faithful.Para for layer in params for p in layer)


def test_adam_checkpoint_of_0_3_2() -> None:
    """0.3.2 stored ``prelens.optim.AdamState``: it loads as the optimisers' state class of ``prelens.learn``."""
    tree = load_checkpoint(DATA / "adam.npz")
    assert _named_tuples(tree) == EXPECTED["adam"]["named_tuples"]
    assert type(tree["opt_state"]).__module__.startswith("prelens.learn")
    assert type(tree["step"]) is int
    assert load_metadata(DATA / "adam.npz") == EXPECTED["adam"]["metadata"]
    _same_leaves(tree, _stored("adam.expected", "leaf"))
    again = load_checkpoint(DATA / "adam.npz", like=tree)
    _same_leaves(again, _stored("adam.expected", "leaf"))


def test_fit_resumes_from_a_0_3_2_checkpoint() -> None:
    """fit's resume file of 0.3.2: read back, and training continued from it ends where 0.3.2's did."""
    saved = load_checkpoint(DATA / "fit.npz")
    assert _named_tuples(saved) == EXPECTED["fit"]["named_tuples"]
    _same_leaves(saved, _stored("fit.expected", "leaf"))
    (x,), (y,) = _stored("fit.expected", "x"), _stored("fit.expected", "y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from prelens.optim import adam  # the optimiser 0.3.2 wrote this file with, by its 0.3.2 name

    model = nn.mlp(4, [6, 3])
    assert repr(model) == EXPECTED["fit"]["repr"]
    result = fit(model, nn.softmax_cross_entropy, (x, y), 4, 8, adam(0.05), 7, progress=False, resume=DATA / "fit.npz")
    _same_leaves(result.params, _stored("fit.resumed", "leaf"))
