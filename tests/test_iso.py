"""The structural isomorphisms, as functions and as lenses."""

import pytest

import prelens as pl

PAIRS = [
    (pl.lunit, pl.unlunit, ((), "a")),
    (pl.runit, pl.unrunit, ("a", ())),
    (pl.assoc, pl.unassoc, (("a", "b"), "c")),
    (pl.sym, pl.sym, ("a", "b")),
    (pl.skip_right, pl.skip_right, ("x", ("b", "c"))),
    (pl.skip_left, pl.skip_left, (("a", "b"), "x")),
]


@pytest.mark.parametrize(("to", "back", "x"), PAIRS)
def test_functions_are_inverse(to, back, x):
    assert back(to(x)) == x


def test_values():
    assert pl.assoc(((1, 2), 3)) == (1, (2, 3))
    assert pl.skip_right((1, (2, 3))) == (2, (1, 3))
    assert pl.skip_left(((1, 2), 3)) == ((1, 3), 2)


LENSES = [
    (pl.lunit_l, ((), "a"), "a"),
    (pl.unlunit_l, "a", ((), "a")),
    (pl.runit_l, ("a", ()), "a"),
    (pl.unrunit_l, "a", ("a", ())),
    (pl.assoc_l, (("a", "b"), "c"), ("a", ("b", "c"))),
    (pl.unassoc_l, ("a", ("b", "c")), (("a", "b"), "c")),
    (pl.sym_l, ("a", "b"), ("b", "a")),
    (pl.skip_right_l, ("x", ("b", "c")), ("b", ("x", "c"))),
    (pl.skip_left_l, (("a", "b"), "x"), (("a", "x"), "b")),
]


@pytest.mark.parametrize(("lens", "s", "a"), LENSES)
def test_iso_lenses_are_parameter_and_residue_free(lens, s, a):
    assert lens.fwd((), s) == ((), a)
    assert lens.bwd((), a) == ((), s)
