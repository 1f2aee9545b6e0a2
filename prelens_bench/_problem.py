"""A benchmark problem and one side's training step on it: what ``peers`` and each peer module share."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import is_array, to_numpy
from prelens.core._lens import AnyLens
from prelens.core._tree import tree_paths
from prelens.nn import mlp, mse
from prelens.nn._fastcheck import Array
from prelens.nn._losses import token_cross_entropy
from prelens.nn._transformer import decoder_lm
from prelens_bench.lm import LMConfig

LR = 0.01


@dataclass(frozen=True)
class PeerCase:
    """One row of the table: a model (layer widths of an MLP, or an :class:`LMConfig`), a dtype, a batch.

    ``batch`` is the MLP's; a language model takes its own from its config.

    >>> PeerCase((784, 256, 128, 10), "float64", 128).label
    'MLP 784-256-128-10 b128 f64'
    >>> PeerCase(LMConfig(), "float32").label
    'LM v64 T32 d64 h4 ff256 x2 b16 f32'
    """

    model: tuple[int, ...] | LMConfig
    dtype: str
    batch: int = 16

    @property
    def is_lm(self) -> bool:
        """True for the language model."""
        return isinstance(self.model, LMConfig)

    @property
    def label(self) -> str:
        """How the table names the case."""
        dt = E.dtype_name(self.dtype)
        if isinstance(self.model, LMConfig):
            c = self.model
            return f"LM v{c.vocab} T{c.seq_len} d{c.d_model} h{c.n_heads} ff{c.d_ff} x{c.n_layers} b{c.batch} {dt}"
        return f"MLP {'-'.join(map(str, self.model))} b{self.batch} {dt}"


@dataclass(frozen=True)
class Problem:
    """What every side of one case starts from: prelens-layout weights, a batch, the learning rate.

    ``params`` is a list of :class:`~prelens.nn.DenseParams` (MLP) or an
    :class:`~prelens.nn.LMParams`; ``x`` the inputs (floats, or token ids),
    ``y`` the targets (floats, or labels with ``-1`` where a position does not count).
    Every side copies what it keeps: nothing here is ever written into.

    >>> p = make_problem(PeerCase((3, 2), "float64", 4))
    >>> p.x.shape, p.y.shape, p.lr
    ((4, 3), (4, 2), 0.01)
    """

    case: PeerCase
    params: Any
    x: Array
    y: Array
    lr: float = LR


@dataclass(frozen=True)
class PeerStep:
    """One side of a case, prepared: ``grads()`` (once, before timing) and ``step()`` (timed).

    ``grads()`` returns the gradient at the problem's weights as numpy arrays in
    prelens's layout, or is ``None`` for a side with nothing to compare (the
    matmul floor). ``step()`` runs one SGD step in the side's own idiom.

    >>> from prelens_bench.peers import MATMUL_FLOOR
    >>> floor = MATMUL_FLOOR.prepare(make_problem(PeerCase((3, 2), "float64", 4)))
    >>> floor.grads is None, floor.step()
    (True, None)
    """

    step: Callable[[], object]
    grads: Callable[[], Any] | None = None


def make_problem(case: PeerCase, seed: int = 0) -> Problem:
    """Weights (prelens's ``init``) and a batch for ``case``, drawn from ``seed``.

    >>> p = make_problem(PeerCase((4, 8, 3), "float32", 16))
    >>> p.x.shape, p.y.shape, p.params[0].weight.dtype
    ((16, 4), (16, 3), dtype('float32'))
    """
    dt = np.dtype(case.dtype)
    rng = np.random.default_rng(seed)
    if isinstance(case.model, LMConfig):
        c = case.model
        lm = decoder_lm(c.vocab, c.d_model, c.n_heads, c.d_ff, c.n_layers, c.seq_len, eps=c.eps, dtype=dt)
        params = lm.init(rng)
        ids = rng.integers(0, c.vocab, (c.batch, c.seq_len))
        labels = rng.integers(0, c.vocab, (c.batch, c.seq_len))
        labels[:, : c.seq_len // 4] = -1  # a prompt that does not count
        return Problem(case, params, ids, labels)
    n_in, *sizes = case.model
    params = mlp(n_in, sizes, dtype=dt, input_delta=False).init(rng)
    x = rng.standard_normal((case.batch, n_in)).astype(dt)
    y = rng.uniform(-0.9, 0.9, (case.batch, sizes[-1])).astype(dt)
    return Problem(case, params, x, y)


def copy_tree(tree: Any) -> Any:
    from prelens.core._tree import tree_map

    return tree_map(lambda a: a.copy() if isinstance(a, np.ndarray) else a, tree)


def trained_parts(case: PeerCase) -> tuple[AnyLens, AnyLens]:
    """The model and the loss prelens trains in ``case``: ``(mlp, mse)`` or ``(decoder_lm, token_cross_entropy)``.

    >>> model, loss = trained_parts(PeerCase((4, 8, 3), "float64", 16))
    >>> loss is mse, model.name
    (True, 'mlp(4→8→3, tanh, input_delta=False)')
    """
    dt = np.dtype(case.dtype)
    if isinstance(case.model, LMConfig):
        c = case.model
        net = decoder_lm(c.vocab, c.d_model, c.n_heads, c.d_ff, c.n_layers, c.seq_len, eps=c.eps, dtype=dt)
        return net, token_cross_entropy()
    n_in, *sizes = case.model
    return mlp(n_in, sizes, dtype=dt, input_delta=False), mse


#: Set by :func:`measured_only`: numeric differences above the tolerance are measured, not raised.
_MEASURED_ONLY = contextvars.ContextVar("measured_only", default=False)


@contextlib.contextmanager
def measured_only() -> Iterator[None]:
    """Within it, :func:`check_peer_gradients` returns a difference above its tolerance instead of raising.

    For a side already checked in float64 at the same point (``prelens bench --scaling``'s second
    opinion), prepared again in float32: the float32 difference is reported, not enforced. A different
    structure, shape or dtype still raises.

    >>> with measured_only():
    ...     check_peer_gradients("numpy", PeerCase((1, 1), "float32", 1), [np.ones(1, "f")], [np.zeros(1, "f")])
    1.0
    """
    token = _MEASURED_ONLY.set(True)
    try:
        yield
    finally:
        _MEASURED_ONLY.reset(token)


def check_peer_gradients(peer: str, case: PeerCase, ours: Any, theirs: Any, *, what: str = "gradients") -> float:
    """The largest relative gradient difference between prelens (``ours``) and ``peer``; raise if too large.

    ``what`` names the trees in the law (``"parameters after one SGD step"`` to
    compare updated parameters instead of gradients); any array library's
    leaves are compared on the host.

    Leaves are compared in tree order, each relative to the largest entry of
    prelens's leaf; the tolerance is ``1e-9`` in float64 and ``1e-4`` in float32.
    A different structure, shape or dtype, or a leaf too far off, is a
    :class:`~prelens.LawError` naming the peer, the case and the path.

    >>> from prelens.nn import DenseParams
    >>> g = [DenseParams(np.ones((2, 2)), np.ones(2))]
    >>> check_peer_gradients("numpy", PeerCase((2, 2), "float64", 1), g, g)
    0.0
    >>> check_peer_gradients("numpy", PeerCase((2, 2), "float64", 1), g, [DenseParams(np.ones((2, 2)), np.zeros(2))])
    Traceback (most recent call last):
    ...
    prelens.errors.LawError: law 'numpy gradients = prelens gradients' fails: MLP 2-2 b1 f64 differ at [0].bias:
    ...
    """
    law = f"{peer} {what} = prelens {what}"
    tol = 1e-9 if np.dtype(case.dtype) == np.float64 else 1e-4
    left, right = list(tree_paths(ours)), list(tree_paths(theirs))
    paths_l, paths_r = [p for p, _ in left], [p for p, _ in right]
    if paths_l != paths_r:
        at = next((i for i, (a, b) in enumerate(zip(paths_l, paths_r)) if a != b), min(len(left), len(right)))
        path = paths_l[at] if at < len(paths_l) else paths_r[at]
        raise E.law_violation(law, f"{case.label}: the gradient trees", path, len(left), len(right))
    worst = 0.0
    for (path, a), (_, b) in zip(left, right):
        a, b = to_numpy(a) if is_array(a) else np.asarray(a), to_numpy(b) if is_array(b) else np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            raise E.law_violation(law, case.label, path, E.describe(a), E.describe(b))
        scale = float(np.max(np.abs(a))) if a.size else 0.0
        err = float(np.max(np.abs(a.astype(np.float64) - b))) / (scale or 1.0) if a.size else 0.0
        if not err <= tol and not _MEASURED_ONLY.get():
            raise E.law_violation(law, case.label, path, a, b)
        worst = max(worst, err)
    return worst
