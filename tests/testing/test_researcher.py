"""What a researcher who tests lenses of their own met in the law kit (fourth wave): each defect, pinned."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import PreLens, to_tamb
from prelens.errors import ArgumentError, LawError, PrelensError, StructureError
from prelens.nn import dense, linear
from prelens.tambara import Cost, Shapes
from prelens.testing import (
    chains,
    check_assoc,
    check_combinators,
    check_dimap_composition,
    check_interchange,
    check_lens_equal,
    check_lens_laws,
    check_naturality,
    check_no_alias,
    check_scan,
    check_scan_map,
    check_tri_compose,
    check_vjp,
    module_equal,
    seeds,
)


def _tanh_linear(rel_error: float, *, inside=np.float64) -> PreLens:
    """``tanh(W s)``, its forward pass computed in ``inside``; ``ds`` off by ``rel_error``."""

    def fwd(w, s):
        return (w.copy(), s.copy()), np.tanh(w.astype(inside) @ s.astype(inside))

    def bwd(m, da):
        w, s = m
        dz = da * (1 - np.tanh(w @ s) ** 2)
        return np.outer(dz, s), (w.T @ dz) * (1 + rel_error)

    return PreLens(fwd, bwd, name="tanh_linear")


def test_check_vjp_refuses_a_float32_output_of_float64_inputs_instead_of_differencing_it():
    # Finite differences of a float32 output resolve about 1e-3 of the derivative: a 1e-4 error passed.
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((20, 30)) / 5, rng.standard_normal(30)
    check_vjp(_tanh_linear(0.0), w, x)  # in float64 throughout: right
    with pytest.raises(LawError, match=r"check_vjp: tanh_linear: fwd's output at a has dtype f32"):
        check_vjp(_tanh_linear(1e-4, inside=np.float32), w, x)


def test_check_vjp_says_how_to_check_a_float32_lens():
    lens = linear(3, 2, dtype=np.float32)
    with pytest.raises(LawError, match=r"needs float64 .* got f32\[3,2\] at p: .*dtype=np\.float64"):
        check_vjp(lens, lens.init(0), np.ones((1, 3), np.float32))


def test_a_law_whose_two_sides_overflow_alike_is_not_reported_as_two_different_values():
    # 300 dense layers run backward on random residues overflow to NaN: alike on both sides.
    net = dense(16, 16)
    for _ in range(299):
        net = net >> dense(16, 16)
    p, x = net.init(0), np.random.default_rng(0).standard_normal((8, 16))
    with np.errstate(all="ignore"), pytest.raises(LawError, match=r"not finite on both sides") as caught:
        check_assoc(net, net, net, p, p, p, x)
    assert "left:" not in str(caught.value)


def test_a_law_with_a_nan_on_one_side_only_still_shows_both_values():
    double = PreLens(lambda p, s: ((), 2 * s), lambda m, da: ((), 2 * da), name="double")
    nan_bwd = PreLens(double.fwd, lambda m, da: ((), np.full_like(da, np.nan)), name="nan_bwd")
    with pytest.raises(LawError, match=r"input deltas differ at <root>:\n  left: "):
        check_lens_equal("nan on one side", double, nan_bwd, (), np.ones(2))


@settings(max_examples=5)
@given(chains(3, in_type=200, max_dim=300), seeds())
def test_chains_draw_lenses_at_real_widths(ls, seed):
    rng = np.random.default_rng(seed)
    f, g, h = ls
    pf, pg, ph = (gl.lens.init(rng) for gl in ls)
    check_assoc(f.lens, g.lens, h.lens, pf, pg, ph, f.sample(rng)[1])


def test_chains_keep_to_max_dim():
    from hypothesis import find
    from hypothesis import settings as hsettings

    wide = find(
        chains(2, in_type=50, max_dim=300),
        lambda c: any(isinstance(gl.out_type, int) and gl.out_type > 3 for gl in c[1:]),
        settings=hsettings(database=None, derandomize=True),
    )
    assert wide


def test_the_category_laws_take_trilenses():
    f, g, h = (to_tamb(linear(3, 3)) for _ in range(3))
    p = linear(3, 3).init(0)
    x = np.ones((2, 3))
    check_assoc(f, g, h, p, p, p, x)  # tri_compose is associative up to the associator
    check_interchange(f, g, h, f, p, p, p, p, x, x)


def test_a_law_given_something_that_is_not_a_lens_says_so():
    with pytest.raises(StructureError, match=r"module_equal: lhs must be a PreLens .*got int"):
        module_equal(1, 2, (), 1.0)


def test_a_crash_inside_check_no_alias_is_named_as_aliasing_not_purity():
    refusing = PreLens(lambda p, s: ((), float(s)), lambda m, da: ((), da), name="scalar_only")
    with pytest.raises(LawError, match=r"law 'check_no_alias: aliasing of scalar_only' fails"):
        check_no_alias(refusing, (), np.ones(3))


@pytest.mark.parametrize("reading", [Shapes, Cost])
def test_shapes_and_cost_of_a_pre_lens_name_themselves(reading):
    lens = linear(3, 2)
    with pytest.raises(StructureError, match=rf"{reading.__name__}\.of: tri must be a TriLens .*to_tamb"):
        reading.of(lens, lens.init(0), np.ones(3))


@pytest.mark.parametrize(
    ("run", "match"),
    [
        (lambda l, p, x: check_assoc(l, l, l, p, p, p, x, rng="a"), r"^associativity of >>: rng must be"),
        (lambda l, p, x: check_assoc(l, l, l, p, p, p, x, rtol=-1), r"^associativity of >>: rtol must be"),
        (lambda l, p, x: check_lens_laws(l, p, x, rng=-1), r"^check_lens_laws: rng must be"),
        (lambda l, p, x: check_naturality(l, p, x, x, rng=1.5), r"^check_naturality: rng must be"),
        (lambda l, p, x: check_dimap_composition(l, p, x, rng="x"), r"^check_dimap_composition: rng must be"),
    ],
)
def test_a_bad_rng_or_tolerance_names_the_checker(run, match):
    l = linear(3, 3)
    with pytest.raises(ArgumentError, match=match):
        run(l, l.init(0), np.ones((2, 3)))


def test_the_generators_name_a_bad_rng_and_take_a_seed():
    """``GeneratedLens.sample("x")`` was numpy's bare TypeError (a bool a seed), ``random_value(2, 0)`` an
    AttributeError: they take seeds and refuse what is not one, as the checkers do."""
    from prelens.testing import GeneratedLens, random_value

    gl = GeneratedLens(linear(3, 2), 3, 2)
    for bad in ("x", 1.5, True):
        with pytest.raises(ArgumentError, match=r"^GeneratedLens\.sample: rng must be"):
            gl.sample(bad)
        with pytest.raises(ArgumentError, match=r"^GeneratedLens\.deltas: rng must be"):
            gl.deltas(*gl.sample(0), rng=bad)
        with pytest.raises(ArgumentError, match=r"^random_value: rng must be"):
            random_value(2, bad)
    np.testing.assert_array_equal(random_value(2, 0), random_value(2, np.random.default_rng(0)))


@pytest.mark.parametrize(
    ("run", "match"),
    [
        # an empty sequence was a bare IndexError (check_scan) or named batch_n (check_scan_map)
        (lambda l, p, x: check_scan(l, p, x, []), r"^check_scan: its sequence xs must be an array or a list of at"),
        (lambda l, p, x: check_scan_map(l, p, x, np.ones((0, 3))), r"^check_scan_map: its sequence xs must be"),
        # n named batch_n or vec_lens; vjp=1 or "no" ran check_vjp
        (lambda l, p, x: check_combinators(l, p, x, n=0), r"^check_combinators: n must be an int >= 1, got 0"),
        (lambda l, p, x: check_combinators(l, p, x, n=2.0), r"^check_combinators: n must be an int >= 1, got 2\.0"),
        (lambda l, p, x: check_lens_laws(l, p, x, vjp="no"), r"^check_lens_laws: vjp must be True or False"),
    ],
)
def test_a_bad_sequence_count_or_flag_names_the_checker(run, match):
    l = linear(3, 3)
    with pytest.raises(PrelensError, match=match):
        run(l, l.init(0), np.ones(3))


@pytest.mark.parametrize("bad", [(3,), "3", -1, 2.0, True, (3, (2,))])
def test_a_value_type_that_is_not_one_is_named_up_front(bad):
    from prelens.testing import lenses, random_value

    with pytest.raises(ArgumentError, match=r"^lenses: in_type must be a value type: an int"):
        lenses(bad)
    with pytest.raises(ArgumentError, match=r"^chains: in_type must be a value type"):
        chains(2, bad)
    with pytest.raises(ArgumentError, match=r"^random_value: t must be a value type"):
        random_value(bad, np.random.default_rng(0))


def _composed(gls):
    lens = gls[0].lens
    for gl in gls[1:]:
        lens = lens >> gl.lens
    return lens


@settings(max_examples=5)
@given(st.data(), seeds())
def test_the_category_laws_at_real_widths_and_depth_at_the_default_recursion_limit(data, seed):
    """A composite 30 lenses deep, then two more, vectors of hundreds: the laws of >>, @ and the TriLens
    route as a researcher runs them, at Python's default recursion limit."""
    from tests.conftest import default_recursion_limit

    deep = data.draw(chains(30, in_type=200, max_dim=300))
    g, h = (gl.lens for gl in data.draw(chains(2, in_type=deep[-1].out_type, max_dim=300)))
    rng = np.random.default_rng(seed)
    f, s = _composed(deep), deep[0].sample(rng)[1]
    pf, pg, ph = f.init(rng), g.init(rng), h.init(rng)
    with default_recursion_limit():
        check_assoc(f, g, h, pf, pg, ph, s)
        check_tri_compose(f, g, pf, pg, s)
        check_interchange(f, f, g, g, pf, pf, pg, pg, s, s)
        check_assoc(to_tamb(f), to_tamb(g), to_tamb(h), pf, pg, ph, s)  # tri_compose is associative
        check_vjp(f >> g >> h, (ph, (pg, pf)), s, directions=1)
