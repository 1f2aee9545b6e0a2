"""What a researcher who works in the Tambara encoding met in the law kit (sixth wave): each defect, pinned."""

import numpy as np
import pytest

from prelens import to_tamb
from prelens.faithful import init_mlp, make_mlp
from prelens.nn import linear, tanh
from prelens.testing import (
    check_combinators,
    check_left_unit,
    check_lens_laws,
    check_right_unit,
    check_sym_natural,
    check_tamb_roundtrip,
    check_tri_compose,
    check_tri_tensor,
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
