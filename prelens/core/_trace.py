"""The trace: tie the residue of the forward pass to the backward pass.

Haskell::

    data ExLens a da p dp s ds = forall m. ExLens (PreLens a da m m p dp s ds)
    fwd' :: ExLens a da p dp s ds -> (p, s) -> a
    bwd' :: ExLens a da p dp s ds -> (p, s, da) -> (dp, ds)

The trace identifies the residue's two slots (``m m``: the post's "we'll use
the same type for dm as for m", an existential type, i.e. a coend): the
residue ``m`` that ``fwd`` returns is handed, itself, to ``bwd`` as its ``dm``.
:func:`forward` and :func:`backward` are ``fwd'`` and ``bwd'`` (``backward``
re-runs the forward pass, as the Haskell ``bwd'`` does). :func:`vjp` is the
efficient form: one forward pass, and a pullback ``da ↦ bwd(m, da)`` that
closes over the stored residue; the pullback, linear in ``da``, is the
vector-Jacobian product at ``(p, s)``.

The first time a lens that is not a composite (``>>``, ``@``, ``chain`` check
their parts themselves) is run backward here, its ``(dp, ds)`` is checked
against the ``p`` and ``s`` of the forward pass (see ``prelens._lens``): a
``bwd`` that returns the wrong structure is named with the tree path of the
first misfit. A lens nested too deeply for Python's stack raises one
:class:`~prelens.errors.DepthError` that says how to flatten it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prelens.core import _args
from prelens.core._lens import (
    DA,
    DP,
    DS,
    A,
    M,
    P,
    PreLens,
    S,
    as_pair,
    check_deltas,
    depth_error,
    forward_only,
    is_validated,
)
from prelens.tambara._trilens import AnyTriLens, from_tamb

Lensish = PreLens[A, DA, M, M, P, DP, S, DS] | AnyTriLens


def _as_prelens(lens: Any, fn: str) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    if isinstance(lens, PreLens):
        return lens
    return from_tamb(_args.lens_or_trilens(fn, "lens", lens))


def _run_fwd(lens: PreLens[Any, Any, Any, Any, Any, Any, Any, Any], p: Any, s: Any) -> tuple[Any, Any]:
    try:
        out = lens.fwd(p, s)
    except RecursionError as exc:
        raise depth_error(exc, lens) from None
    return out if type(out) is tuple and len(out) == 2 else as_pair(lens, out, "fwd")


def _needs_check(lens: PreLens[Any, Any, Any, Any, Any, Any, Any, Any]) -> bool:
    """Composites check their parts; other lenses are checked here once."""
    return lens.op not in (">>", "@", "chain") and not is_validated(lens)


def _run_bwd(
    lens: PreLens[Any, Any, Any, Any, Any, Any, Any, Any], m: Any, da: Any, p: Any, s: Any, check: bool
) -> tuple[Any, Any]:
    try:
        out = lens.bwd(m, da)
    except RecursionError as exc:
        raise depth_error(exc, lens) from None
    if type(out) is not tuple or len(out) != 2:
        out = as_pair(lens, out, "bwd")
    if check:
        check_deltas(lens, out, p, s)
    return out


def forward(lens: Lensish[A, DA, M, P, DP, S, DS], p: P, s: S) -> A:
    """The output of the forward pass, residue dropped (Haskell: ``fwd'``).

    Haskell::

        forward :: PreLens a da m m p dp s ds -> p -> s -> a
        fwd'    :: ExLens a da p dp s ds -> (p, s) -> a

    ``lens`` may also be a TriLens (run through :func:`~prelens.from_tamb`).

    >>> from prelens import id_pre_lens
    >>> forward(id_pre_lens, (), 3.0)
    3.0
    """
    lens_ = _as_prelens(lens, "forward")
    with forward_only():  # the residue is dropped: no first-call witness is built for it
        _, a = _run_fwd(lens_, p, s)
    out: A = a
    return out


def backward(lens: Lensish[A, DA, M, P, DP, S, DS], p: P, s: S, da: DA) -> tuple[DP, DS]:
    """``(dp, ds)`` for an output delta, re-running the forward pass (Haskell: ``bwd'``).

    Haskell::

        backward :: PreLens a da m m p dp s ds -> p -> s -> da -> (dp, ds)
        bwd'     :: ExLens a da p dp s ds -> (p, s, da) -> (dp, ds)

    ``dp`` has the structure of ``p`` and ``ds`` that of ``s``.

    >>> from prelens import id_pre_lens
    >>> backward(id_pre_lens, (), 3.0, 1.0)
    ((), 1.0)
    """
    lens_ = _as_prelens(lens, "backward")
    m, _ = _run_fwd(lens_, p, s)
    return _run_bwd(lens_, m, da, p, s, _needs_check(lens_))


def vjp(lens: Lensish[A, DA, M, P, DP, S, DS], p: P, s: S) -> tuple[A, Callable[[DA], tuple[DP, DS]]]:
    """Run the forward pass once; return the output and a pullback ``da -> (dp, ds)``.

    Haskell::

        vjp :: PreLens a da m m p dp s ds -> p -> s -> (a, da -> (dp, ds))

    The pullback closes over the residue ``m`` and computes ``bwd(m, da)``: the
    trace hands the residue itself to ``bwd``. It is linear in ``da``, the
    vector-Jacobian product at ``(p, s)``, and the forward pass is never
    recomputed (like ``jax.vjp``). One call of each pass per component lens.

    >>> from prelens import PreLens
    >>> square = PreLens(lambda p, s: (s, s * s), lambda m, da: ((), 2 * m * da), name="square")
    >>> a, pullback = vjp(square, (), 3.0)
    >>> a, pullback(1.0)
    (9.0, ((), 6.0))
    """
    lens_ = _as_prelens(lens, "vjp")
    m, a = _run_fwd(lens_, p, s)
    if _needs_check(lens_):

        def checked_pullback(da: DA) -> tuple[DP, DS]:
            return _run_bwd(lens_, m, da, p, s, True)

        return a, checked_pullback
    bwd = lens_.bwd

    def pullback(da: DA) -> tuple[DP, DS]:
        try:
            return bwd(m, da)
        except RecursionError as exc:
            raise depth_error(exc, lens_) from None

    return a, pullback
