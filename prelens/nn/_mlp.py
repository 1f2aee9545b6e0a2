"""The fast multi-layer perceptron: dense layers chained, parameters a list in data-flow order.

The array twin of the post's ``makeMlp``: with the default arguments it equals the faithful
:func:`~prelens.faithful.make_mlp` on the same weights.

>>> import numpy as np
>>> net = mlp(784, [256, 128, 10])
>>> net
mlp(784→256→128→10, tanh)
>>> from prelens.core import tree_shapes
>>> [p.weight for p in tree_shapes(net.init(0))]
['f64[784,256]', 'f64[256,128]', 'f64[128,10]']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args as A
from prelens.core._combinators import chain
from prelens.core._lens import PreLens, renamed
from prelens.core._registry import constructor
from prelens.nn._activations import Activation, resolve_activation, tanh
from prelens.nn._fastcheck import Array, check_size, dtype_suffix, float_dtype
from prelens.nn._linear import DenseParams, DenseResidue, _dense

__all__ = ["mlp"]


@constructor
def mlp(
    n_in: int,
    sizes: Sequence[int],
    activation: Activation | str | None = tanh,
    *,
    last_activation: Activation | str | None = "same",
    dtype: npt.DTypeLike = np.float64,
    init: str | None = None,
    input_delta: bool = True,
) -> PreLens[Array, Array, list[DenseResidue], list[DenseResidue], list[DenseParams], list[DenseParams], Array, Any]:
    """``chain`` of :func:`dense` layers ``n_in → sizes[0] → … → sizes[-1]``.

    Haskell::

        makeMlp :: Int -> [Int] -> TriLens V V [[((V, V), D)]] [[((V, V), D)]] [[Para]] [[Para]] V V

    Parameters: a list of :class:`DenseParams` (first layer first); residues: a list of the layers' ``(x, W,
    z)``. Shapes: ``(..., n_in) -> (..., sizes[-1])``. ``activation`` goes on every layer;
    ``last_activation`` (``"same"`` by default, as in the post) replaces it on the last one: pass ``None``
    for a classifier whose logits go into :func:`softmax_cross_entropy`. ``dtype``, ``init``,
    ``input_delta``: as in :func:`dense` (the first layer's; ``False`` is the cheaper choice for training).

    >>> clf = mlp(4, [8, 8, 3], "relu", last_activation=None, dtype=np.float32)
    >>> clf
    mlp(4→8→8→3, relu, last=None, f32)
    >>> y = clf.fwd(clf.init(0), np.zeros((16, 4), np.float32))[1]
    >>> y.shape, y.dtype
    ((16, 3), dtype('float32'))
    """
    n_in = check_size("mlp", "n_in", n_in)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or len(sizes) == 0:
        raise E.must_be("mlp", "sizes", "a non-empty list of layer widths", repr(sizes))
    widths = [check_size("mlp", f"sizes[{i}]", n) for i, n in enumerate(sizes)]
    dt = float_dtype("mlp", dtype)
    input_delta = A.flag("mlp", "input_delta", input_delta)
    act = resolve_activation("mlp", activation)
    same = isinstance(last_activation, str) and last_activation == "same"
    last = act if same else resolve_activation("mlp", last_activation)
    acts = [act] * (len(widths) - 1) + [last]
    layers = [  # a hidden layer's input is the layer before's fresh output: kept without a copy
        _dense(m, n, a, dtype=dt, init=init, input_delta=input_delta or i > 0, copy_input=i == 0)
        for i, (m, n, a) in enumerate(zip([n_in, *widths[:-1]], widths, acts))
    ]
    name = (
        f"mlp({'→'.join(map(str, [n_in, *widths]))}, {act.name if act else 'None'}"
        f"{'' if last is act else ', last=' + (last.name if last else 'None')}{dtype_suffix(dt)}"
        f"{'' if input_delta else ', input_delta=False'})"
    )
    # Keep chain's op and parts (summaries open it up); only the name is the MLP's.
    return renamed(chain(*layers), name)
