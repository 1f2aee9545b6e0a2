"""Optimisers: textbook formulas on arbitrary trees, purity, dtypes, errors."""

from __future__ import annotations

import copy
import math
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import StructureError
from prelens.core import tree_allclose, tree_leaves, tree_map, tree_paths, tree_zip_map
from prelens.errors import ArgumentError, DTypeError
from prelens.learn import Adam, AdamState, Momentum, MomentumState, adam, momentum, sgd


class Para(NamedTuple):
    bias: Any
    weight: Any


# A tree "shape" is drawn by hypothesis; a seed fills its leaves.
leaf_kinds = st.sampled_from(["f64", "f32", "float", "f64[3]", "f32[2,2]", "f64[0]"])


def _nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "w"]), children, max_size=2),
        st.tuples(children, children).map(lambda t: Para(*t)),
    )


tree_specs = st.recursive(leaf_kinds | st.just(()) | st.just(None), _nodes, max_leaves=8)


def fill(spec: Any, rng: np.random.Generator) -> Any:
    """A tree shaped like ``spec`` with standard-normal leaves."""

    def leaf(kind: str) -> Any:
        if kind == "float":
            return float(rng.standard_normal())
        dtype = np.float32 if kind.startswith("f32") else np.float64
        shape = tuple(int(d) for d in kind[4:-1].split(",")) if "[" in kind else ()
        return rng.standard_normal(shape).astype(dtype)

    return tree_map(leaf, spec)


def frozen_copy(tree: Any) -> Any:
    return copy.deepcopy(tree)


def assert_identical(a: Any, b: Any) -> None:
    """Same structure, leaf types, dtypes and bit-exact values."""
    assert tree_allclose(a, b, rtol=0.0)
    for (_, x), (_, y) in zip(tree_paths(a), tree_paths(b)):
        assert type(x) is type(y)
        assert np.asarray(x).dtype == np.asarray(y).dtype


def _textbook(name: str, hyper: dict[str, float], steps: list[Any], params: Any) -> list[Any]:
    """The update rules written leaf by leaf, in float64, the way the papers state them."""
    out = []
    m = tree_map(lambda x: 0.0 * np.float64(x), params)
    v = tree_map(lambda x: 0.0 * np.float64(x), params)
    p = tree_map(np.float64, params)
    for t, g in enumerate(steps, start=1):
        g = tree_map(np.float64, g)
        if name == "sgd":
            p = tree_zip_map(lambda p, g: p - hyper["lr"] * g, p, g)
        elif name == "momentum":
            b, lr = hyper["beta"], hyper["lr"]
            m = tree_zip_map(lambda m, g: b * m + g, m, g)
            if hyper.get("nesterov"):
                p = tree_zip_map(lambda p, g, m: p - lr * (g + b * m), p, g, m)
            else:
                p = tree_zip_map(lambda p, m: p - lr * m, p, m)
        else:
            b1, b2, lr, eps = hyper["b1"], hyper["b2"], hyper["lr"], hyper["eps"]
            m = tree_zip_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
            v = tree_zip_map(lambda v, g: b2 * v + (1 - b2) * g**2, v, g)
            p = tree_zip_map(lambda p, m, v: p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps), p, m, v)
        out.append(p)
    return out


OPTIMISERS = [
    ("sgd", {"lr": 0.1}, lambda h: sgd(h["lr"])),
    ("momentum", {"lr": 0.05, "beta": 0.9}, lambda h: momentum(h["lr"], h["beta"])),
    ("momentum", {"lr": 0.05, "beta": 0.7, "nesterov": True}, lambda h: momentum(h["lr"], h["beta"], True)),
    ("adam", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8}, lambda h: adam(h["lr"])),
    ("adam", {"lr": 0.3, "b1": 0.5, "b2": 0.6, "eps": 1e-3}, lambda h: adam(h["lr"], 0.5, 0.6, 1e-3)),
]


@pytest.mark.parametrize(("name", "hyper", "make"), OPTIMISERS, ids=lambda x: str(x)[:30])
@given(spec=tree_specs, seed=st.integers(0, 2**32 - 1))
def test_textbook_formulas_purity_and_dtypes(name: str, hyper: dict[str, float], make: Any, spec: Any, seed: int):
    rng = np.random.default_rng(seed)
    params = fill(spec, rng)
    grads = [fill(spec, rng) for _ in range(3)]
    opt = make(hyper)
    expected = _textbook(name, hyper, grads, params)

    state = opt.init(params)
    p = params
    for g, want in zip(grads, expected):
        before = frozen_copy((p, g, state))
        new_p, new_state = opt.update(g, state, p)
        assert_identical((p, g, state), before)  # nothing we were given was written into
        for x, y in zip(tree_leaves(new_p), tree_leaves((p, g, state))):
            assert not (isinstance(x, np.ndarray) and np.shares_memory(x, y))
        # structure, leaf types and dtypes kept; values as the textbook says
        assert tree_map(lambda x: (type(x), np.asarray(x).dtype), new_p) == tree_map(
            lambda x: (type(x), np.asarray(x).dtype), p
        )
        tol = 1e-5 if any(np.asarray(x).dtype == np.float32 for x in tree_leaves(params)) else 1e-10
        assert tree_allclose(tree_map(np.float64, new_p), want, rtol=tol, atol=tol)
        p, state = new_p, new_state


def test_states_are_named_and_count_steps():
    params = [np.zeros(2)]
    opt = adam(0.1)
    state = opt.init(params)
    assert isinstance(state, AdamState) and state.step == 0
    _, state = opt.update([np.ones(2)], state, params)
    _, state = opt.update([np.ones(2)], state, params)
    assert state.step == 2
    m = Momentum(0.1)
    assert isinstance(m.init(params), MomentumState)
    assert sgd(0.1).init(params) == ()


def test_state_never_aliases_params():
    params = [np.ones(3)]
    state = Adam(0.1).init(params)
    assert not np.shares_memory(state.mu[0], params[0])
    assert not np.shares_memory(state.mu[0], state.nu[0])


def test_float32_stays_float32_with_float64_grads():
    params = (np.ones(4, np.float32),)
    for opt in (sgd(0.1), momentum(0.1), adam(0.1)):
        new, state = opt.update((np.ones(4, np.float64),), opt.init(params), params)
        assert new[0].dtype == np.float32
        assert all(x.dtype == np.float32 for x in tree_leaves(state) if isinstance(x, np.ndarray))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.longdouble])
def test_sgd_is_numpy_own_product_bit_for_bit(dtype: Any):
    """sgd steps a node's array leaves in its own loop, by ``−lr`` as a 0-d array of their dtype:
    the result is numpy's ``g * (−lr) + p`` with a Python float, to the last bit, as at the root."""
    rng = np.random.default_rng(0)
    lr = 0.1234567  # not exact in any of the dtypes

    def draw(*shape: int) -> Any:
        return rng.standard_normal(shape).astype(dtype)

    params = [Para(draw(3), draw(3, 2)), (draw(4), [draw(2, 2, 2)]), draw(5)]
    grads = tree_map(lambda p: rng.standard_normal(p.shape).astype(p.dtype), params)
    expected = tree_zip_map(lambda p, g: g * -lr + p, params, grads)
    new, _ = sgd(lr).update(grads, (), params)
    assert_identical(new, expected)
    # float64 grads for float32 parameters take the general path, and keep the parameters' dtype
    wide = tree_map(lambda g: g.astype(np.float64), grads)
    new_wide, _ = sgd(lr).update(wide, (), params)
    assert tree_map(lambda x: x.dtype, new_wide) == tree_map(lambda x: x.dtype, params)


def test_adam_first_step_moves_every_coordinate_by_lr():
    # m̂ = g, v̂ = g², so the first step is lr·sign(g) (up to eps)
    g = np.array([-3.0, 0.01, 7.0])
    new, _ = adam(0.1).update(g, adam(0.1).init(np.zeros(3)), np.zeros(3))
    np.testing.assert_allclose(new, -0.1 * np.sign(g), rtol=1e-6)


def test_scalar_leaves_stay_python_floats():
    new, _ = momentum(0.5).update(
        (2.0, np.float32(1.0)), momentum(0.5).init((1.0, np.float32(0.0))), (1.0, np.float32(0.0))
    )
    assert type(new[0]) is float and new[0] == 0.0
    assert type(new[1]) is np.float32 and math.isclose(new[1], -0.5)


def test_structure_mismatch_names_the_tree_and_path():
    params = [Para(np.zeros(2), np.zeros((2, 3)))]
    with pytest.raises(
        StructureError, match=r"sgd: grads: at \[0\]\.weight: expected shape \(2, 3\), got shape \(3, 2\)"
    ):
        sgd(0.1).update([Para(np.zeros(2), np.zeros((3, 2)))], (), params)
    with pytest.raises(StructureError, match=r"adam: grads: at \[0\]: expected Para, got tuple of 2"):
        adam(0.1).update([(np.zeros(2), np.zeros((2, 3)))], adam(0.1).init(params), params)
    state = momentum(0.1).init(params)
    with pytest.raises(
        StructureError, match=r"^momentum: the state's velocity: at <root>: expected list of 1, got list of 0$"
    ):
        momentum(0.1).update(params, MomentumState([]), params)
    assert state.velocity[0].weight.shape == (2, 3)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: sgd(0.0), r"sgd: lr must be a finite number > 0, got 0\.0"),
        (lambda: sgd(float("nan")), r"sgd: lr must be a finite number > 0"),
        (lambda: momentum(0.1, beta=1.0), r"momentum: beta must be a number in \[0, 1\), got 1\.0"),
        (lambda: adam(0.1, b2=-0.1), r"adam: b2 must be a number in \[0, 1\)"),
        (lambda: adam(0.1, eps=0), r"adam: eps must be a finite number > 0"),
    ],
)
def test_bad_hyperparameters(make: Any, match: str):
    with pytest.raises(ArgumentError, match=match):
        make()


def test_integer_parameters_are_refused():
    with pytest.raises(DTypeError, match=r"adam: cannot update the parameter at \[1\]: expected floats, got i64\[2\]"):
        adam(0.1).init((np.zeros(1), np.arange(2)))


def test_numpy_scalar_hyperparameters_are_numbers():
    """``np.float32(0.1)`` (a float32 config, an element of ``np.linspace(..., dtype=np.float32)``) is a number, as
    it is for the schedules: taken as the Python number, and the same optimiser as the Python number makes."""
    from prelens.learn import adamw, clip_by_global_norm, rmsprop

    pairs = [
        (sgd(np.float32(0.5)), sgd(float(np.float32(0.5)))),
        (momentum(np.float32(0.5), beta=np.float32(0.5)), momentum(0.5, beta=0.5)),
        (
            adamw(np.float64(0.5), b1=np.float32(0.5), weight_decay=np.float32(0.25)),
            adamw(0.5, b1=0.5, weight_decay=0.25),
        ),
        (rmsprop(np.int64(1), rho=np.float32(0.5)), rmsprop(1, rho=0.5)),
        (clip_by_global_norm(sgd(0.5), np.float32(2.0)), clip_by_global_norm(sgd(0.5), 2.0)),
    ]
    params, grads = np.float32([1.0, -2.0]), np.float32([0.5, 3.0])
    for numpy_made, python_made in pairs:
        assert numpy_made == python_made and repr(numpy_made) == repr(python_made)
        a = numpy_made.update(grads, numpy_made.init(params), params)
        b = python_made.update(grads, python_made.init(params), params)
        same = [
            np.array_equal(x, y) and np.asarray(x).dtype == np.asarray(y).dtype
            for x, y in zip(*map(tree_leaves, (a, b)))
        ]
        assert all(same) and len(tree_leaves(a)) == len(tree_leaves(b))
    assert repr(sgd(0.5) >> clip_by_global_norm(np.float32(2.0))) == "sgd(0.5) >> clip_by_global_norm(2.0)"
    with pytest.raises(ArgumentError, match=r"sgd: lr must be a finite number > 0, got -0\.5$"):
        sgd(np.float32(-0.5))
    with pytest.raises(ArgumentError, match=r"sgd: lr must be a finite number > 0 or a schedule"):
        sgd(np.bool_(True))
