"""One meaning per public name across ``prelens``, ``prelens.nn`` and ``prelens.train``.

A name exported by two of these namespaces (``__all__``, or a public subpackage such as
``prelens.train`` itself) must be the same object in both: ``prelens.nn.predict`` (the faithful
network's outputs, a list) beside ``prelens.train.predict`` (a fast model's outputs, an array)
was the kind of pair this forbids. The names renamed in 0.2.0 warned under their old names until
0.3.1; now the old names are errors that give the new ones.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from types import ModuleType
from typing import Any

import pytest

import prelens
import prelens.faithful
import prelens.nn
import prelens.train

NAMESPACES = [prelens, prelens.nn, prelens.train]


def public(module: ModuleType) -> dict[str, Any]:
    """``__all__`` and the public subpackages/submodules of ``module``, by name."""
    names = {name: getattr(module, name) for name in module.__all__}
    if hasattr(module, "__path__"):
        for info in pkgutil.iter_modules(module.__path__):
            if not info.name.startswith("_") and info.name not in names:
                names[info.name] = importlib.import_module(f"{module.__name__}.{info.name}")
    return names


def collisions(namespaces: list[ModuleType]) -> dict[str, list[str]]:
    """Names that mean different objects in two namespaces: name -> where each meaning lives."""
    seen: dict[str, list[tuple[str, Any]]] = {}
    for module in namespaces:
        for name, value in public(module).items():
            seen.setdefault(name, []).append((module.__name__, value))
    return {
        name: [f"{where}.{name}" for where, _ in places]
        for name, places in seen.items()
        if len({id(value) for _, value in places}) > 1
    }


def test_no_public_name_has_two_meanings():
    assert collisions(NAMESPACES) == {}, "rename one of each pair (keep one meaning per public name)"


def test_the_check_notices_a_collision(monkeypatch: pytest.MonkeyPatch):
    """Giving ``prelens.nn`` a public ``fit`` of its own makes it collide with ``prelens.train.fit``."""
    monkeypatch.setattr(prelens.nn, "fit", lambda *a: None, raising=False)
    monkeypatch.setattr(prelens.nn, "__all__", [*prelens.nn.__all__, "fit"])
    assert collisions(NAMESPACES) == {"fit": ["prelens.nn.fit", "prelens.train.fit"]}


def test_the_same_object_under_one_name_is_no_collision(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(prelens.nn, "__all__", [*prelens.nn.__all__, "tree_map"])
    monkeypatch.setattr(prelens.nn, "tree_map", prelens.core.tree_map, raising=False)
    assert collisions(NAMESPACES) == {}


@pytest.mark.parametrize(("old", "new"), [("predict", "predict_faithful"), ("train", "train_faithful")])
def test_renamed_faithful_functions_name_their_new_names_under_the_old(old: str, new: str):
    with pytest.raises(
        AttributeError,
        match=rf"prelens\.nn\.{old} was renamed prelens\.nn\.{new} in prelens 0\.2\.0 .* removed in 0\.3\.1",
    ):
        getattr(prelens.nn, old)
    assert not hasattr(prelens.nn, old) and callable(getattr(prelens.faithful, new))
    assert old not in prelens.nn.__all__


#: 0.3's names of ``prelens.nn`` that moved in 0.4, and where each went.
NN_MOVED = {
    **{n: f"prelens.faithful.{n}" for n in ("Para", "make_mlp", "layer", "neuron_l", "loss_l", "train_step")},
    **{n: f"prelens.faithful.{n}" for n in ("dense_from_paras", "mlp_to_paras", "predict_faithful", "init_mlp")},
    "make_mlp_l": "prelens.from_tamb(prelens.faithful.make_mlp(m_in, sizes))",
    "feed_forward_composed": "prelens.nn.composed.feed_forward",
    "residual_composed": "prelens.nn.composed.residual",
    "multi_head_attention_faithful": "prelens.nn.composed.multi_head_attention",
    "attention_head": "prelens.nn.composed.attention_head",
    "HeadParams": "prelens.nn.composed.HeadParams",
    "TOY_XS": "prelens.datasets.TOY_XS",
}


@pytest.mark.parametrize(("old", "new"), sorted(NN_MOVED.items()))
def test_moved_nn_names_warn_and_name_their_new_home(old: str, new: str):
    with pytest.warns(DeprecationWarning, match=rf"^prelens\.nn\.{old} is deprecated: use {re.escape(new)}"):
        value = getattr(prelens.nn, old)
    assert old not in prelens.nn.__all__
    if "(" not in new:
        module, _, name = new.rpartition(".")
        assert getattr(importlib.import_module(module), name) is value


def test_every_moved_nn_name_is_an_object_of_its_new_home():
    """The table that ``prelens.faithful`` fills: each old name gives the very object it names."""
    assert set(prelens.nn._MOVED) >= set(NN_MOVED)
    for old, (new, value) in prelens.nn._MOVED.items():
        with pytest.warns(DeprecationWarning, match=re.escape(new)):
            assert getattr(prelens.nn, old) is value
        assert not hasattr(value, "__prelens_constructor__") or value.__prelens_constructor__.startswith(
            ("prelens.nn.", "prelens.faithful.")
        )


@pytest.mark.parametrize("old", ["affine_l", "layer_l", "make_mlp_l", "batch_loss_l", "TOY_XS"])
def test_faithful_re_spellings_warn(old: str):
    with pytest.warns(DeprecationWarning, match=rf"^prelens\.faithful\.{old} is deprecated: use "):
        assert getattr(prelens.faithful, old) is not None
    assert old not in prelens.faithful.__all__


def test_unknown_attributes_are_still_attribute_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match=r"module 'prelens\.nn' has no attribute 'nonesuch'"):
            prelens.nn.nonesuch
