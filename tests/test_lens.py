"""PreLens, >>, @, the identity, repr, init, and the trace."""

import dataclasses

import numpy as np
import pytest

from prelens import PreLens, PrelensError, backward, forward, id_pre_lens, pre_compose, prod_lens, vjp
from prelens.testing._strategies import linear_vec, tanh_vec


def tagged(tag):
    """A lens whose residue, output and deltas carry its tag, to pin nesting."""
    return PreLens(
        lambda p, s: (f"m_{tag}", f"{s}>{tag}[{p}]"),
        lambda dm, da: (f"dp_{tag}({dm},{da})", f"ds_{tag}({da})"),
        name=tag,
        init_fn=lambda rng: f"p_{tag}",
    )


f, g, h = tagged("f"), tagged("g"), tagged("h")


def test_sequential_nesting_follows_precompose():
    m, a = (f >> g).fwd(("pg", "pf"), "s")
    assert m == ("m_f", "m_g")
    assert a == "s>f[pf]>g[pg]"
    dp, ds = (f >> g).bwd(("dmf", "dmg"), "da")
    assert dp == ("dp_g(dmg,da)", "dp_f(dmf,ds_g(da))")
    assert ds == "ds_f(ds_g(da))"


def test_parallel_nesting_pairs_every_slot():
    m, a = (f @ g).fwd(("pf", "pg"), ("s1", "s2"))
    assert m == ("m_f", "m_g") and a == ("s1>f[pf]", "s2>g[pg]")
    dp, ds = (f @ g).bwd(("x", "y"), ("d1", "d2"))
    assert dp == ("dp_f(x,d1)", "dp_g(y,d2)") and ds == ("ds_f(d1)", "ds_g(d2)")


def test_named_twins_equal_operators():
    assert pre_compose(f, g).fwd(("pg", "pf"), "s") == (f >> g).fwd(("pg", "pf"), "s")
    assert prod_lens(f, g).fwd(("a", "b"), ("s", "t")) == (f @ g).fwd(("a", "b"), ("s", "t"))


def test_identity_has_unit_params_and_residue():
    assert id_pre_lens.fwd((), 5) == ((), 5)
    assert id_pre_lens.bwd((), 7) == ((), 7)


def test_init_nests_like_parameters():
    assert (f >> g).init(0) == ("p_g", "p_f")
    assert (f @ g).init(0) == ("p_f", "p_g")
    assert ((f >> g) @ h).init(0) == (("p_g", "p_f"), "p_h")


def test_init_draws_in_data_flow_order():
    a, b = linear_vec(2, 2), linear_vec(2, 2)
    pb, pa = (a >> b).init(3)
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(pa, a.init(rng))
    np.testing.assert_array_equal(pb, b.init(rng))


def test_lens_without_initializer_says_so():
    bare = PreLens(lambda p, s: ((), s), lambda dm, da: ((), da), name="bare", init_fn=None)
    with pytest.raises(
        Exception, match="bare >> f: cannot create parameters: its part bare was built without an initializer"
    ):
        (bare >> f).init(0)


def test_a_loss_without_initializer_says_its_parameter_is_data():
    """``(model >> loss).init(rng)``: the loss's parameter is the ground truth, which no initializer makes; the
    error says so (building the loss "with init_fn=..." would be the wrong advice)."""
    from prelens.nn import mlp, softmax_cross_entropy

    with pytest.raises(
        PrelensError,
        match=r"^mlp\(2→3, tanh\) >> softmax_cross_entropy: cannot create parameters: its part "
        r"softmax_cross_entropy takes the labels as its parameter \(data, not made by init\): pass the parameters "
        r"explicitly, with the labels in their place$",
    ):
        (mlp(2, [3]) >> softmax_cross_entropy).init(0)


def test_lenses_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.name = "other"


@pytest.mark.parametrize(
    ("lens", "shown"),
    [
        (f >> g >> h, "f >> g >> h"),
        (f >> (g >> h), "f >> (g >> h)"),
        (f @ g @ h, "f @ g @ h"),
        (f @ (g @ h), "f @ (g @ h)"),
        ((f >> g) @ h, "(f >> g) @ h"),
        (f >> g @ h, "f >> g @ h"),
        ((f @ g) >> h, "f @ g >> h"),
    ],
)
def test_repr_reads_like_the_composition(lens, shown):
    assert repr(lens) == shown


def test_forward_and_backward_extractors():
    l = linear_vec(3, 2) >> tanh_vec
    p, s = l.init(0), np.arange(3.0)
    a, pullback = vjp(l, p, s)
    np.testing.assert_allclose(forward(l, p, s), a)
    dp, ds = backward(l, p, s, np.ones(2))
    dp2, ds2 = pullback(np.ones(2))
    np.testing.assert_allclose(ds, ds2)
    np.testing.assert_allclose(dp[1], dp2[1])


def counting(counter):
    def fwd(p, s):
        counter["fwd"] += 1
        return (), s + 1.0

    def bwd(dm, da):
        counter["bwd"] += 1
        return (), da

    return PreLens(fwd, bwd, name="count")


@pytest.mark.parametrize("n", [1, 2, 8, 32])
def test_trace_costs_one_forward_call_per_lens(n):
    counter = {"fwd": 0, "bwd": 0}
    lens = counting(counter)
    for _ in range(n - 1):
        lens = lens >> counting(counter)
    params = ()
    for _ in range(n - 1):
        params = ((), params)
    a, pullback = vjp(lens, params, 0.0)
    pullback(1.0)
    assert a == n
    assert counter == {"fwd": n, "bwd": n}
