"""The structural isomorphisms, as functions and as lenses."""

import pytest

import prelens as pl
from prelens.core import _iso

PAIRS = [
    (pl.lunit, pl.unlunit, ((), "a")),
    (pl.runit, pl.unrunit, ("a", ())),
    (pl.assoc, pl.unassoc, (("a", "b"), "c")),
    (pl.sym, pl.sym, ("a", "b")),
    (pl.core.skip_right, pl.core.skip_right, ("x", ("b", "c"))),
    (pl.core.skip_left, pl.core.skip_left, (("a", "b"), "x")),
]


@pytest.mark.parametrize(("to", "back", "x"), PAIRS)
def test_functions_are_inverse(to, back, x):
    assert back(to(x)) == x


def test_values():
    assert pl.assoc(((1, 2), 3)) == (1, (2, 3))
    assert pl.core.skip_right((1, (2, 3))) == (2, (1, 3))
    assert pl.core.skip_left(((1, 2), 3)) == ((1, 3), 2)


LENSES = [
    (_iso.lunit_l, ((), "a"), "a"),
    (_iso.unlunit_l, "a", ((), "a")),
    (_iso.runit_l, ("a", ()), "a"),
    (_iso.unrunit_l, "a", ("a", ())),
    (_iso.assoc_l, (("a", "b"), "c"), ("a", ("b", "c"))),
    (_iso.unassoc_l, ("a", ("b", "c")), (("a", "b"), "c")),
    (_iso.sym_l, ("a", "b"), ("b", "a")),
    (_iso.skip_right_l, ("x", ("b", "c")), ("b", ("x", "c"))),
    (_iso.skip_left_l, (("a", "b"), "x"), (("a", "x"), "b")),
]


@pytest.mark.parametrize(("lens", "s", "a"), LENSES)
def test_iso_lenses_are_parameter_and_residue_free(lens, s, a):
    assert lens.fwd((), s) == ((), a)
    assert lens.bwd((), a) == ((), s)
