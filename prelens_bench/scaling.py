"""Cost curves: how one SGD step of the decoder LM grows with sequence length, width, batch and depth.

``prelens bench --scaling``. From the issue's base point (vocab 64, sequence 32,
d_model 64, 4 heads, FFN 256, 2 blocks, batch 16) one axis moves at a time:
sequence length 32 → 512, d_model 64 → 512 (the FFN stays 4·d_model), batch
1 → 256 and depth (blocks) 1 → 8. At each point the step of
:mod:`prelens_bench.peers` (forward, backward, SGD) runs in prelens on numpy,
prelens on JAX (:func:`~prelens.train.compile_step`), PyTorch eager and
hand-written JAX under ``jit``, whichever are installed, and the step's matrix
products alone (the matmul floor): every side's gradient is checked equal to
prelens's first, then the sides run interleaved
(:func:`~prelens_bench._timing.time_interleaved`) and the table gives medians.

Along the sequence axis it also reads the memory: the residue bytes that
:class:`prelens.tambara.Cost` finds in the LM (what the backward pass keeps:
the attention matrices grow as T²) beside the peak bytes that one prelens
forward and backward pass allocates (``tracemalloc``; numpy reports its buffers).

:meth:`ScalingReport.table` is Markdown; :meth:`ScalingReport.plot` draws one
log-log panel per axis and one of the memory (matplotlib: the ``plot`` extra).

>>> report = run_scaling("tiny", sides=[PRELENS_NUMPY], repeats=1)
>>> [(r.axis, r.value) for r in report.rows][:3]
[('seq_len', 4), ('seq_len', 8), ('d_model', 8)]
>>> [m.seq_len for m in report.memory]
[4, 8]
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.core._trace import vjp
from prelens.nn._losses import token_cross_entropy
from prelens.nn._transformer import decoder_lm
from prelens.tambara import Cost, to_tamb
from prelens_bench import peers as P
from prelens_bench._problem import PeerCase, PeerStep, Problem, check_peer_gradients, make_problem, measured_only
from prelens_bench._timing import peak_bytes, time_interleaved
from prelens_bench.lm import LMConfig

__all__ = [
    "PRELENS_NUMPY",
    "SCALING_AXES",
    "SCALING_GRIDS",
    "SCALING_SIDES",
    "ScalingGrid",
    "ScalingMemory",
    "ScalingReport",
    "ScalingRow",
    "run_scaling",
]

#: The axes, in the order of the table and the panels, and how each is titled.
SCALING_AXES: dict[str, str] = {
    "seq_len": "sequence length T",
    "d_model": "d_model (FFN 4·d_model)",
    "batch": "batch",
    "n_layers": "blocks",
}


@dataclass(frozen=True)
class ScalingGrid:
    """A base point and, for each axis, the values it takes (the others stay at the base).

    >>> g = SCALING_GRIDS["full"]
    >>> g.point("d_model", 128)
    LMConfig(vocab=64, seq_len=32, d_model=128, n_heads=4, d_ff=512, n_layers=2, batch=16, eps=1e-05)
    >>> sum(len(v) for v in g.values.values()), len(g.points())
    (18, 15)
    """

    base: LMConfig
    values: dict[str, tuple[int, ...]]

    def point(self, axis: str, value: int) -> LMConfig:
        """The base point with ``axis`` set to ``value`` (a wider model keeps its FFN/d_model ratio)."""
        if axis not in SCALING_AXES:
            raise E.bad_argument("ScalingGrid.point", "axis", axis, f"one of {', '.join(SCALING_AXES)}")
        if axis == "d_model":
            return dataclasses.replace(self.base, d_model=value, d_ff=self.base.d_ff * value // self.base.d_model)
        return dataclasses.replace(self.base, **{axis: value})

    def points(self) -> list[LMConfig]:
        """Every distinct configuration of the grid (the base point once), in axis order."""
        return list(dict.fromkeys(self.point(a, v) for a in SCALING_AXES for v in self.values[a]))


#: ``full``: the issue's curves; ``tiny``: the same machinery at toy sizes (the tests, a smoke run).
SCALING_GRIDS: dict[str, ScalingGrid] = {
    "full": ScalingGrid(
        LMConfig(),
        {"seq_len": (32, 64, 128, 256, 512), "d_model": (64, 128, 256, 512), "batch": (1, 4, 16, 64, 256),
         "n_layers": (1, 2, 4, 8)},
    ),
    "tiny": ScalingGrid(
        LMConfig(vocab=11, seq_len=4, d_model=8, n_heads=2, d_ff=32, n_layers=1, batch=2),
        {"seq_len": (4, 8), "d_model": (8, 16), "batch": (1, 2), "n_layers": (1, 2)},
    ),
}  # fmt: skip

#: prelens on numpy (:func:`~prelens.vjp` and :func:`prelens.learn.sgd`): every other side is checked against it.
PRELENS_NUMPY: P.Peer = P.PRELENS
#: The columns of ``prelens bench --scaling``: prelens on numpy and on JAX, PyTorch eager, JAX jit, and the
#: step's matrix products alone (the floor: where a side beats it, it does not make every product prelens makes).
SCALING_SIDES: tuple[P.Peer, ...] = (PRELENS_NUMPY, P.PRELENS_JAX, P.TORCH_EAGER, P.JAX_JIT, P.MATMUL_FLOOR)


@dataclass(frozen=True)
class ScalingRow:
    """One point of one axis: median seconds per step by side, each checked side's gradient error.

    ``failed`` names the sides whose gradient check failed at this point (with the law's first
    line): they are not timed there, and the table says so, while the other sides go on.
    ``notes`` names the sides whose float32 check failed but which agree with prelens in float64
    at the same weights and batch (float32 rounding, not a different step): timed, and the
    table marks them †.

    >>> cfg = SCALING_GRIDS["full"].point("seq_len", 64)
    >>> row = ScalingRow("seq_len", 64, cfg, {"prelens": 2e-3, "PyTorch eager": 1e-3})
    >>> row.ratio("prelens", "PyTorch eager"), row.ratio("prelens JAX", "JAX jit")
    (2.0, None)
    """

    axis: str
    value: int
    config: LMConfig
    times: dict[str, float]
    grad_errors: dict[str, float] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def ratio(self, of: str, to: str) -> float | None:
        """``of``'s time over ``to``'s (``None`` if either did not run)."""
        a, b = self.times.get(of), self.times.get(to)
        return None if a is None or b is None else a / b


@dataclass(frozen=True)
class ScalingMemory:
    """One sequence length: Cost's residue bytes of the LM, the measured peak of a step, one block's attention.

    >>> ScalingMemory(512, 10, 12, 4).peak_bytes
    12
    """

    seq_len: int
    residue_bytes: int  # prelens.tambara.Cost: what the backward pass keeps, the whole LM
    peak_bytes: int  # tracemalloc: the peak of one forward and backward pass (with the loss), above the start
    attention_bytes: int  # batch x heads x T x T floats: one block's attention matrix


@dataclass(frozen=True)
class ScalingReport:
    """What one run measured: rows (axis by axis), the memory along T, and how it was run.

    >>> r = ScalingReport([ScalingRow("batch", 1, LMConfig(batch=1), {"prelens": 1e-3})], [], 7, "dtype float32")
    >>> print(r.table())  # doctest: +NORMALIZE_WHITESPACE
    dtype float32
    <BLANKLINE>
    | axis | value | prelens (ms) |
    |---|---:|---:|
    | batch | 1 | 1.00 |
    <BLANKLINE>
    medians of 7 interleaved repetitions per point; every side's gradient (the floor has none) checked equal to
    prelens's first
    """

    rows: list[ScalingRow]
    memory: list[ScalingMemory]
    repeats: int
    header: str = ""
    missing: tuple[str, ...] = ()
    seconds: float = 0.0

    def sides(self) -> list[str]:
        """The columns that ran, in order."""
        names: list[str] = []
        for row in self.rows:
            names += [n for n in row.times if n not in names]
        return names

    def table(self) -> str:
        """The step times (ms) by axis and side, the ratios that matter, and the memory along T (Markdown)."""
        names = self.sides()
        ratios = [(a, b) for a, b in _RATIOS if a in names and b in names]
        head = ["axis", "value", *(f"{n} (ms)" for n in names), *(f"{a} / {b}" for a, b in ratios)]
        lines = [self.header, "", _row(head), "|---|" + "---:|" * (len(head) - 1)]
        for row in self.rows:
            cells = [row.axis, str(row.value), *(_cell(row, n) for n in names)]
            for a, b in ratios:
                r = row.ratio(a, b)
                cells.append("—" if r is None else f"{r:.2f}")
            lines.append(_row(cells))
        lines += ["", f"medians of {self.repeats} interleaved repetitions per point; every side's gradient (the floor "
                  "has none) checked equal to prelens's first"]  # fmt: skip
        failures = dict.fromkeys(
            f"- ✗ {row.axis}={row.value}, {name}: the gradient check failed: {why}"
            for row in self.rows
            for name, why in row.failed.items()
        )
        failures.update(
            dict.fromkeys(
                f"- † {row.axis}={row.value}, {name}: {why}" for row in self.rows for name, why in row.notes.items()
            )
        )
        lines += ["", *failures] if failures else []
        if self.missing:
            lines.append(f"not installed (pip install 'prelens[peers]'): {', '.join(self.missing)}")
        if self.memory:
            lines += [
                "",
                "memory along T (prelens on numpy, one forward and backward pass):",
                "",
                "| T | Cost residue (MB) | measured peak (MB) | one block's attention matrix (MB) "
                "| residue growth (T × 2) |",
                "|---:|---:|---:|---:|---:|",
            ]
            prev: ScalingMemory | None = None
            for m in self.memory:
                growth = "—" if prev is None else f"{m.residue_bytes / prev.residue_bytes:.2f}"
                mb = [f"{b / 1e6:.2f}" for b in (m.residue_bytes, m.peak_bytes, m.attention_bytes)]
                lines.append(_row([str(m.seq_len), *mb, growth]))
                prev = m
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str]) -> Path:
        """Draw the curves (log-log, one panel per axis, and the memory along T) into the PNG ``path``."""
        try:
            import matplotlib
        except ImportError:
            raise E.missing_extra("prelens bench --scaling", "matplotlib", "plot") from None
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        panels = [a for a in SCALING_AXES if any(r.axis == a for r in self.rows)]
        n = len(panels) + (1 if self.memory else 0)
        cols = min(n, 3)
        rows_ = -(-n // cols)
        fig, grid = plt.subplots(rows_, cols, figsize=(3.8 * cols, 3.3 * rows_), squeeze=False)
        axes = list(grid.flat)
        for ax in axes[n:]:
            ax.set_visible(False)
        for ax, axis in zip(axes, panels):
            rows = [r for r in self.rows if r.axis == axis]
            for name in self.sides():  # a side that failed its check at a point has no time there
                pts = [(r.value, r.times[name] * 1e3) for r in rows if name in r.times]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=name)
            ax.set(xscale="log", yscale="log", xlabel=SCALING_AXES[axis], ylabel="ms per SGD step")
            ax.set_xticks([r.value for r in rows], [str(r.value) for r in rows])
            ax.minorticks_off()
            ax.grid(True, which="major", alpha=0.3)
        if self.memory:
            ax = axes[n - 1]
            t = [m.seq_len for m in self.memory]
            ax.plot(t, [m.residue_bytes / 1e6 for m in self.memory], marker="o", label="Cost residue")
            ax.plot(t, [m.peak_bytes / 1e6 for m in self.memory], marker="s", label="measured peak")
            ax.plot(t, [m.attention_bytes / 1e6 for m in self.memory], ls="--", label="one attention matrix (T²)")
            ax.set(
                xscale="log", yscale="log", xlabel=SCALING_AXES["seq_len"], ylabel="MB", title="memory (prelens numpy)"
            )
            ax.set_xticks(t, [str(v) for v in t])
            ax.minorticks_off()
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=7)
        axes[0].legend(fontsize=7)
        title = self.header.splitlines()[0].split("; one axis")[0] if self.header else "prelens bench --scaling"
        fig.suptitle(title, fontsize=8)
        fig.tight_layout()
        out = Path(path)
        fig.savefig(out, dpi=110)
        plt.close(fig)
        return out

    def write(self, out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``scaling.md`` (the table) and ``scaling.png`` (the curves) into ``out_dir``; their paths."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        md = d / "scaling.md"
        md.write_text(self.table() + "\n", encoding="utf-8")
        return md, self.plot(d / "scaling.png")


#: ``(numerator, denominator)`` of each ratio column.
_RATIOS = (
    ("prelens", "PyTorch eager"),
    ("prelens JAX", "JAX jit"),
    ("prelens JAX", "PyTorch eager"),
    ("prelens", "matmul floor"),
    ("PyTorch eager", "matmul floor"),
)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _cell(row: ScalingRow, side: str) -> str:
    """A side's time at a point: ✗ if its check failed there, † if only float32 rounding told it apart."""
    if side in row.failed:
        return "✗"
    return _ms(row.times.get(side)) + ("†" if side in row.notes else "")


def _ms(t: float | None) -> str:
    if t is None:
        return "—"
    ms = t * 1e3
    return f"{ms:.3f}" if ms < 0.1 else f"{ms:.2f}"


# -------------------------------------------------------------------- the run


def run_scaling(
    grid: str | ScalingGrid = "full",
    *,
    sides: Sequence[P.Peer] = SCALING_SIDES,
    repeats: int = 7,
    dtype: str = "float32",
    seed: int = 0,
    memory: bool = True,
    progress: Callable[[str], object] | None = None,
) -> ScalingReport:
    """Check, then time, every installed side at every point of ``grid``; read the memory along T.

    ``grid`` is ``"full"``, ``"tiny"`` or a :class:`ScalingGrid`; the base
    point is measured once and shared by the axes. ``progress`` is called with
    a line per point (the CLI prints them to stderr).

    >>> r = run_scaling("tiny", sides=[PRELENS_NUMPY], repeats=1, memory=False)
    >>> len(r.rows), r.memory, r.sides()
    (8, [], ['prelens'])
    """
    g = SCALING_GRIDS[grid] if isinstance(grid, str) else grid
    needs = {side.name: side.missing() for side in sides}
    missing = tuple(dict.fromkeys(m for m in needs.values() if m is not None))
    present = [side for side in sides if needs[side.name] is None]
    if PRELENS_NUMPY not in present:
        present.insert(0, PRELENS_NUMPY)  # the reference every gradient is checked against
    start = time.perf_counter()
    measured: dict[LMConfig, tuple[dict[str, float], dict[str, float], dict[str, str], dict[str, str]]] = {}
    rows = []
    for axis in SCALING_AXES:
        for value in g.values.get(axis, ()):
            cfg = g.point(axis, value)
            if cfg not in measured:
                measured[cfg] = _time_point(cfg, present, repeats, dtype, seed)
                if progress is not None:
                    times = ", ".join(
                        [f"{n} {_ms(t)}" for n, t in measured[cfg][0].items()]
                        + [f"{n} check failed" for n in measured[cfg][2]]
                    )
                    progress(f"{axis}={value}: {times} ms ({time.perf_counter() - start:.0f} s)")
            rows.append(ScalingRow(axis, value, cfg, *measured[cfg]))
    mem = [_memory(g.point("seq_len", t), dtype, seed) for t in g.values.get("seq_len", ())] if memory else []
    return ScalingReport(rows, mem, repeats, _header(g, present, dtype), missing, time.perf_counter() - start)


def _time_point(
    cfg: LMConfig, sides: Sequence[P.Peer], repeats: int, dtype: str, seed: int
) -> tuple[dict[str, float], dict[str, float], dict[str, str], dict[str, str]]:
    problem = make_problem(PeerCase(cfg, dtype), seed)
    case = problem.case
    prepared = {PRELENS_NUMPY.name: PRELENS_NUMPY.prepare(problem)}
    ours = prepared[PRELENS_NUMPY.name].grads
    assert ours is not None
    reference = ours()
    errors: dict[str, float] = {}
    failed: dict[str, str] = {}
    notes: dict[str, str] = {}
    for side in sides:
        if side.name == PRELENS_NUMPY.name:
            continue
        try:  # prepare checks too (prelens JAX its first update)
            step = side.prepare(problem)
            if step.grads is not None:
                errors[side.name] = check_peer_gradients(side.name, case, reference, step.grads())
        except E.LawError as exc:
            why = str(exc).splitlines()[0].rstrip(":")
            second = _float64_opinion(side, problem, reference) if case.dtype == "float32" else None
            if second is None:  # left out at this point, named in the table; the other sides go on
                failed[side.name] = why
                continue
            step, errors[side.name], agree = second
            notes[side.name] = (
                f"{why}; in float64 at the same weights and batch it agrees with prelens to {agree:.0e}: float32 "
                "rounding (a ReLU input within rounding of 0 takes the other branch, say), timed"
            )
        prepared[side.name] = step
    del reference
    fns = {name: side.step for name, side in prepared.items()}
    for f in fns.values():  # warm up: caches, compilation, the allocator's thresholds
        f()
        f()
    t = time_interleaved({PRELENS_NUMPY.name: fns[PRELENS_NUMPY.name]}, 1, 1)[PRELENS_NUMPY.name][0]
    inner = max(1, min(100, int(0.02 / max(t, 1e-7))))  # about 20 ms of prelens steps per timed block
    timed = time_interleaved(fns, repeats, inner)
    del prepared, fns
    gc.collect()
    return {name: s for name, (s, _) in timed.items()}, errors, failed, notes


def _float64_opinion(side: P.Peer, problem: Problem, reference: object) -> tuple[PeerStep, float, float] | None:
    """After ``side``'s float32 check failed: is it the same step? None if not; else its float32 step, re-prepared.

    A fixed float32 tolerance cannot tell rounding from a wrong gradient everywhere: where a ReLU
    input lies within float32 rounding of 0 (at d_model 128 of the full grid, one of 262,144 in the
    first block is 2e-9 of the largest), two libraries may take its two branches, and the
    gradients upstream differ by percents while both are right. Scaling the tolerance with the
    length of the sums does not help: away from such points every side agrees to about 1e-6
    (relative) at every point of the grid, and a branch taken the other way costs 1e-3 to 4e-2.
    So the side is checked again where rounding is 1e-16, in float64 at the same weights and batch
    (to 1e-9, as ``--peers``); if it agrees there, it computes the same step, and its float32 step
    is prepared again with the float32 differences measured (the row's error), not enforced.
    """
    wide = _float64(problem)
    try:
        ours = PRELENS_NUMPY.prepare(wide).grads
        assert ours is not None
        theirs = side.prepare(wide)
        agree = 0.0 if theirs.grads is None else check_peer_gradients(side.name, wide.case, ours(), theirs.grads())
    except E.LawError:
        return None
    del theirs
    with measured_only():
        step = side.prepare(problem)
        err = 0.0 if step.grads is None else check_peer_gradients(side.name, problem.case, reference, step.grads())
    return step, err, agree


def _float64(problem: Problem) -> Problem:
    """``problem`` in float64: the same weights and batch, widened (labels stay integers)."""
    from prelens.core._tree import tree_map

    def wide(a: Any) -> Any:
        return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a

    case = dataclasses.replace(problem.case, dtype="float64")
    return Problem(case, tree_map(wide, problem.params), wide(problem.x), wide(problem.y), problem.lr)


def _memory(cfg: LMConfig, dtype: str, seed: int) -> ScalingMemory:
    dt = np.dtype(dtype)
    lm = decoder_lm(cfg.vocab, cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_layers, cfg.seq_len, eps=cfg.eps, dtype=dt)
    problem = make_problem(PeerCase(cfg, dtype), seed)
    cost = Cost.of(to_tamb(lm), problem.params, problem.x)
    loss = token_cross_entropy()
    gc.collect()
    peak = peak_bytes(lambda: vjp(lm >> loss, (problem.y, problem.params), problem.x)[1](1.0))
    attention = cfg.batch * cfg.n_heads * cfg.seq_len**2 * dt.itemsize
    return ScalingMemory(cfg.seq_len, cost.residue_bytes, peak, attention)


def _header(grid: ScalingGrid, sides: Sequence[P.Peer], dtype: str) -> str:
    from prelens.train._runtime import current_blas_threads

    b = grid.base
    versions = [f"numpy {np.__version__}"]
    for module in ("torch", "jax"):
        if module in sys.modules:
            versions.append(f"{module} {getattr(sys.modules[module], '__version__', '?')}")
    return (
        f"prelens bench --scaling: one SGD step of the decoder LM, {np.dtype(dtype).name}; base vocab {b.vocab}, "
        f"T {b.seq_len}, d_model {b.d_model}, {b.n_heads} heads, FFN {b.d_ff}, {b.n_layers} blocks, "
        f"batch {b.batch}; one axis at a time\n{', '.join(versions)}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, {current_blas_threads()} BLAS/intra-op thread(s); sides: "
        f"{', '.join(s.name for s in sides)}"
    )
