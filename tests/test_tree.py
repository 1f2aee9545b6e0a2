"""The tree toolkit."""

from typing import NamedTuple

import numpy as np
import pytest

from prelens import StructureError
from prelens.core import (
    tree_add,
    tree_allclose,
    tree_first_difference,
    tree_leaves,
    tree_map,
    tree_scale,
    tree_sum,
    tree_zeros_like,
    tree_zip_map,
)
from prelens.core._tree import check_structure


class Pair(NamedTuple):
    bias: float
    weight: np.ndarray


TREE = (Pair(1.0, np.array([1.0, 2.0])), [np.ones((2, 2)), ()], {"k": 3.0})


def test_map_keeps_structure_and_named_tuples():
    out = tree_map(lambda x: x * 2, TREE)
    assert isinstance(out[0], Pair) and out[0].bias == 2.0
    assert out[1][1] == () and out[2]["k"] == 6.0


def test_leaves_depth_first():
    assert len(tree_leaves(TREE)) == 4


def test_add_scale_zeros_sum():
    assert tree_allclose(tree_add(TREE, TREE), tree_scale(2.0, TREE))
    assert tree_allclose(tree_sum([TREE, TREE, TREE]), tree_scale(3.0, TREE))
    z = tree_zeros_like(TREE)
    assert tree_allclose(tree_add(TREE, z), TREE)
    assert z[1][0].dtype == np.float64


def test_scale_by_a_numpy_scalar_keeps_each_leaf_dtype():
    """A rate that is a numpy scalar (``np.float64(0.1)``, from a schedule) scales a float32 tree as a Python
    number does: the hand-written step ``tree_add(theta, tree_scale(-lr, dtheta))`` stays float32."""
    tree = (np.ones(3, np.float32), [np.ones(2, np.float32)])
    for c in (np.float64(0.5), np.float32(0.5), np.int64(2), 0.5):
        assert all(leaf.dtype == np.float32 for leaf in tree_leaves(tree_scale(c, tree))), c
    assert tree_scale(np.float64(0.5), (np.ones(2), 2.0))[0][0] == 0.5


def test_structure_check_reports_path():
    other = (Pair(1.0, np.array([1.0, 2.0])), [np.ones((2, 2))], {"k": 3.0})
    with pytest.raises(StructureError, match=r"params: at \[1\]: expected list of 2, got list of 1"):
        check_structure(TREE, other, what="params")


def test_structure_check_shapes():
    other = tree_map(lambda x: x, TREE)
    other = (Pair(1.0, np.zeros(3)), *other[1:])
    with pytest.raises(StructureError, match=r"at \[0\]\.weight: expected shape \(2,\), got shape \(3,\)"):
        check_structure(TREE, other, shapes=True)


def test_zip_map_rejects_mismatch():
    with pytest.raises(StructureError):
        tree_zip_map(lambda x, y: x + y, (1.0, 2.0), [1.0, 2.0])


def test_first_difference_names_leaf():
    other = tree_map(lambda x: x, TREE)
    other[2]["k"] = 4.0
    path, left, right = tree_first_difference(TREE, other)
    assert path == "[2]['k']" and (left, right) == (3.0, 4.0)


@pytest.mark.parametrize(
    "nan",
    [float("nan"), np.float64("nan"), np.array([1.0, np.nan]), np.array([np.nan], np.float32)],
    ids=["float", "numpy scalar", "array", "float32 array"],
)
def test_nan_is_close_to_nothing_not_even_nan(nan):
    """As the docstring says: NaN is close to nothing, so a law whose two sides are both NaN fails."""
    same = nan.copy() if isinstance(nan, np.ndarray) else nan
    assert not tree_allclose((1.0, [nan]), (1.0, [same]))
    assert not tree_allclose(nan, same, rtol=1.0, atol=1.0)  # no tolerance makes NaN close
    path, _, _ = tree_first_difference((1.0, [nan]), (1.0, [same]))
    assert path == "[1][0]"
    assert tree_allclose((1.0, [np.array([1.0, 2.0])]), (1.0, [np.array([1.0, 2.0])]))  # and the rest still is


def test_infinities_are_close_only_to_themselves():
    assert tree_allclose(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]))
    assert not tree_allclose(np.array([np.inf]), np.array([-np.inf]))
    assert not tree_allclose(np.array([np.inf]), np.array([1e308]), rtol=1.0)


def test_a_law_whose_two_sides_are_both_nan_fails():
    """The law kit compares through tree_first_difference: a lens that gives NaN equals nothing (NaN in the same
    entries of both sides is reported as a law that cannot be judged, not as two values that differ)."""
    from prelens import PreLens
    from prelens.testing import check_lens_equal

    nan_lens = PreLens(lambda p, s: ((), s * np.nan), lambda m, da: ((), da * np.nan), name="nan")
    with pytest.raises(AssertionError, match="law 'nan is nan' cannot be judged: forward outputs are not finite"):
        check_lens_equal("nan is nan", nan_lens, nan_lens, (), np.ones(3))
