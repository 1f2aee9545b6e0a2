"""Compiled steps on JAX: equal to numpy's, on one device and data-parallel over two.

``compile_step`` traces forward, backward and the optimiser update into one
XLA program. From the same weights and batch its result equals the numpy
step's to 1e-12 in float64 (MLP and LM, two optimiser forms), ``fit(...,
backend="jax")`` follows numpy's ``fit``, and a two-device
``jax.sharding.Mesh`` (two host devices, see ``conftest.py``) equals one device.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

import prelens
from prelens import learn
from prelens.learn import adam, sgd
from prelens.nn import decoder_lm, dropout, mlp, mse, softmax_cross_entropy, token_cross_entropy
from prelens.train import compile_step, fit, step
from tests.backends.harness import assert_close, assert_in_library

RNG = np.random.default_rng(0)


def _mlp_problem(batch: int = 16) -> tuple[object, object, object, tuple[np.ndarray, np.ndarray]]:
    model = mlp(4, [8, 8, 3])
    xs = RNG.standard_normal((batch, 4))
    return model, mse, model.init(0), (xs, RNG.standard_normal((batch, 3)))


def _lm_problem(batch: int = 4) -> tuple[object, object, object, tuple[np.ndarray, np.ndarray]]:
    model = decoder_lm(11, 8, 2, 16, 2, 6)
    ids = RNG.integers(0, 11, size=(batch, 6))
    return model, token_cross_entropy(), model.init(0), (ids, RNG.integers(0, 11, size=(batch, 6)))


def _mesh() -> Mesh:
    assert len(jax.devices()) == 2, "tests_peers/conftest.py asks XLA for two host devices"
    return Mesh(np.array(jax.devices()), ("data",))


@pytest.mark.parametrize("problem", [_mlp_problem, _lm_problem], ids=["mlp", "lm"])
@pytest.mark.parametrize("opt", [sgd(0.1), adam(0.01)], ids=["sgd", "adam"])
def test_compiled_steps_equal_numpy_steps(problem: object, opt: object) -> None:
    model, loss, params, batch = problem()  # type: ignore[operator]
    compiled = compile_step(model, loss, opt)
    p_np, s_np = params, opt.init(params)  # type: ignore[attr-defined]
    p_jx, s_jx = prelens.backend.to_backend((p_np, s_np), "jax")
    for _ in range(3):
        p_np, s_np, loss_np = step(model, loss, p_np, batch, opt, s_np)  # type: ignore[arg-type]
        p_jx, s_jx, loss_jx = compiled(p_jx, s_jx, batch)
        assert abs(float(loss_jx) - loss_np) <= 1e-12 * max(1.0, abs(loss_np))
    assert_in_library(p_jx, "jax", "compiled params")
    assert_close(p_np, p_jx, "compiled params after 3 steps")


def test_compiled_step_takes_an_optimiser_lens() -> None:
    model, loss, params, batch = _mlp_problem()
    opt = learn.momentum(0.05).lens
    compiled = compile_step(model, loss, opt)
    state = learn.init_state(opt, params)
    p_jx, s_jx, _ = compiled(params, state, batch)
    p_np, s_np, _ = prelens.learn.learner_step(learn.learner(model, loss, opt), params, state, batch)
    assert_close(p_np, p_jx, "params")
    assert_close(s_np, s_jx, "optimiser state")


@pytest.mark.parametrize("problem", [_mlp_problem, _lm_problem], ids=["mlp", "lm"])
def test_two_devices_equal_one(problem: object) -> None:
    model, loss, params, batch = problem(batch=8)  # type: ignore[operator]
    opt = adam(0.01)
    one, two = compile_step(model, loss, opt), compile_step(model, loss, opt, mesh=_mesh())
    p1 = p2 = params
    s1 = s2 = opt.init(params)
    for _ in range(3):
        p1, s1, l1 = one(p1, s1, batch)
        p2, s2, l2 = two(p2, s2, batch)
        assert abs(float(l1) - float(l2)) <= 1e-12
    leaf = jax.tree_util.tree_leaves(p2)[0]
    assert len(leaf.sharding.device_set) == 2, "the parameters are replicated over both devices"
    assert_close(prelens.backend.to_numpy(jax.tree_util.tree_leaves(p1)[0]), leaf, "first leaf")
    assert_close(jax.tree_util.tree_map(prelens.backend.to_numpy, p1), p2, "params after 3 steps")


def test_fit_on_jax_follows_fit_on_numpy() -> None:
    model, loss, _, (xs, ys) = _mlp_problem(batch=40)
    common = dict(epochs=4, batch_size=10, optimizer=adam(0.01), rng=3, progress=False, validation=(xs, ys))
    on_np = fit(model, loss, (xs, ys), **common)  # type: ignore[arg-type]
    on_jax = fit(model, loss, (xs, ys), backend="jax", **common)  # type: ignore[arg-type]
    on_mesh = fit(model, loss, (xs, ys), backend="jax", mesh=_mesh(), **common)  # type: ignore[arg-type]
    for run in (on_jax, on_mesh):
        assert_in_library(run.params, "jax", "fit's params")
        assert_close(on_np.params, run.params, "fit's params")
        np.testing.assert_allclose(run.history.loss, on_np.history.loss, rtol=1e-12)
        np.testing.assert_allclose(run.history.metrics["val_loss"], on_np.history.metrics["val_loss"], rtol=1e-12)


def test_fit_on_torch_follows_fit_on_numpy() -> None:
    model, loss, _, (xs, ys) = _mlp_problem(batch=40)
    common = dict(epochs=3, batch_size=10, optimizer=adam(0.01), rng=3, progress=False)
    on_np = fit(model, loss, (xs, ys), **common)  # type: ignore[arg-type]
    on_torch = fit(model, loss, (xs, ys), backend="torch", **common)  # type: ignore[arg-type]
    assert_in_library(on_torch.params, "torch", "fit's params")
    assert_close(on_np.params, on_torch.params, "fit's params")


def test_a_run_on_jax_resumes_from_its_checkpoint(tmp_path) -> None:
    """The compiled step keeps Adam's step count as a 0-d JAX array: the checkpoint holds it as one, and resuming
    (on JAX or numpy) read it back against numpy's int and refused the file."""
    model, loss, _, (xs, ys) = _mlp_problem(batch=64)
    opt, path = learn.adamw(learn.warmup_cosine(0.01, 2, 20)), tmp_path / "c.npz"
    common = dict(rng=0, progress=False, backend="jax")
    whole = fit(model, loss, (xs, ys), 4, 16, opt, **common)  # type: ignore[arg-type]
    fit(model, loss, (xs, ys), 2, 16, opt, checkpoint_path=path, **common)  # type: ignore[arg-type]
    rest = fit(model, loss, (xs, ys), 4, 16, opt, resume=path, progress=False, backend="jax")  # type: ignore[arg-type]
    assert rest.history.loss == whole.history.loss
    leaves = lambda p: [np.asarray(x) for x in jax.tree_util.tree_leaves(p)]
    assert all(np.array_equal(a, b) for a, b in zip(leaves(rest.params), leaves(whole.params)))
    on_numpy = fit(model, loss, (xs, ys), 4, 16, opt, resume=path, progress=False)  # type: ignore[arg-type]
    assert on_numpy.history.epochs == 4 and type(on_numpy.opt_state.step) is int


def test_mistakes_are_one_clear_error() -> None:
    model, loss, params, batch = _mlp_problem(batch=10)
    with pytest.raises(prelens.errors.ArgumentError, match=r"mesh.*backend"):
        fit(model, loss, batch, 1, 5, sgd(0.1), mesh=_mesh(), progress=False)
    with pytest.raises(prelens.errors.ArgumentError, match=r"batch_size.*2 devices"):
        fit(model, loss, batch, 1, 3, sgd(0.1), backend="jax", mesh=_mesh(), progress=False)
    with pytest.raises(prelens.PrelensError, match="backend must be one of"):
        fit(model, loss, batch, 1, 5, sgd(0.1), backend="cupy", progress=False)
    with pytest.raises(prelens.PrelensError, match="mesh"):
        compile_step(model, loss, sgd(0.1), mesh="two devices")
    with pytest.raises(prelens.PrelensError, match="batch"):
        compile_step(model, loss, sgd(0.1), mesh=_mesh())(params, (), (batch[0][:3], batch[1][:3]))
    with pytest.raises(prelens.PrelensError, match="axis"):
        compile_step(model, loss, sgd(0.1), mesh=_mesh(), axis="model")
    with pytest.raises(prelens.PrelensError, match="axis"):
        compile_step(model, loss, sgd(0.1), axis="data")
    with pytest.raises(prelens.PrelensError, match="model"):
        compile_step("mlp", loss, sgd(0.1))
    with pytest.raises(prelens.PrelensError, match="optimizer"):
        compile_step(model, loss, 0.1)
    drop = mlp(4, [8]) >> dropout(0.5) >> mlp(8, [3])
    with pytest.raises(prelens.errors.ArgumentError, match="key for a model with dropout"):
        compile_step(drop, loss, sgd(0.1))(drop.init(0), (), batch)
    with pytest.raises(prelens.errors.ArgumentError, match="key"):
        compile_step(drop, loss, sgd(0.1))(drop.init(0), (), batch, key=-1)


def test_a_lens_error_names_the_lens_while_tracing() -> None:
    model, loss, params, (xs, ys) = _mlp_problem()
    with pytest.raises(prelens.ShapeError, match=r"dense\(4→8, tanh\): input: expected f64\[\.\.\.,4\]"):
        compile_step(model, loss, sgd(0.1))(params, (), (xs[:, :3], ys))


def test_softmax_cross_entropy_classifier_on_jax() -> None:
    model = mlp(4, [8, 3], last_activation=None)
    xs, ys = RNG.standard_normal((32, 4)), RNG.integers(0, 3, size=32)
    params = model.init(1)
    compiled = compile_step(model, softmax_cross_entropy, sgd(0.1))
    p_np, _, _ = step(model, softmax_cross_entropy, params, (xs, ys), sgd(0.1), ())
    p_jx, _, _ = compiled(params, (), (xs, ys))
    assert_close(p_np, p_jx, "classifier params")


def test_the_step_and_its_flagged_run_agree_bit_for_bit() -> None:
    model, loss, params, batch = _mlp_problem()
    compiled = compile_step(model, loss, adam(0.01))
    state = adam(0.01).init(params)
    p1, s1, l1 = compiled(params, state, batch)
    p2, s2, l2, finite = compiled.run(params, state, batch)
    assert bool(finite) and float(l1) == float(l2)
    for a, b in zip(jax.tree_util.tree_leaves((p1, s1)), jax.tree_util.tree_leaves((p2, s2))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_non_finite_step_is_flagged_and_fit_stops_with_the_last_good_state() -> None:
    model, loss, params, (xs, ys) = _mlp_problem()
    compiled = compile_step(model, loss, sgd(1e300))
    *_, finite = compiled.run(params, (), (xs, ys * 1e300))
    assert not bool(finite)
    with pytest.raises(prelens.NonFiniteError) as err:
        fit(model, loss, (xs, ys * 1e300), 3, 8, sgd(1e300), rng=0, progress=False, backend="jax")
    assert err.value.history.steps == 0 and prelens.core.tree_first_nonfinite(err.value.params) is None


def test_dropout_trains_compiled_with_masks_drawn_by_jax() -> None:
    model = mlp(4, [32]) >> dropout(0.3) >> mlp(32, [3])
    xs = RNG.standard_normal((64, 4))
    ys = np.tanh(xs[:, :3])
    compiled = compile_step(model, mse, sgd(0.1))
    params = model.init(0)
    p1, _, _ = compiled(params, (), (xs, ys), key=1)
    p1_again, _, _ = compiled(params, (), (xs, ys), key=1)
    p2, _, _ = compiled(params, (), (xs, ys), key=2)
    w = lambda p: np.asarray(jax.tree_util.tree_leaves(p)[0])
    assert np.array_equal(w(p1), w(p1_again)) and not np.array_equal(w(p1), w(p2))
    kinds = {leaf.dtype.kind for leaf in jax.tree_util.tree_leaves(p1)}
    assert kinds == {"f"}  # the parameters never hold a key
    run = dict(epochs=30, batch_size=16, optimizer=adam(0.01), progress=False, backend="jax")
    a = fit(model, mse, (xs, ys), rng=0, validation=(xs, ys), **run)  # type: ignore[arg-type]
    b = fit(model, mse, (xs, ys), rng=0, **run)  # type: ignore[arg-type]
    assert a.history.loss[-1] < 0.5 * a.history.loss[0]
    assert a.history.loss == b.history.loss  # one seed, one run: the keys come from fit's generator
    on_numpy = fit(model, mse, (xs, ys), rng=0, **{**run, "backend": None})  # type: ignore[arg-type]
    assert abs(a.history.loss[-1] - on_numpy.history.loss[-1]) < 0.5 * on_numpy.history.loss[0]


@pytest.mark.parametrize("problem", [_mlp_problem, _lm_problem], ids=["mlp", "lm"])
def test_backend_auto_takes_the_compiled_step_and_equals_jax_and_numpy(problem: object, monkeypatch) -> None:
    import io

    from prelens.train import _plan

    monkeypatch.setattr(_plan, "AUTO_JAX_MIN_WORK", 0)  # a test-sized run: auto would keep numpy
    model, loss, _, (xs, ys) = problem(32)  # type: ignore[operator]
    common = dict(epochs=2, batch_size=8, optimizer=adam(0.01), rng=0)
    out = io.StringIO()
    auto = fit(model, loss, (xs, ys), backend="auto", progress=True, stream=out, **common)  # type: ignore[arg-type]
    on_jax = fit(model, loss, (xs, ys), backend="jax", progress=False, **common)  # type: ignore[arg-type]
    on_numpy = fit(model, loss, (xs, ys), backend="numpy", progress=False, **common)  # type: ignore[arg-type]
    assert "[compiled JAX step (backend=auto)]" in out.getvalue().splitlines()[0]
    assert_in_library(auto.params, "numpy", "auto's params")  # numpy in, numpy out
    assert_in_library(auto.opt_state, "numpy", "auto's optimiser state")
    assert_close(auto.params, jax.tree_util.tree_map(prelens.backend.to_numpy, on_jax.params), "auto == jax")
    for a, b in zip(prelens.core.tree_leaves(auto.params), prelens.core.tree_leaves(on_numpy.params)):
        assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, float(np.max(np.abs(b))))
    assert np.allclose(auto.history.loss, on_numpy.history.loss, rtol=1e-12, atol=0)


def test_backend_auto_shows_callbacks_numpy_as_it_shows_metrics(monkeypatch) -> None:
    """auto is the caller's numpy run, made faster: what the caller's code sees is numpy throughout."""
    from prelens.train import _plan

    monkeypatch.setattr(_plan, "AUTO_JAX_MIN_WORK", 0)
    model, loss, _, (xs, ys) = _mlp_problem(32)
    seen: dict[str, set[str]] = {"callback": set(), "metric": set()}

    class Spy:
        def on_epoch_end(self, epoch: int, history: object, params: object, opt_state: object) -> bool:
            seen["callback"] |= {type(x).__name__ for x in prelens.core.tree_leaves((params, opt_state.mu))}
            return False

    def metric(model: object, params: object, xs: object, ys: object) -> float:
        seen["metric"] |= {type(x).__name__ for x in prelens.core.tree_leaves(params)}
        return 0.0

    fit(model, loss, (xs, ys), 2, 8, adam(0.01), rng=0, backend="auto", progress=False, callbacks=[Spy()],
        validation=(xs, ys), metrics={"m": metric})  # type: ignore[arg-type]  # fmt: skip
    assert seen == {"callback": {"ndarray"}, "metric": {"ndarray"}}


def test_backend_auto_keeps_numpy_for_dropout_and_small_runs(monkeypatch) -> None:
    import io

    from prelens.train import _plan

    model, loss, _, (xs, ys) = _mlp_problem(32)
    out = io.StringIO()
    small = fit(model, loss, (xs, ys), 1, 8, sgd(0.1), rng=0, backend="auto", progress=True, stream=out)
    assert "[numpy (backend=auto)]" in out.getvalue()  # compiling would cost more than the run
    assert np.array_equal(small.params[0][0], fit(model, loss, (xs, ys), 1, 8, sgd(0.1), rng=0, progress=False)
                          .params[0][0])  # fmt: skip
    monkeypatch.setattr(_plan, "AUTO_JAX_MIN_WORK", 0)
    with_dropout = mlp(4, [8]) >> dropout(0.3) >> mlp(8, [3])
    out = io.StringIO()
    fit(with_dropout, loss, (xs, ys), 1, 8, sgd(0.1), rng=0, backend="auto", progress=True, stream=out)
    assert "[numpy (backend=auto)]" in out.getvalue()  # JAX would draw other masks
