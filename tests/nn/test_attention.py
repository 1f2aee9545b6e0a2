"""Attention as lenses: every piece a correct derivative and lawful; faithful heads equal fast heads."""

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import ShapeError, StructureError, chain
from prelens.core import tree_allclose
from prelens.nn import AttentionParams, attention_weights, cross_attention, multi_head_attention, remat, softmax
from prelens.nn.composed import (
    attention_head,
    attention_scores,
    causal_mask,
    concat_heads,
    merge_heads,
    split_heads,
    stack_heads,
    unstack_heads,
    weighted_sum,
)
from prelens.nn.composed import multi_head_attention as multi_head_attention_faithful
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds

# ------------------------------------------------------------------ pieces


@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), seeds())
def test_scores_and_weighted_sum_are_lawful_derivatives(b, tq, tk, dk, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((b, 2, tq, dk)), rng.standard_normal((b, 2, tk, dk))
    check_lens_laws(attention_scores(dk), (), (q, k), rng=rng)
    a, v = rng.standard_normal((b, 2, tq, tk)), rng.standard_normal((b, 2, tk, 3))
    check_lens_laws(weighted_sum(), (), (a, v), rng=rng)


@given(st.integers(1, 4), st.integers(1, 4), seeds())
def test_mask_split_merge_concat_are_lawful_derivatives(tq, tk, seed):
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((2, tq, tk))
    check_lens_laws(causal_mask(), (), s, rng=rng, vjp=False)
    # central differences through -1e30 lose every digit: check the visible entries' derivative
    check_vjp(causal_mask(), (), s, da=rng.standard_normal(s.shape) * np.tri(tq, tk, tk - tq), rng=rng)
    x = rng.standard_normal((2, tq, 6))
    check_lens_laws(split_heads(3), (), x, rng=rng)
    check_lens_laws(merge_heads(3), (), rng.standard_normal((2, 3, tq, 2)), rng=rng)
    check_lens_laws(concat_heads(2), (), [x, rng.standard_normal((2, tq, 1))], rng=rng)


def test_scores_are_scaled_dot_products():
    q, k = np.array([[1.0, 2.0, 0.0, 0.0]]), np.array([[3.0, 1.0, 1.0, 1.0], [0.0, 0.0, 5.0, 5.0]])
    _, s = attention_scores(4).fwd((), (q, k))
    assert np.allclose(s, [[5.0 / 2.0, 0.0]])


def test_split_then_merge_is_the_identity_and_heads_take_consecutive_features():
    x = np.arange(2 * 3 * 8.0).reshape(2, 3, 8)
    _, h = split_heads(4).fwd((), x)
    assert h.shape == (2, 4, 3, 2)
    assert np.array_equal(h[1, 2, 0], x[1, 0, 4:6])
    assert np.array_equal(merge_heads(4).fwd((), h)[1], x)


def test_causal_mask_backward_zeroes_the_delta_of_hidden_scores():
    m, _ = causal_mask().fwd((), np.zeros((1, 3, 3)))
    _, ds = causal_mask().bwd(m, np.ones((1, 3, 3)))
    assert np.array_equal(ds[0], np.tri(3))


def test_causal_mask_hides_the_future_exactly_and_softmax_rows_sum_to_one():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((2, 3, 5, 5)) * 50
    _, masked = causal_mask().fwd((), s)
    _, a = softmax.fwd((), masked)
    future = np.triu(np.ones((5, 5), dtype=bool), 1)
    assert np.all(a[..., future] == 0.0)
    assert np.all(a[..., ~future] > 0.0)
    assert np.allclose(a.sum(axis=-1), 1.0)


def test_fully_masked_rows_stay_finite():
    # More queries than keys: with the causal offset the first rows see no key at all.
    s = np.random.default_rng(1).standard_normal((1, 4, 2))
    chain_ = chain(causal_mask(), softmax)
    m, a = chain_.fwd([(), ()], s)
    assert np.all(np.isfinite(a)) and np.allclose(a.sum(axis=-1), 1.0)
    assert np.allclose(a[0, :2], 0.5)  # no key visible: uniform, never NaN
    assert a[0, 2, 1] == 0.0  # the third query sees the first key only
    _, ds = chain_.bwd(m, np.ones_like(a))
    assert np.all(np.isfinite(ds))
    check_vjp(chain_, [(), ()], s)


def test_float32_scores_stay_float32_and_masked_values_are_finite():
    q = np.ones((1, 3, 4), np.float32)
    _, s = attention_scores(4).fwd((), (q, q))
    _, masked = causal_mask().fwd((), s)
    _, a = softmax.fwd((), masked)
    assert s.dtype == masked.dtype == a.dtype == np.float32
    assert np.all(np.isfinite(masked)) and a[0, 0, 1] == 0.0


def test_attention_with_one_key_returns_its_value():
    rng = np.random.default_rng(2)
    ca = cross_attention(8, 2)
    p = ca.init(rng)
    x, c = rng.standard_normal((3, 5, 8)), rng.standard_normal((3, 1, 8))
    m, y = ca.fwd(p, (x, c))
    expected = (c @ p.W_V) @ p.W_O  # the only value, projected out, for every query
    assert np.allclose(y, np.broadcast_to(expected, y.shape))
    assert np.all(attention_weights(ca, m)["attention"] == 1.0)
    head = attention_head(4, 2, cross=True)
    hp = head.init(rng)
    xs, cs = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 1, 4))
    assert np.allclose(head.fwd(hp, (xs, cs))[1], np.broadcast_to(cs @ hp.W_V, (2, 3, 2)))


def test_self_attention_lenses_are_correct_derivatives():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 6))
    for lens in (
        attention_head(6, 2),
        attention_head(6, 3, causal=True),
        multi_head_attention(6, 3),
        multi_head_attention(6, 2, causal=True),
        multi_head_attention_faithful(6, 3, causal=True),
    ):
        check_vjp(lens, lens.init(rng), x, rng=rng)
    c = rng.standard_normal((2, 5, 6))
    for lens in (
        attention_head(6, 2, cross=True),
        cross_attention(6, 2),
        multi_head_attention_faithful(6, 2, cross=True),
    ):
        check_vjp(lens, lens.init(rng), (x, c), rng=rng)


@settings(max_examples=15)
@given(st.booleans(), seeds())
def test_multi_head_attention_is_a_lawful_lens(causal, seed):
    rng = np.random.default_rng(seed)
    mha = multi_head_attention(4, 2, causal=causal)
    check_lens_laws(mha, mha.init(rng), rng.standard_normal((2, 3, 4)), rng=rng)
    ca = cross_attention(4, 2)
    check_lens_laws(ca, ca.init(rng), (rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 2, 4))), rng=rng)
    head = attention_head(4, 2, causal=causal)
    check_lens_laws(head, head.init(rng), rng.standard_normal((1, 3, 4)), rng=rng)
    faithful = multi_head_attention_faithful(4, 2, causal=causal)
    check_lens_laws(faithful, faithful.init(rng), rng.standard_normal((1, 2, 4)), rng=rng)


# ------------------------------------------------------- faithful = fast


@settings(max_examples=25)
@given(st.sampled_from([(4, 1), (4, 2), (6, 3), (8, 4)]), st.booleans(), st.integers(1, 4), seeds())
def test_faithful_multi_head_attention_equals_fast(dh, causal, t, seed):
    d, h = dh
    rng = np.random.default_rng(seed)
    faithful = multi_head_attention_faithful(d, h, causal=causal)
    fast = multi_head_attention(d, h, causal=causal)
    fp, x = faithful.init(rng), rng.standard_normal((2, t, d))
    check_lens_equal(
        "faithful multi-head attention = fast multi-head attention",
        remat(faithful),
        remat(fast),
        fp,
        x,
        p_iso=stack_heads,
        m_iso=lambda m: (stack_heads(m[0]), m[1]),
        rng=rng,
    )
    mf, _ = faithful.fwd(fp, x)
    ms, _ = fast.fwd(stack_heads(fp), x)
    assert np.allclose(attention_weights(faithful, mf)["attention"], attention_weights(fast, ms)["attention"])


@settings(max_examples=15)
@given(st.integers(1, 3), st.integers(1, 4), seeds())
def test_faithful_cross_attention_equals_fast(t, s, seed):
    rng = np.random.default_rng(seed)
    faithful = multi_head_attention_faithful(6, 3, cross=True)
    fp = faithful.init(rng)
    xc = (rng.standard_normal((2, t, 6)), rng.standard_normal((2, s, 6)))
    check_lens_equal(
        "faithful cross-attention = fast cross-attention",
        remat(faithful),
        remat(cross_attention(6, 3)),
        fp,
        xc,
        p_iso=stack_heads,
        m_iso=lambda m: (stack_heads(m[0]), m[1]),
        rng=rng,
    )


def test_the_equality_check_can_fail():
    # A fast layout with the heads' columns in the wrong order is not the faithful one.
    rng = np.random.default_rng(4)
    faithful, fast = multi_head_attention_faithful(4, 2), multi_head_attention(4, 2)
    fp, x = faithful.init(rng), rng.standard_normal((2, 3, 4))

    def swapped(fp):
        ap = stack_heads(fp)
        return ap._replace(W_V=np.roll(ap.W_V, 2, axis=1))

    with pytest.raises(AssertionError, match="faithful"):
        check_lens_equal(
            "faithful",
            remat(faithful),
            remat(fast),
            fp,
            x,
            p_iso=swapped,
            m_iso=lambda m: (swapped(m[0]), m[1]),
        )


def test_stack_and_unstack_heads_are_inverse():
    ap = multi_head_attention(6, 3).init(0)
    back = stack_heads(unstack_heads(ap, 3))
    assert isinstance(back, AttentionParams) and tree_allclose(back, ap)
    assert [w.shape for w in unstack_heads(ap, 3).heads[2]] == [(6, 2)] * 3


# -------------------------------------------------------------- residue


def test_attention_weights_come_from_the_residue_without_recomputation():
    rng = np.random.default_rng(5)
    mha = multi_head_attention(8, 2, causal=True)
    p, x = mha.init(rng), rng.standard_normal((3, 4, 8))
    m, _ = mha.fwd(p, x)
    w = attention_weights(mha, m)["attention"]
    assert w.shape == (3, 2, 4, 4)
    assert np.allclose(w.sum(axis=-1), 1.0) and np.all(w[..., 0, 1:] == 0.0)
    # the weights are the softmax's residue itself (read-only): the very memory the backward pass uses
    assert any(np.shares_memory(leaf, w) for leaf in _leaves(m))
    q = (x @ p.W_Q).reshape(3, 4, 2, 4).transpose(0, 2, 1, 3)
    k = (x @ p.W_K).reshape(3, 4, 2, 4).transpose(0, 2, 1, 3)
    s = q @ k.swapaxes(-1, -2) / 2.0 + np.triu(np.full((4, 4), -np.inf), 1)
    assert np.allclose(w, np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True))


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for child in tree for leaf in _leaves(child)]
    return [tree]


def test_attention_weights_are_found_through_remat_and_a_new_name():
    """``remat`` keeps only ``(p, s)``: its weights are recomputed from them (never silently left out of a model);
    a lens under another name (``named``) keeps its residue, so its weights are read from it."""
    rng = np.random.default_rng(6)
    mha = multi_head_attention(8, 2, causal=True)
    p, x = mha.init(rng), rng.standard_normal((3, 4, 8))
    plain = attention_weights(mha, mha.fwd(p, x)[0])["attention"]
    for model in (remat(mha), mha.named("attn")):
        assert np.allclose(attention_weights(model, model.fwd(p, x)[0])["attention"], plain), model
    two = chain(remat(mha), mha)
    found = attention_weights(two, two.fwd([p, p], x)[0])
    assert list(found) == ["attention", "attention#2"] and np.allclose(found["attention"], plain)


def test_attention_weights_cannot_change_the_gradient():
    """The weights are the residue's own array, read-only: a user who masks or rescales them in place for a
    plot gets an error, not silently wrong gradients from the next backward pass (it wrote into the residue)."""
    rng = np.random.default_rng(7)
    mha = multi_head_attention(8, 2, causal=True)
    p, x = mha.init(rng), rng.standard_normal((3, 4, 8))
    m, y = mha.fwd(p, x)
    before = mha.bwd(m, np.ones_like(y))[0]
    w = attention_weights(mha, m)["attention"]
    assert any(np.shares_memory(leaf, w) for leaf in _leaves(m))  # not a copy
    with pytest.raises(ValueError, match="read-only"):
        w *= 2.0
    assert tree_allclose(mha.bwd(m, np.ones_like(y))[0], before, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 5, 8)])
def test_attention_weights_of_inputs_with_fewer_or_more_leading_axes(shape):
    """multi_head_attention takes ``(..., T, d)``: an unbatched ``(T, d)`` (as PyTorch's ``MultiheadAttention``
    takes) has weights ``(heads, T, T)``, not a residue refused as "not a residue of this model"."""
    mha = multi_head_attention(8, 2, causal=True)
    m, _ = mha.fwd(mha.init(0), np.ones(shape))
    w = attention_weights(mha, m)["attention"]
    assert w.shape == (*shape[:-2], 2, 5, 5) and np.allclose(w.sum(axis=-1), 1.0)


def test_attention_weights_of_a_lens_without_attention_is_an_error():
    with pytest.raises(StructureError, match="no attention lenses"):
        attention_weights(split_heads(2), ())


# ----------------------------------------------------------------- errors


def test_d_model_not_divisible_by_heads_is_an_error_naming_the_lens():
    with pytest.raises(
        StructureError, match=r"multi_head_attention: d_model must be divisible .* d_model=10, n_heads=4"
    ):
        multi_head_attention(10, 4)
    with pytest.raises(StructureError, match="cross_attention: d_model must be divisible"):
        cross_attention(6, 4)
    with pytest.raises(StructureError, match="multi_head_attention_composed: d_model must be divisible"):
        multi_head_attention_faithful(6, 4)


def test_wrong_shapes_are_errors_naming_the_lens():
    with pytest.raises(ShapeError, match=r"attention_scores\(d_k=4\)"):
        attention_scores(4).fwd((), (np.ones((2, 3)), np.ones((2, 3))))
    with pytest.raises(ShapeError, match="split_heads"):
        split_heads(4).fwd((), np.ones((2, 3, 6)))
    mha = multi_head_attention(8, 2)
    with pytest.raises(
        ShapeError, match=r"projections\(8, heads=2\): input: expected f64\[\.\.\.,\*,8\], got f64\[2,3,6\]"
    ):
        mha.fwd(mha.init(0), np.ones((2, 3, 6)))


@pytest.mark.parametrize("library", ["numpy", "array_api_strict"])
@pytest.mark.parametrize("cross", [False, True])
def test_an_empty_batch_passes_both_ways_on_every_library(library, cross):
    xp = importlib.import_module(library)  # both are in the test extra: a missing one fails, never skips
    lens = cross_attention(4, 2) if cross else multi_head_attention(4, 2, causal=True)
    p = AttentionParams(*(xp.asarray(w) for w in lens.init(0)))
    x = xp.zeros((0, 3, 4), dtype=xp.float64)
    m, y = lens.fwd(p, (x, xp.zeros((0, 5, 4), dtype=xp.float64)) if cross else x)
    dp, dx = lens.bwd(m, xp.zeros_like(y))
    assert y.shape == (0, 3, 4)
    assert [tuple(d.shape) for d in (dx if cross else (dx,))] == [(0, 3, 4), (0, 5, 4)][: 1 + cross]
    assert [tuple(w.shape) for w in dp] == [(4, 4)] * 4
    assert float(xp.sum(dp.W_Q)) == 0.0
