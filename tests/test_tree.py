"""The tree toolkit."""

from typing import NamedTuple

import numpy as np
import pytest

from prelens import (
    StructureError,
    check_structure,
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
