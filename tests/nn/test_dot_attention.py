"""The fused attention lens equals the four lenses it fuses, is a correct derivative, and is pure."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, chain, copy_l, id_pre_lens
from prelens.core import tree_allclose
from prelens.core._iso import unassoc_l
from prelens.nn import (
    MASKED,
    attention_weights,
    linear,
    multi_head_attention,
    remat,
    scaled_dot_product_attention,
    softmax,
)
from prelens.nn import _dot_attention as dot_attention
from prelens.nn._projections import projections
from prelens.nn.composed import attention_scores, causal_mask, split_heads, weighted_sum
from prelens.testing import check_lens_equal, check_pure, check_vjp, seeds


def composed(dk: int, causal: bool):
    """The twin: the seeds' pipeline, one lens per step."""
    stages = [attention_scores(dk) @ id_pre_lens]
    if causal:
        stages.append(causal_mask() @ id_pre_lens)
    return chain(*stages, softmax @ id_pre_lens, weighted_sum())


def units(causal: bool):
    return [((), ())] * (3 if causal else 2) + [()]


def qkv(rng, lead, tq, tk, dk, dv, dtype=np.float64, scale=1.0):
    q = rng.standard_normal((*lead, tq, dk)) * scale
    k = rng.standard_normal((*lead, tk, dk)) * scale
    return (q.astype(dtype), k.astype(dtype)), rng.standard_normal((*lead, tk, dv)).astype(dtype)


@settings(max_examples=30)
@given(
    st.booleans(),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(1, 3),
    seeds(),
    st.sampled_from([1, dot_attention.FOLD_KEYS]),
)
def test_the_fused_lens_equals_the_four_lenses_composed(causal, lead, tq, tk, dk, dv, seed, fold_keys):
    """Same outputs and deltas, on any leading axes and any T_q, T_k (more queries than keys
    too: the first rows are then wholly hidden and get uniform weights, in both), with the softmax's
    shift inside the scores' product (``FOLD_KEYS`` 1) or subtracted after it."""
    rng = np.random.default_rng(seed)
    x = qkv(rng, lead, tq, tk, dk, dv)
    with mock.patch.object(dot_attention, "FOLD_KEYS", fold_keys):
        check_lens_equal(
            "attention's four lenses = scaled_dot_product_attention",
            remat(composed(dk, causal)),
            remat(scaled_dot_product_attention(dk, causal=causal)),
            units(causal),
            x,
            p_iso=lambda p: (),
            m_iso=lambda m: ((), m[1]),
            rng=rng,
            rtol=1e-9,
            atol=1e-12,
        )


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [1.0, 3e7], ids=["normal", "huge scores"])
def test_it_is_a_correct_derivative_and_pure(causal, scale):
    rng = np.random.default_rng(1)
    lens = scaled_dot_product_attention(3, causal=causal)
    x = qkv(rng, (2, 2), 4, 4, 3, 2, scale=1.0)
    check_vjp(lens, (), x, rng=rng)
    check_pure(lens, (), qkv(rng, (2,), 3, 5, 3, 2, scale=scale), rng=rng)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_shift_inside_the_scores_product_equals_the_pass_that_subtracts_it(monkeypatch, causal, dtype):
    rng = np.random.default_rng(5)
    fused, chained = scaled_dot_product_attention(4, causal=causal), composed(4, causal)
    tol = {"rtol": 1e-9, "atol": 1e-12} if dtype == np.float64 else {"rtol": 1e-5, "atol": 1e-6}
    for x in (
        qkv(rng, (2, 3), 7, 9, 4, 3, dtype),
        qkv(rng, (2,), 9, 7, 4, 3, dtype),
        qkv(rng, (2,), 6, 6, 4, 3, dtype, 1e8),
    ):
        monkeypatch.setattr(dot_attention, "FOLD_KEYS", 10**9)
        apart = fused.fwd((), x)
        monkeypatch.setattr(dot_attention, "FOLD_KEYS", 1)
        inside = fused.fwd((), x)
        assert tree_allclose(inside, apart, **tol) and np.isfinite(inside[1]).all()
        assert np.allclose(inside[1], chained.fwd(units(causal), x)[1], **tol)
    if dtype == np.float64:
        check_vjp(fused, (), qkv(rng, (2,), 5, 5, 4, 2), rng=rng)


def test_huge_and_non_finite_scores_take_the_exact_path():
    rng = np.random.default_rng(2)
    for causal in (False, True):
        fused, chained = scaled_dot_product_attention(2, causal=causal), composed(2, causal)
        for x in (qkv(rng, (2,), 4, 4, 2, 3, scale=1e8), qkv(rng, (2,), 5, 3, 2, 3, scale=1e8)):
            a = fused.fwd((), x)[1]
            b = chained.fwd(units(causal), x)[1]
            assert np.allclose(a, b, rtol=1e-9, atol=1e-12) and np.isfinite(a).all()
        (q, k), v = qkv(rng, (1,), 3, 3, 2, 1)
        q[0, 1, 0] = np.inf  # a query of inf: its row's weights are NaN in both, the others agree
        with np.errstate(invalid="ignore"):
            a, b = fused.fwd((), ((q, k), v))[1], chained.fwd(units(causal), ((q, k), v))[1]
        assert np.array_equal(np.isnan(a), np.isnan(b)) and np.allclose(a[~np.isnan(a)], b[~np.isnan(b)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hidden_keys_get_weight_exactly_zero_and_the_dtype_is_kept(dtype):
    rng = np.random.default_rng(3)
    lens = scaled_dot_product_attention(4, causal=True)
    x = qkv(rng, (2, 3), 6, 6, 4, 5, dtype=dtype)
    (q, k, v, a), out = lens.fwd((), x)
    assert out.dtype == dtype and a.dtype == dtype
    assert (a[..., ~np.tri(6, 6, dtype=bool)] == 0).all()
    assert np.allclose(a.sum(axis=-1), 1, atol=1e-6)
    _, ((dq, dk), dv) = lens.bwd((q, k, v, a), np.ones_like(out))
    assert dq.dtype == dk.dtype == dv.dtype == dtype
    assert MASKED == -1e30


def test_the_residue_never_aliases_the_callers_arrays():
    rng = np.random.default_rng(4)
    (q, k), v = qkv(rng, (1,), 2, 3, 2, 2)
    m, _ = scaled_dot_product_attention(2).fwd((), ((q, k), v))
    assert not any(np.shares_memory(r, x) for r in m for x in (q, k, v))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lead", [(3,), (2, 3)])
def test_the_backward_pass_in_blocks_of_rows_equals_the_whole(monkeypatch, lead, causal):
    """numpy's backward pass holds dS for at most CHUNK_BYTES at a time (blocks over the leading axes)."""
    rng = np.random.default_rng(7)
    lens = scaled_dot_product_attention(3, causal=causal)
    x = qkv(rng, lead, 5, 4, 3, 2)  # more queries than keys: under the mask, a row with every key hidden
    m, out = lens.fwd((), x)
    do = rng.standard_normal(out.shape)
    whole = lens.bwd(m, do)
    monkeypatch.setattr(dot_attention, "CHUNK_BYTES", 5 * 4 * 8)  # one (5, 4) matrix per block
    assert tree_allclose(lens.bwd(m, do), whole, rtol=1e-14, atol=1e-15)
    check_vjp(lens, (), x, rng=rng)
    check_pure(lens, (), x, rng=rng)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("lead", "tq", "tk"), [((), 7, 7), ((3,), 7, 9), ((2, 3), 8, 8), ((5,), 4, 4)])
def test_the_causal_passes_in_blocks_of_rows_equal_the_whole(monkeypatch, lead, tq, tk, dtype):
    """numpy's causal forward and backward passes in blocks of query rows (each seeing only its keys), and of
    first leading indices, give the whole passes' weights, output and deltas; the hidden weights stay 0."""
    rng = np.random.default_rng(11)
    lens = scaled_dot_product_attention(3, causal=True)
    x = qkv(rng, lead, tq, tk, 3, 2, dtype=dtype)
    monkeypatch.setattr(dot_attention, "ROWS", 10**9)
    m, out = lens.fwd((), x)
    do = rng.standard_normal(out.shape).astype(dtype)
    whole = lens.bwd(m, do)
    monkeypatch.setattr(dot_attention, "ROWS", 2)
    monkeypatch.setattr(dot_attention, "BLOCK_BYTES", 1)  # one first index per block
    assert len(dot_attention._row_blocks(tq, tk)) == (tq + 1) // 2
    blocked_m, blocked_out = lens.fwd((), x)
    tol = {"rtol": 1e-12, "atol": 1e-14} if dtype == np.float64 else {"rtol": 1e-5, "atol": 1e-6}
    assert blocked_out.dtype == dtype and np.allclose(blocked_out, out, **tol)
    assert (blocked_m[3][..., ~np.tri(tq, tk, tk - tq, dtype=bool)] == 0).all()
    assert tree_allclose(blocked_m, m, **tol) and tree_allclose(lens.bwd(blocked_m, do), whole, **tol)
    if dtype == np.float64:
        check_vjp(lens, (), x, rng=rng)
        check_pure(lens, (), x, rng=rng)


@pytest.mark.parametrize("lead", [(0,), (2, 0)])
def test_the_causal_passes_of_an_empty_batch_at_a_long_sequence_are_empty(lead):
    lens = scaled_dot_product_attention(4, causal=True)
    x = qkv(np.random.default_rng(13), lead, 256, 256, 4, 3)
    m, out = lens.fwd((), x)
    (dq, dk), dv = lens.bwd(m, np.zeros(out.shape))[1]
    assert out.shape == (*lead, 256, 3) and dq.shape == dk.shape == (*lead, 256, 4) and dv.shape == (*lead, 256, 3)


def test_every_block_of_rows_shares_one_mask_of_its_triangle():
    dot_attention._MASKS.clear()
    lens = scaled_dot_product_attention(4, causal=True)
    for dtype in (np.float32, np.float64):
        lens.fwd((), qkv(np.random.default_rng(14), (2,), 640, 640, 4, 3, dtype=dtype))
    assert set(dot_attention._MASKS) == {(128, 128, None), (128, 128, np.dtype(np.float32))}


def test_the_causal_passes_at_a_long_sequence_skip_the_hidden_blocks_and_equal_the_whole(monkeypatch):
    """At T = 300 (blocks of 128 rows, the last one short) with batch and heads, float64."""
    rng = np.random.default_rng(12)
    lens = scaled_dot_product_attention(16, causal=True)
    x = qkv(rng, (2, 4), 300, 300, 16, 16)
    assert [c for _, _, c in dot_attention._row_blocks(300, 300)] == [128, 256, 300]
    m, out = lens.fwd((), x)
    do = rng.standard_normal(out.shape)
    deltas = lens.bwd(m, do)
    monkeypatch.setattr(dot_attention, "ROWS", 10**9)
    whole_m, whole_out = lens.fwd((), x)
    assert np.allclose(out, whole_out, rtol=1e-12, atol=1e-14) and tree_allclose(m, whole_m, rtol=1e-12, atol=1e-14)
    assert tree_allclose(deltas, lens.bwd(whole_m, do), rtol=1e-12, atol=1e-14)


def test_multi_head_attention_runs_it_and_its_weights_are_probed():
    rng = np.random.default_rng(5)
    mha = multi_head_attention(8, 2, causal=True)
    m, _ = mha.fwd(mha.init(rng), rng.standard_normal((3, 4, 8)))
    assert "scaled_dot_product_attention(d_k=4, causal)" in repr(mha.parts[0].parts)
    w = attention_weights(mha, m)["attention"]
    assert w.shape == (3, 2, 4, 4) and np.allclose(w.sum(-1), 1) and (w[..., ~np.tri(4, 4, dtype=bool)] == 0).all()


def test_bad_inputs_residues_and_deltas_are_errors_naming_the_lens():
    """The declared patterns' errors, and the relations between Q, K and V that the core reports."""
    lens = scaled_dot_product_attention(2, causal=True)
    good = ((np.ones((1, 3, 2)), np.ones((1, 4, 2))), np.ones((1, 4, 5)))
    name = r"scaled_dot_product_attention\(d_k=2, causal\)"
    for bad, error, says in (
        (((np.ones((1, 3, 3)), np.ones((1, 4, 2))), np.ones((1, 4, 5))), ShapeError, r"input at \[0\]\[0\]: expected"),
        (
            ((np.ones((1, 3, 2)), np.ones((1, 4, 2))), np.ones((1, 3, 5))),
            ShapeError,
            r"input: expected K \(\.\.\., T_k, d_k\) and V \(\.\.\., T_k, d_v\) with the same T_k >= 1 keys, "
            r"got K f64\[1,4,2\] and V f64\[1,3,5\]$",
        ),
        (((np.ones((2, 3, 2)), np.ones((1, 4, 2))), np.ones((1, 4, 5))), ShapeError, r"input at \[0\]\[1\]: .*leading"),
        (((np.ones((1, 3, 2)), np.ones((1, 4, 2), np.float32)), np.ones((1, 4, 5))), DTypeError, r"\(dtype and"),
        (((np.ones((1, 3, 2)), np.ones((1, 0, 2))), np.ones((1, 0, 5))), ShapeError, "got K f64\\[1,0,2\\] and V"),
        (
            [[np.ones((1, 3, 2)), np.ones((1, 4, 2))], np.ones((1, 4, 5))],
            StructureError,
            r"input must be \(\(Q, K\), V\), tuples, got \[\[f64\[1,3,2\], f64\[1,4,2\]\], f64\[1,4,5\]\]$",
        ),
        ((np.ones((1, 3, 2)), np.ones((1, 4, 5))), StructureError, r"input at \[0\]: expected tuple of 2"),
        (None, StructureError, "input: expected tuple of 2, got None"),
    ):
        with pytest.raises(error, match=rf"^{name}: .*{says}"):
            lens.fwd((), bad)
    m, out = lens.fwd((), good)
    with pytest.raises(StructureError, match=rf"^{name}: the residue"):
        lens.bwd(m[:3], out)
    with pytest.raises(ShapeError, match=rf"^{name}: output delta: expected f64\[1,3,5\], got f64\[1,3,4\]"):
        lens.bwd(m, np.ones((1, 3, 4)))
    with pytest.raises(StructureError, match=r"scaled_dot_product_attention: d_k"):
        scaled_dot_product_attention(0)


# ------------------------------------------------- the fused projections of the fast attention


def composed_projections(d: int, h: int, cross: bool):
    """The twin: the wiring, three linears side by side, three split_heads."""
    wiring = [id_pre_lens @ copy_l, unassoc_l] if cross else [copy_l, copy_l @ id_pre_lens]
    split = split_heads(h)
    return chain(*wiring, (linear(d, d) @ linear(d, d)) @ linear(d, d), (split @ split) @ split)


@settings(max_examples=20)
@given(st.booleans(), st.sampled_from([(4, 1), (4, 2), (6, 3)]), st.integers(1, 3), st.integers(1, 4), seeds())
def test_the_fused_projections_equal_the_stages_they_fuse(cross, dh, t, s, seed):
    d, h = dh
    rng = np.random.default_rng(seed)
    w = tuple(rng.standard_normal((d, d)) for _ in range(3))
    x = rng.standard_normal((2, t, d))
    inp = (x, rng.standard_normal((2, s, d))) if cross else x
    units = [((), ()), ()] if cross else [(), ((), ())]
    check_lens_equal(
        "wiring, linears and split_heads = projections",
        remat(composed_projections(d, h, cross)),
        remat(projections(d, h, np.dtype(np.float64), cross=cross)),
        [*units, ((w[0], w[1]), w[2]), (((), ()), ())],
        inp,
        p_iso=lambda p: (p[2][0][0], p[2][0][1], p[2][1]),
        m_iso=lambda m: ((m[0][2][0][0], m[0][2][0][1], m[0][2][1]), m[1]),
        rng=rng,
        rtol=1e-9,
        atol=1e-12,
    )


@pytest.mark.parametrize("cross", [False, True])
def test_the_fused_projections_are_a_correct_derivative_pure_and_seeded_as_the_linears(cross):
    rng = np.random.default_rng(6)
    lens = projections(4, 2, np.dtype(np.float64), cross=cross)
    p = lens.init(0)
    x = rng.standard_normal((2, 3, 4))
    inp = (x, rng.standard_normal((2, 5, 4))) if cross else x
    check_vjp(lens, p, inp, rng=rng)
    check_pure(lens, p, inp, rng=rng)
    twin = composed_projections(4, 2, cross).init(0)[2]
    assert all(np.array_equal(a, b) for a, b in zip(p, (twin[0][0], twin[0][1], twin[1])))
    with pytest.raises(
        ShapeError,
        match=r"^projections\(4, heads=2(, cross)?\): parameters at \.W_K: expected f64\[4,4\], got f64\[4,3\]",
    ):
        lens.fwd((p[0], np.ones((4, 3)), p[2]), inp)
