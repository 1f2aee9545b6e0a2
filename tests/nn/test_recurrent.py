"""Recurrent layers: rnn, gru, lstm and bidirectional; their cells; their twins ``scan(cell)``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, iso_lens, scan
from prelens.errors import ArgumentError
from prelens.nn import RecurrentParams, bidirectional, gru, lstm, rnn
from prelens.nn.composed import gru_cell, lstm_cell, rnn_cell
from prelens.testing import check_lens_laws, check_scan, check_vjp, seeds

KINDS = {
    "rnn": (rnn, rnn_cell, {}),
    "rnn relu": (rnn, rnn_cell, {"nonlinearity": "relu"}),
    "gru": (gru, gru_cell, {}),
    "lstm": (lstm, lstm_cell, {}),
}


def twin(kind: str, n_in: int, n: int):
    """The layer as the composition it is: ``h0 = 0`` lifted in, ``scan(cell, axis=1)``, ``h_T`` dropped."""
    _, make_cell, kw = KINDS[kind]
    lstm_ = kind == "lstm"

    def zeros(x):
        h = np.zeros((x.shape[0], n), x.dtype)
        return ((h, h) if lstm_ else h), x

    lift = iso_lens("h0 = 0", zeros, lambda d: d[1])
    drop = iso_lens(
        "ys", lambda a: a[1], lambda dys: ((np.zeros_like(dys[:, 0]),) * 2 if lstm_ else np.zeros_like(dys[:, 0]), dys)
    )
    return lift >> scan(make_cell(n_in, n, **kw), axis=1) >> drop


def _lift_params(p):
    return ((), (p, ()))


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(sorted(KINDS)), st.integers(1, 4), st.integers(1, 7), st.integers(1, 3), st.integers(1, 5), seeds()
)
def test_each_fast_layer_equals_its_twin_scan_of_its_cell(kind, batch, steps, n_in, n, seed):
    make, _, kw = KINDS[kind]
    fast, slow = make(n_in, n, **kw), twin(kind, n_in, n)
    rng = np.random.default_rng(seed)
    p, xs = fast.init(rng), rng.standard_normal((batch, steps, n_in))
    m_f, y_f = fast.fwd(p, xs)
    m_s, y_s = slow.fwd(_lift_params(p), xs)
    np.testing.assert_allclose(y_f, y_s, rtol=1e-12, atol=1e-14)
    dys = rng.standard_normal(y_f.shape)
    dp_f, dx_f = fast.bwd(m_f, dys)
    (_, (dp_s, _)), dx_s = slow.bwd(m_s, dys)
    for a, b in zip(dp_f, dp_s, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert type(dp_f) is RecurrentParams
    np.testing.assert_allclose(dx_f, dx_s, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_layers_are_correct_reverse_derivatives_at_a_realistic_size(kind):
    make, _, kw = KINDS[kind]
    layer, rng = make(3, 6, **kw), np.random.default_rng(0)
    check_vjp(layer, layer.init(rng), rng.standard_normal((8, 40, 3)), rng=rng, directions=2)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_cells_obey_the_lens_laws_and_the_scan_laws(kind):
    _, make_cell, kw = KINDS[kind]
    cell, rng = make_cell(3, 4, **kw), np.random.default_rng(1)
    p = cell.init(rng)
    h = rng.standard_normal((5, 4))
    state = (h, rng.standard_normal((5, 4))) if kind == "lstm" else h
    check_lens_laws(cell, p, (state, rng.standard_normal((5, 3))), rng=rng)
    check_scan(cell, p, state, rng.standard_normal((5, 6, 3)), axis=1)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_layers_obey_the_lens_laws(kind):
    make, _, kw = KINDS[kind]
    layer, rng = make(2, 3, **kw), np.random.default_rng(2)
    check_lens_laws(layer, layer.init(rng), rng.standard_normal((4, 5, 2)), rng=rng)


def test_bidirectional_is_the_layer_both_ways():
    layer, rng = gru(2, 3), np.random.default_rng(3)
    bi = bidirectional(layer)
    pf, pb = bi.init(rng)
    xs = rng.standard_normal((4, 7, 2))
    _, ys = bi.fwd((pf, pb), xs)
    np.testing.assert_allclose(ys[..., :3], layer.fwd(pf, xs)[1])
    np.testing.assert_allclose(ys[..., 3:], layer.fwd(pb, xs[:, ::-1])[1][:, ::-1])
    check_vjp(bi, (pf, pb), xs, rng=rng)
    check_lens_laws(bi, (pf, pb), xs, rng=rng, vjp=False)


def test_float32_layers_stay_float32():
    layer = lstm(2, 3, dtype=np.float32)
    p = layer.init(0)
    assert all(w.dtype == np.float32 for w in p)
    m, ys = layer.fwd(p, np.ones((2, 4, 2), np.float32))
    dp, dx = layer.bwd(m, np.ones_like(ys))
    assert ys.dtype == dx.dtype == np.float32 and all(d.dtype == np.float32 for d in dp)
    assert repr(layer) == "lstm(2→3, f32)" and repr(rnn(2, 3, nonlinearity="relu")) == "rnn(2→3, relu)"


def test_constructor_arguments_are_checked_up_front():
    with pytest.raises(ArgumentError, match="gru: n_hidden"):
        gru(3, 0)
    with pytest.raises(ArgumentError, match="lstm: n_in"):
        lstm(2.0, 3)
    with pytest.raises(StructureError, match="nonlinearity must be 'tanh' or 'relu'"):
        rnn(2, 3, nonlinearity="sigmoid")
    with pytest.raises(DTypeError, match="float"):
        gru_cell(2, 3, dtype=np.int64)
    with pytest.raises(StructureError, match="bidirectional: layer must be a PreLens"):
        bidirectional("gru")


def test_wrong_inputs_are_named():
    layer = gru(3, 4)
    p = layer.init(0)
    with pytest.raises(ShapeError, match=r"gru\(3→4\): input: expected f64\[N,T,3\], got f64\[2,5,2\]"):
        layer.fwd(p, np.ones((2, 5, 2)))
    with pytest.raises(DTypeError, match=r"gru\(3→4\): input"):
        layer.fwd(p, np.ones((2, 5, 3), np.float32))
    with pytest.raises(ShapeError, match=r"weight_hh"):
        layer.fwd(p._replace(weight_hh=np.ones((4, 4))), np.ones((2, 5, 3)))


@pytest.mark.parametrize("make", [rnn, gru, lstm, lambda n_in, n: bidirectional(gru(n_in, n))])
def test_a_sequence_without_steps_is_refused_clearly(make):
    layer = make(3, 4)
    with pytest.raises(
        ShapeError, match=r"\(3→4\): input: expected f64\[N,T,3\] with at least one time step, got f64\[2,0,3\]"
    ):
        layer.fwd(layer.init(0), np.ones((2, 0, 3)))


def _no_two_share_memory(tree):
    from prelens.core import tree_leaves

    leaves = [a for a in tree_leaves(tree) if isinstance(a, np.ndarray)]
    for i, a in enumerate(leaves):
        for b in leaves[i + 1 :]:
            assert not np.shares_memory(a, b), "two returned deltas are the same memory"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_returned_deltas_share_no_memory(kind):
    # a user accumulating gradients in place (g += dp) must not add the bias delta twice
    make, make_cell, kw = KINDS[kind]
    rng = np.random.default_rng(4)
    layer = make(3, 5, **kw)
    m, ys = layer.fwd(layer.init(rng), rng.standard_normal((4, 6, 3)))
    _no_two_share_memory(layer.bwd(m, rng.standard_normal(ys.shape)))
    cell = make_cell(3, 5, **kw)
    h = rng.standard_normal((4, 5))
    m, (s2, y) = cell.fwd(cell.init(rng), ((h, h) if kind == "lstm" else h, rng.standard_normal((4, 3))))
    ds = (np.ones_like(s2[0]), np.ones_like(s2[1])) if kind == "lstm" else np.ones_like(s2)
    _no_two_share_memory(cell.bwd(m, (ds, np.ones_like(y))))
    _no_two_share_memory(bidirectional(layer).bwd(*_fb(bidirectional(layer), rng)))


def _fb(lens, rng):
    m, ys = lens.fwd(lens.init(rng), rng.standard_normal((4, 6, 3)))
    return m, rng.standard_normal(ys.shape)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_cell_refuses_a_state_whose_leading_axes_differ_from_the_input_s_before_running(kind):
    # the forward pass broadcast an unbatched h0 (H,) against x (N, n_in), and the backward pass (after a
    # whole scan) then failed inside a matrix product; as PyTorch's cells, the batch axes must agree
    _, make_cell, kw = KINDS[kind]
    cell = make_cell(3, 4, **kw)
    h = np.zeros(4)
    with pytest.raises(
        ShapeError, match=r"_cell\(3→4.*\): input at \[1\]: expected f64\[3\] \(leading axes of the input at \[0\]"
    ):
        cell.fwd(cell.init(0), ((h, h) if kind == "lstm" else h, np.ones((5, 3))))


def test_a_time_first_input_is_told_the_layout():
    # PyTorch's layers default to (T, N, F); prelens's are batch first: the error shows (N, T, F)
    with pytest.raises(ShapeError, match=r"^lstm\(3→4\): input: expected f64\[N,T,3\], got f64\[5,4\]"):
        lstm(3, 4).fwd(lstm(3, 4).init(0), np.zeros((5, 4)))
