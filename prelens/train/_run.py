"""The state of one run of :func:`~prelens.train.fit`: the last good state, and how to step, stop and save.

:class:`Run` is built whole from the plan and the start; after that only a good step replaces its position
(:class:`Position`, one value), an epoch is recorded whole, and whatever ends training (Ctrl-C, an error) leaves the
last good state to hand back, attach to the error, and save.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from typing import Any, NamedTuple

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import dtype_kind, is_array, to_backend
from prelens.core._tree import tree_first_nonfinite, tree_leaves, tree_map
from prelens.io._checkpoint import save_checkpoint
from prelens.io._sigint import deferred_sigint
from prelens.train._callbacks import EarlyStopping, checkpoint_not_saved
from prelens.train._evaluate import all_finite
from prelens.train._history import History
from prelens.train._plan import Plan
from prelens.train._resume import FORMAT, Resumed, generator_state, run_record

Tree = Any

__all__ = ["Position", "Run"]


class Position(NamedTuple):
    """The last good state and where it stands: replaced as a whole, and only by a good step."""

    params: Tree
    opt_state: Any
    steps: int
    batch: int  # batches of the epoch in progress done
    total: float  # their summed losses


class Run:
    """One run: the plan, the history, the shuffling generator and the last good state (a Ctrl-C leaves it here)."""

    def __init__(self, plan: Plan, at: Resumed) -> None:
        self.plan, self.history, self.gen = plan, at.history, at.gen
        self.position = Position(at.params, at.opt_state, at.history.steps, at.batch, at.loss_sum)
        self.epoch_start = generator_state(at.gen)  # the generator at the start of the epoch in progress
        self.callbacks_done = at.callbacks_done  # the last epoch whose callbacks all answered
        self.early_stopped = at.early_stopped
        self.best = at.best  # the best epoch's (params, opt_state), kept for EarlyStopping(restore_best=True)
        if self.best is None and at.batch == 0:
            self._keep_if_best()  # the checkpoint is the best epoch's
        self.where = "the start"
        self.record = run_record(plan.args.model, plan.args.optimizer)  # what a resume must run again

    @property
    def state(self) -> tuple[Tree, Any]:
        """The last good ``(params, opt_state)``."""
        return self.position.params, self.position.opt_state

    def result(self, *, finished: bool) -> tuple[Tree, Any, History]:
        """``(params, opt_state, history)``: the best epoch's state when a restorer ran to the end."""
        self.history.steps = self.position.steps
        state = self.state
        restorer = self.plan.args.restorer
        if finished and restorer is not None and self.best is not None:
            state = self.best
            self.history.best_epoch = restorer.best_epoch(self.history)
        return *self._handed_back(state), self.history

    def _handed_back(self, state: tuple[Tree, Any]) -> tuple[Tree, Any]:
        """``(params, opt_state)`` as ``fit`` hands them back, on errors too: numpy again under ``backend="auto"``."""
        return to_backend(state, "numpy") if self.plan.to_host else state

    def step(self, batch: tuple[Any, Any]) -> float:
        """One optimiser step; the state changes only when the loss, gradient and update are finite."""
        params, opt_state, steps, b, total = self.position
        new_params, new_opt_state, value, checked = self.plan.step(params, opt_state, batch, self._check_gradient)
        if not math.isfinite(value):
            raise self._stop_non_finite("the loss", f"loss = {value}")
        if not checked:
            self._check_updated(new_params, new_opt_state)
        self.position = Position(new_params, new_opt_state, steps + 1, b + 1, total + value)
        self.history.steps = steps + 1
        return value

    def _check_gradient(self, value: Any, grads: Tree) -> None:
        value = float(value)
        if math.isfinite(value) and _all_finite(grads):
            return
        bad = tree_first_nonfinite(grads)
        if math.isfinite(value):
            raise self._stop_non_finite("the gradient", f"first non-finite leaf: grads{_leaf(bad or '')}")
        also = "" if bad is None else f"; first non-finite gradient leaf: grads{_leaf(bad)}"
        raise self._stop_non_finite("the loss", f"loss = {value}{also}")

    def _check_updated(self, new_params: Tree, new_opt_state: Any) -> None:
        updated = (("the parameters", "params", new_params), ("the optimiser state", "opt_state", new_opt_state))
        for what, name, tree in (u for u in updated if not _all_finite(u[2])):
            raise self._stop_non_finite(what, f"first non-finite leaf: {name}{_leaf(tree_first_nonfinite(tree) or '')}")

    def _stop_non_finite(self, what: str, detail: str) -> E.TrainingNonFiniteError:
        self.history.steps = self.position.steps
        err = E.TrainingNonFiniteError(
            f"training stopped: {what} became non-finite at {self.where} ({detail})",
            *self._handed_back(self.state),
            self.history,
        )
        err.add_note(
            "fit: the last good parameters, optimiser state and history are attached as .params, "
            ".opt_state and .history"
        )
        return err

    def epoch_done(self, loss: float, scores: dict[str, float], seconds: float) -> None:
        """Record the epoch, whole or not at all: the next starts at batch 0 from the generator's state now."""
        with deferred_sigint():
            self.history.loss.append(loss)
            for name, score in scores.items():
                self.history.log(name, score)
            self.history.seconds.append(seconds)
            self.position = self.position._replace(batch=0, total=0.0)
            self.epoch_start = generator_state(self.gen)
            self._keep_if_best()

    def _keep_if_best(self) -> None:
        restorer = self.plan.args.restorer
        if restorer is not None and restorer.best_epoch(self.history) == self.history.epochs:
            self.best = self.state

    def ask_callbacks(self, epoch: int) -> bool:
        """Every callback's answer about ``epoch`` (each is asked, even after one says stop); ``True`` to stop."""
        stop_by = None
        callbacks = self.plan.args.callbacks
        if callbacks:
            params, opt_state = tree_map(_readonly, self._handed_back(self.state))  # numpy under backend="auto"
            for cb in callbacks:
                if cb.on_epoch_end(epoch, self.history, params, opt_state) and stop_by is None:
                    stop_by = cb
        with deferred_sigint():
            self.callbacks_done = epoch
            if stop_by is not None:
                reason = stop_by.reason(self.history) if isinstance(stop_by, EarlyStopping) else None
                self.history.stopped = (
                    reason or f"stopped by the callback {E.short_name(repr(stop_by), 80)} after epoch {epoch}"
                )
                self.early_stopped = True
        return stop_by is not None

    def interrupted(self) -> tuple[Tree, Any, History]:
        """Ctrl-C: record it, save, and hand back the last good state."""
        self.history.interrupted = True
        stopped = f"interrupted after {self.position.steps} steps ({self.history.epochs} complete epochs)"
        problem = self._wind_up(stopped, f"training {stopped}")
        if problem is not None:
            with contextlib.suppress(Exception):  # even with warnings turned into errors
                warnings.warn(checkpoint_not_saved("fit", problem), RuntimeWarning, stacklevel=4)
        return self.result(finished=False)

    def failed(self, err: BaseException) -> None:
        """Any other exception: save the last good state and attach it to ``err`` (the caller re-raises it)."""
        history, non_finite = self.history, isinstance(err, E.TrainingNonFiniteError)
        problem = self._wind_up(str(err) if non_finite else f"{type(err).__name__}: {err}")
        path = self.plan.args.checkpoint_path
        saved = None if path is None or problem is not None else os.fspath(path)
        if not non_finite:
            with contextlib.suppress(Exception):  # an exception that refuses attributes keeps only the note
                params, opt_state = self._handed_back(self.state)
                for name, value in (("params", params), ("opt_state", opt_state), ("history", history)):
                    setattr(err, name, value)
            also = f" and saved to {saved}" if saved else ""
            err.add_note(
                f"fit: training stopped at {self.where}, after {history.steps} good steps; the last good parameters, "
                f"optimiser state and history are attached to this error as .params, .opt_state and .history{also}"
            )
        elif saved is not None:
            err.add_note(f"fit: the last good parameters and optimiser state are saved to {saved}")
        if problem is not None:
            err.add_note(checkpoint_not_saved("fit", problem))

    def _wind_up(self, stopped: str, note: str = "") -> str | None:
        """Record why training stopped, close the display and save: why the save failed, if it did."""
        self.history.steps, self.history.stopped = self.position.steps, stopped
        with contextlib.suppress(Exception):
            self.plan.bar.close(note)
        return self.checkpoint(warn=False)

    def checkpoint(self, *, warn: bool) -> str | None:
        """Save the current state; a failure is a warning (``warn``) or returned (training state stays in memory)."""
        path = self.plan.args.checkpoint_path
        if path is None:
            return None
        at = self.position
        self.history.steps = at.steps
        tree: dict[str, Any] = {"params": at.params, "opt_state": at.opt_state}
        if self.plan.args.restorer is not None and self.best is not None:
            tree["best"] = {"params": self.best[0], "opt_state": self.best[1]}
        fit_meta = {  # the position of training (prelens.train._resume reads it back)
            "version": FORMAT,
            "rng": self.epoch_start,
            "batch": at.batch,
            "batches": self.plan.n_batches,
            "loss_sum": at.total,
            "callbacks_done": self.callbacks_done,
            "early_stopped": self.early_stopped,
            "best": "best" in tree,
            "run": self.record,
        }
        meta = {"history": self.history.as_dict(), "epoch": self.history.epochs, "fit": fit_meta}
        try:
            save_checkpoint(path, tree, metadata=meta)
        except E.CheckpointError as err:
            if warn:
                warnings.warn(checkpoint_not_saved("fit", str(err)), RuntimeWarning, stacklevel=4)
            return str(err)
        except Exception as err:  # on the way out nothing may hide the reason training stopped
            if warn:
                raise
            return f"{type(err).__name__}: {err}"
        return None


def _all_finite(tree: Tree) -> bool:
    """True when every float leaf is finite: one BLAS dot product per numpy leaf (NaN and ±inf propagate into
    ``x·x``), the exact, allocating check only when that is not finite (it may overflow on finite values)."""
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
        elif is_array(leaf) and dtype_kind(leaf.dtype) in "fc" and not all_finite(leaf):  # another library's
            return False
    return True


def _leaf(path: str) -> str:
    return "" if path == "<root>" else path


def _readonly(x: Any) -> Any:
    """A numpy array as a read-only view (what callbacks are shown); anything else as it is."""
    if not isinstance(x, np.ndarray):
        return x
    v = x.view()
    v.flags.writeable = False
    return v
