"""``prelens.testing``: the public law kit (``docs/laws.md``): law checkers, three verdicts on one lens kept
apart (:func:`check_vjp` derivatives, :func:`check_pure` mutation, :func:`check_no_alias` aliasing), and
hypothesis strategies (the ``test`` extra) that generate random lenses with matching data.
"""

from typing import Any

from prelens._deprecated import moved
from prelens.testing import _random
from prelens.testing._laws import (
    check_alpha_composition,
    check_alpha_unit,
    check_assoc,
    check_beta_composition,
    check_beta_unit,
    check_coherence,
    check_combinators,
    check_dimap_composition,
    check_dimap_identity,
    check_interchange,
    check_left_unit,
    check_lens_equal,
    check_lens_laws,
    check_naturality,
    check_right_unit,
    check_scan,
    check_scan_map,
    check_sym_natural,
    check_tamb_roundtrip,
    check_tensor_assoc,
    check_tri_compose,
    check_tri_tensor,
    module_equal,
)
from prelens.testing._pure import AliasWarning, check_no_alias, check_pure
from prelens.testing._vjp import check_vjp

#: Need hypothesis: imported on first use.
_STRATEGIES = ("GeneratedLens", "chains", "lenses", "random_value", "seeds", "value_types")

_TREE_MAP = "prelens.core.tree_map"
_moved = moved(
    "prelens.testing",
    {
        "program_equal": ("prelens.testing.module_equal", module_equal),
        "reading_equal": ("prelens.testing.module_equal", module_equal),
        "random_like": (f"{_TREE_MAP}(lambda x: rng.standard_normal(np.shape(x)), tree)", _random.random_like),
        "random_affine": (f"{_TREE_MAP}(lambda x: c * x + d, tree)", _random.random_affine),
    },
)
#: The generator's primitives, once public: the library's own lenses replace them.
_OLD_PRIMITIVES = {
    "linear_vec": "prelens.nn.linear",
    "bias_vec": "prelens.nn.bias",
    "tanh_vec": "prelens.nn.tanh",
    "scale_vec": "prelens.testing.lenses()",
}


def __getattr__(name: str) -> Any:
    if name in _STRATEGIES or name in _OLD_PRIMITIVES:
        from prelens.testing import _strategies

        if name in _STRATEGIES:
            return getattr(_strategies, name)
        return moved("prelens.testing", {name: (_OLD_PRIMITIVES[name], getattr(_strategies, name))})(name)
    return _moved(name)


__all__ = [
    "AliasWarning",
    "check_alpha_composition",
    "check_alpha_unit",
    "check_assoc",
    "check_beta_composition",
    "check_beta_unit",
    "check_coherence",
    "check_combinators",
    "check_dimap_composition",
    "check_dimap_identity",
    "check_interchange",
    "check_left_unit",
    "check_lens_equal",
    "check_lens_laws",
    "check_naturality",
    "check_no_alias",
    "check_pure",
    "check_right_unit",
    "check_scan",
    "check_scan_map",
    "check_sym_natural",
    "check_tamb_roundtrip",
    "check_tensor_assoc",
    "check_tri_compose",
    "check_tri_tensor",
    "check_vjp",
    "module_equal",
    *_STRATEGIES,
]
