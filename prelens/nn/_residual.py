"""The residual connection ``x + f(x)`` (the seeds' "adjusted meaning" ``E' = E + ΔE``): the wiring ``copy_l``,
``@``, ``add_l`` around ``f`` (:func:`residual_composed`), fused into one lens by :func:`residual` (one Python
call per pass instead of seven: 1% of a small language model's step).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from prelens import errors as E
from prelens.core import _args as A
from prelens.core._combinators import add_l, copy_l
from prelens.core._iso import assoc_l
from prelens.core._lens import AnyLens, as_lens, id_pre_lens
from prelens.core._registry import constructor
from prelens.core._tree import tree_sum
from prelens.nn._transformer_wiring import probes_of, reparam, with_probes
from prelens.show._summary import register_opening

__all__ = ["residual", "residual_composed"]


@constructor
def residual(f: AnyLens, *, context: bool = False) -> AnyLens:
    """``x -> x + f(x)`` (or ``(x, c) -> x + f(x, c)`` with ``context=True``); params and residue of ``f``.

    ``f``'s output must have the shape of ``x``. Forward ``(p, x) -> (m, x + a)``
    where ``(m, a) = f.fwd(p, x)``; backward ``(m, da) -> (dp, dx + da)`` where
    ``(dp, dx) = f.bwd(m, da)``: equal to :func:`residual_composed` (tested).

    >>> import numpy as np
    >>> from prelens.core import parameter_free
    >>> double = parameter_free("double", lambda s: ((), 2 * s), lambda m, da: 2 * da)
    >>> r = residual(double)
    >>> r, r.fwd((), np.array([1.0])), r.bwd((), np.array([1.0]))
    (residual(double), ((), array([3.])), ((), array([3.])))
    """
    composed = _composed("residual", f, context)
    f_fwd, f_bwd, name = f.fwd, f.bwd, composed.name

    def fwd(p: Any, s: Any) -> tuple[Any, Any]:
        if context and not (type(s) is tuple and len(s) == 2):
            raise E.not_a_pair(name, "input", "(x, context)", s)
        m, a = f_fwd(p, s)
        x = s[0] if context else s
        try:
            return m, tree_sum([x, a])
        except E.PrelensError:
            like = f"like the input x, {E.describe_tree(x)}"
            raise E.must_be(name, f"the output of {E.short_name(f.name)}", like, E.describe_tree(a)) from None

    def bwd(m: Any, da: Any) -> tuple[Any, Any]:
        dp, ds = f_bwd(m, da)
        if not context:
            return dp, tree_sum([ds, da])
        if not (type(ds) is tuple and len(ds) == 2):
            raise E.not_a_pair(name, f"the input delta of {E.short_name(f.name)}", "(dx, dc)", ds)
        return dp, (tree_sum([ds[0], da]), ds[1])

    fused = replace(composed, fwd=fwd, bwd=bwd)  # its name, initializer and parts: the composite's
    register_opening(fused, _body_params(context))
    return with_probes(fused, probes_of(composed))


@constructor
def residual_composed(f: AnyLens, *, context: bool = False) -> AnyLens:
    """:func:`residual` as the composition it is: ``copy_l >> (id_pre_lens @ f) >> add_l``, seen
    through the unitors (with ``context=True``: ``(copy_l @ id_pre_lens) >> assoc_l >> (id_pre_lens @ f) >> add_l``).

    >>> import numpy as np
    >>> from prelens.core import parameter_free
    >>> double = parameter_free("double", lambda s: ((), 2 * s), lambda m, da: 2 * da)
    >>> residual_composed(double).fwd((), np.array([1.0]))
    ((), array([3.]))
    """
    return _composed("residual_composed", f, context)


def _composed(fn: str, f: AnyLens, context: bool) -> AnyLens:
    """The composite, named ``fn(f)`` (or ``fn(f, context)``), with ``f``'s probes."""
    f = as_lens(fn, "f", f)
    context = A.flag(fn, "context", context)
    # (x, c) -> ((x, x), c) -> (x, (x, c)) -> (x, f(x, c)) -> x + f(x, c), or x -> (x, x) -> (x, f(x)) -> x + f(x)
    wiring = (copy_l @ id_pre_lens) >> assoc_l if context else copy_l
    body = wiring >> (id_pre_lens @ f) >> add_l
    # params (p_add, (p_par, p_wiring)); residue ((m_wiring, m_par), m_add) with m_par = (m_id, m_f)
    m_wiring: Any = (((), ()), ()) if context else ()
    lens = reparam(
        body,
        f"{fn}({f!r}{', context' if context else ''})",
        p_to=_body_params(context),
        p_from=lambda dp: dp[1][0][1],
        m_to=lambda m: m[0][1][1],
        m_from=lambda m: ((m_wiring, ((), m)), ()),
    )
    return with_probes(lens, probes_of(f))


def _body_params(context: bool) -> Any:
    """``f``'s parameters as the composite's body takes them (its wiring's units around them)."""
    wiring: Any = ((), ((), ())) if context else ()
    return lambda p: ((), (((), p), wiring))
