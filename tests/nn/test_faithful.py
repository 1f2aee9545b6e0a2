"""The post's network, faithfully: golden values, the two representations, laws and gradients."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prelens.faithful._network as faithful
from prelens import (
    LawError,
    PrelensError,
    ShapeError,
    StructureError,
    TriLens,
    backward,
    batch_n,
    dimap_m,
    dimap_p,
    dimap_s,
    forward,
    from_tamb,
    lunit,
    runit,
    unlunit,
    unrunit,
    vjp,
)
from prelens.core import tree_add, tree_leaves, tree_map, tree_scale, tree_zeros_like
from prelens.datasets import TOY_XS, TOY_YS
from prelens.faithful import (
    Para,
    activ_l,
    activ_t,
    affine_t,
    bias_l,
    bias_t,
    branch_t,
    init_mlp,
    init_para,
    layer,
    linear_l,
    linear_t,
    loss_l,
    make_mlp,
    mk_para,
    neuron_l,
    neuron_t,
    un_para,
)
from prelens.faithful._network import affine_l, layer_l, make_mlp_l
from prelens.faithful._train import batch_loss_l
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds
from tests.conftest import default_recursion_limit


def random_para(m: int, rng: np.random.Generator) -> Para:
    """Parameters with a non-zero bias (``init_para`` starts the bias at 0)."""
    return Para(float(rng.standard_normal()), rng.standard_normal(m))


def vec(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=np.float64)


# ------------------------------------------------------------ golden values
# From the original Haskell code (float64). Values given to 8 decimals are off
# by at most 5e-9 from the exact ones, so atol = 1e-8 holds for all of them.

GOLDEN = 1e-8


def test_golden_affine_forward():
    """``affine_t``'s parameters are the post's ``(bias, weights)``: (q, p) of ``triCompose linearT biasT``."""
    _, a = from_tamb(affine_t(2)).fwd((0.01, vec(-0.1, 0.1)), vec(2, 30))
    assert a == pytest.approx(2.81, abs=GOLDEN)


def test_golden_neuron_forward():
    a = forward(neuron_t(2), Para(0.01, vec(-0.1, 0.1)), vec(2, 30))
    assert a == pytest.approx(0.99277689893, abs=GOLDEN)


@pytest.mark.parametrize("form", ["pre-lens", "TriLens"])
def test_golden_neuron_backward(form):
    neuron = neuron_l(2) if form == "pre-lens" else from_tamb(neuron_t(2))
    dp, ds = backward(neuron, Para(0.1, vec(1.3, -1.4)), vec(0.21, 0.33), 1.0)
    assert dp.bias == pytest.approx(0.99212064, abs=GOLDEN)
    np.testing.assert_allclose(dp.weight, [0.20834533, 0.32739981], rtol=0, atol=GOLDEN)
    np.testing.assert_allclose(ds, [1.28975683, -1.38896890], rtol=0, atol=GOLDEN)


@pytest.mark.parametrize("form", ["pre-lens", "TriLens"])
def test_golden_neuron_forward_and_backward(form):
    neuron = neuron_l(2) if form == "pre-lens" else from_tamb(neuron_t(2))
    a, pullback = vjp(neuron, Para(0.5, vec(0.5, -0.5)), vec(1, 0))
    assert a == pytest.approx(0.7615941559557649, abs=1e-15)  # tanh 1, given to full precision
    dp, ds = pullback(1.0)
    assert dp.bias == pytest.approx(0.41997434, abs=GOLDEN)
    np.testing.assert_allclose(dp.weight, [0.41997434, 0.0], rtol=0, atol=GOLDEN)
    np.testing.assert_allclose(ds, [0.20998717, -0.20998717], rtol=0, atol=GOLDEN)


# ------------------------------------------------ types and tuple conventions


def test_para_is_a_tree():
    p, q = Para(1.0, vec(1, 2)), Para(0.5, vec(3, 4))
    assert tree_add(p, q).bias == 1.5 and isinstance(tree_add(p, q), Para)
    np.testing.assert_array_equal(tree_scale(2.0, p).weight, [2, 4])
    assert tree_zeros_like(p).bias == 0.0 and not tree_zeros_like(p).weight.any()
    b, w = un_para(mk_para((0.25, [1.0, 2.0])))
    assert b == 0.25 and w.dtype == np.float64 and list(w) == [1.0, 2.0]


def test_linear_residue_is_input_then_weights():
    (s, p), a = linear_l(2).fwd(vec(3, 4), [1.0, 2.0])
    assert a == 11.0 and list(s) == [1, 2] and list(p) == [3, 4]
    ds_p = linear_l(2).bwd((s, p), 2.0)
    np.testing.assert_array_equal(ds_p[0], [2, 4])  # dp = da·s
    np.testing.assert_array_equal(ds_p[1], [6, 8])  # ds = da·p


def test_activ_residue_is_the_pre_activation():
    m, a = activ_l.fwd((), 0.3)
    assert m == 0.3 and a == pytest.approx(np.tanh(0.3))


def test_neuron_repacks_parameters_and_residue_as_the_post():
    m, _ = neuron_l(2).fwd(Para(0.5, vec(2, 3)), vec(1, -1))
    (s, w), z = m
    assert list(s) == [1, -1] and list(w) == [2, 3] and z == pytest.approx(-0.5)


def test_neuron_l_is_the_posts_f_prime_b_prime():
    """``neuron_l`` equals the post's ``f'``/``b'`` written out literally around the composite."""
    f_b = (linear_l(2) >> bias_l) >> activ_l

    def f_prime(para, s):
        ((vv, ()), d), a = f_b.fwd(((), (para.bias, para.weight)), s)
        return (vv, d), a

    def b_prime(m, da):
        (vv, d) = m
        ((), (d_, w_)), ds = f_b.bwd(((vv, ()), d), da)
        return Para(d_, w_), ds

    literal = faithful.PreLens(f_prime, b_prime, "neuronL")
    rng = np.random.default_rng(3)
    check_lens_equal("neuron_l = post's neuronL", literal, neuron_l(2), random_para(2, rng), rng.standard_normal(2))


def test_mlp_parameters_and_residues_are_lists_in_layer_order():
    params = init_mlp(3, [4, 2, 1], np.random.default_rng(0))
    assert [len(ps) for ps in params] == [4, 2, 1]
    assert [p.weight.shape for p in (params[0][0], params[1][0], params[2][0])] == [(3,), (4,), (2,)]
    m, out = from_tamb(make_mlp(3, [4, 2, 1])).fwd(params, TOY_XS[0])
    assert [len(r) for r in m] == [4, 2, 1] and len(out) == 1
    ((s, w), _) = m[1][0]  # second layer, first neuron: its input is the first layer's output
    assert len(s) == 4 and np.array_equal(w, params[1][0].weight)
    assert w is not params[1][0].weight  # a copy: a residue never aliases the caller's parameters


def test_init_is_lecun_normal_and_seeded():
    ps = init_mlp(3, [4, 4, 1], np.random.default_rng(7))
    assert all(p.bias == 0.0 for layer_ps in ps for p in layer_ps)
    again = make_mlp_l(3, [4, 4, 1]).init(np.random.default_rng(7))
    assert all(np.array_equal(a, b) for a, b in zip(tree_leaves(ps), tree_leaves(again)))
    big = init_para(10_000, np.random.default_rng(0)).weight
    assert big.std() == pytest.approx(1 / np.sqrt(10_000), rel=0.05)


# --------------------------------------------- the two representations agree


@st.composite
def neuron_case(draw):
    m = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds()))
    return m, random_para(m, rng), rng.standard_normal(m)


@st.composite
def layer_case(draw):
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(seeds()))
    return m, n, [random_para(m, rng) for _ in range(n)], rng.standard_normal(m)


@st.composite
def mlp_case(draw):
    m_in = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    rng = np.random.default_rng(draw(seeds()))
    params = [[random_para(m, rng) for _ in range(n)] for m, n in zip([m_in, *sizes], sizes)]
    return m_in, sizes, params, rng.standard_normal(m_in)


@st.composite
def loss_case(draw):
    batch, width = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(seeds()))
    return [rng.standard_normal(width) for _ in range(batch)], [rng.standard_normal(width) for _ in range(batch)]


@given(neuron_case())
def test_pieces_agree_with_their_trilens(c):
    m, p, s = c
    check_lens_equal("linear_t = linear_l", linear_l(m), from_tamb(linear_t(m)), p.weight, s)
    check_lens_equal("bias_t = bias_l", bias_l, from_tamb(bias_t), p.bias, float(s[0]))
    check_lens_equal("activ_t = activ_l", activ_l, from_tamb(activ_t), (), float(s[0]))
    check_lens_equal("affine_t = affine_l", affine_l(m), from_tamb(affine_t(m)), un_para(p), s)
    check_lens_equal("neuron_t = neuron_l", neuron_l(m), from_tamb(neuron_t(m)), p, s)


@given(layer_case())
def test_layer_agrees_with_its_prelens(c):
    m, n, ps, s = c
    check_lens_equal("layer = layer_l", layer_l(m, n), from_tamb(layer(m, n)), ps, s)


@settings(max_examples=30)
@given(mlp_case())
def test_make_mlp_agrees_with_its_prelens(c):
    m_in, sizes, ps, s = c
    check_lens_equal("make_mlp = make_mlp_l", make_mlp_l(m_in, sizes), from_tamb(make_mlp(m_in, sizes)), ps, s)


@settings(max_examples=20)
@given(seeds(), st.integers(1, 4))
def test_trilens_batch_of_the_mlp_agrees_with_the_batched_prelens(seed, n):
    """``from_tamb(batch_n(n, make_mlp))`` (the post's form) = ``batch_n(n, from_tamb(make_mlp))`` (what training runs)."""
    rng = np.random.default_rng(seed)
    mlp = make_mlp(3, [4, 4, 1])
    params, xs = init_mlp(3, [4, 4, 1], rng), [rng.standard_normal(3) for _ in range(n)]
    ys = [rng.standard_normal(1) for _ in range(n)]
    with default_recursion_limit():
        check_lens_equal(
            "batch_n on the TriLens = batch_n on the pre-lens",
            from_tamb(batch_n(n, mlp)) >> loss_l,
            batch_loss_l(mlp, n),
            (ys, params),
            xs,
        )


# ------------------------------------------------------------- the law kit


@pytest.mark.parametrize("form", ["pre-lens", "TriLens"])
@given(c=neuron_case())
def test_laws_hold_for_the_neuron_pieces(form, c):
    m, p, s = c
    tri = form == "TriLens"
    pieces = [
        (from_tamb(linear_t(m)) if tri else linear_l(m), p.weight, s),
        (from_tamb(bias_t) if tri else bias_l, p.bias, float(s[0])),
        (from_tamb(activ_t) if tri else activ_l, (), float(s[0])),
        (from_tamb(affine_t(m)) if tri else affine_l(m), un_para(p), s),
        (from_tamb(neuron_t(m)) if tri else neuron_l(m), p, s),
    ]
    for lens, params, x in pieces:
        check_lens_laws(lens, params, x)


@settings(max_examples=20)
@pytest.mark.parametrize("form", ["pre-lens", "TriLens"])
@given(c=layer_case())
def test_laws_hold_for_the_layer(form, c):
    m, n, ps, s = c
    check_lens_laws(from_tamb(layer(m, n)) if form == "TriLens" else layer_l(m, n), ps, s)


@settings(max_examples=25)
@pytest.mark.parametrize("form", ["pre-lens", "TriLens"])
@given(c=mlp_case())
def test_laws_hold_for_the_mlp(form, c):
    m_in, sizes, ps, s = c
    lens = from_tamb(make_mlp(m_in, sizes)) if form == "TriLens" else make_mlp_l(m_in, sizes)
    with default_recursion_limit():  # check_combinators batches the network 3 times
        check_lens_laws(lens, ps, s)


@given(loss_case())
def test_laws_hold_for_the_loss(c):
    g, s = c
    check_lens_laws(loss_l, g, s)


# -------------------------------------------------------------- the loss lens


def test_loss_is_half_the_squared_distance_with_the_stated_backward():
    g, s = [vec(1.0, 0.0), vec(-1.0, 2.0)], [vec(0.5, 1.0), vec(0.0, 0.0)]
    m, loss = loss_l.fwd(g, s)
    assert loss == pytest.approx(0.5 * (0.25 + 1.0 + 1.0 + 4.0))
    dg, ds = loss_l.bwd(m, 3.0)
    for gi, si, dgi, dsi in zip(g, s, dg, ds):
        np.testing.assert_allclose(dsi, 3.0 * (si - gi))
        np.testing.assert_allclose(dgi, -dsi)


def haskell_loss_l(g, s, da):
    """The Haskell repository's ``lossL`` (``PreLens/NNet.hs``), transcribed on lists of floats.

    ``fw (gTruth, s) = ((gTruth, s), sqDist (concat s) (concat gTruth))`` with
    ``sqDist x y = 0.5 * sum (map (^2) (zipWith (-) x y))``;
    ``bw ((gTruth, s), da) = (fmap (fmap negate) delta', delta')`` with
    ``delta' = fmap (fmap (da *)) (zipWith minus s gTruth)``. Returns ``(loss, (dg, ds))``.
    """

    def concat(rows):
        return [float(x) for row in rows for x in row]

    def sq_dist(x, y):
        return 0.5 * sum((xi - yi) ** 2 for xi, yi in zip(x, y))

    delta = [[da * (si - gi) for si, gi in zip(srow, grow)] for srow, grow in zip(s, g)]
    return sq_dist(concat(s), concat(g)), ([[-d for d in row] for row in delta], delta)


@given(loss_case(), st.floats(-3.0, 3.0))
def test_loss_l_is_the_haskell_loss_half_included(c, da):
    """``loss_l`` and the Haskell ``lossL``/``sqDist`` agree: ``L = ½ Σ (s − g)²``, ``ds = da (s − g)``, ``dg = −ds``."""
    g, s = c
    m, loss = loss_l.fwd(g, s)
    want_loss, (want_dg, want_ds) = haskell_loss_l(g, s, da)
    assert loss == pytest.approx(want_loss, rel=1e-12, abs=1e-300)
    dg, ds = loss_l.bwd(m, da)
    for got, want in zip([*dg, *ds], [*want_dg, *want_ds]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_the_haskell_loss_is_its_own_exact_gradient_and_a_missing_half_would_not_be():
    """The source's backward pass is the derivative of its forward pass (the ½ is in ``sqDist``);
    a forward pass without the ½ (a slip the source does not make) is caught by ``check_vjp``."""

    def bwd(m, da):
        dg, ds = haskell_loss_l(*m, da)[1]
        return [np.array(d) for d in dg], [np.array(d) for d in ds]

    def kept(g, s):  # the residue keeps copies: a residue never aliases the caller's arrays
        return [np.array(x) for x in g], [np.array(x) for x in s]

    haskell = faithful.PreLens(lambda g, s: (kept(g, s), haskell_loss_l(g, s, 1.0)[0]), bwd, "lossL")
    no_half = faithful.PreLens(lambda g, s: (kept(g, s), 2 * haskell_loss_l(g, s, 1.0)[0]), bwd, "no_half")
    g, s = [vec(1.0, -2.0), vec(0.5, 0.0)], [vec(0.25, 1.0), vec(-1.0, 3.0)]
    check_vjp(haskell, g, s)
    check_vjp(loss_l, g, s)
    with pytest.raises(LawError, match="no_half: bwd is not the reverse derivative"):
        check_vjp(no_half, g, s)


# ------------------------------------------------- gradients of the whole MLP


def flatten(tree) -> np.ndarray:
    return np.concatenate([np.ravel(x) for x in tree_leaves(tree)])


def unflatten(like, flat: np.ndarray):
    pos = 0

    def take(x):
        nonlocal pos
        size = np.size(x)
        chunk = flat[pos : pos + size]
        pos += size
        return float(chunk[0]) if np.ndim(x) == 0 else chunk.reshape(np.shape(x))

    return tree_map(take, like)


def gradient_and_differences(mlp, params, xs, ys, eps=1e-6):
    """The gradient of the batch loss by the trace (da = 1) and by central differences, one parameter at a time."""
    net = batch_loss_l(mlp, len(xs))
    _, pullback = vjp(net, (ys, params), xs)
    (_, d_params), _ = pullback(1.0)
    theta = flatten(params)

    def loss(t):
        return net.fwd((ys, unflatten(params, t)), xs)[1]

    numeric = np.array([(loss(theta + eps * e) - loss(theta - eps * e)) / (2 * eps) for e in np.eye(theta.size)])
    return flatten(d_params), numeric


def layer_slices(m_in, sizes):
    """Index ranges of each layer's parameters in the flattened tree."""
    out, pos = [], 0
    for m, n in zip([m_in, *sizes], sizes):
        out.append(slice(pos, pos + n * (m + 1)))
        pos += n * (m + 1)
    return out


TOY = dict(xs=list(TOY_XS), ys=list(TOY_YS))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_parameter_gradient_matches_central_differences(seed):
    params = init_mlp(3, [4, 4, 1], np.random.default_rng(seed))
    params = tree_map(lambda x: x + 0.1, params)  # non-zero biases too
    grad, numeric = gradient_and_differences(make_mlp(3, [4, 4, 1]), params, **TOY)
    assert grad.size == 3 * 4 + 4 + 4 * 4 + 4 + 4 + 1
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


@settings(max_examples=20)
@given(seeds(), st.integers(1, 4))
def test_the_posts_trilens_batch_passes_check_vjp(seed, n):
    rng = np.random.default_rng(seed)
    net = from_tamb(batch_n(n, make_mlp(3, [4, 4, 1]))) >> loss_l
    params = tree_map(lambda x: x + rng.standard_normal(np.shape(x)), init_mlp(3, [4, 4, 1], rng))
    with default_recursion_limit():
        check_vjp(net, ([rng.standard_normal(1) for _ in range(n)], params), [rng.standard_normal(3) for _ in range(n)])


def haskell_branch_t(n: int) -> TriLens:
    """The original ``branch``: ``dimapM unLunit lunit . dimapP runit unRunit . dimapS (replicate n) mconcat``.

    ``mconcat`` glues the ``n`` deltas into one list of length ``n·m``; the next
    ``vecLens`` reads as many as it has neurons, the first copy's: the rest is lost.
    """

    def mconcat_as_read(ds):
        return np.concatenate(ds)[: len(ds[0])]

    def run(t):
        return dimap_m(unlunit, lunit, dimap_p(runit, unrunit, dimap_s(lambda s: [s] * n, mconcat_as_read, t)))

    return TriLens(run, f"haskell_branch_t({n})")


def test_the_original_concatenating_branch_fails_the_gradient_check(monkeypatch):
    """The test that exposes the original defect: with ``mconcat`` the first layer's gradient is wrong."""
    params = tree_map(lambda x: x + 0.1, init_mlp(3, [4, 4, 1], np.random.default_rng(0)))
    net_args = ((list(TOY_YS), params), list(TOY_XS))
    with default_recursion_limit():
        check_vjp(from_tamb(batch_n(4, make_mlp(3, [4, 4, 1]))) >> loss_l, *net_args)  # ours passes

    monkeypatch.setattr(faithful, "branch_t", haskell_branch_t)
    original = make_mlp(3, [4, 4, 1])
    with default_recursion_limit(), pytest.raises(LawError, match=r"first wrong leaf is p\[1\]\[0\]"):  # θ, first layer
        check_vjp(from_tamb(batch_n(4, original)) >> loss_l, *net_args)

    grad, numeric = gradient_and_differences(original, params, **TOY)
    first, second, last = layer_slices(3, [4, 4, 1])
    np.testing.assert_allclose(grad[second], numeric[second], rtol=1e-5, atol=1e-8)  # after the last fan-out: right
    np.testing.assert_allclose(grad[last], numeric[last], rtol=1e-5, atol=1e-8)
    assert not np.allclose(grad[first], numeric[first], rtol=1e-3, atol=1e-6)  # before it: lost


def test_the_batch_gradient_is_the_sum_of_the_samples_gradients():
    mlp, params = make_mlp(3, [4, 4, 1]), init_mlp(3, [4, 4, 1], np.random.default_rng(5))
    whole, _ = gradient_and_differences(mlp, params, **TOY)
    per_sample = []
    for x, y in zip(TOY["xs"], TOY["ys"]):
        _, pullback = vjp(batch_loss_l(mlp, 1), ([y], params), [x])
        per_sample.append(flatten(pullback(1.0)[0][1]))
    np.testing.assert_allclose(whole, np.sum(per_sample, axis=0), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- no mutation


def test_bwd_mutates_nothing():
    mlp = from_tamb(make_mlp(3, [4, 4, 1]))
    params = init_mlp(3, [4, 4, 1], np.random.default_rng(0))
    m, _ = mlp.fwd(params, TOY_XS[0].copy())
    before = [np.copy(x) for x in tree_leaves(m)]
    mlp.bwd(m, np.ones(1))
    mlp.bwd(m, np.ones(1))
    assert all(np.array_equal(a, b) for a, b in zip(before, tree_leaves(m)))


# --------------------------------------------------------------------- errors


def test_wrong_input_length_names_the_lens_the_expected_and_the_actual():
    with pytest.raises(ShapeError, match=r"linear_l\(3\): input: expected a vector of length 3, got f64\[2\]"):
        from_tamb(make_mlp(3, [4, 1])).fwd(init_mlp(3, [4, 1], np.random.default_rng(0)), [1.0, 2.0])
    with pytest.raises(ShapeError, match=r"linear_l\(2\): weights: expected a vector of length 2, got f64\[3\]"):
        neuron_l(2).fwd(Para(0.0, np.zeros(3)), [1.0, 2.0])


def test_wrong_parameters_are_named():
    with pytest.raises(StructureError, match=r"make_mlp\(3, \[4, 1\]\): parameters must be a list of 2 layers"):
        from_tamb(make_mlp(3, [4, 1])).fwd(init_mlp(3, [4], np.random.default_rng(0)), TOY_XS[0])
    with pytest.raises(StructureError, match=r"must be Para\(bias, weight\), got tuple of 2"):
        neuron_l(2).fwd((0.0, np.zeros(2)), [1.0, 2.0])


def test_loss_names_what_does_not_match():
    with pytest.raises(StructureError, match=r"loss_l: output must be a list of length 2, got length 1"):
        loss_l.fwd([[1.0], [2.0]], [[1.0]])
    with pytest.raises(ShapeError, match=r"loss_l: output 0: expected length 1 like its ground truth, got f64\[2\]"):
        loss_l.fwd([[1.0]], [[1.0, 2.0]])
    with pytest.raises(PrelensError, match="loss_l: cannot create parameters"):
        loss_l.init(0)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_sizes_must_be_positive_ints(bad):
    with pytest.raises(PrelensError, match="must be an int >= 1"):
        make_mlp(3, [4, bad])
    with pytest.raises(PrelensError, match="must be an int >= 1"):
        linear_l(bad)


def test_an_mlp_of_numpy_sizes_is_named_and_saved_as_one_of_ints(tmp_path):
    """``np.int64`` sizes showed in the name (``make_mlp(3, [np.int64(4), 1])``), so save_model refused the lens:
    its description rebuilt ``make_mlp(3, [4, 1])``, a lens of another name."""
    from prelens import from_tamb, load_model, save_model

    sizes = [np.int64(4), 1]
    for lens in (from_tamb(make_mlp(3, sizes)), make_mlp_l(3, sizes)):
        assert "np." not in repr(lens)
        save_model(tmp_path / "m.prelens", lens, init_mlp(3, sizes, np.random.default_rng(0)))
        assert repr(load_model(tmp_path / "m.prelens").lens) == repr(lens)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        # branch_t(-1) fanned out to [], branch_t(2.5) failed when run, layer(2, 0) was a layer of no neurons
        (lambda: branch_t(-1), r"^branch_t: n must be an int >= 1, got -1"),
        (lambda: branch_t(2.5), r"^branch_t: n must be an int >= 1, got 2\.5"),
        (lambda: layer(2, 0), r"^layer: n_out must be an int >= 1, got 0"),
        # these named linear_l and its n, which the caller never wrote
        (lambda: neuron_l(0), r"^neuron_l: m_in must be an int >= 1, got 0"),
        (lambda: neuron_t(0), r"^neuron_t: m_in must be an int >= 1, got 0"),
        (lambda: affine_t(0), r"^affine_t: n must be an int >= 1, got 0"),
        (lambda: linear_t(0), r"^linear_t: n must be an int >= 1, got 0"),
    ],
)
def test_a_bad_size_names_the_constructor_called(build, match):
    with pytest.raises(PrelensError, match=match):
        build()


def test_an_mlp_needs_a_layer():
    with pytest.raises(PrelensError, match="at least one layer"):
        make_mlp(3, [])
