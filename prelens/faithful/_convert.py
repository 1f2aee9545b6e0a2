"""Between the two levels: a layer's list of :class:`~prelens.faithful.Para` ↔ a weight matrix and a bias.

``layer(m_in, n_out)``'s ``[Para(bias_j, weight_j)]`` is :func:`~prelens.nn.dense`'s ``DenseParams(W, b)``
with ``W[:, j] = weight_j`` (``W (m_in, n_out)``) and ``b[j] = bias_j``; layer by layer for ``make_mlp``
and :func:`~prelens.nn.mlp`. The maps are inverse to each other and act on deltas alike.

>>> import numpy as np
>>> paras = [Para(0.5, np.array([1.0, 2.0])), Para(-1.0, np.array([3.0, 4.0]))]
>>> p = dense_from_paras(paras)
>>> p.weight
array([[1., 3.],
       [2., 4.]])
>>> [(q.bias, q.weight.tolist()) for q in dense_to_paras(p)]
[(0.5, [1.0, 2.0]), (-1.0, [3.0, 4.0])]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import is_real
from prelens.core import _args
from prelens.faithful._network import Para
from prelens.nn._fastcheck import float_dtype, real_vector
from prelens.nn._linear import DenseParams


def dense_from_paras(paras: Sequence[Para], *, dtype: npt.DTypeLike = np.float64) -> DenseParams:
    """A layer's ``[Para]`` (``n_out`` neurons of ``m_in`` weights) as fresh ``W (m_in, n_out)``, ``b (n_out,)``.

    >>> dense_from_paras([Para(0.0, np.ones(3))] * 2).weight.shape
    (3, 2)
    """
    dt = float_dtype("dense_from_paras", dtype)
    if not isinstance(paras, Sequence) or len(paras) == 0:
        raise E.must_be("dense_from_paras", "parameters", "a non-empty list of Para", E.describe(paras))
    for j, p in enumerate(paras):
        if not isinstance(p, Para):
            raise E.must_be("dense_from_paras", f"neuron {j}", "a Para", E.describe(p))
        if not is_real(p.bias):
            raise E.must_be("dense_from_paras", f"neuron {j}'s bias", "a real number", E.describe_tree(p.bias))
    weights = [real_vector("dense_from_paras", f"neuron {j}'s weight", p.weight) for j, p in enumerate(paras)]
    for j, w in enumerate(weights):  # real_vector made each 1-D; all must have neuron 0's length
        if w.shape != weights[0].shape:
            expected = f"a vector of shape {weights[0].shape} like neuron 0's"
            raise E.lens_shape_error("dense_from_paras", f"neuron {j}'s weight", expected, E.describe(w))
    return DenseParams(np.stack(weights, axis=1).astype(dt), np.array([p.bias for p in paras], dtype=dt))


def dense_to_paras(p: DenseParams) -> list[Para]:
    """``DenseParams(W (m_in, n_out), b (n_out,))`` as ``n_out`` :class:`Para` (float bias, fresh float64 weight).

    >>> dense_to_paras(DenseParams(np.ones((3, 2)), np.zeros(2)))[1]
    Para(bias=0.0, weight=array([1., 1., 1.]))
    """
    if not (isinstance(p, tuple) and len(p) == 2):
        raise E.must_be("dense_to_paras", "parameters", "DenseParams(weight, bias)", E.describe_tree(p))
    w, b = p
    for what, x in (("weight", w), ("bias", b)):
        if isinstance(x, np.ndarray) and x.dtype.kind != "f":
            raise E.lens_dtype_error("dense_to_paras", what, "a float array", E.describe(x))
    if not (isinstance(w, np.ndarray) and isinstance(b, np.ndarray) and w.ndim == 2 and b.shape == w.shape[1:]):
        raise E.lens_shape_error(
            "dense_to_paras",
            "parameters",
            "DenseParams(weight (m_in, n_out), bias (n_out,))",
            f"DenseParams({E.describe(w)}, {E.describe(b)})",
        )
    return [Para(float(b[j]), w[:, j].astype(np.float64)) for j in range(w.shape[1])]


def mlp_from_paras(layers: Sequence[Sequence[Para]], *, dtype: npt.DTypeLike = np.float64) -> list[DenseParams]:
    """``make_mlp``'s ``[[Para]]`` as :func:`~prelens.nn.mlp`'s ``[DenseParams]``, layer by layer.

    >>> from prelens.faithful._network import init_mlp
    >>> [p.weight.shape for p in mlp_from_paras(init_mlp(3, [4, 2], np.random.default_rng(0)))]
    [(3, 4), (4, 2)]
    """
    layers_ = _args.sequence("mlp_from_paras", "layers", layers, "a non-empty list of layers [Para]", non_empty=True)
    return [dense_from_paras(layer, dtype=dtype) for layer in layers_]


def mlp_to_paras(params: Sequence[DenseParams]) -> list[list[Para]]:
    """:func:`~prelens.nn.mlp`'s ``[DenseParams]`` as ``make_mlp``'s ``[[Para]]``, layer by layer.

    >>> [len(layer) for layer in mlp_to_paras([DenseParams(np.ones((3, 4)), np.zeros(4))])]
    [4]
    """
    params_ = _args.sequence("mlp_to_paras", "params", params, "a non-empty list of DenseParams", non_empty=True)
    return [dense_to_paras(p) for p in params_]
