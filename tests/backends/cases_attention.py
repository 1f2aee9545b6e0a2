"""Backend cases: attention, piece by piece and whole.

The pieces (``attention_scores``, ``causal_mask``, ``weighted_sum``,
``split_heads``, ``merge_heads``, ``concat_heads``), the fused
``scaled_dot_product_attention`` and projections, one head, the faithful and
the fast multi-head attention (self and cross), and the layout isomorphism
``stack_heads``/``unstack_heads`` (as a lens: its backward pass is its inverse).
float32 and float64, causal and not, ``T_q`` below, equal to and above ``T_k``
(rows whose every key is hidden), and several leading axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens
from prelens.nn import cross_attention, multi_head_attention, scaled_dot_product_attention
from prelens.nn._projections import projections
from prelens.nn.composed import (
    attention_head,
    attention_scores,
    causal_mask,
    concat_heads,
    merge_heads,
    split_heads,
    stack_heads,
    unstack_heads,
    weighted_sum,
)
from prelens.nn.composed import multi_head_attention as multi_head_attention_faithful

from .harness import Case

F64, F32 = np.float64, np.float32


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dt: type, scale: float = 1.0) -> Any:
    return (scale * rng.standard_normal(shape)).astype(dt)


def _tag(dt: type) -> str:
    return np.dtype(dt).name


# ------------------------------------------------------------------ pieces


def _scores(dt: type, lead: tuple[int, ...], tq: int, tk: int) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        q, k = _normal(rng, (*lead, tq, 4), dt), _normal(rng, (*lead, tk, 4), dt)
        return attention_scores(4), (), (q, k), _normal(rng, (*lead, tq, tk), dt)

    return Case(f"attention_scores({_tag(dt)}, lead {lead}, {tq}x{tk})", make)


def _mask(dt: type, lead: tuple[int, ...], tq: int, tk: int) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        return causal_mask(), (), _normal(rng, (*lead, tq, tk), dt), _normal(rng, (*lead, tq, tk), dt)

    return Case(f"causal_mask({_tag(dt)}, lead {lead}, {tq}x{tk})", make)


def _weighted(dt: type, lead: tuple[int, ...], tq: int, tk: int) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        a, v = _normal(rng, (*lead, tq, tk), dt), _normal(rng, (*lead, tk, 3), dt)
        return weighted_sum(), (), (a, v), _normal(rng, (*lead, tq, 3), dt)

    return Case(f"weighted_sum({_tag(dt)}, lead {lead}, {tq}x{tk})", make)


def _split(dt: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        return split_heads(3), (), _normal(rng, (*lead, 5, 6), dt), _normal(rng, (*lead, 3, 5, 2), dt)

    return Case(f"split_heads(3, {_tag(dt)}, lead {lead})", make)


def _merge(dt: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        return merge_heads(3), (), _normal(rng, (*lead, 3, 5, 2), dt), _normal(rng, (*lead, 5, 6), dt)

    return Case(f"merge_heads(3, {_tag(dt)}, lead {lead})", make)


def _concat(dt: type, widths: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        xs = [_normal(rng, (2, 5, w), dt) for w in widths]
        return concat_heads(len(widths)), (), xs, _normal(rng, (2, 5, sum(widths)), dt)

    return Case(f"concat_heads({len(widths)}, {_tag(dt)}, widths {widths})", make)


# ------------------------------------------------------------- fused stages


def _sdpa(dt: type, lead: tuple[int, ...], tq: int, tk: int, causal: bool, scale: float = 1.0) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        q, k = _normal(rng, (*lead, tq, 4), dt, scale), _normal(rng, (*lead, tk, 4), dt, scale)
        v = _normal(rng, (*lead, tk, 3), dt)
        return scaled_dot_product_attention(4, causal=causal), (), ((q, k), v), _normal(rng, (*lead, tq, 3), dt)

    flags = (", causal" if causal else "") + (f", scores x{scale:g}" if scale != 1.0 else "")
    return Case(f"scaled_dot_product_attention({_tag(dt)}, lead {lead}, {tq}x{tk}{flags})", make)


def _sdpa_inf_rows(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    """Queries of ``-inf``: whole rows of ``-inf`` scores get uniform weights (lifted to MASKED).

    Their backward pass is NaN by nature (``0 · ∞``), so this lens runs the fused
    attention's forward pass only and hands back, as its "input delta", the
    weights from the residue: outputs and weights are compared with numpy's.
    """
    attend = scaled_dot_product_attention(4)

    def bwd(m, da):  # type: ignore[no-untyped-def]
        return (), m[3]

    lens: PreLens[Any, Any, Any, Any, Any, Any, Any, Any] = PreLens(attend.fwd, bwd, "attention forward, -inf rows")
    q, k = _normal(rng, (2, 3, 4), F64), np.abs(_normal(rng, (2, 5, 4), F64))
    q[:, 1] = -np.inf
    return lens, (), ((q, k), _normal(rng, (2, 5, 3), F64)), _normal(rng, (2, 3, 3), F64)


def _projections(dt: type, lead: tuple[int, ...], cross: bool) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = projections(6, 2, np.dtype(dt), cross=cross)
        x, c = _normal(rng, (*lead, 4, 6), dt), _normal(rng, (*lead, 7, 6), dt)
        dq = _normal(rng, (*lead, 2, 4, 3), dt)
        t_kv = 7 if cross else 4
        dkv = _normal(rng, (*lead, 2, t_kv, 3), dt), _normal(rng, (*lead, 2, t_kv, 3), dt)
        return lens, lens.init(rng), ((x, c) if cross else x), ((dq, dkv[0]), dkv[1])

    return Case(f"projections({_tag(dt)}, lead {lead}{', cross' if cross else ''})", make)


# --------------------------------------------------------------- whole lenses


def _whole(ctor: Any, d_out: int, t: int, t_kv: int, dt: type, causal: bool, cross: bool) -> Case:
    """A whole attention lens (``attention_head`` or ``multi_head_attention_faithful``, d_model 6, 3 heads)
    on a ``(2, t, 6)`` batch, attending to ``(2, t_kv, 6)`` when ``cross``."""

    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = ctor(6, 3, causal=causal, cross=cross, dtype=dt)
        x = _normal(rng, (2, t, 6), dt)
        s = (x, _normal(rng, (2, t_kv, 6), dt)) if cross else x
        return lens, lens.init(rng), s, _normal(rng, (2, t, d_out), dt)

    flags = (", causal" if causal else "") + (", cross" if cross else "")
    return Case(f"{ctor.__name__}({_tag(dt)}{flags})", make)


def _head(dt: type, causal: bool, cross: bool) -> Case:
    return _whole(attention_head, 3, 5, 3, dt, causal, cross)


def _faithful(dt: type, causal: bool, cross: bool) -> Case:
    return _whole(multi_head_attention_faithful, 6, 4, 6, dt, causal, cross)


def _mha(dt: type, lead: tuple[int, ...], t: int, causal: bool) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = multi_head_attention(8, 2, causal=causal, dtype=dt)
        return lens, lens.init(rng), _normal(rng, (*lead, t, 8), dt), _normal(rng, (*lead, t, 8), dt)

    return Case(f"multi_head_attention({_tag(dt)}, lead {lead}, T={t}{', causal' if causal else ''})", make)


def _cross(dt: type, lead: tuple[int, ...], t: int, s: int) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = cross_attention(8, 4, dtype=dt)
        x, c = _normal(rng, (*lead, t, 8), dt), _normal(rng, (*lead, s, 8), dt)
        return lens, lens.init(rng), (x, c), _normal(rng, (*lead, t, 8), dt)

    return Case(f"cross_attention({_tag(dt)}, lead {lead}, T={t}, S={s})", make)


def _stack(dt: type) -> Case:
    """``stack_heads`` as a lens (linear: its backward pass is its inverse, ``unstack_heads``)."""

    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens: PreLens[Any, Any, Any, Any, Any, Any, Any, Any] = PreLens(
            lambda p, fp: ((), stack_heads(fp)), lambda m, da: ((), unstack_heads(da, 3)), "stack_heads"
        )
        fp = multi_head_attention_faithful(6, 3, dtype=dt).init(rng)
        da = multi_head_attention(6, 3, dtype=dt).init(rng)
        return lens, (), fp, da

    return Case(f"stack_heads/unstack_heads({_tag(dt)})", make)


_CASES = [
    *[_scores(dt, lead, tq, tk) for dt, lead, tq, tk in ((F64, (2, 3), 4, 5), (F32, (3,), 5, 5), (F64, (), 1, 3))],
    *[_mask(dt, lead, tq, tk) for dt, lead, tq, tk in ((F64, (2,), 4, 4), (F64, (2, 2), 3, 5), (F32, (3,), 5, 3))],
    *[_weighted(dt, lead, tq, tk) for dt, lead, tq, tk in ((F64, (2, 3), 4, 5), (F32, (), 3, 2))],
    *[_split(dt, lead) for dt, lead in ((F64, (2,)), (F32, ()), (F64, (2, 2)))],
    *[_merge(dt, lead) for dt, lead in ((F64, (2,)), (F32, ()), (F64, (2, 2)))],
    _concat(F64, (2, 1, 3)),
    _concat(F32, (2, 2)),
    *[
        _sdpa(dt, lead, tq, tk, causal)
        for dt in (F64, F32)
        for causal in (False, True)
        for lead, tq, tk in (((2, 3), 5, 5), ((3,), 3, 6), ((), 6, 3))
    ],
    _sdpa(F64, (2,), 4, 4, True, scale=1e4),  # numpy takes its exact path here
    _sdpa(F64, (2, 2), 1, 1, False),
    Case("scaled_dot_product_attention forward (rows of -inf)", _sdpa_inf_rows),
    *[_projections(dt, lead, cross) for dt, lead in ((F64, (2,)), (F32, (2, 3)), (F64, ())) for cross in (False, True)],
    *[_head(dt, causal, cross) for dt, causal, cross in ((F64, False, False), (F64, True, False), (F32, True, False))],
    _head(F64, False, True),
    *[
        _faithful(dt, causal, cross)
        for dt, causal, cross in ((F64, True, False), (F32, False, False), (F64, False, True))
    ],
    *[
        _mha(dt, lead, t, causal)
        for dt in (F64, F32)
        for causal in (False, True)
        for lead, t in (((3,), 6), ((), 5), ((2, 2), 4))
    ],
    _mha(F64, (16,), 32, True),  # the LM's size
    *[_cross(dt, lead, t, s) for dt, lead, t, s in ((F64, (2,), 3, 7), (F32, (2,), 5, 2), (F64, (2, 2), 4, 4))],
    _stack(F64),
    _stack(F32),
]

#: Every name says "attention", so that ``pytest -k attention`` selects all of them.
CASES = [c if "attention" in c.name else Case(f"attention: {c.name}", c.make, c.tags) for c in _CASES]
