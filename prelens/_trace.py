"""The trace: tie the residue of the forward pass to the backward pass.

Haskell::

    data ExLens a da p dp s ds = forall m. ExLens (PreLens a da m m p dp s ds)
    fwd' :: ExLens a da p dp s ds -> (p, s) -> a
    bwd' :: ExLens a da p dp s ds -> (p, s, da) -> (dp, ds)

:func:`forward` and :func:`backward` are ``fwd'`` and ``bwd'`` (``backward``
re-runs the forward pass, as the blog's does). :func:`vjp` is the efficient
form: one forward pass, and a pullback that closes over the stored residue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._lens import DA, DP, DS, A, M, P, PreLens, S
from ._tambara import AnyTriLens, TriLens, from_tamb

Lensish = PreLens[A, DA, M, M, P, DP, S, DS] | AnyTriLens


def _as_prelens(lens: Any) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    return from_tamb(lens) if isinstance(lens, TriLens) else lens


def forward(lens: Lensish[A, DA, M, P, DP, S, DS], p: P, s: S) -> A:
    """The output of the forward pass, residue dropped (Haskell: ``fwd'``).

    >>> from prelens import id_pre_lens
    >>> forward(id_pre_lens, (), 3.0)
    3.0
    """
    _, a = _as_prelens(lens).fwd(p, s)
    out: A = a
    return out


def backward(lens: Lensish[A, DA, M, P, DP, S, DS], p: P, s: S, da: DA) -> tuple[DP, DS]:
    """``(dp, ds)`` for an output delta, re-running the forward pass (Haskell: ``bwd'``).

    >>> from prelens import id_pre_lens
    >>> backward(id_pre_lens, (), 3.0, 1.0)
    ((), 1.0)
    """
    lens_ = _as_prelens(lens)
    m, _ = lens_.fwd(p, s)
    return lens_.bwd(m, da)


def vjp(lens: Lensish[A, DA, M, P, DP, S, DS], p: P, s: S) -> tuple[A, Callable[[DA], tuple[DP, DS]]]:
    """Run the forward pass once; return the output and a pullback ``da -> (dp, ds)``.

    The pullback closes over the residue, so the forward pass is never
    recomputed (like ``jax.vjp``). One call of each pass per component lens.

    >>> from prelens import PreLens
    >>> square = PreLens(lambda p, s: (s, s * s), lambda m, da: ((), 2 * m * da), name="square")
    >>> a, pullback = vjp(square, (), 3.0)
    >>> a, pullback(1.0)
    (9.0, ((), 6.0))
    """
    lens_ = _as_prelens(lens)
    m, a = lens_.fwd(p, s)
    bwd = lens_.bwd

    def pullback(da: DA) -> tuple[DP, DS]:
        return bwd(m, da)

    return a, pullback
