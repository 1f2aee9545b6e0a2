"""Loops under JAX tracing: one ``jax.lax.scan``, so a compiled program does not grow with ``T``.

``prelens.backend._loop.scan_loop`` (the recurrent layers' loops) and ``prelens.core.scan`` run
``jax.lax.scan`` on traced arrays: the step is traced once. Checked here: the program's size is
the same for 5 steps and for 40, the results equal numpy's (float64, to 1e-12), and a scan whose
cell is not scannable (a Python-number state, a residue holding a shape) falls back to unrolling
with the same results. No timing here: ``tools/bench_gru.py`` times the compile and the step.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from prelens import PreLens, scan
from prelens.backend._loop import scan_loop
from prelens.nn import bidirectional, gru, lstm, rnn
from prelens.nn.composed import gru_cell
from tests.backends.harness import assert_close


def _to_jax(tree: Any) -> Any:
    return jax.tree_util.tree_map(jnp.asarray, tree)


def _primitives(jaxpr: Any) -> set[str]:
    return {e.primitive.name for e in jaxpr.jaxpr.eqns}


def test_scan_loop_under_jit_is_one_scan_and_equals_the_python_loop() -> None:
    xs = np.random.default_rng(0).standard_normal((3, 7, 2))

    def run(xs: Any) -> Any:
        return scan_loop(lambda c, x: (c * 0.5 + x, (c, x * x)), xs[:, 0] * 0, xs, axis=1, reverse=True, keep=(1,))

    want = run(xs)
    got = jax.jit(run)(jnp.asarray(xs))
    assert "scan" in _primitives(jax.make_jaxpr(run)(jnp.asarray(xs)))
    assert_close(want[0], got[0], "carry")
    assert_close(want[1][0], got[1][0], "ys")
    assert_close(np.stack(want[1][1], axis=1), got[1][1], "kept steps, stacked by jax")


def _layer_step(lens: Any) -> Any:
    def both(p: Any, xs: Any, dys: Any) -> Any:
        m, ys = lens.fwd(p, xs)
        return ys, lens.bwd(m, dys)

    return both


@pytest.mark.parametrize(
    "make", [rnn, gru, lstm, lambda a, b: bidirectional(gru(a, b))], ids=["rnn", "gru", "lstm", "bidirectional"]
)
def test_recurrent_layer_programs_do_not_grow_with_time(make: Any) -> None:
    lens = make(2, 3)
    p = lens.init(0)
    sizes = []
    for steps in (5, 40):
        rng = np.random.default_rng(steps)
        xs = rng.standard_normal((4, steps, 2))
        dys = rng.standard_normal(lens.fwd(p, xs)[1].shape)
        args = _to_jax((p, xs, dys))
        jaxpr = jax.make_jaxpr(_layer_step(lens))(*args)
        assert "scan" in _primitives(jaxpr)
        sizes.append(len(jaxpr.jaxpr.eqns))
        want = _layer_step(lens)(p, xs, dys)
        got = jax.jit(_layer_step(lens))(*args)
        assert_close(want, got, f"{lens!r} under jit, T={steps}")
    assert sizes[0] == sizes[1], f"the program grew with T: {sizes}"


def test_core_scan_under_jit_is_one_scan() -> None:
    cell = gru_cell(2, 3)
    lens = scan(cell, axis=1)
    p = cell.init(0)
    sizes = []
    for steps in (5, 40):
        rng = np.random.default_rng(steps)
        s = (rng.standard_normal((4, 3)), rng.standard_normal((4, steps, 2)))
        da = (rng.standard_normal((4, 3)), rng.standard_normal((4, steps, 3)))

        def both(p: Any, s: Any, da: Any) -> Any:
            m, a = lens.fwd(p, s)
            return a, lens.bwd(m, da)

        args = _to_jax((p, s, da))
        jaxpr = jax.make_jaxpr(both)(*args)
        assert "scan" in _primitives(jaxpr)
        sizes.append(len(jaxpr.jaxpr.eqns))
        assert_close(both(p, s, da), jax.jit(both)(*args), f"scan(gru_cell) under jit, T={steps}")
    assert sizes[0] == sizes[1], f"the program grew with T: {sizes}"


def test_core_scan_unrolls_a_cell_it_cannot_scan() -> None:
    # a state that starts as a Python number (its type changes at the first step)
    add = PreLens(
        lambda p, hx: ((), (hx[0] + hx[1], hx[0] + hx[1])), lambda m, d: ((), (d[0] + d[1], d[0] + d[1])), name="add"
    )
    running = scan(add)

    def both(xs: Any, dys: Any) -> Any:
        m, a = running.fwd((), (0.0, xs))
        return a, running.bwd(m, (0.0, dys))

    (total, partial), (_, (dh, dxs)) = jax.jit(both)(jnp.array([1.0, 2.0, 3.0]), jnp.ones(3))
    assert float(total) == 6.0 and np.asarray(partial).tolist() == [1.0, 3.0, 6.0]
    assert float(dh) == 3.0 and np.asarray(dxs).tolist() == [3.0, 2.0, 1.0]
    # a residue holding a shape (not an array): unrolled, the shape stays a shape
    keep_shape = PreLens(
        lambda p, hx: (tuple(hx[1].shape), (hx[0] + hx[1].sum(), hx[1] * 2)),
        lambda m, d: ((), (d[0], d[0] * jnp.ones(m) + d[1] * 2)),
        name="keep_shape",
    )
    lens = scan(keep_shape)
    xs = jnp.arange(6.0).reshape(3, 2)

    def both2(xs: Any) -> Any:
        m, (h, ys) = lens.fwd((), (jnp.zeros(()), xs))
        return h, ys, lens.bwd(m, (jnp.ones(()), jnp.ones_like(ys)))

    h, ys, (_, (dh2, dxs2)) = jax.jit(both2)(xs)
    assert float(h) == 15.0 and np.asarray(ys).tolist() == (2 * np.arange(6.0).reshape(3, 2)).tolist()
    assert float(dh2) == 1.0 and np.asarray(dxs2).tolist() == [[3.0, 3.0]] * 3
