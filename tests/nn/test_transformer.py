"""Embeddings, layer norm, residual, blocks and whole transformers: derivatives, causality, dtypes, errors."""

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import DTypeError, PreLens, PrelensError, ShapeError, StructureError, chain, forward, summary, vjp
from prelens.core import tree_allclose, tree_leaves, tree_paths
from prelens.nn import (
    DecoderBlockParams,
    EncoderBlockParams,
    LMParams,
    attention_weights,
    decoder_block,
    decoder_lm,
    encoder_block,
    encoder_decoder,
    feed_forward,
    generate,
    layer_norm,
    multi_head_attention,
    positional_embedding,
    remat,
    residual,
    sinusoidal_encoding,
    token_cross_entropy,
    token_embedding,
)
from prelens.nn._embedding import sinusoidal_table
from prelens.nn.composed import feed_forward as feed_forward_composed
from prelens.nn.composed import residual as residual_composed
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds


def _set(tree, path, value):
    """``tree`` with the leaf at ``path`` (a ``tree_paths`` path) replaced."""
    leaves = [(p, value if p == path else x) for p, x in tree_paths(tree)]
    it = iter(x for _, x in leaves)

    def rebuild(t):
        if isinstance(t, tuple) and hasattr(t, "_fields"):
            return type(t)(*[rebuild(c) for c in t])
        if isinstance(t, tuple):
            return tuple(rebuild(c) for c in t)
        if isinstance(t, list):
            return [rebuild(c) for c in t]
        return next(it)

    return rebuild(tree)


def _get(tree, path):
    return dict(tree_paths(tree))[path]


def check_vjp_every_leaf(lens, p, s, rng):
    """``check_vjp`` once per float parameter leaf (the others held fixed), then on the input."""
    for path, leaf in tree_paths(p):
        if np.asarray(leaf).dtype.kind != "f":
            continue
        only = PreLens(
            lambda w, x, path=path: lens.fwd(_set(p, path, w), x),
            lambda m, da, path=path: (lambda dp_ds: (_get(dp_ds[0], path), dp_ds[1]))(lens.bwd(m, da)),
            f"{lens!r} in {path}",
        )
        check_vjp(only, leaf, s, rng=rng)


# -------------------------------------------------------------- embeddings


def test_token_embedding_reads_rows_and_scatter_adds_repeated_ids():
    emb = token_embedding(4, 2)
    table = np.arange(8.0).reshape(4, 2)
    ids = np.array([[3, 1, 3], [3, 0, 0]])
    m, x = emb.fwd(table, ids)
    assert np.array_equal(x, table[ids])
    da = np.arange(12.0).reshape(2, 3, 2)
    d_table, d_ids = emb.bwd(m, da)
    expected = np.zeros((4, 2))
    for (b, t), i in np.ndenumerate(ids):
        expected[i] += da[b, t]
    assert np.array_equal(d_table, expected)  # id 3 three times, 0 twice, 2 never
    assert d_ids.shape == ids.shape and not d_ids.any()


@given(st.integers(1, 5), st.integers(1, 3), seeds())
def test_embeddings_are_lawful_derivatives(t, d, seed):
    rng = np.random.default_rng(seed)
    emb = token_embedding(5, d)
    check_lens_laws(emb, emb.init(rng), rng.integers(0, 5, (2, t)), rng=rng)
    pos = positional_embedding(6, d)
    check_lens_laws(pos, pos.init(rng), rng.standard_normal((2, t, d)), rng=rng)
    check_lens_laws(sinusoidal_encoding(d), (), rng.standard_normal((2, t, d)), rng=rng)


def test_positional_delta_is_the_batch_sum_on_the_first_rows():
    pos = positional_embedding(5, 2)
    m, _ = pos.fwd(pos.init(0), np.zeros((3, 2, 2)))
    d_table, dx = pos.bwd(m, np.ones((3, 2, 2)))
    assert np.array_equal(d_table, [[3, 3], [3, 3], [0, 0], [0, 0], [0, 0]])
    assert np.array_equal(dx, np.ones((3, 2, 2)))


def test_sinusoidal_table_matches_the_paper():
    table = sinusoidal_table(50, 8)
    t, i = 37, 2
    assert np.isclose(table[t, 2 * i], np.sin(t / 10000 ** (2 * i / 8)))
    assert np.isclose(table[t, 2 * i + 1], np.cos(t / 10000 ** (2 * i / 8)))
    assert sinusoidal_table(3, 5).shape == (3, 5)  # odd widths work


def test_embedding_errors_name_the_lens():
    emb = token_embedding(6, 2)
    with pytest.raises(StructureError, match=r"token_embedding\(6, 2\): token ids must lie in \[0, 6\), got 6"):
        emb.fwd(emb.init(0), np.array([[0, 6]]))
    with pytest.raises(StructureError, match=r"token ids must lie in \[0, 6\), got -1 at index \(1,\)"):
        emb.fwd(emb.init(0), np.array([0, -1]))
    with pytest.raises(DTypeError, match=r"token_embedding\(6, 2\): token ids: expected an integer array"):
        emb.fwd(emb.init(0), np.array([[0.0, 1.0]]))
    pos = positional_embedding(3, 2)
    with pytest.raises(ShapeError, match=r"positional_embedding\(3, 2\): input: expected at most 3 positions"):
        pos.fwd(pos.init(0), np.zeros((1, 4, 2)))
    with pytest.raises(ShapeError, match=r"sinusoidal_encoding\(2\): input: expected at most 3 positions"):
        sinusoidal_encoding(2, max_len=3).fwd((), np.zeros((1, 4, 2)))
    with pytest.raises(DTypeError, match="positional_embedding"):
        pos.fwd(pos.init(0), np.zeros((1, 2, 2), np.float32))  # no silent up-casting


def test_a_positional_embedding_of_no_positions_has_a_zero_gradient():
    pos = positional_embedding(4, 2)
    y, pullback = vjp(pos, pos.init(0), np.zeros((3, 0, 2)))
    dp, dx = pullback(np.ones_like(y))
    assert y.shape == dx.shape == (3, 0, 2) and dp.shape == (4, 2) and not dp.any()


def test_sinusoidal_encoding_keeps_the_delta_dtype_and_passes_none_through():
    enc = sinusoidal_encoding(4)
    m, y = enc.fwd((), np.zeros((2, 3, 4), np.float32))
    assert enc.bwd(m, np.ones_like(y))[1].dtype == np.float32
    with pytest.raises(DTypeError, match=r"^sinusoidal_encoding\(4\): output delta: expected f32\[2,3,4\], got f64"):
        enc.bwd(m, np.ones((2, 3, 4)))
    assert enc.bwd(m, None) == ((), None)  # the delta of data (a next layer with input_delta=False)


# ------------------------------------------------------------ norm, residual


@given(st.integers(1, 5), seeds())
def test_layer_norm_is_a_lawful_derivative(d, seed):
    rng = np.random.default_rng(seed)
    ln = layer_norm(d)
    p = ln.init(rng)._replace(gain=rng.standard_normal(d), bias=rng.standard_normal(d))
    check_lens_laws(ln, p, rng.standard_normal((2, 3, d)), rng=rng)


def test_layer_norm_normalises_and_constant_rows_stay_finite():
    ln = layer_norm(4)
    x = np.array([[1.0, 2.0, 3.0, 6.0], [7.0, 7.0, 7.0, 7.0]])
    m, y = ln.fwd(ln.init(0), x)
    assert np.allclose(y[0].mean(), 0) and np.isclose(y[0].var(), 1, atol=1e-4)
    assert np.array_equal(y[1], np.zeros(4))
    dp, dx = ln.bwd(m, np.array([[1.0, -1.0, 0.5, 2.0], [1.0, -2.0, 3.0, 0.0]]))
    assert all(np.all(np.isfinite(v)) for v in (*dp, dx))
    check_vjp(ln, ln.init(0), x)


def test_residual_adds_the_input_and_keeps_the_inner_params_and_residue():
    rng = np.random.default_rng(0)
    ffn = feed_forward(4, 8)
    res = residual(ffn)
    p, x = ffn.init(rng), rng.standard_normal((2, 3, 4))
    m_in, y_in = ffn.fwd(p, x)
    m, y = res.fwd(p, x)
    assert np.allclose(y, x + y_in) and tree_allclose(m, m_in)
    da = rng.standard_normal(y.shape)
    dp, dx = res.bwd(m, da)
    dp_in, dx_in = ffn.bwd(m_in, da)
    assert tree_allclose(dp, dp_in) and np.allclose(dx, da + dx_in)
    check_lens_laws(res, p, x, rng=rng)


@settings(max_examples=25)
@given(st.sampled_from(["ffn", "attention", "cross"]), st.sampled_from([np.float64, np.float32]), seeds())
def test_fused_residual_equals_the_composite(kind, dtype, seed):
    """``residual(f)`` = ``copy_l >> (id @ f) >> add_l`` (and the context form), bit for bit: same
    parameters, residue, outputs and deltas on random residues, and the composite's summary rows."""
    rng = np.random.default_rng(seed)
    context = kind == "cross"
    from prelens.nn import cross_attention

    f = {
        "ffn": lambda: feed_forward(4, 6, dtype=dtype),
        "attention": lambda: multi_head_attention(4, 2, causal=True, dtype=dtype),
        "cross": lambda: cross_attention(4, 2, dtype=dtype),
    }[kind]()
    fused, composed = residual(f, context=context), residual_composed(f, context=context)
    x = rng.standard_normal((2, 3, 4)).astype(dtype)
    s = (x, rng.standard_normal((2, 5, 4)).astype(dtype)) if context else x
    check_lens_equal("residual = residual_composed", composed, fused, f.init(rng), s, rng=rng, rtol=0, atol=0)
    assert repr(fused.parts) == repr(composed.parts) and repr(fused) == repr(composed).replace(
        "residual_composed", "residual"
    )
    assert [st.name for st in summary(fused, s).stages][1:] == [st.name for st in summary(composed, s).stages][1:]
    p0 = f.init(0)
    if kind != "ffn":  # the attention weights are read off the same residue
        assert set(attention_weights(fused, fused.fwd(p0, s)[0])) == set(
            attention_weights(composed, composed.fwd(p0, s)[0])
        )


def test_fused_residual_names_itself_when_the_shapes_do_not_add():
    from prelens.core import parameter_free

    widen = parameter_free("widen", lambda s: ((), np.concatenate([s, s], axis=-1)), lambda m, da: da[..., :2])
    with pytest.raises(
        StructureError,
        match=r"residual\(widen\): the output of widen must be like the input x, f64\[3,2\], got f64\[3,4\]",
    ):
        residual(widen).fwd((), np.ones((3, 2)))
    with pytest.raises(StructureError, match=r"residual\(widen, context\): input must be a pair \(x, context\)"):
        residual(widen, context=True).fwd((), np.ones((3, 2)))
    lone = PreLens(lambda p, s: s, lambda m, da: da, name="lone")  # returns no pairs
    with pytest.raises(StructureError, match=r"lone"):
        residual(lone).fwd((), np.ones(2))
    with pytest.raises(StructureError, match=r"lone"):
        residual(lone).bwd((), np.ones(2))


def test_residual_with_context_passes_the_context_to_f():
    rng = np.random.default_rng(1)
    from prelens.nn import cross_attention

    ca = cross_attention(4, 2)
    res = residual(ca, context=True)
    p = ca.init(rng)
    xc = (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)))
    assert np.allclose(res.fwd(p, xc)[1], xc[0] + ca.fwd(p, xc)[1])
    check_vjp(res, p, xc, rng=rng)
    assert set(attention_weights(res, res.fwd(p, xc)[0])) == {"attention"}


@settings(max_examples=25)
@given(st.integers(1, 4), st.integers(1, 6), st.sampled_from([np.float64, np.float32]), seeds())
def test_fused_feed_forward_equals_dense_relu_dense(d, f, dtype, seed):
    rng = np.random.default_rng(seed)
    fused, composed = feed_forward(d, f, dtype=dtype), feed_forward_composed(d, f, dtype=dtype)
    p = fused.init(rng)
    p = p._replace(hidden=p.hidden._replace(bias=rng.standard_normal(f).astype(dtype)))
    x = rng.standard_normal((2, 3, d)).astype(dtype)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {}
    check_lens_equal("feed_forward = chain(dense, relu, dense)", remat(composed), remat(fused), p, x, rng=rng, **tol)
    assert fused.fwd(p, x)[1].dtype == dtype
    if dtype == np.float64:
        check_lens_laws(fused, p, x, rng=rng)


def test_feed_forward_rejects_bad_parameters():
    ffn = feed_forward(4, 8)
    with pytest.raises(
        ShapeError, match=r"feed_forward\(4→8→4\): parameters at \.hidden\.weight: expected f64\[4,8\], got f64\[4,6\]"
    ):
        ffn.fwd(feed_forward(4, 6).init(0), np.ones((1, 4)))
    with pytest.raises(StructureError, match=r"feed_forward\(4→8→4\): parameters: expected FeedForwardParams"):
        ffn.fwd((), np.ones((1, 4)))
    with pytest.raises(DTypeError, match=r"feed_forward\(4→8→4\): input"):
        ffn.fwd(ffn.init(0), np.ones((1, 4), np.float32))


# ------------------------------------------------------------------ blocks


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_blocks_are_correct_derivatives(norm):
    rng = np.random.default_rng(2)
    enc = encoder_block(4, 2, 8, norm=norm)
    x = rng.standard_normal((2, 3, 4))
    p = enc.init(rng)
    assert isinstance(p, EncoderBlockParams)
    check_vjp(enc, p, x, rng=rng)
    check_lens_laws(encoder_block(4, 2, 8, causal=True, norm=norm), p, x, rng=rng, vjp=False)
    dec = decoder_block(4, 2, 8, norm=norm)
    q = dec.init(rng)
    assert isinstance(q, DecoderBlockParams)
    ym = (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)))
    check_vjp(dec, q, ym, rng=rng)
    m, (y, mem) = dec.fwd(q, ym)
    assert mem is ym[1] and y.shape == (2, 3, 4)
    assert sorted(attention_weights(dec, m)) == ["cross", "self"]


def test_post_ln_block_follows_the_paper():
    rng = np.random.default_rng(3)
    blk = encoder_block(4, 2, 8)
    p = blk.init(rng)
    x = rng.standard_normal((2, 3, 4))
    mha, ffn, ln = multi_head_attention(4, 2), feed_forward(4, 8), layer_norm(4)
    h = ln.fwd(p.norm1, x + mha.fwd(p.attention, x)[1])[1]
    expected = ln.fwd(p.norm2, h + ffn.fwd(p.feed_forward, h)[1])[1]
    assert np.allclose(blk.fwd(p, x)[1], expected)
    pre = encoder_block(4, 2, 8, norm="pre")
    h = x + mha.fwd(p.attention, ln.fwd(p.norm1, x)[1])[1]
    expected = h + ffn.fwd(p.feed_forward, ln.fwd(p.norm2, h)[1])[1]
    assert np.allclose(pre.fwd(p, x)[1], expected)


# ------------------------------------------------------------------- models


def _small_lm(norm="post", positional="learned", dtype=np.float64):
    return decoder_lm(7, 4, 2, 8, 2, 6, norm=norm, positional=positional, dtype=dtype)


@pytest.mark.parametrize("norm,positional", [("post", "learned"), ("pre", "sinusoidal")])
def test_whole_lm_is_a_correct_derivative_in_every_parameter_and_the_input_embeddings(norm, positional):
    rng = np.random.default_rng(4)
    lm = _small_lm(norm, positional)
    p = lm.init(rng)
    p = p._replace(unembedding=p.unembedding._replace(bias=rng.standard_normal(7)))
    ids = rng.integers(0, 7, (2, 5))
    labels = rng.integers(0, 7, (2, 5))
    labels[:, 0] = -1
    model = lm >> token_cross_entropy()
    check_vjp(model, (labels, p), ids, rng=rng)
    check_vjp_every_leaf(model, (labels, p), ids, rng)
    # From the input embeddings on: the same chain without its token embedding, on float inputs.
    body = chain(*lm.parts[0].parts[1:]) >> token_cross_entropy()
    inner = lm.parts[0].fwd  # the chain under the named parameters
    x = p.embedding[ids]
    q = (labels, [p.positions, *p.blocks, *([p.norm] if norm == "pre" else []), p.unembedding])
    check_vjp(body, q, x, rng=rng)
    assert inner is not None


@settings(max_examples=20)
@given(st.integers(1, 5), st.sampled_from(["post", "pre"]), seeds())
def test_changing_token_t_never_changes_outputs_or_losses_before_t(t, norm, seed):
    rng = np.random.default_rng(seed)
    lm = _small_lm(norm)
    p = lm.init(rng)
    ids = rng.integers(0, 7, (2, 6))
    changed = ids.copy()
    changed[:, t] = (changed[:, t] + rng.integers(1, 7, 2)) % 7
    a, b = lm.fwd(p, ids)[1], lm.fwd(p, changed)[1]
    assert np.array_equal(a[:, :t], b[:, :t])
    assert not np.allclose(a[:, t:], b[:, t:])
    labels = rng.integers(0, 7, (2, 6))
    labels[:, t:] = -1  # only the positions before t count
    ce = token_cross_entropy()
    assert ce.fwd(labels, a)[1] == ce.fwd(labels, b)[1]
    model = lm >> ce
    (_, g1), _ = vjp(model, (labels, p), ids)[1](1.0)
    (_, g2), _ = vjp(model, (labels, p), changed)[1](1.0)
    assert tree_allclose(g1.blocks, g2.blocks, rtol=0, atol=0)


def test_lm_attention_weights_are_causal_distributions_by_block():
    rng = np.random.default_rng(5)
    lm = _small_lm()
    m, _ = lm.fwd(lm.init(rng), rng.integers(0, 7, (3, 4)))
    weights = attention_weights(lm, m)
    assert sorted(weights) == ["block0.self", "block1.self"]
    for w in weights.values():
        assert w.shape == (3, 2, 4, 4)
        assert np.allclose(w.sum(axis=-1), 1.0)
        assert np.all(w[..., np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] == 0.0)
    # found through >> as well: the residue of lm >> loss is (lm's residue, the loss's)
    model = lm >> token_cross_entropy()
    labels = rng.integers(0, 7, (3, 4))
    m2, _ = model.fwd((labels, lm.init(rng)), rng.integers(0, 7, (3, 4)))
    assert sorted(attention_weights(model, m2)) == ["block0.self", "block1.self"]
    with pytest.raises(StructureError, match="is not a residue of this model"):
        attention_weights(lm, m2)


def test_encoder_decoder_is_a_correct_derivative_and_the_decoder_is_causal():
    rng = np.random.default_rng(6)
    ed = encoder_decoder(5, 6, 4, 2, 8, 2, 5)
    p = ed.init(rng)
    src, tgt = rng.integers(0, 5, (2, 4)), rng.integers(0, 6, (2, 3))
    labels = rng.integers(0, 6, (2, 3))
    check_vjp(ed >> token_cross_entropy(), (labels, p), (src, tgt), rng=rng)
    m, logits = ed.fwd(p, (src, tgt))
    assert logits.shape == (2, 3, 6)
    assert sorted(attention_weights(ed, m)) == [
        "decoder0.cross",
        "decoder0.self",
        "decoder1.cross",
        "decoder1.self",
        "encoder0.self",
        "encoder1.self",
    ]
    assert attention_weights(ed, m)["decoder1.cross"].shape == (2, 2, 3, 4)
    changed = tgt.copy()
    changed[:, 2] = (changed[:, 2] + 1) % 6
    assert np.array_equal(ed.fwd(p, (src, changed))[1][:, :2], logits[:, :2])
    other = src.copy()
    other[:, 3] = (other[:, 3] + 1) % 5  # the encoder sees everything: every target position changes
    assert not np.allclose(ed.fwd(p, (other, tgt))[1][:, 0], logits[:, 0])
    pre = encoder_decoder(5, 6, 4, 2, 8, 1, 5, norm="pre", positional="sinusoidal")
    check_vjp(pre, pre.init(rng), (src, tgt), rng=rng)
    assert "sinusoidal" in repr(pre) and "sinusoidal" not in repr(ed)  # two models that differ say so


def test_float32_end_to_end():
    rng = np.random.default_rng(7)
    lm = _small_lm(dtype=np.float32)
    p = lm.init(rng)
    assert {leaf.dtype for leaf in tree_leaves(p)} == {np.dtype(np.float32)}
    labels = rng.integers(0, 7, (2, 5))
    loss, pullback = vjp(lm >> token_cross_entropy(), (labels, p), rng.integers(0, 7, (2, 5)))
    (_, grads), _ = pullback(np.float64(1.0))  # even a float64 seed does not up-cast
    assert loss.dtype == np.float32
    assert {leaf.dtype for leaf in tree_leaves(grads)} == {np.dtype(np.float32)}


def test_backward_passes_are_pure():
    rng = np.random.default_rng(8)
    lm = _small_lm()
    model = lm >> token_cross_entropy()
    p = lm.init(rng)
    ids, labels = rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))
    m, _ = model.fwd((labels, p), ids)
    m_before, p_before = copy.deepcopy(m), copy.deepcopy(p)
    first = model.bwd(m, 1.0)
    second = model.bwd(m, 1.0)
    assert tree_allclose(first, second, rtol=0, atol=0)
    assert tree_allclose(m, m_before, rtol=0, atol=0) and tree_allclose(p, p_before, rtol=0, atol=0)
    model.fwd((labels, p), ids)  # a later call does not overwrite what was returned
    assert tree_allclose(first, second, rtol=0, atol=0)


def test_lm_errors_name_the_lens():
    lm = _small_lm()
    p = lm.init(0)
    with pytest.raises(StructureError, match=r"token_embedding\(7, 4\): token ids must lie in \[0, 7\), got 9"):
        lm.fwd(p, np.array([[1, 9]]))
    with pytest.raises(ShapeError, match=r"positional_embedding\(6, 4\): input: expected at most 6 positions"):
        lm.fwd(p, np.zeros((1, 7), np.int64))
    with pytest.raises(DTypeError, match="token_embedding"):
        lm.fwd(p, np.zeros((1, 3)))
    with pytest.raises(StructureError, match="decoder_lm: d_model must be divisible"):
        decoder_lm(7, 6, 4, 8, 1, 5)
    with pytest.raises(StructureError, match="norm must be 'post' or 'pre'"):
        decoder_lm(7, 4, 2, 8, 1, 5, norm="middle")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "fn"),
    [
        (lambda eps: decoder_lm(7, 4, 2, 8, 1, 5, eps=eps), "decoder_lm"),
        (lambda eps: encoder_decoder(5, 7, 4, 2, 8, 1, 5, eps=eps), "encoder_decoder"),
        (lambda eps: encoder_block(4, 2, 8, eps=eps), "encoder_block"),
        (lambda eps: decoder_block(4, 2, 8, eps=eps), "decoder_block"),
    ],
)
def test_a_bad_eps_is_named_by_the_constructor_called(build, fn):
    with pytest.raises(StructureError, match=rf"^{fn}: eps must be positive, got 0\.0$"):
        build(0.0)


@pytest.mark.parametrize(
    "build",
    [
        lambda eps: decoder_lm(7, 4, 2, 8, 1, 5, eps=eps),
        lambda eps: encoder_decoder(5, 7, 4, 2, 8, 1, 5, eps=eps),
        lambda eps: encoder_block(4, 2, 8, eps=eps),
        lambda eps: decoder_block(4, 2, 8, eps=eps),
    ],
)
def test_a_model_with_another_eps_says_so_in_its_name(build):
    """Every option off its default is in the name (as layer_norm's own is): two models that compute different
    functions do not print alike (in `prelens train`'s report, a model file's metadata, summaries)."""
    assert ", eps=1e-06" in build(1e-6).name and "eps" not in build(1e-5).name


def test_a_checkpoint_of_one_eps_does_not_resume_a_model_of_another(tmp_path):
    """fit's resume refuses a checkpoint of another model by its printed name: with eps not in it, a run of a model
    with eps=1e-3 resumed from the checkpoint of one with eps=1e-5, no error."""
    from prelens.errors import CheckpointError
    from prelens.learn import adam
    from prelens.train import fit

    ids = np.random.default_rng(0).integers(0, 7, (8, 5))
    data, path = (ids, np.roll(ids, -1, axis=1)), str(tmp_path / "run.npz")
    fit(_small_lm(), token_cross_entropy(), data, 1, 8, adam(1e-3), 0, progress=False, checkpoint_path=path)
    other = decoder_lm(7, 4, 2, 8, 2, 6, eps=1e-3)
    with pytest.raises(CheckpointError, match="another model"):
        fit(other, token_cross_entropy(), data, 2, 8, adam(1e-3), 0, progress=False, resume=path)


def test_a_misfit_parameter_deep_in_a_model_is_named_by_its_path():
    lm = _small_lm()
    p = lm.init(0)
    blocks = list(p.blocks)
    blocks[0] = blocks[0]._replace(attention=blocks[0].attention._replace(W_V=np.zeros((4, 3))))
    with pytest.raises(
        ShapeError,
        match=r"(?s)^projections\(4, heads=2\): parameters at \.W_V: expected f64\[4,4\], got f64\[4,3\].*\n  the parameters given to "
        r"decoder_lm\(.*\) differ from what its init makes at \.blocks\[0\]\.attention\.W_V: "
        r"expected shape \(4, 4\), got shape \(4, 3\)$",
    ) as info:
        lm.fwd(p._replace(blocks=blocks), np.array([[1, 2]]))
    assert str(info.value).count("the parameters given to") == 1  # the outermost model's path only
    f32 = p._replace(unembedding=p.unembedding._replace(bias=p.unembedding.bias.astype(np.float32)))
    with pytest.raises(PrelensError, match=r"at \.unembedding\.bias: expected f64\[7\], got f32\[7\]$"):
        lm.fwd(f32, np.array([[1, 2]]))


# --------------------------------------------------------------------- loss


def test_token_cross_entropy_averages_over_counted_positions_only():
    rng = np.random.default_rng(9)
    logits = rng.standard_normal((2, 3, 4))
    labels = np.array([[1, -1, 3], [-1, -1, 0]])
    ce = token_cross_entropy()
    m, loss = ce.fwd(labels, logits)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -(logp[0, 0, 1] + logp[0, 2, 3] + logp[1, 2, 0]) / 3
    assert np.isclose(loss, expected)
    _, ds = ce.bwd(m, 1.0)
    assert not ds[0, 1].any() and not ds[1, :2].any()
    check_vjp(ce, labels, logits)
    assert ce.fwd(np.full((2, 3), -1), logits)[1] == 0.0
    with pytest.raises(StructureError, match=r"token_cross_entropy: labels must lie in \[0, 4\)"):
        ce.fwd(np.array([[1, 4, 0], [0, 0, 0]]), logits)


def test_generate_is_greedy_and_extends_the_prompt():
    lm = _small_lm()
    p = lm.init(0)
    out = generate(lm, p, np.array([[1, 2]]), 3)
    assert out.shape == (1, 5) and np.array_equal(out[:, :2], [[1, 2]])
    nxt = lm.fwd(p, out[:, :4])[1][:, -1].argmax(-1)
    assert out[0, 4] == nxt[0]
    sampled = generate(lm, p, np.array([[1]]), 10, max_len=6, temperature=1.0, rng=0)
    assert sampled.shape == (1, 11) and sampled.max() < 7


def test_generate_takes_a_prompt_of_another_array_library():
    """A model of another library is prompted with its ids: they were refused as "must be an integer array (token
    ids), got i64[1,2] (array_api_strict)", an integer array. The ids come back as numpy's, as documented."""
    import array_api_strict as xp

    from prelens.backend import to_backend

    lm = decoder_lm(7, 4, 2, 8, 1, 6)
    p = lm.init(0)
    expected = generate(lm, p, np.array([[1, 2]]), 3)
    for params in (p, to_backend(p, xp)):
        out = generate(lm, params, xp.asarray([[1, 2]]), 3)
        assert type(out) is np.ndarray and np.array_equal(out, expected)


def test_generate_refuses_windows_longer_than_the_model_takes_before_the_first_step(monkeypatch):
    """A prompt plus steps past the model's positions fails at once (one probe of the longest window), not after
    the steps that fit have been run."""
    import prelens.nn._transformer as transformer

    calls = []
    monkeypatch.setattr(transformer, "forward", lambda *a: calls.append(a[2].shape) or forward(*a))
    lm = _small_lm()  # 6 positions
    with pytest.raises(ShapeError, match=r"^generate: 2 prompt tokens and 9 steps give the model windows of up to 10 "):
        generate(lm, lm.init(0), np.array([[1, 2], [3, 4]]), 9)
    assert calls == [(1, 10)]
    calls.clear()
    assert generate(lm, lm.init(0), np.array([[1, 2]]), 9, max_len=6).shape == (1, 11)  # a sliding window fits
    assert calls[0] == (1, 6) and len(calls) == 10


def test_lm_params_are_named():
    p = _small_lm("pre", "sinusoidal").init(0)
    assert isinstance(p, LMParams) and p.positions == () and p.norm.gain.shape == (4,)
    assert p.blocks[1].attention.W_Q.shape == (4, 4)


@pytest.mark.parametrize(
    ("model", "array"),
    [
        (encoder_decoder(5, 7, 4, 2, 8, 1, 6), np.ones((2, 4), np.int64)),  # target ids only, a batch of 2
        (decoder_block(4, 2, 8), np.ones((2, 3, 4))),  # y only, without the memory
    ],
)
def test_a_model_of_a_pair_refuses_an_array_whose_first_axis_is_2(model, array):
    """``(source, target)``: a batch of two sequences is not a pair; it was split along its first axis and run
    as source = row 0, target = row 1 (logits (T, vocab), no error). A batch of 3 was refused already."""
    for ids in (array, array[:1].repeat(3, axis=0)):
        with pytest.raises(StructureError, match=r"expected tuple of 2, got [if]64\["):
            model.fwd(model.init(0), ids)


def test_a_pair_delta_is_not_an_array_whose_first_axis_is_2():
    block = decoder_block(4, 2, 8)
    m, (y, _) = block.fwd(block.init(0), (np.ones((2, 3, 4)), np.ones((2, 5, 4))))
    with pytest.raises(StructureError, match=r"output delta: expected a tuple of 2, got f64\[2,3,4\]"):
        block.bwd(m, np.ones_like(y))
