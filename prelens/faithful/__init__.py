"""``prelens.faithful``: the post's network, one neuron at a time (docs/faithful.md).

The pieces keep the post's names in snake_case (``linear_l`` is ``linearL``, ``make_mlp`` ``makeMlp``); a
pre-lens of a TriLens is ``from_tamb`` of it; ``dense_from_paras`` and friends carry parameters to and
from the fast lenses of :mod:`prelens.nn`.

>>> import numpy as np
>>> from prelens import from_tamb
>>> net = from_tamb(make_mlp(3, [4, 1]))
>>> len(net.fwd(init_mlp(3, [4, 1], np.random.default_rng(0)), [1.0, 2.0, 3.0])[1])
1
"""

import sys
from typing import Any

import prelens.nn
from prelens import datasets as _datasets
from prelens._deprecated import moved as _moved
from prelens._deprecated import now_in
from prelens.faithful import _network, _train
from prelens.faithful._branch import branch_t
from prelens.faithful._convert import dense_from_paras, dense_to_paras, mlp_from_paras, mlp_to_paras
from prelens.faithful._loss import loss_l
from prelens.faithful._network import (
    Para,
    activ_l,
    activ_t,
    affine_t,
    bias_l,
    bias_t,
    init_mlp,
    init_para,
    layer,
    linear_l,
    linear_t,
    make_mlp,
    mk_para,
    neuron_l,
    neuron_t,
    un_para,
)
from prelens.faithful._train import predict_faithful, train_faithful, train_step
from prelens.io._describe import register_lens_values as _register_lens_values

__all__ = [
    "Para",
    "activ_l",
    "activ_t",
    "affine_t",
    "bias_l",
    "bias_t",
    "branch_t",
    "dense_from_paras",
    "dense_to_paras",
    "init_mlp",
    "init_para",
    "layer",
    "linear_l",
    "linear_t",
    "loss_l",
    "make_mlp",
    "mk_para",
    "mlp_from_paras",
    "mlp_to_paras",
    "neuron_l",
    "neuron_t",
    "predict_faithful",
    "train_faithful",
    "train_step",
    "un_para",
]

#: Names that re-spelled another thing in 0.3 (old -> (what to write instead, the old object)).
_MOVED: dict[str, tuple[str, Any]] = {
    "affine_l": ("prelens.faithful.linear_l(n) >> prelens.faithful.bias_l", _network.affine_l),
    "layer_l": (
        "prelens.from_tamb(prelens.faithful.layer(m_in, n_out)), parameters from "
        "prelens.faithful.init_mlp(m_in, [n_out], rng)[0]",
        _network.layer_l,
    ),
    "make_mlp_l": (
        "prelens.from_tamb(prelens.faithful.make_mlp(m_in, sizes)), parameters from "
        "prelens.faithful.init_mlp(m_in, sizes, rng)",
        _network.make_mlp_l,
    ),
    "batch_loss_l": ("prelens.from_tamb(prelens.batch_n(n, mlp)) >> prelens.faithful.loss_l", _train.batch_loss_l),
    "TOY_XS": ("prelens.datasets.TOY_XS", _datasets.TOY_XS),
    "TOY_YS": ("prelens.datasets.TOY_YS", _datasets.TOY_YS),
}
__getattr__ = _moved("prelens.faithful", _MOVED)

# The faithful level lived in prelens.nn until 0.4: its old names there warn and name the new ones.
# prelens.nn sits below this package and cannot import it, so this package fills nn's table.
prelens.nn._MOVED.update(
    {
        **now_in(sys.modules[__name__], [name for name in __all__ if name != "branch_t"]),
        **{name: (new, value) for name, (new, value) in _MOVED.items() if not name.startswith("TOY_")},
    }
)

# Model files name this package's lens values (bias_l, activ_l, bias_t, activ_t, loss_l).
_register_lens_values(sys.modules[__name__])
