"""The profunctor encoding and the combinators: exact nesting, lengths, repr."""

import numpy as np
import pytest

from prelens import (
    PreLens,
    StructureError,
    TriLens,
    Trimbara,
    batch_n,
    branch,
    forward,
    from_tamb,
    id_pre_lens,
    to_tamb,
    tri_compose,
    tri_tensor,
    vec_lens,
    vjp,
)
from prelens.faithful._branch import branch_t
from prelens.tambara import TriProfunctor
from tests.test_lens import f, g, tagged


def test_prelens_implements_the_protocols():
    assert isinstance(id_pre_lens, TriProfunctor)
    assert isinstance(id_pre_lens, Trimbara)


def test_to_tamb_nesting():
    t = to_tamb(f)(id_pre_lens)  # t (m, ()) ((), p) s
    m, a = t.fwd(((), "pf"), "s")
    assert m == ("m_f", ()) and a == "s>f[pf]"
    dp, ds = t.bwd(("dm", ()), "da")
    assert dp == ((), "dp_f(dm,da)") and ds == "ds_f(da)"


def test_from_tamb_strips_units():
    l = from_tamb(to_tamb(f))
    assert l.fwd("pf", "s") == ("m_f", "s>f[pf]")
    assert l.bwd("dm", "da") == ("dp_f(dm,da)", "ds_f(da)")


def test_tri_compose_nesting_matches_precompose():
    l = from_tamb(tri_compose(to_tamb(f), to_tamb(g)))
    assert l.fwd(("pg", "pf"), "s") == (f >> g).fwd(("pg", "pf"), "s")
    assert l.bwd(("a", "b"), "da") == (f >> g).bwd(("a", "b"), "da")


def test_tri_tensor_nesting_matches_prodlens():
    l = from_tamb(tri_tensor(to_tamb(f), to_tamb(g)))
    assert l.fwd(("pf", "pg"), ("s", "t")) == (("m_f", "m_g"), ("s>f[pf]", "t>g[pg]"))
    assert l.bwd(("x", "y"), ("d1", "d2")) == (f @ g).bwd(("x", "y"), ("d1", "d2"))


def test_trilens_operators_and_repr():
    tf, tg = to_tamb(f), to_tamb(g)
    assert isinstance(tf >> tg, TriLens) and isinstance(tf @ tg, TriLens)
    assert repr(tf >> tg) == "to_tamb(f) >> to_tamb(g)"
    assert repr(tf @ tg) == "to_tamb(f) @ to_tamb(g)"


@pytest.mark.parametrize("make", [lambda l: l, to_tamb], ids=["prelens", "trilens"])
def test_vec_lens_nesting(make):
    l = vec_lens(2, make(f))
    l = from_tamb(l) if isinstance(l, TriLens) else l
    assert l.fwd(["p1", "p2"], ["s1", "s2"]) == (["m_f", "m_f"], ["s1>f[p1]", "s2>f[p2]"])
    assert l.bwd(["a", "b"], ["x", "y"]) == (["dp_f(a,x)", "dp_f(b,y)"], ["ds_f(x)", "ds_f(y)"])


def add_p():
    return PreLens(lambda p, s: ((), p + s), lambda dm, da: (da, 2 * da), name="add_p")


@pytest.mark.parametrize("make", [lambda l: l, to_tamb], ids=["prelens", "trilens"])
def test_batch_n_shares_params_and_sums_deltas(make):
    l = batch_n(3, make(add_p()))
    l = from_tamb(l) if isinstance(l, TriLens) else l
    assert l.fwd(10.0, [1.0, 2.0, 3.0]) == ([(), (), ()], [11.0, 12.0, 13.0])
    assert l.bwd([(), (), ()], [1.0, 2.0, 4.0]) == (7.0, [2.0, 4.0, 8.0])


@pytest.mark.parametrize("lens", [branch(3), from_tamb(branch_t(3))], ids=["branch", "branch_t"])
def test_branch_sums_pointwise(lens):
    m, a = lens.fwd((), np.array([1.0, 2.0]))
    assert m == () and len(a) == 3
    _, ds = lens.bwd((), [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([1.0, 1.0])])
    np.testing.assert_array_equal(ds, [2.0, 2.0])


@pytest.mark.parametrize("make", [lambda l: l, to_tamb], ids=["prelens", "trilens"])
@pytest.mark.parametrize("length", [1, 3])
@pytest.mark.parametrize("slot", ["params", "input", "output deltas"])
def test_wrong_list_lengths_are_errors(make, length, slot):
    """Each slot on its own: a list of the wrong length is never truncated nor padded."""
    l = vec_lens(2, make(add_p()))
    good, bad = [1.0, 1.0], [1.0] * length
    with pytest.raises(StructureError, match=r"vec_lens\(2"):
        if slot in ("params", "input"):
            forward(l, bad if slot == "params" else good, bad if slot == "input" else good)
        else:
            vjp(l, good, good)[1](bad)


@pytest.mark.parametrize("slot", ["input", "output deltas"])
def test_batch_n_of_a_trilens_refuses_wrong_lengths(slot):
    l = batch_n(2, to_tamb(add_p()))
    with pytest.raises(StructureError, match=r"batch_n\(2|vec_lens\(2"):
        if slot == "input":
            forward(l, 0.0, [1.0, 1.0, 1.0])
        else:
            vjp(l, 0.0, [1.0, 1.0])[1]([1.0, 1.0, 1.0])


def test_make_mlp_refuses_residue_deltas_of_the_wrong_length():
    from prelens.faithful import init_mlp, make_mlp

    net = from_tamb(make_mlp(3, [4, 1]))
    m, _ = net.fwd(init_mlp(3, [4, 1], np.random.default_rng(0)), np.ones(3))
    with pytest.raises(StructureError, match=r"make_mlp\(3, \[4, 1\]\): residue deltas must be a list of 2 layers"):
        net.bwd([*m, m[0]], np.ones(1))


@pytest.mark.parametrize("lens", [branch(2), from_tamb(branch_t(2))], ids=["branch", "branch_t"])
def test_branch_rejects_wrong_delta_length(lens):
    with pytest.raises(StructureError, match=r"branch(_t)?\(2\)"):
        vjp(lens, (), 1.0)[1]([1.0, 2.0, 3.0])


def test_batch_n_rejects_wrong_batch():
    with pytest.raises(StructureError, match=r"batch_n\(2, add_p\): input: expected list of 2, got \[float 1.0\]"):
        forward(batch_n(2, add_p()), 0.0, [1.0])


def test_tagged_helpers_are_consistent():
    assert tagged("x").init(0) == "p_x"


def test_the_faithful_pages_table_names_no_deprecated_piece():
    """docs/faithful.md's table of the post's pieces: every Python name in it is current (no warning)."""
    import re
    import warnings
    from pathlib import Path

    import prelens.faithful

    page = (Path(__file__).resolve().parent.parent / "docs" / "faithful.md").read_text()
    rows = [line.split("|")[2] for line in page.splitlines() if line.startswith("| `")]
    names = {m for cell in rows for m in re.findall(r"`([a-z_]+)[(`]", cell)}
    assert {"linear_l", "make_mlp", "loss_l"} <= names
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in sorted(names):
            getattr(prelens.faithful, name)
