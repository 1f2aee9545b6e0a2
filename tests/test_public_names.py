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
import warnings
from types import ModuleType
from typing import Any

import pytest

import prelens
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
    assert not hasattr(prelens.nn, old) and callable(getattr(prelens.nn, new))
    assert old not in prelens.nn.__all__


def test_unknown_attributes_are_still_attribute_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match=r"module 'prelens\.nn' has no attribute 'nonesuch'"):
            prelens.nn.nonesuch
