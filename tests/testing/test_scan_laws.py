"""The laws of ``scan`` (prelens.testing.check_scan, check_scan_map) on randomly generated cells."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import copy_l, scan
from prelens.core import add_l
from prelens.testing import check_scan, check_scan_map, check_vjp, lenses, random_value, seeds
from prelens.testing._strategies import linear_vec, tanh_vec

dims = st.integers(1, 3)


@st.composite
def cells(draw):
    """A random cell ``(h, x) -> (h', y)`` on vectors: ``copy_l >> (state part @ output part)``.

    The state part maps ``h`` and ``x`` through random lenses with vector outputs, to ``nh``
    with a linear map each, adds them and squashes with ``tanh``; the output part is any
    random lens of ``(h, x)``.
    """
    nh, nx = draw(dims), draw(dims)
    vector_out = lenses(nh, max_depth=1).filter(lambda g: isinstance(g.out_type, int))
    gh = draw(vector_out)
    gx = draw(lenses(nx, max_depth=1).filter(lambda g: isinstance(g.out_type, int)))
    state = ((gh.lens >> linear_vec(gh.out_type, nh)) @ (gx.lens >> linear_vec(gx.out_type, nh))) >> add_l >> tanh_vec
    out = draw(lenses((nh, nx), max_depth=1))
    return copy_l >> (state @ out.lens), nh, nx


@settings(max_examples=30, deadline=None)
@given(cells(), st.integers(1, 6), seeds(), st.booleans())
def test_scan_laws_on_random_cells(made, T, seed, as_array):
    cell, nh, nx = made
    rng = np.random.default_rng(seed)
    p = cell.init(rng)
    h0 = random_value(nh, rng)
    steps = [random_value(nx, rng) for _ in range(T)]
    xs = np.stack(steps) if as_array else steps
    check_scan(cell, p, h0, xs)
    check_scan(cell, p, h0, xs, k=T - 1)


@settings(max_examples=20, deadline=None)
@given(cells(), st.integers(1, 5), seeds())
def test_scan_is_a_correct_reverse_derivative(made, T, seed):
    cell, nh, nx = made
    rng = np.random.default_rng(seed)
    check_vjp(scan(cell, axis=1), cell.init(rng), (random_value(nh, rng), rng.standard_normal((nx, T))), rng=rng)


@settings(max_examples=30, deadline=None)
@given(st.data(), dims, st.integers(1, 5), seeds(), st.sampled_from([0, 1, -1]))
def test_a_cell_that_passes_its_state_maps_its_sequence(data, nx, T, seed, axis):
    g = data.draw(lenses(nx, max_depth=2).filter(lambda g: isinstance(g.out_type, int)))
    rng = np.random.default_rng(seed)
    shape = [(T, nx), (nx, T), (nx, T)][[0, 1, -1].index(axis)]
    # steps along axis 1 or -1 of a (nx, T) array are the nx-vectors; along 0 of (T, nx) too
    check_scan_map(g.lens, g.lens.init(rng), random_value(2, rng), rng.standard_normal(shape), axis=axis)


def test_the_cut_may_be_a_numpy_int():
    """``k=np.int64(2)`` was refused as "k must be an int in [1, 4)"."""
    from prelens import PreLens

    add = PreLens(lambda p, hx: ((), (hx[0] + hx[1],) * 2), lambda m, d: ((), (d[0] + d[1],) * 2), name="add")
    check_scan(add, (), np.zeros(2), np.ones((4, 2)), k=np.int64(2))


def test_check_scan_runs_at_sequence_lengths_in_the_hundreds():
    """The post-style cons recursion nests with its length (quadratic work, the stack at ~400 steps):
    check_scan checks it on a prefix; the other laws see every step."""
    from prelens import PreLens
    from tests.conftest import default_recursion_limit

    add = PreLens(lambda p, hx: ((), (hx[0] + hx[1],) * 2), lambda m, d: ((), (d[0] + d[1],) * 2), name="add")
    with default_recursion_limit():
        check_scan(add, (), np.zeros(2), np.ones((400, 2)) / 400)
