"""``vec_lens(n, l).init`` draws n parameter sets: n distinct draws, n distinct objects.

A planted ``[init1(rng)] * n`` (one draw shared n times) passed the whole suite before issue 13:
every copy would then start equal (and, for mutable parameters, be one object).
"""

import numpy as np
import pytest

from prelens import vec_lens
from prelens.faithful import neuron_l
from prelens.nn import dense, linear


@pytest.mark.parametrize("make", [lambda: linear(3, 2), lambda: dense(3, 2), lambda: neuron_l(3)], ids=repr)
def test_vec_lens_init_draws_each_copy_afresh(make):
    n = 4
    params = vec_lens(n, make()).init(np.random.default_rng(0))
    assert isinstance(params, list) and len(params) == n
    assert len({id(p) for p in params}) == n, "the same parameter object shared by several copies"
    leaves = [np.concatenate([np.ravel(x) for x in (p if isinstance(p, tuple) else (p,))]) for p in params]
    for i in range(n):
        for j in range(i + 1, n):
            assert not np.allclose(leaves[i], leaves[j]), f"copies {i} and {j} start with equal parameters"


def test_vec_lens_init_is_the_copies_inits_in_order():
    """The i-th parameter set is the i-th draw from the one generator (reproducible, in order)."""
    lens = linear(3, 2)
    params = vec_lens(3, lens).init(np.random.default_rng(5))
    rng = np.random.default_rng(5)
    for p in params:
        np.testing.assert_array_equal(p, lens.init(rng))
