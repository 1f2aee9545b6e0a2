"""Benchmark against the peers: one SGD step in prelens, by hand in numpy, in PyTorch eager, in JAX under ``jit``.

And prelens itself on JAX, compiled: the same lenses, one :func:`~prelens.train.compile_step`.

The same three models as the other benchmarks, from the same weights and on
the same batch, in float64 and float32:

* the MLP 784-256-128-10 at batch 128 and the MLP 4-8-8-3 at batch 16 (``tanh``
  on every layer, mean squared error);
* the decoder-only language model of :mod:`prelens_bench.lm` (vocab 64,
  sequence 32, d_model 64, 4 heads, FFN 256, 2 blocks, batch 16).

A *step* is forward, backward and a plain SGD update, each side in its own
idiom: prelens with :func:`~prelens.vjp` and :func:`prelens.learn.sgd` (fresh
parameter arrays every step); numpy by hand (:func:`~prelens_bench.numpy_mlp_grads`,
:class:`~prelens_bench.HandLM`) updating in place; PyTorch with ``torch.nn``
modules, ``loss.backward()`` and ``torch.optim.SGD``; JAX with
``jax.value_and_grad`` and the update in one ``jax.jit``-compiled function;
**prelens JAX** is the ``prelens`` column's model and loss on JAX arrays, the step
compiled by :func:`~prelens.train.compile_step` (parameters, optimiser state and
batch already on the device, as in a training loop). The
**matmul floor** is the step's forward and backward matrix products alone, in
numpy, into preallocated outputs: no implementation that calls BLAS for its
products can go below it.

Before anything is timed, every peer's gradient at the shared weights is
checked equal to prelens's (relative to each leaf's largest entry: ``1e-9`` in
float64, ``1e-4`` in float32); a mismatch is a :class:`~prelens.LawError`
naming the peer, the case and the tree path. Then the steps of one case run
interleaved (:func:`~prelens_bench._timing.time_interleaved`), and the table
gives medians, the ratios that matter (prelens against each peer, and prelens JAX
against JAX jit and PyTorch eager) and prelens's peak memory per step.

PyTorch and JAX are the optional extra ``peers`` (``pip install 'prelens[peers]'``);
a peer that is not installed is left out of the table and named under it.
Peers are plain values (:class:`Peer`): the tests run the whole machinery with
numpy-only stand-ins.

>>> report = run_peers([PeerCase((4, 8, 3), "float64", 8)], peers=[NUMPY_HAND, MATMUL_FLOOR], repeats=3, inner=2)
>>> [name for name in report.rows[0].times], report.rows[0].grad_errors["numpy by hand"] < 1e-12
(['prelens', 'numpy by hand', 'matmul floor'], True)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prelens.core._trace import vjp
from prelens.core._tree import tree_paths
from prelens.learn import sgd
from prelens_bench._floor import matmul_floor
from prelens_bench._problem import (
    PeerCase,
    PeerStep,
    Problem,
    check_peer_gradients,
    copy_tree,
    make_problem,
    trained_parts,
)
from prelens_bench._timing import peak_bytes, time_interleaved
from prelens_bench.lm import HandLM, LMConfig
from prelens_bench.mlp import numpy_mlp_grads

__all__ = [
    "DEFAULT_PEERS",
    "JAX_JIT",
    "MATMUL_FLOOR",
    "NUMPY_HAND",
    "PEER_CASES",
    "PRELENS_JAX",
    "TORCH_EAGER",
    "Peer",
    "PeerCase",
    "PeerReport",
    "PeerRow",
    "PeerStep",
    "Problem",
    "check_peer_gradients",
    "make_problem",
    "run_peers",
]


#: The issue's rows: both MLPs and the language model, each in float64 and float32.
PEER_CASES: tuple[PeerCase, ...] = tuple(
    PeerCase(model, dtype, batch)
    for model, batch in (((784, 256, 128, 10), 128), ((4, 8, 8, 3), 16), (LMConfig(), 16))
    for dtype in ("float64", "float32")
)


@dataclass(frozen=True)
class Peer:
    """A column of the table: its title, how to prepare a case, and whether it can run here.

    ``missing()`` returns ``None`` when the peer can run, else what is missing
    (``"torch"``); ``prepare(problem)`` returns a :class:`PeerStep`.

    >>> NUMPY_HAND.name, NUMPY_HAND.missing() is None
    ('numpy by hand', True)
    """

    name: str
    prepare: Callable[[Problem], PeerStep]
    missing: Callable[[], str | None] = field(default=lambda: None)


@dataclass(frozen=True)
class PeerRow:
    """The medians of one case: seconds per step and minor page faults per step, by column.

    ``grad_errors`` is the largest relative gradient difference of each checked
    peer against prelens; ``prelens_peak`` the bytes allocated at the peak of one
    prelens step (tracemalloc, above what was live before it).

    >>> times = {"prelens": 3e-3, "JAX jit": 2e-3, "prelens JAX": 2.2e-3}
    >>> row = PeerRow(PeerCase((2, 1), "float64", 2), times, {}, {}, 0)
    >>> row.ratio("JAX jit"), row.ratio("PyTorch eager"), round(row.ratio("JAX jit", of="prelens JAX"), 2)
    (1.5, None, 1.1)
    """

    case: PeerCase
    times: dict[str, float]
    faults: dict[str, float]
    grad_errors: dict[str, float]
    prelens_peak: int

    def ratio(self, name: str, *, of: str = "prelens") -> float | None:
        """``of``'s time (prelens's by default) over ``name``'s (``None`` if either column did not run)."""
        t, mine = self.times.get(name), self.times.get(of)
        return None if t is None or mine is None else mine / t


@dataclass(frozen=True)
class PeerReport:
    """Everything one run measured; ``str`` is the printed table (Markdown).

    ``missing`` names the libraries that are not installed, ``left_out`` the
    columns that need them.

    >>> row = PeerRow(PeerCase((2, 1), "float64", 2), {"prelens": 2e-3, "matmul floor": 1e-3}, {}, {}, 1024)
    >>> print(PeerReport([row], 3, "a header", ("torch",), ("PyTorch eager",)))  # doctest: +NORMALIZE_WHITESPACE
    a header
    <BLANKLINE>
    | one SGD step (ms) | prelens | matmul floor | prelens / floor | prelens peak MiB |
    |---|---:|---:|---:|---:|
    | MLP 2-1 b2 f64 | 2.00 | 1.00 | 2.00 | 0.00 |
    <BLANKLINE>
    medians of 3 interleaved repetitions; gradients checked equal to prelens's first
    not installed (pip install 'prelens[peers]'): torch; left out: PyTorch eager
    """

    rows: list[PeerRow]
    repeats: int
    header: str = ""
    missing: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()

    def __str__(self) -> str:
        return format_peers(self)


# ----------------------------------------------------------------- the problem


# ------------------------------------------------------------- prelens itself


def _prepare_prelens(problem: Problem) -> PeerStep:
    model, loss = trained_parts(problem.case)
    trained = model >> loss
    opt = sgd(problem.lr)
    x, y = problem.x, problem.y
    state: list[Any] = [problem.params]

    def grads() -> Any:
        _, pullback = vjp(trained, (y, state[0]), x)
        (_, g), _ = pullback(1.0)
        return g

    def step() -> None:
        state[0] = opt.update(grads(), (), state[0])[0]

    return PeerStep(step, grads)


#: prelens itself: the column every other is compared with.
PRELENS = Peer("prelens", _prepare_prelens)


# ---------------------------------------------------------------- numpy by hand


def _prepare_numpy(problem: Problem) -> PeerStep:
    params = copy_tree(problem.params)
    x, y, lr = problem.x, problem.y, problem.lr
    if problem.case.is_lm:
        assert isinstance(problem.case.model, LMConfig)
        hand = HandLM(problem.case.model)

        def lm_grads() -> Any:
            return hand.loss_and_grads(params, x, y)[1]

        def lm_step() -> None:
            for (_, p), (_, g) in zip(tree_paths(params), tree_paths(lm_grads())):
                p -= lr * g

        return PeerStep(lm_step, lm_grads)
    layers = [[p.weight, p.bias] for p in params]

    def mlp_grads() -> Any:
        from prelens.nn import DenseParams

        return [DenseParams(dw, db) for dw, db in numpy_mlp_grads(layers, x, y)[1]]

    def mlp_step() -> None:
        for (w, b), (dw, db) in zip(layers, numpy_mlp_grads(layers, x, y)[1]):
            w -= lr * dw
            b -= lr * db

    return PeerStep(mlp_step, mlp_grads)


#: The same steps written by hand in numpy (:func:`numpy_mlp_grads`, :class:`HandLM`), updated in place.
NUMPY_HAND = Peer("numpy by hand", _prepare_numpy)


def _prepare_floor(problem: Problem) -> PeerStep:
    return PeerStep(matmul_floor(problem.case, problem.params))


#: The step's matrix products alone, into preallocated outputs (nothing to check: no gradients).
MATMUL_FLOOR = Peer("matmul floor", _prepare_floor)


def _module_missing(name: str) -> Callable[[], str | None]:
    def missing() -> str | None:
        import importlib.util

        return None if name in sys.modules or importlib.util.find_spec(name) is not None else name

    return missing


def _prepare_torch(problem: Problem) -> PeerStep:
    from prelens_bench._peer_torch import prepare

    return prepare(problem, _threads())


def _prepare_jax(problem: Problem) -> PeerStep:
    from prelens_bench._peer_jax import prepare

    return prepare(problem)


#: PyTorch eager: ``torch.nn`` modules, ``loss.backward()``, ``torch.optim.SGD`` (the ``peers`` extra).
TORCH_EAGER = Peer("PyTorch eager", _prepare_torch, _module_missing("torch"))
#: Hand-written JAX: ``jax.value_and_grad`` and the SGD update under one ``jax.jit`` (the ``peers`` extra).
JAX_JIT = Peer("JAX jit", _prepare_jax, _module_missing("jax"))


def _prepare_prelens_jax(problem: Problem) -> PeerStep:
    from prelens_bench._peer_prelens_jax import prepare

    return prepare(problem)


#: prelens itself on JAX arrays, the step compiled by :func:`~prelens.train.compile_step` (the ``peers`` extra).
PRELENS_JAX = Peer("prelens JAX", _prepare_prelens_jax, _module_missing("jax"))

#: The columns of ``prelens bench --peers`` after prelens itself.
DEFAULT_PEERS: tuple[Peer, ...] = (NUMPY_HAND, TORCH_EAGER, JAX_JIT, PRELENS_JAX, MATMUL_FLOOR)


def _threads() -> int:
    """The BLAS threads numpy runs with now: the peers are given as many."""
    from prelens.train._runtime import current_blas_threads

    return current_blas_threads()


# -------------------------------------------------------------------- the check


# -------------------------------------------------------------------- the run


def run_peers(
    cases: Sequence[PeerCase] = PEER_CASES,
    *,
    peers: Sequence[Peer] = DEFAULT_PEERS,
    repeats: int = 10,
    inner: int | None = None,
    seed: int = 0,
) -> PeerReport:
    """Check, then time, prelens and every installed peer on every case (see the module doc).

    ``inner`` (steps per timed block) defaults to about 20 ms worth of
    prelens steps. Peers that are not installed are left out and listed in
    :attr:`PeerReport.missing`.

    >>> r = run_peers([PeerCase((3, 2), "float32", 4)], peers=[MATMUL_FLOOR], repeats=3, inner=1)
    >>> list(r.rows[0].times), r.rows[0].grad_errors
    (['prelens', 'matmul floor'], {})
    """
    needs = {peer.name: peer.missing() for peer in peers}
    missing = tuple(dict.fromkeys(m for m in needs.values() if m is not None))
    left_out = tuple(name for name, m in needs.items() if m is not None)
    present = [peer for peer in peers if needs[peer.name] is None]
    rows = [_run_case(case, present, repeats, inner, seed) for case in cases]
    return PeerReport(rows, repeats, _header(present), missing, left_out)


def _run_case(case: PeerCase, peers: Sequence[Peer], repeats: int, inner: int | None, seed: int) -> PeerRow:
    problem = make_problem(case, seed)
    sides = {"prelens": PRELENS.prepare(problem)}
    ours = sides["prelens"].grads
    assert ours is not None
    reference = ours()
    errors: dict[str, float] = {}
    for peer in peers:
        prepared = peer.prepare(problem)
        if prepared.grads is not None:
            errors[peer.name] = check_peer_gradients(peer.name, case, reference, prepared.grads())
        sides[peer.name] = prepared
    del reference
    fns = {name: side.step for name, side in sides.items()}
    for f in fns.values():  # warm up: caches, compilation, the allocator's thresholds
        for _ in range(3):
            f()
    if inner is None:
        t = time_interleaved({"prelens": fns["prelens"]}, 3, 1)["prelens"][0]
        inner = max(1, min(500, int(0.02 / max(t, 1e-7))))
    timed = time_interleaved(fns, repeats, inner)
    return PeerRow(
        case,
        times={name: t for name, (t, _) in timed.items()},
        faults={name: f for name, (_, f) in timed.items()},
        grad_errors=errors,
        prelens_peak=peak_bytes(fns["prelens"]),
    )


# ------------------------------------------------------------------ the table


def _header(peers: Sequence[Peer]) -> str:
    versions = [f"numpy {np.__version__}"]
    for module, users in (("torch", (TORCH_EAGER,)), ("jax", (JAX_JIT, PRELENS_JAX))):
        if any(peer in peers for peer in users) and module in sys.modules:
            versions.append(f"{module} {getattr(sys.modules[module], '__version__', '?')}")
    from prelens.train._runtime import current_blas_threads

    return (
        f"prelens bench --peers: {', '.join(versions)}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, {current_blas_threads()} BLAS/intra-op thread(s) for every side"
    )


#: ``(numerator, denominator, title)`` of each ratio column: prelens against every peer, then
#: prelens on JAX against the two it is meant to match (issue 15).
_RATIOS = (
    ("prelens", "matmul floor", "prelens / floor"),
    ("prelens", "PyTorch eager", "prelens / torch"),
    ("prelens", "JAX jit", "prelens / JAX"),
    ("prelens", "numpy by hand", "prelens / numpy"),
    ("prelens JAX", "JAX jit", "prelens JAX / JAX"),
    ("prelens JAX", "PyTorch eager", "prelens JAX / torch"),
)


def format_peers(report: PeerReport) -> str:
    """The Markdown table of :class:`PeerReport` (milliseconds per step, ratios, prelens's peak)."""
    names: list[str] = []
    for row in report.rows:
        names += [n for n in row.times if n not in names]
    ratios = [(of, n, title) for of, n, title in _RATIOS if of in names and n in names]
    head = ["one SGD step (ms)", *names, *(title for *_, title in ratios), "prelens peak MiB"]
    lines = [report.header, "", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for row in report.rows:
        cells = [row.case.label, *(_ms(row.times.get(n)) for n in names)]
        for of, n, _ in ratios:
            r = row.ratio(n, of=of)
            cells.append("—" if r is None else f"{r:.2f}")
        cells.append(f"{row.prelens_peak / 2**20:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"medians of {report.repeats} interleaved repetitions; gradients checked equal to prelens's first"]
    if report.missing:
        gone = f"; left out: {', '.join(report.left_out)}" if report.left_out else ""
        lines.append(f"not installed (pip install 'prelens[peers]'): {', '.join(report.missing)}{gone}")
    return "\n".join(lines)


def _ms(t: float | None) -> str:
    if t is None:
        return "—"
    ms = t * 1e3
    return f"{ms:.3f}" if ms < 0.1 else f"{ms:.2f}"
