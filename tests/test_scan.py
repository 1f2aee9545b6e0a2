"""``scan`` (prelens.core) and its TriLens form ``scan_t`` (prelens.tambara): mapAccumL as a lens."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import prelens
from prelens import PreLens, StructureError, from_tamb, id_pre_lens, scan, to_tamb
from prelens.errors import ArgumentError
from prelens.tambara import Program, interpret, scan_t
from prelens.testing import check_lens_equal, check_scan, check_vjp


def _counting_cell(calls: dict[str, int]) -> PreLens:
    """h' = w h + x, y = h'; counts its passes."""

    def fwd(w, hx):
        calls["fwd"] += 1
        h, x = hx
        h2 = w * h + x
        return h.copy(), (h2, h2)

    def bwd(h, d):
        calls["bwd"] += 1
        dh, dy = d
        g = dh + dy
        return float(np.sum(g * h)), (calls["w"] * g, g)  # w: the parameter, fixed in calls

    return PreLens(fwd, bwd, "counting", lambda rng: 0.5)


@pytest.mark.parametrize("T", [10, 100, 1000])
def test_one_cell_pass_per_step_each_way(T):
    calls = {"fwd": 0, "bwd": 0, "w": 0.5}
    lens = scan(_counting_cell(calls))
    m, (_h, ys) = lens.fwd(0.5, (np.zeros(3), np.ones((T, 3))))
    assert calls == {"fwd": T, "bwd": 0, "w": 0.5} and ys.shape == (T, 3)
    _dp, (_dh0, dxs) = lens.bwd(m, (np.zeros(3), np.ones((T, 3))))
    assert calls["fwd"] == T and calls["bwd"] == T and dxs.shape == (T, 3)


def test_long_sequences_need_no_deeper_stack():
    T = 2000
    assert sys.getrecursionlimit() < T  # Python's default, 1000
    calls = {"fwd": 0, "bwd": 0, "w": 0.9}
    lens = scan(_counting_cell(calls))
    xs = np.random.default_rng(0).standard_normal((T, 2))
    _a, pullback = prelens.vjp(lens, 0.9, (np.zeros(2), xs))
    _dp, (_dh0, dxs) = pullback((np.ones(2), np.ones((T, 2))))
    assert calls["fwd"] == T and calls["bwd"] == T and dxs.shape == (T, 2)
    tri = from_tamb(scan_t(to_tamb(_counting_cell(calls))))
    assert tri.fwd(0.9, (np.zeros(2), xs))[1][1].shape == (T, 2)


def _tanh_cell() -> PreLens:
    def fwd(p, hx):
        w, u = p
        h, x = hx
        z = np.tanh(h @ w + x @ u)
        return (h.copy(), x.copy(), z, w.copy(), u.copy()), (z, (2 * z, z[..., :1]))

    def bwd(m, d):
        h, x, z, w, u = m
        dh, (dy, dy1) = d
        g = dh + 2 * dy
        g[..., :1] += dy1
        g = g * (1 - z * z)
        return (h.T @ g, x.T @ g), (g @ w.T, g @ u.T)

    return PreLens(fwd, bwd, "tanh_cell", lambda r: (r.standard_normal((3, 3)) / 2, r.standard_normal((2, 3))))


@pytest.mark.parametrize("axis", [0, 1, -2])
def test_scan_laws_and_derivative_on_batches(axis):
    cell, rng = _tanh_cell(), np.random.default_rng(1)
    p, h0 = cell.init(rng), rng.standard_normal((4, 3))
    xs = np.moveaxis(rng.standard_normal((6, 4, 2)), 0, axis)
    check_scan(cell, p, h0, xs, axis=axis)
    check_vjp(scan(cell, axis=axis), p, (h0, xs), rng=rng)
    _, (_h, (ys, ys1)) = scan(cell, axis=axis).fwd(p, (h0, xs))  # a tree of outputs, each stacked
    assert np.moveaxis(ys, axis, 0).shape == (6, 4, 3) and np.moveaxis(ys1, axis, 0).shape == (6, 4, 1)


def test_lists_in_lists_out():
    cell, rng = _tanh_cell(), np.random.default_rng(2)
    p, h0 = cell.init(rng), rng.standard_normal((4, 3))
    steps = [rng.standard_normal((4, 2)) for _ in range(5)]
    _m, (_h, ys) = scan(cell).fwd(p, (h0, steps))
    assert isinstance(ys, list) and len(ys) == 5
    stacked = scan(cell).fwd(p, (h0, np.stack(steps)))[1]
    np.testing.assert_allclose(ys[3][0], stacked[1][0][3])
    check_scan(cell, p, h0, steps, k=1)
    as_tuple = scan(cell).fwd(p, (h0, tuple(steps)))[1]  # a tuple is a list of steps (docs/api.md), not a tree
    assert isinstance(as_tuple[1], list) and np.array_equal(as_tuple[1][3][0], ys[3][0])


def test_scan_t_both_forms_and_both_routes():
    cell, rng = _tanh_cell(), np.random.default_rng(3)
    p, h0 = cell.init(rng), rng.standard_normal((4, 3))
    steps = [rng.standard_normal((4, 2)) for _ in range(4)]
    tri = scan_t(to_tamb(cell), n=4)
    check_lens_equal("scan_t, free module", scan(cell), from_tamb(tri), p, (h0, steps))
    check_lens_equal("scan_t, in PreLens", scan(cell), interpret(tri, id_pre_lens), p, (h0, steps))
    assert interpret(tri, Program()).steps()  # the steps the cons recursion took, recorded
    check_lens_equal("scan_t", scan(cell), from_tamb(scan_t(to_tamb(cell))), p, (h0, np.stack(steps)))


def test_scan_t_composes_with_other_trilenses():
    cell, rng = _tanh_cell(), np.random.default_rng(4)
    p, h0 = cell.init(rng), rng.standard_normal((4, 3))
    steps = [rng.standard_normal((4, 2)) for _ in range(3)]
    lhs = scan(cell) >> id_pre_lens
    rhs = from_tamb(scan_t(to_tamb(cell), n=3) >> to_tamb(id_pre_lens))
    check_lens_equal("scan_t >> id", lhs, rhs, ((), p), (h0, steps))


def test_errors_name_scan():
    cell = _tanh_cell()
    p = cell.init(0)
    with pytest.raises(StructureError, match=r"scan\(tanh_cell\).*no steps"):
        scan(cell).fwd(p, (np.zeros((1, 3)), np.zeros((0, 1, 2))))
    with pytest.raises(StructureError, match=r"scan\(tanh_cell\).*pair \(h0, xs\)"):
        scan(cell).fwd(p, np.zeros((3, 1, 2)))
    m, _ = scan(cell).fwd(p, (np.zeros((1, 3)), np.zeros((3, 1, 2))))
    with pytest.raises(StructureError, match=r"scan\(tanh_cell\).*3"):
        scan(cell).bwd(m, (np.zeros((1, 3)), [np.zeros((1, 3))] * 2))
    with pytest.raises(ArgumentError, match="axis"):
        scan(cell, axis=1.0)
    with pytest.raises(StructureError, match="PreLens"):
        scan("cell")
    with pytest.raises(StructureError, match="longer than n"):
        from_tamb(scan_t(to_tamb(cell), n=1)).fwd(p, (np.zeros((1, 3)), [np.zeros((1, 2))] * 2))
    with pytest.raises(ArgumentError, match="k"):
        check_scan(cell, p, np.zeros((1, 3)), np.zeros((3, 1, 2)), k=3)


def test_repr_and_init():
    cell = _tanh_cell()
    assert repr(scan(cell)) == "scan(tanh_cell)" and repr(scan(cell, axis=1)) == "scan(tanh_cell, axis=1)"
    # a numpy int (an axis computed as x.ndim - 2, say) is an int; a numpy bool is not
    assert repr(scan(cell, axis=np.int64(1))) == "scan(tanh_cell, axis=1)"
    with pytest.raises(ArgumentError, match="axis"):
        scan(cell, axis=np.True_)
    assert [w.shape for w in scan(cell).init(0)] == [(3, 3), (2, 3)]
