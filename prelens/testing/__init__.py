"""``prelens.testing``: the public law kit.

Law checkers (raise :class:`prelens.LawError` naming the law and the first
differing leaf with its tree path), a finite-difference gradient check, and
hypothesis strategies that generate random differentiable pre-lenses with
matching data. Test your own lens in a few lines::

    from hypothesis import given
    from prelens.testing import check_lens_laws, check_vjp, seeds

    @given(seeds())
    def test_my_lens(seed):
        rng = np.random.default_rng(seed)
        p, s = my_lens.init(rng), rng.standard_normal(3)
        check_lens_laws(my_lens, p, s)

The strategies need ``hypothesis`` (the ``test`` extra); the checkers do not.
"""

from typing import Any

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
    check_sym_natural,
    check_tamb_roundtrip,
    check_tensor_assoc,
    check_tri_compose,
    check_tri_tensor,
    program_equal,
    reading_equal,
)
from prelens.testing._pure import check_pure
from prelens.testing._random import random_affine, random_like
from prelens.testing._vjp import check_vjp

_STRATEGIES = (
    "GeneratedLens",
    "chains",
    "lenses",
    "random_value",
    "seeds",
    "value_types",
    "linear_vec",
    "bias_vec",
    "scale_vec",
    "tanh_vec",
)


def __getattr__(name: str) -> Any:
    if name in _STRATEGIES:
        from prelens.testing import _strategies

        return getattr(_strategies, name)
    raise AttributeError(f"module 'prelens.testing' has no attribute {name!r}")


__all__ = [
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
    "check_pure",
    "check_right_unit",
    "check_sym_natural",
    "check_tamb_roundtrip",
    "check_tensor_assoc",
    "check_tri_compose",
    "check_tri_tensor",
    "program_equal",
    "reading_equal",
    "check_vjp",
    "random_affine",
    "random_like",
    *_STRATEGIES,
]
