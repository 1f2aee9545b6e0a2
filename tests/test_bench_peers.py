"""``prelens bench --peers`` without PyTorch or JAX: the table, the gradient check and the CLI, with stand-ins.

The peers are plain values, so these tests run the whole machinery (prepare, check,
time interleaved, format) with numpy-only peers: the real ``numpy by hand`` and
``matmul floor`` columns, and stand-ins that behave like a peer that is missing, wrong
or slow. ``tests_peers/test_bench_peers_real.py`` runs PyTorch and JAX themselves (the
``peers`` extra). No time is ever asserted.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pytest

import prelens_bench.peers as P
from prelens import LawError
from prelens.cli import bench as cli_bench
from prelens.nn import DenseParams
from prelens_bench import (
    MATMUL_FLOOR,
    NUMPY_HAND,
    PEER_CASES,
    LMConfig,
    Peer,
    PeerCase,
    PeerStep,
    check_peer_gradients,
    make_problem,
    run_peers,
)

SMALL_LM = LMConfig(vocab=9, seq_len=5, d_model=8, n_heads=2, d_ff=12, n_layers=2, batch=3)
CASES = [PeerCase((5, 4, 3), "float64", 6), PeerCase((5, 4, 3), "float32", 6), PeerCase(SMALL_LM, "float64")]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    return parser.parse_args(list(argv))


def _scaled(factor: float, name: str = "numpy, off by a bit") -> Peer:
    """A peer that computes numpy's gradients and scales one leaf: a wrong backward pass."""

    def prepare(problem: P.Problem) -> PeerStep:
        inner = NUMPY_HAND.prepare(problem)
        assert inner.grads is not None
        grads = inner.grads

        def wrong() -> object:
            g = grads()
            if isinstance(g, list):  # an MLP: the last layer's bias
                g[-1] = g[-1]._replace(bias=g[-1].bias * factor)
            else:
                g = g._replace(unembedding=g.unembedding._replace(weight=g.unembedding.weight * factor))
            return g

        def step() -> None:
            raise AssertionError("a peer whose gradients are wrong must never be timed")

        return PeerStep(step, wrong)

    return Peer(name, prepare)


def test_every_column_runs_and_every_checked_gradient_equals_prelenss():
    report = run_peers(CASES, peers=[NUMPY_HAND, MATMUL_FLOOR], repeats=3, inner=1)
    assert [r.case for r in report.rows] == CASES
    for row in report.rows:
        assert list(row.times) == ["prelens", "numpy by hand", "matmul floor"]
        assert all(t > 0 for t in row.times.values()) and row.prelens_peak > 0
        assert list(row.grad_errors) == ["numpy by hand"]  # the floor has no gradients to check
        assert row.grad_errors["numpy by hand"] <= (1e-9 if row.case.dtype == "float64" else 1e-4)
        assert row.ratio("matmul floor") == row.times["prelens"] / row.times["matmul floor"]
        assert row.ratio("PyTorch eager") is None


def test_the_table_has_the_issues_columns_and_names_what_is_missing():
    missing = Peer("PyTorch eager", P.TORCH_EAGER.prepare, lambda: "torch")
    report = run_peers(CASES[:1], peers=[NUMPY_HAND, missing, MATMUL_FLOOR], repeats=3, inner=1)
    text = str(report)
    head = text.splitlines()[2]
    for column in ("prelens", "numpy by hand", "matmul floor", "prelens / floor", "prelens / numpy", "peak MiB"):
        assert column in head
    assert "PyTorch eager" not in head and report.missing == ("torch",)
    assert "| MLP 5-4-3 b6 f64 |" in text
    assert "not installed (pip install 'prelens[peers]'): torch" in text
    assert "medians of 3 interleaved repetitions" in text


def _renamed(peer: Peer, name: str, missing: str | None = None) -> Peer:
    """``peer`` under another column's title (a numpy stand-in for a peer that needs an extra)."""
    return Peer(name, peer.prepare, lambda: missing)


def test_prelens_on_jax_has_its_column_and_its_two_ratios():
    """Stand-ins under the JAX columns' titles: the table gains prelens JAX / JAX and / torch."""
    stand_ins = [
        _renamed(NUMPY_HAND, "PyTorch eager"),
        _renamed(NUMPY_HAND, "JAX jit"),
        _renamed(P.PRELENS, "prelens JAX"),
    ]
    report = run_peers(CASES[:1], peers=stand_ins, repeats=3, inner=1)
    (row,) = report.rows
    assert list(row.times) == ["prelens", "PyTorch eager", "JAX jit", "prelens JAX"]
    assert row.grad_errors["prelens JAX"] == 0.0  # the same lenses on the same arrays
    assert row.ratio("JAX jit", of="prelens JAX") == row.times["prelens JAX"] / row.times["JAX jit"]
    assert row.ratio("JAX jit", of="no such column") is None
    head, _, first = str(report).splitlines()[2:5]
    titles = [c.strip() for c in head.strip("|").split("|")]
    assert titles == [
        "one SGD step (ms)",
        "prelens",
        "PyTorch eager",
        "JAX jit",
        "prelens JAX",
        "prelens / torch",
        "prelens / JAX",
        "prelens JAX / JAX",
        "prelens JAX / torch",
        "prelens peak MiB",
    ]
    cells = [c.strip() for c in first.strip("|").split("|")]
    assert cells[7] == f"{row.times['prelens JAX'] / row.times['JAX jit']:.2f}"
    assert cells[8] == f"{row.times['prelens JAX'] / row.times['PyTorch eager']:.2f}"


def test_the_jax_ratios_are_dashes_where_a_row_lacks_a_column():
    case = PeerCase((2, 1), "float64", 2)
    rows = [
        P.PeerRow(case, {"prelens": 4e-3, "JAX jit": 2e-3, "prelens JAX": 3e-3}, {}, {}, 0),
        P.PeerRow(case, {"prelens": 4e-3, "JAX jit": 2e-3}, {}, {}, 0),
    ]
    lines = str(P.PeerReport(rows, 3)).splitlines()
    assert "| prelens / JAX | prelens JAX / JAX |" in lines[2] and "prelens JAX / torch" not in lines[2]
    assert lines[4].endswith("| 2.00 | 1.50 | 0.00 |") and lines[5].endswith("| 2.00 | — | 0.00 |")


def test_without_jax_both_jax_columns_are_left_out_and_named():
    assert P.PRELENS_JAX in P.DEFAULT_PEERS and P.PRELENS_JAX.name == "prelens JAX"
    no_jax = [_renamed(P.JAX_JIT, "JAX jit", "jax"), _renamed(P.PRELENS_JAX, "prelens JAX", "jax"), MATMUL_FLOOR]
    report = run_peers(CASES[:1], peers=no_jax, repeats=3, inner=1)
    assert list(report.rows[0].times) == ["prelens", "matmul floor"]
    assert report.missing == ("jax",) and report.left_out == ("JAX jit", "prelens JAX")
    text = str(report)
    assert "not installed (pip install 'prelens[peers]'): jax; left out: JAX jit, prelens JAX" in text
    assert "JAX" not in text.splitlines()[2]
    assert P._module_missing("prelens_no_such_module")() == "prelens_no_such_module"


def test_the_check_names_what_it_compares():
    case = PeerCase((2, 2), "float64", 1)
    g = [DenseParams(np.ones((2, 2)), np.ones(2))]
    off = [DenseParams(np.ones((2, 2)), np.full(2, 1.5))]
    law = r"law 'prelens JAX parameters after one SGD step = prelens parameters after one SGD step' fails"
    with pytest.raises(LawError, match=law + r": MLP 2-2 b1 f64 differ at \[0\]\.bias"):
        check_peer_gradients("prelens JAX", case, g, off, what="parameters after one SGD step")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_a_peer_with_a_wrong_gradient_stops_the_run_before_anything_is_timed(case):
    with pytest.raises(LawError, match=rf"numpy, off by a bit gradients = prelens gradients.*{case.label}"):
        run_peers([case], peers=[_scaled(1.01)], repeats=1, inner=1)


def test_the_gradient_check_names_the_leaf_and_bites_on_shape_dtype_and_structure():
    case = PeerCase((2, 2), "float64", 1)
    g = [DenseParams(np.ones((2, 2)), np.ones(2))]
    assert check_peer_gradients("x", case, g, [DenseParams(np.ones((2, 2)), np.ones(2) + 1e-12)]) < 1e-9
    with pytest.raises(LawError, match=r"fails: MLP 2-2 b1 f64 differ at \[0\]\.weight"):
        check_peer_gradients("x", case, g, [DenseParams(np.ones((2, 2)) * 1.001, np.ones(2))])
    with pytest.raises(LawError, match=r"\[0\]\.bias:\n  left:  'f64\[2\]'\n  right: 'f32\[2\]'"):
        check_peer_gradients("x", case, g, [DenseParams(np.ones((2, 2)), np.ones(2, np.float32))])
    with pytest.raises(LawError, match=r"\[0\]\.weight:\n  left:  'f64\[2,2\]'\n  right: 'f64\[2,1\]'"):
        check_peer_gradients("x", case, g, [DenseParams(np.ones((2, 1)), np.ones(2))])
    with pytest.raises(LawError, match=r"the gradient trees differ at \[1\]\.weight"):
        check_peer_gradients("x", case, g, [*g, *g])
    f32 = PeerCase((2, 2), "float32", 1)
    g32 = [DenseParams(np.ones((2, 2), np.float32), np.ones(2, np.float32))]
    assert check_peer_gradients("x", f32, g32, [DenseParams(g32[0].weight * (1 + 5e-5), g32[0].bias)]) <= 1e-4
    with pytest.raises(LawError):
        check_peer_gradients("x", f32, g32, [DenseParams(g32[0].weight * (1 + 5e-4), g32[0].bias)])


def test_the_problem_is_shared_and_never_written_into():
    problem = make_problem(CASES[2])
    before = [np.copy(leaf) for _, leaf in P.tree_paths(problem.params)]
    for peer in (P.PRELENS, NUMPY_HAND, MATMUL_FLOOR):
        prepared = peer.prepare(problem)
        for _ in range(2):
            prepared.step()
    after = [leaf for _, leaf in P.tree_paths(problem.params)]
    assert len(after) == len(before) and all(np.array_equal(a, b) for a, b in zip(before, after))
    assert (problem.y[:, : SMALL_LM.seq_len // 4] == -1).all()  # a prompt that does not count


def test_the_cases_are_the_issues():
    labels = [c.label for c in PEER_CASES]
    assert labels == [
        "MLP 784-256-128-10 b128 f64",
        "MLP 784-256-128-10 b128 f32",
        "MLP 4-8-8-3 b16 f64",
        "MLP 4-8-8-3 b16 f32",
        "LM v64 T32 d64 h4 ff256 x2 b16 f64",
        "LM v64 T32 d64 h4 ff256 x2 b16 f32",
    ]


def test_the_command_line_prints_the_table(monkeypatch, capsys):
    monkeypatch.setattr(P, "DEFAULT_PEERS", (NUMPY_HAND, MATMUL_FLOOR))
    assert cli_bench.run(_args("--peers", "--quick", "--case", "small", "--dtype", "float32")) == 0
    out = capsys.readouterr().out
    assert "| MLP 4-8-8-3 b16 f32 |" in out and "784" not in out and "f64" not in out
    assert "prelens / floor" in out


def test_the_command_line_exits_1_when_a_peer_disagrees(monkeypatch, capsys):
    monkeypatch.setattr(P, "DEFAULT_PEERS", (_scaled(0.5),))
    assert cli_bench.run(_args("--peers", "--quick", "--case", "small", "--dtype", "float64")) == 1
    assert "the gradient check failed, nothing more was timed" in capsys.readouterr().err


def test_peers_and_profile_are_one_or_the_other():
    with pytest.raises(SystemExit):
        _args("--peers", "--profile")


def test_the_profile_from_the_command_line(capsys):
    assert cli_bench.run(_args("--profile", "--quick", "--case", "small", "--dtype", "float64")) == 0
    out = capsys.readouterr().out
    assert "MLP 4-8-8-3 b16 f64: one SGD step" in out and "| dense | 3 |" in out


def test_the_floor_is_every_product_of_the_step_and_nothing_else():
    """Multiply-adds of the floor's products: forward and both backward products of every layer
    (no input delta for the MLP's first layer, whose input is data)."""
    from prelens_bench._floor import tagged_products

    def macs(case):
        return sum(
            a.shape[-2] * a.shape[-1] * b.shape[-1] * int(np.prod(out.shape[:-2]))
            for _, (a, b, out) in tagged_products(case, make_problem(case).params)
        )

    sizes, b = (5, 4, 3), 6
    mlp_case = PeerCase(sizes, "float64", b)
    pairs = list(itertools.pairwise(sizes))
    assert macs(mlp_case) == sum(3 * b * m * n for m, n in pairs) - b * sizes[0] * sizes[1]
    c = SMALL_LM
    n, d, f, t, dk = c.batch * c.seq_len, c.d_model, c.d_ff, c.seq_len, c.d_model // c.n_heads
    per_block = 3 * (4 * n * d * d + 2 * n * d * f) + 6 * c.batch * c.n_heads * t * t * dk
    assert macs(PeerCase(c, "float32")) == c.n_layers * per_block + 3 * n * d * c.vocab
    tags = {tag for tag, _ in tagged_products(PeerCase(c, "float32"), make_problem(PeerCase(c, "float32")).params)}
    assert tags == {"projections", "linear", "scaled_dot_product_attention", "feed_forward", "dense"}


def test_the_command_line_runs_every_side_on_n_threads(monkeypatch, capsys):
    monkeypatch.setattr(P, "DEFAULT_PEERS", (NUMPY_HAND, MATMUL_FLOOR))
    monkeypatch.setenv("XLA_FLAGS", "")  # restored after the test: the command may add to it
    assert cli_bench.run(_args("--peers", "--quick", "--case", "small", "--dtype", "float32", "--threads", "1")) == 0
    assert "1 BLAS/intra-op thread(s) for every side" in capsys.readouterr().out
    assert cli_bench.run(_args("--peers", "--quick", "--case", "small", "--threads", "default")) == 0
    assert cli_bench.run(_args("--peers", "--threads", "0")) == 2
    assert "--threads must be" in capsys.readouterr().err
    assert cli_bench.run(_args("--threads", "2")) == 2
    assert "--threads needs --peers" in capsys.readouterr().err
