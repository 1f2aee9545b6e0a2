"""The residual connection ``x + f(x)``, built from the wiring lenses ``copy_l``, ``@`` and ``add_l``.

The seeds' "adjusted meaning" ``E' = E + ΔE``: the input travels past ``f``
unchanged and is added to what ``f`` makes of it. As a lens::

    residual(f) = copy_l >> (id_pre_lens @ f) >> add_l

whose backward pass adds the delta that flows around ``f`` to the one that
flows through it. With ``context=True``, ``f`` takes a pair ``(x, c)``
(cross-attention to an encoder's output ``c``) and the result is
``x + f(x, c)``::

    residual(f, context=True) = (copy_l @ id_pre_lens) >> assoc_l >> (id_pre_lens @ f) >> add_l

The wiring has unit parameters and residues; they are stripped by the
unitors, so ``residual(f)`` has exactly the parameters and the residue of ``f``.
"""

from __future__ import annotations

from typing import Any

from .. import _args as A
from .._combinators import add_l, copy_l
from .._construction import constructor
from .._iso import assoc_l
from .._lens import AnyLens, id_pre_lens
from ._transformer_wiring import lift_probes, reparam, with_probes

__all__ = ["residual"]


@constructor
def residual(f: AnyLens, *, context: bool = False) -> AnyLens:
    """``x -> x + f(x)`` (or ``(x, c) -> x + f(x, c)`` with ``context=True``); params and residue of ``f``.

    Haskell::

        residual :: PreLens a da m dm p dp a da -> PreLens a da m dm p dp a da
        -- context=True:
        residual :: PreLens a da m dm p dp (a, c) (da, dc) -> PreLens a da m dm p dp (a, c) (da, dc)

    ``f``'s output must have the shape of ``x``.

    >>> import numpy as np
    >>> from prelens import parameter_free
    >>> double = parameter_free("double", lambda s: ((), 2 * s), lambda m, da: 2 * da)
    >>> r = residual(double)
    >>> r, r.fwd((), np.array([1.0])), r.bwd((), np.array([1.0]))
    (residual(double), ((), array([3.])), ((), array([3.])))
    """
    f = A.lens("residual", "f", f)
    if A.flag("residual", "context", context):
        # (x, c) -> ((x, x), c) -> (x, (x, c)) -> (x, f(x, c)) -> x + f(x, c)
        body = (copy_l @ id_pre_lens) >> assoc_l >> (id_pre_lens @ f) >> add_l
        # params (p_add, (p_par, (p_assoc, p_copy))); residue (((m_copy, m_assoc), m_par), m_add)
        lens = reparam(
            body,
            f"residual({f!r}, context)",
            p_to=lambda p: ((), (((), p), ((), ((), ())))),
            p_from=lambda dp: dp[1][0][1],
            m_to=lambda m: m[0][1][1],
            m_from=lambda m: (((((), ()), ()), ((), m)), ()),
        )
    else:
        body = copy_l >> (id_pre_lens @ f) >> add_l
        # params (p_add, (p_par, p_copy)); residue ((m_copy, m_par), m_add)
        lens = reparam(
            body,
            f"residual({f!r})",
            p_to=lambda p: ((), (((), p), ())),
            p_from=lambda dp: dp[1][0][1],
            m_to=lambda m: m[0][1][1],
            m_from=lambda m: (((), ((), m)), ()),
        )
    return with_probes(lens, lift_probes(f, "", _same))


def _same(m: Any) -> Any:
    return m
