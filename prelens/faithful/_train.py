"""The trace step: the post's network trained on a batch, one plain-gradient step at a time (its algebra:
docs/faithful.md, "The loss and the training step"; :func:`_step` is it line by line).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import batch_n
from prelens.core._lens import AnyLens
from prelens.core._registry import constructor
from prelens.core._trace import forward, vjp
from prelens.core._tree import tree_add, tree_scale
from prelens.faithful._loss import loss_l
from prelens.nn._fastcheck import real_vector
from prelens.tambara._trilens import AnyTriLens, TriLens, as_lens_or_trilens, from_tamb

Vec = npt.NDArray[np.float64]
Params = Any  # [[Para]] for make_mlp; any parameter tree for another network


def _rows(fn: str, what: str, xs: Any) -> list[Vec]:
    """A batch (a 2-D array or a list of vectors) as a list of 1-D float64 arrays."""
    if isinstance(xs, np.ndarray):
        if xs.ndim != 2:
            raise E.lens_shape_error(fn, what, "a 2-D array (batch, features)", E.describe(xs))
        if len(xs) == 0:
            raise E.lens_shape_error(fn, what, "a 2-D array (batch, features) with at least one row", E.describe(xs))
        if xs.dtype.kind not in "iuf":
            raise E.lens_dtype_error(fn, what, "a 2-D array of real numbers (batch, features)", E.describe(xs))
        return [np.array(x, dtype=np.float64) for x in xs]
    if not isinstance(xs, (list, tuple)) or len(xs) == 0:
        raise E.must_be(fn, what, "a non-empty list of vectors", E.describe(xs))
    return [real_vector(fn, f"{what} {i}", x).copy() for i, x in enumerate(xs)]


def _data(fn: str, xs: Any, ys: Any) -> tuple[list[Vec], list[Vec]]:
    """Inputs and targets as lists of vectors, one of each per sample."""
    xs_, ys_ = _rows(fn, "inputs", xs), _rows(fn, "targets", ys)
    if len(xs_) != len(ys_):
        raise E.list_length_error(fn, "targets", len(xs_), len(ys_))
    return xs_, ys_


def _batched(mlp: AnyTriLens | AnyLens, n: int) -> AnyLens:
    """The network (checked by the caller) on ``n`` samples: the post's ``from_tamb(batch_n(n, mlp))``, or a
    pre-lens batched."""
    return from_tamb(batch_n(n, mlp)) if isinstance(mlp, TriLens) else batch_n(n, mlp)


@constructor
def batch_loss_l(mlp: AnyTriLens | AnyLens, n: int) -> AnyLens:
    """Deprecated: ``from_tamb(batch_n(n, mlp)) >> loss_l`` (the post's ``batchLoss``; parameters ``(ys, θ)``).

    >>> import numpy as np
    >>> from prelens.faithful import make_mlp, init_mlp
    >>> params = init_mlp(3, [1], np.random.default_rng(0))
    >>> net = batch_loss_l(make_mlp(3, [1]), 2)
    >>> _, loss = net.fwd(([[0.0], [0.0]], params), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    >>> loss > 0
    True
    """
    as_lens_or_trilens("batch_loss_l", "mlp", mlp)
    return _batched(mlp, _args.count("batch_loss_l", "n", n)) >> loss_l


def train_step(mlp: AnyTriLens | AnyLens, params: Params, xs: Any, ys: Any, rate: float) -> tuple[Params, float]:
    """One step of gradient descent on a batch (the post's ``testLearning``): ``(params − rate·dθ, loss)``.

    ``loss`` is ``½ Σ (s − g)²`` at ``params`` (before the update), ``dθ`` its gradient summed over the
    batch; ``params`` is not modified. ``mlp`` is the TriLens or a pre-lens; ``xs (batch, m_in)``,
    ``ys (batch, n_out)`` (2-D arrays or lists of vectors); ``params`` as :func:`init_mlp` makes them.

    >>> import numpy as np
    >>> from prelens.datasets import TOY_XS, TOY_YS
    >>> from prelens.faithful import make_mlp, init_mlp
    >>> mlp, params = make_mlp(3, [4, 4, 1]), init_mlp(3, [4, 4, 1], np.random.default_rng(0))
    >>> new_params, loss = train_step(mlp, params, TOY_XS, TOY_YS, rate=0.5)
    >>> round(loss, 4), params[0][0].bias, new_params[0][0].bias != 0.0
    (1.8572, 0.0, True)
    """
    xs_, ys_ = _data("train_step", xs, ys)
    rate = _args.real("train_step", "rate", rate, low=0.0)
    return _step(_batch_loss(mlp, len(xs_)), params, xs_, ys_, rate)


#: The batched network of each ``mlp`` seen by :func:`train_step`, per batch size (built once, not each step).
_BATCH_LOSSES: weakref.WeakKeyDictionary[Any, dict[int, AnyLens]] = weakref.WeakKeyDictionary()


def _batch_loss(mlp: Any, n: int) -> AnyLens:
    built = _BATCH_LOSSES.setdefault(as_lens_or_trilens("train_step", "mlp", mlp), {})
    if n not in built:
        built[n] = _batched(mlp, n) >> loss_l
    return built[n]


def _step(net: AnyLens, params: Params, xs: list[Vec], ys: list[Vec], rate: float) -> tuple[Params, float]:
    loss, pullback = vjp(net, (ys, params), xs)  # forward once; the residues stay in the pullback
    if not np.isfinite(loss):
        raise E.non_finite("train_step: loss", "")
    (_, d_params), _ = pullback(1.0)  # da = 1: the plain gradient, summed over the batch
    return tree_add(params, tree_scale(-rate, d_params)), loss  # θ ← θ − rate·dθ


def train_faithful(
    mlp: AnyTriLens | AnyLens, params: Params, xs: Any, ys: Any, rate: float, steps: int
) -> tuple[Params, list[float]]:
    """``steps`` calls of :func:`train_step` on one batch (network built once): ``(params, losses)``.

    ``losses[k]`` is the loss before step ``k``; the ``params`` passed in are not modified.

    >>> import numpy as np
    >>> from prelens.datasets import TOY_XS, TOY_YS
    >>> from prelens.faithful import make_mlp, init_mlp
    >>> mlp, params = make_mlp(3, [4, 4, 1]), init_mlp(3, [4, 4, 1], np.random.default_rng(0))
    >>> params, losses = train_faithful(mlp, params, TOY_XS, TOY_YS, rate=0.5, steps=20)
    >>> len(losses), losses[-1] < 0.01
    (20, True)
    """
    steps = _args.count("train_faithful", "steps", steps, least=0)
    rate = _args.real("train_faithful", "rate", rate, low=0.0)
    as_lens_or_trilens("train_faithful", "mlp", mlp)
    xs_, ys_ = _data("train_faithful", xs, ys)
    net = _batched(mlp, len(xs_)) >> loss_l
    losses: list[float] = []
    for _ in range(steps):
        params, loss = _step(net, params, xs_, ys_, rate)
        losses.append(loss)
    return params, losses


def predict_faithful(mlp: AnyTriLens | AnyLens, params: Params, xs: Any) -> list[Any]:
    """The network's outputs on a batch ``xs (batch, m_in)``: ``forward(from_tamb(batch_n(n, mlp)), params, xs)``.

    A list (for :func:`make_mlp`, of lists of ``sizes[-1]`` floats); ``mlp`` is the TriLens or a pre-lens.

    >>> import numpy as np
    >>> from prelens.faithful import Para, make_mlp
    >>> params = [[Para(0.0, np.array([1.0, 0.0, 0.0]))]]
    >>> [[round(a, 4) for a in out] for out in predict_faithful(make_mlp(3, [1]), params, [[1.0, 5.0, 5.0]])]
    [[0.7616]]
    """
    as_lens_or_trilens("predict_faithful", "mlp", mlp)
    xs_ = _rows("predict_faithful", "inputs", xs)
    out: list[Any] = forward(_batched(mlp, len(xs_)), params, xs_)
    return out
