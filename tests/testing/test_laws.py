"""The law suite: every checker of prelens.testing on randomly generated lenses."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from prelens import chain, vjp
from prelens.core._tree import structure_mismatch
from prelens.testing import (
    chains,
    check_alpha_composition,
    check_alpha_unit,
    check_assoc,
    check_beta_composition,
    check_beta_unit,
    check_coherence,
    check_combinators,
    check_dimap_composition,
    check_dimap_identity,
    check_interchange,
    check_left_unit,
    check_lens_equal,
    check_naturality,
    check_right_unit,
    check_sym_natural,
    check_tamb_roundtrip,
    check_tensor_assoc,
    check_tri_compose,
    check_tri_tensor,
    check_vjp,
    lenses,
    random_value,
    seeds,
    value_types,
)


@st.composite
def case(draw, in_type=None, max_depth=2):
    gl = draw(lenses(in_type, max_depth=max_depth))
    p, s = gl.sample(draw(seeds()))
    return gl, p, s


@st.composite
def paired_input_case(draw):
    """A lens whose input is a pair, as alpha/beta laws on (p1, s) need."""
    t = (draw(value_types(0)), draw(value_types(1)))
    return draw(case(t))


@given(case())
def test_generated_lenses_are_correct_derivatives(c):
    gl, p, s = c
    check_vjp(gl.lens, p, s)


@given(chains(3), seeds())
def test_associativity(ls, seed):
    f, g, h = ls
    rng = np.random.default_rng(seed)
    check_assoc(
        f.lens,
        g.lens,
        h.lens,
        f.lens.init(rng),
        g.lens.init(rng),
        h.lens.init(rng),
        random_value(f.in_type, rng),
        rng=rng,
    )


@given(case())
def test_units(c):
    gl, p, s = c
    check_left_unit(gl.lens, p, s)
    check_right_unit(gl.lens, p, s)


@given(chains(2), chains(2), seeds())
def test_interchange(fh, gk, seed):
    rng = np.random.default_rng(seed)
    (f, h), (g, k) = fh, gk
    ps = [x.lens.init(rng) for x in (f, g, h, k)]
    check_interchange(
        f.lens,
        g.lens,
        h.lens,
        k.lens,
        *ps,
        random_value(f.in_type, rng),
        random_value(g.in_type, rng),
        rng=rng,
    )


@given(case(), case(), case(), seeds())
def test_tensor_associativity(cf, cg, ch, seed):
    (f, pf, s1), (g, pg, s2), (h, ph, s3) = cf, cg, ch
    check_tensor_assoc(f.lens, g.lens, h.lens, pf, pg, ph, s1, s2, s3, rng=seed)


@given(case(), case())
def test_symmetry_is_natural(cf, cg):
    (f, pf, s1), (g, pg, s2) = cf, cg
    check_sym_natural(f.lens, g.lens, pf, pg, s1, s2)


@given(case(), seeds())
def test_triprofunctor_functor_laws(c, seed):
    gl, p, s = c
    check_dimap_identity(gl.lens, p, s)
    check_dimap_composition(gl.lens, p, s, rng=seed)


@given(case(), seeds())
def test_alpha_laws(c, seed):
    gl, p, s = c
    rng = np.random.default_rng(seed)
    check_alpha_unit(gl.lens, p, s)
    check_alpha_composition(gl.lens, p, s, rng.standard_normal(2), rng.standard_normal(3))


@given(case())
def test_beta_unit(c):
    gl, p, s = c
    check_beta_unit(gl.lens, p, s)


@given(st.builds(lambda a, b: (a, b), value_types(0), value_types(0)), st.data())
def test_beta_composition(t12, data):
    t = (t12[0], (t12[1], data.draw(value_types(1))))
    gl, p, s = data.draw(case(t))
    check_beta_composition(gl.lens, p, s)


@given(paired_input_case(), seeds())
def test_naturality_and_coherence(c, seed):
    gl, p, s = c
    n = np.random.default_rng(seed).standard_normal(2)
    check_naturality(gl.lens, p, s, n, rng=seed)
    check_coherence(gl.lens, p, s, n)


@given(case())
def test_tamb_roundtrip(c):
    gl, p, s = c
    check_tamb_roundtrip(gl.lens, p, s)


@given(chains(2), seeds())
def test_tri_compose_agrees_with_sequential(fg, seed):
    f, g = fg
    rng = np.random.default_rng(seed)
    check_tri_compose(f.lens, g.lens, f.lens.init(rng), g.lens.init(rng), random_value(f.in_type, rng))


@given(case(), case())
def test_tri_tensor_agrees_with_parallel(cf, cg):
    (f, pf, s1), (g, pg, s2) = cf, cg
    check_tri_tensor(f.lens, g.lens, pf, pg, s1, s2)


@given(case(max_depth=1), st.integers(1, 4))
def test_trilens_combinators_agree(c, n):
    gl, p, s = c
    check_combinators(gl.lens, p, s, n=n)


@given(chains(4), seeds())
def test_chain_is_nested_sequential_composition(ls, seed):
    rng = np.random.default_rng(seed)
    ps = [x.lens.init(rng) for x in ls]
    nested = ls[0].lens >> ls[1].lens >> ls[2].lens >> ls[3].lens
    check_lens_equal(
        "chain = nested >>",
        nested,
        chain(*(x.lens for x in ls)),
        (ps[3], (ps[2], (ps[1], ps[0]))),
        random_value(ls[0].in_type, rng),
        p_iso=lambda q: [q[1][1][1], q[1][1][0], q[1][0], q[0]],
        m_iso=lambda m: [m[0][0][0], m[0][0][1], m[0][1], m[1]],
    )


@given(lenses(), seeds())
def test_generated_lens_sample_matches_its_types(gl, seed):
    p, s = gl.sample(seed)
    a, _ = vjp(gl.lens, p, s)
    assert _type_of(s) == gl.in_type
    assert _type_of(a) == gl.out_type


def _type_of(x):
    return len(x) if isinstance(x, np.ndarray) else (_type_of(x[0]), _type_of(x[1]))


@given(lenses(), seeds())
def test_generated_lens_deltas_match_a_forward_pass(gl, seed):
    p, s = gl.sample(seed)
    m, a = gl.lens.fwd(p, s)
    dm, da = gl.deltas(p, s, seed)
    assert structure_mismatch(m, dm, shapes=True) is None
    assert structure_mismatch(a, da, shapes=True) is None
    dp, ds = gl.lens.bwd(dm, da)
    assert _type_of(ds) == gl.in_type
    assert structure_mismatch(p, dp, shapes=True) is None
