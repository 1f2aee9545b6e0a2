"""Where a training step's time goes, lens by lens: its matrix products against everything else.

:func:`profile_step` builds the step of a :class:`~prelens_bench.peers.PeerCase`
(forward, backward, SGD update) with every lens's ``fwd`` and ``bwd`` wrapped
in a timer, runs it, and charges each call its *exclusive* time (its own, less
the lenses it calls). Lenses are grouped by kind (``linear``, ``layer_norm``,
``softmax``, ...); the lenses that only run other lenses (``>>``, ``@``,
``chain``, the reparametrisations that give blocks their named parameters, the
residual connection that adds around its inner lens) are one row, *composition*,
and so are the wiring lenses (``copy_l``, ``add_l``, ``id_pre_lens``, the isos).
The matrix products of each kind, run alone into preallocated outputs
(:mod:`prelens_bench._floor`), are its *matmul* column; the rest of its time is
everything else it does: elementwise work, softmax, normalisation, copies,
reshapes of heads, allocation, its checks, Python.

The timers cost about a microsecond a call; that cost, measured on a lens that
does nothing, is taken off every call, and the report gives the instrumented
and the plain step side by side. Never assert a time in a test.

>>> p = profile_step(PeerCase((4, 8, 3), "float64", 16), repeats=3)
>>> sorted(r.lens for r in p.rows)
['composition', 'dense', 'mse', 'optimiser update (sgd)', 'trace (vjp, pullback)']
"""

from __future__ import annotations

import contextlib
import resource
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens.core import _lens
from prelens.core._lens import PreLens
from prelens.core._trace import vjp
from prelens.learn import sgd
from prelens_bench._floor import tagged_products
from prelens_bench._timing import peak_bytes, time_interleaved
from prelens_bench.lm import LMConfig
from prelens_bench.peers import PeerCase, make_problem

__all__ = ["Profile", "ProfileRow", "profile_step"]

#: Lenses that only move values around; one row of the table.
WIRING = frozenset(
    {"copy_l", "add_l", "id_pre_lens", "assoc_l", "unassoc_l", "sym_l", "lunit_l", "unlunit_l", "runit_l", "unrunit_l"}
)


@dataclass(frozen=True)
class ProfileRow:
    """One kind of lens in a step: calls per step, exclusive seconds per step, and its products' share.

    >>> r = ProfileRow("linear", 8, fwd=2e-3, bwd=3e-3, matmul=4e-3)
    >>> round(r.total * 1e3, 3), round(r.rest * 1e3, 3)
    (5.0, 1.0)
    """

    lens: str
    calls: int  #: forward calls per step
    fwd: float
    bwd: float
    matmul: float = 0.0  #: its matrix products alone, into preallocated outputs

    @property
    def total(self) -> float:
        """Forward plus backward."""
        return self.fwd + self.bwd

    @property
    def rest(self) -> float:
        """What it spends besides its matrix products."""
        return self.total - self.matmul


@dataclass(frozen=True)
class Profile:
    """A step's time by kind of lens; ``str`` is the Markdown table.

    ``step`` is the plain (uninstrumented) step's median seconds, ``instrumented``
    the timed one's (its rows, less the timers' cost, add up to it); ``floor``
    the step's products alone; ``faults`` minor page faults per plain step;
    ``peak`` bytes allocated at the peak of one plain step.

    >>> row = ProfileRow("dense", 1, 1e-5, 2e-5, 1e-5)
    >>> p = Profile(PeerCase((2, 1), "float64", 2), [row], 4e-5, 5e-5, 1e-5, 0, 64)
    >>> print(str(p).splitlines()[-1])
    | **all** | | 0.010 | 0.020 | 0.030 | 100% | 0.010 | 0.020 |
    """

    case: PeerCase
    rows: list[ProfileRow]
    step: float
    instrumented: float
    floor: float
    faults: float
    peak: int

    def __str__(self) -> str:
        return _format(self)


# ------------------------------------------------------------ instrumentation


class _Clock:
    """Exclusive time per (kind, pass): each call's elapsed time less its wrapped callees'."""

    def __init__(self) -> None:
        self.stack = [0.0]
        self.seconds: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.calls: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.composite: set[str] = set()
        self.cost = 0.0  # the wrapper's cost outside its timed window (taken off the caller)

    def wrap(self, kind: str, pass_: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        stack, seconds, calls, composite = self.stack, self.seconds, self.calls, self.composite
        clock = time.perf_counter
        key = (kind, pass_)

        def timed(a: Any, b: Any) -> Any:
            stack.append(0.0)
            t0 = clock()
            try:
                return f(a, b)
            finally:
                elapsed = clock() - t0
                inner = stack.pop()
                if inner:
                    composite.add(kind)
                seconds[key] += elapsed - inner
                calls[key] += 1
                stack[-1] += elapsed + self.cost  # the caller is not charged for this wrapper

        return timed


def _kind(lens: PreLens[Any, Any, Any, Any, Any, Any, Any, Any]) -> str:
    name = lens.name.split("(")[0].strip()
    if lens.op in (">>", "@", "chain") or name.startswith(("dimap_", "alpha", "beta")):
        return "composition"
    return "wiring" if name in WIRING else name


@contextlib.contextmanager
def _timed_lenses(clock: _Clock) -> Iterator[None]:
    """Every lens made in the block, and prelens's ready-made lens values, run through ``clock``."""
    import prelens.core
    import prelens.nn

    def wrap_lens(lens: Any) -> None:
        kind = _kind(lens)
        object.__setattr__(lens, "fwd", clock.wrap(kind, "fwd", lens.fwd))
        object.__setattr__(lens, "bwd", clock.wrap(kind, "bwd", lens.bwd))

    values = {id(v): v for m in (prelens.core, prelens.nn) for v in vars(m).values() if isinstance(v, PreLens)}
    saved = [(v, v.fwd, v.bwd) for v in values.values()]
    original = _lens.PreLens.__post_init__

    made: list[Any] = []

    def post_init(self: Any) -> None:
        original(self)
        wrap_lens(self)
        made.append(self)

    try:
        for v in values.values():
            wrap_lens(v)
        _lens.PreLens.__post_init__ = post_init  # type: ignore[method-assign]
        yield
    finally:
        _lens.PreLens.__post_init__ = original  # type: ignore[method-assign]
        for v, fwd, bwd in saved:
            object.__setattr__(v, "fwd", fwd)
            object.__setattr__(v, "bwd", bwd)
        # Without their builders the trace's trusted reruns run these lenses' timed passes (core._lens.unguarded).
        for lens in made:
            lens.__dict__.pop(_lens._BUILD, None)


def _trained(case: PeerCase) -> Any:
    from prelens.nn import decoder_lm, mlp, mse, token_cross_entropy

    dt = np.dtype(case.dtype)
    if isinstance(case.model, LMConfig):
        c = case.model
        net = decoder_lm(c.vocab, c.d_model, c.n_heads, c.d_ff, c.n_layers, c.seq_len, eps=c.eps, dtype=dt)
        return net >> token_cross_entropy()
    n_in, *sizes = case.model
    return mlp(n_in, sizes, dtype=dt, input_delta=False) >> mse


def _stepper(trained: Any, problem: Any, seconds: dict[str, float] | None = None) -> Callable[[], None]:
    opt = sgd(problem.lr)
    x, y = problem.x, problem.y
    state = [problem.params]
    clock = time.perf_counter

    def step() -> None:
        t0 = clock()
        _, pullback = vjp(trained, (y, state[0]), x)
        (_, grads), _ = pullback(1.0)
        t1 = clock()
        state[0] = opt.update(grads, (), state[0])[0]
        if seconds is not None:
            seconds["trace"] += t1 - t0
            seconds["update"] += clock() - t1

    return step


def _timer_cost() -> float:
    """Seconds a wrapped call costs outside its own timed window (measured on a lens that does nothing)."""
    clock = _Clock()

    def noop(a: Any, b: Any) -> None:
        return None

    f = clock.wrap("noop", "fwd", noop)
    n = 20000
    best = float("inf")
    for _ in range(5):
        clock.seconds.clear()
        t0 = time.perf_counter()
        for _ in range(n):
            f(None, None)
        t1 = time.perf_counter()
        for _ in range(n):
            noop(None, None)
        t2 = time.perf_counter()
        best = min(best, ((t1 - t0) - (t2 - t1) - clock.seconds["noop", "fwd"]) / n)
    return max(best, 0.0)


# -------------------------------------------------------------------- profile


def profile_step(case: PeerCase, *, repeats: int = 30, seed: int = 0) -> Profile:
    """Time ``case``'s training step lens by lens (see the module doc).

    ``repeats`` steps are timed (after three to warm up); the products are
    timed alone, interleaved, ``repeats`` times.

    >>> p = profile_step(PeerCase((4, 3), "float32", 8), repeats=2)
    >>> [r.lens for r in p.rows if r.matmul > 0]
    ['dense']
    """
    problem = make_problem(case, seed)
    plain = _stepper(_trained(case), problem)
    clock = _Clock()
    with _timed_lenses(clock):
        timed_model = _trained(case)
    split = {"trace": 0.0, "update": 0.0}
    instrumented = _stepper(timed_model, problem, split)
    products = tagged_products(case, problem.params, seed)
    matmul = np.matmul
    by_tag: dict[str, list[tuple[Any, Any, Any]]] = defaultdict(list)
    for tag, prod in products:
        by_tag[tag].append(prod)

    def run_products(prods: list[tuple[Any, Any, Any]]) -> Callable[[], None]:
        def run() -> None:
            for a, b, out in prods:
                matmul(a, b, out=out)

        return run

    fns: dict[str, Callable[[], object]] = {"plain": plain, **{f"mm:{t}": run_products(p) for t, p in by_tag.items()}}
    fns["floor"] = run_products([p for _, p in products])
    for f in (*fns.values(), instrumented):
        for _ in range(3):
            f()
    timed = time_interleaved(fns, repeats, 1)
    clock.cost = _timer_cost()
    clock.seconds.clear()
    clock.calls.clear()
    split.update(trace=0.0, update=0.0)
    t0 = time.perf_counter()
    for _ in range(repeats):
        instrumented()
    per_step = (time.perf_counter() - t0) / repeats
    rows = _rows(clock, split, repeats, {t[3:]: v[0] for t, v in timed.items() if t.startswith("mm:")})
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    plain()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    return Profile(case, rows, timed["plain"][0], per_step, timed["floor"][0], float(faults), peak_bytes(plain))


def _rows(clock: _Clock, split: dict[str, float], repeats: int, matmul: dict[str, float]) -> list[ProfileRow]:
    kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for (kind, pass_), secs in clock.seconds.items():
        key = "composition" if kind in clock.composite else kind
        kinds[key][0 if pass_ == "fwd" else 1] += secs / repeats
        if pass_ == "fwd":
            kinds[key][2] += clock.calls[kind, pass_] / repeats
    lens_total = sum(f + b for f, b, _ in kinds.values())
    rows = [ProfileRow(k, round(n), f, b, matmul.get(k, 0.0)) for k, (f, b, n) in kinds.items()]
    rows.append(ProfileRow("trace (vjp, pullback)", 1, split["trace"] / repeats - lens_total, 0.0))
    rows.append(ProfileRow("optimiser update (sgd)", 1, split["update"] / repeats, 0.0))
    return sorted(rows, key=lambda r: -r.total)


def _ms(t: float) -> str:
    return f"{t * 1e3:.3f}"


def _format(p: Profile) -> str:
    total = sum(r.total for r in p.rows) or 1.0
    lines = [
        f"{p.case.label}: one SGD step {_ms(p.step)} ms (instrumented {_ms(p.instrumented)} ms), "
        f"matmul floor {_ms(p.floor)} ms ({p.step / p.floor:.2f}×); {p.faults:.0f} minor page faults per step; "
        f"peak {p.peak / 2**20:.2f} MiB",
        "",
        "| lens | calls | fwd ms | bwd ms | total ms | share | matmul ms | rest ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in p.rows:
        lines.append(
            f"| {r.lens} | {r.calls} | {_ms(r.fwd)} | {_ms(r.bwd)} | {_ms(r.total)} | {r.total / total:.0%} "
            f"| {_ms(r.matmul) if r.matmul else '—'} | {_ms(r.rest)} |"
        )
    mm = sum(r.matmul for r in p.rows)
    lines.append(
        f"| **all** | | {_ms(sum(r.fwd for r in p.rows))} | {_ms(sum(r.bwd for r in p.rows))} | {_ms(total)} | 100% "
        f"| {_ms(mm)} | {_ms(total - mm)} |"
    )
    return "\n".join(lines)
