"""The blog's TriLens route at the sizes users run, and the TriLens read in other Trimbara modules.

Everything here runs at Python's default recursion limit (the fixture pins it), at real width
(64 neurons, two hidden layers) and batch (256), and checks the free module's pre-lens against
the one the post builds by hand (``make_mlp_l``, ``batch_n`` of a pre-lens) leaf by leaf.
The cost is shown to grow linearly by counting the places the plumbing visits, not by time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from prelens import batch_n, from_tamb, id_pre_lens, to_tamb, vec_lens, vjp
from prelens.core import tree_leaves
from prelens.errors import DepthError
from prelens.faithful import Para, init_mlp, layer, make_mlp, train_faithful, train_step
from prelens.faithful._loss import loss_l
from prelens.faithful._network import make_mlp_l
from prelens.tambara import Cost, Program, Shapes, interpret, placeholder, shape_of
from prelens.testing import (
    check_alpha_composition,
    check_alpha_unit,
    check_beta_composition,
    check_beta_unit,
    check_coherence,
    check_dimap_composition,
    check_dimap_identity,
    check_lens_equal,
    check_naturality,
    module_equal,
)
from prelens.testing._strategies import linear_vec
from prelens_bench.tambara import count_work, tambara_routes, tambara_sweep
from tests.conftest import default_recursion_limit


@pytest.fixture(autouse=True)
def _default_limit() -> Iterator[None]:
    """Every test here runs at Python's default recursion limit."""
    with default_recursion_limit():
        yield


RNG = np.random.default_rng(0)


def test_the_blog_route_at_width_64_and_two_hidden_layers():
    sizes = [64, 64, 3]
    params = init_mlp(4, sizes, RNG)
    x = RNG.standard_normal(4)
    tri, pre = from_tamb(make_mlp(4, sizes)), make_mlp_l(4, sizes)  # the free module; the post's pre-lens
    da = list(RNG.standard_normal(3))
    check_lens_equal("from_tamb(make_mlp) is make_mlp_l", pre, tri, params, x)
    (out, pull), (out2, pull2) = vjp(tri, params, x), vjp(pre, params, x)
    assert np.allclose(out, out2, rtol=0, atol=1e-14)
    dp, _ = pull(da)
    dp2, _ = pull2(da)
    assert len(dp) == 3 and [len(layer_) for layer_ in dp] == sizes
    assert all(np.allclose(a, b, rtol=0, atol=1e-13) for a, b in zip(tree_leaves(dp), tree_leaves(dp2)))


def test_train_step_and_train_at_width_64():
    sizes = [64, 64, 3]
    net, params = make_mlp(4, sizes), init_mlp(4, sizes, RNG)
    xs, ys = RNG.standard_normal((8, 4)), np.tanh(RNG.standard_normal((8, 3)))
    new, loss = train_step(net, params, xs, ys, 0.01)
    ref, ref_loss = train_step(make_mlp_l(4, sizes), params, xs, ys, 0.01)  # the pre-lens route
    assert loss == pytest.approx(ref_loss, rel=1e-13)
    assert all(np.allclose(a, b, rtol=0, atol=1e-13) for a, b in zip(tree_leaves(new), tree_leaves(ref)))
    _, losses = train_faithful(net, params, xs, ys, rate=0.01, steps=5)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("n", [1, 16, 256])
def test_a_batched_tri_lens_equals_the_batched_pre_lens(n):
    net, params = make_mlp(3, [4, 1]), init_mlp(3, [4, 1], RNG)
    xs = list(RNG.standard_normal((n, 3)))
    ys = list(RNG.standard_normal((n, 1)))
    tri = from_tamb(batch_n(n, net)) >> loss_l
    pre = batch_n(n, from_tamb(net)) >> loss_l
    check_lens_equal(f"batch_n({n}) of the TriLens", pre, tri, (ys, params), xs)


def test_a_layer_inside_a_batch_nests_two_vec_lenses():
    net = batch_n(32, layer(3, 8))  # a vec_lens inside a vec_lens: focus paths with two EACH segments
    params = [Para(float(b), w) for b, w in zip(RNG.standard_normal(8), RNG.standard_normal((8, 3)))]
    xs = list(RNG.standard_normal((32, 3)))
    check_lens_equal("batch_n(32, layer(3, 8))", batch_n(32, from_tamb(layer(3, 8))), from_tamb(net), params, xs)


# ----------------------------------------------------------- linear cost, counted


def _work(sizes: list[int], n: int) -> int:
    lens = from_tamb(batch_n(n, make_mlp(3, sizes))) >> loss_l
    params = ([np.zeros(sizes[-1])] * n, init_mlp(3, sizes, RNG))
    xs = [np.ones(3)] * n

    def one_pass() -> None:
        _, pull = vjp(lens, params, xs)
        pull(1.0)

    return count_work(one_pass)


@pytest.mark.parametrize("n", [8, 32])
def test_work_grows_linearly_in_the_batch(n):
    w1, w2 = _work([4, 1], n), _work([4, 1], 2 * n)
    assert 1.9 < w2 / w1 < 2.05, (w1, w2)


@pytest.mark.parametrize("w", [16, 64])
def test_work_grows_linearly_in_the_width(w):
    # one hidden layer of w neurons: its work is proportional to w, the output layer's is fixed
    w1, w2, w4 = _work([w, 1], 4), _work([2 * w, 1], 4), _work([4 * w, 1], 4)
    assert (w4 - w2) == pytest.approx(2 * (w2 - w1), rel=0.01), (w1, w2, w4)


def test_a_program_is_as_long_for_256_neurons_as_for_8():
    lengths = {len(interpret(batch_n(n, make_mlp(4, [w, 3])), Program())) for w in (8, 256) for n in (1, 256)}
    assert len(lengths) == 1


def test_the_sweep_reports_what_it_measures():
    rows = tambara_sweep(widths=(8, 16), batches=(2, 4))
    assert [(r.sweep, r.size) for r in rows] == [("width", 8), ("width", 16), ("batch", 2), ("batch", 4)]
    assert all(r.work > 0 and r.steps > 0 and r.peak_bytes > 0 for r in rows)
    assert rows[1].work > rows[0].work and rows[3].work > rows[2].work
    tri, pre = tambara_routes(n=2, sizes=(3, 2, 1), repeats=1)
    assert tri > 0 and pre > 0


# ----------------------------------------------------------- the other modules


def _modules() -> list[tuple[str, object, object]]:
    return [
        ("Program", Program(), module_equal),
        ("Shapes", Shapes(), module_equal),
        ("Cost", Cost(), None),
    ]  # None: the default


@pytest.mark.parametrize(("name", "unit", "equal"), _modules(), ids=lambda x: x if isinstance(x, str) else "")
def test_each_interpretation_keeps_the_trimbara_laws(name, unit, equal):
    x, pair = np.array([0.5, -1.0]), (np.array([1.0, 2.0]), np.array([0.5, 0.25]))
    check_dimap_identity(unit, (), x, equal=equal)
    check_dimap_composition(unit, (), x, equal=equal)
    check_alpha_unit(unit, (), x, equal=equal)
    check_alpha_composition(unit, (), x, np.ones(2), np.zeros(2), equal=equal)
    check_beta_unit(unit, (), x, equal=equal)
    check_beta_composition(unit, (), (np.ones(2), pair), equal=equal)
    check_naturality(unit, (), pair, np.ones(2), equal=equal)
    check_coherence(unit, (), pair, np.ones(2), equal=equal)
    # and on a module value that a TriLens made, not only on the unit
    lens = linear_vec(2, 2)
    made = to_tamb(lens)(unit)  # t (m, ()) ((), p) s
    p = ((), lens.init(0))
    check_alpha_unit(made, p, x, equal=equal)
    check_naturality(made, p, x, np.ones(2), equal=equal)
    check_dimap_composition(made, p, x, equal=equal)


def test_a_law_broken_in_the_free_module_is_caught(monkeypatch):
    from prelens import LawError
    from prelens.tambara import _program

    monkeypatch.setattr(_program.Program, "alpha", lambda self: self)  # forgets to thread the residue
    with pytest.raises(LawError, match="alpha"):
        check_alpha_unit(Program(), (), np.ones(2))


def _real_run(tri, params, x):
    lens = from_tamb(tri)
    (m, a) = lens.fwd(params, x)
    dp, ds = lens.bwd(m, a)
    return m, a, dp, ds


@pytest.mark.parametrize("tri_sizes", [(4, [16, 3]), (3, [4, 4, 1]), (2, [1])])
def test_shapes_read_what_a_real_run_makes(tri_sizes):
    m_in, sizes = tri_sizes
    tri, params, x = make_mlp(m_in, sizes), init_mlp(m_in, sizes, RNG), RNG.standard_normal(m_in)
    m, a, dp, ds = _real_run(tri, params, x)
    read = Shapes.of(tri, params, placeholder((m_in,)))
    assert read == {
        "output": shape_of(a),
        "residue": shape_of(m),
        "parameter delta": shape_of(dp),
        "input delta": shape_of(ds),
    }


def test_shapes_of_a_batch_of_256():
    tri = batch_n(256, make_mlp(3, [4, 1]))
    read = Shapes.of(tri, init_mlp(3, [4, 1], RNG), [placeholder((3,))] * 256)
    assert read["output"] == repr([[placeholder()]] * 256).replace("0.0", "f64")
    assert read["input delta"].count("f64[3]") == 256


def test_cost_counts_the_multiply_adds_and_the_residue_a_real_run_holds():
    sizes = [16, 8, 3]
    tri, params, x = make_mlp(4, sizes), init_mlp(4, sizes, RNG), RNG.standard_normal(4)
    table = Cost.of(tri, params, x)
    m, *_ = _real_run(tri, params, x)
    assert table.residue_bytes == sum(np.asarray(leaf).nbytes for leaf in tree_leaves(m))
    ins = [4, *sizes[:-1]]
    neurons = sum(sizes)
    # linear: n forward, 2n backward; bias: 1 forward; tanh: 1 forward, 2 backward
    weights = sum(i * n for i, n in zip(ins, sizes))
    assert table.total == (weights + 2 * neurons, 2 * weights + 2 * neurons)
    runs = {row[0]: row[1] for row in table}
    assert runs == {"linear_l(4)": 16, "linear_l(16)": 8, "linear_l(8)": 3, "bias_l": 27, "activ_l": 27}
    assert "total" in str(table)


def test_cost_grows_with_the_batch_and_reports_unknown_boxes():
    one = Cost.of(make_mlp(3, [4, 1]), init_mlp(3, [4, 1], RNG), np.ones(3))
    many = Cost.of(batch_n(64, make_mlp(3, [4, 1])), init_mlp(3, [4, 1], RNG), [np.ones(3)] * 64)
    assert many.total == (64 * one.total[0], 64 * one.total[1])
    assert many.residue_bytes == 64 * one.residue_bytes
    unknown = Cost.of(to_tamb(id_pre_lens), (), np.ones(2))  # a lens with no rule: run, its cost unknown
    assert unknown.total == (None, None) and "?" in str(unknown)


def test_the_free_module_shows_its_steps():
    prog = interpret(vec_lens(3, to_tamb(id_pre_lens)), Program())
    text = repr(prog)
    assert text.startswith("Program(") and "alpha" in text and "*" in text
    assert len(prog) == len(prog.steps())


def _nested_biases(n: int) -> tuple[object, object]:
    """``n + 1`` of the blog's ``bias_t`` nested by ``>>``, and their parameters (all zero)."""
    from prelens.faithful import bias_t

    tri, params = bias_t, 0.0
    for _ in range(n):
        tri, params = tri >> bias_t, (0.0, params)
    return tri, params


def test_the_posts_route_too_deep_for_the_stack_says_so_and_what_to_do():
    tri, params = _nested_biases(200)
    assert from_tamb(tri).fwd(params, 1.0)[1] == 1.0  # the program route runs it
    closures = interpret(tri, id_pre_lens)  # the post's route: a nest of closures 200 deep
    with pytest.raises(DepthError, match=r"nested too deeply: .*from_tamb"):
        closures.fwd(params, 1.0)


def test_a_trilens_composed_too_deep_to_build_says_so():
    tri, _ = _nested_biases(450)  # tri_compose is function composition: f(g(t)) 450 deep
    with pytest.raises(DepthError, match=r"nested too deeply"):
        from_tamb(tri)


def test_the_posts_training_step_takes_the_fast_paths_step():
    """``train_step`` (the TriLens route, one neuron at a time) and ``prelens.train.step`` of ``mlp``
    with ``squared_distance`` and ``sgd``: the same loss and the same new parameters."""
    from prelens.faithful import mlp_from_paras
    from prelens.learn import sgd
    from prelens.nn import mlp, squared_distance
    from prelens.train import step

    rng = np.random.default_rng(1)
    m_in, sizes, n = 8, [32, 16, 3], 64
    paras = init_mlp(m_in, sizes, rng)
    xs, ys = rng.standard_normal((n, m_in)), rng.standard_normal((n, sizes[-1]))
    new_paras, loss = train_step(make_mlp(m_in, sizes), paras, xs, ys, 0.01)
    fast, opt = mlp_from_paras(paras), sgd(0.01)
    new_fast, _, fast_loss = step(mlp(m_in, sizes), squared_distance, fast, (xs, ys), opt, opt.init(fast))
    assert loss == pytest.approx(float(fast_loss), rel=1e-13)
    for a, b in zip(tree_leaves(mlp_from_paras(new_paras)), tree_leaves(new_fast)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)


def test_costs_residue_bytes_are_what_a_fast_models_forward_pass_keeps_alive():
    """Measured by tracemalloc: the memory a forward pass of a decoder LM leaves allocated, its output
    dropped, is the residue Cost counts (Python's small objects, some KB, come on top)."""
    import gc
    import tracemalloc

    from prelens.nn import decoder_lm

    lm = decoder_lm(50, 32, 4, 64, 2, 16)
    params, ids = lm.init(0), np.random.default_rng(0).integers(0, 50, (4, 16))
    counted = Cost.of(to_tamb(lm), params, ids).residue_bytes
    lm.fwd(params, ids)  # first run: the lens's checks and caches
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        m, a = lm.fwd(params, ids)
        del a
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert m is not None and counted <= kept <= counted * 1.01 + 16384
