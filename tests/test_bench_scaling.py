"""``prelens bench --scaling`` on the tiny grid, prelens on numpy only: the table and the PNG are written.

The full grid and the peers (PyTorch, JAX) are measured by hand (docs/performance.md); no time is asserted.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest

from prelens.cli import bench as cli_bench
from prelens_bench import scaling as S


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_tiny_grid_writes_the_table_and_the_png(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    pytest.importorskip("matplotlib")  # the plot extra (the README's test install has it)
    monkeypatch.setattr(S, "SCALING_SIDES", (S.PRELENS_NUMPY,))
    out = tmp_path / "curves"
    assert cli_bench.run(_args("--scaling", "--grid", "tiny", "--out", str(out), "--repeats", "2")) == 0
    printed = capsys.readouterr()
    md, png = out / "scaling.md", out / "scaling.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    table = md.read_text(encoding="utf-8")
    assert table.strip() in printed.out and f"wrote {md} and {png}" in printed.out
    assert "seq_len=8" in printed.err  # progress, a line per point
    lines = table.splitlines()
    head = next(line for line in lines if line.startswith("| axis"))
    assert head == "| axis | value | prelens (ms) |"
    rows = [line.split(" | ")[:2] for line in lines if line.startswith("| ") and line[2:3].islower()][1:]
    grid = S.SCALING_GRIDS["tiny"]
    assert rows == [[f"| {axis}", str(v)] for axis in S.SCALING_AXES for v in grid.values[axis]]
    memory = [line.split(" | ")[0] for line in lines if line[2:3].isdigit()]
    assert memory == [f"| {t}" for t in grid.values["seq_len"]]
    assert "float32" in lines[0] and "medians of 2 interleaved repetitions" in table


def test_the_report_reads_the_memory_along_t_and_every_point():
    report = S.run_scaling("tiny", sides=[S.PRELENS_NUMPY], repeats=1)
    assert [(r.axis, r.value) for r in report.rows] == [
        (a, v) for a in S.SCALING_AXES for v in S.SCALING_GRIDS["tiny"].values[a]
    ]
    base = S.SCALING_GRIDS["tiny"].base
    assert all(r.config == base for r in report.rows if getattr(base, r.axis) == r.value)  # measured once, shared
    assert len({id(r.times) for r in report.rows if r.config == base}) == 1
    short, long = report.memory
    assert long.attention_bytes == 4 * short.attention_bytes  # T²
    assert long.residue_bytes > short.residue_bytes > 0 and long.peak_bytes > 0
    assert list(report.rows[0].times) == ["prelens"] and report.rows[0].grad_errors == {}


def test_a_wider_model_keeps_its_ffn_ratio_and_unknown_axes_are_refused():
    g = S.SCALING_GRIDS["full"]
    assert (g.point("d_model", 512).d_model, g.point("d_model", 512).d_ff) == (512, 2048)
    assert g.point("n_layers", 8).n_layers == 8 and g.point("n_layers", 8).d_ff == 256
    with pytest.raises(Exception, match="axis"):
        g.point("heads", 8)


@pytest.mark.parametrize("argv", [("--grid", "tiny"), ("--out", "x"), ("--threads", "1")])
def test_scaling_flags_need_scaling(argv: tuple[str, ...], capsys):
    assert cli_bench.run(_args(*argv)) == 2
    assert "needs --" in capsys.readouterr().err


def test_without_matplotlib_it_says_so_before_timing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(S, "run_scaling", lambda *a, **k: pytest.fail("timed without matplotlib"))
    assert cli_bench.run(_args("--scaling", "--grid", "tiny", "--out", str(tmp_path))) == 2
    assert "pip install 'prelens[plot]'" in capsys.readouterr().err


def test_a_side_whose_check_fails_is_left_out_of_that_point_and_named():
    from prelens_bench import NUMPY_HAND, Peer, PeerStep

    def prepare(problem):  # numpy's gradients, one leaf off: a wrong backward pass
        inner = NUMPY_HAND.prepare(problem)
        assert inner.grads is not None
        grads = inner.grads

        def wrong():
            g = grads()
            return g._replace(unembedding=g.unembedding._replace(weight=g.unembedding.weight * 2))

        return PeerStep(lambda: pytest.fail("a side whose check failed was timed"), wrong)

    grid = S.ScalingGrid(S.SCALING_GRIDS["tiny"].base, {"seq_len": (4,)})
    report = S.run_scaling(grid, sides=[S.PRELENS_NUMPY, Peer("off", prepare)], repeats=1, memory=False)
    (row,) = report.rows
    assert list(row.times) == ["prelens"] and list(row.failed) == ["off"]
    assert "law 'off gradients = prelens gradients' fails" in row.failed["off"]
    assert "✗ seq_len=4, off: the gradient check failed" in report.table()


def test_a_side_that_differs_only_in_float32_is_checked_in_float64_and_timed():
    """A float32 difference that float64 does not show is rounding: the side is timed, marked †, not left out.

    As at d_model 128 of the full grid, where a ReLU input lies within float32 rounding of 0 and
    PyTorch and JAX take its other branch: the gradients differ by percents (4e-2 relative to the
    largest entry), far beyond the 1e-4 of float32, while in float64 all sides agree to 1e-9.
    Before the float64 opinion such a side was left out of the point (✗).
    """
    from prelens_bench import NUMPY_HAND, Peer, PeerStep

    def prepare(problem):
        inner = NUMPY_HAND.prepare(problem)
        assert inner.grads is not None
        grads = inner.grads

        def other_branch():  # in float32 only: one column off, as a ReLU unit that took the other branch
            g = grads()
            if problem.case.dtype != "float32":
                return g
            w = g.unembedding.weight.copy()
            w[:, 0] += np.float32(0.04) * np.abs(w).max()
            return g._replace(unembedding=g.unembedding._replace(weight=w))

        return PeerStep(inner.step, other_branch)

    grid = S.ScalingGrid(S.SCALING_GRIDS["tiny"].base, {"seq_len": (4,)})
    report = S.run_scaling(grid, sides=[S.PRELENS_NUMPY, Peer("flip", prepare)], repeats=1, memory=False)
    (row,) = report.rows
    assert list(row.times) == ["prelens", "flip"] and row.failed == {}
    assert 0.03 < row.grad_errors["flip"] < 0.05  # the float32 difference, measured and reported
    assert "law 'flip gradients = prelens gradients' fails" in row.notes["flip"]
    assert re.search(r"differ at \.unembedding\.weight; in float64 at the same weights and batch it agrees with "
                     r"prelens to \de-1\d: float32 rounding", row.notes["flip"])  # fmt: skip
    table = report.table()
    assert "† seq_len=4, flip: law 'flip gradients" in table
    assert next(line for line in table.splitlines() if line.startswith("| seq_len | 4 |")).endswith("† |")


def test_the_float64_opinion_keeps_out_a_side_wrong_in_both_precisions():
    """A side off in float64 too computes another step: left out (✗), whatever the dtype timed."""
    from prelens_bench import NUMPY_HAND, Peer, PeerStep

    def prepare(problem):
        inner = NUMPY_HAND.prepare(problem)
        assert inner.grads is not None
        grads = inner.grads
        return PeerStep(inner.step, lambda: grads()._replace(embedding=grads().embedding * 1.01))

    grid = S.ScalingGrid(S.SCALING_GRIDS["tiny"].base, {"seq_len": (4,)})
    report = S.run_scaling(grid, sides=[S.PRELENS_NUMPY, Peer("off", prepare)], repeats=1, memory=False)
    (row,) = report.rows
    assert list(row.failed) == ["off"] and row.notes == {} and list(row.times) == ["prelens"]
