"""What a researcher who works in the Tambara encoding met in the law kit (sixth wave): each defect, pinned."""

import numpy as np
import pytest

from prelens import to_tamb
from prelens.faithful import init_mlp, make_mlp
from prelens.nn import linear, tanh
from prelens.testing import (
    chains,
    check_combinators,
    check_left_unit,
    check_lens_laws,
    check_right_unit,
    check_sym_natural,
    check_tamb_roundtrip,
    check_tri_compose,
    check_tri_tensor,
    lenses,
)


def test_the_single_lens_laws_take_the_faithful_network_as_it_is_built_a_trilens():
    # check_lens_laws(make_mlp(...)) stopped in its left-unit law with ">>: the second lens must be a PreLens".
    net, params = make_mlp(3, [4, 2]), init_mlp(3, [4, 2], np.random.default_rng(0))
    check_lens_laws(net, params, np.array([0.5, -1.0, 2.0]), vjp=False)


def test_each_law_that_builds_from_a_lens_takes_a_trilens():
    f, g = to_tamb(linear(3, 3)), to_tamb(tanh)
    p, x = linear(3, 3).init(0), np.ones((2, 3))
    check_left_unit(f, p, x)  # to_tamb(id_pre_lens) >> f
    check_right_unit(f, p, x)
    check_sym_natural(f, g, p, (), x, x)
    check_tamb_roundtrip(f, p, x)
    check_tri_compose(f, g, p, (), x)
    check_tri_tensor(f, g, p, (), x, x)
    check_combinators(f, p, x)


def test_a_law_given_a_non_lens_names_the_law_not_the_operator():
    with pytest.raises(Exception, match=r"^left unit of >>: f must be a PreLens or a TriLens, got int"):
        check_left_unit(42, (), 1.0)


def test_a_value_type_may_be_a_numpy_int():
    # chains(2, np.int64(300)): a width read from an array was refused as "not a value type".
    from hypothesis import find, settings

    from prelens.testing import random_value

    assert random_value((np.int64(2), np.int32(1)), 0)[0].shape == (2,)
    quiet = settings(database=None, derandomize=True, max_examples=5)
    assert find(chains(1, np.int64(3)), lambda c: True, settings=quiet)[0].in_type == 3


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: chains(-1), r"^chains: n must be an int >= 0, got -1"),
        (lambda: chains("2"), r"^chains: n must be an int >= 0"),
        (lambda: chains(True), r"^chains: n must be an int >= 0"),
        (lambda: chains(2, max_dim=0), r"^chains: max_dim must be an int >= 1"),
        (lambda: lenses(max_dim=0), r"^lenses: max_dim must be an int >= 1"),
        (lambda: lenses(max_depth=-1), r"^lenses: max_depth must be an int >= 0"),
    ],
)
def test_the_generators_name_a_bad_count_when_made_not_when_drawn(make, match):
    # chains(-1) drew [] and chains(True) one lens; chains("2") was a bare TypeError and max_dim=0 hypothesis's
    # "Cannot have max_value=0 < min_value=1", raised inside the test that drew from it.
    from prelens.errors import ArgumentError

    with pytest.raises(ArgumentError, match=match):
        make()


def test_the_scan_laws_take_a_trilens_cell():
    # check_scan(to_tamb(cell), ...) stopped with "scan: cell must be a PreLens", naming neither the checker nor the law.
    from prelens.nn.composed import rnn_cell
    from prelens.testing import check_scan, check_scan_map

    cell = rnn_cell(3, 4)
    xs = np.random.default_rng(0).standard_normal((5, 2, 3))
    check_scan(to_tamb(cell), cell.init(0), np.zeros((2, 4)), xs)
    check_scan_map(to_tamb(linear(3, 2)), linear(3, 2).init(0), np.zeros(1), xs)
