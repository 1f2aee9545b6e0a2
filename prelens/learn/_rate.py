"""The learning-rate lens: the one place where the loss becomes a delta (docs/learning.md, "learning rate").

Unlike the paper's ``α : (L, L') → (1, 1)`` it keeps ``L`` as its output, so that a vjp of the training lens
reports the loss.
"""

from __future__ import annotations

from typing import Any

from prelens import errors as E
from prelens.backend._arrays import is_real_scalar
from prelens.core import _args
from prelens.core._lens import PreLens
from prelens.learn._optimizer import pass_through


def learning_rate(alpha: float) -> PreLens[Any, Any, tuple[()], tuple[()], tuple[()], tuple[()], Any, Any]:
    """The learning-rate lens ``α``: forward ``l ↦ l``, backward ``(l, ()) ↦ −α``.

    ``alpha`` is a finite number ``> 0``: ``model >> loss >> learning_rate(α)`` seeds the backward pass
    with ``−α`` (where :func:`~prelens.train.step` seeds ``+1`` and lets the optimiser subtract).

    >>> import numpy as np
    >>> from prelens import vjp
    >>> from prelens.nn import mse, linear
    >>> loss, pullback = vjp(learning_rate(0.5), (), 2.0)
    >>> loss, pullback(())
    (2.0, ((), -0.5))
    """
    a = _args.real("learning_rate", "alpha", alpha, low=0.0, low_open=True)
    delta = -a
    return pass_through(f"learning_rate({a!r})", check_loss, lambda da: delta)


def check_loss(name: str, loss: Any) -> None:
    """The input of a lens on the loss wire must be a real number."""
    if not is_real_scalar(loss):
        raise E.must_be(name, "input", "a loss: a real number (a float or a 0-d float array)", E.describe(loss))
