"""``prelens.tambara``: the profunctor (triple Tambara) encoding and its interpretations."""

from prelens.tambara._meanings import Cost, CostTable, Rule, Shapes, placeholder, register_rule, shape_of
from prelens.tambara._program import Program
from prelens.tambara._scan import scan_t
from prelens.tambara._trilens import (
    PLeft,
    PRight,
    TriLens,
    Trimbara,
    TriProfunctor,
    alpha,
    beta,
    dimap_m,
    dimap_p,
    dimap_s,
    from_tamb,
    interpret,
    to_tamb,
    tri_compose,
    tri_tensor,
)

__all__ = [
    "Cost",
    "CostTable",
    "PLeft",
    "PRight",
    "Program",
    "Rule",
    "Shapes",
    "TriLens",
    "TriProfunctor",
    "Trimbara",
    "alpha",
    "beta",
    "dimap_m",
    "dimap_p",
    "dimap_s",
    "from_tamb",
    "interpret",
    "placeholder",
    "register_rule",
    "scan_t",
    "shape_of",
    "to_tamb",
    "tri_compose",
    "tri_tensor",
]
