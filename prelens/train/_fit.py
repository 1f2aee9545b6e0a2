"""The training loop: shuffled mini-batches, metrics per epoch, callbacks, exact resuming, and no lost work.

``fit`` trains with either form of optimiser: a :mod:`prelens.optim` optimiser
(``value_and_grad`` of ``model >> loss``, then ``optimizer.update``), or an
optimiser lens of :mod:`prelens.learn` (one :func:`~prelens.learn.learner_step`
of the lens ``learner(model, loss, optimizer)`` per batch: the whole step is one
lens). The two take the same steps.

Dropout: when the parameters hold :class:`~prelens.nn.DropoutKey` sites, every
step draws a key from the seeded generator and runs on
``with_dropout(params, key)``; the gradient comes back through
``without_dropout``. The parameters ``fit`` holds, hands to metrics and
callbacks, saves and returns never hold a key, so everything but the training
step runs in evaluation mode. On JAX (``backend="jax"``) the compiled step takes
the step's key and JAX draws the masks inside the program.

``fit`` never loses what it has learned, whatever ends it:

* a non-finite loss or gradient, or an update that makes the parameters (or
  the optimiser state) non-finite, stops training with
  :class:`~prelens.NonFiniteError` (a ``TrainingNonFiniteError``) naming the
  epoch, the batch and the first non-finite leaf by its tree path; the failed
  step is not counted and its update is never kept;
* Ctrl-C (``KeyboardInterrupt``) ends training early and *returns* the
  parameters after the last completed step, with ``history.interrupted``
  set;
* any other exception (from a lens, the loss, the optimiser, a metric, a
  callback) is re-raised with the last good parameters, optimiser state and
  history attached as ``.params``, ``.opt_state`` and ``.history`` (as on
  ``NonFiniteError``), and a note saying where training stopped;
* with ``checkpoint_path``, the parameters, optimiser state, history and the
  position of training (the shuffling generator's state at the start of the
  epoch in progress, and the batches done) are saved atomically every
  ``checkpoint_every`` epochs, at the end, and whenever training stops early
  (on Ctrl-C and on any exception). A Ctrl-C that arrives during a checkpoint
  write takes effect when the write is done, so the file is always whole; a
  second Ctrl-C while ``fit`` is already saving on its way out is ignored.
  ``resume=`` continues from such a file exactly: the run takes the very steps
  an uninterrupted one would (see :mod:`prelens.train._resume`).

The parameters and optimiser state handed back are never the caller's own
objects (``fit`` copies what it is given), and the optimisers are pure, so
nothing the caller holds is ever overwritten.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TextIO

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, dtype_kind, is_array, namespace, namespace_name, resolve_backend, to_backend
from prelens.core import _args
from prelens.core._lens import AnyLens, as_lens
from prelens.core._tree import tree_first_nonfinite, tree_leaves, tree_map
from prelens.io._sigint import deferred_sigint
from prelens.learn._optimizer import init_state
from prelens.learn._penalty import penalised
from prelens.learn._reparam import learner, learner_step
from prelens.train._callbacks import CheckpointBest, EarlyStopping, LearningRateLogger
from prelens.train._compiled import CompiledStep, compile_step
from prelens.train._data import cast, has_dropout, keyed, model_dtype, rows, take
from prelens.train._evaluate import evaluate
from prelens.train._history import History
from prelens.train._progress import Progress
from prelens.train._resume import generator_state, position_metadata, read_checkpoint
from prelens.train._runtime import blas_threads as _blas_threads
from prelens.train._runtime import resolve_threads
from prelens.train._step import optimizer_form, value_and_grad_of

Tree = Any
#: A metric: ``metric(model, params, xs, targets) -> float``, e.g. :func:`accuracy`.
Metric = Callable[[AnyLens, Tree, Any, Any], float]

__all__ = ["FitResult", "History", "fit"]


class FitResult(NamedTuple):
    """What :func:`fit` returns: unpack as ``params, opt_state, history = fit(...)``.

    >>> import numpy as np
    >>> params, opt_state, history = FitResult(np.zeros(2), (), History(loss=[1.0]))
    >>> params.shape, opt_state, history.epochs
    ((2,), (), 1)
    """

    params: Tree
    opt_state: Any
    history: History


def fit(
    model: AnyLens,
    loss: AnyLens,
    data: tuple[Any, Any],
    epochs: int,
    batch_size: int,
    optimizer: Any,
    rng: np.random.Generator | int | None = None,
    *,
    params: Tree = None,
    opt_state: Any = None,
    validation: tuple[Any, Any] | None = None,
    metrics: Mapping[str, Metric] | None = None,
    train_metrics: bool = False,
    penalty: AnyLens | None = None,
    callbacks: Sequence[Any] | None = (),
    shuffle: bool = True,
    progress: bool | None = None,
    stream: TextIO | None = None,
    checkpoint_every: int | None = None,
    checkpoint_path: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    backend: Any = None,
    mesh: Any = None,
    blas_threads: int | str | None = "auto",
) -> FitResult:
    """Train ``model >> loss`` on ``data = (xs, targets)`` with mini-batches.

    Haskell::

        fit :: Lens -> Loss -> (X, Y) -> Int -> Int -> Optimizer s -> Gen -> (Params, s, History)

    Shapes: ``xs`` and ``targets`` share their leading (batch) axis of length
    ``n``; ``targets`` is what ``loss`` takes as its parameter (integer labels
    ``(n,)`` for ``softmax_cross_entropy``, ``(n, k)`` floats for ``mse``).
    Each epoch visits every row once, in batches of ``batch_size`` (the last
    one smaller), reshuffled with ``rng`` unless ``shuffle=False``. Float data
    of another dtype than the parameters' (float64 data, a float32 model) is
    cast to the parameters' dtype once, before training; integer data (token
    ids, labels) is left as it is, and data holding NaN or infinity is refused.

    ``optimizer``: a :mod:`prelens.optim` optimiser, or an optimiser lens of
    :mod:`prelens.learn` (then each step is one ``learner_step`` of
    ``learner(model, loss, optimizer)``; the state is the lens's). ``penalty``: a
    lens on the loss wire tied to the model's parameters, such as
    ``prelens.learn.l2(1e-4)``, added to the loss that is minimised (and to
    ``history.loss``; the ``val_loss`` and ``train_loss`` are the loss alone).

    ``params`` defaults to ``model.init(rng)``; ``opt_state`` to the optimiser's
    initial state. With ``validation = (xs, targets)`` the history records
    ``val_loss`` and, for each ``metrics`` entry ``name: f``, ``val_<name>`` =
    ``f(model, params, xs, targets)`` after every epoch (e.g.
    ``metrics={"accuracy": accuracy}``); ``train_metrics=True`` records
    ``train_loss`` and ``train_<name>`` on the whole training set too (in
    evaluation mode, after the epoch). ``metrics`` with neither is an error.

    ``callbacks``: objects with ``on_epoch_end(epoch, history, params,
    opt_state) -> bool`` (``True`` stops), called after every epoch:
    :class:`EarlyStopping`, :class:`CheckpointBest`, :class:`LearningRateLogger`
    or your own (see :class:`Callback`).

    ``progress``: ``None`` shows a status line only when ``stream`` (default
    ``sys.stdout``) is a terminal; ``True`` always (a line per epoch on
    non-terminals); ``False`` never. ``checkpoint_path``: save
    ``{"params": ..., "opt_state": ...}`` there (see :func:`prelens.io.save_checkpoint`;
    the history and the position of training go in its metadata) every
    ``checkpoint_every`` epochs (if given), at the end, and when training stops
    early. ``resume``: a checkpoint written so; training continues from it up to
    ``epochs`` epochs in all (its parameters, optimiser state, history and
    generator state replace ``params``, ``opt_state`` and ``rng``), bit for bit
    as the uninterrupted run. A run that a callback stopped stays stopped.

    ``backend``: train on another array library (``"jax"``, ``"torch"``,
    ``"array_api_strict"``, see :func:`~prelens.to_backend`): the parameters,
    optimiser state and data are moved there once, before the first step, and
    the result stays there. On ``"jax"`` each step is one compiled XLA program
    (:func:`compile_step`); ``mesh`` (a :class:`jax.sharding.Mesh`) trains
    data-parallel over its devices, each batch split along its leading axis.
    By default the parameters' own library is used (numpy for ``model.init``).

    ``blas_threads``: on numpy, the BLAS threads training runs with (restored
    after): ``"auto"`` chooses from the model's and the batch's sizes (one for
    small products; see :func:`blas_threads`), a number sets it, ``None`` leaves
    BLAS as it is.

    Returns :class:`FitResult` ``(params, opt_state, history)`` (copies: never
    the objects passed in). On Ctrl-C it returns what was learned so far with
    ``history.interrupted = True``. Raises :class:`~prelens.NonFiniteError`
    for data or parameters holding NaN or infinity (before the first step,
    naming the row or leaf), and on a non-finite loss, gradient or update.
    That error, and any other exception that stops training, carries the
    last good state (``err.params``, ``err.opt_state``, ``err.history``);
    with ``checkpoint_path`` that state is also saved.

    >>> import numpy as np
    >>> from prelens.nn import linear, mse
    >>> from prelens.optim import sgd
    >>> xs = np.random.default_rng(0).standard_normal((32, 2))
    >>> ys = xs @ np.array([[2.0], [-1.0]])
    >>> params, _, history = fit(linear(2, 1), mse, (xs, ys), 20, 8, sgd(0.1), rng=0, progress=False)
    >>> params.round(2).ravel().tolist(), history.epochs, history.loss[-1] < 1e-3
    ([2.0, -1.0], 20, True)
    """
    # ------------------------------------------------ every argument, before any work
    _check_args(epochs, batch_size, checkpoint_every, checkpoint_path, resume)
    xp = None if backend is None else resolve_backend("fit", backend)
    if blas_threads is not None and blas_threads != "auto":
        resolve_threads(blas_threads)  # a number >= 1, or an error naming it
    on_jax = xp is not None and namespace_name(xp) == "jax"
    if mesh is not None and not on_jax:
        raise E.bad_argument("fit", "mesh", type(mesh).__name__, 'None unless backend="jax"')
    model = as_lens("fit", "model", model)
    loss = as_lens("fit", "loss", loss)
    lens_form = optimizer_form("fit", optimizer)
    if penalty is not None:
        penalty = as_lens("fit", "penalty", penalty)
    shuffle = _args.flag("fit", "shuffle", shuffle)
    train_metrics = _args.flag("fit", "train_metrics", train_metrics)
    if progress is not None:
        progress = _args.flag("fit", "progress", progress)
    measures = _check_metrics(metrics, validation is not None, train_metrics)
    cbs = _check_callbacks(callbacks)
    _check_monitors(cbs, _recorded(measures, validation is not None, train_metrics, cbs))
    xs, ys = _args.batch("fit", data, "data")
    n = rows("fit", xs, ys)
    if validation is not None:
        validation = _args.batch("fit", validation, "validation")
        rows("fit (validation)", *validation)
    if resume is not None:
        for name, value in (("params", params), ("opt_state", opt_state)):
            if value is not None:
                raise E.bad_argument("fit", name, E.describe_tree(value), "None with resume= (the checkpoint holds it)")
    gen = _args.seed("fit", rng)
    out = sys.stdout if stream is None else _args.text_stream("fit", "stream", stream)

    # ------------------------------------------------ where training starts: fresh, given, or resumed
    restorer = next((cb for cb in cbs if isinstance(cb, EarlyStopping) and cb.restore_best), None)
    resumed = None
    if resume is not None:
        resumed = _read_resume(resume, model, optimizer, lens_form, restorer)
        params, opt_state, history, gen = resumed.params, resumed.opt_state, resumed.history, resumed.gen
    else:
        # Copies of what the caller gave: what fit hands back is never the caller's own object.
        params = model.init(gen) if params is None else _copy(params)
        opt_state = _init_state(optimizer, lens_form, params) if opt_state is None else _copy(opt_state)
        history = History()
    bad = tree_first_nonfinite(params)
    if bad is not None:
        raise E.non_finite("fit: params", bad)

    # ------------------------------------------------ the data in the model's dtype, the step composed once
    dtype = model_dtype(params)
    xs, ys = cast("fit", (xs, ys), dtype)
    if validation is not None:
        validation = cast("fit (validation)", validation, dtype)
    dropout = has_dropout(params)
    trained_model = keyed(model) if dropout else model
    compiled = None
    if xp is not None:  # the run's arrays move to the backend once, here
        params, opt_state, xs, ys, validation = to_backend((params, opt_state, xs, ys, validation), xp)
        if on_jax:
            compiled = compile_step(model, loss, optimizer, penalty=penalty, mesh=mesh)
            if mesh is not None:
                _check_mesh_batches(mesh, compiled.axis, n, batch_size)
    if lens_form:
        step_lens = learner(trained_model, loss, optimizer, penalty=penalty)
        trained = None
    else:
        step_lens = None
        trained = trained_model >> loss if penalty is None else penalised(trained_model, loss, penalty)

    live = _isatty(out)
    n_batches = max(1, math.ceil(n / batch_size))
    bar = Progress(epochs, n_batches, out, live=live, enabled=progress if progress is not None else live)
    run = _Run(history, checkpoint_path, params, opt_state, gen, cbs, restorer)
    run.trained, run.step_lens, run.optimizer, run.n_batches = trained, step_lens, optimizer, n_batches
    run.compiled, run.dropout = compiled, dropout
    if resumed is not None:
        if 0 < resumed.batch and resumed.batches != n_batches:
            raise E.resume_refused(
                os.fspath(resume or ""),
                f"it stopped after batch {resumed.batch} of {resumed.batches} of an epoch, and this run has "
                f"{n_batches} batches per epoch: resume mid-epoch with the same data and batch_size",
            )
        run.resume_from(resumed)
    threads = contextlib.ExitStack()
    if blas_threads is not None and (xp is None or xp is np) and isinstance(_first_leaf(xs), np.ndarray):
        threads.enter_context(_blas_threads(blas_threads, params=params, batch=take(xs, None, 0, batch_size)))
    try:
        stopped = run.early_stopped
        if not stopped and resumed is not None and history.epochs > run.callbacks_done:
            stopped = run.ask_callbacks(history.epochs)  # a stop cut them short: ask them again
        for epoch in range(history.epochs + 1, epochs + 1):
            if stopped:
                break
            started = time.perf_counter()
            order = gen.permutation(n) if shuffle else None
            keys = gen.integers(0, 2**63, size=n_batches) if dropout else None
            for b in range(run.position.batch, n_batches):
                lo, hi = b * batch_size, min(n, (b + 1) * batch_size)
                inputs = take(xs, order, lo, hi)
                batch = ((int(keys[b]), inputs) if keys is not None else inputs, take(ys, order, lo, hi))
                run.where = f"epoch {epoch}/{epochs}, batch {b + 1}/{n_batches}"
                value = run.step(batch, b)
                bar.batch_end(epoch, b + 1, value, hi - lo)
            run.where = f"the end of epoch {epoch}/{epochs}"
            scores = _scores(model, loss, run.params, (xs, ys), validation, measures, train_metrics)
            with deferred_sigint():  # an epoch is recorded whole or not at all
                history.loss.append(run.position.total / n_batches)
                for name, score in scores.items():
                    history.log(name, score)
                history.seconds.append(time.perf_counter() - started)
                run.epoch_done()
            bar.epoch_end(epoch, history.loss[-1], scores)
            stopped = run.ask_callbacks(epoch)
            if checkpoint_every and epoch % checkpoint_every == 0 and epoch < epochs and not stopped:
                run.checkpoint(warn=True)
        bar.close(history.stopped or "")
        if checkpoint_path is not None:
            run.checkpoint(warn=True)
    except KeyboardInterrupt:
        with deferred_sigint(absorb=True):  # already stopping: a second Ctrl-C must not lose the result
            return run.interrupted(bar)
    except BaseException as err:
        with deferred_sigint(absorb=True):
            run.failed(err, bar)
        raise
    finally:
        threads.close()
    return run.result(finished=True)


def _first_leaf(tree: Tree) -> Any:
    leaves = tree_leaves(tree)
    return leaves[0] if leaves else None


def _copy(tree: Tree) -> Tree:
    """``tree`` with every array leaf copied (the other leaves are immutable values)."""
    return tree_map(lambda x: copy(x) if is_array(x) else x, tree)


def _readonly(tree: Tree) -> Tree:
    """``tree`` with every array leaf a read-only view (what callbacks are shown)."""

    def view(x: Any) -> Any:
        if not isinstance(x, np.ndarray):
            return x
        v = x.view()
        v.flags.writeable = False
        return v

    return tree_map(view, tree)


class _Position(NamedTuple):
    """The last good state and where it stands: replaced as a whole, and only by a good step."""

    params: Tree
    opt_state: Any
    steps: int
    batch: int  # batches of the epoch in progress done
    total: float  # their summed losses


class _Run:
    """The state of one run: the last good state, and how to step, stop, ask the callbacks and save."""

    trained: AnyLens | None
    step_lens: AnyLens | None
    compiled: CompiledStep | None
    dropout: bool
    optimizer: Any
    n_batches: int

    def __init__(
        self,
        history: History,
        checkpoint_path: str | os.PathLike[str] | None,
        params: Tree,
        opt_state: Any,
        gen: np.random.Generator,
        callbacks: tuple[Any, ...],
        restorer: EarlyStopping | None,
    ) -> None:
        self.history, self.checkpoint_path, self.gen = history, checkpoint_path, gen
        self.callbacks, self.restorer = callbacks, restorer
        # A KeyboardInterrupt landing anywhere leaves the last good state here.
        self.position = _Position(params, opt_state, history.steps, 0, 0.0)
        self.epoch_start = generator_state(gen)  # the generator at the start of the epoch in progress
        self.callbacks_done = history.epochs  # the last epoch whose callbacks all answered
        self.early_stopped = False
        self.best: tuple[Tree, Any] | None = None
        self.where = "the start"

    def resume_from(self, r: Any) -> None:
        self.position = _Position(r.params, r.opt_state, r.history.steps, r.batch, r.loss_sum)
        self.callbacks_done, self.early_stopped, self.best = r.callbacks_done, r.early_stopped, r.best
        if self.restorer is not None and self.best is None:
            best = self.restorer.best_epoch(self.history)
            if best is not None and best == self.history.epochs and r.batch == 0:
                self.best = (r.params, r.opt_state)

    @property
    def params(self) -> Tree:
        return self.position.params

    @property
    def opt_state(self) -> Any:
        return self.position.opt_state

    def result(self, *, finished: bool) -> FitResult:
        self.history.steps = self.position.steps
        params, opt_state = self.params, self.opt_state
        if finished and self.restorer is not None and self.best is not None:
            params, opt_state = self.best
            self.history.best_epoch = self.restorer.best_epoch(self.history)
        return FitResult(params, opt_state, self.history)

    # ------------------------------------------------------------------ one step

    def step(self, batch: tuple[Any, Any], b: int) -> float:
        """One optimiser step on batch ``b``; the state changes only when the loss, gradient and update are finite."""
        params, opt_state, steps, _, total = self.position
        if self.compiled is not None:
            xs, ys = batch
            key, xs = xs if self.dropout else (None, xs)  # with dropout: (step key, inputs), JAX draws the masks
            new_params, new_opt_state, loss_value, finite = self.compiled.run(params, opt_state, (xs, ys), key=key)
            value = float(loss_value)
            if not math.isfinite(value):
                raise self._stop_non_finite("the loss", f"loss = {value}")
            if not bool(finite):
                new_params, new_opt_state = self._check_updated(new_params, new_opt_state)
        elif self.step_lens is not None:
            new_params, new_opt_state, value = learner_step(self.step_lens, params, opt_state, batch)
            if not math.isfinite(value):
                raise self._stop_non_finite("the loss", f"loss = {value}")
        else:
            assert self.trained is not None
            value, grads = value_and_grad_of(self.trained, params, batch)
            if not math.isfinite(value) or not _all_finite(grads):
                raise self._non_finite(value, grads)
            new_params, new_opt_state = self.optimizer.update(grads, opt_state, params)
        if self.compiled is None:
            self._check_updated(new_params, new_opt_state)
        self.position = _Position(new_params, new_opt_state, steps + 1, b + 1, total + value)
        self.history.steps = steps + 1
        return value

    def _check_updated(self, new_params: Tree, new_opt_state: Any) -> tuple[Tree, Any]:
        updated = (("the parameters", "params", new_params), ("the optimiser state", "opt_state", new_opt_state))
        for what, name, tree in updated:
            if not _all_finite(tree):
                bad = tree_first_nonfinite(tree) or ""
                raise self._stop_non_finite(what, f"first non-finite leaf: {name}{_leaf(bad)}")
        return new_params, new_opt_state

    def _non_finite(self, value: float, grads: Tree) -> E.TrainingNonFiniteError:
        if not math.isfinite(value):
            what, detail = "the loss", f"loss = {value}"
            bad_grad = tree_first_nonfinite(grads)
            if bad_grad is not None:
                detail += f"; first non-finite gradient leaf: grads{_leaf(bad_grad)}"
        else:
            what, detail = "the gradient", f"first non-finite leaf: grads{_leaf(tree_first_nonfinite(grads) or '')}"
        return self._stop_non_finite(what, detail)

    def _stop_non_finite(self, what: str, detail: str) -> E.TrainingNonFiniteError:
        self.history.steps = self.position.steps
        return E.training_non_finite(what, self.where, detail, self.params, self.opt_state, self.history)

    # ------------------------------------------------------------------ epochs and callbacks

    def epoch_done(self) -> None:
        """The epoch is recorded: the next starts at batch 0 from the generator's state now (the best kept)."""
        self.position = self.position._replace(batch=0, total=0.0)
        self.epoch_start = generator_state(self.gen)
        if self.restorer is not None and self.restorer.best_epoch(self.history) == self.history.epochs:
            self.best = (self.params, self.opt_state)

    def ask_callbacks(self, epoch: int) -> bool:
        """Every callback's answer about ``epoch`` (each is asked, even after one says stop); ``True`` to stop."""
        stop_by = None
        if self.callbacks:
            params, opt_state = _readonly(self.params), _readonly(self.opt_state)
            for cb in self.callbacks:
                if cb.on_epoch_end(epoch, self.history, params, opt_state) and stop_by is None:
                    stop_by = cb
        with deferred_sigint():
            self.callbacks_done = epoch
            if stop_by is not None:
                reason = stop_by.reason(self.history) if isinstance(stop_by, EarlyStopping) else None
                self.history.stopped = reason or E.callback_stopped(repr(stop_by), epoch)
                self.early_stopped = True
        return stop_by is not None

    # ------------------------------------------------------------------ stopping and saving

    def interrupted(self, bar: Progress) -> FitResult:
        """Ctrl-C: record it, save, and hand back the last good state."""
        history = self.history
        history.steps = self.position.steps
        history.interrupted = True
        history.stopped = f"interrupted after {history.steps} steps ({history.epochs} complete epochs)"
        with contextlib.suppress(Exception):
            bar.close(f"training {history.stopped}")
        problem = self.checkpoint(warn=False)
        if problem is not None:
            with contextlib.suppress(Exception):  # even with warnings turned into errors
                warnings.warn(E.checkpoint_not_saved("fit", problem), RuntimeWarning, stacklevel=3)
        return self.result(finished=False)

    def failed(self, err: BaseException, bar: Progress) -> None:
        """Any other exception: save the last good state and attach it to ``err`` (the caller re-raises it)."""
        history = self.history
        history.steps = self.position.steps
        history.stopped = str(err) if isinstance(err, E.TrainingNonFiniteError) else f"{type(err).__name__}: {err}"
        with contextlib.suppress(Exception):
            bar.close()
        problem = self.checkpoint(warn=False)
        saved = None if self.checkpoint_path is None or problem is not None else os.fspath(self.checkpoint_path)
        if not isinstance(err, E.TrainingNonFiniteError):
            with contextlib.suppress(Exception):  # an exception that refuses attributes keeps only the note
                for name, value in (("params", self.params), ("opt_state", self.opt_state), ("history", history)):
                    setattr(err, name, value)
            err.add_note(E.fit_stopped_note(self.where, history.steps, saved))
        elif saved is not None:
            err.add_note(E.fit_saved_note(saved))
        if problem is not None:
            err.add_note(E.checkpoint_not_saved("fit", problem))

    def checkpoint(self, *, warn: bool) -> str | None:
        """Save the current state; a failure is a warning (``warn``) or returned (training state stays in memory)."""
        if self.checkpoint_path is None:
            return None
        from prelens.io import save_checkpoint

        position = self.position
        self.history.steps = position.steps
        tree: dict[str, Any] = {"params": position.params, "opt_state": position.opt_state}
        if self.restorer is not None and self.best is not None:
            tree["best"] = {"params": self.best[0], "opt_state": self.best[1]}
        fit_meta = position_metadata(
            self.epoch_start,
            position.batch,
            self.n_batches,
            position.total,
            self.callbacks_done,
            self.early_stopped,
            "best" in tree,
        )
        meta = {"history": self.history.as_dict(), "epoch": self.history.epochs, "fit": fit_meta}
        try:
            save_checkpoint(self.checkpoint_path, tree, metadata=meta)
        except E.CheckpointError as err:
            if warn:
                warnings.warn(E.checkpoint_not_saved("fit", str(err)), RuntimeWarning, stacklevel=3)
            return str(err)
        except Exception as err:  # on the way out nothing may hide the reason training stopped
            if warn:
                raise
            return f"{type(err).__name__}: {err}"
        return None


# ---------------------------------------------------------------------- the forms of optimiser


def _init_state(optimizer: Any, lens_form: bool, params: Tree) -> Any:
    return init_state(optimizer, params) if lens_form else optimizer.init(params)


def _read_resume(path: Any, model: AnyLens, optimizer: Any, lens_form: bool, restorer: EarlyStopping | None) -> Any:
    """The checkpoint at ``path`` read back against the model's parameters and the optimiser's state."""
    like = None
    state_like = None
    if model.init_fn is not None:
        like = model.init(np.random.default_rng(0))
        state_like = _init_state(optimizer, lens_form, like)
    resumed = read_checkpoint(path, like, state_like)
    if restorer is not None and resumed.best is None:
        best = restorer.best_epoch(resumed.history)
        if best is not None and (best != resumed.history.epochs or resumed.batch != 0):
            raise E.resume_refused(
                os.fspath(path),
                f"it holds no best parameters for {restorer!r} (the best epoch, {best}, is behind it: it was "
                "written by a run without restore_best)",
            )
    return resumed


# ---------------------------------------------------------------------- metrics and callbacks


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
    if metrics and not (has_validation or on_train):
        raise E.metrics_unmeasured()
    return dict(metrics)


def _check_callbacks(callbacks: Any) -> tuple[Any, ...]:
    expected = "a list of callbacks (objects with on_epoch_end), e.g. [EarlyStopping()]"
    if callbacks is None:
        return ()
    if not isinstance(callbacks, (list, tuple)):
        raise E.bad_argument("fit", "callbacks", E.describe(callbacks), expected)
    for cb in callbacks:
        if isinstance(cb, type) or not callable(getattr(cb, "on_epoch_end", None)):
            raise E.bad_argument("fit", "callbacks", E.describe(cb), expected)
    if sum(isinstance(cb, EarlyStopping) and cb.restore_best for cb in callbacks) > 1:
        raise E.bad_argument(
            "fit", "callbacks", "two EarlyStopping(restore_best=True)", "at most one callback that restores parameters"
        )
    return tuple(callbacks)


def _recorded(metrics: Mapping[str, Metric], has_validation: bool, on_train: bool, cbs: tuple[Any, ...]) -> list[str]:
    """The series this fit records: what a callback may monitor."""
    names = ["loss"]
    if on_train:
        names += ["train_loss", *(f"train_{m}" for m in metrics)]
    if has_validation:
        names += ["val_loss", *(f"val_{m}" for m in metrics)]
    if any(isinstance(cb, LearningRateLogger) for cb in cbs):
        names.append("lr")
    return names


def _check_monitors(cbs: tuple[Any, ...], recorded: list[str]) -> None:
    for cb in cbs:
        if isinstance(cb, (EarlyStopping, CheckpointBest)) and cb.monitor not in recorded:
            raise E.monitor_unknown(type(cb).__name__, cb.monitor, recorded)


def _scores(
    model: AnyLens,
    loss: AnyLens,
    params: Tree,
    train: tuple[Any, Any],
    validation: tuple[Any, Any] | None,
    metrics: Mapping[str, Metric],
    on_train: bool,
) -> dict[str, float]:
    """The epoch's metrics, in evaluation mode: on the training data (``on_train``), then on the validation data."""
    scores: dict[str, float] = {}
    sets = ([("train", train)] if on_train else []) + ([("val", validation)] if validation is not None else [])
    for prefix, (xs, ys) in sets:
        scores[f"{prefix}_loss"] = evaluate(model, loss, params, xs, ys)
        for name, metric in metrics.items():
            scores[f"{prefix}_{name}"] = float(metric(model, params, xs, ys))
    return scores


# ---------------------------------------------------------------------- checks


def _all_finite(tree: Tree) -> bool:
    """True when every float leaf is finite.

    One BLAS dot product per array leaf (NaN and ±inf propagate into ``x·x``);
    only when that overflows or is non-finite does the exact, allocating check run.
    """
    for leaf in tree_leaves(tree):
        if isinstance(leaf, np.ndarray):
            kind = leaf.dtype.kind
            if kind == "f":
                flat = leaf.ravel()
                with np.errstate(over="ignore", invalid="ignore"):
                    suspicious = not np.isfinite(np.dot(flat, flat))
            else:
                suspicious = kind == "c" and not np.isfinite(leaf.sum())
            if suspicious:
                return tree_first_nonfinite(tree) is None  # x·x can overflow on finite values
        elif isinstance(leaf, (float, np.floating)) and not math.isfinite(leaf):
            return False
        elif is_array(leaf) and dtype_kind(leaf.dtype) in "fc":  # another library's array
            xp = namespace(leaf)
            if not bool(xp.all(xp.isfinite(leaf))):
                return False
    return True


def _check_mesh_batches(mesh: Any, axis: str | None, n: int, batch_size: int) -> None:
    """Every batch of an epoch (the last one may be smaller) must split evenly over the mesh's devices."""
    n_dev = mesh.shape[axis]
    last = n % batch_size or batch_size
    if batch_size % n_dev or last % n_dev:
        raise E.bad_argument(
            "fit",
            "batch_size",
            batch_size,
            f"a size whose batches ({batch_size}, and the last {last} of {n} rows) divide among "
            f"the mesh's {n_dev} devices",
        )


def _leaf(path: str) -> str:
    return "" if path == "<root>" else path


def _check_args(epochs: int, batch_size: int, every: int | None, path: Any, resume: Any) -> None:
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 0:
        raise E.bad_argument("fit", "epochs", epochs, "an int >= 0")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise E.bad_argument("fit", "batch_size", batch_size, "an int >= 1")
    if every is not None and (not isinstance(every, int) or isinstance(every, bool) or every < 1):
        raise E.bad_argument("fit", "checkpoint_every", every, "an int >= 1 or None")
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise E.bad_argument("fit", "checkpoint_path", path, "a file path (str or os.PathLike) or None")
    if resume is not None and not isinstance(resume, (str, os.PathLike)):
        raise E.bad_argument("fit", "resume", resume, "a checkpoint's path (str or os.PathLike) or None")
    if every is not None and path is None:
        raise E.bad_argument("fit", "checkpoint_path", path, "a file path when checkpoint_every is given")
    if path is not None:
        from prelens.io._checkpoint import _unwritable_reason

        why = _unwritable_reason(path)
        if why is not None:
            raise E.unwritable_path("fit", "checkpoint_path", os.fspath(path), why)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
