"""prelens: neural networks built and trained as composable pre-lenses.

A port of Bartosz Milewski's "Neural Networks, Pre-lenses, and Triple Tambara
Modules" to Python. The top level holds the post's vocabulary: the pre-lens, its
two compositions, the isomorphisms, the trace, the combinators and the Tambara
encoding. The rest lives in packages, one idea each (docs/architecture.md):
``prelens.core`` (trees, declarations), ``prelens.tambara`` (interpretations),
``prelens.nn`` (fast lenses), ``prelens.faithful`` (the post's network),
``prelens.learn`` (optimisers), ``prelens.train`` (``fit``), ``prelens.io``
(files), ``prelens.testing`` (the law kit), ``prelens.datasets``.
"""

from typing import Any

# Every layer, bottom to top: importing prelens registers every constructor, named tuple and lens value
# (model files read those registries), and gives each package as an attribute (prelens.nn ...).
from prelens import backend as _backend_pkg
from prelens import core as _core_pkg
from prelens import datasets, learn, nn, io, train, faithful
from prelens import errors as _errors_mod
from prelens import show as _show_pkg
from prelens import tambara as _tambara_pkg
from prelens._deprecated import moved as _moved
from prelens._deprecated import now_in as _now_in
from prelens._version import __version__
from prelens.core import (
    PreLens,
    add_l,
    assoc,
    backward,
    batch_n,
    branch,
    chain,
    copy_l,
    first,
    forward,
    id_pre_lens,
    iso_lens,
    lunit,
    pre_compose,
    prod_lens,
    runit,
    scan,
    second,
    sym,
    unassoc,
    unlunit,
    unrunit,
    vec_lens,
    vjp,
)
from prelens.core._iso import ISO_LENSES as _ISO_LENSES
from prelens.errors import DTypeError, LawError, NonFiniteError, PrelensError, ShapeError, StructureError
from prelens.io import load_model, save_model
from prelens.show import summary
from prelens.tambara import (
    PLeft,
    PRight,
    TriLens,
    Trimbara,
    alpha,
    beta,
    dimap_m,
    dimap_p,
    dimap_s,
    from_tamb,
    to_tamb,
    tri_compose,
    tri_tensor,
)

__all__ = [
    "DTypeError",
    "LawError",
    "NonFiniteError",
    "PLeft",
    "PRight",
    "PreLens",
    "PrelensError",
    "ShapeError",
    "StructureError",
    "TriLens",
    "Trimbara",
    "__version__",
    "add_l",
    "alpha",
    "assoc",
    "backward",
    "batch_n",
    "beta",
    "branch",
    "chain",
    "copy_l",
    "dimap_m",
    "dimap_p",
    "dimap_s",
    "first",
    "forward",
    "from_tamb",
    "id_pre_lens",
    "iso_lens",
    "load_model",
    "lunit",
    "pre_compose",
    "prod_lens",
    "runit",
    "save_model",
    "scan",
    "second",
    "summary",
    "sym",
    "to_tamb",
    "tri_compose",
    "tri_tensor",
    "unassoc",
    "unlunit",
    "unrunit",
    "vec_lens",
    "vjp",
]


#: Names the top level held in 0.3: each still works for one release, with a warning naming its new home.
_MOVED: dict[str, tuple[str, Any]] = {
    **{name: (f"prelens.iso_lens(...) of the isomorphism ({name})", lens) for name, lens in _ISO_LENSES.items()},
    **_now_in(_core_pkg, "check_structure structure_mismatch tree_first_nonfinite parameter_free tree_add"),
    **_now_in(_core_pkg, "tree_allclose tree_first_difference tree_leaves tree_map skip_left skip_right"),
    **_now_in(_tambara_pkg, "TriProfunctor"),
    **_now_in(_core_pkg, "tree_paths tree_scale tree_shapes tree_sum tree_zeros_like tree_zip_map"),
    **_now_in(_tambara_pkg, "Cost CostTable Program Rule Shapes interpret placeholder register_rule shape_of"),
    **_now_in(_show_pkg, "Stage Summary"),
    **_now_in(io, "LoadedModel register_constructor"),
    **_now_in(_backend_pkg, "BACKENDS to_backend to_numpy"),
    **_now_in(_errors_mod, "ArgumentError CheckpointError ModelFileError"),
    "branch_t": ("prelens.faithful.branch_t", faithful.branch_t),
}
__getattr__ = _moved("prelens", _MOVED)
