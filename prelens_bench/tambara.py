"""The blog's TriLens route at real sizes: build time, pass time, peak memory and steps.

Two sweeps, each row one network built the blog's way and run through ``from_tamb``:

* *width*: ``make_mlp(4, [w, 3])`` on one input, for ``w`` from 8 to 256 neurons;
* *batch*: ``from_tamb(batch_n(n, make_mlp(3, [4, 1]))) >> loss_l`` on ``n`` inputs.

Each row gives the time to build the pre-lens (``from_tamb``), the time of one forward and
backward pass, the peak memory of that pass, the program's length and the work of its
passes (the number of places the plumbing visited: it grows linearly, or the cost does not).
Then the training step of the TriLens route is timed against the pre-lens route
``batch_n(n, from_tamb(mlp))`` on the same network, interleaved.

Run with ``OPENBLAS_NUM_THREADS=1 python -m prelens_bench.tambara``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens.core._combinators import batch_n
from prelens.core._trace import vjp
from prelens.faithful import init_mlp, make_mlp
from prelens.faithful._loss import loss_l
from prelens.tambara import _program
from prelens.tambara._program import Program
from prelens.tambara._trilens import AnyTriLens, from_tamb, interpret
from prelens_bench._timing import peak_bytes, time_interleaved

__all__ = ["TambaraRow", "count_work", "tambara_routes", "tambara_sweep"]


@dataclass(frozen=True)
class TambaraRow:
    """One network of a sweep: its size, build and pass seconds, peak bytes, program steps and work.

    >>> TambaraRow("width", 8, 3e-4, 5e-4, 6144, 66, 666).work
    666
    """

    sweep: str
    size: int
    build_s: float
    pass_s: float
    peak_bytes: int
    steps: int
    work: int


def count_work(f: Callable[[], object]) -> int:
    """How many places the plumbing visits while ``f`` runs (calls of ``update``, ``take``, ``put``).

    >>> from prelens import from_tamb, to_tamb, id_pre_lens
    >>> count_work(lambda: from_tamb(to_tamb(id_pre_lens)).fwd((), 1.0))  # five steps, alpha and beta two places each
    7
    """
    calls = [0]
    originals = {name: getattr(_program, name) for name in ("update", "take", "put")}

    def counting(fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            calls[0] += 1
            return fn(*args)

        return run

    try:
        for name, fn in originals.items():
            setattr(_program, name, counting(fn))
        f()
    finally:
        for name, fn in originals.items():
            setattr(_program, name, fn)
    return calls[0]


def _network(sweep: str, size: int) -> tuple[AnyTriLens, Callable[[], Any], Callable[[], Any]]:
    """The TriLens of a row, and functions making its parameters and its input."""
    rng = np.random.default_rng(0)
    if sweep == "width":
        p = init_mlp(4, [size, 3], rng)
        return make_mlp(4, [size, 3]), lambda: p, lambda: rng.standard_normal(4)
    p = init_mlp(3, [4, 1], rng)
    xs = [rng.standard_normal(3) for _ in range(size)]
    ys = [rng.standard_normal(1) for _ in range(size)]
    return batch_n(size, make_mlp(3, [4, 1])), lambda: (ys, p), lambda: xs


def _row(sweep: str, size: int, repeats: int) -> TambaraRow:
    tri, params, inputs = _network(sweep, size)
    t0 = time.perf_counter()
    lens = from_tamb(tri) if sweep == "width" else from_tamb(tri) >> loss_l
    build = time.perf_counter() - t0
    p, s = params(), inputs()
    da = 1.0 if sweep == "batch" else [1.0, 1.0, 1.0]

    def one_pass() -> object:
        _, pullback = vjp(lens, p, s)
        return pullback(da)

    one_pass()  # the first call checks the deltas; time the ones after it
    seconds = min(_seconds(one_pass) for _ in range(repeats))  # the fastest: the least disturbed
    steps = len(interpret(tri, Program()))
    return TambaraRow(sweep, size, build, seconds, peak_bytes(one_pass), steps, count_work(one_pass))


def _seconds(f: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def tambara_sweep(
    widths: tuple[int, ...] = (8, 16, 32, 64, 128, 256),
    batches: tuple[int, ...] = (1, 4, 16, 64, 256),
    repeats: int = 5,
) -> list[TambaraRow]:
    """One row per width and per batch size (see the module's docstring); a pass's time is the fastest of ``repeats``.

    >>> rows = tambara_sweep(widths=(8,), batches=(2,))
    >>> [(r.sweep, r.size) for r in rows]
    [('width', 8), ('batch', 2)]
    """
    return [_row("width", w, repeats) for w in widths] + [_row("batch", n, repeats) for n in batches]


def tambara_routes(n: int = 16, sizes: tuple[int, ...] = (4, 16, 1), repeats: int = 5) -> tuple[float, float]:
    """Median seconds of one training step by the TriLens route and by the pre-lens route, interleaved.

    TriLens route: ``from_tamb(batch_n(n, mlp)) >> loss_l``; pre-lens route:
    ``batch_n(n, from_tamb(mlp)) >> loss_l`` (``mlp = make_mlp(sizes[0], sizes[1:])``).

    >>> tri, pre = tambara_routes(n=2, sizes=(3, 2, 1), repeats=1)
    >>> tri > 0 and pre > 0
    True
    """
    rng = np.random.default_rng(0)
    m_in, layers = sizes[0], list(sizes[1:])
    mlp = make_mlp(m_in, layers)
    p = (list(rng.standard_normal((n, layers[-1]))), init_mlp(m_in, layers, rng))
    xs = list(rng.standard_normal((n, m_in)))
    routes = {"tri": from_tamb(batch_n(n, mlp)) >> loss_l, "pre": batch_n(n, from_tamb(mlp)) >> loss_l}

    def step(lens: Any) -> Callable[[], object]:
        def run() -> object:
            _, pullback = vjp(lens, p, xs)
            return pullback(1.0)

        return run

    fns = {name: step(lens) for name, lens in routes.items()}
    for f in fns.values():
        f()
    times = time_interleaved(fns, repeats=repeats, inner=3)
    return times["tri"][0], times["pre"][0]


def _main() -> None:  # pragma: no cover - a report for people
    """Print both sweeps and the routes' step-time ratio."""
    print(f"{'sweep':6} {'size':>5} {'build ms':>9} {'pass ms':>9} {'peak KiB':>9} {'steps':>6} {'work':>8}")
    for r in tambara_sweep():
        print(
            f"{r.sweep:6} {r.size:5d} {r.build_s * 1e3:9.2f} {r.pass_s * 1e3:9.2f} "
            f"{r.peak_bytes / 1024:9.0f} {r.steps:6d} {r.work:8d}"
        )
    for n, sizes in ((4, (3, 4, 4, 1)), (16, (4, 16, 3)), (64, (4, 64, 64, 3))):
        tri, pre = tambara_routes(n, sizes)
        print(
            f"training step, batch {n}, make_mlp{sizes[0], list(sizes[1:])}: "
            f"TriLens route {tri * 1e3:.2f} ms, pre-lens route {pre * 1e3:.2f} ms, ratio {tri / pre:.2f}"
        )


if __name__ == "__main__":  # pragma: no cover
    _main()
