"""Errors raised while composing and calling lenses name the lenses and what they got."""

import numpy as np
import pytest

from prelens import PreLens, ShapeError, StructureError, chain, vjp
from prelens.testing import linear_vec, tanh_vec

V3 = np.ones(3)


def test_sequential_mismatch_names_both_lenses_and_the_value():
    l = linear_vec(3, 2) >> linear_vec(3, 2)
    with pytest.raises(
        StructureError,
        match=r"forward pass of linear_vec\(3→2\) failed on f64\[2\] \(the output of linear_vec\(3→2\)\)",
    ):
        l.fwd(l.init(0), V3)


def test_chain_mismatch_names_both_lenses():
    c = chain(linear_vec(3, 2), tanh_vec, linear_vec(3, 2))
    with pytest.raises(
        StructureError,
        match=r"in chain\(.*\): the forward pass of linear_vec\(3→2\) failed on f64\[2\] \(the output of tanh_vec\)",
    ):
        c.fwd(c.init(0), V3)


def test_parameters_of_the_wrong_shape_are_named():
    l = linear_vec(3, 2) >> tanh_vec
    with pytest.raises(StructureError, match=r"linear_vec\(3→2\) >> tanh_vec: parameters must be a pair \(p_g, p_f\)"):
        l.fwd([np.ones((2, 3))], V3)


def test_parallel_needs_pairs():
    l = tanh_vec @ tanh_vec
    with pytest.raises(
        StructureError, match=r"tanh_vec @ tanh_vec: parameters and inputs must be a pair \(left, right\)"
    ):
        l.fwd(((), ()), V3)


def test_errors_of_prelens_keep_their_class_and_gain_context():
    def fwd(p, s):
        raise ShapeError("picky: input: expected f64[5], got f64[3]")

    picky = PreLens(fwd, lambda dm, da: ((), da), name="picky")
    with pytest.raises(ShapeError, match=r"(?s)picky: input: expected f64\[5\].*in tanh_vec >> picky"):
        (tanh_vec >> picky).fwd(((), ()), V3)


def test_only_the_innermost_composite_adds_context():
    l = (linear_vec(3, 2) >> linear_vec(3, 2)) >> tanh_vec
    with pytest.raises(StructureError) as info:
        l.fwd(l.init(0), V3)
    assert str(info.value).count("\n  in ") == 1


def test_a_bwd_returning_the_wrong_structure_is_named():
    bad = PreLens(lambda p, s: ((), s), lambda dm, da: da, name="bad")  # forgot the (dp, ds) pair
    _, pullback = vjp(tanh_vec >> bad, ((), ()), np.ones(3))
    with pytest.raises(StructureError, match=r"the backward pass of bad failed"):
        pullback(np.ones(3))
