"""The checks of issue 13 beyond finite differences, each against a planted defect.

Delta dtypes; a ``bwd`` that reads anything but its residue; a residue that aliases the
caller's input or parameters (``check_no_alias``, a verdict of its own); ``fwd`` or ``bwd``
writing into an argument (named as such); and the rule itself, kept by every lens of the
library: writing into ``p`` or ``s`` after the forward pass never changes the pullback.
"""

import numpy as np
import pytest

from prelens import LawError, PreLens, chain, faithful, from_tamb, nn, vjp
from prelens.core import tree_allclose
from prelens.nn import DenseParams
from prelens.testing import AliasWarning, check_lens_laws, check_no_alias, check_pure, check_vjp
from prelens.testing._random import random_like, scramble_in_place, snapshot

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W = np.array([[0.2, -0.4], [0.7, 0.1], [-0.3, 0.5]])


def matmul(keep=lambda w, x: (w.copy(), x.copy()), back=None, name="matmul"):
    """``x W`` with residue ``keep(w, x)``; ``back(m, da)`` replaces the correct backward pass."""

    def bwd(m, da):
        w, x = m
        return x.T @ da, da @ w.T

    return PreLens(lambda w, x: (keep(w, x), x @ w), back or bwd, name=name)


def test_the_correct_lens_passes_every_check():
    check_pure(matmul(), W, X)
    check_no_alias(matmul(), W, X)
    check_vjp(matmul(), W, X)
    check_lens_laws(matmul(), W, X)


# ------------------------------------------------------------- delta dtypes


def test_a_float32_parameter_delta_for_float64_parameters_is_rejected():
    good = matmul()
    f32 = PreLens(good.fwd, lambda m, da: (good.bwd(m, da)[0].astype(np.float32), good.bwd(m, da)[1]), name="f32")
    with pytest.raises(LawError, match=r"check_vjp: f32: bwd's parameter delta at dp has dtype f32, expected f64"):
        check_vjp(f32, W, X)


def test_an_integer_input_delta_for_a_float_input_is_rejected():
    good = matmul()
    ints = PreLens(good.fwd, lambda m, da: (good.bwd(m, da)[0], np.zeros(X.shape, int)), name="ints")
    with pytest.raises(LawError, match=r"bwd's input delta at ds has dtype i64, expected f64"):
        check_vjp(ints, W, X)


def test_integer_leaves_may_have_any_delta():
    """Labels and ids are data: their deltas (zeros of any dtype) are not checked."""
    check_vjp(nn.softmax_cross_entropy, np.array([0, 2]), X)


# ------------------------------------------------ bwd reads only its residue


def closure_state():
    """fwd remembers its input in a closure and bwd reads it from there: right when run at once."""
    last = {}

    def fwd(w, x):
        last["x"], last["w"] = x.copy(), w.copy()
        return (), x @ w

    return PreLens(fwd, lambda m, da: (last["x"].T @ da, da @ last["w"].T), name="closure")


def tape(pop_first):
    """fwd pushes its input on a tape, bwd pops it: right in one order of the backward passes only."""
    stack = []

    def fwd(w, x):
        stack.append((w.copy(), x.copy()))
        return (), x @ w

    def bwd(m, da):
        w, x = stack.pop(0 if pop_first else -1)
        return x.T @ da, da @ w.T

    return PreLens(fwd, bwd, name="queue" if pop_first else "stack")


@pytest.mark.parametrize(
    ("make", "order"),
    [(closure_state, "reverse"), (lambda: tape(False), "same"), (lambda: tape(True), "reverse")],
    ids=["closure", "stack", "queue"],
)
def test_a_bwd_that_reads_outside_its_residue_is_rejected(make, order):
    bad = make()
    with pytest.raises(LawError, match=rf"{bad!r}: bwd uses something besides its residue: .* in {order} order"):
        check_pure(bad, W, X)
    with pytest.raises(LawError, match="bwd uses something besides its residue"):
        check_lens_laws(make(), W, X)  # a fresh one: the failed check left the tape of the first unbalanced


# --------------------------------------------------------------- aliasing

IN_S = r"residue at m\[1\] aliases the caller's input s at path s"


@pytest.mark.parametrize(
    ("keep", "where"),
    [
        (lambda w, x: (w, x.copy()), r"residue at m\[0\] aliases the caller's parameters p at path p"),
        (lambda w, x: (w.copy(), x), IN_S),
        (lambda w, x: (w.copy(), x.reshape(-1).reshape(x.shape)), IN_S),  # a view is an alias
        (lambda w, x: (w.copy(), x[:, :]), IN_S),
    ],
    ids=["p", "s", "reshaped view", "sliced view"],
)
def test_a_residue_that_aliases_the_callers_data_is_rejected(keep, where):
    """A verdict of its own: the derivative and purity checks pass, check_lens_laws warns."""
    aliasing = matmul(keep, name="aliasing")
    with pytest.raises(LawError, match=rf"^check_no_alias: aliasing: the {where}: writing into it"):
        check_no_alias(aliasing, W, X)
    check_pure(aliasing, W, X)
    check_vjp(aliasing, W, X)
    with pytest.warns(AliasWarning, match=where):
        check_lens_laws(aliasing, W, X)


def test_an_alias_inside_a_tree_is_named_by_its_path():
    def fwd(p, s):
        return (p.weight, s[1].copy()), s[1] @ p.weight + p.bias

    def bwd(m, da):
        w, x = m
        return DenseParams(x.T @ da, da.sum(axis=0)), (np.zeros(2), da @ w.T)

    lens = PreLens(fwd, bwd, name="tree")
    p, s = DenseParams(W, np.zeros(2)), (np.ones(2), X)
    with pytest.raises(
        LawError, match=r"m\[0\] aliases the caller's parameters p at path p\.weight: .* changed bwd's ds\[1\]"
    ):
        check_no_alias(lens, p, s)


def test_an_array_kept_only_for_its_shape_is_no_alias():
    """The rule is about what bwd reads: ``linear(..., input_delta=False)`` keeps W for its shape."""
    keep_shape = PreLens(lambda p, s: (s, 2 * s), lambda m, da: ((), np.full(m.shape, 2.0) * da), name="shape")
    check_no_alias(keep_shape, (), X)
    lin = nn.linear(3, 2, input_delta=False)
    check_no_alias(lin, W, X)


# ---------------------------------------------------------------- mutation


def test_a_fwd_that_writes_into_its_input_is_named_as_such():
    def fwd(w, x):
        x *= 2  # in place: the caller's array changes
        return (w.copy(), x.copy()), x @ w

    writer = PreLens(fwd, matmul().bwd, name="writer")
    x = X.copy()
    for check in (check_pure, check_vjp, check_lens_laws):
        with pytest.raises(LawError, match=r"writer: fwd mutated its input s at path s \(a lens never writes"):
            check(writer, W, x)
    np.testing.assert_array_equal(x, X)  # the checks ran the passes on copies


def test_a_fwd_that_writes_into_a_parameter_leaf_is_named_by_its_path():
    def fwd(p, x):
        p.bias[:] = 0.0
        return (p.weight.copy(), x.copy()), x @ p.weight + p.bias

    def bwd(m, da):
        w, x = m
        return DenseParams(x.T @ da, da.sum(axis=0)), da @ w.T

    with pytest.raises(LawError, match=r"fwd mutated its parameters p at path p\.bias"):
        check_vjp(PreLens(fwd, bwd, name="zeroing"), DenseParams(W, np.ones(2)), X)


def test_a_fwd_that_appends_to_an_input_list_is_named():
    def fwd(p, xs):
        xs.append(xs[0])
        return (), sum(xs)

    with pytest.raises(LawError, match=r"fwd mutated its input s at path s "):
        check_pure(PreLens(fwd, lambda m, da: ((), [da]), name="appender"), (), [np.ones(2)])

    def fwd_p(p, s):
        p[1].append(p[1][0])
        return (), s

    with pytest.raises(LawError, match=r"fwd mutated its parameters p at path p\[1\] "):
        check_pure(PreLens(fwd_p, lambda m, da: (((), [np.zeros(1)]), da), name="p_appender"), ((), [np.ones(1)]), X)


def test_a_bwd_that_writes_into_its_residue_or_delta_is_named_as_such():
    def bwd_residue(m, da):
        w, x = m
        x *= 0.5  # in place: a second backward pass would see another residue
        return x.T @ da, da @ w.T

    def bwd_delta(m, da):
        w, x = m
        da *= 2
        return x.T @ da, da @ w.T

    with pytest.raises(LawError, match=r"residue_writer: bwd mutated its residue m at path m\[1\]"):
        check_pure(matmul(back=bwd_residue, name="residue_writer"), W, X)
    with pytest.raises(LawError, match=r"delta_writer: bwd mutated its output delta da at path da "):
        check_lens_laws(matmul(back=bwd_delta, name="delta_writer"), W, X)


def test_a_failing_pass_is_a_failed_law():
    broken = PreLens(lambda p, s: ((), s), lambda m, da: 1 / 0, name="broken")
    with pytest.raises(LawError, match="ZeroDivisionError"):
        check_pure(broken, (), X)


# ---------------------------------------------- the library keeps the rule


def _lenses():
    rng = np.random.default_rng(0)
    x3 = rng.standard_normal((2, 3, 4))
    ids = rng.integers(0, 7, (2, 3))
    mha, ln, ff = nn.multi_head_attention(4, 2, causal=True), nn.layer_norm(4), nn.feed_forward(4, 8)
    lm = nn.decoder_lm(7, 4, 2, 8, 1, 3)
    return [
        ("linear", nn.linear(4, 3), None, x3),
        ("linear, input_delta=False", nn.linear(4, 3, input_delta=False), None, x3),
        ("dense", nn.dense(4, 3), None, x3),
        ("mlp", nn.mlp(4, [5, 3]), None, x3),
        ("tanh", nn.tanh, (), x3),
        ("gelu", nn.gelu, (), x3),
        ("softmax", nn.softmax, (), x3),
        ("squared_distance", nn.squared_distance, x3 + 1, x3),
        ("mse", nn.mse, x3 + 1, x3),
        ("softmax_cross_entropy", nn.softmax_cross_entropy, ids % 4, x3),
        ("attention_scores", nn.composed.attention_scores(4), (), (x3, x3 + 1)),
        ("weighted_sum", nn.composed.weighted_sum(), (), (np.abs(x3[..., :3]), x3)),
        ("token_embedding", nn.token_embedding(7, 4), None, ids),
        ("positional_embedding", nn.positional_embedding(3, 4), None, x3),
        ("layer_norm", ln, ln.init(rng), x3),
        ("feed_forward", ff, ff.init(rng), x3),
        ("multi_head_attention", mha, mha.init(rng), x3),
        ("decoder_lm >> token_cross_entropy", lm >> nn.token_cross_entropy(), (ids, lm.init(rng)), ids),
        ("linear_l", faithful.linear_l(3), None, x3[0, 0, :3]),
        ("neuron_l", faithful.neuron_l(3), None, x3[0, 0, :3]),
        ("TriLens layer", from_tamb(faithful.layer(3, 2)), faithful._network.layer_l(3, 2).init(rng), x3[0, 0, :3]),
        ("loss_l", faithful.loss_l, [x3[0, 0], x3[0, 1]], [x3[1, 0], x3[1, 1]]),
        ("chain", chain(nn.linear(4, 4), nn.relu, nn.linear(4, 2)), None, x3),
    ]


@pytest.mark.parametrize(("name", "lens", "p", "s"), _lenses(), ids=[c[0] for c in _lenses()])
def test_writing_into_the_inputs_after_vjp_never_changes_the_pullback(name, lens, p, s):
    """The issue's case (``x += 1`` between ``vjp`` and the pullback changed ``dW`` of ``linear``),
    for every kind of lens of the library, parameters included."""
    rng = np.random.default_rng(1)
    if p is None:
        p = lens.init(rng)
    untouched_p, untouched_s = snapshot(p), snapshot(s)
    a, pullback = vjp(lens, untouched_p, untouched_s)
    da = random_like(a, rng)
    want = pullback(da)
    mine_p, mine_s = snapshot(p), snapshot(s)
    a, pullback = vjp(lens, mine_p, mine_s)
    assert scramble_in_place((mine_p, mine_s))  # the caller reuses its buffers ...
    got = pullback(da)  # ... and the pullback does not notice
    assert tree_allclose(want, got, rtol=0, atol=0)
    check_pure(lens, p, s)
    check_no_alias(lens, p, s)
