"""The central promise: every fast lens equals its faithful twin, to float64 round-off.

The faithful network (``layer``, ``make_mlp``, ``loss_l``) runs one neuron at
a time on 1-D vectors; the fast one (``dense``, ``mlp``, ``squared_distance``)
runs whole arrays with a leading batch axis. Each test below runs both on the
same weights (converted with ``dense_to_paras``/``mlp_to_paras``) and random
deltas, and compares outputs, residues, parameter deltas and input deltas
through the isomorphisms that re-nest one level's trees as the other's.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import LawError, ShapeError, StructureError, batch_n, from_tamb
from prelens.core import tree_allclose
from prelens.faithful import (
    Para,
    dense_from_paras,
    dense_to_paras,
    init_mlp,
    layer,
    loss_l,
    make_mlp,
    mlp_from_paras,
    mlp_to_paras,
)
from prelens.nn import DenseParams, dense, mlp, squared_distance
from prelens.testing import check_lens_equal, seeds

widths = st.integers(1, 4)


def _random_dense(rng, m_in, n_out):
    return DenseParams(rng.standard_normal((m_in, n_out)), rng.standard_normal(n_out))


# -------------------------------------------------- isomorphisms between the levels


def layer_residue(m):
    """A fast layer's residue ``(x, W, z)`` on one vector as the faithful ``[((s, w_j), z_j)]``."""
    x, w, z = m
    return [((x, w[:, j]), z[j]) for j in range(w.shape[1])]


def batch_layer_residue(m):
    """... and on a batch: one faithful layer residue per row."""
    x, w, z = m
    return [layer_residue((x[b], w, z[b])) for b in range(x.shape[0])]


def mlp_residue(ms):
    return [layer_residue(m) for m in ms]


def batch_mlp_residue(ms):
    return [[layer_residue((m[0][b], m[1], m[2][b])) for m in ms] for b in range(ms[0][0].shape[0])]


def vector_as_floats(y):
    """A fast output vector as the faithful layer's list of floats."""
    return list(y)


def rows(x):
    return list(x)


def rows_as_floats(y):
    return [list(r) for r in y]


# ------------------------------------------------------------- the conversions


@given(widths, widths, seeds())
def test_dense_params_and_paras_convert_both_ways(m_in, n_out, seed):
    rng = np.random.default_rng(seed)
    p = _random_dense(rng, m_in, n_out)
    paras = dense_to_paras(p)
    assert len(paras) == n_out and all(isinstance(q, Para) and q.weight.shape == (m_in,) for q in paras)
    assert all(q.bias == p.bias[j] and np.array_equal(q.weight, p.weight[:, j]) for j, q in enumerate(paras))
    assert tree_allclose(dense_from_paras(paras), p, rtol=0, atol=0)
    assert tree_allclose(dense_to_paras(dense_from_paras(paras)), paras, rtol=0, atol=0)


@given(widths, st.lists(widths, min_size=1, max_size=3), seeds())
def test_mlp_params_convert_both_ways(m_in, sizes, seed):
    paras = init_mlp(m_in, sizes, np.random.default_rng(seed))
    fast = mlp_from_paras(paras)
    assert [p.weight.shape for p in fast] == list(zip([m_in, *sizes[:-1]], sizes))
    assert tree_allclose(mlp_to_paras(fast), paras, rtol=0, atol=0)
    assert tree_allclose(mlp_from_paras(mlp_to_paras(fast)), fast, rtol=0, atol=0)
    f32 = mlp_from_paras(paras, dtype=np.float32)
    assert {p.weight.dtype for p in f32} == {np.dtype(np.float32)}


def test_conversion_errors_name_the_problem():
    with pytest.raises(StructureError, match="non-empty list of Para"):
        dense_from_paras([])
    with pytest.raises(ShapeError, match="neuron 1's weight"):
        dense_from_paras([Para(0.0, np.ones(2)), Para(0.0, np.ones(3))])
    with pytest.raises(StructureError, match="neuron 0 must be a Para, got tuple of 2"):
        dense_from_paras([(0.0, np.ones(2))])


# ------------------------------------------------------------------ the twins


@given(widths, widths, seeds())
def test_dense_on_a_vector_is_the_faithful_layer(m_in, n_out, seed):
    rng = np.random.default_rng(seed)
    check_lens_equal(
        "dense = layer",
        dense(m_in, n_out),
        from_tamb(layer(m_in, n_out)),
        _random_dense(rng, m_in, n_out),
        rng.standard_normal(m_in),
        p_iso=dense_to_paras,
        m_iso=layer_residue,
        a_iso=vector_as_floats,
        rng=rng,
    )


@given(widths, widths, st.integers(1, 4), seeds())
def test_dense_on_a_batch_is_batch_n_of_the_faithful_layer(m_in, n_out, batch, seed):
    rng = np.random.default_rng(seed)
    check_lens_equal(
        "dense on a batch = batch_n(layer)",
        dense(m_in, n_out),
        batch_n(batch, from_tamb(layer(m_in, n_out))),
        _random_dense(rng, m_in, n_out),
        rng.standard_normal((batch, m_in)),
        p_iso=dense_to_paras,
        m_iso=batch_layer_residue,
        s_iso=rows,
        a_iso=rows_as_floats,
        rng=rng,
    )


@settings(max_examples=30)
@given(widths, st.lists(widths, min_size=1, max_size=3), seeds())
def test_mlp_on_a_vector_is_make_mlp(m_in, sizes, seed):
    rng = np.random.default_rng(seed)
    paras = init_mlp(m_in, sizes, rng)
    check_lens_equal(
        "mlp = make_mlp",
        mlp(m_in, sizes),
        from_tamb(make_mlp(m_in, sizes)),
        mlp_from_paras(paras),
        rng.standard_normal(m_in),
        p_iso=mlp_to_paras,
        m_iso=mlp_residue,
        a_iso=vector_as_floats,
        rng=rng,
    )


@settings(max_examples=20)
@given(widths, st.lists(widths, min_size=1, max_size=3), st.integers(1, 3), seeds())
def test_mlp_on_a_batch_is_batch_n_of_make_mlp(m_in, sizes, batch, seed):
    rng = np.random.default_rng(seed)
    check_lens_equal(
        "mlp on a batch = batch_n(make_mlp)",
        mlp(m_in, sizes),
        batch_n(batch, from_tamb(make_mlp(m_in, sizes))),
        mlp_from_paras(init_mlp(m_in, sizes, rng)),
        rng.standard_normal((batch, m_in)),
        p_iso=mlp_to_paras,
        m_iso=batch_mlp_residue,
        s_iso=rows,
        a_iso=rows_as_floats,
        rng=rng,
    )


@settings(max_examples=20)
@given(widths, st.lists(widths, min_size=1, max_size=3), st.integers(1, 3), seeds())
def test_mlp_then_loss_on_a_batch_is_the_post_training_lens(m_in, sizes, batch, seed):
    """``mlp >> squared_distance`` = ``batch_n(make_mlp) >> loss_l``: what a training step runs."""
    rng = np.random.default_rng(seed)
    params = mlp_from_paras(init_mlp(m_in, sizes, rng))
    truth = rng.standard_normal((batch, sizes[-1]))
    check_lens_equal(
        "mlp >> squared_distance = batch_n(make_mlp) >> loss_l",
        mlp(m_in, sizes) >> squared_distance,
        batch_n(batch, from_tamb(make_mlp(m_in, sizes))) >> loss_l,
        (truth, params),
        rng.standard_normal((batch, m_in)),
        p_iso=lambda p: (rows(p[0]), mlp_to_paras(p[1])),
        m_iso=lambda m: (batch_mlp_residue(m[0]), (rows(m[1][0]), rows(m[1][1]))),
        s_iso=rows,
        rng=rng,
    )


def test_the_twins_are_told_apart_when_they_differ():
    """The isomorphisms are not vacuous: a transposed weight matrix is caught."""
    rng = np.random.default_rng(0)
    p = _random_dense(rng, 3, 3)
    with pytest.raises(LawError, match="dense = layer"):
        check_lens_equal(
            "dense = layer",
            dense(3, 3),
            from_tamb(layer(3, 3)),
            p,
            rng.standard_normal(3),
            p_iso=lambda q: dense_to_paras(DenseParams(q.weight.T, q.bias)),
            m_iso=layer_residue,
            a_iso=vector_as_floats,
        )
