"""``prelens.core``: the pre-lens, its two compositions, the trace, the isomorphisms and the combinators."""

from prelens.core._combinators import add_l, batch_n, branch, branch_t, chain, copy_l, vec_lens
from prelens.core._iso import (
    assoc,
    assoc_l,
    first,
    iso_lens,
    lunit,
    lunit_l,
    runit,
    runit_l,
    second,
    skip_left,
    skip_left_l,
    skip_right,
    skip_right_l,
    sym,
    sym_l,
    unassoc,
    unassoc_l,
    unlunit,
    unlunit_l,
    unrunit,
    unrunit_l,
)
from prelens.core._lens import AnyLens, PreLens, id_pre_lens, parameter_free, pre_compose, prod_lens
from prelens.core._registry import constructor, register_constructor
from prelens.core._trace import backward, forward, vjp
from prelens.core._tree import (
    check_structure,
    structure_mismatch,
    tree_add,
    tree_allclose,
    tree_first_difference,
    tree_first_nonfinite,
    tree_leaves,
    tree_map,
    tree_paths,
    tree_scale,
    tree_shapes,
    tree_sum,
    tree_zeros_like,
    tree_zip_map,
)
