"""The benchmark runs end to end and its gradient check bites. No time is ever asserted."""

import argparse

import numpy as np
import pytest

import prelens_bench.mlp as bench
from prelens import LawError
from prelens.cli import bench as cli_bench
from prelens.nn import DenseParams, mlp, mse
from prelens_bench import CASES, MlpCase, check_gradients, numpy_mlp_grads, run_benchmarks
from prelens_bench._timing import time_interleaved


def _args(*argv):
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_quick_benchmark_runs_every_case_and_the_gradient_check_passes():
    report = run_benchmarks(quick=True, repeats=2)
    assert [r.case for r in report.mlp] == list(CASES)
    for r in report.mlp:
        assert r.grad_error <= (1e-10 if r.case.dtype == "float64" else 1e-4), r.case
        assert r.lens_faults >= 0 and r.numpy_faults >= 0 and r.lens_peak > 0 and r.numpy_peak > 0
        assert r.ratio > 0 and r.grad_ratio > 0
    assert [c.n for c in report.chains] == [2, 4, 8, 16, 32, 64]
    text = str(report)
    for label in ("784-256-128-10 b128 f64", "784-256-128-10 b128 f32", "4-8-8-3 b16 f64", "4-8-8-3 b16 f32"):
        assert label in text
    assert "faults/step" in text and "peak" in text


def test_the_command_line_prints_the_report(capsys):
    assert cli_bench.run(_args("--quick", "--case", "small", "--dtype", "float32", "--no-chain")) == 0
    out = capsys.readouterr().out
    assert "4-8-8-3 b16 f32" in out and "784-256" not in out and "identity lenses" not in out


def test_the_command_line_rejects_nonsense_repeats(capsys):
    assert cli_bench.run(_args("--repeats", "0")) == 2
    assert "prelens bench: --repeats must be an int >= 1, got 0" in capsys.readouterr().err


def test_the_hand_written_gradients_are_the_lens_gradients():
    rng = np.random.default_rng(0)
    net = mlp(5, [4, 3], input_delta=False)
    params = net.init(rng)
    x, y = rng.standard_normal((6, 5)), rng.uniform(-1, 1, (6, 3))
    _, pullback = __import__("prelens").vjp(net >> mse, (y, params), x)
    (_, lens_grads), _ = pullback(1.0)
    loss, numpy_grads = numpy_mlp_grads([[p.weight, p.bias] for p in params], x, y)
    assert check_gradients(lens_grads, numpy_grads, np.float64) < 1e-12
    assert loss == pytest.approx(float(net.fwd(params, x)[1].size and ((net.fwd(params, x)[1] - y) ** 2).mean()))


def test_the_gradient_check_catches_a_wrong_gradient():
    good = [DenseParams(np.ones((2, 2)), np.ones(2))]
    with pytest.raises(LawError, match=r"\[0\]\.bias"):
        check_gradients(good, [(np.ones((2, 2)), np.array([1.0, 1.001]))], np.float64)
    with pytest.raises(LawError, match=r"\[0\]\.weight"):
        check_gradients(good, [(np.ones((2, 2), np.float32), np.ones(2))], np.float64)


def test_a_wrong_reference_stops_the_benchmark_before_any_timing(monkeypatch, capsys):
    """Break the hand-written backward pass: nothing is timed and the CLI exits with 1."""
    real = bench.numpy_mlp_grads

    def off_by_a_bit(params, x, y):
        loss, grads = real(params, x, y)
        return loss, [(dw * 1.01, db) for dw, db in grads]

    monkeypatch.setattr(bench, "numpy_mlp_grads", off_by_a_bit)
    with pytest.raises(LawError, match="hand-written numpy gradients = lens gradients"):
        bench.time_mlp_step(MlpCase((4, 3), 8, "float64"), repeats=1, inner=1)
    assert cli_bench.run(_args("--quick", "--case", "small", "--no-chain")) == 1
    assert "gradient check failed" in capsys.readouterr().err


def test_interleaving_rotates_which_implementation_goes_first():
    calls = []
    time_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=4, inner=2)
    assert calls == ["a", "a", "b", "b", "b", "b", "a", "a"] * 2
