"""L2 regularisation as a term of the loss: a lens on the loss wire, parametrised by the weights; how it differs
from decoupled weight decay (:func:`~prelens.learn.adamw`) under Adam: docs/learning.md."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import dtype_kind, is_array, is_real_scalar, zeros_like
from prelens.core import _args
from prelens.core._lens import AnyLens, PreLens, as_lens
from prelens.core._tree import tree_add, tree_leaves, tree_map
from prelens.learn._optimizer import check_params, is_real_leaf, own_copy
from prelens.learn._rate import check_loss
from prelens.learn._xp import cast, total_squares


def l2(lam: float) -> AnyLens:
    """The L2 penalty on the loss wire: ``(p, L) ↦ L + ½λ Σ p²`` over every float leaf of ``p``.

    Backward: ``dp = da·λ·p`` (zeros at leaves that are not floats, such as dropout keys), ``dL = da``.
    Every float parameter is penalised, biases included. Use it through :func:`penalised`.

    >>> import numpy as np
    >>> pen = l2(0.1)
    >>> m, total = pen.fwd([np.array([3.0, 4.0])], 1.0)
    >>> float(total), pen.bwd(m, 1.0)
    (2.25, ([array([0.3, 0.4])], 1.0))
    """
    lam_ = _args.real("l2", "lam", lam, low=0.0)
    name = f"l2({lam_!r})"

    def fwd(p: Any, loss: Any) -> tuple[Any, Any]:
        check_params(name, _floats_only(p))  # floats, and integer arrays (dropout keys) left out
        check_loss(name, loss)
        total, arrays = total_squares([x for x in tree_leaves(p) if is_real_leaf(x, floats_only=True)])
        if arrays is None:
            return own_copy(p), loss + 0.5 * lam_ * total
        return own_copy(p), loss + cast(0.5 * lam_ * (arrays + total), loss)

    def bwd(m: Any, da: Any) -> tuple[Any, Any]:
        check_params(name, _floats_only(m))  # the residue is the parameters
        if not is_real_scalar(da):
            raise E.must_be(name, "output delta", "a real number", E.describe(da))
        scale = da * lam_ if is_array(da) and not isinstance(da, np.ndarray) else float(da) * lam_
        return tree_map(lambda x: x * cast(scale, x) if is_real_leaf(x, floats_only=True) else zeros_like(x), m), da

    return PreLens(fwd, bwd, name, None)


def penalised(model: AnyLens, loss: AnyLens, penalty: AnyLens) -> AnyLens:
    """``model >> loss >> penalty`` with the penalty's parameters tied to the model's.

    Parameters ``(targets, params)``, as ``model >> loss`` has them (so it is a
    drop-in for it); the parameter delta is the model's plus the penalty's.

    >>> import numpy as np
    >>> from prelens import vjp
    >>> from prelens.nn import linear, mse
    >>> model = linear(2, 1)
    >>> w = np.ones((2, 1))
    >>> (targets, x) = (np.zeros((1, 1)), np.zeros((1, 2)))
    >>> value, pullback = vjp(penalised(model, mse, l2(0.5)), (targets, w), x)
    >>> float(value), pullback(1.0)[0][1].ravel()
    (0.5, array([0.5, 0.5]))
    """
    model = as_lens("penalised", "model", model)
    loss = as_lens("penalised", "loss", loss)
    penalty = as_lens("penalised", "penalty", penalty)
    body = model >> loss >> penalty  # params (p_penalty, (targets, params))

    def to(tp: Any) -> Any:
        if not (isinstance(tp, tuple) and len(tp) == 2):
            raise E.must_be(name, "parameters", "a pair (targets, params)", E.describe_tree(tp))
        return tp[1], tp

    def back(d: Any) -> Any:
        d_pen, (d_t, d_p) = d
        return d_t, tree_add(d_p, d_pen)

    name = f"penalised({model!r}, {loss!r}, {penalty!r})"
    return body.dimap_p(to, back).named(name)


def _floats_only(p: Any) -> Any:
    """``p`` with its integer arrays (dropout keys: not penalised) left out of the parameter check."""
    return tree_map(lambda x: 0.0 if is_array(x) and dtype_kind(x.dtype) in "iu" else x, p)
