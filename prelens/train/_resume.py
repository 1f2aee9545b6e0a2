"""What a checkpoint of :func:`~prelens.train.fit` holds beyond the parameters, and reading it back.

A checkpoint written by ``fit`` is ``{"params", "opt_state"}`` (plus ``"best"``, the best epoch's, under
``EarlyStopping(restore_best=True)``), with metadata ``{"history", "epoch", "fit"}``. ``"fit"`` is the position of
training (written by :meth:`~prelens.train._run.Run.checkpoint`): ``rng``, the shuffling generator's state at the
start of the epoch in progress; ``batch``, how many of the epoch's ``batches`` are done, and ``loss_sum`` their
summed losses (exact: JSON keeps every bit of a float); ``callbacks_done``, the last epoch whose callbacks all
answered; ``early_stopped``, whether a callback ended the run; ``run``, the model and optimiser as they print (a
checkpoint is resumed only by the run that wrote it: the same model, the same optimiser in either form). From the
epoch's start state ``fit`` draws the same permutation and dropout keys again and skips the batches done, so a
resumed run takes exactly the same steps.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, NamedTuple, cast

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import resolve_backend
from prelens.io._checkpoint import load_checkpoint, load_metadata
from prelens.learn._optimizer import Optimizer
from prelens.train._history import History, count, history_from_dict

Tree = Any

__all__ = ["FORMAT", "Resumed", "generator_state", "read_checkpoint", "run_record"]

#: The version of the ``"fit"`` metadata this code writes and reads.
FORMAT = 1

#: The bit generators a checkpoint may name (numpy's own, by fixed name: nothing is imported from the file).
_BIT_GENERATORS: dict[str, type[np.random.BitGenerator]] = {
    cls.__name__: cls
    for cls in (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64, np.random.MT19937)
}


class Resumed(NamedTuple):
    """Everything ``fit`` needs to continue a run from a checkpoint."""

    params: Tree
    opt_state: Any
    best: tuple[Tree, Any] | None
    history: History
    gen: np.random.Generator
    batch: int
    batches: int
    loss_sum: float
    callbacks_done: int
    early_stopped: bool


def generator_state(gen: np.random.Generator) -> dict[str, Any]:
    """The state of ``gen``'s bit generator as JSON-able data (arrays become ``{"uint64": [...]}``)."""
    return cast(dict[str, Any], _jsonable(gen.bit_generator.state))


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return {x.dtype.name: [int(v) for v in x.ravel()]}
    if isinstance(x, np.integer):
        return int(x)
    return x


def _from_jsonable(x: Any, depth: int = 0) -> Any:
    if depth > 4:
        raise ValueError("nested too deeply")
    if isinstance(x, dict):
        if len(x) == 1:
            ((kind, values),) = x.items()
            if kind in ("uint32", "uint64") and isinstance(values, list):
                if not all(isinstance(v, int) and not isinstance(v, bool) for v in values) or len(values) > 1024:
                    raise ValueError("a damaged array")
                return np.array(values, dtype=kind)
        return {k: _from_jsonable(v, depth + 1) for k, v in x.items()}
    return x


def _generator(state: Any) -> np.random.Generator | None:
    """A generator in the state ``generator_state`` wrote, or ``None`` for a damaged or unknown one."""
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if not isinstance(name, str) or name not in _BIT_GENERATORS:
        return None
    bits = _BIT_GENERATORS[name]()
    try:
        bits.state = _from_jsonable(state)
    except (TypeError, ValueError, KeyError, OverflowError, IndexError):
        return None
    return np.random.Generator(bits)


def run_record(model: Any, optimizer: Any) -> dict[str, str]:
    """The model and optimiser of a run as they print (an optimiser as its lens does; no memory addresses)."""
    if isinstance(optimizer, Optimizer):
        with contextlib.suppress(Exception):  # an optimiser of the user's without a lens prints as itself
            optimizer = optimizer.lens
    return {
        what: re.sub(r" at 0x[0-9a-fA-F]+", "", repr(x)) for what, x in (("model", model), ("optimizer", optimizer))
    }


def read_checkpoint(
    path: str | os.PathLike[str], params_like: Tree, state_like: Any, *, backend: Any = "numpy", run: Any = None
) -> Resumed:
    """Read a checkpoint of ``fit`` back, its trees checked against ``params_like`` and ``state_like`` (``None``
    when the model cannot make parameters: the file's own structure is taken), the arrays in ``backend``'s library;
    a :class:`~prelens.errors.CheckpointError` for a file that is not a checkpoint of ``fit``, is damaged, or belongs
    to another model or optimiser than ``run`` (:func:`run_record`; files written before it was kept: structure
    only)."""
    resolve_backend("fit", backend)  # before the file is read
    name = os.fspath(path)
    meta = load_metadata(name)
    position = meta.get("fit")
    if not isinstance(position, dict):
        raise resume_refused(
            name,
            "it holds no training position (not written by fit, or by prelens before 0.2.0); load its parameters "
            "with prelens.io.load_checkpoint and pass them as params= and opt_state=",
        )
    if position.get("version") != FORMAT:
        raise resume_refused(name, f"its training position has format {position.get('version')!r}, not {FORMAT}")
    has_best = position.get("best") is True
    pair = {"params": params_like, "opt_state": state_like}
    like = None if params_like is None else {**pair, "best": pair} if has_best else pair
    tree = load_checkpoint(name, like=like, backend=backend)
    if not isinstance(tree, dict) or not {"params", "opt_state"} <= set(tree):
        raise resume_refused(name, "it does not hold params and opt_state")
    written = position.get("run")  # the parameters and state fit; the model and optimiser must be the same too
    for what in ("model", "optimizer"):
        if isinstance(written, dict) and run is not None and written.get(what) != run[what]:
            raise resume_refused(
                name,
                f"it was written by a run of another {what}, {E.short_name(str(written.get(what)), 100)}, not "
                f"{E.short_name(run[what], 100)}; to train on from its parameters, pass them as params= and "
                "opt_state= (read with prelens.io.load_checkpoint)",
            )
    history = history_from_dict(meta.get("history"))
    if isinstance(history, str):
        raise resume_refused(name, history)
    gen = _generator(position.get("rng"))
    if gen is None:
        raise resume_refused(name, "the state of its shuffling generator is damaged")
    batch, batches, done = (count(position.get(k)) for k in ("batch", "batches", "callbacks_done"))
    if batch is None or batches is None or done is None or batch > batches or done > history.epochs:
        raise resume_refused(name, "its training position (batch, batches, callbacks_done) is damaged")
    loss_sum = position.get("loss_sum")
    if not (isinstance(loss_sum, (int, float)) and not isinstance(loss_sum, bool)):
        raise resume_refused(name, "its training position (loss_sum) is damaged")
    best = None
    if has_best:
        kept = tree.get("best")
        if not (isinstance(kept, dict) and {"params", "opt_state"} <= set(kept)):
            raise resume_refused(name, "its best parameters are damaged")
        best = (kept["params"], kept["opt_state"])
    history.interrupted = False
    early = position.get("early_stopped") is True
    if not early:
        history.stopped = None
    return Resumed(tree["params"], tree["opt_state"], best, history, gen, batch, batches, float(loss_sum), done, early)


def resume_refused(path: str, detail: str) -> E.CheckpointError:
    return E.CheckpointError(f"checkpoint {path}: cannot resume from it: {detail}")
