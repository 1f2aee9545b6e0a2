"""Checks for the exercises of notebook 09_convolution_and_recurrence.

Solutions: ``solutions/ex09_convolution_and_recurrence.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens, vjp
from prelens.core import scan, tree_allclose
from prelens.nn import composed, conv1d

from ._kit import Wrong, answered, call, exercise, expect

#: (L, kernel, stride, padding) of the convolutions 9.1 is checked on, in the order a mistake is diagnosed:
#: no overlap and no padding first, then overlapping windows, then padding, then both.
_GEOMETRIES = [(9, 2, 2, 0), (8, 3, 1, 0), (9, 2, 2, 1), (11, 5, 2, 1), (13, 4, 3, 2)]


def _where(a: Any, b: Any) -> str:
    """Where two arrays of one shape first differ, as ``[n, t, c]``."""
    bad = np.argwhere(~np.isclose(a, b, rtol=1e-9, atol=1e-9))
    return "[" + ", ".join(str(int(i)) for i in bad[0]) + "]" if len(bad) else "nowhere"


def _shaped(name: str, got: Any, want: tuple[int, ...], why: str) -> Any:
    got = np.asarray(answered(got))
    expect(got.shape == want, f"{name} should have shape {want} ({why}), got {got.shape}")
    return got


@exercise("9.1", "conv1d's backward pass by hand", answer="function")
def conv1d_backward(fn: Any) -> str:
    """``conv1d_backward(x, weight, dy, stride, padding) -> (dweight, dbias, dx)``, as ``conv1d``'s pullback."""
    rng = np.random.default_rng(9)
    n, c_in, c_out = 2, 2, 3
    for length, k, s, q in _GEOMETRIES:
        geometry = f"(L={length}, kernel={k}, stride={s}, padding={q})"
        conv = conv1d(c_in, c_out, k, stride=s, padding=q)
        params = conv.init(rng)
        x = rng.standard_normal((n, length, c_in))
        y, pullback = vjp(conv, params, x)
        dy = rng.standard_normal(y.shape)
        (dw_ref, db_ref), dx_ref = pullback(dy)
        answer = call(fn, x.copy(), params.weight.copy(), dy.copy(), s, q)
        expect(
            isinstance(answer, (tuple, list)) and len(answer) == 3,
            f"return the three deltas (dweight, dbias, dx), got {type(answer).__name__}"
            + (f" of length {len(answer)}" if isinstance(answer, (tuple, list)) else ""),
        )
        dw, db, dx = answer
        db = _shaped("dbias", db, db_ref.shape, "one number per output channel")
        if not np.allclose(db, db_ref):
            raise Wrong(
                f"dbias is off {geometry}: the one bias is added at every output position of every series, "
                "so its delta collects dy from all of them"
            )
        dw = _shaped("dweight", dw, dw_ref.shape, "like the weight: (kernel, c_in, c_out)")
        if not np.allclose(dw, dw_ref):
            raise Wrong(
                f"dweight is off {geometry}, first at {_where(dw, dw_ref)}: the weight's offset j is used by every "
                "window, on the sample that window reads at offset j, so dweight[j] collects a contribution from "
                "every window of every series"
            )
        dx = _shaped("dx", dx, x.shape, "like the input: (N, L, c_in)")
        if not np.allclose(dx, dx_ref):
            hint = {
                0: "each window t sends dy[:, t] through the weight's transpose back to the samples it read",
                1: "here the windows overlap (kernel > stride): a sample read by several windows receives the "
                "SUM of their deltas; add into dx, never overwrite",
                2: "with padding, the window's samples are counted in the padded series: map them back to the "
                "unpadded one, and drop the deltas that land on the padding",
            }.get(_GEOMETRIES.index((length, k, s, q)), "check which samples each window read")
            raise Wrong(f"dx is off {geometry}, first at [n, t, c] = {_where(dx, dx_ref)}: {hint}")
    return "dx is the transpose of the gather: the windows' deltas scattered back and added where they overlap"


def _bptt_case(cell: Any, rng: np.random.Generator, steps: int) -> tuple[Any, ...]:
    n = 2
    c_in, h_size = cell.init(0).weight_ih.shape[0], cell.init(0).weight_hh.shape[0]
    params = cell.init(rng)
    h0 = rng.standard_normal((n, h_size))
    xs = [rng.standard_normal((n, c_in)) for _ in range(steps)]
    return params, h0, xs


def _same_steps(name: str, got: Any, want: list[Any]) -> bool:
    got = answered(got)
    expect(
        hasattr(got, "__len__") and len(got) == len(want),
        f"{name} should hold one entry per step ({len(want)}), got {type(got).__name__}"
        + (f" of length {len(got)}" if hasattr(got, "__len__") else ""),
    )
    return all(np.shape(g) == np.shape(w) and np.allclose(g, w) for g, w in zip(got, want))


@exercise("9.2", "backpropagation through time by hand", answer="function")
def my_scan(fn: Any) -> str:
    """``my_scan(cell)``: a PreLens ``(h0, xs) -> (h_T, ys)`` with the steps a list, equal to ``scan(cell)``."""
    rng = np.random.default_rng(90)
    for cell in (composed.rnn_cell(2, 3), composed.gru_cell(2, 4)):
        lens = call(fn, cell)
        expect(isinstance(lens, PreLens), f"my_scan({cell!r}) should return a PreLens, got {type(lens).__name__}")
        params, h0, xs = _bptt_case(cell, rng, 5)
        (h_ref, ys_ref), pullback_ref = vjp(scan(cell), params, (h0, xs))
        out, pullback = vjp(lens, params, (h0, list(xs)))
        expect(
            isinstance(out, tuple) and len(out) == 2,
            f"the forward pass should output the pair (h_T, ys), got {type(out).__name__}",
        )
        h_t, ys = out
        if not _same_steps("ys", ys, ys_ref):
            raise Wrong(
                f"ys differ from scan({cell!r})'s: step t calls cell.fwd(p, (h, xs[t])) with the h the step before "
                "returned (h0 for the first), keeps its residue, and emits its y"
            )
        expect(
            np.shape(answered(h_t)) == np.shape(h_ref) and np.allclose(h_t, h_ref),
            "the forward pass's h_T should be the state the last step returned",
        )
        dh_t = rng.standard_normal(np.shape(h_ref))
        dys = [rng.standard_normal(np.shape(y)) for y in ys_ref]
        dp_ref, (dh0_ref, dxs_ref) = pullback_ref((dh_t, dys))
        answer = answered(pullback((dh_t.copy(), [d.copy() for d in dys])))
        expect(
            isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], tuple) and len(answer[1]) == 2,
            f"the backward pass should return (dp, (dh0, dxs)), got {type(answer).__name__}",
        )
        dp, (dh0, dxs) = answer
        backward = (
            "the backward pass walks from the last step to the first: step t's cell.bwd takes step t's own residue "
            "and (the dh that step t+1 handed back, dys[t]), starting from dh_T"
        )
        if not _same_steps("dxs", dxs, dxs_ref):
            raise Wrong(f"dxs differ from scan({cell!r})'s: {backward}")
        expect(
            np.shape(answered(dh0)) == np.shape(dh0_ref) and np.allclose(dh0, dh0_ref),
            f"dh0 differs from scan({cell!r})'s: it is the dh the first step's backward pass returns",
        )
        expect(
            type(answered(dp)) is type(dp_ref),
            f"dp should be a delta of the parameters' type, a {type(dp_ref).__name__}, got {type(dp).__name__} "
            "(tree_add keeps the type)",
        )
        if not tree_allclose(dp, dp_ref):
            per_step = _step_deltas(cell, params, h0, xs, dh_t, dys)
            if any(tree_allclose(dp, one) for one in per_step):
                raise Wrong(
                    "dp is one step's parameter delta: every step used the same parameters, so their delta is "
                    "the sum of the deltas of all the steps (prelens.core.tree_add adds two)"
                )
            raise Wrong(f"dp differs from scan({cell!r})'s: it should add up the parameter deltas of every step")
    try:
        long = composed.rnn_cell(1, 2)
        params, h0, xs = _bptt_case(long, rng, 3000)
        (_, ys), pullback = vjp(call(fn, long), params, (h0, xs))
        answered(pullback((np.zeros_like(h0), [np.zeros_like(y) for y in ys])))
    except RecursionError:
        raise Wrong(
            "3,000 steps exceed Python's recursion limit: write the two passes as loops, not as nested calls"
        ) from None
    return "the parameter delta is summed over the steps, as batch_n sums it over a batch"


def _step_deltas(cell: Any, params: Any, h0: Any, xs: list[Any], dh: Any, dys: list[Any]) -> list[Any]:
    """The parameter delta of each step of ``scan(cell)`` alone (to recognise an answer that kept only one)."""
    h, ms = h0, []
    for x in xs:
        m, (h, _) = cell.fwd(params, (h, x))
        ms.append(m)
    deltas = []
    for t in range(len(xs) - 1, -1, -1):
        dp, (dh, _) = cell.bwd(ms[t], (dh, dys[t]))
        deltas.append(dp)
    return deltas


@exercise("9.3", "the length of a convolution's output", answer="function")
def conv_length(fn: Any) -> str:
    """``conv_length(L, kernel, stride, padding, dilation)``: ``L_out`` of ``conv1d``, for every geometry."""
    answered(fn)
    wrong: list[tuple[tuple[int, int, int, int, int], int, Any]] = []
    for length in (7, 10, 40):
        for k in (1, 3, 5):
            for s in (1, 2, 3):
                for q in (0, 1, 2):
                    for d in (1, 2, 3):
                        if length + 2 * q < d * (k - 1) + 1:
                            continue  # the dilated kernel does not fit: conv1d refuses the input
                        conv = conv1d(1, 1, k, stride=s, padding=q, dilation=d)
                        want = conv.fwd(conv.init(0), np.zeros((1, length, 1)))[1].shape[1]
                        got = call(fn, length, k, s, q, d)
                        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
                            raise Wrong(
                                f"conv_length should return an int (a number of windows), got {got!r} "
                                f"({type(got).__name__}): round down with //"
                            )
                        if got != want:
                            wrong.append(((length, k, s, q, d), want, got))
    if wrong:
        (length, k, s, q, d), want, got = wrong[0]
        example = (
            f"for L={length}, kernel={k}, stride={s}, padding={q}, dilation={d}, conv1d makes {want} outputs "
            f"and your formula says {got}"
        )
        if all(case[4] > 1 for case, _, _ in wrong):
            raise Wrong(
                f"right without dilation, wrong with it ({len(wrong)} cases): {example}. A kernel of k taps "
                "dilated by d spans more than k samples: how many?"
            )
        if all((case[0] + 2 * case[3] - case[4] * (case[1] - 1) - 1) % case[2] for case, _, _ in wrong):
            raise Wrong(
                f"right when the stride steps evenly to the end, wrong otherwise: {example}. Count only the "
                "windows that fit entirely in the padded series"
            )
        if all(case[3] > 0 for case, _, _ in wrong):
            raise Wrong(f"right without padding, wrong with it: {example}. The padding is added at both ends")
        raise Wrong(f"{len(wrong)} geometries give the wrong length; {example}")
    return "the notebook's formula is this one with dilation 1"
