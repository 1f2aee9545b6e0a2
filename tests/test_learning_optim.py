"""The plain optimisers added for issue 14 (Adagrad, RMSprop, AdamW, clipping) and the schedules.

Textbook formulas on arbitrary trees (as ``test_optim.py`` checks SGD, momentum and
Adam), purity and dtypes; schedules as functions of the step, composed with every
optimiser, their state resumable; clear errors.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens.core import tree_allclose, tree_leaves, tree_map, tree_zip_map
from prelens.errors import ArgumentError, StructureError
from prelens.learn import (
    AdagradState,
    AdamState,
    RMSpropState,
    ScheduledState,
    adagrad,
    adam,
    adamw,
    clip_by_global_norm,
    constant,
    exponential_decay,
    momentum,
    one_cycle,
    rmsprop,
    sgd,
    step_decay,
    warmup_cosine,
)

from .test_optim import assert_identical, fill, frozen_copy, tree_specs


def _textbook(name: str, h: dict[str, float], grads: list[Any], params: Any) -> list[Any]:
    """Each rule leaf by leaf in float64, as the papers state it."""
    zeros = tree_map(lambda x: 0.0 * np.float64(x), params)
    p, s, m = tree_map(np.float64, params), zeros, zeros
    out = []
    for t, g in enumerate(grads, start=1):
        g = tree_map(np.float64, g)
        if name == "adagrad":
            s = tree_zip_map(lambda s, g: s + g * g, s, g)
            p = tree_zip_map(lambda p, g, s: p - h["lr"] * g / (np.sqrt(s) + h["eps"]), p, g, s)
        elif name == "rmsprop":
            r = h["rho"]
            s = tree_zip_map(lambda s, g: r * s + (1 - r) * g * g, s, g)
            p = tree_zip_map(lambda p, g, s: p - h["lr"] * g / (np.sqrt(s) + h["eps"]), p, g, s)
        else:  # adamw: Loshchilov & Hutter, with PyTorch's lr·λ
            b1, b2, lr, eps, wd = h["b1"], h["b2"], h["lr"], h["eps"], h["wd"]
            m = tree_zip_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
            s = tree_zip_map(lambda v, g: b2 * v + (1 - b2) * g**2, s, g)
            p = tree_zip_map(
                lambda p, m, v: p - lr * ((m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps) + wd * p), p, m, s
            )
        out.append(p)
    return out


OPTIMISERS = [
    ("adagrad", {"lr": 0.1, "eps": 1e-10}, lambda h: adagrad(h["lr"])),
    ("adagrad", {"lr": 0.5, "eps": 1e-2}, lambda h: adagrad(h["lr"], eps=1e-2)),
    ("rmsprop", {"lr": 0.01, "rho": 0.9, "eps": 1e-8}, lambda h: rmsprop(h["lr"])),
    ("rmsprop", {"lr": 0.2, "rho": 0.5, "eps": 1e-3}, lambda h: rmsprop(h["lr"], 0.5, 1e-3)),
    ("adamw", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01}, lambda h: adamw(h["lr"])),
    ("adamw", {"lr": 0.3, "b1": 0.5, "b2": 0.6, "eps": 1e-3, "wd": 0.5}, lambda h: adamw(0.3, 0.5, 0.6, 1e-3, 0.5)),
]


@pytest.mark.parametrize(("name", "hyper", "make"), OPTIMISERS, ids=lambda x: str(x)[:30])
@given(spec=tree_specs, seed=st.integers(0, 2**32 - 1))
def test_textbook_formulas_purity_and_dtypes(name: str, hyper: dict[str, float], make: Any, spec: Any, seed: int):
    rng = np.random.default_rng(seed)
    params = fill(spec, rng)
    grads = [fill(spec, rng) for _ in range(3)]
    opt = make(hyper)
    expected = _textbook(name, hyper, grads, params)
    state, p = opt.init(params), params
    for g, want in zip(grads, expected):
        before = frozen_copy((p, g, state))
        new_p, new_state = opt.update(g, state, p)
        assert_identical((p, g, state), before)  # nothing given was written into
        for x, y in zip(tree_leaves(new_p), tree_leaves((p, g, state))):
            assert not (isinstance(x, np.ndarray) and np.shares_memory(x, y))
        assert tree_map(lambda x: (type(x), np.asarray(x).dtype), new_p) == tree_map(
            lambda x: (type(x), np.asarray(x).dtype), p
        )
        tol = 1e-5 if any(np.asarray(x).dtype == np.float32 for x in tree_leaves(params)) else 1e-10
        assert tree_allclose(tree_map(np.float64, new_p), want, rtol=tol, atol=tol)
        p, state = new_p, new_state


def test_states_are_named() -> None:
    params = [np.zeros(2)]
    assert isinstance(adagrad(0.1).init(params), AdagradState)
    assert isinstance(rmsprop(0.1).init(params), RMSpropState)
    assert isinstance(adamw(0.1).init(params), AdamState)


def test_adamw_without_decay_is_adam() -> None:
    rng = np.random.default_rng(0)
    params, g = rng.standard_normal((30, 20)), rng.standard_normal((30, 20))
    a, b = adam(0.01), adamw(0.01, weight_decay=0.0)
    assert np.array_equal(a.update(g, a.init(params), params)[0], b.update(g, b.init(params), params)[0])


# ---------------------------------------------------------------------- schedules


def test_schedules_as_functions_of_the_step() -> None:
    assert [constant(0.1)(t) for t in (0, 99)] == [0.1, 0.1]
    assert [step_decay(1.0, every=3, factor=0.1)(t) for t in (0, 2, 3, 6)] == pytest.approx([1.0, 1.0, 0.1, 0.01])
    assert exponential_decay(2.0, rate=0.5, every=4)(6) == pytest.approx(2.0 * 0.5**1.5)
    wc = warmup_cosine(1.0, warmup=10, total=110, final=0.1)
    assert wc(0) == pytest.approx(0.1) and wc(9) == 1.0 and wc(10) == 1.0
    assert wc(60) == pytest.approx(0.55) and wc(110) == 0.1 and wc(10_000) == 0.1
    values = [wc(t) for t in range(10, 111)]
    assert all(a >= b for a, b in itertools.pairwise(values))  # decays monotonically after the warm-up
    oc = one_cycle(0.1, total=100)
    assert oc(0) == pytest.approx(0.004) and oc(30) == pytest.approx(0.1) and oc(100) == pytest.approx(4e-7)
    assert max(oc(t) for t in range(101)) == pytest.approx(0.1)
    assert warmup_cosine(1.0, warmup=0, total=4)(0) == 1.0


def test_schedules_print_as_their_calls() -> None:
    assert repr(warmup_cosine(0.1, 5, 50)) == "warmup_cosine(peak=0.1, warmup=5, total=50, final=0.0)"
    assert repr(sgd(step_decay(0.1, 10))) == "SGD(lr=step_decay(lr=0.1, every=10, factor=0.1))"


OPTIMIZERS = [sgd, lambda lr: momentum(lr, 0.9), lambda lr: momentum(lr, 0.9, True), adagrad, rmsprop, adam, adamw]


@pytest.mark.parametrize("make", OPTIMIZERS, ids=["sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adam", "adamw"])
def test_every_optimiser_takes_a_schedule(make: Any) -> None:
    """With a schedule, each step is the plain optimiser's at the schedule's value; the state counts the steps."""
    rng = np.random.default_rng(1)
    params = [rng.standard_normal((8, 4)), rng.standard_normal(4)]
    sched = warmup_cosine(0.05, warmup=2, total=10, final=0.001)
    opt = make(sched)
    state = opt.init(params)
    inner = make(0.05).init(params)
    assert type(state) is ScheduledState and state.step == 0 and tree_allclose(state.state, inner, rtol=0.0)
    scheduled, plain = params, params
    for t in range(12):
        g = [rng.standard_normal((8, 4)), rng.standard_normal(4)]
        scheduled, state = opt.update(g, state, scheduled)
        plain, inner = make(sched(t)).update(g, inner, plain)
        assert state.step == t + 1
        assert tree_allclose(scheduled, plain, rtol=0.0)
        assert tree_allclose(state.state, inner, rtol=0.0)


def test_a_resumed_schedule_continues_where_it_stopped() -> None:
    params = np.ones(3)
    opt = sgd(step_decay(1.0, every=2, factor=0.5))
    s = opt.init(params)
    for _ in range(3):
        params, s = opt.update(np.ones(3), s, params)
    assert s == ScheduledState(3, ())
    assert params == pytest.approx(np.ones(3) - (1.0 + 1.0 + 0.5))
    params, s = opt.update(np.ones(3), ScheduledState(3, ()), params)  # as loaded from a checkpoint
    assert params == pytest.approx(np.ones(3) - 3.0)


def test_a_schedule_may_be_any_function_of_the_step() -> None:
    opt = sgd(lambda t: 0.5**t)
    p, s = np.zeros(1), opt.init(np.zeros(1))
    for _ in range(3):
        p, s = opt.update(np.ones(1), s, p)
    assert p == pytest.approx([-1.75])


# ---------------------------------------------------------------------- clipping


def test_clip_by_global_norm() -> None:
    params = [np.zeros((3, 4)), np.zeros(4)]
    g = [np.full((3, 4), 2.0), np.full(4, 2.0)]  # norm 2·4 = 8
    opt = clip_by_global_norm(sgd(1.0), 2.0)
    new, state = opt.update(g, opt.init(params), params)
    assert state == () and math.isclose(math.sqrt(sum(float(np.sum(x**2)) for x in new)), 2.0)
    small = [x / 100 for x in g]
    assert tree_allclose(opt.update(small, (), params)[0], tree_map(lambda x: -x, small))
    for scale in (1.01, 1.5, 3.0):  # every norm above max_norm is brought down to it
        g = [np.full((3, 4), scale), np.full(4, scale)]
        new, _ = clip_by_global_norm(sgd(1.0), 4.0 * scale / 1.01).update(g, (), params)
        assert math.sqrt(sum(float(np.sum(x**2)) for x in new)) == pytest.approx(min(8 * scale, 4.0 * scale / 1.01))
    inner = clip_by_global_norm(adam(0.1), 1.0)
    assert isinstance(inner.init(params), AdamState)
    f32 = [np.zeros(2, np.float32)]
    assert opt.update([np.full(2, 10.0, np.float32)], (), f32)[0][0].dtype == np.float32


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: adagrad(0.0), r"^adagrad: lr must be a finite number > 0, got 0\.0$"),
        (lambda: rmsprop(0.1, rho=1.0), r"^rmsprop: rho must be a number in \[0, 1\), got 1\.0$"),
        (lambda: adamw(0.1, weight_decay=-1.0), r"^adamw: weight_decay must be a finite number >= 0, got -1\.0$"),
        (lambda: sgd("0.1"), r"^sgd: lr must be a finite number > 0 or a schedule .*, got '0\.1'$"),
        (lambda: sgd(None), r"^sgd: lr must be a finite number > 0 or a schedule .*, got None$"),
        (  # found when made, not at the first update as a bare TypeError
            lambda: adam(lambda epoch, base_lr: 0.1),
            r"^adam: lr must be a finite number > 0 or a schedule \(a function of the step\), got '<lambda>\(epoch, "
            r"base_lr\)'$",
        ),
        (lambda: momentum(lambda: 0.1), r"^momentum: lr must be .* got '<lambda>\(\)'$"),
        (lambda: clip_by_global_norm(sgd(0.1), 0.0), r"^clip_by_global_norm: max_norm must be a finite number > 0"),
        (lambda: clip_by_global_norm(sgd, 1.0), r"^clip_by_global_norm: optimizer must be an optimiser"),
        (lambda: warmup_cosine(0.1, warmup=20, total=10), r"^warmup_cosine: warmup must be an int in \[0, total=10\]"),
        (lambda: warmup_cosine(0.1, 2, 10, final=0.2), r"^warmup_cosine: final must be a number in \[0, peak=0\.1\]"),
        (lambda: step_decay(0.1, every=0), r"^step_decay: every must be an int >= 1, got 0$"),
        (lambda: exponential_decay(0.1, rate=1.5), r"^exponential_decay: rate must be a number in \(0, 1\]"),
        (lambda: one_cycle(0.1, total=10, warmup_fraction=1.0), r"^one_cycle: warmup_fraction must be a finite"),
        (lambda: constant(0.1)(-1), r"^constant: step must be an int >= 0, got -1$"),
        (lambda: constant(0.1)(1.5), r"^constant: step must be an int >= 0, got 1\.5$"),
        (lambda: constant(0.1)(np.True_), r"^constant: step must be an int >= 0, got np\.True_$"),  # was step 1
    ],
)
def test_bad_arguments(make: Any, match: str) -> None:
    with pytest.raises((ArgumentError, StructureError), match=match):
        make()


def test_a_schedule_that_gives_a_bad_value_is_named_with_its_step() -> None:
    opt = adam(lambda t: float("nan") if t == 1 else 0.1)
    p, s = np.zeros(2), opt.init(np.zeros(2))
    p, s = opt.update(np.ones(2), s, p)
    with pytest.raises(ArgumentError, match=r"^adam: the lr schedule gave nan at step 1; a schedule must give"):
        opt.update(np.ones(2), s, p)
    with pytest.raises(StructureError, match=r"^adam: the optimiser state must be a ScheduledState"):
        opt.update(np.ones(2), adam(0.1).init(np.zeros(2)), p)


def test_a_bool_is_no_step_count_of_a_scheduled_state() -> None:
    # True was read as step 1 (ScheduledState's step, in both views), where AdamState's step refused it
    opt = sgd(warmup_cosine(0.1, 2, 10))
    bad = ScheduledState(True, ())
    with pytest.raises(StructureError, match=r"^sgd: the optimiser state must be a ScheduledState with an int step"):
        opt.update(np.ones(2), bad, np.zeros(2))
    with pytest.raises(StructureError, match=r"the optimiser state must be a ScheduledState with an int step"):
        opt.lens.fwd((), (np.zeros(2), bad))
    assert opt.update(np.ones(2), ScheduledState(np.int64(1), ()), np.zeros(2))[1] == ScheduledState(2, ())


@pytest.mark.parametrize(
    "opt",
    [
        adam(warmup_cosine(0.1, 2, 10)),
        momentum(0.1, nesterov=True),
        clip_by_global_norm(adamw(step_decay(0.1, every=3)), 1.0),
    ],
    ids=repr,
)
def test_an_optimiser_pickles_after_its_lens_was_made(opt: Any) -> None:
    """A frozen value, as a process pool or a saved config needs it, also once ``opt.lens`` (which ``fit`` makes)
    exists: the lens (closures) is made again after unpickling."""
    import pickle

    lens = opt.lens
    again = pickle.loads(pickle.dumps(opt))
    assert again == opt and repr(again.lens) == repr(lens)
    params = [np.ones(3)]
    assert_identical(again.update(params, again.init(params), params), opt.update(params, opt.init(params), params))
