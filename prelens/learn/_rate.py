"""The learning-rate lens: the one place where the loss becomes a delta.

In the paper the learning rate is a lens ``α : (L, L') → (1, 1)`` that closes
the diagram: nothing comes back from the world, so its backward map *makes*
the delta of the loss, the constant ``−α``. Everything to its left (loss, model,
optimiser) runs its backward pass on that delta, and the parameter delta that
reaches the optimiser is ``−α·∇L``.

Here the lens keeps ``L`` visible as its output, so that :func:`~prelens.vjp`
of the whole training lens reports the loss: its type is ``(L, L') → (L, 1)``,
the paper's ``α`` followed by nothing. Its output delta is the unit ``()`` and
is ignored. Its backward pass is not a derivative (it ignores its delta): it
belongs to the optimiser, not to the model, and ``bwd`` of every other lens
stays the plain vector-Jacobian product.
"""

from __future__ import annotations

from typing import Any

from prelens import errors as E
from prelens.backend._arrays import is_real_scalar
from prelens.core import _args
from prelens.core._lens import PreLens
from prelens.learn._optimizer import no_params, unit_residue


def learning_rate(alpha: float) -> PreLens[Any, Any, tuple[()], tuple[()], tuple[()], tuple[()], Any, Any]:
    """The learning-rate lens ``α``: forward ``l ↦ l``, backward ``(l, ()) ↦ −α``.

    ``alpha`` is a finite number ``> 0``. Composed after a loss it seeds the
    backward pass with ``−α`` (where :func:`~prelens.train.step` seeds ``+1`` and
    lets the optimiser subtract): ``model >> loss >> learning_rate(α)``.

    >>> import numpy as np
    >>> from prelens import vjp
    >>> from prelens.nn import mse, linear
    >>> loss, pullback = vjp(learning_rate(0.5), (), 2.0)
    >>> loss, pullback(())
    (2.0, ((), -0.5))
    """
    a = _args.real("learning_rate", "alpha", alpha, low=0.0, low_open=True)
    name = f"learning_rate({alpha!r})"
    delta = -a

    def fwd(p: tuple[()], loss: Any) -> tuple[tuple[()], Any]:
        no_params(name, p)
        check_loss(name, loss)
        return (), loss

    def bwd(m: tuple[()], da: Any) -> tuple[tuple[()], float]:
        unit_residue(name, m)
        return (), delta

    return PreLens(fwd, bwd, name)


def check_loss(name: str, loss: Any) -> None:
    """The input of a lens on the loss wire must be a real number."""
    if not is_real_scalar(loss):
        raise E.must_be(name, "input", "a loss: a real number (a float or a 0-d float array)", E.describe(loss))
