"""Learning as optics: every optimiser lens equals its ``prelens.optim`` twin, and obeys the laws.

The twins are the fast, in-place optimisers; the lenses are the paper's equations
written leaf by leaf. Run side by side on the same gradients, they agree to 1e-12
in float64 over many steps: alone (the delta ``−g`` fed to the pullback), inside a
whole training step (``learner``), under schedules, in the paper's own form (the
step size in the learning-rate lens) and composed with clipping.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from prelens import PreLens, forward, id_pre_lens, learn, vjp
from prelens import errors as E
from prelens import learn as optim
from prelens.core import tree_first_difference, tree_map, tree_zip_map
from prelens.nn import linear, mlp, mse, softmax_cross_entropy
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds
from prelens.train import step as train_step

TOL = 1e-12

#: (lens, twin) pairs with the same hyperparameters: the lens under α = 1 is the twin.
PAIRS: list[tuple[str, Any, Any]] = [
    ("sgd", lambda lr: learn.sgd(lr).lens, lambda lr: optim.sgd(lr)),
    ("momentum", lambda lr: learn.momentum(lr, 0.8).lens, lambda lr: optim.momentum(lr, 0.8)),
    (
        "nesterov",
        lambda lr: learn.momentum(lr, 0.9, nesterov=True).lens,
        lambda lr: optim.momentum(lr, 0.9, nesterov=True),
    ),
    ("adagrad", lambda lr: learn.adagrad(lr).lens, lambda lr: optim.adagrad(lr)),
    ("rmsprop", lambda lr: learn.rmsprop(lr, rho=0.8).lens, lambda lr: optim.rmsprop(lr, rho=0.8)),
    ("adam", lambda lr: learn.adam(lr).lens, lambda lr: optim.adam(lr)),
    ("adam b", lambda lr: learn.adam(lr, 0.5, 0.6, 1e-3).lens, lambda lr: optim.adam(lr, 0.5, 0.6, 1e-3)),
    ("adamw", lambda lr: learn.adamw(lr, weight_decay=0.3).lens, lambda lr: optim.adamw(lr, weight_decay=0.3)),
    (
        "adam >> clip",
        lambda lr: learn.adam(lr) >> learn.clip_by_global_norm(0.5),
        lambda lr: optim.clip_by_global_norm(optim.adam(lr), 0.5),
    ),
]
RATES = {
    "constant": 0.05,
    "warmup_cosine": optim.warmup_cosine(0.05, warmup=3, total=10),
    "one_cycle": optim.one_cycle(0.05, total=9),
    "step_decay": optim.step_decay(0.05, every=2, factor=0.5),
}


def _params(seed: int = 0) -> Any:
    """A tree with named tuples, a list, matrices and vectors (an MLP's parameters) and a Python float."""
    return (mlp(3, [5, 4, 2]).init(seed), 0.25)


def _grads(rng: np.random.Generator, like: Any) -> Any:
    return tree_map(
        lambda x: rng.standard_normal(np.shape(x)) if isinstance(x, np.ndarray) else float(rng.standard_normal()), like
    )


def _run_lens(lens: Any, params: Any, grads: list[Any]) -> list[Any]:
    """Feed ``−g`` (the delta under α = 1) to the lens's pullback, step after step; record what the model sees."""
    units, state, seen = lens.init(0), learn.init_state(lens, params), []
    for g in grads:
        _, pullback = vjp(lens, units, (params, state))
        _, (params, state) = pullback(tree_map(lambda x: -x, g))
        seen.append((forward(lens, units, (params, state)), state))
    return seen


def _run_twin(opt: Any, params: Any, grads: list[Any]) -> list[Any]:
    state, out = opt.init(params), []
    for g in grads:
        params, state = opt.update(g, state, params)
        out.append((params, state))
    return out


def assert_equal_trees(a: Any, b: Any, what: str) -> None:
    found = tree_first_difference(a, b, rtol=TOL, atol=TOL)
    assert found is None, f"{what}: differ at {found[0]}: {found[1]} vs {found[2]}"


@pytest.mark.parametrize("rate", sorted(RATES))
@pytest.mark.parametrize(("name", "make_lens", "make_twin"), PAIRS, ids=[p[0] for p in PAIRS])
def test_every_optimiser_lens_equals_its_twin(name: str, make_lens: Any, make_twin: Any, rate: str) -> None:
    rng = np.random.default_rng(1)
    params = _params()
    grads = [_grads(rng, params) for _ in range(12)]
    lens_run = _run_lens(make_lens(RATES[rate]), params, grads)
    twin_run = _run_twin(make_twin(RATES[rate]), params, grads)
    for k, ((seen, s_lens), (p_twin, s_twin)) in enumerate(zip(lens_run, twin_run)):
        assert_equal_trees(seen, p_twin, f"{name}, step {k}: parameters")
        assert_equal_trees(s_lens, s_twin, f"{name}, step {k}: state")
        assert type(s_lens) is type(s_twin)


@pytest.mark.parametrize(("name", "make_lens", "make_twin"), PAIRS, ids=[p[0] for p in PAIRS])
def test_the_whole_training_step_as_one_lens_equals_train_step(name: str, make_lens: Any, make_twin: Any) -> None:
    """``learner`` (one vjp, one pullback of ``()``) equals ``prelens.train.step`` with the twin."""
    rng = np.random.default_rng(2)
    model = mlp(20, [64, 10], last_activation=None)  # the size of a small classifier, batches of 128
    xs, labels = rng.standard_normal((512, 20)), rng.integers(0, 10, 512)
    lens, twin = make_lens(0.02), make_twin(0.02)
    step = learn.learner(model, softmax_cross_entropy, lens)
    p_lens = p_twin = model.init(3)
    s_lens, s_twin = learn.init_state(lens, p_lens), twin.init(p_twin)
    for k in range(12):
        batch = (xs[k % 4 * 128 : (k % 4 + 1) * 128], labels[k % 4 * 128 : (k % 4 + 1) * 128])
        p_lens, s_lens, loss_lens = learn.learner_step(step, p_lens, s_lens, batch)
        p_twin, s_twin, loss_twin = train_step(model, softmax_cross_entropy, p_twin, batch, twin, s_twin)
        assert abs(loss_lens - loss_twin) <= TOL * max(1.0, abs(loss_twin))
        assert_equal_trees(forward(lens, lens.init(0), (p_lens, s_lens)), p_twin, f"{name}, step {k}")


@pytest.mark.parametrize(
    ("make_lens", "make_twin"),
    [
        (lambda: learn.sgd(1.0).lens, lambda: optim.sgd(0.05)),
        (lambda: learn.momentum(1.0, 0.9).lens, lambda: optim.momentum(0.05, 0.9)),
        (lambda: learn.momentum(1.0, 0.9, nesterov=True).lens, lambda: optim.momentum(0.05, 0.9, nesterov=True)),
    ],
    ids=["gradient_descent", "momentum", "nesterov"],
)
def test_the_papers_form_with_the_step_size_in_the_learning_rate_lens(make_lens: Any, make_twin: Any) -> None:
    """``α = 0.05`` with the unit-rate optimiser lens equals the twin at ``lr = 0.05`` (the velocity scaled by α)."""
    rng = np.random.default_rng(4)
    model = mlp(2, [8, 1], last_activation=None)
    xs = rng.standard_normal((32, 2))
    ys = np.sin(xs[:, :1]) * xs[:, 1:]
    lens, twin = make_lens(), make_twin()
    step = learn.learner(model, mse, lens, rate=learn.learning_rate(0.05))
    p_lens = p_twin = model.init(0)
    s_lens, s_twin = learn.init_state(lens, p_lens), twin.init(p_twin)
    for _ in range(10):
        p_lens, s_lens, _ = learn.learner_step(step, p_lens, s_lens, (xs, ys))
        p_twin, s_twin, _ = train_step(model, mse, p_twin, (xs, ys), twin, s_twin)
        assert_equal_trees(forward(lens, (), (p_lens, s_lens)), p_twin, "parameters")
        if s_twin != ():
            assert_equal_trees(tree_map(lambda v: 0.05 * v, s_twin), s_lens, "velocity (scaled by α)")


def test_the_old_names_warn_and_name_the_new_ones() -> None:
    import prelens.optim

    for old, new, args in [("gradient_descent", "sgd(lr).lens", (0.1,)), ("nesterov", "momentum(lr, beta", (0.1,))]:
        with pytest.warns(
            DeprecationWarning, match=rf"prelens\.learn\.{old} is deprecated: use prelens\.learn\.{re.escape(new)}"
        ):
            lens = getattr(learn, old)(*args)
        assert isinstance(lens, learn.OptimizerLens)
    for name in ("adam", "AdamState", "SGD", "warmup_cosine", "ScheduledState", "clip_by_global_norm"):
        with pytest.warns(
            DeprecationWarning, match=rf"^prelens\.optim\.{name} is deprecated: use prelens\.learn\.{name} "
        ):
            assert getattr(prelens.optim, name) is getattr(learn, name)


def test_the_learning_rate_lens_makes_the_delta() -> None:
    lens = learn.learning_rate(0.3)
    value, pullback = vjp(lens, (), np.float64(2.5))
    assert value == 2.5 and pullback(()) == ((), -0.3)
    with pytest.raises(E.ArgumentError, match=r"^learning_rate: alpha must be a finite number > 0, got -1\.0$"):
        learn.learning_rate(-1.0)
    with pytest.raises(E.StructureError, match=r"learning_rate\(0\.3\): input must be a loss"):
        lens.fwd((), np.ones(2))


def test_learner_reports_the_loss_before_the_update_and_descends() -> None:
    rng = np.random.default_rng(5)
    model = mlp(3, [8, 1], last_activation=None)
    xs = rng.standard_normal((100, 3))
    ys = xs @ np.array([[1.0], [-2.0], [0.5]])
    opt = learn.adam(0.03)
    step = learn.learner(model, mse, opt)
    params, state = model.init(0), opt.init(model.init(0))
    first = forward(model >> mse, (ys, params), xs)
    params, state, loss = learn.learner_step(step, params, state, (xs, ys))
    assert loss == pytest.approx(float(first), rel=1e-14)
    for _ in range(300):
        params, state, loss = learn.learner_step(step, params, state, (xs, ys))
    assert loss < 0.02 * float(first)
    assert state.step == 301


# ---------------------------------------------------------------- reparameterisation


def _reparameterise_by_hand(lens: Any, opt: Any) -> Any:
    """The reparameterisation written out directly (the composition's twin)."""

    def fwd(q: Any, x: Any) -> Any:
        m_u, p = opt.fwd(opt.init(0), q)
        m_f, y = lens.fwd(p, x)
        return (m_u, m_f), y

    def bwd(m: Any, dy: Any) -> Any:
        dp, dx = lens.bwd(m[1], dy)
        _, new_q = opt.bwd(m[0], dp)
        return new_q, dx

    return PreLens(fwd, bwd, "by_hand")


def _m_iso(m: Any) -> Any:
    return ((m[0], ()), m[1])


@given(seeds())
@settings(max_examples=8)
def test_reparameterise_equals_running_the_optimiser_by_hand(seed: int) -> None:
    """``beta((U @ id) >> parameters_as_input(f))`` runs ``U``, then ``f``, and back."""
    rng = np.random.default_rng(seed)
    model = mlp(3, [4, 2])
    opt = learn.momentum(0.1).lens
    params = model.init(rng)
    q = (params, learn.init_state(opt, params))
    check_lens_equal(
        "reparameterise by hand",
        _reparameterise_by_hand(model, opt),
        learn.reparameterise(model, opt),
        q,
        rng.standard_normal((5, 3)),
        m_iso=_m_iso,
    )


def test_reparameterise_creates_parameters_and_state() -> None:
    lens = learn.reparameterise(mlp(3, [4, 2]), learn.adam(0.1))
    _, state = lens.init(0)
    assert isinstance(state, optim.AdamState) and state.step == 0
    assert learn.reparameterise(mlp(3, [2]), id_pre_lens).init_fn is None  # not an optimiser: no state to make


@given(seeds())
@settings(max_examples=10)
def test_parameters_as_input_is_betas_inverse(seed: int) -> None:
    rng = np.random.default_rng(seed)
    model = mlp(3, [4, 2])
    p, x = model.init(rng), rng.standard_normal((2, 3))
    check_lens_laws(learn.parameters_as_input(model), (), (p, x))
    check_lens_equal(
        "beta(parameters_as_input(f)) = f",
        model,
        learn.parameters_as_input(model).beta(),
        p,
        x,
        p_iso=lambda p: ((), p),
    )


# ---------------------------------------------------------------------------- laws


LENSES = [make(0.1) for _, make, _ in PAIRS] + [make(RATES["warmup_cosine"]) for _, make, _ in PAIRS[:6]]


@pytest.mark.parametrize("lens", LENSES, ids=repr)
@given(seed=seeds())
@settings(max_examples=3)
def test_optimiser_lenses_obey_the_laws(lens: Any, seed: int) -> None:
    """Purity, units, dimaps, alpha/beta, the encoding and the combinators (``put`` is no derivative: no vjp)."""
    rng = np.random.default_rng(seed)
    params = mlp(2, [3, 2]).init(rng)
    _, (params, state) = vjp(lens, lens.init(0), (params, learn.init_state(lens, params)))[1](_grads(rng, params))
    check_lens_laws(lens, lens.init(0), (params, state), rng=rng, vjp=False)


def test_the_clipping_lens_brings_every_longer_delta_to_max_norm() -> None:
    lens = learn.clip_by_global_norm(2.0)
    for norm in (1.0, 2.0, 2.5, 3.9, 40.0):
        delta = [np.full(4, norm / 2), np.zeros(3)]  # global norm = norm
        _, clipped = lens.bwd((), delta)
        assert np.sqrt(sum(float(np.sum(x**2)) for x in clipped)) == pytest.approx(min(norm, 2.0))


@given(seeds())
@settings(max_examples=5)
def test_the_learning_rate_and_clipping_lenses_obey_the_laws(seed: int) -> None:
    rng = np.random.default_rng(seed)
    check_lens_laws(learn.learning_rate(0.1), (), float(rng.standard_normal()), rng=rng, vjp=False)
    check_lens_laws(learn.clip_by_global_norm(0.5), (), mlp(2, [3]).init(rng), rng=rng, vjp=False)


@given(seeds())
@settings(max_examples=5)
def test_the_whole_learner_obeys_the_laws(seed: int) -> None:
    rng = np.random.default_rng(seed)
    model = mlp(2, [3, 2], last_activation=None)
    opt = learn.rmsprop(0.01)
    lens = learn.learner(model, mse, opt)
    params = model.init(rng)
    p = ((), (rng.standard_normal((4, 2)), (params, opt.init(params))))
    check_lens_laws(lens, p, rng.standard_normal((4, 2)), rng=rng, vjp=False)


# ---------------------------------------------------------------------------- penalty


@given(seeds())
@settings(max_examples=10)
def test_l2_is_a_lawful_differentiable_lens(seed: int) -> None:
    rng = np.random.default_rng(seed)
    check_lens_laws(learn.l2(0.3), mlp(2, [3, 2]).init(rng), float(rng.standard_normal()), rng=rng)


def test_penalised_adds_lambda_p_to_the_gradient() -> None:
    rng = np.random.default_rng(6)
    model = mlp(3, [5, 2], last_activation=None)
    params, xs, ys = model.init(0), rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    plain, pull_plain = vjp(model >> mse, (ys, params), xs)
    total, pull_pen = vjp(learn.penalised(model, mse, learn.l2(0.1)), (ys, params), xs)
    sq = sum(float(np.sum(x**2)) for x in (params[0].weight, params[0].bias, params[1].weight, params[1].bias))
    assert float(total) == pytest.approx(float(plain) + 0.05 * sq, rel=1e-13)
    (_, g_plain), _ = pull_plain(1.0)
    (_, g_pen), _ = pull_pen(1.0)
    assert_equal_trees(g_pen, tree_zip_map(lambda g, p: g + 0.1 * p, g_plain, params), "the penalised gradient")
    check_vjp(learn.penalised(model, mse, learn.l2(0.1)), (ys, params), xs)


def test_l2_in_the_loss_is_not_decoupled_weight_decay() -> None:
    """Under Adam an L2 term is divided by √v̂ with the gradient; AdamW's decay is not: the runs differ."""
    rng = np.random.default_rng(7)
    model = mlp(3, [5, 1], last_activation=None)
    xs, ys = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))
    p0 = model.init(0)
    with_l2 = learn.learner(model, mse, learn.adam(0.01), penalty=learn.l2(0.1))
    decoupled = learn.learner(model, mse, learn.adamw(0.01, weight_decay=0.1))
    a, _, _ = learn.learner_step(with_l2, p0, learn.adam(0.01).init(p0), (xs, ys))
    b, _, _ = learn.learner_step(decoupled, p0, learn.adam(0.01).init(p0), (xs, ys))
    assert tree_first_difference(a, b, rtol=1e-6) is not None


# ----------------------------------------------------------------------------- errors


def test_clear_errors() -> None:
    opt = learn.adam(0.1).lens
    params = np.zeros(3)
    with pytest.raises(E.StructureError, match=r"^adam\(0\.1\): input must be a pair \(params, state\), got f64\[3\]$"):
        opt.fwd((), params)
    with pytest.raises(E.StructureError, match=r"^adam\(0\.1\): the optimiser state must be an AdamState"):
        opt.fwd((), (params, optim.MomentumState(np.zeros(3))))
    with pytest.raises(E.StructureError, match=r"^adam\(0\.1\): the state's mu: at <root>: expected shape \(3,\)"):
        opt.fwd((), (params, optim.AdamState(0, np.zeros(2), np.zeros(3))))
    m, _ = opt.fwd((), (params, opt.init_state(params)))
    with pytest.raises(E.StructureError, match=r"^adam\(0\.1\): the parameter delta: at <root>"):
        opt.bwd(m, np.zeros(4))
    with pytest.raises(E.DTypeError, match=r"^momentum\(0\.1\): cannot update the parameter at <root>"):
        learn.momentum(0.1).lens.fwd((), (np.zeros(2, int), ()))
    with pytest.raises(E.StructureError, match=r"^init_state: optimizer must be an optimiser lens"):
        learn.init_state(id_pre_lens, params)
    with pytest.raises(E.StructureError, match=r"^reparameterise: optimizer must be a lens without parameters"):
        learn.reparameterise(mlp(2, [2]), mlp(2, [2]))
    with pytest.raises(E.ArgumentError, match=r"^adam: b1 must be a number in \[0, 1\)"):
        learn.adam(0.1, b1=1.0)
    with pytest.raises(E.ArgumentError, match=r"^sgd: lr must be a finite number > 0 or a schedule"):
        learn.sgd("0.1")  # type: ignore[arg-type]
    bad = learn.sgd(lambda t: -1.0).lens
    m, _ = bad.fwd((), (params, bad.init_state(params)))
    with pytest.raises(E.ArgumentError, match=r"^sgd: the lr schedule gave -1\.0 at step 0"):
        bad.bwd(m, params)


def test_learner_takes_a_rate_as_a_number_and_names_what_an_optimizer_is() -> None:
    """``rate=0.05`` is ``rate=learning_rate(0.05)`` (what a user types first); a wrong optimizer says what is one."""
    net, xs, ys = mlp(2, [4, 1], last_activation=None), np.ones((3, 2)), np.zeros((3, 1))
    by_number = learn.learner(net, mse, learn.sgd(1.0).lens, rate=0.05)
    by_lens = learn.learner(net, mse, learn.sgd(1.0).lens, rate=learn.learning_rate(0.05))
    assert repr(by_number) == repr(by_lens)
    a, b = (learn.learner_step(s, net.init(0), (), (xs, ys)) for s in (by_number, by_lens))
    assert tree_first_difference(a, b) is None
    with pytest.raises(E.ArgumentError, match=r"^learning_rate: alpha must be a finite number > 0, got -1"):
        learn.learner(net, mse, learn.sgd(0.1), rate=-1)
    with pytest.raises(E.StructureError, match=r"^learner: rate must be a learning-rate lens or a number"):
        learn.learner(net, mse, learn.sgd(0.1), rate="0.1")  # type: ignore[arg-type]
    with pytest.raises(E.StructureError, match=r"^learner: optimizer must be an optimiser of prelens\.learn or its"):
        learn.learner(net, mse, "adam")  # type: ignore[arg-type]


def test_numpy_scalars_are_named_as_the_numbers_they_are() -> None:
    """As the optimisers and ``clip_by_global_norm(1.0)`` print them: a rate computed with numpy reads as a number."""
    assert repr(learn.learning_rate(np.float64(0.5))) == "learning_rate(0.5)"
    assert repr(learn.l2(np.float32(0.25))) == "l2(0.25)"
    net = linear(1, 1)
    assert repr(learn.learner(net, mse, learn.sgd(0.1), rate=np.float64(0.5))).endswith(">> learning_rate(0.5)")


class CountingSGD(learn.Optimizer[dict[str, int]]):
    """A user's optimiser: SGD that counts its steps in a state of its own kind (a dict)."""

    def init(self, params: Any) -> dict[str, int]:
        return {"n": 0}

    def update(self, grads: Any, state: dict[str, int], params: Any) -> tuple[Any, dict[str, int]]:
        return tree_zip_map(lambda p, g: p - 0.1 * g, params, grads), {"n": state["n"] + 1}

    def __repr__(self) -> str:
        return "CountingSGD()"


def test_a_users_optimiser_with_a_state_of_its_own_has_a_working_lens() -> None:
    """``Optimizer`` is the base class to subclass: its lens passes the state to ``update`` as it is (the built-in
    optimisers' state checks are theirs); it refused every state but ``()``."""
    net, xs, ys = mlp(2, [4, 1], last_activation=None), np.ones((3, 2)), np.zeros((3, 1))
    opt = CountingSGD()
    by_object = train_step(net, mse, net.init(0), (xs, ys), opt, opt.init(net.init(0)))
    by_lens = learn.learner_step(learn.learner(net, mse, opt.lens), net.init(0), opt.init(net.init(0)), (xs, ys))
    assert tree_first_difference(by_object, by_lens) is None and by_lens[1] == {"n": 1}
