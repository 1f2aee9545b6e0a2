"""Benchmark: a training step of the fast lens MLP against the same step in hand-written numpy.

Both sides train the post's network (``tanh`` on every layer) with mean
squared error, from the same initial weights, on the same batch:

* **lens**: ``mlp(..., input_delta=False) >> mse``, one :func:`~prelens.vjp`
  (forward), the pullback seeded with ``da = 1`` (backward), and
  :func:`prelens.learn.sgd`'s pure update (fresh parameter arrays every step);
* **numpy**: :func:`numpy_mlp_grads` (forward and backward written out by hand,
  as a competent person would) and an in-place ``w -= lr * dw`` update
  (:func:`numpy_mlp_step`).

Before any timing, the gradients of the two are checked equal (float64 to
``1e-10``, float32 to ``1e-4``, relative to each gradient's largest entry);
a mismatch raises :class:`~prelens.LawError`. Then the steps run
**interleaved** in one process (alternating which goes first), and the report
gives median seconds per step, their ratio, and the minor page faults per step
(``resource.getrusage``: a freshly allocated large temporary costs page faults,
design §7). The two halves of the step are timed too, in the same rotation:
forward and backward alone, and the update alone (on fixed gradients), so the
cost of the pure optimiser is visible apart from the lenses'. Peak memory is measured with :mod:`tracemalloc` in a
separate, untimed step (tracing slows allocation down).

A second table times one forward and backward pass through ``chain`` and
through nested ``>>`` of ``n`` identity lenses, ``n = 2, 4, ..., 64``: the
cost per lens should stay flat (linear growth). ``chain`` runs its parts in a
loop; nested ``>>`` recurses ``2n`` Python frames deep, and CPython's cost per
call steps up once past about 120 nested frames (a property of the interpreter,
seen between ``n = 56`` and ``64``; flat again beyond).

Never assert a time in a test: the machines are noisy (±50% between runs).
For steadier numbers run with one BLAS thread (``OPENBLAS_NUM_THREADS=1``).

>>> report = run_benchmarks(quick=True, cases=[MlpCase((4, 8, 3), 16, "float64", 1.5)], chain_sizes=(2, 4))
>>> [(r.case.label, r.grad_error < 1e-10) for r in report.mlp], [c.n for c in report.chains]
([('4-8-3 b16 f64', True)], [2, 4])
>>> print(str(report).splitlines()[0])  # doctest: +ELLIPSIS
prelens bench: numpy ..., Python ..., ... CPUs, BLAS threads ...
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core._combinators import chain
from prelens.core._lens import AnyLens, id_pre_lens
from prelens.core._trace import vjp
from prelens.learn import sgd
from prelens.nn import DenseParams, mlp, mse
from prelens_bench._timing import peak_bytes, time_interleaved

__all__ = [
    "CASES",
    "ChainResult",
    "MlpCase",
    "MlpResult",
    "Report",
    "check_gradients",
    "numpy_mlp_grads",
    "numpy_mlp_step",
    "run_benchmarks",
    "time_chains",
    "time_mlp_step",
]

Array = npt.NDArray[Any]
NumpyParams = list[list[Array]]  #: ``[[W, b], ...]``, one pair per layer, updated in place
LR = 0.01


@dataclass(frozen=True)
class MlpCase:
    """One benchmark case: layer widths ``sizes`` (input first), batch size and dtype name.

    >>> MlpCase((784, 256, 128, 10), 128, "float32").label
    '784-256-128-10 b128 f32'
    """

    sizes: tuple[int, ...]
    batch: int
    dtype: str
    #: the target ratio lens / numpy for the whole step (the issue's: 1.10 when the
    #: matrix products dominate, 1.5 when Python overhead does)
    target: float = 1.10

    @property
    def label(self) -> str:
        """``784-256-128-10 b128 f64``."""
        return f"{'-'.join(map(str, self.sizes))} b{self.batch} {E.dtype_name(self.dtype)}"


#: The issue's cases: the MNIST-sized MLP (matrix products dominate) and a tiny one
#: (per-call overhead dominates), each in float64 and float32.
CASES: tuple[MlpCase, ...] = tuple(
    MlpCase(sizes, batch, dtype, target)
    for sizes, batch, target in (((784, 256, 128, 10), 128, 1.10), ((4, 8, 8, 3), 16, 1.5))
    for dtype in ("float64", "float32")
)


@dataclass(frozen=True)
class MlpResult:
    """Medians for one :class:`MlpCase` (seconds and minor page faults per step).

    >>> r = time_mlp_step(MlpCase((2, 1), 2, "float64"), repeats=1, inner=1)
    >>> r.case.label, r.grad_error < 1e-15, r.ratio > 0
    ('2-1 b2 f64', True, True)
    """

    case: MlpCase
    lens_step: float
    numpy_step: float
    lens_grad: float  #: forward + backward only
    numpy_grad: float
    lens_update: float  #: the SGD update only (``prelens.learn.sgd`` / ``w -= lr * dw``)
    numpy_update: float
    lens_faults: float
    numpy_faults: float
    lens_peak: int  #: bytes allocated at the peak of one step, above what was live before it
    numpy_peak: int
    grad_error: float  #: largest relative gradient difference found by the check

    @property
    def ratio(self) -> float:
        """lens step / numpy step."""
        return self.lens_step / self.numpy_step

    @property
    def grad_ratio(self) -> float:
        """lens forward+backward / numpy forward+backward."""
        return self.lens_grad / self.numpy_grad


@dataclass(frozen=True)
class ChainResult:
    """Median seconds of one forward and backward pass through ``n`` identity lenses.

    >>> r = ChainResult(8, chain=2e-5, nested=3e-5)
    >>> r.n, r.nested / r.chain
    (8, 1.5)
    """

    n: int
    chain: float  #: ``chain(id, id, ...)``
    nested: float  #: ``id >> id >> ...``


@dataclass(frozen=True)
class Report:
    """Everything one run measured; ``str`` is the printed report.

    >>> print(Report([], [ChainResult(2, 1e-6, 2e-6)], 1, "a header"))
    a header
    <BLANKLINE>
    one forward + backward through n identity lenses: µs (µs per lens; flat = linear growth)
       n          chain(...)     id >> id >> ...
       2          1.0 (0.50)          2.0 (1.00)
    <BLANKLINE>
    peak resident memory of this process: ... MiB
    """

    mlp: list[MlpResult]
    chains: list[ChainResult]
    repeats: int
    header: str = field(default="")

    def __str__(self) -> str:
        return _format(self)


# ----------------------------------------------------------- the hand-written side


def numpy_mlp_grads(params: NumpyParams, x: Array, y: Array) -> tuple[Any, list[tuple[Array, Array]]]:
    """Loss and gradients of a tanh MLP with mean squared error, written out by hand.

    ``params`` is ``[[W, b], ...]`` with ``W`` of shape ``(n_in, n_out)``; the
    loss is ``mean((out − y)²)`` over every entry, as :data:`prelens.nn.mse`.

    >>> rng = np.random.default_rng(0)
    >>> params = [[rng.standard_normal((3, 2)), np.zeros(2)]]
    >>> loss, grads = numpy_mlp_grads(params, rng.standard_normal((4, 3)), np.zeros((4, 2)))
    >>> [g.shape for g in grads[0]]
    [(3, 2), (2,)]
    """
    hs = [x]
    for w, b in params:
        hs.append(np.tanh(hs[-1] @ w + b))
    diff = hs[-1] - y
    loss = np.mean(diff**2)
    delta = 2 * diff / diff.size  # dL/d(out)
    grads: list[tuple[Array, Array]] = []
    for i in reversed(range(len(params))):
        dz = delta * (1 - hs[i + 1] ** 2)
        grads.append((hs[i].T @ dz, dz.sum(axis=0)))
        if i > 0:
            delta = dz @ params[i][0].T
    return loss, grads[::-1]


def numpy_mlp_step(params: NumpyParams, x: Array, y: Array, lr: float = LR) -> Any:
    """One SGD step in place on ``params`` (``w -= lr * dw``); returns the loss before the step.

    >>> params = [[np.ones((2, 1)), np.zeros(1)]]
    >>> _ = numpy_mlp_step(params, np.ones((1, 2)), np.zeros((1, 1)), lr=0.1)
    >>> bool(params[0][0][0, 0] < 1.0)
    True
    """
    loss, grads = numpy_mlp_grads(params, x, y)
    for (w, b), (dw, db) in zip(params, grads):
        w -= lr * dw
        b -= lr * db
    return loss


# --------------------------------------------------------------------- the check


def check_gradients(
    lens_grads: Sequence[DenseParams], numpy_grads: Sequence[tuple[Array, Array]], dtype: npt.DTypeLike
) -> float:
    """The largest relative difference between the two sides' gradients; raise if too large.

    Each gradient array is compared relative to its largest entry; the
    tolerance is ``1e-10`` for float64 and ``1e-4`` for float32. A failure is a
    :class:`~prelens.LawError` naming the layer and the parameter.

    >>> g = [DenseParams(np.ones((2, 2)), np.ones(2))]
    >>> check_gradients(g, [(np.ones((2, 2)), np.ones(2))], np.float64)
    0.0
    """
    tol = 1e-10 if np.dtype(dtype) == np.float64 else 1e-4
    worst = 0.0
    for i, (lg, ng) in enumerate(zip(lens_grads, numpy_grads, strict=True)):
        for name, a, b in (("weight", lg.weight, ng[0]), ("bias", lg.bias, ng[1])):
            if a.shape != b.shape or a.dtype != b.dtype:
                raise E.law_violation(
                    "hand-written numpy gradients = lens gradients",
                    "gradients",
                    f"[{i}].{name}",
                    E.describe(a),
                    E.describe(b),
                )
            scale = float(np.max(np.abs(b))) or 1.0
            err = float(np.max(np.abs(a.astype(np.float64) - b))) / scale
            worst = max(worst, err)
            if not err <= tol:
                raise E.law_violation(
                    "hand-written numpy gradients = lens gradients", "gradients", f"[{i}].{name}", a, b
                )
    return worst


# ------------------------------------------------------------------------ timing


def time_mlp_step(case: MlpCase, *, repeats: int = 30, inner: int | None = None, seed: int = 0) -> MlpResult:
    """Check, then time, the lens step and the numpy step of ``case`` (see the module doc).

    ``inner`` (steps per timed block) defaults to about 20 ms worth of steps.

    >>> r = time_mlp_step(MlpCase((4, 8, 3), 16, "float32"), repeats=3, inner=2)
    >>> r.grad_error < 1e-4, r.ratio > 0
    (True, True)
    """
    dtype = np.dtype(case.dtype)
    rng = np.random.default_rng(seed)
    n_in, *sizes = case.sizes
    net = mlp(n_in, sizes, dtype=dtype, input_delta=False)
    train = net >> mse
    opt = sgd(LR)
    x = rng.standard_normal((case.batch, n_in)).astype(dtype)
    y = rng.uniform(-0.9, 0.9, (case.batch, sizes[-1])).astype(dtype)
    params0 = net.init(rng)
    numpy_params = [[p.weight.copy(), p.bias.copy()] for p in params0]

    # the gradient check, from the same weights on the same batch
    _, pullback = vjp(train, (y, params0), x)
    (_, grads0), _ = pullback(1.0)
    _, numpy_grads = numpy_mlp_grads(numpy_params, x, y)
    grad_error = check_gradients(grads0, numpy_grads, dtype)
    del pullback, grads0, numpy_grads

    state: list[Any] = [params0, opt.init(params0)]  # the lens side's (params, optimiser state)

    def lens_grads(params: list[DenseParams]) -> list[DenseParams]:
        _, pullback = vjp(train, (y, params), x)
        (_, grads), _ = pullback(1.0)  # (d target, d params), d input (None: the input is data)
        return cast(list[DenseParams], grads)  # the residues go with the pullback: not alive during the update

    def lens_step() -> None:
        grads = lens_grads(state[0])
        state[0], state[1] = opt.update(grads, state[1], state[0])

    def lens_grad() -> None:
        lens_grads(state[0])

    def numpy_step() -> None:
        numpy_mlp_step(numpy_params, x, y)

    def numpy_grad() -> None:
        numpy_mlp_grads(numpy_params, x, y)

    # the updates alone, on fixed gradients (the numpy one on a copy of the weights)
    fixed_params, fixed_grads = net.init(seed + 1), net.init(seed + 2)
    upd_params = [[p.weight.copy(), p.bias.copy()] for p in fixed_params]
    upd_state = opt.init(fixed_params)

    def lens_update() -> None:
        opt.update(fixed_grads, upd_state, fixed_params)

    def numpy_update() -> None:
        for (w, b), (dw, db) in zip(upd_params, fixed_grads):
            w -= LR * dw
            b -= LR * db

    fns = {
        "lens": lens_step,
        "numpy": numpy_step,
        "lens_grad": lens_grad,
        "numpy_grad": numpy_grad,
        "lens_update": lens_update,
        "numpy_update": numpy_update,
    }
    for f in fns.values():  # warm up: caches, and the allocator's thresholds
        for _ in range(3):
            f()
    if inner is None:
        t0 = time.perf_counter()
        numpy_step()
        inner = max(1, min(1000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
    timed = time_interleaved(fns, repeats, inner)
    return MlpResult(
        case,
        lens_step=timed["lens"][0],
        numpy_step=timed["numpy"][0],
        lens_grad=timed["lens_grad"][0],
        numpy_grad=timed["numpy_grad"][0],
        lens_update=timed["lens_update"][0],
        numpy_update=timed["numpy_update"][0],
        lens_faults=timed["lens"][1],
        numpy_faults=timed["numpy"][1],
        lens_peak=peak_bytes(lens_step),
        numpy_peak=peak_bytes(numpy_step),
        grad_error=grad_error,
    )


def time_chains(
    sizes: Sequence[int] = (2, 4, 8, 16, 32, 64), *, repeats: int = 30, inner: int = 200
) -> list[ChainResult]:
    """One forward and backward pass through ``n`` identity lenses, by ``chain`` and by ``>>``.

    >>> [r.n for r in time_chains((2, 4), repeats=2, inner=2)]
    [2, 4]
    """
    x = np.zeros(4)
    out = []
    for n in sizes:
        lenses: list[AnyLens] = [id_pre_lens] * n
        by_chain, nested = chain(*lenses), reduce(lambda f, g: f >> g, lenses)
        p_chain, p_nested = by_chain.init(0), nested.init(0)

        def run(lens: AnyLens, p: Any) -> Callable[[], object]:
            return lambda: vjp(lens, p, x)[1](x)

        timed = time_interleaved({"chain": run(by_chain, p_chain), ">>": run(nested, p_nested)}, repeats, inner)
        out.append(ChainResult(n, timed["chain"][0], timed[">>"][0]))
    return out


def run_benchmarks(
    *,
    quick: bool = False,
    cases: Sequence[MlpCase] = CASES,
    repeats: int | None = None,
    chain_sizes: Sequence[int] = (2, 4, 8, 16, 32, 64),
    seed: int = 0,
) -> Report:
    """Run every case and the chain timings; ``quick`` uses a few repeats (a smoke test).

    >>> r = run_benchmarks(quick=True, cases=[MlpCase((3, 2), 4, "float64")], chain_sizes=(2,))
    >>> len(r.mlp), len(r.chains)
    (1, 1)
    """
    reps = repeats if repeats is not None else (3 if quick else 30)
    results = [time_mlp_step(c, repeats=reps, inner=2 if quick else None, seed=seed) for c in cases]
    chains = time_chains(chain_sizes, repeats=reps, inner=5 if quick else 200) if chain_sizes else []
    return Report(results, chains, reps, _header())


# ------------------------------------------------------------------------ report


def _header() -> str:
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    return (
        f"prelens bench: numpy {np.__version__}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, BLAS threads {threads}"
    )


def _us(t: float) -> str:
    return f"{t * 1e6:,.1f}"


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def _format(report: Report) -> str:
    lines = [report.header or _header()]
    if report.mlp:
        lines += [
            "",
            "training step = forward + backward (da = 1) + SGD update of a tanh MLP with mse;",
            f"medians of {report.repeats} interleaved blocks; µs per step, 'lens / numpy' in each pair",
            "",
            f"{'case':<22}{'step lens':>11}{'numpy':>10}{'ratio':>7}  {'target':<12}"
            f"{'fwd+bwd':>17}{'ratio':>7}{'update':>18}{'faults/step':>13}{'peak MiB':>13}{'grad err':>9}",
        ]
        for r in report.mlp:
            verdict = "ok" if r.ratio <= r.case.target else "over"
            lines.append(
                f"{r.case.label:<22}{_us(r.lens_step):>11}{_us(r.numpy_step):>10}{r.ratio:>7.2f}  "
                f"{'≤ ' + format(r.case.target, '.2f') + ' ' + verdict:<12}"
                f"{_us(r.lens_grad) + ' / ' + _us(r.numpy_grad):>17}{r.grad_ratio:>7.2f}"
                f"{_us(r.lens_update) + ' / ' + _us(r.numpy_update):>18}"
                f"{format(r.lens_faults, '.0f') + ' / ' + format(r.numpy_faults, '.0f'):>13}"
                f"{_mib(r.lens_peak) + ' / ' + _mib(r.numpy_peak):>13}{r.grad_error:>9.0e}"
            )
    if report.chains:
        lines += [
            "",
            "one forward + backward through n identity lenses: µs (µs per lens; flat = linear growth)",
            f"{'n':>4}{'chain(...)':>20}{'id >> id >> ...':>20}",
        ]
        for c in report.chains:
            lines.append(
                f"{c.n:>4}{_us(c.chain) + ' (' + format(c.chain / c.n * 1e6, '.2f') + ')':>20}"
                f"{_us(c.nested) + ' (' + format(c.nested / c.n * 1e6, '.2f') + ')':>20}"
            )
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    lines += ["", f"peak resident memory of this process: {maxrss / 1024:.1f} MiB"]
    return "\n".join(lines)
