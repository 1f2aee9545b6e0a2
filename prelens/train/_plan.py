"""What a run of :func:`~prelens.train.fit` does, fixed before its first step: :func:`check_args`, :func:`start` and
:func:`plan` (the stages are listed in :mod:`prelens.train._fit`)."""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TextIO

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import is_array, namespace, namespace_name, resolve_backend, to_backend
from prelens.core import _args
from prelens.core._check import misfit
from prelens.core._lens import AnyLens, as_lens
from prelens.core._tree import check_structure, tree_first_nonfinite, tree_leaves, tree_paths
from prelens.io._checkpoint import writable_path
from prelens.learn._optimizer import Optimizer, init_state, own_copy, refuses_call
from prelens.train._callbacks import CheckpointBest, EarlyStopping, LearningRateLogger
from prelens.train._compiled import compile_step
from prelens.train._data import cast, has_dropout, keyed, model_dtype, rows, take
from prelens.train._evaluate import evaluate
from prelens.train._history import History
from prelens.train._progress import Progress
from prelens.train._resume import Resumed, read_checkpoint, resume_refused, run_record
from prelens.train._runtime import batch_rows, resolve_threads
from prelens.train._step import Check, optimizer_form, step_of

Tree = Any
#: A metric: ``metric(model, params, xs, targets) -> float``, e.g. :func:`accuracy`.
Metric = Callable[[AnyLens, Tree, Any, Any], float]
#: The step strategy: ``(params, opt_state, batch, check) -> (new_params, new_opt_state, loss, checked)``;
#: ``checked``: the step itself found the loss, parameters and state finite (the compiled step's flag).
Strategy = Callable[[Tree, Any, tuple[Any, Any], Check], tuple[Tree, Any, float, bool]]

__all__ = ["Args", "Metric", "Plan", "check_args", "plan", "start"]


class Args(NamedTuple):
    """``fit``'s arguments, checked: lenses as lenses, the seed as a generator, the stream chosen."""

    model: AnyLens
    loss: AnyLens
    data: tuple[Any, Any]
    n: int  # rows of data
    epochs: int
    batch_size: int
    optimizer: Any
    lens_form: bool  # an optimiser lens (opt.lens), not the optimiser object
    gen: np.random.Generator
    params: Tree
    opt_state: Any
    validation: tuple[Any, Any] | None
    metrics: dict[str, Metric]
    train_metrics: bool
    penalty: AnyLens | None
    callbacks: tuple[Any, ...]
    restorer: EarlyStopping | None  # the callback that hands back the best epoch's parameters
    shuffle: bool
    progress: bool | None
    stream: TextIO
    checkpoint_every: int | None
    checkpoint_path: str | os.PathLike[str] | None
    resume: str | os.PathLike[str] | None
    xp: Any  # the backend's namespace, or None for the parameters' own
    auto: bool  # backend="auto": the compiled JAX step where it is installed and supports the model
    mesh: Any
    blas_threads: int | str | None


def check_args(*, model: Any, loss: Any, data: Any, epochs: Any, batch_size: Any, optimizer: Any, rng: Any,
               params: Any, opt_state: Any, validation: Any, metrics: Any, train_metrics: Any, penalty: Any,
               callbacks: Any, shuffle: Any, progress: Any, stream: Any, checkpoint_every: Any,
               checkpoint_path: Any, resume: Any, backend: Any, mesh: Any, blas_threads: Any) -> Args:  # fmt: skip
    """Every argument of ``fit`` checked, in the order of its signature's groups, before any work."""
    epochs, batch_size = _args.count("fit", "epochs", epochs, 0), _args.count("fit", "batch_size", batch_size)
    checkpoint_every = _check_checkpoints(checkpoint_every, checkpoint_path, resume)
    auto = isinstance(backend, str) and backend == "auto"
    xp = None if backend is None or auto else resolve_backend("fit", backend)
    if blas_threads is not None and blas_threads != "auto":
        resolve_threads(blas_threads)  # a number >= 1, or an error naming it
    if mesh is not None and (xp is None or namespace_name(xp) != "jax"):
        raise E.bad_argument("fit", "mesh", type(mesh).__name__, 'None unless backend="jax"')
    model, loss = as_lens("fit", "model", model), as_lens("fit", "loss", loss)
    lens_form = optimizer_form("fit", optimizer)
    penalty = None if penalty is None else as_lens("fit", "penalty", penalty)
    shuffle = _args.flag("fit", "shuffle", shuffle)
    train_metrics = _args.flag("fit", "train_metrics", train_metrics)
    progress = None if progress is None else _args.flag("fit", "progress", progress)
    measures = _check_metrics(metrics, validation is not None, train_metrics)
    cbs = _check_callbacks(callbacks, optimizer, measures, validation is not None, train_metrics, checkpoint_path)
    xs, ys = _args.batch("fit", data, "data")
    n = rows("data", xs, ys)
    if validation is not None:
        validation = _args.batch("fit", validation, "validation")
        rows("validation", *validation)
    if resume is not None:
        for name, value in (("params", params), ("opt_state", opt_state)):
            if value is not None:
                raise E.bad_argument("fit", name, E.describe_tree(value), "None with resume= (the checkpoint holds it)")
    gen = _args.seed("fit", rng)
    out = sys.stdout if stream is None else _args.text_stream("fit", "stream", stream)
    restorer = next((cb for cb in cbs if isinstance(cb, EarlyStopping) and cb.restore_best), None)
    return Args(model, loss, (xs, ys), n, epochs, batch_size, optimizer, lens_form, gen, params, opt_state,
                validation, measures, train_metrics, penalty, cbs, restorer, shuffle, progress, out,
                checkpoint_every, checkpoint_path, resume, xp, auto, mesh, blas_threads)  # fmt: skip


def _check_checkpoints(every: Any, path: Any, resume: Any) -> int | None:
    """``checkpoint_every`` as an int (numpy's too, as ``epochs``), or None; the paths checked."""
    count = None if every is None else _args.count("fit", "checkpoint_every", every)
    if resume is not None and not isinstance(resume, (str, os.PathLike)):
        raise E.bad_argument("fit", "resume", resume, "a checkpoint's path (str or os.PathLike) or None")
    if count is not None and path is None:
        raise E.bad_argument("fit", "checkpoint_path", path, "a file path when checkpoint_every is given")
    if path is not None:
        writable_path("fit", "checkpoint_path", path, "a file path (str or os.PathLike) or None")
    return count


def _check_metrics(metrics: Any, has_validation: bool, on_train: bool) -> dict[str, Metric]:
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise E.bad_argument("fit", "metrics", E.describe(metrics), "a mapping {name: metric} or None")
    for name, metric in metrics.items():
        if not isinstance(name, str) or not name or not callable(metric) or isinstance(metric, type):
            raise E.bad_argument(
                "fit", "metrics", f"{name!r}: {E.describe(metric)}", "{name: metric(model, params, xs, targets)}"
            )
        if name == "loss":
            raise E.bad_argument(
                "fit", "metrics", name, "named other than 'loss' (fit records val_loss and train_loss)"
            )
        misfit_call = refuses_call(metric, 4)
        if misfit_call:
            raise E.bad_argument(
                "fit", "metrics", f"{name}: {misfit_call}", "{name: metric(model, params, xs, targets)}"
            )
    if metrics and not (has_validation or on_train):
        raise E.ArgumentError(
            "fit: metrics has nothing to be measured on: give validation=(xs, targets), "
            "or train_metrics=True to measure them on the training data"
        )
    return dict(metrics)


def _check_callbacks(
    callbacks: Any, optimizer: Any, metrics: dict[str, Metric], has_validation: bool, on_train: bool, path: Any
) -> tuple[Any, ...]:
    """The callbacks, each monitoring a series this fit records (a learning-rate log: the optimiser's own; the best
    checkpoint: in a file of its own)."""
    expected = "a list of callbacks (objects with on_epoch_end), e.g. [EarlyStopping()]"
    if callbacks is None:
        return ()
    if not isinstance(callbacks, (list, tuple)):
        raise E.bad_argument("fit", "callbacks", E.describe(callbacks), expected)
    for cb in callbacks:
        if isinstance(cb, type) or not callable(getattr(cb, "on_epoch_end", None)):
            raise E.bad_argument("fit", "callbacks", E.describe(cb), expected)
        misfit_call = refuses_call(cb.on_epoch_end, 4)
        if misfit_call:
            takes = "callbacks whose on_epoch_end takes (epoch, history, params, opt_state)"
            raise E.bad_argument("fit", "callbacks", misfit_call, takes)
    if sum(isinstance(cb, EarlyStopping) and cb.restore_best for cb in callbacks) > 1:
        raise E.bad_argument(
            "fit", "callbacks", "two EarlyStopping(restore_best=True)", "at most one callback that restores parameters"
        )
    measured_on = [prefix for prefix, on in (("train", on_train), ("val", has_validation)) if on]
    recorded = ["loss", *(f"{prefix}_{m}" for prefix in measured_on for m in ("loss", *metrics))]
    for cb in (cb for cb in callbacks if isinstance(cb, LearningRateLogger)):
        if not cb.follows(optimizer):
            raise E.ArgumentError(
                f"fit: LearningRateLogger logs the lr of {cb.optimizer!r}, not the lr of the optimizer trained, "
                f"{optimizer!r}: give it that optimizer"
            )
        recorded.append("lr")
    for cb in callbacks:
        if isinstance(cb, CheckpointBest) and path is not None and os.path.realpath(cb.path) == os.path.realpath(path):
            raise E.ArgumentError(
                f"fit: CheckpointBest writes to checkpoint_path {os.fspath(path)}: give it a file of its own"
            )
        if isinstance(cb, (EarlyStopping, CheckpointBest)) and cb.monitor not in recorded:
            raise E.ArgumentError(
                f"fit: {type(cb).__name__} monitors {cb.monitor!r}, which this fit does not record; it records "
                + ", ".join(map(repr, recorded))
            )
    return tuple(callbacks)


def start(a: Args) -> Resumed:
    """Where training starts: the position of the checkpoint ``resume=`` (read back against the model's parameters and
    the optimiser's state), or step 0 with copies of what was given."""
    if a.resume is None:
        copied = own_copy((a.params, a.opt_state))  # never the caller's
        params = a.model.init(a.gen) if a.params is None else copied[0]
        opt_state = _init_state(a.optimizer, a.lens_form, params) if a.opt_state is None else copied[1]
        at = Resumed(params, opt_state, None, History(), a.gen, 0, 0, 0.0, 0, False)
    else:
        like = state_like = None
        if a.model.init_fn is not None:
            like = a.model.init(np.random.default_rng(0))
            state_like = _init_state(a.optimizer, a.lens_form, like)
        at = read_checkpoint(a.resume, like, state_like, run=run_record(a.model, a.optimizer))
        best = None if a.restorer is None or at.best is not None else a.restorer.best_epoch(at.history)
        if best is not None and (best != at.history.epochs or at.batch != 0):
            raise resume_refused(
                os.fspath(a.resume),
                f"it holds no best parameters for {a.restorer!r} (the best epoch, {best}, is behind it: it was "
                "written by a run without restore_best)",
            )
    _check_start(a, at.params, at.opt_state)
    return at


def _check_start(a: Args, params: Tree, opt_state: Any) -> None:
    """The parameters fit the model's declaration and are finite; a given optimiser state (of an optimiser of
    ``prelens.learn``) is shaped like its ``init``: a mistake is named now, not at the first step."""
    err = misfit(a.model.expects.params, params, "params")
    if err is not None:
        raise type(err)(f"fit: params do not fit {E.short_name(a.model.name, 80)}: {err}")
    bad = tree_first_nonfinite(params)
    if bad is not None:
        raise E.non_finite("fit: params", bad)
    if a.opt_state is not None and (a.lens_form or isinstance(a.optimizer, Optimizer)):
        check_structure(_init_state(a.optimizer, a.lens_form, params), opt_state, what="fit: opt_state", shapes=True)


def _init_state(optimizer: Any, lens_form: bool, params: Tree) -> Any:
    return init_state(optimizer, params) if lens_form else optimizer.init(params)


class Plan(NamedTuple):
    """What the run does, fixed before its first step (the data cast and moved, the step composed)."""

    args: Args
    data: tuple[Any, Any]  # in the model's dtype, on the backend
    validation: tuple[Any, Any] | None
    n_batches: int
    dropout: bool  # the parameters hold dropout sites: every step draws a key
    step: Strategy
    bar: Progress
    to_host: bool  # backend="auto" chose JAX: what fit hands back is moved back to numpy


def plan(a: Args, at: Resumed) -> tuple[Plan, Resumed]:
    """The run's plan, and its start moved to the backend (the run's arrays move there once, here)."""
    n_batches = math.ceil(a.n / a.batch_size)  # n >= 1
    if 0 < at.batch and at.batches != n_batches:
        raise resume_refused(
            os.fspath(a.resume or ""),
            f"it stopped after batch {at.batch} of {at.batches} of an epoch, and this run has "
            f"{n_batches} batches per epoch: resume mid-epoch with the same data and batch_size",
        )
    dtype = model_dtype(at.params)
    data = cast("data", a.data, dtype)
    validation = None if a.validation is None else cast("validation", a.validation, dtype)
    if a.xp is None:
        _check_library(at.params, {"data": data, "validation": validation})
    dropout = has_dropout(at.params)
    to_host, compiled, on_host = False, None, at.params
    if a.auto:
        chosen = choose_jax(a, at, data, validation, dropout, n_batches)
        if chosen is not None:  # the parameters and state on JAX; the data stays on numpy (a batch moves per step)
            a, to_host = a._replace(xp=resolve_backend("fit", "jax")), True
            (params, opt_state), compiled = chosen
            at = at._replace(params=params, opt_state=opt_state)
    elif a.xp is not None:
        params, opt_state, data, validation = to_backend((at.params, at.opt_state, data, validation), a.xp)
        at = at._replace(params=params, opt_state=opt_state)
    if validation is not None:  # where and as _scores will evaluate it
        _check_validation(a, on_host if to_host else at.params, validation)
    live = isatty(a.stream)
    tag = ("compiled JAX step" if to_host else "numpy") + " (backend=auto)" if a.auto else ""
    bar = Progress(
        a.epochs, n_batches, a.stream, live=live, enabled=live if a.progress is None else a.progress, tag=tag
    )
    return Plan(a, data, validation, n_batches, dropout, _strategy(a, dropout, compiled), bar, to_host), at


def _check_library(params: Tree, data: dict[str, Any]) -> None:
    """Without ``backend=`` the run stays in the parameters' library: data of another is refused, not moved."""
    libraries = {namespace_name(namespace(x)) for x in tree_leaves(params) if is_array(x)}
    lib = libraries.pop() if len(libraries) == 1 else None  # none, or several: the step will say
    for what, tree in data.items() if lib else ():
        for path, leaf in tree_paths(tree):
            other = namespace_name(namespace(leaf)) if is_array(leaf) else lib
            if other != lib:
                raise E.ArgumentError(
                    f"fit: {what}{E.path_str(path)} is {other}'s and the parameters are {lib}'s: pass "
                    f"backend={other!r} to train there (the parameters move once), or give {lib} arrays"
                )


def _check_validation(a: Args, params: Tree, validation: tuple[Any, Any]) -> None:
    """The model and loss run on the first row of ``validation``: a misfit is found now, not after an epoch."""
    try:
        evaluate(a.model, a.loss, params, *take(validation, None, 0, 1))
    except E.PrelensError as err:
        err.add_note("fit: validation=(xs, targets) does not fit the model and loss (its first row, tried first)")
        raise


#: ``backend="auto"`` takes JAX for a run of at least this many multiply-adds (parameters x batch rows x
#: steps): some 15-20 s of numpy on a quiet 2-core machine, two to three times what importing JAX, tracing
#: and compiling the step's two programs (the full batch and the last, smaller one) cost (docs/performance.md).
AUTO_JAX_MIN_WORK = 5e10


def jax_importable() -> bool:
    """Whether JAX imports here (``backend="auto"`` asks this once per ``fit``)."""
    try:
        import jax  # noqa: F401
    except Exception:  # not installed, or broken: numpy it is
        return False
    return True


def choose_jax(a: Args, at: Resumed, data: Any, validation: Any, dropout: bool, n_batches: int) -> Any:
    """``backend="auto"``: ``((params, opt_state) on JAX, the compiled step)`` if JAX takes this run, else ``None``
    (not with dropout: JAX would draw other masks than numpy from the same seed). The run's size: its numpy float
    parameters x rows of a batch x the steps still to take."""
    if a.mesh is not None or dropout:
        return None
    n_params = sum(int(x.size) for x in tree_leaves(at.params) if isinstance(x, np.ndarray) and x.dtype.kind == "f")
    try:
        rows = batch_rows(take(a.data[0], None, 0, a.batch_size))
    except E.PrelensError:
        rows = a.batch_size
    work = float(n_params) * rows * (max(0, a.epochs - at.history.epochs) * n_batches)
    if not work or work < AUTO_JAX_MIN_WORK or not jax_importable():  # 0: no float parameters, or no steps left
        return None
    for leaf in tree_leaves((at.params, at.opt_state, data, validation)):
        if is_array(leaf) and not (  # numpy's arrays only (another library's: the caller chose it)
            isinstance(leaf, np.ndarray) and (leaf.dtype.kind in "iub" or leaf.dtype in (np.float32, np.float64))
        ):
            return None
    import jax

    state = to_backend((at.params, at.opt_state), "jax")
    first = take(data, None, 0, a.batch_size)
    compiled = compile_step(a.model, a.loss, a.optimizer, penalty=a.penalty)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jax.eval_shape(compiled._jitted, *state, *first, None)
    except Exception:  # the step does not trace on JAX: numpy trains
        return None
    return state, compiled


def _strategy(a: Args, dropout: bool, compiled: Any = None) -> Strategy:
    """One compiled JAX program (on a mesh or not), or :func:`~prelens.train.step`'s core; with dropout a batch's
    inputs are ``(key, xs)``."""
    if a.xp is not None and namespace_name(a.xp) == "jax":
        if compiled is None:
            compiled = compile_step(a.model, a.loss, a.optimizer, penalty=a.penalty, mesh=a.mesh)
        if a.mesh is not None:
            _check_mesh_batches(a.mesh, compiled.axis, a.n, a.batch_size)

        def on_jax(params: Tree, opt_state: Any, batch: tuple[Any, Any], check: Check) -> tuple[Tree, Any, float, bool]:
            (xs, ys), key = batch, None
            if dropout:
                key, xs = xs
            new_params, new_opt_state, value, finite = compiled.run(params, opt_state, (xs, ys), key=key)
            value = float(value)
            return new_params, new_opt_state, value, math.isfinite(value) and bool(finite)

        return on_jax
    core = step_of(keyed(a.model) if dropout else a.model, a.loss, a.optimizer, a.lens_form, a.penalty)

    def on_host(params: Tree, opt_state: Any, batch: tuple[Any, Any], check: Check) -> tuple[Tree, Any, float, bool]:
        new_params, new_opt_state, value = core(params, opt_state, batch[0], batch[1], check)
        return new_params, new_opt_state, float(value), False

    return on_host


def _check_mesh_batches(mesh: Any, axis: str | None, n: int, batch_size: int) -> None:
    """Every batch of an epoch (the last one may be smaller) must split evenly over the mesh's devices."""
    n_dev = mesh.shape[axis]
    last = n % batch_size or batch_size
    if batch_size % n_dev or last % n_dev:
        expected = f"a size whose batches ({batch_size}, and the last {last} of {n} rows) divide among the mesh's"
        raise E.bad_argument("fit", "batch_size", batch_size, f"{expected} {n_dev} devices")


def isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
