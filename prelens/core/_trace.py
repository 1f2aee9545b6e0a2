"""The trace: tie the residue of the forward pass to the backward pass.

Haskell::

    data ExLens a da p dp s ds = forall m. ExLens (PreLens a da m m p dp s ds)
    fwd' :: ExLens a da p dp s ds -> (p, s) -> a
    bwd' :: ExLens a da p dp s ds -> (p, s, da) -> (dp, ds)

The residue ``m`` that ``fwd`` returns is handed, itself, to ``bwd`` as its ``dm`` (the post's
"same type for dm as for m", a coend). Each function runs a lens checked: on its first run its
parameters and input are compared with its declarations, so a misfit deep inside a model is
named by its path, and a failing pass is reported naming the lens. A rerun on the skeleton (containers,
dtypes, shapes) of a run checked in full skips its parts' per-call tests, as a training loop's steps do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, NoReturn

from prelens import errors as E
from prelens.core._check import diagnosed, exact_test, misfit, recording, trusting
from prelens.core._lens import AnyLens, PreLens, unguarded


@functools.singledispatch
def as_pre_lens(lens: Any, fn: str) -> AnyLens:
    """``lens`` as a pre-lens: a PreLens itself; other encodings (the TriLens) register their reading here."""
    raise E.must_be(fn, "lens", "a PreLens or a TriLens", E.describe(lens))


@as_pre_lens.register
def _(lens: PreLens, fn: str) -> AnyLens:  # type: ignore[type-arg]
    return lens


# How far the trace has checked a lens, kept in the lens's ``__dict__`` (a memo, not part of its value):
# absent, its parameters and input have not been compared with its declarations yet; INPUTS, they
# have; DELTAS, a backward pass has also run after a recorded forward pass, so every part of it has
# checked its deltas and no forward pass needs recording any more.
_STATE = "_prelens_trace_state"
INPUTS, DELTAS = 1, 2


def _check_first(lens: AnyLens, p: Any, s: Any) -> int:
    """Compare the parameters and input of a lens's first run with its declarations; its state after."""
    e = lens.expects
    err = misfit(e.params, p, e.params_name)
    if err is None and misfit(e.input, s, e.input_name) is not None:
        trusting(False, lens.fwd, p, s)  # the part that cannot take this input raises, naming itself
        err = misfit(e.input, s, e.input_name)
    if err is not None:
        raise type(err)(f"{E.short_name(lens.name)}: {err}")
    lens.__dict__[_STATE] = INPUTS
    return INPUTS


def _fail(lens: AnyLens, which: str, exc: Exception, given: tuple[Any, Any]) -> NoReturn:
    """Raise ``exc``, met in the ``which`` pass of ``lens`` run on ``given``, as the error to show (see
    ``diagnosed``), caused by ``exc`` or, where ``exc`` is already one, by what caused it."""
    err = _located(lens, diagnosed(E.short_name(lens.name), lens.expects, which, exc, *given))
    raise err from (exc.__cause__ if isinstance(exc, E.PrelensError) else exc)


def _located(root: AnyLens, err: E.PrelensError) -> E.PrelensError:
    """``err``, raised by a part of ``root``, with a line saying which part (added once)."""
    part = getattr(err, "_prelens_lens", None)
    if part is None or part is root or getattr(err, "_prelens_where", False):
        return err
    path = _path_to(root, part)
    if path is None:
        return err
    where = f"in {E.short_name(root.name)}: part {'.'.join(map(str, path))} ({E.short_name(part.name, 80)})"
    try:
        new = type(err)(f"{err}\n  {where}")
    except TypeError:  # an error class with a richer constructor: keep it, add a note
        err.add_note(where)
        return err
    new.__dict__.update(err.__dict__)
    E.mark(new, _prelens_where=True)
    new.__cause__ = err.__cause__
    return new


def _path_to(root: AnyLens, part: AnyLens) -> list[int] | None:
    """The indices of ``parts`` that lead from ``root`` to ``part`` (a loop: composites may nest deeply)."""
    stack: list[tuple[AnyLens, list[int]]] = [(root, [])]
    while stack:
        lens, path = stack.pop()
        if lens is part:
            return path
        stack.extend((q, [*path, i]) for i, q in reversed(list(enumerate(lens.parts))))
    return None


def _run_fwd(lens: AnyLens, p: Any, s: Any, record: bool) -> tuple[Any, Any, Callable[[Any], bool] | None]:
    """The forward pass, checked, as ``(m, a, da_fits)``; ``record``: a backward pass will read its residue.

    ``da_fits`` is the exact test of the output delta of an earlier run checked in full whose ``(p, s)`` had
    the skeleton of this one (this run's parts then skip their per-call tests); None when there is none.
    """
    memo = lens.__dict__
    try:
        state = memo.get(_STATE) or _check_first(lens, p, s)
        if state == DELTAS:
            for fits, da_fits in memo.get(_CHECKED, ()):
                if fits(p, s):
                    return (*_trusted(lens, 0, p, s), da_fits)
        with recording() if record and state != DELTAS else nullcontext():
            return (*trusting(False, lens.fwd, p, s), None)
    except Exception as exc:
        _fail(lens, "forward", exc, (p, s))


def _pullback(
    lens: AnyLens, m: Any, given: tuple[Any, Any], da_fits: Callable[[Any], bool] | None
) -> Callable[[Any], tuple[Any, Any]]:
    bwd, memo = lens.bwd, lens.__dict__

    def pullback(da: Any) -> tuple[Any, Any]:
        trusted = da_fits is not None and da_fits(da)
        rerun = memo.get(_STATE) == DELTAS  # a lens run once makes no test
        out: tuple[Any, Any]
        try:
            if rerun:
                out = _trusted(lens, 1, m, da) if trusted else trusting(False, bwd, m, da)
            else:  # the parts check their deltas against the forward passes they recorded
                with recording():
                    out = trusting(False, bwd, m, da)
        except Exception as exc:
            _fail(lens, "backward", exc, (m, da))
        memo[_STATE] = DELTAS
        if rerun and not trusted:
            _remember_checked(memo, given, da)
        return out

    return pullback


def _trusted(lens: AnyLens, which: int, x: Any, y: Any) -> Any:
    """Pass ``which`` (0: ``fwd``, 1: ``bwd``) of ``lens`` on arguments of a skeleton it was checked on in full,
    without the parts' guards (:func:`unguarded`, made once); should it fail, the checked pass runs again (the
    passes are pure), so that the part that fails names itself, and else the first failure stands."""
    passes = lens.__dict__.get(_UNGUARDED)
    if passes is None:
        passes = lens.__dict__[_UNGUARDED] = unguarded(lens)
    try:
        return trusting(True, passes[which], x, y)
    except Exception:
        trusting(False, lens.bwd if which else lens.fwd, x, y)
        raise


#: Where a lens keeps its passes without guards (:func:`unguarded`), made on its first trusted rerun.
_UNGUARDED = "_prelens_trace_unguarded"

#: The exact tests (``exact_test``) of the ``(p, s)`` and ``da`` of the last few runs checked in full, in the
#: lens's ``__dict__``: a rerun on one of these skeletons runs without its parts' checks.
_CHECKED = "_prelens_trace_checked"
_KEEP_CHECKED = 4
#: A lens whose runs keep changing skeleton (a new sequence length each batch) stops making tests after this many.
_MAKE_AT_MOST = 64
_TESTS_MADE = "_prelens_trace_made"


def _remember_checked(memo: dict[str, Any], given: tuple[Any, Any], da: Any) -> None:
    kept = memo.get(_CHECKED, ())
    if memo.get(_TESTS_MADE, 0) >= _MAKE_AT_MOST or any(fits(*given) and da_fits(da) for fits, da_fits in kept):
        return
    memo[_TESTS_MADE] = memo.get(_TESTS_MADE, 0) + 1
    fits, da_fits = exact_test(*given), exact_test(da)
    if fits is not None and da_fits is not None:
        memo[_CHECKED] = (*kept[1 - _KEEP_CHECKED :], (fits, da_fits))


def forward(lens: Any, p: Any, s: Any) -> Any:
    """The output of the forward pass, residue dropped; ``lens`` may also be a TriLens.

    Haskell::

        fwd' :: ExLens a da p dp s ds -> (p, s) -> a

    >>> from prelens import id_pre_lens
    >>> forward(id_pre_lens, (), 3.0)
    3.0
    """
    return _run_fwd(lens if isinstance(lens, PreLens) else as_pre_lens(lens, "forward"), p, s, record=False)[1]


def backward(lens: Any, p: Any, s: Any, da: Any) -> tuple[Any, Any]:
    """``(dp, ds)`` for an output delta, re-running the forward pass; ``dp`` is shaped as ``p``, ``ds`` as ``s``.

    Haskell::

        bwd' :: ExLens a da p dp s ds -> (p, s, da) -> (dp, ds)

    >>> from prelens import id_pre_lens
    >>> backward(id_pre_lens, (), 3.0, 1.0)
    ((), 1.0)
    """
    lens_ = lens if isinstance(lens, PreLens) else as_pre_lens(lens, "backward")
    m, _, da_fits = _run_fwd(lens_, p, s, record=True)
    return _pullback(lens_, m, (p, s), da_fits)(da)


def vjp(lens: Any, p: Any, s: Any) -> tuple[Any, Callable[[Any], tuple[Any, Any]]]:
    """Run the forward pass once; return the output and a pullback ``da -> (dp, ds)``.

    The pullback computes ``bwd(m, da)`` on the stored residue, never re-running the forward
    pass (like ``jax.vjp``): linear in ``da``, it is the vector-Jacobian product at ``(p, s)``.

    >>> from prelens import PreLens
    >>> square = PreLens(lambda p, s: (s, s * s), lambda m, da: ((), 2 * m * da), name="square")
    >>> a, pullback = vjp(square, (), 3.0)
    >>> a, pullback(1.0)
    (9.0, ((), 6.0))
    """
    lens_ = lens if isinstance(lens, PreLens) else as_pre_lens(lens, "vjp")
    m, a, da_fits = _run_fwd(lens_, p, s, record=True)
    return a, _pullback(lens_, m, (p, s), da_fits)


__all__ = ["as_pre_lens", "backward", "forward", "vjp"]
